//! The index of the log: `state/events/index.db` (SQLite, WAL), so queries
//! (`jkz events --issue 42`) read a few rows instead of every segment.
//!
//! It is derived, never the truth: deleting it loses nothing. Every reader
//! first brings it up to date ([`Index::catch_up`]: lines left in the spool
//! are appended ([`super::pending`]), each open segment is read from where
//! the index stopped, each newly closed one is checked against what was
//! read of it before it was closed), and one that is missing, damaged or
//! from another version of jkz is rebuilt from the log (with a one-line
//! warning when it existed). `jkz events rebuild` does the same on demand.
//!
//! A segment is known by what it is, never by its name alone: a name can
//! be taken again (a writer whose clock is a day behind appends to a day
//! whose segment was closed, and a new open segment takes the closed one's
//! name). The index keeps, for each segment it read, its inode, the bytes
//! read, and its head: its first [`HEAD_BYTES`] bytes, decompressed, which
//! hold its first event's id, unique. Reading on from where it stopped
//! needs the same inode and head; taking a closed segment as read already
//! (the one its open segment became) needs the open one's head, and its
//! length to the byte. Anything else is read whole again (an event is
//! kept once, by id, however often it is read).
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
const VERSION: i64 = 3;
/// How many of a segment's first bytes tell it from every other: the
/// first line's `{"id":"…"` is 41 bytes.
pub const HEAD_BYTES: u64 = 64;
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
                       complete INTEGER NOT NULL, head BLOB NOT NULL);
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

/// What the index knows of one segment it read.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SegmentRow {
    ino: i64,
    /// Bytes read (of the decompressed content, for a closed one).
    indexed: i64,
    /// A closed segment read to its end.
    complete: bool,
    /// Its first [`HEAD_BYTES`] bytes (fewer when it was shorter).
    head: Vec<u8>,
}

