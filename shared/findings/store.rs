//! `state/cr-history.db`: the findings history's storage, its schema and
//! every transaction on it.
//!
//! SQLite in WAL mode: one writer at a time (`BEGIN IMMEDIATE` under a busy
//! timeout, so a second importer waits its turn instead of failing), and
//! readers — the compaction hooks, the observer, `jkz findings` — never
//! wait for a writer. Each import is one transaction: it is stored whole or
//! not at all, and an input refused halfway (an iteration out of order)
//! leaves nothing changed.
//!
//! Three tables:
//! - `imports`: one row per (issue, iteration, source, role), the unit a
//!   re-import replaces;
//! - `findings`: one row per (issue, file, normalized message) — the
//!   identity ([`super::identity`]) — with its id (never reused), its
//!   dismissal, and what its sightings make of it ([`super::status`]):
//!   status, first and last iteration, sources and the newest sighting's
//!   line, message and severity. These derived columns are recomputed for
//!   the issue in the same transaction as every change, so reading an
//!   issue's findings is one indexed query;
//! - `sightings`: a finding as one import reported it (line, message,
//!   detail, severity, suggestion, author, the source's own id, replies).
//!
//! Unlike the registry, a damaged history is not rebuilt empty behind the
//! user's back: it is what was imported, and the error says how to move it
//! aside.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, ErrorCode, OptionalExtension, TransactionBehavior};

use super::finding::{Reported, Severity};
use super::identity::normalize_message;
use super::status::{derive, ImportRef, Status};
use crate::sqlite::{file_to_read, open_read_only, open_writable, refuse_link, switch_to_wal};

pub use crate::state_dir::layout::FINDINGS_DB as DB_FILE;

/// How long a writer waits for another's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the switch to WAL is retried while another writer holds the
/// file (about 200 tries).
const WAL_SWITCH_WAIT: Duration = Duration::from_secs(1);

/// The schema's version (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS imports (
    id          INTEGER PRIMARY KEY,
    issue       TEXT NOT NULL,
    iteration   INTEGER NOT NULL,
    source      TEXT NOT NULL,
    role        TEXT NOT NULL,
    imported_at INTEGER NOT NULL,
    input       TEXT NOT NULL,
    findings    INTEGER NOT NULL,
    UNIQUE (issue, iteration, source, role)
);
CREATE TABLE IF NOT EXISTS findings (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    issue           TEXT NOT NULL,
    file            TEXT NOT NULL,
    identity        TEXT NOT NULL,
    dismissed_at    INTEGER,
    dismissed_why   TEXT,
    status          TEXT NOT NULL,
    first_iteration INTEGER NOT NULL,
    last_iteration  INTEGER NOT NULL,
    sources         TEXT NOT NULL,
    shown_import    INTEGER NOT NULL,
    line            INTEGER,
    message         TEXT NOT NULL,
    detail          TEXT,
    severity        TEXT,
    rank            INTEGER NOT NULL,
    suggestion      TEXT,
    author          TEXT,
    replies         TEXT,
    UNIQUE (issue, file, identity)
);
CREATE INDEX IF NOT EXISTS findings_by_status
    ON findings (issue, status, rank, last_iteration DESC, file, line);
CREATE TABLE IF NOT EXISTS sightings (
    import_id  INTEGER NOT NULL,
    finding_id INTEGER NOT NULL,
    line       INTEGER,
    message    TEXT NOT NULL,
    detail     TEXT,
    severity   TEXT,
    rank       INTEGER NOT NULL,
    suggestion TEXT,
    author     TEXT,
    reference  TEXT,
    replies    TEXT,
    PRIMARY KEY (import_id, finding_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sightings_by_finding ON sightings (finding_id);
";

/// Why an operation on the history failed.
#[derive(Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The input was refused (exit 3): nothing was changed.
    Refused(String),
    /// The history could not be opened, read or written (exit 1): nothing
    /// was changed.
    Unavailable(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Refused(why) | StoreError::Unavailable(why) => f.write_str(why),
        }
    }
}

