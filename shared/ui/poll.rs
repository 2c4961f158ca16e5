//! Seeing changes: a poll of the state directory every [`INTERVAL`] (why
//! polling and not file watching: see [`crate::ui`]).
//!
//! Each poll lists `state/pipeline/` and stats each pipeline file; a file
//! whose stamp (modification time, size, inode) changed is read again (with
//! the safe reader, through [`crate::pipeline::load_all`]) and its
//! normalized view rendered to JSON once, here: `/api/pipelines` then only
//! joins rendered rows. The rest of the state (deliberations, locks,
//! circuits, snapshots, the ledger, the registry, the UI's own files) is
//! read on request; the poll only stamps the files and directories those
//! change, so that any change bumps the [`Version`] the page listens to.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use crate::pipeline::{self, IssueNumber, PipelineFile};
use crate::state_dir::layout::{
    CHAT_DB, FINDINGS_DB, LIVE_SESSION, MEMORY_DB, PATTERNS_FEEDBACK, WATCH_LIST,
};
use crate::state_dir::{StateDir, CIRCUIT_DIR, DELIBERATIONS_DIR, LOCKS_DIR};

/// How often the state is polled: a change shows on the page well within 1 s.
pub const INTERVAL: Duration = Duration::from_millis(500);

/// A counter bumped on every change seen.
pub type Version = u64;

/// A file's identity for change detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Stamp {
    mtime_ns: i128,
    size: u64,
    ino: u64,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            size: meta.size(),
            ino: meta.ino(),
        }
    }

    fn of_path(path: &Path) -> Stamp {
        fs::symlink_metadata(path)
            .map(|m| Stamp::of(&m))
            .unwrap_or_default()
    }
}

/// One pipeline file, read and rendered.
#[derive(Clone, Debug)]
pub struct Row {
    pub issue: IssueNumber,
    /// The normalized view as JSON, when the file is a valid pipeline file.
    pub view_json: Option<Box<str>>,
    /// Why it is not, when it is not.
    pub error: Option<String>,
    /// The last activity: `last_updated` (or `lastActivity`) when it parses
    /// as RFC 3339, else the file's modification time.
    pub activity: Option<DateTime<Utc>>,
    pub heartbeat_pid: Option<u64>,
    /// Not finished (see [`pipeline::Normalized::is_active`]); an invalid
    /// file counts as active.
    pub active: bool,
}

/// Every pipeline, in issue order, as of one poll.
#[derive(Debug, Default)]
pub struct Table {
    pub version: Version,
    pub rows: Vec<Row>,
}

/// The poller's memory between polls.
pub struct Poller {
    state: StateDir,
    files: HashMap<IssueNumber, (Stamp, Row)>,
    others: Vec<Stamp>,
    version: Version,
    table: Arc<RwLock<Arc<Table>>>,
}

impl Poller {
    pub fn new(state: StateDir) -> Poller {
        Poller {
            state,
            files: HashMap::new(),
            others: Vec::new(),
            version: 0,
            table: Arc::default(),
        }
    }

    /// The table the latest poll produced, shared with the request handlers.
    pub fn table(&self) -> Arc<RwLock<Arc<Table>>> {
        Arc::clone(&self.table)
    }

    /// Polls once; returns the new version when anything changed.
    pub fn poll(&mut self) -> Option<Version> {
        let listed = pipeline::list(&self.state).unwrap_or_default();
        let mut changed: Vec<(PipelineFile, Stamp)> = Vec::new();
        let mut seen = 0usize;
        for file in &listed {
            let stamp = Stamp::of_path(&file.path);
            match self.files.get(&file.issue) {
                Some((old, _)) if *old == stamp => seen += 1,
                _ => changed.push((file.clone(), stamp)),
            }
        }
        let removed = self.files.len() - seen;
        let others = self.other_stamps();
        let others_changed = others != self.others;
        if changed.is_empty() && removed == 0 && !others_changed && self.version > 0 {
            return None;
        }
        self.others = others;
        if !changed.is_empty() && self.version > 0 {
            // The observer's watcher: a change jkz did not write is logged.
            if let Err(e) = crate::events::up_to_date(&self.state) {
                crate::events::warn_once(
                    "ui-reconcile",
                    format!("reconciling pipeline files with the event log: {e}"),
                );
            }
        }
        if !changed.is_empty() {
            let files: Vec<PipelineFile> = changed.iter().map(|(f, _)| f.clone()).collect();
            for ((_, stamp), loaded) in changed.iter().zip(pipeline::load_all(&files)) {
                let row = row_of(&loaded);
                self.files.insert(loaded.file.issue.clone(), (*stamp, row));
            }
        }
        if removed > 0 {
            let keep: std::collections::HashSet<&IssueNumber> =
                listed.iter().map(|f| &f.issue).collect();
            self.files.retain(|issue, _| keep.contains(issue));
        }
        self.version += 1;
        let rows = listed
            .iter()
            .filter_map(|f| self.files.get(&f.issue).map(|(_, row)| row.clone()))
            .collect();
        let table = Arc::new(Table {
            version: self.version,
            rows,
        });
        *self.table.write().unwrap_or_else(|e| e.into_inner()) = table;
        Some(self.version)
    }

