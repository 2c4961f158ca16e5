//! Which git repository a directory belongs to, found with plain file reads
//! (no `git` process: a hook asks this on every call): the checkout holding
//! it, that checkout's own git directory, the repository's common one, and
//! the repository's main checkout.
//!
//! The layouts, as git lays them out (`gitrepository-layout(5)`):
//! - a checkout whose `.git` is a directory: its git directory, and the
//!   repository's common one;
//! - a linked worktree (`git worktree add`): `.git` is a file
//!   `gitdir: <common>/worktrees/<name>`, and that directory's `commondir`
//!   names the common one (relative to it, or absolute);
//! - a checkout whose git directory lives apart (`git init
//!   --separate-git-dir`, a submodule, a bare repository's `.bare` beside
//!   its worktrees): `.git` is a file naming a git directory without
//!   `commondir`, itself the common one;
//! - a bare repository, or a start inside a git directory: no checkout.
//!
//! Bad layouts are errors saying which file is wrong and why, never a
//! guess: a `.git` file naming nothing, a `commondir` naming something that
//! is not a repository's git directory (another worktree's, which would
//! chain them, or a file), bytes no path holds (a NUL, a line break).
//! Every read is bounded ([`MAX_POINTER`] bytes, regular files only, never
//! blocking on a FIFO), the walk up from the start is bounded
//! ([`MAX_DEPTH`] levels), and `commondir` is read once and never followed
//! further (git does not chain them either): no layout, however hostile,
//! makes this loop.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::config::RepoConfig;
use crate::user_file::read_user_file_bounded;

/// The most bytes of a `.git` file, a `commondir` or a `HEAD` read: a path
/// (PATH_MAX is 4096) and its prefix.
pub const MAX_POINTER: u64 = 4096 + 64;

/// The most directories looked at on the way up from the start.
pub const MAX_DEPTH: usize = 256;

/// The most linked worktrees [`linked_worktrees`] lists.
pub const MAX_WORKTREES: usize = 1000;

/// A checkout of a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkout {
    /// Its top directory (the one holding `.git`).
    pub top: PathBuf,
    /// Its own git directory (`<common>/worktrees/<name>` for a linked worktree).
    pub git_dir: PathBuf,
    /// True for a linked worktree (its git directory has a `commondir`).
    pub linked: bool,
}

/// Where a directory lies, as far as git goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// In no repository.
    Outside,
    /// In a repository: in one of its checkouts, or (`checkout` none) in a
    /// git directory itself (a bare repository, a checkout's `.git`).
    Inside {
        checkout: Option<Checkout>,
        /// The repository's common git directory, resolved.
        common: PathBuf,
    },
}

/// The repository's main checkout, as its common git directory tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Main {
    /// The main checkout is here.
    At(PathBuf),
    /// A bare repository (`core.bare`): it has none.
    Bare,
    /// The git directory lives apart from its checkouts and names none
    /// (`--separate-git-dir` without `core.worktree`): git itself cannot
    /// tell a linked worktree where the main checkout is.
    Apart,
}

/// Finds the repository holding `start`, an absolute path (resolved: the
/// caller canonicalizes it, so a linked directory is seen where it lies).
pub fn locate(start: &Path) -> Result<Location, String> {
    for dir in start.ancestors().take(MAX_DEPTH) {
        let dot_git = dir.join(".git");
        match fs::metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => {
                let (common, linked) = common_of(&dot_git)?;
                let checkout = Checkout {
                    top: dir.to_path_buf(),
                    git_dir: dot_git,
                    linked,
                };
                return Ok(Location::Inside {
                    checkout: Some(checkout),
                    common,
                });
            }
            Ok(meta) if meta.is_file() => {
                let git_dir = gitdir_of(&dot_git)?;
                let (common, linked) = common_of(&git_dir)?;
                let checkout = Checkout {
                    top: dir.to_path_buf(),
                    git_dir,
                    linked,
                };
                return Ok(Location::Inside {
                    checkout: Some(checkout),
                    common,
                });
            }
            Ok(_) => {
                return Err(format!(
                    "{} is neither a directory nor a file (a FIFO, socket or device): not a checkout's .git",
                    dot_git.display()
                ))
            }
            Err(e) if is_absent(&e) => {}
            Err(e) => return Err(format!("looking at {}: {e}", dot_git.display())),
        }
        if is_git_dir(dir) {
            let (common, _) = common_of(dir)?;
            return Ok(Location::Inside {
                checkout: None,
                common,
            });
        }
    }
    Ok(Location::Outside)
}

