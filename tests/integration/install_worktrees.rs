//! A linked worktree gets jkz's hooks in one documented step: `jkz install`
//! in the main checkout names the files to commit (and the command); a
//! worktree added from that commit passes `jkz doctor`, and the hook its
//! settings register, run as the client runs it in the worktree, records
//! the chat in the repository's one state directory. A worktree without
//! the hooks is told that step by `jkz doctor`, in one line.

use std::path::Path;

use serde_json::{json, Value};

use crate::util::{bin, git, scrubbed, Dir};

fn path_var() -> String {
    format!("{}:/usr/bin:/bin", bin("jkz").parent().unwrap().display())
}

fn jkz(dir: &Dir, cwd: &Path, args: &[&str]) -> std::process::Output {
    scrubbed(bin("jkz"), cwd)
        .env("HOME", dir.join("home"))
        .env("PATH", path_var())
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The command `jkz install` says commits what it wrote.
fn commit_command(install_stdout: &str) -> String {
    let line = install_stdout
        .lines()
        .find(|l| l.starts_with("commit .claude/settings.json"))
        .unwrap_or_else(|| panic!("install names no files to commit:\n{install_stdout}"));
    line.split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {line}"))
        .to_string()
}

#[test]
fn worktrees_got_no_hooks() {
    let dir = Dir::new();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "start"]);
    let install = jkz(&dir, &repo, &["install"]);
    assert!(install.status.success(), "{}", text(&install));
    let said = String::from_utf8_lossy(&install.stdout).into_owned();

    // A worktree added before the commit: doctor names the step in one line.
    git(
        &repo,
        &["worktree", "add", "-q", "-b", "early", "../wt-early"],
    );
    let early = dir.join("wt-early");
    let doctor = jkz(&dir, &early, &["doctor"]);
    assert_eq!(doctor.status.code(), Some(1), "{}", text(&doctor));
    let out = String::from_utf8_lossy(&doctor.stdout).into_owned();
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails.len(), 1, "{out}");
    assert!(
        fails[0].contains("jkz's hooks are not registered in this linked worktree")
            && fails[0].contains("which git does not track")
            && fails[0].contains("add .claude/settings.json .claude/commands/jkz")
            && fails[0].contains("jkz install --user"),
        "{out}"
    );

    // The step, as install said it.
    let commit = scrubbed("sh", &repo)
        .arg("-c")
        .arg(commit_command(&said))
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(commit.status.success(), "{}", text(&commit));
    let again = jkz(&dir, &repo, &["install"]);
    assert!(
        !String::from_utf8_lossy(&again.stdout).contains("commit .claude"),
        "committed: nothing more to commit\n{}",
        text(&again)
    );

    // A worktree added now has the hooks: doctor passes there.
    git(&repo, &["worktree", "add", "-q", "-b", "i42", "../wt-42"]);
    let wt = dir.join("wt-42");
    let doctor = jkz(&dir, &wt, &["doctor"]);
    assert!(doctor.status.success(), "{}", text(&doctor));
    assert!(
        String::from_utf8_lossy(&doctor.stdout).contains("all checks passed"),
        "{}",
        text(&doctor)
    );
    // The earlier one too, once its branch has the commit.
    git(&early, &["merge", "-q", "main"]);
    let doctor = jkz(&dir, &early, &["doctor"]);
    assert!(doctor.status.success(), "{}", text(&doctor));

    // The registered SessionStart hook, run as the client runs it in the
    // worktree, records the chat in the repository's state directory.
    let settings: Value =
        serde_json::from_slice(&std::fs::read(wt.join(".claude/settings.json")).unwrap()).unwrap();
    let command = settings["hooks"]["SessionStart"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["matcher"] == "")
        .flat_map(|g| g["hooks"].as_array().unwrap())
        .map(|h| h["command"].as_str().unwrap())
        .find(|c| c.ends_with("jkz-chat"))
        .unwrap_or_else(|| panic!("no jkz-chat SessionStart hook: {settings}"))
        .to_string();
    let event = json!({
        "session_id": "chat-in-wt-42", "transcript_path": "/dev/null", "cwd": wt,
        "hook_event_name": "SessionStart", "source": "startup",
    });
    let hook = {
        use std::io::Write;
        let mut child = scrubbed("sh", &wt)
            .arg("-c")
            .arg(&command)
            .env("CLAUDE_PROJECT_DIR", &wt)
            .env("PATH", path_var())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(event.to_string().as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    assert!(hook.status.success(), "{}", text(&hook));
    assert!(
        !wt.join("state").exists(),
        "a worktree never gets state/ of its own"
    );
    let chats = jkz(&dir, &repo, &["chats", "--json"]);
    let chats: Vec<Value> = serde_json::from_slice(&chats.stdout).unwrap();
    let chat = chats
        .iter()
        .find(|c| c["session_id"] == "chat-in-wt-42")
        .unwrap_or_else(|| panic!("the worktree's chat is not recorded: {chats:?}"));
    assert_eq!(
        chat["worktree"],
        std::fs::canonicalize(&wt).unwrap().display().to_string(),
        "{chat}"
    );
    assert_eq!(chat["branch"], "i42");
}

/// Codex CLI refuses to start when `experimental_compact_prompt_file`
/// names a missing file. The committed `.codex/config.toml` names the
/// prompt relative to `.codex/`, which in a linked worktree is a `state/`
/// the worktree does not have: doctor says so and the fix, and install in
/// the worktree points the key at the repository's prompt.
#[test]
fn a_committed_codex_config_named_a_prompt_the_worktree_lacks() {
    let dir = Dir::new();
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let install = jkz(&dir, &repo, &["install", "--client", "codex"]);
    assert!(install.status.success(), "{}", text(&install));
    git(&repo, &["add", ".codex", ".gitignore"]);
    git(&repo, &["commit", "-q", "-m", "Register jkz for Codex"]);
    git(&repo, &["worktree", "add", "-q", "-b", "i5", "../wt-5"]);
    let wt = dir.join("wt-5");

    let doctor = jkz(&dir, &wt, &["doctor", "--client", "codex"]);
    assert_eq!(doctor.status.code(), Some(1), "{}", text(&doctor));
    let out = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(
        out.lines().any(|l| l.starts_with("FAIL")
            && l.contains("which does not exist: Codex refuses to start")
            && l.contains("run jkz install --client codex here")),
        "{out}"
    );
    let install = jkz(&dir, &wt, &["install", "--client", "codex"]);
    assert!(install.status.success(), "{}", text(&install));
    let config = std::fs::read_to_string(wt.join(".codex/config.toml")).unwrap();
    assert_eq!(
        config,
        "experimental_compact_prompt_file = \"../../repo/state/codex-compact-prompt.md\"\n"
    );
    let doctor = jkz(&dir, &wt, &["doctor", "--client", "codex"]);
    assert!(doctor.status.success(), "{}", text(&doctor));
    // Uninstalled in the worktree, the prompt the main checkout's Codex
    // needs stays.
    let uninstall = jkz(&dir, &wt, &["uninstall", "--client", "codex"]);
    assert!(uninstall.status.success(), "{}", text(&uninstall));
    assert!(repo.join("state/codex-compact-prompt.md").is_file());
    let doctor = jkz(&dir, &repo, &["doctor", "--client", "codex"]);
    assert!(doctor.status.success(), "{}", text(&doctor));
}
