//! What the registry records about a chat when it starts: the worktree its
//! directory lies in, that worktree's branch, and the client's pid when it
//! can be told. Everything is read from the file system (`.git`, `/proc`):
//! no `git` process, so a hook stays in the milliseconds.

use std::path::{Path, PathBuf};

use crate::git::repository::MAX_POINTER;
use crate::user_file::read_user_file_bounded;

/// Seconds without a heartbeat after which a chat is stale and its claims
/// can be taken over.
pub const STALE_AFTER: i64 = 300;

/// The most often one chat's heartbeat is written, in seconds: hooks that
/// fire more often than this only read.
pub const HEARTBEAT_EVERY: i64 = 30;

/// A chat as the registry stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chat {
    pub session_id: String,
    /// The directory the client runs in.
    pub cwd: String,
    /// The git worktree holding `cwd` (its top directory), when there is one.
    pub worktree: Option<String>,
    /// The worktree's branch, or the first 12 digits of a detached HEAD.
    pub branch: Option<String>,
    /// The client's process id, when an ancestor of the hook is the client
    /// ([`client_pid`]).
    pub pid: Option<i64>,
    /// The host `pid` runs on: a pid is only ever judged on its own host.
    pub host: Option<String>,
    /// `pid`'s start time (clock ticks since boot, Linux), so a reused pid
    /// is not taken for the client.
    pub pid_start: Option<i64>,
    /// Unix seconds.
    pub started: i64,
    pub heartbeat: i64,
    /// Set by `SessionEnd`: the chat is gone.
    pub ended: Option<i64>,
}

/// How a chat stands at a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Live,
    Stale,
    Gone,
}

impl Liveness {
    pub fn as_str(self) -> &'static str {
        match self {
            Liveness::Live => "live",
            Liveness::Stale => "stale",
            Liveness::Gone => "gone",
        }
    }
}

impl Chat {
    /// Gone once ended; stale once silent for [`STALE_AFTER`]
    /// seconds, or at once when its client's pid is known to be gone on
    /// this host (as a lock's holder is); live otherwise.
    pub fn liveness(&self, now: i64) -> Liveness {
        if self.ended.is_some() {
            Liveness::Gone
        } else if now - self.heartbeat >= STALE_AFTER || self.client_is_gone() {
            Liveness::Stale
        } else {
            Liveness::Live
        }
    }

    /// True when the recorded client ran on this host and runs no more. A
    /// chat whose pid or host is unknown is never presumed dead.
    pub fn client_is_gone(&self) -> bool {
        let (Some(pid), Some(host)) = (self.pid, &self.host) else {
            return false;
        };
        let Ok(pid) = u32::try_from(pid) else {
            return false;
        };
        crate::process::Holder {
            pid,
            host: host.clone(),
            pid_start: self.pid_start.and_then(|s| u64::try_from(s).ok()),
        }
        .is_gone()
    }
}

/// The client a chat runs under, as `SessionStart` records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    pub pid: i64,
    pub host: String,
    pub pid_start: Option<i64>,
}

/// Where a chat runs: `cwd`, its worktree and branch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Place {
    pub cwd: String,
    pub worktree: Option<String>,
    pub branch: Option<String>,
}

impl Place {
    /// Finds the worktree holding `cwd` (the nearest ancestor with `.git`).
    pub fn of(cwd: &Path) -> Place {
        let cwd_abs = absolute(cwd);
        let mut worktree = None;
        let mut branch = None;
        for dir in cwd_abs.ancestors() {
            let dot_git = dir.join(".git");
            if dot_git.exists() {
                worktree = Some(dir.display().to_string());
                branch = read_branch(&dot_git);
                break;
            }
        }
        Place {
            cwd: cwd_abs.display().to_string(),
            worktree,
            branch,
        }
    }
}

/// `path` made absolute against the current directory (not resolved).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The branch of the worktree whose `.git` (a directory, or a file
/// `gitdir: …` in a linked worktree) is `dot_git`; the first 12 digits of
/// the commit when detached. Both files are read bounded, regular files
/// only, never blocking ([`read_user_file_bounded`]): a FIFO or a device
/// in their place leaves the branch unknown, never a hook waiting.
fn read_branch(dot_git: &Path) -> Option<String> {
    let git_dir = if dot_git.is_dir() {
        dot_git.to_path_buf()
    } else {
        let bytes = read_user_file_bounded(dot_git, MAX_POINTER).ok()?;
        let text = String::from_utf8(bytes).ok()?;
        let linked = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        let linked = Path::new(linked);
        if linked.is_absolute() {
            linked.to_path_buf()
        } else {
            dot_git.parent()?.join(linked)
        }
    };
    let head = read_user_file_bounded(&git_dir.join("HEAD"), MAX_POINTER).ok()?;
    let head = String::from_utf8(head).ok()?;
    let head = head.trim();
    match head.strip_prefix("ref:") {
        Some(r) => Some(r.trim().trim_start_matches("refs/heads/").to_string()),
        None => Some(head.chars().take(12).collect()),
    }
}

