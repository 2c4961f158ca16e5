//! `jkz events`: the log, for people (a table) and for scripts (JSON
//! lines), filtered by issue, type and time; `--follow` streams new events;
//! `jkz events rebuild` rebuilds the index from the log.
//!
//! Exit codes of `jkz events`:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done (also when stdout was closed: `jkz events | head`) |
//! | 1 | the log or its index could not be read |
//! | 2 | usage: a bad flag or value |
//! | 4 | no state directory |

use std::io::{self, Write};
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};

use super::describe::describe;
use super::index::{Filter, Index, Row};
use crate::exit::{Failure, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::pipeline::IssueNumber;
use crate::state_dir::StateDir;
use crate::terminal_text::inert;

/// How often `--follow` looks for new events.
const FOLLOW_EVERY: Duration = Duration::from_millis(250);

/// `jkz events`.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EventsArgs {
    #[command(subcommand)]
    pub command: Option<EventsCommand>,
    /// Only the events of issue N.
    #[arg(long, value_name = "N", value_parser = IssueNumber::parse)]
    pub issue: Option<IssueNumber>,
    /// Only events of this type (e.g. phase.changed, agent.finished).
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: Option<String>,
    /// Only events since WHEN: a span back from now (30m, 2h, 7d), a date
    /// (2026-11-27: its midnight, UTC) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only events before WHEN: the same forms as --since.
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// One JSON object per line (the log's own lines) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// After the events so far, keep printing new ones as they come (until
    /// interrupted).
    #[arg(long)]
    pub follow: bool,
}

#[derive(Subcommand, Debug)]
pub enum EventsCommand {
    /// Rebuild the index (state/events/index.db) from the log.
    Rebuild,
}

/// Runs `jkz events`.
pub fn run(args: &EventsArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let dir_of = || state.join(super::EVENTS_DIR);
    let failed = |e: io::Error| {
        Failure::io(
            EXIT_FAILED,
            format!("reading the event log in {}", dir_of().display()),
            e,
        )
    };
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    if let Some(EventsCommand::Rebuild) = args.command {
        let Some(dir) = state.ensure_subdir(super::EVENTS_DIR).map_err(failed)? else {
            return Err(no_state_dir(state));
        };
        let index = Index::rebuild(&dir).map_err(failed)?;
        let count = index.last_seq().map_err(failed)?;
        writeln!(
            out,
            "rebuilt {} from the log: {count} events",
            dir.join(super::index::INDEX_FILE).display()
        )
        .and_then(|()| out.flush())
        .map_err(writing)?;
        return Ok(EXIT_OK);
    }
    // Parsed here, not by clap, so a bad time is one line like every
    // other refusal of this command.
    let now = Utc::now();
    let point = |flag: &str, text: &Option<String>| {
        text.as_deref()
            .map(|t| crate::time_span::parse_point(t, now))
            .transpose()
            .map_err(|e| Failure::new(EXIT_USAGE, format!("{flag}: {e}")))
    };
    let (since, until) = (
        point("--since", &args.since)?,
        point("--until", &args.until)?,
    );
    crate::time_span::check_window(since, until).map_err(|e| Failure::new(EXIT_USAGE, e))?;
    // An id sorts by its time: the events before `until` have smaller ones.
    let until_id = until.map(super::id::lower_bound);
    let only = args.issue.as_ref().map(IssueNumber::as_str);
    let Some(mut index) = super::up_to_date_for(state, only).map_err(failed)? else {
        return Err(no_state_dir(state));
    };
    let mut filter = Filter {
        issue: args.issue.as_ref().map(|i| i.as_str().to_string()),
        kind: args.kind.clone(),
        since_id: since.map(super::id::lower_bound),
        after_seq: None,
    };
    if !args.json {
        writeln!(
            out,
            "{:<23}  {:<6}  {:<20}  {:<12}  DETAILS",
            "TIME (UTC)", "ISSUE", "TYPE", "SESSION"
        )
        .map_err(writing)?;
    }
    let mut last_seq = index.last_seq().map_err(failed)?;
    let mut print = |index: &Index, filter: &Filter| -> Result<(), Failure> {
        let mut result = Ok(());
        index
            .query(filter, &mut |row| {
                if until_id.as_ref().is_some_and(|until| row.id >= *until) {
                    return true;
                }
                result = write_row(out, &row, args.json);
                result.is_ok()
            })
            .map_err(failed)?;
        result.and_then(|()| out.flush()).map_err(writing)
    };
    print(&index, &filter)?;
    if !args.follow {
        return Ok(EXIT_OK);
    }
    loop {
        std::thread::sleep(FOLLOW_EVERY);
        index.catch_up().map_err(failed)?;
        super::reconcile::reconcile(state, &mut index, only).map_err(failed)?;
        let now = index.last_seq().map_err(failed)?;
        if now > last_seq {
            filter.after_seq = Some(last_seq);
            print(&index, &filter)?;
            last_seq = now;
        }
    }
}

fn write_row(out: &mut dyn Write, row: &Row, json: bool) -> io::Result<()> {
    if json {
        return writeln!(out, "{}", row.line);
    }
    let time = DateTime::parse_from_rfc3339(&row.timestamp)
        .map(|t| {
            t.with_timezone(&Utc)
                .format("%Y-%m-%d %H:%M:%S%.3f")
                .to_string()
        })
        .unwrap_or_else(|_| crate::pipeline::shorten(&inert(&row.timestamp), 23));
    let session = row
        .session
        .as_deref()
        .map(|s| crate::pipeline::shorten(&inert(s), 11))
        .unwrap_or_else(|| "-".into());
    // Every value in the details came from the log: shown, never obeyed.
    let details = row.event().map(|e| describe(&e)).unwrap_or_default();
    let details = inert(&details);
    let cell = |s: &str, n: usize| {
        crate::pipeline::shorten(&inert(&s.replace(char::is_whitespace, "_")), n)
    };
    writeln!(
        out,
        "{:<23}  {:<6}  {:<20}  {:<12}  {details}",
        time,
        cell(row.issue.as_deref().unwrap_or("-"), 6),
        cell(&row.kind, 20),
        cell(&session, 12),
    )
}

fn no_state_dir(state: &StateDir) -> Failure {
    Failure::new(crate::exit::EXIT_NO_STATE_DIR, state.missing())
}
