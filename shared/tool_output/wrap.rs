//! The Bash wrap: a shell call nobody refused is rewritten in `PreToolUse`
//! so its output reaches the model already reduced by jkz's engine, with
//! the command's exit status. It is the only way in for a failing command
//! in Claude Code (whose `PostToolUse` does not run on failure, and whose
//! `PostToolUseFailure` cannot replace the output), and the only way in for
//! Codex CLI and Gemini CLI (whose post-tool hooks cannot replace it).
//!
//! - **Claude Code** runs each Bash command as `eval CMD && pwd -P >| FILE`
//!   in a shell that sourced the user's snapshot (aliases, functions), and
//!   keeps the directory a `cd` moved to; it checks permissions on the
//!   command a hook rewrote, word for word, and a rewrite that hides the
//!   original in quotes would escape the user's deny rules (measured:
//!   docs/clients.md). So the command stays inline, in that shell, its
//!   output sent to a file of the state directory, and jkz reduces the file
//!   on the way out, or from an `EXIT` trap when the command ends the shell
//!   ([`claude_command`]):
//!
//!   ```text
//!   trap '__jkz_s=$?; exec 1>&3 2>&4; REDUCE' EXIT; exec 3>&1 4>&2 >'FILE' 2>&1; CMD
//!   __jkz_s=$?; trap - EXIT; exec 1>&3 2>&4 3>&- 4>&-; REDUCE; (exit $__jkz_s)
//!   ```
//!
//!   REDUCE is `'BIN/jkz-truncate' --for claude --state-dir 'STATE'
//!   --exit-code $__jkz_s --command-file 'FILE.cmd' 'FILE' || cat 'FILE'`.
//!   The file is the kept full output when the view is reduced (removed
//!   when the output stands as it was). Because the client judges the
//!   rewrite by its own words, it is made only where every Bash command is
//!   pre-approved ([`bash_pre_approved`]); elsewhere the rewrite could be
//!   asked for or refused where the original would have run.
//! - **Codex CLI and Gemini CLI** run each command in a fresh shell:
//!   `'BIN/jkz-truncate' --for codex --session 'S' --run 'CMD'`
//!   ([`crate::client::codex::guard`]).
//!
//! Left alone ([`leave_alone`]): what `crate::client::codex::guard::leave_alone`
//! leaves alone (jkz's own commands, interactive programs, background
//! jobs, `exec`), in Claude Code a command ending in a line continuation, a
//! command whose first word sets `JKZ_RAW=1` (the raw request, documented
//! in docs/tool-output-guard.md and nowhere in any output), a call the
//! client runs in the background (`run_in_background`), the client's plan
//! mode, a project without a state directory (nothing may be created in a
//! project that did not opt in), a shell that is not POSIX, and every call
//! when `JKZ_BASH_WRAP` is `0`, `off`, `false` or `no`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::client::codex::guard::{self as codex_guard, quote};
use crate::client::Client;
use crate::hook_input::HookInput;
use crate::state_dir::StateDir;
use crate::truncate::run_command::posix_shell;

/// The switch that turns the wrap off, for every client.
pub const OPT_OUT: &str = "JKZ_BASH_WRAP";

/// The first word that asks for the raw output: `JKZ_RAW=1 cargo test`.
pub const RAW_REQUEST: &str = "JKZ_RAW=1";

/// The program the wrap runs, beside the hook's own binary.
pub const PROGRAM: &str = "jkz-truncate";

/// Why `command` is left as it is for `client`, or `None` to wrap it.
pub fn leave_alone(command: &str, client: Client) -> Option<&'static str> {
    if command.trim_start().starts_with(RAW_REQUEST) {
        return Some("the raw output was asked for");
    }
    if let Some(why) = codex_guard::leave_alone(command) {
        return Some(why);
    }
    if client != Client::Claude {
        // A fresh shell of its own: an `exit` ends only that.
        return None;
    }
    if command.trim_end().ends_with('\\') {
        return Some("a line continuation at its end would join jkz's next line");
    }
    None
}

