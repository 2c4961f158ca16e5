//! The PreToolUse decision: may this chat make this change?
//!
//! - No when it would delete or overwrite the state directory itself
//!   ([`super::state_guard`]), whoever holds what.
//! - No when the target lies in a worktree, or is the pipeline state of an
//!   issue, that another *live* chat has claimed; nor when it removes or
//!   overwrites pipeline files by a pattern, or the registry itself, while
//!   another live chat holds a claim there. A stale chat's claim does not
//!   stop anyone (it can be taken over); the reason says how.
//! - Ask the user when the hook cannot tell where a command writes (a
//!   script from elsewhere, a variable from the environment, files written
//!   into a directory above another chat's worktree or pipeline state) and
//!   another live chat holds a claim that could be there.

use std::path::Path;

use super::bash::Change;
use super::chat::Liveness;
use super::chat::STALE_AFTER;
use super::claim::{nested, Holder};
use super::reach::{is_kept, pattern_base, reach, Reach};
use super::state_guard::Harm;
use super::target::{glob_match, pipeline_issue, Guarded, Target};
use crate::clock::{ago, timestamp};

/// What the hook answers a call it does not let pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Refused, with the reason the model reads.
    Deny(Finding),
    /// The user decides: the hook cannot tell where the command writes,
    /// and another live chat's claim could be there.
    Ask(Finding),
}

impl Verdict {
    pub fn finding(&self) -> &Finding {
        match self {
            Verdict::Deny(f) | Verdict::Ask(f) => f,
        }
    }
}

/// What a verdict is about, for the model, the user and the event log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub reason: String,
    /// What is contested: a path, an issue's pipeline state, the registry,
    /// the state directory, or a write the hook cannot name.
    pub target: String,
    /// The chat whose claim it is, and its issue (none when only the state
    /// directory is at stake).
    pub owner: Option<String>,
    pub issue: Option<String>,
}

/// The answer to `targets`, given the other chats' claims, or `None` to let
/// the call pass.
pub fn decide(
    targets: &[Target],
    others: &[Holder],
    guarded: &Guarded,
    now: i64,
) -> Option<Verdict> {
    // Whether a chat is live may take a look at its client's process:
    // once per claim, not once per target.
    let live: Vec<Holder> = others
        .iter()
        .filter(|h| h.liveness(now) == Liveness::Live)
        .cloned()
        .collect();
    let claimed = refusal(targets, &live, guarded, now);
    let harm = targets.iter().find_map(|t| match t {
        Target::State(h) => Some(h),
        _ => None,
    });
    if let Some(harm) = harm {
        let mut why = state_reason(harm, guarded);
        if let Some(c) = &claimed {
            why.push_str(" Besides: ");
            why.push_str(c.reason.trim_start_matches("jkz: refused: "));
        }
        return Some(Verdict::Deny(Finding {
            reason: why,
            target: guarded.state_root.display().to_string(),
            owner: claimed.as_ref().and_then(|c| c.owner.clone()),
            issue: claimed.and_then(|c| c.issue),
        }));
    }
    if let Some(c) = claimed {
        return Some(Verdict::Deny(c));
    }
    ask(targets, &live, guarded).map(Verdict::Ask)
}

/// The words the model reads when the state directory is at stake.
fn state_reason(harm: &Harm, guarded: &Guarded) -> String {
    format!(
        "jkz: refused: {}. {} is shared by every chat on this repository: the registry of \
         chats and their claims (chat.db), every issue's pipeline state, the event log, the \
         learned patterns (memory.db), the review history (cr-history.db) and the metrics; \
         none of it is in git, and nothing brings it back. Instead, {}. If the user wants it \
         gone all the same, the user runs the command.",
        harm.what,
        guarded.state_root.display(),
        harm.instead,
    )
}

