//! `state/chat.db`: the registry's storage, its schema, and every
//! transaction on it.
//!
//! Each operation is one short transaction (`BEGIN IMMEDIATE` when it reads
//! then writes, so two writers never deadlock on a lock upgrade) under a
//! busy timeout: many hooks from many chats write at once, and a
//! `database is locked` never reaches the user. The wait ends at the
//! caller's deadline: a command waits as long as any jkz writer
//! ([`crate::json_file::lock_wait`]), a hook no longer than its own
//! deadline ([`crate::json_file::HOOK_LOCK_WAIT`] from its start). WAL mode lets readers (the
//! PreToolUse check) run beside a writer; `synchronous=NORMAL` keeps a
//! commit from waiting on the disk (a power cut may forget the last
//! heartbeats, never corrupt the file).
//!
//! A file that is not a database, or whose pages are corrupt, is moved
//! aside to `chat.db.corrupt` and the registry is rebuilt empty
//! ([`with_local_registry`] says so); chats register again on their next hook.
//! A database that cannot be opened or written (a read-only state
//! directory) is an error the caller reports in one line.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

use super::chat::{Chat, Client, Place, HEARTBEAT_EVERY};
use super::claim::{blocking, in_the_way, Claim, Claimed, Holder, Released};
use super::store::{RegistryError, Store, StoreError};

use crate::sqlite::{
    file_to_read, left, open_read_only, open_writable, refuse_link, switch_to_wal,
};
use crate::state_dir::layout::{CHAT_DB, CHAT_DB_CORRUPT};

/// The schema's version (`PRAGMA user_version`). 2 added the client's
/// host and start time (`chats.host`, `chats.pid_start`).
const SCHEMA_VERSION: i64 = 2;

