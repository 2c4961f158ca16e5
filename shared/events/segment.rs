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

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

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

/// Appends `line` (one whole line, newline included) to the log in `dir`,
/// in a segment of `day`, with one `write`.
pub fn append(dir: &Path, line: &[u8], day: NaiveDate) -> io::Result<()> {
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
        file.lock_shared()?;
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
        return Ok(());
    }
    Err(refused.unwrap_or_else(|| io::Error::other("every segment name of the day is taken")))
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
