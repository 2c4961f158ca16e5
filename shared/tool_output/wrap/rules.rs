//! Which shell commands the Bash wrap leaves alone, and how it quotes: the
//! rules the wrap ([`crate::tool_output::wrap`]) applies for every client.
//!
//! A command is left alone ([`leave_alone`]) when wrapping it would change
//! what it does or gains nothing: jkz's own commands; a program a client
//! intercepts by its first word ([`crate::client::intercepted`]);
//! interactive programs (editors, pagers,
//! REPLs and shells without a script, `top`, `ssh`, `git add -p`, …), whose
//! terminal a pipe would take away; a command that starts a job in the
//! background (`&`, `nohup`, `setsid`, `disown`), which would hold the pipe
//! open and keep the wrapper waiting; `exec`; a command with a NUL byte
//! (not passable as an argument); an empty one. The original is one
//! single-quoted word ([`quote`]): the shell hands it over byte for byte.

/// Programs that talk to a terminal: wrapped, their terminal would be a
/// pipe.
const INTERACTIVE: [&str; 24] = [
    "vi", "vim", "nvim", "nano", "emacs", "less", "more", "most", "man", "top", "htop", "btop",
    "watch", "ssh", "tmux", "screen", "ftp", "sftp", "telnet", "mysql", "psql", "sqlite3", "gdb",
    "lldb",
];

/// Programs that are interactive when given no argument (a REPL or a
/// shell), and not when given a script or `-c`.
const REPL: [&str; 12] = [
    "python", "python3", "node", "irb", "ghci", "bash", "sh", "zsh", "dash", "fish", "R", "lua",
];

/// Why `command` is left as it is, or `None` to guard it.
pub fn leave_alone(command: &str) -> Option<&'static str> {
    if command.trim().is_empty() {
        return Some("an empty command");
    }
    if command.contains('\0') {
        return Some("a NUL byte cannot be passed on");
    }
    if background(command) {
        return Some("a background job would hold the pipe open");
    }
    for words in segments(command) {
        let first = words[0];
        if first == "jkz" || first.starts_with("jkz-") {
            return Some("jkz's own command");
        }
        if let Some(why) = crate::client::intercepted(first) {
            return Some(why);
        }
        if matches!(first, "exec" | "nohup" | "setsid" | "disown") {
            return Some("it replaces or detaches the shell");
        }
        if INTERACTIVE.contains(&first) {
            return Some("an interactive program");
        }
        if REPL.contains(&first) && words.len() == 1 {
            return Some("an interactive program");
        }
        if first == "git"
            && words
                .iter()
                .any(|w| matches!(*w, "-p" | "--patch" | "-i" | "--interactive"))
        {
            return Some("an interactive program");
        }
    }
    None
}

/// The words of each simple command in `command`: split at newlines, `;`,
/// `|` and `&`, each word's path cut to its file name (`/usr/bin/vim` is
/// `vim`), leading `VAR=value` assignments and `sudo`/`env`/`time`/`command`
/// skipped. A best effort: it only ever leaves more commands alone.
fn segments(command: &str) -> Vec<Vec<&str>> {
    let mut out = Vec::new();
    for part in command.split(['\n', ';', '|', '&', '(', ')', '{', '}', '`']) {
        let words: Vec<&str> = part
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
            .skip_while(|w| {
                w.contains('=') && !w.starts_with('=')
                    || matches!(*w, "sudo" | "env" | "time" | "command" | "then" | "do")
            })
            .map(|w| w.rsplit('/').next().unwrap_or(w))
            .filter(|w| !w.is_empty())
            .collect();
        if !words.is_empty() {
            out.push(words);
        }
    }
    out
}

