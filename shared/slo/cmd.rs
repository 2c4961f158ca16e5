//! `jkz slo check`: each objective of `jkz.toml`, its measured value, and
//! whether it is met.
//!
//! Exit codes of `jkz slo check`:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | every objective met (or without data) |
//! | 1 | at least one objective violated |
//! | 2 | `jkz.toml` unreadable or bad (the key and why are named), the event log unreadable, or a usage error |
//! | 4 | no state directory: nothing to measure |

use std::io::Write;
use std::path::Path;

use chrono::Utc;
use clap::{Args, Subcommand};

use super::config;
use super::{judge, Standing};
use crate::exit::{Failure, EXIT_OK, EXIT_USAGE};
use crate::state_dir::StateDir;
use crate::terminal_text::inert;

/// `jkz slo check`'s exit code when an objective is violated
/// (docs/exit-codes.md).
pub const EXIT_VIOLATED: u8 = 1;

/// `jkz slo check`'s exit code when it cannot judge: a bad or unreadable
/// `jkz.toml`, metrics or output it cannot read or
/// write. The code of a usage error ([`EXIT_USAGE`]).
pub const EXIT_CANNOT_JUDGE: u8 = EXIT_USAGE;

/// `jkz slo`.
#[derive(Args, Debug)]
pub struct SloArgs {
    #[command(subcommand)]
    pub command: SloCommand,
}

#[derive(Subcommand, Debug)]
pub enum SloCommand {
    /// Check the objectives of jkz.toml (at the project root: the state
    /// directory's parent) against the metrics of the event log.
    ///
    /// Without jkz.toml (or its [slo] table): completion rate at least 0.8
    /// and fix iterations p90 at most 3 over 7 days. Exit codes: 0 every
    /// objective met (or without data), 1 one violated, 2 jkz.toml bad or
    /// unreadable (the key and why are named), 4 no state directory.
    Check(CheckArgs),
}

/// `jkz slo check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Print one JSON object instead of a table: met (every objective met
    /// or without data), window, since, until, from (jkz.toml, or null for
    /// the defaults) and objectives, each with key, target, measured,
    /// standing (met, violated, no-data), target_value and measured_value.
    #[arg(long)]
    pub json: bool,
}

/// What `jkz slo check --json` prints.
#[derive(Debug, serde::Serialize)]
struct CheckReport<'a> {
    met: bool,
    window: &'a str,
    since: &'a str,
    until: &'a str,
    from: Option<&'a Path>,
    objectives: &'a [super::Judged],
}

/// The project root: the directory holding the state directory.
pub fn project_root(state: &StateDir) -> &Path {
    state
        .path()
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Runs `jkz slo check`.
pub fn run(args: &SloArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let SloCommand::Check(check) = &args.command;
    let objectives = config::load(project_root(state))
        .map_err(|e| Failure::new(EXIT_CANNOT_JUDGE, e.to_string()))?;
    let failed = |e: std::io::Error| {
        Failure::io(
            EXIT_CANNOT_JUDGE,
            format!("reading the metrics of {}", state.path().display()),
            e,
        )
    };
    let Some(db) = crate::metrics::up_to_date(state).map_err(failed)? else {
        return Err(Failure::new(
            crate::exit::EXIT_NO_STATE_DIR,
            state.missing(),
        ));
    };
    let now = Utc::now();
    let window = chrono::Duration::from_std(objectives.window).unwrap_or(chrono::Duration::MAX);
    let since = now
        .checked_sub_signed(window)
        .unwrap_or(chrono::DateTime::<Utc>::MIN_UTC);
    let report = db.report(since, now, None).map_err(failed)?;
    let judged = judge(&objectives, &report);
    let violated = judged.iter().any(|j| j.standing == Standing::Violated);
    let code = match violated {
        true => EXIT_VIOLATED,
        false => EXIT_OK,
    };
    if check.json {
        let shown = CheckReport {
            met: !violated,
            window: &objectives.window_text,
            since: &report.since,
            until: &report.until,
            from: objectives.file.as_deref(),
            objectives: &judged,
        };
        crate::json_output::write(out, &shown)
            .map_err(|e| Failure::io(EXIT_CANNOT_JUDGE, "writing stdout", e))?;
        return Ok(code);
    }
    let mut text = format!(
        "{:<36}  {:>10}  {:>10}  STATUS\n",
        "OBJECTIVE", "TARGET", "MEASURED"
    );
    for j in &judged {
        text.push_str(&format!(
            "{:<36}  {:>10}  {:>10}  {}\n",
            crate::pipeline::shorten(&inert(&j.key), 36),
            j.target,
            j.measured,
            j.standing.name()
        ));
    }
    let origin = match &objectives.file {
        Some(file) => file.display().to_string(),
        None => format!(
            "no {} in {}: the defaults",
            config::CONFIG_FILE,
            project_root(state).display()
        ),
    };
    text.push_str(&format!(
        "window {} ({} → {}); objectives from {origin}\n",
        objectives.window_text, report.since, report.until
    ));
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::io(EXIT_CANNOT_JUDGE, "writing stdout", e))?;
    Ok(code)
}
