//! The repository's state root: from the directory a tool starts in to the
//! one state directory of its repository, and why that one (the order
//! around it, `--state-dir` and `JKZ_STATE_DIR` first, is in the parent
//! module; the page for users is `docs/worktrees.md`).
//!
//! | the start lies in | the root | said as |
//! |---|---|---|
//! | no git repository | `<start>/state` | `<start> is in no git repository` |
//! | a checkout, or a subdirectory of one | `<top>/state` | `the checkout <top>` |
//! | a linked worktree | the main checkout's `state/` | `main worktree of <worktree>` |
//! | a bare repository or one of its worktrees | `<common git dir>/jkz-state` | `shared root of the bare repository <dir>` |
//! | a checkout whose git directory lives apart and names no main checkout | `<common git dir>/jkz-state` | `shared root of <dir>, …` |
//! | a repository attached with `jkz attach` | `jkz.stateDir` of its config | `attached: jkz.stateDir in <config>` |
//!
//! A repository without a main checkout keeps its root inside its common
//! git directory ([`SHARED_ROOT`]): that directory belongs to exactly this
//! repository (a sibling such as `<dir>/../state` would be shared by every
//! bare repository kept side by side), it lies in no checkout (no
//! `.gitignore` line is needed, no `git status` shows it), every worktree
//! reaches it by the same `commondir`, and git leaves unknown entries
//! there alone.
//!
//! A layout that cannot be read (a `.git` file naming nothing, a broken
//! `commondir`, a `jkz.stateDir` naming a missing or foreign directory) is
//! an error saying which file and why: hooks say it in one line and fall
//! back to `<start>/state` (only ever used if it exists); commands stop.

use std::ffi::OsStr;
use std::fmt;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::git::config;
use crate::git::repository::{self, Checkout, Location, Main};

/// The shared root's name inside the common git directory of a repository
/// without a main checkout.
pub const SHARED_ROOT: &str = "jkz-state";

/// Why a state root was chosen, said after its path: `/r/state (main
/// worktree of /r/wt-42)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// `--state-dir`.
    Flag,
    /// `JKZ_STATE_DIR`.
    Env,
    /// The start lies in no repository: `<start>/state`.
    Outside { start: PathBuf },
    /// The checkout's own top-level `state/`.
    Checkout { top: PathBuf },
    /// A linked worktree uses its main checkout's.
    MainWorktree { worktree: PathBuf },
    /// A bare repository's shared root.
    Bare { common: PathBuf },
    /// The shared root of a git directory that names no main checkout.
    Apart { common: PathBuf },
    /// Recorded by `jkz attach` in this config file.
    Attached { config: PathBuf },
    /// The layout could not be read: `<start>/state`, used only if it exists.
    Fallback { problem: String },
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Flag => f.write_str("named by --state-dir"),
            Why::Env => f.write_str("named by JKZ_STATE_DIR"),
            Why::Outside { start } => write!(f, "{} is in no git repository", start.display()),
            Why::Checkout { top } => write!(f, "the checkout {}", top.display()),
            Why::MainWorktree { worktree } => {
                write!(f, "main worktree of {}", worktree.display())
            }
            Why::Bare { common } => {
                write!(f, "shared root of the bare repository {}", common.display())
            }
            Why::Apart { common } => write!(
                f,
                "shared root of {}, a git directory that names no main checkout",
                common.display()
            ),
            Why::Attached { config } => {
                write!(f, "attached: jkz.stateDir in {}", config.display())
            }
            Why::Fallback { problem } => write!(f, "fallback: {problem}"),
        }
    }
}

/// A state root found from a start directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    pub why: Why,
    /// The repository, when the start lies in one.
    pub repository: Option<Repository>,
}

/// What [`find`] learned of the start's repository (for `jkz doctor`,
/// `jkz attach` and the compaction hooks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repository {
    /// The common git directory, resolved.
    pub common: PathBuf,
    /// The checkout the start lies in (none inside a git directory).
    pub checkout: Option<Checkout>,
    pub main: Main,
    /// The root its layout gives, attached or not, and why.
    pub own_root: PathBuf,
    pub own_why: Why,
    /// `jkz.stateDir` as its config records it (unchecked), if set.
    pub attached: Option<Vec<u8>>,
}