/// An open history.
pub struct Store {
    conn: Connection,
    path: std::path::PathBuf,
}

/// One import to store.
pub struct Import<'a> {
    pub issue: &'a str,
    pub iteration: u32,
    pub source: &'a str,
    /// `""` when none.
    pub role: &'a str,
    /// The file imported (`-` for stdin, `jkz run` for a run's verdict).
    pub input: &'a str,
    pub findings: &'a [Reported],
    /// Unix seconds.
    pub now: i64,
}

/// What an import did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Imported {
    /// It replaced an earlier import of the same issue, iteration, source
    /// and role.
    pub replaced: bool,
    /// Distinct findings in the input.
    pub findings: usize,
    /// Reported twice or more within the input (same file and message).
    pub merged: usize,
    /// Findings the history did not know before.
    pub created: usize,
    /// The issue's findings by status afterwards.
    pub counts: Vec<(Status, usize)>,
}

/// A finding as stored, with its derived columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FindingRow {
    pub id: i64,
    pub issue: String,
    pub file: String,
    pub identity: String,
    pub line: Option<u32>,
    pub message: String,
    pub detail: Option<String>,
    pub severity: Option<Severity>,
    pub status: Status,
    pub first_iteration: u32,
    pub last_iteration: u32,
    pub sources: Vec<String>,
    pub suggestion: Option<String>,
    pub author: Option<String>,
    pub replies: Vec<String>,
    pub dismissed_why: Option<String>,
}

/// A finding identity seen in more than one issue ([`Store::recurring`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recurring {
    /// The normalized message ([`super::identity`]).
    pub identity: String,
    /// The newest message reported under it.
    pub message: String,
    /// When that message was imported (Unix seconds).
    pub newest: i64,
    /// Each issue, with when it was last imported there.
    pub seen: Vec<(String, i64)>,
}

/// How many findings of each status (statuses with none left out), in
/// [`Status::ALL`]'s order.
pub type StatusCounts = Vec<(Status, usize)>;

/// One sighting, for `--explain` and the history views.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SightingRow {
    pub finding: i64,
    pub import: ImportRef,
    pub line: Option<u32>,
    pub message: String,
}

fn sql_error(path: &Path, e: &rusqlite::Error) -> StoreError {
    let what = e.to_string().replace(['\n', '\r'], " ");
    if matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    ) {
        return StoreError::Unavailable(format!(
            "{} is not a readable findings history ({what}): move it aside (mv {0} {0}.corrupt) and import again",
            path.display()
        ));
    }
    StoreError::Unavailable(format!("{}: {what}", path.display()))
}

/// The column list [`row_of`] reads, in its order.
const ROW_COLUMNS: &str = "id, issue, file, identity, line, message, detail, severity, status,
    first_iteration, last_iteration, sources, suggestion, author, replies, dismissed_why";

