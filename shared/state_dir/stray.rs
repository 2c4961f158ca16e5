//! Stray state directories: a `state/` at the top of a checkout whose
//! repository keeps its root elsewhere — a linked worktree's, left by an
//! older jkz (which kept one per worktree); an attached clone's own; a bare
//! repository's worktree's. No tool reads or writes one (the root is found
//! from the repository, [`super::root`]), so what it holds is invisible to
//! every other chat: `jkz doctor` names each one and what it holds
//! ([`find`]), `jkz doctor --fix` moves its files into the root
//! ([`migrate`]).
//!
//! Moving, file by file (links, FIFOs and the like are never followed nor
//! moved, only named):
//! - a file the root lacks is moved there (renamed; copied, synced and
//!   removed across filesystems);
//! - one the root holds with the same bytes is removed from the stray;
//! - one the root holds older (modification time) is replaced by the
//!   stray's, newer one (a rename: the root never holds half a file);
//! - one the root holds newer or as new is kept in the root and left in
//!   the stray, named: nothing newer is ever overwritten;
//! - the registry (`chat.db` and its `-wal`, `-shm`) is left, named: two
//!   registries cannot be merged, and the chats in it register again with
//!   the root's on their next hook;
//! - a writer's temp file (`.*.tmp`) is left: it may still be written;
//! - the stray's settings backup (`settings.json.jkz-backup`, its
//!   checkout's settings before `jkz install`) goes to that checkout's own
//!   backup name in the root ([`super::layout::settings_backup_name`]), so
//!   `jkz uninstall` there finds it.
//!
//! Then the directories left empty are removed, the stray itself too when
//! nothing is left in it.

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::layout::{self, CHAT_DB, SNAPSHOT_PREFIX};
use super::root::Repository;
use crate::git::repository::{linked_worktrees, Main};

/// The most entries looked at in one stray (a report and a mover, not a
/// walker of unbounded trees).
const MAX_ENTRIES: usize = 200_000;

/// A stray state directory and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stray {
    /// The stray `state/`.
    pub dir: PathBuf,
    /// The checkout whose top holds it.
    pub checkout: PathBuf,
    pub holds: Holdings,
}

/// What a state directory holds, for a report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holdings {
    pub files: usize,
    pub bytes: u64,
    /// Files per kind ("pipeline files", "snapshots", …), in a fixed order.
    pub kinds: Vec<(&'static str, usize)>,
    /// Entries that are not regular files or directories (never moved).
    pub others: usize,
}

impl std::fmt::Display for Holdings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.files == 0 && self.others == 0 {
            return f.write_str("nothing but empty directories");
        }
        write!(f, "{} file(s), {} bytes", self.files, self.bytes)?;
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        if !kinds.is_empty() {
            write!(f, ": {}", kinds.join(", "))?;
        }
        if self.others > 0 {
            write!(f, "; {} link(s) or special file(s)", self.others)?;
        }
        Ok(())
    }
}

/// The kind of a file, by its path below a state directory.
fn kind_of(rel: &Path) -> &'static str {
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    match first.as_str() {
        layout::PIPELINE_DIR => "pipeline files",
        layout::SESSION_RECORD_DIR => "session records",
        layout::OFFLOAD_DIR => "offloaded outputs",
        layout::DELIBERATIONS_DIR => "deliberation records",
        layout::CIRCUIT_DIR => "circuits",
        layout::LOCKS_DIR => "locks",
        name if name.starts_with(SNAPSHOT_PREFIX) => "pre-compact snapshots",
        name if name.starts_with(CHAT_DB) => "registry files",
        _ => "other files",
    }
}

const KINDS: [&str; 9] = [
    "pipeline files",
    "pre-compact snapshots",
    "session records",
    "deliberation records",
    "offloaded outputs",
    "circuits",
    "locks",
    "registry files",
    "other files",
];

/// Every regular file below `dir` (relative paths) and the count of other
/// entries; links are not followed.
fn walk(dir: &Path) -> (Vec<(PathBuf, fs::Metadata)>, usize) {
    let mut files = Vec::new();
    let mut others = 0;
    let mut seen = 0;
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        for entry in fs::read_dir(dir.join(&rel)).into_iter().flatten().flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return (files, others);
            }
            let Ok(meta) = entry.metadata() else { continue };
            let rel = rel.join(entry.file_name());
            if meta.is_dir() {
                dirs.push(rel);
            } else if meta.is_file() {
                files.push((rel, meta));
            } else {
                others += 1;
            }
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    (files, others)
}

