//! Where jkz keeps its runtime state, and whether it may create it.
//!
//! Resolution, first that applies: `--state-dir DIR` > `JKZ_STATE_DIR` >
//! `$CLAUDE_PROJECT_DIR/state` > hook input `cwd` + `/state` > `./state`.
//! The first three are explicit: the user named the place, so jkz may create
//! it. The last two are implicit: they are used only when `state/` already
//! exists (a project opts in with `jkz install`), so a tool run in a random
//! directory never leaves a `state/` behind.

use std::ffi::OsString;
use std::fs::DirBuilder;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// How the state directory was chosen.
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
    pub fn is_explicit(self) -> bool {
        matches!(self, Source::Flag | Source::Env | Source::ProjectDir)
    }
}

/// The resolved state directory (it may not exist yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateDir {
    path: PathBuf,
    source: Source,
}

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
        let (path, source) = if let Some(dir) = flag {
            (dir.to_path_buf(), Source::Flag)
        } else if let Some(dir) = env("JKZ_STATE_DIR") {
            (dir, Source::Env)
        } else if let Some(project) = env("CLAUDE_PROJECT_DIR") {
            (project.join("state"), Source::ProjectDir)
        } else if let Some(cwd) = hook_cwd.filter(|c| !c.as_os_str().is_empty()) {
            (cwd.join("state"), Source::HookCwd)
        } else {
            (PathBuf::from("state"), Source::CurrentDir)
        };
        StateDir { path, source }
    }

    /// A state directory at a known place, as if given by `--state-dir`.
    pub fn at(path: impl Into<PathBuf>) -> StateDir {
        StateDir {
            path: path.into(),
            source: Source::Flag,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
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

    /// The directory ready for writing: created (owner-only) when the root is
    /// explicit, `None` when it is implicit and the project has not opted in.
    pub fn ensure(&self) -> io::Result<Option<&Path>> {
        if self.exists() {
            return Ok(Some(&self.path));
        }
        if !self.source.is_explicit() {
            return Ok(None);
        }
        create_private_dir(&self.path)?;
        Ok(Some(&self.path))
    }

    /// `state/<rel>` ready for writing (see [`StateDir::ensure`]).
    pub fn ensure_subdir(&self, rel: impl AsRef<Path>) -> io::Result<Option<PathBuf>> {
        let Some(root) = self.ensure()? else {
            return Ok(None);
        };
        let dir = root.join(rel);
        if !dir.is_dir() {
            create_private_dir(&dir)?;
        }
        Ok(Some(dir))
    }
}

/// Creates `dir` and its missing parents with mode 0700.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let r = StateDir::resolve_with(None, None, env(&[]));
        assert_eq!(
            (r.path(), r.source()),
            (Path::new("state"), Source::CurrentDir)
        );
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
    fn explicit_root_is_created_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let r = StateDir::at(tmp.path().join("s"));
        let sub = r.ensure_subdir("context-offload").unwrap().unwrap();
        assert!(sub.is_dir());
        let mode = std::fs::metadata(r.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
