//! `jkz claim`, `jkz release`, `jkz chats`: the registry from a chat's Bash
//! tool, a pipeline script or a terminal (rules in [`super::db`]).
//!
//! The chat is the one whose Bash tool runs the command
//! (`CLAUDE_CODE_SESSION_ID`, which the client sets there), else `--session`.
//!
//! Exit codes of `jkz claim` and `jkz release`: 0 claimed (or taken over,
//! or already this chat's) / released (or not claimed); 1 an I/O or
//! registry error, or no state directory; 2 usage (no session id, a bad
//! issue number); 3 held by another chat (`claim`: a live one, or a stale
//! one without `--take`; `release`: another chat's claim). `jkz chats`: 0,
//! or 1 on an error.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::chat::{Liveness, Place};
use super::clock::{ago, now, timestamp};
use super::db::{with_registry, Claimed, Holder, Released};
use super::target::resolve;
use super::STALE_AFTER;
use crate::exit::Failure;
use crate::pipeline::IssueNumber;
use crate::session_id::SessionId;
use crate::state_dir::StateDir;

/// Exit code: held by another chat.
pub const HELD: u8 = 3;

/// The environment variable the client sets in its Bash tool's commands.
pub const SESSION_ENV: &str = "CLAUDE_CODE_SESSION_ID";

