//! Real-client tests for GitHub Copilot CLI ([`CopilotCli`]): the pinned
//! `copilot` binary, run headless (`copilot -p`) against the stub model's
//! Chat Completions, with jkz installed by `jkz install --client copilot`.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};

use super::adapter::CopilotCli;
use super::output_guard;
use super::pipeline::{
    bash, chat_a_claims_issue_42, project_with_issue_42, summary_keeping_what_its_prompt_names,
    BRANCH, DECISION, FAILURE, ITEMS, PLAN,
};
use super::stub_model::{numbered, Request, StubModel, Turn};
use super::{ClientRun, Project, RealClient};

fn with_pipeline(server: &StubModel) -> Project<CopilotCli> {
    project_with_issue_42(server)
}

/// What the model receives of a 400 KB shell output, without jkz and with
/// it: Copilot saves an output over ~20 KB to a file and shows the model
/// its first 500 characters, so a verdict and a TL;DR in the middle and
/// the last line are lost; jkz's `preToolUse` guard (`modifiedArgs`) runs
/// the command through `jkz-truncate --run`, its view under Copilot's
/// limit, so all three reach the model.
#[test]
fn copilot_shell_output_keeps_the_verdict_tldr_and_last_line() {
    let (without, _) = output_guard::received::<CopilotCli>("bash", false);
    let (with, report) = output_guard::received::<CopilotCli>("bash", true);
    let client = format!("Copilot CLI {}", CopilotCli::NPM.version);
    output_guard::assert_kept_by_jkz(&client, &without, &with, &report);
    assert!(
        !without.contains("LAST-LINE"),
        "Copilot's own cut kept the end: the test no longer measures it\n{without:.2000}"
    );
    // jkz's view fits under Copilot's limit: Copilot saved nothing.
    assert!(!with.contains("Output too large"), "{with:.2000}");
}

/// Another live chat holds issue 42 and its worktree: the Copilot
/// session's edit in that worktree is refused before it runs, the model
/// reads why, and the file is unchanged.
#[test]
fn copilot_contested_edit_is_refused_with_the_holders_name() {
    let server = StubModel::start(Arc::new(|r: &Request| match r.tool_outputs().len() {
        0 => Turn::Call {
            name: "edit".into(),
            input: json!({"path": r.last_user_text().lines().last().unwrap_or_default().trim(),
                          "old_str": "helo world", "new_str": "hello world"}),
        },
        _ => Turn::Text("Stopping here.".into()),
    }));
    let project = with_pipeline(&server);
    project.install_jkz();
    let greeting = project.write("wt/i42/src/greeting.txt", "helo world\n");
    chat_a_claims_issue_42(&project);

    let prompt = format!("Fix the greeting of issue 42 in\n{}", greeting.display());
    let run = project.run(&prompt, &[]);
    run.assert_ok();
    assert_eq!(std::fs::read_to_string(&greeting).unwrap(), "helo world\n");
    let last = server.model_requests().pop().expect("requests");
    let outputs: Vec<String> = last.tool_outputs().into_iter().map(|o| o.text).collect();
    assert_eq!(outputs.len(), 1, "{outputs:?}\n{}", run.report());
    assert!(
        outputs[0].contains("Denied by preToolUse hook") && outputs[0].contains("chat-a"),
        "not refused with jkz's reason: {}\n{}",
        outputs[0],
        run.report()
    );
}

/// Copilot's prompt window for the compaction test, in tokens: its system
/// prompt and tools plus a few [`FILLER`] outputs fill it, and Copilot
/// compacts by itself inside one `copilot -p` run.
const PROMPT_WINDOW: &str = "20000";

/// Characters of one note the model reads to fill the window, with
/// Copilot's `view`: jkz shapes shell outputs only (a shell `cat` of it
/// would reach the model as a few lines), so both runs fill the window
/// alike.
const FILLER: usize = 14_000;

/// Outputs the model reads before it stops waiting for a compaction.
const MAX_READS: usize = 12;

/// How Copilot's first message of a compacted history begins.
const SUMMARIZED: &str = "Some of the conversation history has been summarized";