/// The refusal of `targets` for a claim of the live chats `others`, if any.
fn refusal(targets: &[Target], others: &[Holder], guarded: &Guarded, now: i64) -> Option<Finding> {
    let holding = |issue: &str| others.iter().find(|h| h.claim.issue == issue);
    let worktree = |h: &Holder| h.claim.worktree.clone().unwrap_or_default();
    for target in targets {
        let (holder, what, contested) = match target {
            Target::File(file) => {
                let in_worktree = others.iter().find(|h| {
                    h.claim
                        .worktree
                        .as_deref()
                        .is_some_and(|wt| file.starts_with(wt))
                });
                if let Some(h) = in_worktree {
                    (
                        h,
                        format!("{} lies in worktree {}", file.display(), worktree(h)),
                        worktree(h),
                    )
                } else if let Some(h) =
                    pipeline_issue(file, &guarded.pipeline_dir).and_then(|n| holding(&n))
                {
                    (
                        h,
                        format!(
                            "{} is issue {}'s pipeline state",
                            file.display(),
                            h.claim.issue
                        ),
                        file.display().to_string(),
                    )
                } else if guarded.is_registry(file) {
                    let Some(h) = others.first() else {
                        continue;
                    };
                    (h, registry_words(file), file.display().to_string())
                } else {
                    continue;
                }
            }
            Target::Pipeline(issue) => {
                let Some(h) = holding(issue) else {
                    continue;
                };
                (
                    h,
                    format!("this command writes issue {issue}'s pipeline state"),
                    format!("issue {issue}'s pipeline state"),
                )
            }
            Target::Pipelines(pattern) => {
                let matched = others.iter().find(|h| {
                    let n = &h.claim.issue;
                    [
                        format!("{n}.json"),
                        format!("{n}-compact-plan.md"),
                        format!("{n}-compact-plan.json"),
                    ]
                    .iter()
                    .any(|name| glob_match(pattern, name))
                });
                let Some(h) = matched else {
                    continue;
                };
                let what = if pattern == "*" {
                    format!(
                        "this command removes or replaces the pipeline directory {}, issue {}'s pipeline state among it",
                        guarded.pipeline_dir.display(),
                        h.claim.issue
                    )
                } else {
                    format!(
                        "this command changes the pipeline files matching {pattern} in {}, issue {}'s among them",
                        guarded.pipeline_dir.display(),
                        h.claim.issue
                    )
                };
                (
                    h,
                    what,
                    guarded.pipeline_dir.join(pattern).display().to_string(),
                )
            }
            Target::Registry => {
                let Some(h) = others.first() else {
                    continue;
                };
                let file = guarded.state_root.join(crate::state_dir::layout::CHAT_DB);
                (h, registry_words(&file), file.display().to_string())
            }
            Target::Tree {
                path,
                pattern,
                change,
                kept,
            } => {
                let hit = others.iter().find_map(|h| {
                    let wt = h.claim.worktree.as_deref()?;
                    let wt = Path::new(wt);
                    if is_kept(kept, &base_of(path, *pattern), wt) {
                        return None;
                    }
                    let shown = path.display();
                    match (reach(path, *pattern, wt), change) {
                        (Reach::Exact | Reach::Below, _) => Some((
                            h,
                            format!("this command changes {shown}, in worktree {}", wt.display()),
                        )),
                        (Reach::Above, Change::Remove) => Some((
                            h,
                            format!(
                                "this command removes {shown}, and worktree {} with it",
                                wt.display()
                            ),
                        )),
                        _ => None,
                    }
                });
                let Some((h, what)) = hit else {
                    continue;
                };
                (h, what, worktree(h))
            }
            Target::State(_) | Target::Unknown { .. } => continue,
        };
        return Some(Finding {
            reason: reason(holder, &what, now),
            target: contested,
            owner: Some(holder.claim.session_id.clone()),
            issue: Some(holder.claim.issue.clone()),
        });
    }
    None
}

/// The literal directory a written path (a pattern when `pattern`) starts
/// from.
fn base_of(path: &Path, pattern: bool) -> std::path::PathBuf {
    if pattern {
        pattern_base(path)
    } else {
        path.to_path_buf()
    }
}

/// The question for the user when the hook cannot tell where a command
/// writes and a claim of the live chats `live` could be there.
fn ask(targets: &[Target], live: &[Holder], guarded: &Guarded) -> Option<Finding> {
    // Could a write within `dir` (anywhere, for `None`) reach `h`'s claim?
    let could_reach = |dir: Option<&Path>, h: &Holder| match dir {
        None => true,
        Some(dir) => {
            nested(dir, &guarded.state_root)
                || h.claim
                    .worktree
                    .as_deref()
                    .is_some_and(|wt| nested(dir, Path::new(wt)))
        }
    };
    for target in targets {
        let (what, within) = match target {
            Target::Unknown { what, within } => (what.clone(), within.clone()),
            Target::Tree {
                path,
                pattern,
                change: Change::Write,
                ..
            } => {
                let above = live.iter().find(|h| {
                    h.claim
                        .worktree
                        .as_deref()
                        .is_some_and(|wt| reach(path, *pattern, Path::new(wt)) == Reach::Above)
                });
                if above.is_none() {
                    continue;
                }
                (
                    format!("the files this command writes into {}", path.display()),
                    Some(base_of(path, *pattern)),
                )
            }
            _ => continue,
        };
        let Some(h) = live.iter().find(|h| could_reach(within.as_deref(), h)) else {
            continue;
        };
        let mut chat = format!("chat {}", h.claim.session_id);
        if let Some(branch) = h.chat.as_ref().and_then(|c| c.branch.as_ref()) {
            chat.push_str(&format!(" (branch {branch})"));
        }
        let place = match &h.claim.worktree {
            Some(wt) => format!(
                "its worktree {wt} and issue {}'s pipeline state",
                h.claim.issue
            ),
            None => format!("issue {}'s pipeline state", h.claim.issue),
        };
        let reason = format!(
            "jkz: the hook cannot tell where this command writes ({what}), and issue {} is \
             claimed by another live {chat} since {}. Allow it only if it leaves {place} alone.",
            h.claim.issue,
            timestamp(h.claim.acquired),
        );
        return Some(Finding {
            reason,
            target: what,
            owner: Some(h.claim.session_id.clone()),
            issue: Some(h.claim.issue.clone()),
        });
    }
    None
}

