//! The team registry's tables and their versioned migrations.
//!
//! `jkz_schema` holds one row, the schema's version. Migration N takes the
//! schema from version N-1 to N; every one is idempotent (`IF NOT EXISTS`),
//! so `jkz registry migrate` can re-apply them all to recreate a table that
//! was dropped. Writers apply what is missing on first use; a database
//! whose version is newer than this jkz knows is refused (another machine
//! runs a newer jkz: upgrade this one), never downgraded. Two machines
//! migrating at once serialize on an advisory lock; the second finds the
//! work done.
//!
//! Every table is prefixed `jkz_`, so the registry can share a database
//! with other things (one database, or one schema in `search_path`, per
//! repository: issue numbers are the repository's).

use postgres::error::SqlState;
use postgres::types::Type;
use postgres::GenericClient;

use super::error::{Kind, TeamError};
use super::LockClass;

/// The schema this jkz reads and writes.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Migration N is `MIGRATIONS[N - 1]`.
const MIGRATIONS: [&str; 2] = [
    // 1: chats and claims (as state/chat.db, with the claim's host), locks
    // and circuits (one JSON record each, as in state/locks/ and
    // state/circuit/).
    "CREATE TABLE IF NOT EXISTS jkz_chats (
        session_id text PRIMARY KEY,
        cwd        text NOT NULL,
        worktree   text,
        branch     text,
        pid        bigint,
        host       text,
        pid_start  bigint,
        started    bigint NOT NULL,
        heartbeat  bigint NOT NULL,
        ended      bigint
    );
    CREATE TABLE IF NOT EXISTS jkz_claims (
        issue      text PRIMARY KEY,
        session_id text NOT NULL,
        worktree   text,
        acquired   bigint NOT NULL,
        host       text
    );
    CREATE INDEX IF NOT EXISTS jkz_claims_by_session ON jkz_claims (session_id);
    CREATE INDEX IF NOT EXISTS jkz_claims_by_worktree ON jkz_claims (worktree);
    CREATE TABLE IF NOT EXISTS jkz_locks (
        kind   text NOT NULL,
        name   text NOT NULL,
        record text NOT NULL,
        PRIMARY KEY (kind, name)
    );
    CREATE TABLE IF NOT EXISTS jkz_circuits (
        service text PRIMARY KEY,
        record  text NOT NULL
    );",
    // 2: the claims' change counter, which each machine's local replica
    // compares with its own to know whether the claims changed (one row
    // read instead of every claim). A trigger counts every statement on
    // jkz_claims, in the statement's own transaction, so a reader sees the
    // counter and the claims of one moment.
    "CREATE TABLE IF NOT EXISTS jkz_changes (
        id      integer PRIMARY KEY CHECK (id = 1),
        version bigint NOT NULL
    );
    INSERT INTO jkz_changes (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
    CREATE OR REPLACE FUNCTION jkz_claims_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE jkz_changes SET version = version + 1 WHERE id = 1;
        RETURN NULL;
    END
    $$;
    DROP TRIGGER IF EXISTS jkz_claims_changed ON jkz_claims;
    CREATE TRIGGER jkz_claims_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON jkz_claims
        FOR EACH STATEMENT EXECUTE FUNCTION jkz_claims_changed();",
];

const VERSION_TABLE: &str = "CREATE TABLE IF NOT EXISTS jkz_schema (
    id      integer PRIMARY KEY CHECK (id = 1),
    version integer NOT NULL
)";

/// The statement that reads the recorded version, for a caller that folds
/// it into its own first message ([`super::connect::Schema::Folded`]).
pub const VERSION_QUERY: &str = "SELECT version FROM jkz_schema WHERE id = 1";

/// The recorded version: 0 for a database jkz never used. One round trip
/// (every hook and command asks this first): the row is read straight
/// away, and a missing table answers 0. Not for use inside a transaction,
/// which the missing table's error would abort: see [`version_in`].
pub fn version(client: &mut postgres::Client) -> Result<i32, postgres::Error> {
    match client.query_typed_opt(VERSION_QUERY, &[]) {
        Ok(row) => Ok(row.map_or(0, |r| r.get(0))),
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => Ok(0),
        Err(e) => Err(e),
    }
}

/// [`version`] inside a transaction: the table's existence is asked
/// first, so a missing one is no error.
fn version_in(client: &mut impl GenericClient) -> Result<i32, postgres::Error> {
    let exists: bool = client
        .query_typed_one("SELECT to_regclass('jkz_schema') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_typed_opt("SELECT version FROM jkz_schema WHERE id = 1", &[])?
        .map_or(0, |r| r.get(0)))
}

fn newer(url: &str, found: i32) -> TeamError {
    TeamError::new(
        Kind::NewerSchema,
        url,
        format!(
            "its schema is version {found}, newer than this jkz knows ({SCHEMA_VERSION}): another machine runs a newer jkz; \
             upgrade jkz here (nothing was read or changed)"
        ),
    )
}

