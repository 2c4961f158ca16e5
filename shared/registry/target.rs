//! What a tool call would change, as far as the registry cares: a file (an
//! edit tool's path), the pipeline state of an issue, pipeline files by a
//! pattern, or the registry itself (what a Bash command writes, read by
//! [`super::bash`]). Anything else is no target at all, and the PreToolUse
//! hook lets it pass without opening the registry.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::bash::{self, Write};
use crate::client::codex::{self, patch};
pub use crate::glob::glob_match;
pub use crate::resolved_path::resolve;
use crate::state_dir::layout::{CHAT_DB, PIPELINE_DIR};

/// The tools whose input names the one file they change.
pub const EDIT_TOOLS: [&str; 4] = ["Edit", "Write", "MultiEdit", "NotebookEdit"];

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

/// The targets of `tool` called with `input`, relative paths taken from
/// `cwd`. Empty for every tool but the edit tools, Codex's `apply_patch`
/// (its patch body's files) and Bash; `guarded` is only asked for when a
/// Bash command writes something.
pub fn targets(
    tool: &str,
    input: &Value,
    cwd: &Path,
    guarded: impl FnOnce() -> Guarded,
) -> Vec<Target> {
    if EDIT_TOOLS.contains(&tool) {
        let path = input
            .get("file_path")
            .or_else(|| input.get("notebook_path"))
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty());
        return path
            .map(|p| vec![Target::File(resolve(&cwd.join(p)))])
            .unwrap_or_default();
    }
    let command = input.get("command").and_then(Value::as_str);
    if tool == codex::APPLY_PATCH {
        return command.map(|c| patch_targets(c, cwd)).unwrap_or_default();
    }
    if tool == "Bash" {
        if let Some(command) = command {
            // Codex runs `apply_patch <<'EOF' … EOF` from a shell as its
            // edit tool.
            let patched = patch_targets(command, cwd);
            let writes = bash::writes(command, cwd);
            if writes.is_empty() {
                return patched;
            }
            let guarded = guarded();
            let mut out: Vec<Target> = writes.iter().flat_map(|w| classify(w, &guarded)).collect();
            out.extend(patched);
            out.dedup();
            return out;
        }
    }
    Vec::new()
}

/// The files a Codex patch body in `text` adds, updates, moves or deletes.
fn patch_targets(text: &str, cwd: &Path) -> Vec<Target> {
    if !patch::looks_like_patch(text) {
        return Vec::new();
    }
    let mut out: Vec<Target> = patch::patched_files(text)
        .iter()
        .map(|f| Target::File(resolve(&cwd.join(f.path))))
        .collect();
    out.dedup();
    out
}

