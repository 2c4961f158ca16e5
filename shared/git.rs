//! Git state (branch, HEAD, dirty files) for snapshots and digests, read by
//! running `git status` with a hard deadline and bounded output.
//!
//! A hook must never hang because git is missing, slow (a huge repository, a
//! network filesystem) or waiting on a lock, so the child is started early
//! ([`GitProbe::start`]), its output is read on a thread up to
//! [`MAX_OUTPUT`], and [`GitProbe::finish`] kills it at the deadline. It runs
//! with `GIT_OPTIONAL_LOCKS=0` so that it never takes the index lock from
//! under the user's own git commands.
//!
//! Where a directory's repository is ([`repository`]) and what its config
//! says ([`config`]) are read from the files instead: no `git` process on
//! a hook's path for those.

pub mod config;
pub mod index;
pub mod repository;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The most bytes of `git status` output read; the rest is dropped.
pub const MAX_OUTPUT: u64 = 1024 * 1024;

/// The most dirty paths kept by name (all are counted).
pub const MAX_DIRTY_NAMES: usize = 200;

/// What git said about a working tree.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitState {
    /// The branch name; none when detached or unknown.
    pub branch: Option<String>,
    /// The full commit id of HEAD; none before the first commit or unknown.
    pub head: Option<String>,
    /// Paths with changes (staged, unstaged, untracked, conflicted), at most
    /// [`MAX_DIRTY_NAMES`] of them.
    pub dirty: Vec<String>,
    /// How many paths have changes (may exceed `dirty.len()`).
    pub dirty_count: usize,
    /// Why the state is unknown or partial (no git, not a repository,
    /// timed out, output cut), if it is.
    pub error: Option<String>,
}

impl GitState {
    /// True when git answered (a repository was found).
    pub fn is_known(&self) -> bool {
        self.head.is_some() || self.branch.is_some()
    }

    /// HEAD's short form (12 characters).
    pub fn short_head(&self) -> Option<&str> {
        self.head
            .as_deref()
            .map(|h| crate::cut::cut_str(h, 12, crate::cut::Keep::Head))
    }
}

/// A running `git status`.
pub struct GitProbe {
    child: Child,
    output: mpsc::Receiver<std::io::Result<Vec<u8>>>,
}

/// The state when git could not even be started.
pub enum Started {
    Running(GitProbe),
    Failed(GitState),
}

impl GitProbe {
    /// Starts `git status` in `dir` without waiting for it.
    pub fn start(dir: &Path) -> Started {
        let spawned = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "core.fsmonitor=false",
                "status",
                "--porcelain=v2",
                "--branch",
                // Ahead/behind counts are never read, and walking the
                // history for them is most of git's time on a branch far
                // from its upstream (134 ms at 20,000 commits behind, 2 ms
                // without).
                "--no-ahead-behind",
                "-z",
                "--untracked-files=normal",
                "--ignore-submodules=all",
            ])
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                return Started::Failed(GitState {
                    error: Some(format!("git could not be run: {e}")),
                    ..GitState::default()
                })
            }
        };
        let stdout = child.stdout.take().expect("piped stdout");
        let (send, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let r = stdout
                .take(MAX_OUTPUT)
                .read_to_end(&mut bytes)
                .map(|_| bytes);
            let _ = send.send(r);
        });
        Started::Running(GitProbe { child, output })
    }

    /// True once git has exited (its answer is then at hand).
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits until `deadline` at most; kills git if it is still running.
    pub fn finish(mut self, deadline: Instant) -> GitState {
        let waited = self
            .output
            .recv_timeout(deadline.saturating_duration_since(Instant::now()));
        let status = match self.child.try_wait() {
            Ok(Some(status)) => Some(status),
            _ => {
                // Output complete (or cut at the bound) but git still alive:
                // give it a moment to exit, then stop it.
                let grace = Instant::now() + Duration::from_millis(50);
                loop {
                    match self.child.try_wait() {
                        Ok(Some(status)) => break Some(status),
                        Ok(None) if waited.is_ok() && Instant::now() < grace => {
                            std::thread::sleep(Duration::from_micros(50))
                        }
                        _ => {
                            let _ = self.child.kill();
                            let _ = self.child.wait();
                            break None;
                        }
                    }
                }
            }
        };
        match waited {
            Err(_) => GitState {
                error: Some("git status timed out; git state unknown".into()),
                ..GitState::default()
            },
            Ok(Err(e)) => GitState {
                error: Some(format!("reading git status: {e}")),
                ..GitState::default()
            },
            Ok(Ok(bytes)) => match status {
                Some(s) if s.success() => parse_status(&bytes),
                Some(_) if bytes.is_empty() => GitState {
                    error: Some("not a git repository".into()),
                    ..GitState::default()
                },
                _ => {
                    let mut state = parse_status(&bytes);
                    state.error = Some(format!(
                        "git status output cut at {MAX_OUTPUT} bytes; dirty list partial"
                    ));
                    state
                }
            },
        }
    }
}

