//! OpenCode: the hooks on the JSON jkz's plugin (`plugin/opencode/jkz.js`)
//! sends them, in the shapes OpenCode 1.18.33 gave its hooks, and
//! `jkz install --client opencode` placing the plugin, its uninstall byte
//! for byte, and doctor.

use std::path::Path;

use serde_json::{json, Value};

use crate::doctor_probe::{probe_after_install, probe_lines, project, tree};
use crate::install_clients::jkz;
use crate::registry::{claimed_checkout, T};
use crate::util::{write_pipeline, Dir, Run};

const SESSION: &str = "ses_3f1a2b3c4d5eYZabcdefghij";

/// The event the plugin sends for OpenCode's hook `name`.
fn event(cwd: &Path, name: &str, session: &str, input: Value, output: Value) -> String {
    json!({
        "client": "opencode",
        "hook_event_name": name,
        "session_id": session,
        "cwd": cwd,
        "worktree": cwd,
        "input": input,
        "output": output,
    })
    .to_string()
}

/// `program` as the plugin runs it: in the project, the event on stdin,
/// with the environment OpenCode's process has (which says nothing of
/// which hook runs).
fn hook(dir: &Dir, program: &str, input: String) -> Run {
    dir.cmd(program)
        .env("OPENCODE", "1")
        .env("AGENT", "1")
        .env("SHELL", "/bin/sh")
        .stdin(input)
        .run()
        .success()
}

fn reply(run: &Run) -> Value {
    serde_json::from_slice(run.stdout())
        .unwrap_or_else(|_| panic!("the plugin reads one JSON object\n{}", run.report()))
}

fn with_state() -> Dir {
    let dir = Dir::new();
    write_pipeline(
        &dir.join("state"),
        42,
        &json!({"42": {"current_phase": "fixing", "failure_context": "FIG-FAILURE"}}),
    );
    dir
}

#[test]
fn opencode_tool_execute_before_refuses_a_write_into_a_worktree_another_chat_claimed() {
    let p = claimed_checkout();
    let file = p.dir.join("wt/42/src/lib.rs");
    let run = p
        .cmd("jkz-chat")
        .env("JKZ_TEST_NOW", (T + 10).to_string())
        .stdin(event(
            p.dir.path(),
            "tool.execute.before",
            "chat-b",
            json!({"tool": "write", "sessionID": "chat-b", "callID": "call_1"}),
            json!({"args": {"filePath": file, "content": "x"}}),
        ))
        .run()
        .success();
    let answer = reply(&run);
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["deny"], "{answer}");
    let why = answer["deny"].as_str().unwrap();
    assert!(why.contains("chat-a"), "names the holder: {why}");

    // The holder itself writes there.
    let run = p
        .cmd("jkz-chat")
        .env("JKZ_TEST_NOW", (T + 10).to_string())
        .stdin(event(
            p.dir.path(),
            "tool.execute.before",
            "chat-a",
            json!({"tool": "write", "sessionID": "chat-a", "callID": "call_2"}),
            json!({"args": {"filePath": file, "content": "x"}}),
        ))
        .run()
        .success();
    assert!(run.stdout().is_empty(), "{}", run.report());
}

#[test]
fn opencode_tool_execute_before_wraps_a_shell_command_keeping_every_argument() {
    let dir = with_state();
    let run = hook(
        &dir,
        "jkz-chat",
        event(
            dir.path(),
            "tool.execute.before",
            SESSION,
            json!({"tool": "bash", "sessionID": SESSION, "callID": "call_1"}),
            json!({"args": {"command": "cargo test", "description": "Run the tests"}}),
        ),
    );
    let answer = reply(&run);
    let args = &answer["args"];
    let command = args["command"].as_str().unwrap_or_default();
    assert!(
        command.contains("jkz-truncate' --for opencode") && command.contains("--run 'cargo test'"),
        "{answer}"
    );
    // The plugin replaces every argument: the others come back.
    assert_eq!(args["description"], "Run the tests", "{answer}");
}

