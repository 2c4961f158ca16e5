//! jkz in the real Gemini CLI, the pinned `@google/gemini-cli`,
//! driven offline against the stub model's Gemini API ([`GeminiCli`]).
//!
//! Gemini CLI compresses at the start of a turn when its estimate of the
//! history is over `model.compressionThreshold` × the model's window; on
//! `--resume` the estimate is the stored history's size, so a project with
//! a tiny threshold compresses at the start of the second run. Its
//! summarizer is the stub here, which answers with a `<state_snapshot>`
//! that keeps none of the decision-critical items: what the model gets
//! after the compression then shows what jkz puts back.
//!
//! Besides: the contested-edit refusal through `write_file`, `replace` and
//! `run_shell_command`, and the hooks' answers to bad or foreign input
//! (those need no client).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::adapter::GeminiCli;
use super::pipeline::{issue_42_in_a_fix_cycle, ITEMS};
use super::stub_model::{Request, StubModel, Turn};
use super::{Project, RealClient};
use crate::util::{bin, Cmd};

/// A project whose issue 42 is in a fix cycle, on branch [`BRANCH`](super::pipeline::BRANCH), with a
/// compression threshold so low that any stored history is over it.
fn project_with_pipeline(server: &StubModel) -> Project<GeminiCli> {
    let project = GeminiCli::project(server);
    issue_42_in_a_fix_cycle(&project);
    project.write(
        ".gemini/settings.json",
        json!({"model": {"compressionThreshold": 0.0001}}).to_string(),
    );
    project
}

/// The first prompt: the six items as the pipeline told them to the model,
/// and enough talk around them that the compression pays off.
fn first_prompt() -> String {
    let mut prompt = String::from("Here is where issue 42 stands.\n");
    for (_, item) in ITEMS {
        prompt.push_str(item);
        prompt.push('\n');
    }
    prompt.push_str(&"Background notes on fruit and other things. ".repeat(250));
    prompt
}

/// The summarizer keeps none of the items; each compression's summary is
/// its own (as a real one is).
fn responder() -> Arc<dyn Fn(&Request) -> Turn + Send + Sync> {
    let compressions = AtomicUsize::new(0);
    Arc::new(move |r: &Request| {
        if GeminiCli::is_summarizing(r) {
            let n = if r.all_text().contains("Critically evaluate") {
                compressions.load(Ordering::SeqCst)
            } else {
                compressions.fetch_add(1, Ordering::SeqCst) + 1
            };
            Turn::Text(format!(
                "<state_snapshot>Compression {n}: the user talked about fruit.</state_snapshot>"
            ))
        } else {
            Turn::Text("Noted.".into())
        }
    })
}

/// Runs the two turns (the second compresses); the items present in the
/// first model turn after the compression, and that request's text.
fn items_after_compression(with_jkz: bool) -> (Vec<&'static str>, String, String) {
    let server = StubModel::start(responder());
    let project = project_with_pipeline(&server);
    if with_jkz {
        project.install_jkz();
    }
    project.run(&first_prompt(), &[]).json();
    let first = server.requests();
    let told = first
        .iter()
        .find(|r| r.is_streamed())
        .expect("the first turn");
    for (kind, item) in ITEMS {
        assert!(
            told.all_text().contains(item),
            "the model was told the {kind}"
        );
    }
    project.run("What next?", &["--resume", "latest"]).json();
    let requests = server.requests();
    let shown = || {
        requests
            .iter()
            .map(|r| format!("{} {:.300}", r.path, r.all_text()))
            .collect::<Vec<_>>()
            .join("\n---\n")
    };
    let at = requests
        .iter()
        .position(GeminiCli::is_summarizing)
        .unwrap_or_else(|| panic!("Gemini CLI did not compress\n{}", shown()));
    let after = requests[at..]
        .iter()
        .find(|r| r.is_streamed())
        .unwrap_or_else(|| panic!("no model turn after the compression\n{}", shown()));
    let text = after.all_text();
    assert!(
        text.contains("<state_snapshot>Compression 1"),
        "the turn after the compression carries the summary\n{text}"
    );
    let kept = ITEMS
        .iter()
        .filter(|(_, item)| text.contains(item))
        .map(|(kind, _)| *kind)
        .collect();
    // The summary's own message: where jkz's BeforeModel answer puts the
    // items (a resumed session's SessionStart context, if any, comes with
    // the user's prompt instead).
    let summary_message = after.body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            c["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str())
                .collect::<String>()
        })
        .find(|t| t.contains("<state_snapshot>Compression 1"))
        .unwrap_or_default();
    (kept, text, summary_message)
}

