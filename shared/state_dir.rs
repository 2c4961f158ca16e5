//! Where jkz keeps its runtime state, and whether it may create it.
//!
//! **One state directory per repository.** Resolution, first that applies:
//! `--state-dir DIR` > `JKZ_STATE_DIR` > the repository's root, found from
//! the start directory (`$CLAUDE_PROJECT_DIR`, else the hook input's `cwd`,
//! else the current directory) by [`root::find`]: a checkout's top-level
//! `state/` (from any subdirectory too); for a linked worktree, the main
//! checkout's; for a bare repository with worktrees, `jkz-state` inside its
//! common git directory; for a repository attached with `jkz attach`, the
//! root its git config records (`jkz.stateDir`); outside any repository,
//! `<start>/state` as before. Found with plain file reads, no `git`
//! process. A layout that cannot be read is said ([`StateDir::problem`]):
//! hooks say it in one line and fall back to reading `<start>/state` (as
//! before; they write nothing), commands stop. Every message about the state directory names the root and why
//! ([`StateDir::describe`]). The page for users: `docs/worktrees.md`.
//!
//! Who may create it, one rule for every tool that writes (the hooks,
//! `jkz-session`, `jkz-truncate`'s full output, `jkz-compress`, `jkz state
//! set`), applied by [`StateDir::ensure`]: only a root the user named —
//! `--state-dir` or `JKZ_STATE_DIR` — is created when missing. Every other
//! root is located, never created: it is written into only when it already
//! exists (`jkz install` or `jkz attach` creates it: the repository opted
//! in). That includes the root `$CLAUDE_PROJECT_DIR` leads to: Claude Code
//! sets `CLAUDE_PROJECT_DIR` for every hook in every project, so a
//! user-level hook would otherwise leave a `state/` (not git-ignored) in
//! each repository it ever ran in. A linked worktree never gets a `state/`
//! of its own; one an older jkz left there is never used (`jkz doctor`
//! names it, `jkz doctor --fix` moves its files: [`stray`]).
//!
//! Symbolic links: the root itself may be one (`state -> /big/disk/state`,
//! or a `--state-dir` naming a link) — where state lives is the user's
//! choice. Below the root, jkz never writes through a link: a subdirectory
//! ([`StateDir::ensure_subdir`]) or a lock file ([`open_lock_file`]) that is
//! a link is refused with an error, never followed, so a link planted in
//! `state/` cannot make jkz create or change files elsewhere. Files are
//! replaced by rename, which replaces a link rather than its target.
//! (`state/` is owner-only, 0700: only its owner can plant a link there, so
//! checking before use, without a race-free `openat` walk, is enough.)
//! Nothing below the root is read through a link either, nor from anything
//! but a regular file: see [`read`].

use std::ffi::OsString;
use std::fs::{self, DirBuilder, File};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};

pub mod arg;
pub mod layout;
pub mod read;
pub mod retention;
pub mod root;
pub mod stray;
pub mod system;
pub mod tracked;
pub use read::{
    append_lines, check_listed_dir, open_file_below, open_state_file, open_state_file_to_append,
    read_state_file, read_state_file_into, read_user_file, read_whole_state_file, refused_entries,
    RefusedEntry, SmallFileReader,
};

pub use crate::user_file::read_user_file_bounded;
pub use arg::StateDirArg;
pub use layout::{CIRCUIT_DIR, DELIBERATIONS_DIR, LOCKS_DIR};
pub use root::Why;

/// `open(2)`'s `O_NOFOLLOW`: fail with `ELOOP` instead of following a
/// symbolic link in the last path component. std has no constant for it and
/// the libc crate is not a dependency, so the kernel ABI values are spelled
/// out here (Linux: `asm-generic/fcntl.h`, except the architectures whose
/// `asm/fcntl.h` moves it; BSDs and macOS: `sys/fcntl.h`).
/// `o_nofollow_refuses_a_link` proves the value on the machine under test.
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    any(
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "powerpc",
        target_arch = "powerpc64"
    )
))]
pub const O_NOFOLLOW: i32 = 0o100000;
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(any(
        target_arch = "aarch64",
        target_arch = "arm",
        target_arch = "powerpc",
        target_arch = "powerpc64"
    ))
))]
pub const O_NOFOLLOW: i32 = 0o400000;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub const O_NOFOLLOW: i32 = 0x0100;

