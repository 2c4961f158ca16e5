//! `jkz-truncate --run COMMAND`: runs a shell command and truncates what it
//! prints, keeping the command's exit status.
//!
//! The command runs under `$SHELL -c` (a POSIX shell: `sh`, `bash`, `zsh`,
//! `dash`, `ksh`, `mksh`, `ash`; any other, or none, is `/bin/sh`), in the
//! same directory, with the same environment and stdin; its stdout and
//! stderr share one pipe, as `2>&1` would make them, and that pipe is
//! jkz-truncate's input. Once the pipe closes, jkz-truncate waits for the
//! command and exits with its status: its exit code, or 128 + the signal
//! that ended it, as a shell reports it. Codex CLI's guard
//! writes such commands.

use std::io::{self, PipeReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};

/// The shell a command runs under: `SHELL` when it is an absolute path to
/// a POSIX shell, else `/bin/sh`.
pub fn shell(env: Option<&std::ffi::OsStr>) -> PathBuf {
    match env {
        Some(s) if std::path::Path::new(s).is_absolute() && posix_shell(Some(s)) => {
            PathBuf::from(s)
        }
        _ => PathBuf::from("/bin/sh"),
    }
}

/// Shells whose quoting is POSIX's: the ones the rewrite may be run by.
const POSIX_SHELLS: [&str; 8] = ["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox"];

/// True when `shell` (the value of `SHELL`; unset means `/bin/sh`) quotes
/// as POSIX says.
pub fn posix_shell(shell: Option<&std::ffi::OsStr>) -> bool {
    shell.is_none_or(|s| {
        std::path::Path::new(s)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| POSIX_SHELLS.contains(&n))
    })
}

/// Starts `command` under [`shell`], its stdout and stderr into the pipe
/// returned.
pub fn start(command: &str) -> io::Result<(Child, PipeReader)> {
    let (reader, writer) = io::pipe()?;
    let errors = writer.try_clone()?;
    let mut cmd = Command::new(shell(std::env::var_os("SHELL").as_deref()));
    cmd.arg("-c")
        .arg(command)
        .stdin(Stdio::inherit())
        .stdout(writer)
        .stderr(errors);
    let child = cmd.spawn()?;
    // The write ends live on only in the child: its exit closes the pipe.
    drop(cmd);
    Ok((child, reader))
}

/// The exit code a shell gives for `status`: the command's code, or 128 +
/// the signal that ended it.
pub fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(signal)) => u8::try_from((128 + signal) & 0xff).unwrap_or(1),
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::io::Read;

    #[test]
    fn the_shell_is_a_posix_one() {
        assert_eq!(
            shell(Some(OsStr::new("/bin/bash"))),
            PathBuf::from("/bin/bash")
        );
        assert_eq!(
            shell(Some(OsStr::new("/usr/bin/fish"))),
            PathBuf::from("/bin/sh")
        );
        assert_eq!(shell(Some(OsStr::new("bash"))), PathBuf::from("/bin/sh"));
        assert_eq!(shell(None), PathBuf::from("/bin/sh"));
    }

    #[test]
    fn output_of_both_streams_and_the_status_come_back() {
        let (mut child, mut reader) = start("echo out; echo err >&2; exit 3").unwrap();
        let mut got = String::new();
        reader.read_to_string(&mut got).unwrap();
        assert_eq!(exit_code(child.wait().unwrap()), 3);
        assert!(got.contains("out\n") && got.contains("err\n"), "{got}");
        let (mut child, mut reader) = start("kill -TERM $$").unwrap();
        reader.read_to_end(&mut Vec::new()).unwrap();
        assert_eq!(exit_code(child.wait().unwrap()), 128 + 15);
    }
}
