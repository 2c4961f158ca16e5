//! Segments: the files of the log, and how a line is appended to one.
//!
//! A segment is `state/events/<YYYYMMDD>-<NNNN>.jsonl`: the UTC day of its
//! events, then a number counting up within the day (a segment is full at
//! [`MAX_SEGMENT`] bytes and the next one takes the following lines). Once
//! its day is over it is closed: gzip-compressed to `….jsonl.gz`
//! ([`super::close`]); `<YYYYMMDD>-<NNNN>.<K>.jsonl.gz` is a second closed
//! part under the same number (lines a late writer added after the first
//! was closed). Anything else in the directory (the index, temp files) is
//! not a segment.
//!
//! An append opens the day's first segment that has room (`O_APPEND`,
//! created owner-only, never through a link and never a FIFO: see
//! [`crate::state_dir::open_state_file_to_append`]), takes a shared `flock`
//! on it (the closer takes it exclusive, so it never compresses a segment a
//! writer is appending to), and writes the whole line with one `write`.
//! With `O_APPEND` the kernel places each write at the end whole, so
//! concurrent writers never interleave their lines.
//!
//! The wait for that lock is bounded ([`APPEND_WAIT`]): a closer holds it
//! for the moment it takes to compress a segment, but anything else can
//! hold it too (a backup, `flock -x` in a script), for as long as it likes.
//! A writer that cannot have it by then leaves its line in the spool
//! ([`super::pending`]), whence the next writer, or the next reader of the
//! log, appends it: late, never lost.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{Datelike, NaiveDate};

use crate::state_dir::open_state_file_to_append;

/// A segment holding this many bytes takes no more lines.
pub const MAX_SEGMENT: u64 = 8 * 1024 * 1024;

/// The most segments one day can have.
const MAX_PER_DAY: u32 = 10_000;

/// A segment's name, parsed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegmentName {
    /// The UTC day, as the number `YYYYMMDD`.
    pub day: u32,
    /// Its number within the day.
    pub n: u32,
    /// 0 for the segment itself; K ≥ 1 for a later closed part.
    pub part: u32,
    /// Closed (gzip-compressed).
    pub gz: bool,
}

impl SegmentName {
    /// The `n`th segment of `day`, open.
    pub fn open(day: NaiveDate, n: u32) -> SegmentName {
        SegmentName {
            day: day.year().max(0) as u32 * 10_000 + day.month() * 100 + day.day(),
            n,
            part: 0,
            gz: false,
        }
    }

    /// Parses a file name; `None` for anything that is not a segment.
    pub fn parse(name: &str) -> Option<SegmentName> {
        let (base, gz) = match name.strip_suffix(".jsonl.gz") {
            Some(base) => (base, true),
            None => (name.strip_suffix(".jsonl")?, false),
        };
        let (day, rest) = base.split_once('-')?;
        let (n, part) = match rest.split_once('.') {
            Some((n, part)) if gz => (n, part.parse::<u32>().ok().filter(|&k| k >= 1)?),
            Some(_) => return None,
            None => (rest, 0),
        };
        let digits = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(day, 8)
            || !digits(n, 4)
            || (part > 0 && part.to_string().len() != rest.len() - 5)
        {
            return None;
        }
        Some(SegmentName {
            day: day.parse().ok()?,
            n: n.parse().ok()?,
            part,
            gz,
        })
    }

    pub fn file_name(&self) -> String {
        let base = format!("{:08}-{:04}", self.day, self.n);
        match (self.gz, self.part) {
            (false, _) => format!("{base}.jsonl"),
            (true, 0) => format!("{base}.jsonl.gz"),
            (true, k) => format!("{base}.{k}.jsonl.gz"),
        }
    }

    /// The closed name of this segment, as part `part`.
    pub fn closed(&self, part: u32) -> SegmentName {
        SegmentName {
            part,
            gz: true,
            ..self.clone()
        }
    }

