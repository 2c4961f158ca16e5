//! `jkz claim`, `jkz release`, `jkz chats`: the registry from a chat's Bash
//! tool, a pipeline script or a terminal (rules in [`super::db`]).
//!
//! The chat is the one whose client the command runs under (its process
//! tree, whatever the session variables say); `--session` may name only
//! that chat. Outside every chat's tree the one session rule names it
//! (the first of [`crate::session_id::SESSION_ENV`] that is set), and
//! without those `--session` names any ([`super::acting`]).
//!
//! Exit codes of `jkz claim` and `jkz release`: 0 claimed (or taken over,
//! or already this chat's) / released (or not claimed); 1 an I/O or
//! registry error; 2 usage (no session id, a bad
//! issue number); 3 refused: held by another chat (`claim`: a live one, or
//! a stale one without `--take`, on the issue or on a worktree that
//! contains or lies inside the one asked for; `release`: another chat's
//! claim), or `--session` naming another chat from inside a chat; 4 no
//! state directory. `jkz chats`: 0, 1 on an error, 4 no state directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use super::acting::acting_for;
use super::backend::{may_hold_claims, with_registry, Bound};
use super::chat::STALE_AFTER;
use super::chat::{Liveness, Place};
use super::claim::{Claimed, Holder, Released};
use super::target::resolve;
use crate::clock::{ago, now, timestamp};
use crate::exit::{Failure, EXIT_FAILED, EXIT_OK};
use crate::pipeline::IssueNumber;
use crate::session_id::env_in_order;
use crate::state_dir::StateDir;
use crate::terminal_text::inert;

/// Exit code: held by another chat (or a chat acting for another).
pub const HELD: u8 = super::acting::REFUSED;

/// How long a command waits for another writer of the registry: as long as
/// any jkz writer waits for a lock (`JKZ_LOCK_WAIT_MS`); in team mode, a
/// command's budget ([`crate::team::Budget::command`]).
pub fn bound() -> Bound {
    Bound::Command(Instant::now() + crate::json_file::lock_wait())
}

#[derive(clap::Args, Debug, Clone)]
pub struct ClaimArgs {
    /// The issue number.
    #[arg(value_parser = IssueNumber::parse)]
    pub issue: IssueNumber,
    /// The worktree the issue is worked in: another live chat's edits there
    /// are refused. A directory of this repository (a worktree, or a
    /// directory inside one); a path that does not exist, or another
    /// repository's checkout, is refused (exit 2).
    #[arg(long, value_name = "PATH")]
    pub worktree: Option<PathBuf>,
    /// Take the issue (and the worktree) over from a chat that is stale
    /// (silent for 5 minutes). A live chat's claim is never taken.
    #[arg(long)]
    pub take: bool,
    // The chat to claim for; its default is the one session rule's.
    #[arg(long, value_name = "ID", help = format!(
        "The chat to claim for (a pipeline script names its own session, e.g. \
         pipeline-42). Default: the chat whose client runs this command, else \
         {}; inside a chat it may name only that chat",
        env_in_order("$")
    ))]
    pub session: Option<String>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ReleaseArgs {
    #[arg(value_parser = IssueNumber::parse)]
    pub issue: IssueNumber,
    // The chat releasing it; its default is the one session rule's.
    #[arg(long, value_name = "ID", help = format!(
        "The chat releasing it. Default: the chat whose client runs this \
         command, else {}; inside a chat it may name only that chat (a person \
         at a terminal, outside every chat, may name any)",
        env_in_order("$")
    ))]
    pub session: Option<String>,
}

#[derive(clap::Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ChatsArgs {
    #[command(subcommand)]
    pub command: Option<ChatsCommand>,
    /// One JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum ChatsCommand {
    /// Forget the chats that hold no claim and whose client has exited (or,
    /// with no process recorded, such as a pipeline script's session, that
    /// are silent for 5 minutes). `jkz gc` does it too.
    Prune(PruneArgs),
}

