//! One state directory per repository on the real client: two sessions of
//! the pinned `claude`, one in the main checkout and one in a linked
//! worktree (`wt-42`, branch `issue-42`), jkz installed in both checkouts.
//!
//! 1. The worktree chat talks a few turns, the pipeline of issue 1 moves on
//!    from the main checkout meanwhile (`jkz state set`), and the worktree
//!    chat is compacted: the summarizing request and the re-injection after
//!    it carry issue 1's live state, its own issue (42, from its branch)
//!    first.
//! 2. The worktree chat, resumed, claims issue 42 with its worktree and
//!    stays open; the main checkout's chat reads a file in the worktree and
//!    asks for an `Edit`: refused, with the reason, the file unchanged; it
//!    then runs `jkz chats`, which lists both chats.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::adapter::ClaudeCode;
use super::pipeline::SUMMARY;
use super::registry::results_since;
use super::stub_model::{Request, StubModel, Turn};
use super::RealClient;
use crate::util::{bin, git};

const PLAN: &str = "QUINCE-PLAN-OF-ISSUE-1: move the totals to integer cents";
const LIVE_PHASE: &str = "reviewing-live-from-main";
const HOLD: &str = "WT-HOLD: claim issue 42 and hold it";
const EDIT: &str = "MAIN-EDIT: fix the greeting in the worktree";

fn jkz(dir: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(bin("jkz"))
        .current_dir(dir)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("JKZ_STATE_DIR")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env("HOME", home)
        .args(args)
        .output()
        .expect("run jkz");
    assert!(out.status.success(), "jkz {args:?}: {out:?}");
    out
}