/// Gone chats are forgotten this long after they ended.
const FORGET_GONE_AFTER: i64 = 86_400;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS chats (
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
CREATE TABLE IF NOT EXISTS claims (
    issue      TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL,
    worktree   TEXT,
    acquired   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS claims_by_session ON claims(session_id);
CREATE INDEX IF NOT EXISTS claims_by_worktree ON claims(worktree);
";

/// An open registry.
pub struct Registry {
    conn: Connection,
    /// A schema-1 file read without upgrading it (an observer): it has no
    /// `host` or `pid_start` column.
    schema_1: bool,
}

/// The columns of a chat, in the order [`chat_at`] reads them, each
/// prefixed with `table.`; a schema-1 file reads NULL for the two it lacks.
fn chat_columns(table: &str, schema_1: bool) -> String {
    let mut cols: Vec<String> = [
        "session_id",
        "cwd",
        "worktree",
        "branch",
        "pid",
        "started",
        "heartbeat",
        "ended",
    ]
    .iter()
    .map(|c| format!("{table}.{c}"))
    .collect();
    for c in ["host", "pid_start"] {
        cols.push(if schema_1 {
            "NULL".into()
        } else {
            format!("{table}.{c}")
        });
    }
    cols.join(", ")
}

/// A database error worth rebuilding over: the file is not a database, or
/// its pages are corrupt.
fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// Every chat not gone, with its claims, read from `path` without writing
/// to it (no creation, no schema, no rebuild of a corrupt file): for
/// observers (`jkz ui`) that must leave the state as they found it. SQLite
/// may create the database's `-wal` and `-shm` companions, as any reader of
/// a WAL database does. A registry that does not exist yet lists nothing.
pub fn chats_read_only(path: &Path) -> Result<Vec<(Chat, Vec<Claim>)>, RegistryError> {
    chats_read_only_until(path, Instant::now() + crate::json_file::lock_wait())
}

/// [`chats_read_only`], waiting for writers no later than `deadline` (a
/// hook's is inside its own budget).
pub fn chats_read_only_until(
    path: &Path,
    deadline: Instant,
) -> Result<Vec<(Chat, Vec<Claim>)>, RegistryError> {
    if !file_to_read(path).map_err(RegistryError::Unavailable)? {
        return Ok(Vec::new());
    }
    let read = || -> rusqlite::Result<Vec<(Chat, Vec<Claim>)>> {
        let conn = open_read_only(path, left(deadline))?;
        let has_host: i64 = conn.query_row(
            "SELECT count(*) FROM pragma_table_info('chats') WHERE name = 'host'",
            [],
            |r| r.get(0),
        )?;
        Registry {
            conn,
            schema_1: has_host == 0,
        }
        .chats()
    };
    read().map_err(|e| Failed::Sql(e).unavailable(path))
}

/// Runs `op` on the registry in `root`, creating it when missing, waiting
/// for other writers until `deadline` at most. A corrupt registry is moved
/// aside and rebuilt empty, then `op` runs on the new one; the returned
/// note (one line) says so. (Callers go through
/// [`super::backend::with_registry`], which chooses the backend.)
pub fn with_local_registry<T>(
    root: &Path,
    deadline: Instant,
    mut op: impl FnMut(&mut dyn Store) -> Result<T, StoreError>,
) -> Result<(T, Option<String>), RegistryError> {
    let path = root.join(CHAT_DB);
    let failed = |e: StoreError| match e {
        StoreError::Sqlite(e) => Failed::Sql(e),
        StoreError::Team(e) => Failed::Refused(e.to_string()),
    };
    match Registry::open(&path, deadline).and_then(|mut reg| op(&mut reg).map_err(failed)) {
        Ok(t) => Ok((t, None)),
        Err(Failed::Sql(e)) if is_corruption(&e) => {
            let note = rebuild(root, &path, &e)?;
            let mut reg = Registry::open(&path, deadline).map_err(|f| f.unavailable(&path))?;
            let t = op(&mut reg).map_err(|e| failed(e).unavailable(&path))?;
            Ok((t, Some(note)))
        }
        Err(f) => Err(f.unavailable(&path)),
    }
}

enum Failed {
    Sql(rusqlite::Error),
    Refused(String),
}

impl From<rusqlite::Error> for Failed {
    fn from(e: rusqlite::Error) -> Failed {
        Failed::Sql(e)
    }
}

impl Failed {
    fn unavailable(self, path: &Path) -> RegistryError {
        match self {
            Failed::Sql(e) => RegistryError::Unavailable(format!(
                "{}: {}",
                path.display(),
                one_line(&e.to_string())
            )),
            Failed::Refused(why) => RegistryError::Unavailable(why),
        }
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Moves the corrupt registry aside (with its WAL and shared-memory files)
/// so the next open starts empty. When another process has rebuilt it
/// meanwhile (the file at `path` is no longer the corrupt one), leaves it.
fn rebuild(root: &Path, path: &Path, e: &rusqlite::Error) -> Result<String, RegistryError> {
    let aside = root.join(CHAT_DB_CORRUPT);
    let corrupt = fs::symlink_metadata(path).ok();
    let still_corrupt = match &corrupt {
        Some(meta) => {
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|c| c.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0)))
                .map_or_else(|e| is_corruption(&e), |_| false)
                && fs::symlink_metadata(path).is_ok_and(|m| m.ino() == meta.ino())
        }
        None => false,
    };
    if still_corrupt {
        fs::rename(path, &aside).map_err(|io| {
            RegistryError::Unavailable(format!(
                "{} is corrupt ({}) and could not be moved aside: {io}",
                path.display(),
                one_line(&e.to_string())
            ))
        })?;
        for suffix in ["-wal", "-shm"] {
            let _ = fs::remove_file(PathBuf::from(format!("{}{suffix}", path.display())));
        }
    }
    Ok(format!(
        "{} was unreadable ({}): moved to {} and rebuilt empty; chats register again on their next hook",
        path.display(),
        one_line(&e.to_string()),
        aside.display()
    ))
}

impl Registry {
    /// Opens the registry at `path`, creating it (WAL, schema) when missing;
    /// every wait on another writer ends at `deadline`.
    fn open(path: &Path, deadline: Instant) -> Result<Registry, Failed> {
        refuse_link(path).map_err(Failed::Refused)?;
        let conn = open_writable(path, left(deadline))?;
        let mut reg = Registry {
            conn,
            schema_1: false,
        };
        reg.prepare(deadline)?;
        Ok(reg)
    }

    /// WAL mode and the schema, once per file; afterwards two cheap reads.
    /// A schema-1 file gains the client's host and start time.
    fn prepare(&mut self, deadline: Instant) -> rusqlite::Result<()> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version < SCHEMA_VERSION {
            switch_to_wal(&self.conn, deadline)?;
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute_batch(SCHEMA)?;
            // Another process may have upgraded it meanwhile.
            let has_host: i64 = tx.query_row(
                "SELECT count(*) FROM pragma_table_info('chats') WHERE name = 'host'",
                [],
                |r| r.get(0),
            )?;
            if has_host == 0 {
                tx.execute_batch(
                    "ALTER TABLE chats ADD COLUMN host TEXT;
                     ALTER TABLE chats ADD COLUMN pid_start INTEGER;",
                )?;
            }
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
            tx.commit()?;
        }
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(())
    }

    /// Registers a chat (or re-registers it: a resumed chat is live again),
    /// with its client when known. Also forgets chats gone for more than a
    /// day.
    pub fn register(
        &mut self,
        session: &str,
        place: &Place,
        client: Option<&Client>,
        now: i64,
    ) -> rusqlite::Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // The client's pid, host and start time are one fact: replaced
        // together, or kept together when this event could not tell.
        tx.execute(
            "INSERT INTO chats (session_id, cwd, worktree, branch, pid, started, heartbeat, ended, host, pid_start)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, NULL, ?7, ?8)
             ON CONFLICT(session_id) DO UPDATE SET
                cwd = excluded.cwd, worktree = excluded.worktree, branch = excluded.branch,
                host = CASE WHEN excluded.pid IS NULL THEN host ELSE excluded.host END,
                pid_start = CASE WHEN excluded.pid IS NULL THEN pid_start ELSE excluded.pid_start END,
                pid = coalesce(excluded.pid, pid),
                heartbeat = max(heartbeat, excluded.heartbeat), ended = NULL",
            params![
                session,
                place.cwd,
                place.worktree,
                place.branch,
                client.map(|c| c.pid),
                now,
                client.map(|c| c.host.as_str()),
                client.and_then(|c| c.pid_start),
            ],
        )?;
        tx.execute(
            "DELETE FROM chats WHERE ended IS NOT NULL AND ended < ?1",
            params![now - FORGET_GONE_AFTER],
        )?;
        tx.commit()
    }

    /// Refreshes a chat's heartbeat: a read only, unless the last one is
    /// [`HEARTBEAT_EVERY`] seconds old or more (or the chat is unknown:
    /// then it is registered at `place()`). Returns true when it wrote.
    pub fn heartbeat(
        &mut self,
        session: &str,
        place: impl Fn() -> Place,
        now: i64,
    ) -> rusqlite::Result<bool> {
        let last: Option<(i64, Option<i64>)> = self
            .conn
            .query_row(
                "SELECT heartbeat, ended FROM chats WHERE session_id = ?1",
                [session],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        match last {
            Some((beat, None)) if (0..HEARTBEAT_EVERY).contains(&(now - beat)) => Ok(false),
            Some(_) => {
                self.conn.execute(
                    "UPDATE chats SET heartbeat = max(heartbeat, ?2), ended = NULL
                     WHERE session_id = ?1",
                    params![session, now],
                )?;
                Ok(true)
            }
            None => {
                self.register(session, &place(), None, now)?;
                Ok(true)
            }
        }
    }

    /// Marks a chat gone and releases its claims; returns how many.
    pub fn end(&mut self, session: &str, now: i64) -> rusqlite::Result<usize> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "UPDATE chats SET ended = ?2 WHERE session_id = ?1",
            params![session, now],
        )?;
        let released = tx.execute("DELETE FROM claims WHERE session_id = ?1", [session])?;
        tx.commit()?;
        Ok(released)
    }

    /// Claims `issue` (and `worktree`, when given) for `session`, which is
    /// registered at `place()` first when unknown. Another chat's claim on
    /// the issue, or on a worktree that is `worktree`, contains it or lies
    /// inside it (claimed worktrees never nest), stops it, unless that chat
    /// is stale or gone and `take` is set.
    pub fn claim(
        &mut self,
        session: &str,
        issue: &str,
        worktree: Option<&str>,
        take: bool,
        place: impl Fn() -> Place,
        now: i64,
    ) -> rusqlite::Result<Claimed> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let known: bool = tx.query_row(
            "SELECT count(*) FROM chats WHERE session_id = ?1 AND ended IS NULL",
            [session],
            |r| r.get::<_, i64>(0).map(|n| n > 0),
        )?;
        if known {
            tx.execute(
                "UPDATE chats SET heartbeat = max(heartbeat, ?2) WHERE session_id = ?1",
                params![session, now],
            )?;
        } else {
            let place = place();
            tx.execute(
                "INSERT INTO chats (session_id, cwd, worktree, branch, pid, started, heartbeat, ended)
                 VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?5, NULL)
                 ON CONFLICT(session_id) DO UPDATE SET heartbeat = excluded.heartbeat, ended = NULL",
                params![session, place.cwd, place.worktree, place.branch, now],
            )?;
        }
        let on_issue = holders(
            &tx,
            "WHERE c.issue = ?1 AND c.session_id != ?2",
            params![issue, session],
        )?;
        let with_worktrees = match worktree {
            Some(_) => holders(
                &tx,
                "WHERE c.worktree IS NOT NULL AND c.session_id != ?1",
                params![session],
            )?,
            None => Vec::new(),
        };
        let others = in_the_way(on_issue, with_worktrees, worktree);
        if let Some(blocking) = blocking(&others, take, now) {
            return Ok(Claimed::Held(Box::new(blocking.clone())));
        }
        for h in &others {
            tx.execute("DELETE FROM claims WHERE issue = ?1", [&h.claim.issue])?;
        }
        // Re-claiming one's own issue keeps its date; a new worktree replaces
        // the old, an omitted one keeps it.
        tx.execute(
            "INSERT INTO claims (issue, session_id, worktree, acquired) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(issue) DO UPDATE SET worktree = coalesce(excluded.worktree, worktree)",
            params![issue, session, worktree, now],
        )?;
        tx.commit()?;
        Ok(if others.is_empty() {
            Claimed::Claimed
        } else {
            Claimed::Taken(others)
        })
    }

    /// The claim on `issue`, whoever holds it, with its chat.
    pub fn holder_of(&mut self, issue: &str) -> rusqlite::Result<Option<Holder>> {
        Ok(holders(&self.conn, "WHERE c.issue = ?1", params![issue])?
            .into_iter()
            .next())
    }

    /// Releases `session`'s claim on `issue`.
    pub fn release(&mut self, session: &str, issue: &str) -> rusqlite::Result<Released> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let found = holders(&tx, "WHERE c.issue = ?1", params![issue])?;
        let outcome = match found.into_iter().next() {
            None => Released::NotClaimed,
            Some(h) if h.claim.session_id != session => Released::HeldByOther(Box::new(h)),
            Some(_) => {
                tx.execute("DELETE FROM claims WHERE issue = ?1", [issue])?;
                Released::Released
            }
        };
        tx.commit()?;
        Ok(outcome)
    }

    /// Every chat not gone, with its claims, most recent heartbeat first.
    pub fn chats(&mut self) -> rusqlite::Result<Vec<(Chat, Vec<Claim>)>> {
        let tx = self.conn.transaction()?;
        let chats = {
            let mut stmt = tx.prepare(&format!(
                "SELECT {} FROM chats WHERE ended IS NULL ORDER BY heartbeat DESC, session_id",
                chat_columns("chats", self.schema_1)
            ))?;
            let rows = stmt.query_map([], chat_of_row)?;
            rows.collect::<rusqlite::Result<Vec<Chat>>>()?
        };
        let mut out = Vec::with_capacity(chats.len());
        {
            let mut stmt = tx.prepare(
                "SELECT issue, session_id, worktree, acquired FROM claims
                 WHERE session_id = ?1 ORDER BY length(issue), issue",
            )?;
            for chat in chats {
                let claims = stmt
                    .query_map([&chat.session_id], |r| {
                        Ok(Claim {
                            issue: r.get(0)?,
                            session_id: r.get(1)?,
                            worktree: r.get(2)?,
                            acquired: r.get(3)?,
                            host: None,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<Claim>>>()?;
                out.push((chat, claims));
            }
        }
        tx.commit()?;
        Ok(out)
    }

    /// Every claim held by a chat other than `session`, with its chat.
    pub fn claims_of_others(&mut self, session: &str) -> rusqlite::Result<Vec<Holder>> {
        holders(&self.conn, "WHERE c.session_id != ?1", params![session])
    }

    /// The claims of chats other than `session` that may cover `file` (its
    /// worktree is `file` or an ancestor of it) or `issue`: the PreToolUse
    /// check reads these few rows, not every claim.
    pub fn claims_covering(
        &mut self,
        session: &str,
        file: Option<&str>,
        issue: Option<&str>,
    ) -> rusqlite::Result<Vec<Holder>> {
        holders(
            &self.conn,
            "WHERE c.session_id != ?1 AND (
                (?2 IS NOT NULL AND c.worktree IS NOT NULL
                 AND (?2 = c.worktree OR substr(?2, 1, length(c.worktree) + 1) = c.worktree || '/'))
                OR c.issue = ?3)",
            params![session, file, issue],
        )
    }

    /// Every chat whose client is `pid` started at `pid_start` (see
    /// [`Store::chats_of_client`]).
    pub fn chats_of_client(&mut self, pid: i64, pid_start: i64) -> rusqlite::Result<Vec<Chat>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {} FROM chats WHERE pid = ?1 AND pid_start = ?2
             ORDER BY ended IS NOT NULL, heartbeat DESC, session_id",
            chat_columns("chats", self.schema_1)
        ))?;
        let rows = stmt.query_map(params![pid, pid_start], chat_of_row)?;
        rows.collect()
    }

    /// Forgets `session` when it holds no claim and its heartbeat is still
    /// `heartbeat` (see [`Store::forget`]).
    pub fn forget(&mut self, session: &str, heartbeat: i64) -> rusqlite::Result<bool> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let gone = tx.execute(
            "DELETE FROM chats WHERE session_id = ?1 AND heartbeat = ?2
             AND NOT EXISTS (SELECT 1 FROM claims WHERE claims.session_id = ?1)",
            params![session, heartbeat],
        )?;
        tx.commit()?;
        Ok(gone > 0)
    }

    /// One chat by session id.
    pub fn chat(&mut self, session: &str) -> rusqlite::Result<Option<Chat>> {
        self.conn
            .query_row(
                &format!(
                    "SELECT {} FROM chats WHERE session_id = ?1",
                    chat_columns("chats", self.schema_1)
                ),
                [session],
                chat_of_row,
            )
            .optional()
    }
}