/// The main checkout of the repository whose common git directory is
/// `common` and whose config is `config`: `core.bare` says there is none;
/// `core.worktree` names it (relative to `common`); else a common directory
/// named `.git` lies in it; else it is apart ([`Main::Apart`]).
pub fn main_checkout(common: &Path, config: &RepoConfig) -> Main {
    if config.bare == Some(true) {
        return Main::Bare;
    }
    if let Some(worktree) = config.worktree.as_deref().filter(|w| !w.is_empty()) {
        let named = common.join(OsStr::from_bytes(worktree));
        return Main::At(fs::canonicalize(&named).unwrap_or(named));
    }
    match (common.file_name(), common.parent()) {
        (Some(name), Some(parent)) if name == ".git" => Main::At(parent.to_path_buf()),
        _ => Main::Apart,
    }
}

/// The top directories of the repository's linked worktrees, as
/// `<common>/worktrees/*/gitdir` records them (at most [`MAX_WORKTREES`];
/// entries that cannot be read are left out).
pub fn linked_worktrees(common: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(common.join("worktrees")) else {
        return Vec::new();
    };
    let mut tops: Vec<PathBuf> = entries
        .flatten()
        .take(MAX_WORKTREES)
        .filter_map(|e| {
            let bytes = read_user_file_bounded(&e.path().join("gitdir"), MAX_POINTER).ok()?;
            let path = one_path(&bytes).ok()?;
            let dot_git = e.path().join(path);
            dot_git.parent().map(Path::to_path_buf)
        })
        .collect();
    tops.sort();
    tops.dedup();
    tops
}

/// The branch checked out in the checkout whose git directory is `git_dir`
/// (`HEAD` naming `refs/heads/<branch>`); none when detached or unreadable.
pub fn head_branch(git_dir: &Path) -> Option<String> {
    let bytes = read_user_file_bounded(&git_dir.join("HEAD"), MAX_POINTER).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let target = text.trim_end().strip_prefix("ref:")?.trim();
    target.strip_prefix("refs/heads/").map(str::to_string)
}

fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// True when `dir` is itself a git directory: a `HEAD` file, and objects
/// (or a `commondir` naming where they are).
fn is_git_dir(dir: &Path) -> bool {
    fs::metadata(dir.join("HEAD")).is_ok_and(|m| m.is_file())
        && (fs::metadata(dir.join("objects")).is_ok_and(|m| m.is_dir())
            || dir.join("commondir").exists())
}

/// The git directory a `.git` file names (`gitdir: <path>`, relative to
/// the file's directory or absolute); an error when it names no git
/// directory.
fn gitdir_of(dot_git: &Path) -> Result<PathBuf, String> {
    let shown = dot_git.display();
    let bytes = read_user_file_bounded(dot_git, MAX_POINTER)
        .map_err(|e| format!("reading {shown}: {e}"))?;
    let Some(rest) = bytes.strip_prefix(b"gitdir: ") else {
        return Err(format!(
            "{shown} does not start with \"gitdir: \": not a git link"
        ));
    };
    let named = one_path(rest).map_err(|why| format!("{shown}: {why}"))?;
    let base = dot_git.parent().unwrap_or(Path::new("/"));
    let git_dir = base.join(named);
    match fs::metadata(&git_dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "{shown} points to {}, which is not a directory",
                git_dir.display()
            ))
        }
        Err(e) => {
            return Err(format!(
                "{shown} points to {}, which cannot be used: {e}",
                git_dir.display()
            ))
        }
    }
    if !fs::metadata(git_dir.join("HEAD")).is_ok_and(|m| m.is_file()) {
        return Err(format!(
            "{shown} points to {}, which is not a git directory (no HEAD file)",
            git_dir.display()
        ));
    }
    Ok(git_dir)
}

