//! `jkz-session`: `/jkz:save` and `/jkz:load` (see `jkz::session`).
//!
//! Exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success, including "nothing to load" (none saved, or none for the `--session` named) |
//! | 1 | failure: I/O, no state directory to save into, a repository whose layout cannot be read |
//! | 2 | usage: bad arguments, an invalid session id, save input without known sections |

use std::io::{self, BufWriter};
use std::process::ExitCode;

use clap::Parser;
use jkz::session::{run, SessionCli};

fn main() -> ExitCode {
    let cli = SessionCli::parse();
    let mut out = BufWriter::new(io::stdout().lock());
    jkz::exit::exit("jkz-session", run(&cli, io::stdin().lock(), &mut out))
}