/// The command Claude Code runs instead of `command`: `command` itself,
/// inline, in the client's own shell (so the client's permission check and
/// the user's deny rules still read its words), its output into `file`;
/// then `program` reduces the file, on the way out or from an `exit` trap.
/// `file`.cmd holds the command's text for the reducer (written by the
/// hook), so the command is never a quoted argument.
pub fn claude_command(command: &str, program: &Path, file: &Path, state: Option<&Path>) -> String {
    let f = quote(&file.to_string_lossy());
    let state = state
        .map(|s| format!(" --state-dir {}", quote(&s.to_string_lossy())))
        .unwrap_or_default();
    let reduce = |status: &str| {
        format!(
            "{} --for claude{state} --exit-code {status} --command-file {} {f} || cat {f}",
            quote(&program.to_string_lossy()),
            quote(&format!("{}.cmd", file.to_string_lossy())),
        )
    };
    format!(
        "trap {} EXIT; exec 3>&1 4>&2 >{f} 2>&1; {command}\n__jkz_s=$?; trap - EXIT; exec 1>&3 2>&4 3>&- 4>&-; {}; (exit $__jkz_s)",
        quote(&format!("__jkz_s=$?; exec 1>&3 2>&4; {}", reduce("$__jkz_s"))),
        reduce("$__jkz_s"),
    )
}