impl Store for Registry {
    fn register(
        &mut self,
        session: &str,
        place: &Place,
        client: Option<&Client>,
        now: i64,
    ) -> Result<(), StoreError> {
        Ok(Registry::register(self, session, place, client, now)?)
    }

    fn heartbeat(
        &mut self,
        session: &str,
        place: &dyn Fn() -> Place,
        now: i64,
    ) -> Result<bool, StoreError> {
        Ok(Registry::heartbeat(self, session, place, now)?)
    }

    fn end(&mut self, session: &str, now: i64) -> Result<usize, StoreError> {
        Ok(Registry::end(self, session, now)?)
    }

    fn claim(
        &mut self,
        session: &str,
        issue: &str,
        worktree: Option<&str>,
        take: bool,
        place: &dyn Fn() -> Place,
        now: i64,
    ) -> Result<Claimed, StoreError> {
        Ok(Registry::claim(
            self, session, issue, worktree, take, place, now,
        )?)
    }

    fn holder_of(&mut self, issue: &str) -> Result<Option<Holder>, StoreError> {
        Ok(Registry::holder_of(self, issue)?)
    }

    fn release(&mut self, session: &str, issue: &str) -> Result<Released, StoreError> {
        Ok(Registry::release(self, session, issue)?)
    }

    fn chats(&mut self) -> Result<Vec<(Chat, Vec<Claim>)>, StoreError> {
        Ok(Registry::chats(self)?)
    }

