//! One state directory per repository, whatever checkout a tool starts in:
//! linked worktrees, subdirectories, a bare repository's worktrees, an
//! attached clone; a stray `state/` in a worktree; no opt-in, nothing
//! created; bad layouts (hooks fall back, commands stop); the registry's
//! refusal across worktrees; this chat's issue first after compaction.
//! Every repository here is made by the real `git`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::{self, git, Cmd, Dir, Run};

/// Runs git in `dir`; panics with its stderr when it fails.
/// `<dir>/repo`, a repository with one commit (a `.gitignore` with
/// `/state/`) on branch main, and its linked worktree `<dir>/wt-42` on
/// branch issue-42.
fn repo_with_worktree(dir: &Dir) -> (PathBuf, PathBuf) {
    let repo = dir.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join(".gitignore"), "/state/\n").unwrap();
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(repo.join("src/a.rs"), "fn a() {}\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    let wt = dir.join("wt-42");
    git(
        &repo,
        &["worktree", "add", "-q", "../wt-42", "-b", "issue-42"],
    );
    (repo, wt)
}

fn jkz(cwd: &Path) -> Cmd {
    Cmd::new("jkz", cwd)
}

/// Every directory named `state` or `jkz-state` below `root`.
fn state_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                let name = e.file_name();
                if name == "state" || name == "jkz-state" {
                    out.push(e.path());
                }
                dirs.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn pre_compact(start: &Path, session: &str) -> Run {
    Cmd::new("jkz-pre-compact", start)
        .env("CLAUDE_PROJECT_DIR", start)
        .stdin(
            json!({"session_id": session, "cwd": start, "hook_event_name": "PreCompact",
                   "trigger": "manual", "transcript_path": "/dev/null"})
            .to_string(),
        )
        .run()
        .success()
}

