//! The Bash wrap: a shell call nobody refused is rewritten in `PreToolUse`
//! so its output reaches the model already reduced by jkz's engine, with
//! the command's exit status. For a client whose post-tool hook cannot
//! replace an output, or does not run after a failing command, it is the
//! only way in (each client's module says what its hooks can:
//! [`crate::client::Client::output_control`]).
//!
//! A client runs the rewrite one of two ways; its module says which
//! ([`crate::client::Client::shell_wrap`]), and the wrap never names a
//! client:
//! - **Inline** ([`ShellWrap::Inline`], [`inline_command`]): for a client
//!   that runs every command in one shell of its own (which keeps the
//!   user's aliases and the directory a `cd` moved to) and checks
//!   permissions on the rewritten command word for word, so that a rewrite
//!   hiding the original in quotes would escape the user's deny rules. The
//!   command stays inline, in that shell, its output sent to a file of the
//!   state directory, and jkz reduces the file on the way out, or from an
//!   `EXIT` trap when the command ends the shell:
//!
//!   ```text
//!   trap '__jkz_s=$?; exec 1>&3 2>&4; REDUCE' EXIT; exec 3>&1 4>&2 >'FILE' 2>&1; CMD
//!   __jkz_s=$?; trap - EXIT; exec 1>&3 2>&4 3>&- 4>&-; REDUCE; (exit $__jkz_s)
//!   ```
//!
//!   REDUCE is `'BIN/jkz-truncate' --for CLIENT --state-dir 'STATE'
//!   --exit-code $__jkz_s --command-file 'FILE.cmd' 'FILE' || cat 'FILE'`.
//!   The file is the kept full output when the view is reduced (removed
//!   when the output stands as it was). Because the client judges the
//!   rewrite by its own words, it is made only where every shell command
//!   is pre-approved (the client's module says when);
//!   elsewhere the rewrite could be asked for or refused where the
//!   original would have run.
//! - **In a fresh shell** ([`ShellWrap::FreshShell`],
//!   [`fresh_shell_command`]): for a client that runs each command in a
//!   shell of its own: `'BIN/jkz-truncate' --for CLIENT --session 'S'
//!   --run 'CMD'`.
//!
//! Left alone ([`leave_alone`]): what [`rules::leave_alone`] leaves alone
//! (jkz's own commands, interactive programs, background jobs, `exec`, a
//! command a client intercepts itself), inline a command ending in a line continuation, a
//! command whose first word sets `JKZ_RAW=1` (the raw request, documented
//! in docs/tool-output-guard.md and nowhere in any output), a call the
//! client runs in the background (`run_in_background`), the client's plan
//! mode, a project without a state directory (nothing may be created in a
//! project that did not opt in), a shell that is not POSIX, and every call
//! when `JKZ_BASH_WRAP` is `0`, `off`, `false` or `no`.

pub mod rules;

use std::path::{Path, PathBuf};

use self::rules::quote;
use crate::client::{Answer, EventKind, EventName, HookEvent, ShellWrap, Tool};
use crate::session_id::{process_env, resolve_raw};
use crate::state_dir::StateDir;
use crate::truncate::run_command::posix_shell;

/// The switch that turns the wrap off, for every client.
pub const OPT_OUT: &str = "JKZ_BASH_WRAP";

/// The first word that asks for the raw output: `JKZ_RAW=1 cargo test`.
pub const RAW_REQUEST: &str = "JKZ_RAW=1";

/// The program the wrap runs, beside the hook's own binary.
pub const PROGRAM: &str = "jkz-truncate";

/// `jkz-chat`'s answer: the registry's ([`crate::registry::hook::answer`]),
/// and for a shell call it lets through, the wrap's. One answer per call,
/// the refusal always first.
pub fn after_registry(event: &HookEvent, warnings: &mut crate::hook::Warnings) -> Answer {
    match crate::registry::hook::answer(event, warnings) {
        Answer::Nothing if event.name() == EventName::PreToolUse => {
            let session = resolve_raw(event.session_id.as_deref(), process_env).map(|(raw, _)| raw);
            answer(event, session.as_deref())
        }
        answer => answer,
    }
}

/// Why `command` is left as it is when wrapped as `wrap` says, or `None`
/// to wrap it.
pub fn leave_alone(command: &str, wrap: ShellWrap) -> Option<&'static str> {
    if command.trim_start().starts_with(RAW_REQUEST) {
        return Some("the raw output was asked for");
    }
    if let Some(why) = rules::leave_alone(command) {
        return Some(why);
    }
    match wrap {
        // A fresh shell of its own: an `exit` ends only that.
        ShellWrap::FreshShell => None,
        ShellWrap::Inline if command.trim_end().ends_with('\\') => {
            Some("a line continuation at its end would join jkz's next line")
        }
        ShellWrap::Inline => None,
    }
}

