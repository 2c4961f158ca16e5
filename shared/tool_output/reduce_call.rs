//! One command's output, reduced for the client that shows it. Every path
//! into the window calls this: the wraps (`jkz-truncate --run`, and
//! `jkz-truncate --ran` for the inline rewrite of
//! [`crate::client::ShellWrap::Inline`]), and the PostToolUse guard.
//!
//! 1. The output goes through the reduction engine ([`crate::reduce`]) with
//!    the budget of the client's view ([`Viewer`]: what it shows inline,
//!    or on a failing command what it shows of one whole).
//! 2. When the output is identical to one of the last [`RECENT_CALLS`]
//!    calls of the same session ([`recent`]), the view is one line pointing
//!    at that call and at the file keeping the output whole.
//! 3. One ledger line records the raw size, what the client alone would
//!    have shown ([`Viewer::client_bytes`]), what jkz showed, the family,
//!    the exit code and the signal lines: the honest count `jkz stats`
//!    reads.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::ledger::{self, Entry};
use super::recent;
pub use crate::client::Viewer;
use crate::reduce::{self, Context, FilterTable};
use crate::state_dir::StateDir;

/// Outputs identical to one of this many earlier calls of the session
/// become a pointer.
pub const RECENT_CALLS: usize = 20;

/// An output shorter than this (characters) is never replaced by a
/// pointer: the line would save too little.
pub const REPEAT_MIN_CHARS: u64 = 1_000;

/// What a call knows about the output it reduces.
#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    /// The tool's name (`Bash`, `Grep`, `mcp__…`).
    pub tool: &'a str,
    pub command: Option<&'a str>,
    pub exit_code: Option<i32>,
    /// The ledger's `via`.
    pub via: &'a str,
    pub viewer: Viewer,
    pub session: Option<&'a str>,
    pub state: &'a StateDir,
    /// The output is already kept whole in this file.
    pub kept_at: Option<&'a Path>,
    /// Overrides the viewer's budget.
    pub budget: Option<usize>,
    pub started: Instant,
    /// The exit code comes once the command ended: the caller records the
    /// ledger line ([`Outcome::exited`]).
    pub exit_later: bool,
}

/// The view and the ledger line written for it.
#[derive(Debug)]
pub struct Outcome {
    pub view: Vec<u8>,
    /// False when the view is the output, unchanged.
    pub changed: bool,
    pub entry: Entry,
    head: Vec<u8>,
    chars: u64,
    viewer: Viewer,
}

/// Reduces `input` for `call`'s client with the rules of `table`, and
/// appends the call's ledger line (a failure to append is a warning).
pub fn reduce_call(
    input: &mut dyn Read,
    call: &Call,
    table: &FilterTable,
    warnings: &mut dyn Write,
) -> io::Result<Outcome> {
    let keep = call.state.check().is_ok().then_some(call.state);
    let ctx = Context {
        command: call.command,
        exit_code: call.exit_code,
        budget_chars: call
            .budget
            .unwrap_or_else(|| call.viewer.budget(call.exit_code)),
        keep,
        kept_at: call.kept_at,
        client: call.viewer.cut(call.exit_code),
        reader: call.viewer.reader(),
    };
    let mut tap = Tap::new(input, call.viewer.head_bytes());
    let reduced = reduce::reduce(&mut tap, &ctx, table, warnings)?;
    let hash = tap.hash();
    let stats = &reduced.stats;
    let mut view = reduced.view;
    let mut kept = stats.full_output.clone();
    let mut repeat = false;
    if let Some(session) = call
        .session
        .filter(|_| stats.input_chars >= REPEAT_MIN_CHARS)
    {
        if let Some(earlier) = recent::find(call.state, session, &hash, RECENT_CALLS) {
            if kept.is_none() {
                kept = earlier.kept.clone();
            }
            if kept.is_none() && !stats.reduced {
                // Unchanged, so held whole: kept now for the pointer.
                kept = keep_whole(call.state, &view, warnings);
            }
            if let Some(path) = &kept {
                view = recent::pointer(&earlier, path, stats.input_bytes, stats.input_lines)
                    .into_bytes();
                repeat = true;
            }
        }
    }
    let told = match call.exit_code {
        Some(code) if !call.exit_later => tell_status(&mut view, call.viewer, code),
        _ => false,
    };
    let changed = stats.reduced || repeat || told;
    let added = call.viewer.added(call.exit_code);
    let entry = Entry {
        ts: chrono::Utc::now()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string(),
        tool: call.tool.to_string(),
        call: ledger::short_call(call.command.unwrap_or(call.tool)),
        full: stats.input_bytes,
        client: call.viewer.client_bytes(
            stats.input_bytes,
            stats.input_chars,
            &tap.head,
            call.exit_code,
        ),
        jkz: view.len() as u64 + added,
        blocks: crate::blocks::find_blocks(&view).len() as u64,
        ms: call.started.elapsed().as_millis() as u64,
        via: Some(call.via.to_string()),
        family: Some(reduced.family.clone()),
        exit: call.exit_code,
        signals: Some(stats.signal_lines),
        signals_shown: Some(if repeat {
            stats.signal_lines
        } else {
            stats.signal_lines_shown
        }),
        repeat,
        session: call.session.map(str::to_string),
        hash: Some(hash),
        kept: kept.map(|p| p.display().to_string()),
    };
    if !call.exit_later {
        record(call.state, &entry, warnings);
    }
    Ok(Outcome {
        view,
        changed,
        entry,
        head: tap.head,
        chars: stats.input_chars,
        viewer: call.viewer,
    })
}