    fn claims_of_others(&mut self, session: &str) -> Result<Vec<Holder>, StoreError> {
        Ok(Registry::claims_of_others(self, session)?)
    }

    fn claims_covering(
        &mut self,
        session: &str,
        file: Option<&str>,
        issue: Option<&str>,
    ) -> Result<Vec<Holder>, StoreError> {
        Ok(Registry::claims_covering(self, session, file, issue)?)
    }

    fn chat(&mut self, session: &str) -> Result<Option<Chat>, StoreError> {
        Ok(Registry::chat(self, session)?)
    }

    fn chats_of_client(&mut self, pid: i64, pid_start: i64) -> Result<Vec<Chat>, StoreError> {
        Ok(Registry::chats_of_client(self, pid, pid_start)?)
    }

    fn forget(&mut self, session: &str, heartbeat: i64) -> Result<bool, StoreError> {
        Ok(Registry::forget(self, session, heartbeat)?)
    }
}

fn chat_of_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Chat> {
    chat_at(r, 0, r.get(0)?)
}

/// The chat whose columns start at `first` in `r` (in the `chats` table's
/// order), its session id already read.
fn chat_at(r: &rusqlite::Row<'_>, first: usize, session_id: String) -> rusqlite::Result<Chat> {
    Ok(Chat {
        session_id,
        cwd: r.get(first + 1)?,
        worktree: r.get(first + 2)?,
        branch: r.get(first + 3)?,
        pid: r.get(first + 4)?,
        started: r.get(first + 5)?,
        heartbeat: r.get(first + 6)?,
        ended: r.get(first + 7)?,
        host: r.get(first + 8)?,
        pid_start: r.get(first + 9)?,
    })
}

