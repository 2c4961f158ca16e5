//! What a tool call would change, as far as the registry cares: a file (an
//! edit tool's path), the pipeline state of an issue, pipeline files by a
//! pattern, or the registry itself (what a Bash command writes, read by
//! [`super::bash`]). Anything else is no target at all, and the PreToolUse
//! hook lets it pass without opening the registry.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::bash::{self, Write};
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
/// `cwd`. Empty for every tool but the edit tools and Bash; `guarded` is
/// only asked for when a Bash command writes something.
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
    if tool == "Bash" {
        if let Some(command) = input.get("command").and_then(Value::as_str) {
            let writes = bash::writes(command, cwd);
            if writes.is_empty() {
                return Vec::new();
            }
            let guarded = guarded();
            let mut out: Vec<Target> = writes.iter().flat_map(|w| classify(w, &guarded)).collect();
            out.dedup();
            return out;
        }
    }
    Vec::new()
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

/// Whether the shell pattern `pattern` (`*`, `?`, `[…]`, `[!…]`) matches
/// all of `name`. One pass with a single backtrack point per `*` (the
/// classic wildcard walk), so a pattern of many stars costs O(len²), never
/// exponential time.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // The element at `p[i]`: how many chars it spans and whether it takes `c`.
    let element = |i: usize, c: char| -> (usize, bool) {
        match p[i] {
            '?' => (1, true),
            '[' => {
                let body = &p[i + 1..];
                let Some(close) = body.iter().skip(1).position(|&x| x == ']').map(|k| k + 1) else {
                    return (1, c == '[');
                };
                let (negated, set) = match body[..close].split_first() {
                    Some((&('!' | '^'), set)) => (true, set),
                    _ => (false, &body[..close]),
                };
                let mut hit = false;
                let mut k = 0;
                while k < set.len() {
                    if k + 2 < set.len() && set[k + 1] == '-' {
                        hit |= set[k] <= c && c <= set[k + 2];
                        k += 3;
                    } else {
                        hit |= set[k] == c;
                        k += 1;
                    }
                }
                (close + 2, hit != negated)
            }
            other => (1, other == c),
        }
    };
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
            continue;
        }
        if pi < p.len() {
            let (width, ok) = element(pi, n[ni]);
            if ok {
                pi += width;
                ni += 1;
                continue;
            }
        }
        match star {
            // The last star takes one more char.
            Some((sp, sn)) => {
                star = Some((sp, sn + 1));
                pi = sp + 1;
                ni = sn + 1;
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// How many links [`resolve`] follows before it stops (the kernel's own
/// limit): a loop of links ends, it does not hang the hook.
const MAX_LINKS: usize = 40;

/// `path` (absolute) as the file system would reach it: each component
/// followed through links, in order, so `..` after a link leaves the link's
/// target. A link whose target does not exist (yet) is followed too, through
/// chains of links, and its target's directories are resolved; components
/// that do not exist are kept as written. So the same file has one spelling
/// whether it exists yet or not, and a dangling link into another chat's
/// worktree names that worktree.
pub fn resolve(path: &Path) -> PathBuf {
    /// Pushes `p`'s components on the stack `pending` (the first on top);
    /// an absolute `p` restarts `out` at its root.
    fn push_components(pending: &mut Vec<std::ffi::OsString>, p: &Path, out: &mut PathBuf) {
        let mut parts = Vec::new();
        for c in p.components() {
            match c {
                Component::RootDir | Component::Prefix(_) => *out = PathBuf::from(c.as_os_str()),
                other => parts.push(other.as_os_str().to_os_string()),
            }
        }
        pending.extend(parts.into_iter().rev());
    }
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    let mut pending = Vec::new();
    push_components(&mut pending, &path, &mut out);
    let mut links = 0;
    while let Some(part) = pending.pop() {
        if part == "." {
            continue;
        }
        if part == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&part);
        let is_link = std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && links < MAX_LINKS {
            if let Ok(target) = std::fs::read_link(&next) {
                links += 1;
                // A relative target starts from the link's directory (`out`).
                push_components(&mut pending, &target, &mut out);
                continue;
            }
        }
        out = next;
    }
    out
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

    #[test]
    fn globs_match_as_the_shell_does() {
        for (p, n) in [
            ("*", "42.json"),
            ("4*.json", "42.json"),
            ("4?.json", "42.json"),
            ("[0-9]*", "42.json"),
            ("[!a]2", "42"),
            ("chat.db*", "chat.db"),
            ("st*", "state"),
        ] {
            assert!(glob_match(p, n), "{p} {n}");
        }
        for (p, n) in [("*.o", "state"), ("4?.json", "4.json"), ("[!4]2", "42")] {
            assert!(!glob_match(p, n), "{p} {n}");
        }
        // Many stars over a long name that does not match: no blow-up.
        assert!(!glob_match(&"*a".repeat(40), &"a".repeat(39)));
        assert!(glob_match("[a", "[a"));
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
    fn resolve_removes_dots_and_follows_existing_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let got = resolve(&dir.path().join("link/./sub/../new.rs"));
        assert_eq!(got, real.canonicalize().unwrap().join("new.rs"));
    }

    #[test]
    fn resolve_follows_dangling_links_and_chains_and_stops_at_loops() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let wt = root.join("wt/42");
        std::fs::create_dir_all(&wt).unwrap();
        // A link to a file that does not exist yet, through a relative chain.
        std::os::unix::fs::symlink("../wt/42/new.rs", root.join("wt/first")).unwrap();
        std::fs::create_dir(root.join("here")).unwrap();
        std::os::unix::fs::symlink("../wt/first", root.join("here/notes.md")).unwrap();
        assert_eq!(resolve(&root.join("here/notes.md")), wt.join("new.rs"));
        // A dangling link whose target's directory is itself a link.
        std::os::unix::fs::symlink(&wt, root.join("wt-link")).unwrap();
        std::os::unix::fs::symlink(root.join("wt-link/missing/x.rs"), root.join("here/x")).unwrap();
        assert_eq!(resolve(&root.join("here/x")), wt.join("missing/x.rs"));
        // A loop ends.
        std::os::unix::fs::symlink("loop-b", root.join("loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", root.join("loop-b")).unwrap();
        let _ = resolve(&root.join("loop-a/x"));
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