fn row_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<FindingRow> {
    let status: String = r.get(8)?;
    let sources: String = r.get(11)?;
    let replies: Option<String> = r.get(14)?;
    Ok(FindingRow {
        id: r.get(0)?,
        issue: r.get(1)?,
        file: r.get(2)?,
        identity: r.get(3)?,
        line: r.get(4)?,
        message: r.get(5)?,
        detail: r.get(6)?,
        severity: r
            .get::<_, Option<String>>(7)?
            .as_deref()
            .and_then(Severity::parse),
        status: Status::parse(&status).unwrap_or(Status::Open),
        first_iteration: r.get(9)?,
        last_iteration: r.get(10)?,
        sources: split_list(&sources),
        suggestion: r.get(12)?,
        author: r.get(13)?,
        replies: replies
            .and_then(|r| serde_json::from_str(&r).ok())
            .unwrap_or_default(),
        dismissed_why: r.get(15)?,
    })
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// The order findings are listed in: standing ones first (reintroduced,
/// new, open), then resolved, then dismissed; most severe first within.
const LIST_ORDER: &str = "CASE status WHEN 'reintroduced' THEN 0 WHEN 'new' THEN 1
    WHEN 'open' THEN 2 WHEN 'resolved' THEN 3 ELSE 4 END, rank, file, line, id";

impl Store {
    /// Opens the history at `path`, creating it (WAL, schema) when missing.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        refuse_link(path).map_err(StoreError::Unavailable)?;
        let open = || -> rusqlite::Result<Connection> {
            let conn = open_writable(path, BUSY_TIMEOUT)?;
            prepare(&conn)?;
            Ok(conn)
        };
        let conn = open().map_err(|e| sql_error(path, &e))?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Opens the history at `path` to read only (nothing is created; SQLite
    /// may create the `-wal` and `-shm` companions, as any reader of a WAL
    /// database does). `None` when there is no history yet.
    pub fn open_read_only(path: &Path) -> Result<Option<Store>, StoreError> {
        Self::open_read_only_within(path, BUSY_TIMEOUT)
    }

    /// [`Store::open_read_only`], waiting for a writer at most `wait` (a
    /// hook's is inside its own budget).
    pub fn open_read_only_within(path: &Path, wait: Duration) -> Result<Option<Store>, StoreError> {
        if !file_to_read(path).map_err(StoreError::Unavailable)? {
            return Ok(None);
        }
        let open = || -> rusqlite::Result<Connection> {
            let conn = open_read_only(path, wait)?;
            // A history without the schema (another program's file) reads
            // as an error here, not later.
            conn.query_row("SELECT count(*) FROM imports WHERE 0", [], |_| Ok(()))?;
            Ok(conn)
        };
        let conn = open().map_err(|e| sql_error(path, &e))?;
        Ok(Some(Store {
            conn,
            path: path.to_path_buf(),
        }))
    }

    /// Runs `read` in one read transaction: every query in it sees the
    /// same state, and the WAL is consulted once, not per query.
    pub fn reading<T>(
        &self,
        read: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let out = read(self)?;
        tx.finish().map_err(|e| self.err(e))?;
        Ok(out)
    }

    fn err(&self, e: rusqlite::Error) -> StoreError {
        sql_error(&self.path, &e)
    }

    /// Stores one import in one transaction; see the module doc.
    pub fn import(&mut self, import: &Import<'_>) -> Result<Imported, StoreError> {
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| sql_error(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let issue = import.issue;
        let latest: Option<u32> = tx
            .query_row(
                "SELECT max(iteration) FROM imports WHERE issue = ?1",
                [issue],
                |r| r.get(0),
            )
            .map_err(sql)?;
        let known: bool = tx
            .query_row(
                "SELECT count(*) > 0 FROM imports WHERE issue = ?1 AND iteration = ?2",
                params![issue, import.iteration],
                |r| r.get(0),
            )
            .map_err(sql)?;
        if let Some(latest) = latest.filter(|l| *l > import.iteration && !known) {
            return Err(StoreError::Refused(format!(
                "iteration {} is lower than iteration {latest}, already imported for issue {issue}, and was never imported itself: iterations are imported in order (re-importing an iteration already imported replaces it)",
                import.iteration
            )));
        }
        let old: Option<i64> = tx
            .query_row(
                "SELECT id FROM imports WHERE issue = ?1 AND iteration = ?2 AND source = ?3 AND role = ?4",
                params![issue, import.iteration, import.source, import.role],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?;
        if let Some(old) = old {
            tx.execute("DELETE FROM sightings WHERE import_id = ?1", [old])
                .map_err(sql)?;
            tx.execute("DELETE FROM imports WHERE id = ?1", [old])
                .map_err(sql)?;
        }
        tx.execute(
            "INSERT INTO imports (issue, iteration, source, role, imported_at, input, findings)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0)",
            params![
                issue,
                import.iteration,
                import.source,
                import.role,
                import.now,
                import.input
            ],
        )
        .map_err(sql)?;
        let import_id = tx.last_insert_rowid();
        let mut outcome = Imported {
            replaced: old.is_some(),
            ..Imported::default()
        };
        {
            let mut existing = tx
                .prepare("SELECT id FROM findings WHERE issue = ?1 AND file = ?2 AND identity = ?3")
                .map_err(sql)?;
            let mut insert_finding = tx
                .prepare(
                    "INSERT INTO findings (issue, file, identity, status, first_iteration,
                        last_iteration, sources, shown_import, line, message, detail, severity,
                        rank, suggestion, author, replies)
                     VALUES (?1, ?2, ?3, 'new', ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                )
                .map_err(sql)?;
            let mut insert_sighting = tx
                .prepare(
                    "INSERT OR IGNORE INTO sightings (import_id, finding_id, line, message, detail,
                        severity, rank, suggestion, author, reference, replies)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )
                .map_err(sql)?;
            for f in import.findings {
                let identity = normalize_message(&f.message);
                let severity = f.severity.map(Severity::name);
                let rank = Severity::rank(f.severity);
                let replies = (!f.replies.is_empty())
                    .then(|| serde_json::to_string(&f.replies).expect("strings serialize"));
                let id = match existing
                    .query_row(params![issue, f.file, identity], |r| r.get::<_, i64>(0))
                    .optional()
                    .map_err(sql)?
                {
                    Some(id) => id,
                    None => {
                        insert_finding
                            .execute(params![
                                issue,
                                f.file,
                                identity,
                                import.iteration,
                                import.source,
                                import_id,
                                f.line,
                                f.message,
                                f.detail,
                                severity,
                                rank,
                                f.suggestion,
                                f.author,
                                replies
                            ])
                            .map_err(sql)?;
                        outcome.created += 1;
                        tx.last_insert_rowid()
                    }
                };
                let added = insert_sighting
                    .execute(params![
                        import_id,
                        id,
                        f.line,
                        f.message,
                        f.detail,
                        severity,
                        rank,
                        f.suggestion,
                        f.author,
                        f.reference,
                        replies
                    ])
                    .map_err(sql)?;
                if added == 0 {
                    outcome.merged += 1;
                } else {
                    outcome.findings += 1;
                }
            }
        }
        tx.execute(
            "UPDATE imports SET findings = ?2 WHERE id = ?1",
            params![import_id, outcome.findings as i64],
        )
        .map_err(sql)?;
        refresh(&tx, issue).map_err(sql)?;
        outcome.counts = counts(&tx, issue).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(outcome)
    }

    /// Dismisses finding `id` with a reason; returns it as it now stands,
    /// or `None` when there is no such finding.
    pub fn dismiss(
        &mut self,
        id: i64,
        why: &str,
        now: i64,
    ) -> Result<Option<FindingRow>, StoreError> {
        let path = self.path.clone();
        let sql = |e: rusqlite::Error| sql_error(&path, &e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        let issue: Option<String> = tx
            .query_row("SELECT issue FROM findings WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(sql)?;
        let Some(issue) = issue else {
            return Ok(None);
        };
        tx.execute(
            "UPDATE findings SET dismissed_at = ?2, dismissed_why = ?3 WHERE id = ?1",
            params![id, now, why],
        )
        .map_err(sql)?;
        refresh(&tx, &issue).map_err(sql)?;
        let row = tx
            .query_row(
                &format!("SELECT {ROW_COLUMNS} FROM findings WHERE id = ?1"),
                [id],
                row_of,
            )
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(Some(row))
    }

    /// Every finding identity seen in two or more issues, dismissed findings
    /// left out (what the learned patterns take as candidates, see
    /// [`crate::patterns::findings`]): per identity, for each issue, its
    /// newest message and when it was last imported (Unix seconds), ordered
    /// by identity and issue.
    pub fn recurring(&self) -> Result<Vec<Recurring>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT f.identity, f.issue, f.message, max(i.imported_at)
                 FROM findings f
                 JOIN sightings s ON s.finding_id = f.id
                 JOIN imports i ON i.id = s.import_id
                 WHERE f.dismissed_at IS NULL AND f.identity IN (
                     SELECT identity FROM findings WHERE dismissed_at IS NULL
                     GROUP BY identity HAVING count(DISTINCT issue) >= 2)
                 GROUP BY f.identity, f.issue
                 ORDER BY f.identity, f.issue",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                ))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.err(e))?;
        let mut out: Vec<Recurring> = Vec::new();
        for (identity, issue, message, at) in rows {
            match out.last_mut() {
                Some(last) if last.identity == identity => {
                    if at >= last.newest {
                        last.message = message;
                        last.newest = at;
                    }
                    last.seen.push((issue, at));
                }
                _ => out.push(Recurring {
                    identity,
                    message,
                    newest: at,
                    seen: vec![(issue, at)],
                }),
            }
        }
        Ok(out)
    }

    /// The issue's findings as they stand now, optionally of one status, in
    /// list order.
    pub fn findings(
        &self,
        issue: &str,
        status: Option<Status>,
    ) -> Result<Vec<FindingRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM findings WHERE issue = ?1 AND (?2 IS NULL OR status = ?2)
                 ORDER BY {LIST_ORDER}"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![issue, status.map(Status::name)], row_of)
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>());
        rows.map_err(|e| self.err(e))
    }

    /// The issue's findings of the given statuses, most severe first (then
    /// in the order of `statuses`, the most recently seen, by place), at
    /// most `limit`: what the compaction hooks show. One index walk of at
    /// most `limit` rows per status, merged: no sort of all the issue's
    /// findings.
    pub fn most_severe(
        &self,
        issue: &str,
        statuses: &[Status],
        limit: usize,
    ) -> Result<Vec<FindingRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {ROW_COLUMNS} FROM findings WHERE issue = ?1 AND status = ?2
                 ORDER BY rank, last_iteration DESC, file, line LIMIT ?3"
            ))
            .map_err(|e| self.err(e))?;
        let mut all = Vec::new();
        for status in statuses {
            let rows = stmt
                .query_map(params![issue, status.name(), limit as i64], row_of)
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.err(e))?;
            all.extend(rows);
        }
        let order = |s: Status| statuses.iter().position(|x| *x == s);
        all.sort_by(|a, b| {
            (
                Severity::rank(a.severity),
                order(a.status),
                std::cmp::Reverse(a.last_iteration),
                &a.file,
                a.line,
                a.id,
            )
                .cmp(&(
                    Severity::rank(b.severity),
                    order(b.status),
                    std::cmp::Reverse(b.last_iteration),
                    &b.file,
                    b.line,
                    b.id,
                ))
        });
        all.truncate(limit);
        Ok(all)
    }

    /// The issue's findings by status, and its iterations imported.
    pub fn summary(&self, issue: &str) -> Result<(StatusCounts, Vec<u32>), StoreError> {
        let counts = counts(&self.conn, issue).map_err(|e| self.err(e))?;
        let iterations = self.iterations(issue)?;
        Ok((counts, iterations))
    }

    /// The issue's iterations imported, in order.
    pub fn iterations(&self, issue: &str) -> Result<Vec<u32>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT DISTINCT iteration FROM imports WHERE issue = ?1 ORDER BY 1")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([issue], |r| r.get(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<u32>>>());
        rows.map_err(|e| self.err(e))
    }

    /// The issue's imports and every sighting of its findings.
    pub fn history(&self, issue: &str) -> Result<(Vec<ImportRef>, Vec<SightingRow>), StoreError> {
        let read = || -> rusqlite::Result<(Vec<ImportRef>, Vec<SightingRow>)> {
            let imports = imports_of(&self.conn, issue)?;
            let by_id: HashMap<i64, &ImportRef> = imports.iter().map(|i| (i.id, i)).collect();
            let mut stmt = self.conn.prepare_cached(
                "SELECT s.finding_id, s.import_id, s.line, s.message
                 FROM sightings s JOIN imports i ON i.id = s.import_id
                 WHERE i.issue = ?1 ORDER BY i.iteration, s.import_id, s.finding_id",
            )?;
            let rows = stmt.query_map([issue], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get(2)?,
                    r.get(3)?,
                ))
            })?;
            let mut sightings = Vec::new();
            for row in rows {
                let (finding, import, line, message) = row?;
                if let Some(i) = by_id.get(&import) {
                    sightings.push(SightingRow {
                        finding,
                        import: (*i).clone(),
                        line,
                        message,
                    });
                }
            }
            Ok((imports, sightings))
        };
        read().map_err(|e| self.err(e))
    }

    /// The issue's findings as they stood at iteration `as_of`: each with
    /// the status, iterations and sources of then, and the line and message
    /// of its latest sighting by then.
    pub fn findings_as_of(&self, issue: &str, as_of: u32) -> Result<Vec<FindingRow>, StoreError> {
        let (imports, sightings) = self.history(issue)?;
        let rows = self.findings(issue, None)?;
        Ok(as_of_rows(&rows, &imports, &sightings, as_of))
    }

    /// The issue's findings as they stood at each iteration imported, in
    /// order (one read of the history).
    pub fn findings_by_iteration(
        &self,
        issue: &str,
    ) -> Result<Vec<(u32, Vec<FindingRow>)>, StoreError> {
        let (imports, sightings) = self.history(issue)?;
        let rows = self.findings(issue, None)?;
        let mut iterations: Vec<u32> = imports.iter().map(|i| i.iteration).collect();
        iterations.dedup();
        Ok(iterations
            .into_iter()
            .map(|k| (k, as_of_rows(&rows, &imports, &sightings, k)))
            .collect())
    }

    /// One finding by id.
    pub fn finding(&self, id: i64) -> Result<Option<FindingRow>, StoreError> {
        self.conn
            .query_row(
                &format!("SELECT {ROW_COLUMNS} FROM findings WHERE id = ?1"),
                [id],
                row_of,
            )
            .optional()
            .map_err(|e| self.err(e))
    }
}

