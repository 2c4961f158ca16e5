//! The layout of the state directory: every name jkz reads or writes below
//! `state/`, in one table. A feature that adds a file or a directory adds
//! it here, so that the readers ([`super::read`]), retention
//! ([`super::retention`], `jkz gc`) and `jkz doctor` all see it.
//!
//! | path below `state/` | written by | what |
//! |---|---|---|
//! | [`PIPELINE_DIR`]`/<N>.json` | pipeline scripts, `jkz state set` | per-issue pipeline state |
//! | `pre-compact-<ts>-<pid>.json` ([`snapshot_name`]) | `jkz-pre-compact` | the snapshot taken before each compaction |
//! | [`SESSION_RECORD_DIR`]`/<session_id>.json` | `jkz-session`, `jkz-pre-compact` | the per-session record |
//! | [`OFFLOAD_DIR`]`/` | `jkz-compress`, `jkz-truncate`, `jkz run` | offloaded sections, full outputs, full responses |
//! | [`DELIBERATIONS_DIR`]`/` | `jkz run`, `jkz-truncate --record` | one record per agent invocation |
//! | [`CIRCUIT_DIR`]`/<service>.json` | `jkz run --service` | one circuit breaker per external service |
//! | [`LOCKS_DIR`]`/<kind>-<name>.json` | `jkz lock`, `jkz run --lock` | worktree and pipeline locks |
//! | [`TOOL_OUTPUT_LEDGER`], [`TOOL_OUTPUT_LEDGER_ROTATED`] | `jkz-post-tool-use` | the tool-output savings ledger |
//! | [`CHAT_DB`] (with SQLite's `-wal`, `-shm`), [`CHAT_DB_CORRUPT`] | `jkz-chat`, `jkz claim`, `jkz release`, `jkz state set` | the cross-chat registry; a corrupt one moved aside |
//! | [`REGISTRY_REPLICA`] (with SQLite's `-wal`, `-shm`) | every jkz that talks to a team registry | the local replica of the team's chats and claims the PreToolUse guard reads |
//! | [`WATCH_LIST`], [`LIVE_SESSION`] | `jkz ui` | the observer's own files |
//! | [`MEMORY_DB`] (with SQLite's `-wal`, `-shm`), [`MEMORY_DB_CORRUPT`] | `jkz patterns`, `jkz run`, `jkz-truncate --record`, `jkz ui` (pin, reject) | learned patterns with evidence and feedback (FTS5); rebuilt from the records and the feedback log |
//! | [`PATTERNS_FEEDBACK`] | the same | the append-only feedback log of the patterns |
//! | [`SETTINGS_BACKUP`], or another checkout's [`settings_backup_name`] | `jkz install` | a checkout's `.claude/settings.json` before jkz changed it, for `jkz uninstall` |
//! | [`EVENTS_DIR`]`/<YYYYMMDD>-<NNNN>.jsonl[.gz]`, `index.db`, `pending/` | every jkz writer | the event log (never removed), its rebuildable index, and the spool of lines a held segment lock kept out for a moment |
//! | [`METRICS_DB`] | `jkz metrics`, `jkz slo`, `jkz ui` | pipeline metrics derived from the event log |
//! | [`CODEX_COMPACT_PROMPT`] | `jkz install --client codex`, `jkz-pre-compact` (Codex) | the compaction prompt Codex CLI reads (`experimental_compact_prompt_file`) |
//! | [`FINDINGS_DB`] (with SQLite's `-wal`, `-shm`) | `jkz findings import`, `jkz findings dismiss`, `jkz run` | review findings across iterations |
//! | [`GEMINI_DIR`]`/<session_id>.json` | `jkz-pre-compact`, `jkz-session-start` (Gemini CLI) | one Gemini session's memo: the fingerprint of its last snapshot, the compression summary already answered |
//! | [`GEMINI_SETTINGS_BACKUP`] | `jkz install --client gemini` | `.gemini/settings.json` before jkz changed it, for `jkz uninstall --client gemini` |

use std::path::Path;

use chrono::{DateTime, NaiveDateTime, Utc};

