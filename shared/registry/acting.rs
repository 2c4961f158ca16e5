//! Which chat a registry command acts for, and who may name another.
//!
//! A command runs *inside a chat* when its process tree says so: one of its
//! ancestors is a client process the registry records for a chat (pid and
//! start time, [`super::identity`]). It then acts for that chat and no
//! other, whatever the session variables
//! ([`crate::session_id::SESSION_ENV`]) or `--session` say: `--session`
//! may name only the chat itself, and `--force` (overriding another chat's
//! claim) is refused.
//!
//! Outside every chat's tree (a terminal, a pipeline script started from
//! one) the stated session stands, as the one session rule reads it
//! ([`crate::session_id::resolve_raw`]): a variable names the chat the
//! command acts for (and it acts as a chat); without one, a person at a
//! terminal may name any chat with `--session`, e.g. to release a claim a
//! crashed chat left behind. Where the tree cannot be read (no `/proc`),
//! the variables decide, as they did before the tree was read; a tree
//! deeper than jkz reads, with no recorded client in its first levels, is
//! refused rather than taken for a terminal.

use std::path::Path;

use super::backend::{may_hold_claims, with_registry};
use super::identity::{chat_of, lineage, Reach};
use crate::exit::{Failure, EXIT_USAGE};
use crate::session_id::{process_env, resolve_raw, SessionId, SESSION_ENV};

/// Exit code: refused because another chat holds it, or because a chat
/// tried to act for another.
pub const REFUSED: u8 = 3;

/// The chat a process runs inside, and how that is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enclosing {
    pub chat: SessionId,
    /// The recorded client among the process's ancestors, when the tree
    /// said it; none when a session variable did.
    pub client: Option<u32>,
}

impl Enclosing {
    /// How the chat was told, for a refusal: `chat X (its client, pid P,
    /// runs this command)`.
    pub fn words(&self) -> String {
        match self.client {
            Some(pid) => format!(
                "chat {} (its client, pid {pid}, is an ancestor of this process, whatever {} say)",
                self.chat,
                SESSION_ENV.join(" and ")
            ),
            None => format!("chat {} (named by the session variable)", self.chat),
        }
    }
}

/// The chat this process runs inside, if any, for the registry of the
/// state directory `root`. A session variable that is not a valid id is a
/// usage error (exit 2), never taken for "no chat".
pub fn enclosing_chat(root: &Path) -> Result<Option<Enclosing>, Failure> {
    let stated = match resolve_raw(None, process_env) {
        None => None,
        Some((raw, _)) => Some(
            SessionId::parse(&raw)
                .map_err(|e| Failure::new(EXIT_USAGE, format!("{} (from the environment)", e)))?,
        ),
    };
    let tree = lineage();
    if !tree.clients.is_empty() && may_hold_claims(root) {
        let clients = tree.clients.clone();
        let named = stated.as_ref().map(|s| s.as_str().to_string());
        // A registry that cannot be read tells nothing: the command's own
        // use of it reports why.
        if let Ok((Some(chat), _)) = with_registry(root, super::cmd::bound(), move |r| {
            chat_of(r, &clients, named.as_deref())
        }) {
            let id = SessionId::parse(&chat.session_id).map_err(|e| {
                Failure::new(
                    REFUSED,
                    format!("the registry records this process's chat as {e}"),
                )
            })?;
            let client = chat.pid.and_then(|p| u32::try_from(p).ok());
            return Ok(Some(Enclosing { chat: id, client }));
        }
    }
    if tree.reach == Reach::Cut {
        return Err(Failure::new(
            REFUSED,
            format!(
                "this process has more than {} ancestors and none of the first is a chat's client: \
                 jkz cannot tell whether it runs inside a chat; run it from a shell fewer levels deep",
                crate::process::tree::MAX_DEPTH
            ),
        ));
    }
    Ok(stated.map(|chat| Enclosing { chat, client: None }))
}

/// The chat a command acts for, when anything names one: the enclosing
/// chat, which `flag` (`--session`) may only repeat (exit 3 otherwise);
/// outside every chat, `flag`; none when neither names a chat (a person at
/// a terminal).
pub fn stated_chat(flag: Option<&str>, root: &Path) -> Result<Option<Enclosing>, Failure> {
    let named = flag
        .map(|raw| SessionId::parse(raw).map_err(|e| Failure::new(EXIT_USAGE, e.to_string())))
        .transpose()?;
    let chat = stated_or_enclosing(enclosing_chat(root)?, named)?;
    // What this command logs is logged as the chat it acts for.
    if let Some(chat) = &chat {
        crate::events::act_as(&chat.chat);
    }
    Ok(chat)
}

fn stated_or_enclosing(
    enclosing: Option<Enclosing>,
    named: Option<SessionId>,
) -> Result<Option<Enclosing>, Failure> {
    match (enclosing, named) {
        (Some(inside), Some(named)) if named != inside.chat => Err(Failure::new(
            REFUSED,
            format!(
                "run inside {}, --session may name only that chat, not {named}: a chat acts only for itself; \
                 a person at a terminal (outside every chat) may act for another chat",
                inside.words()
            ),
        )),
        (Some(inside), _) => Ok(Some(inside)),
        (None, Some(named)) => Ok(Some(Enclosing {
            chat: named,
            client: None,
        })),
        (None, None) => Ok(None),
    }
}

/// The chat to act for ([`stated_chat`]); exit 2 when nothing names one.
pub fn acting_for(flag: Option<&str>, root: &Path) -> Result<SessionId, Failure> {
    match stated_chat(flag, root)? {
        Some(chat) => Ok(chat.chat),
        None => Err(Failure::new(
            EXIT_USAGE,
            format!(
                "no chat to act for: run it from a chat's Bash tool ({} is set there), pass --session ID, \
                 or, in a pipeline script, export JKZ_SESSION=ID once so every jkz command it runs acts as that session",
                SESSION_ENV[1..].join(" or ")
            ),
        )),
    }
}
