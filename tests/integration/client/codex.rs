//! Real-client tests for Codex CLI ([`CodexCli`]): the pinned `codex`
//! binary, run headless (`codex exec`) against the stub model's Responses
//! API, with jkz installed by `jkz install --client codex`.

use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::adapter::CodexCli;
use super::pipeline::{
    chat_a_claims_issue_42, issue_42_in_a_fix_cycle, summary_keeping_what_its_prompt_names, ITEMS,
};
use super::stub_model::{numbered, Request, StubModel, Turn};
use super::{Project, RealClient};
use crate::util::bin;
use jkz::thousands::thousands;

/// Tokens a reply reports to force a compaction (over the adapter's limit).
const OVER_LIMIT: u64 = 50_000;

fn with_pipeline(server: &StubModel) -> Project<CodexCli> {
    let project = CodexCli::project(server);
    issue_42_in_a_fix_cycle(&project);
    project
}

/// One compaction in a real `codex exec`: the model reads the pipeline
/// state with a shell command whose reply reports more tokens than the
/// limit; Codex compacts (PreCompact, the summarizing request,
/// SessionStart `compact`) and asks the model again. Returns the
/// requests: the summarizing one and the first after it.
fn compact_once(jkz: bool) -> (Request, Request, Project<CodexCli>, Vec<Request>) {
    // After the compaction the tool call is gone from the history: count
    // the turns, or the model would read the state (and compact) forever.
    let turns = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = StubModel::start(Arc::new(move |r: &Request| {
        if CodexCli::is_summarizing(r) {
            return Turn::Text(summary_keeping_what_its_prompt_names(r));
        }
        if turns.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            let cmd = "cat state/pipeline/42.json state/pipeline/42-compact-plan.md";
            return Turn::Call {
                name: "exec_command".into(),
                input: json!({ "cmd": cmd }),
            }
            .reporting(OVER_LIMIT);
        }
        Turn::Text("Continuing with the fix.".into())
    }));
    let project = with_pipeline(&server);
    if jkz {
        project.install_jkz();
    }
    let run = project.run("Carry on with issue 42.", &[]);
    run.assert_ok();
    let requests = server.model_requests();
    let shown = || numbered(&requests, Request::all_text);
    let at = requests
        .iter()
        .position(CodexCli::is_summarizing)
        .unwrap_or_else(|| panic!("no summarizing request\n{}\n{}", run.report(), shown()));
    let next = requests
        .get(at + 1)
        .cloned()
        .unwrap_or_else(|| panic!("no request after compaction\n{}", shown()));
    (requests[at].clone(), next, project, requests)
}

/// The fidelity table: which of the six items reach the model after a
/// compaction, without jkz and with it (printed; `docs/clients.md` keeps
/// the measured table).
#[test]
fn codex_compaction_keeps_the_decision_critical_items_with_jkz() {
    let (summ_without, after_without, _p0, _) = compact_once(false);
    let (summ_with, after_with, project, _) = compact_once(true);

    // With jkz: the snapshot was taken and Codex got only a systemMessage.
    let state = project.path().join("state");
    let snapshots: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("pre-compact-"))
        .collect();
    assert_eq!(snapshots.len(), 1, "one PreCompact, one snapshot");
    let snap: Value =
        serde_json::from_slice(&std::fs::read(state.join(&snapshots[0])).unwrap()).unwrap();
    assert_eq!(snap["event"]["hook_event_name"], "PreCompact");
    assert_eq!(snap["event"]["trigger"], "auto");
    assert!(snap["event"].get("turn_id").is_some(), "{}", snap["event"]);
    // The prompt file was refreshed for the next session.
    let prompt = std::fs::read_to_string(state.join("codex-compact-prompt.md")).unwrap();
    for (_, marker) in ITEMS {
        assert!(
            prompt.contains(marker),
            "prompt file lacks {marker:?}\n{prompt}"
        );
    }

    let mut table = String::from(
        "| item | without jkz | with jkz: in the summary | with jkz: re-injected |\n|---|---|---|---|\n",
    );
    let (mut kept_without, mut kept_with) = (0, 0);
    for (name, marker) in ITEMS {
        let without = after_without.all_text().contains(marker);
        let summary = after_with
            .items()
            .iter()
            .filter(|i| i["role"] == "user")
            .any(|i| i.to_string().contains("<summary>") && i.to_string().contains(marker));
        let reinjected = after_with
            .items()
            .iter()
            .filter(|i| i["role"] == "developer")
            .any(|i| {
                let t = i.to_string();
                t.contains("jkz: pipeline state restored after compaction") && t.contains(marker)
            });
        kept_without += usize::from(without);
        kept_with += usize::from(summary || reinjected);
        let mark = |b: bool| if b { "kept" } else { "lost" };
        table.push_str(&format!(
            "| {name} | {} | {} | {} |\n",
            mark(without),
            mark(summary),
            mark(reinjected)
        ));
        // Steering: jkz's prompt, not Codex's, named every item.
        assert!(
            summ_with.last_user_text().contains(marker),
            "jkz's compaction prompt lacks {marker:?}\n{}",
            summ_with.last_user_text()
        );
        assert!(
            summary,
            "the summary lacks {marker:?}\n{}",
            after_with.all_text()
        );
        assert!(
            reinjected,
            "the re-injection lacks {marker:?}\n{}",
            after_with.all_text()
        );
    }
    assert!(!summ_without.last_user_text().contains("jkz"));
    eprintln!("{table}kept without jkz: {kept_without}/6; with jkz: {kept_with}/6");
    assert_eq!(kept_with, 6, "{table}");
    assert!(kept_without < kept_with, "{table}");
}

