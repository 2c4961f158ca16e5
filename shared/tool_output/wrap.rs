//! The Bash wrap: a shell call nobody refused is rewritten in `PreToolUse`
//! so its output reaches the model already reduced by jkz's engine, with
//! the command's exit status. It is the only way in for a failing command
//! in Claude Code (whose `PostToolUse` does not run on failure, and whose
//! `PostToolUseFailure` cannot replace the output), and the only way in for
//! Codex CLI and Gemini CLI (whose post-tool hooks cannot replace it).
//!
//! - **Claude Code** runs each Bash command as `eval CMD && pwd -P >| FILE`
//!   in a shell that sourced the user's snapshot (aliases, functions), and
//!   keeps the directory a `cd` moved to. So the command stays in that
//!   shell, its output into a file of the state directory, and jkz reads
//!   the file afterwards ([`claude_command`]):
//!
//!   ```text
//!   { eval 'CMD'; } >'STATE/context-offload/run-ID.txt' 2>&1; __jkz_status=$?;
//!   'BIN/jkz-truncate' --for claude --state-dir 'STATE' --session 'S' --exit-code "$__jkz_status" --ran 'CMD' 'FILE' || cat 'FILE';
//!   (exit "$__jkz_status")
//!   ```
//!
//!   The file is the kept full output when the view is reduced (removed
//!   when the output stands as it was).
//! - **Codex CLI and Gemini CLI** run each command in a fresh shell:
//!   `'BIN/jkz-truncate' --for codex --session 'S' --run 'CMD'`
//!   ([`crate::client::codex::guard`]).
//!
//! Left alone ([`leave_alone`]): what `crate::client::codex::guard::leave_alone`
//! leaves alone (jkz's own commands, interactive programs, background
//! jobs, `exec`), in Claude Code a command that ends the shell (`exit`,
//! `logout`, `return`: jkz would never read its output), a
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
    let ends_the_shell = command
        .split(['\n', ';', '|', '&', '(', ')', '{', '}'])
        .filter_map(|part| part.split_whitespace().next())
        .any(|w| matches!(w, "exit" | "logout" | "return"));
    ends_the_shell.then_some("it would end the shell before jkz reads the output")
}

/// The command Claude Code runs instead of `command`: `command` in the
/// client's own shell, its output into `file`, then reduced by `program`.
pub fn claude_command(
    command: &str,
    program: &Path,
    file: &Path,
    state: Option<&Path>,
    session: Option<&str>,
) -> String {
    let file = quote(&file.to_string_lossy());
    // The state directory as the hook found it: a `cd` in the command does
    // not move it.
    let state = state
        .map(|s| format!(" --state-dir {}", quote(&s.to_string_lossy())))
        .unwrap_or_default();
    let session = session
        .map(|s| format!(" --session {}", quote(s)))
        .unwrap_or_default();
    format!(
        "{{ eval {cmd}; }} >{file} 2>&1; __jkz_status=$?; {prog} --for claude{state}{session} --exit-code \"$__jkz_status\" --ran {cmd} {file} || cat {file}; (exit \"$__jkz_status\")",
        cmd = quote(command),
        prog = quote(&program.to_string_lossy()),
    )
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
    command.contains("__jkz_status=$?;") || command.contains("jkz-truncate' --for ")
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
            let state = StateDir::resolve(None, cwd.as_deref());
            let file = run_file(&state, event.text("tool_use_id"))?;
            let root = std::path::absolute(state.path()).ok();
            claude_command(command, &program, &file, root.as_deref(), session)
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
            ("make; exit 3", true),
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
            claude_command(command, &program, &file, None, Some("s'1"))
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
        assert!(
            text.contains("--session 's'\\''1'") || text.contains("--session s'1"),
            "{text}"
        );
        assert!(text.contains("--exit-code 0"), "{text}");
        assert!(text.trim_end().ends_with("/sub"), "the cd stayed: {text}");
        let (text, code) = run_claude("echo boom; false", dir.path());
        assert_eq!(code, 1, "{text}");
        assert!(
            text.contains("--exit-code 1") && text.contains("boom"),
            "{text}"
        );
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
