//! Locks in PostgreSQL (`jkz_locks`): one row per `kind-name` holding the
//! same record as `state/locks/<kind>-<name>.json`, decided by the same
//! rule ([`decide`]). Each attempt is one transaction holding
//! the advisory lock of that `kind-name` (`pg_advisory_xact_lock`), so of
//! any number of acquirers on any number of machines exactly one finds the
//! lock free and writes itself in. Waiting (`--wait`) retries on the same
//! connection.

use std::time::Duration;

use chrono::Utc;
use postgres::GenericClient;

use super::record::{decide, retry, Acquired, LockRecord, Released, Request};
use crate::team::connect::{with_conn, Schema};
use crate::team::{Budget, LockClass, RegistryUrl, TeamError};

/// A transaction holding the advisory lock of `kind-name`.
fn locked<'a>(
    client: &'a mut postgres::Client,
    kind: &str,
    name: &str,
) -> Result<postgres::Transaction<'a>, postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&(LockClass::Lock as i32), &format!("{kind}-{name}")],
    )?;
    Ok(tx)
}

/// The record of `kind-name`; a row that is not a lock record counts as no
/// lock (replaced by the next acquire), as an unreadable lock file does.
fn read(
    tx: &mut impl GenericClient,
    kind: &str,
    name: &str,
) -> Result<(bool, Option<LockRecord>), postgres::Error> {
    let row = tx.query_opt(
        "SELECT record FROM jkz_locks WHERE kind = $1 AND name = $2",
        &[&kind, &name],
    )?;
    Ok(match row {
        None => (false, None),
        Some(r) => (true, serde_json::from_str(r.get::<_, &str>(0)).ok()),
    })
}

/// Takes the lock for `req`, retrying while it is busy for at most `wait`.
pub fn acquire(url: &RegistryUrl, req: &Request, wait: Duration) -> Result<Acquired, TeamError> {
    let req = req.clone();
    // The caller waits for the answer as long as it asked to wait, and a
    // command's budget more.
    with_conn(
        url,
        Budget::command(),
        Schema::Migrate,
        Some(wait),
        move |conn| {
            let client = &mut conn.client;
            let shown = conn.url.clone();
            retry(wait, || {
                let attempt = |client: &mut postgres::Client| -> Result<Acquired, postgres::Error> {
                    let mut tx = locked(client, &req.kind, &req.name)?;
                    let (_, current) = read(&mut tx, &req.kind, &req.name)?;
                    let outcome = decide(current, &req, Utc::now());
                    if let Acquired::Taken { record, .. } = &outcome {
                        let text = serde_json::to_string(record).expect("a lock record serializes");
                        tx.execute(
                            "INSERT INTO jkz_locks (kind, name, record) VALUES ($1, $2, $3)
                         ON CONFLICT (kind, name) DO UPDATE SET record = excluded.record",
                            &[&req.kind, &req.name, &text],
                        )?;
                    }
                    tx.commit()?;
                    Ok(outcome)
                };
                attempt(client).map_err(|e| TeamError::of(&shown, &e, false))
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
        Schema::Migrate,
        Some(Duration::ZERO),
        move |conn| {
            let run = |client: &mut postgres::Client| -> Result<Released, postgres::Error> {
                let mut tx = locked(client, &kind, &name)?;
                let outcome = match read(&mut tx, &kind, &name)? {
                    (false, _) => Released::NotHeld,
                    (true, Some(held)) if held.owner != owner => Released::Refused(held),
                    (true, _) => {
                        tx.execute(
                            "DELETE FROM jkz_locks WHERE kind = $1 AND name = $2",
                            &[&kind, &name],
                        )?;
                        Released::Released
                    }
                };
                tx.commit()?;
                Ok(outcome)
            };
            run(&mut conn.client).map_err(|e| conn.err(e))
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
                .query("SELECT record FROM jkz_locks", &[])
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
