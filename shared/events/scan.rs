//! Reading a segment: every event in it, past whatever else is there.
//!
//! A segment is opened like every state file (never through a link, never a
//! FIFO or device: [`crate::state_dir::open_state_file`], which reports a
//! refused one on stderr). Its lines are read through a bounded buffer
//! ([`super::lines`]). A line that is not an event is skipped and counted:
//! garbage, a line longer than [`MAX_READ_LINE`], and the part of a line
//! torn by a crash. A torn line has no newline, so the next append is glued
//! behind it: `{"id":"…","ty{"id":"…",…}`. The event behind it is recovered
//! (writers start every line with `{"id":"`), so a crash loses only the line
//! it tore. Bytes after the last newline are not read at all: a writer may
//! be writing them right now.

use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use super::event::{EventHead, LINE_START};
use super::lines::{Item, LineReader};

/// Lines longer than this are skipped (writers write at most
/// [`super::event::MAX_LINE`]).
pub const MAX_READ_LINE: usize = 1024 * 1024;

/// What one read of a segment found besides its events.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// Offset just past the last whole line read (open segments).
    pub end: u64,
    /// Lines (or parts of lines) that were not events, skipped.
    pub skipped: u64,
    /// Where the first skipped line starts.
    pub first_skipped_at: Option<u64>,
    /// Bytes after the last newline, left for later.
    pub partial: u64,
    /// Why reading stopped early (a gzip member that does not decode).
    pub broken: Option<String>,
}

impl Scanned {
    /// One line saying what was skipped in `segment`, when anything was.
    pub fn warning(&self, segment: &Path) -> Option<String> {
        let mut parts = Vec::new();
        if self.skipped > 0 {
            parts.push(format!(
                "skipped {} line{} that {} not an event (the first at byte {})",
                self.skipped,
                if self.skipped == 1 { "" } else { "s" },
                if self.skipped == 1 { "is" } else { "are" },
                self.first_skipped_at.unwrap_or(0)
            ));
        }
        if self.partial > 0 {
            parts.push(format!(
                "its last {} bytes are not a whole line (being written, or torn by a crash): not read",
                self.partial
            ));
        }
        if let Some(why) = &self.broken {
            parts.push(format!("stopped reading: {why}"));
        }
        (!parts.is_empty()).then(|| format!("{}: {}", segment.display(), parts.join("; ")))
    }
}

/// Reads the segment at `path` from byte `start` (0 for a closed one),
/// giving each event with its line as read to `each`.
pub fn scan(
    path: &Path,
    gz: bool,
    start: u64,
    each: &mut dyn FnMut(EventHead, &[u8]),
) -> io::Result<Scanned> {
    let mut file = crate::state_dir::open_state_file(path)?;
    if gz {
        let decoder = MultiGzDecoder::new(BufReader::with_capacity(64 * 1024, file));
        let mut scanned = scan_lines(decoder, 0, each);
        if let Err(e) = &scanned.1 {
            scanned.0.broken = Some(format!("not a whole gzip file ({e})"));
        }
        return Ok(scanned.0);
    }
    file.seek(SeekFrom::Start(start))?;
    let (scanned, result) = scan_lines(file, start, each);
    result.map(|()| scanned)
}