/// The fidelity table: which of the six items the model receives in the
/// first request after a compression, without jkz and with it.
#[test]
fn gemini_compression_fidelity_without_and_with_jkz() {
    let (without, _, _) = items_after_compression(false);
    let (with, text, summary_message) = items_after_compression(true);
    let mut table = String::from("| item | without jkz | with jkz |\n|---|---|---|\n");
    for (kind, _) in ITEMS {
        let mark = |kept: &[&str]| if kept.contains(&kind) { "kept" } else { "lost" };
        table.push_str(&format!(
            "| {kind} | {} | {} |\n",
            mark(&without),
            mark(&with)
        ));
    }
    table.push_str(&format!(
        "| total | {}/6 | {}/6 |\n",
        without.len(),
        with.len()
    ));
    eprintln!(
        "Gemini CLI {}, first model request after compression:\n{table}",
        GeminiCli::NPM.version
    );
    // The resumed run's SessionStart (resume) answer reaches the model
    // too, with the user's prompt (`<hook_context>`).
    assert!(
        text.contains("jkz: pipeline state restored on resume"),
        "{text}"
    );
    assert!(
        without.is_empty(),
        "the stub summary keeps none of the items: {without:?}\n{table}"
    );
    assert_eq!(with.len(), 6, "{table}\n{text}");
    assert!(
        summary_message.contains("jkz: pipeline state restored after compaction"),
        "the BeforeModel answer extends the summary's message\n{summary_message}"
    );
    for (kind, item) in ITEMS {
        assert!(
            summary_message.contains(item),
            "the {kind} is in the summary's message, from BeforeModel\n{summary_message}"
        );
    }
}

/// Another live chat holds issue 7: Gemini's `write_file`, `replace` and
/// `run_shell_command` on its pipeline file are refused, the model reads
/// why, and the file is unchanged.
#[test]
fn gemini_refuses_edits_of_an_issue_another_live_chat_claimed() {
    const ORIGINAL: &str = "{\"7\": {\"current_phase\": \"building\"}}\n";
    let calls = [
        Turn::Call {
            name: "write_file".into(),
            input: json!({"file_path": "state/pipeline/7.json", "content": "{}"}),
        },
        Turn::Call {
            name: "replace".into(),
            input: json!({"file_path": "state/pipeline/7.json", "old_string": "building",
                         "new_string": "done", "instruction": "mark it done"}),
        },
        Turn::Call {
            name: "run_shell_command".into(),
            input: json!({"command": "echo '{}' > state/pipeline/7.json"}),
        },
        // Gemini CLI sets no session variable: only its process tree says
        // which chat this is.
        Turn::Call {
            name: "run_shell_command".into(),
            input: json!({
                "command": format!("{} release 7 --session other-chat", bin("jkz").display())
            }),
        },
    ];
    let responder = {
        let calls = calls.clone();
        Arc::new(move |r: &Request| {
            let done = r.tool_outputs().len();
            calls
                .get(done)
                .cloned()
                .unwrap_or_else(|| Turn::Text("Done.".into()))
        })
    };
    let server = StubModel::start(responder);
    let project = GeminiCli::project(&server);
    std::fs::create_dir(project.path().join(".git")).unwrap();
    project.install_jkz();
    let pipeline = project.write("state/pipeline/7.json", ORIGINAL);
    // The other chat: registered by its SessionStart, holding issue 7.
    Cmd::new("jkz-chat", project.path())
        .stdin(
            json!({"session_id": "other-chat", "cwd": project.path(),
                   "hook_event_name": "SessionStart", "source": "startup"})
            .to_string(),
        )
        .run()
        .success();
    Cmd::new("jkz", project.path())
        .args(["claim", "7", "--session", "other-chat"])
        .run()
        .success();

    project
        .run("Finish issue 7.", &["--approval-mode", "yolo"])
        .json();
    let last = server
        .requests()
        .into_iter()
        .rfind(Request::is_streamed)
        .expect("model turns");
    let responses = last
        .tool_outputs()
        .into_iter()
        .map(|o| o.text)
        .collect::<Vec<_>>();
    assert_eq!(responses.len(), 4, "{responses:?}");
    for (response, tool) in responses
        .iter()
        .zip(["write_file", "replace", "run_shell_command"])
    {
        assert!(
            response.contains(tool)
                && response.contains("Tool execution blocked")
                && response.contains("other-chat"),
            "{tool} refused with the holder named: {response}"
        );
    }
    assert_eq!(std::fs::read_to_string(&pipeline).unwrap(), ORIGINAL);
    // The Gemini chat cannot act as the other: its client is its ancestor.
    assert!(
        responses[3].contains("(its client, pid")
            && responses[3].contains("--session may name only that chat, not other-chat"),
        "release refused: {}",
        responses[3]
    );
    let chats = Cmd::new("jkz", project.path())
        .args(["chats", "--json"])
        .run()
        .success();
    let chats: Vec<Value> = serde_json::from_str(&chats.stdout_str()).unwrap();
    let other = chats
        .iter()
        .find(|c| c["session_id"] == "other-chat")
        .unwrap();
    assert_eq!(other["claims"][0]["issue"], 7, "{chats:?}");
}

