//! Team mode's local replica, `state/registry-replica.db`: this machine's
//! copy of the team registry's chats and claims, so that the PreToolUse
//! guard, which runs on every tool call, answers without a connection to
//! the server.
//!
//! How it stays fresh: every conversation jkz has with the team registry
//! anyway (a hook's heartbeat or registration, a claim, a release, `jkz
//! chats`, the guard itself when it had to ask the server) ends with one
//! more message on the same connection ([`super::postgres::TeamRegistry::pull`]):
//! the claims' change counter (`jkz_changes`, counted by a trigger in the
//! same transaction as every change of `jkz_claims`), every chat not gone
//! (their heartbeats move without the counter), and the claims only when
//! the counter differs from the replica's (or every
//! [`CLAIMS_AT_LEAST_EVERY_MS`], whatever the counter says). The answer is
//! one snapshot of the server (one repeatable-read transaction), stamped
//! with the time taken before it was asked for: the replica is never
//! fresher than it says.
//!
//! The bound: the guard reads the replica only while its stamp is at most
//! [`FRESH_FOR_MS`] old (and it is the replica of the same server); past
//! that it asks the server, as without a replica, within the hook's budget,
//! and fails open when the server does not answer. So a claim taken on one
//! machine stops another machine's guard within 2 s while that machine's
//! chats are active, and a server that goes away is noticed within 2 s.
//!
//! Writes never read it: a claim, a release, `jkz state set`'s check, a
//! lock and a circuit are decided by the server, one winner, as before.
//! The replica only ever answers the guard's questions ([`GuardReads`]).
//!
//! A snapshot older than the one stored (two processes refreshing at once)
//! is dropped, so the replica never goes back in time; a file that is
//! missing, damaged or of another version is rebuilt from the next
//! conversation. Commits do not wait for the disk (`synchronous=OFF`): a
//! power cut loses at most a copy the next conversation makes again.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::chat::Chat;
use super::claim::{Claim, Holder};
use super::store::{GuardReads, StoreError};
use crate::sqlite::{file_to_read, left, open_derived, open_read_only, refuse_link, Derived};
use crate::state_dir::layout::REGISTRY_REPLICA;

/// How old the replica may be for the guard to answer from it, in
/// milliseconds.
pub const FRESH_FOR_MS: i64 = 2_000;

/// The claims are copied again at least this often (milliseconds), even
/// when the counter says nothing changed: a counter trigger someone
/// dropped by hand delays a change by this much, never forever.
pub const CLAIMS_AT_LEAST_EVERY_MS: i64 = 30_000;

/// A hook refreshes the copy only when it is at least this old
/// (milliseconds): half the bound, so a machine whose chats are active
/// keeps it fresh, and most hooks pay nothing for it. Commands (a claim,
/// a release) always refresh it.
pub const REFRESH_AFTER_MS: i64 = 1_000;

/// The replica's schema (`PRAGMA user_version`); another is rebuilt.
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE chats (
    session_id TEXT PRIMARY KEY NOT NULL,
    cwd        TEXT NOT NULL,
    worktree   TEXT,
    branch     TEXT,
    pid        INTEGER,
    started    INTEGER NOT NULL,
    heartbeat  INTEGER NOT NULL,
    ended      INTEGER,
    host       TEXT,
    pid_start  INTEGER
);
CREATE TABLE claims (
    issue      TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    worktree   TEXT,
    acquired   INTEGER NOT NULL,
    host       TEXT
);
CREATE INDEX claims_by_session ON claims(session_id);
CREATE TABLE copy (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    server     TEXT NOT NULL,
    changes    INTEGER NOT NULL,
    checked_ms INTEGER NOT NULL,
    claims_ms  INTEGER NOT NULL
);
";

/// The replica's file in the state directory `root`.
pub fn path(root: &Path) -> PathBuf {
    root.join(REGISTRY_REPLICA)
}

