//! Pre-compact snapshots: `state/pre-compact-<UTC ts>-<pid>.json`.
//!
//! One JSON object, written once (atomically) by `jkz-pre-compact`, fields
//! in this order:
//!
//! | field | content |
//! |---|---|
//! | `jkz_snapshot` | format version, `1` |
//! | `created_at` | RFC 3339 UTC with milliseconds |
//! | `pid` | the hook's process id |
//! | `session_id` | the validated session id, or null |
//! | `event` | the hook event exactly as received (unknown fields kept), or null |
//! | `event_error` | why the event could not be read (only when it could not) |
//! | `pipelines` | every `state/pipeline/<N>.json`: `issue`, `file`, and `raw` (the file's JSON, verbatim) with `normalized`, or `error` with `raw_text` (its first 64 KiB); a file over [`MAX_ENTRY_RAW`] has `raw_omitted` (its size) instead of `raw`, and a bounded `normalized` |
//! | `git` | branch, HEAD, dirty paths ([`GitState`]) |
//! | `digest` | the decision-critical items the summarizer was given ([`Digest`]) |
//!
//! The bulky `pipelines` come before what depends on all of them (the
//! digest) and on git: the hook writes them out ([`SnapshotWriter`]) while
//! it is still reading the rest and git is still running.
//!
//! Retention: [`prune`] applies the retention table's rule
//! ([`crate::state_dir::retention`]). The timestamp in the name
//! (`20250131T235959.123Z`) sorts like time, so "newest" is "greatest name".

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::digest::{bound_view, Digest};
use crate::atomic::{AtomicFile, Durability};
use crate::git::GitState;
use crate::pipeline::{FileContent, PipelineFile};
use crate::state_dir::layout::is_snapshot_name;
use crate::state_dir::retention;

/// The most bytes of a snapshot read back (a snapshot of 10,000 pipeline
/// files is a few MiB).
pub const MAX_SNAPSHOT_READ: u64 = 256 * 1024 * 1024;

/// The largest pipeline file copied verbatim into a snapshot (`raw`). Real
/// pipeline files are a few KiB; a larger one is still read and viewed (its
/// phase, verdicts, decisions count), but its snapshot entry holds its size
/// and a view whose texts are bounded ([`bound_view`]), so 40 files of
/// 10 MB make a snapshot of kilobytes, not of 400 MB. The file itself stays
/// on disk, untouched. The same bound as an invalid file's recorded text.
pub const MAX_ENTRY_RAW: usize = 64 * 1024;

/// Snapshot file names in `state`, newest first.
pub fn list(state: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(state)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_snapshot_name(n))
        .collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    names
}

