//! The index of the log: `state/events/index.db` (SQLite, WAL), so queries
//! (`jkz events --issue 42`) read a few rows instead of every segment.
//!
//! It is derived, never the truth: deleting it loses nothing. Every reader
//! first brings it up to date ([`Index::catch_up`]: each open segment is
//! read from where the index stopped, each newly closed one is checked
//! against what was read of it before it was closed), and one that is
//! missing, damaged or from another version of jkz is rebuilt from the log
//! (with a one-line warning when it existed). `jkz events rebuild` does the
//! same on demand.
//!
//! An event is indexed once, by id: the same line read twice (a segment
//! read again, a crash between compressing a segment and removing the open
//! file) is kept once. Events are returned in id order, which is time
//! order.
//!
//! Besides the events, it keeps two small tables for [`super::reconcile`]:
//! `fields`, the last value the log knows of each tracked pipeline field
//! (derived from `phase.changed` and `state.changed`), and `pipeline_seen`,
//! the size and time of each pipeline file when last compared (a cache:
//! without it every file is compared again, and nothing is logged twice).
//!
//! Concurrency: every user holds a shared `flock` on `events/.index.lock`
//! while it has the database open; a rebuild takes it exclusive, so it never
//! removes a file under another process. Catch-up is one transaction per
//! segment that re-reads the segment's progress inside it, so two processes
//! catching up at once each index a line once.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;

use super::event::Event;
use super::scan;
use super::segment::{self, SegmentName};
use crate::sqlite::{one_line, open_derived, Derived};

/// `state/events/index.db`.
pub const INDEX_FILE: &str = "index.db";
/// The lock every index user holds (see the module documentation).
const LOCK_FILE: &str = ".index.lock";
/// The schema's version (`PRAGMA user_version`); any other is rebuilt.
const VERSION: i64 = 2;
/// How long a user waits for a rebuild by another process (or a rebuild
/// for the users) before it gives up.
const LOCK_WAIT: Duration = Duration::from_secs(60);
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a hook waits for a writer of the index (another reader
/// catching up): well inside its two-second budget. A hook never waits for
/// a rebuild: it leaves the index to the next reader.
const HOOK_BUSY_TIMEOUT: Duration = Duration::from_millis(300);
/// The file a rebuild writes before it takes the index's place.
const BUILDING_FILE: &str = "index.db.building";

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE segments (name TEXT PRIMARY KEY, ino INTEGER NOT NULL, indexed INTEGER NOT NULL,
                       complete INTEGER NOT NULL);
CREATE TABLE events (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL,
                     ts TEXT NOT NULL, issue TEXT, session TEXT, line TEXT NOT NULL);
CREATE TABLE fields (issue TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL,
                     id TEXT NOT NULL, PRIMARY KEY (issue, field)) WITHOUT ROWID;
CREATE TABLE pipeline_seen (issue TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL,
                            len INTEGER NOT NULL) WITHOUT ROWID;
";

/// The indexes queries use; a rebuild creates them after the bulk load.
const QUERY_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS events_by_issue ON events (issue, id, type) WHERE issue IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_type ON events (type, id);
";

/// The fields of a pipeline file whose changes are events: the phase, the
/// verdicts, the iteration counts.
pub const TRACKED_FIELDS: [&str; 6] = [
    "current_phase",
    "review_passed",
    "qa_passed",
    "review_fix_count",
    "qa_fix_count",
    "plan_iterations",
];

/// An open, up-to-date index.
pub struct Index {
    conn: Connection,
    dir: PathBuf,
    _lock: File,
}

/// One indexed event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub seq: i64,
    pub id: String,
    pub kind: String,
    pub timestamp: String,
    pub issue: Option<String>,
    pub session: Option<String>,
    /// The line as read from the log (unknown members kept).
    pub line: String,
}

impl Row {
    /// The event, parsed again from its line.
    pub fn event(&self) -> Option<Event> {
        Event::parse(self.line.as_bytes())
    }
}

/// Which events a query returns.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub issue: Option<String>,
    pub kind: Option<String>,
    /// Ids at or after this (see [`super::id::lower_bound`]).
    pub since_id: Option<String>,
    /// Only events indexed after this sequence number (`--follow`).
    pub after_seq: Option<i64>,
}

