//! The registry's [`Store`] in PostgreSQL: the tables `jkz_chats` and
//! `jkz_claims` ([`crate::team::schema`]), the same transactions as
//! `state/chat.db` ([`super::db`]) and the same rules, shared
//! ([`in_the_way`], [`blocking`]). A claim, a release and a chat's end hold
//! the registry's advisory lock for their transaction, as `BEGIN IMMEDIATE`
//! holds SQLite's write lock: a claim reads every claimed worktree to keep
//! them from nesting, which no row lock could guard. Chats and claims
//! record the machine they were made on.

use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{GenericClient, IsolationLevel, Row, SimpleQueryMessage, SimpleQueryRow};

use super::chat::{Chat, Client, Place, HEARTBEAT_EVERY};
use super::claim::{blocking, in_the_way, Claim, Claimed, Holder, Released};
use super::replica::{Known, Pulled};
use super::store::{Store, StoreError};
use crate::team::connect::{literal, with_conn, Conn, Schema};
use crate::team::error::{Kind, TeamError};
use crate::team::schema;
use crate::team::{Budget, LockClass, RegistryUrl};

/// Gone chats are forgotten this long after they ended (as locally).
const FORGET_GONE_AFTER: i64 = 86_400;

/// The registry on an open connection.
pub struct TeamRegistry<'a> {
    conn: &'a mut Conn,
}

/// Runs `op` on the team registry at `url` within `budget` (the schema is
/// brought up to date first).
pub fn with_team_registry<T, F>(
    url: &RegistryUrl,
    budget: Budget,
    mut op: F,
) -> Result<T, TeamError>
where
    T: Send + 'static,
    F: FnMut(&mut dyn Store) -> Result<T, StoreError> + Send + 'static,
{
    with_conn(
        url,
        budget,
        Schema::Folded,
        Some(Duration::ZERO),
        move |conn| {
            let shown = conn.url.clone();
            let mut reg = TeamRegistry { conn };
            op(&mut reg).map_err(|e| match e {
                StoreError::Team(t) => t,
                StoreError::Sqlite(e) => TeamError::new(Kind::Query, &shown, e.to_string()),
            })
        },
    )
}

/// [`with_team_registry`], then, on the same connection, a snapshot for
/// the local replica ([`TeamRegistry::pull`]) given what it knows. A
/// snapshot that fails is `None`: the caller's answer stands.
pub fn with_team_registry_pulling<T, F>(
    url: &RegistryUrl,
    budget: Budget,
    known: Known,
    mut op: F,
) -> Result<(T, Option<Pulled>), TeamError>
where
    T: Send + 'static,
    F: FnMut(&mut dyn Store) -> Result<T, StoreError> + Send + 'static,
{
    with_conn(
        url,
        budget,
        Schema::Folded,
        Some(Duration::ZERO),
        move |conn| {
            let shown = conn.url.clone();
            let mut reg = TeamRegistry { conn };
            let t = op(&mut reg).map_err(|e| match e {
                StoreError::Team(t) => t,
                StoreError::Sqlite(e) => TeamError::new(Kind::Query, &shown, e.to_string()),
            })?;
            Ok((t, reg.pull(known).ok()))
        },
    )
}

/// Every chat not gone, with its claims, changing nothing (no migration):
/// for the observer. A database jkz never used lists nothing.
pub fn chats_read_only(
    url: &RegistryUrl,
    budget: Budget,
) -> Result<Vec<(Chat, Vec<Claim>)>, TeamError> {
    with_conn(
        url,
        budget,
        Schema::ReadOnly,
        Some(Duration::ZERO),
        |conn| {
            if conn.version == 0 {
                return Ok(Vec::new());
            }
            TeamRegistry { conn }.chats().map_err(|e| match e {
                StoreError::Team(t) => t,
                StoreError::Sqlite(e) => TeamError::new(Kind::Query, "", e.to_string()),
            })
        },
    )
}