/// True when the user's permissions let every Bash command run without a
/// prompt: then the rewrite (whose words the client checks) runs as the
/// original would. Measured on the client (docs/clients.md): with narrower
/// rules it asks for the rewrite, or refuses it, where the original would
/// have run, so jkz leaves the call alone. Pre-approved: the session's
/// `bypassPermissions` mode; the client started with
/// `--dangerously-skip-permissions`, `--permission-mode bypassPermissions`
/// or `--allowedTools` naming `Bash` whole; an allow rule `Bash`,
/// `Bash(*)` or `Bash(:*)` in the project's or the user's settings.
pub fn bash_pre_approved(event: &HookInput, project: &Path) -> bool {
    if event.text("permission_mode") == Some("bypassPermissions") {
        return true;
    }
    if client_args_approve(&client_args()) {
        return true;
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let files = [
        Some(project.join(".claude/settings.json")),
        Some(project.join(".claude/settings.local.json")),
        home.map(|h| h.join(".claude/settings.json")),
    ];
    files.into_iter().flatten().any(|f| settings_approve(&f))
}

/// The whole-Bash rules.
fn whole_bash(rule: &str) -> bool {
    matches!(rule.trim(), "Bash" | "Bash(*)" | "Bash(:*)")
}

/// The command line of the nearest Claude Code process above this one.
fn client_args() -> Vec<String> {
    let (crate::process::tree::Tree::Whole(found) | crate::process::tree::Tree::TooDeep(found)) =
        crate::process::tree::ancestors()
    else {
        return Vec::new();
    };
    found
        .iter()
        .find(|a| a.name.starts_with("claude") || a.name == "node" && is_claude_node(a))
        .map(|a| {
            a.args()
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn is_claude_node(a: &crate::process::tree::Ancestor) -> bool {
    a.args()
        .iter()
        .skip(1)
        .find(|x| !x.starts_with(b"-"))
        .is_some_and(|script| String::from_utf8_lossy(script).contains("claude-code"))
}

/// True when a client's command line pre-approves every Bash command.
pub fn client_args_approve(args: &[String]) -> bool {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (a, None),
        };
        match flag {
            "--dangerously-skip-permissions" => return true,
            "--permission-mode"
                if inline.or(args.get(i + 1).map(String::as_str)) == Some("bypassPermissions") =>
            {
                return true;
            }
            "--allowedTools" | "--allowed-tools" => {
                let mut values: Vec<&str> = inline.into_iter().collect();
                if inline.is_none() {
                    values.extend(
                        args[i + 1..]
                            .iter()
                            .map(String::as_str)
                            .take_while(|v| !v.starts_with('-')),
                    );
                }
                if values
                    .iter()
                    .flat_map(|v| v.split([',', ' ']))
                    .any(whole_bash)
                {
                    return true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// True when a settings file allows every Bash command.
fn settings_approve(file: &Path) -> bool {
    let Ok(text) = crate::user_file::read_user_file_bounded(file, 1 << 20) else {
        return false;
    };
    let Ok(v) = serde_json::from_slice::<Value>(&text) else {
        return false;
    };
    v["permissions"]["allow"]
        .as_array()
        .is_some_and(|rules| rules.iter().filter_map(Value::as_str).any(whole_bash))
}

/// The command Codex CLI or Gemini CLI runs instead of `command`.
pub fn fresh_shell_command(
    command: &str,
    program: &Path,
    viewer: &str,
    session: Option<&str>,
) -> String {
    let session = session
        .map(|s| format!(" --session {}", quote(s)))
        .unwrap_or_default();
    format!(
        "{} --for {viewer}{session} --run {}",
        quote(&program.to_string_lossy()),
        quote(command)
    )
}

/// True when a command is one of jkz's wraps (its output was reduced and
/// counted already).
pub fn is_wrapped(command: &str) -> bool {
    command.contains("__jkz_s=$?; trap - EXIT;") || command.contains("jkz-truncate' --for ")
}

/// True when the environment turns the wrap off ([`OPT_OUT`]; for Codex,
/// also the older `JKZ_CODEX_GUARD`).
fn off(client: Client) -> bool {
    codex_guard::opted_out(std::env::var_os(OPT_OUT).as_deref())
        || (client == Client::Codex
            && codex_guard::opted_out(std::env::var_os(codex_guard::OPT_OUT).as_deref()))
}

/// The answer that wraps `event`'s shell call, or `None` to leave it alone.
/// `session` is the chat's session as the registry resolved it.
pub fn answer(event: &HookInput, client: Client, session: Option<&str>) -> Option<String> {
    let shell_tool = match client {
        Client::Gemini => "run_shell_command",
        Client::Claude | Client::Codex => "Bash",
    };
    if event.text("tool_name") != Some(shell_tool)
        || off(client)
        || !posix_shell(std::env::var_os("SHELL").as_deref())
        || event.text("permission_mode") == Some("plan")
    {
        return None;
    }
    let input = event.raw.get("tool_input")?.as_object()?;
    let command = input.get("command")?.as_str()?;
    if leave_alone(command, client).is_some()
        || input.get("run_in_background").and_then(Value::as_bool) == Some(true)
        || input.get("is_background").and_then(Value::as_bool) == Some(true)
    {
        return None;
    }
    let program = std::env::current_exe().ok()?.with_file_name(PROGRAM);
    if !program.is_file() {
        return None;
    }
    let mut updated = input.clone();
    let rewritten = match client {
        Client::Claude => {
            let cwd = event.cwd();
            let project = crate::hook::project_dir(cwd.clone());
            if !bash_pre_approved(event, &project) {
                return None;
            }
            let state = StateDir::resolve(None, cwd.as_deref());
            let file = run_file(&state, event.text("tool_use_id"))?;
            let sidecar = PathBuf::from(format!("{}.cmd", file.display()));
            let note = CommandNote { command, session };
            crate::atomic::write_atomic(&sidecar, note.to_json().as_bytes()).ok()?;
            let root = std::path::absolute(state.path()).ok();
            claude_command(command, &program, &file, root.as_deref())
        }
        Client::Codex => fresh_shell_command(command, &program, "codex", session),
        Client::Gemini => fresh_shell_command(command, &program, "gemini", session),
    };
    updated.insert("command".into(), Value::String(rewritten));
    let answer = match client {
        // Only the command changes; the permission stays the client's.
        Client::Claude => json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "updatedInput": updated,
            }
        }),
        Client::Codex => json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": updated,
            }
        }),
        Client::Gemini => json!({
            "hookSpecificOutput": {
                "hookEventName": "BeforeTool",
                "tool_input": { "command": updated["command"] },
            }
        }),
    };
    Some(answer.to_string())
}

/// What the hook tells the reducer beside the output: the command and
/// the session (`FILE.cmd`, JSON).
#[derive(Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommandNote<'a> {
    pub command: &'a str,
    #[serde(default)]
    pub session: Option<&'a str>,
}