impl Repository {
    /// The config file `jkz attach` writes `jkz.stateDir` into.
    pub fn config_file(&self) -> PathBuf {
        config::path(&self.common)
    }
}

/// The state root for a tool started in `start` (empty: the current
/// directory), or why the layout cannot be read.
pub fn find(start: &Path) -> Result<Found, String> {
    let (absolute, repository) = repository_of(start)?;
    let Some(repository) = repository else {
        return Ok(Found {
            path: start.join("state"),
            why: Why::Outside { start: absolute },
            repository: None,
        });
    };
    let (path, why) = match &repository.attached {
        Some(value) => {
            let file = repository.config_file();
            (attached_root(value, &file)?, Why::Attached { config: file })
        }
        None => (repository.own_root.clone(), repository.own_why.clone()),
    };
    Ok(Found {
        path,
        why,
        repository: Some(repository),
    })
}

/// The repository holding `start` (empty: the current directory), none
/// outside any, with the start made absolute; an error when its layout
/// cannot be read. A `jkz.stateDir` is returned as recorded, unchecked
/// (`jkz detach` must work on one that names nothing).
pub fn repository_of(start: &Path) -> Result<(PathBuf, Option<Repository>), String> {
    let absolute = if start.as_os_str().is_empty() {
        std::env::current_dir()
    } else {
        std::path::absolute(start)
    };
    let Ok(absolute) = absolute else {
        return Ok((start.to_path_buf(), None));
    };
    // A start that does not exist is in no repository (as before).
    let Ok(real) = fs::canonicalize(&absolute) else {
        return Ok((absolute, None));
    };
    let (checkout, common) = match repository::locate(&real)? {
        Location::Outside => return Ok((absolute, None)),
        Location::Inside { checkout, common } => (checkout, common),
    };
    let config = config::read(&common)?;
    let main = repository::main_checkout(&common, &config);
    let (own_root, own_why) = match &main {
        Main::At(top) => {
            let why = match &checkout {
                Some(c) if &c.top != top => Why::MainWorktree {
                    worktree: c.top.clone(),
                },
                _ => Why::Checkout { top: top.clone() },
            };
            (top.join("state"), why)
        }
        Main::Bare => (
            common.join(SHARED_ROOT),
            Why::Bare {
                common: common.clone(),
            },
        ),
        Main::Apart => (
            common.join(SHARED_ROOT),
            Why::Apart {
                common: common.clone(),
            },
        ),
    };
    let repository = Repository {
        common,
        checkout,
        main,
        own_root,
        own_why,
        attached: config.state_dir,
    };
    Ok((absolute, Some(repository)))
}

/// The root `jkz.stateDir` names, if jkz may use it: an absolute path to a
/// directory of this user's that nobody else can write to (the rules
/// [`usable_root`] applies).
fn attached_root(value: &[u8], config_file: &Path) -> Result<PathBuf, String> {
    let shown = format!("jkz.stateDir in {}", config_file.display());
    let undo = "run `jkz attach PATH` again, or `jkz detach`";
    if value.is_empty() {
        return Err(format!("{shown} is empty: {undo}"));
    }
    if value.contains(&0) {
        return Err(format!("{shown} holds a NUL byte: not a path; {undo}"));
    }
    let path = Path::new(OsStr::from_bytes(value));
    if !path.is_absolute() {
        return Err(format!(
            "{shown} is {}, not an absolute path: {undo}",
            path.display()
        ));
    }
    usable_root(path).map_err(|why| format!("{shown} names {}, {why}: {undo}", path.display()))?;
    Ok(path.to_path_buf())
}

