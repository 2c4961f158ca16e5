//! The index of `state/deliberations/`: `index.jsonl`, one line per record
//! with what `jkz deliberations list` shows (time, issue, role, phase,
//! iteration, status, verdict, size) and the response file it names.
//!
//! Why an index rather than reading each record's header: a list over
//! 10,000 records must not open 10,000 files (on the reference machine an
//! open-read-close of a small file costs tens of microseconds, so the files
//! alone would take most of the 100 ms budget, and an inline response of up
//! to 64 KiB sits in the same file). The index is one sequential read of
//! about 200 bytes per record.
//!
//! The index is a cache; the records are the truth. Each writer appends its
//! line after its record is in place (one `write` with `O_APPEND`, which
//! concurrent appenders never interleave). Every reader first lists the
//! directory (names only, cheap) and reconciles: a record missing from the
//! index (its writer was killed between the two steps, or the index was
//! deleted) is read and appended; lines of records no longer there, lines
//! repeated and lines that do not parse make the reader rewrite the index
//! atomically under its lock. An append racing that rewrite may be lost;
//! the next reader finds the record missing and adds it again.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::record::{Record, Status, MAX_RECORD};
use crate::json_file::{lock_wait, lock_within};
use crate::state_dir::{read_state_file, read_whole_state_file};

/// The index's file name in `state/deliberations/`.
pub const INDEX_FILE: &str = "index.jsonl";

/// The largest index read: about 2.5 million records.
const MAX_INDEX: u64 = 512 * 1024 * 1024;

/// One record, as `list` needs it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    pub timestamp: String,
    pub issue: Option<u64>,
    pub role: Option<String>,
    pub phase: Option<String>,
    pub iteration: Option<u64>,
    pub status: Status,
    pub verdict: Option<String>,
    pub bytes: u64,
    pub response_file: Option<String>,
}

impl Entry {
    pub fn of(id: &str, r: &Record) -> Entry {
        Entry {
            id: id.to_string(),
            timestamp: r.timestamp.clone(),
            issue: r.issue,
            role: r.role.clone(),
            phase: r.phase.clone(),
            iteration: r.iteration,
            status: r.status,
            verdict: r.verdict.clone(),
            bytes: r.response_bytes,
            response_file: r.response_file.clone(),
        }
    }
}

fn line(entry: &Entry) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec(entry).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Appends `entries` to the index of `dir`, in one write.
pub fn append(dir: &Path, entries: &[Entry]) -> io::Result<()> {
    let mut bytes = Vec::new();
    for e in entries {
        bytes.extend(line(e)?);
    }
    let path = dir.join(INDEX_FILE);
    let mut file = crate::state_dir::open_state_file_to_append(&path).inspect_err(|e| {
        // Its callers let a failed append go (the index is a cache): a
        // planted entry is still said.
        if e.kind() == io::ErrorKind::InvalidInput {
            crate::state_dir::read::report_refused(&path, e);
        }
    })?;
    file.write_all(&bytes)
}

/// Reads the record `id` in `dir`.
pub fn read_record(dir: &Path, id: &str) -> io::Result<Record> {
    let bytes = read_whole_state_file(&dir.join(format!("{id}.json")), MAX_RECORD)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{id}.json is not a deliberation record: {e}"),
        )
    })
}

/// Every record of `dir`, from the index reconciled with the directory
/// (see the module docs), sorted by id (time first). Records that cannot be
/// read are reported on `warnings`, once each, and left out.
pub fn load(dir: &Path, warnings: &mut dyn Write) -> io::Result<Vec<Entry>> {
    let (entries, repair) = reconcile(dir, warnings)?;
    // Repairs are best effort: the answer stands without them.
    match repair {
        Repair::Rewrite => {
            let _ = rewrite(dir, &entries);
        }
        Repair::Append(missing) => {
            let _ = append(dir, &missing);
        }
        Repair::None => {}
    }
    Ok(entries)
}

/// What [`load`] must do to the index after reading it.
enum Repair {
    None,
    /// Lines that are stale, repeated or garbled: write the index anew.
    Rewrite,
    /// Records missing from an otherwise tidy index: add their lines.
    Append(Vec<Entry>),
}

/// Like [`load`], but never writes: for readers that must leave the state
/// directory as they found it (`jkz ui`).
pub fn load_read_only(dir: &Path, warnings: &mut dyn Write) -> io::Result<Vec<Entry>> {
    reconcile(dir, warnings).map(|(entries, _)| entries)
}

