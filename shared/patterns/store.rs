//! `state/memory.db`: the patterns, their variants, evidence and feedback
//! (SQLite, WAL, FTS5), and every transaction on it.
//!
//! The database is derived: it is what the deliberation records (the
//! evidence) and the feedback log ([`super::log`]) say. Each opener first
//! brings it up to date ([`Memory::open`]): a new database (or one whose
//! log was replaced or truncated) is built from every record and the whole
//! log; otherwise the log lines past the offset it last applied are
//! applied. Every writer appends to the log and applies what it appended
//! inside one `BEGIN IMMEDIATE` transaction, so the log's order is the
//! order events are applied in, and concurrent miners wait for each other
//! (busy timeout) instead of failing. `synchronous=OFF`: the store is
//! derived, so it is never synced; a power cut may forget its last commits
//! (the next opener applies the log again from the offset it kept, and
//! `jkz patterns mine` mines again the records it no longer has) or, at
//! worst, leave it corrupt (rebuilt, as below; `jkz patterns mine
//! --rebuild` rebuilds it on purpose). The log's lines are appended and
//! not synced either: a power cut may cost the newest signals, never
//! garble older ones.
//!
//! A file that is not a database, or whose pages are corrupt, is moved
//! aside to `memory.db.corrupt` and rebuilt: nothing is lost, since the
//! records and the log are the truth.
//!
//! Tables: `patterns` (one row per pattern: its best text, counts, times,
//! flags, the roles it was seen from, how many issues it was seen in and
//! the first of them, the text a person approved), `variants` (each distinct phrasing,
//! by key, with its own count), `words` and `vocabulary` (the inverted
//! index of variants' words and how many variants hold each word, for the
//! similarity search), `sources` (pattern × record: the evidence),
//! `pattern_issues` (pattern × issue, with the roles seen there), `mined`
//! (records already mined), `feedback_from` (records whose feedback is in
//! the log), `injections` (open until a verdict on the issue closes them),
//! `patterns_fts` (FTS5 over the texts, rowid = pattern id), `meta`.
//!
//! A new schema version is a migration by rebuild: a file of another
//! version is emptied and built again from the records, the findings
//! history and the log, which hold every fact the tables do (the sources
//! included: each record's id, issue and role, each finding's issues).

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

use super::log::{self, Event, Identity, PatternRef, Verdict};
use super::normalize::Words;
use super::quarantine::{self, Quarantine};
use super::reach::Reach;
use super::score::Stats;
use crate::sqlite::{
    file_to_read, left, open_read_only, open_writable, refuse_link, switch_to_wal,
};
use crate::state_dir::layout::{MEMORY_DB, MEMORY_DB_CORRUPT, PATTERNS_FEEDBACK};

/// The most prepared statements kept for reuse (each distinct SQL text
/// this file runs through `prepare_cached` is one; there are about 40).
const STATEMENTS_KEPT: usize = 64;

/// The schema's version (`PRAGMA user_version`); a file of another version
/// is rebuilt.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS patterns (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    key          TEXT NOT NULL,
    text         TEXT NOT NULL,
    occurrences  INTEGER NOT NULL DEFAULT 0,
    first_seen   INTEGER NOT NULL,
    last_seen    INTEGER NOT NULL,
    helpful      INTEGER NOT NULL DEFAULT 0,
    harmful      INTEGER NOT NULL DEFAULT 0,
    injected     INTEGER NOT NULL DEFAULT 0,
    last_helpful INTEGER,
    pinned       INTEGER NOT NULL DEFAULT 0,
    rejected     INTEGER NOT NULL DEFAULT 0,
    roles        TEXT NOT NULL DEFAULT '|',
    -- The distinct issues of its sources, and the first of them: what
    -- its reach is decided from (see reach.rs).
    issues       INTEGER NOT NULL DEFAULT 0,
    home_issue   INTEGER,
    -- The text a person approved, and whether it is the text now.
    approved_text TEXT,
    approved     INTEGER NOT NULL DEFAULT 0,
    -- The quarantine rule its text breaks, and the words it matched
    -- (quarantine.rs), checked whenever the text is set.
    quarantine_rule    TEXT,
    quarantine_matched TEXT,
    -- What a ranking decodes of the above, kept as it is written: its
    -- reach (Reach::from_code: -1 approved, -3 seen in two issues or
    -- more, the issue when seen in one, -2 none) and the flags.
    reach        INTEGER GENERATED ALWAYS AS (
                     CASE WHEN approved THEN -1 WHEN issues >= 2 THEN -3
                          WHEN issues = 1 THEN home_issue ELSE -2 END) STORED,
    flags        INTEGER GENERATED ALWAYS AS (
                     pinned | (rejected << 1) | (approved << 3)
                     | ((quarantine_rule IS NOT NULL) << 4)) STORED
);
-- What a ranking reads of every pattern, narrow enough that the scan of
-- 10,000 patterns reads a few hundred KiB instead of their texts.
CREATE INDEX IF NOT EXISTS patterns_ranking ON patterns(
    occurrences, helpful, harmful, injected, first_seen, last_seen, last_helpful,
    reach, flags, roles);
