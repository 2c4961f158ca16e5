//! `state/metrics.db`: the pipeline metrics, derived from the event log's
//! index and brought up to date before every read.
//!
//! What it holds per issue comes from [`super::derive`] over the issue's
//! events; an update derives again only the issues that have events the
//! last update did not see (by the index's sequence numbers). When the index
//! was rebuilt (its generation changed), or the database is damaged or from
//! another version, it is derived anew from the whole index: it is never
//! the truth, only a faster way to it.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, Transaction};

use super::derive::{self, IssueFacts};
use crate::events::index::{sqlite_error, Index};
use crate::events::Event;
use crate::sqlite::{open_derived, Derived};

const VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE issues (issue TEXT PRIMARY KEY, first_ms INTEGER NOT NULL, last_ms INTEGER NOT NULL,
                     phase TEXT, outcome TEXT, outcome_ms INTEGER, review_fix_count INTEGER,
                     qa_fix_count INTEGER, fix_iterations INTEGER, plan_iterations INTEGER);
CREATE TABLE phase_visits (issue TEXT NOT NULL, phase TEXT NOT NULL, entered_ms INTEGER NOT NULL,
                           left_ms INTEGER);
CREATE INDEX phase_visits_by_issue ON phase_visits (issue);
CREATE TABLE agent_runs (issue TEXT, role TEXT NOT NULL, status TEXT NOT NULL, at_ms INTEGER NOT NULL,
                         duration_ms INTEGER, tokens_in INTEGER, tokens_out INTEGER);
CREATE INDEX agent_runs_by_issue ON agent_runs (issue);
CREATE TABLE claims (issue TEXT NOT NULL, session TEXT NOT NULL, from_ms INTEGER NOT NULL, to_ms INTEGER);
CREATE INDEX claims_by_issue ON claims (issue);
CREATE TABLE compactions (id TEXT PRIMARY KEY, session TEXT, at_ms INTEGER NOT NULL);
CREATE TABLE event_counts (type TEXT PRIMARY KEY, n INTEGER NOT NULL);
";

/// An open, up-to-date metrics database.
pub struct MetricsDb {
    pub(super) conn: Connection,
}

impl MetricsDb {
    /// Opens `path` (creating or rebuilding it as needed) and brings it up
    /// to date with `index`.
    pub fn open(path: &Path, index: &Index) -> io::Result<MetricsDb> {
        let conn = match open_db(path)? {
            Derived::Ready(conn) => conn,
            Derived::Rebuild(why) => derive_anew(path, &why)?,
        };
        let mut db = MetricsDb { conn };
        match db.update(index) {
            Ok(()) => Ok(db),
            // Damaged where opening could not see it: derived, so derived anew.
            Err(e) if e.kind() == io::ErrorKind::InvalidData && e.to_string().starts_with(WHAT) => {
                drop(db);
                let mut db = MetricsDb {
                    conn: derive_anew(path, &e.to_string())?,
                };
                db.update(index)?;
                Ok(db)
            }
            Err(e) => Err(e),
        }
    }

