//! Real-client tests for OpenCode ([`OpenCode`]): the pinned `opencode`
//! binary, run headless (`opencode run`) against the stub model's Chat
//! Completions, with jkz's plugin placed by `jkz install --client opencode`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use super::adapter::opencode::{system_text, CONTEXT_TOKENS};
use super::adapter::OpenCode;
use super::output_guard;
use super::pipeline::{
    bash, chat_a_claims_issue_42, project_with_issue_42, summary_keeping_what_is_named_in, ITEMS,
};
use super::stub_model::{numbered, Request, StubModel, Turn};
use super::{Project, RealClient};

fn with_pipeline(server: &StubModel) -> Project<OpenCode> {
    project_with_issue_42(server)
}

/// What the model receives of a 400 KB shell output, without jkz and with
/// it: OpenCode keeps the last 2,000 lines (50 KB) of a shell output, so
/// a verdict and a TL;DR in the middle are lost, or, in the runs where
/// its capture stops near 200 KB, the 50 KB before that point, without the
/// last line; jkz's plugin runs the command through `jkz-truncate --run`
/// (`tool.execute.before`), whose view keeps all three.
#[test]
fn opencode_shell_output_keeps_the_verdict_tldr_and_last_line() {
    let (without, _) = output_guard::received::<OpenCode>("bash", false);
    let (with, report) = output_guard::received::<OpenCode>("bash", true);
    let client = format!("OpenCode {}", OpenCode::NPM.version);
    output_guard::assert_kept_by_jkz(&client, &without, &with, &report);
    // jkz's view is under OpenCode's cut: OpenCode cut nothing.
    assert!(!with.contains("...output truncated..."), "{with:.2000}");
}

/// Another live chat holds issue 42 and its worktree: the OpenCode
/// session's edit in that worktree is refused before it runs (the plugin
/// throws in `tool.execute.before`), the model reads why, and the file is
/// unchanged.
#[test]
fn opencode_contested_edit_is_refused_with_the_holders_name() {
    let server = OpenCode::model(|r: &Request| match r.tool_outputs().len() {
        0 => Turn::Call {
            name: "edit".into(),
            // `opencode run` quotes a prompt of several lines.
            input: json!({"filePath": r.last_user_text().lines().last().unwrap_or_default()
                                       .trim().trim_end_matches('"'),
                          "oldString": "helo world", "newString": "hello world"}),
        },
        _ => Turn::Text("Stopping here.".into()),
    });
    let project = with_pipeline(&server);
    project.install_jkz();
    let greeting = project.write("wt/i42/src/greeting.txt", "helo world\n");
    chat_a_claims_issue_42(&project);

    let prompt = format!("Fix the greeting of issue 42 in\n{}", greeting.display());
    let run = project.run(&prompt, &[]);
    run.assert_ok();
    assert_eq!(std::fs::read_to_string(&greeting).unwrap(), "helo world\n");
    let last = OpenCode::turns(&server).pop().expect("requests");
    let outputs: Vec<String> = last.tool_outputs().into_iter().map(|o| o.text).collect();
    assert_eq!(outputs.len(), 1, "{outputs:?}\n{}", run.report());
    assert!(
        outputs[0].contains("chat-a") && outputs[0].contains("42"),
        "not refused with jkz's reason: {}\n{}",
        outputs[0],
        run.report()
    );
}

/// The summarizer stand-in: it keeps exactly the items its instructions
/// name, and nothing of the conversation it is given to summarize
/// (OpenCode puts the conversation inside its summarizing prompt, between
/// `<conversation>` tags).
fn summarize(r: &Request) -> String {
    let prompt = r.last_user_text();
    let instructions = match (
        prompt.find("<conversation>"),
        prompt.rfind("</conversation>"),
    ) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &prompt[..start], &prompt[end..])
        }
        _ => prompt.clone(),
    };
    summary_keeping_what_is_named_in(&instructions)
}

/// One automatic compaction in a real `opencode run`: the model reads the
/// pipeline state, then runs a command whose reply reports more input
/// tokens than the model's window; OpenCode compacts (the compacting hook,
/// the summarizer's request, `session.compacted`), keeps the last tool
/// call and asks the model to continue. Returns the summarizing request,
/// the first request after it, and the project.
fn compact_once(jkz: bool) -> (Request, Request, Project<OpenCode>) {
    let turns = Arc::new(AtomicUsize::new(0));
    let server = OpenCode::model(move |r: &Request| {
        if OpenCode::is_summarizing(r) {
            return Turn::Text(summarize(r));
        }
        match turns.fetch_add(1, Ordering::SeqCst) {
            0 => bash("cat state/pipeline/42.json state/pipeline/42-compact-plan.md"),
            1 => bash("seq 1 20").reporting(CONTEXT_TOKENS * 3),
            _ => Turn::Text("Continuing with the fix.".into()),
        }
    });
    let project = with_pipeline(&server);
    if jkz {
        project.install_jkz();
    }
    let run = project.run("Carry on with issue 42.", &[]);
    run.assert_ok();
    let requests = OpenCode::turns(&server);
    let shown = || numbered(&requests, Request::all_text);
    let at = requests
        .iter()
        .position(OpenCode::is_summarizing)
        .unwrap_or_else(|| panic!("no summarizing request\n{}\n{}", run.report(), shown()));
    let next = requests
        .get(at + 1)
        .cloned()
        .unwrap_or_else(|| panic!("no request after compaction\n{}", shown()));
    (requests[at].clone(), next, project)
}

/// The fidelity table for OpenCode: which of the six items reach the model
/// after a compaction, without jkz and with it (printed; `docs/clients.md`
/// keeps the measured table).
#[test]
fn opencode_compaction_keeps_the_decision_critical_items_with_jkz() {
    let (summ_without, after_without, _p0) = compact_once(false);
    let (summ_with, after_with, project) = compact_once(true);

    let state = project.path().join("state");
    let snapshots = std::fs::read_dir(&state)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("pre-compact-")
        })
        .count();
    assert_eq!(snapshots, 1, "one compaction, one snapshot");

    let mut table = String::from(
        "| item | without jkz | with jkz: in the summary | with jkz: re-injected |\n|---|---|---|---|\n",
    );
    let (mut kept_without, mut kept_with) = (0, 0);
    for (name, marker) in ITEMS {
        let without = after_without.all_text().contains(marker)
            || system_text(&after_without).contains(marker);
        let summary = after_with
            .items()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .any(|m| m.to_string().contains("<summary>") && m.to_string().contains(marker));
        let reinjected = system_text(&after_with).contains(marker);
        kept_without += usize::from(without);
        kept_with += usize::from(summary || reinjected);
        let mark = |b: bool| if b { "kept" } else { "lost" };
        table.push_str(&format!(
            "| {name} | {} | {} | {} |\n",
            mark(without),
            mark(summary),
            mark(reinjected)
        ));
        // Steering: jkz's context reached the summarizer's instructions.
        assert!(
            summarize(&summ_with).contains(marker),
            "the summarizer was not asked to keep {marker:?}\n{}",
            summ_with.last_user_text()
        );
        assert!(
            reinjected,
            "the re-injection lacks {marker:?}\n{}",
            system_text(&after_with)
        );
    }
    assert!(!summ_without.last_user_text().contains("jkz"));
    eprintln!(
        "OpenCode {}: {table}kept without jkz: {kept_without}/6; with jkz: {kept_with}/6",
        OpenCode::NPM.version
    );
    assert_eq!(kept_with, 6, "{table}");
    assert!(kept_without < kept_with, "{table}");
}
