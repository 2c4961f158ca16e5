//! What a tool call would change, as far as the registry cares: a file (an
//! edit tool's path), the pipeline state of an issue, pipeline files by a
//! pattern, the registry itself, a path a Bash command changes (checked
//! against the claimed worktrees), the state directory itself ([`State`],
//! refused whoever holds what), or a write the hook cannot name. What a
//! Bash command writes is read by [`super::bash`]. A tool call with no
//! target at all passes without the registry being opened.
//!
//! [`State`]: Target::State

use std::path::{Path, PathBuf};

use super::bash::{self, Change, Kept, Write};
use super::reach::{pattern_base, reach, Reach};
use super::state_guard::{self, Harm};
use crate::client::Tool;
pub use crate::glob::glob_match;
pub use crate::resolved_path::resolve;
use crate::state_dir::layout::{CHAT_DB, PIPELINE_DIR};

/// What a tool call changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A file an edit tool changes, absolute and resolved (see [`resolve`]).
    File(PathBuf),
    /// Issue N's pipeline state (canonical N), written by a Bash command.
    Pipeline(String),
    /// The pipeline files whose names match a pattern (`*`: all of them, as
    /// when `state/pipeline/` itself is removed).
    Pipelines(String),
    /// The registry, `state/chat.db` and its companions.
    Registry,
    /// A path a Bash command changes (resolved; a pattern when `pattern`),
    /// and how: a claimed worktree it reaches is another chat's.
    Tree {
        path: PathBuf,
        pattern: bool,
        change: Change,
        kept: Vec<Kept>,
    },
    /// The state directory itself deleted or overwritten: refused whoever
    /// holds what.
    State(Harm),
    /// A write the hook cannot name (`what`), within a directory when that
    /// much is known (resolved).
    Unknown {
        what: String,
        within: Option<PathBuf>,
    },
}

/// Where the guarded files lie: the state directory and its `pipeline/`,
/// both resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guarded {
    pub state_root: PathBuf,
    pub pipeline_dir: PathBuf,
}

impl Guarded {
    /// The guarded places of the state directory `state` (absolute or
    /// relative to `cwd`).
    pub fn of(state: &Path, cwd: &Path) -> Guarded {
        let state_root = resolve(&cwd.join(state));
        Guarded {
            pipeline_dir: state_root.join(PIPELINE_DIR),
            state_root,
        }
    }

    /// True when `file` (resolved) is the registry or one of its companions
    /// (`chat.db-wal`, `-shm`, `.corrupt`).
    pub fn is_registry(&self, file: &Path) -> bool {
        file.parent() == Some(self.state_root.as_path())
            && file
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(CHAT_DB))
    }
}