/// What `dir` holds.
pub fn holdings(dir: &Path) -> Holdings {
    let (files, others) = walk(dir);
    let mut kinds: Vec<(&'static str, usize)> = KINDS.iter().map(|k| (*k, 0)).collect();
    for (rel, _) in &files {
        let kind = kind_of(rel);
        if let Some(slot) = kinds.iter_mut().find(|(k, _)| *k == kind) {
            slot.1 += 1;
        }
    }
    Holdings {
        files: files.len(),
        bytes: files.iter().map(|(_, m)| m.len()).sum(),
        kinds,
        others,
    }
}

/// The stray state directories of `repository` whose root is `root`: a
/// real directory `state/` at the top of one of its checkouts (its linked
/// worktrees, the checkout it was found from, its main checkout) that is
/// not the root itself.
pub fn find(repository: &Repository, root: &Path) -> Vec<Stray> {
    let mut tops = linked_worktrees(&repository.common);
    if let Some(c) = &repository.checkout {
        tops.push(c.top.clone());
    }
    if let Main::At(main) = &repository.main {
        tops.push(main.clone());
    }
    tops.sort();
    tops.dedup();
    let root_real = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    tops.into_iter()
        .filter_map(|top| {
            let dir = top.join("state");
            let is_dir = fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
            let real = fs::canonicalize(&dir).ok()?;
            (is_dir && real != root_real).then(|| Stray {
                holds: holdings(&dir),
                dir,
                checkout: top,
            })
        })
        .collect()
}

/// What [`migrate`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Migration {
    /// Moved into the root (it had none).
    pub moved: Vec<PathBuf>,
    /// Replaced an older file of the root's.
    pub replaced: Vec<PathBuf>,
    /// The root held the same bytes: removed from the stray.
    pub same: Vec<PathBuf>,
    /// Left in the stray, with why.
    pub left: Vec<(PathBuf, String)>,
    /// The stray is gone (nothing was left in it).
    pub removed: bool,
}

/// Moves the files of the stray `stray` (at the top of `checkout`) into
/// `root`, which must exist (the rules are in the module documentation).
pub fn migrate(stray: &Path, root: &Path, checkout: &Path) -> io::Result<Migration> {
    let mut done = Migration::default();
    let (files, _) = walk(stray);
    for (rel, meta) in files {
        let src = stray.join(&rel);
        let name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with(CHAT_DB) && rel.parent() == Some(Path::new("")) {
            done.left.push((
                rel,
                "a registry is never merged: its chats register again with the root's on their next hook; remove it once no chat uses it".into(),
            ));
            continue;
        }
        if name.starts_with('.') && name.ends_with(crate::atomic::TEMP_SUFFIX) {
            done.left
                .push((rel, "a writer's temp file, maybe still written".into()));
            continue;
        }
        let dest_rel = if rel == Path::new(layout::SETTINGS_BACKUP) {
            PathBuf::from(layout::settings_backup_name(root, checkout))
        } else {
            rel.clone()
        };
        let dest = root.join(&dest_rel);
        match fs::symlink_metadata(&dest) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(parent) = dest_rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                    if let Err(e) = super::StateDir::at(root).ensure_subdir(parent) {
                        done.left.push((
                            rel,
                            format!("its directory cannot be made in the root: {e}"),
                        ));
                        continue;
                    }
                }
                move_file(&src, &dest)?;
                done.moved.push(rel);
            }
            Err(e) => return Err(e),
            Ok(there) if !there.is_file() => {
                done.left
                    .push((rel, format!("{} is not a regular file", dest.display())));
            }
            Ok(there) => {
                if same_bytes(&src, &dest, &meta, &there)? {
                    fs::remove_file(&src)?;
                    done.same.push(rel);
                } else if there.mtime() < meta.mtime()
                    || (there.mtime() == meta.mtime() && there.mtime_nsec() < meta.mtime_nsec())
                {
                    move_file(&src, &dest)?;
                    done.replaced.push(rel);
                } else {
                    done.left
                        .push((rel, format!("{} is newer or as new: kept", dest.display())));
                }
            }
        }
    }
    remove_empty_dirs(stray);
    done.removed = fs::remove_dir(stray).is_ok();
    Ok(done)
}

