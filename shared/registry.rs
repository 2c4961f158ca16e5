//! The cross-chat registry, `state/chat.db` (or, in team mode, PostgreSQL:
//! [`postgres`], chosen by [`backend`]): which chats are
//! alive on this state directory, which issue and which worktree each one
//! owns, and the refusal a chat meets before it edits what another live
//! chat owns.
//!
//! Why a database: every hook of every chat writes it (a heartbeat per
//! prompt and per tool call, from many processes at once). SQLite in WAL
//! mode gives each of them a short transaction with a busy timeout, readers
//! that never wait for a writer, and no lost update; a JSON file rewritten
//! by rename would lose concurrent heartbeats.
//!
//! The rules, in one place:
//! - a chat is *live* while its last heartbeat is under [`STALE_AFTER`]
//!   seconds old and its client (when recorded) still runs on this host,
//!   *stale* after that, *gone* once its `SessionEnd` ran (which also
//!   releases its claims);
//! - a claim (issue → chat, with an optional worktree) is held until its
//!   chat releases it or ends; a stale chat's claim may be taken over
//!   (`jkz claim N --take`), a live chat's never;
//! - claimed worktrees never nest: one inside (or around) another live
//!   chat's is refused;
//! - the writers enforce a claim: `jkz state set N` refuses (exit 3) while
//!   another live chat holds N ([`writer`]); from inside a chat (its
//!   process descends from the chat's recorded client, whatever its
//!   environment says: [`identity`]), a command acts only for that chat
//!   ([`acting`]);
//! - an edit whose target lies in a worktree, or is a pipeline file, that
//!   another live chat holds is refused by the PreToolUse hook
//!   ([`decision`]), an early hint for the model, best effort for Bash
//!   ([`bash`]); a command whose target the hook cannot tell is asked
//!   about while another live chat holds a claim;
//! - a command that would delete or overwrite the state directory itself
//!   is refused whoever holds what ([`state_guard`]);
//! - a chat holding no claim whose client has exited (or, with none
//!   recorded, that is stale) is forgotten by `jkz gc` and `jkz chats
//!   prune` ([`prune`]).

pub mod acting;
pub mod backend;
pub mod bash;
pub mod chat;
pub mod claim;
pub mod claimed_worktree;
pub mod cmd;
pub mod db;
pub mod decision;
pub mod hook;
pub mod identity;
pub mod postgres;
pub mod prune;
pub mod reach;
pub mod replica;
pub mod state_guard;
pub mod store;
pub mod target;
pub mod writer;

pub use crate::clock::now;
pub use backend::{with_registry, Bound};
pub use chat::{HEARTBEAT_EVERY, STALE_AFTER};
pub use db::Registry;
pub use store::{GuardReads, RegistryError, Store, StoreError};