/// What the replica holds of the server `server` when a conversation
/// starts: what the pull needs to tell whether the claims must be copied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Known {
    /// The claims' change counter copied last.
    pub changes: Option<i64>,
    /// When the claims were copied last (Unix ms).
    pub claims_ms: Option<i64>,
    /// When the copy last matched the server (Unix ms).
    pub checked_ms: Option<i64>,
}

impl Known {
    /// Whether a hook at `now_ms` leaves the copy as it is: refreshed
    /// less than [`REFRESH_AFTER_MS`] ago.
    pub fn recent(&self, now_ms: i64) -> bool {
        self.checked_ms
            .is_some_and(|at| (0..REFRESH_AFTER_MS).contains(&(now_ms - at)))
    }

    /// Whether the claims must be copied whatever the counter says (none
    /// yet, or the last copy is [`CLAIMS_AT_LEAST_EVERY_MS`] old).
    pub fn wants_claims(&self, now_ms: i64) -> bool {
        match (self.changes, self.claims_ms) {
            (Some(_), Some(at)) => !(0..CLAIMS_AT_LEAST_EVERY_MS).contains(&(now_ms - at)),
            _ => true,
        }
    }
}

/// One snapshot of the server, as the pull read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pulled {
    /// The claims' change counter.
    pub changes: i64,
    /// Unix ms taken before the snapshot was asked for.
    pub read_ms: i64,
    /// Every chat not gone, and every chat holding a claim.
    pub chats: Vec<Chat>,
    /// Every claim, when copied (`None`: the counter was the replica's).
    pub claims: Option<Vec<Claim>>,
}

/// How fresh the replica is, for people (`jkz chats`, `jkz doctor`, the
/// observer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Freshness {
    /// The server it copies (the URL, password masked).
    pub server: String,
    /// When it last matched the server (Unix ms).
    pub checked_ms: i64,
}

impl Freshness {
    /// Whether the guard answers from it at `now_ms`: under
    /// [`FRESH_FOR_MS`] old (a change made just after the copy is seen
    /// within that bound, strictly).
    pub fn is_fresh(&self, now_ms: i64) -> bool {
        (0..FRESH_FOR_MS).contains(&(now_ms - self.checked_ms))
    }

    /// One line for people: `refreshed 1.2 s ago (the guard reads it)`.
    pub fn describe(&self, now_ms: i64) -> String {
        let age = (now_ms - self.checked_ms).max(0);
        let read = if self.is_fresh(now_ms) {
            "the guard reads it"
        } else {
            "older than 2 s: the guard asks the server"
        };
        if age < 60_000 {
            format!("refreshed {:.1} s ago ({read})", age as f64 / 1000.0)
        } else {
            format!("refreshed {} ago ({read})", crate::clock::ago(age / 1000))
        }
    }
}

/// The replica of `server` in `root` as it was last refreshed; `None` when
/// there is none (or it copies another server, or cannot be read).
pub fn freshness(root: &Path, server: &str) -> Option<Freshness> {
    let conn = open_to_read(root, Duration::from_millis(200))?;
    read_copy(&conn)
        .ok()
        .flatten()
        .filter(|c| c.server == server)
        .map(|c| Freshness {
            server: c.server,
            checked_ms: c.checked_ms,
        })
}

/// Each machine in the replica of `server` in `root` (as last copied):
/// its name (`-` when unknown), how many chats not gone it runs, and the
/// issues its chats hold, for `jkz doctor`.
pub fn machines(root: &Path, server: &str) -> Vec<(String, usize, Vec<String>)> {
    let Some(conn) = open_to_read(root, Duration::from_millis(200)) else {
        return Vec::new();
    };
    if !matches!(read_copy(&conn), Ok(Some(c)) if c.server == server) {
        return Vec::new();
    }
    let read = || -> rusqlite::Result<Vec<(String, usize, Vec<String>)>> {
        let mut stmt = conn.prepare(
            "SELECT coalesce(h.host, '-'), count(*),
                    (SELECT group_concat(issue, ',') FROM (SELECT k.issue FROM claims k
                        JOIN chats c ON c.session_id = k.session_id
                        WHERE coalesce(c.host, '-') = coalesce(h.host, '-')
                        ORDER BY length(k.issue), k.issue))
             FROM chats h WHERE h.ended IS NULL GROUP BY 1 ORDER BY 1",
        )?;
        let rows = stmt.query_map([], |r| {
            let issues: Option<String> = r.get(2)?;
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)? as usize,
                issues
                    .map(|i| i.split(',').map(str::to_string).collect())
                    .unwrap_or_default(),
            ))
        })?;
        rows.collect()
    };
    read().unwrap_or_default()
}

