//! Closing segments: once its day is over (and nothing was appended for
//! [`CLOSE_AFTER`]), a segment is gzip-compressed to `….jsonl.gz` and the
//! open file removed. The content is the same, line for line: closing
//! never rewrites the log, only how it is stored.
//!
//! The closer holds an exclusive `flock` on the segment while it works, and
//! a writer appends under a shared one ([`super::segment`]): a segment
//! being appended to is left for a later pass, and a writer that opened a
//! segment just as it was closed sees it gone (no link left) and opens
//! the name anew. The compressed copy is written to a temp file, synced and
//! renamed into place before the open file is removed, so a crash at any
//! point leaves the lines in one of the two (or both: readers then see each
//! event twice, and the index keeps it once). Closing runs from `jkz
//! events`, `jkz metrics`, `jkz slo` and the observer, never from
//! a hook (compressing megabytes is not a hook's business).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use chrono::NaiveDate;
use flate2::write::GzEncoder;
use flate2::Compression;

use super::segment::{self, SegmentName};
use crate::atomic::AtomicFile;

/// A segment of a past day is closed once nothing was appended to it for
/// this long (a writer that computed its day just before midnight has
/// long appended by then).
pub const CLOSE_AFTER: Duration = Duration::from_secs(10 * 60);

/// Temp files in `state/events/` older than this, and not locked by their
/// writer, were left by a killed closer: removed.
const TEMP_MAX_AGE: Duration = Duration::from_secs(10 * 60);

/// Closes every segment of a day before `today` that is due; returns one
/// line per segment that could not be closed.
pub fn close_due(dir: &Path, today: NaiveDate, now: SystemTime) -> Vec<String> {
    let mut problems = Vec::new();
    let segments = match segment::list(dir) {
        Ok(s) => s,
        Err(e) => return vec![format!("{}: {e}", dir.display())],
    };
    for (name, path) in &segments {
        let past = name.date().is_some_and(|d| d < today);
        if name.gz || !past {
            continue;
        }
        let idle = fs::symlink_metadata(path).is_ok_and(|m| {
            m.is_file()
                && m.modified()
                    .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age >= CLOSE_AFTER))
        });
        if !idle {
            continue;
        }
        if let Err(e) = close(dir, name, path) {
            problems.push(format!("closing {}: {e}", path.display()));
        }
    }
    remove_stale_temps(dir, now);
    problems
}

/// Compresses one open segment into its closed name; false when a writer
/// holds it (left for later) or another closer got there first.
pub fn close(dir: &Path, name: &SegmentName, path: &Path) -> io::Result<bool> {
    let file = crate::state_dir::open_state_file(path)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Ok(false),
        Err(fs::TryLockError::Error(e)) => return Err(e),
    }
    if file.metadata()?.nlink() == 0 {
        return Ok(false);
    }
    // The first free closed name: part 0, or a later part when lines were
    // appended after the segment was first closed.
    let mut part = 0;
    let target = loop {
        let target = dir.join(name.closed(part).file_name());
        match fs::symlink_metadata(&target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => break target,
            Err(e) => return Err(e),
            Ok(_) if part < 1000 => part += 1,
            Ok(_) => return Err(io::Error::other("too many closed parts")),
        }
    };
    let out = AtomicFile::create(&target)?;
    let mut gz = GzEncoder::new(out, Compression::default());
    io::copy(&mut &file, &mut gz)?;
    let mut out = gz.finish()?;
    out.flush()?;
    if !out.commit_new()? {
        return Ok(false);
    }
    fs::remove_file(path)?;
    Ok(true)
}

/// Removes temp files a killed closer left (see [`TEMP_MAX_AGE`]).
fn remove_stale_temps(dir: &Path, now: SystemTime) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with('.') && name.ends_with(crate::atomic::TEMP_SUFFIX)) {
            continue;
        }
        let path = entry.path();
        let old = fs::symlink_metadata(&path).is_ok_and(|m| {
            m.is_file()
                && m.modified()
                    .is_ok_and(|t| now.duration_since(t).is_ok_and(|a| a >= TEMP_MAX_AGE))
        });
        if !old {
            continue;
        }
        if let Ok(file) = crate::state_dir::open_state_file(&path) {
            if file.try_lock().is_ok() {
                let _ = fs::remove_file(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(dir: &Path) -> Vec<String> {
        let mut ids = Vec::new();
        for (name, path) in segment::list(dir).unwrap() {
            super::super::scan::scan(&path, name.gz, 0, &mut |e, _| ids.push(e.id)).unwrap();
        }
        ids
    }

    #[test]
    fn past_idle_segments_are_compressed_line_for_line() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let day = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        for i in 0..3 {
            let e = super::super::Event::at("t.x", day.and_hms_opt(1, 0, i).unwrap().and_utc());
            segment::append(dir, &e.to_line(), day).unwrap();
        }
        let before = events(dir);
        let later = SystemTime::now() + CLOSE_AFTER;
        // The same day: nothing closes.
        assert!(close_due(dir, day, later).is_empty());
        assert!(dir.join("20260309-0000.jsonl").exists());
        // Not idle yet: nothing closes.
        assert!(close_due(dir, day.succ_opt().unwrap(), SystemTime::now()).is_empty());
        assert!(dir.join("20260309-0000.jsonl").exists());
        assert!(close_due(dir, day.succ_opt().unwrap(), later).is_empty());
        assert!(!dir.join("20260309-0000.jsonl").exists());
        assert!(dir.join("20260309-0000.jsonl.gz").exists());
        assert_eq!(events(dir), before);
        // A late line for that day goes to a new open segment, closed as a
        // second part.
        let e = super::super::Event::at("t.x", day.and_hms_opt(2, 0, 0).unwrap().and_utc());
        segment::append(dir, &e.to_line(), day).unwrap();
        let later = SystemTime::now() + CLOSE_AFTER;
        assert!(close_due(dir, day.succ_opt().unwrap(), later).is_empty());
        assert!(dir.join("20260309-0000.1.jsonl.gz").exists());
        let mut want = before.clone();
        want.push(e.id);
        assert_eq!(events(dir), want);
    }

    #[test]
    fn a_segment_a_writer_holds_is_left_for_later() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("20260309-0000.jsonl");
        std::fs::write(&path, "x\n").unwrap();
        let held = std::fs::File::open(&path).unwrap();
        held.lock_shared().unwrap();
        let name = SegmentName::parse("20260309-0000.jsonl").unwrap();
        assert!(!close(dir, &name, &path).unwrap());
        drop(held);
        assert!(close(dir, &name, &path).unwrap());
        assert!(!path.exists());
    }
}