/// Runs a jkz hook with Gemini CLI's environment on `event`.
fn gemini_hook(program: &str, project: &Path, event: &Value) -> crate::util::Run {
    Cmd::new(program, project)
        .env("GEMINI_PROJECT_DIR", project)
        .env("GEMINI_SESSION_ID", "s-gem")
        .stdin(event.to_string())
        .run()
        .success()
}

fn snapshots(state: &Path) -> usize {
    std::fs::read_dir(state)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pre-compact-"))
        .count()
}

/// PreCompress fires before every turn: a snapshot only when the pipeline
/// state changed since the session's last, never any output.
#[test]
fn gemini_pre_compress_snapshots_only_when_the_pipeline_changed() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    std::fs::create_dir(project.join(".git")).unwrap();
    let state = project.join("state");
    std::fs::create_dir_all(state.join("pipeline")).unwrap();
    std::fs::write(
        state.join("pipeline/3.json"),
        r#"{"3":{"current_phase":"building"}}"#,
    )
    .unwrap();
    let event = json!({"session_id": "s-gem", "cwd": project, "hook_event_name": "PreCompress",
                       "trigger": "auto", "transcript_path": "/nonexistent"});
    for _ in 0..3 {
        let run = gemini_hook("jkz-pre-compact", project, &event);
        assert!(
            run.stdout().is_empty() && run.stderr_str().is_empty(),
            "{}",
            run.report()
        );
    }
    assert_eq!(
        snapshots(&state),
        1,
        "one snapshot for three unchanged turns"
    );
    std::fs::write(
        state.join("pipeline/3.json"),
        r#"{"3":{"current_phase":"reviewing"}}"#,
    )
    .unwrap();
    gemini_hook("jkz-pre-compact", project, &event);
    assert_eq!(snapshots(&state), 2, "the pipeline changed");
    let manual = json!({"session_id": "s-gem", "cwd": project, "hook_event_name": "PreCompress",
                        "trigger": "manual"});
    gemini_hook("jkz-pre-compact", project, &manual);
    assert_eq!(snapshots(&state), 3, "a /compress always snapshots");
}