#[derive(clap::Args, Debug, Clone)]
pub struct PruneArgs {
    /// Say which chats would be forgotten; forget none.
    #[arg(long)]
    pub dry_run: bool,
}

pub(super) fn root_of(state: &StateDir) -> Result<PathBuf, Failure> {
    match state.ensure() {
        Ok(Some(root)) => Ok(root.to_path_buf()),
        Ok(None) => Err(Failure::new(
            crate::exit::EXIT_NO_STATE_DIR,
            state.missing(),
        )),
        Err(e) => Err(Failure::io(EXIT_FAILED, state.path().display(), e)),
    }
}

pub(super) fn here() -> Place {
    Place::of(Path::new("."))
}

/// `jkz claim`.
pub fn claim(args: &ClaimArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let session = acting_for(args.session.as_deref(), state.path())?;
    let root = root_of(state)?;
    let worktree = match &args.worktree {
        Some(p) => Some(resolve(
            &super::claimed_worktree::check(p, Path::new(""))
                .map_err(|e| Failure::new(crate::exit::EXIT_USAGE, e))?,
        )),
        None => None,
    };
    let worktree = worktree.as_ref().map(|p| p.display().to_string());
    let issue = args.issue.as_str();
    let now = now();
    let (who, what, wt, take) = (
        session.as_str().to_string(),
        issue.to_string(),
        worktree.clone(),
        args.take,
    );
    let (outcome, note) = with_registry(&root, bound(), move |r| {
        r.claim(&who, &what, wt.as_deref(), take, &here, now)
    })
    .map_err(|e| Failure::new(EXIT_FAILED, e.to_string()))?;
    if let Some(note) = note {
        eprintln!("jkz claim: {note}");
    }
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    let covering = worktree
        .as_deref()
        .map(|w| format!(" with worktree {w}"))
        .unwrap_or_default();
    if let Claimed::Claimed | Claimed::Taken(_) = &outcome {
        crate::events::sources::claim_taken(
            state,
            issue,
            session.as_str(),
            worktree.as_deref(),
            &taken_from(&outcome),
        );
    }
    match outcome {
        Claimed::Claimed => {
            writeln!(out, "claimed issue {issue}{covering} for chat {session}").map_err(writing)?;
            Ok(EXIT_OK)
        }
        Claimed::Taken(from) => {
            for h in &from {
                writeln!(
                    out,
                    "took issue {} over from {} chat {}",
                    h.claim.issue,
                    h.liveness(now).as_str(),
                    inert(&h.claim.session_id)
                )
                .map_err(writing)?;
            }
            writeln!(out, "claimed issue {issue}{covering} for chat {session}").map_err(writing)?;
            Ok(EXIT_OK)
        }
        Claimed::Held(h) => {
            eprintln!(
                "jkz claim: {}",
                inert(&held(&h, issue, worktree.as_deref(), now))
            );
            Ok(HELD)
        }
    }
}

/// The chats a claim was taken over from.
fn taken_from(outcome: &Claimed) -> Vec<String> {
    match outcome {
        Claimed::Taken(from) => from.iter().map(|h| h.claim.session_id.clone()).collect(),
        _ => Vec::new(),
    }
}

/// Why a claim was refused, and what to do. `worktree` is the one asked
/// for, when one was.
fn held(h: &Holder, wanted: &str, worktree: Option<&str>, now: i64) -> String {
    let theirs = h.claim.worktree.as_deref().unwrap_or_default();
    let what = if h.claim.issue == wanted {
        format!("issue {wanted} is")
    } else if worktree == Some(theirs) {
        format!("worktree {theirs} belongs to issue {},", h.claim.issue)
    } else {
        let how = if worktree.is_some_and(|w| Path::new(w).starts_with(theirs)) {
            "lies inside"
        } else {
            "contains"
        };
        format!(
            "worktree {} {how} worktree {theirs}, which belongs to issue {} (claimed worktrees never nest),",
            worktree.unwrap_or_default(),
            h.claim.issue
        )
    };
    let holder = holder_words(h, now);
    match h.liveness(now) {
        Liveness::Live => format!(
            "{what} held by {holder}; it can be taken over once that chat is silent for {} or its client has exited",
            ago(STALE_AFTER)
        ),
        _ => format!("{what} held by {holder}: `jkz claim {wanted} --take` takes it over"),
    }
}

