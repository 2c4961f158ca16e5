//! Pipeline metrics: completion rate, fix and plan iterations, phase
//! durations, agent runs, compactions, tokens; per issue and overall, over
//! a window of time. Derived from the event log ([`crate::events`]) into
//! `state/metrics.db` ([`db`]), which is brought up to date (or derived
//! anew) before every read, so deleting it loses nothing. Definitions:
//! [`report`].

pub mod cmd;
pub mod db;
pub mod derive;
pub mod prometheus;
pub mod report;

use std::io;

pub use db::MetricsDb;
pub use report::Report;

use crate::state_dir::layout::METRICS_DB;
use crate::state_dir::StateDir;

/// The window metrics cover unless told otherwise.
pub const DEFAULT_WINDOW: &str = "7d";

/// The metrics database of `state`, up to date with its event log (which is
/// brought up to date first: see [`crate::events::up_to_date`]). `None`
/// when there is no state directory.
pub fn up_to_date(state: &StateDir) -> io::Result<Option<MetricsDb>> {
    let Some(index) = crate::events::up_to_date(state)? else {
        return Ok(None);
    };
    MetricsDb::open(&state.join(METRICS_DB), &index).map(Some)
}