/// BeforeModel answers once per compression summary, and only then.
#[test]
fn gemini_before_model_reinjects_once_per_summary() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    std::fs::create_dir(project.join(".git")).unwrap();
    let state = project.join("state");
    std::fs::create_dir_all(state.join("pipeline")).unwrap();
    std::fs::write(
        state.join("pipeline/3.json"),
        r#"{"3":{"current_phase":"building","failure_context":"FIG-FAILURE"}}"#,
    )
    .unwrap();
    let event = |summary: &str| {
        json!({"session_id": "s-gem", "cwd": project, "hook_event_name": "BeforeModel",
               "llm_request": {"model": "gemini-2.5-flash", "messages": [
                   {"role": "user", "content": format!("<session_context>x</session_context>{summary}")},
                   {"role": "model", "content": "Got it. Thanks for the additional context!"},
                   {"role": "user", "content": "What next?"}]}})
    };
    let plain = json!({"session_id": "s-gem", "cwd": project, "hook_event_name": "BeforeModel",
                       "llm_request": {"messages": [{"role": "user", "content": "hi"}]}});
    assert!(gemini_hook("jkz-session-start", project, &plain)
        .stdout()
        .is_empty());
    let first = event("<state_snapshot>one</state_snapshot>");
    let run = gemini_hook("jkz-session-start", project, &first);
    let answer: Value =
        serde_json::from_slice(run.stdout()).unwrap_or_else(|_| panic!("{}", run.report()));
    let messages = answer["hookSpecificOutput"]["llm_request"]["messages"]
        .as_array()
        .unwrap();
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "BeforeModel");
    assert_eq!(messages.len(), 1, "only up to the summary's message");
    let content = messages[0]["content"].as_str().unwrap();
    assert!(content.starts_with("<session_context>x</session_context><state_snapshot>one"));
    assert!(content.contains("FIG-FAILURE"), "{content}");
    let again = gemini_hook("jkz-session-start", project, &first);
    assert!(
        again.stdout().is_empty(),
        "answered once: {}",
        again.report()
    );
    let next = gemini_hook(
        "jkz-session-start",
        project,
        &event("<state_snapshot>two</state_snapshot>"),
    );
    assert!(
        !next.stdout().is_empty(),
        "a new compression: {}",
        next.report()
    );
}

/// Bad or foreign input: exit 0, nothing on stdout, one line on stderr.
#[test]
fn gemini_hooks_answer_bad_input_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path();
    std::fs::create_dir(project.join(".git")).unwrap();
    std::fs::create_dir(project.join("state")).unwrap();
    let cases: [(&str, Value, &str); 6] = [
        (
            "jkz-session-start",
            json!({"session_id": "s-gem", "cwd": project, "hook_event_name": "BeforeModel", "llm_request": "text"}),
            "llm_request.messages",
        ),
        (
            "jkz-session-start",
            json!({"cwd": project, "hook_event_name": "BeforeModel",
                   "llm_request": {"messages": [{"role": "user", "content": "<state_snapshot>x</state_snapshot>"}]}}),
            "session_id",
        ),
        (
            "jkz-pre-compact",
            json!({"session_id": 42, "cwd": project, "hook_event_name": "PreCompress"}),
            "session_id",
        ),
        (
            "jkz-pre-compact",
            json!({"session_id": "../../etc", "cwd": project, "hook_event_name": "PreCompress"}),
            "session",
        ),
        (
            "jkz-chat",
            json!({"session_id": "s-gem", "cwd": project, "hook_event_name": "AfterModel"}),
            "AfterModel",
        ),
        (
            "jkz-chat",
            json!({"session_id": "s-gem", "cwd": project, "hook_event_name": "BeforeTool",
                   "tool_name": "write_file", "tool_input": "state/pipeline/1.json"}),
            "",
        ),
    ];
    for (program, event, why) in cases {
        let run = Cmd::new(program, project)
            .env("GEMINI_PROJECT_DIR", project)
            .stdin(event.to_string())
            .run()
            .success();
        assert!(run.stdout().is_empty(), "{}", run.report());
        if why.is_empty() {
            assert!(run.stderr_str().is_empty(), "{}", run.report());
        } else {
            run.one_line(program, why);
        }
    }
    // Claude Code's event shape under Gemini CLI's environment is still
    // read as Gemini's: a PreCompact is not an event it sends, and the
    // hook prints no Claude summarizer text.
    let run = Cmd::new("jkz-pre-compact", project)
        .env("GEMINI_SESSION_ID", "s-gem")
        .stdin(
            json!({"session_id": "s-gem", "cwd": project, "hook_event_name": "PreCompact",
                   "trigger": "auto"})
            .to_string(),
        )
        .run()
        .success();
    assert!(run.stdout().is_empty(), "{}", run.report());
    // Not JSON at all.
    let run = Cmd::new("jkz-pre-compact", project)
        .env("GEMINI_SESSION_ID", "s-gem")
        .stdin("not json")
        .run()
        .success();
    assert!(run.stdout().is_empty(), "{}", run.report());
    run.one_line("jkz-pre-compact", "not JSON");
}