/// OpenCode shows its model a shell command's output and not its status:
/// the wrapped command's view says a failure's status; a client that
/// shows the status itself (Codex CLI) gets no such line.
#[test]
fn opencode_wrapped_command_that_fails_tells_the_model_its_status() {
    let dir = with_state();
    let run = |client: &str, command: &str| {
        dir.cmd("jkz-truncate")
            .args(["--for", client, "--run", command])
            .run()
    };
    let failed = run("opencode", "echo oops; exit 3");
    assert_eq!(failed.code(), Some(3), "{}", failed.stderr_str());
    assert_eq!(
        failed.stdout_str(),
        "oops\n[jkz: the command exited with status 3]\n"
    );
    let unterminated = run("opencode", "printf oops; exit 4");
    assert_eq!(
        unterminated.stdout_str(),
        "oops\n[jkz: the command exited with status 4]\n"
    );
    let passed = run("opencode", "echo fine");
    assert_eq!(
        (passed.code(), passed.stdout_str()),
        (Some(0), "fine\n".into())
    );
    let codex = run("codex", "echo oops; exit 3");
    assert_eq!(
        (codex.code(), codex.stdout_str()),
        (Some(3), "oops\n".into())
    );
}

/// An output of ~400 KB with its verdict in the middle and its result on
/// the last line.
fn large_output() -> String {
    let mut out = String::with_capacity(420_000);
    for i in 0..2_500 {
        out.push_str(&format!(
            "    log line {i:05} of a verbose build that nobody needs to read\n"
        ));
    }
    for i in 0..3_000 {
        out.push_str(&format!("test suite::case_{i:05} ... ok\n"));
        if i == 1_500 {
            out.push_str("test suite::case_01500 ... FAILED (VERDICT-MARK)\n");
        }
    }
    for i in 2_500..5_000 {
        out.push_str(&format!(
            "    log line {i:05} of a verbose build that nobody needs to read\n"
        ));
    }
    out.push_str("test result: FAILED. 2999 passed; 1 failed\n");
    out
}

#[test]
fn opencode_tool_execute_after_shapes_a_400_kb_output_keeping_its_verdict() {
    let dir = with_state();
    let output = large_output();
    assert!(output.len() > 390_000);
    let args = json!({"command": "cargo test", "description": "Run the tests"});
    let run = hook(
        &dir,
        "jkz-post-tool-use",
        event(
            dir.path(),
            "tool.execute.after",
            SESSION,
            json!({"tool": "bash", "sessionID": SESSION, "callID": "call_1", "args": args}),
            json!({"title": "Run the tests", "output": output,
                   "metadata": {"output": "", "exit": 101, "truncated": false}}),
        ),
    );
    let answer = reply(&run);
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["output"], "{}", run.report());
    let shown = answer["output"].as_str().unwrap();
    assert!(shown.len() < 30_000, "shaped: {} bytes", shown.len());
    assert!(shown.contains("VERDICT-MARK"), "the verdict: {shown}");
    assert!(
        shown.contains("test result: FAILED. 2999 passed; 1 failed"),
        "the last line: {shown}"
    );
    // OpenCode keeps `metadata.exit` from its model: the view says it.
    assert!(
        shown.ends_with("\n[jkz: the command exited with status 101]\n"),
        "the status: {shown}"
    );
    let ledger = std::fs::read_to_string(dir.join("state/tool-output.jsonl")).unwrap_or_default();
    let last: Value = serde_json::from_str(ledger.lines().last().unwrap_or("{}")).unwrap();
    assert_eq!(last["exit"], 101, "{ledger}");
    assert_eq!(
        last["jkz"],
        shown.len() as u64,
        "the status line is counted: {ledger}"
    );

    // An output that fits is left as it is: no answer.
    let run = hook(
        &dir,
        "jkz-post-tool-use",
        event(
            dir.path(),
            "tool.execute.after",
            SESSION,
            json!({"tool": "bash", "sessionID": SESSION, "callID": "call_2", "args": args}),
            json!({"title": "t", "output": "ok\n", "metadata": {"exit": 0}}),
        ),
    );
    assert!(run.stdout().is_empty(), "{}", run.report());
}

