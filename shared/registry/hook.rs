//! `jkz-chat`, the registry's hook, for every event it is registered on;
//! the event comes from the input's `hook_event_name`:
//!
//! | event | what it does |
//! |---|---|
//! | `SessionStart` | registers the chat (cwd, worktree, branch, client pid) |
//! | `UserPromptSubmit`, `PostToolUse` | refreshes its heartbeat (a write at most every [`HEARTBEAT_EVERY`](super::chat::HEARTBEAT_EVERY) s) |
//! | `PreToolUse` | refuses an edit of what another live chat owns, or of the state directory itself; asks the user about a write it cannot name ([`super::decision`]) |
//! | `SessionEnd` | marks the chat gone, releases its claims |
//!
//! A `SessionStart` that would give a live chat another client, or a
//! `SessionEnd` for a live chat, is ignored (one line) when it comes from
//! inside another chat's process tree: a chat speaks only for itself
//! ([`super::identity::may_not_speak_for`]).
//!
//! It works only where the state directory exists (or `JKZ_STATE_DIR`
//! names it): in a project without `state/` it does nothing. A PreToolUse
//! call that targets nothing the registry guards returns before the
//! registry is opened, and with no `chat.db` yet nothing is claimed.
//! Problems (a corrupt or unreadable registry) are one line on stderr; the
//! tool call, prompt or session goes on.

use std::time::Instant;

use super::backend::{may_hold_claims, with_guard_reads, with_registry, Bound};
use super::bash::Change;
use super::chat::{client, Place};
use super::claim::Holder;
use super::decision::{decide, Verdict};
use super::identity::{lineage, may_not_speak_for};
use super::store::{GuardReads, StoreError};
use super::target::{pipeline_issue, targets, Guarded, Target};
use crate::client::edge::Hook;
use crate::client::help::HookProgram;
use crate::client::{Answer, EventKind, EventName, HookEvent, Tool};
use crate::clock::now;
use crate::hook::Warnings;
use crate::hook_input::MAX_HOOK_INPUT;
use crate::json_file::HOOK_LOCK_WAIT;
use crate::session_id::{process_env, resolve_raw, SessionId, SESSION_ENV};
use crate::state_dir::StateDir;

/// What `jkz-chat` handles.
pub const HOOK: Hook = Hook {
    handles: &[
        EventName::SessionStart,
        EventName::UserPrompt,
        EventName::PreToolUse,
        EventName::PostToolUse,
        EventName::SessionEnd,
    ],
    default: None,
    max_input: MAX_HOOK_INPUT,
    on_bad_input: "",
    // A call that targets nothing guarded passes before the state
    // directory is looked at.
    refuse_tracked_state: false,
    tool_output: false,
};

/// The one-line summary of `jkz-chat --help`.
pub const ABOUT: &str =
    "Register the chat, keep its heartbeat, refuse edits of what another live chat claimed";