/// `rows` (as they stand now) as they stood at iteration `as_of`, in list
/// order; findings not seen by then are left out.
fn as_of_rows(
    rows: &[FindingRow],
    imports: &[ImportRef],
    sightings: &[SightingRow],
    as_of: u32,
) -> Vec<FindingRow> {
    let pairs: Vec<(i64, i64)> = sightings.iter().map(|s| (s.finding, s.import.id)).collect();
    let dismissed: std::collections::HashSet<i64> = rows
        .iter()
        .filter(|r| r.status == Status::Dismissed)
        .map(|r| r.id)
        .collect();
    let derived = derive(imports, &pairs, &|id| dismissed.contains(&id), Some(as_of));
    let shown: HashMap<(i64, i64), &SightingRow> = sightings
        .iter()
        .map(|s| ((s.finding, s.import.id), s))
        .collect();
    let mut out: Vec<FindingRow> = rows
        .iter()
        .filter_map(|row| {
            let d = derived.get(&row.id)?;
            let mut row = row.clone();
            if let Some(s) = shown.get(&(row.id, d.shown)) {
                row.line = s.line;
                row.message = s.message.clone();
            }
            row.status = d.status;
            row.first_iteration = d.first_iteration;
            row.last_iteration = d.last_iteration;
            row.sources = d.sources.clone();
            Some(row)
        })
        .collect();
    let group = |s: Status| match s {
        Status::Reintroduced => 0,
        Status::New => 1,
        Status::Open => 2,
        Status::Resolved => 3,
        Status::Dismissed => 4,
    };
    out.sort_by(|a, b| {
        (
            group(a.status),
            Severity::rank(a.severity),
            &a.file,
            a.line,
            a.id,
        )
            .cmp(&(
                group(b.status),
                Severity::rank(b.severity),
                &b.file,
                b.line,
                b.id,
            ))
    });
    out
}