/// The holder of a claim as people need it to find that chat: `live chat
/// ID (cwd /p, branch b) since …, last seen 12s ago`.
pub fn holder_words(h: &Holder, now: i64) -> String {
    let mut words = format!("{} chat {}", h.liveness(now).as_str(), h.claim.session_id);
    if let Some(host) = &h.claim.host {
        words.push_str(&format!(" on {host}"));
    }
    if let Some(c) = &h.chat {
        words.push_str(&format!(" (cwd {}", c.cwd));
        if let Some(branch) = &c.branch {
            words.push_str(&format!(", branch {branch}"));
        }
        words.push(')');
    }
    words.push_str(&format!(" since {}", timestamp(h.claim.acquired)));
    if let Some(c) = &h.chat {
        words.push_str(&format!(", last seen {} ago", ago(now - c.heartbeat)));
    }
    words
}

/// `jkz release`.
pub fn release(args: &ReleaseArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let session = acting_for(args.session.as_deref(), state.path())?;
    let root = root_of(state)?;
    let issue = args.issue.as_str();
    let (who, what) = (session.as_str().to_string(), issue.to_string());
    let (outcome, note) = with_registry(&root, bound(), move |r| r.release(&who, &what))
        .map_err(|e| Failure::new(EXIT_FAILED, e.to_string()))?;
    if let Some(note) = note {
        eprintln!("jkz release: {note}");
    }
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    match outcome {
        Released::Released => {
            crate::events::sources::claim_released(state, issue, session.as_str());
            writeln!(out, "released issue {issue}").map_err(writing)?;
            Ok(EXIT_OK)
        }
        Released::NotClaimed => {
            writeln!(out, "issue {issue} was not claimed").map_err(writing)?;
            Ok(EXIT_OK)
        }
        Released::HeldByOther(h) => {
            eprintln!(
                "jkz release: issue {issue} is held by chat {}, not by chat {session}: not released",
                inert(&h.claim.session_id)
            );
            Ok(HELD)
        }
    }
}

/// One chat and its claims as `jkz chats --json` shows it; the observer's
/// `/api/now` shows chats the same way.
pub fn chat_json(
    c: &super::chat::Chat,
    claims: &[super::claim::Claim],
    now: i64,
) -> serde_json::Value {
    json!({
        "session_id": c.session_id,
        "state": c.liveness(now).as_str(),
        "cwd": c.cwd,
        "worktree": c.worktree,
        "branch": c.branch,
        "host": c.host,
        "pid": c.pid,
        "started": timestamp(c.started),
        "last_heartbeat": timestamp(c.heartbeat),
        "claims": claims.iter().map(|k| json!({
            "issue": k.issue.parse::<u64>().map(serde_json::Value::from)
                .unwrap_or_else(|_| k.issue.clone().into()),
            "worktree": k.worktree,
            "host": k.host,
            "acquired": timestamp(k.acquired),
            "expires": timestamp(c.heartbeat + STALE_AFTER),
        })).collect::<Vec<_>>(),
    })
}

