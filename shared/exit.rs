//! What every binary's `main` shares: turning a result into an exit code,
//! treating a closed downstream pipe as a normal end, and one-line errors.

use std::error::Error;
use std::io;
use std::process::ExitCode;

/// The exit code of success.
pub const EXIT_OK: u8 = 0;

/// The exit code of a failure that has no code of its own (an I/O error, a
/// check that failed): what went wrong is one line on stderr. Each
/// command's table in docs/exit-codes.md says what counts.
pub const EXIT_FAILED: u8 = 1;

/// The exit code of a usage error (a bad flag or value), clap's own: every
/// binary's help lists it.
pub const EXIT_USAGE: u8 = 2;

/// The exit code of every `jkz` subcommand that needs a state directory
/// and finds none ([`crate::state_dir::StateDir::missing`] says where it
/// looked, why there, and how to make one). Its own code, so a script can
/// tell "this repository has not opted in" from a command's own failure
/// (`jkz slo check`'s 1 is "an objective was violated") and from a usage
/// error (`jkz slo check`'s 2 is also "a bad `jkz.toml`").
pub const EXIT_NO_STATE_DIR: u8 = 4;

/// An error a binary reports: a one-line message and its exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    pub source: Option<io::Error>,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            source: None,
        }
    }

    /// An I/O failure: `context` says what jkz was doing and with what.
    pub fn io(code: u8, context: impl std::fmt::Display, err: io::Error) -> Failure {
        Failure {
            code,
            message: format!("{context}: {err}"),
            source: Some(err),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for Failure {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn Error + 'static))
    }
}

/// True when the error, or anything in its source chain, is a broken pipe.
pub fn is_broken_pipe(err: &(dyn Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        next = e.source();
    }
    false
}

/// Maps a binary's result to its exit code: `Ok(code)` as is, a broken pipe
/// as success (the reader has all it wanted), any other failure as its code
/// after one line on stderr: `program: message`, with every control
/// character a quoted value brought into the message shown, not obeyed
/// ([`crate::terminal_text::inert`]).
pub fn exit(program: &str, result: Result<u8, Failure>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(f) if is_broken_pipe(&f) => ExitCode::SUCCESS,
        Err(f) => {
            let line = f.message.replace('\n', " ");
            eprintln!("{program}: {}", crate::terminal_text::inert(&line));
            ExitCode::from(f.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_pipe_is_found_in_the_chain() {
        let f = Failure::io(
            1,
            "writing stdout",
            io::Error::from(io::ErrorKind::BrokenPipe),
        );
        assert!(is_broken_pipe(&f));
        let f = Failure::io(1, "reading", io::Error::from(io::ErrorKind::NotFound));
        assert!(!is_broken_pipe(&f));
    }
}