/// The targets of `tool`, relative paths taken from `cwd`. Empty for
/// every tool but an edit (its file), a patch (its body's files) and a
/// shell command; `guarded` is only asked for when a shell command writes
/// something.
pub fn targets(tool: &Tool, cwd: &Path, guarded: impl FnOnce() -> Guarded) -> Vec<Target> {
    match tool {
        Tool::Edit { file } => file
            .as_deref()
            .map(|p| vec![Target::File(resolve(&cwd.join(p)))])
            .unwrap_or_default(),
        Tool::Patch { body } => patch_targets(body, cwd),
        Tool::Shell { command, .. } => {
            // A patch tool's body can reach a shell as a here-document
            // (`apply_patch <<'EOF' … EOF`).
            let patched = patch_targets(command, cwd);
            let writes = bash::writes(command, cwd);
            if writes.is_empty() {
                return patched;
            }
            let guarded = guarded();
            let mut out: Vec<Target> = Vec::new();
            for t in writes
                .iter()
                .flat_map(|w| classify(w, &guarded))
                .chain(patched)
            {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
            out
        }
        Tool::Read { .. } | Tool::Other => Vec::new(),
    }
}

/// The files a patch body in `text` adds, updates, moves or deletes.
fn patch_targets(text: &str, cwd: &Path) -> Vec<Target> {
    let mut out: Vec<Target> = crate::client::patched_files(text)
        .iter()
        .map(|f| Target::File(resolve(&cwd.join(f))))
        .collect();
    out.dedup();
    out
}

/// `path` resolved: a pattern's literal start followed through links, its
/// wildcard components as written.
fn resolve_written(path: &Path, pattern: bool) -> PathBuf {
    if !pattern {
        return resolve(path);
    }
    let base = pattern_base(path);
    let rest = path.strip_prefix(&base).unwrap_or(Path::new(""));
    resolve(&base).join(rest)
}

/// What a Bash command's write touches of the guarded places. Paths are
/// resolved (links followed, dangling ones too) and also read as written,
/// so `…/pipeline/N.json` of a state directory this hook does not know,
/// or behind a variable it could not expand, still names issue N.
pub fn classify(write: &Write, guarded: &Guarded) -> Vec<Target> {
    let (path, change, pattern, kept, by) = match write {
        Write::StateSet(issue) => return vec![Target::Pipeline(issue.clone())],
        Write::Unknown { what, within } => {
            return vec![Target::Unknown {
                what: what.clone(),
                within: within.as_deref().map(resolve),
            }]
        }
        Write::Path {
            path,
            change,
            glob,
            kept,
            by,
        } => (path, *change, *glob, kept, *by),
    };
    let mut out = Vec::new();
    let real = resolve_written(path, pattern);
    if !pattern {
        for p in [&real, path] {
            if let Some(issue) =
                pipeline_issue(p, &guarded.pipeline_dir).or_else(|| named_pipeline_file(p))
            {
                out.push(Target::Pipeline(issue));
            }
        }
    }
    let base = if pattern {
        pattern_base(&real)
    } else {
        real.clone()
    };
    let kept_out = |t: &Path| super::reach::is_kept(kept, &base, t);
    let destroys = matches!(change, Change::Remove | Change::Clean { ignored: true });
    // The pipeline directory: the whole of it, or files in it by a pattern.
    let pipeline_dir = &guarded.pipeline_dir;
    match reach(&real, pattern, pipeline_dir) {
        _ if kept_out(pipeline_dir) => {}
        Reach::Exact if change != (Change::Clean { ignored: false }) => {
            out.push(Target::Pipelines("*".into()));
        }
        Reach::Above if destroys => out.push(Target::Pipelines("*".into())),
        Reach::Above if change == Change::Write => out.push(Target::Unknown {
            what: format!("the files {by} writes into {}", real.display()),
            within: Some(real.clone()),
        }),
        Reach::Below if pattern => {
            if let Some(name) = name_below(&real, pipeline_dir) {
                out.push(Target::Pipelines(name));
            }
        }
        _ => {}
    }
    // A directory named `pipeline` of a state directory this hook does not
    // know, removed or replaced.
    if !pattern
        && change != Change::Edit
        && real != *pipeline_dir
        && real.file_name().is_some_and(|n| n == PIPELINE_DIR)
    {
        out.push(Target::Pipelines("*".into()));
    }
    // The registry.
    let chat_db = guarded.state_root.join(CHAT_DB);
    let registry = match reach(&real, pattern, &chat_db) {
        _ if kept_out(&chat_db) => false,
        Reach::Exact => true,
        Reach::Above => destroys,
        _ => !pattern && guarded.is_registry(&real),
    };
    if registry {
        out.push(Target::Registry);
    }
    if let Some(harm) = state_guard::harm(&real, pattern, change, kept, by, guarded) {
        out.push(Target::State(harm));
    }
    out.sort_by_key(|t| format!("{t:?}"));
    out.dedup();
    // Last: checked against the claimed worktrees once they are known.
    out.push(Target::Tree {
        path: real,
        pattern,
        change,
        kept: kept.clone(),
    });
    out
}

/// The name pattern a written pattern gives files directly in `dir`
/// (`state/pipeline/4*.json`: `4*.json`; `state/**/*.json`: `*.json`).
fn name_below(written: &Path, dir: &Path) -> Option<String> {
    let last = written.file_name()?.to_str()?;
    let parent = written.parent()?;
    let parent_is_pattern = parent.components().any(|c| {
        c.as_os_str()
            .to_str()
            .is_some_and(|p| p.contains(['*', '?', '[']))
    });
    let parent_reach = reach(parent, parent_is_pattern, dir);
    let deep = parent.file_name().is_some_and(|n| n == "**");
    let reaches = parent_reach == Reach::Exact || (deep && parent_reach == Reach::Above);
    if !reaches {
        return None;
    }
    Some(if last == "**" {
        "*".into()
    } else {
        last.into()
    })
}

/// The issue of a path spelled `…/pipeline/N.json` (or a companion
/// `…/pipeline/N-…`), whatever directory holds `pipeline/`.
fn named_pipeline_file(path: &Path) -> Option<String> {
    let parent = path.parent()?;
    if parent.file_name()? != PIPELINE_DIR {
        return None;
    }
    pipeline_issue(path, parent)
}

/// The issue whose pipeline file (`N.json`) or companion (`N-…`) `file`
/// is, when it lies directly in `pipeline_dir`.
pub fn pipeline_issue(file: &Path, pipeline_dir: &Path) -> Option<String> {
    if file.parent()? != pipeline_dir {
        return None;
    }
    let name = file.file_name()?.to_str()?;
    let digits_end = name.find(|c: char| !c.is_ascii_digit())?;
    let (digits, rest) = name.split_at(digits_end);
    if !(rest == ".json" || rest.starts_with('-')) {
        return None;
    }
    let canonical = digits.trim_start_matches('0');
    (!canonical.is_empty() && canonical.len() <= 20).then(|| canonical.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell command, as every client's module reads its shell tool.
    fn shell(command: &str) -> Tool {
        Tool::Shell {
            command: command.into(),
            dir: None,
            background: false,
        }
    }

    /// An edit of `file`, as every client's module reads its edit tools.
    fn edit(file: &str) -> Tool {
        Tool::Edit {
            file: Some(file.into()),
        }
    }

    fn patch(body: &str) -> Tool {
        Tool::Patch { body: body.into() }
    }

    /// The issues whose pipeline state a Bash command run in `/nowhere/p`
    /// writes, its state directory being `/nowhere/p/state`.
    fn pipeline_writes(cmd: &str) -> Vec<String> {
        let cwd = Path::new("/nowhere/p");
        let mut issues: Vec<String> =
            targets(&shell(cmd), cwd, || Guarded::of(Path::new("state"), cwd))
                .into_iter()
                .filter_map(|t| match t {
                    Target::Pipeline(n) => Some(n),
                    _ => None,
                })
                .collect();
        issues.sort();
        issues.dedup();
        issues
    }

    #[test]
    fn bash_commands_that_write_pipeline_state() {
        for (cmd, want) in [
            ("jkz state set 42 current_phase building", vec!["42"]),
            (
                "cd /x && /usr/bin/jkz --state-dir /s state set 007 a b",
                vec!["7"],
            ),
            ("echo '{}' > state/pipeline/42.json", vec!["42"]),
            (
                "jq . x | tee -a /p/state/pipeline/43-compact-plan.md",
                vec!["43"],
            ),
            ("rm -f state/pipeline/44.json", vec!["44"]),
            ("sed -i s/a/b/ state/pipeline/45.json", vec!["45"]),
            (
                "mv /tmp/x state/pipeline/46.json && jkz state set 47 a b",
                vec!["46", "47"],
            ),
        ] {
            assert_eq!(pipeline_writes(cmd), want, "{cmd}");
        }
        for cmd in [
            "cat state/pipeline/42.json",
            "jq .42 state/pipeline/42.json 2>/dev/null",
            "jkz state get 42 current_phase",
            "cargo test --lib state",
            "ls state/pipeline/",
        ] {
            assert!(pipeline_writes(cmd).is_empty(), "{cmd}");
        }
    }

    #[test]
    fn removing_the_pipeline_directory_or_the_registry_is_a_target() {
        let cwd = Path::new("/nowhere/p");
        let all_of = |cmd: &str| targets(&shell(cmd), cwd, || Guarded::of(Path::new("state"), cwd));
        // The claim targets; the state directory's own and the path (for
        // the worktrees) are asserted below.
        let of = |cmd: &str| -> Vec<Target> {
            all_of(cmd)
                .into_iter()
                .filter(|t| !matches!(t, Target::Tree { .. } | Target::State(_)))
                .collect()
        };
        let all = Target::Pipelines("*".into());
        assert_eq!(of("rm -rf state/pipeline"), std::slice::from_ref(&all));
        assert_eq!(of("rm -rf state"), [all.clone(), Target::Registry]);
        assert_eq!(of("rm -rf state/*"), [all.clone(), Target::Registry]);
        assert_eq!(of("rm -f state/chat.db*"), [Target::Registry]);
        assert_eq!(
            of("rm state/pipeline/4*.json"),
            [Target::Pipelines("4*.json".into())]
        );
        assert!(of("rm -f *.o").is_empty());
        assert!(of("rm -rf target").is_empty());
        assert!(of("echo x > /tmp/out").is_empty());
        // Removing the state directory, or its registry, harms everyone's
        // state; a pipeline file or the pipeline directory does not.
        let harms = |cmd: &str| all_of(cmd).iter().any(|t| matches!(t, Target::State(_)));
        for cmd in [
            "rm -rf state",
            "rm -rf state/*",
            "rm -f state/chat.db*",
            "rm -rf .",
        ] {
            assert!(harms(cmd), "{cmd}");
        }
        for cmd in [
            "rm -rf state/pipeline",
            "rm state/pipeline/4*.json",
            "rm -f *.o",
        ] {
            assert!(!harms(cmd), "{cmd}");
        }
        // Every path written is checked against the claimed worktrees.
        assert_eq!(
            all_of("echo x > /tmp/out"),
            [Target::Tree {
                path: PathBuf::from("/tmp/out"),
                pattern: false,
                change: Change::Write,
                kept: Vec::new(),
            }]
        );
        assert_eq!(
            all_of("rm -f *.o"),
            [Target::Tree {
                path: PathBuf::from("/nowhere/p/*.o"),
                pattern: true,
                change: Change::Remove,
                kept: Vec::new(),
            }]
        );
        // A write into a directory above the pipeline files: cannot tell.
        assert!(
            of("tar xf /tmp/a.tar")
                .iter()
                .any(|t| matches!(t, Target::Unknown { .. })),
            "{:?}",
            of("tar xf /tmp/a.tar")
        );
        assert_eq!(
            of("find state -name '*.json' -delete"),
            [Target::Pipelines("*.json".into())]
        );
    }

    fn no_guard() -> Guarded {
        panic!("asked where the state directory is for a call that writes nothing guarded")
    }

    #[test]
    fn edits_name_their_file_other_tools_nothing() {
        let cwd = Path::new("/nowhere/p");
        assert_eq!(
            targets(&edit("src/a.rs"), cwd, no_guard),
            vec![Target::File(PathBuf::from("/nowhere/p/src/a.rs"))]
        );
        assert_eq!(
            targets(&edit("/nowhere/n.ipynb"), cwd, no_guard),
            vec![Target::File(PathBuf::from("/nowhere/n.ipynb"))]
        );
        assert!(targets(&Tool::Read { range: false }, cwd, no_guard).is_empty());
        assert!(targets(&shell("ls"), cwd, no_guard).is_empty());
        assert!(targets(&Tool::Other, cwd, no_guard).is_empty());
        assert!(targets(&Tool::Edit { file: None }, cwd, no_guard).is_empty());
    }

    #[test]
    fn patches_name_their_files() {
        let cwd = Path::new("/nowhere/p");
        let body = "*** Begin Patch\n*** Update File: src/a.rs\n*** Move to: /elsewhere/b.rs\n\
                    @@\n-x\n+y\n*** Delete File: state/pipeline/42.json\n*** End Patch\n";
        let files = vec![
            Target::File(PathBuf::from("/nowhere/p/src/a.rs")),
            Target::File(PathBuf::from("/elsewhere/b.rs")),
            Target::File(PathBuf::from("/nowhere/p/state/pipeline/42.json")),
        ];
        assert_eq!(targets(&patch(body), cwd, no_guard), files);
        // The same body handed to the patch program by a shell command.
        let heredoc = format!("apply_patch <<'EOF'\n{body}EOF\n");
        assert_eq!(targets(&shell(&heredoc), cwd, no_guard), files);
        assert!(targets(&patch(""), cwd, no_guard).is_empty());
    }

    #[test]
    fn pipeline_files_and_companions_name_their_issue() {
        let dir = Path::new("/s/pipeline");
        assert_eq!(
            pipeline_issue(&dir.join("042.json"), dir).as_deref(),
            Some("42")
        );
        assert_eq!(
            pipeline_issue(&dir.join("42-compact-plan.md"), dir).as_deref(),
            Some("42")
        );
        assert_eq!(pipeline_issue(&dir.join("42.json.bak"), dir), None);
        assert_eq!(pipeline_issue(&dir.join("notes.json"), dir), None);
        assert_eq!(pipeline_issue(Path::new("/t/pipeline/42.json"), dir), None);
    }
}