/// What the replica of `server` in `root` knows (nothing when there is
/// none, or it copies another server).
pub fn known(root: &Path, server: &str) -> Known {
    let Some(conn) = open_to_read(root, Duration::from_millis(50)) else {
        return Known::default();
    };
    match read_copy(&conn) {
        Ok(Some(c)) if c.server == server => Known {
            changes: Some(c.changes),
            claims_ms: Some(c.claims_ms),
            checked_ms: Some(c.checked_ms),
        },
        _ => Known::default(),
    }
}

/// The replica, opened to answer the guard, when it copies `server` and
/// was refreshed less than [`FRESH_FOR_MS`] before `now_ms`.
pub fn fresh(root: &Path, server: &str, now_ms: i64, deadline: Instant) -> Option<Replica> {
    let conn = open_to_read(root, left(deadline))?;
    let copy = read_copy(&conn).ok().flatten()?;
    let fresh = Freshness {
        server: copy.server,
        checked_ms: copy.checked_ms,
    };
    (fresh.server == server && fresh.is_fresh(now_ms)).then_some(Replica { conn })
}

/// Stores `pulled` (a snapshot of `server`) in the replica in `root`,
/// unless a newer one is there already. Waits for another writer until
/// `deadline`. The error is one line.
pub fn store(root: &Path, server: &str, pulled: &Pulled, deadline: Instant) -> Result<(), String> {
    let path = path(root);
    let shown = |e: rusqlite::Error| format!("{}: {}", path.display(), crate::sqlite::one_line(&e));
    refuse_link(&path)?;
    let mut conn = match open_derived(&path, left(deadline), SCHEMA_VERSION, |tx| {
        tx.execute_batch(SCHEMA)
    })
    .map_err(shown)?
    {
        Derived::Ready(conn) => conn,
        Derived::Rebuild(_) => {
            for suffix in ["", "-wal", "-shm"] {
                let _ = fs::remove_file(format!("{}{suffix}", path.display()));
            }
            match open_derived(&path, left(deadline), SCHEMA_VERSION, |tx| {
                tx.execute_batch(SCHEMA)
            })
            .map_err(shown)?
            {
                Derived::Ready(conn) => conn,
                Derived::Rebuild(why) => return Err(format!("{}: {why}", path.display())),
            }
        }
    };
    // A copy the next conversation makes again needs no disk wait.
    conn.pragma_update(None, "synchronous", "OFF")
        .map_err(shown)?;
    write(&mut conn, server, pulled).map_err(shown)
}