#[test]
fn opencode_compaction_asks_the_summarizer_and_reinjects_the_state_as_system() {
    let dir = with_state();
    let run = hook(
        &dir,
        "jkz-pre-compact",
        event(
            dir.path(),
            "experimental.session.compacting",
            SESSION,
            json!({"sessionID": SESSION}),
            json!({"context": []}),
        ),
    );
    let answer = reply(&run);
    let context = answer["context"].as_str().unwrap_or_default();
    assert!(!context.is_empty(), "{}", run.report());
    assert!(
        dir.files()
            .iter()
            .any(|f| f.starts_with("state/session-snapshots")),
        "a snapshot: {:?}",
        dir.files()
    );

    let run = hook(
        &dir,
        "jkz-session-start",
        event(
            dir.path(),
            "session.compacted",
            SESSION,
            json!({"type": "session.compacted", "properties": {"sessionID": SESSION}}),
            json!({}),
        ),
    );
    let answer = reply(&run);
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["system"], "{answer}");
    assert!(answer["system"].as_str().unwrap().contains("FIG-FAILURE"));
}

#[test]
fn opencode_events_jkz_does_not_handle_exit_zero_with_one_line() {
    let dir = with_state();
    hook(
        &dir,
        "jkz-chat",
        event(
            dir.path(),
            "session.idle",
            SESSION,
            json!({"type": "session.idle"}),
            json!({}),
        ),
    )
    .one_line("jkz-chat", "session.idle");
}

/// A git repository with a home of its own.
fn shipped_plugin() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugin/opencode/jkz.js");
    std::fs::read(path).unwrap()
}

