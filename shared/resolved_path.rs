//! A path as the file system would reach it, links followed even where
//! they dangle: one spelling per file, whether it exists yet or not, so two
//! ways of naming one file compare equal.

use std::path::{Component, Path, PathBuf};

/// How many links [`resolve`] follows before it stops (the kernel's own
/// limit): a loop of links ends, it does not hang the hook.
const MAX_LINKS: usize = 40;

/// `path` (absolute) as the file system would reach it: each component
/// followed through links, in order, so `..` after a link leaves the link's
/// target. A link whose target does not exist (yet) is followed too, through
/// chains of links, and its target's directories are resolved; components
/// that do not exist are kept as written. So the same file has one spelling
/// whether it exists yet or not, and a dangling link into another chat's
/// worktree names that worktree.
pub fn resolve(path: &Path) -> PathBuf {
    /// Pushes `p`'s components on the stack `pending` (the first on top);
    /// an absolute `p` restarts `out` at its root.
    fn push_components(pending: &mut Vec<std::ffi::OsString>, p: &Path, out: &mut PathBuf) {
        let mut parts = Vec::new();
        for c in p.components() {
            match c {
                Component::RootDir | Component::Prefix(_) => *out = PathBuf::from(c.as_os_str()),
                other => parts.push(other.as_os_str().to_os_string()),
            }
        }
        pending.extend(parts.into_iter().rev());
    }
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    let mut pending = Vec::new();
    push_components(&mut pending, &path, &mut out);
    let mut links = 0;
    while let Some(part) = pending.pop() {
        if part == "." {
            continue;
        }
        if part == ".." {
            out.pop();
            continue;
        }
        let next = out.join(&part);
        let is_link = std::fs::symlink_metadata(&next).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && links < MAX_LINKS {
            if let Ok(target) = std::fs::read_link(&next) {
                links += 1;
                // A relative target starts from the link's directory (`out`).
                push_components(&mut pending, &target, &mut out);
                continue;
            }
        }
        out = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn resolve_follows_dangling_links_and_chains_and_stops_at_loops() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let wt = root.join("wt/42");
        std::fs::create_dir_all(&wt).unwrap();
        // A link to a file that does not exist yet, through a relative chain.
        std::os::unix::fs::symlink("../wt/42/new.rs", root.join("wt/first")).unwrap();
        std::fs::create_dir(root.join("here")).unwrap();
        std::os::unix::fs::symlink("../wt/first", root.join("here/notes.md")).unwrap();
        assert_eq!(resolve(&root.join("here/notes.md")), wt.join("new.rs"));
        // A dangling link whose target's directory is itself a link.
        std::os::unix::fs::symlink(&wt, root.join("wt-link")).unwrap();
        std::os::unix::fs::symlink(root.join("wt-link/missing/x.rs"), root.join("here/x")).unwrap();
        assert_eq!(resolve(&root.join("here/x")), wt.join("missing/x.rs"));
        // A loop ends.
        std::os::unix::fs::symlink("loop-b", root.join("loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", root.join("loop-b")).unwrap();
        let _ = resolve(&root.join("loop-a/x"));
    }
}