/// The replica's one transaction: the snapshot replaces what is there
/// when it is at least as recent; the claims only when copied (or known
/// unchanged: the counter is the one stored).
fn write(conn: &mut Connection, server: &str, pulled: &Pulled) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let stored = read_copy(&tx)?.filter(|c| c.server == server);
    if let Some(c) = &stored {
        // Another process stored a later snapshot meanwhile (the counter
        // tells two read in the same millisecond apart).
        if pulled.read_ms < c.checked_ms
            || (pulled.read_ms == c.checked_ms && pulled.changes < c.changes)
        {
            return Ok(());
        }
    }
    let claims_ms = match (&pulled.claims, &stored) {
        (Some(_), _) => pulled.read_ms,
        (None, Some(c)) if c.changes == pulled.changes => c.claims_ms,
        // Claims known to differ, or of another server, and not copied.
        (None, _) => return Ok(()),
    };
    tx.execute("DELETE FROM chats", [])?;
    {
        let mut insert = tx.prepare(
            "INSERT OR REPLACE INTO chats (session_id, cwd, worktree, branch, pid, started,
                heartbeat, ended, host, pid_start) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?;
        for c in &pulled.chats {
            insert.execute(params![
                c.session_id,
                c.cwd,
                c.worktree,
                c.branch,
                c.pid,
                c.started,
                c.heartbeat,
                c.ended,
                c.host,
                c.pid_start
            ])?;
        }
    }
    if let Some(claims) = &pulled.claims {
        tx.execute("DELETE FROM claims", [])?;
        let mut insert = tx.prepare(
            "INSERT OR REPLACE INTO claims (issue, session_id, worktree, acquired, host)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for k in claims {
            insert.execute(params![
                k.issue,
                k.session_id,
                k.worktree,
                k.acquired,
                k.host
            ])?;
        }
    }
    tx.execute(
        "INSERT INTO copy (id, server, changes, checked_ms, claims_ms) VALUES (1, ?1, ?2, ?3, ?4)
         ON CONFLICT (id) DO UPDATE SET server = excluded.server, changes = excluded.changes,
            checked_ms = excluded.checked_ms, claims_ms = excluded.claims_ms",
        params![server, pulled.changes, pulled.read_ms, claims_ms],
    )?;
    tx.commit()
}

/// The replica's own record of what it copies.
struct Copy {
    server: String,
    changes: i64,
    checked_ms: i64,
    claims_ms: i64,
}

fn read_copy(conn: &Connection) -> rusqlite::Result<Option<Copy>> {
    conn.query_row(
        "SELECT server, changes, checked_ms, claims_ms FROM copy WHERE id = 1",
        [],
        |r| {
            Ok(Copy {
                server: r.get(0)?,
                changes: r.get(1)?,
                checked_ms: r.get(2)?,
                claims_ms: r.get(3)?,
            })
        },
    )
    .optional()
}

/// The replica opened to read, when there is one of this version.
fn open_to_read(root: &Path, busy: Duration) -> Option<Connection> {
    let path = path(root);
    if !file_to_read(&path).ok()? {
        return None;
    }
    let conn = open_read_only(&path, busy).ok()?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .ok()?;
    (version == SCHEMA_VERSION).then_some(conn)
}

/// The replica, answering the guard.
pub struct Replica {
    conn: Connection,
}

impl Replica {
    /// Claims matching `filter` (over `claims c`), each with its chat.
    fn holders(
        &self,
        filter: &str,
        args: impl rusqlite::Params,
    ) -> Result<Vec<Holder>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT c.issue, c.session_id, c.worktree, c.acquired, c.host,
                    h.session_id, h.cwd, h.worktree, h.branch, h.pid, h.started, h.heartbeat,
                    h.ended, h.host, h.pid_start
             FROM claims c LEFT JOIN chats h ON h.session_id = c.session_id {filter}
             ORDER BY length(c.issue), c.issue"
        ))?;
        let rows = stmt.query_map(args, |r| {
            let claim = Claim {
                issue: r.get(0)?,
                session_id: r.get(1)?,
                worktree: r.get(2)?,
                acquired: r.get(3)?,
                host: r.get(4)?,
            };
            let chat = match r.get::<_, Option<String>>(5)? {
                None => None,
                Some(session_id) => Some(Chat {
                    session_id,
                    cwd: r.get(6)?,
                    worktree: r.get(7)?,
                    branch: r.get(8)?,
                    pid: r.get(9)?,
                    started: r.get(10)?,
                    heartbeat: r.get(11)?,
                    ended: r.get(12)?,
                    host: r.get(13)?,
                    pid_start: r.get(14)?,
                }),
            };
            Ok(Holder { claim, chat })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<Holder>>>()?)
    }
}

impl GuardReads for Replica {
    fn claims_of_others(&mut self, session: &str) -> Result<Vec<Holder>, StoreError> {
        self.holders("WHERE c.session_id != ?1", params![session])
    }