/// The rest of `jkz-chat --help`: what it reads, writes, answers; each
/// client's registration and answers ([`crate::client::help`]); its exit
/// code.
pub fn long_about() -> String {
    format!(
        "\
Hook for the cross-chat registry, state/chat.db. At a session's start it
registers the chat (cwd, worktree, branch, client pid); at a prompt and
after a tool call it refreshes the chat's heartbeat (written at most every
30 s); at a session's end it marks the chat gone and releases its claims;
before a tool that changes files it may refuse the call. A session start
that would give a live chat another client, or a session end for a live
chat, is ignored when it comes from inside another chat's process tree: a
chat speaks only for itself (docs/registry.md).

Before a tool call it refuses the call when it would delete or overwrite
the state directory itself (git clean -x/-X over it, git stash --all, rm -r
of it or a directory above it, find -delete, rsync --delete, a removal or
overwrite of chat.db, memory.db, cr-history.db, metrics.db or events/),
whoever holds what; or when it would change a file inside a worktree, or
issue N's pipeline state (state/pipeline/N.json and its companions), or
state/chat.db, that another live chat has claimed (jkz claim). A shell
command is read as the shell runs it: quoting, variables set earlier on the
line, literal $(…) and backticks, sh -c, bash -s, eval, source, scripts
piped into a shell, xargs, find -exec, and the programs that write files
(docs/registry.md lists them). When it cannot tell where a command writes
(bash script.sh, curl … | sh, a variable from the environment) while
another live chat holds a claim, it asks the user instead. Each refusal and
question is a guard.denied or guard.asked event (jkz events). This is a
first hint for the model, best effort; the writers (jkz state set) enforce
the claim themselves. A chat silent for 5 minutes, or whose client has
exited, is stale: its claims no longer stop anyone and `jkz claim N --take`
takes them over. Anything else passes with no output.

The Bash wrap: a shell call it does not refuse comes back with its command
rewritten so the output reaches the model reduced by jkz's engine, with the
command's exit status: either the command stays inline in the client's own
shell, its output into STATE/context-offload/run-….txt, then jkz-truncate
--command-file reduces it, or it runs through jkz-truncate --run (which
one: each client below). Left alone: jkz's own commands, interactive
programs, background jobs, exec, a command starting JKZ_RAW=1, plan mode, a
project without a state directory.
JKZ_BASH_WRAP=0 turns it off (docs/tool-output-guard.md).{clients}

The session is the event's session_id, else {sessions}.
The hook waits at most 2 s for a busy registry.

State directory: the repository's, used only if it exists and git does not
track it (which one, and why: docs/worktrees.md).

Exit code: 0, always; a problem (bad input, a corrupt registry, which is
then rebuilt empty, an unwritable state directory) is one line on stderr.",
        clients = crate::client::help::clients(HookProgram::Chat),
        sessions = crate::session_id::env_in_order(""),
    )
}