impl Index {
    /// Opens the index in `dir` (`state/events/`), creating or rebuilding it
    /// as needed, and brings it up to date. Warnings (skipped lines, a
    /// rebuild) go to stderr, one line each.
    pub fn open(dir: &Path) -> io::Result<Index> {
        let mut index = Index::open_only(dir)?;
        index.catch_up()?;
        Ok(index)
    }

    /// Opens without catching up (a rebuild or a caller that catches up
    /// itself).
    fn open_only(dir: &Path) -> io::Result<Index> {
        if !dir.join(INDEX_FILE).exists() {
            // The first reader builds it in bulk (one at a time).
            return Index::build(dir, true);
        }
        let lock = lock_file(dir, false)?;
        match open_db(&dir.join(INDEX_FILE))? {
            Derived::Ready(conn) => Ok(Index {
                conn,
                dir: dir.to_path_buf(),
                _lock: lock,
            }),
            Derived::Rebuild(why) => {
                drop(lock);
                super::warn(format!(
                    "{}: {why}: rebuilding it from the log",
                    dir.join(INDEX_FILE).display()
                ));
                Index::build(dir, false)
            }
        }
    }

    /// Opens the index for a hook, which must stay fast: `None` when the
    /// index is missing or would have to be rebuilt, or when more than
    /// `max_backlog` bytes of the log are not indexed yet (a later reader
    /// catches up).
    pub fn open_in_hook(dir: &Path, max_backlog: u64) -> io::Result<Option<Index>> {
        let path = dir.join(INDEX_FILE);
        if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            return Ok(None);
        }
        let lock = match lock_file_within(dir, false, Duration::ZERO) {
            Ok(lock) => lock,
            // A rebuild holds it: the next reader catches up instead.
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(None),
            Err(e) => return Err(e),
        };
        let Derived::Ready(conn) = open_db(&path)? else {
            return Ok(None);
        };
        conn.busy_timeout(HOOK_BUSY_TIMEOUT).map_err(sql)?;
        let mut index = Index {
            conn,
            dir: dir.to_path_buf(),
            _lock: lock,
        };
        if index.backlog()? > max_backlog {
            return Ok(None);
        }
        index.catch_up()?;
        Ok(Some(index))
    }

    /// Bytes of the log not indexed yet (a closed segment not known to be
    /// indexed counts its compressed size, times ten).
    fn backlog(&self) -> io::Result<u64> {
        let known = self.segment_rows()?;
        let mut total = 0u64;
        for (name, path) in segment::list(&self.dir)? {
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            total = total.saturating_add(match (name.gz, known.get(&name.file_name())) {
                (_, Some(&(_, _, true))) => 0,
                (false, Some(&(ino, indexed, false))) if ino == meta.ino() as i64 => {
                    meta.len().saturating_sub(indexed as u64)
                }
                (false, _) => meta.len(),
                (true, _) => meta.len().saturating_mul(10),
            });
        }
        Ok(total)
    }

    /// The index's progress per segment: name → (inode, bytes indexed, complete).
    fn segment_rows(&self) -> io::Result<HashMap<String, (i64, i64, bool)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, ino, indexed, complete FROM segments")
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?, r.get(3)?))))
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)
    }

    /// Removes the index and builds it anew from every segment.
    pub fn rebuild(dir: &Path) -> io::Result<Index> {
        Index::build(dir, false)
    }

    /// The rebuild, under the exclusive lock from start to end (nobody
    /// reads a half-built index): a bulk load without a journal, the query
    /// indexes made afterwards, then WAL as usual.
    /// `if_missing`: another process may have built it while this one
    /// waited for the lock: then it is opened as it is.
    fn build(dir: &Path, if_missing: bool) -> io::Result<Index> {
        let lock = lock_file(dir, true)?;
        let path = dir.join(INDEX_FILE);
        if if_missing && path.exists() {
            lock.lock_shared()?;
            if let Derived::Ready(conn) = open_db(&path)? {
                return Ok(Index {
                    conn,
                    dir: dir.to_path_buf(),
                    _lock: lock,
                });
            }
            lock.lock()?;
        }
        // Built aside and renamed into place: a rebuild killed half-way
        // leaves the old index (or none), never a half-built one that looks
        // current.
        let building = dir.join(BUILDING_FILE);
        remove_database(&building)?;
        let conn = match open_db(&building)? {
            Derived::Ready(conn) => conn,
            Derived::Rebuild(why) => return Err(io::Error::other(why)),
        };
        conn.execute_batch(
            "DROP INDEX events_by_issue; DROP INDEX events_by_type;
             PRAGMA synchronous = OFF; PRAGMA cache_size = -16000;",
        )
        .map_err(sql)?;
        conn.query_row("PRAGMA journal_mode = OFF", [], |r| r.get::<_, String>(0))
            .map_err(sql)?;
        let mut index = Index {
            conn,
            dir: dir.to_path_buf(),
            _lock: lock,
        };
        index.catch_up()?;
        index.conn.execute_batch(QUERY_INDEXES).map_err(sql)?;
        index
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            .map_err(sql)?;
        let Index {
            conn, _lock: lock, ..
        } = index;
        conn.close().map_err(|(_, e)| sql(e))?;
        remove_database(&path)?;
        fs::rename(&building, &path)?;
        let conn = match open_db(&path)? {
            Derived::Ready(conn) => conn,
            Derived::Rebuild(why) => return Err(io::Error::other(why)),
        };
        lock.lock_shared()?;
        Ok(Index {
            conn,
            dir: dir.to_path_buf(),
            _lock: lock,
        })
    }

    /// An id that changes whenever the index is rebuilt: what is derived
    /// from its sequence numbers (metrics) must then be derived anew.
    pub fn generation(&self) -> io::Result<String> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| {
                r.get(0)
            })
            .map_err(sql)
    }

    /// The highest sequence number indexed (0 when empty).
    pub fn last_seq(&self) -> io::Result<i64> {
        self.conn
            .query_row("SELECT coalesce(max(seq), 0) FROM events", [], |r| r.get(0))
            .map_err(sql)
    }

    /// Reads what the log has that the index has not; returns how many
    /// events were added.
    pub fn catch_up(&mut self) -> io::Result<u64> {
        let segments = segment::list(&self.dir)?;
        let known = self.segment_rows()?;
        let mut added = 0;
        for (name, path) in &segments {
            let file_name = name.file_name();
            let Ok(meta) = fs::symlink_metadata(path) else {
                continue; // closed meanwhile: the closed one is listed next time
            };
            match known.get(&file_name) {
                Some(&(_, _, true)) => continue,
                Some(&(ino, indexed, false))
                    if !name.gz && ino == meta.ino() as i64 && indexed as u64 == meta.len() =>
                {
                    continue
                }
                _ => {}
            }
            added += self.index_segment(name, path)?;
        }
        // Open segments that were closed since: their rows go.
        let present: Vec<String> = segments.iter().map(|(n, _)| n.file_name()).collect();
        let gone: Vec<&String> = known.keys().filter(|k| !present.contains(k)).collect();
        if !gone.is_empty() {
            let tx = self.conn.transaction().map_err(sql)?;
            for name in gone {
                tx.execute("DELETE FROM segments WHERE name = ?1", [name])
                    .map_err(sql)?;
            }
            tx.commit().map_err(sql)?;
        }
        Ok(added)
    }

    /// Indexes what is new in one segment, in one transaction.
    fn index_segment(&mut self, name: &SegmentName, path: &Path) -> io::Result<u64> {
        let file_name = name.file_name();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let row: Option<(i64, i64, bool)> = tx
            .query_row(
                "SELECT ino, indexed, complete FROM segments WHERE name = ?1",
                [&file_name],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(sql)?;
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let ino = meta.ino() as i64;
        let start = match row {
            Some((_, _, true)) => return Ok(0),
            Some((old, indexed, false))
                if !name.gz && old == ino && indexed as u64 <= meta.len() =>
            {
                indexed as u64
            }
            _ => 0,
        };
        if name.gz && start == 0 {
            // Closed from an open segment the index had read to its end:
            // nothing new (gzip's trailer holds the length, mod 2^32).
            let opened: Option<i64> = tx
                .query_row(
                    "SELECT indexed FROM segments WHERE name = ?1",
                    [name.opened().file_name()],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql)?;
            if let (Some(indexed), Some(size)) = (opened, gzip_length(path)) {
                if indexed > 0 && indexed as u32 == size {
                    tx.execute(
                        "INSERT OR REPLACE INTO segments (name, ino, indexed, complete) VALUES (?1, ?2, ?3, 1)",
                        params![file_name, ino, indexed],
                    )
                    .map_err(sql)?;
                    tx.commit().map_err(sql)?;
                    return Ok(0);
                }
            }
        }
        let mut added = 0;
        let mut failed = None;
        let scanned = {
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO events (id, type, ts, issue, session, line) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(sql)?;
            let mut field = tx
                .prepare_cached(
                    "INSERT INTO fields (issue, field, value, id) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (issue, field) DO UPDATE SET value = excluded.value, id = excluded.id
                     WHERE excluded.id > fields.id",
                )
                .map_err(sql)?;
            scan::scan(path, name.gz, start, &mut |event, line| {
                if failed.is_some() {
                    return;
                }
                let tracked = matches!(event.kind.as_str(), "phase.changed" | "state.changed")
                    .then(|| Event::parse(line))
                    .flatten();
                let line = String::from_utf8_lossy(line);
                let inserted = insert.execute(params![
                    event.id,
                    event.kind,
                    event.timestamp,
                    event.issue,
                    event.session,
                    line
                ]);
                match inserted {
                    Ok(1) => {
                        added += 1;
                        if let Some((issue, f, value)) = tracked.as_ref().and_then(tracked_change) {
                            if let Err(e) = field.execute(params![issue, f, value, event.id]) {
                                failed = Some(e);
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(e) => failed = Some(e),
                }
            })
        };
        let scanned = match scanned {
            Ok(s) => s,
            // A segment refused (a link, a FIFO: reported on stderr) or
            // unreadable: skipped, the others still indexed.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => return Ok(0),
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        };
        if let Some(e) = failed {
            return Err(sql(e));
        }
        if let Some(w) = scanned.warning(path) {
            super::warn_once_text(w);
        }
        tx.execute(
            "INSERT OR REPLACE INTO segments (name, ino, indexed, complete) VALUES (?1, ?2, ?3, ?4)",
            params![file_name, ino, scanned.end as i64, name.gz],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(added)
    }

    /// The events matching `filter`, in id order, to `each` (which may stop
    /// the query by returning false).
    pub fn query(&self, filter: &Filter, each: &mut dyn FnMut(Row) -> bool) -> io::Result<()> {
        let mut sql_text =
            String::from("SELECT seq, id, type, ts, issue, session, line FROM events WHERE 1 = 1");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if let Some(issue) = &filter.issue {
            sql_text.push_str(" AND issue = ?");
            args.push(issue.clone().into());
        }
        if let Some(kind) = &filter.kind {
            sql_text.push_str(" AND type = ?");
            args.push(kind.clone().into());
        }
        if let Some(since) = &filter.since_id {
            sql_text.push_str(" AND id >= ?");
            args.push(since.clone().into());
        }
        if let Some(seq) = filter.after_seq {
            sql_text.push_str(" AND seq > ?");
            args.push(seq.into());
        }
        sql_text.push_str(" ORDER BY id");
        let mut stmt = self.conn.prepare(&sql_text).map_err(sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args)).map_err(sql)?;
        while let Some(r) = rows.next().map_err(sql)? {
            let row = Row {
                seq: r.get(0).map_err(sql)?,
                id: r.get(1).map_err(sql)?,
                kind: r.get(2).map_err(sql)?,
                timestamp: r.get(3).map_err(sql)?,
                issue: r.get(4).map_err(sql)?,
                session: r.get(5).map_err(sql)?,
                line: r.get(6).map_err(sql)?,
            };
            if !each(row) {
                break;
            }
        }
        Ok(())
    }

    /// Every event, in id order (tests compare a live index with a rebuilt one).
    pub fn all(&self) -> io::Result<Vec<Row>> {
        let mut rows = Vec::new();
        self.query(&Filter::default(), &mut |r| {
            rows.push(r);
            true
        })?;
        Ok(rows)
    }

    /// The last value the log knows of each tracked field of `issue`, as
    /// JSON text.
    pub fn fields(&self, issue: &str) -> io::Result<HashMap<String, String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT field, value FROM fields WHERE issue = ?1")
            .map_err(sql)?;
        let rows = stmt
            .query_map([issue], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)
    }

    /// When the pipeline file of `issue` was last compared: its
    /// modification time (ns) and size.
    pub fn seen(&self, issue: &str) -> io::Result<Option<(i64, i64)>> {
        self.conn
            .prepare_cached("SELECT mtime_ns, len FROM pipeline_seen WHERE issue = ?1")
            .and_then(|mut s| {
                s.query_row([issue], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
            })
            .map_err(sql)
    }

    /// Every pipeline file compared so far, with its time and size.
    pub fn all_seen(&self) -> io::Result<HashMap<String, (i64, i64)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT issue, mtime_ns, len FROM pipeline_seen")
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)
    }

    /// Records that the pipeline files of these issues were compared at
    /// these times and sizes (one transaction).
    pub fn set_seen_all(&mut self, seen: &[(&str, (i64, i64))]) -> io::Result<()> {
        if seen.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction().map_err(sql)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO pipeline_seen (issue, mtime_ns, len) VALUES (?1, ?2, ?3)",
                )
                .map_err(sql)?;
            for (issue, (mtime_ns, len)) in seen {
                stmt.execute(params![issue, mtime_ns, len]).map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)
    }

    /// The connection, for the readers derived from the index (metrics).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

/// The tracked field an event sets, with its new value as JSON text.
pub fn tracked_change(event: &Event) -> Option<(&str, &str, String)> {
    let issue = event.issue.as_deref()?;
    let field = match event.kind.as_str() {
        "phase.changed" => "current_phase",
        "state.changed" => event.get("field")?.as_str()?,
        _ => return None,
    };
    let to = event.get("to").unwrap_or(&Value::Null);
    Some((issue, field, to.to_string()))
}

/// Opens (creating when missing) the database at `path`.
fn open_db(path: &Path) -> io::Result<Derived> {
    open_derived(path, BUSY_TIMEOUT, VERSION, |tx| {
        tx.execute_batch(SCHEMA)?;
        tx.execute_batch(QUERY_INDEXES)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('generation', ?1)",
            [generation()],
        )?;
        Ok(())
    })
    .map_err(sql)
}