    fn claims_covering(
        &mut self,
        session: &str,
        file: Option<&str>,
        issue: Option<&str>,
    ) -> Result<Vec<Holder>, StoreError> {
        // The same question as the stores' (`super::db`, `super::postgres`).
        self.holders(
            "WHERE c.session_id != ?1 AND (
                (?2 IS NOT NULL AND c.worktree IS NOT NULL
                 AND (?2 = c.worktree OR substr(?2, 1, length(c.worktree) + 1) = c.worktree || '/'))
                OR c.issue = ?3)",
            params![session, file, issue],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(id: &str, beat: i64) -> Chat {
        Chat {
            session_id: id.into(),
            cwd: "/repo".into(),
            worktree: Some("/repo".into()),
            branch: Some("main".into()),
            pid: None,
            host: Some("machine-a".into()),
            pid_start: None,
            started: 1,
            heartbeat: beat,
            ended: None,
        }
    }

    fn claim(issue: &str, id: &str, worktree: Option<&str>) -> Claim {
        Claim {
            issue: issue.into(),
            session_id: id.into(),
            worktree: worktree.map(Into::into),
            acquired: 1,
            host: Some("machine-a".into()),
        }
    }

    fn pulled(changes: i64, read_ms: i64, claims: Option<Vec<Claim>>) -> Pulled {
        Pulled {
            changes,
            read_ms,
            chats: vec![chat("a", read_ms / 1000)],
            claims,
        }
    }

    const SERVER: &str = "postgres://jkz@db/jkz";

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(2)
    }

    fn issues(root: &Path, now_ms: i64) -> Option<Vec<String>> {
        let mut r = fresh(root, SERVER, now_ms, later())?;
        Some(
            r.claims_of_others("b")
                .unwrap()
                .into_iter()
                .map(|h| h.claim.issue)
                .collect(),
        )
    }

