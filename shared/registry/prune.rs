//! Forgetting the chats nobody will hear from again: `jkz chats prune`, and
//! `jkz gc` as part of its retention.
//!
//! A chat is forgotten when it holds no claim and either its recorded client
//! ran on this host and has exited, or no client was recorded for it (a
//! pipeline script's session, made by `jkz claim --session ID` or a writer
//! with `JKZ_SESSION`; a client jkz could not tell) and it has been silent
//! for [`STALE_AFTER`] seconds. Nothing is lost: a chat that shows up again
//! (a hook, a command naming its session) is registered anew.
//!
//! Kept: a chat holding a claim, whatever its state (its claim is what `jkz
//! claim --take` and `jkz release` act on); a chat whose client still runs,
//! however long silent (a command in its process tree is known to act for it
//! by that record: [`super::identity`]); a chat whose client runs on another
//! host (team mode), which this host cannot judge.

use std::path::Path;

use super::backend::with_registry;
use super::chat::{Chat, STALE_AFTER};
use super::cmd::bound;
use super::store::RegistryError;
use crate::clock::ago;

/// A chat forgotten (or, on a dry run, that would be), and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pruned {
    pub session_id: String,
    pub why: String,
}

/// Why `chat`, holding `claims` claims, may be forgotten at `now`; none
/// when it must be kept.
pub fn forgettable(chat: &Chat, claims: usize, now: i64) -> Option<String> {
    if claims > 0 {
        return None;
    }
    if chat.client_is_gone() {
        return Some(format!(
            "its client, pid {}, has exited; it held no claim",
            chat.pid.unwrap_or_default()
        ));
    }
    let silent = now - chat.heartbeat;
    let client_unknown = chat.pid.is_none() || chat.host.is_none();
    (client_unknown && silent >= STALE_AFTER).then(|| {
        format!(
            "silent for {}, with no process recorded; it held no claim",
            ago(silent)
        )
    })
}

/// Forgets every forgettable chat of the registry of the state directory
/// `root` (with `dry_run`, only says which); returns them, and the
/// registry's note (it was rebuilt) when there is one.
pub fn prune(
    root: &Path,
    dry_run: bool,
    now: i64,
) -> Result<(Vec<Pruned>, Option<String>), RegistryError> {
    with_registry(root, bound(), move |r| {
        let mut pruned = Vec::new();
        for (chat, claims) in r.chats()? {
            let Some(why) = forgettable(&chat, claims.len(), now) else {
                continue;
            };
            // A chat that beat or claimed since it was judged is kept.
            if dry_run || r.forget(&chat.session_id, chat.heartbeat)? {
                pruned.push(Pruned {
                    session_id: chat.session_id,
                    why,
                });
            }
        }
        Ok(pruned)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(pid: Option<i64>, heartbeat: i64) -> Chat {
        Chat {
            session_id: "s".into(),
            cwd: "/".into(),
            worktree: None,
            branch: None,
            pid,
            host: pid.map(|_| crate::process::hostname()),
            pid_start: None,
            started: 0,
            heartbeat,
            ended: None,
        }
    }

    #[test]
    fn a_chat_without_a_process_goes_once_stale_and_never_with_a_claim() {
        let c = chat(None, 1000);
        assert_eq!(forgettable(&c, 0, 1000 + STALE_AFTER - 1), None);
        assert!(forgettable(&c, 0, 1000 + STALE_AFTER).is_some());
        assert_eq!(forgettable(&c, 1, 1000 + STALE_AFTER * 100), None);
    }

    #[test]
    fn a_chat_goes_at_once_when_its_client_exited_and_never_while_it_runs() {
        let me = super::super::chat::client_of(std::process::id());
        let mut c = chat(Some(me.pid), 1000);
        c.pid_start = me.pid_start;
        // This process runs: kept, however long silent.
        assert_eq!(forgettable(&c, 0, 1000 + STALE_AFTER * 100), None);
        if std::fs::metadata("/proc/self/stat").is_ok() {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = i64::from(child.id());
            child.wait().unwrap();
            let mut gone = chat(Some(pid), 1000);
            gone.pid_start = None;
            assert!(forgettable(&gone, 0, 1001).is_some());
            assert_eq!(forgettable(&gone, 2, 1001), None);
        }
        // Another host's client cannot be judged here.
        c.host = Some(format!("{}-elsewhere", crate::process::hostname()));
        assert_eq!(forgettable(&c, 0, 1000 + STALE_AFTER * 100), None);
    }
}