/// Where the start of the resolution came from: a root the user named, or
/// the directory a repository's root is found from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Flag,
    Env,
    ProjectDir,
    HookCwd,
    CurrentDir,
}

impl Source {
    /// True when the user named this place, so it may be created.
    /// `CLAUDE_PROJECT_DIR` is not the user naming a state directory: the
    /// client sets it in every project.
    pub fn is_explicit(self) -> bool {
        matches!(self, Source::Flag | Source::Env)
    }

    /// Where the start came from, as a message says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "--state-dir",
            Source::Env => "JKZ_STATE_DIR",
            Source::ProjectDir => "CLAUDE_PROJECT_DIR",
            Source::HookCwd => "the hook event's cwd",
            Source::CurrentDir => "the current directory",
        }
    }
}

/// The resolved state directory (it may not exist yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateDir {
    path: PathBuf,
    source: Source,
    why: Why,
    tracked: TrackedOnce,
}

/// Whether git tracks the root, checked at most once per resolution (the
/// index is read once however many writers ask).
#[derive(Clone, Debug, Default)]
struct TrackedOnce(std::sync::OnceLock<Option<tracked::TrackedState>>);

impl PartialEq for TrackedOnce {
    /// A cache: two resolutions of the same root are equal whichever asked.
    fn eq(&self, _: &TrackedOnce) -> bool {
        true
    }
}

impl Eq for TrackedOnce {}

impl StateDir {
    /// Resolves from the flag, the process environment, the hook's `cwd` and
    /// the current directory.
    pub fn resolve(flag: Option<&Path>, hook_cwd: Option<&Path>) -> StateDir {
        Self::resolve_with(flag, hook_cwd, |name| std::env::var_os(name))
    }

    /// [`StateDir::resolve`] with the environment given as a function (tests).
    pub fn resolve_with(
        flag: Option<&Path>,
        hook_cwd: Option<&Path>,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> StateDir {
        let env = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(dir) = flag {
            return StateDir::at(dir);
        }
        if let Some(dir) = env("JKZ_STATE_DIR") {
            return StateDir {
                path: dir,
                source: Source::Env,
                why: Why::Env,
                tracked: TrackedOnce::default(),
            };
        }
        let (start, source) = if let Some(project) = env("CLAUDE_PROJECT_DIR") {
            (project, Source::ProjectDir)
        } else if let Some(cwd) = hook_cwd.filter(|c| !c.as_os_str().is_empty()) {
            (cwd.to_path_buf(), Source::HookCwd)
        } else {
            (PathBuf::new(), Source::CurrentDir)
        };
        match root::find(&start) {
            Ok(found) => StateDir {
                path: found.path,
                source,
                why: found.why,
                tracked: TrackedOnce::default(),
            },
            Err(problem) => StateDir {
                path: start.join("state"),
                source,
                why: Why::Fallback { problem },
                tracked: TrackedOnce::default(),
            },
        }
    }

    /// The same order for a known project (`jkz doctor` checks the project
    /// it is given, not the one the environment names): the project's root
    /// stands in for `CLAUDE_PROJECT_DIR`.
    pub fn resolve_for_project(flag: Option<&Path>, project: &Path) -> StateDir {
        Self::resolve_with(flag, None, |name| match name {
            "CLAUDE_PROJECT_DIR" => Some(project.as_os_str().to_owned()),
            _ => std::env::var_os(name),
        })
    }

    /// A state directory at a known place, as if given by `--state-dir`.
    pub fn at(path: impl Into<PathBuf>) -> StateDir {
        StateDir {
            path: path.into(),
            source: Source::Flag,
            why: Why::Flag,
            tracked: TrackedOnce::default(),
        }
    }

    /// Why this root: how it was named or found.
    pub fn why(&self) -> &Why {
        &self.why
    }

    /// The path and why, as every message about the state directory says
    /// it: `/r/state (main worktree of /r/wt-42)`.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.path.display(), self.why)
    }