/// Checks the version for a reader that must change nothing: newer is
/// refused; older or none is read as it is.
pub fn check(client: &mut postgres::Client, url: &str) -> Result<i32, TeamError> {
    let found = version(client).map_err(|e| TeamError::of(url, &e, false))?;
    if found > SCHEMA_VERSION {
        return Err(newer(url, found));
    }
    Ok(found)
}

/// Brings the schema to [`SCHEMA_VERSION`] when it is older (the first use
/// by a writer); `repair` re-applies every migration even when it is
/// current (`jkz registry migrate`). Returns the version found before.
pub fn migrate(client: &mut postgres::Client, url: &str, repair: bool) -> Result<i32, TeamError> {
    let sql = |e: postgres::Error| {
        match e.code() {
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => TeamError::new(
            Kind::Query,
            url,
            format!(
                "{}: the user may not create tables here; have the database's owner run `jkz registry migrate` once",
                e.as_db_error().map_or(e.to_string(), |d| d.message().to_string())
            ),
        ),
        _ => TeamError::of(url, &e, false),
    }
    };
    let found = version(client).map_err(sql)?;
    if found > SCHEMA_VERSION {
        return Err(newer(url, found));
    }
    if found == SCHEMA_VERSION && (!repair || all_tables_present(client).map_err(sql)?) {
        // A repair re-applies the migrations for a table that was dropped;
        // with every table there it would only take table locks that live
        // chats' transactions wait on (and deadlock with).
        return Ok(found);
    }
    let found = under_migration_lock(client, |tx| {
        // Another machine may have migrated while this one waited.
        let found = version_in(tx)?;
        if found > SCHEMA_VERSION {
            return Ok(found);
        }
        if found < SCHEMA_VERSION || repair {
            let from = if repair { 0 } else { found.max(0) as usize };
            tx.batch_execute(VERSION_TABLE)?;
            for step in &MIGRATIONS[from..] {
                tx.batch_execute(step)?;
            }
            tx.query_typed(
                "INSERT INTO jkz_schema (id, version) VALUES (1, $1)
                 ON CONFLICT (id) DO UPDATE SET version = excluded.version",
                &[(&SCHEMA_VERSION, Type::INT4)],
            )?;
        }
        Ok(found)
    })
    .map_err(sql)?;
    if found > SCHEMA_VERSION {
        return Err(newer(url, found));
    }
    Ok(found)
}

/// Runs the safe repairs of what differs from the schema
/// ([`super::verify`]), under the migration lock, in one transaction: the
/// differences are read again once the lock is held (another machine may
/// have repaired them meanwhile). Returns what was repaired, and what the
/// server refused.
pub fn repair(
    client: &mut postgres::Client,
    url: &str,
) -> Result<Vec<super::verify::Repaired>, TeamError> {
    under_migration_lock(client, |tx| {
        let drifts = super::verify::verify(tx)?;
        super::verify::repair(tx, &drifts)
    })
    .map_err(|e| TeamError::of(url, &e, false))
}

/// True when every jkz table exists (one read, no lock taken).
fn all_tables_present(client: &mut postgres::Client) -> Result<bool, postgres::Error> {
    let names: Vec<&str> = super::verify::TABLES.iter().map(|t| t.name).collect();
    let missing: i64 = client
        .query_typed_one(
            "SELECT count(*) FROM unnest($1::text[]) AS t(name) WHERE to_regclass(t.name) IS NULL",
            &[(&names, Type::TEXT_ARRAY)],
        )?
        .get(0);
    Ok(missing == 0)
}

/// How many times a migration that lost a deadlock is run.
const DEADLOCK_ATTEMPTS: u32 = 3;

/// Runs `body` in one transaction under the migration lock, and commits.
/// A migration takes table locks while chats' own transactions hold
/// theirs, so PostgreSQL may end it as a deadlock's loser: it is then run
/// again from the start, as PostgreSQL advises, up to
/// [`DEADLOCK_ATTEMPTS`] times in all.
fn under_migration_lock<T>(
    client: &mut postgres::Client,
    mut body: impl FnMut(&mut postgres::Transaction<'_>) -> Result<T, postgres::Error>,
) -> Result<T, postgres::Error> {
    let mut attempt = 1;
    loop {
        let mut once = || -> Result<T, postgres::Error> {
            let mut tx = client.transaction()?;
            tx.query_typed(
                "SELECT pg_advisory_xact_lock($1, 0)",
                &[(&(LockClass::Migration as i32), Type::INT4)],
            )?;
            let out = body(&mut tx)?;
            tx.commit()?;
            Ok(out)
        };
        match once() {
            Err(e)
                if attempt < DEADLOCK_ATTEMPTS
                    && e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED) =>
            {
                attempt += 1;
            }
            done => return done,
        }
    }
}
