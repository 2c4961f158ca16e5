//! `jkz registry migrate`, and the team registry's lines in `jkz doctor`.
//!
//! Both compare every jkz table, column by column, with the schema
//! ([`super::verify`]): the version a database records says which
//! migrations ran, not what became of the tables since.
//!
//! Exit codes of `jkz registry migrate`: 0 the schema is current (created,
//! upgraded, or checked, and with `--repair` repaired) and every table is
//! as the schema makes it; 1 no team registry is configured, the URL cannot
//! be used, the database cannot be reached or refuses, its schema is newer
//! than this jkz knows, or a table differs from the schema (each
//! difference named, table and column, with the SQL that repairs it).

use std::io::Write;
use std::time::{Duration, Instant};

use super::config::{backend, Backend};
use super::connect::{with_conn, Schema};
use super::error::TeamError;
use super::schema::{self, SCHEMA_VERSION};
use super::url::{Budget, RegistryUrl};
use super::verify::{verify, Drift, Repaired};
use crate::exit::{Failure, EXIT_FAILED, EXIT_OK};
use crate::state_dir::StateDir;

#[derive(clap::Args, Debug, Clone)]
pub struct RegistryArgs {
    #[command(subcommand)]
    pub command: RegistryCommand,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum RegistryCommand {
    /// Bring the team registry's tables (JKZ_REGISTRY_URL, or jkz.registryUrl
    /// in the repository's git config) to this jkz's schema version: create them, upgrade
    /// them, or recreate one that was dropped; then compare every table's
    /// columns with the schema and name each difference (table and column)
    /// with the SQL that repairs it. Writers do this on first use (the
    /// comparison aside); a schema newer than this jkz knows is refused.
    Migrate(MigrateArgs),
}

/// `jkz registry migrate`.
#[derive(clap::Args, Debug, Clone)]
pub struct MigrateArgs {
    /// Also repair each difference from the schema where that is safe (a
    /// renamed column renamed back, a missing column added, a NOT NULL put
    /// right, a missing primary key added); what is not safe (another type,
    /// a NOT NULL column missing from a table with rows) is shown with the
    /// SQL to run.
    #[arg(long)]
    pub repair: bool,
}

/// The team registry's URL for `state`, or why there is none.
fn team_url(state: &StateDir) -> Result<RegistryUrl, Failure> {
    match backend(state.path()).map_err(|why| Failure::new(EXIT_FAILED, why))? {
        Backend::Team(url, _) => Ok(url),
        Backend::Local => Err(Failure::new(
            EXIT_FAILED,
            format!(
                "no team registry: set {} or run `jkz install --registry postgres://USER@HOST:PORT/DATABASE`; \
                 the local registry (state/chat.db) needs no migration",
                super::config::REGISTRY_URL_ENV
            ),
        )),
    }
}

pub fn run(args: &RegistryArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    match &args.command {
        RegistryCommand::Migrate(migrate) => {
            let url = team_url(state)?;
            let repair = migrate.repair;
            let (found, repaired, drifts) = with_conn(
                &url,
                Budget::command(),
                Schema::ReadOnly,
                Some(Duration::ZERO),
                move |conn| {
                    let found = conn.version;
                    let mut repaired = Vec::new();
                    let mut drifts = Vec::new();
                    if found == SCHEMA_VERSION {
                        if repair {
                            repaired = schema::repair(&mut conn.client, &conn.url)?;
                        }
                        drifts = verify(&mut conn.client).map_err(|e| conn.err(e))?;
                    }
                    // The migrations again (they recreate a dropped table or
                    // index), unless a table differs: they would stumble on
                    // it (an index on a renamed column), and the difference
                    // is what to say.
                    if drifts
                        .iter()
                        .all(|d| matches!(d, Drift::MissingTable { .. }))
                    {
                        schema::migrate(&mut conn.client, &conn.url, true)?;
                        if repair && found < SCHEMA_VERSION {
                            repaired = schema::repair(&mut conn.client, &conn.url)?;
                        }
                        drifts = verify(&mut conn.client).map_err(|e| conn.err(e))?;
                    }
                    Ok((found, repaired, drifts))
                },
            )
            .map_err(|e| Failure::new(EXIT_FAILED, e.to_string()))?;
            let what = if found == 0 {
                "tables created".to_string()
            } else if found < SCHEMA_VERSION {
                format!("upgraded from version {found}")
            } else if drifts.is_empty() {
                "up to date; every table and column checked".to_string()
            } else {
                "recorded, but the tables differ from it".to_string()
            };
            writeln!(
                out,
                "team registry {url}: schema version {SCHEMA_VERSION} ({what})"
            )
            .map_err(writing)?;
            for r in &repaired {
                match r {
                    Repaired::Done(d) => {
                        writeln!(out, "repaired {}: {} ({})", d.place(), d.what(), d.repair())
                    }
                    Repaired::Refused(d, why) => writeln!(
                        out,
                        "not repaired {}: the server refused `{}`: {why}",
                        d.place(),
                        d.repair()
                    ),
                }
                .map_err(writing)?;
            }
            for d in &drifts {
                writeln!(out, "differs {}", d.line()).map_err(writing)?;
            }
            out.flush().map_err(writing)?;
            if drifts.is_empty() {
                return Ok(EXIT_OK);
            }
            let safe = drifts.iter().filter(|d| d.is_safe()).count();
            let next = if safe > 0 && !repair {
                "run `jkz registry migrate --repair` for those it can repair, and the SQL shown for the others"
            } else {
                "run the SQL shown"
            };
            Err(Failure::new(
                EXIT_FAILED,
                format!(
                    "team registry {url}: {} difference(s) from schema version {SCHEMA_VERSION} (listed above): jkz's statements on those tables fail, so claims, locks or circuits are not enforced; {next}",
                    drifts.len()
                ),
            ))
        }
    }
}

/// What `jkz doctor` learns of a team registry without changing it.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The schema version found (0: never used).
    pub version: i32,
    /// The quickest of three `SELECT 1` round trips.
    pub round_trip: Duration,
    /// How the tables differ from the schema (none looked for before the
    /// first use: the tables are made then).
    pub drifts: Vec<Drift>,
}

/// Connects (changing nothing), reads the schema version, times a round
/// trip and compares the tables with the schema.
pub fn probe(url: &RegistryUrl) -> Result<Probe, TeamError> {
    with_conn(
        url,
        Budget::command(),
        Schema::ReadOnly,
        Some(Duration::ZERO),
        |conn| {
            let mut best = Duration::MAX;
            for _ in 0..3 {
                let started = Instant::now();
                conn.client
                    .simple_query("SELECT 1")
                    .map_err(|e| conn.err(e))?;
                best = best.min(started.elapsed());
            }
            let drifts = match conn.version {
                0 => Vec::new(),
                _ => verify(&mut conn.client).map_err(|e| conn.err(e))?,
            };
            Ok(Probe {
                version: conn.version,
                round_trip: best,
                drifts,
            })
        },
    )
}