/// `state/pipeline/<N>.json`, one file per issue, and its companions.
pub const PIPELINE_DIR: &str = "pipeline";
/// `state/session-snapshots/<session_id>.json`: the per-session record.
pub const SESSION_RECORD_DIR: &str = "session-snapshots";
/// `state/clients/gemini/`: one memo per Gemini CLI session.
pub const GEMINI_DIR: &str = "clients/gemini";
/// `state/gemini-settings.json.jkz-backup`: the project's
/// `.gemini/settings.json` before `jkz install --client gemini` changed it.
pub const GEMINI_SETTINGS_BACKUP: &str = "gemini-settings.json.jkz-backup";
/// `state/context-offload/`: content-addressed offloaded sections, full
/// untruncated outputs and full agent responses.
pub const OFFLOAD_DIR: &str = "context-offload";
/// `state/deliberations/`: one record per agent invocation (`jkz run`,
/// `jkz-truncate --record`), the audit trail; `jkz gc` never removes one.
pub const DELIBERATIONS_DIR: &str = "deliberations";
/// `state/circuit/<service>.json`: one circuit breaker per external service.
pub const CIRCUIT_DIR: &str = "circuit";
/// `state/locks/<kind>-<name>.json`: worktree and pipeline locks with a TTL.
pub const LOCKS_DIR: &str = "locks";
/// `state/tool-output.jsonl`: the tool-output guard's savings ledger.
pub const TOOL_OUTPUT_LEDGER: &str = "tool-output.jsonl";
/// The ledger's previous half, after a rotation.
pub const TOOL_OUTPUT_LEDGER_ROTATED: &str = "tool-output.1.jsonl";
/// `state/codex-compact-prompt.md`: the compaction prompt Codex CLI's
/// `experimental_compact_prompt_file` names, refreshed by `jkz-pre-compact`.
pub const CODEX_COMPACT_PROMPT: &str = "codex-compact-prompt.md";
/// `state/chat.db`: the cross-chat registry (SQLite, WAL).
pub const CHAT_DB: &str = "chat.db";
/// `state/chat.db.corrupt`: the last registry found corrupt, moved aside
/// when it was rebuilt empty (kept for a look; the next one replaces it).
pub const CHAT_DB_CORRUPT: &str = "chat.db.corrupt";
/// `state/registry-replica.db`: in team mode, this machine's copy of the
/// team registry's chats and claims (SQLite, WAL), refreshed by every
/// conversation with the server; the PreToolUse guard reads it while it is
/// fresh. Rebuilt from the server whenever it is missing or unreadable.
pub const REGISTRY_REPLICA: &str = "registry-replica.db";
/// `state/memory.db`: learned patterns with their evidence and feedback
/// (SQLite, WAL, FTS5), derived from the deliberation records and
/// [`PATTERNS_FEEDBACK`].
pub const MEMORY_DB: &str = "memory.db";
/// `state/memory.db.corrupt`: the last `memory.db` found corrupt, moved
/// aside when it was rebuilt.
pub const MEMORY_DB_CORRUPT: &str = "memory.db.corrupt";
/// `state/patterns-feedback.jsonl`: every injection, helpful or harmful
/// signal, pin, reject and prune of a pattern, append-only; what a rebuilt
/// `memory.db` takes its feedback from.
pub const PATTERNS_FEEDBACK: &str = "patterns-feedback.jsonl";
/// `state/cr-history.db`: review findings across iterations (SQLite, WAL).
pub const FINDINGS_DB: &str = "cr-history.db";
/// `state/watch-list.json`: what the observer watches.
pub const WATCH_LIST: &str = "watch-list.json";
/// `state/live-session.json`: the running observer (`jkz ui`): its pid,
/// port, URL without the token, and start.
pub const LIVE_SESSION: &str = "live-session.json";

/// `state/settings.json.jkz-backup`: the settings of the checkout whose
/// top holds this `state/`, as they were before `jkz install` changed them.
pub const SETTINGS_BACKUP: &str = "settings.json.jkz-backup";

