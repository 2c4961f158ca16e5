//! `state/patterns-feedback.jsonl`: the feedback log, append-only, one JSON
//! event per line.
//!
//! Everything `memory.db` knows that the deliberation records do not say is
//! an event here: each injection (which patterns went into which prompt,
//! for which issue), each helpful or harmful signal (a person's, a
//! verdict's `pattern_feedback`, an automatic PASS or FAIL), each verdict
//! that closed an issue's open injections, each pin, unpin, reject,
//! approval, revocation and prune. `memory.db` is what the records and this log say: a writer
//! appends its events (one `write` with `O_APPEND`, which concurrent
//! appenders never interleave), and every opener of `memory.db` applies the
//! lines past the offset it last applied ([`super::store`]). A corrupt
//! `memory.db` is rebuilt from the records and this log, so the feedback
//! survives it.
//!
//! Events name a pattern by its id and its key (the words of the text that
//! created it, [`super::normalize`]): after a rebuild the key finds the
//! pattern even if it came back under another id. Lines that do not parse,
//! and operations this version does not know, are skipped.

use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The largest tail of the log read at once (a catch-up reads again for the
/// rest).
const MAX_READ: u64 = 64 * 1024 * 1024;

/// A pattern as an event names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatternRef {
    /// `P12`.
    pub id: String,
    /// The words of the text that created the pattern.
    pub key: String,
}

/// Helpful or harmful.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Helpful,
    Harmful,
}

impl Verdict {
    pub fn parse(s: &str) -> Option<Verdict> {
        match s.trim().to_ascii_lowercase().as_str() {
            "helpful" => Some(Verdict::Helpful),
            "harmful" => Some(Verdict::Harmful),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Helpful => "helpful",
            Verdict::Harmful => "harmful",
        }
    }
}

/// One line of the log. `at` is RFC 3339 UTC.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Event {
    /// Patterns went into a prompt for an issue.
    Inject {
        at: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<String>,
        issue: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        patterns: Vec<PatternRef>,
    },
    /// A helpful or harmful signal. `source`: `person`, `verdict` (a
    /// verdict's `pattern_feedback`), `pass` or `fail` (automatic).
    Feedback {
        at: String,
        pattern: PatternRef,
        verdict: Verdict,
        source: String,
        /// The record it was read from, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<String>,
    },
    /// A PASS or FAIL on `issue`, whose record is `record`: it closes the
    /// issue's injections made at or before `at`.
    Resolve {
        at: String,
        record: String,
        issue: u64,
        verdict: String,
    },
    Pin {
        at: String,
        pattern: PatternRef,
    },
    Unpin {
        at: String,
        pattern: PatternRef,
    },
    /// A person's no: the pattern is never injected, and `prune` removes it.
    Reject {
        at: String,
        pattern: PatternRef,
    },
    /// A person's yes to the pattern as it read then (`text`): while its
    /// text is that one, it reaches every issue and no quarantine rule holds
    /// it back.
    Approve {
        at: String,
        pattern: PatternRef,
        text: String,
    },
    /// Takes an approval back.
    Revoke {
        at: String,
        pattern: PatternRef,
    },
    /// Removed as dead; evidence seen after `at` brings it back.
    Prune {
        at: String,
        pattern: PatternRef,
    },
}

impl Event {
    /// The patterns the event names.
    pub fn patterns(&self) -> Vec<&PatternRef> {
        match self {
            Event::Inject { patterns, .. } => patterns.iter().collect(),
            Event::Feedback { pattern, .. }
            | Event::Pin { pattern, .. }
            | Event::Unpin { pattern, .. }
            | Event::Reject { pattern, .. }
            | Event::Approve { pattern, .. }
            | Event::Revoke { pattern, .. }
            | Event::Prune { pattern, .. } => vec![pattern],
            Event::Resolve { .. } => Vec::new(),
        }
    }
}

/// Appends `events`, in one write.
pub fn append(path: &Path, events: &[Event]) -> io::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let mut bytes = Vec::with_capacity(events.len() * 160);
    for e in events {
        serde_json::to_writer(&mut bytes, e).map_err(io::Error::other)?;
        bytes.push(b'\n');
    }
    crate::state_dir::append_lines(path, &bytes)
}

/// Which file the log is: a replaced or truncated log is another log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
}

/// What a read of the log past an offset found.
#[derive(Debug, Default)]
pub struct Tail {
    /// The events of the complete lines read, in order.
    pub events: Vec<Event>,
    /// The offset just past the last complete line read.
    pub end: u64,
    /// The file's identity, if it exists.
    pub identity: Option<Identity>,
    /// Lines that did not parse.
    pub skipped: usize,
}

/// The log's identity and size, or `None` when it does not exist.
pub fn stat(path: &Path) -> io::Result<Option<(Identity, u64)>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some((
            Identity {
                dev: m.dev(),
                ino: m.ino(),
            },
            m.len(),
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The complete lines of the log from `offset` on (a line still being
/// written, without its `\n`, is left for the next read).
pub fn read_from(path: &Path, offset: u64) -> io::Result<Tail> {
    let mut file = match crate::state_dir::open_state_file(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Tail {
                end: offset,
                ..Tail::default()
            })
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    let identity = Some(Identity {
        dev: meta.dev(),
        ino: meta.ino(),
    });
    let mut tail = Tail {
        end: offset,
        identity,
        ..Tail::default()
    };
    let mut at = offset;
    loop {
        file.seek(SeekFrom::Start(at))?;
        let mut bytes = Vec::new();
        (&mut file).take(MAX_READ).read_to_end(&mut bytes)?;
        let complete = match memchr::memrchr(b'\n', &bytes) {
            Some(i) => i + 1,
            None => break,
        };
        for line in bytes[..complete].split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Event>(line) {
                Ok(e) => tail.events.push(e),
                Err(_) => tail.skipped += 1,
            }
        }
        at += complete as u64;
        tail.end = at;
        if (bytes.len() as u64) < MAX_READ {
            break;
        }
    }
    Ok(tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn pin(id: &str) -> Event {
        Event::Pin {
            at: "2025-01-01T00:00:00.000Z".into(),
            pattern: PatternRef {
                id: id.into(),
                key: "k".into(),
            },
        }
    }

    #[test]
    fn complete_lines_only_and_garbage_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        assert!(read_from(&path, 0).unwrap().events.is_empty());
        append(&path, &[pin("P1"), pin("P2")]).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{not json}\n{\"op\":\"future\",\"at\":\"x\"}\n{\"op\":\"pin\"")
            .unwrap();
        let tail = read_from(&path, 0).unwrap();
        assert_eq!(tail.events, vec![pin("P1"), pin("P2")]);
        assert_eq!(tail.skipped, 2);
        let end = tail.end;
        f.write_all(
            b",\"at\":\"2025-01-01T00:00:00.000Z\",\"pattern\":{\"id\":\"P3\",\"key\":\"k\"}}\n",
        )
        .unwrap();
        let tail = read_from(&path, end).unwrap();
        assert_eq!(tail.events, vec![pin("P3")]);
        assert_eq!(tail.end, std::fs::metadata(&path).unwrap().len());
    }
}