/// Moves `src` to `dest` (replacing it): a rename, or across filesystems a
/// copy synced under a temp name, renamed into place, then the source
/// removed.
fn move_file(src: &Path, dest: &Path) -> io::Result<()> {
    match fs::rename(src, dest) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(18) => {
            // EXDEV: another filesystem.
            let dir = dest.parent().unwrap_or(Path::new("."));
            let name = dest.file_name().unwrap_or_default();
            let mut tmp = crate::atomic::create_temp(dir, name)?;
            io::copy(&mut File::open(src)?, tmp.as_file_mut())?;
            tmp.as_file().sync_all()?;
            tmp.persist(dest).map_err(|e| e.error)?;
            fs::remove_file(src)
        }
        Err(e) => Err(e),
    }
}

/// True when the two files hold the same bytes.
fn same_bytes(a: &Path, b: &Path, ma: &fs::Metadata, mb: &fs::Metadata) -> io::Result<bool> {
    if ma.len() != mb.len() {
        return Ok(false);
    }
    let (mut fa, mut fb) = (File::open(a)?, File::open(b)?);
    let (mut ba, mut bb) = (vec![0; 64 * 1024], vec![0; 64 * 1024]);
    loop {
        let n = read_full(&mut fa, &mut ba)?;
        let m = read_full(&mut fb, &mut bb)?;
        if n != m || ba[..n] != bb[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(f: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Removes the empty directories below `dir` (deepest first).
fn remove_empty_dirs(dir: &Path) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_empty_dirs(&entry.path());
            let _ = fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn set_mtime(path: &Path, t: SystemTime) {
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    #[test]
    fn migration_moves_keeps_newer_and_replaces_older() {
        let tmp = tempfile::tempdir().unwrap();
        let (stray, root) = (tmp.path().join("wt/state"), tmp.path().join("root"));
        let checkout = tmp.path().join("wt");
        for d in [stray.join("pipeline"), root.join("pipeline")] {
            fs::create_dir_all(d).unwrap();
        }
        let now = SystemTime::now();
        let old = now - Duration::from_secs(3600);
        let w = |p: PathBuf, text: &str, t| {
            fs::write(&p, text).unwrap();
            set_mtime(&p, t);
        };
        w(stray.join("pipeline/1.json"), "stray-new", now);
        w(root.join("pipeline/1.json"), "root-old", old);
        w(stray.join("pipeline/2.json"), "stray-old", old);
        w(root.join("pipeline/2.json"), "root-new", now);
        w(stray.join("pipeline/3.json"), "only-stray", now);
        w(stray.join("pipeline/4.json"), "same", old);
        w(root.join("pipeline/4.json"), "same", now);
        w(stray.join(layout::SETTINGS_BACKUP), "{}", now);
        w(stray.join(CHAT_DB), "db", now);

        let m = migrate(&stray, &root, &checkout).unwrap();
        assert_eq!(
            fs::read_to_string(root.join("pipeline/1.json")).unwrap(),
            "stray-new"
        );
        assert_eq!(
            fs::read_to_string(root.join("pipeline/2.json")).unwrap(),
            "root-new"
        );
        assert_eq!(
            fs::read_to_string(root.join("pipeline/3.json")).unwrap(),
            "only-stray"
        );
        assert_eq!(m.replaced, [PathBuf::from("pipeline/1.json")]);
        assert_eq!(m.same, [PathBuf::from("pipeline/4.json")]);
        let left: Vec<_> = m.left.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(
            left,
            [PathBuf::from(CHAT_DB), PathBuf::from("pipeline/2.json")]
        );
        assert!(stray.join("pipeline/2.json").exists() && !m.removed);
        let backup = root.join(layout::settings_backup_name(&root, &checkout));
        assert_eq!(fs::read_to_string(backup).unwrap(), "{}");
        assert!(!root.join(layout::SETTINGS_BACKUP).exists());
    }

    #[test]
    fn holdings_count_by_kind() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        fs::create_dir_all(s.join("pipeline")).unwrap();
        fs::write(s.join("pipeline/1.json"), "{}").unwrap();
        fs::write(s.join("pre-compact-20250101T000000.000Z-1.json"), "{}").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", s.join("x")).unwrap();
        let h = holdings(s);
        assert_eq!((h.files, h.bytes, h.others), (2, 4, 1));
        let text = h.to_string();
        assert!(
            text.contains("1 pipeline files") && text.contains("1 pre-compact snapshots"),
            "{text}"
        );
    }
}