const CHAT_COLUMNS: &str =
    "session_id, cwd, worktree, branch, pid, started, heartbeat, ended, host, pid_start";

fn chat_at(r: &Row, first: usize) -> Chat {
    Chat {
        session_id: r.get(first),
        cwd: r.get(first + 1),
        worktree: r.get(first + 2),
        branch: r.get(first + 3),
        pid: r.get(first + 4),
        started: r.get(first + 5),
        heartbeat: r.get(first + 6),
        ended: r.get(first + 7),
        host: r.get(first + 8),
        pid_start: r.get(first + 9),
    }
}

fn claim_at(r: &Row) -> Claim {
    Claim {
        issue: r.get(0),
        session_id: r.get(1),
        worktree: r.get(2),
        acquired: r.get(3),
        host: r.get(4),
    }
}

/// Claims matching `filter` (over `jkz_claims c`), each with its chat.
fn holders(
    client: &mut impl GenericClient,
    filter: &str,
    args: &[(&(dyn ToSql + Sync), Type)],
) -> Result<Vec<Holder>, postgres::Error> {
    let sql = format!(
        "SELECT c.issue, c.session_id, c.worktree, c.acquired, c.host,
                h.session_id, h.cwd, h.worktree, h.branch, h.pid, h.started, h.heartbeat,
                h.ended, h.host, h.pid_start
         FROM jkz_claims c LEFT JOIN jkz_chats h ON h.session_id = c.session_id {filter}
         ORDER BY length(c.issue), c.issue"
    );
    Ok(client
        .query_typed(&sql, args)?
        .iter()
        .map(|r| Holder {
            claim: claim_at(r),
            chat: r.get::<_, Option<String>>(5).map(|_| chat_at(r, 5)),
        })
        .collect())
}

/// Registers `session` when it is not a live chat yet, else refreshes its
/// heartbeat (the first step of a claim).
fn register_or_beat(
    client: &mut impl GenericClient,
    session: &str,
    place: &dyn Fn() -> Place,
    now: i64,
) -> Result<(), postgres::Error> {
    let known = client
        .query_typed_opt(
            "SELECT 1 FROM jkz_chats WHERE session_id = $1 AND ended IS NULL",
            &[(&session, Type::TEXT)],
        )?
        .is_some();
    if known {
        client.query_typed(
            "UPDATE jkz_chats SET heartbeat = GREATEST(heartbeat, $2) WHERE session_id = $1",
            &[(&session, Type::TEXT), (&now, Type::INT8)],
        )?;
    } else {
        let place = place();
        let host = crate::process::hostname();
        client.query_typed(
            "INSERT INTO jkz_chats (session_id, cwd, worktree, branch, pid, started, heartbeat, ended, host)
             VALUES ($1, $2, $3, $4, NULL, $5, $5, NULL, $6)
             ON CONFLICT (session_id) DO UPDATE SET heartbeat = excluded.heartbeat, ended = NULL",
            &[
                (&session, Type::TEXT),
                (&place.cwd, Type::TEXT),
                (&place.worktree, Type::TEXT),
                (&place.branch, Type::TEXT),
                (&now, Type::INT8),
                (&host, Type::TEXT),
            ],
        )?;
    }
    Ok(())
}