/// WAL mode and the schema, once per file.
fn prepare(conn: &Connection) -> rusqlite::Result<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version != SCHEMA_VERSION {
        switch_to_wal(conn, Instant::now() + WAL_SWITCH_WAIT)?;
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))?;
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(())
}

fn imports_of(conn: &Connection, issue: &str) -> rusqlite::Result<Vec<ImportRef>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, iteration, source, role FROM imports WHERE issue = ?1 ORDER BY iteration, id",
    )?;
    let rows = stmt.query_map([issue], |r| {
        Ok(ImportRef {
            id: r.get(0)?,
            iteration: r.get(1)?,
            source: r.get(2)?,
            role: r.get(3)?,
        })
    })?;
    rows.collect()
}

fn counts(conn: &Connection, issue: &str) -> rusqlite::Result<Vec<(Status, usize)>> {
    let mut stmt = conn
        .prepare_cached("SELECT status, count(*) FROM findings WHERE issue = ?1 GROUP BY status")?;
    let rows = stmt.query_map([issue], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
    })?;
    let mut found: HashMap<Status, usize> = HashMap::new();
    for row in rows {
        let (status, n) = row?;
        if let Some(s) = Status::parse(&status) {
            found.insert(s, n as usize);
        }
    }
    Ok(Status::ALL
        .into_iter()
        .filter_map(|s| found.get(&s).map(|n| (s, *n)))
        .collect())
}