/// Gemini CLI cuts a shell output over 40,000 characters to its first
/// 8,000 and last 32,000. A verdict and a TL;DR in the middle of a 500 KB
/// output: without jkz the model never sees them; with jkz's Bash wrap
/// (BeforeTool rewrites the command to run through `jkz-truncate --for
/// gemini --run`) they reach it in a view a fraction of the client's cut.
#[test]
fn gemini_shell_output_keeps_the_blocks_the_clients_cut_drops() {
    let mut big = String::new();
    for i in 0..6000 {
        big.push_str(&format!("compiling unit {i}: ok, nothing to report here\n"));
    }
    big.push_str("<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"blocking\":\"GUAVA-BLOCKER in src/pay.rs\"} -->\n");
    big.push_str("## TL;DR\nKIWI-TLDR: the payment rounding is wrong\n\n");
    for i in 0..6000 {
        big.push_str(&format!("linking unit {i}: ok, nothing to report here\n"));
    }
    big.push_str("LAST-LINE: 12000 units built\n");
    let measure = |with_jkz: bool| {
        let responder = Arc::new(|r: &Request| {
            if r.tool_outputs().is_empty() {
                Turn::Call {
                    name: "run_shell_command".into(),
                    input: json!({"command": "cat build.log"}),
                }
            } else {
                Turn::Text("Done.".into())
            }
        });
        let server = StubModel::start(responder);
        let project = GeminiCli::project(&server);
        std::fs::create_dir(project.path().join(".git")).unwrap();
        project.write("build.log", &big);
        if with_jkz {
            project.install_jkz();
        }
        project
            .run("Build it.", &["--approval-mode", "yolo"])
            .json();
        let last = server
            .requests()
            .into_iter()
            .rfind(Request::is_streamed)
            .expect("model turns");
        let responses = last
            .tool_outputs()
            .into_iter()
            .map(|o| o.text)
            .collect::<Vec<_>>();
        assert_eq!(responses.len(), 1, "{responses:?}");
        let seen: String =
            serde_json::from_str::<Value>(&responses[0]).unwrap()["response"].to_string();
        if with_jkz {
            // The Bash wrap (BeforeTool) ran it through jkz: reduced
            // before the client's cut could apply, the whole kept.
            assert!(
                !seen.contains("Output too large") && seen.contains("[jkz: full output: "),
                "jkz reduced it: {seen:.600}"
            );
        } else {
            assert!(
                seen.contains("Output too large"),
                "the client cut it: {seen:.300}"
            );
        }
        seen
    };
    let without = measure(false);
    let with = measure(true);
    let mut table =
        String::from("| in what the model receives | without jkz | with jkz |\n|---|---|---|\n");
    for marker in ["GUAVA-BLOCKER", "KIWI-TLDR", "LAST-LINE"] {
        let mark = |s: &str| if s.contains(marker) { "kept" } else { "lost" };
        table.push_str(&format!(
            "| {marker} | {} | {} |\n",
            mark(&without),
            mark(&with)
        ));
    }
    table.push_str(&format!(
        "| characters | {} | {} |\n",
        without.chars().count(),
        with.chars().count()
    ));
    eprintln!(
        "Gemini CLI {}, a 500 KB shell output:\n{table}",
        GeminiCli::NPM.version
    );
    assert!(
        !without.contains("GUAVA-BLOCKER") && !without.contains("KIWI-TLDR"),
        "{table}"
    );
    assert!(
        with.contains("GUAVA-BLOCKER") && with.contains("KIWI-TLDR"),
        "{table}"
    );
    assert!(
        with.contains("LAST-LINE") && without.contains("LAST-LINE"),
        "{table}"
    );
    // `cat` of a file is what was asked for: the engine shows as much of
    // it as its budget for Gemini allows (20,000 characters, with the
    // client's own wrapping around it), never the client's whole cut.
    assert!(
        with.chars().count() < 21_000 && with.chars().count() < without.chars().count(),
        "within jkz's budget and under the client's cut: {table}"
    );
}