    /// The stamps of everything else the page shows.
    fn other_stamps(&self) -> Vec<Stamp> {
        let s = &self.state;
        let mut paths: Vec<PathBuf> = vec![
            s.path().to_path_buf(),
            s.join(DELIBERATIONS_DIR),
            s.join(DELIBERATIONS_DIR)
                .join(crate::deliberation::index::INDEX_FILE),
            s.join(LOCKS_DIR),
            s.join(CIRCUIT_DIR),
            s.join(WATCH_LIST),
            s.join(LIVE_SESSION),
            s.join(CHAT_DB),
            s.join(format!("{CHAT_DB}-wal")),
            s.join(FINDINGS_DB),
            s.join(format!("{FINDINGS_DB}-wal")),
            s.join(MEMORY_DB),
            s.join(format!("{MEMORY_DB}-wal")),
            s.join(PATTERNS_FEEDBACK),
        ];
        paths.extend(crate::tool_output::ledger::files(s.path()));
        // The event log: its newest segment grows with every event.
        let events = s.join(crate::events::EVENTS_DIR);
        paths.push(events.clone());
        if let Some((_, newest)) = crate::events::segment::list(&events)
            .ok()
            .and_then(|mut l| l.pop())
        {
            paths.push(newest);
        }
        paths.iter().map(|p| Stamp::of_path(p)).collect()
    }
}

fn row_of(loaded: &pipeline::LoadedPipeline) -> Row {
    let modified = fs::symlink_metadata(&loaded.file.path)
        .and_then(|m| m.modified())
        .ok()
        .map(DateTime::<Utc>::from);
    match &loaded.view {
        Ok(view) => {
            let mut json = Vec::with_capacity(512);
            view.write_json(&mut json);
            let activity = view
                .last_updated
                .as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc))
                .or(modified);
            Row {
                issue: view.issue.clone(),
                view_json: Some(String::from_utf8(json).expect("JSON is UTF-8").into()),
                error: None,
                activity,
                heartbeat_pid: view.heartbeat_pid,
                active: view.is_active(),
            }
        }
        Err(e) => Row {
            issue: loaded.file.issue.clone(),
            view_json: None,
            error: Some(e.to_string()),
            activity: modified,
            heartbeat_pid: None,
            active: true,
        },
    }
}

/// Runs [`Poller::poll`] every [`INTERVAL`] on a thread of its own, calling
/// `changed` with each new version.
pub fn spawn(mut poller: Poller, changed: impl Fn(Version) + Send + 'static) {
    std::thread::Builder::new()
        .name("jkz-ui-poll".into())
        .spawn(move || loop {
            let started = SystemTime::now();
            if let Some(v) = poller.poll() {
                changed(v);
            }
            let spent = started.elapsed().unwrap_or_default();
            std::thread::sleep(INTERVAL.saturating_sub(spent).max(INTERVAL / 5));
        })
        .expect("a thread can be started");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_sees_new_changed_and_removed_files_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("pipeline");
        fs::create_dir(&dir).unwrap();
        let write = |n: u32, phase: &str| {
            fs::write(
                dir.join(format!("{n}.json")),
                format!("{{\"{n}\": {{\"current_phase\": \"{phase}\"}}}}"),
            )
            .unwrap()
        };
        write(1, "planning");
        let mut p = Poller::new(StateDir::at(tmp.path()));
        assert_eq!(p.poll(), Some(1));
        assert_eq!(p.poll(), None, "nothing changed");
        write(2, "qa");
        assert_eq!(p.poll(), Some(2));
        // Same size, written in place: the modification time tells.
        std::thread::sleep(Duration::from_millis(20));
        write(1, "building");
        assert_eq!(p.poll(), Some(3));
        let table = p.table().read().unwrap().clone();
        let views: Vec<&str> = table
            .rows
            .iter()
            .map(|r| r.view_json.as_ref().unwrap().as_ref())
            .collect();
        assert_eq!(table.rows.len(), 2);
        assert!(views[0].contains("\"building\""), "{views:?}");
        fs::remove_file(dir.join("2.json")).unwrap();
        assert_eq!(p.poll(), Some(4));
        assert_eq!(p.table().read().unwrap().rows.len(), 1);
        fs::write(tmp.path().join(WATCH_LIST), "{}").unwrap();
        assert_eq!(p.poll(), Some(5), "the page's other sources count too");
    }
}