    #[test]
    fn the_guard_reads_it_only_within_the_bound_and_for_its_own_server() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            fresh(dir.path(), SERVER, 0, later()).is_none(),
            "no replica yet"
        );
        let at = 1_000_000;
        store(
            dir.path(),
            SERVER,
            &pulled(3, at, Some(vec![claim("42", "a", None)])),
            later(),
        )
        .unwrap();
        assert_eq!(issues(dir.path(), at), Some(vec!["42".to_string()]));
        assert_eq!(
            issues(dir.path(), at + FRESH_FOR_MS - 1),
            Some(vec!["42".to_string()])
        );
        assert_eq!(issues(dir.path(), at + FRESH_FOR_MS), None, "stale");
        assert_eq!(issues(dir.path(), at - 1), None, "a clock gone back");
        assert!(fresh(dir.path(), "postgres://jkz@other/jkz", at, later()).is_none());
        let f = freshness(dir.path(), SERVER).unwrap();
        assert!(f
            .describe(at + 1200)
            .starts_with("refreshed 1.2 s ago (the guard reads it)"));
        assert!(f.describe(at + 5000).contains("the guard asks the server"));
    }

    #[test]
    fn an_older_snapshot_never_replaces_a_newer_and_unchanged_claims_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let at = 1_000_000;
        store(
            dir.path(),
            SERVER,
            &pulled(5, at, Some(vec![claim("42", "a", None)])),
            later(),
        )
        .unwrap();
        // A process that read earlier stores later: dropped.
        store(
            dir.path(),
            SERVER,
            &pulled(4, at - 10, Some(vec![])),
            later(),
        )
        .unwrap();
        assert_eq!(issues(dir.path(), at), Some(vec!["42".to_string()]));
        // Same counter, claims not copied: the claims stay, the stamp moves.
        store(dir.path(), SERVER, &pulled(5, at + 1500, None), later()).unwrap();
        assert_eq!(issues(dir.path(), at + 3000), Some(vec!["42".to_string()]));
        // Another counter without the claims: nothing is stored (the
        // replica would say claims that changed did not).
        store(dir.path(), SERVER, &pulled(6, at + 2000, None), later()).unwrap();
        assert_eq!(issues(dir.path(), at + 3600), None);
        assert_eq!(
            known(dir.path(), SERVER),
            Known {
                changes: Some(5),
                claims_ms: Some(at),
                checked_ms: Some(at + 1500),
            }
        );
        assert_eq!(known(dir.path(), "postgres://x@y/z"), Known::default());
        // A server whose counter went back (recreated): a later full copy wins.
        store(
            dir.path(),
            SERVER,
            &pulled(0, at + 4000, Some(vec![claim("7", "a", None)])),
            later(),
        )
        .unwrap();
        assert_eq!(issues(dir.path(), at + 4000), Some(vec!["7".to_string()]));
    }

    #[test]
    fn it_answers_the_guards_questions_as_the_stores_do() {
        let dir = tempfile::tempdir().unwrap();
        let claims = vec![
            claim("42", "a", Some("/repo/wt/42")),
            claim("43", "b", Some("/repo/wt/43")),
            claim("44", "gone", None),
        ];
        store(dir.path(), SERVER, &pulled(1, 5_000, Some(claims)), later()).unwrap();
        let mut r = fresh(dir.path(), SERVER, 5_000, later()).unwrap();
        let of = |v: Vec<Holder>| -> Vec<(String, bool)> {
            v.into_iter()
                .map(|h| (h.claim.issue, h.chat.is_some()))
                .collect()
        };
        assert_eq!(
            of(r.claims_of_others("b").unwrap()),
            vec![("42".into(), true), ("44".into(), false)]
        );
        assert_eq!(
            of(r.claims_covering("b", Some("/repo/wt/42/src/a.rs"), None)
                .unwrap()),
            vec![("42".into(), true)]
        );
        // A sibling whose name starts the same is not inside it.
        assert!(r
            .claims_covering("b", Some("/repo/wt/420/a.rs"), None)
            .unwrap()
            .is_empty());
        assert_eq!(
            of(r.claims_covering("b", None, Some("44")).unwrap()),
            vec![("44".into(), false)]
        );
        assert!(r
            .claims_covering("a", Some("/repo/wt/42/x"), None)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn machines_name_their_chats_and_claims() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = pulled(
            1,
            5_000,
            Some(vec![claim("43", "a", None), claim("7", "b", None)]),
        );
        let mut b = chat("b", 5);
        b.host = Some("machine-b".into());
        let mut c = chat("c", 5);
        c.host = None;
        p.chats.extend([b, c]);
        store(dir.path(), SERVER, &p, later()).unwrap();
        assert_eq!(
            machines(dir.path(), SERVER),
            vec![
                ("-".to_string(), 1, vec![]),
                ("machine-a".to_string(), 1, vec!["43".to_string()]),
                ("machine-b".to_string(), 1, vec!["7".to_string()]),
            ]
        );
        assert!(machines(dir.path(), "postgres://other@x/y").is_empty());
    }

    #[test]
    fn a_damaged_file_is_rebuilt_by_the_next_copy() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(path(dir.path()), b"not a database at all, not even close").unwrap();
        assert!(fresh(dir.path(), SERVER, 0, later()).is_none());
        store(
            dir.path(),
            SERVER,
            &pulled(1, 9_000, Some(vec![claim("1", "a", None)])),
            later(),
        )
        .unwrap();
        assert_eq!(issues(dir.path(), 9_000), Some(vec!["1".to_string()]));
    }

    #[test]
    fn claims_are_copied_again_at_least_every_thirty_seconds_and_hooks_refresh_once_a_second() {
        assert!(Known::default().wants_claims(0));
        let k = Known {
            changes: Some(1),
            claims_ms: Some(100_000),
            checked_ms: Some(100_000),
        };
        assert!(!k.wants_claims(100_000 + CLAIMS_AT_LEAST_EVERY_MS - 1));
        assert!(k.wants_claims(100_000 + CLAIMS_AT_LEAST_EVERY_MS));
        assert!(k.wants_claims(99_000), "a clock gone back");
        // A hook leaves a copy under a second old as it is.
        assert!(k.recent(100_000 + REFRESH_AFTER_MS - 1));
        assert!(!k.recent(100_000 + REFRESH_AFTER_MS));
        assert!(!k.recent(99_999), "a clock gone back");
        assert!(!Known::default().recent(0));
    }
}