#[test]
fn a_worktree_chat_and_a_main_checkout_chat_share_one_state_directory() {
    let release = Arc::new(AtomicBool::new(false));
    let paths: Arc<Mutex<(String, String)>> = Arc::default();
    let responder = {
        let release = Arc::clone(&release);
        let paths = Arc::clone(&paths);
        Arc::new(move |r: &Request| {
            if ClaudeCode::is_summarizing(r) {
                return Turn::Text(SUMMARY.into());
            }
            let (_, wt) = paths.lock().unwrap().clone();
            if let Some(done) = results_since(r, HOLD) {
                return match done.len() {
                    0 => Turn::Call {
                        name: "Bash".into(),
                        input: json!({
                            "command": "jkz claim 42 --worktree . && echo \"session=$CLAUDE_CODE_SESSION_ID\"",
                            "description": "Claim issue 42 with this worktree"
                        }),
                    },
                    _ => {
                        let deadline = Instant::now() + Duration::from_secs(150);
                        while !release.load(Ordering::SeqCst) && Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        Turn::Text("Holding issue 42: done.".into())
                    }
                };
            }
            if let Some(done) = results_since(r, EDIT) {
                let file = format!("{wt}/src/greeting.txt");
                return match done.len() {
                    0 => Turn::Call {
                        name: "Read".into(),
                        input: json!({ "file_path": file }),
                    },
                    1 => Turn::Call {
                        name: "Edit".into(),
                        input: json!({ "file_path": file, "old_string": "helo", "new_string": "hello" }),
                    },
                    2 => Turn::Call {
                        name: "Bash".into(),
                        input: json!({ "command": "jkz chats", "description": "List the chats" }),
                    },
                    _ => Turn::Text("Done.".into()),
                };
            }
            Turn::Text("Noted.".into())
        })
    };
    let server = StubModel::start(responder);
    let project = ClaudeCode::project(&server);
    let main = project.path().join("repo");
    let wt = project.path().join("wt-42");
    let home = project.home();

    // The repository: main checkout, issue 1's pipeline, a linked worktree.
    std::fs::create_dir_all(main.join("src")).unwrap();
    std::fs::write(main.join("src/greeting.txt"), "helo world\n").unwrap();
    std::fs::write(main.join(".gitignore"), "/state/\n.claude/\n").unwrap();
    git(&main, &["init", "-q", "-b", "main"]);
    git(&main, &["add", "."]);
    git(&main, &["commit", "-q", "-m", "init"]);
    git(
        &main,
        &["worktree", "add", "-q", "../wt-42", "-b", "issue-42"],
    );
    for dir in [&main, &wt] {
        jkz(dir, home, &["install"]);
    }
    assert!(
        !wt.join("state").exists(),
        "the worktree got a state/ of its own"
    );
    jkz(
        &main,
        home,
        &["state", "set", "1", "current_phase", "building"],
    );
    jkz(
        &wt,
        home,
        &["state", "set", "42", "current_phase", "building"],
    );
    std::fs::write(
        main.join("state/pipeline/1-compact-plan.md"),
        format!("{PLAN}\n1. add cents column\n"),
    )
    .unwrap();
    let wt_real = wt.canonicalize().unwrap();
    *paths.lock().unwrap() = (main.display().to_string(), wt_real.display().to_string());

    // 1. The worktree chat, compacted after issue 1 moved on in main.
    let first = project.run_in(&wt, "Let us talk about apples.", &[]);
    let w = first.session_id();
    for prompt in ["And pears?", "And plums?"] {
        let run = project.run_in(&wt, prompt, &["--resume", &w]);
        assert_eq!(run.session_id(), w, "{}", run.report());
    }
    jkz(
        &main,
        home,
        &["state", "set", "1", "current_phase", LIVE_PHASE],
    );
    let compact = project.run_in(&wt, "/compact keep the plan", &["--resume", &w]);
    assert!(
        compact.finished.status.is_some_and(|s| s.success()),
        "{}",
        compact.report()
    );
    let after = project.run_in(&wt, "What next?", &["--resume", &w]);
    assert_eq!(after.session_id(), w, "{}", after.report());
    let messages = server.model_requests();
    let at = messages
        .iter()
        .position(ClaudeCode::is_summarizing)
        .expect("a summarizing request");
    let summarizing = messages[at].last_user_text();
    let (_, instructions) = summarizing
        .split_once("jkz: decision-critical pipeline state")
        .unwrap_or_else(|| {
            panic!("no PreCompact output in the summarizing request\n{summarizing}")
        });
    for want in [
        "This chat's work first: issue #42 (this chat's branch is issue-42)",
        "### Issue #1 (feature)",
        LIVE_PHASE,
        PLAN,
        "branch issue-42",
    ] {
        assert!(
            instructions.contains(want),
            "lacks {want:?}\n{instructions}"
        );
    }
    assert!(
        instructions.find("### Issue #42").unwrap() < instructions.find("### Issue #1 ").unwrap(),
        "{instructions}"
    );
    let text = messages
        .get(at + 1)
        .expect("a request after compaction")
        .all_text();
    let (_, context) = text
        .split_once("jkz: pipeline state restored after compaction")
        .unwrap_or_else(|| panic!("no re-injection after compaction\n{text}"));
    for want in ["issue #42", LIVE_PHASE, PLAN] {
        assert!(
            context.contains(want),
            "re-injection lacks {want:?}\n{context}"
        );
    }
    // The snapshot is in the main checkout's state directory.
    let snapshots = std::fs::read_dir(main.join("state"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pre-compact-"))
        .count();
    assert_eq!(snapshots, 1);

    // 2. The worktree chat holds issue 42; the main chat's edit there is refused.
    let chats = || -> Vec<Value> {
        let out = jkz(&main, home, &["chats", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_default()
    };
    let (edit, requests) = std::thread::scope(|scope| {
        let held =
            scope.spawn(|| project.run_in(&wt, HOLD, &["--resume", &w, "--allowedTools", "Bash"]));
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let claimed = chats().into_iter().any(|c| {
                c["session_id"] == w.as_str()
                    && c["claims"]
                        .as_array()
                        .is_some_and(|cl| cl.iter().any(|k| k["issue"] == 42))
            });
            if claimed {
                break;
            }
            if Instant::now() > deadline || held.is_finished() {
                release.store(true, Ordering::SeqCst);
                panic!(
                    "the worktree chat never claimed issue 42: {:?}\n{}",
                    chats(),
                    held.join().unwrap().report()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let listed = chats();
        let claim = listed
            .iter()
            .find(|c| c["session_id"] == w.as_str())
            .map(|c| c["claims"][0]["worktree"].clone());
        assert_eq!(
            claim,
            Some(json!(wt_real.display().to_string())),
            "{listed:?}"
        );
        let edit = project.run_in(&main, EDIT, &["--allowedTools", "Read,Edit,Bash"]);
        release.store(true, Ordering::SeqCst);
        let held = held.join().unwrap();
        assert_eq!(held.session_id(), w, "{}", held.report());
        (edit, server.model_requests())
    });
    let m = edit.session_id();
    assert_eq!(
        std::fs::read_to_string(wt.join("src/greeting.txt")).unwrap(),
        "helo world\n",
        "the edit must not happen\n{}",
        edit.report()
    );
    let results = requests
        .iter()
        .filter_map(|r| results_since(r, EDIT))
        .max_by_key(Vec::len)
        .expect("the main chat's requests");
    assert!(results.len() >= 3, "{results:?}");
    let (why, _) = &results[1];
    assert!(
        why.contains(&format!("lies in worktree {}", wt_real.display()))
            && why.contains(&format!("claimed by another live chat {w}")),
        "{why}"
    );
    let (listing, _) = &results[2];
    assert!(
        listing.contains(&w) && listing.contains(&m) && listing.contains("issue-42"),
        "jkz chats from the main chat lists both:\n{listing}"
    );
}

/// The one step of the set-up page, on the real client: `jkz install` in
/// the main checkout, the commit it names, `git worktree add`; then a chat
/// started in the new worktree runs jkz's hooks (its `SessionStart`
/// registers it in the repository's one registry, with the worktree and
/// its branch), with nothing installed in the worktree itself.
#[test]
fn a_worktree_added_from_the_commit_install_names_runs_the_hooks() {
    let server = StubModel::start(Arc::new(|_: &Request| Turn::Text("Noted.".into())));
    let project = ClaudeCode::project(&server);
    let main = project.path().join("repo");
    let wt = project.path().join("wt-7");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q", "-b", "main"]);
    git(&main, &["commit", "-q", "--allow-empty", "-m", "init"]);
    // The binaries first on PATH, as ./install.sh leaves them: the
    // committed settings name them by name.
    let install = Command::new(bin("jkz"))
        .current_dir(&main)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("JKZ_STATE_DIR")
        .env("HOME", project.home())
        .env("PATH", super::path_with_jkz())
        .arg("install")
        .output()
        .unwrap();
    assert!(install.status.success(), "{install:?}");
    let said = String::from_utf8_lossy(&install.stdout).into_owned();
    let commit = said
        .lines()
        .find(|l| l.starts_with("commit .claude/settings.json"))
        .and_then(|l| l.split('`').nth(1))
        .unwrap_or_else(|| panic!("install names no commit:\n{said}"))
        .to_string();
    let out = Command::new("sh")
        .current_dir(&main)
        .args(["-c", &commit])
        .env("GIT_AUTHOR_NAME", "jkz")
        .env("GIT_AUTHOR_EMAIL", "jkz@localhost")
        .env("GIT_COMMITTER_NAME", "jkz")
        .env("GIT_COMMITTER_EMAIL", "jkz@localhost")
        .output()
        .unwrap();
    assert!(out.status.success(), "{commit}: {out:?}");
    git(
        &main,
        &["worktree", "add", "-q", "../wt-7", "-b", "issue-7"],
    );
    assert!(wt.join(".claude/settings.json").is_file());

    let run = project.run_in(&wt, "Hello from the worktree.", &[]);
    let session = run.session_id();
    assert!(!wt.join("state").exists(), "{}", run.report());
    // The chat is in the main checkout's registry, with the worktree and
    // its branch (SessionStart), and ended (SessionEnd): `claude -p` exits.
    let state = main.join("state");
    let wanted = session.clone();
    let (chat, _) = jkz::registry::db::with_local_registry(
        &state,
        Instant::now() + Duration::from_secs(10),
        move |r| r.chat(&wanted),
    )
    .unwrap();
    let chat = chat.unwrap_or_else(|| panic!("the worktree chat ran no hook\n{}", run.report()));
    assert_eq!(
        chat.worktree.as_deref(),
        Some(wt.canonicalize().unwrap().to_str().unwrap()),
        "{chat:?}"
    );
    assert_eq!(chat.branch.as_deref(), Some("issue-7"), "{chat:?}");
    assert!(chat.ended.is_some(), "SessionEnd ran too: {chat:?}");
}
