//! A state directory that git tracks is not jkz's.
//!
//! jkz re-injects what its own writers recorded under headings the model is
//! told to trust. A repository that committed `state/` (a clone of one, a
//! branch checked out for review) would have its committed
//! `state/pipeline/1.json` read as the pipeline's approved plan, and jkz's
//! snapshots written back among files git would commit. So when the index
//! of the checkout holding the state root tracks anything at or below it,
//! no hook reads or writes it (one line on stderr, [`TrackedState::line`]),
//! `jkz doctor` fails, and the `jkz` commands that use it stop (exit 1)
//! until the user untracks it: `git rm -r --cached state && echo state/ >>
//! .gitignore` in the checkout. Whatever git merely ignores or does not
//! know stays jkz's.
//!
//! How: the index is read once, streamed and bounded ([`crate::git::index`]),
//! for paths below the root's path relative to its checkout; no `git`
//! process. A root that is itself a checkout's top (a submodule at
//! `state/`) counts as tracked when that checkout's index lists anything.
//! An index that cannot be read says so in the same line, and the root is
//! treated as tracked: what cannot be told to be jkz's is not used.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::git::index::{self, ObjectFormat, Tracked};
use crate::git::repository::{self, Location};

/// How many tracked paths the line names before it counts the rest.
pub const NAMED: usize = 3;

/// Why a state root is not jkz's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackedState {
    line: String,
}

impl TrackedState {
    /// The one line every refusal says: which root, which files (the first
    /// few and how many), and the fix.
    pub fn line(&self) -> &str {
        &self.line
    }
}

/// Checks the state root `root`: `None` when git tracks nothing at or below
/// it (or it does not exist: there is nothing to read, and creating it is
/// [`super::StateDir::ensure`]'s business).
pub fn check(root: &Path) -> Option<TrackedState> {
    let Ok(absolute) = std::path::absolute(root) else {
        return None;
    };
    if fs::symlink_metadata(&absolute).is_err() {
        return None;
    }
    // The root as git sees it: its parent resolved, its own name kept (a
    // root that is a link is tracked, or not, as the link).
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return None;
    };
    let Ok(parent) = fs::canonicalize(parent) else {
        return None;
    };
    let seen = parent.join(name);
    let found = match own_checkout(&seen) {
        Some(top) => in_checkout(&top, b"".to_vec()),
        None => match holding_checkout(&parent) {
            Ok(None) => Ok(None),
            Ok(Some((top, git_dir, common))) => {
                let rel = rel_in_checkout(&top, &parent, name);
                tracked_in(&git_dir, &common, &rel).map(|t| Some((top, rel, t)))
            }
            Err(e) => Err(e),
        },
    };
    match found {
        Ok(Some((_, _, tracked))) if tracked.count == 0 => None,
        Ok(None) => None,
        Ok(Some((top, rel, tracked))) => Some(TrackedState {
            line: tracked_line(&seen, &top, &rel, &tracked),
        }),
        Err(why) => Some(TrackedState {
            line: format!(
                "state directory {}: cannot tell whether git tracks it ({why}): jkz neither reads nor writes it; \
                 fix the repository (`git status` says what is wrong), or name another state directory with --state-dir or JKZ_STATE_DIR",
                seen.display()
            ),
        }),
    }
}

/// The root's own checkout, when the root is a checkout's top (it holds a
/// `.git`): a submodule or a repository of its own at `state/`.
fn own_checkout(seen: &Path) -> Option<PathBuf> {
    fs::symlink_metadata(seen.join(".git")).ok()?;
    fs::canonicalize(seen).ok()
}

/// What a whole checkout at `top` tracks.
type Found = Option<(PathBuf, Vec<u8>, Tracked)>;

fn in_checkout(top: &Path, rel: Vec<u8>) -> Result<Found, String> {
    match holding_checkout(top)? {
        Some((top, git_dir, common)) => {
            tracked_in(&git_dir, &common, &rel).map(|t| Some((top, rel, t)))
        }
        None => Ok(None),
    }
}

/// The checkout holding `dir` (resolved): its top, its git directory and
/// the repository's common one; none outside any checkout (no repository,
/// or inside a git directory, where nothing is tracked).
fn holding_checkout(dir: &Path) -> Result<Option<(PathBuf, PathBuf, PathBuf)>, String> {
    match repository::locate(dir)? {
        Location::Inside {
            checkout: Some(c),
            common,
        } => Ok(Some((c.top, c.git_dir, common))),
        _ => Ok(None),
    }
}