/// The name of the settings backup of `checkout` in the state root `root`:
/// [`SETTINGS_BACKUP`] when the root is the checkout's own `state/`; for
/// another checkout sharing the root (a linked worktree, an attached
/// clone), that name with the first 16 hex digits of the sha256 of the
/// checkout's path, so each checkout's backup has a name of its own.
pub fn settings_backup_name(root: &Path, checkout: &Path) -> String {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if real(root) == real(&checkout.join("state")) {
        return SETTINGS_BACKUP.to_string();
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(real(checkout).as_os_str().as_encoded_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{SETTINGS_BACKUP}.{hex}")
}

/// `state/events/`: the event log's segments (the audit trail: `jkz gc`
/// never removes one) and its index, `index.db`.
pub const EVENTS_DIR: &str = "events";
/// `state/metrics.db`: pipeline metrics, derived from the event log.
pub const METRICS_DB: &str = "metrics.db";

/// The subdirectories of `state/` that jkz reads files in.
pub const SUBDIRS: [&str; 7] = [
    PIPELINE_DIR,
    SESSION_RECORD_DIR,
    OFFLOAD_DIR,
    DELIBERATIONS_DIR,
    CIRCUIT_DIR,
    LOCKS_DIR,
    EVENTS_DIR,
];

/// True when `name` is an entry jkz may have made at the top of a state
/// root: a name of the table above (a database with SQLite's `-wal`,
/// `-shm` and `-journal` beside it, and its `.corrupt` copy moved aside; a
/// settings backup of any checkout; a snapshot), or a lock file (`.<name>.lock`) or temp file
/// (`.<name>.….tmp`) of jkz's. What a root a git config or `jkz attach`
/// names may hold besides ([`super::root::usable_root`]): a directory
/// holding anything else is not a state root, and jkz does not take it
/// over. A feature that adds an entry at the top adds it here.
pub fn is_root_entry(name: &str) -> bool {
    const NAMES: [&str; 22] = [
        PIPELINE_DIR,
        SESSION_RECORD_DIR,
        "clients",
        GEMINI_SETTINGS_BACKUP,
        OFFLOAD_DIR,
        DELIBERATIONS_DIR,
        CIRCUIT_DIR,
        LOCKS_DIR,
        TOOL_OUTPUT_LEDGER,
        TOOL_OUTPUT_LEDGER_ROTATED,
        CODEX_COMPACT_PROMPT,
        CHAT_DB_CORRUPT,
        MEMORY_DB_CORRUPT,
        PATTERNS_FEEDBACK,
        WATCH_LIST,
        LIVE_SESSION,
        SETTINGS_BACKUP,
        EVENTS_DIR,
        CHAT_DB,
        MEMORY_DB,
        FINDINGS_DB,
        REGISTRY_REPLICA,
    ];
    const DATABASES: [&str; 5] = [
        CHAT_DB,
        MEMORY_DB,
        FINDINGS_DB,
        METRICS_DB,
        REGISTRY_REPLICA,
    ];
    if NAMES.contains(&name) || is_snapshot_name(name) {
        return true;
    }
    if let Some(hex) = name
        .strip_prefix(SETTINGS_BACKUP)
        .and_then(|rest| rest.strip_prefix('.'))
    {
        return hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    if DATABASES.iter().any(|db| {
        name.strip_prefix(db)
            .is_some_and(|rest| matches!(rest, "" | "-wal" | "-shm" | "-journal" | ".corrupt"))
    }) {
        return true;
    }
    name.starts_with('.')
        && name.len() > 1
        && (name.ends_with(".lock") || name.ends_with(crate::atomic::TEMP_SUFFIX))
}

/// The start of every pre-compact snapshot's name.
pub const SNAPSHOT_PREFIX: &str = "pre-compact-";

/// The `<ts>` of a snapshot's name: UTC, sorts like time.
const SNAPSHOT_TS_FORMAT: &str = "%Y%m%dT%H%M%S%.3fZ";

/// `pre-compact-<ts>-<pid>.json` for a moment and a process.
pub fn snapshot_name(at: DateTime<Utc>, pid: u32) -> String {
    format!(
        "{SNAPSHOT_PREFIX}{}-{pid}.json",
        at.format(SNAPSHOT_TS_FORMAT)
    )
}

/// True for a bare snapshot file name (no directory part, only the
/// characters the name format uses).
pub fn is_snapshot_name(name: &str) -> bool {
    name.strip_prefix(SNAPSHOT_PREFIX)
        .and_then(|rest| rest.strip_suffix(".json"))
        .is_some_and(|mid| {
            !mid.is_empty()
                && mid
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'T' | b'Z' | b'.' | b'-'))
        })
}

/// When a snapshot was taken, from its name.
pub fn snapshot_time(name: &str) -> Option<DateTime<Utc>> {
    let mid = name.strip_prefix(SNAPSHOT_PREFIX)?.strip_suffix(".json")?;
    let ts = mid.rsplit_once('-')?.0;
    NaiveDateTime::parse_from_str(ts, SNAPSHOT_TS_FORMAT)
        .ok()
        .map(|t| t.and_utc())
}