/// True when `command` has a `&` that sends a job to the background: one
/// that is not part of `&&`, `>&`, `<&`, `&>` or `|&`, and not inside
/// quotes. Quotes are followed roughly (no `$'…'`): a doubt leaves the
/// command alone.
fn background(command: &str) -> bool {
    let b = command.as_bytes();
    let (mut single, mut double) = (false, false);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\\' if !single => i += 1,
            b'\'' if !double => single = !single,
            b'"' if !single => double = !double,
            b'&' if !single && !double => {
                let prev = i.checked_sub(1).map(|p| b[p]);
                let next = b.get(i + 1).copied();
                let joined = matches!(prev, Some(b'>' | b'<' | b'|' | b'&'))
                    || matches!(next, Some(b'&' | b'>'));
                if !joined {
                    return true;
                }
                if next == Some(b'&') {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// `s` as one POSIX shell word: in single quotes, each `'` written `'\''`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// True when a switch's value `value` turns the wrap off (`0`, `off`,
/// `false`, `no`).
pub fn opted_out(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.to_string_lossy().trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::fresh_shell_command;
    use super::*;
    use crate::truncate::run_command::posix_shell;
    use proptest::prelude::*;
    use std::path::Path;
    use std::process::Command;

    #[test]
    fn ordinary_commands_are_guarded() {
        for c in [
            "cargo test 2>&1",
            "cat build.log | grep error && echo done",
            "make >out.txt 2>&1; tail out.txt",
            "python3 script.py",
            "bash -c 'echo hi'",
            "echo 'a & b' \"c & d\"",
            "ls &>/dev/null || true",
            "git diff HEAD~1",
            "echo ok |& cat",
        ] {
            assert_eq!(leave_alone(c), None, "{c}");
        }
    }

    #[test]
    fn commands_whose_meaning_a_pipe_changes_are_left_alone() {
        for (c, why) in [
            ("", "an empty command"),
            ("   \n", "an empty command"),
            ("jkz state show 42", "jkz's own command"),
            (
                "cargo test | jkz-truncate --role tester",
                "jkz's own command",
            ),
            (
                "apply_patch <<'EOF'\n*** Begin Patch\nEOF",
                // The reason the client that intercepts it gives.
                crate::client::intercepted("apply_patch").unwrap(),
            ),
            ("vim src/main.rs", "an interactive program"),
            ("/usr/bin/less log.txt", "an interactive program"),
            ("python3", "an interactive program"),
            ("cd src && bash", "an interactive program"),
            ("git add -p", "an interactive program"),
            ("EDITOR=vi sudo top", "an interactive program"),
            ("./server &", "a background job would hold the pipe open"),
            (
                "sleep 5 & wait",
                "a background job would hold the pipe open",
            ),
            ("nohup ./server", "it replaces or detaches the shell"),
            ("exec cargo test", "it replaces or detaches the shell"),
            ("echo a\0b", "a NUL byte cannot be passed on"),
        ] {
            assert_eq!(leave_alone(c), Some(why), "{c:?}");
        }
    }

    #[test]
    fn quoting_is_posix_single_quotes() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
        // Every client's name is one word the shell takes as it is.
        for client in crate::client::Client::ALL {
            let name = client.name();
            let r = fresh_shell_command("echo hi", Path::new("/x/jkz-truncate"), name, Some("s"));
            assert_eq!(
                r,
                format!("'/x/jkz-truncate' --for {name} --session 's' --run 'echo hi'")
            );
        }
    }

    #[test]
    fn the_opt_out_and_the_shell() {
        use std::ffi::OsStr;
        assert!(!opted_out(None));
        for v in ["0", "off", "FALSE", "no "] {
            assert!(opted_out(Some(OsStr::new(v))), "{v}");
        }
        assert!(!opted_out(Some(OsStr::new("1"))));
        assert!(posix_shell(None));
        assert!(posix_shell(Some(OsStr::new("/bin/bash"))));
        assert!(posix_shell(Some(OsStr::new("/usr/local/bin/zsh"))));
        assert!(!posix_shell(Some(OsStr::new("/usr/bin/fish"))));
        assert!(!posix_shell(Some(OsStr::new("/usr/bin/nu"))));
    }

    /// The naive oracle: `sh -c` of the rewritten command, with the program
    /// a script that writes its last argument to a file, receives the
    /// original byte for byte.
    fn received(command: &str, dir: &Path) -> Vec<u8> {
        let program = dir.join("receive it");
        let out = dir.join("got");
        std::fs::write(
            &program,
            format!(
                "#!/bin/sh\nfor a in \"$@\"; do last=$a; done\nprintf %s \"$last\" > '{}'\n",
                out.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let _ = std::fs::remove_file(&out);
        let status = Command::new("/bin/sh")
            .arg("-c")
            .arg(fresh_shell_command(command, &program, "the-client", None))
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::read(&out).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn the_shell_hands_over_the_original_byte_for_byte(
            command in prop::collection::vec(
                prop_oneof![
                    Just('\''), Just('"'), Just('\\'), Just('$'), Just('`'), Just('!'),
                    Just('\n'), Just(' '), Just('*'), Just('&'), Just(';'), Just('é'),
                    Just('\t'), Just('{'), Just('#'), Just('~'),
                    any::<char>().prop_filter("no NUL", |c| *c != '\0'),
                ],
                0..40,
            ).prop_map(|v| v.into_iter().collect::<String>())
        ) {
            let dir = tempfile::tempdir().unwrap();
            prop_assert_eq!(received(&command, dir.path()), command.as_bytes());
        }
    }
}