impl TeamRegistry<'_> {
    /// One snapshot for the local replica, in one message and one
    /// repeatable-read transaction: the claims' change counter, every chat
    /// not gone or holding a claim, and the claims when the counter is not
    /// `known`'s (or `known` wants them anyway).
    pub fn pull(&mut self, known: Known) -> Result<Pulled, StoreError> {
        self.conn.checked()?;
        let read_ms = crate::clock::now_ms();
        let every = known.wants_claims(read_ms) || known.changes.is_none();
        let known_changes = known
            .changes
            .map_or_else(|| "NULL".to_string(), |n| n.to_string());
        let sql = format!(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
             SELECT version AS changes FROM jkz_changes WHERE id = 1;
             SELECT {CHAT_COLUMNS} FROM jkz_chats
                 WHERE ended IS NULL OR session_id IN (SELECT session_id FROM jkz_claims);
             SELECT issue, session_id, worktree, acquired, host FROM jkz_claims
                 WHERE {every} OR (SELECT version FROM jkz_changes WHERE id = 1)
                       IS DISTINCT FROM {known_changes};
             COMMIT"
        );
        let messages = self
            .conn
            .client
            .simple_query(&sql)
            .map_err(|e| self.err(e))?;
        let mut changes = None;
        let (mut chats, mut claims) = (Vec::new(), Vec::new());
        let text = |r: &SimpleQueryRow, i: usize| r.get(i).map(str::to_string);
        let int = |r: &SimpleQueryRow, i: usize| r.get(i).and_then(|v| v.parse::<i64>().ok());
        for m in &messages {
            let SimpleQueryMessage::Row(r) = m else {
                continue;
            };
            match r.columns().first().map(|c| c.name()) {
                Some("changes") => changes = int(r, 0),
                Some("session_id") => chats.push(Chat {
                    session_id: text(r, 0).unwrap_or_default(),
                    cwd: text(r, 1).unwrap_or_default(),
                    worktree: text(r, 2),
                    branch: text(r, 3),
                    pid: int(r, 4),
                    started: int(r, 5).unwrap_or(0),
                    heartbeat: int(r, 6).unwrap_or(0),
                    ended: int(r, 7),
                    host: text(r, 8),
                    pid_start: int(r, 9),
                }),
                Some("issue") => claims.push(Claim {
                    issue: text(r, 0).unwrap_or_default(),
                    session_id: text(r, 1).unwrap_or_default(),
                    worktree: text(r, 2),
                    acquired: int(r, 3).unwrap_or(0),
                    host: text(r, 4),
                }),
                _ => {}
            }
        }
        let changes = changes.ok_or_else(|| {
            StoreError::Team(TeamError::new(
                Kind::Query,
                &self.conn.url,
                "jkz_changes holds no counter: run `jkz registry migrate --repair`",
            ))
        })?;
        let copied = every || known.changes != Some(changes);
        Ok(Pulled {
            changes,
            read_ms,
            chats,
            claims: copied.then_some(claims),
        })
    }

    fn err(&self, e: postgres::Error) -> StoreError {
        StoreError::Team(self.conn.err(e))
    }

    /// The chat's last heartbeat and end. The hooks' most frequent read: on
    /// a connection whose schema is not checked yet, the version is read in
    /// the same message ([`Schema::Folded`]), one round trip for both.
    fn last_beat(&mut self, session: &str) -> Result<Option<(i64, Option<i64>)>, StoreError> {
        loop {
            if self.conn.checked {
                return self
                    .conn
                    .client
                    .query_typed_opt(
                        "SELECT heartbeat, ended FROM jkz_chats WHERE session_id = $1",
                        &[(&session, Type::TEXT)],
                    )
                    .map(|r| r.map(|r| (r.get::<_, i64>(0), r.get::<_, Option<i64>>(1))))
                    .map_err(|e| self.err(e));
            }
            let sql = format!(
                "{}; SELECT heartbeat, ended FROM jkz_chats WHERE session_id = {}",
                schema::VERSION_QUERY,
                literal(session)
            );
            let messages = match self.conn.client.simple_query(&sql) {
                Ok(m) => m,
                // No version table yet: migrate, then read again.
                Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => {
                    self.conn.settle(None)?;
                    continue;
                }
                Err(e) => return Err(self.err(e)),
            };
            let rows: Vec<&SimpleQueryRow> = messages
                .iter()
                .filter_map(|m| match m {
                    SimpleQueryMessage::Row(r) => Some(r),
                    _ => None,
                })
                .collect();
            let version = rows
                .iter()
                .find(|r| r.columns().first().map(|c| c.name()) == Some("version"))
                .and_then(|r| r.get(0)?.parse().ok());
            if self.conn.settle(version)? {
                continue;
            }
            let int = |v: Option<&str>| v.and_then(|v| v.parse::<i64>().ok());
            return Ok(rows
                .iter()
                .find(|r| r.columns().first().map(|c| c.name()) == Some("heartbeat"))
                .and_then(|r| Some((int(r.get(0))?, int(r.get(1))))));
        }
    }

    /// A transaction holding the registry's advisory lock.
    fn locked(&mut self) -> Result<postgres::Transaction<'_>, postgres::Error> {
        let mut tx = self.conn.client.transaction()?;
        tx.query_typed(
            "SELECT pg_advisory_xact_lock($1, 0)",
            &[(&(LockClass::Registry as i32), Type::INT4)],
        )?;
        Ok(tx)
    }
}