/// Another live chat holds issue 42 and its worktree: the Codex session's
/// `apply_patch` into that worktree and its shell write of issue 42's
/// pipeline state are refused before they run, the model reads why, and
/// nothing changed on disk.
#[test]
fn codex_contested_edits_are_refused_through_apply_patch_and_bash() {
    let patch_body = Arc::new(Mutex::new(String::new()));
    let server = {
        let patch_body = Arc::clone(&patch_body);
        StubModel::start(Arc::new(move |r: &Request| match r.tool_outputs().len() {
            0 => Turn::Patch(patch_body.lock().unwrap().clone()),
            1 => Turn::Call {
                name: "exec_command".into(),
                input: json!({
                    "cmd": "echo '{\"42\":{\"current_phase\":\"done\"}}' > state/pipeline/42.json"
                }),
            },
            // Codex sets no session variable: only its process tree says
            // which chat this is.
            2 => Turn::Call {
                name: "exec_command".into(),
                input: json!({
                    "cmd": format!("{} release 42 --session chat-a", bin("jkz").display())
                }),
            },
            _ => Turn::Text("Stopping here.".into()),
        }))
    };
    let project = with_pipeline(&server);
    project.install_jkz();
    let greeting = project.write("wt/i42/src/greeting.txt", "helo world\n");
    let pipeline_before = std::fs::read(project.path().join("state/pipeline/42.json")).unwrap();
    *patch_body.lock().unwrap() = format!(
        "*** Begin Patch\n*** Update File: {}\n@@\n-helo world\n+hello world\n*** End Patch\n",
        greeting.display()
    );
    // Chat A registers and claims issue 42 with its worktree.
    chat_a_claims_issue_42(&project);

    let run = project.run("Fix the greeting of issue 42.", &[]);
    run.assert_ok();
    assert_eq!(std::fs::read_to_string(&greeting).unwrap(), "helo world\n");
    assert_eq!(
        std::fs::read(project.path().join("state/pipeline/42.json")).unwrap(),
        pipeline_before
    );
    let last = server.model_requests().pop().expect("requests");
    let outputs: Vec<String> = last.tool_outputs().into_iter().map(|o| o.text).collect();
    assert_eq!(outputs.len(), 3, "{outputs:?}\n{}", run.report());
    for (what, out) in ["apply_patch", "Bash"].iter().zip(&outputs) {
        assert!(
            out.contains("blocked by PreToolUse hook") && out.contains("chat-a"),
            "{what} not refused with jkz's reason: {out}"
        );
        assert!(out.contains("jkz claim 42 --take"), "{what}: {out}");
    }
    // The Codex chat cannot act as chat A: its client is its ancestor.
    assert!(
        outputs[2].contains("(its client, pid")
            && outputs[2].contains("--session may name only that chat, not chat-a"),
        "release refused: {}",
        outputs[2]
    );
    let chats = Command::new(bin("jkz"))
        .current_dir(project.path())
        .args(["chats", "--json"])
        .output()
        .unwrap();
    let chats: Vec<Value> = serde_json::from_slice(&chats.stdout).unwrap();
    let a = chats.iter().find(|c| c["session_id"] == "chat-a").unwrap();
    assert_eq!(a["claims"][0]["issue"], 42, "{chats:?}");
}