fn session_start(start: &Path, session: &str) -> String {
    let run = Cmd::new("jkz-session-start", start)
        .env("CLAUDE_PROJECT_DIR", start)
        .stdin(
            json!({"session_id": session, "cwd": start, "hook_event_name": "SessionStart",
                   "source": "compact"})
            .to_string(),
        )
        .run()
        .success();
    let out: Value =
        serde_json::from_str(&run.stdout_str()).unwrap_or_else(|e| panic!("{e}\n{}", run.report()));
    out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn chat_hook(cwd: &Path, event: Value) -> Run {
    Cmd::new("jkz-chat", cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(event.to_string())
        .run()
        .success()
}

fn snapshots(state: &Path) -> Vec<String> {
    std::fs::read_dir(state)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pre-compact-"))
        .collect()
}

/// The story of the issue: installed in the main checkout, issue 1 set
/// there; in a linked worktree every command, hook and claim sees the same
/// state, and the worktree gets no state/ of its own.
#[test]
fn a_linked_worktree_uses_the_main_checkouts_state() {
    let dir = Dir::new();
    let (repo, wt) = repo_with_worktree(&dir);
    jkz(&repo).arg("install").run().success();
    jkz(&repo)
        .args(["state", "set", "1", "current_phase", "building"])
        .run()
        .success();

    let got = jkz(&wt)
        .args(["state", "get", "1", "current_phase"])
        .run()
        .success();
    assert_eq!(got.stdout_str(), "building\n");
    jkz(&wt)
        .args(["state", "set", "42", "current_phase", "x"])
        .run()
        .success();
    assert!(repo.join("state/pipeline/42.json").is_file());
    let claim = jkz(&wt)
        .args(["claim", "42", "--worktree", ".", "--session", "wt-chat"])
        .run()
        .success();
    assert!(
        claim.stdout_str().contains(&wt.display().to_string()),
        "{}",
        claim.report()
    );
    let chats = jkz(&repo).args(["chats", "--json"]).run().success();
    let chats: Value = serde_json::from_str(&chats.stdout_str()).unwrap();
    assert_eq!(chats[0]["claims"][0]["worktree"], wt.display().to_string());

    // A hook in the worktree: the snapshot lands in the main checkout's state.
    let out = pre_compact(&wt, "wt-chat");
    assert!(out.stdout_str().contains("Issue #1"), "{}", out.report());
    assert_eq!(snapshots(&repo.join("state")).len(), 1);

    // jkz install in the worktree registers its hooks, and creates no state/.
    let installed = jkz(&wt).arg("install").run().success();
    assert!(
        installed.stdout_str().contains(&format!(
            "shares the state directory {}",
            repo.join("state").display()
        )),
        "{}",
        installed.report()
    );
    assert!(wt.join(".claude/settings.json").is_file());
    assert_eq!(state_dirs(dir.path()), [repo.join("state")]);

    // doctor names the root and why.
    let doctor = jkz(&wt).arg("doctor").run();
    let want = format!(
        "state: {} (main worktree of {})",
        repo.join("state").display(),
        wt.display()
    );
    assert!(doctor.stdout_str().contains(&want), "{}", doctor.report());
    // Uninstall in the worktree keeps the shared state directory.
    let out = jkz(&wt).arg("uninstall").run().success();
    assert!(
        out.stdout_str()
            .contains("the repository's checkouts share it"),
        "{}",
        out.report()
    );
    assert!(repo.join("state/pipeline/1.json").is_file());
}

#[test]
fn a_subdirectory_resolves_like_its_checkouts_top() {
    let dir = Dir::new();
    let (repo, wt) = repo_with_worktree(&dir);
    jkz(&repo).arg("install").run().success();
    let deep = repo.join("src/deep");
    std::fs::create_dir_all(&deep).unwrap();
    jkz(&deep)
        .args(["state", "set", "3", "current_phase", "planning"])
        .run()
        .success();
    assert!(repo.join("state/pipeline/3.json").is_file());
    // From a subdirectory of the linked worktree too, and a hook started
    // there (CLAUDE_PROJECT_DIR a subdirectory).
    let wt_deep = wt.join("src");
    let got = jkz(&wt_deep)
        .args(["state", "get", "3", "current_phase"])
        .run()
        .success();
    assert_eq!(got.stdout_str(), "planning\n");
    pre_compact(&wt_deep, "sub");
    assert_eq!(snapshots(&repo.join("state")).len(), 1);
    assert_eq!(state_dirs(dir.path()), [repo.join("state")]);
}

#[test]
fn a_bare_repository_and_its_worktrees_share_one_root() {
    let dir = Dir::new();
    let (src, _) = repo_with_worktree(&dir);
    let bare = dir.join("project.git");
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            "--bare",
            src.to_str().unwrap(),
            "project.git",
        ],
    );
    git(&bare, &["worktree", "add", "-q", "../one", "main"]);
    git(&bare, &["worktree", "add", "-q", "../two", "-b", "two"]);
    let (one, two) = (dir.join("one"), dir.join("two"));
    let root = bare.join("jkz-state");

    // Before the opt-in: a command says which root and why.
    let none = jkz(&one).args(["state", "list", "--json"]).run();
    let refused = jkz(&two)
        .args(["state", "set", "5", "current_phase", "x"])
        .run()
        .expect_code(4);
    assert!(
        refused.stderr_str().contains(&format!(
            "{} (shared root of the bare repository {})",
            root.display(),
            bare.display()
        )),
        "{}\n{}",
        refused.report(),
        none.report()
    );
    assert!(!root.exists());

    let installed = jkz(&one).arg("install").run().success();
    assert!(root.is_dir(), "{}", installed.report());
    jkz(&two)
        .args(["state", "set", "5", "current_phase", "building"])
        .run()
        .success();
    let got = jkz(&one)
        .args(["state", "get", "5", "current_phase"])
        .run()
        .success();
    assert_eq!(got.stdout_str(), "building\n");
    let doctor = jkz(&two).arg("doctor").run();
    assert!(
        doctor.stdout_str().contains(&format!(
            "state: {} (shared root of the bare repository {})",
            root.display(),
            bare.display()
        )),
        "{}",
        doctor.report()
    );
    assert!(!one.join("state").exists() && !two.join("state").exists());
    // The bare repository itself resolves to the same root.
    let got = jkz(&bare)
        .args(["state", "get", "5", "current_phase"])
        .run()
        .success();
    assert_eq!(got.stdout_str(), "building\n");
}

