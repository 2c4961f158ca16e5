//! `jkz reduce`: stdin to stdout, reduced (see [`crate::reduce`]).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | the view (or the input, unchanged) was written |
//! | 1 | reading stdin or writing stdout failed |
//! | 2 | usage: a bad flag or value |
//!
//! A filter fails open: a full output that cannot be kept, or a `jkz.toml`
//! whose filters cannot be used, is one warning line on stderr and the
//! built-in rules apply; the output is never lost to it.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;

use crate::exit::{Failure, EXIT_FAILED};
use crate::jkz_toml::CONFIG_FILE;
use crate::state_dir::StateDir;

use super::user_filters::table_with;
use super::{reduce, Context, FilterTable, DEFAULT_BUDGET, FAILURE_BUDGET, MIN_BUDGET};
use crate::client::{Client, Viewer};

pub const PROGRAM: &str = "jkz reduce";

/// `jkz reduce`.
#[derive(Args, Debug)]
#[command(after_help = "\
The family (tests, builds, installs, git, listings, logs, generic) comes
from --command, else from the output's first lines. Signal lines (errors,
warnings, failing tests, panics, anchors, tracebacks, summaries, exit
statuses, commit hashes and subjects, protected blocks) are kept verbatim;
passing tests, progress, download and repeated lines collapse into one line
that says how many; a little context is kept (the lines after each signal,
a short head and tail), colour codes are dropped. Each gap says what it held
and its line numbers, e.g. [jkz: lines 13-1216: 1,204 passing tests collapsed].
The whole input is kept as STATE/context-offload/full-*.txt and the last
line names it; read a range of it with the Read tool (offset, limit).
A saving under a fifth or under 1,000 characters prints the input unchanged;
so does, without --budget, an output the client would show whole (30,000
characters, 10,000 for a failing command) whose signal lines do not fit the
budget, or that is a listing or a diff.
Rules: `jkz filters list`; a project's own in jkz.toml [[filters]].

Exit codes: 0 done, 1 reading stdin or writing stdout failed, 2 usage.")]
pub struct ReduceArgs {
    /// The command that printed the input: picks the family's rules
    /// (`cargo test`, `git log -n 200`).
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// The command's exit status: a failing command's default budget is
    /// 10,000 characters, and its view favours the tail.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub exit_code: Option<i32>,
    /// The most client characters (UTF-16 units) the view may take; at least
    /// 1,000. Default: 20,000, or 10,000 with a non-zero --exit-code.
    #[arg(long, value_name = "CHARS", value_parser = budget)]
    pub budget: Option<usize>,
    /// Do not keep the whole input under the state directory.
    #[arg(long)]
    pub no_full_output: bool,
}

fn budget(text: &str) -> Result<usize, String> {
    let n: usize = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of characters"))?;
    if n < MIN_BUDGET {
        return Err(format!(
            "{n} is under {MIN_BUDGET}: the view's own lines need that much"
        ));
    }
    Ok(n)
}

/// The project's `jkz.toml`: beside the state directory.
pub fn config_file(state: &StateDir) -> PathBuf {
    crate::slo::cmd::project_root(state).join(CONFIG_FILE)
}

/// The filter table of the project: the built-in one and its `jkz.toml`'s
/// own, or (when those cannot be used) the built-in one and a warning.
pub fn project_table(state: &StateDir, warnings: &mut dyn Write) -> FilterTable {
    match table_with(&config_file(state)) {
        Ok(table) => table,
        Err(e) => {
            crate::truncate::warn(
                warnings,
                PROGRAM,
                &format_args!(
                    "{e}; the built-in filters are used (`jkz filters test` checks them)"
                ),
            );
            FilterTable::built_in()
        }
    }
}

/// Runs `jkz reduce`.
pub fn run(args: &ReduceArgs, state: &StateDir) -> Result<u8, Failure> {
    let mut err = io::stderr();
    let table = project_table(state, &mut err);
    let failing = args.exit_code.is_some_and(|c| c != 0);
    let budget = args.budget.unwrap_or(if failing {
        FAILURE_BUDGET
    } else {
        DEFAULT_BUDGET
    });
    // A layout that cannot be read keeps nothing, said once; the view is
    // still printed.
    let keep = match (args.no_full_output, state.check()) {
        (true, _) => None,
        (false, Ok(())) => Some(state),
        (false, Err(why)) => {
            crate::truncate::warn(
                &mut err,
                PROGRAM,
                &format_args!("{why}; the full output is not kept"),
            );
            None
        }
    };
    let ctx = Context {
        command: args.command.as_deref(),
        exit_code: args.exit_code,
        budget_chars: budget,
        keep,
        // An explicit budget is a bound the caller wants kept; the
        // defaults are what the client shows, and it would show more.
        client: args
            .budget
            .is_none()
            .then(|| Viewer::shell(Client::Claude).cut(args.exit_code))
            .flatten(),
        ..Context::default()
    };
    let stdin = io::stdin();
    let mut input = stdin.lock();
    crate::truncate::grow_pipe(&input);
    let reduced = reduce(&mut input, &ctx, &table, &mut err)
        .map_err(|e| Failure::io(EXIT_FAILED, "reading stdin", e))?;
    let mut out = io::stdout().lock();
    out.write_all(&reduced.view)
        .and_then(|()| out.flush())
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(0)
}