/// `jkz chats`: the live and stale chats with their claims, and the host
/// each chat runs on (`-` when the registry does not know it: the local
/// registry records it with the client's pid; the team registry always).
pub fn chats(args: &ChatsArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    if let Some(ChatsCommand::Prune(prune)) = &args.command {
        return prune_chats(prune, state, out);
    }
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    let now = now();
    // As it was before this listing refreshed it: what the guard had.
    let replica = super::backend::replica_freshness(state.path());
    let listed = if may_hold_claims(state.path()) {
        let root = root_of(state)?;
        let (listed, note) = with_registry(&root, bound(), |r| r.chats())
            .map_err(|e| Failure::new(EXIT_FAILED, e.to_string()))?;
        if let Some(note) = note {
            eprintln!("jkz chats: {note}");
        }
        listed
    } else {
        Vec::new()
    };
    if args.json {
        let items: Vec<_> = listed
            .iter()
            .map(|(c, claims)| chat_json(c, claims, now))
            .collect();
        let text = serde_json::to_string_pretty(&items).unwrap_or_else(|_| "[]".into());
        writeln!(out, "{text}").map_err(writing)?;
        out.flush().map_err(writing)?;
        return Ok(EXIT_OK);
    }
    let mut rows = vec![[
        "SESSION".to_string(),
        "STATE".into(),
        "SEEN".into(),
        "HOST".into(),
        "BRANCH".into(),
        "CLAIMS".into(),
        "WORKTREE".into(),
    ]];
    for (c, claims) in &listed {
        let issues: Vec<&str> = claims.iter().map(|k| k.issue.as_str()).collect();
        let mut worktrees: Vec<&str> = claims
            .iter()
            .filter_map(|k| k.worktree.as_deref())
            .collect();
        worktrees.dedup();
        let cell = |text: &str| inert(text).into_owned();
        rows.push([
            cell(&c.session_id),
            c.liveness(now).as_str().into(),
            format!("{} ago", ago(now - c.heartbeat)),
            cell(c.host.as_deref().unwrap_or("-")),
            cell(c.branch.as_deref().unwrap_or("-")),
            if issues.is_empty() {
                "-".into()
            } else {
                cell(&issues.join(","))
            },
            if worktrees.is_empty() {
                "-".into()
            } else {
                cell(&worktrees.join(","))
            },
        ]);
    }
    let widths: Vec<usize> = (0..7)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        writeln!(out, "{}", line.trim_end()).map_err(writing)?;
    }
    if listed.is_empty() {
        writeln!(out, "(no live or stale chats)").map_err(writing)?;
    }
    if let Ok(crate::team::Backend::Team(..)) = crate::team::backend(state.path()) {
        let fresh = replica.map_or_else(
            || "none yet".to_string(),
            |f| f.describe(crate::clock::now_ms()),
        );
        writeln!(
            out,
            "team registry; this machine's replica ({}): {fresh}, before this listing",
            crate::state_dir::layout::REGISTRY_REPLICA
        )
        .map_err(writing)?;
    }
    out.flush().map_err(writing)?;
    Ok(EXIT_OK)
}

/// `jkz chats prune`: forgets the chats [`super::prune`] lets go, one line
/// each, then how many.
pub fn prune_chats(args: &PruneArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    if !may_hold_claims(state.path()) {
        writeln!(
            out,
            "no registry in {}; nothing to forget",
            state.path().display()
        )
        .map_err(writing)?;
        return Ok(EXIT_OK);
    }
    let root = root_of(state)?;
    let (pruned, note) = super::prune::prune(&root, args.dry_run, now())
        .map_err(|e| Failure::new(EXIT_FAILED, e.to_string()))?;
    if let Some(note) = note {
        eprintln!("jkz chats prune: {note}");
    }
    let verb = if args.dry_run {
        "would forget"
    } else {
        "forgot"
    };
    for p in &pruned {
        writeln!(out, "{verb} chat {} ({})", inert(&p.session_id), p.why).map_err(writing)?;
    }
    writeln!(out, "{verb} {} chat(s)", pruned.len()).map_err(writing)?;
    out.flush().map_err(writing)?;
    Ok(EXIT_OK)
}
