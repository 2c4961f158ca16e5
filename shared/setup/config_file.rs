//! Where a client's configuration file really is, before install or
//! uninstall reads or writes it (`.claude/settings.json`, `.codex/hooks.json`,
//! `.codex/config.toml`, `.gemini/settings.json`, `.gitignore`).
//!
//! People keep such files in a dotfiles repository and link them into
//! place; a rename over the link would turn it into a regular file and cut
//! it off from its repository. So a symbolic link is followed to the file
//! it names and that file is edited (and restored by uninstall), the link
//! left as it is. A link to nothing (dangling, or a loop) is refused with
//! its path and where it points: writing there would either replace the
//! link or create a file somewhere the user did not choose.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::exit::{Failure, EXIT_FAILED};

/// The file to read and write for `path`: itself when it is not a link (or
/// does not exist yet), else the existing file its link chain ends at.
pub fn resolve(path: &Path) -> Result<PathBuf, Failure> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => fs::canonicalize(path).map_err(|e| {
            let points_to = fs::read_link(path)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".to_string());
            let why = if e.kind() == io::ErrorKind::NotFound {
                "which does not exist".to_string()
            } else {
                format!("which cannot be followed ({e})")
            };
            Failure::new(
                EXIT_FAILED,
                format!(
                    "{} is a symbolic link to {points_to}, {why}; nothing was changed: create the file it names, or remove the link, then run this again",
                    path.display()
                ),
            )
        }),
        _ => Ok(path.to_path_buf()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_followed_and_a_dangling_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles/settings.json");
        fs::create_dir_all(real.parent().unwrap()).unwrap();
        fs::write(&real, "{}").unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(resolve(&link).unwrap(), fs::canonicalize(&real).unwrap());
        let missing = dir.path().join("none.json");
        assert_eq!(resolve(&missing).unwrap(), missing);
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("gone.json"), &dangling).unwrap();
        let why = resolve(&dangling).unwrap_err().to_string();
        assert!(
            why.contains(&dangling.display().to_string()) && why.contains("does not exist"),
            "{why}"
        );
    }
}