    /// Derives what is new in `index` since the last update.
    fn update(&mut self, index: &Index) -> io::Result<()> {
        let generation = index.generation()?;
        let last = index.last_seq()?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let meta = |key: &str| -> io::Result<Option<String>> {
            use rusqlite::OptionalExtension;
            tx.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .optional()
                .map_err(sql)
        };
        let mut seen: i64 = match meta("generation")? {
            Some(g) if g == generation => meta("seq")?.and_then(|s| s.parse().ok()).unwrap_or(0),
            _ => {
                tx.execute_batch(
                    "DELETE FROM issues; DELETE FROM phase_visits; DELETE FROM agent_runs;
                     DELETE FROM claims; DELETE FROM compactions; DELETE FROM event_counts;",
                )
                .map_err(sql)?;
                0
            }
        };
        if seen > last {
            seen = 0; // cannot be: derive everything again
        }
        if seen == last {
            return tx.commit().map_err(sql);
        }
        // What is new: counts by type, the issues it touches, and the
        // compactions and agent runs that belong to no issue.
        let source = index.connection();
        let mut counts = source
            .prepare("SELECT type, count(*) FROM events WHERE seq > ?1 GROUP BY type")
            .map_err(sql)?;
        let mut rows = counts.query([seen]).map_err(sql)?;
        while let Some(r) = rows.next().map_err(sql)? {
            let (kind, n): (String, i64) = (r.get(0).map_err(sql)?, r.get(1).map_err(sql)?);
            tx.execute(
                "INSERT INTO event_counts (type, n) VALUES (?1, ?2) ON CONFLICT (type) DO UPDATE SET n = n + ?2",
                params![kind, n],
            )
            .map_err(sql)?;
        }
        let mut touched = BTreeSet::new();
        if seen > 0 {
            let mut issues = source
                .prepare("SELECT DISTINCT issue FROM events WHERE seq > ?1 AND issue IS NOT NULL")
                .map_err(sql)?;
            let rows = issues
                .query_map([seen], |r| r.get::<_, String>(0))
                .map_err(sql)?;
            for issue in rows {
                touched.insert(issue.map_err(sql)?);
            }
        }
        let mut loose = source
            .prepare(
                "SELECT line FROM events WHERE seq > ?1 AND issue IS NULL
                 AND type IN ('session.compacted', 'agent.finished')",
            )
            .map_err(sql)?;
        let rows = loose
            .query_map([seen], |r| r.get::<_, String>(0))
            .map_err(sql)?;
        for line in rows {
            let Some(e) = Event::parse(line.map_err(sql)?.as_bytes()) else {
                continue;
            };
            let at = derive::event_ms(&e).unwrap_or(0);
            if e.kind == "session.compacted" {
                tx.execute(
                    "INSERT OR IGNORE INTO compactions (id, session, at_ms) VALUES (?1, ?2, ?3)",
                    params![e.id, e.session, at],
                )
                .map_err(sql)?;
            } else {
                insert_run(&tx, None, &derive::agent_run(&e, at)).map_err(sql)?;
            }
        }
        rederive(&tx, index, &touched, seen == 0)?;
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?1), ('seq', ?2)",
            params![generation, last.to_string()],
        )
        .map_err(sql)?;
        tx.commit().map_err(sql)
    }
}

/// The types of event an issue's facts come from ([`derive::derive`]).
const DERIVED_FROM: &str =
    "'phase.changed', 'state.changed', 'agent.finished', 'claim.taken', 'claim.released'";

/// Derives the facts of the `touched` issues again from their events (all
/// issues' events in one pass when `everything`).
fn rederive(
    tx: &Transaction,
    index: &Index,
    touched: &BTreeSet<String>,
    everything: bool,
) -> io::Result<()> {
    let store = |issue: &str, events: &[Event]| -> io::Result<()> {
        if everything || touched.contains(issue) {
            store_facts(tx, &derive::derive(issue, events))?;
        }
        Ok(())
    };
    if everything || touched.len() > 500 {
        // One pass over the index, issue by issue: only the events the
        // facts come from (the index holds the type, so the others are
        // never read).
        let mut stmt = index
            .connection()
            .prepare(&format!(
                "SELECT issue, line FROM events WHERE issue IS NOT NULL AND type IN ({DERIVED_FROM}) ORDER BY issue, id"
            ))
            .map_err(sql)?;
        let mut rows = stmt.query([]).map_err(sql)?;
        let mut current: Option<String> = None;
        let mut events = Vec::new();
        while let Some(r) = rows.next().map_err(sql)? {
            let issue: String = r.get(0).map_err(sql)?;
            let line: String = r.get(1).map_err(sql)?;
            if current.as_deref() != Some(issue.as_str()) {
                if let Some(done) = current.take() {
                    store(&done, &events)?;
                }
                events.clear();
                current = Some(issue);
            }
            events.extend(Event::parse(line.as_bytes()));
        }
        if let Some(done) = current {
            store(&done, &events)?;
        }
        return Ok(());
    }
    let mut stmt = index
        .connection()
        .prepare(&format!(
            "SELECT line FROM events WHERE issue = ?1 AND type IN ({DERIVED_FROM}) ORDER BY id"
        ))
        .map_err(sql)?;
    for issue in touched {
        let lines = stmt
            .query_map([issue], |r| r.get::<_, String>(0))
            .map_err(sql)?;
        let mut events = Vec::new();
        for line in lines {
            events.extend(Event::parse(line.map_err(sql)?.as_bytes()));
        }
        store(issue, &events)?;
    }
    Ok(())
}