#[test]
fn a_shared_clone_attached_shares_the_root_and_detached_uses_its_own() {
    let dir = Dir::new();
    let (repo, _) = repo_with_worktree(&dir);
    jkz(&repo).arg("install").run().success();
    jkz(&repo)
        .args(["state", "set", "1", "current_phase", "building"])
        .run()
        .success();
    git(
        dir.path(),
        &["clone", "-q", "--shared", repo.to_str().unwrap(), "clone"],
    );
    let clone = dir.join("clone");

    // Not attached: its own root, which does not exist.
    let own = jkz(&clone)
        .args(["state", "get", "1", "current_phase"])
        .run()
        .expect_code(4);
    assert!(
        own.stderr_str().contains(&format!(
            "no state directory at {}",
            clone.join("state").display()
        )),
        "{}",
        own.report()
    );

    let attached = jkz(&clone).args(["attach", "../repo"]).run().success();
    assert!(
        attached
            .stdout_str()
            .contains(&repo.join("state").display().to_string()),
        "{}",
        attached.report()
    );
    let config = git(&clone, &["config", "--get", "jkz.stateDir"]);
    assert_eq!(config.trim(), repo.join("state").display().to_string());
    let got = jkz(&clone.join("."))
        .args(["state", "get", "1", "current_phase"])
        .run()
        .success();
    assert_eq!(got.stdout_str(), "building\n");
    // Hooks follow: a snapshot taken in the clone lands in the repo's state.
    pre_compact(&clone, "clone-chat");
    assert_eq!(snapshots(&repo.join("state")).len(), 1);
    let doctor = jkz(&clone).arg("doctor").run();
    let want = format!(
        "state: {} (attached: jkz.stateDir in {})",
        repo.join("state").display(),
        clone.join(".git/config").display()
    );
    assert!(doctor.stdout_str().contains(&want), "{}", doctor.report());

    // Attaching to itself is refused; detach undoes it.
    jkz(&clone).args(["attach", "."]).run().expect_code(1);
    let detached = jkz(&clone).arg("detach").run().success();
    assert!(
        detached.stdout_str().contains("detached"),
        "{}",
        detached.report()
    );
    let again = jkz(&clone).arg("detach").run().success();
    assert!(
        again.stdout_str().contains("not attached"),
        "{}",
        again.report()
    );
    let refused = jkz(&clone)
        .args(["state", "set", "9", "current_phase", "x"])
        .run()
        .expect_code(4);
    assert!(
        refused
            .stderr_str()
            .contains(&format!("(the checkout {})", clone.display())),
        "{}",
        refused.report()
    );
    assert_eq!(state_dirs(dir.path()), [repo.join("state")]);
}

