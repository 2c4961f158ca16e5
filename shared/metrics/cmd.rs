//! `jkz metrics`: the pipeline metrics over a window, as a table, as JSON,
//! or in Prometheus' text format.
//!
//! Exit codes of `jkz metrics`:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | the log, its index or `metrics.db` could not be read |
//! | 2 | usage: a bad flag or value |
//! | 4 | no state directory |

use std::io::{self, Write};
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{Args, ValueEnum};

use super::report::{Report, Spread};
use crate::exit::{Failure, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::pipeline::IssueNumber;
use crate::state_dir::StateDir;
use crate::terminal_text::inert;
use crate::time_span::format_span;

/// `jkz metrics`.
#[derive(Args, Debug)]
pub struct MetricsArgs {
    /// Only issue N: its phases, iterations, agent runs and compactions.
    #[arg(long, value_name = "N", value_parser = IssueNumber::parse)]
    pub issue: Option<IssueNumber>,
    /// The window's start: a span back from now (24h, 7d, 4w), a date
    /// (2026-11-27: its midnight, UTC) or an RFC 3339 time.
    #[arg(long, value_name = "WHEN", default_value = super::DEFAULT_WINDOW, value_parser = crate::time_span::point_arg)]
    pub since: DateTime<Utc>,
    /// The window's end (default: now): the same forms as --since.
    #[arg(long, value_name = "WHEN", value_parser = crate::time_span::point_arg)]
    pub until: Option<DateTime<Utc>>,
    /// Print JSON: the same as --format json.
    #[arg(long)]
    pub json: bool,
    /// The output format [default: table].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
}

/// How `jkz metrics` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An aligned table, for people.
    Table,
    /// One JSON object (the report), as --json.
    Json,
    /// Prometheus' text exposition format (`jkz_…` metrics).
    Prometheus,
}

/// Runs `jkz metrics`.
pub fn run(args: &MetricsArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let format = match (args.json, args.format) {
        (true, Some(other)) if other != Format::Json => {
            return Err(Failure::new(
                EXIT_USAGE,
                format!(
                    "--json is --format json: it cannot be --format {} as well",
                    other
                        .to_possible_value()
                        .map_or("?".into(), |v| v.get_name().to_string())
                ),
            ))
        }
        (true, _) => Format::Json,
        (false, format) => format.unwrap_or(Format::Table),
    };
    let since = args.since;
    let until = args.until.unwrap_or_else(crate::clock::log_now);
    crate::time_span::check_window(Some(since), args.until)
        .map_err(|e| Failure::new(EXIT_USAGE, e))?;
    let failed = |e: io::Error| {
        Failure::io(
            EXIT_FAILED,
            format!("reading the metrics of {}", state.path().display()),
            e,
        )
    };
    let Some(db) = super::up_to_date(state).map_err(failed)? else {
        return Err(Failure::new(
            crate::exit::EXIT_NO_STATE_DIR,
            state.missing(),
        ));
    };
    let issue = args.issue.as_ref().map(IssueNumber::as_str);
    let report = db.report(since, until, issue).map_err(failed)?;
    let text = {
        match format {
            Format::Json => {
                let mut text = serde_json::to_string_pretty(&report).expect("a report serializes");
                text.push('\n');
                text
            }
            Format::Prometheus => {
                let ledger =
                    crate::tool_output::stats::by_family_and_via(state.path()).map_err(|e| {
                        Failure::io(
                            EXIT_FAILED,
                            format!(
                                "reading the tool-output ledger in {}",
                                state.path().display()
                            ),
                            e,
                        )
                    })?;
                super::prometheus::exposition(&report, &ledger)
            }
            Format::Table => table(&report, issue),
        }
    };
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
}

fn secs(v: Option<f64>) -> String {
    v.map(|s| format_span(Duration::from_secs_f64(s.max(0.0))))
        .unwrap_or_else(|| "-".into())
}