/// What a Bash command's write touches of the guarded places. Paths are
/// resolved (links followed, dangling ones too) and also read as written,
/// so `…/pipeline/N.json` of a state directory this hook does not know,
/// or behind a variable it could not expand, still names issue N.
pub fn classify(write: &Write, guarded: &Guarded) -> Vec<Target> {
    let path = match write {
        Write::StateSet(issue) => return vec![Target::Pipeline(issue.clone())],
        Write::Path(path) => path,
    };
    let mut out = Vec::new();
    let glob = path
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| n.contains(['*', '?', '[']));
    let real = if glob.is_some() {
        // The pattern is matched, not resolved: resolve its directory.
        path.parent()
            .map(|dir| resolve(dir).join(path.file_name().unwrap_or_default()))
            .unwrap_or_else(|| path.clone())
    } else {
        resolve(path)
    };
    for p in [&real, path] {
        if let Some(issue) =
            pipeline_issue(p, &guarded.pipeline_dir).or_else(|| named_pipeline_file(p))
        {
            out.push(Target::Pipeline(issue));
        }
    }
    if guarded.is_registry(&real) {
        out.push(Target::Registry);
    }
    if let (Some(pattern), Some(dir)) = (glob, real.parent()) {
        let in_pipeline =
            dir == guarded.pipeline_dir || dir.file_name().is_some_and(|n| n == PIPELINE_DIR);
        if in_pipeline {
            out.push(Target::Pipelines(pattern.to_string()));
        }
        // `rm -rf state/*`, `rm -rf *` in the project: the pattern reaches
        // the pipeline directory or the registry when it matches the next
        // step on the way there.
        let chat_db = guarded.state_root.join(CHAT_DB);
        for (guarded_path, target) in [
            (&guarded.pipeline_dir, Target::Pipelines("*".into())),
            (&chat_db, Target::Registry),
        ] {
            let next = guarded_path
                .strip_prefix(dir)
                .ok()
                .and_then(|rest| rest.components().next())
                .and_then(|c| c.as_os_str().to_str());
            if next.is_some_and(|next| glob_match(pattern, next)) {
                out.push(target);
            }
        }
    } else {
        // The pipeline directory, the state directory or a directory above
        // them, removed, moved or overwritten.
        let whole_pipeline = guarded.pipeline_dir.starts_with(&real)
            || real.file_name().is_some_and(|n| n == PIPELINE_DIR);
        if whole_pipeline {
            out.push(Target::Pipelines("*".into()));
        }
        if guarded.state_root.join(CHAT_DB).starts_with(&real) {
            out.push(Target::Registry);
        }
    }
    out.sort_by_key(|t| format!("{t:?}"));
    out.dedup();
    out
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
    use serde_json::json;

    /// The issues whose pipeline state a Bash command run in `/nowhere/p`
    /// writes, its state directory being `/nowhere/p/state`.
    fn pipeline_writes(cmd: &str) -> Vec<String> {
        let cwd = Path::new("/nowhere/p");
        let mut issues: Vec<String> = targets("Bash", &json!({ "command": cmd }), cwd, || {
            Guarded::of(Path::new("state"), cwd)
        })
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
        let of = |cmd: &str| {
            targets("Bash", &json!({ "command": cmd }), cwd, || {
                Guarded::of(Path::new("state"), cwd)
            })
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
    }

    fn no_guard() -> Guarded {
        panic!("asked where the state directory is for a call that writes nothing guarded")
    }

    #[test]
    fn edit_tools_name_their_file_others_nothing() {
        let cwd = Path::new("/nowhere/p");
        assert_eq!(
            targets("Edit", &json!({"file_path": "src/a.rs"}), cwd, no_guard),
            vec![Target::File(PathBuf::from("/nowhere/p/src/a.rs"))]
        );
        assert_eq!(
            targets(
                "NotebookEdit",
                &json!({"notebook_path": "/nowhere/n.ipynb"}),
                cwd,
                no_guard
            ),
            vec![Target::File(PathBuf::from("/nowhere/n.ipynb"))]
        );
        assert!(targets("Read", &json!({"file_path": "/x"}), cwd, no_guard).is_empty());
        assert!(targets("Bash", &json!({"command": "ls"}), cwd, no_guard).is_empty());
    }

    #[test]
    fn codex_patches_name_their_files() {
        let cwd = Path::new("/nowhere/p");
        let body = "*** Begin Patch\n*** Update File: src/a.rs\n*** Move to: /elsewhere/b.rs\n\
                    @@\n-x\n+y\n*** Delete File: state/pipeline/42.json\n*** End Patch\n";
        let files = vec![
            Target::File(PathBuf::from("/nowhere/p/src/a.rs")),
            Target::File(PathBuf::from("/elsewhere/b.rs")),
            Target::File(PathBuf::from("/nowhere/p/state/pipeline/42.json")),
        ];
        assert_eq!(
            targets("apply_patch", &json!({ "command": body }), cwd, no_guard),
            files
        );
        let heredoc = format!("apply_patch <<'EOF'\n{body}EOF\n");
        assert_eq!(
            targets("Bash", &json!({ "command": heredoc }), cwd, no_guard),
            files
        );
        assert!(targets("apply_patch", &json!({ "command": 7 }), cwd, no_guard).is_empty());
        assert!(targets("apply_patch", &json!({}), cwd, no_guard).is_empty());
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
