//! Team mode: the registry (chats, heartbeats, issue and worktree claims),
//! the locks and the circuit breakers in PostgreSQL, shared by every
//! machine given the same URL (`JKZ_REGISTRY_URL`, or `jkz.registryUrl` in
//! the repository's git config: [`config`]). Everything local by nature (pipeline files,
//! deliberations, snapshots, offloaded output) stays in `state/`; without a
//! URL nothing changes: `state/chat.db`, `state/locks/`, `state/circuit/`.
//!
//! This module is the PostgreSQL side every team backend stands on: the
//! URL and its configuration, the connection and its budget, the schema,
//! the errors. The backends themselves live with their feature, beside the
//! local one: [`crate::registry`]'s `postgres`, [`crate::lock`]'s and
//! [`crate::circuit`]'s, each chosen by its feature and importing nothing
//! of the others.
//!
//! The rules are the local backend's, applied by the same code (liveness,
//! staleness, TTLs, the circuit's states); only the storage differs, and
//! how exactly one writer wins:
//!
//! - every read-modify-write is one transaction that first takes a
//!   transaction-scoped advisory lock (`pg_advisory_xact_lock`) on what it
//!   changes: the whole registry for a claim, a release or a chat's end
//!   (claimed worktrees must not nest, which no single row can say), one
//!   lock's `kind-name`, one circuit's service. Of any number of machines
//!   racing, exactly one finds a lock free or a circuit half-open; the
//!   others wait for it (bounded by `lock_timeout`) and then see its
//!   write. Primary keys keep one row per chat, claim, lock and circuit.
//! - a heartbeat is a single-row update, a registration an upsert: no lock.
//!
//! Claims and chats record the machine (`host`, [`crate::process::hostname`],
//! `JKZ_HOST` in tests and containers): a pid is only judged on its own
//! host, and `jkz chats` names each chat's machine.
//!
//! Hooks never hurt the host: a hook's conversation with the database is
//! bounded (connect 300 ms, each statement 500 ms, 800 ms in all:
//! [`url::Budget::hook`]) and a database that is down, slow or refusing is
//! one line on stderr, no refusal, exit 0. Commands say what failed and
//! exit non-zero. Nothing ever falls back to the local files, which would
//! split the team in two.

pub mod cmd;
pub mod config;
pub mod connect;
pub mod error;
pub mod pgpass;
pub mod schema;
pub mod tls;
pub mod url;
pub mod verify;

pub use config::{backend, Backend};
pub use error::TeamError;
pub use url::{Budget, RegistryUrl};

/// The first key of each advisory lock jkz takes (`pg_advisory_xact_lock(class,
/// key)`): what kind of thing it guards. The values spell `jkz` and a
/// digit, so they do not collide with another application's small numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum LockClass {
    Migration = 0x6a6b_7a30,
    Registry = 0x6a6b_7a31,
    Lock = 0x6a6b_7a32,
    Circuit = 0x6a6b_7a33,
}
