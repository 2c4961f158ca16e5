//! The guard of the state directory itself. `state/` is shared by every
//! chat on the repository (the registry of chats and claims, every issue's
//! pipeline state, the event log, the learned patterns, the review
//! history, the metrics), is not in git, and nothing brings it back; so a
//! command that would delete it, or delete or overwrite what cannot be
//! rebuilt in it, is refused whether or not anyone holds a claim:
//!
//! - a removal of the state directory or a directory above it (`rm -r`,
//!   `mv` away, `find … -delete`, `rsync --delete`, `git stash --all`, a
//!   pattern such as `rm -rf *` that matches it), unless the command keeps
//!   it out (`find -path ./state -prune`, `rsync --exclude=state/`);
//! - `git clean -x` or `-X` over it, unless an exclude pattern keeps it
//!   (`-e state/` with `-x`, `-e '!state/'` with `-X`);
//! - a removal, or an overwrite (a redirection, `cp`/`mv`/`install`/`ln`/
//!   `rsync`/`dd`/`tee`/`truncate` onto it), of one of its databases
//!   (`chat.db`, `memory.db`, `cr-history.db`, `metrics.db`, with their
//!   `-wal`, `-shm` and `-journal` files) or of the event log
//!   (`events/`).
//!
//! Changing a database in place with SQL is the claim guard's business
//! (`sqlite3 state/chat.db …` while another chat holds a claim), not this.

use std::path::{Path, PathBuf};

use super::bash::{Change, Kept};
use super::reach::{is_kept, pattern_base, reach, Reach};
use super::target::Guarded;
use crate::state_dir::layout::{CHAT_DB, EVENTS_DIR, FINDINGS_DB, MEMORY_DB, METRICS_DB};

/// The databases nothing rebuilds.
const DATABASES: [&str; 4] = [CHAT_DB, MEMORY_DB, FINDINGS_DB, METRICS_DB];

/// What SQLite keeps beside a database.
const COMPANIONS: [&str; 4] = ["", "-wal", "-shm", "-journal"];

/// Why a command harms the state directory, and how to do what it meant
/// without that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Harm {
    pub what: String,
    pub instead: String,
}

/// The harm `change` of `written` (resolved; a pattern when `pattern`),
/// made by `by`, does to the state directory of `guarded`.
pub fn harm(
    written: &Path,
    pattern: bool,
    change: Change,
    kept: &[Kept],
    by: &str,
    guarded: &Guarded,
) -> Option<Harm> {
    let root = &guarded.state_root;
    let base = if pattern {
        pattern_base(written)
    } else {
        written.to_path_buf()
    };
    let events = root.join(EVENTS_DIR);
    let files: Vec<PathBuf> = DATABASES
        .iter()
        .flat_map(|db| {
            COMPANIONS
                .iter()
                .map(move |c| root.join(format!("{db}{c}")))
        })
        .collect();
    let spared = |t: &Path| is_kept(kept, &base, t);
    let reached = |t: &Path| reach(written, pattern, t);
    let shown = written.display();
    match change {
        Change::Remove | Change::Clean { ignored: true } => {
            let whole = matches!(reached(root), Reach::Exact | Reach::Above);
            let lost: Vec<&PathBuf> = files
                .iter()
                .chain(std::iter::once(&events))
                .filter(|t| matches!(reached(t), Reach::Exact | Reach::Above) && !spared(t))
                .collect();
            let events_part = inside(written, pattern, &events) && !spared(&events);
            if lost.is_empty() && !events_part {
                return None;
            }
            let what = if whole && !spared(root) && written == root.as_path() {
                format!("{by} removes {}, jkz's state directory", root.display())
            } else if whole && !spared(root) {
                format!(
                    "{by} removes {}, jkz's state directory, with {shown}",
                    root.display()
                )
            } else if lost.is_empty() {
                format!(
                    "{by} removes part of jkz's event log in {}",
                    events.display()
                )
            } else {
                let names: Vec<String> = lost.iter().map(|p| p.display().to_string()).collect();
                format!("{by} removes {} in jkz's state directory", names.join(", "))
            };
            Some(Harm {
                what,
                instead: instead(by, &base, root),
            })
        }
        Change::Write => {
            let hit = files
                .iter()
                .find(|t| reached(t) == Reach::Exact)
                .cloned()
                .or_else(|| {
                    (reached(&events) == Reach::Exact || inside(written, pattern, &events))
                        .then(|| events.clone())
                })?;
            Some(Harm {
                what: format!("{by} overwrites {}, which only jkz writes", hit.display()),
                instead: "leave jkz's databases and event log to jkz (`jkz claim`, `jkz release`, \
                          `jkz patterns`, `jkz findings`, `jkz events rebuild`); read them with \
                          `sqlite3 -readonly`"
                    .into(),
            })
        }
        Change::Edit | Change::Clean { ignored: false } => None,
    }
}

