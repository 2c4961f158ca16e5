//! The client's own copy of a large tool output: where it may be, and the
//! one way the guard opens it.
//!
//! The hook input names the file (`persistedOutputPath`), and what the guard
//! reads from it goes into the model's window and is saved under
//! `state/context-offload/`. So the name is not trusted: a path like
//! `/proc/self/environ` (the hook's environment, secrets included), any file
//! of the user's, or a link to one, is never read. Claude Code keeps a
//! session's persisted outputs beside its transcript:
//!
//! ```text
//! <config>/projects/<project>/<session id>.jsonl           transcript_path
//! <config>/projects/<project>/<session id>/tool-results/   persisted outputs
//! ```
//!
//! (measured on 2.1.197; `<config>` is `~/.claude` or `CLAUDE_CONFIG_DIR`).
//! The guard derives the directory the same way from the event's
//! `transcript_path` and `session_id`, and reads only a regular file below
//! it, through no symbolic link ([`crate::state_dir::open_file_below`]).
//! Anything else leaves the tool's output as it stands.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::hook_input::HookInput;

/// The client's tool-results directory for this session and project, from
/// the event; `Err` (why, one line) when the event does not say where it
/// is. The transcript must be `<…>/projects/<project>/<file>.jsonl`, as
/// the client writes it.
pub fn tool_results_dir(input: &HookInput) -> Result<PathBuf, String> {
    let unknown = |why: &str| format!("the client's tool-results directory is unknown: {why}");
    let session = match input.session_id() {
        Some(Ok(id)) => id,
        Some(Err(e)) => return Err(unknown(&e.to_string())),
        None => return Err(unknown("the event has no session_id")),
    };
    let transcript = input
        .text("transcript_path")
        .filter(|t| !t.is_empty())
        .map(Path::new)
        .ok_or_else(|| unknown("the event has no transcript_path"))?;
    let project = transcript
        .parent()
        .filter(|_| transcript.is_absolute())
        .filter(|_| transcript.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| {
            p.parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "projects")
        })
        .ok_or_else(|| {
            unknown(&format!(
                "transcript_path {} is not <…>/projects/<project>/<session>.jsonl",
                transcript.display()
            ))
        })?;
    Ok(project.join(session.as_str()).join("tool-results"))
}

/// Opens the output the client persisted at `path` for `event`: from the
/// event's tool-results directory only.
pub fn open_for(event: &crate::client::HookEvent, path: &Path) -> Result<File, String> {
    let dir = tool_results_dir(&event.raw)
        .map_err(|why| format!("persisted output {} not read: {why}", path.display()))?;
    open(path, &dir)
}

/// Opens the persisted output `path`, which must be a regular file below
/// `dir` (the client's tool-results directory), reached through no link.
pub fn open(path: &Path, dir: &Path) -> Result<File, String> {
    crate::state_dir::open_file_below(dir, path).map_err(|e| {
        format!(
            "persisted output {} not read ({e}); only files in the client's tool-results directory {} are",
            path.display(),
            dir.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(v: serde_json::Value) -> HookInput {
        HookInput::parse(v.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn the_directory_is_beside_the_transcript() {
        let i = input(json!({"session_id": "720a3a64-2250",
            "transcript_path": "/h/.claude/projects/-tmp-proj/720a3a64-2250.jsonl"}));
        assert_eq!(
            tool_results_dir(&i).unwrap(),
            Path::new("/h/.claude/projects/-tmp-proj/720a3a64-2250/tool-results")
        );
        for bad in [
            json!({"session_id": "s"}),
            json!({"transcript_path": "/h/.claude/projects/p/s.jsonl"}),
            json!({"session_id": "../s", "transcript_path": "/h/.claude/projects/p/s.jsonl"}),
            json!({"session_id": "s", "transcript_path": "relative/projects/p/s.jsonl"}),
            json!({"session_id": "s", "transcript_path": "/proc/self/s.jsonl"}),
            json!({"session_id": "s", "transcript_path": "/h/.claude/projects/p/s.txt"}),
            json!({"session_id": "s", "transcript_path": "/dev/null"}),
        ] {
            assert!(tool_results_dir(&input(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_regular_files_below_the_directory_through_no_link() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s/tool-results");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.txt"), "ok").unwrap();
        std::fs::write(dir.join("sub/b.txt"), "ok").unwrap();
        std::fs::write(tmp.path().join("secret"), "no").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("secret"), dir.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(tmp.path(), dir.join("up")).unwrap();
        std::os::unix::fs::symlink(dir.join("a.txt"), dir.join("inside.txt")).unwrap();
        assert!(open(&dir.join("a.txt"), &dir).is_ok());
        assert!(open(&dir.join("sub/b.txt"), &dir).is_ok());
        for bad in [
            dir.join("link.txt"),
            dir.join("inside.txt"),
            dir.join("up/secret"),
            dir.join("../../secret"),
            dir.join("sub"),
            dir.join("missing.txt"),
            dir.clone(),
            tmp.path().join("secret"),
            PathBuf::from("/proc/self/environ"),
        ] {
            let e = open(&bad, &dir).unwrap_err();
            assert!(e.starts_with("persisted output "), "{e}");
        }
    }
}