fn reconcile(dir: &Path, warnings: &mut dyn Write) -> io::Result<(Vec<Entry>, Repair)> {
    crate::state_dir::check_listed_dir(dir)?;
    let mut ids = HashSet::new();
    for e in fs::read_dir(dir)? {
        let name = e?.file_name();
        let name = name.to_string_lossy();
        if let Some(id) = name
            .strip_suffix(".json")
            .filter(|_| !name.starts_with('.'))
        {
            ids.insert(id.to_string());
        }
    }
    let index = match read_state_file(&dir.join(INDEX_FILE), MAX_INDEX) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut by_id: HashMap<String, Entry> = HashMap::with_capacity(ids.len());
    let mut untidy = false;
    for l in index.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        match serde_json::from_slice::<Entry>(l) {
            Ok(e) if ids.contains(&e.id) => {
                untidy |= by_id.insert(e.id.clone(), e).is_some();
            }
            _ => untidy = true,
        }
    }
    let mut missing = Vec::new();
    for id in &ids {
        if by_id.contains_key(id) {
            continue;
        }
        match read_record(dir, id) {
            Ok(r) => missing.push(Entry::of(id, &r)),
            Err(e) => {
                let _ = writeln!(warnings, "jkz deliberations: skipped {id}.json: {e}");
            }
        }
    }
    let mut entries: Vec<Entry> = by_id.into_values().chain(missing.iter().cloned()).collect();
    entries.sort_by(|a, b| a.id.cmp(&b.id));
    let repair = if untidy {
        Repair::Rewrite
    } else if !missing.is_empty() {
        Repair::Append(missing)
    } else {
        Repair::None
    };
    Ok((entries, repair))
}

/// Replaces the index with `entries`, atomically, under its lock.
fn rewrite(dir: &Path, entries: &[Entry]) -> io::Result<()> {
    let path = dir.join(INDEX_FILE);
    let _guard = lock_within(&path, lock_wait())?;
    let mut bytes = Vec::with_capacity(entries.len() * 256);
    for e in entries {
        bytes.extend(line(e)?);
    }
    crate::atomic::write_atomic_with(&path, &bytes, crate::atomic::Durability::Content)
}

#[cfg(test)]
mod tests {
    use super::super::{write, Context};
    use super::*;

    fn record(issue: u64, iteration: u64) -> Record {
        let mut r = Record::new(
            &Context {
                issue: Some(issue),
                iteration: Some(iteration),
                role: Some("judge".into()),
                ..Context::default()
            },
            Status::Ok,
            chrono::Utc::now(),
        );
        r.response = Some(format!("answer {issue}/{iteration}"));
        r
    }

    #[test]
    fn the_index_is_rebuilt_from_the_records() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for i in 1..=3 {
            write(d, &format!("r{i}"), &record(7, i)).unwrap();
        }
        let ids = |v: &[Entry]| v.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&load(d, &mut io::sink()).unwrap()), ["r1", "r2", "r3"]);
        // Lost, then stale and garbled: the directory wins.
        fs::remove_file(d.join(INDEX_FILE)).unwrap();
        assert_eq!(load(d, &mut io::sink()).unwrap().len(), 3);
        fs::remove_file(d.join("r2.json")).unwrap();
        append(d, &[Entry::of("r1", &record(7, 1))]).unwrap();
        fs::OpenOptions::new()
            .append(true)
            .open(d.join(INDEX_FILE))
            .unwrap()
            .write_all(b"{half a li")
            .unwrap();
        let entries = load(d, &mut io::sink()).unwrap();
        assert_eq!(ids(&entries), ["r1", "r3"]);
        assert_eq!(entries[1].iteration, Some(3));
        let text = fs::read_to_string(d.join(INDEX_FILE)).unwrap();
        assert_eq!(text.lines().count(), 2, "rewritten tidy: {text}");
    }

    #[test]
    fn the_read_only_load_reconciles_without_writing() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for i in 1..=2 {
            write(d, &format!("r{i}"), &record(7, i)).unwrap();
        }
        fs::write(d.join(INDEX_FILE), b"{garbled\n").unwrap();
        let entries = load_read_only(d, &mut io::sink()).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(fs::read(d.join(INDEX_FILE)).unwrap(), b"{garbled\n");
        fs::remove_file(d.join(INDEX_FILE)).unwrap();
        assert_eq!(load_read_only(d, &mut io::sink()).unwrap().len(), 2);
        assert!(!d.join(INDEX_FILE).exists());
    }
}