/// Claims matching `filter` (over `claims c`), each with its chat.
fn holders(
    conn: &Connection,
    filter: &str,
    args: impl rusqlite::Params,
) -> rusqlite::Result<Vec<Holder>> {
    let sql = format!(
        "SELECT c.issue, c.session_id, c.worktree, c.acquired, {}
         FROM claims c LEFT JOIN chats h ON h.session_id = c.session_id {filter}
         ORDER BY length(c.issue), c.issue",
        chat_columns("h", false)
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(args, |r| {
        let claim = Claim {
            issue: r.get(0)?,
            session_id: r.get(1)?,
            worktree: r.get(2)?,
            acquired: r.get(3)?,
            host: None,
        };
        let chat = match r.get::<_, Option<String>>(4)? {
            None => None,
            Some(session_id) => Some(chat_at(r, 4, session_id)?),
        };
        Ok(Holder { claim, chat })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::claim::nested;
    use super::*;

    fn place(cwd: &str) -> Place {
        Place {
            cwd: cwd.into(),
            worktree: None,
            branch: None,
        }
    }

    fn open(dir: &Path) -> Registry {
        Registry::open(&dir.join(CHAT_DB), Instant::now() + Duration::from_secs(10))
            .ok()
            .expect("open")
    }

    #[test]
    fn heartbeats_write_at_most_once_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let mut reg = open(dir.path());
        reg.register("a", &place("/p"), None, 1000).unwrap();
        assert!(!reg.heartbeat("a", || place("/p"), 1000 + 5).unwrap());
        assert!(reg.heartbeat("a", || place("/p"), 1000 + 30).unwrap());
        assert_eq!(reg.chat("a").unwrap().unwrap().heartbeat, 1030);
        // An unknown chat is registered by its first heartbeat.
        assert!(reg.heartbeat("b", || place("/q"), 2000).unwrap());
        assert_eq!(reg.chat("b").unwrap().unwrap().cwd, "/q");
    }

    #[test]
    fn a_live_claim_holds_a_stale_one_can_be_taken() {
        let dir = tempfile::tempdir().unwrap();
        let mut reg = open(dir.path());
        let t = 10_000;
        reg.register("a", &place("/p"), None, t).unwrap();
        let c = reg
            .claim("a", "42", Some("/wt/42"), false, || place("/p"), t)
            .unwrap();
        assert_eq!(c, Claimed::Claimed);
        let c = reg.claim("b", "42", None, true, || place("/p"), t).unwrap();
        assert!(matches!(c, Claimed::Held(h) if h.claim.session_id == "a"));
        // The worktree is held as well, under another issue number.
        let c = reg
            .claim("b", "43", Some("/wt/42"), false, || place("/p"), t)
            .unwrap();
        assert!(matches!(c, Claimed::Held(h) if h.claim.issue == "42"));
        let later = t + super::super::chat::STALE_AFTER;
        let c = reg
            .claim("b", "42", None, false, || place("/p"), later)
            .unwrap();
        assert!(matches!(c, Claimed::Held(_)), "stale needs --take");
        let c = reg
            .claim("b", "42", None, true, || place("/p"), later)
            .unwrap();
        assert!(matches!(c, Claimed::Taken(ref hs) if hs[0].claim.session_id == "a"));
        assert_eq!(
            reg.release("a", "42").unwrap(),
            Released::HeldByOther(Box::new(reg.claims_of_others("a").unwrap().remove(0)))
        );
        assert_eq!(reg.release("b", "42").unwrap(), Released::Released);
        assert_eq!(reg.release("b", "42").unwrap(), Released::NotClaimed);
    }

    #[test]
    fn claimed_worktrees_never_nest() {
        let dir = tempfile::tempdir().unwrap();
        let mut reg = open(dir.path());
        let t = 10_000;
        let claim = |reg: &mut Registry, who: &str, issue: &str, wt: &str| {
            reg.claim(who, issue, Some(wt), false, || place("/p"), t)
                .unwrap()
        };
        assert_eq!(claim(&mut reg, "a", "42", "/a/wt-42"), Claimed::Claimed);
        for wt in ["/a", "/a/wt-42/sub", "/a/wt-42"] {
            assert!(
                matches!(claim(&mut reg, "b", "43", wt), Claimed::Held(h) if h.claim.issue == "42"),
                "{wt}"
            );
        }
        // A sibling sharing a prefix is not inside it; the same chat may nest.
        assert_eq!(claim(&mut reg, "b", "43", "/a/wt-4"), Claimed::Claimed);
        assert_eq!(claim(&mut reg, "a", "44", "/a/wt-42/x"), Claimed::Claimed);
        assert!(nested(Path::new("/a/wt-42"), Path::new("/a")));
        assert!(!nested(Path::new("/a/wt-4"), Path::new("/a/wt-42")));
    }

    #[test]
    fn ending_a_chat_releases_its_claims() {
        let dir = tempfile::tempdir().unwrap();
        let mut reg = open(dir.path());
        reg.claim("a", "7", None, false, || place("/p"), 5).unwrap();
        reg.claim("a", "8", None, false, || place("/p"), 5).unwrap();
        assert_eq!(reg.end("a", 6).unwrap(), 2);
        assert!(reg.chats().unwrap().is_empty());
        assert_eq!(
            reg.claim("b", "7", None, false, || place("/p"), 7).unwrap(),
            Claimed::Claimed
        );
    }

    #[test]
    fn a_schema_1_registry_is_read_as_it_is_and_upgraded_by_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CHAT_DB);
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "PRAGMA journal_mode=WAL;
                 CREATE TABLE chats (session_id TEXT PRIMARY KEY NOT NULL, cwd TEXT NOT NULL,
                    worktree TEXT, branch TEXT, pid INTEGER, started INTEGER NOT NULL,
                    heartbeat INTEGER NOT NULL, ended INTEGER);
                 CREATE TABLE claims (issue TEXT PRIMARY KEY NOT NULL, session_id TEXT NOT NULL,
                    worktree TEXT, acquired INTEGER NOT NULL);
                 INSERT INTO chats VALUES ('a', '/p', NULL, NULL, 4242, 1, 1, NULL);
                 INSERT INTO claims VALUES ('7', 'a', NULL, 1);
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        }
        // An observer reads it without changing it.
        let listed = chats_read_only(&path).unwrap();
        assert_eq!(listed[0].0.pid, Some(4242));
        assert_eq!(listed[0].0.host, None);
        assert_eq!(listed[0].1[0].issue, "7");
        // A writer upgrades it in place; rows and claims survive.
        let mut reg = open(dir.path());
        let chat = reg.chat("a").unwrap().unwrap();
        assert_eq!((chat.pid, chat.host), (Some(4242), None));
        let me = super::super::chat::client_of(std::process::id());
        reg.register("a", &place("/p"), Some(&me), 2).unwrap();
        let chat = reg.chat("a").unwrap().unwrap();
        assert_eq!(chat.host, Some(me.host.clone()));
        assert_eq!(chat.pid_start, me.pid_start);
        // An event that cannot tell the client keeps the recorded one whole.
        reg.register("a", &place("/p"), None, 3).unwrap();
        assert_eq!(reg.chat("a").unwrap().unwrap().host, Some(me.host));
        assert_eq!(reg.claims_of_others("b").unwrap().len(), 1);
    }

    #[test]
    fn a_file_that_is_not_a_database_is_rebuilt_empty() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(CHAT_DB), vec![b'x'; 8192]).unwrap();
        let (n, note) =
            with_local_registry(dir.path(), Instant::now() + Duration::from_secs(10), |r| {
                r.chats().map(|c| c.len())
            })
            .unwrap();
        assert_eq!(n, 0);
        let note = note.expect("a note");
        assert!(note.contains("rebuilt empty"), "{note}");
        assert_eq!(
            fs::read(dir.path().join(CHAT_DB_CORRUPT)).unwrap().len(),
            8192
        );
        let (_, note) =
            with_local_registry(dir.path(), Instant::now() + Duration::from_secs(10), |r| {
                r.chats().map(|c| c.len())
            })
            .unwrap();
        assert_eq!(note, None);
    }
}