/// True when `written` may be a file of the event log in `events`: a path
/// below it, or a pattern matching a segment or the index there.
fn inside(written: &Path, pattern: bool, events: &Path) -> bool {
    if !pattern {
        return reach(written, false, events) == Reach::Below;
    }
    ["20270101-0001.jsonl", "20270101-0001.jsonl.gz", "index.db"]
        .iter()
        .any(|name| reach(written, true, &events.join(name)) == Reach::Exact)
}

/// The spelling of what `by` meant that keeps the state directory `root`
/// (named relative to `base`, where the command works, when it lies there).
fn instead(by: &str, base: &Path, root: &Path) -> String {
    // Named as from where the command works, or, when it works on the
    // state directory itself, as from its parent.
    let rel = root
        .strip_prefix(base)
        .ok()
        .filter(|r| !r.as_os_str().is_empty())
        .or_else(|| {
            root.file_name()
                .map(Path::new)
                .filter(|_| root.starts_with(base) || base.starts_with(root))
        })
        .map_or_else(|| root.display().to_string(), |r| r.display().to_string());
    match by {
        "git clean -X" => {
            format!("exclude it, and the rest goes as asked: `git clean -fdX -e '!{rel}/'`")
        }
        "git clean -x" => {
            format!("exclude it, and the rest goes as asked: `git clean -fdx -e {rel}/`")
        }
        "git stash --all" => {
            "`git stash --include-untracked` stashes the untracked files and leaves \
                              the ignored ones, the state directory among them, in place"
                .into()
        }
        "find -delete" => format!("prune it: `find . -path ./{rel} -prune -o … -delete`"),
        "rsync --delete" => format!("exclude it: `rsync --delete --exclude=/{rel}/ …`"),
        _ => "remove only what you mean, by name (`rm -rf build target`); `jkz gc` prunes \
              what jkz keeps in state/"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guarded() -> Guarded {
        Guarded {
            state_root: PathBuf::from("/p/state"),
            pipeline_dir: PathBuf::from("/p/state/pipeline"),
        }
    }

    fn of(path: &str, change: Change, kept: &[Kept], by: &str) -> Option<Harm> {
        let pattern = path.contains(['*', '?', '[']);
        harm(Path::new(path), pattern, change, kept, by, &guarded())
    }

    #[test]
    fn removals_of_the_root_or_above_and_overwrites_of_its_databases() {
        let clean = Change::Clean { ignored: true };
        for (path, change) in [
            ("/p/state", Change::Remove),
            ("/p", Change::Remove),
            ("/", Change::Remove),
            ("/p/*", Change::Remove),
            ("/p/state/*", Change::Remove),
            ("/p/state/chat.db", Change::Remove),
            ("/p/state/memory.db-wal", Change::Remove),
            ("/p/state/events", Change::Remove),
            ("/p/state/events/20270101-0001.jsonl.gz", Change::Remove),
            ("/p/**/*.db", Change::Remove),
            ("/p", clean),
            ("/p/state/cr-history.db", Change::Write),
            ("/p/state/events/20270101-0001.jsonl", Change::Write),
        ] {
            assert!(of(path, change, &[], "rm").is_some(), "{path} {change:?}");
        }
        for (path, change) in [
            ("/p/state/pipeline", Change::Remove),
            ("/p/state/pipeline/42.json", Change::Write),
            ("/p/*.o", Change::Remove),
            ("/p/**/*.o", Change::Remove),
            ("/p/state", Change::Write),
            ("/p/state/chat.db", Change::Edit),
            ("/p", Change::Clean { ignored: false }),
            ("/q", Change::Remove),
        ] {
            assert_eq!(of(path, change, &[], "rm"), None, "{path} {change:?}");
        }
        let keep = |p: &str, anchored| Kept {
            pattern: p.into(),
            anchored,
            subtree: true,
        };
        assert_eq!(
            of("/p", clean, &[keep("state", false)], "git clean -x"),
            None
        );
        assert_eq!(
            of(
                "/p/**",
                Change::Remove,
                &[keep("state", true)],
                "find -delete"
            ),
            None
        );
        let harm = of("/p", clean, &[], "git clean -X").unwrap();
        assert!(harm.what.contains("/p/state"), "{harm:?}");
        assert!(harm.instead.contains("-e '!state/'"), "{harm:?}");
    }
}