fn count(v: Option<f64>) -> String {
    v.map(|n| format!("{n}")).unwrap_or_else(|| "-".into())
}

fn spread(s: &Spread) -> String {
    match s.count {
        0 => "-".into(),
        n => format!(
            "p50 {}, p90 {} ({n} issue{})",
            count(s.p50),
            count(s.p90),
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// The report as a table; every phase, role and outcome the pipelines
/// wrote is shown through [`inert`].
fn table(r: &Report, issue: Option<&str>) -> String {
    let mut t = String::new();
    let mut line = |s: String| {
        t.push_str(&s);
        t.push('\n');
    };
    line(format!("window           {} → {} (UTC)", r.since, r.until));
    if let Some(one) = issue {
        match r.issues.iter().find(|i| i.issue == one) {
            None => line(format!("issue {one}: no events in the window")),
            Some(i) => {
                line(format!("issue            {one}"));
                line(format!(
                    "phase            {}",
                    inert(i.phase.as_deref().unwrap_or("-"))
                ));
                line(format!(
                    "outcome          {}",
                    match (&i.outcome, &i.outcome_at) {
                        (Some(o), Some(at)) => inert(&format!("{o} at {at}")).into_owned(),
                        _ => "-".into(),
                    }
                ));
                let n = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
                line(format!(
                    "fix iterations   {} (review {}, qa {})",
                    n(i.fix_iterations),
                    n(i.review_fix_count),
                    n(i.qa_fix_count)
                ));
                line(format!("plan iterations  {}", n(i.plan_iterations)));
                line(format!("agent runs       {}", i.agent_runs));
                line(format!("compactions      {}", i.compactions));
                if !i.phase_seconds.is_empty() {
                    line(String::new());
                    line(format!("{:<20}  TIME IN PHASE", "PHASE"));
                    for (phase, s) in &i.phase_seconds {
                        line(format!(
                            "{:<20}  {}",
                            crate::pipeline::shorten(&inert(phase), 20),
                            secs(Some(*s))
                        ));
                    }
                }
            }
        }
    } else {
        line(format!(
            "completion rate  {}",
            match r.completion_rate {
                Some(rate) => format!(
                    "{:.1}% ({} completed, {} failed)",
                    rate * 100.0,
                    r.completed,
                    r.failed
                ),
                None => "- (no issue completed or failed in the window)".into(),
            }
        ));
        line(format!("fix iterations   {}", spread(&r.fix_iterations)));
        line(format!("plan iterations  {}", spread(&r.plan_iterations)));
        line(format!("compactions      {}", r.compactions));
        line(format!("active issues    {}", r.issues.len()));
    }
    if !r.phases.is_empty() {
        line(String::new());
        line(format!(
            "{:<20}  {:>6}  {:>9}  {:>9}",
            "PHASE", "STAYS", "P50", "P90"
        ));
        for p in &r.phases {
            line(format!(
                "{:<20}  {:>6}  {:>9}  {:>9}",
                crate::pipeline::shorten(&inert(&p.phase), 20),
                p.seconds.count,
                secs(p.seconds.p50),
                secs(p.seconds.p90)
            ));
        }
    }
    if !r.roles.is_empty() {
        line(String::new());
        line(format!(
            "{:<20}  {:>6}  {:>6}  {:>9}  {:>9}  {:>10}  {:>10}",
            "ROLE", "RUNS", "FAILED", "P50", "P90", "TOKENS IN", "TOKENS OUT"
        ));
        for role in &r.roles {
            let tokens = |v: Option<i64>| v.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
            line(format!(
                "{:<20}  {:>6}  {:>6}  {:>9}  {:>9}  {:>10}  {:>10}",
                crate::pipeline::shorten(&inert(&role.role), 20),
                role.runs,
                role.failed,
                secs(role.seconds.p50),
                secs(role.seconds.p90),
                tokens(role.tokens_in),
                tokens(role.tokens_out)
            ));
        }
    }
    t
}