#[test]
fn a_stray_state_in_a_worktree_is_named_by_doctor_and_moved_by_fix_without_overwriting_newer() {
    let dir = Dir::new();
    let (repo, wt) = repo_with_worktree(&dir);
    jkz(&repo).arg("install").run().success();
    jkz(&repo)
        .args(["state", "set", "1", "current_phase", "root-newer"])
        .run()
        .success();
    // What an older jkz left in the worktree.
    let stray = wt.join("state");
    std::fs::create_dir_all(stray.join("pipeline")).unwrap();
    std::fs::write(
        stray.join("pipeline/7.json"),
        r#"{"7": {"current_phase": "stray-only"}}"#,
    )
    .unwrap();
    let old = stray.join("pipeline/1.json");
    std::fs::write(&old, r#"{"1": {"current_phase": "stray-older"}}"#).unwrap();
    util::age(&old, util::DAY);

    // It never shadows the repository's root.
    jkz(&wt)
        .args(["state", "get", "7", "current_phase"])
        .run()
        .expect_code(1);
    let doctor = jkz(&wt).arg("doctor").run().expect_code(1);
    let out = doctor.stdout_str();
    assert!(
        out.contains(&format!(
            "{} is a stray state directory (it holds 2 file(s)",
            stray.display()
        )) && out.contains("2 pipeline files")
            && out.contains("jkz doctor --fix"),
        "{}",
        doctor.report()
    );
    // doctor from the main checkout names it too.
    let doctor = jkz(&repo).arg("doctor").run();
    assert!(doctor.stdout_str().contains("stray"), "{}", doctor.report());

    let fixed = jkz(&wt).args(["doctor", "--fix"]).run().expect_code(1);
    let out = fixed.stdout_str();
    assert!(out.contains("moved 1 file(s)"), "{}", fixed.report());
    assert!(
        out.contains(&format!("{} left in place", old.display())) && out.contains("newer"),
        "{}",
        fixed.report()
    );
    let got = jkz(&wt)
        .args(["state", "get", "7", "current_phase"])
        .run()
        .success();
    assert_eq!(got.stdout_str(), "stray-only\n");
    let got = jkz(&wt)
        .args(["state", "get", "1", "current_phase"])
        .run()
        .success();
    assert_eq!(got.stdout_str(), "root-newer\n", "the newer file was kept");
    // Once the user removed what was left, doctor passes that check.
    std::fs::remove_dir_all(&stray).unwrap();
    let doctor = jkz(&wt).arg("doctor").run();
    assert!(
        !doctor.stdout_str().contains("stray"),
        "{}",
        doctor.report()
    );
}

/// No `jkz install`: every hook and command in a worktree of a repository
/// that did not opt in leaves no state directory anywhere.
#[test]
fn without_opt_in_nothing_is_created() {
    let dir = Dir::new();
    let (repo, wt) = repo_with_worktree(&dir);
    pre_compact(&wt, "s1");
    session_start(&wt, "s1");
    for event in [
        json!({"session_id": "s1", "cwd": wt, "hook_event_name": "SessionStart", "source": "startup"}),
        json!({"session_id": "s1", "cwd": wt, "hook_event_name": "PreToolUse", "tool_name": "Edit",
               "tool_input": {"file_path": wt.join("src/a.rs")}}),
        json!({"session_id": "s1", "cwd": wt, "hook_event_name": "UserPromptSubmit", "prompt": "x"}),
    ] {
        chat_hook(&wt, event);
    }
    Cmd::new("jkz-post-tool-use", &wt)
        .stdin(
            json!({"session_id": "s1", "cwd": wt, "hook_event_name": "PostToolUse",
                   "tool_name": "Bash", "tool_input": {"command": "yes"},
                   "tool_response": {"stdout": "y\n".repeat(100_000), "stderr": "",
                                     "interrupted": false, "isImage": false}})
            .to_string(),
        )
        .run()
        .success();
    let refused = jkz(&wt)
        .args(["state", "set", "1", "current_phase", "x"])
        .run()
        .expect_code(4);
    assert!(
        refused.stderr_str().contains(&format!(
            "{} (main worktree of {})",
            repo.join("state").display(),
            wt.display()
        )),
        "{}",
        refused.report()
    );
    jkz(&wt)
        .args(["claim", "42", "--worktree", ".", "--session", "s1"])
        .run()
        .expect_code(4);
    Cmd::new("jkz-truncate", &wt)
        .args(["--max-bytes", "100"])
        .stdin("x\n".repeat(1000))
        .run()
        .success();
    assert_eq!(state_dirs(dir.path()), Vec::<PathBuf>::new());
}

/// One bad layout: how to make it in a fresh worktree, and what the one
/// stderr line of a hook must say.
struct Bad {
    name: &'static str,
    make: fn(repo: &Path, wt: &Path),
    says: &'static str,
}

fn dot_git(wt: &Path, bytes: &[u8]) {
    std::fs::write(wt.join(".git"), bytes).unwrap();
}

fn gitdir(repo: &Path) -> PathBuf {
    repo.join(".git/worktrees/wt-42")
}

const BAD: &[Bad] = &[
    Bad {
        name: ".git file pointing nowhere",
        make: |_, wt| dot_git(wt, b"gitdir: /nonexistent-jkz/.git/worktrees/x\n"),
        says: "which cannot be used",
    },
    Bad {
        name: "commondir loop",
        make: |repo, _| {
            // Two worktrees' git directories naming each other.
            let a = gitdir(repo);
            let b = repo.join(".git/worktrees/other");
            std::fs::create_dir_all(&b).unwrap();
            std::fs::write(b.join("HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(a.join("commondir"), "../other\n").unwrap();
            std::fs::write(b.join("commondir"), "../wt-42\n").unwrap();
        },
        says: "has a commondir of its own",
    },
    Bad {
        name: "commondir pointing at a file",
        make: |repo, _| std::fs::write(gitdir(repo).join("commondir"), "HEAD\n").unwrap(),
        says: "not a directory",
    },
    Bad {
        name: "unreadable gitdir (its commondir a directory)",
        make: |repo, _| {
            let c = gitdir(repo).join("commondir");
            std::fs::remove_file(&c).unwrap();
            std::fs::create_dir(&c).unwrap();
        },
        says: "commondir",
    },
    Bad {
        name: "gitdir a file",
        make: |repo, wt| {
            std::fs::write(repo.join("plain-file"), "x").unwrap();
            dot_git(
                wt,
                format!("gitdir: {}\n", repo.join("plain-file").display()).as_bytes(),
            );
        },
        says: "not a directory",
    },
    Bad {
        name: "a NUL byte in the .git file",
        make: |_, wt| dot_git(wt, b"gitdir: /a\0b\n"),
        says: "NUL",
    },
    Bad {
        name: "a line break inside the path",
        make: |_, wt| dot_git(wt, b"gitdir: /a\nb\n"),
        says: "line break",
    },
    Bad {
        name: "bytes that are not UTF-8, naming nothing",
        make: |_, wt| dot_git(wt, b"gitdir: /nonexistent-\xff\xfe/x\n"),
        says: "which cannot be used",
    },
    Bad {
        name: "not a git link",
        make: |_, wt| dot_git(wt, b"hello\n"),
        says: "does not start with",
    },
    Bad {
        name: "a huge .git file",
        make: |_, wt| dot_git(wt, &vec![b'a'; 8 << 20]),
        says: "larger than",
    },
    Bad {
        name: "a FIFO as .git",
        make: |_, wt| {
            std::fs::remove_file(wt.join(".git")).unwrap();
            let ok = std::process::Command::new("mkfifo")
                .arg(wt.join(".git"))
                .status()
                .unwrap();
            assert!(ok.success());
        },
        says: "neither a directory nor a file",
    },
    Bad {
        name: "jkz.stateDir naming a missing directory",
        make: |repo, _| {
            git(repo, &["config", "jkz.stateDir", "/nonexistent-jkz/state"]);
        },
        says: "does not exist",
    },
    Bad {
        name: "jkz.stateDir naming a foreign (world-writable) directory",
        make: |repo, _| {
            use std::os::unix::fs::PermissionsExt;
            let foreign = repo.join("foreign");
            std::fs::create_dir(&foreign).unwrap();
            std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o777)).unwrap();
            git(repo, &["config", "jkz.stateDir", foreign.to_str().unwrap()]);
        },
        says: "others can write",
    },
    Bad {
        name: "jkz.stateDir relative",
        make: |repo, _| {
            git(repo, &["config", "jkz.stateDir", "state"]);
        },
        says: "not an absolute path",
    },
];

#[test]
fn bad_layouts_fall_back_in_hooks_stop_commands_and_create_nothing() {
    for bad in BAD {
        let dir = Dir::new();
        let (repo, wt) = repo_with_worktree(&dir);
        // The repository opted in: a bad layout must still create nothing,
        // and the fallback (a stray wt/state) is read but never written.
        jkz(&repo).arg("install").run().success();
        std::fs::create_dir_all(wt.join("state/pipeline")).unwrap();
        std::fs::write(
            wt.join("state/pipeline/9.json"),
            r#"{"9": {"current_phase": "fallback-read"}}"#,
        )
        .unwrap();
        (bad.make)(&repo, &wt);
        let before = state_dirs(dir.path());

        let started = std::time::Instant::now();
        let hook = pre_compact(&wt, "s1");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{}: the hook hung",
            bad.name
        );
        hook.one_line("jkz-pre-compact", bad.says);
        assert!(
            hook.stdout_str().contains("Issue #9"),
            "{}: the fallback is read\n{}",
            bad.name,
            hook.report()
        );
        assert!(
            snapshots(&wt.join("state")).is_empty(),
            "{}: nothing written",
            bad.name
        );
        chat_hook(
            &wt,
            json!({"session_id": "s1", "cwd": wt, "hook_event_name": "SessionStart", "source": "startup"}),
        )
        .one_line("jkz-chat", bad.says);

        let cmd = jkz(&wt).args(["state", "list"]).run().expect_code(2);
        assert!(
            cmd.stderr_str()
                .contains("cannot tell this repository's state directory")
                && cmd.stderr_str().contains(bad.says),
            "{}: {}",
            bad.name,
            cmd.report()
        );
        jkz(&wt).args(["lock", "list"]).run().expect_code(1);
        jkz(&wt).args(["run", "--", "true"]).run().expect_code(125);
        let doctor = jkz(&wt).arg("doctor").run().expect_code(1);
        assert!(
            doctor.stdout_str().contains("FAIL state: cannot tell"),
            "{}: {}",
            bad.name,
            doctor.report()
        );
        assert_eq!(
            state_dirs(dir.path()),
            before,
            "{}: nothing created",
            bad.name
        );
        assert!(!wt.join("state/session-snapshots").exists(), "{}", bad.name);
    }
}

