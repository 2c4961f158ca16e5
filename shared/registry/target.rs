//! What a tool call would change, as far as the registry cares: a file (an
//! edit tool's path), or the pipeline state of an issue (a Bash command
//! that writes it). Anything else is no target at all, and the PreToolUse
//! hook lets it pass without opening the registry.

use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use regex::bytes::{Regex, RegexBuilder};
use serde_json::Value;

/// The tools whose input names the one file they change.
pub const EDIT_TOOLS: [&str; 4] = ["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// What a tool call changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A file, absolute and resolved (see [`resolve`]).
    File(PathBuf),
    /// Issue N's pipeline state, written by a Bash command.
    Pipeline(String),
}

/// The targets of `tool` called with `input`, relative paths taken from
/// `cwd`. Empty for every tool but the edit tools and Bash.
pub fn targets(tool: &str, input: &Value, cwd: &Path) -> Vec<Target> {
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
            return pipeline_writes(command)
                .into_iter()
                .map(Target::Pipeline)
                .collect();
        }
    }
    Vec::new()
}

/// An ASCII-only pattern: compiled in microseconds where Unicode classes
/// (`\s`, `\b`) would cost the hook milliseconds at every Bash call.
fn ascii(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .unicode(false)
        .build()
        .expect("a valid pattern")
}

/// `jkz [--state-dir DIR] state set N …`.
static STATE_SET: LazyLock<Regex> = LazyLock::new(|| {
    ascii(
        r"(?:^|[\s;&|(`])(?:\S*/)?jkz(?:\s+--state-dir(?:=|\s+)\S+)?\s+state\s+set\s+0*([0-9]{1,20})\b",
    )
});

/// A redirection or `tee` into a pipeline file of issue N.
static REDIRECT: LazyLock<Regex> =
    LazyLock::new(|| ascii(r"(?:>>?|\btee(?:\s+-a)?)\s*\S*\bpipeline/0*([0-9]{1,20})(?:\.json|-)"));

/// A file-changing command naming a pipeline file of issue N in the same
/// simple command.
static CHANGE: LazyLock<Regex> = LazyLock::new(|| {
    ascii(
        r"(?:^|[\s;&|(`])(?:mv|cp|rm|truncate|install|ln|dd|sed\s+-i\S*|perl\s+-p?i\S*)\s[^;&|\n]*?\bpipeline/0*([0-9]{1,20})(?:\.json|-)",
    )
});

/// The issues whose pipeline state `command` writes: `jkz state set N`, a
/// redirection or `tee` into `…/pipeline/N.json` (or a companion
/// `N-….`), or `mv`/`cp`/`rm`/`sed -i`/… naming one. Reading one (`cat`,
/// `jq` without a redirection into it) is not a write.
pub fn pipeline_writes(command: &str) -> Vec<String> {
    // Most commands mention neither: skip the patterns entirely.
    if !command.contains("state") && !command.contains("pipeline/") {
        return Vec::new();
    }
    let mut issues: Vec<String> = [&*STATE_SET, &*REDIRECT, &*CHANGE]
        .iter()
        .flat_map(|re| {
            re.captures_iter(command.as_bytes())
                .map(|c| String::from_utf8_lossy(&c[1]).into_owned())
        })
        .collect();
    issues.sort();
    issues.dedup();
    issues
}

/// `path` (absolute) with `.` and `..` removed and its longest existing
/// ancestor resolved through links, so the same file has one spelling
/// whether it exists yet or not.
pub fn resolve(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    let mut rest = Vec::new();
    let mut head = clean.as_path();
    loop {
        if let Ok(real) = head.canonicalize() {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (head.file_name(), head.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                head = parent;
            }
            _ => return clean,
        }
    }
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
    fn edit_tools_name_their_file_others_nothing() {
        let cwd = Path::new("/nowhere/p");
        assert_eq!(
            targets("Edit", &json!({"file_path": "src/a.rs"}), cwd),
            vec![Target::File(PathBuf::from("/nowhere/p/src/a.rs"))]
        );
        assert_eq!(
            targets(
                "NotebookEdit",
                &json!({"notebook_path": "/nowhere/n.ipynb"}),
                cwd
            ),
            vec![Target::File(PathBuf::from("/nowhere/n.ipynb"))]
        );
        assert!(targets("Read", &json!({"file_path": "/x"}), cwd).is_empty());
        assert!(targets("Bash", &json!({"command": "ls"}), cwd).is_empty());
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