    /// The one message for "no state directory here": where it was looked
    /// for, why there, and how to make one.
    pub fn missing(&self) -> String {
        format!(
            "no state directory at {}: run `jkz install` in the project, or name one with --state-dir or JKZ_STATE_DIR",
            self.describe()
        )
    }

    /// Why the repository's layout could not be read, when it could not: a
    /// hook says it in one line and goes on with the fallback
    /// `<start>/state` (used only if it exists); a command stops with it
    /// ([`StateDir::check`]).
    pub fn problem(&self) -> Option<&str> {
        match &self.why {
            Why::Fallback { problem } => Some(problem),
            _ => None,
        }
    }

    /// For a command: an error when the repository's layout could not be
    /// read (a hook goes on instead), saying what is wrong and what to do.
    pub fn check(&self) -> Result<(), String> {
        match self.problem() {
            None => Ok(()),
            Some(problem) => Err(format!(
                "cannot tell this repository's state directory: {problem} (found from {}); \
                 fix the repository, or name the state directory with --state-dir or JKZ_STATE_DIR",
                self.source.as_str()
            )),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why this root is not jkz's, when git tracks it (a repository that
    /// committed `state/`): the one line every hook and command says. No
    /// hook reads or writes such a root, and [`StateDir::ensure`] refuses
    /// it ([`tracked`]).
    /// A fallback root (the layout could not be read, so neither can its
    /// index) is not checked: it is read as before and never written.
    pub fn tracked_by_git(&self) -> Option<&str> {
        if self.problem().is_some() {
            return None;
        }
        self.tracked
            .0
            .get_or_init(|| tracked::check(&self.path))
            .as_ref()
            .map(tracked::TrackedState::line)
    }

    /// For a command: an error, with [`StateDir::tracked_by_git`]'s line,
    /// when git tracks the root.
    pub fn check_untracked(&self) -> Result<(), String> {
        match self.tracked_by_git() {
            None => Ok(()),
            Some(line) => Err(line.to_string()),
        }
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// `path/rel`, without touching the disk.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }

    /// True when the directory exists (as a directory).
    pub fn exists(&self) -> bool {
        self.path.is_dir()
    }

    /// True when nothing is there (a link to nothing counts as nothing):
    /// "no state directory". Something else in its place (a file) is not
    /// absent: each command says what is wrong with it, where "no state
    /// directory" would send the user to `jkz install` in vain.
    pub fn is_absent(&self) -> bool {
        fs::metadata(&self.path).is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
    }

    /// The directory ready for writing: created (owner-only) when the root is
    /// explicit, `None` when it is implicit and the project has not opted in.
    /// Something other than a directory in its place (a file, a link to a
    /// file) is an error whatever the source: it says what is wrong, where
    /// "no state directory" would send the user to `jkz install` in vain.
    pub fn ensure(&self) -> io::Result<Option<&Path>> {
        // A fallback is a guess made when the repository's layout cannot be
        // read: written into, it would split the state this rule keeps
        // whole. It is read (as before), never written.
        if self.problem().is_some() {
            return Ok(None);
        }
        // A root git tracks holds a repository's files, not jkz's state.
        if let Some(line) = self.tracked_by_git() {
            return Err(io::Error::other(line.to_string()));
        }
        // The root may be a link (the user's choice): metadata follows it.
        match fs::metadata(&self.path) {
            Ok(meta) if meta.is_dir() => {
                self.refuse_system_directory()?;
                return Ok(Some(&self.path));
            }
            Ok(_) => return Err(not_a_directory()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            // E.g. a parent that is a file: nothing opted in here.
            Err(_) if !self.source.is_explicit() => return Ok(None),
            Err(e) => return Err(e),
        }
        if !self.source.is_explicit() {
            return Ok(None);
        }
        self.refuse_system_directory()?;
        create_private_dir(&self.path)?;
        Ok(Some(&self.path))
    }

    /// A root named by `--state-dir` or `JKZ_STATE_DIR` that is `/` or one
    /// of the system's own directories ([`system::system_directory`]) is
    /// refused before anything is written there: run as root, jkz could
    /// write anywhere, and `--state-dir /` is a slip, never a choice.
    fn refuse_system_directory(&self) -> io::Result<()> {
        if !self.source.is_explicit() {
            return Ok(());
        }
        // Not there yet: where it would be made.
        let resolved = fs::canonicalize(&self.path)
            .or_else(|_| std::path::absolute(&self.path))
            .unwrap_or_else(|_| self.path.clone());
        match system::system_directory(&resolved) {
            None => Ok(()),
            Some(system) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} names {}, {}: jkz never keeps state there; name a directory of its own (e.g. a repository's state/)",
                    self.source.as_str(),
                    self.path.display(),
                    if system == "/" {
                        "the file system's root".to_string()
                    } else {
                        format!("the system directory {system}")
                    }
                ),
            )),
        }
    }

    /// `state/<rel>` ready for writing (see [`StateDir::ensure`]). Each
    /// component below the root is created owner-only when missing; one that
    /// is a symbolic link or not a directory is an error, never followed.
    pub fn ensure_subdir(&self, rel: impl AsRef<Path>) -> io::Result<Option<PathBuf>> {
        let Some(root) = self.ensure()? else {
            return Ok(None);
        };
        let mut dir = root.to_path_buf();
        for part in rel.as_ref().components() {
            let Component::Normal(name) = part else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{}: not a plain path below the state directory",
                        rel.as_ref().display()
                    ),
                ));
            };
            dir.push(name);
            if !is_real_dir(&dir)? {
                match DirBuilder::new().mode(0o700).create(&dir) {
                    Ok(()) => {}
                    // Another process made it meanwhile: check what it is.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        if !is_real_dir(&dir)? {
                            return Err(e);
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(Some(dir))
    }
}

