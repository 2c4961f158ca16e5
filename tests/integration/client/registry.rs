//! The cross-chat registry on the real client: two sessions of the pinned
//! `claude` on one project, both with jkz installed (`jkz install`).
//!
//! Session A's model claims issue 42 with its worktree through Bash (with
//! `CLAUDE_CODE_SESSION_ID` unset: the command finds the chat by the client
//! it runs under, which A's SessionStart recorded) and then waits, so A
//! stays open. Session B's model reads a file in that worktree and asks for
//! an `Edit`: the PreToolUse hook refuses it, the file is unchanged and B's
//! next request carries the refusal's reason. Once A has ended (its
//! `SessionEnd` released the claim), B (resumed) makes the same edit and it
//! goes through. A recorder hook beside jkz's keeps every event's input, so
//! the events and their shapes are confirmed on the binary.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::adapter::ClaudeCode;
use super::stub_model::{Request, StubModel, Turn};
use super::RealClient;
use crate::util::bin;

const ALPHA: &str = "ALPHA: claim issue 42 and hold it";
const BRAVO_1: &str = "BRAVO-1: fix the greeting";
const BRAVO_2: &str = "BRAVO-2: fix the greeting again";

/// The tool results in the messages after the last user message that
/// carries `marker`, in order: (text, is_error).
pub(super) fn results_since(r: &Request, marker: &str) -> Option<Vec<(String, bool)>> {
    let messages = r.body["messages"].as_array()?;
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "user" && m["content"].to_string().contains(marker))?;
    let mut out = Vec::new();
    for m in &messages[start..] {
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let text = match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.push((text, b["is_error"] == true));
            }
        }
    }
    Some(out)
}

