//! Which chat a process belongs to: the one whose client it runs under.
//!
//! A command's environment is its caller's to set: the session variables
//! ([`crate::session_id::SESSION_ENV`]) and `--session` can name any chat,
//! and `env -u` removes them. Its process tree is not: a command a chat's
//! shell tool runs descends from that chat's client process, whatever the
//! variables say. So a chat is identified by its client: `SessionStart`
//! records the client's pid and start time ([`super::chat::client`]), and a
//! process whose ancestors include a recorded client runs inside that
//! client's chat ([`chat_of`]; [`super::acting`] applies it to the
//! commands).
//!
//! A client's process is told by the name the kernel gives it, and, for a
//! client run by a script interpreter, by its command line: each client's
//! module says which process runs its hooks and its model's commands
//! ([`crate::client::Client::of_process`]).
//!
//! A pid is matched with its start time, so a pid reused after a client
//! exited is not taken for it. One client may have run several chats (a
//! cleared or resumed conversation): the one not ended, of this host, with
//! the latest heartbeat is the process's chat, unless the stated session is
//! one of them. A client that recorded no chat is passed over for the next
//! one up: an agent a pipeline script runs headless, without jkz's hooks,
//! acts as the chat that ran the script.
//!
//! What this cannot see: a process that left the tree (a daemon, a
//! double fork whose parent exited) hangs from the top of the tree, outside
//! every chat. The PreToolUse guard refuses the edits it can see before
//! they run; the writers' claim check cannot follow a process that has
//! left.

use super::chat::{Chat, Client, Liveness};
use super::store::{Store, StoreError};
use crate::process::tree::{self, Ancestor, Tree};

/// A client process among this process's ancestors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientProcess {
    pub pid: u32,
    /// Its start time (clock ticks since boot).
    pub start: u64,
}

/// How far the walk up the tree went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// To the top: the clients found are all there are.
    Top,
    /// Cut at [`tree::MAX_DEPTH`] ancestors: there may be more above.
    Cut,
    /// No `/proc`: nothing is known.
    Unreadable,
}

/// The client processes above this one, nearest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lineage {
    pub clients: Vec<ClientProcess>,
    pub reach: Reach,
}

/// Reads this process's tree for client processes.
pub fn lineage() -> Lineage {
    let (found, reach) = match tree::ancestors() {
        Tree::Whole(found) => (found, Reach::Top),
        Tree::TooDeep(found) => (found, Reach::Cut),
        Tree::Unreadable => (Vec::new(), Reach::Unreadable),
    };
    Lineage {
        clients: found
            .iter()
            .filter(|a| is_client(a))
            .map(|a| ClientProcess {
                pid: a.pid,
                start: a.start,
            })
            .collect(),
        reach,
    }
}

/// True when `a` is the process of a client jkz serves.
pub fn is_client(a: &Ancestor) -> bool {
    crate::client::Client::of_process(&a.name, &|| a.args()).is_some()
}

/// The chat whose recorded client is the nearest of `clients` that
/// recorded any (see the module documentation for the choice among one
/// client's chats); none when no client recorded one.
pub fn chat_of(
    r: &mut dyn Store,
    clients: &[ClientProcess],
    stated: Option<&str>,
) -> Result<Option<Chat>, StoreError> {
    let host = crate::process::hostname();
    for client in clients {
        let pid = i64::from(client.pid);
        let Ok(start) = i64::try_from(client.start) else {
            continue;
        };
        let mut chats = r.chats_of_client(pid, start)?;
        if chats.is_empty() {
            continue;
        }
        // A chat not ended, recorded on this host, first; the store's
        // order (latest heartbeat first) within each.
        let rank = |c: &Chat| (c.ended.is_some(), c.host.as_deref() != Some(host.as_str()));
        chats.sort_by_key(rank);
        let best = rank(&chats[0]);
        let chosen = chats
            .iter()
            .take_while(|c| rank(c) == best)
            .position(|c| Some(c.session_id.as_str()) == stated)
            .unwrap_or(0);
        return Ok(Some(chats.swap_remove(chosen)));
    }
    Ok(None)
}

/// Why a hook run by this process (its client ancestors `clients`) may
/// not speak for `session`: give it a new client (`SessionStart`, with
/// `new_client`) or end it (`SessionEnd`, none). Either would hand the
/// chat's identity, or its claims, to whoever forged the event. Allowed
/// when the chat is new, no longer live, keeps its client, or when this
/// process runs inside that chat or outside every chat (a person); refused
/// from inside another chat.
pub fn may_not_speak_for(
    r: &mut dyn Store,
    session: &str,
    new_client: Option<&Client>,
    clients: &[ClientProcess],
    now: i64,
) -> Result<Option<String>, StoreError> {
    let Some(chat) = r.chat(session)? else {
        return Ok(None);
    };
    if chat.liveness(now) != Liveness::Live {
        return Ok(None);
    }
    if let Some(new) = new_client {
        let same = chat.pid == Some(new.pid)
            && chat.pid_start == new.pid_start
            && chat.host.as_deref() == Some(new.host.as_str());
        if same {
            return Ok(None);
        }
    }
    match chat_of(r, clients, Some(session))? {
        None => Ok(None),
        Some(inside) if inside.session_id == session => Ok(None),
        Some(inside) => {
            let client = chat.pid.map_or_else(
                || "its client".to_string(),
                |p| format!("its client, pid {p},"),
            );
            Ok(Some(format!(
                "chat {session} is live ({client} last seen {} ago) and this event comes from inside chat {}: ignored, \
                 a chat speaks only for itself",
                crate::clock::ago(now - chat.heartbeat),
                inside.session_id
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::chat::{client_of, Place};
    use super::super::db::with_local_registry;
    use super::*;

    #[test]
    fn the_nearest_recorded_client_names_the_chat() {
        let dir = tempfile::tempdir().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let me = client_of(std::process::id());
        let Some(start) = me.pid_start else {
            return; // no /proc: no start time to match
        };
        let mine = ClientProcess {
            pid: std::process::id(),
            start: start as u64,
        };
        let unrecorded = ClientProcess { pid: 1, start: 1 };
        let place = Place::default();
        let (found, _) = with_local_registry(dir.path(), deadline, move |r| {
            let none = chat_of(r, &[unrecorded, mine], None)?;
            r.register("old", &place, Some(&me), 100)?;
            r.end("old", 150)?;
            let ended_only = chat_of(r, &[unrecorded, mine], None)?.map(|c| c.session_id);
            r.register("b", &place, Some(&me), 200)?;
            r.register("c", &place, Some(&me), 300)?;
            let newest = chat_of(r, &[unrecorded, mine], None)?.map(|c| c.session_id);
            let stated = chat_of(r, &[mine], Some("b"))?.map(|c| c.session_id);
            // An ended chat is not chosen over a live one, even when stated.
            let stated_ended = chat_of(r, &[mine], Some("old"))?.map(|c| c.session_id);
            // Another start time: another process, whatever its pid.
            let reused = chat_of(
                r,
                &[ClientProcess {
                    pid: mine.pid,
                    start: mine.start + 1,
                }],
                None,
            )?;
            Ok((none, ended_only, newest, stated, stated_ended, reused))
        })
        .unwrap();
        let (none, ended_only, newest, stated, stated_ended, reused) = found;
        assert_eq!(none, None);
        assert_eq!(ended_only.as_deref(), Some("old"));
        assert_eq!(newest.as_deref(), Some("c"));
        assert_eq!(stated.as_deref(), Some("b"));
        assert_eq!(stated_ended.as_deref(), Some("c"));
        assert_eq!(reused, None);
    }
}