/// A fresh random generation id.
fn generation() -> String {
    use sha2::Digest;
    let seed = format!(
        "{:?}-{}-{:?}",
        std::time::SystemTime::now(),
        std::process::id(),
        Instant::now()
    );
    let digest = sha2::Sha256::digest(seed.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Takes `events/.index.lock`, shared or exclusive, waiting at most
/// [`LOCK_WAIT`].
fn lock_file(dir: &Path, exclusive: bool) -> io::Result<File> {
    lock_file_within(dir, exclusive, LOCK_WAIT)
}

/// [`lock_file`] giving up after `wait` (`ErrorKind::TimedOut`).
fn lock_file_within(dir: &Path, exclusive: bool, wait: Duration) -> io::Result<File> {
    let file = crate::state_dir::open_lock_file(&dir.join(LOCK_FILE))?;
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        let tried = match exclusive {
            true => file.try_lock(),
            false => file.try_lock_shared(),
        };
        match tried {
            Ok(()) => return Ok(file),
            Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{} is held by another process (rebuilding the index?); gave up after {}s",
                        dir.join(LOCK_FILE).display(),
                        wait.as_secs_f64()
                    ),
                ))
            }
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// The length a gzip file says it decompresses to (its trailer's ISIZE:
/// the length mod 2^32).
fn gzip_length(path: &Path) -> Option<u32> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = crate::state_dir::open_state_file(path).ok()?;
    if file.metadata().ok()?.len() < 18 {
        return None;
    }
    file.seek(SeekFrom::End(-4)).ok()?;
    let mut tail = [0u8; 4];
    file.read_exact(&mut tail).ok()?;
    Some(u32::from_le_bytes(tail))
}