/// A linked worktree reached through a symbolic link resolves to the same
/// root, and a claim made through the link holds for the real path.
#[test]
fn a_symlinked_worktree_resolves_to_the_same_root() {
    let dir = Dir::new();
    let (repo, wt) = repo_with_worktree(&dir);
    jkz(&repo).arg("install").run().success();
    let link = dir.join("link-to-wt");
    std::os::unix::fs::symlink(&wt, &link).unwrap();
    jkz(&link)
        .args(["state", "set", "4", "current_phase", "x"])
        .run()
        .success();
    assert!(repo.join("state/pipeline/4.json").is_file());
    let claim = jkz(&link)
        .args(["claim", "4", "--worktree", ".", "--session", "via-link"])
        .run()
        .success();
    assert!(
        claim.stdout_str().contains(&wt.display().to_string()),
        "{}",
        claim.report()
    );
}

/// The registry's refusal holds whichever checkout the edit comes from: a
/// chat in the main checkout editing inside the worktree another live chat
/// claimed (by its own path or through a link) is refused.
#[test]
fn a_chat_in_the_main_checkout_cannot_edit_in_a_worktree_another_chat_claimed() {
    let dir = Dir::new();
    let (repo, wt) = repo_with_worktree(&dir);
    jkz(&repo).arg("install").run().success();
    let link = dir.join("link-to-wt");
    std::os::unix::fs::symlink(&wt, &link).unwrap();
    chat_hook(
        &wt,
        json!({"session_id": "wt-chat", "cwd": wt, "hook_event_name": "SessionStart", "source": "startup"}),
    );
    jkz(&wt)
        .args(["claim", "42", "--worktree", ".", "--session", "wt-chat"])
        .run()
        .success();
    chat_hook(
        &repo,
        json!({"session_id": "main-chat", "cwd": repo, "hook_event_name": "SessionStart", "source": "startup"}),
    );
    for target in [wt.join("src/a.rs"), link.join("src/b.rs")] {
        let out = chat_hook(
            &repo,
            json!({"session_id": "main-chat", "cwd": repo, "hook_event_name": "PreToolUse",
                   "tool_name": "Edit", "tool_input": {"file_path": target}}),
        );
        let v: Value = serde_json::from_str(&out.stdout_str())
            .unwrap_or_else(|e| panic!("{e}: {}", out.report()));
        let why = v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(
            why.contains(&format!("lies in worktree {}", wt.display()))
                && why.contains("claimed by another live chat wt-chat"),
            "{why}"
        );
    }
    // Its own checkout is free to edit.
    let out = chat_hook(
        &repo,
        json!({"session_id": "main-chat", "cwd": repo, "hook_event_name": "PreToolUse",
               "tool_name": "Edit", "tool_input": {"file_path": repo.join("src/a.rs")}}),
    );
    assert_eq!(out.stdout_str(), "", "{}", out.report());
    let chats = jkz(&repo).args(["chats", "--json"]).run().success();
    let chats: Vec<Value> = serde_json::from_str(&chats.stdout_str()).unwrap();
    assert_eq!(chats.len(), 2, "{chats:?}");
}