/// Recomputes the derived columns of the issue's findings, and removes the
/// findings no sighting is left of (a re-import that no longer reports
/// them). Only rows that changed are written.
fn refresh(conn: &Connection, issue: &str) -> rusqlite::Result<()> {
    let imports = imports_of(conn, issue)?;
    let mut sightings = Vec::new();
    {
        let mut stmt = conn.prepare_cached(
            "SELECT s.finding_id, s.import_id FROM sightings s JOIN imports i ON i.id = s.import_id
             WHERE i.issue = ?1",
        )?;
        let rows = stmt.query_map([issue], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            sightings.push(row?);
        }
    }
    type Current = (i64, bool, String, u32, u32, String, i64);
    let current: Vec<Current> = {
        let mut stmt = conn.prepare_cached(
            "SELECT id, dismissed_at IS NOT NULL, status, first_iteration, last_iteration, sources,
                    shown_import
             FROM findings WHERE issue = ?1",
        )?;
        let rows = stmt.query_map([issue], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let dismissed: std::collections::HashSet<i64> =
        current.iter().filter(|c| c.1).map(|c| c.0).collect();
    let derived = derive(&imports, &sightings, &|id| dismissed.contains(&id), None);
    let mut remove = conn.prepare_cached("DELETE FROM findings WHERE id = ?1")?;
    let mut update = conn.prepare_cached(
        "UPDATE findings SET status = ?2, first_iteration = ?3, last_iteration = ?4, sources = ?5
         WHERE id = ?1",
    )?;
    let mut show = conn.prepare_cached(
        "UPDATE findings SET shown_import = ?2,
            (line, message, detail, severity, rank, suggestion, author, replies) =
            (SELECT line, message, detail, severity, rank, suggestion, author, replies
             FROM sightings WHERE import_id = ?2 AND finding_id = ?1)
         WHERE id = ?1",
    )?;
    for (id, _, status, first, last, sources, shown) in current {
        let Some(d) = derived.get(&id) else {
            remove.execute([id])?;
            continue;
        };
        let joined = d.sources.join(",");
        if d.status.name() != status
            || d.first_iteration != first
            || d.last_iteration != last
            || joined != sources
        {
            update.execute(params![
                id,
                d.status.name(),
                d.first_iteration,
                d.last_iteration,
                joined
            ])?;
        }
        if d.shown != shown {
            show.execute(params![id, d.shown])?;
        }
    }
    Ok(())
}

impl FindingRow {
    /// The finding as `jkz findings --json` and the observer show it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id,
            "issue": self.issue,
            "file": self.file,
            "line": self.line,
            "message": self.message,
            "status": self.status.name(),
            "severity": self.severity.map(Severity::name),
            "first_iteration": self.first_iteration,
            "last_iteration": self.last_iteration,
            "sources": self.sources,
            "detail": self.detail,
            "suggestion": self.suggestion,
            "author": self.author,
            "replies": self.replies,
            "dismissed_why": self.dismissed_why,
        })
    }

    /// `file:line`, or the file alone.
    pub fn place(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.file),
            None => self.file.clone(),
        }
    }
}
