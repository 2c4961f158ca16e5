//! The claim as its writers enforce it. `jkz state set N` (the one jkz
//! writer of issue N's pipeline files) asks [`may_write`] first: when another
//! live chat holds N, the write is refused (exit 3) with that chat's name,
//! whatever spelling of the command got it there. This is the lock; the
//! PreToolUse hook ([`super::hook`]) only tells the model early.
//!
//! Inside a chat (its process tree holds the chat's client, or, outside
//! every chat's tree, `--session` or a session variable such as a pipeline
//! script's `JKZ_SESSION` names one: [`super::acting`]) the chat's own
//! claim is fine, and a free issue becomes the chat's. A person
//! at a terminal may override another chat's claim with `--force`, never
//! silently: a warning names the chat whose claim was overridden. A chat
//! cannot: `--force` from inside a chat is refused (exit 3), whatever its
//! variables say; it takes a stale chat's issue over with `jkz claim N
//! --take`, and a live chat's never.
//!
//! A registry that cannot be opened does not stop the write (its state
//! directory is broken in a way the write will report, or the registry was
//! just rebuilt empty and holds no claim): the writer says so in one line.

use std::path::Path;

use super::acting::{stated_chat, REFUSED};
use super::backend::{may_hold_claims, with_registry};
use super::chat::Liveness;
use super::chat::STALE_AFTER;
use super::claim::{Claimed, Holder};
use super::cmd::{bound, here, holder_words};
use crate::clock::{ago, now};
use crate::exit::Failure;
use crate::pipeline::IssueNumber;

/// May this process write issue `issue`'s pipeline state (in `root`, the
/// state directory, which exists)? `session` is the writer's `--session`.
/// `Ok` with lines to show on stderr (a claim taken, a claim overridden, a
/// registry that could not be read), or a refusal with exit code 3.
pub fn may_write(
    root: &Path,
    issue: &IssueNumber,
    force: bool,
    session: Option<&str>,
) -> Result<Vec<String>, Failure> {
    let now = now();
    let chat = stated_chat(session, root)?;
    let Some(inside) = chat else {
        if !may_hold_claims(root) {
            return Ok(Vec::new());
        }
        let wanted = issue.as_str().to_string();
        return match with_registry(root, bound(), move |r| r.holder_of(&wanted)) {
            Ok((holder, note)) => {
                let mut lines: Vec<String> = note.into_iter().collect();
                match holder {
                    Some(h) if h.liveness(now) == Liveness::Live => {
                        if !force {
                            return Err(refused(&h, issue, false, now));
                        }
                        lines.push(format!(
                            "--force: writing issue {issue} over the claim of {}",
                            holder_words(&h, now)
                        ));
                    }
                    _ => {}
                }
                Ok(lines)
            }
            Err(e) => Ok(vec![unavailable(issue, &e)]),
        };
    };
    // --force overrides another chat's claim: a person's decision, never a
    // chat's, whatever the chat says it is.
    if force {
        return Err(Failure::new(
            REFUSED,
            format!(
                "--force is for a person at a terminal, not for a chat: this runs inside {}; nothing written. \
                 Work on an issue this chat holds, or ask the user",
                inside.words()
            ),
        ));
    }
    let chat = inside.chat;
    // From a chat: the issue becomes the chat's unless another holds it.
    let (who, what) = (chat.as_str().to_string(), issue.as_str().to_string());
    let claimed = with_registry(root, bound(), move |r| {
        r.claim(&who, &what, None, false, &here, now)
    });
    match claimed {
        Ok((Claimed::Held(h), _)) if h.liveness(now) == Liveness::Live => {
            Err(refused(&h, issue, true, now))
        }
        Ok((Claimed::Held(h), note)) => {
            let mut lines: Vec<String> = note.into_iter().collect();
            lines.push(format!(
                "issue {issue} is claimed by {}: not claimed for chat {chat}; `jkz claim {issue} --take` takes it over",
                holder_words(&h, now)
            ));
            Ok(lines)
        }
        Ok((_, note)) => Ok(note.into_iter().collect()),
        Err(e) => Ok(vec![unavailable(issue, &e)]),
    }
}

/// The refusal: whose claim, and what the writer can do.
fn refused(h: &Holder, issue: &IssueNumber, in_chat: bool, now: i64) -> Failure {
    let stale_in = h
        .chat
        .as_ref()
        .map_or(0, |c| c.heartbeat + STALE_AFTER - now)
        .max(0);
    let what_to_do = if in_chat {
        format!(
            "work on an issue this chat holds, or ask the user; if that chat stays silent it becomes stale in {} (at once if its client exits), \
             then `jkz claim {issue} --take` takes the issue over. --force is for a person at a terminal, not for a chat",
            ago(stale_in)
        )
    } else {
        format!(
            "ask that chat to release it (`jkz release {issue}` there, or `jkz release {issue} --session {}` here), \
             or write anyway with --force",
            h.claim.session_id
        )
    };
    Failure::new(
        REFUSED,
        format!(
            "issue {issue} is claimed by {}: not written; {what_to_do}",
            holder_words(h, now)
        ),
    )
}

fn unavailable(issue: &IssueNumber, e: &super::store::RegistryError) -> String {
    format!("registry unavailable, issue {issue}'s claim not checked: {e}")
}