impl CommandNote<'_> {
    fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The file a Claude Code call's output goes to, in the state directory's
/// offload directory (created); `None` when the project has not opted in
/// or the directory cannot be made.
fn run_file(state: &StateDir, tool_use_id: Option<&str>) -> Option<PathBuf> {
    if state.check().is_err() || state.tracked_by_git().is_some() {
        return None;
    }
    let dir = state
        .ensure_subdir(crate::state_dir::layout::OFFLOAD_DIR)
        .ok()??;
    let id: String = tool_use_id
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(64)
        .collect();
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.6fZ");
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    Some(dir.join(format!("run-{stamp}-{}-{id}.txt", std::process::id())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn what_is_left_alone() {
        for (c, left) in [
            ("cargo test", false),
            ("cd sub && cargo test", false),
            ("JKZ_RAW=1 cargo test", true),
            ("make; exit 3", false),
            ("make \\", true),
            ("vim x", true),
            ("./server &", true),
            ("echo exit", false),
        ] {
            assert_eq!(leave_alone(c, Client::Claude).is_some(), left, "{c}");
        }
        assert_eq!(leave_alone("make; exit 3", Client::Codex), None);
    }

    /// Runs `command` through the Claude rewrite in one `bash`, with a
    /// stand-in for jkz-truncate that prints its arguments and the file;
    /// then `pwd`, to see whether a `cd` stayed.
    fn run_claude(command: &str, dir: &Path) -> (String, i32) {
        let program = dir.join("fake jkz-truncate");
        std::fs::write(
            &program,
            "#!/bin/sh\nfor a in \"$@\"; do last=$a; done\necho \"args: $*\"\ncat \"$last\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = dir.join("out file.txt");
        let script = format!(
            "{} && pwd -P >&2",
            claude_command(command, &program, &file, None)
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!("eval {}", quote(&script)))
            .current_dir(dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (text, out.status.code().unwrap_or(-1))
    }

    #[test]
    fn the_claude_rewrite_keeps_the_shell_the_status_and_the_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let (text, code) = run_claude("cd sub && echo 'it'\"'\"'s' && echo err >&2", dir.path());
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("it's\nerr\n"), "{text}");
        assert!(text.contains("--command-file"), "{text}");
        assert!(text.contains("--exit-code 0"), "{text}");
        assert!(text.trim_end().ends_with("/sub"), "the cd stayed: {text}");
        let (text, code) = run_claude("echo boom; false", dir.path());
        assert_eq!(code, 1, "{text}");
        assert!(
            text.contains("--exit-code 1") && text.contains("boom"),
            "{text}"
        );
        // An `exit` in the command: the trap still hands the output over.
        let (text, code) = run_claude("echo before-exit; exit 4", dir.path());
        assert_eq!(code, 4, "{text}");
        assert!(
            text.contains("--exit-code 4") && text.contains("before-exit"),
            "{text}"
        );
    }

    #[test]
    fn pre_approval_from_the_clients_command_line() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        for yes in [
            &["claude", "-p", "x", "--allowedTools", "Bash"][..],
            &["claude", "--allowedTools", "Read,Bash", "-p"],
            &["claude", "--allowed-tools", "Read", "Bash(*)"],
            &["claude", "--allowedTools=Edit Bash"],
            &["claude", "--dangerously-skip-permissions"],
            &["claude", "--permission-mode", "bypassPermissions"],
        ] {
            assert!(client_args_approve(&args(yes)), "{yes:?}");
        }
        for no in [
            &["claude", "-p", "Bash"][..],
            &["claude", "--allowedTools", "Bash(git:*)"],
            &["claude", "--allowedTools", "Read", "-p", "Bash"],
            &["claude", "--permission-mode", "acceptEdits"],
        ] {
            assert!(!client_args_approve(&args(no)), "{no:?}");
        }
    }

    #[test]
    fn a_missing_reducer_leaves_the_output_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out.txt");
        let script = claude_command(
            "echo kept; exit_status_7() { return 7; }; exit_status_7",
            Path::new("/nonexistent/jkz-truncate"),
            &file,
            None,
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(7));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "kept\n");
    }
}