/// The client process this hook runs under, on this host, with its start
/// time; unknown when [`client_pid`] is.
pub fn client() -> Option<Client> {
    client_pid()
        .and_then(|pid| u32::try_from(pid).ok())
        .map(client_of)
}

/// The process `pid` of this host as a chat's client.
pub fn client_of(pid: u32) -> Client {
    Client {
        pid: i64::from(pid),
        host: crate::process::hostname(),
        pid_start: crate::process::start_time(pid).and_then(|s| i64::try_from(s).ok()),
    }
}

/// The pid of the client process this hook runs under: the nearest of its
/// first few ancestors that is a client ([`super::identity::is_client`];
/// Linux `/proc`; elsewhere, or when none is, unknown). A hook runs as the
/// client's child or grandchild (through a shell).
pub fn client_pid() -> Option<i64> {
    let found = match crate::process::tree::ancestors() {
        crate::process::tree::Tree::Whole(found) | crate::process::tree::Tree::TooDeep(found) => {
            found
        }
        crate::process::tree::Tree::Unreadable => return None,
    };
    found
        .iter()
        .take(4)
        .find(|a| super::identity::is_client(a))
        .map(|a| i64::from(a.pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_worktree_names_its_branch() {
        let dir = tempfile::tempdir().unwrap();
        let main_git = dir.path().join("repo/.git");
        std::fs::create_dir_all(main_git.join("worktrees/wt")).unwrap();
        std::fs::write(main_git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            main_git.join("worktrees/wt/HEAD"),
            "ref: refs/heads/i42-fix\n",
        )
        .unwrap();
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(wt.join("src")).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", main_git.join("worktrees/wt").display()),
        )
        .unwrap();
        let place = Place::of(&wt.join("src"));
        assert_eq!(place.worktree.as_deref(), Some(wt.to_str().unwrap()));
        assert_eq!(place.branch.as_deref(), Some("i42-fix"));
        let place = Place::of(&dir.path().join("repo"));
        assert_eq!(place.branch.as_deref(), Some("main"));
    }

    #[test]
    fn liveness_follows_the_heartbeat() {
        let mut chat = Chat {
            session_id: "s".into(),
            cwd: "/".into(),
            worktree: None,
            branch: None,
            pid: None,
            host: None,
            pid_start: None,
            started: 0,
            heartbeat: 1000,
            ended: None,
        };
        assert_eq!(chat.liveness(1000 + 299), Liveness::Live);
        assert_eq!(chat.liveness(1000 + 300), Liveness::Stale);
        chat.ended = Some(1001);
        assert_eq!(chat.liveness(1001), Liveness::Gone);
    }

    #[test]
    fn a_chat_whose_client_died_on_this_host_is_stale_at_once() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = i64::from(child.id());
        child.wait().unwrap();
        let mut chat = Chat {
            session_id: "s".into(),
            cwd: "/".into(),
            worktree: None,
            branch: None,
            pid: Some(pid),
            host: Some(crate::process::hostname()),
            pid_start: None,
            started: 0,
            heartbeat: 1000,
            ended: None,
        };
        if std::fs::metadata("/proc/self/stat").is_ok() {
            assert_eq!(chat.liveness(1001), Liveness::Stale);
        }
        // Another host's pid, or an unknown host, is never presumed dead.
        chat.host = Some(format!("{}-elsewhere", crate::process::hostname()));
        assert_eq!(chat.liveness(1001), Liveness::Live);
        chat.host = None;
        assert_eq!(chat.liveness(1001), Liveness::Live);
        // This very process is alive.
        let me = client_of(std::process::id());
        chat.pid = Some(me.pid);
        chat.host = Some(me.host);
        chat.pid_start = me.pid_start;
        assert_eq!(chat.liveness(1001), Liveness::Live);
    }
}
