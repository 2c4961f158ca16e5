//! Real-client tests for Codex CLI: the pinned `codex` binary, run headless
//! (`codex exec`) against our own Responses API server on 127.0.0.1
//! ([`super::codex_server`]), with jkz installed by `jkz install --client
//! codex`.
//!
//! [`codex_bin`] installs `@openai/codex@CODEX_VERSION` into
//! `<target>/codex-cli/` on first use (under a lock file). Without npm the
//! tests FAIL saying what to install.
//!
//! Each run has its own `CODEX_HOME` whose `config.toml` names the loopback
//! provider, trusts the project (Codex reads a project's `.codex/` only
//! then) and sets `model_auto_compact_token_limit` low, so a reply that
//! reports many tokens forces a compaction. `--dangerously-bypass-hook-trust`
//! runs the project's hooks without the interactive trust review.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use super::codex_server::{CodexServer, Reply, Request};
use super::{npm_install, path_with_jkz, run_bounded, Finished, NpmClient};
use crate::util::bin;
use jkz::thousands::thousands;

/// The pinned Codex CLI version.
pub const CODEX_VERSION: &str = "0.169.0";

/// A model slug Codex ships metadata for, so it offers `apply_patch`.
const MODEL: &str = "gpt-5.5";

/// Tokens a reply reports to force a compaction (the limit is 2,000).
const OVER_LIMIT: u64 = 50_000;

/// The pinned `codex` binary, installed on first use.
pub fn codex_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(install).clone()
}

fn install() -> PathBuf {
    npm_install(&NpmClient {
        name: "Codex",
        dir: "codex-cli",
        bin: "codex",
        package: "@openai/codex",
        version: CODEX_VERSION,
        installed_version,
    })
}

fn installed_version(bin: &Path) -> Option<String> {
    if !bin.exists() {
        return None;
    }
    let home = tempfile::tempdir().ok()?;
    let out = run_bounded(
        Command::new(bin)
            .arg("--version")
            .env("CODEX_HOME", home.path()),
        Duration::from_secs(30),
    );
    // "codex-cli 0.169.0"
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .nth(1)
        .map(str::to_string)
}