/// What the model receives of one shell call's output, without jkz and
/// with it: Codex's own cut of a 400 KB output keeps head and tail half
/// and half, so a verdict and a TL;DR in the middle are lost; jkz's
/// `PreToolUse` guard runs the command through `jkz-truncate --run`, under
/// Codex's cut, so they reach the model, and the last line too. A failing
/// command's exit status reaches the model as a failure both ways.
#[test]
fn codex_shell_output_keeps_the_blocks_the_clients_cut_drops() {
    let big = super::output_guard::build_log();
    const FAILING: &str = "echo PEAR-FAILING; exit 3";
    let measure = |with_jkz: bool| {
        let server = StubModel::start(Arc::new(|r: &Request| {
            let cmd = match r.tool_outputs().len() {
                0 => "cat build.log",
                1 => FAILING,
                _ => return Turn::Text("Done.".into()),
            };
            Turn::Call {
                name: "exec_command".into(),
                input: json!({ "cmd": cmd }),
            }
        }));
        let project = with_pipeline(&server);
        project.without_auto_compaction();
        project.write("build.log", &big);
        if with_jkz {
            project.install_jkz();
        }
        let run = project.run("Build it.", &[]);
        run.assert_ok();
        let last = server.model_requests().pop().expect("requests");
        let outputs: Vec<String> = last.tool_outputs().into_iter().map(|o| o.text).collect();
        assert_eq!(outputs.len(), 2, "{outputs:?}\n{}", run.report());
        (outputs, run.report())
    };
    let (without, _) = measure(false);
    let (with, report) = measure(true);
    let mut table =
        String::from("| in what the model receives | without jkz | with jkz |\n|---|---|---|\n");
    for (name, marker) in [
        ("verdict (`jkz:verdict-json`)", "GUAVA-BLOCKER"),
        ("TL;DR (`<tldr>`)", "KIWI-TLDR"),
        ("last line", "LAST-LINE"),
    ] {
        let mark = |s: &str| if s.contains(marker) { "kept" } else { "lost" };
        table.push_str(&format!(
            "| {name} | {} | {} |\n",
            mark(&without[0]),
            mark(&with[0])
        ));
    }
    table.push_str(&format!(
        "| characters | {} | {} |\n",
        thousands(without[0].chars().count() as u64),
        thousands(with[0].chars().count() as u64)
    ));
    eprintln!(
        "Codex CLI {}, a {} byte shell output:\n{table}\nfailing command, without jkz:\n{}\nwith jkz:\n{}",
        CodexCli::NPM.version,
        big.len(),
        without[1],
        with[1]
    );
    assert!(
        !without[0].contains("GUAVA-BLOCKER") && !without[0].contains("KIWI-TLDR"),
        "Codex's own cut kept the middle: the test no longer measures anything\n{table}"
    );
    assert!(
        with[0].contains("GUAVA-BLOCKER") && with[0].contains("KIWI-TLDR"),
        "{table}\n{report}\n{:.3000}",
        with[0]
    );
    assert!(
        with[0].contains("LAST-LINE") && without[0].contains("LAST-LINE"),
        "{table}"
    );
    // jkz's cut fits under Codex's: Codex cut nothing more.
    assert!(!with[0].contains("tokens truncated"), "{:.2000}", with[0]);
    for (how, out) in [("without jkz", &without[1]), ("with jkz", &with[1])] {
        assert!(
            out.contains("PEAR-FAILING") && out.contains("exited with code 3"),
            "{how}: the failure did not reach the model: {out}"
        );
    }
}