/// What a change of the registry file `file` is, for the reason.
fn registry_words(file: &Path) -> String {
    format!(
        "this command writes or removes {}, the registry that holds other chats' claims (only jkz claim, jkz release and the jkz-chat hook write it)",
        file.display()
    )
}

/// The words the model reads: what is contested, which chat holds it and
/// since when, and what to do (`jkz claim N --take` once it is stale).
pub fn reason(holder: &Holder, what: &str, now: i64) -> String {
    let issue = &holder.claim.issue;
    let mut chat = format!("chat {}", holder.claim.session_id);
    let mut seen = String::new();
    if let Some(host) = &holder.claim.host {
        chat.push_str(&format!(" on {host}"));
    }
    if let Some(c) = &holder.chat {
        if let Some(branch) = &c.branch {
            chat.push_str(&format!(" (branch {branch})"));
        }
        seen = format!(", last seen {} ago", ago(now - c.heartbeat));
    }
    let stale_in = holder
        .chat
        .as_ref()
        .map_or(0, |c| c.heartbeat + STALE_AFTER - now)
        .max(0);
    format!(
        "jkz: refused: {what}, and issue {issue} is claimed by another live {chat} since {}{seen}. \
         Do not change that chat's worktree or pipeline: work on an issue you hold, or ask the user. \
         If that chat stays silent it becomes stale in {} (at once if its client exits); then `jkz claim {issue} --take` takes the issue over.",
        timestamp(holder.claim.acquired),
        ago(stale_in),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::chat::Chat;
    use crate::registry::claim::Claim;
    use std::path::PathBuf;

    /// The reason `decide` refuses `targets` for, if it does.
    fn refused(targets: &[Target], others: &[Holder], g: &Guarded, now: i64) -> Option<String> {
        match decide(targets, others, g, now)? {
            Verdict::Deny(f) => Some(f.reason),
            Verdict::Ask(f) => panic!("asked: {}", f.reason),
        }
    }

    fn guarded() -> Guarded {
        Guarded {
            state_root: PathBuf::from("/p/state"),
            pipeline_dir: PathBuf::from("/p/state/pipeline"),
        }
    }

    fn holder(issue: &str, worktree: Option<&str>, heartbeat: i64) -> Holder {
        Holder {
            claim: Claim {
                issue: issue.into(),
                session_id: "chat-a".into(),
                worktree: worktree.map(str::to_string),
                acquired: 1_000,
                host: None,
            },
            chat: Some(Chat {
                session_id: "chat-a".into(),
                cwd: "/p".into(),
                worktree: None,
                branch: Some("i42".into()),
                pid: None,
                host: None,
                pid_start: None,
                started: 900,
                heartbeat,
                ended: None,
            }),
        }
    }

    #[test]
    fn a_live_holders_worktree_and_pipeline_are_refused() {
        let g = guarded();
        let pipe = g.pipeline_dir.as_path();
        let others = [holder("42", Some("/wt/42"), 1_000)];
        let edit = [Target::File(PathBuf::from("/wt/42/src/a.rs"))];
        let why = refused(&edit, &others, &g, 1_010).expect("refused");
        assert!(why.contains("chat chat-a (branch i42)"), "{why}");
        assert!(why.contains("since 1970-01-01T00:16:40Z"), "{why}");
        assert!(why.contains("`jkz claim 42 --take`"), "{why}");
        let pipeline = [Target::File(pipe.join("42.json"))];
        assert!(refused(&pipeline, &others, &g, 1_010).is_some());
        let bash = [Target::Pipeline("42".into())];
        assert!(refused(&bash, &others, &g, 1_010).is_some());
        // A sibling directory sharing a prefix is not inside the worktree.
        let sibling = [Target::File(PathBuf::from("/wt/420/a.rs"))];
        assert_eq!(refused(&sibling, &others, &g, 1_010), None);
        assert_eq!(
            refused(&[Target::Pipeline("43".into())], &others, &g, 1_010),
            None
        );
        // The whole directory, a pattern reaching 42's file, the registry.
        for t in [
            Target::Pipelines("*".into()),
            Target::Pipelines("4?.json".into()),
            Target::Registry,
            Target::File(PathBuf::from("/p/state/chat.db-wal")),
        ] {
            assert!(
                refused(std::slice::from_ref(&t), &others, &g, 1_010).is_some(),
                "{t:?}"
            );
        }
        assert_eq!(
            refused(&[Target::Pipelines("5*".into())], &others, &g, 1_010),
            None
        );
    }

    #[test]
    fn a_stale_holder_stops_nobody() {
        let others = [holder("42", Some("/wt/42"), 1_000)];
        let edit = [
            Target::File(PathBuf::from("/wt/42/src/a.rs")),
            Target::Registry,
        ];
        assert_eq!(
            refused(&edit, &others, &guarded(), 1_000 + STALE_AFTER),
            None
        );
    }

    fn tree(path: &str, change: Change) -> Target {
        Target::Tree {
            path: PathBuf::from(path),
            pattern: path.contains('*'),
            change,
            kept: Vec::new(),
        }
    }

    #[test]
    fn bash_writes_into_a_claimed_worktree() {
        let g = guarded();
        let others = [holder("42", Some("/wt/42"), 1_000)];
        for t in [
            tree("/wt/42/src/a.rs", Change::Write),
            tree("/wt/42", Change::Edit),
            tree("/wt", Change::Remove),
            tree("/wt/*", Change::Remove),
            tree("/wt/42/src", Change::Clean { ignored: false }),
        ] {
            let Some(Verdict::Deny(f)) = decide(std::slice::from_ref(&t), &others, &g, 1_010)
            else {
                panic!("{t:?}")
            };
            assert_eq!(f.owner.as_deref(), Some("chat-a"));
            assert_eq!(f.issue.as_deref(), Some("42"));
            assert_eq!(f.target, "/wt/42");
        }
        for t in [
            tree("/wt/420/a", Change::Write),
            tree("/wt", Change::Edit),
            tree("/wt", Change::Clean { ignored: true }),
            tree("/elsewhere/*.o", Change::Remove),
        ] {
            assert_eq!(
                decide(std::slice::from_ref(&t), &others, &g, 1_010),
                None,
                "{t:?}"
            );
        }
        // Files written into a directory above it: the user decides.
        let Some(Verdict::Ask(f)) = decide(&[tree("/wt", Change::Write)], &others, &g, 1_010)
        else {
            panic!()
        };
        assert!(
            f.reason.contains("chat chat-a (branch i42)"),
            "{}",
            f.reason
        );
    }

    #[test]
    fn the_state_directory_is_refused_whoever_holds_what() {
        let g = guarded();
        let harm = Target::State(Harm {
            what: "git clean -X removes /p/state".into(),
            instead: "`git clean -fdX -e '!state/'`".into(),
        });
        let Some(Verdict::Deny(alone)) = decide(std::slice::from_ref(&harm), &[], &g, 1_010) else {
            panic!()
        };
        assert!(
            alone.reason.contains("git clean -X removes /p/state"),
            "{}",
            alone.reason
        );
        assert!(alone.reason.contains("-e '!state/'"), "{}", alone.reason);
        assert_eq!((alone.owner, alone.target.as_str()), (None, "/p/state"));
        // With a claim at stake too, the reason says both.
        let others = [holder("42", None, 1_000)];
        let both = [harm, Target::Pipelines("*".into())];
        let Some(Verdict::Deny(f)) = decide(&both, &others, &g, 1_010) else {
            panic!()
        };
        assert!(f.reason.contains("chat chat-a"), "{}", f.reason);
        assert_eq!(f.owner.as_deref(), Some("chat-a"));
    }

    #[test]
    fn writes_the_hook_cannot_name_are_asked_about_only_near_a_live_claim() {
        let g = guarded();
        let others = [holder("42", Some("/wt/42"), 1_000)];
        let unknown = |within: Option<&str>| Target::Unknown {
            what: "the script x.sh".into(),
            within: within.map(PathBuf::from),
        };
        for within in [
            None,
            Some("/p/state/pipeline"),
            Some("/wt"),
            Some("/wt/42/src"),
        ] {
            let got = decide(&[unknown(within)], &others, &g, 1_010);
            assert!(matches!(got, Some(Verdict::Ask(_))), "{within:?}: {got:?}");
        }
        assert_eq!(decide(&[unknown(Some("/tmp"))], &others, &g, 1_010), None);
        // Nobody else holds a live claim: nothing to ask.
        assert_eq!(decide(&[unknown(None)], &[], &g, 1_010), None);
        assert_eq!(
            decide(&[unknown(None)], &others, &g, 1_000 + STALE_AFTER),
            None
        );
    }
}
