//! The spool: lines an append could not write in time, kept until a
//! segment takes them.
//!
//! A writer waits for a segment's lock no longer than its deadline
//! ([`super::segment::APPEND_WAIT`]): something else may hold the lock for
//! as long as it likes (a backup, `flock -x` in a script), and a hook must
//! answer. Its line then goes to `state/events/pending/<YYYYMMDD>-….jsonl`,
//! one file per line, named by its day and the time it was spooled (so the
//! names sort as the lines were written), written whole under a temp name
//! and renamed into place. [`drain`] appends spooled lines to their day's
//! segments; every writer calls it before its own append, and every reader
//! of the log (the index's catch-up: `jkz events`, `jkz metrics`, `jkz
//! events rebuild`, the hooks that read the index) before it reads. It
//! never waits: a segment still held keeps its lines spooled for the next.
//! Meanwhile the index reads them where they are
//! ([`super::index::Index::catch_up`]), so a reader sees a spooled event
//! at once, and never takes the change it records for one made behind
//! jkz's back ([`super::reconcile`]).
//!
//! Exactly once: a drainer holds an exclusive `flock` on the spool file
//! while it appends its line and removes it, and skips a file another
//! drainer holds or already removed. Only a crash between the append and
//! the removal repeats a line, and the index keeps an event once by id.

use std::fs::{self, DirBuilder};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use chrono::NaiveDate;

use super::event::MAX_LINE;
use crate::atomic::AtomicFile;

/// `state/events/pending/`: the spool.
pub const PENDING_DIR: &str = "pending";

/// The most spooled lines one drain appends: a spool grown large while a
/// lock was held empties over a few calls, each of them quick.
const MAX_PER_DRAIN: usize = 256;

/// Keeps `line`, of `day`, in the spool; returns its path.
pub fn spool(dir: &Path, line: &[u8], day: NaiveDate) -> io::Result<PathBuf> {
    let pending = dir.join(PENDING_DIR);
    if !crate::state_dir::is_real_dir(&pending)? {
        match DirBuilder::new().mode(0o700).create(&pending) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if !crate::state_dir::is_real_dir(&pending)? {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!(
        "{}-{nanos:020x}-{:08x}-{:04x}.jsonl",
        day.format("%Y%m%d"),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed) & 0xffff
    );
    let path = pending.join(name);
    let mut file = AtomicFile::create(&path)?;
    file.write_all(line)?;
    // As durable as an append to a segment (which is not synced either).
    file.commit_unsynced()?;
    Ok(path)
}

/// The day of a spooled line, from its file's name; `None` for anything
/// that is not a spool file (temp files start with a dot).
fn day_of(name: &str) -> Option<NaiveDate> {
    let rest = name.strip_suffix(".jsonl")?;
    let day = rest
        .get(..8)
        .filter(|_| rest.as_bytes().get(8) == Some(&b'-'))?;
    NaiveDate::parse_from_str(day, "%Y%m%d").ok()
}

/// The spooled lines' files in `dir` (`state/events/`), oldest first,
/// with their days; none when there is no spool (or a link in its place,
/// said on stderr and never followed).
pub fn list(dir: &Path) -> Vec<(NaiveDate, PathBuf)> {
    let pending = dir.join(PENDING_DIR);
    let Ok(entries) = fs::read_dir(&pending) else {
        return Vec::new(); // none spooled: the usual case, one failed open
    };
    if crate::state_dir::check_listed_dir(&pending).is_err() {
        return Vec::new();
    }
    let mut spooled: Vec<(String, NaiveDate, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let day = day_of(&name)?;
            Some((name, day, e.path()))
        })
        .collect();
    spooled.sort();
    spooled
        .into_iter()
        .map(|(_, day, path)| (day, path))
        .collect()
}

/// Appends spooled lines to their days' segments, oldest first, without
/// waiting for any lock: stops at the first segment still held. Never fails
/// the caller: a problem is one warning on stderr.
pub fn drain(dir: &Path) {
    for (day, path) in list(dir).into_iter().take(MAX_PER_DRAIN) {
        match drain_one(dir, &path, day) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                super::warn_once(
                    "drain",
                    format!("a spooled event in {} stays there: {e}", path.display()),
                );
                break;
            }
        }
    }
}

/// Appends one spooled line and removes its file; false when its day's
/// segment is held (the line stays). A file another drainer has, or had,
/// is passed over.
fn drain_one(dir: &Path, path: &Path, day: NaiveDate) -> io::Result<bool> {
    let file = match crate::state_dir::open_state_file(path) {
        Ok(file) => file,
        // Drained meanwhile, or refused (said on stderr): passed over.
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::InvalidInput
            ) =>
        {
            return Ok(true)
        }
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Ok(true),
        Err(fs::TryLockError::Error(e)) => return Err(e),
    }
    if file.metadata()?.nlink() == 0 {
        return Ok(true);
    }
    let mut line = Vec::new();
    (&file).take(MAX_LINE as u64 + 1).read_to_end(&mut line)?;
    if !line.is_empty() && !line.ends_with(b"\n") {
        line.push(b'\n');
    }
    if !line.is_empty() && !super::segment::write_line(dir, &line, day, Instant::now())? {
        return Ok(false);
    }
    fs::remove_file(path)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spool_names_carry_the_day_and_sort_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let day = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let a = spool(tmp.path(), b"a\n", day).unwrap();
        let b = spool(tmp.path(), b"b\n", day).unwrap();
        let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name(&a) < name(&b), "{a:?} {b:?}");
        assert_eq!(day_of(&name(&a)), Some(day));
        for not in [".20260309-x.jsonl.abc.tmp", "20260309.jsonl", "notes.txt"] {
            assert_eq!(day_of(not), None, "{not}");
        }
        drain(tmp.path());
        assert_eq!(
            std::fs::read(tmp.path().join("20260309-0000.jsonl")).unwrap(),
            b"a\nb\n"
        );
        assert!(!a.exists() && !b.exists());
    }

    #[test]
    fn a_spool_file_another_drainer_holds_is_passed_over() {
        let tmp = tempfile::tempdir().unwrap();
        let day = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let a = spool(tmp.path(), b"a\n", day).unwrap();
        let held = std::fs::File::open(&a).unwrap();
        held.lock().unwrap();
        drain(tmp.path());
        assert!(a.exists());
        assert!(!tmp.path().join("20260309-0000.jsonl").exists());
        drop(held);
        drain(tmp.path());
        assert!(!a.exists());
        assert_eq!(
            std::fs::read(tmp.path().join("20260309-0000.jsonl")).unwrap(),
            b"a\n"
        );
    }
}