/// Removes the snapshots the retention table expires
/// ([`retention::expired_pre_compact`], the rule `jkz gc` applies too).
/// Returns the names removed.
pub fn prune(state: &Path, now: DateTime<Utc>) -> io::Result<Vec<String>> {
    let snaps = list(state)
        .into_iter()
        .filter_map(|name| {
            let meta = std::fs::symlink_metadata(state.join(&name)).ok()?;
            let modified = meta.modified().ok()?;
            meta.is_file().then(|| (name.clone(), name, modified))
        })
        .collect();
    let mut removed = Vec::new();
    for name in retention::expired_pre_compact(snaps, now.into()) {
        match std::fs::remove_file(state.join(&name)) {
            Ok(()) => removed.push(name),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

/// What a snapshot records before its pipelines.
pub struct SnapshotHeader<'a> {
    pub created_at: &'a str,
    pub pid: u32,
    pub session_id: Option<&'a str>,
    pub event: Option<&'a Map<String, Value>>,
    pub event_error: Option<&'a str>,
}

/// A snapshot being written, in order: the header, the pipelines run by run
/// as they are read, then git and the digest ([`SnapshotWriter::finish`]).
///
/// Durability: the content is synced before the rename, so even after a
/// power loss the snapshot is whole or absent, never half. Large snapshots
/// are synced along the way (every [`SYNC_EVERY`] bytes), while the reading
/// goes on, so that little is left for the last sync. The directory is not
/// synced: the rename reaches the disk with the filesystem's next journal
/// commit (seconds), and a snapshot lost to a power loss in that window is
/// the same as a compaction the hook did not see, which every reader
/// already handles. That sync cost more than the rest of the hook
/// (milliseconds on a busy disk).
///
/// A write that fails is remembered: later calls do nothing, and
/// [`finish`](SnapshotWriter::finish) returns the error (nothing is left
/// behind).
pub struct SnapshotWriter {
    out: io::Result<BufWriter<AtomicFile>>,
    path: PathBuf,
    /// Whether a pipeline entry was written yet (for the commas).
    any_pipeline: bool,
    /// Bytes of pipeline entries written since the last sync.
    unsynced: usize,
}

/// How many bytes a [`SnapshotWriter`] writes between syncs.
pub const SYNC_EVERY: usize = 2 * 1024 * 1024;

impl SnapshotWriter {
    /// Starts `state/<name>` and writes the header.
    pub fn create(state: &Path, name: &str, header: &SnapshotHeader) -> SnapshotWriter {
        let path = state.join(name);
        let out = AtomicFile::create(&path).and_then(|file| {
            let file = file.durability(Durability::Content);
            let mut out = BufWriter::with_capacity(64 * 1024, file);
            header.write_json(&mut out)?;
            Ok(out)
        });
        SnapshotWriter {
            out,
            path,
            any_pipeline: false,
            unsynced: 0,
        }
    }

    /// Appends a run of pipeline entries.
    pub fn pipelines(&mut self, entries: &PipelineEntries) {
        let Ok(out) = &mut self.out else { return };
        if entries.json.is_empty() {
            return;
        }
        let comma = std::mem::replace(&mut self.any_pipeline, true);
        self.unsynced += entries.json.len();
        let sync = self.unsynced >= SYNC_EVERY;
        if sync {
            self.unsynced = 0;
        }
        let written = (if comma { out.write_all(b",") } else { Ok(()) })
            .and_then(|_| out.write_all(&entries.json))
            .and_then(|_| match sync {
                true => out.flush().and_then(|_| out.get_mut().sync_content()),
                false => Ok(()),
            });
        if let Err(e) = written {
            self.out = Err(e);
        }
    }

    /// Syncs what is written so far: the hook does it when the pipelines
    /// are all written and git may still be running, so that what is left
    /// for [`finish`](SnapshotWriter::finish) to sync is its last few
    /// fields.
    pub fn sync(&mut self) {
        let Ok(out) = &mut self.out else { return };
        if let Err(e) = out.flush().and_then(|_| out.get_mut().sync_content()) {
            self.out = Err(e);
        }
        self.unsynced = 0;
    }

    /// Writes git and the digest, syncs and puts the snapshot in place
    /// (never over an existing file). Returns its path.
    pub fn finish(self, git: &GitState, digest: &Digest) -> io::Result<PathBuf> {
        let mut out = self.out?;
        out.write_all(b"],\"git\":")?;
        json(&mut out, git)?;
        out.write_all(b",\"digest\":")?;
        json(&mut out, digest)?;
        out.write_all(b"}\n")?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        if !file.commit_new()? {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} already exists", self.path.display()),
            ));
        }
        Ok(self.path)
    }
}

impl SnapshotHeader<'_> {
    /// The snapshot's text up to its pipelines: `{"jkz_snapshot":1, … "pipelines":[`.
    fn write_json(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(b"{\"jkz_snapshot\":1,\"created_at\":")?;
        json(out, self.created_at)?;
        out.write_all(b",\"pid\":")?;
        json(out, &self.pid)?;
        out.write_all(b",\"session_id\":")?;
        json(out, &self.session_id)?;
        out.write_all(b",\"event\":")?;
        json(out, &self.event)?;
        if let Some(e) = self.event_error {
            out.write_all(b",\"event_error\":")?;
            json(out, e)?;
        }
        out.write_all(b",\"pipelines\":[")
    }
}

fn json(out: &mut impl Write, value: &(impl Serialize + ?Sized)) -> io::Result<()> {
    serde_json::to_writer(out, value).map_err(io::Error::from)
}

/// A run of the snapshot's `pipelines` entries, rendered as JSON (without
/// the brackets) while the files are read, on the thread that read them.
///
/// Each entry's `raw` is the file's text copied verbatim: it was checked to
/// be one JSON object when read, as strictly as a `serde_json::Value` would
/// be (see `pipeline::FileContent`), so parsing it into a tree and printing
/// it again would change nothing but the time taken (most of the hook's
/// time, with thousands of files).
#[derive(Debug, Default)]
pub struct PipelineEntries {
    json: Vec<u8>,
}

impl PipelineEntries {
    /// Appends the entry of one file.
    pub fn push(&mut self, file: &PipelineFile, content: &FileContent) {
        // Writing to a Vec cannot fail, nor can serializing these types.
        let _ = self.render(file, content);
    }

