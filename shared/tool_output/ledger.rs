//! The savings ledger: one JSON line per guarded tool call, in
//! `state/tool-output.jsonl`.
//!
//! ```json
//! {"ts":"2025-03-01T12:00:00.123Z","tool":"Bash","call":"cargo test","full":400000,"client":2248,"jkz":19987,"blocks":1,"ms":4}
//! ```
//!
//! | field | meaning |
//! |---|---|
//! | `ts` | when (UTC) |
//! | `tool` | the tool's name (`Bash`, `Read`, `Grep`, `mcp__…`) |
//! | `call` | the Bash command, else the tool's name (at most 200 characters) |
//! | `full` | bytes of the full output |
//! | `client` | bytes the client would have put in the window without jkz ([`super::client`]) |
//! | `jkz` | bytes jkz put there |
//! | `blocks` | protected blocks in what jkz put there |
//! | `ms` | the hook's time, from reading its input to answering |
//! | `via` | the path the output took: `post-tool-use` (the guard after the call), `wrap` (the command ran through jkz, `jkz-truncate --run`), `after-tool` (a post-tool hook that may only append to the output) |
//! | `family` | the reduction engine's family (`tests`, `builds`, `git-log`, `git`, …), when it reduced the output |
//! | `exit` | the command's exit code, when known |
//! | `signals`, `signals_shown` | distinct signal lines in the output, and how many the view shows |
//! | `repeat` | true when the output was identical to an earlier call's and became a pointer to it |
//! | `session` | the chat's session, when known (repeats are looked up within it) |
//! | `hash` | the first 32 hex digits of the output's SHA-256 |
//! | `kept` | the file keeping the whole output, when one was kept |
//!
//! The last nine are absent from lines written before they existed, and
//! each is absent when it does not apply; readers take them as unknown.
//!
//! Each line is appended with one `write` to a file opened `O_APPEND`, so
//! concurrent hooks never interleave within a line, and a line is never
//! half there for a reader (it is one short write on a local file system).
//!
//! Bounded growth: before appending, a ledger of [`ROTATE_BYTES`] or more
//! is renamed to `tool-output.1.jsonl` (replacing the older one), under a
//! lock so two hooks cannot rotate twice. The ledger thus holds at most
//! about 2 × 8 MiB, some 90,000 calls; `jkz stats` reads both files and
//! `jkz gc` leaves them alone.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::json_file::lock_within;
use crate::state_dir::layout::{TOOL_OUTPUT_LEDGER, TOOL_OUTPUT_LEDGER_ROTATED};
use crate::state_dir::StateDir;

/// A ledger this large is rotated before the next line is appended.
pub const ROTATE_BYTES: u64 = 8 * 1024 * 1024;
/// The most characters of a command kept in `call`.
pub const CALL_CHARS: usize = 200;
/// How long a hook waits for another's rotation.
const ROTATE_WAIT: Duration = Duration::from_millis(500);

/// One guarded call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub ts: String,
    pub tool: String,
    pub call: String,
    pub full: u64,
    pub client: u64,
    pub jkz: u64,
    pub blocks: u64,
    pub ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signals: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signals_shown: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeat: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

/// `call` shortened to [`CALL_CHARS`] characters.
pub fn short_call(call: &str) -> String {
    match call.char_indices().nth(CALL_CHARS) {
        Some((i, _)) => format!("{}…", &call[..i]),
        None => call.to_string(),
    }
}

/// Appends `entry` to the ledger of `state`; `Ok(false)` when the project
/// has not opted in (no state directory), nothing written.
pub fn append(state: &StateDir, entry: &Entry) -> io::Result<bool> {
    let Some(root) = state.ensure()? else {
        return Ok(false);
    };
    let path = root.join(TOOL_OUTPUT_LEDGER);
    rotate_if_large(&path, ROTATE_BYTES)?;
    let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut file = crate::state_dir::open_state_file_to_append(&path)?;
    file.write_all(&line)?;
    Ok(true)
}

/// Renames the ledger at `path` to [`TOOL_OUTPUT_LEDGER_ROTATED`] when it holds `limit` bytes
/// or more (checked again under the lock); true when it did.
pub fn rotate_if_large(path: &Path, limit: u64) -> io::Result<bool> {
    let large = |p: &Path| fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.len() >= limit);
    if !large(path) {
        return Ok(false);
    }
    let _lock = lock_within(path, ROTATE_WAIT)?;
    if !large(path) {
        return Ok(false); // another hook rotated it meanwhile
    }
    fs::rename(path, path.with_file_name(TOOL_OUTPUT_LEDGER_ROTATED))?;
    Ok(true)
}

/// The ledger's files in reading order (older part first), those present.
pub fn files(state: &Path) -> Vec<PathBuf> {
    [TOOL_OUTPUT_LEDGER_ROTATED, TOOL_OUTPUT_LEDGER]
        .into_iter()
        .map(|n| state.join(n))
        .filter(|p| fs::symlink_metadata(p).is_ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u64) -> Entry {
        Entry {
            ts: "2025-03-01T12:00:00.000Z".into(),
            tool: "Bash".into(),
            call: "cargo test".into(),
            full: n,
            client: 2248,
            jkz: 100,
            blocks: 1,
            ms: 3,
            ..Entry::default()
        }
    }

    #[test]
    fn appends_one_line_per_call_and_rotates_past_the_bound() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("state"));
        assert!(append(&state, &entry(1)).unwrap());
        assert!(append(&state, &entry(2)).unwrap());
        let ledger = state.join(TOOL_OUTPUT_LEDGER);
        let text = fs::read_to_string(&ledger).unwrap();
        let lines: Vec<Entry> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines, vec![entry(1), entry(2)]);
        // A ledger at the bound moves aside whole; the next line starts anew.
        let size = fs::metadata(&ledger).unwrap().len();
        assert!(!rotate_if_large(&ledger, size + 1).unwrap());
        assert!(rotate_if_large(&ledger, size).unwrap());
        assert_eq!(
            fs::read_to_string(state.join(TOOL_OUTPUT_LEDGER_ROTATED)).unwrap(),
            text
        );
        assert!(append(&state, &entry(3)).unwrap());
        assert_eq!(
            files(state.path()),
            vec![state.join(TOOL_OUTPUT_LEDGER_ROTATED), ledger]
        );
    }

    #[test]
    fn nothing_is_written_without_an_opted_in_state_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::resolve_with(None, Some(tmp.path()), |_| None);
        assert!(!append(&state, &entry(1)).unwrap());
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_planted_link_is_not_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("state"));
        fs::create_dir(state.path()).unwrap();
        let outside = tmp.path().join("outside");
        std::os::unix::fs::symlink(&outside, state.join(TOOL_OUTPUT_LEDGER)).unwrap();
        assert!(append(&state, &entry(1)).is_err());
        assert!(!outside.exists());
    }

    #[test]
    fn long_calls_are_shortened_on_a_character_boundary() {
        assert_eq!(short_call("cargo test"), "cargo test");
        let long = "é".repeat(300);
        let s = short_call(&long);
        assert_eq!(s.chars().count(), CALL_CHARS + 1);
        assert!(s.ends_with('…'));
    }
}