fn store_facts(tx: &Transaction, f: &IssueFacts) -> io::Result<()> {
    let issue = f.issue.as_str();
    for table in ["phase_visits", "agent_runs", "claims"] {
        tx.execute(&format!("DELETE FROM {table} WHERE issue = ?1"), [issue])
            .map_err(sql)?;
    }
    let count = |n: Option<u64>| n.map(|n| n.min(i64::MAX as u64) as i64);
    tx.execute(
        "INSERT OR REPLACE INTO issues (issue, first_ms, last_ms, phase, outcome, outcome_ms, review_fix_count,
                                        qa_fix_count, fix_iterations, plan_iterations)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            issue,
            f.first_ms,
            f.last_ms,
            f.phase,
            f.outcome.map(|(o, _)| o.name()),
            f.outcome.map(|(_, at)| at),
            count(f.review_fix_count),
            count(f.qa_fix_count),
            count(f.fix_iterations()),
            count(f.plan_iterations),
        ],
    )
    .map_err(sql)?;
    {
        let mut visit = tx
            .prepare_cached("INSERT INTO phase_visits (issue, phase, entered_ms, left_ms) VALUES (?1, ?2, ?3, ?4)")
            .map_err(sql)?;
        for v in &f.visits {
            visit
                .execute(params![issue, v.phase, v.entered_ms, v.left_ms])
                .map_err(sql)?;
        }
        let mut claim = tx
            .prepare_cached(
                "INSERT INTO claims (issue, session, from_ms, to_ms) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(sql)?;
        for c in &f.claims {
            claim
                .execute(params![issue, c.session, c.from_ms, c.to_ms])
                .map_err(sql)?;
        }
    }
    for run in &f.runs {
        insert_run(tx, Some(issue), run).map_err(sql)?;
    }
    Ok(())
}

fn insert_run(
    tx: &Transaction,
    issue: Option<&str>,
    run: &derive::AgentRun,
) -> rusqlite::Result<usize> {
    tx.prepare_cached(
        "INSERT INTO agent_runs (issue, role, status, at_ms, duration_ms, tokens_in, tokens_out)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        issue,
        run.role,
        run.status,
        run.at_ms,
        run.duration_ms,
        run.tokens_in,
        run.tokens_out
    ])
}

/// What this database is called in errors.
const WHAT: &str = "metrics database";

/// A SQLite error of `metrics.db` as an I/O error.
pub(super) fn sql(e: rusqlite::Error) -> io::Error {
    sqlite_error(WHAT, e)
}

/// Removes the database at `path` (saying why) and creates it empty.
fn derive_anew(path: &Path, why: &str) -> io::Result<Connection> {
    crate::events::warn(format!(
        "{}: {why}: deriving it anew from the event log",
        path.display()
    ));
    for suffix in ["", "-wal", "-shm", "-journal"] {
        match fs::remove_file(PathBuf::from(format!("{}{suffix}", path.display()))) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    match open_db(path)? {
        Derived::Ready(conn) => Ok(conn),
        Derived::Rebuild(why) => Err(io::Error::other(why)),
    }
}

/// Opens the database at `path` (creating it when missing), in 30 s at
/// most when another process holds it.
fn open_db(path: &Path) -> io::Result<Derived> {
    open_derived(path, std::time::Duration::from_secs(30), VERSION, |tx| {
        tx.execute_batch(SCHEMA)
    })
    .map_err(sql)
}
