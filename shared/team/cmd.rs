//! `jkz registry migrate`, and the team registry's line in `jkz doctor`.
//!
//! Exit codes of `jkz registry migrate`: 0 the schema is current (created,
//! upgraded, or checked and repaired); 1 no team registry is configured,
//! the URL cannot be used, the database cannot be reached or refuses, or
//! its schema is newer than this jkz knows.

use std::io::Write;
use std::time::{Duration, Instant};

use super::config::{backend, Backend};
use super::connect::{with_conn, Schema};
use super::error::TeamError;
use super::schema::{self, SCHEMA_VERSION};
use super::url::{Budget, RegistryUrl};
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
    /// them, or recreate one that was dropped. Writers do this on first use;
    /// a schema newer than this jkz knows is refused.
    Migrate,
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
    match args.command {
        RegistryCommand::Migrate => {
            let url = team_url(state)?;
            let found = with_conn(
                &url,
                Budget::command(),
                Schema::ReadOnly,
                Some(Duration::ZERO),
                |conn| schema::migrate(&mut conn.client, &conn.url, true),
            )
            .map_err(|e| Failure::new(EXIT_FAILED, e.to_string()))?;
            let what = match found {
                0 => "tables created".to_string(),
                v if v < SCHEMA_VERSION => format!("upgraded from version {v}"),
                _ => "up to date; every table checked".to_string(),
            };
            writeln!(
                out,
                "team registry {url}: schema version {SCHEMA_VERSION} ({what})"
            )
            .map_err(writing)?;
            out.flush().map_err(writing)?;
            Ok(EXIT_OK)
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
}

/// Connects (changing nothing), reads the schema version and times a
/// round trip.
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
            Ok(Probe {
                version: conn.version,
                round_trip: best,
            })
        },
    )
}