/// Why jkz may not keep state in `dir` (a root it did not find by the
/// layout: one `jkz.stateDir` or `jkz attach` names), or `Ok`. It must be
/// a directory (a link to one is followed: where state lives is the user's
/// choice), not the file system's root nor one of the system's own
/// ([`super::system`]), owned by this user, writable by nobody else (jkz
/// reads back what it finds there), and either empty or a state root
/// already: every entry one jkz makes there ([`super::layout::is_root_entry`]).
/// A directory holding anything else (a home directory, a checkout) is not
/// taken over. Every check reads; nothing is written before they pass.
pub fn usable_root(dir: &Path) -> Result<(), String> {
    let meta = match fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("which does not exist".into())
        }
        Err(e) => return Err(format!("which cannot be used ({e})")),
    };
    if !meta.is_dir() {
        return Err("which is not a directory".into());
    }
    let resolved = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if let Some(system) = super::system::system_directory(&resolved) {
        let what = match system {
            "/" => "the file system's root".to_string(),
            s if resolved == Path::new(s) => format!("the system directory {s}"),
            s => format!("inside the system directory {s}"),
        };
        return Err(format!(
            "which is {what}: jkz never keeps state there; name a directory of its own (e.g. a repository's state/)"
        ));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "which belongs to another user (uid {}, you are {me}): jkz keeps state only in a directory of yours",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "which others can write to (mode {mode:03o}; chmod 700 it)"
        ));
    }
    if let Some(foreign) = foreign_entry(dir)? {
        return Err(format!(
            "which holds {foreign:?}, an entry jkz never makes in a state directory: not a jkz state directory, and jkz does not take it over (name an empty directory, or one jkz made)"
        ));
    }
    Ok(())
}

/// The first entry of `dir` that jkz never makes at the top of a state
/// root, if any.
fn foreign_entry(dir: &Path) -> Result<Option<String>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("which cannot be listed ({e})"))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("which cannot be listed ({e})"))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !super::layout::is_root_entry(&name) {
            return Ok(Some(name.into_owned()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn attached_roots_must_be_absolute_existing_and_private() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = Path::new("/r/.git/config");
        let dir = tmp.path().join("s");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let ok = attached_root(dir.as_os_str().as_bytes(), cfg).unwrap();
        assert_eq!(ok, dir);
        for (value, want) in [
            (&b""[..], "is empty"),
            (b"rel/state", "not an absolute path"),
            (b"/a\0b", "NUL"),
            (b"/nonexistent-jkz/state", "does not exist"),
        ] {
            let err = attached_root(value, cfg).unwrap_err();
            assert!(err.contains(want) && err.contains("jkz detach"), "{err}");
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = attached_root(dir.as_os_str().as_bytes(), cfg).unwrap_err();
        assert!(err.contains("others can write"), "{err}");
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let err = attached_root(file.as_os_str().as_bytes(), cfg).unwrap_err();
        assert!(err.contains("not a directory"), "{err}");
    }

    #[test]
    fn the_root_system_directories_and_foreign_directories_are_refused() {
        let cfg = Path::new("/r/.git/config");
        for (value, want) in [
            (&b"/"[..], "the file system's root"),
            (b"/etc", "the system directory /etc"),
            (b"/usr/share", "inside the system directory /usr"),
        ] {
            let err = attached_root(value, cfg).unwrap_err();
            assert!(err.contains(want) && err.contains("jkz detach"), "{err}");
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("s");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        // What jkz makes there: still a state root.
        for name in [
            "pipeline",
            "chat.db",
            "chat.db-wal",
            "events",
            "pre-compact-20260101T000000.000Z-7.json",
            "settings.json.jkz-backup.0123456789abcdef",
            ".live-session.json.lock",
            ".chat.db.a1b2c3.tmp",
        ] {
            std::fs::write(dir.join(name), "").unwrap();
        }
        assert_eq!(attached_root(dir.as_os_str().as_bytes(), cfg).unwrap(), dir);
        // Anything else: not jkz's, never taken over.
        std::fs::write(dir.join(".bashrc"), "").unwrap();
        let err = attached_root(dir.as_os_str().as_bytes(), cfg).unwrap_err();
        assert!(
            err.contains("\".bashrc\"") && err.contains("not a jkz state directory"),
            "{err}"
        );
    }

    #[test]
    fn outside_a_repository_the_start_keeps_its_state() {
        let tmp = tempfile::tempdir().unwrap();
        let found = find(tmp.path()).unwrap();
        assert_eq!(found.path, tmp.path().join("state"));
        assert!(matches!(found.why, Why::Outside { .. }));
        let gone = tmp.path().join("gone");
        assert_eq!(find(&gone).unwrap().path, gone.join("state"));
    }
}
