//! The retention table: how long each kind of file in `state/` is kept. Both
//! `jkz-pre-compact` (which prunes the snapshots after writing one) and
//! `jkz gc` (which applies the whole table) read it from here.
//!
//! | what | kept while |
//! |---|---|
//! | `pre-compact-*.json` snapshots | younger than [`PRE_COMPACT_MAX_AGE`], and always the newest [`PRE_COMPACT_KEEP_NEWEST`] |
//! | `context-offload/*` | used or referenced within [`OFFLOAD_MAX_IDLE`] |
//! | `session-snapshots/<id>.json` | written within [`SESSION_MAX_AGE`], and always the newest |
//! | `.*.tmp` left by a writer | younger than [`TEMP_MAX_AGE`] |
//!
//! Every age is the file's modification time, the snapshots' too. A
//! snapshot's name also carries the moment it was taken, but the
//! modification time is what every other row of the table uses, so one rule
//! serves all of them: `touch` keeps any file longer, a snapshot like an
//! offloaded section, and a snapshot whose name jkz did not write (copied
//! in, renamed) still ages out instead of staying forever. A snapshot is
//! written once and never changed, so its modification time is the moment
//! it was taken unless someone touched or copied it, and then keeping it
//! longer is the safe side.

use std::time::{Duration, SystemTime};

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// Pre-compact snapshots younger than this are kept.
pub const PRE_COMPACT_MAX_AGE: Duration = Duration::from_secs(7 * DAY.as_secs());
/// The newest pre-compact snapshots kept whatever their age.
pub const PRE_COMPACT_KEEP_NEWEST: usize = 20;
/// Offloaded content used or referenced within this is kept.
pub const OFFLOAD_MAX_IDLE: Duration = Duration::from_secs(7 * DAY.as_secs());
/// Session snapshots written within this are kept.
pub const SESSION_MAX_AGE: Duration = Duration::from_secs(30 * DAY.as_secs());
/// Temp files younger than this may belong to a writer still at work.
pub const TEMP_MAX_AGE: Duration = Duration::from_secs(10 * 60);

/// Whether `t` is more than `age` before `now` (a time in the future is not).
pub fn older_than(now: SystemTime, t: SystemTime, age: Duration) -> bool {
    now.duration_since(t).is_ok_and(|d| d > age)
}

/// The pre-compact snapshots retention removes at `now`, of `snaps` given as
/// (item, file name, modification time): newest first (by time, then name),
/// the first [`PRE_COMPACT_KEEP_NEWEST`] kept whatever their age, of the
/// rest those older than [`PRE_COMPACT_MAX_AGE`].
pub fn expired_pre_compact<T>(mut snaps: Vec<(T, String, SystemTime)>, now: SystemTime) -> Vec<T> {
    snaps.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.cmp(&a.1)));
    snaps
        .into_iter()
        .skip(PRE_COMPACT_KEEP_NEWEST)
        .filter(|(_, _, modified)| older_than(now, *modified, PRE_COMPACT_MAX_AGE))
        .map(|(item, _, _)| item)
        .collect()
}