/// Pipelines 1 to 4 updated after issue 42: the chat working on 42 (its
/// claim, else its branch) gets 42 first in PreCompact's text and in the
/// re-injection, the others after it, within the budget.
#[test]
fn this_chats_issue_comes_first_in_pre_compact_and_session_start() {
    let dir = Dir::new();
    let (repo, wt) = repo_with_worktree(&dir);
    jkz(&repo).arg("install").run().success();
    let state = repo.join("state/pipeline");
    let write = |n: u32, minute: u32| {
        let body = json!({ n.to_string(): {
            "current_phase": "building", "issue_type": "feature",
            "last_updated": format!("2025-01-01T00:{minute:02}:00.000Z"),
            "failure_context": format!("FAILURE-OF-{n} ").repeat(200),
            "pending_decisions": [format!("DECISION-OF-{n}")],
        }});
        std::fs::write(state.join(format!("{n}.json")), body.to_string()).unwrap();
    };
    std::fs::create_dir_all(&state).unwrap();
    write(42, 1);
    for n in 1..=4 {
        write(n, 10 + n);
    }
    let order = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix("### Issue #"))
            .map(|l| l.split(' ').next().unwrap_or_default().to_string())
            .collect()
    };

    // No claim: the branch (issue-42) of the worktree the chat runs in.
    let text = pre_compact(&wt, "branch-chat").stdout_str();
    assert!(
        text.contains("This chat's work first: issue #42 (this chat's branch is issue-42)"),
        "{text}"
    );
    assert_eq!(order(&text), ["42", "4", "3"], "{text}");
    // In the main checkout (branch main), the newest first as before.
    let text = pre_compact(&repo, "main-chat").stdout_str();
    assert_eq!(order(&text), ["4", "3", "2"], "{text}");

    // A claim wins over the branch, wherever the chat runs.
    jkz(&repo)
        .args(["claim", "2", "--session", "claiming-chat"])
        .run()
        .success();
    let text = pre_compact(&wt, "claiming-chat").stdout_str();
    assert!(text.contains("issue #2 (claimed by this chat)"), "{text}");
    assert_eq!(order(&text), ["2", "4", "3"], "{text}");
    assert!(
        text.contains("### Issue #2 (feature) — this chat's issue"),
        "{text}"
    );

    let context = session_start(&wt, "claiming-chat");
    assert!(
        context.contains("issue #2 (claimed by this chat)"),
        "{context}"
    );
    assert_eq!(order(&context), ["2", "4", "3"], "{context}");
    assert!(context.contains("DECISION-OF-2"), "{context}");
    assert!(context.encode_utf16().count() <= 4000, "{}", context.len());
    let context = session_start(&wt, "another-chat");
    assert_eq!(order(&context), ["42", "4", "3"], "{context}");
}