    fn render(&mut self, file: &PipelineFile, content: &FileContent) -> io::Result<()> {
        let out = &mut self.json;
        if !out.is_empty() {
            out.push(b',');
        }
        // An issue number is ASCII digits: nothing to escape.
        let issue = file.issue.as_str().as_bytes();
        debug_assert!(issue.iter().all(u8::is_ascii_digit));
        out.extend_from_slice(b"{\"issue\":\"");
        out.extend_from_slice(issue);
        out.extend_from_slice(b"\",\"file\":\"");
        out.extend_from_slice(issue);
        out.extend_from_slice(b".json\"");
        match content {
            FileContent::Valid { view, json: raw } if raw.len() > MAX_ENTRY_RAW => {
                out.extend_from_slice(b",\"raw_omitted\":{\"bytes\":");
                json(out, &raw.len())?;
                out.extend_from_slice(b",\"why\":");
                json(
                    out,
                    &format!(
                        "larger than {MAX_ENTRY_RAW} bytes: not copied; the file stays in state/pipeline/"
                    ),
                )?;
                out.extend_from_slice(b"},\"normalized\":");
                let mut view = view.clone();
                bound_view(&mut view);
                view.write_json(out);
            }
            FileContent::Valid { view, json: raw } => {
                out.extend_from_slice(b",\"raw\":");
                out.extend_from_slice(raw);
                out.extend_from_slice(b",\"normalized\":");
                view.write_json(out);
            }
            FileContent::Invalid { error, text } => {
                out.extend_from_slice(b",\"error\":");
                json(out, &error.0)?;
                out.extend_from_slice(b",\"raw_text\":");
                json(out, &text.map(String::from_utf8_lossy))?;
            }
        }
        out.push(b'}');
        Ok(())
    }
}

/// What SessionStart needs from a snapshot (the rest is skipped unparsed).
#[derive(Clone, Debug, Deserialize)]
pub struct SnapshotHead {
    pub created_at: String,
    pub session_id: Option<String>,
    pub digest: Digest,
}

/// Why a snapshot could not be used.
#[derive(Debug)]
pub enum HeadError {
    /// Not there (never written, or pruned).
    Missing,
    /// Over [`MAX_SNAPSHOT_READ`]: not read (its size in bytes).
    TooLarge(u64),
    /// There but unreadable, or not a snapshot.
    Unusable(String),
}

impl std::fmt::Display for HeadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeadError::Missing => f.write_str("not found"),
            HeadError::TooLarge(size) => write!(
                f,
                "{size} bytes, over the {MAX_SNAPSHOT_READ}-byte read limit: not read (a snapshot written by an older jkz, before pipeline files were bounded in snapshots)"
            ),
            HeadError::Unusable(why) => f.write_str(why),
        }
    }
}