impl SegmentRow {
    /// True when a segment whose head is now `head` is the one this row
    /// was read from (a segment shorter than [`HEAD_BYTES`] then has grown).
    fn same_head(&self, head: Option<&[u8]>) -> bool {
        head.is_some_and(|h| h.starts_with(&self.head))
    }
}

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
            let ino = meta.ino() as i64;
            total = total.saturating_add(match (name.gz, known.get(&name.file_name())) {
                (_, Some(row)) if row.complete && row.ino == ino => 0,
                (false, Some(row)) if !row.complete && row.ino == ino => {
                    meta.len().saturating_sub(row.indexed as u64)
                }
                (false, _) => meta.len(),
                (true, _) => meta.len().saturating_mul(10),
            });
        }
        Ok(total)
    }

    /// The index's progress per segment, by name.
    fn segment_rows(&self) -> io::Result<HashMap<String, SegmentRow>> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, ino, indexed, complete, head FROM segments")
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, segment_row(r, 1)?)))
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
        super::pending::drain(&self.dir);
        let segments = segment::list(&self.dir)?;
        let known = self.segment_rows()?;
        let mut added = 0;
        for (name, path) in &segments {
            let file_name = name.file_name();
            let Ok(meta) = fs::symlink_metadata(path) else {
                continue; // closed meanwhile: the closed one is listed next time
            };
            let ino = meta.ino() as i64;
            match known.get(&file_name) {
                // A closed segment never changes once renamed into place.
                Some(row) if row.complete && row.ino == ino => continue,
                Some(row)
                    if !name.gz
                        && !row.complete
                        && row.ino == ino
                        && row.indexed as u64 == meta.len()
                        && row.same_head(head_of(path, false).ok().as_deref()) =>
                {
                    continue
                }
                _ => {}
            }
            added += self.index_segment(name, path)?;
        }
        added += self.index_spooled()?;
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

    /// Indexes the lines still in the spool (a segment's lock was held when
    /// they were written, and still is): read where they are, every time,
    /// until a drain moves them into a segment. The spool is empty but for
    /// such moments.
    fn index_spooled(&mut self) -> io::Result<u64> {
        let spooled = super::pending::list(&self.dir);
        if spooled.is_empty() {
            return Ok(0);
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let mut added = 0;
        for (_, path) in &spooled {
            let (new, scanned) = insert_lines(&tx, path, false, 0);
            match scanned {
                Ok(_) => added += new,
                // Drained meanwhile (into a segment, read next time), or
                // refused (said on stderr).
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::InvalidInput
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        tx.commit().map_err(sql)?;
        Ok(added)
    }

    /// Indexes what is new in one segment, in one transaction.
    fn index_segment(&mut self, name: &SegmentName, path: &Path) -> io::Result<u64> {
        let file_name = name.file_name();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let row: Option<SegmentRow> = tx
            .query_row(
                "SELECT ino, indexed, complete, head FROM segments WHERE name = ?1",
                [&file_name],
                |r| segment_row(r, 0),
            )
            .optional()
            .map_err(sql)?;
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let ino = meta.ino() as i64;
        // Unknown (unreadable, not gzip): no row matches it, so the
        // segment is read whole and the scan says what is wrong.
        let head = head_of(path, name.gz).ok();
        let start = match row {
            Some(row) if row.complete && row.ino == ino => return Ok(0),
            Some(row)
                if !name.gz
                    && !row.complete
                    && row.ino == ino
                    && row.indexed as u64 <= meta.len()
                    && row.same_head(head.as_deref()) =>
            {
                row.indexed as u64
            }
            _ => 0,
        };
        if name.gz && start == 0 {
            // Closed from the open segment the index had read to its end:
            // nothing new. The same segment: its head, and its length to
            // the byte (gzip's trailer holds it, mod 2^32). A late writer's
            // open segment under the same name has another head.
            let opened: Option<SegmentRow> = tx
                .query_row(
                    "SELECT ino, indexed, complete, head FROM segments WHERE name = ?1",
                    [name.opened().file_name()],
                    |r| segment_row(r, 0),
                )
                .optional()
                .map_err(sql)?;
            if let (Some(opened), Some(size)) = (opened, gzip_length(path)) {
                if opened.indexed > 0
                    && opened.indexed as u32 == size
                    && opened.head.len() as u64 == HEAD_BYTES.min(opened.indexed as u64)
                    && opened.same_head(head.as_deref())
                {
                    tx.execute(
                        "INSERT OR REPLACE INTO segments (name, ino, indexed, complete, head) VALUES (?1, ?2, ?3, 1, ?4)",
                        params![file_name, ino, opened.indexed, head.unwrap_or_default()],
                    )
                    .map_err(sql)?;
                    tx.commit().map_err(sql)?;
                    return Ok(0);
                }
            }
        }
        let (added, scanned) = insert_lines(&tx, path, name.gz, start);
        let scanned = match scanned {
            Ok(s) => s,
            // A segment refused (a link, a FIFO: reported on stderr) or
            // unreadable: skipped, the others still indexed.
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => return Ok(0),
            Err(e) => return Err(e),
        };
        if let Some(w) = scanned.warning(path) {
            super::warn_once_text(w);
        }
        tx.execute(
            "INSERT OR REPLACE INTO segments (name, ino, indexed, complete, head) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![file_name, ino, scanned.end as i64, name.gz, head.unwrap_or_default()],
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

/// Indexes the events of the file at `path` (gzip when `gz`) from byte
/// `start`, inside `tx`: each event once, by id, and the tracked fields it
/// sets. Returns how many were new (counted even when a later one failed)
/// and what the scan saw; an error names the file (a refused one keeps
/// `InvalidInput`, for the caller to pass over).
fn insert_lines(
    tx: &rusqlite::Transaction,
    path: &Path,
    gz: bool,
    start: u64,
) -> (u64, io::Result<scan::Scanned>) {
    let statements = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO events (id, type, ts, issue, session, line) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|insert| {
            tx.prepare_cached(
                "INSERT INTO fields (issue, field, value, id) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (issue, field) DO UPDATE SET value = excluded.value, id = excluded.id
                 WHERE excluded.id > fields.id",
            )
            .map(|field| (insert, field))
        });
    let (mut insert, mut field) = match statements {
        Ok(s) => s,
        Err(e) => return (0, Err(sql(e))),
    };
    let mut added = 0;
    let mut failed = None;
    let scanned = scan::scan(path, gz, start, &mut |event, line| {
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
    });
    let scanned = match (scanned, failed) {
        (Ok(_), Some(e)) => Err(sql(e)),
        (Ok(s), None) => Ok(s),
        (Err(e), _) if e.kind() == io::ErrorKind::InvalidInput => Err(e),
        (Err(e), _) => Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    };
    (added, scanned)
}

/// A [`SegmentRow`] from the columns `ino, indexed, complete, head`,
/// starting at column `at`.
fn segment_row(r: &rusqlite::Row, at: usize) -> rusqlite::Result<SegmentRow> {
    Ok(SegmentRow {
        ino: r.get(at)?,
        indexed: r.get(at + 1)?,
        complete: r.get(at + 2)?,
        head: r.get(at + 3)?,
    })
}

/// The first [`HEAD_BYTES`] bytes of a segment's content (decompressed,
/// for a closed one): what tells it from every other ([`SegmentRow`]).
fn head_of(path: &Path, gz: bool) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = crate::state_dir::open_state_file(path)?;
    let mut head = Vec::with_capacity(HEAD_BYTES as usize);
    match gz {
        true => flate2::read::GzDecoder::new(file)
            .take(HEAD_BYTES)
            .read_to_end(&mut head)?,
        false => file.take(HEAD_BYTES).read_to_end(&mut head)?,
    };
    Ok(head)
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
    fn a_late_writers_segment_under_a_closed_ones_name_drops_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let at = |h| day.and_hms_opt(h, 0, 0).unwrap().and_utc();
        let a = Event::at("x.y", at(1)).issue(Some("42".into()));
        segment::append(dir, &a.to_line(), day).unwrap();
        let mut live = Index::open(dir).unwrap();
        let later = std::time::SystemTime::now() + super::super::close::CLOSE_AFTER;
        assert!(super::super::close::close_due(dir, day.succ_opt().unwrap(), later).is_empty());
        // A writer whose clock is behind: the same name, the same length.
        let b = Event::at("x.y", at(2)).issue(Some("43".into()));
        assert_eq!(a.to_line().len(), b.to_line().len());
        segment::append(dir, &b.to_line(), day).unwrap();
        let open = dir.join("20260309-0000.jsonl");
        assert_eq!(fs::metadata(&open).unwrap().len(), a.to_line().len() as u64);
        assert!(dir.join("20260309-0000.jsonl.gz").exists());
        let both = vec![a.id.clone(), b.id.clone()];
        live.catch_up().unwrap();
        assert_eq!(ids(&live), both, "caught up");
        drop(live);
        assert_eq!(ids(&Index::rebuild(dir).unwrap()), both, "rebuilt");
        // And closed in turn, as the second part under that number.
        let later = std::time::SystemTime::now() + super::super::close::CLOSE_AFTER;
        assert!(super::super::close::close_due(dir, day.succ_opt().unwrap(), later).is_empty());
        assert!(dir.join("20260309-0000.1.jsonl.gz").exists());
        assert_eq!(ids(&Index::open(dir).unwrap()), both, "caught up");
        assert_eq!(ids(&Index::rebuild(dir).unwrap()), both, "rebuilt");
    }

    #[test]
    fn a_reused_inode_is_not_read_on_from_where_another_file_stopped() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let at = |h| day.and_hms_opt(h, 0, 0).unwrap().and_utc();
        let a = Event::at("x.y", at(1));
        segment::append(dir, &a.to_line(), day).unwrap();
        let mut index = Index::open(dir).unwrap();
        // The row's inode and length, as if the file were replaced by one
        // on the same inode, longer: the head tells them apart.
        let path = dir.join("20260309-0000.jsonl");
        let b = Event::at("x.y", at(2));
        let c = Event::at("x.y", at(3));
        let mut bytes = b.to_line();
        bytes.extend(c.to_line());
        fs::write(&path, &bytes).unwrap();
        let ino = fs::metadata(&path).unwrap().ino() as i64;
        index
            .conn
            .execute("UPDATE segments SET ino = ?1", [ino])
            .unwrap();
        index.catch_up().unwrap();
        assert_eq!(ids(&index), vec![a.id, b.id, c.id]);
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