/// The common git directory of `git_dir` (its `commondir`, read once, or
/// itself), resolved, and whether it had a `commondir`. The common
/// directory must be a repository's own: objects and refs, and no
/// `commondir` of its own (that would chain worktrees, which git never
/// does).
fn common_of(git_dir: &Path) -> Result<(PathBuf, bool), String> {
    let file = git_dir.join("commondir");
    let (common, linked) = match read_user_file_bounded(&file, MAX_POINTER) {
        Ok(bytes) => {
            let named = one_path(&bytes).map_err(|why| format!("{}: {why}", file.display()))?;
            (git_dir.join(named), true)
        }
        Err(e) if is_absent(&e) => (git_dir.to_path_buf(), false),
        Err(e) => return Err(format!("reading {}: {e}", file.display())),
    };
    if linked {
        let shown = || format!("{} names {}", file.display(), common.display());
        match fs::metadata(&common) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("{}, which is not a directory", shown())),
            Err(e) => return Err(format!("{}, which cannot be used: {e}", shown())),
        }
        if common.join("commondir").exists() {
            return Err(format!(
                "{}, which has a commondir of its own: a linked worktree's git directory, not the repository's",
                shown()
            ));
        }
        let has = |name: &str| fs::metadata(common.join(name)).is_ok_and(|m| m.is_dir());
        if !(has("objects") && has("refs")) {
            return Err(format!(
                "{}, which is not a repository's git directory (no objects/ and refs/)",
                shown()
            ));
        }
    }
    let common =
        fs::canonicalize(&common).map_err(|e| format!("resolving {}: {e}", common.display()))?;
    Ok((common, linked))
}

/// The one path a git pointer file holds: its bytes up to the trailing line
/// break (`\n` or `\r\n`, as git trims them); none that holds a NUL or a
/// line break inside, or is empty.
fn one_path(bytes: &[u8]) -> Result<&Path, String> {
    let mut end = bytes.len();
    while end > 0 && matches!(bytes[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let path = &bytes[..end];
    if path.is_empty() {
        return Err("names no path".into());
    }
    if path.contains(&0) {
        return Err("holds a NUL byte: not a path".into());
    }
    if path.iter().any(|&b| b == b'\n' || b == b'\r') {
        return Err("holds a line break inside the path: not one path".into());
    }
    Ok(Path::new(OsStr::from_bytes(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_path_trims_like_git_and_refuses_odd_bytes() {
        assert_eq!(one_path(b"/a b/c\r\n").unwrap(), Path::new("/a b/c"));
        assert_eq!(
            one_path(b"/\xff\xfe\n").unwrap().as_os_str().as_bytes(),
            b"/\xff\xfe"
        );
        for bad in [&b""[..], b"\n", b"/a\0b", b"/a\nb\n"] {
            assert!(one_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn head_branch_reads_a_symbolic_ref() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("HEAD"), "ref: refs/heads/issue-42\n").unwrap();
        assert_eq!(head_branch(tmp.path()).as_deref(), Some("issue-42"));
        std::fs::write(tmp.path().join("HEAD"), "0123456789abcdef\n").unwrap();
        assert_eq!(head_branch(tmp.path()), None);
    }

    #[test]
    fn main_checkout_from_the_common_dir() {
        let cfg = |bare, worktree: Option<&str>| RepoConfig {
            bare,
            worktree: worktree.map(|w| w.as_bytes().to_vec()),
            ..RepoConfig::default()
        };
        let common = Path::new("/r/.git");
        assert_eq!(
            main_checkout(common, &cfg(None, None)),
            Main::At("/r".into())
        );
        assert_eq!(main_checkout(common, &cfg(Some(true), None)), Main::Bare);
        assert_eq!(
            main_checkout(Path::new("/r/g.git"), &cfg(Some(false), None)),
            Main::Apart
        );
        assert_eq!(
            main_checkout(Path::new("/nonexistent-jkz/m"), &cfg(None, Some("/w"))),
            Main::At("/w".into())
        );
    }
}