/// The command a client that keeps the command inline runs instead of
/// `command` ([`ShellWrap::Inline`]): `command` itself, in the client's
/// own shell (so the client's permission check and the user's deny rules
/// still read its words), its output into `file`; then `program` reduces
/// the file for `viewer` (a client's name), on the way out or from an
/// `exit` trap. `file`.cmd holds the command's text for the reducer
/// (written by the hook), so the command is never a quoted argument.
pub fn inline_command(
    command: &str,
    program: &Path,
    file: &Path,
    state: Option<&Path>,
    viewer: &str,
) -> String {
    let f = quote(&file.to_string_lossy());
    let state = state
        .map(|s| format!(" --state-dir {}", quote(&s.to_string_lossy())))
        .unwrap_or_default();
    let reduce = |status: &str| {
        format!(
            "{} --for {viewer}{state} --exit-code {status} --command-file {} {f} || cat {f}",
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

/// The command a client that runs the rewrite in a fresh shell runs
/// instead of `command` ([`ShellWrap::FreshShell`]), reduced for `viewer`.
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

/// True when the environment turns the wrap off ([`OPT_OUT`], or the
/// client's older switch).
fn off(event: &HookEvent) -> bool {
    let switched_off = |name: &str| rules::opted_out(std::env::var_os(name).as_deref());
    switched_off(OPT_OUT) || event.client.older_wrap_switch().is_some_and(switched_off)
}

/// The answer that wraps `event`'s shell call, or [`Answer::Nothing`] to
/// leave it alone. `session` is the chat's session as the registry
/// resolved it.
pub fn answer(event: &HookEvent, session: Option<&str>) -> Answer {
    wrapped(event, session).map_or(Answer::Nothing, Answer::RewriteCommand)
}

fn wrapped(event: &HookEvent, session: Option<&str>) -> Option<String> {
    let EventKind::PreToolUse(used) = &event.kind else {
        return None;
    };
    let Tool::Shell {
        command,
        background,
        ..
    } = &used.tool
    else {
        return None;
    };
    if off(event) || !posix_shell(std::env::var_os("SHELL").as_deref()) || event.plan_mode {
        return None;
    }
    // Only an input the client can take back with the command replaced.
    event.tool_input()?;
    if *background || leave_alone(command, ShellWrap::FreshShell).is_some() {
        return None;
    }
    let program = std::env::current_exe().ok()?.with_file_name(PROGRAM);
    if !program.is_file() {
        return None;
    }
    let cwd = event.cwd.clone();
    let wrap = event
        .client
        .shell_wrap(event, &crate::hook::project_dir(cwd.clone()))?;
    if leave_alone(command, wrap).is_some() {
        return None;
    }
    let viewer = event.client.name();
    match wrap {
        ShellWrap::Inline => {
            let state = StateDir::resolve(None, cwd.as_deref());
            let file = run_file(&state, event.raw.text("tool_use_id"))?;
            let sidecar = PathBuf::from(format!("{}.cmd", file.display()));
            let note = CommandNote { command, session };
            crate::atomic::write_atomic(&sidecar, note.to_json().as_bytes()).ok()?;
            let root = std::path::absolute(state.path()).ok();
            Some(inline_command(
                command,
                &program,
                &file,
                root.as_deref(),
                viewer,
            ))
        }
        ShellWrap::FreshShell => Some(fresh_shell_command(command, &program, viewer, session)),
    }
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

/// The file an inline call's output goes to, in the state directory's
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
            assert_eq!(leave_alone(c, ShellWrap::Inline).is_some(), left, "{c}");
        }
        assert_eq!(leave_alone("make; exit 3", ShellWrap::FreshShell), None);
    }

    /// The client name the rewrites below pass on (`--for`): the stand-in
    /// reducer only prints it.
    const CLIENT: &str = "the-client";

    /// Runs `command` through the inline rewrite in one `bash`, as a
    /// client that keeps the command inline runs it (`eval`, then `pwd`
    /// in the same shell: [`ShellWrap::Inline`]), with a stand-in for
    /// jkz-truncate that prints its arguments and the file; `pwd` shows
    /// whether a `cd` stayed.
    fn run_inline(command: &str, dir: &Path) -> (String, i32) {
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
            inline_command(command, &program, &file, None, CLIENT)
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
    fn the_inline_rewrite_keeps_the_shell_the_status_and_the_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let (text, code) = run_inline("cd sub && echo 'it'\"'\"'s' && echo err >&2", dir.path());
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("it's\nerr\n"), "{text}");
        assert!(text.contains(&format!("--for {CLIENT} ")), "{text}");
        assert!(text.contains("--command-file"), "{text}");
        assert!(text.contains("--exit-code 0"), "{text}");
        assert!(text.trim_end().ends_with("/sub"), "the cd stayed: {text}");
        let (text, code) = run_inline("echo boom; false", dir.path());
        assert_eq!(code, 1, "{text}");
        assert!(
            text.contains("--exit-code 1") && text.contains("boom"),
            "{text}"
        );
        // An `exit` in the command: the trap still hands the output over.
        let (text, code) = run_inline("echo before-exit; exit 4", dir.path());
        assert_eq!(code, 4, "{text}");
        assert!(
            text.contains("--exit-code 4") && text.contains("before-exit"),
            "{text}"
        );
    }

    #[test]
    fn a_missing_reducer_leaves_the_output_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out.txt");
        let script = inline_command(
            "echo kept; exit_status_7() { return 7; }; exit_status_7",
            Path::new("/nonexistent/jkz-truncate"),
            &file,
            None,
            CLIENT,
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