/// How long a hook waits for git before it reports the git state unknown:
/// both compaction hooks run inside the client's hook budget, so they share
/// one short wait.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(2);

/// How long `jkz session save` waits for `git status`; past it the record
/// says why the git state is missing. A user's command, not a hook: it can
/// afford a slow repository more time.
pub const SAVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Git state of `dir`, waiting at most `timeout`.
pub fn state_of(dir: &Path, timeout: Duration) -> GitState {
    let deadline = Instant::now() + timeout;
    match GitProbe::start(dir) {
        Started::Running(probe) => probe.finish(deadline),
        Started::Failed(state) => state,
    }
}

/// Parses `git status --porcelain=v2 --branch -z` output.
pub fn parse_status(bytes: &[u8]) -> GitState {
    let mut state = GitState::default();
    let mut fields = bytes.split(|&b| b == 0).peekable();
    while let Some(entry) = fields.next() {
        let entry = String::from_utf8_lossy(entry);
        if let Some(header) = entry.strip_prefix("# ") {
            if let Some(oid) = header.strip_prefix("branch.oid ") {
                state.head = (oid != "(initial)").then(|| oid.to_string());
            } else if let Some(head) = header.strip_prefix("branch.head ") {
                state.branch = (head != "(detached)").then(|| head.to_string());
            }
            continue;
        }
        // The path follows a fixed number of space-separated fields.
        let skip = match entry.as_bytes().first() {
            Some(b'1') => 8,
            Some(b'2') => 9,
            Some(b'u') => 10,
            Some(b'?') => 1,
            _ => continue,
        };
        if entry.starts_with('2') {
            fields.next(); // the rename's original path
        }
        if let Some(path) = entry.splitn(skip + 1, ' ').nth(skip) {
            state.dirty_count += 1;
            if state.dirty.len() < MAX_DIRTY_NAMES {
                state.dirty.push(path.to_string());
            }
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_porcelain_v2() {
        let out = b"# branch.oid 0123456789abcdef0123456789abcdef01234567\0# branch.head state\0\
1 .M N... 100644 100644 100644 aaa bbb src/a b.rs\0\
2 R. N... 100644 100644 100644 aaa bbb R100 new.rs\0old.rs\0\
u UU N... 100644 100644 100644 100644 a b c conflict.rs\0\
? untracked.txt\0! ignored\0";
        let s = parse_status(out);
        assert_eq!(s.branch.as_deref(), Some("state"));
        assert_eq!(s.short_head(), Some("0123456789ab"));
        assert_eq!(
            s.dirty,
            ["src/a b.rs", "new.rs", "conflict.rs", "untracked.txt"]
        );
        assert_eq!(s.dirty_count, 4);
    }

    #[test]
    fn detached_and_initial() {
        let s = parse_status(b"# branch.oid (initial)\0# branch.head (detached)\0");
        assert_eq!((s.branch, s.head), (None, None));
    }

    #[test]
    fn real_repository_and_non_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let s = state_of(tmp.path(), Duration::from_secs(5));
        assert!(!s.is_known());
        assert!(s.error.is_some());
        let git = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(tmp.path())
                .args(args)
                .output()
                .unwrap()
        };
        git(&["init", "-q", "-b", "trunk"]);
        std::fs::write(tmp.path().join("f.txt"), "x").unwrap();
        let s = state_of(tmp.path(), Duration::from_secs(5));
        assert_eq!(s.branch.as_deref(), Some("trunk"));
        assert_eq!(s.head, None);
        assert_eq!(s.dirty, ["f.txt"]);

        // A branch with an upstream it has moved away from (its counts are
        // not asked for): branch, HEAD and dirty files as before.
        let commit = |msg: &str| {
            git(&[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                msg,
            ])
        };
        git(&["add", "f.txt"]);
        commit("one");
        git(&["branch", "up"]);
        git(&["branch", "-q", "--set-upstream-to=up"]);
        commit("two");
        std::fs::write(tmp.path().join("g.txt"), "y").unwrap();
        let head = git(&["rev-parse", "HEAD"]).stdout;
        let s = state_of(tmp.path(), Duration::from_secs(5));
        assert_eq!(s.branch.as_deref(), Some("trunk"));
        assert_eq!(
            s.head.as_deref(),
            Some(String::from_utf8_lossy(&head).trim())
        );
        assert_eq!(s.dirty, ["g.txt"]);
    }
}
