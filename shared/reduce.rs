//! `jkz reduce`: a command's output reduced by what it is, with nothing
//! that matters lost.
//!
//! The output's family (test run, build, install, git, listing, log, or
//! generic) comes from the command ([`command`]) or, when the command says
//! nothing, from its first lines ([`sniff`]). Each line is classified by the
//! family's rules ([`table`]: data, in `reduce/filters.toml` and a project's
//! `jkz.toml`) as a **signal** (never dropped: errors, warnings, failing
//! tests, panics and assertions, `file:line` anchors, traceback frames,
//! summaries, exit statuses, identifiers such as commit hashes, and every
//! line of a protected block of [`crate::blocks`]), a line that
//! **collapses** (passing tests, progress and download lines: counted, not
//! shown), or **context** ([`sort`]: also repeated lines and runs of similar
//! lines collapse).
//!
//! # The view
//!
//! Lines in their original order, without colour codes: every signal
//! verbatim (a warning or error repeated word for word is shown once and
//! counted), a little context (the lines after a signal first, then head
//! and tail, up to the family's `context` characters: the budget is a
//! ceiling for signals, not room to fill), and one line for each gap
//! saying what it held and its line numbers:
//!
//! ```text
//! [jkz: lines 13-1216: 1,204 passing tests collapsed; 3 other lines omitted]
//! ```
//!
//! then the warnings by kind (when a kind repeats), and one line naming the
//! full output, its size, and how to read a range of it with the client's
//! Read tool. The view fits `budget_chars` (client characters, UTF-16
//! units: [`crate::client_text`]). When the signals alone do not fit (300
//! compiler errors), the first of each kind and the others from both ends
//! are shown, and a note says how many are not, and the gaps say where
//! ([`view`]).
//!
//! # Lossless, or left alone
//!
//! The whole input is kept as `state/context-offload/full-….txt` (the
//! truncation engine's store, [`crate::truncate::full_output`]). When
//! reducing would save under a fifth of the input's characters or under
//! 1,000 of them, the input comes back unchanged and nothing is kept; so it
//! does when the client would show it whole ([`Context::client`]) and
//! its signals do not fit the budget, or its family's output is what was
//! asked for.
//!
//! # Streaming
//!
//! Memory is bounded by the budget, not the input ([`stream`]): a 1 GB log
//! is read once, in fixed chunks.

mod ansi;
mod built_in;
pub mod classifier;
pub mod cmd;
pub mod command;
pub mod filters_cmd;
mod item;
mod matcher;
mod needles;
pub(crate) mod notes;
pub use notes::exit_status as exit_status_note;
mod retain;
pub mod shape;
pub mod sniff;
mod sort;
pub mod stream;
pub mod table;
pub mod user_filters;
mod view;

#[cfg(test)]
mod family_tests;
#[cfg(test)]
mod prop_tests;

use std::io::{self, Read, Write};
use std::path::PathBuf;

use crate::state_dir::StateDir;

pub use self::table::FilterTable;

/// The smallest budget: the view's own lines (one gap line, the overflow
/// note, where the full output is) always fit in it. A smaller one is
/// raised to it.
pub const MIN_BUDGET: usize = 1_000;

/// The budget when none is given: what the tool-output guard lets through
/// inline (its cap), well under the client's own 30,000-character limit.
pub const DEFAULT_BUDGET: usize = 20_000;

/// The budget for a failing command: Claude Code shows the model a failing
/// one's first and last 5,000 characters (10,040 in all with its lines),
/// and a view of 10,000 whole (`crate::client::Viewer::cut`).
pub const FAILURE_BUDGET: usize = 10_000;

/// How a client shows a tool's output: whole up to `whole` characters;
/// past it, of the output's first `read` characters, the first `head` and
/// the last `tail`. Lines the client would show are the lines jkz's view
/// keeps first when the signals do not fit, so it never shows fewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientCut {
    pub whole: usize,
    pub read: usize,
    pub head: usize,
    pub tail: usize,
}

impl ClientCut {
    /// A client that shows the first `head` characters of what it does not
    /// show whole (a persisted output's preview).
    pub fn head(whole: usize, head: usize) -> ClientCut {
        ClientCut {
            whole,
            read: usize::MAX,
            head,
            tail: 0,
        }
    }
}

/// What a call knows about the output it reduces.
#[derive(Clone, Copy, Debug, Default)]
pub struct Context<'a> {
    /// The command that printed it, if known.
    pub command: Option<&'a str>,
    pub exit_code: Option<i32>,
    /// The most client characters the view may take (at least
    /// [`MIN_BUDGET`]).
    pub budget_chars: usize,
    /// Where the full output is kept: this state directory's
    /// `context-offload/` (`None`: not kept).
    pub keep: Option<&'a StateDir>,
    /// The input is already kept whole in this file (a wrapped command's
    /// output, written there as it ran): the view names it, and nothing is
    /// copied.
    pub kept_at: Option<&'a std::path::Path>,
    /// How the client itself shows this output (its
    /// [`Viewer::cut`](crate::client::Viewer::cut); `None`: whole, whatever
    /// its size). An output
    /// it shows whole is left as it is when its signal lines do not fit
    /// the budget (the client would show them all) or when its family's
    /// output is what was asked for (a listing, a diff); of a longer one,
    /// the signal lines the client would show come first: jkz never shows
    /// fewer of its signal lines than the client alone.
    pub client: Option<ClientCut>,
    /// How the agent reads a range of the kept file (the view's last line
    /// says so).
    pub reader: Reader,
}

/// How an agent reads a range of a file in its client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reader {
    /// Claude Code's Read tool: `offset` the first line (1-based), `limit`
    /// the count.
    #[default]
    ClaudeRead,
    /// Gemini CLI's `read_file`: `offset` 0-based.
    GeminiReadFile,
    /// A shell command (Codex CLI reads files with its shell tool).
    Shell,
}

/// The view and what it cost.
#[derive(Debug)]
pub struct Reduced {
    pub view: Vec<u8>,
    /// The family whose rules applied.
    pub family: String,
    pub stats: Stats,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    pub input_bytes: u64,
    pub input_lines: u64,
    /// Client characters of the input (exact when it was held whole, else
    /// counted from its bytes).
    pub input_chars: u64,
    pub view_chars: u64,
    /// False when the view is the input, unchanged; `unchanged` says why.
    pub reduced: bool,
    pub unchanged: Option<String>,
    /// Distinct signal lines, and how many the view shows.
    pub signal_lines: u64,
    pub signal_lines_shown: u64,
    /// Whether the signals did not all fit the budget.
    pub overflow: bool,
    /// Lines collapsed, by label.
    pub collapsed: Vec<(String, u64)>,
    pub full_output: Option<PathBuf>,
}

/// Reduces `input` (read to its end) as `ctx` says, with the rules of
/// `table`. Warnings (a full output that cannot be kept, a bad project
/// rule) go to `warnings`, one line each; they never cost the view.
pub fn reduce(
    input: &mut dyn Read,
    ctx: &Context,
    table: &FilterTable,
    warnings: &mut dyn Write,
) -> io::Result<Reduced> {
    stream::reduce_with(input, ctx, table, warnings, stream::Tuning::default())
}
