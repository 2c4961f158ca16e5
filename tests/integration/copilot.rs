//! GitHub Copilot CLI: the hooks on its event shapes (measured on
//! `@github/copilot` 1.0.102: camelCase, no event name, the registration
//! names it in `JKZ_COPILOT_EVENT`), `jkz install --client copilot` and
//! its uninstall byte for byte, and `jkz doctor --probe --client copilot`.

use serde_json::{json, Value};

use crate::doctor_probe::{probe_after_install, probe_lines, project, tree};
use crate::install_clients::jkz;
use crate::util::{write_pipeline, Dir, Run};

const SESSION: &str = "70e0b942-8e00-40eb-8545-20e11119dd00";

fn event(dir: &Dir, extra: Value) -> String {
    let mut e = json!({"sessionId": SESSION, "timestamp": 1_795_869_901_074u64, "cwd": dir.path()});
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    e.to_string()
}

/// `program` run as jkz's registration runs it for Copilot's `name`.
fn hook(dir: &Dir, program: &str, name: &str, input: String) -> Run {
    dir.cmd(program)
        .env("JKZ_COPILOT_EVENT", name)
        .env("COPILOT_CLI", "1")
        .env("COPILOT_HOOK_DIR", dir.join(".github/hooks"))
        .env("CLAUDE_PROJECT_DIR", dir.path())
        .env("SHELL", "/bin/sh")
        .stdin(input)
        .run()
        .success()
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

fn tool_result() -> Value {
    json!({"toolName": "bash", "toolArgs": {"command": "ls", "description": "s"},
           "toolResult": {"resultType": "success",
                          "textResultForLlm": "a\n<shellId: 0 completed with exit code 0>"}})
}

#[test]
fn copilot_pre_tool_use_wraps_a_shell_command_keeping_every_argument() {
    let dir = with_state();
    let run = hook(
        &dir,
        "jkz-chat",
        "preToolUse",
        event(
            &dir,
            json!({"toolName": "bash", "toolArgs": {"command": "cargo test", "description": "run the tests"}}),
        ),
    );
    let answer: Value = serde_json::from_slice(run.stdout())
        .unwrap_or_else(|_| panic!("Copilot reads JSON\n{}", run.report()));
    assert_eq!(answer["permissionDecision"], "allow", "{answer}");
    let args = &answer["modifiedArgs"];
    let command = args["command"].as_str().unwrap();
    assert!(
        command.contains("jkz-truncate' --for copilot") && command.contains("--run 'cargo test'"),
        "{command}"
    );
    // Copilot replaces the arguments wholesale.
    assert_eq!(args["description"], "run the tests");
}

#[test]
fn copilot_compaction_is_reinjected_once_on_the_first_tool_call_after_it() {
    let dir = with_state();
    let session_start = |d: &Dir| {
        hook(
            d,
            "jkz-session-start",
            "postToolUse",
            event(d, tool_result()),
        )
    };
    // Before any compaction, a tool call costs nothing and says nothing.
    let run = session_start(&dir);
    assert!(run.stdout().is_empty(), "{}", run.report());

    let run = hook(
        &dir,
        "jkz-pre-compact",
        "preCompact",
        event(
            &dir,
            json!({"transcriptPath": "/h/.copilot/session-state/x/events.jsonl",
                   "trigger": "auto", "customInstructions": ""}),
        ),
    );
    // Copilot reads nothing a preCompact hook prints.
    assert!(run.stdout().is_empty(), "{}", run.report());
    assert!(
        dir.files()
            .iter()
            .any(|f| f.starts_with("state/session-snapshots")),
        "a snapshot: {:?}",
        dir.files()
    );

    let run = session_start(&dir);
    let answer: Value = serde_json::from_slice(run.stdout())
        .unwrap_or_else(|_| panic!("Copilot reads JSON\n{}", run.report()));
    let keys: Vec<&String> = answer.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["additionalContext"], "{answer}");
    assert!(answer["additionalContext"]
        .as_str()
        .unwrap()
        .contains("FIG-FAILURE"));
    // Once: later tool calls carry nothing more.
    let run = session_start(&dir);
    assert!(run.stdout().is_empty(), "{}", run.report());
}

#[test]
fn copilot_resumed_session_start_reinjects_and_a_new_one_says_nothing() {
    let dir = with_state();
    let run = hook(
        &dir,
        "jkz-session-start",
        "sessionStart",
        event(&dir, json!({"source": "resume", "initialPrompt": "go on"})),
    );
    let answer: Value = serde_json::from_slice(run.stdout()).unwrap();
    assert!(answer["additionalContext"]
        .as_str()
        .unwrap()
        .contains("FIG-FAILURE"));
    let run = hook(
        &dir,
        "jkz-session-start",
        "sessionStart",
        event(&dir, json!({"source": "new", "initialPrompt": "go on"})),
    );
    assert!(run.stdout().is_empty(), "{}", run.report());
}

#[test]
fn copilot_events_jkz_does_not_handle_exit_zero_with_one_line() {
    let dir = with_state();
    hook(
        &dir,
        "jkz-chat",
        "agentStop",
        event(&dir, json!({"stopReason": "end_turn"})),
    )
    .one_line("jkz-chat", "agentStop");
    hook(&dir, "jkz-pre-compact", "preCompact", "not json".into());
}

