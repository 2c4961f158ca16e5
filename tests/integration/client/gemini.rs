//! jkz in the real Gemini CLI: `@google/gemini-cli@GEMINI_CLI_VERSION`,
//! installed into `<target>/gemini-cli/` on first use (under a lock file),
//! driven offline against [`GeminiServer`] on 127.0.0.1
//! (`GOOGLE_GEMINI_BASE_URL`), with its own `HOME` and a dummy API key.
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

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use super::gemini_server::{GeminiRequest, GeminiServer, Reply};
use super::model_server::Recorded;
use super::{npm_install, path_with_jkz, run_bounded, Finished, NpmClient};
use crate::util::{bin, Cmd};

/// The pinned client version.
pub const GEMINI_CLI_VERSION: &str = "0.61.0";

/// How long one `gemini` run may take before it is killed (it starts
/// slowly on a loaded machine: ~10 s of CPU-bound start-up).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(240);

/// The model asked for (explicit, so Gemini CLI's router is not consulted).
const MODEL: &str = "gemini-2.5-flash";

/// The pinned `gemini` binary, installed on first use.
pub fn gemini_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(install).clone()
}

fn install() -> PathBuf {
    npm_install(&NpmClient {
        name: "Gemini CLI",
        dir: "gemini-cli",
        bin: "gemini",
        package: "@google/gemini-cli",
        version: GEMINI_CLI_VERSION,
        installed_version,
    })
}