/// Reads lines from `reader`, which starts at offset `start`.
fn scan_lines(
    reader: impl Read,
    start: u64,
    each: &mut dyn FnMut(EventHead, &[u8]),
) -> (Scanned, io::Result<()>) {
    let mut lines = LineReader::new(reader, 256 * 1024, MAX_READ_LINE);
    let mut scanned = Scanned {
        end: start,
        ..Scanned::default()
    };
    let result = loop {
        let at = start + lines.consumed();
        let item = match lines.next_item() {
            Ok(Some(item)) => item,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        let skipped = match item {
            Item::Line(line) => match events_in(line) {
                (Some((event, raw)), torn) => {
                    each(event, raw);
                    torn
                }
                (None, garbage) => garbage,
            },
            Item::TooLong(_) => true,
            Item::Partial(n) => {
                scanned.partial = n;
                false
            }
        };
        if skipped {
            scanned.skipped += 1;
            scanned.first_skipped_at.get_or_insert(at);
        }
    };
    scanned.end = start + lines.consumed();
    (scanned, result)
}

/// The event on `line`, with its text, and whether anything was skipped:
/// a line that is not an event, or the torn line an event was glued to.
/// A blank line is neither.
pub fn events_in(line: &[u8]) -> (Option<(EventHead, &[u8])>, bool) {
    let line = line.trim_ascii();
    if line.is_empty() {
        return (None, false);
    }
    if let Some(event) = EventHead::parse(line) {
        return (Some((event, line)), false);
    }
    let glued = memchr::memmem::rfind(&line[1..], LINE_START)
        .map(|i| &line[i + 1..])
        .and_then(|rest| EventHead::parse(rest).map(|e| (e, rest)));
    (glued, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    fn collect(path: &Path, gz: bool, start: u64) -> (Vec<String>, Scanned) {
        let mut ids = Vec::new();
        let s = scan(path, gz, start, &mut |e, _| ids.push(e.id)).unwrap();
        (ids, s)
    }

    fn line(id: &str) -> String {
        format!("{{\"id\":\"{id}\",\"type\":\"t.x\",\"timestamp\":\"2026-01-01T00:00:00Z\"}}\n")
    }

    #[test]
    fn a_torn_line_loses_only_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.jsonl");
        let torn = &line("b")[..20];
        let text = format!("{}{torn}", line("a"));
        std::fs::write(&path, &text).unwrap();
        let (ids, s) = collect(&path, false, 0);
        assert_eq!(ids, ["a"]);
        assert_eq!(
            (s.end, s.partial, s.skipped),
            (line("a").len() as u64, 20, 0)
        );
        assert!(s.warning(&path).unwrap().contains("not a whole line"));
        // The next append is glued behind the torn line: recovered.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(line("c").as_bytes())
            .unwrap();
        let (ids, s) = collect(&path, false, s.end);
        assert_eq!(ids, ["c"]);
        assert_eq!(
            (s.skipped, s.first_skipped_at, s.partial),
            (1, Some(line("a").len() as u64), 0)
        );
    }

    #[test]
    fn garbage_and_huge_lines_are_skipped_and_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.jsonl");
        let huge = "x".repeat(MAX_READ_LINE + 10);
        let text = format!(
            "\u{0}\u{1}garbage\n{}\n\n{huge}\n[1,2]\n{}",
            line("a"),
            line("b")
        );
        std::fs::write(&path, text).unwrap();
        let (ids, s) = collect(&path, false, 0);
        assert_eq!(ids, ["a", "b"]);
        assert_eq!((s.skipped, s.first_skipped_at), (3, Some(0)));
    }

    #[test]
    fn a_gzip_segment_is_read_whole_and_a_broken_one_up_to_its_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("s.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(format!("{}{}", line("a"), line("b")).as_bytes())
            .unwrap();
        let gz = enc.finish().unwrap();
        std::fs::write(&path, &gz).unwrap();
        assert_eq!(collect(&path, true, 0).0, ["a", "b"]);
        std::fs::write(&path, &gz[..gz.len() - 12]).unwrap();
        let (_, s) = collect(&path, true, 0);
        assert!(s.broken.is_some() && s.warning(&path).is_some());
        std::fs::write(&path, b"not gzip at all").unwrap();
        let (ids, s) = collect(&path, true, 0);
        assert!(ids.is_empty() && s.broken.is_some());
    }

    /// What a segment holds, line by line: an event, garbage, or an event
    /// torn by a crash (cut short, the next line glued behind it).
    #[derive(Clone, Debug)]
    enum Piece {
        Event(u32),
        Garbage(Vec<u8>),
        Torn(u32, usize),
    }

    fn piece() -> impl Strategy<Value = Piece> {
        prop_oneof![
            4 => (0u32..1000).prop_map(Piece::Event),
            1 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..40)
                .prop_map(Piece::Garbage),
            1 => ((0u32..1000), 1usize..60).prop_map(|(n, cut)| Piece::Torn(n, cut)),
        ]
    }

    proptest! {
        /// Against the oracle: every whole event comes back, in order, and
        /// nothing else; each torn line or garbage line is one skip (a torn
        /// line at the very end is the partial tail instead).
        #[test]
        fn recovers_every_whole_event_and_only_those(pieces in proptest::collection::vec(piece(), 0..30)) {
            let tmp = tempfile::tempdir().unwrap();
            let path = tmp.path().join("s.jsonl");
            let mut bytes = Vec::new();
            let mut want = Vec::new();
            let mut skips = 0u64;
            for (i, p) in pieces.iter().enumerate() {
                match p {
                    Piece::Event(n) => {
                        let id = format!("e{i}-{n}");
                        bytes.extend(line(&id).as_bytes());
                        want.push(id);
                    }
                    Piece::Garbage(g) => {
                        let is_event = super::events_in(g).0.is_some();
                        let blank = g.trim_ascii().is_empty();
                        bytes.extend(g);
                        bytes.push(b'\n');
                        if is_event || blank {
                            prop_assume!(false);
                        }
                        skips += 1;
                    }
                    Piece::Torn(n, cut) => {
                        let full = line(&format!("t{i}-{n}"));
                        bytes.extend(&full.as_bytes()[..(*cut).min(full.len() - 2)]);
                        // Glued to the next line, or the partial tail at the end.
                        if i + 1 < pieces.len() {
                            skips += 1;
                        }
                    }
                }
            }
            std::fs::write(&path, &bytes).unwrap();
            let (ids, s) = collect(&path, false, 0);
            // A torn line followed by garbage is one skip, not two.
            let merged = pieces.windows(2).filter(|w| matches!((&w[0], &w[1]), (Piece::Torn(..), Piece::Garbage(_)))).count() as u64;
            // A torn line followed by a torn line: the glued text is one line.
            let torn_runs = pieces.windows(2).filter(|w| matches!((&w[0], &w[1]), (Piece::Torn(..), Piece::Torn(..)))).count() as u64;
            prop_assert_eq!(ids, want);
            prop_assert_eq!(s.skipped, skips - merged - torn_runs);
        }
    }

    #[test]
    fn a_fifo_or_link_segment_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("f.jsonl");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let err = scan(&fifo, false, 0, &mut |_, _| {}).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let link = tmp.path().join("l.jsonl");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        let err = scan(&link, false, 0, &mut |_, _| {}).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