impl Outcome {
    /// Records the exit code known only once the command ended (`--run`):
    /// the client's view of it, then the ledger line.
    pub fn exited(&mut self, code: i32, state: &StateDir, warnings: &mut dyn Write) {
        tell_status(&mut self.view, self.viewer, code);
        let e = &mut self.entry;
        e.exit = Some(code);
        e.client = self
            .viewer
            .client_bytes(e.full, self.chars, &self.head, e.exit);
        e.jkz = self.view.len() as u64 + self.viewer.added(e.exit);
        record(state, e, warnings);
    }
}

/// Ends `view` with a failed command's status when `viewer`'s client does
/// not show the model one; true when it did.
fn tell_status(view: &mut Vec<u8>, viewer: Viewer, code: i32) -> bool {
    if code == 0 || viewer.shows_exit_status() {
        return false;
    }
    if view.last().is_some_and(|&b| b != b'\n') {
        view.push(b'\n');
    }
    view.extend_from_slice(crate::reduce::exit_status_note(code).as_bytes());
    true
}

/// Appends `entry` to the ledger; a failure is a warning.
pub fn record(state: &StateDir, entry: &Entry, warnings: &mut dyn Write) {
    if let Err(e) = ledger::append(state, entry) {
        crate::truncate::warn(
            warnings,
            "jkz",
            &format_args!(
                "cannot append to {}: {e}",
                state
                    .join(crate::state_dir::layout::TOOL_OUTPUT_LEDGER)
                    .display()
            ),
        );
    }
}

/// Keeps `bytes` (an output the engine left unchanged, held whole) as a
/// full output of its own, for a pointer to name.
fn keep_whole(state: &StateDir, bytes: &[u8], warnings: &mut dyn Write) -> Option<PathBuf> {
    let dir = match state.ensure_subdir(crate::state_dir::layout::OFFLOAD_DIR) {
        Ok(Some(dir)) => dir,
        Ok(None) => return None,
        Err(e) => {
            crate::truncate::warn(warnings, "jkz", &format_args!("keeping a repeat: {e}"));
            return None;
        }
    };
    let name = format!(
        "full-{}-{}.txt",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.6fZ"),
        std::process::id()
    );
    let path = dir.join(name);
    match crate::atomic::write_new_atomic(&path, bytes) {
        Ok(true) => Some(std::path::absolute(&path).unwrap_or(path)),
        Ok(false) => None,
        Err(e) => {
            crate::truncate::warn(warnings, "jkz", &format_args!("keeping a repeat: {e}"));
            None
        }
    }
}

/// A reader that hashes what passes and keeps its first bytes (the client's
/// preview is made from them).
struct Tap<'r> {
    inner: &'r mut dyn Read,
    hasher: Sha256,
    head: Vec<u8>,
    keep: usize,
}