fn events(dir: &Path) -> Vec<Value> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let text = std::fs::read_to_string(e.path()).ok()?;
                    Some((
                        e.file_name().to_string_lossy().into_owned(),
                        serde_json::from_str(&text).ok()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.into_iter().map(|(_, v)| v).collect()
}

#[test]
fn a_second_chat_cannot_edit_the_worktree_another_live_chat_claimed() {
    let release_a = Arc::new(AtomicBool::new(false));
    let project_holder: Arc<std::sync::Mutex<String>> = Arc::default();
    let responder = {
        let release_a = Arc::clone(&release_a);
        let wt = Arc::clone(&project_holder);
        Arc::new(move |r: &Request| {
            let wt = wt.lock().unwrap().clone();
            let file = format!("{wt}/src/greeting.txt");
            if let Some(done) = results_since(r, ALPHA) {
                return match done.len() {
                    0 => Turn::Call {
                        name: "Bash".into(),
                        input: json!({
                            // Without the session variable: the client
                            // this runs under names the chat.
                            "command": format!("env -u CLAUDE_CODE_SESSION_ID jkz claim 42 --worktree {wt} && echo \"session=$CLAUDE_CODE_SESSION_ID\""),
                            "description": "Claim issue 42"
                        }),
                    },
                    _ => {
                        // Hold session A open until B has been refused.
                        let deadline = Instant::now() + Duration::from_secs(150);
                        while !release_a.load(Ordering::SeqCst) && Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        Turn::Text("Holding issue 42: done.".into())
                    }
                };
            }
            for marker in [BRAVO_2, BRAVO_1] {
                if let Some(done) = results_since(r, marker) {
                    return match done.len() {
                        0 => Turn::Call {
                            name: "Read".into(),
                            input: json!({ "file_path": file }),
                        },
                        1 => Turn::Call {
                            name: "Edit".into(),
                            input: json!({ "file_path": file, "old_string": "helo", "new_string": "hello" }),
                        },
                        _ => Turn::Text("Done.".into()),
                    };
                }
            }
            Turn::Text("Done.".into())
        })
    };
    let server = StubModel::start(responder);
    let project = ClaudeCode::project(&server);
    let wt = project.path().join("wt/i42");
    project.write("wt/i42/src/greeting.txt", "helo world\n");
    *project_holder.lock().unwrap() = wt.display().to_string();
    project.install_jkz();
    // A recorder beside jkz's hooks, for every event this test relies on.
    let recorded = project.path().join("recorded");
    std::fs::create_dir(&recorded).unwrap();
    let settings_path = project.path().join(".claude/settings.json");
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings_path).unwrap()).unwrap();
    let recorder = format!("cat > {}/$(date +%s%N)-$$.json", recorded.display());
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "SessionEnd",
    ] {
        settings["hooks"][event]
            .as_array_mut()
            .unwrap_or_else(|| panic!("jkz install registered nothing for {event}"))
            .push(json!({"matcher": "", "hooks": [{"type": "command", "command": recorder}]}));
    }
    std::fs::write(&settings_path, settings.to_string()).unwrap();

    let chats = || {
        let out = std::process::Command::new(bin("jkz"))
            .args(["chats", "--json", "--state-dir"])
            .arg(project.path().join("state"))
            .output()
            .unwrap();
        serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap_or_default()
    };
    let (session_a, session_b, requests) = std::thread::scope(|scope| {
        // Session A claims issue 42 and stays open.
        let a = scope.spawn(|| project.run(ALPHA, &["--allowedTools", "Bash"]));
        let deadline = Instant::now() + Duration::from_secs(90);
        let holder = loop {
            let claimed = chats().into_iter().find(|c| {
                c["claims"]
                    .as_array()
                    .is_some_and(|cl| cl.iter().any(|k| k["issue"] == 42))
            });
            if let Some(c) = claimed {
                // Its SessionStart recorded the client, found by name.
                assert!(c["pid"].is_i64(), "no client recorded: {c}");
                break c["session_id"].as_str().unwrap().to_string();
            }
            if Instant::now() > deadline || a.is_finished() {
                release_a.store(true, Ordering::SeqCst);
                panic!(
                    "session A never claimed issue 42: {:?}\n{}",
                    chats(),
                    a.join().unwrap().report()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        };

        // Session B: the edit is refused and the reason reaches the model.
        let b = project.run(BRAVO_1, &["--allowedTools", "Read,Edit"]);
        release_a.store(true, Ordering::SeqCst);
        let session_b = b.session_id();
        assert_eq!(
            std::fs::read_to_string(wt.join("src/greeting.txt")).unwrap(),
            "helo world\n",
            "the edit must not happen\n{}",
            b.report()
        );
        let requests = server.model_requests();
        let refused = requests
            .iter()
            .filter_map(|r| results_since(r, BRAVO_1))
            .find(|res| res.len() >= 2)
            .expect("B's request after the Edit");
        let (why, _) = &refused[1];
        assert!(
            why.contains(&format!("claimed by another live chat {holder}")),
            "{why}"
        );
        assert!(why.contains("`jkz claim 42 --take`"), "{why}");

        // A ends: its SessionEnd releases the claim.
        let a = a.join().unwrap();
        let session_a = a.session_id();
        assert_eq!(session_a, holder);
        (session_a, session_b, requests)
    });
    let a_bash = requests
        .iter()
        .filter_map(|r| results_since(r, ALPHA))
        .find(|res| !res.is_empty())
        .expect("A's Bash result");
    assert!(
        a_bash[0].0.contains(&format!("session={session_a}")),
        "{a_bash:?}"
    );
    assert!(
        chats()
            .iter()
            .all(|c| c["session_id"] != session_a.as_str()),
        "{:?}",
        chats()
    );

    // B again: now the edit goes through.
    let b2 = project.run(
        BRAVO_2,
        &["--resume", &session_b, "--allowedTools", "Read,Edit"],
    );
    let _ = b2.session_id();
    assert_eq!(
        std::fs::read_to_string(wt.join("src/greeting.txt")).unwrap(),
        "hello world\n",
        "{}",
        b2.report()
    );

    // The events and their shapes, as the pinned client sends them.
    let seen = events(&recorded);
    let of = |name: &str| -> Vec<&Value> {
        seen.iter()
            .filter(|e| e["hook_event_name"] == name)
            .collect()
    };
    for e in of("SessionStart") {
        assert!(
            e["session_id"].is_string() && e["cwd"].is_string() && e["source"].is_string(),
            "{e}"
        );
    }
    assert!(of("UserPromptSubmit")
        .iter()
        .any(|e| e["prompt"] == BRAVO_1));
    assert!(of("PreToolUse").iter().any(|e| e["tool_name"] == "Edit"
        && e["tool_input"]["file_path"] == wt.join("src/greeting.txt").display().to_string()));
    assert!(of("PostToolUse").iter().any(|e| e["tool_name"] == "Bash"));
    let ends: Vec<&str> = of("SessionEnd")
        .iter()
        .filter_map(|e| e["session_id"].as_str())
        .collect();
    assert!(ends.contains(&session_a.as_str()), "{ends:?}");
}