/// A SQLite error as an I/O error, for callers that report either.
pub fn sql(e: rusqlite::Error) -> io::Error {
    sqlite_error("event index", e)
}

/// A SQLite error of the database `what` as an I/O error: a damaged file
/// (`SQLITE_CORRUPT`, `SQLITE_NOTADB`) is `ErrorKind::InvalidData`, which
/// the readers of derived stores answer by deriving them anew.
pub fn sqlite_error(what: &str, e: rusqlite::Error) -> io::Error {
    let damaged = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    );
    let message = format!("{what}: {}", one_line(&e));
    match damaged {
        true => io::Error::new(io::ErrorKind::InvalidData, message),
        false => io::Error::other(message),
    }
}

/// Removes a database file and its journal, WAL and shared-memory files.
fn remove_database(path: &Path) -> io::Result<()> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        match fs::remove_file(format!("{}{suffix}", path.display())) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;
    use serde_json::json;

    fn emit(dir: &Path, e: &Event) {
        segment::append(dir, &e.to_line(), e.day()).unwrap();
    }

    fn ids(index: &Index) -> Vec<String> {
        index.all().unwrap().into_iter().map(|r| r.id).collect()
    }

    #[test]
    fn a_killed_rebuild_left_an_index_without_its_query_indexes() {
        // The rebuild dropped the query indexes and the journal in the live
        // file and marked it current first: killed half-way, it stayed slow
        // and without WAL for good. Now it builds aside and renames.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let a = Event::new("phase.changed").issue(Some("4".into()));
        emit(dir, &a);
        drop(Index::open(dir).unwrap());
        // What a rebuild killed half-way leaves now: its own file, aside.
        fs::write(dir.join(BUILDING_FILE), b"half a database").unwrap();
        let index = Index::open(dir).unwrap();
        assert_eq!(ids(&index), std::slice::from_ref(&a.id));
        drop(index);
        let index = Index::rebuild(dir).unwrap();
        assert!(!dir.join(BUILDING_FILE).exists());
        let mode: String = index
            .conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let names: Vec<String> = index
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        for wanted in ["events_by_issue", "events_by_type"] {
            assert!(names.iter().any(|n| n == wanted), "{names:?}");
        }
        assert_eq!(ids(&index), std::slice::from_ref(&a.id));
    }

    #[test]
    fn catches_up_incrementally_and_rebuilds_to_the_same() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let a = Event::new("phase.changed")
            .issue(Some("4".into()))
            .payload(json!({"from": null, "to": "plan"}));
        emit(dir, &a);
        let mut index = Index::open(dir).unwrap();
        assert_eq!(ids(&index), std::slice::from_ref(&a.id));
        let b = Event::new("phase.changed")
            .issue(Some("4".into()))
            .payload(json!({"from": "plan", "to": "build"}));
        emit(dir, &b);
        assert_eq!(index.catch_up().unwrap(), 1);
        assert_eq!(index.catch_up().unwrap(), 0);
        assert_eq!(index.fields("4").unwrap()["current_phase"], "\"build\"");
        let live = index.all().unwrap();
        let generation = index.generation().unwrap();
        drop(index);
        let rebuilt = Index::rebuild(dir).unwrap();
        assert_eq!(
            rebuilt
                .all()
                .unwrap()
                .iter()
                .map(|r| (&r.id, &r.line))
                .collect::<Vec<_>>(),
            live.iter().map(|r| (&r.id, &r.line)).collect::<Vec<_>>()
        );
        assert_ne!(rebuilt.generation().unwrap(), generation);
        assert_eq!(rebuilt.fields("4").unwrap()["current_phase"], "\"build\"");
    }

    #[test]
    fn a_damaged_or_foreign_index_is_rebuilt() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let a = Event::new("x.y");
        emit(dir, &a);
        std::fs::write(
            dir.join(INDEX_FILE),
            b"this is not a database, not at all.....",
        )
        .unwrap();
        assert_eq!(ids(&Index::open(dir).unwrap()), std::slice::from_ref(&a.id));
        {
            let conn = Connection::open(dir.join(INDEX_FILE)).unwrap();
            conn.pragma_update(None, "user_version", 99).unwrap();
        }
        assert_eq!(ids(&Index::open(dir).unwrap()), std::slice::from_ref(&a.id));
    }

    #[test]
    fn a_closed_segment_read_to_its_end_is_not_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let a = Event::new("x.y");
        segment::append(dir, &a.to_line(), day).unwrap();
        let mut index = Index::open(dir).unwrap();
        let later = std::time::SystemTime::now() + super::super::close::CLOSE_AFTER;
        assert!(super::super::close::close_due(dir, day.succ_opt().unwrap(), later).is_empty());
        assert_eq!(index.catch_up().unwrap(), 0);
        let complete: i64 = index
            .conn
            .query_row(
                "SELECT count(*) FROM segments WHERE complete = 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(complete, 1);
        assert_eq!(ids(&index), std::slice::from_ref(&a.id));
    }
}
