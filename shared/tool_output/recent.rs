//! Repeats across calls: whether an output is identical to one of the last
//! calls of the same session, read from the tail of the savings ledger
//! (each line carries its session, the output's hash and the file keeping
//! it, [`super::ledger`]). No store of its own: the ledger is the record.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde::Deserialize;

use crate::state_dir::layout::TOOL_OUTPUT_LEDGER;
use crate::state_dir::StateDir;
use crate::thousands::thousands;

/// The most bytes of the ledger's tail read: a few hundred calls, enough
/// for the last calls of any one session among several chats.
pub const TAIL_BYTES: u64 = 256 * 1024;

/// The earlier call an output repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Earlier {
    pub ts: String,
    pub call: String,
    /// The file keeping its output, when one exists still.
    pub kept: Option<std::path::PathBuf>,
}

#[derive(Deserialize)]
struct Line {
    ts: String,
    call: String,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    hash: Option<String>,
    #[serde(default)]
    kept: Option<String>,
}

/// The newest of the last `calls` calls of `session` whose output hashed
/// to `hash`; `None` when there is none (or no ledger).
pub fn find(state: &StateDir, session: &str, hash: &str, calls: usize) -> Option<Earlier> {
    let path = state.join(TOOL_OUTPUT_LEDGER);
    let tail = read_tail(&path, TAIL_BYTES)?;
    let text = String::from_utf8_lossy(&tail);
    let mut seen = 0;
    // The first line may be cut by the tail's start: it does not parse.
    for raw in text.lines().rev() {
        let Ok(line) = serde_json::from_str::<Line>(raw) else {
            continue;
        };
        if line.session.as_deref() != Some(session) {
            continue;
        }
        seen += 1;
        if seen > calls {
            return None;
        }
        if line.hash.as_deref() == Some(hash) {
            return Some(Earlier {
                ts: line.ts,
                call: line.call,
                kept: line
                    .kept
                    .map(std::path::PathBuf::from)
                    .filter(|p| p.is_file()),
            });
        }
    }
    None
}

fn read_tail(path: &Path, max: u64) -> Option<Vec<u8>> {
    let mut file = crate::state_dir::open_state_file(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(max))).ok()?;
    let mut buf = Vec::with_capacity(len.min(max) as usize);
    file.take(max).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// The one line that stands for a repeated output.
pub fn pointer(earlier: &Earlier, kept: &Path, bytes: u64, lines: u64) -> String {
    let time = earlier
        .ts
        .get(11..19)
        .filter(|t| t.bytes().all(|b| b.is_ascii_digit() || b == b':'))
        .unwrap_or("earlier");
    format!(
        "[jkz: the same output as the call at {time} UTC ({}): {} bytes, {} lines, unchanged; \
the whole output: {} (Read it, or a range with offset and limit)]\n",
        crate::outside_text::inline(&earlier.call, 120, "the savings ledger"),
        thousands(bytes),
        thousands(lines),
        kept.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;

    #[test]
    fn only_the_last_calls_of_the_session_count() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let mut f = File::create(state.join(TOOL_OUTPUT_LEDGER)).unwrap();
        let line = |s: &str, h: &str, call: &str| {
            format!(
                "{{\"ts\":\"2026-11-28T06:10:01.000Z\",\"tool\":\"Bash\",\"call\":\"{call}\",\"full\":1,\"client\":1,\"jkz\":1,\"blocks\":0,\"ms\":1,\"session\":\"{s}\",\"hash\":\"{h}\"}}\n"
            )
        };
        f.write_all(b"{broken\n").unwrap();
        f.write_all(line("a", "h1", "git status").as_bytes())
            .unwrap();
        f.write_all(line("b", "h2", "ls").as_bytes()).unwrap();
        f.write_all(line("a", "h3", "cargo test").as_bytes())
            .unwrap();
        drop(f);
        let hit = find(&state, "a", "h1", 2).unwrap();
        assert_eq!(hit.call, "git status");
        assert_eq!(hit.kept, None);
        assert_eq!(find(&state, "a", "h1", 1), None, "beyond the last call");
        assert_eq!(find(&state, "a", "h2", 5), None, "another session's");
        assert_eq!(find(&state, "c", "h1", 5), None);
        let p = pointer(&hit, Path::new("/s/full.txt"), 12_345, 20);
        assert!(p.starts_with("[jkz: the same output as the call at 06:10:01 UTC (git status): 12,345 bytes, 20 lines"), "{p}");
        assert!(p.ends_with("]\n") && p.lines().count() == 1);
    }

    #[test]
    fn no_ledger_no_repeat() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(find(&StateDir::at(tmp.path()), "a", "h", 5), None);
    }
}