CREATE TABLE IF NOT EXISTS variants (
    id          INTEGER PRIMARY KEY,
    key         TEXT NOT NULL UNIQUE,
    pattern     INTEGER NOT NULL,
    text        TEXT NOT NULL,
    occurrences INTEGER NOT NULL DEFAULT 0,
    first_seen  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS variants_by_pattern ON variants(pattern);
CREATE TABLE IF NOT EXISTS words (
    word    TEXT NOT NULL,
    variant INTEGER NOT NULL,
    PRIMARY KEY (word, variant)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vocabulary (
    word     TEXT PRIMARY KEY NOT NULL,
    variants INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sources (
    pattern INTEGER NOT NULL,
    record  TEXT NOT NULL,
    issue   INTEGER,
    role    TEXT,
    seen    INTEGER NOT NULL,
    PRIMARY KEY (pattern, record)
) WITHOUT ROWID;
-- Each issue a pattern was seen in, with the roles it was seen from
-- there (a finding's source as 'finding'): its reach, and the provenance
-- of its bullet, without reading all its sources.
CREATE TABLE IF NOT EXISTS pattern_issues (
    pattern INTEGER NOT NULL,
    issue   INTEGER NOT NULL,
    roles   TEXT NOT NULL DEFAULT '|',
    PRIMARY KEY (pattern, issue)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS mined (record TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS feedback_from (record TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS injections (
    id      INTEGER PRIMARY KEY,
    record  TEXT,
    issue   INTEGER NOT NULL,
    pattern INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    open    INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS injections_open ON injections(issue, open);
CREATE INDEX IF NOT EXISTS injections_by_pattern ON injections(pattern);
CREATE VIRTUAL TABLE IF NOT EXISTS patterns_fts USING fts5(text, tokenize = 'porter unicode61');
";

/// Every table the schema makes, in the order a rebuild empties them.
const TABLES: [&str; 11] = [
    "patterns",
    "variants",
    "words",
    "vocabulary",
    "sources",
    "pattern_issues",
    "mined",
    "feedback_from",
    "injections",
    "patterns_fts",
    "meta",
];

/// Why `memory.db` could not be used.
#[derive(Debug)]
pub struct MemoryError {
    pub message: String,
    /// The file is not a database or its pages are corrupt: rebuild it.
    pub corrupt: bool,
}

impl std::fmt::Display for MemoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MemoryError {}

impl From<rusqlite::Error> for MemoryError {
    fn from(e: rusqlite::Error) -> MemoryError {
        MemoryError {
            corrupt: is_corruption(&e),
            message: one_line(&e.to_string()),
        }
    }
}

impl MemoryError {
    pub fn new(message: impl Into<String>) -> MemoryError {
        MemoryError {
            message: message.into(),
            corrupt: false,
        }
    }

    pub fn io(context: impl std::fmt::Display, e: std::io::Error) -> MemoryError {
        MemoryError::new(format!("{context}: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, MemoryError>;

fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// How a pattern's id is written: `P12`.
pub fn tag(id: i64) -> String {
    format!("P{id}")
}

/// The number in `P12`, `p12` or `12`.
pub fn parse_tag(s: &str) -> Option<i64> {
    let s = s.trim();
    let digits = s
        .strip_prefix('P')
        .or_else(|| s.strip_prefix('p'))
        .unwrap_or(s);
    (!digits.is_empty() && digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
        .filter(|&n: &i64| n > 0)
}

/// Milliseconds since the epoch of an RFC 3339 time.
pub fn millis(at: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// An RFC 3339 time (UTC, milliseconds) of milliseconds since the epoch.
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Who saw a candidate, where and when: one record (or one finding).
#[derive(Clone, Debug)]
pub struct Seen<'a> {
    /// The record id (`finding:…` for a recurring finding).
    pub record: &'a str,
    pub issue: Option<u64>,
    pub role: Option<&'a str>,
    /// Unix milliseconds.
    pub at: i64,
}

/// What a candidate did to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Added {
    /// A new pattern.
    New,
    /// A new occurrence of a known pattern (merged by key or similarity).
    Merged,
    /// Already counted for this record, or no words at all.
    Nothing,
}

/// One pattern with everything `show` and `list --json` tell.
#[derive(Clone, Debug)]
pub struct Detail {
    pub stats: Stats,
    pub text: String,
    /// The text a person approved, if any (the approval holds while it is
    /// `text`: `stats.approved`).
    pub approved_text: Option<String>,
    /// The quarantine rule `text` breaks, if any.
    pub quarantine: Option<Quarantine>,
    pub sources: Vec<Source>,
    pub variants: Vec<(String, i64)>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Source {
    pub record: String,
    pub issue: Option<u64>,
    pub role: Option<String>,
    pub seen: String,
}

/// The first sources of a pattern ([`Memory::seen_in`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeenIn {
    /// Issues, lowest first, each with its roles (sorted).
    pub issues: Vec<(u64, Vec<String>)>,
    /// Record ids, in order.
    pub records: Vec<String>,
    /// How many issues and records there are in all.
    pub issue_count: i64,
    pub record_count: i64,
}

/// An open `memory.db`.
pub struct Memory {
    pub(crate) conn: Connection,
    /// The state directory.
    pub(crate) state: PathBuf,
    /// The events appended to the feedback log in the open transaction,
    /// for the event log once it commits.
    appended: std::cell::RefCell<Vec<Event>>,
}

/// What bringing the database up to date did, for a note on stderr.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Synced {
    /// Built from the records and the log (a new or replaced database).
    pub built: Option<String>,
    /// Log lines that did not parse (skipped).
    pub skipped: usize,
}

impl Memory {
    pub fn db_path(state: &Path) -> PathBuf {
        state.join(MEMORY_DB)
    }

    pub fn log_path(&self) -> PathBuf {
        self.state.join(PATTERNS_FEEDBACK)
    }

    /// Opens (creating) `memory.db` in the state directory `state`, and
    /// brings it up to date with `builder` (which mines every record for a
    /// build). A corrupt file is moved aside and rebuilt; the note says so.
    pub fn open(
        state: &Path,
        wait: Duration,
        builder: &mut dyn FnMut(&Memory) -> Result<String>,
    ) -> Result<(Memory, Synced, Option<String>)> {
        let deadline = Instant::now() + wait;
        let path = Memory::db_path(state);
        match Memory::open_synced(state, &path, deadline, builder) {
            Ok((m, s)) => Ok((m, s, None)),
            Err(e) if e.corrupt => {
                let note = move_aside(state, &path, &e)?;
                let (m, s) = Memory::open_synced(state, &path, deadline, builder)?;
                Ok((m, s, Some(note)))
            }
            Err(e) => Err(e),
        }
    }

    fn open_synced(
        state: &Path,
        path: &Path,
        deadline: Instant,
        builder: &mut dyn FnMut(&Memory) -> Result<String>,
    ) -> Result<(Memory, Synced)> {
        let memory = Memory::connect(state, path, deadline)?;
        let synced = memory.sync(builder)?;
        Ok((memory, synced))
    }

    /// Opens `memory.db` for reading only, as it is (no creation, no
    /// catch-up): for observers. `None` when there is none.
    pub fn open_read_only(state: &Path, wait: Duration) -> Result<Option<Memory>> {
        let path = Memory::db_path(state);
        if !file_to_read(&path).map_err(MemoryError::new)? {
            return Ok(None);
        }
        let conn = open_read_only(&path, wait)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version != SCHEMA_VERSION {
            return Ok(None);
        }
        let memory = Memory {
            conn,
            state: state.to_path_buf(),
            appended: Default::default(),
        };
        memory.keep_statements();
        Ok(Some(memory))
    }

    fn connect(state: &Path, path: &Path, deadline: Instant) -> Result<Memory> {
        refuse_link(path).map_err(MemoryError::new)?;
        let conn = open_writable(path, left(deadline))?;
        let memory = Memory {
            conn,
            state: state.to_path_buf(),
            appended: Default::default(),
        };
        memory.prepare(deadline)?;
        Ok(memory)
    }

    /// WAL mode and the schema, once per file; a file of another schema
    /// version is emptied for a rebuild.
    fn prepare(&self, deadline: Instant) -> Result<()> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version != SCHEMA_VERSION {
            switch_to_wal(&self.conn, deadline)?;
            let tx = self.begin()?;
            let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if now != SCHEMA_VERSION {
                if now != 0 {
                    for table in TABLES {
                        tx.execute_batch(&format!("DROP TABLE IF EXISTS {table};"))?;
                    }
                }
                tx.execute_batch(SCHEMA)?;
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
            }
            tx.commit()?;
        }
        // No fsync at all: memory.db is derived (the records and the log
        // are the truth), so a power cut that leaves it behind, or even
        // corrupt, costs a rebuild, never a fact; and every jkz run that
        // mines its record is spared the fsyncs of a checkpoint.
        self.conn.pragma_update(None, "synchronous", "OFF")?;
        // A build writes megabytes in one transaction: room for it.
        self.conn.pragma_update(None, "cache_size", -16384i64)?;
        self.keep_statements();
        Ok(())
    }

    /// Room for every statement a mine or an injection prepares: past
    /// rusqlite's default of 16, the least recently used is parsed again
    /// on each use, which doubled the time of a build.
    fn keep_statements(&self) {
        self.conn
            .set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
    }

    fn begin(&self) -> rusqlite::Result<rusqlite::Transaction<'_>> {
        // `transaction_with_behavior` needs `&mut`; the unchecked form is
        // the same BEGIN IMMEDIATE on a shared borrow.
        rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
    }

    /// Brings the database up to date (see the module docs).
    fn sync(&self, builder: &mut dyn FnMut(&Memory) -> Result<String>) -> Result<Synced> {
        if self.up_to_date()? && self.rules_current()? {
            return Ok(Synced::default());
        }
        let tx = self.begin()?;
        let mut synced = Synced::default();
        if self.needs_build()? {
            self.clear()?;
            synced.built = Some(builder(self)?);
            set_meta(&self.conn, "built", 1)?;
        } else {
            synced.skipped = self.catch_up()?;
        }
        self.check_quarantines()?;
        tx.commit()?;
        self.appended.take();
        if synced.built.is_some() {
            self.checkpoint()?;
        }
        Ok(synced)
    }

    /// Builds the database again from scratch with `builder` (`jkz
    /// patterns mine --rebuild`).
    pub fn rebuild(&self, builder: &mut dyn FnMut(&Memory) -> Result<String>) -> Result<String> {
        let tx = self.begin()?;
        self.clear()?;
        let summary = builder(self)?;
        set_meta(&self.conn, "built", 1)?;
        self.check_quarantines()?;
        tx.commit()?;
        self.appended.take();
        self.checkpoint()?;
        Ok(summary)
    }

    /// Moves the WAL into the database and empties it (after a build or a
    /// long mine: the next opener would otherwise read all of it).
    pub fn checkpoint(&self) -> Result<()> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }

    fn up_to_date(&self) -> Result<bool> {
        if self.needs_build()? {
            return Ok(false);
        }
        let offset = meta(&self.conn, "log_offset")?.unwrap_or(0);
        let size = log::stat(&self.log_path())
            .map_err(|e| MemoryError::io(self.log_path().display(), e))?
            .map_or(0, |(_, size)| size);
        Ok(size as i64 <= offset)
    }

    /// A new database, or a log that is no longer the one applied.
    fn needs_build(&self) -> Result<bool> {
        if meta(&self.conn, "built")?.unwrap_or(0) != 1 {
            return Ok(true);
        }
        let offset = meta(&self.conn, "log_offset")?.unwrap_or(0);
        let known = match (meta(&self.conn, "log_dev")?, meta(&self.conn, "log_ino")?) {
            (Some(dev), Some(ino)) => Some(Identity {
                dev: dev as u64,
                ino: ino as u64,
            }),
            _ => None,
        };
        let now = log::stat(&self.log_path())
            .map_err(|e| MemoryError::io(self.log_path().display(), e))?;
        Ok(match (known, now) {
            (None, _) => offset > 0,
            (Some(_), None) => true,
            (Some(k), Some((id, size))) => k != id || (size as i64) < offset,
        })
    }

    /// Empties every table for a build (whose patterns are all checked
    /// under this jkz's quarantine rules as they are added).
    fn clear(&self) -> Result<()> {
        for table in TABLES {
            self.conn.execute_batch(&format!("DELETE FROM {table};"))?;
        }
        set_meta(&self.conn, "quarantine_rules", quarantine::fingerprint())?;
        self.conn
            .execute("DELETE FROM sqlite_sequence WHERE name = 'patterns'", [])?;
        Ok(())
    }

    /// Applies the log's lines past the offset applied; returns how many
    /// did not parse. Call inside a write transaction.
    pub(crate) fn catch_up(&self) -> Result<usize> {
        let offset = meta(&self.conn, "log_offset")?.unwrap_or(0);
        let path = self.log_path();
        let tail =
            log::read_from(&path, offset as u64).map_err(|e| MemoryError::io(path.display(), e))?;
        self.apply(&tail.events)?;
        set_meta(&self.conn, "log_offset", tail.end as i64)?;
        if let Some(id) = tail.identity {
            set_meta(&self.conn, "log_dev", id.dev as i64)?;
            set_meta(&self.conn, "log_ino", id.ino as i64)?;
        }
        Ok(tail.skipped)
    }

    /// Runs `op` in one read transaction: one snapshot, and one set of
    /// locks for all its queries.
    pub fn read<T>(&self, op: impl FnOnce(&Memory) -> Result<T>) -> Result<T> {
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred)?;
        let t = op(self)?;
        tx.commit()?;
        Ok(t)
    }

    /// Runs `op` in one write transaction after a catch-up; the events it
    /// returns are appended to the log and applied before the commit.
    pub fn write<T>(&self, op: impl FnOnce(&Memory) -> Result<(T, Vec<Event>)>) -> Result<T> {
        let tx = self.begin()?;
        self.appended.take();
        self.catch_up()?;
        let (t, events) = op(self)?;
        self.append(&events)?;
        tx.commit()?;
        super::history::emit(&self.state, &self.appended.take());
        Ok(t)
    }

    /// Appends `events` to the log and applies them (and anything before
    /// them). Call inside a write transaction.
    pub(crate) fn append(&self, events: &[Event]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let path = self.log_path();
        log::append(&path, events).map_err(|e| MemoryError::io(path.display(), e))?;
        self.appended.borrow_mut().extend_from_slice(events);
        self.catch_up()?;
        Ok(())
    }

    // ---- events ---------------------------------------------------------

    fn apply(&self, events: &[Event]) -> Result<()> {
        for event in events {
            self.apply_one(event)?;
        }
        Ok(())
    }

    fn apply_one(&self, event: &Event) -> Result<()> {
        let c = &self.conn;
        let at_of = |at: &str| millis(at).unwrap_or(0);
        match event {
            Event::Inject {
                at,
                record,
                issue,
                patterns,
                ..
            } => {
                for r in patterns {
                    if let Some(id) = self.resolve(r)? {
                        c.prepare_cached(
                            "UPDATE patterns SET injected = injected + 1 WHERE id = ?1",
                        )?
                        .execute([id])?;
                        c.prepare_cached(
                            "INSERT INTO injections (record, issue, pattern, at, open) VALUES (?1, ?2, ?3, ?4, 1)",
                        )?
                        .execute(params![record, *issue as i64, id, at_of(at)])?;
                    }
                }
            }
            Event::Feedback {
                at,
                pattern,
                verdict,
                record,
                ..
            } => {
                if let Some(id) = self.resolve(pattern)? {
                    match verdict {
                        Verdict::Helpful => c
                            .prepare_cached(
                                "UPDATE patterns SET helpful = helpful + 1,
                                    last_helpful = max(coalesce(last_helpful, ?2), ?2) WHERE id = ?1",
                            )?
                            .execute(params![id, at_of(at)])?,
                        Verdict::Harmful => c
                            .prepare_cached("UPDATE patterns SET harmful = harmful + 1 WHERE id = ?1")?
                            .execute([id])?,
                    };
                }
                if let Some(record) = record {
                    c.prepare_cached("INSERT OR IGNORE INTO feedback_from (record) VALUES (?1)")?
                        .execute([record])?;
                }
            }
            Event::Resolve {
                at, record, issue, ..
            } => {
                c.prepare_cached(
                    "UPDATE injections SET open = 0 WHERE issue = ?1 AND open = 1 AND at <= ?2",
                )?
                .execute(params![*issue as i64, at_of(at)])?;
                c.prepare_cached("INSERT OR IGNORE INTO feedback_from (record) VALUES (?1)")?
                    .execute([record])?;
            }
            Event::Pin { pattern, .. } => self.set_flags(pattern, "pinned = 1, rejected = 0")?,
            Event::Unpin { pattern, .. } => self.set_flags(pattern, "pinned = 0")?,
            Event::Reject { pattern, .. } => self.set_flags(pattern, "rejected = 1, pinned = 0")?,
            Event::Approve { pattern, text, .. } => {
                if let Some(id) = self.resolve(pattern)? {
                    c.prepare_cached(
                        "UPDATE patterns SET approved_text = ?2, approved = (text = ?2) WHERE id = ?1",
                    )?
                    .execute(params![id, text])?;
                }
            }
            Event::Revoke { pattern, .. } => {
                self.set_flags(pattern, "approved_text = NULL, approved = 0")?
            }
            Event::Prune { at, pattern } => {
                if let Some(id) = self.resolve(pattern)? {
                    let keep: bool = c.query_row(
                        "SELECT pinned != 0 OR last_seen > ?2 FROM patterns WHERE id = ?1",
                        params![id, at_of(at)],
                        |r| r.get(0),
                    )?;
                    if !keep {
                        self.delete_pattern(id)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn set_flags(&self, pattern: &PatternRef, set: &str) -> Result<()> {
        if let Some(id) = self.resolve(pattern)? {
            self.conn
                .execute(&format!("UPDATE patterns SET {set} WHERE id = ?1"), [id])?;
        }
        Ok(())
    }

    /// The pattern an event names: by id when its key still matches, else
    /// by the key among the variants, else the most similar variant.
    pub fn resolve(&self, r: &PatternRef) -> Result<Option<i64>> {
        if let Some(id) = parse_tag(&r.id) {
            let key: Option<String> = self
                .conn
                .prepare_cached("SELECT key FROM patterns WHERE id = ?1")?
                .query_row([id], |row| row.get(0))
                .optional()?;
            if key.as_deref() == Some(r.key.as_str()) {
                return Ok(Some(id));
            }
        }
        if let Some(p) = self.variant(&r.key)?.map(|(_, p)| p) {
            return Ok(Some(p));
        }
        self.similar(&Words::from_key(&r.key))
    }

    /// A pattern as an event names it.
    pub fn pattern_ref(&self, id: i64) -> Result<Option<PatternRef>> {
        Ok(self
            .conn
            .prepare_cached("SELECT key FROM patterns WHERE id = ?1")?
            .query_row([id], |row| row.get::<_, String>(0))
            .optional()?
            .map(|key| PatternRef { id: tag(id), key }))
    }

    // ---- evidence -------------------------------------------------------

    /// The variant with this key and its pattern.
    fn variant(&self, key: &str) -> Result<Option<(i64, i64)>> {
        Ok(self
            .conn
            .prepare_cached("SELECT id, pattern FROM variants WHERE key = ?1")?
            .query_row([key], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    /// The pattern of the variant most similar to `words` (see
    /// [`Words::same_pattern`]), found through the inverted index: only
    /// the [`Words::probe_count`] rarest words are probed.
    fn similar(&self, words: &Words) -> Result<Option<i64>> {
        Ok(self.similar_variant(words)?.map(|(_, p)| p))
    }

    fn similar_variant(&self, words: &Words) -> Result<Option<(i64, i64)>> {
        if words.is_empty() {
            return Ok(None);
        }
        let mut by_rarity: Vec<(i64, &str)> = Vec::with_capacity(words.len());
        {
            let mut df = self
                .conn
                .prepare_cached("SELECT variants FROM vocabulary WHERE word = ?1")?;
            for w in &words.words {
                let n: i64 = df.query_row([w], |r| r.get(0)).optional()?.unwrap_or(0);
                by_rarity.push((n, w));
            }
        }
        by_rarity.sort();
        let mut candidates = BTreeSet::new();
        {
            let mut holders = self
                .conn
                .prepare_cached("SELECT variant FROM words WHERE word = ?1")?;
            for (n, w) in by_rarity.iter().take(words.probe_count()) {
                if *n == 0 {
                    continue;
                }
                for v in holders.query_map([w], |r| r.get::<_, i64>(0))? {
                    candidates.insert(v?);
                }
            }
        }
        let mut best: Option<(f64, i64, i64)> = None;
        let mut load = self
            .conn
            .prepare_cached("SELECT key, pattern FROM variants WHERE id = ?1")?;
        for vid in candidates {
            let (key, pattern): (String, i64) =
                load.query_row([vid], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let other = Words::from_key(&key);
            if words.same_pattern(&other) {
                let sim = words.similarity(&other);
                if best.is_none_or(|(s, _, _)| sim > s) {
                    best = Some((sim, vid, pattern));
                }
            }
        }
        Ok(best.map(|(_, v, p)| (v, p)))
    }

    /// Adds one occurrence of the candidate `text` seen by `seen`. New
    /// patterns take the id `reserved` holds for their key, if any.
    pub fn add(&self, text: &str, seen: &Seen, reserved: Option<&Reserved>) -> Result<Added> {
        let words = Words::of(text);
        if words.is_empty() {
            return Ok(Added::Nothing);
        }
        let key = words.key();
        let c = &self.conn;
        let mut added = Added::Merged;
        let (vid, pattern) = match self.variant(&key)? {
            Some(found) => found,
            None => {
                let pattern = match self.similar(&words)? {
                    Some(p) => p,
                    None => {
                        added = Added::New;
                        self.new_pattern(&key, text, seen.at, reserved)?
                    }
                };
                (
                    self.new_variant(pattern, &key, text, &words, seen.at)?,
                    pattern,
                )
            }
        };
        let counted = c
            .prepare_cached(
                "INSERT OR IGNORE INTO sources (pattern, record, issue, role, seen) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                pattern,
                seen.record,
                seen.issue.map(|n| n as i64),
                seen.role,
                seen.at
            ])?;
        if counted == 0 {
            return Ok(Added::Nothing);
        }
        c.prepare_cached(
            "UPDATE variants SET occurrences = occurrences + 1, first_seen = min(first_seen, ?2) WHERE id = ?1",
        )?
        .execute(params![vid, seen.at])?;
        let new_issue = match seen.issue {
            Some(n) => self.seen_in_issue(pattern, n, seen)?,
            None => false,
        };
        c.prepare_cached(
            "UPDATE patterns SET occurrences = occurrences + 1,
                first_seen = min(first_seen, ?2), last_seen = max(last_seen, ?2),
                roles = CASE WHEN ?3 IS NULL OR instr(roles, '|' || ?3 || '|') > 0 THEN roles
                             ELSE roles || ?3 || '|' END,
                issues = issues + ?4,
                home_issue = coalesce(home_issue, ?5)
             WHERE id = ?1",
        )?
        .execute(params![
            pattern,
            seen.at,
            seen.role.map(role_name),
            i64::from(new_issue),
            seen.issue.map(|n| n as i64)
        ])?;
        self.refresh_text(pattern)?;
        Ok(added)
    }

    /// Notes that `pattern` was seen in issue `n` (from `seen`'s role);
    /// whether that issue is new for it.
    fn seen_in_issue(&self, pattern: i64, n: u64, seen: &Seen) -> Result<bool> {
        let c = &self.conn;
        let role = match seen.role {
            Some(r) => Some(role_name(r)),
            None => seen
                .record
                .starts_with("finding:")
                .then(|| "finding".to_string()),
        };
        let new = c
            .prepare_cached(
                "INSERT OR IGNORE INTO pattern_issues (pattern, issue, roles)
                 VALUES (?1, ?2, CASE WHEN ?3 IS NULL THEN '|' ELSE '|' || ?3 || '|' END)",
            )?
            .execute(params![pattern, n as i64, role])?
            == 1;
        if !new && role.is_some() {
            c.prepare_cached(
                "UPDATE pattern_issues SET roles = roles || ?3 || '|'
                 WHERE pattern = ?1 AND issue = ?2 AND instr(roles, '|' || ?3 || '|') = 0",
            )?
            .execute(params![pattern, n as i64, role])?;
        }
        Ok(new)
    }

    fn new_pattern(
        &self,
        key: &str,
        text: &str,
        at: i64,
        reserved: Option<&Reserved>,
    ) -> Result<i64> {
        let c = &self.conn;
        let taken = |id: i64| -> Result<bool> {
            Ok(
                c.prepare_cached("SELECT count(*) FROM patterns WHERE id = ?1")?
                    .query_row([id], |r| r.get::<_, i64>(0))?
                    > 0,
            )
        };
        let id = reserved.map(|r| r.id_for(key, &taken)).transpose()?;
        let q = quarantine::check(text);
        c.prepare_cached(
            "INSERT INTO patterns (id, key, text, first_seen, last_seen, quarantine_rule, quarantine_matched)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6)",
        )?
        .execute(params![
            id,
            key,
            text,
            at,
            q.as_ref().map(|q| q.rule),
            q.as_ref().map(|q| &q.matched)
        ])?;
        let id = c.last_insert_rowid();
        c.prepare_cached("INSERT INTO patterns_fts (rowid, text) VALUES (?1, ?2)")?
            .execute(params![id, text])?;
        Ok(id)
    }

    fn new_variant(
        &self,
        pattern: i64,
        key: &str,
        text: &str,
        words: &Words,
        at: i64,
    ) -> Result<i64> {
        let c = &self.conn;
        c.prepare_cached(
            "INSERT INTO variants (key, pattern, text, occurrences, first_seen) VALUES (?1, ?2, ?3, 0, ?4)",
        )?
        .execute(params![key, pattern, text, at])?;
        let vid = c.last_insert_rowid();
        let mut word =
            c.prepare_cached("INSERT OR IGNORE INTO words (word, variant) VALUES (?1, ?2)")?;
        let mut df = c.prepare_cached(
            "INSERT INTO vocabulary (word, variants) VALUES (?1, 1)
             ON CONFLICT(word) DO UPDATE SET variants = variants + 1",
        )?;
        for w in &words.words {
            word.execute(params![w, vid])?;
            df.execute([w])?;
        }
        Ok(vid)
    }

    /// The pattern's text becomes its best variant's: the most occurrences,
    /// then the earliest seen, then the key.
    fn refresh_text(&self, pattern: i64) -> Result<()> {
        let c = &self.conn;
        let best: String = c
            .prepare_cached(
                "SELECT text FROM variants WHERE pattern = ?1
                 ORDER BY occurrences DESC, first_seen ASC, key ASC LIMIT 1",
            )?
            .query_row([pattern], |r| r.get(0))?;
        // An approval is of a text: it holds while the text is the one
        // approved.
        let changed = c
            .prepare_cached(
                "UPDATE patterns SET text = ?2, approved = coalesce(approved_text = ?2, 0)
                 WHERE id = ?1 AND text != ?2",
            )?
            .execute(params![pattern, best])?;
        if changed > 0 {
            self.set_quarantine(pattern, &best)?;
            c.prepare_cached("DELETE FROM patterns_fts WHERE rowid = ?1")?
                .execute([pattern])?;
            c.prepare_cached("INSERT INTO patterns_fts (rowid, text) VALUES (?1, ?2)")?
                .execute(params![pattern, best])?;
        }
        Ok(())
    }

    /// Checks `text`, a pattern's text now, against the quarantine rules.
    fn set_quarantine(&self, pattern: i64, text: &str) -> Result<()> {
        let q = quarantine::check(text);
        self.conn
            .prepare_cached(
                "UPDATE patterns SET quarantine_rule = ?2, quarantine_matched = ?3 WHERE id = ?1",
            )?
            .execute(params![
                pattern,
                q.as_ref().map(|q| q.rule),
                q.as_ref().map(|q| &q.matched)
            ])?;
        Ok(())
    }

    /// Whether the quarantines were checked under the rules of this jkz.
    fn rules_current(&self) -> Result<bool> {
        Ok(meta(&self.conn, "quarantine_rules")? == Some(quarantine::fingerprint()))
    }

    /// Checks every pattern again under this jkz's rules, once (call
    /// inside a write transaction).
    fn check_quarantines(&self) -> Result<()> {
        if self.rules_current()? {
            return Ok(());
        }
        let all: Vec<(i64, String)> = self
            .conn
            .prepare("SELECT id, text FROM patterns")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (id, text) in all {
            self.set_quarantine(id, &text)?;
        }
        set_meta(&self.conn, "quarantine_rules", quarantine::fingerprint())?;
        Ok(())
    }

    fn delete_pattern(&self, id: i64) -> Result<()> {
        let c = &self.conn;
        let vids: Vec<i64> = c
            .prepare_cached("SELECT id FROM variants WHERE pattern = ?1")?
            .query_map([id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for vid in vids {
            c.execute(
                "UPDATE vocabulary SET variants = variants - 1
                 WHERE word IN (SELECT word FROM words WHERE variant = ?1)",
                [vid],
            )?;
            c.execute("DELETE FROM words WHERE variant = ?1", [vid])?;
        }
        c.execute("DELETE FROM vocabulary WHERE variants <= 0", [])?;
        for sql in [
            "DELETE FROM variants WHERE pattern = ?1",
            "DELETE FROM sources WHERE pattern = ?1",
            "DELETE FROM pattern_issues WHERE pattern = ?1",
            "DELETE FROM injections WHERE pattern = ?1",
            "DELETE FROM patterns_fts WHERE rowid = ?1",
            "DELETE FROM patterns WHERE id = ?1",
        ] {
            c.execute(sql, [id])?;
        }
        Ok(())
    }

    // ---- bookkeeping of records ------------------------------------------

    pub fn is_mined(&self, record: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("SELECT count(*) FROM mined WHERE record = ?1")?
            .query_row([record], |r| r.get::<_, i64>(0))?
            > 0)
    }

    pub fn mark_mined(&self, record: &str) -> Result<()> {
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO mined (record) VALUES (?1)")?
            .execute([record])?;
        Ok(())
    }

    pub fn mined_records(&self) -> Result<std::collections::HashSet<String>> {
        Ok(self
            .conn
            .prepare("SELECT record FROM mined")?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?)
    }

    pub fn feedback_known(&self, record: &str) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached("SELECT count(*) FROM feedback_from WHERE record = ?1")?
            .query_row([record], |r| r.get::<_, i64>(0))?
            > 0)
    }

    /// The distinct patterns injected for `issue` at or before `at` whose
    /// injections no verdict has closed yet.
    pub fn open_injections(&self, issue: u64, at: i64) -> Result<Vec<i64>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT DISTINCT pattern FROM injections
                 WHERE issue = ?1 AND open = 1 AND at <= ?2 ORDER BY pattern",
            )?
            .query_map(params![issue as i64, at], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?)
    }

    // ---- reading --------------------------------------------------------

    /// Every pattern's counts, for ranking for `role`.
    pub fn all_stats(&self, role: Option<&str>) -> Result<Vec<Stats>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {STATS_COLUMNS} | ((instr(roles, ?1) > 0) << 2) FROM patterns"
        ))?;
        let wanted = role.map_or_else(String::new, |r| format!("|{}|", role_name(r)));
        let mut rows = stmt.query([wanted])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(stats_of(r)?);
        }
        Ok(out)
    }

    /// The roles a pattern was seen from.
    pub fn roles(&self, id: i64) -> Result<Vec<String>> {
        let roles: Option<String> = self
            .conn
            .prepare_cached("SELECT roles FROM patterns WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        Ok(roles
            .unwrap_or_default()
            .split('|')
            .filter(|r| !r.is_empty())
            .map(String::from)
            .collect())
    }

    /// The quarantine rule pattern `id`'s text breaks, if any.
    pub fn quarantine(&self, id: i64) -> Result<Option<Quarantine>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT quarantine_rule, quarantine_matched FROM patterns
                 WHERE id = ?1 AND quarantine_rule IS NOT NULL",
            )?
            .query_row([id], |r| {
                let rule: String = r.get(0)?;
                let matched: Option<String> = r.get(1)?;
                Ok(Quarantine::stored(&rule, matched.unwrap_or_default()))
            })
            .optional()?)
    }

    /// The texts of `ids`, in that order (ids that are gone are left out).
    pub fn texts(&self, ids: &[i64]) -> Result<Vec<(i64, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT text FROM patterns WHERE id = ?1")?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(t) = stmt.query_row([id], |r| r.get(0)).optional()? {
                out.push((id, t));
            }
        }
        Ok(out)
    }

    /// The FTS5 matches of `query` (an FTS5 expression), by id, with their
    /// bm25 (lower is better).
    pub fn matches(&self, query: &str) -> Result<HashMap<i64, f64>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT rowid, bm25(patterns_fts) FROM patterns_fts WHERE patterns_fts MATCH ?1",
        )?;
        let rows = stmt.query_map([query], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Everything known of one pattern.
    pub fn detail(&self, id: i64) -> Result<Option<Detail>> {
        let c = &self.conn;
        let Some((stats, text, approved_text, quarantine)) = c
            .prepare_cached(&format!(
                "SELECT {STATS_COLUMNS}, text, approved_text, quarantine_rule, quarantine_matched
                 FROM patterns WHERE id = ?1"
            ))?
            .query_row([id], |r| {
                let rule: Option<String> = r.get(STATS_COUNT + 2)?;
                let matched: Option<String> = r.get(STATS_COUNT + 3)?;
                Ok((
                    stats_of(r)?,
                    r.get(STATS_COUNT)?,
                    r.get(STATS_COUNT + 1)?,
                    rule.map(|rule| Quarantine::stored(&rule, matched.unwrap_or_default())),
                ))
            })
            .optional()?
        else {
            return Ok(None);
        };
        let sources = c
            .prepare_cached(
                "SELECT record, issue, role, seen FROM sources WHERE pattern = ?1 ORDER BY seen, record",
            )?
            .query_map([id], |r| {
                Ok(Source {
                    record: r.get(0)?,
                    issue: r.get::<_, Option<i64>>(1)?.map(|n| n as u64),
                    role: r.get(2)?,
                    seen: rfc3339(r.get(3)?),
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        let variants = c
            .prepare_cached(
                "SELECT text, occurrences FROM variants WHERE pattern = ?1
                 ORDER BY occurrences DESC, first_seen ASC, key ASC",
            )?
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(Some(Detail {
            stats,
            text,
            approved_text,
            quarantine,
            sources,
            variants,
        }))
    }

    /// Where a pattern was seen, for its injected bullet: its first
    /// `issues` issues by number (with the roles seen there; a finding's
    /// source without a role counts as `finding`) and its first `records`
    /// record ids (a record's id starts with its time), and how many there
    /// are in all. Three lookups, however many sources the pattern has.
    pub fn seen_in(&self, id: i64, issues: usize, records: usize) -> Result<SeenIn> {
        let c = &self.conn;
        // `+?1`, and the limits written into the SQL: SQLite plans an
        // ORDER BY with the value bound to a plain `?1` compared with a key
        // column (and with a bound LIMIT's), so each new binding expired the
        // statement and each call parsed it again (three times slower).
        let by_issue = c
            .prepare_cached(&format!(
                "SELECT issue, roles FROM pattern_issues WHERE pattern = +?1 ORDER BY issue LIMIT {issues}"
            ))?
            .query_map([id], |r| {
                let roles: String = r.get(1)?;
                let mut roles: Vec<String> = roles
                    .split('|')
                    .filter(|r| !r.is_empty())
                    .map(String::from)
                    .collect();
                roles.sort();
                Ok((r.get::<_, i64>(0)? as u64, roles))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let first_records = c
            .prepare_cached(&format!(
                "SELECT record FROM sources WHERE pattern = +?1 ORDER BY record LIMIT {records}"
            ))?
            .query_map([id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let (issue_count, record_count) = c
            .prepare_cached("SELECT issues, occurrences FROM patterns WHERE id = ?1")?
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .unwrap_or((0, 0));
        Ok(SeenIn {
            issues: by_issue,
            records: first_records,
            issue_count,
            record_count,
        })
    }

    /// How many patterns there are.
    pub fn count(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("SELECT count(*) FROM patterns", [], |r| r.get(0))?)
    }

    /// Lets the id sequence go on past `max` at least (after a build: no
    /// later pattern takes an id the log names).
    pub(crate) fn reserve_ids(&self, max: i64) -> Result<()> {
        let c = &self.conn;
        let updated = c.execute(
            "UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'patterns'",
            [max],
        )?;
        if updated == 0 && max > 0 {
            c.execute(
                "INSERT INTO sqlite_sequence (name, seq) VALUES ('patterns', ?1)",
                [max],
            )?;
        }
        Ok(())
    }
}

/// The ids a build gives: back to the patterns the log names (key → the
/// first id it names the key with), and to the others the smallest id no
/// one holds or is promised, so that mining the same records in the same
/// order gives every pattern the id it had.
#[derive(Clone, Debug, Default)]
pub struct Reserved {
    pub ids: HashMap<String, i64>,
    promised: std::collections::HashSet<i64>,
    pub max: i64,
    /// Ids below this are all taken or promised.
    next: std::cell::Cell<i64>,
}

impl Reserved {
    pub fn of(events: &[Event]) -> Reserved {
        let mut r = Reserved {
            next: std::cell::Cell::new(1),
            ..Reserved::default()
        };
        for e in events {
            for p in e.patterns() {
                if let Some(id) = parse_tag(&p.id) {
                    if let std::collections::hash_map::Entry::Vacant(v) = r.ids.entry(p.key.clone())
                    {
                        if r.promised.insert(id) {
                            v.insert(id);
                        }
                    }
                    r.max = r.max.max(id);
                }
            }
        }
        r
    }

    /// The id for a new pattern of `key`, given which ids are `taken`.
    fn id_for(&self, key: &str, taken: &dyn Fn(i64) -> Result<bool>) -> Result<i64> {
        if let Some(&id) = self.ids.get(key) {
            if !taken(id)? {
                return Ok(id);
            }
        }
        let mut id = self.next.get();
        while self.promised.contains(&id) || taken(id)? {
            id += 1;
        }
        self.next.set(id + 1);
        Ok(id)
    }
}

/// A role as the `roles` column holds it (no `|` inside).
fn role_name(role: &str) -> String {
    role.replace('|', "/")
}

/// The columns [`stats_of`] reads; the last is the flags: pinned (1),
/// rejected (2), when a role is asked about, seen from it (4), approved
/// (8) and quarantined (16). Two stored columns hold what five did: the
/// scan of every pattern decodes each column of each row.
const STATS_COLUMNS: &str =
    "id, occurrences, helpful, harmful, injected, first_seen, last_seen, last_helpful, reach, flags";
const STATS_COUNT: usize = 10;

fn stats_of(r: &rusqlite::Row) -> rusqlite::Result<Stats> {
    // Read as plain integers: a ranking decodes every pattern's row.
    let int =
        |i: usize| -> rusqlite::Result<i64> { Ok(r.get_ref(i)?.as_i64_or_null()?.unwrap_or(0)) };
    let flags = int(9)?;
    Ok(Stats {
        id: int(0)?,
        occurrences: int(1)?,
        helpful: int(2)?,
        harmful: int(3)?,
        injected: int(4)?,
        first_seen: int(5)?,
        last_seen: int(6)?,
        last_helpful: r.get_ref(7)?.as_i64_or_null()?,
        reach: Reach::from_code(int(8)?),
        pinned: flags & 1 != 0,
        rejected: flags & 2 != 0,
        role_match: flags & 4 != 0,
        approved: flags & 8 != 0,
        quarantined: flags & 16 != 0,
    })
}

fn meta(c: &Connection, name: &str) -> rusqlite::Result<Option<i64>> {
    c.prepare_cached("SELECT value FROM meta WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()
}

fn set_meta(c: &Connection, name: &str, value: i64) -> rusqlite::Result<()> {
    c.prepare_cached("INSERT OR REPLACE INTO meta (name, value) VALUES (?1, ?2)")?
        .execute(params![name, value])?;
    Ok(())
}

/// Moves the corrupt database aside (with its WAL and shared-memory files)
/// so the next open builds it anew. When another process has done so
/// meanwhile (the file at `path` is no longer the corrupt one), leaves it.
fn move_aside(state: &Path, path: &Path, e: &MemoryError) -> Result<String> {
    let aside = state.join(MEMORY_DB_CORRUPT);
    let still_corrupt = match fs::symlink_metadata(path) {
        Ok(meta) => {
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|c| c.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0)))
                .map_or_else(|e| is_corruption(&e), |_| false)
                && fs::symlink_metadata(path).is_ok_and(|m| m.ino() == meta.ino())
        }
        Err(_) => false,
    };
    if still_corrupt {
        fs::rename(path, &aside).map_err(|io| {
            MemoryError::new(format!(
                "{} is corrupt ({}) and could not be moved aside: {io}",
                path.display(),
                e.message
            ))
        })?;
        for suffix in ["-wal", "-shm"] {
            let _ = fs::remove_file(PathBuf::from(format!("{}{suffix}", path.display())));
        }
    }
    Ok(format!(
        "{} was unreadable ({}): moved to {} and rebuilt from the deliberation records and {PATTERNS_FEEDBACK}",
        path.display(),
        e.message,
        aside.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::super::reach::Because;
    use super::*;

    #[test]
    fn the_bundled_sqlite_has_fts5() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(SCHEMA).unwrap();
        c.execute(
            "INSERT INTO patterns_fts (rowid, text) VALUES (1, 'Running the tests first')",
            [],
        )
        .unwrap();
        let hit: i64 = c
            .query_row(
                "SELECT rowid FROM patterns_fts WHERE patterns_fts MATCH 'run'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(hit, 1, "porter stemming: run matches running");
    }

    #[test]
    fn the_stored_reach_follows_issues_and_approval() {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(SCHEMA).unwrap();
        let cases: [(i64, Option<i64>, i64, Reach); 6] = [
            (0, None, 0, Reach::Nowhere),
            (1, Some(42), 0, Reach::Issue(42)),
            (1, Some(0), 0, Reach::Issue(0)),
            (
                super::super::reach::WIDE,
                Some(42),
                0,
                Reach::Everywhere(Because::Seen),
            ),
            (7, Some(1), 0, Reach::Everywhere(Because::Seen)),
            (1, Some(42), 1, Reach::Everywhere(Because::Approved)),
        ];
        for (i, (issues, home, approved, want)) in cases.into_iter().enumerate() {
            c.execute(
                "INSERT INTO patterns (id, key, text, first_seen, last_seen, issues, home_issue, approved)
                 VALUES (?1, 'k', 't', 0, 0, ?2, ?3, ?4)",
                params![i as i64 + 1, issues, home, approved],
            )
            .unwrap();
            let stats = c
                .query_row(
                    &format!("SELECT {STATS_COLUMNS} FROM patterns WHERE id = ?1"),
                    [i as i64 + 1],
                    stats_of,
                )
                .unwrap();
            assert_eq!(stats.reach, want, "{issues} issues, approved {approved}");
            assert_eq!(stats.approved, approved == 1);
        }
        c.execute(
            "UPDATE patterns SET quarantine_rule = 'x', pinned = 1 WHERE id = 1",
            [],
        )
        .unwrap();
        let stats = c
            .query_row(
                &format!("SELECT {STATS_COLUMNS} FROM patterns WHERE id = 1"),
                [],
                stats_of,
            )
            .unwrap();
        assert!(stats.quarantined && stats.pinned && !stats.rejected);
    }

    #[test]
    fn tags() {
        assert_eq!(parse_tag("P12"), Some(12));
        assert_eq!(parse_tag("p7"), Some(7));
        assert_eq!(parse_tag("3"), Some(3));
        for bad in ["", "P", "P0", "Px", "P-1", "P99999999999999999999"] {
            assert_eq!(parse_tag(bad), None, "{bad}");
        }
    }
}