/// A git repository with a home of its own.
#[test]
fn copilot_install_writes_its_hooks_file_and_uninstall_restores_the_tree() {
    let dir = project();
    dir.write("project/.gitignore", "target/\n");
    dir.write("project/.github/workflows/ci.yml", "on: push\n");
    let before = tree(&dir.join("project"));
    let run = jkz(&dir, &["install", "--client", "copilot"]).success();
    assert!(
        run.stdout_str().contains("trustedFolders"),
        "install says how to trust the folder: {}",
        run.report()
    );
    let file: Value = serde_json::from_slice(&dir.read("project/.github/hooks/jkz.json")).unwrap();
    assert_eq!(file["version"], 1);
    let pre = file["hooks"]["preToolUse"][0]["bash"].as_str().unwrap();
    assert!(
        pre.starts_with("JKZ_COPILOT_EVENT=preToolUse ") && pre.contains("jkz-chat"),
        "{pre}"
    );
    // Again: nothing changes.
    let again = jkz(&dir, &["install", "--client", "copilot"]).success();
    assert!(
        again.stdout_str().contains("nothing changed"),
        "{}",
        again.report()
    );
    let doctor = jkz(&dir, &["doctor", "--client", "copilot"]);
    let out = doctor.stdout_str();
    assert!(
        out.contains("Copilot CLI hook preToolUse → jkz-chat")
            && out.contains("does not list")
            && out.contains("trustedFolders"),
        "{}",
        doctor.report()
    );
    jkz(&dir, &["uninstall", "--client", "copilot"]).success();
    assert_eq!(tree(&dir.join("project")), before);

    // A jkz.json of someone else's is refused, untouched.
    let foreign = r#"{"version":1,"hooks":{"preToolUse":[{"type":"command","bash":"audit.sh"}]}}"#;
    dir.write("project/.github/hooks/jkz.json", foreign);
    let run = jkz(&dir, &["install", "--client", "copilot"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    assert_eq!(
        dir.read("project/.github/hooks/jkz.json"),
        foreign.as_bytes()
    );
}

#[test]
fn copilot_user_install_writes_the_users_hooks_and_uninstall_removes_them() {
    let dir = project();
    let before = tree(&dir.join("home"));
    jkz(&dir, &["install", "--client", "copilot", "--user"]).success();
    let file: Value = serde_json::from_slice(&dir.read("home/.copilot/hooks/jkz.json")).unwrap();
    assert!(file["hooks"]["preCompact"][0]["bash"]
        .as_str()
        .unwrap()
        .contains("jkz-pre-compact"));
    jkz(&dir, &["uninstall", "--client", "copilot", "--user"]).success();
    let after = tree(&dir.join("home"));
    // ~/.copilot/ stays (Copilot keeps its own files there); hooks/ goes.
    assert!(!after.contains_key(".copilot/hooks/"), "{:?}", after.keys());
    let mut left = after.clone();
    left.remove(".copilot/");
    assert_eq!(left, before);
}

#[test]
fn doctor_probe_fires_every_copilot_hook_and_leaves_the_project_as_it_was() {
    let (_dir, lines, _) = probe_after_install(
        "copilot",
        &[
            "refused",
            "run through jkz's output guard",
            "snapshot was written",
            "postToolUse → jkz-session-start: fired: the answer carries the pipeline state",
            "sessionStart → jkz-session-start: fired: the answer carries the pipeline state",
            "left the registry",
        ],
    );
    assert!(lines.len() >= 8, "{lines:?}");
}

#[test]
fn doctor_probe_names_a_copilot_hook_at_a_wrong_path_or_under_another_event() {
    let dir = project();
    jkz(&dir, &["install", "--client", "copilot"]).success();
    let path = "project/.github/hooks/jkz.json";
    let mut file: Value = serde_json::from_slice(&dir.read(path)).unwrap();
    file["hooks"]["preCompact"][0]["bash"] =
        "JKZ_COPILOT_EVENT=preCompact /opt/gone/jkz-pre-compact".into();
    // Registered for userPromptSubmitted, but reading itself as sessionEnd.
    let wrong = file["hooks"]["userPromptSubmitted"][0]["bash"]
        .as_str()
        .unwrap()
        .replace("=userPromptSubmitted ", "=sessionEnd ");
    file["hooks"]["userPromptSubmitted"][0]["bash"] = wrong.into();
    dir.write(path, serde_json::to_string_pretty(&file).unwrap());
    let run = jkz(&dir, &["doctor", "--probe", "--client", "copilot"]);
    assert_eq!(run.code(), Some(1), "{}", run.report());
    let broken: Vec<String> = probe_lines(&run)
        .into_iter()
        .filter(|l| l.starts_with("FAIL"))
        .collect();
    assert!(
        broken.iter().any(|l| l.starts_with(
            "FAIL probe preCompact → jkz-pre-compact: not run: the command was not found"
        )),
        "{}",
        run.report()
    );
    assert!(
        broken.iter().any(|l| l.starts_with(
            "FAIL probe userPromptSubmitted → jkz-chat: not run: Copilot CLI has no such hook"
        )) && broken
            .iter()
            .any(|l| l.contains("userPromptSubmitted (named sessionEnd) → jkz-chat")),
        "{}",
        run.report()
    );
}