impl Store for TeamRegistry<'_> {
    fn register(
        &mut self,
        session: &str,
        place: &Place,
        client: Option<&Client>,
        now: i64,
    ) -> Result<(), StoreError> {
        self.conn.checked()?;
        // The client's pid, host and start time are one fact, replaced
        // together; without a client, the machine is still recorded.
        let host = client.map_or_else(crate::process::hostname, |c| c.host.clone());
        let run = |c: &mut postgres::Client| -> Result<(), postgres::Error> {
            c.query_typed(
                "INSERT INTO jkz_chats (session_id, cwd, worktree, branch, pid, started, heartbeat, ended, host, pid_start)
                 VALUES ($1, $2, $3, $4, $5, $6, $6, NULL, $7, $8)
                 ON CONFLICT (session_id) DO UPDATE SET
                    cwd = excluded.cwd, worktree = excluded.worktree, branch = excluded.branch,
                    host = CASE WHEN excluded.pid IS NULL THEN coalesce(jkz_chats.host, excluded.host)
                                ELSE excluded.host END,
                    pid_start = CASE WHEN excluded.pid IS NULL THEN jkz_chats.pid_start
                                     ELSE excluded.pid_start END,
                    pid = coalesce(excluded.pid, jkz_chats.pid),
                    heartbeat = GREATEST(jkz_chats.heartbeat, excluded.heartbeat), ended = NULL",
                &[
                    (&session, Type::TEXT),
                    (&place.cwd, Type::TEXT),
                    (&place.worktree, Type::TEXT),
                    (&place.branch, Type::TEXT),
                    (&client.map(|c| c.pid), Type::INT8),
                    (&now, Type::INT8),
                    (&host, Type::TEXT),
                    (&client.and_then(|c| c.pid_start), Type::INT8),
                ],
            )?;
            c.query_typed(
                "DELETE FROM jkz_chats WHERE ended IS NOT NULL AND ended < $1",
                &[(&(now - FORGET_GONE_AFTER), Type::INT8)],
            )?;
            Ok(())
        };
        run(&mut self.conn.client).map_err(|e| self.err(e))
    }

    fn heartbeat(
        &mut self,
        session: &str,
        place: &dyn Fn() -> Place,
        now: i64,
    ) -> Result<bool, StoreError> {
        let last = self.last_beat(session)?;
        match last {
            Some((beat, None)) if (0..HEARTBEAT_EVERY).contains(&(now - beat)) => Ok(false),
            Some(_) => {
                self.conn
                    .client
                    .query_typed(
                        "UPDATE jkz_chats SET heartbeat = GREATEST(heartbeat, $2), ended = NULL
                         WHERE session_id = $1",
                        &[(&session, Type::TEXT), (&now, Type::INT8)],
                    )
                    .map_err(|e| self.err(e))?;
                Ok(true)
            }
            None => {
                self.register(session, &place(), None, now)?;
                Ok(true)
            }
        }
    }

    fn end(&mut self, session: &str, now: i64) -> Result<usize, StoreError> {
        self.conn.checked()?;
        let run = |reg: &mut Self| -> Result<usize, postgres::Error> {
            let mut tx = reg.locked()?;
            tx.query_typed(
                "UPDATE jkz_chats SET ended = $2 WHERE session_id = $1",
                &[(&session, Type::TEXT), (&now, Type::INT8)],
            )?;
            let released = tx
                .query_typed(
                    "DELETE FROM jkz_claims WHERE session_id = $1 RETURNING 1",
                    &[(&session, Type::TEXT)],
                )?
                .len();
            tx.commit()?;
            Ok(released)
        };
        run(self).map_err(|e| self.err(e))
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
        self.conn.checked()?;
        let run = |reg: &mut Self| -> Result<Claimed, postgres::Error> {
            let mut tx = reg.locked()?;
            register_or_beat(&mut tx, session, place, now)?;
            let on_issue = holders(
                &mut tx,
                "WHERE c.issue = $1 AND c.session_id != $2",
                &[(&issue, Type::TEXT), (&session, Type::TEXT)],
            )?;
            let with_worktrees = match worktree {
                Some(_) => holders(
                    &mut tx,
                    "WHERE c.worktree IS NOT NULL AND c.session_id != $1",
                    &[(&session, Type::TEXT)],
                )?,
                None => Vec::new(),
            };
            let others = in_the_way(on_issue, with_worktrees, worktree);
            if let Some(b) = blocking(&others, take, now) {
                return Ok(Claimed::Held(Box::new(b.clone())));
            }
            for h in &others {
                tx.query_typed(
                    "DELETE FROM jkz_claims WHERE issue = $1",
                    &[(&h.claim.issue, Type::TEXT)],
                )?;
            }
            // Re-claiming one's own issue keeps its date and machine; a new
            // worktree replaces the old, an omitted one keeps it.
            tx.query_typed(
                "INSERT INTO jkz_claims (issue, session_id, worktree, acquired, host)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (issue) DO UPDATE SET worktree = coalesce(excluded.worktree, jkz_claims.worktree)",
                &[
                    (&issue, Type::TEXT),
                    (&session, Type::TEXT),
                    (&worktree, Type::TEXT),
                    (&now, Type::INT8),
                    (&crate::process::hostname(), Type::TEXT),
                ],
            )?;
            tx.commit()?;
            Ok(if others.is_empty() {
                Claimed::Claimed
            } else {
                Claimed::Taken(others)
            })
        };
        run(self).map_err(|e| self.err(e))
    }

    fn holder_of(&mut self, issue: &str) -> Result<Option<Holder>, StoreError> {
        self.conn.checked()?;
        holders(
            &mut self.conn.client,
            "WHERE c.issue = $1",
            &[(&issue, Type::TEXT)],
        )
        .map(|h| h.into_iter().next())
        .map_err(|e| self.err(e))
    }

    fn release(&mut self, session: &str, issue: &str) -> Result<Released, StoreError> {
        self.conn.checked()?;
        let run = |reg: &mut Self| -> Result<Released, postgres::Error> {
            let mut tx = reg.locked()?;
            let found = holders(&mut tx, "WHERE c.issue = $1", &[(&issue, Type::TEXT)])?;
            let outcome = match found.into_iter().next() {
                None => Released::NotClaimed,
                Some(h) if h.claim.session_id != session => Released::HeldByOther(Box::new(h)),
                Some(_) => {
                    tx.query_typed(
                        "DELETE FROM jkz_claims WHERE issue = $1",
                        &[(&issue, Type::TEXT)],
                    )?;
                    Released::Released
                }
            };
            tx.commit()?;
            Ok(outcome)
        };
        run(self).map_err(|e| self.err(e))
    }

    fn chats(&mut self) -> Result<Vec<(Chat, Vec<Claim>)>, StoreError> {
        self.conn.checked()?;
        let run = |reg: &mut Self| -> Result<Vec<(Chat, Vec<Claim>)>, postgres::Error> {
            let mut tx = reg
                .conn
                .client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let chats: Vec<Chat> = tx
                .query_typed(
                    &format!(
                        "SELECT {CHAT_COLUMNS} FROM jkz_chats WHERE ended IS NULL
                         ORDER BY heartbeat DESC, session_id"
                    ),
                    &[],
                )?
                .iter()
                .map(|r| chat_at(r, 0))
                .collect();
            let claims: Vec<Claim> = tx
                .query_typed(
                    "SELECT issue, session_id, worktree, acquired, host FROM jkz_claims
                     ORDER BY length(issue), issue",
                    &[],
                )?
                .iter()
                .map(claim_at)
                .collect();
            tx.commit()?;
            Ok(chats
                .into_iter()
                .map(|chat| {
                    let held = claims
                        .iter()
                        .filter(|k| k.session_id == chat.session_id)
                        .cloned()
                        .collect();
                    (chat, held)
                })
                .collect())
        };
        run(self).map_err(|e| self.err(e))
    }

    fn claims_of_others(&mut self, session: &str) -> Result<Vec<Holder>, StoreError> {
        self.conn.checked()?;
        holders(
            &mut self.conn.client,
            "WHERE c.session_id != $1",
            &[(&session, Type::TEXT)],
        )
        .map_err(|e| self.err(e))
    }

    fn claims_covering(
        &mut self,
        session: &str,
        file: Option<&str>,
        issue: Option<&str>,
    ) -> Result<Vec<Holder>, StoreError> {
        self.conn.checked()?;
        holders(
            &mut self.conn.client,
            "WHERE c.session_id != $1 AND (
                ($2::text IS NOT NULL AND c.worktree IS NOT NULL
                 AND ($2::text = c.worktree
                      OR substr($2::text, 1, length(c.worktree) + 1) = c.worktree || '/'))
                OR c.issue = $3::text)",
            &[
                (&session, Type::TEXT),
                (&file, Type::TEXT),
                (&issue, Type::TEXT),
            ],
        )
        .map_err(|e| self.err(e))
    }

    fn chat(&mut self, session: &str) -> Result<Option<Chat>, StoreError> {
        self.conn.checked()?;
        self.conn
            .client
            .query_typed_opt(
                &format!("SELECT {CHAT_COLUMNS} FROM jkz_chats WHERE session_id = $1"),
                &[(&session, Type::TEXT)],
            )
            .map(|r| r.map(|r| chat_at(&r, 0)))
            .map_err(|e| self.err(e))
    }

    fn chats_of_client(&mut self, pid: i64, pid_start: i64) -> Result<Vec<Chat>, StoreError> {
        self.conn.checked()?;
        self.conn
            .client
            .query_typed(
                &format!(
                    "SELECT {CHAT_COLUMNS} FROM jkz_chats WHERE pid = $1 AND pid_start = $2
                     ORDER BY ended IS NOT NULL, heartbeat DESC, session_id"
                ),
                &[(&pid, Type::INT8), (&pid_start, Type::INT8)],
            )
            .map(|rows| rows.iter().map(|r| chat_at(r, 0)).collect())
            .map_err(|e| self.err(e))
    }

    fn forget(&mut self, session: &str, heartbeat: i64) -> Result<bool, StoreError> {
        self.conn.checked()?;
        let run = |reg: &mut Self| -> Result<bool, postgres::Error> {
            let mut tx = reg.locked()?;
            let gone = tx
                .query_typed(
                    "DELETE FROM jkz_chats WHERE session_id = $1 AND heartbeat = $2
                     AND NOT EXISTS (SELECT 1 FROM jkz_claims WHERE jkz_claims.session_id = $1)
                     RETURNING 1",
                    &[(&session, Type::TEXT), (&heartbeat, Type::INT8)],
                )?
                .len();
            tx.commit()?;
            Ok(gone > 0)
        };
        run(self).map_err(|e| self.err(e))
    }
}