/// The registry's answer to `event`: a refusal or a question for a
/// PreToolUse call on what another live chat owns, else nothing.
pub fn answer(event: &HookEvent, warnings: &mut Warnings) -> Answer {
    // The hook's whole budget for waiting on other writers starts now.
    let deadline = Instant::now() + HOOK_LOCK_WAIT;
    let name = event.name();
    let cwd = event.cwd.clone();
    let state = StateDir::resolve(None, cwd.as_deref());
    let base = cwd.clone().unwrap_or_else(|| ".".into());
    let guarded = || Guarded::of(state.path(), &base);
    // A call that targets nothing guarded ends here, before the registry is
    // opened (a shell command's write targets are resolved on disk).
    let found = match &event.kind {
        EventKind::PreToolUse(used) => {
            let base = match &used.tool {
                // A shell command runs in its own directory, when given.
                Tool::Shell { dir: Some(dir), .. } => base.join(dir),
                _ => base.clone(),
            };
            let found = targets(&used.tool, &base, guarded);
            if found.is_empty() {
                return Answer::Nothing;
            }
            found
        }
        _ => Vec::new(),
    };
    // The one session rule, as every jkz tool reads it.
    let session = match resolve_raw(event.session_id.as_deref(), process_env)
        .map(|(raw, _)| SessionId::parse(&raw))
    {
        Some(Ok(id)) => id,
        Some(Err(e)) => {
            warnings.warn(e.to_string());
            return Answer::Nothing;
        }
        None => {
            warnings.warn(format!(
                "{} event without session_id (and {} unset): ignored",
                event.client.spelling(name).unwrap_or_default(),
                SESSION_ENV.join(", ")
            ));
            return Answer::Nothing;
        }
    };
    crate::hook::warn_state_problem(&state, warnings);
    if crate::hook::refuse_tracked_state(&state, warnings) {
        return Answer::Nothing;
    }
    let root = match state.ensure() {
        Ok(Some(root)) => root.to_path_buf(),
        Ok(None) => return Answer::Nothing,
        Err(e) => {
            warnings.warn(format!("state directory {}: {e}", state.describe()));
            return Answer::Nothing;
        }
    };
    let here = cwd.clone().unwrap_or_else(|| ".".into());
    let place = move || Place::of(&here);
    let now = now();
    let session = session.as_str().to_string();
    let bound = Bound::Hook(deadline);
    let done = match name {
        EventName::SessionStart => {
            let (place, client, tree) = (place(), client(), lineage().clients);
            with_registry(&root, bound, move |r| {
                if let Some(why) = may_not_speak_for(r, &session, client.as_ref(), &tree, now)? {
                    return Ok(Some(why));
                }
                r.register(&session, &place, client.as_ref(), now)?;
                Ok(None)
            })
            .map(|(refused, n)| refused.or(n))
        }
        EventName::UserPrompt | EventName::PostToolUse => {
            with_registry(&root, bound, move |r| r.heartbeat(&session, &place, now)).map(|(_, n)| n)
        }
        EventName::SessionEnd => {
            let tree = lineage().clients;
            with_registry(&root, bound, move |r| {
                if let Some(why) = may_not_speak_for(r, &session, None, &tree, now)? {
                    return Ok(Some(why));
                }
                r.end(&session, now)?;
                Ok(None)
            })
            .map(|(refused, n)| refused.or(n))
        }
        EventName::PreToolUse => {
            let guarded = guarded();
            // The state directory's own guard needs no claim; the others
            // do, and an unreadable registry only means none is known.
            let others = if may_hold_claims(&root) {
                let (looked_for, guarded_copy) = (found.clone(), guarded.clone());
                let asking = session.clone();
                match with_guard_reads(&root, bound, move |r| {
                    claims_for(r, &asking, &looked_for, &guarded_copy)
                }) {
                    Ok((others, note)) => {
                        if let Some(note) = note {
                            warnings.warn(note);
                        }
                        others
                    }
                    Err(e) => {
                        warnings.warn(format!(
                            "registry unavailable, nothing recorded or checked: {e}"
                        ));
                        Vec::new()
                    }
                }
            } else {
                Vec::new()
            };
            let Some(verdict) = decide(&found, &others, &guarded, now) else {
                return Answer::Nothing;
            };
            let tool = event.tool_use().map_or("", |t| t.name.as_str());
            // A client that cannot ask gets a refusal that says why.
            let (answer, refused) = match &verdict {
                Verdict::Ask(f) => (Answer::Ask(f.reason.clone()), !event.client.can_ask()),
                Verdict::Deny(f) => (Answer::Deny(f.reason.clone()), true),
            };
            crate::events::sources::guard_decided(
                &state,
                refused,
                &session,
                event.client.name(),
                tool,
                verdict.finding(),
            );
            return answer;
        }
        // Not among the events this hook handles (the edge said so).
        EventName::PreCompact | EventName::PostCompact | EventName::ModelRequest => {
            return Answer::Nothing
        }
    };
    match done {
        Ok(Some(note)) => warnings.warn(note),
        Ok(None) => {}
        Err(e) => warnings.warn(format!(
            "registry unavailable, nothing recorded or checked: {e}"
        )),
    }
    Answer::Nothing
}

/// The other chats' claims `targets` could run into: for a file (an edit
/// tool's, or one a Bash command writes), those covering it or its issue;
/// for an issue, its claim; for anything else (pipeline files by a
/// pattern, the registry, a directory a Bash command changes or removes, a
/// write the hook cannot name), every claim.
fn claims_for(
    r: &mut dyn GuardReads,
    session: &str,
    targets: &[Target],
    guarded: &Guarded,
) -> Result<Vec<Holder>, StoreError> {
    let mut all = Vec::new();
    for t in targets {
        match t {
            Target::File(f) if !guarded.is_registry(f) => {
                let issue = pipeline_issue(f, &guarded.pipeline_dir);
                let file = f.display().to_string();
                all.extend(r.claims_covering(session, Some(&file), issue.as_deref())?);
            }
            Target::Pipeline(issue) => {
                all.extend(r.claims_covering(session, None, Some(issue))?);
            }
            // A file written or changed (no directory, so no worktree lies
            // inside it): the claims whose worktree holds it.
            Target::Tree {
                path,
                pattern: false,
                change: Change::Write | Change::Edit,
                ..
            } if !path.is_dir() => {
                let file = path.display().to_string();
                all.extend(r.claims_covering(session, Some(&file), None)?);
            }
            Target::File(_)
            | Target::Pipelines(_)
            | Target::Registry
            | Target::Tree { .. }
            | Target::State(_)
            | Target::Unknown { .. } => {
                return r.claims_of_others(session);
            }
        }
    }
    Ok(all)
}