fn tracked_in(git_dir: &Path, common: &Path, rel: &[u8]) -> Result<Tracked, String> {
    let config = crate::git::config::read(common)?;
    let format = ObjectFormat::from_config(config.object_format.as_deref())?;
    index::tracked_below(git_dir, format, rel, NAMED)
}

fn tracked_line(seen: &Path, top: &Path, rel: &[u8], tracked: &Tracked) -> String {
    let mut names: Vec<String> = tracked
        .first
        .iter()
        .map(|p| String::from_utf8_lossy(p).escape_debug().to_string())
        .collect();
    if tracked.count > names.len() {
        names.push(format!("{} more", tracked.count - names.len()));
    }
    let files = if tracked.count == 1 { "file" } else { "files" };
    let fix = if rel.is_empty() {
        "use a directory git does not track: remove that repository or submodule, or name another state directory with --state-dir or JKZ_STATE_DIR".to_string()
    } else {
        let rel = String::from_utf8_lossy(rel);
        format!(
            "untrack it in {}: git rm -r --cached {rel} && echo {rel}/ >> .gitignore",
            top.display()
        )
    };
    format!(
        "state directory {} is tracked by git ({} {files}: {}): jkz neither reads nor writes it; {fix}",
        seen.display(),
        tracked.count,
        names.join(", "),
    )
}

/// `name` in `parent`, as git's index names it: relative to the checkout's
/// top `top` (a `parent` outside it counts as the top itself).
fn rel_in_checkout(top: &Path, parent: &Path, name: &std::ffi::OsStr) -> Vec<u8> {
    let mut rel = parent
        .strip_prefix(top)
        .unwrap_or(Path::new(""))
        .as_os_str()
        .as_bytes()
        .to_vec();
    if !rel.is_empty() {
        rel.push(b'/');
    }
    rel.extend_from_slice(name.as_bytes());
    rel
}

/// Whether the index of the checkout holding `path` tracks it (a file, or
/// anything below a directory): `None` outside every checkout, or when the
/// index cannot be read. `jkz install` asks it of the settings it wrote,
/// which a linked worktree or a clone gets only once committed.
pub fn is_tracked(path: &Path) -> Option<bool> {
    let absolute = std::path::absolute(path).ok()?;
    let parent = fs::canonicalize(absolute.parent()?).ok()?;
    let name = absolute.file_name()?;
    let (top, git_dir, common) = holding_checkout(&parent).ok()??;
    parent.strip_prefix(&top).ok()?;
    let rel = rel_in_checkout(&top, &parent, name);
    tracked_in(&git_dir, &common, &rel)
        .ok()
        .map(|tracked| tracked.count > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> bool {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    #[test]
    fn a_committed_state_directory_is_named_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("clone");
        std::fs::create_dir(&repo).unwrap();
        if !git(&repo, &["init", "-q"]) {
            assert!(std::env::var_os("CI").is_none(), "git is needed on CI");
            eprintln!("no git here: skipped");
            return;
        }
        for i in 1..=5 {
            let f = repo.join(format!("state/pipeline/{i}.json"));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, "{}").unwrap();
        }
        std::fs::write(repo.join("README"), "x").unwrap();
        // Untracked: jkz's.
        assert_eq!(check(&repo.join("state")), None);
        assert!(git(&repo, &["add", "."]));
        let line = check(&repo.join("state")).unwrap().line().to_string();
        assert!(
            line.contains("is tracked by git (5 files: state/pipeline/1.json, state/pipeline/2.json, state/pipeline/3.json, 2 more)")
                && line.ends_with("git rm -r --cached state && echo state/ >> .gitignore"),
            "{line}"
        );
        // The same root named through `..`: the same answer.
        let sub = repo.join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(check(&sub.join("../state")).is_some());
        // Once untracked, it is jkz's again.
        assert!(git(&repo, &["rm", "-r", "-q", "--cached", "state"]));
        assert_eq!(check(&repo.join("state")), None);
        // A root elsewhere, in no repository, or missing: nothing tracked.
        assert_eq!(check(&tmp.path().join("elsewhere")), None);
    }

    #[test]
    fn an_unreadable_index_is_not_taken_for_untracked() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        std::fs::create_dir_all(repo.join(".git/objects")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir(repo.join("state")).unwrap();
        assert_eq!(check(&repo.join("state")), None);
        std::fs::write(repo.join(".git/index"), "DIRC\0\0\0\x02\0\0\0\x05").unwrap();
        let line = check(&repo.join("state")).unwrap().line().to_string();
        assert!(line.contains("cannot tell whether git tracks it"), "{line}");
    }
}