/// Reads a snapshot's head. A file over [`MAX_SNAPSHOT_READ`] is refused by
/// its size, before anything is read.
pub fn read_head(path: &Path) -> Result<SnapshotHead, HeadError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(HeadError::Missing),
        Ok(meta) if meta.is_file() && meta.len() > MAX_SNAPSHOT_READ => {
            return Err(HeadError::TooLarge(meta.len()))
        }
        _ => {}
    }
    let bytes =
        crate::state_dir::read_state_file(path, MAX_SNAPSHOT_READ).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => HeadError::Missing,
            _ => HeadError::Unusable(format!("unreadable: {e}")),
        })?;
    if bytes.len() as u64 > MAX_SNAPSHOT_READ {
        let size = std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len());
        return Err(HeadError::TooLarge(size));
    }
    serde_json::from_slice(&bytes).map_err(|e| HeadError::Unusable(format!("not a snapshot: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_dir::layout::{snapshot_name, snapshot_time};
    use chrono::TimeZone;

    #[test]
    fn names_round_trip_and_sort_like_time() {
        let t = Utc.with_ymd_and_hms(2025, 1, 31, 23, 59, 59).unwrap()
            + chrono::Duration::milliseconds(123);
        let name = snapshot_name(t, 4242);
        assert_eq!(name, "pre-compact-20250131T235959.123Z-4242.json");
        assert!(is_snapshot_name(&name));
        assert_eq!(snapshot_time(&name), Some(t));
        let later = snapshot_name(t + chrono::Duration::milliseconds(1), 1);
        assert!(later > name);
        for bad in [
            "pre-compact-.json",
            "pre-compact-1/../x.json",
            "x.json",
            "pre-compact-1.json.tmp",
        ] {
            assert!(!is_snapshot_name(bad), "{bad}");
        }
    }

    #[test]
    fn snapshot_holds_each_file_verbatim_or_its_error() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pipeline");
        std::fs::create_dir(&dir).unwrap();
        let good = "\n {\"7\": {\"current_phase\": \"qa\", \"steps\": {\"a\": [1, 2.5e3]}},\n  \"zz\": null} \n";
        std::fs::write(dir.join("7.json"), good).unwrap();
        std::fs::write(dir.join("8.json"), "{\"8\": oops").unwrap();
        // Each file in a run of its own, with empty runs around: the commas.
        let mut runs = vec![PipelineEntries::default()];
        for loaded in crate::pipeline::load_all(&crate::pipeline::list_in(&dir).unwrap()) {
            let mut run = PipelineEntries::default();
            run.push(&loaded.file, &loaded.content());
            runs.extend([run, PipelineEntries::default()]);
        }
        let git = GitState::default();
        let digest = Digest::default();
        let event: Map<String, Value> = serde_json::from_str(r#"{"b": 1, "a": [2]}"#).unwrap();
        let header = SnapshotHeader {
            created_at: "T",
            pid: 1,
            session_id: None,
            event: Some(&event),
            event_error: None,
        };
        let mut writer = SnapshotWriter::create(tmp.path(), "pre-compact-x.json", &header);
        for run in &runs {
            writer.pipelines(run);
        }
        let path = writer.finish(&git, &digest).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains(good.trim()), "the file's text, verbatim");
        let v: Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "jkz_snapshot",
                "created_at",
                "pid",
                "session_id",
                "event",
                "pipelines",
                "git",
                "digest"
            ]
        );
        assert_eq!(v["event"].to_string(), r#"{"b":1,"a":[2]}"#);
        let want: Value = serde_json::from_str(good).unwrap();
        assert_eq!(v["pipelines"][0]["raw"], want);
        assert_eq!(v["pipelines"][0]["normalized"]["current_phase"], "qa");
        assert_eq!(v["pipelines"][1]["file"], "8.json");
        assert!(v["pipelines"][1]["error"]
            .as_str()
            .unwrap()
            .starts_with("invalid JSON"));
        assert_eq!(v["pipelines"][1]["raw_text"], "{\"8\": oops");
        assert_eq!(v["pipelines"][1].get("raw"), None);
    }

    #[test]
    fn a_snapshot_synced_along_the_way_is_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let header = SnapshotHeader {
            created_at: "T",
            pid: 1,
            session_id: Some("s"),
            event: None,
            event_error: Some("bad"),
        };
        let mut writer = SnapshotWriter::create(tmp.path(), "pre-compact-y.json", &header);
        let n = 3 * SYNC_EVERY / 1000 + 5;
        let big = format!("{{\"failure_context\":\"{}\"}}", "x".repeat(900));
        for i in 1..=n {
            let issue = crate::pipeline::IssueNumber::parse(&i.to_string()).unwrap();
            let file = PipelineFile {
                path: tmp.path().join(issue.file_name()),
                issue: issue.clone(),
                regular: true,
            };
            let mut run = PipelineEntries::default();
            let error = crate::pipeline::ParseError("e".into());
            let content = FileContent::Invalid {
                error,
                text: Some(big.as_bytes()),
            };
            run.push(&file, &content);
            writer.pipelines(&run);
        }
        let path = writer
            .finish(&GitState::default(), &Digest::default())
            .unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let pipelines = v["pipelines"].as_array().unwrap();
        assert_eq!(pipelines.len(), n);
        assert_eq!(pipelines[n - 1]["issue"], n.to_string());
        assert_eq!(pipelines[0]["raw_text"], big);
        assert_eq!(
            (v["event"].clone(), v["event_error"].clone()),
            (Value::Null, "bad".into())
        );
        assert!(v["digest"].is_object() && v["git"].is_object());
    }

    /// A snapshot as the hook leaves it: modified when it was taken.
    fn write_taken(state: &Path, name: &str) {
        let path = state.join(name);
        std::fs::write(&path, "{}").unwrap();
        let taken = std::time::SystemTime::from(snapshot_time(name).unwrap());
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(taken)
            .unwrap();
    }

    #[test]
    fn prune_keeps_newest_twenty_and_recent_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let now = Utc.with_ymd_and_hms(2025, 6, 1, 0, 0, 0).unwrap();
        let mut names = Vec::new();
        // 30 old (10..40 days), 5 recent (hours).
        for d in 10..40 {
            names.push(snapshot_name(now - chrono::Duration::days(d), 1));
        }
        for h in 1..6 {
            names.push(snapshot_name(now - chrono::Duration::hours(h), 1));
        }
        for n in &names {
            write_taken(tmp.path(), n);
        }
        std::fs::write(tmp.path().join("pipeline-other.json"), "{}").unwrap();
        let removed = prune(tmp.path(), now).unwrap();
        assert_eq!(removed.len(), 15);
        let left = list(tmp.path());
        assert_eq!(left.len(), 20);
        // The oracle: newest 20 by time.
        let mut want = names.clone();
        want.sort_by(|a, b| b.cmp(a));
        want.truncate(20);
        assert_eq!(left, want);
        assert!(tmp.path().join("pipeline-other.json").exists());

        // All recent: nothing removed even past twenty.
        let tmp = tempfile::tempdir().unwrap();
        for m in 0..25 {
            let n = snapshot_name(now - chrono::Duration::minutes(m), 1);
            write_taken(tmp.path(), &n);
        }
        assert_eq!(prune(tmp.path(), now).unwrap().len(), 0);
    }
}
