//! A registration that is one file jkz writes whole: Copilot CLI's
//! `.github/hooks/jkz.json`, OpenCode's `.opencode/plugins/jkz.js` (or the
//! user's). Install and uninstall are the same for both: a file in its place
//! that is not jkz's is refused and left as it is; install opts a project in
//! (its `state/`) and writes the file only when its bytes differ; uninstall
//! removes it, then the directories that held only it, then lets the
//! project's state go when no client's registration remains.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::install::{
    prepare_state, project_gitignore, refusal, release_state, remove_dir_if_empty, remove_file,
    say, write_file, ProjectRoot,
};
use super::Target;
use crate::exit::Failure;

/// Where `jkz install --client CLI` (or `uninstall`) acts, the note of a
/// project found elsewhere said first. `--registry` (`registry`) is
/// refused: the team's `jkz.toml`, which `jkz install --registry URL`
/// writes, serves every client.
pub(super) fn target(
    cli: &str,
    project: Option<&Path>,
    user: bool,
    registry: bool,
    out: &mut impl Write,
) -> Result<Target, Failure> {
    if registry {
        return Err(Failure::new(
            2,
            format!("jkz install --client {cli}: --registry is recorded by `jkz install --registry URL` (the team's jkz.toml serves every client)"),
        ));
    }
    let target = Target::resolve(project, user)?;
    if let Some(note) = target.moved_note() {
        say(out, note)?;
    }
    Ok(target)
}

/// The file `located` names, which for the user (`--user`) needs `HOME`
/// to find `user_dir`.
pub(super) fn path(
    cli: &str,
    user_dir: &str,
    located: Option<PathBuf>,
) -> Result<PathBuf, Failure> {
    located.ok_or_else(|| {
        Failure::new(
            2,
            format!("jkz install --client {cli} --user: HOME is not set, so {user_dir} is unknown"),
        )
    })
}

/// One client's whole-file registration.
pub(super) struct WholeFile<'a> {
    /// The client, as messages name it (`Copilot CLI`).
    pub client: &'static str,
    /// Where the file goes.
    pub path: PathBuf,
    /// True when bytes found there are jkz's (any version).
    pub is_ours: &'a dyn Fn(&[u8]) -> bool,
    /// Why a file that is not jkz's is refused, on install and uninstall.
    pub not_ours: (&'static str, &'static str),
    /// How many directories above the file go with it when it leaves them
    /// empty (a user's directory keeps fewer).
    pub empty_parents: usize,
}

impl WholeFile<'_> {
    /// The file's bytes, `None` when there is none.
    pub fn read(&self) -> Result<Option<Vec<u8>>, Failure> {
        read(&self.path)
    }

    /// Install: refuses a file that is not jkz's, opts the project in,
    /// writes `bytes` when they differ (saying `written`); how many changes.
    pub fn install(
        &self,
        target: &Target,
        bytes: &[u8],
        written: &dyn std::fmt::Display,
        out: &mut impl Write,
    ) -> Result<usize, Failure> {
        let existing = self.read()?;
        if existing.as_deref().is_some_and(|b| !(self.is_ours)(b)) {
            return Err(refusal(&self.path, self.not_ours.0));
        }
        let mut changes = 0;
        if let Some(project) = &target.project {
            let gitignore = project_gitignore(target)?.expect("read for a project");
            changes += prepare_state(&ProjectRoot::of(project)?, gitignore, out)?;
        }
        if existing.as_deref() != Some(bytes) {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Failure::io(1, format!("creating {}", dir.display()), e))?;
            }
            write_file(&self.path, bytes, 0o644)?;
            say(out, written)?;
            changes += 1;
        }
        if changes == 0 {
            say(
                out,
                format_args!(
                    "jkz is already installed here for {}; nothing changed",
                    self.client
                ),
            )?;
        }
        Ok(changes)
    }

    /// Uninstall: refuses a file that is not jkz's, removes it and the
    /// directories it leaves empty, lets the project's state go when no
    /// registration remains.
    pub fn uninstall(&self, target: &Target, out: &mut impl Write) -> Result<u8, Failure> {
        let mut changes = 0;
        if let Some(bytes) = self.read()? {
            if !(self.is_ours)(&bytes) {
                return Err(refusal(&self.path, self.not_ours.1));
            }
            remove_file(&self.path)?;
            let mut dir = self.path.parent();
            for _ in 0..self.empty_parents {
                match dir {
                    Some(d) if remove_dir_if_empty(d) => dir = d.parent(),
                    _ => break,
                }
            }
            say(out, format_args!("removed {}", self.path.display()))?;
            changes += 1;
        }
        if let Some(project) = &target.project {
            let gitignore = project_gitignore(target)?.expect("read for a project");
            let root = ProjectRoot::of(project)?;
            changes += release_state(project, &root, gitignore, out)?;
        }
        if changes == 0 {
            say(
                out,
                format_args!(
                    "jkz is not installed here for {}; nothing changed",
                    self.client
                ),
            )?;
        }
        out.flush()
            .map_err(|e| Failure::io(1, "writing stdout", e))?;
        Ok(0)
    }
}

/// A file's bytes, `None` when there is none; another error is the
/// command's.
pub(super) fn read(path: &Path) -> Result<Option<Vec<u8>>, Failure> {
    match crate::state_dir::read_user_file(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::io(1, format!("reading {}", path.display()), e)),
    }
}