/// The model's one tool call once it sees the summary.
const AFTER_SUMMARY: &str = "echo back to the checkout fix";

/// True for Copilot's message holding the summary.
fn is_summary(message: &Value) -> bool {
    message["role"] == "user" && message["content"].to_string().contains(SUMMARIZED)
}

/// The messages after the summary (none when `r` carries no summary).
fn after_summary(r: &Request) -> Vec<Value> {
    let items = r.items();
    match items.iter().position(is_summary) {
        Some(at) => items[at + 1..].to_vec(),
        None => Vec::new(),
    }
}

/// Each message's role and the start of its text: a conversation of
/// 14,000-character outputs, short enough for a failure message.
fn outline(r: &Request) -> String {
    r.items()
        .iter()
        .map(|m| {
            let text = m["content"].as_str().map_or(m.to_string(), str::to_string);
            let start: String = text.chars().take(160).collect();
            format!("  {}: {start:?}", m["role"])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One Copilot run that compacts on its own, and what the model received.
struct Compacted {
    /// Copilot's summarizing request.
    summarizing: Request,
    /// The requests after the compaction that follow a tool call made
    /// after it: the first is what the model sees first.
    after: Vec<Request>,
    project: Project<CopilotCli>,
    run: ClientRun,
}

/// One `copilot -p` run in which Copilot compacts automatically: the
/// model reads the pipeline state with a shell command, then
/// [`FILLER`]-sized notes until a request carries Copilot's summary
/// (Copilot summarizes in the background while the agent goes on, so the
/// model waits for the summary rather than counting calls), then makes one
/// more tool call and ends. The summarizer's stand-in keeps what its
/// prompt names ([`summary_keeping_what_its_prompt_names`]) rather than
/// nothing at all: whatever jkz could pass to Copilot's summarizer would
/// be kept, so an item lost shows that nothing of jkz's reached it.
fn compact_in_one_run(jkz: bool) -> Compacted {
    // `view` takes an absolute path: the project's, known once it exists.
    let notes = Arc::new(OnceLock::<PathBuf>::new());
    let server = {
        let notes = Arc::clone(&notes);
        StubModel::start(Arc::new(move |r: &Request| {
            if CopilotCli::is_summarizing(r) {
                return Turn::Text(summary_keeping_what_its_prompt_names(r));
            }
            if !r.items().iter().any(is_summary) {
                return match r.tool_outputs().len() {
                    0 => bash(
                        "git branch --show-current && \
                         cat state/pipeline/42.json state/pipeline/42-compact-plan.md",
                    ),
                    n if n <= MAX_READS => Turn::Call {
                        name: "view".into(),
                        input: json!({"path": notes.get().expect("notes").join(format!("{n}.txt"))}),
                    },
                    _ => Turn::Text("No compaction came; stopping.".into()),
                };
            }
            if r.all_text().contains(AFTER_SUMMARY) {
                Turn::Text("Continuing with the fix.".into())
            } else {
                bash(AFTER_SUMMARY)
            }
        }))
    };
    let project = with_pipeline(&server);
    notes
        .set(project.path().join("notes"))
        .expect("set the notes once");
    for n in 1..=MAX_READS {
        let line = format!("checkout audit note {n}: nothing decisive on this line\n");
        project.write(&format!("notes/{n}.txt"), line.repeat(FILLER / line.len()));
    }
    if jkz {
        project.install_jkz();
    }
    let run = project.run_with_env(
        "Carry on with issue 42.",
        &[],
        &[("COPILOT_PROVIDER_MAX_PROMPT_TOKENS", PROMPT_WINDOW)],
    );
    run.assert_ok();
    let requests = server.model_requests();
    let shown = || numbered(&requests, outline);
    let summarizing = requests
        .iter()
        .find(|r| CopilotCli::is_summarizing(r))
        .cloned()
        .unwrap_or_else(|| panic!("Copilot did not compact\n{}\n{}", run.report(), shown()));
    let after: Vec<Request> = requests
        .iter()
        .filter(|r| !CopilotCli::is_summarizing(r))
        .filter(|r| after_summary(r).iter().any(|m| m["role"] == "tool"))
        .cloned()
        .collect();
    assert!(
        !after.is_empty(),
        "no tool call after the compaction\n{}\n{}",
        run.report(),
        shown()
    );
    Compacted {
        summarizing,
        after,
        project,
        run,
    }
}

/// The fidelity table of a compaction Copilot makes by itself: which of
/// the six items reach the model after it, without jkz and with it
/// (printed; `docs/clients.md` keeps the measured table). Copilot's
/// summarizer never sees anything of jkz's; the items come back in the
/// `additionalContext` jkz answers on the first tool call after the
/// compaction, which Copilot keeps after its summary.
#[test]
fn copilot_compaction_keeps_the_decision_critical_items_with_jkz() {
    let without = compact_in_one_run(false);
    let with = compact_in_one_run(true);

    for (side, c) in [("without jkz", &without), ("with jkz", &with)] {
        // The model read the state before the compaction: the items the
        // files hold word for word, the branch, and the fields the phase
        // and the verdicts are read from ...
        let compacted = c.summarizing.all_text();
        for read in [PLAN, DECISION, FAILURE, BRANCH]
            .into_iter()
            .chain(["\"current_phase\": \"fixing\"", "\"qa_passed\": \"false\""])
        {
            assert!(
                compacted.contains(read),
                "{side}: the compacted conversation lacks {read:?}\n{}",
                outline(&c.summarizing)
            );
        }
        // ... and nothing of jkz's reached the summarizer's prompt.
        let prompt = c.summarizing.last_user_text();
        for (_, marker) in ITEMS {
            assert!(
                !prompt.contains(marker),
                "{side}: Copilot's summary prompt names {marker:?}\n{prompt}"
            );
        }
        assert!(!prompt.contains("jkz"), "{side}: {prompt}");
    }

    // With jkz: PreCompact took the snapshot of an automatic compaction.
    let state = with.project.path().join("state");
    let snapshots: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("pre-compact-"))
        .collect();
    assert!(
        !snapshots.is_empty(),
        "no snapshot in {}\n{}",
        state.display(),
        with.run.report()
    );
    for name in &snapshots {
        let snap: Value =
            serde_json::from_slice(&std::fs::read(state.join(name)).unwrap()).unwrap();
        assert_eq!(
            snap["event"]["trigger"], "auto",
            "{name}: {}",
            snap["event"]
        );
    }

    // Where the items come back: the first tool output after the summary.
    let first = &with.after[0];
    let reinjected: Vec<String> = after_summary(first)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .filter(|t| t.contains("jkz: pipeline state restored"))
        .collect();
    assert_eq!(
        reinjected.len(),
        1,
        "one re-injection after the summary\n{}",
        outline(first)
    );

    let mut table = String::from(
        "| item | without jkz | with jkz | with jkz: in the summary |\n|---|---|---|---|\n",
    );
    let (mut kept_without, mut kept_with) = (0, 0);
    let mark = |b: bool| if b { "kept" } else { "lost" };
    for (name, marker) in ITEMS {
        let everywhere = |c: &Compacted| c.after.iter().all(|r| r.all_text().contains(marker));
        let (w, j) = (everywhere(&without), everywhere(&with));
        let in_summary = with
            .after
            .iter()
            .flat_map(Request::items)
            .filter(is_summary)
            .any(|m| m.to_string().contains(marker));
        kept_without += usize::from(w);
        kept_with += usize::from(j);
        table.push_str(&format!(
            "| {name} | {} | {} | {} |\n",
            mark(w),
            mark(j),
            mark(in_summary)
        ));
        assert!(
            first.all_text().contains(marker) && reinjected[0].contains(marker),
            "the first request after the compaction lacks {marker:?}\n{}",
            outline(first)
        );
    }
    eprintln!(
        "Copilot CLI {}, automatic compaction in one run ({} and {} requests after it):\n\
         {table}kept without jkz: {kept_without}/6; with jkz: {kept_with}/6",
        CopilotCli::NPM.version,
        without.after.len(),
        with.after.len()
    );
    assert_eq!(kept_with, 6, "{table}");
    assert!(kept_without < kept_with, "{table}");
}