/// True when `path` is a directory itself (not a link to one); false when
/// it does not exist; an error when something else is in its place.
pub fn is_real_dir(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(true),
        Ok(meta) if meta.file_type().is_symlink() => Err(symbolic_link()),
        Ok(_) => Err(not_a_directory()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Opens (creating it owner-only if missing) a lock file for writing,
/// refusing to follow a symbolic link in its place: a link planted as
/// `.<name>.lock` would otherwise make jkz create or open its target.
pub fn open_lock_file(path: &Path) -> io::Result<File> {
    open_state_file_to_append(path)
}

fn symbolic_link() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "a symbolic link inside the state directory: jkz never writes through one (remove the link)",
    )
}

fn not_a_directory() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotADirectory,
        "exists but is not a directory (move it away, or name another state directory)",
    )
}

/// Creates `dir` and its missing parents with mode 0700.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::os::unix::fs::OpenOptionsExt;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn resolution_order() {
        let all = [("JKZ_STATE_DIR", "/e"), ("CLAUDE_PROJECT_DIR", "/p")];
        let cwd = Some(Path::new("/h"));
        let flag = Some(Path::new("/f"));
        let r = StateDir::resolve_with(flag, cwd, env(&all));
        assert_eq!((r.path(), r.source()), (Path::new("/f"), Source::Flag));
        let r = StateDir::resolve_with(None, cwd, env(&all));
        assert_eq!((r.path(), r.source()), (Path::new("/e"), Source::Env));
        let r = StateDir::resolve_with(None, cwd, env(&all[1..]));
        assert_eq!(
            (r.path(), r.source()),
            (Path::new("/p/state"), Source::ProjectDir)
        );
        let r = StateDir::resolve_with(None, cwd, env(&[("JKZ_STATE_DIR", "")]));
        assert_eq!(
            (r.path(), r.source()),
            (Path::new("/h/state"), Source::HookCwd)
        );
        // The current directory: its repository's root (the tests may run
        // in a checkout), else ./state.
        let r = StateDir::resolve_with(None, None, env(&[]));
        assert_eq!(r.source(), Source::CurrentDir);
        assert_eq!(r.path(), root::find(Path::new("")).unwrap().path);
    }

    #[test]
    fn implicit_root_is_never_created() {
        let tmp = tempfile::tempdir().unwrap();
        let r = StateDir::resolve_with(None, Some(tmp.path()), env(&[]));
        assert_eq!(r.ensure().unwrap(), None);
        assert_eq!(r.ensure_subdir("x").unwrap(), None);
        assert!(!tmp.path().join("state").exists());
    }

    #[test]
    fn the_project_dir_locates_but_never_creates() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().to_str().unwrap();
        let vars = [("CLAUDE_PROJECT_DIR", project)];
        let r = StateDir::resolve_with(None, None, env(&vars));
        assert_eq!(r.source(), Source::ProjectDir);
        assert_eq!(r.ensure().unwrap(), None);
        assert_eq!(r.ensure_subdir("pipeline").unwrap(), None);
        assert!(!tmp.path().join("state").exists());
        // Once the project opted in, it is where state goes.
        std::fs::create_dir(tmp.path().join("state")).unwrap();
        let sub = r.ensure_subdir("pipeline").unwrap().unwrap();
        assert_eq!(sub, tmp.path().join("state/pipeline"));
        // Named explicitly, a root is created.
        let named = tmp.path().join("named");
        let vars = [("JKZ_STATE_DIR", named.to_str().unwrap())];
        let r = StateDir::resolve_with(None, None, env(&vars));
        assert_eq!(r.ensure().unwrap(), Some(named.as_path()));
    }

    #[test]
    fn explicit_root_is_created_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let r = StateDir::at(tmp.path().join("s"));
        let sub = r.ensure_subdir("context-offload").unwrap().unwrap();
        assert!(sub.is_dir());
        let mode = std::fs::metadata(r.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let mode = std::fs::metadata(&sub).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let nested = r.ensure_subdir("a/b").unwrap().unwrap();
        for dir in [r.join("a"), nested] {
            let mode = std::fs::metadata(dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn a_named_root_that_is_a_system_directory_is_refused_before_any_write() {
        for named in ["/", "/usr", "/etc/jkz-state", "/usr/share/jkz-never-made"] {
            let err = StateDir::at(PathBuf::from(named))
                .ensure_subdir("pipeline")
                .unwrap_err();
            assert_eq!(
                err.kind(),
                io::ErrorKind::PermissionDenied,
                "{named}: {err}"
            );
            assert!(
                err.to_string().contains("jkz never keeps state there"),
                "{err}"
            );
            assert!(!Path::new(named).join("pipeline").exists(), "{named}");
        }
        assert!(!Path::new("/usr/share/jkz-never-made").exists());
    }

    #[test]
    fn o_nofollow_refuses_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        // Without the flag, opening the dangling link creates its target …
        let plain = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&link);
        assert!(plain.is_ok() && target.exists());
        std::fs::remove_file(&target).unwrap();
        // … with it, the kernel refuses (ELOOP) and creates nothing.
        let err = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .custom_flags(O_NOFOLLOW)
            .open(&link)
            .unwrap_err();
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        assert_eq!(err.raw_os_error(), Some(40), "ELOOP: {err}");
        assert!(!target.exists());
        // A plain file still opens with the flag.
        let plain = tmp.path().join("plain");
        open_lock_file(&plain).unwrap();
        let err = open_lock_file(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(!target.exists());
    }

    #[test]
    fn subdirectory_links_and_files_are_refused_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::symlink(&outside, state.join("context-offload")).unwrap();
        std::fs::write(state.join("pipeline"), "x").unwrap();
        let r = StateDir::at(&state);
        let err = r.ensure_subdir("context-offload").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let err = r.ensure_subdir("context-offload/x").unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        let err = r.ensure_subdir("pipeline").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
        assert!(r.ensure_subdir("../escape").is_err());
        assert!(!tmp.path().join("escape").exists());
    }

    #[test]
    fn a_root_link_is_followed_a_root_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, tmp.path().join("state")).unwrap();
        let r = StateDir::resolve_with(None, Some(tmp.path()), env(&[]));
        let sub = r.ensure_subdir("pipeline").unwrap().unwrap();
        assert!(sub.is_dir() && real.join("pipeline").is_dir());

        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("state"), "x").unwrap();
        for r in [
            StateDir::resolve_with(None, Some(tmp.path()), env(&[])),
            StateDir::at(tmp.path().join("state")),
        ] {
            let err = r.ensure().unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
        }
    }
}