fn installed_version(bin: &Path) -> Option<String> {
    if !bin.exists() {
        return None;
    }
    let tmp = tempfile::tempdir().ok()?;
    let out = run_bounded(
        Command::new(bin).arg("--version").env("HOME", tmp.path()),
        Duration::from_secs(120),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().next().map(str::to_string)
}

/// A project with its own `HOME`, talking to one [`GeminiServer`].
pub struct GeminiProject {
    pub dir: tempfile::TempDir,
    pub home: tempfile::TempDir,
    pub base_url: String,
}

/// One `gemini -p` run.
pub struct GeminiRun {
    pub shown: String,
    pub finished: Finished,
}

impl GeminiRun {
    pub fn report(&self) -> String {
        format!(
            "command: {}\nstatus: {:?} (timed out: {})\nstdout:\n{}\nstderr:\n{}",
            self.shown,
            self.finished.status,
            self.finished.timed_out,
            String::from_utf8_lossy(&self.finished.stdout),
            String::from_utf8_lossy(&self.finished.stderr)
        )
    }

    /// Asserts the run succeeded; its `--output-format json` result.
    pub fn ok(&self) -> Value {
        assert!(
            self.finished.status.is_some_and(|s| s.success()),
            "gemini failed\n{}",
            self.report()
        );
        serde_json::from_slice(&self.finished.stdout)
            .unwrap_or_else(|e| panic!("stdout is not the JSON result ({e})\n{}", self.report()))
    }
}

impl GeminiProject {
    pub fn new(base_url: String) -> GeminiProject {
        let mk = |prefix| {
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .expect("temp dir")
        };
        let project = GeminiProject {
            dir: mk("jkz-gemini-"),
            home: mk("jkz-gemini-home-"),
            base_url,
        };
        // Offline: an API key (a dummy), no telemetry, no update checks.
        let user = json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
        });
        let settings = project.home.path().join(".gemini/settings.json");
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        std::fs::write(settings, user.to_string()).unwrap();
        project
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
        std::fs::write(&path, contents).expect("write");
        path
    }

    /// `jkz install --client gemini` in the project.
    pub fn install_jkz(&self) {
        let out = Command::new(bin("jkz"))
            .current_dir(self.path())
            .env("HOME", self.home.path())
            .env("PATH", path_with_jkz())
            .args(["install", "--client", "gemini", "--project"])
            .arg(self.path())
            .output()
            .expect("run jkz install");
        assert!(
            out.status.success(),
            "jkz install --client gemini: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `gemini -m MODEL -o json -p PROMPT [extra…]` in the project.
    pub fn gemini(&self, prompt: &str, extra: &[&str]) -> GeminiRun {
        let mut cmd = Command::new(gemini_bin());
        cmd.current_dir(self.path());
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("GEMINI")
                || k.starts_with("GOOGLE")
                || k.starts_with("CLAUDE")
                || k.starts_with("JKZ_")
                || k.to_ascii_lowercase().ends_with("_proxy")
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("HOME", self.home.path())
            .env("GEMINI_API_KEY", "jkz-test-dummy-key")
            .env("GOOGLE_GEMINI_BASE_URL", &self.base_url)
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("PATH", path_with_jkz())
            .args(["-m", MODEL, "-o", "json", "-p", prompt])
            .args(extra);
        let shown = format!("gemini -p {prompt:.60?} {}", extra.join(" "));
        let finished = run_bounded(&mut cmd, RUN_TIMEOUT);
        GeminiRun { shown, finished }
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=jkz", "-c", "user.email=jkz@localhost"])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// The six decision-critical items, one marker each (as in the Claude Code
// suite, `compaction.rs`).
const PLAN: &str = "MARMALADE-PLAN: migrate the checkout totals to integer cents";
const DECISION: &str = "PLUM-DECISION: ship behind a flag or wait for the migration?";
const FAILURE: &str = "TANGERINE-FAILURE: test_checkout_total expected 10.00, got 9.99";
const BRANCH: &str = "quince-topic-branch";
const PHASE: &str = "Phase and iteration: fixing, active agent builder; plan iteration 2, review fix cycle 1, QA fix cycle 3";
const VERDICTS: &str = "Active verdicts: review passed, QA failed; overall FAIL";

const ITEMS: [(&str, &str); 6] = [
    ("verdict", VERDICTS),
    ("approved plan", PLAN),
    ("pending decision", DECISION),
    ("phase and iteration", PHASE),
    ("failure being fixed", FAILURE),
    ("git branch", BRANCH),
];

/// A project whose issue 42 is in a fix cycle, on branch [`BRANCH`], with a
/// compression threshold so low that any stored history is over it.
fn project_with_pipeline(server: &GeminiServer) -> GeminiProject {
    let project = GeminiProject::new(server.base_url());
    project.write(
        "state/pipeline/42.json",
        serde_json::to_string_pretty(&json!({
            "42": {
                "current_phase": "fixing", "active_agent": "builder", "issue_type": "feature",
                "pr_number": "42", "started_at": "2025-01-01T00:00:00Z",
                "last_updated": "2025-01-02T00:00:00.000Z", "plan_iterations": "2",
                "review_fix_count": "1", "qa_fix_count": "3",
                "review_passed": "true", "qa_passed": "false",
                "pending_decisions": [DECISION], "failure_context": FAILURE
            },
            "lastActivity": "2025-01-02T00:00:00.000Z"
        }))
        .unwrap(),
    );
    project.write(
        "state/pipeline/42-compact-plan.md",
        format!("{PLAN}\n1. add cents column\n2. backfill\n"),
    );
    project.write(".gitignore", "state/\n.gemini/\n");
    git(project.path(), &["init", "-q", "-b", BRANCH]);
    git(project.path(), &["add", ".gitignore"]);
    git(project.path(), &["commit", "-q", "-m", "init"]);
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
fn responder() -> Arc<dyn Fn(&Recorded) -> Reply + Send + Sync> {
    let compressions = AtomicUsize::new(0);
    Arc::new(move |r: &Recorded| {
        if r.is_summarizing() {
            let n = if r.contents_text().contains("Critically evaluate") {
                compressions.load(Ordering::SeqCst)
            } else {
                compressions.fetch_add(1, Ordering::SeqCst) + 1
            };
            Reply::Text(format!(
                "<state_snapshot>Compression {n}: the user talked about fruit.</state_snapshot>"
            ))
        } else {
            Reply::Text("Noted.".into())
        }
    })
}

/// Runs the two turns (the second compresses); the items present in the
/// first model turn after the compression, and that request's text.
fn items_after_compression(with_jkz: bool) -> (Vec<&'static str>, String, String) {
    let server = GeminiServer::start(responder());
    let project = project_with_pipeline(&server);
    if with_jkz {
        project.install_jkz();
    }
    project.gemini(&first_prompt(), &[]).ok();
    let first = server.requests();
    let told = first.iter().find(|r| r.is_turn()).expect("the first turn");
    for (kind, item) in ITEMS {
        assert!(
            told.contents_text().contains(item),
            "the model was told the {kind}"
        );
    }
    project.gemini("What next?", &["--resume", "latest"]).ok();
    let requests = server.requests();
    let shown = || {
        requests
            .iter()
            .map(|r| format!("{} {:.300}", r.path, r.contents_text()))
            .collect::<Vec<_>>()
            .join("\n---\n")
    };
    let at = requests
        .iter()
        .position(GeminiRequest::is_summarizing)
        .unwrap_or_else(|| panic!("Gemini CLI did not compress\n{}", shown()));
    let after = requests[at..]
        .iter()
        .find(|r| r.is_turn())
        .unwrap_or_else(|| panic!("no model turn after the compression\n{}", shown()));
    let text = after.contents_text();
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
    eprintln!("Gemini CLI {GEMINI_CLI_VERSION}, first model request after compression:\n{table}");
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
        Reply::Call {
            name: "write_file".into(),
            args: json!({"file_path": "state/pipeline/7.json", "content": "{}"}),
        },
        Reply::Call {
            name: "replace".into(),
            args: json!({"file_path": "state/pipeline/7.json", "old_string": "building",
                         "new_string": "done", "instruction": "mark it done"}),
        },
        Reply::Call {
            name: "run_shell_command".into(),
            args: json!({"command": "echo '{}' > state/pipeline/7.json"}),
        },
        // Gemini CLI sets no session variable: only its process tree says
        // which chat this is.
        Reply::Call {
            name: "run_shell_command".into(),
            args: json!({
                "command": format!("{} release 7 --session other-chat", bin("jkz").display())
            }),
        },
    ];
    let responder = {
        let calls = calls.clone();
        Arc::new(move |r: &Recorded| {
            let done = r.function_responses().len();
            calls
                .get(done)
                .cloned()
                .unwrap_or_else(|| Reply::Text("Done.".into()))
        })
    };
    let server = GeminiServer::start(responder);
    let project = GeminiProject::new(server.base_url());
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
        .gemini("Finish issue 7.", &["--approval-mode", "yolo"])
        .ok();
    let last = server
        .requests()
        .into_iter()
        .rfind(GeminiRequest::is_turn)
        .expect("model turns");
    let responses = last.function_responses();
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
        let responder = Arc::new(|r: &Recorded| {
            if r.function_responses().is_empty() {
                Reply::Call {
                    name: "run_shell_command".into(),
                    args: json!({"command": "cat build.log"}),
                }
            } else {
                Reply::Text("Done.".into())
            }
        });
        let server = GeminiServer::start(responder);
        let project = GeminiProject::new(server.base_url());
        std::fs::create_dir(project.path().join(".git")).unwrap();
        project.write("build.log", &big);
        if with_jkz {
            project.install_jkz();
        }
        project
            .gemini("Build it.", &["--approval-mode", "yolo"])
            .ok();
        let last = server
            .requests()
            .into_iter()
            .rfind(GeminiRequest::is_turn)
            .expect("model turns");
        let responses = last.function_responses();
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
    eprintln!("Gemini CLI {GEMINI_CLI_VERSION}, a 500 KB shell output:\n{table}");
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