impl<'r> Tap<'r> {
    /// Keeps the first `keep` bytes.
    fn new(inner: &'r mut dyn Read, keep: usize) -> Tap<'r> {
        Tap {
            inner,
            hasher: Sha256::new(),
            head: Vec::new(),
            keep,
        }
    }

    /// The first 32 hex digits of the SHA-256 of everything read.
    fn hash(&self) -> String {
        let digest = self.hasher.clone().finalize();
        digest[..16].iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl Read for Tap<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        let want = self.keep.saturating_sub(self.head.len()).min(n);
        self.head.extend_from_slice(&buf[..want]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Client;
    use crate::reduce::notes::full_output_line;

    fn call<'a>(
        state: &'a StateDir,
        session: Option<&'a str>,
        exit: Option<i32>,
        viewer: Viewer,
    ) -> Call<'a> {
        Call {
            tool: "Bash",
            command: Some("cargo test"),
            exit_code: exit,
            via: "wrap",
            viewer,
            session,
            state,
            kept_at: None,
            budget: None,
            started: Instant::now(),
            exit_later: false,
        }
    }

    fn test_run(passing: usize) -> String {
        let mut out = String::from("running tests\n");
        for i in 0..passing {
            out.push_str(&format!("test module_{i:05}::case ... ok\n"));
        }
        out.push_str("test ledger::rounding ... FAILED\n\nfailures:\n\n---- ledger::rounding stdout ----\nthread 'ledger::rounding' panicked at src/ledger.rs:12:5:\nassertion failed: cents == 100\n\ntest result: FAILED. 3 passed; 1 failed; 0 ignored\n");
        out
    }

    /// The last line names the kept file and how the client's agent reads
    /// a range of it (each client's reader: [`Viewer::reader`]).
    #[test]
    fn the_view_says_how_to_read_the_kept_file_with_the_clients_own_tools() {
        let raw = test_run(3000);
        for client in Client::ALL {
            let tmp = tempfile::tempdir().unwrap();
            let state = StateDir::at(tmp.path().join("state"));
            std::fs::create_dir(tmp.path().join("state")).unwrap();
            let viewer = Viewer::shell(client);
            let out = reduce_call(
                &mut raw.as_bytes(),
                &call(&state, None, Some(101), viewer),
                &FilterTable::built_in(),
                &mut Vec::new(),
            )
            .unwrap();
            let view = String::from_utf8(out.view).unwrap();
            let mut from_the_end = view.trim_end().lines().rev();
            if !viewer.shows_exit_status() {
                // A client that hides the status gets it said last.
                assert_eq!(
                    from_the_end.next(),
                    Some("[jkz: the command exited with status 101]"),
                    "{client:?}"
                );
            }
            let last = from_the_end.next().unwrap();
            let kept = out.entry.kept.as_deref().unwrap();
            let lines = raw.lines().count() as u64;
            assert_eq!(
                last,
                full_output_line(Path::new(kept), raw.len() as u64, lines, viewer.reader()),
                "{client:?}"
            );
        }
    }

    /// A failing run is reduced within the client's budget for a failure,
    /// and its ledger line counts what the client alone would have shown
    /// against what jkz showed, the client's own additions included.
    #[test]
    fn a_failing_run_is_reduced_to_the_failure_view_and_counted_against_it() {
        let raw = test_run(3000);
        for client in Client::ALL {
            let tmp = tempfile::tempdir().unwrap();
            let state = StateDir::at(tmp.path().join("state"));
            let viewer = Viewer::shell(client);
            let out = reduce_call(
                &mut raw.as_bytes(),
                &call(&state, Some("s1"), Some(101), viewer),
                &FilterTable::built_in(),
                &mut Vec::new(),
            )
            .unwrap();
            let view = String::from_utf8(out.view).unwrap();
            assert!(out.changed, "{client:?}");
            assert!(
                view.len() <= viewer.budget(Some(101)),
                "{client:?}: {}",
                view.len()
            );
            for needed in [
                "test ledger::rounding ... FAILED",
                "assertion failed: cents == 100",
                "test result: FAILED. 3 passed; 1 failed; 0 ignored",
            ] {
                assert!(
                    view.contains(needed),
                    "{client:?}: {needed} missing from {view}"
                );
            }
            let e = &out.entry;
            assert_eq!(e.full, raw.len() as u64);
            let head = &raw.as_bytes()[..viewer.head_bytes().min(raw.len())];
            let alone = viewer.client_bytes(raw.len() as u64, raw.len() as u64, head, Some(101));
            assert!(alone < raw.len() as u64, "{client:?} cuts a long output");
            assert_eq!(e.client, alone, "{client:?}");
            assert_eq!(
                e.jkz,
                view.len() as u64 + viewer.added(Some(101)),
                "{client:?}"
            );
            assert_eq!(e.exit, Some(101));
            assert_eq!(e.via.as_deref(), Some("wrap"));
            let kept = std::fs::read(e.kept.as_ref().unwrap()).unwrap();
            assert_eq!(kept, raw.as_bytes(), "the kept file is the output");
            let lines = std::fs::read_to_string(state.join("tool-output.jsonl")).unwrap();
            assert_eq!(lines.lines().count(), 1);
        }
    }

    #[test]
    fn a_repeat_in_the_same_session_becomes_a_pointer() {
        for client in Client::ALL {
            let tmp = tempfile::tempdir().unwrap();
            let state = StateDir::at(tmp.path().join("state"));
            std::fs::create_dir_all(state.path()).unwrap();
            let viewer = Viewer::shell(client);
            // Small enough to be shown whole: nothing kept the first time.
            let raw = "On branch main\n".to_string() + &"\tmodified:   src/file.rs\n".repeat(60);
            let table = FilterTable::built_in();
            let first = reduce_call(
                &mut raw.as_bytes(),
                &call(&state, Some("s1"), Some(0), viewer),
                &table,
                &mut Vec::new(),
            )
            .unwrap();
            assert!(!first.entry.repeat);
            let other_session = reduce_call(
                &mut raw.as_bytes(),
                &call(&state, Some("s2"), Some(0), viewer),
                &table,
                &mut Vec::new(),
            )
            .unwrap();
            assert!(
                !other_session.entry.repeat,
                "another chat's call is no repeat"
            );
            let again = reduce_call(
                &mut raw.as_bytes(),
                &call(&state, Some("s1"), Some(0), viewer),
                &table,
                &mut Vec::new(),
            )
            .unwrap();
            assert!(again.entry.repeat && again.changed, "{client:?}");
            let view = String::from_utf8(again.view).unwrap();
            assert_eq!(view.lines().count(), 1, "{view}");
            assert!(view.contains("cargo test"), "{view}");
            let kept = again.entry.kept.as_ref().unwrap();
            assert!(view.contains(kept.as_str()), "{view}");
            assert_eq!(std::fs::read(kept).unwrap(), raw.as_bytes());
            assert!(again.entry.jkz < again.entry.client, "{client:?}");
        }
    }
}
