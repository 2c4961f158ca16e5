//! The PreToolUse decision: may this chat make this change? No when the
//! target lies in a worktree, or is the pipeline state of an issue, that
//! another *live* chat has claimed; nor when it removes or overwrites
//! pipeline files by a pattern, or the registry itself, while another live
//! chat holds a claim there. A stale chat's claim does not stop anyone (it
//! can be taken over); the reason says how.

use std::path::Path;

use super::chat::Liveness;
use super::chat::STALE_AFTER;
use super::claim::Holder;
use super::target::{glob_match, pipeline_issue, Guarded, Target};
use crate::clock::{ago, timestamp};

/// The reason to refuse `targets`, given the other chats' claims, or `None`
/// to let the call pass.
pub fn refusal(
    targets: &[Target],
    others: &[Holder],
    guarded: &Guarded,
    now: i64,
) -> Option<String> {
    let live = |h: &&Holder| h.liveness(now) == Liveness::Live;
    let holding = |issue: &str| others.iter().filter(live).find(|h| h.claim.issue == issue);
    for target in targets {
        let (holder, what) = match target {
            Target::File(file) => {
                let in_worktree = others.iter().filter(live).find(|h| {
                    h.claim
                        .worktree
                        .as_deref()
                        .is_some_and(|wt| file.starts_with(wt))
                });
                if let Some(h) = in_worktree {
                    (
                        h,
                        format!(
                            "{} lies in worktree {}",
                            file.display(),
                            h.claim.worktree.as_deref().unwrap_or_default()
                        ),
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
                    )
                } else if guarded.is_registry(file) {
                    let Some(h) = others.iter().find(live) else {
                        continue;
                    };
                    (h, registry_words(file))
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
                )
            }
            Target::Pipelines(pattern) => {
                let matched = others.iter().filter(live).find(|h| {
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
                (h, what)
            }
            Target::Registry => {
                let Some(h) = others.iter().find(live) else {
                    continue;
                };
                (
                    h,
                    registry_words(&guarded.state_root.join(crate::state_dir::layout::CHAT_DB)),
                )
            }
        };
        return Some(reason(holder, &what, now));
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
        let why = refusal(&edit, &others, &g, 1_010).expect("refused");
        assert!(why.contains("chat chat-a (branch i42)"), "{why}");
        assert!(why.contains("since 1970-01-01T00:16:40Z"), "{why}");
        assert!(why.contains("`jkz claim 42 --take`"), "{why}");
        let pipeline = [Target::File(pipe.join("42.json"))];
        assert!(refusal(&pipeline, &others, &g, 1_010).is_some());
        let bash = [Target::Pipeline("42".into())];
        assert!(refusal(&bash, &others, &g, 1_010).is_some());
        // A sibling directory sharing a prefix is not inside the worktree.
        let sibling = [Target::File(PathBuf::from("/wt/420/a.rs"))];
        assert_eq!(refusal(&sibling, &others, &g, 1_010), None);
        assert_eq!(
            refusal(&[Target::Pipeline("43".into())], &others, &g, 1_010),
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
                refusal(std::slice::from_ref(&t), &others, &g, 1_010).is_some(),
                "{t:?}"
            );
        }
        assert_eq!(
            refusal(&[Target::Pipelines("5*".into())], &others, &g, 1_010),
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
            refusal(&edit, &others, &guarded(), 1_000 + STALE_AFTER),
            None
        );
    }
}