/// A git project and a `CODEX_HOME` talking to one server.
pub(super) struct CodexProject {
    dir: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl CodexProject {
    pub(super) fn new(server: &CodexServer) -> CodexProject {
        let mk = |p| {
            tempfile::Builder::new()
                .prefix(p)
                .tempdir()
                .expect("temp dir")
        };
        let (dir, home) = (mk("jkz-codex-"), mk("jkz-codex-home-"));
        let project = std::fs::canonicalize(dir.path()).unwrap();
        let config = format!(
            "model = \"{MODEL}\"\nmodel_provider = \"jkz\"\nmodel_auto_compact_token_limit = 2000\n\n\
             [model_providers.jkz]\nname = \"jkz\"\nbase_url = \"{}\"\nwire_api = \"responses\"\nenv_key = \"JKZ_CODEX_TEST_KEY\"\n\n\
             [projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            server.base_url(),
            project.display()
        );
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        git(&project, &["init", "-q", "-b", BRANCH]);
        CodexProject { dir, home }
    }

    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(super) fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// Raises `model_auto_compact_token_limit` out of reach: a long tool
    /// output alone would otherwise compact the history it is measured in.
    pub(super) fn without_auto_compaction(&self) {
        let config = self.home.path().join("config.toml");
        let text = std::fs::read_to_string(&config).unwrap().replace(
            "model_auto_compact_token_limit = 2000",
            "model_auto_compact_token_limit = 100000000",
        );
        std::fs::write(config, text).unwrap();
    }

    /// `jkz install --client codex` in the project, which must succeed.
    pub(super) fn install_jkz(&self) {
        let out = Command::new(bin("jkz"))
            .args(["install", "--client", "codex", "--project"])
            .arg(self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "jkz install --client codex: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// One headless `codex exec PROMPT`.
    pub(super) fn exec(&self, prompt: &str) -> CodexRun {
        let mut cmd = Command::new(codex_bin());
        cmd.current_dir(self.path());
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("CLAUDE")
                || k.starts_with("CODEX")
                || k.starts_with("OPENAI")
                || k.starts_with("JKZ_")
                || k.to_ascii_lowercase().ends_with("_proxy")
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("CODEX_HOME", self.home.path())
            .env("JKZ_CODEX_TEST_KEY", "sk-jkz-test")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("PATH", path_with_jkz())
            .args([
                "exec",
                "--dangerously-bypass-hook-trust",
                "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check",
                prompt,
            ]);
        let finished = run_bounded(&mut cmd, Duration::from_secs(120));
        CodexRun {
            shown: format!("codex exec {prompt:?}"),
            finished,
        }
    }
}

pub(super) struct CodexRun {
    shown: String,
    finished: Finished,
}

impl CodexRun {
    pub(super) fn report(&self) -> String {
        format!(
            "command: {}\nstatus: {:?} (timed out: {})\nstdout:\n{}\nstderr:\n{}",
            self.shown,
            self.finished.status,
            self.finished.timed_out,
            String::from_utf8_lossy(&self.finished.stdout),
            String::from_utf8_lossy(&self.finished.stderr)
        )
    }

    pub(super) fn assert_ok(&self) {
        assert!(
            self.finished.status.is_some_and(|s| s.success()),
            "codex failed\n{}",
            self.report()
        );
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

// The six decision-critical items, as in the Claude Code compaction test
// (`compaction.rs`): each a marker traced from the pipeline state through
// the summarizing request to what the model sees after compaction.
const PLAN: &str = "MARMALADE-PLAN: migrate the checkout totals to integer cents";
const DECISION: &str = "PLUM-DECISION: ship behind a flag or wait for the migration?";
const FAILURE: &str = "TANGERINE-FAILURE: test_checkout_total expected 10.00, got 9.99";
const BRANCH: &str = "quince-topic-branch";
const PHASE: &str = "Phase and iteration: fixing, active agent builder; plan iteration 2, review fix cycle 1, QA fix cycle 3";
const VERDICTS: &str = "Active verdicts: review passed, QA failed; overall FAIL";
const ITEMS: [(&str, &str); 6] = [
    ("approved plan", PLAN),
    ("phase and iteration", PHASE),
    ("verdicts", VERDICTS),
    ("pending decision", DECISION),
    ("failure being fixed", FAILURE),
    ("git state (branch)", BRANCH),
];

fn with_pipeline(server: &CodexServer) -> CodexProject {
    let project = CodexProject::new(server);
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
    project.write(".gitignore", "state/\n.codex/\n");
    git(project.path(), &["add", ".gitignore"]);
    git(project.path(), &["commit", "-q", "-m", "init"]);
    project
}

/// The summarizer stand-in: it keeps exactly the items its prompt names
/// (a summarizer following its instructions), and nothing else of the
/// conversation.
fn summarize(r: &Request) -> String {
    let prompt = r.last_user_text();
    let kept: Vec<&str> = ITEMS
        .iter()
        .map(|(_, m)| *m)
        .filter(|m| prompt.contains(m))
        .collect();
    format!(
        "<summary>The user and the agent looked at the checkout code.\n{}</summary>",
        kept.join("\n")
    )
}

/// One compaction in a real `codex exec`: the model reads the pipeline
/// state with a shell command whose reply reports more tokens than the
/// limit; Codex compacts (PreCompact, the summarizing request,
/// SessionStart `compact`) and asks the model again. Returns the
/// requests: the summarizing one and the first after it.
fn compact_once(jkz: bool) -> (Request, Request, CodexProject, Vec<Request>) {
    // After the compaction the tool call is gone from the history: count
    // the turns, or the model would read the state (and compact) forever.
    let turns = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = CodexServer::start(Arc::new(move |r: &Request| {
        if r.is_summarizing() {
            return (Reply::Text(summarize(r)), 100);
        }
        if turns.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            let cmd = "cat state/pipeline/42.json state/pipeline/42-compact-plan.md";
            return (
                Reply::Call {
                    name: "exec_command".into(),
                    arguments: json!({ "cmd": cmd }),
                },
                OVER_LIMIT,
            );
        }
        (Reply::Text("Continuing with the fix.".into()), 100)
    }));
    let project = with_pipeline(&server);
    if jkz {
        project.install_jkz();
    }
    let run = project.exec("Carry on with issue 42.");
    run.assert_ok();
    let requests = server.requests();
    let shown = || {
        requests
            .iter()
            .enumerate()
            .map(|(i, r)| format!("--- request {i}:\n{}", r.all_text()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let at = requests
        .iter()
        .position(Request::is_summarizing)
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
            .input()
            .iter()
            .filter(|i| i["role"] == "user")
            .any(|i| i.to_string().contains("<summary>") && i.to_string().contains(marker));
        let reinjected = after_with
            .input()
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
        CodexServer::start(Arc::new(move |r: &Request| match r.tool_outputs().len() {
            0 => (Reply::Patch(patch_body.lock().unwrap().clone()), 100),
            1 => (
                Reply::Call {
                    name: "exec_command".into(),
                    arguments: json!({
                        "cmd": "echo '{\"42\":{\"current_phase\":\"done\"}}' > state/pipeline/42.json"
                    }),
                },
                100,
            ),
            // Codex sets no session variable: only its process tree says
            // which chat this is.
            2 => (
                Reply::Call {
                    name: "exec_command".into(),
                    arguments: json!({
                        "cmd": format!("{} release 42 --session chat-a", bin("jkz").display())
                    }),
                },
                100,
            ),
            _ => (Reply::Text("Stopping here.".into()), 100),
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
    let wt = project.path().join("wt/i42");
    let start = json!({"session_id": "chat-a", "cwd": project.path(),
                       "hook_event_name": "SessionStart", "source": "startup"});
    let mut hook = Command::new(bin("jkz-chat"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    hook.stdin
        .take()
        .unwrap()
        .write_all(start.to_string().as_bytes())
        .unwrap();
    assert!(hook.wait().unwrap().success());
    let claim = Command::new(bin("jkz"))
        .current_dir(project.path())
        .args(["claim", "42", "--worktree"])
        .arg(&wt)
        .args(["--session", "chat-a"])
        .output()
        .unwrap();
    assert!(
        claim.status.success(),
        "{}",
        String::from_utf8_lossy(&claim.stderr)
    );

    let run = project.exec("Fix the greeting of issue 42.");
    run.assert_ok();
    assert_eq!(std::fs::read_to_string(&greeting).unwrap(), "helo world\n");
    assert_eq!(
        std::fs::read(project.path().join("state/pipeline/42.json")).unwrap(),
        pipeline_before
    );
    let last = server.requests().pop().expect("requests");
    let outputs = last.tool_outputs();
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
    let mut big = String::new();
    for i in 0..4300 {
        big.push_str(&format!("compiling unit {i}: ok, nothing to report here\n"));
    }
    big.push_str(
        "<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"blocking\":\"GUAVA-BLOCKER in src/pay.rs\"} -->\n",
    );
    big.push_str("<tldr>\nKIWI-TLDR: the payment rounding is wrong\n</tldr>\n");
    for i in 0..4300 {
        big.push_str(&format!("linking unit {i}: ok, nothing to report here\n"));
    }
    big.push_str("LAST-LINE: 8600 units built\n");
    assert!((390_000..420_000).contains(&big.len()), "{}", big.len());
    const FAILING: &str = "echo PEAR-FAILING; exit 3";
    let measure = |with_jkz: bool| {
        let server = CodexServer::start(Arc::new(|r: &Request| {
            let cmd = match r.tool_outputs().len() {
                0 => "cat build.log",
                1 => FAILING,
                _ => return (Reply::Text("Done.".into()), 100),
            };
            (
                Reply::Call {
                    name: "exec_command".into(),
                    arguments: json!({ "cmd": cmd }),
                },
                100,
            )
        }));
        let project = with_pipeline(&server);
        project.without_auto_compaction();
        project.write("build.log", &big);
        if with_jkz {
            project.install_jkz();
        }
        let run = project.exec("Build it.");
        run.assert_ok();
        let last = server.requests().pop().expect("requests");
        let outputs = last.tool_outputs();
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
        "Codex CLI {CODEX_VERSION}, a {} byte shell output:\n{table}\nfailing command, without jkz:\n{}\nwith jkz:\n{}",
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