    /// The open segment this one was closed from.
    pub fn opened(&self) -> SegmentName {
        SegmentName {
            part: 0,
            gz: false,
            ..self.clone()
        }
    }

    /// The day, when it is a date.
    pub fn date(&self) -> Option<NaiveDate> {
        NaiveDate::from_ymd_opt(
            (self.day / 10_000) as i32,
            self.day / 100 % 100,
            self.day % 100,
        )
    }
}

/// How long an append waits for a segment's lock before it spools its
/// line instead: far inside every hook's budget (two seconds), and long
/// enough for a closer to finish compressing a segment.
pub const APPEND_WAIT: Duration = Duration::from_millis(250);

/// Where an appended line went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Appended {
    /// Into a segment of its day.
    Written,
    /// Into the spool, at this path: a segment's lock could not be had in
    /// time ([`super::pending`]).
    Spooled(PathBuf),
}

/// Appends `line` (one whole line, newline included) to the log in `dir`,
/// in a segment of `day`, with one `write`; waits for a segment's lock at
/// most [`APPEND_WAIT`], in a hook no longer than what is left of its
/// budget ([`crate::deadline::bounded`]), then spools the line.
pub fn append(dir: &Path, line: &[u8], day: NaiveDate) -> io::Result<Appended> {
    append_within(dir, line, day, crate::deadline::bounded(APPEND_WAIT))
}

/// [`append`], waiting for a segment's lock at most `wait`. Lines spooled
/// before are appended first (without waiting), so they keep their place
/// before this one as far as they can.
pub fn append_within(
    dir: &Path,
    line: &[u8],
    day: NaiveDate,
    wait: Duration,
) -> io::Result<Appended> {
    super::pending::drain(dir);
    if write_line(dir, line, day, Instant::now() + wait)? {
        return Ok(Appended::Written);
    }
    super::pending::spool(dir, line, day).map(Appended::Spooled)
}

/// Writes `line` into a segment of `day`; false when no segment's lock
/// could be had by `deadline` (nothing was written).
pub(super) fn write_line(
    dir: &Path,
    line: &[u8],
    day: NaiveDate,
    deadline: Instant,
) -> io::Result<bool> {
    let mut refused = None;
    let mut reopened = 0;
    let mut n = 0;
    while n < MAX_PER_DAY {
        let path = dir.join(SegmentName::open(day, n).file_name());
        let file = match open_state_file_to_append(&path) {
            Ok(file) => file,
            // A link or FIFO planted under this name: the next one.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                refused.get_or_insert(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
                n += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        if !lock_shared_by(&file, deadline)? {
            return Ok(false);
        }
        let meta = file.metadata()?;
        if meta.nlink() == 0 && reopened < 3 {
            // Closed while we waited for the lock: its name is free again.
            reopened += 1;
            continue;
        }
        if meta.len() > 0 && meta.len() + line.len() as u64 > MAX_SEGMENT {
            n += 1;
            continue;
        }
        let written = (&file).write(line)?;
        if written != line.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!(
                    "{}: only {written} of {} bytes written (disk full?)",
                    path.display(),
                    line.len()
                ),
            ));
        }
        return Ok(true);
    }
    Err(refused.unwrap_or_else(|| io::Error::other("every segment name of the day is taken")))
}