/// Every other tool started in a linked worktree (or a subdirectory of it)
/// works in the main checkout's state directory: locks, `jkz run`'s
/// deliberation record and circuit, the tool-output ledger, the full output
/// of `jkz-truncate`, session records, and `jkz gc`.
#[test]
fn every_tool_started_in_a_worktree_uses_the_main_checkouts_state() {
    let dir = Dir::new();
    let (repo, wt) = repo_with_worktree(&dir);
    jkz(&repo).arg("install").run().success();
    let state = repo.join("state");
    let sub = wt.join("src");

    jkz(&sub)
        .args(["lock", "acquire", "pipeline", "42", "--owner", "wt"])
        .run()
        .success();
    let locks = jkz(&repo).args(["lock", "list"]).run().success();
    assert!(
        locks.stdout_str().contains("pipeline"),
        "{}",
        locks.report()
    );

    // A failing call: its record, and its circuit's failure count.
    jkz(&wt)
        .args([
            "run",
            "--role",
            "builder",
            "--issue",
            "42",
            "--service",
            "model",
        ])
        .args(["--", "sh", "-c", "echo answer; exit 1"])
        .run()
        .expect_code(1);
    let records = jkz(&repo).args(["deliberations", "list"]).run().success();
    assert!(
        records.stdout_str().contains("builder"),
        "{}",
        records.report()
    );
    let circuits = jkz(&repo).args(["circuit", "status"]).run().success();
    assert!(
        circuits.stdout_str().contains("model"),
        "{}",
        circuits.report()
    );

    Cmd::new("jkz-truncate", &wt)
        .args(["--max-bytes", "1000"])
        .stdin("line\n".repeat(10_000))
        .run()
        .success();
    Cmd::new("jkz-post-tool-use", &wt)
        .stdin(
            json!({"session_id": "s1", "cwd": wt, "hook_event_name": "PostToolUse",
                   "tool_name": "Bash", "tool_input": {"command": "yes"},
                   "tool_response": {"stdout": "y\n".repeat(100_000), "stderr": "",
                                     "interrupted": false, "isImage": false}})
            .to_string(),
        )
        .run()
        .success();
    assert!(state.join("tool-output.jsonl").is_file());
    let offloaded = std::fs::read_dir(state.join("context-offload"))
        .unwrap()
        .count();
    assert!(offloaded >= 2, "{offloaded}");

    Cmd::new("jkz-session", &sub)
        .args(["--session", "wt-chat", "save"])
        .stdin("## Decisions\n- cents, not floats\n")
        .run()
        .success();
    assert!(state.join("session-snapshots/wt-chat.json").is_file());
    let loaded = Cmd::new("jkz-session", &repo)
        .args(["--session", "wt-chat", "load"])
        .run()
        .success();
    assert!(
        loaded.stdout_str().contains("cents, not floats"),
        "{}",
        loaded.report()
    );

    let gc = jkz(&sub).args(["gc", "--dry-run"]).run().success();
    assert!(
        gc.stdout_str().contains(&state.display().to_string()),
        "{}",
        gc.report()
    );
    assert_eq!(state_dirs(dir.path()), [state]);
}
