//! Locks in PostgreSQL (`jkz_locks`): one row per `kind-name` holding the
//! same record as `state/locks/<kind>-<name>.json`, decided by the same
//! rule ([`decide`]). Each attempt is one transaction holding
//! the advisory lock of that `kind-name` (`pg_advisory_xact_lock`), so of
//! any number of acquirers on any number of machines exactly one finds the
//! lock free and writes itself in. Waiting (`--wait`) retries on the same
//! connection.
//!
//! An attempt is two round trips: `BEGIN`, the advisory lock and the read
//! go in one message, the write (if any) and `COMMIT` in another (the
//! simple query protocol, values as escaped literals). The
//! read is a statement of its own after the lock's, so under `READ
//! COMMITTED` its snapshot is taken once the lock is held and it sees the
//! previous holder's write. A failure midway drops the connection, and the
//! server rolls the transaction back.

use std::time::Duration;

use chrono::Utc;
use postgres::error::SqlState;
use postgres::SimpleQueryMessage;

use super::record::{decide, retry, Acquired, LockRecord, Released, Request};
use crate::team::connect::{literal, with_conn, Conn, Schema};
use crate::team::schema;
use crate::team::{Budget, LockClass, RegistryUrl, TeamError};

/// What the first message of an attempt found.
struct Found {
    /// The schema version, when the message read it (`None`: no row).
    version: Option<i32>,
    /// Whether the lock has a row, and its record (a row that is not a
    /// lock record counts as no lock, replaced by the next acquire, as an
    /// unreadable lock file is).
    row: (bool, Option<LockRecord>),
}

/// Opens a transaction, takes the advisory lock of `kind-name` and reads
/// its row, in one round trip; on a connection whose schema is not checked
/// yet, the version is read first in the same message, and the attempt is
/// made again once the schema is settled ([`Conn::settle`]).
fn lock_and_read(
    conn: &mut Conn,
    kind: &str,
    name: &str,
) -> Result<(bool, Option<LockRecord>), TeamError> {
    loop {
        let folded = !conn.checked;
        match read_message(&mut conn.client, kind, name, folded) {
            Ok(found) => {
                if folded && conn.settle(found.version)? {
                    continue;
                }
                return Ok(found.row);
            }
            // No version table yet: the transaction is aborted; settle
            // rolls it back and migrates.
            Err(e) if folded && e.code() == Some(&SqlState::UNDEFINED_TABLE) => {
                conn.settle(None)?;
            }
            Err(e) => return Err(conn.err(e)),
        }
    }
}

fn read_message(
    client: &mut postgres::Client,
    kind: &str,
    name: &str,
    folded: bool,
) -> Result<Found, postgres::Error> {
    let version = if folded {
        format!("{};", schema::VERSION_QUERY)
    } else {
        String::new()
    };
    let messages = client.simple_query(&format!(
        "BEGIN; {version}
         SELECT pg_advisory_xact_lock({}, hashtext({}));
         SELECT record FROM jkz_locks WHERE kind = {} AND name = {}",
        LockClass::Lock as i32,
        literal(&format!("{kind}-{name}")),
        literal(kind),
        literal(name),
    ))?;
    let column = |wanted: &str| {
        messages.iter().find_map(|m| match m {
            SimpleQueryMessage::Row(r) if r.columns().first().map(|c| c.name()) == Some(wanted) => {
                Some(r.get(0).unwrap_or_default())
            }
            _ => None,
        })
    };
    Ok(Found {
        version: column("version").and_then(|v| v.parse().ok()),
        row: match column("record") {
            None => (false, None),
            Some(text) => (true, serde_json::from_str(text).ok()),
        },
    })
}

/// Runs `write` (if any) and commits, in one round trip.
fn commit_after(
    client: &mut postgres::Client,
    write: Option<String>,
) -> Result<(), postgres::Error> {
    match write {
        Some(sql) => client.batch_execute(&format!("{sql}; COMMIT")),
        None => client.batch_execute("COMMIT"),
    }
}

/// Takes the lock for `req`, retrying while it is busy for at most `wait`.
pub fn acquire(url: &RegistryUrl, req: &Request, wait: Duration) -> Result<Acquired, TeamError> {
    let req = req.clone();
    // The caller waits for the answer as long as it asked to wait, and a
    // command's budget more.
    with_conn(
        url,
        Budget::command(),
        Schema::Folded,
        Some(wait),
        move |conn| {
            retry(wait, || {
                let attempt = |conn: &mut Conn| -> Result<Acquired, TeamError> {
                    let (_, current) = lock_and_read(conn, &req.kind, &req.name)?;
                    let outcome = decide(current, &req, Utc::now());
                    let write = match &outcome {
                        Acquired::Taken { record, .. } => {
                            let text =
                                serde_json::to_string(record).expect("a lock record serializes");
                            Some(format!(
                                "INSERT INTO jkz_locks (kind, name, record) VALUES ({}, {}, {})
                                 ON CONFLICT (kind, name) DO UPDATE SET record = excluded.record",
                                literal(&req.kind),
                                literal(&req.name),
                                literal(&text)
                            ))
                        }
                        _ => None,
                    };
                    commit_after(&mut conn.client, write).map_err(|e| conn.err(e))?;
                    Ok(outcome)
                };
                attempt(conn)
            })
        },
    )
}

/// Releases `kind-name` if `owner` holds it.
pub fn release(
    url: &RegistryUrl,
    kind: &str,
    name: &str,
    owner: &str,
) -> Result<Released, TeamError> {
    let (kind, name, owner) = (kind.to_string(), name.to_string(), owner.to_string());
    with_conn(
        url,
        Budget::command(),
        Schema::Folded,
        Some(Duration::ZERO),
        move |conn| {
            let (outcome, write) = match lock_and_read(conn, &kind, &name)? {
                (false, _) => (Released::NotHeld, None),
                (true, Some(held)) if held.owner != owner => (Released::Refused(held), None),
                (true, _) => (
                    Released::Released,
                    Some(format!(
                        "DELETE FROM jkz_locks WHERE kind = {} AND name = {}",
                        literal(&kind),
                        literal(&name)
                    )),
                ),
            };
            commit_after(&mut conn.client, write).map_err(|e| conn.err(e))?;
            Ok(outcome)
        },
    )
}

/// Every lock, sorted as `state/locks/` lists its files.
pub fn list(url: &RegistryUrl) -> Result<Vec<LockRecord>, TeamError> {
    with_conn(
        url,
        Budget::command(),
        Schema::ReadOnly,
        Some(Duration::ZERO),
        |conn| {
            if conn.version == 0 {
                return Ok(Vec::new());
            }
            let rows = conn
                .client
                // One unnamed statement: no prepared statement to lose
                // to a transaction pooler between two messages.
                .query_typed("SELECT record FROM jkz_locks", &[])
                .map_err(|e| conn.err(e))?;
            let mut out: Vec<LockRecord> = rows
                .iter()
                .filter_map(|r| serde_json::from_str(r.get::<_, &str>(0)).ok())
                .collect();
            out.sort_by_key(|r| format!("{}.json", r.id()));
            Ok(out)
        },
    )
}