#[test]
fn opencode_install_places_the_plugin_and_uninstall_restores_the_tree() {
    let dir = project();
    dir.write("project/.gitignore", "target/\n");
    dir.write("project/.opencode/opencode.json", "{}\n");
    let before = tree(&dir.join("project"));
    let run = jkz(&dir, &["install", "--client", "opencode"]).success();
    assert!(
        run.stdout_str().contains(".opencode/plugins/jkz.js"),
        "{}",
        run.report()
    );
    assert_eq!(
        dir.read("project/.opencode/plugins/jkz.js"),
        shipped_plugin()
    );
    let again = jkz(&dir, &["install", "--client", "opencode"]).success();
    assert!(
        again.stdout_str().contains("nothing changed"),
        "{}",
        again.report()
    );
    let doctor = jkz(&dir, &["doctor", "--client", "opencode"]);
    assert!(
        doctor.stdout_str().lines().any(|l| l.starts_with("ok")
            && l.contains("OpenCode plugin")
            && l.contains("is this jkz's")),
        "{}",
        doctor.report()
    );
    // Another version of the plugin: doctor says so, install replaces it.
    dir.write(
        "project/.opencode/plugins/jkz.js",
        "// jkz for OpenCode: old\n",
    );
    let doctor = jkz(&dir, &["doctor", "--client", "opencode"]);
    assert!(
        doctor
            .stdout_str()
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains("another version of jkz's")),
        "{}",
        doctor.report()
    );
    jkz(&dir, &["install", "--client", "opencode"]).success();
    assert_eq!(
        dir.read("project/.opencode/plugins/jkz.js"),
        shipped_plugin()
    );
    jkz(&dir, &["uninstall", "--client", "opencode"]).success();
    assert_eq!(tree(&dir.join("project")), before);

    // A jkz.js of someone else's is refused, untouched, by both.
    let foreign = "export const Audit = async () => ({});\n";
    dir.write("project/.opencode/plugins/jkz.js", foreign);
    let run = jkz(&dir, &["install", "--client", "opencode"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    let run = jkz(&dir, &["uninstall", "--client", "opencode"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    assert_eq!(
        dir.read("project/.opencode/plugins/jkz.js"),
        foreign.as_bytes()
    );
}

#[test]
fn opencode_user_install_places_the_users_plugin_and_uninstall_removes_it() {
    let dir = project();
    let before = tree(&dir.join("home"));
    jkz(&dir, &["install", "--client", "opencode", "--user"]).success();
    assert_eq!(
        dir.read("home/.config/opencode/plugins/jkz.js"),
        shipped_plugin()
    );
    jkz(&dir, &["uninstall", "--client", "opencode", "--user"]).success();
    let after = tree(&dir.join("home"));
    // ~/.config/ stays (other programs keep their files there).
    let mut left = after.clone();
    left.remove(".config/");
    assert_eq!(left, before, "{:?}", after.keys());
}

#[test]
fn opencode_uninstall_keeps_the_state_directory_another_client_still_uses() {
    let dir = project();
    let before = tree(&dir.join("project"));
    jkz(&dir, &["install", "--client", "opencode"]).success();
    jkz(&dir, &["install", "--client", "copilot"]).success();
    jkz(&dir, &["uninstall", "--client", "opencode"]).success();
    assert!(
        dir.join("project/state").is_dir(),
        "Copilot CLI still uses it"
    );
    assert!(!dir.join("project/.opencode").exists());
    jkz(&dir, &["uninstall", "--client", "copilot"]).success();
    assert_eq!(tree(&dir.join("project")), before);

    // And the other way round: OpenCode's plugin keeps it too.
    jkz(&dir, &["install", "--client", "opencode"]).success();
    jkz(&dir, &["install", "--client", "copilot"]).success();
    jkz(&dir, &["uninstall", "--client", "copilot"]).success();
    assert!(dir.join("project/state").is_dir(), "OpenCode still uses it");
    jkz(&dir, &["uninstall", "--client", "opencode"]).success();
    assert_eq!(tree(&dir.join("project")), before);
}

#[test]
fn doctor_probe_fires_every_hook_of_the_opencode_plugin_and_leaves_the_project_as_it_was() {
    let (_dir, lines, code) = probe_after_install(
        "opencode",
        &[
            "tool.execute.before → jkz-chat: fired: an edit in a worktree another chat holds was refused",
            "tool.execute.after → jkz-post-tool-use: fired: a large output came back shaped, its verdict kept",
            "experimental.session.compacting → jkz-pre-compact: fired: a snapshot was written",
            "session.compacted → jkz-session-start: fired: the answer carries the pipeline state",
            "session.deleted → jkz-chat: fired: the chat left the registry",
        ],
    );
    assert_eq!(lines.len(), 8, "{lines:?}");
    assert_eq!(code, Some(0), "{lines:?}");
}

#[test]
fn doctor_probe_says_the_opencode_plugin_is_missing_or_cannot_find_the_binaries() {
    let dir = project();
    let run = jkz(&dir, &["doctor", "--probe", "--client", "opencode"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    let lines = probe_lines(&run);
    assert_eq!(lines.len(), 8, "{}", run.report());
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("FAIL probe ")
                && l.contains("not run: OpenCode has no such hook")),
        "{}",
        run.report()
    );

    // The plugin is there, but the binaries are nowhere it looks.
    jkz(&dir, &["install", "--client", "opencode"]).success();
    let run = crate::util::Cmd::new("jkz", &dir.join("project"))
        .env("HOME", dir.join("home"))
        .env("PATH", "/usr/bin:/bin")
        .args(["doctor", "--probe", "--client", "opencode"])
        .run();
    let broken: Vec<String> = probe_lines(&run)
        .into_iter()
        .filter(|l| l.starts_with("FAIL"))
        .collect();
    assert!(
        broken.iter().any(|l| l.starts_with(
            "FAIL probe experimental.session.compacting → jkz-pre-compact: not run: the command was not found"
        )),
        "{}",
        run.report()
    );
}