#[derive(clap::Args, Debug, Clone)]
pub struct ClaimArgs {
    /// The issue number.
    #[arg(value_parser = IssueNumber::parse)]
    pub issue: IssueNumber,
    /// The worktree the issue is worked in: another live chat's edits there
    /// are refused.
    #[arg(long, value_name = "PATH")]
    pub worktree: Option<PathBuf>,
    /// Take the issue (and the worktree) over from a chat that is stale
    /// (silent for 5 minutes). A live chat's claim is never taken.
    #[arg(long)]
    pub take: bool,
    /// The chat to claim for. Default: $CLAUDE_CODE_SESSION_ID (set in a
    /// chat's Bash commands).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ReleaseArgs {
    #[arg(value_parser = IssueNumber::parse)]
    pub issue: IssueNumber,
    /// The chat releasing it. Default: $CLAUDE_CODE_SESSION_ID.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ChatsArgs {
    /// One JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The session id: `--session`, else `CLAUDE_CODE_SESSION_ID`.
fn session_of(flag: Option<&str>) -> Result<SessionId, Failure> {
    let raw = match flag {
        Some(s) => s.to_string(),
        None => std::env::var(SESSION_ENV).ok().filter(|s| !s.is_empty()).ok_or_else(|| {
            Failure::new(
                2,
                format!("no chat to act for: run it from a chat's Bash tool ({SESSION_ENV} is set there) or pass --session ID"),
            )
        })?,
    };
    SessionId::parse(&raw).map_err(|e| Failure::new(2, e.to_string()))
}

fn root_of(state: &StateDir) -> Result<PathBuf, Failure> {
    match state.ensure() {
        Ok(Some(root)) => Ok(root.to_path_buf()),
        Ok(None) => Err(Failure::new(
            1,
            format!(
                "no state directory at {}: run `jkz install` in the project, or set JKZ_STATE_DIR",
                state.path().display()
            ),
        )),
        Err(e) => Err(Failure::io(1, state.path().display(), e)),
    }
}

fn here() -> Place {
    Place::of(Path::new("."))
}

/// `jkz claim`.
pub fn claim(args: &ClaimArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let session = session_of(args.session.as_deref())?;
    let root = root_of(state)?;
    let worktree = args
        .worktree
        .as_ref()
        .map(|p| resolve(&std::path::absolute(p).unwrap_or_else(|_| p.clone())));
    let worktree = worktree.as_ref().map(|p| p.display().to_string());
    let issue = args.issue.as_str();
    let now = now();
    let (outcome, note) = with_registry(&root, |r| {
        r.claim(
            session.as_str(),
            issue,
            worktree.as_deref(),
            args.take,
            here,
            now,
        )
    })
    .map_err(|e| Failure::new(1, e.to_string()))?;
    if let Some(note) = note {
        eprintln!("jkz claim: {note}");
    }
    let writing = |e| Failure::io(1, "writing stdout", e);
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
            Ok(0)
        }
        Claimed::Taken(from) => {
            for h in &from {
                writeln!(
                    out,
                    "took issue {} over from {} chat {}",
                    h.claim.issue,
                    h.liveness(now).as_str(),
                    h.claim.session_id
                )
                .map_err(writing)?;
            }
            writeln!(out, "claimed issue {issue}{covering} for chat {session}").map_err(writing)?;
            Ok(0)
        }
        Claimed::Held(h) => {
            eprintln!("jkz claim: {}", held(&h, issue, now));
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

/// Why a claim was refused, and what to do.
fn held(h: &Holder, wanted: &str, now: i64) -> String {
    let what = if h.claim.issue == wanted {
        format!("issue {wanted} is")
    } else {
        format!(
            "worktree {} belongs to issue {},",
            h.claim.worktree.as_deref().unwrap_or_default(),
            h.claim.issue
        )
    };
    let seen = h
        .chat
        .as_ref()
        .map(|c| format!(", last seen {} ago", ago(now - c.heartbeat)))
        .unwrap_or_default();
    match h.liveness(now) {
        Liveness::Live => format!(
            "{what} held by live chat {} since {}{seen}; it can be taken over once that chat is silent for {}",
            h.claim.session_id,
            timestamp(h.claim.acquired),
            ago(STALE_AFTER)
        ),
        _ => format!(
            "{what} held by {} chat {} since {}{seen}: `jkz claim {} --take` takes it over",
            h.liveness(now).as_str(),
            h.claim.session_id,
            timestamp(h.claim.acquired),
            wanted
        ),
    }
}

/// `jkz release`.
pub fn release(args: &ReleaseArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let session = session_of(args.session.as_deref())?;
    let root = root_of(state)?;
    let issue = args.issue.as_str();
    let (outcome, note) = with_registry(&root, |r| r.release(session.as_str(), issue))
        .map_err(|e| Failure::new(1, e.to_string()))?;
    if let Some(note) = note {
        eprintln!("jkz release: {note}");
    }
    let writing = |e| Failure::io(1, "writing stdout", e);
    match outcome {
        Released::Released => {
            crate::events::sources::claim_released(state, issue, session.as_str());
            writeln!(out, "released issue {issue}").map_err(writing)?;
            Ok(0)
        }
        Released::NotClaimed => {
            writeln!(out, "issue {issue} was not claimed").map_err(writing)?;
            Ok(0)
        }
        Released::HeldByOther(h) => {
            eprintln!(
                "jkz release: issue {issue} is held by chat {}, not by chat {session}: not released",
                h.claim.session_id
            );
            Ok(HELD)
        }
    }
}

/// One chat and its claims as `jkz chats --json` shows it; the observer's
/// `/api/now` shows chats the same way.
pub fn chat_json(
    c: &super::chat::Chat,
    claims: &[super::db::Claim],
    now: i64,
) -> serde_json::Value {
    json!({
        "session_id": c.session_id,
        "state": c.liveness(now).as_str(),
        "cwd": c.cwd,
        "worktree": c.worktree,
        "branch": c.branch,
        "pid": c.pid,
        "started": timestamp(c.started),
        "last_heartbeat": timestamp(c.heartbeat),
        "claims": claims.iter().map(|k| json!({
            "issue": k.issue.parse::<u64>().map(serde_json::Value::from)
                .unwrap_or_else(|_| k.issue.clone().into()),
            "worktree": k.worktree,
            "acquired": timestamp(k.acquired),
            "expires": timestamp(c.heartbeat + STALE_AFTER),
        })).collect::<Vec<_>>(),
    })
}

/// `jkz chats`: the live and stale chats with their claims.
pub fn chats(args: &ChatsArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let writing = |e| Failure::io(1, "writing stdout", e);
    let now = now();
    let listed = if state.join(super::db::DB_FILE).exists() {
        let root = root_of(state)?;
        let (listed, note) =
            with_registry(&root, |r| r.chats()).map_err(|e| Failure::new(1, e.to_string()))?;
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
        return Ok(0);
    }
    let mut rows = vec![[
        "SESSION".to_string(),
        "STATE".into(),
        "SEEN".into(),
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
        rows.push([
            c.session_id.clone(),
            c.liveness(now).as_str().into(),
            format!("{} ago", ago(now - c.heartbeat)),
            c.branch.clone().unwrap_or_else(|| "-".into()),
            if issues.is_empty() {
                "-".into()
            } else {
                issues.join(",")
            },
            if worktrees.is_empty() {
                "-".into()
            } else {
                worktrees.join(",")
            },
        ]);
    }
    let widths: Vec<usize> = (0..6)
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
    out.flush().map_err(writing)?;
    Ok(0)
}

/// `jkz state set N …` from a chat: claims N for it when nobody else holds
/// it. Returns one line to show on stderr when it could not (held by
/// another chat, or the registry is unavailable); never fails the set.
pub fn claim_implicitly(state: &StateDir, issue: &IssueNumber) -> Option<String> {
    let session = std::env::var(SESSION_ENV).ok().filter(|s| !s.is_empty())?;
    let session = SessionId::parse(&session).ok()?;
    let root = state.ensure().ok().flatten()?.to_path_buf();
    let now = now();
    match with_registry(&root, |r| {
        r.claim(session.as_str(), issue.as_str(), None, false, here, now)
    }) {
        Ok((Claimed::Held(h), _)) => Some(format!(
            "issue {issue} is claimed by chat {} (not this chat): not claimed for this chat",
            h.claim.session_id
        )),
        Ok((_, note)) => note,
        Err(e) => Some(format!(
            "registry unavailable, issue {issue} not claimed: {e}"
        )),
    }
}
