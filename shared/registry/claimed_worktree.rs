//! The worktree `jkz claim --worktree PATH` names: a directory of this
//! repository (a worktree, linked or main, or a directory inside one),
//! never a path that does not exist or another repository's checkout: a
//! claim on a typo guards nothing, and says it does.

use std::path::{Path, PathBuf};

use crate::state_dir::root;

/// Checks `path` against the repository of `here` (the current directory
/// when empty): `Ok` with the path made absolute, or why it is refused.
/// Outside any git repository there is no repository to hold it to: an
/// existing directory is enough.
pub fn check(path: &Path, here: &Path) -> Result<PathBuf, String> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let shown = path.display();
    match std::fs::metadata(&absolute) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(format!("--worktree {shown} is not a directory")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "--worktree {shown} does not exist: name the worktree the issue is worked in (git worktree list shows them)"
            ))
        }
        Err(e) => return Err(format!("--worktree {shown}: {e}")),
    }
    let (_, this) = root::repository_of(here)?;
    let Some(this) = this else {
        return Ok(absolute);
    };
    let (_, theirs) = root::repository_of(&absolute)?;
    match theirs {
        Some(theirs) if theirs.common == this.common => Ok(absolute),
        Some(theirs) => Err(format!(
            "--worktree {shown} is a checkout of another repository (git directory {}), not a worktree of this one ({}): git worktree list shows this repository's",
            theirs.common.display(),
            this.common.display()
        )),
        None => Err(format!(
            "--worktree {shown} is in no git repository, not a worktree of this one ({}): git worktree list shows this repository's",
            this.common.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(at: &Path) {
        std::fs::create_dir_all(at.join(".git/refs")).unwrap();
        std::fs::create_dir_all(at.join(".git/objects")).unwrap();
        std::fs::write(at.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    #[test]
    fn a_directory_of_this_repository_is_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        repo(&main);
        std::fs::create_dir_all(main.join("wt/42")).unwrap();
        assert_eq!(check(&main.join("wt/42"), &main), Ok(main.join("wt/42")));
        assert_eq!(check(&main, &main), Ok(main.clone()));
    }

    #[test]
    fn a_missing_path_a_file_and_another_repository_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        let other = tmp.path().join("other");
        repo(&main);
        repo(&other);
        std::fs::write(main.join("file"), "x").unwrap();
        std::fs::create_dir_all(tmp.path().join("plain")).unwrap();
        let err = check(&main.join("wt/nope"), &main).unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
        let err = check(&main.join("file"), &main).unwrap_err();
        assert!(err.contains("not a directory"), "{err}");
        let err = check(&other, &main).unwrap_err();
        assert!(err.contains("another repository"), "{err}");
        let err = check(&tmp.path().join("plain"), &main).unwrap_err();
        assert!(err.contains("in no git repository"), "{err}");
        // Outside any repository: an existing directory is enough.
        assert!(check(&tmp.path().join("plain"), &tmp.path().join("plain")).is_ok());
    }
}