/// Takes a shared lock on `file`, polling until `deadline` (a blocking lock
/// cannot be given up on); false when it was not had by then.
fn lock_shared_by(file: &File, deadline: Instant) -> io::Result<bool> {
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock_shared() {
            Ok(()) => return Ok(true),
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The segments in `dir`, in name order (oldest first), with their paths.
/// A missing directory has none.
pub fn list(dir: &Path) -> io::Result<Vec<(SegmentName, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        if let Some(name) = entry.file_name().to_str().and_then(SegmentName::parse) {
            out.push((name, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_not_segments() {
        let day = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let s = SegmentName::open(day, 12);
        assert_eq!(s.file_name(), "20260309-0012.jsonl");
        assert_eq!(s.closed(0).file_name(), "20260309-0012.jsonl.gz");
        assert_eq!(s.closed(3).file_name(), "20260309-0012.3.jsonl.gz");
        for name in [
            "20260309-0012.jsonl",
            "20260309-0012.jsonl.gz",
            "20260309-0012.3.jsonl.gz",
        ] {
            assert_eq!(SegmentName::parse(name).unwrap().file_name(), name);
        }
        assert_eq!(
            SegmentName::parse(&s.file_name()).unwrap().date(),
            Some(day)
        );
        for not in [
            "index.db",
            "index.db-wal",
            "2026039-0012.jsonl",
            "20260309-12.jsonl",
            "20260309-0012.1.jsonl",
            "20260309-0012.0.jsonl.gz",
            "20260309-0012.01.jsonl.gz",
            ".20260309-0012.jsonl.gz.x.tmp",
        ] {
            assert_eq!(SegmentName::parse(not), None, "{not}");
        }
    }

    #[test]
    fn a_held_segment_is_waited_for_no_longer_than_asked_then_spooled() {
        let tmp = tempfile::tempdir().unwrap();
        let day = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        append(tmp.path(), b"{\"a\":1}\n", day).unwrap();
        let segment = tmp.path().join("20260309-0000.jsonl");
        let held = File::open(&segment).unwrap();
        held.lock().unwrap();
        let started = Instant::now();
        let got =
            append_within(tmp.path(), b"{\"b\":2}\n", day, Duration::from_millis(50)).unwrap();
        assert!(started.elapsed() < Duration::from_secs(2));
        let Appended::Spooled(spooled) = got else {
            panic!("written under another's exclusive lock: {got:?}")
        };
        assert_eq!(std::fs::read(&spooled).unwrap(), b"{\"b\":2}\n");
        assert_eq!(std::fs::read(&segment).unwrap(), b"{\"a\":1}\n");
        // Still held: the next writer spools too, and keeps the first.
        let got = append_within(tmp.path(), b"{\"c\":3}\n", day, Duration::ZERO).unwrap();
        assert!(matches!(got, Appended::Spooled(_)), "{got:?}");
        drop(held);
        // Released: the next writer appends what was spooled, then its own.
        assert_eq!(
            append(tmp.path(), b"{\"d\":4}\n", day).unwrap(),
            Appended::Written
        );
        assert_eq!(
            std::fs::read(&segment).unwrap(),
            b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n"
        );
        assert!(!spooled.exists());
        let left = std::fs::read_dir(tmp.path().join(super::super::pending::PENDING_DIR)).unwrap();
        assert_eq!(left.count(), 0);
    }

    #[test]
    fn a_full_segment_passes_lines_to_the_next() {
        let tmp = tempfile::tempdir().unwrap();
        let day = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let first = tmp.path().join("20260309-0000.jsonl");
        std::fs::write(&first, vec![b'x'; MAX_SEGMENT as usize]).unwrap();
        append(tmp.path(), b"{}\n", day).unwrap();
        assert_eq!(
            std::fs::read(tmp.path().join("20260309-0001.jsonl")).unwrap(),
            b"{}\n"
        );
        // A link planted as a segment is passed over, never followed.
        std::os::unix::fs::symlink("/dev/null", tmp.path().join("20260310-0000.jsonl")).unwrap();
        let next = day.succ_opt().unwrap();
        append(tmp.path(), b"{}\n", next).unwrap();
        assert_eq!(
            std::fs::read(tmp.path().join("20260310-0001.jsonl")).unwrap(),
            b"{}\n"
        );
        let names: Vec<_> = list(tmp.path())
            .unwrap()
            .into_iter()
            .map(|(n, _)| n.file_name())
            .collect();
        assert_eq!(
            names,
            [
                "20260309-0000.jsonl",
                "20260309-0001.jsonl",
                "20260310-0000.jsonl",
                "20260310-0001.jsonl"
            ]
        );
    }
}
