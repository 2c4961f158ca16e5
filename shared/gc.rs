//! `jkz gc`: retention for the state directory. What goes:
//!
//! | what | rule |
//! |---|---|
//! | `pre-compact-*.json` snapshots | older than 7 days, except the newest 20 (always kept) |
//! | `context-offload/*` (offloaded sections, full outputs) | not referenced for 7 days |
//! | `session-snapshots/<id>.json` | not written for 30 days (an orphan: its chat is over), except the newest snapshot |
//! | `.*.tmp` anywhere in `state/` | older than 10 minutes (left by a killed writer) |
//!
//! Age is the file's modification time. An offloaded file is *referenced*
//! while it was read or written within 7 days (access or modification time;
//! Linux `relatime` updates the access time at least daily, which is enough
//! at this scale) or while its file name appears in a state file written
//! within 7 days (a snapshot, a pipeline file, a deliberation record).
//! Compressed documents outside `state/` are not scanned: `touch` an
//! offloaded file, or restore the document, to keep it longer.
//!
//! A removed session snapshot takes its lock file (`.<name>.lock`) with it.
//! `state/pipeline/` and `state/deliberations/` are never touched.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::cli::Failure;
use crate::json_file::lock_path;
use crate::state_dir::StateDir;

/// Pre-compact snapshots younger than this are kept.
pub const PRE_COMPACT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// The newest pre-compact snapshots kept whatever their age.
pub const PRE_COMPACT_KEEP_NEWEST: usize = 20;
/// Offloaded content referenced within this is kept.
pub const OFFLOAD_MAX_IDLE: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// Session snapshots written within this are kept.
pub const SESSION_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// Temp files younger than this may belong to a writer still at work.
pub const TEMP_MAX_AGE: Duration = Duration::from_secs(10 * 60);
/// How much of each recent state file the reference scan reads.
const SCAN_LIMIT: u64 = 4 << 20;

/// `jkz gc`: remove state past its retention.
#[derive(clap::Args, Debug, Clone)]
pub struct GcArgs {
    /// List what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// One file chosen for removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doomed {
    pub path: PathBuf,
    pub bytes: u64,
    pub why: &'static str,
}

struct Entry {
    path: PathBuf,
    name: String,
    bytes: u64,
    modified: SystemTime,
    accessed: SystemTime,
}

/// The regular files in `dir`. A `dir` that is a symbolic link yields none:
/// gc removes files, and must never remove them outside the state directory.
fn entries(dir: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    if !crate::state_dir::is_real_dir(dir).unwrap_or(false) {
        return out;
    }
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = e.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        out.push(Entry {
            path: e.path(),
            name: e.file_name().to_string_lossy().into_owned(),
            bytes: meta.len(),
            modified,
            accessed: meta.accessed().unwrap_or(modified),
        });
    }
    out
}

fn older_than(now: SystemTime, t: SystemTime, age: Duration) -> bool {
    now.duration_since(t).is_ok_and(|d| d > age)
}

fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(crate::atomic::TEMP_SUFFIX)
}

/// Decides what retention removes from `state` at time `now`.
pub fn plan(state: &Path, now: SystemTime) -> Vec<Doomed> {
    let mut doomed = Vec::new();

    // Pre-compact snapshots: newest first, the first 20 kept regardless.
    let mut snaps: Vec<Entry> = entries(state)
        .into_iter()
        .filter(|e| crate::compaction::is_snapshot_name(&e.name))
        .collect();
    snaps.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.name.cmp(&a.name)));
    for e in snaps.into_iter().skip(PRE_COMPACT_KEEP_NEWEST) {
        if older_than(now, e.modified, PRE_COMPACT_MAX_AGE) {
            doomed.push(Doomed {
                path: e.path,
                bytes: e.bytes,
                why: "pre-compact snapshot older than 7 days",
            });
        }
    }

    // Session snapshots: not written for 30 days; the newest always stays.
    let sessions_dir = state.join(crate::session_snapshot::SESSION_SNAPSHOT_DIR);
    let mut sessions: Vec<Entry> = entries(&sessions_dir)
        .into_iter()
        .filter(|e| !e.name.starts_with('.') && e.name.ends_with(".json"))
        .collect();
    sessions.sort_by_key(|e| std::cmp::Reverse(e.modified));
    for e in sessions.into_iter().skip(1) {
        if older_than(now, e.modified, SESSION_MAX_AGE) {
            let lock = lock_path(&e.path);
            doomed.push(Doomed {
                path: e.path,
                bytes: e.bytes,
                why: "session snapshot not written for 30 days",
            });
            if let Ok(meta) = fs::metadata(&lock) {
                doomed.push(Doomed {
                    path: lock,
                    bytes: meta.len(),
                    why: "lock of a removed session snapshot",
                });
            }
        }
    }

    // Offloaded content: idle by its own times, then not named by a recent
    // state file.
    let offload_dir = state.join(crate::compress::OFFLOAD_DIR);
    let idle: Vec<Entry> = entries(&offload_dir)
        .into_iter()
        .filter(|e| !is_temp(&e.name))
        .filter(|e| {
            older_than(now, e.modified, OFFLOAD_MAX_IDLE)
                && older_than(now, e.accessed, OFFLOAD_MAX_IDLE)
        })
        .collect();
    if !idle.is_empty() {
        let texts = recent_state_texts(state, &offload_dir, now);
        for e in idle {
            let finder = memchr::memmem::Finder::new(e.name.as_bytes());
            if texts.iter().any(|t| finder.find(t).is_some()) {
                continue;
            }
            doomed.push(Doomed {
                path: e.path,
                bytes: e.bytes,
                why: "offloaded content not referenced for 7 days",
            });
        }
    }

    // Temp files of killed writers, anywhere below the state directory.
    let mut dirs = vec![state.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                dirs.push(e.path());
            } else if meta.is_file()
                && is_temp(&e.file_name().to_string_lossy())
                && older_than(now, meta.modified().unwrap_or(now), TEMP_MAX_AGE)
            {
                doomed.push(Doomed {
                    path: e.path(),
                    bytes: meta.len(),
                    why: "temp file of an interrupted write, older than 10 minutes",
                });
            }
        }
    }
    doomed
}

/// The first [`SCAN_LIMIT`] bytes of every state file written within the
/// offload idle time, outside `skip`.
fn recent_state_texts(state: &Path, skip: &Path, now: SystemTime) -> Vec<Vec<u8>> {
    let mut texts = Vec::new();
    let mut dirs = vec![state.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                if path != skip {
                    dirs.push(path);
                }
                continue;
            }
            let recent = meta
                .modified()
                .is_ok_and(|m| !older_than(now, m, OFFLOAD_MAX_IDLE));
            if !meta.is_file() || !recent || is_temp(&e.file_name().to_string_lossy()) {
                continue;
            }
            let mut text = Vec::new();
            if fs::File::open(&path)
                .and_then(|f| f.take(SCAN_LIMIT).read_to_end(&mut text))
                .is_ok()
            {
                texts.push(text);
            }
        }
    }
    texts
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

/// Runs `jkz gc` on the resolved state directory; prints each file removed
/// (or, with `--dry-run`, that would be) and the total freed.
pub fn gc(args: &GcArgs, state: &StateDir, out: &mut impl Write) -> Result<u8, Failure> {
    let say = |out: &mut dyn Write, line: std::fmt::Arguments| {
        writeln!(out, "{line}").map_err(|e| Failure::io(1, "writing stdout", e))
    };
    if state.path().exists() && !state.exists() {
        return Err(Failure::new(
            1,
            format!(
                "{} is not a directory: nothing to collect (move it away, or name another state directory)",
                state.path().display()
            ),
        ));
    }
    if !state.exists() {
        say(
            out,
            format_args!(
                "no state directory at {}; nothing to collect",
                state.path().display()
            ),
        )?;
        return Ok(0);
    }
    let doomed = plan(state.path(), SystemTime::now());
    let mut freed = 0;
    let mut removed = 0;
    for d in &doomed {
        if !args.dry_run {
            match fs::remove_file(&d.path) {
                Ok(()) => {}
                // Another gc, or the owner, got there first.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(Failure::io(1, format!("removing {}", d.path.display()), e));
                }
            }
        }
        let verb = if args.dry_run {
            "would remove"
        } else {
            "removed"
        };
        say(
            out,
            format_args!(
                "{verb} {} ({}; {})",
                d.path.display(),
                human(d.bytes),
                d.why
            ),
        )?;
        freed += d.bytes;
        removed += 1;
    }
    let verb = if args.dry_run { "would free" } else { "freed" };
    say(
        out,
        format_args!(
            "{verb} {} in {removed} file(s) from {}",
            human(freed),
            state.path().display()
        ),
    )?;
    out.flush()
        .map_err(|e| Failure::io(1, "writing stdout", e))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::FileTimes;

    const DAY: Duration = Duration::from_secs(24 * 60 * 60);

    fn file(path: &Path, age: Duration, now: SystemTime) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, b"x").unwrap();
        let t = now - age;
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_times(FileTimes::new().set_modified(t).set_accessed(t))
            .unwrap();
    }

    fn names(doomed: &[Doomed], state: &Path) -> Vec<String> {
        let mut v: Vec<_> = doomed
            .iter()
            .map(|d| d.path.strip_prefix(state).unwrap().display().to_string())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn pre_compact_keeps_newest_twenty_and_young_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        // 25 old snapshots (ages 8..33 days) and 2 young ones: of the old,
        // the 18 newest fill the keep-20 with the 2 young; 7 go.
        for i in 0..25u64 {
            file(
                &tmp.path().join(format!("pre-compact-{i:02}.json")),
                DAY * (8 + i as u32),
                now,
            );
        }
        file(&tmp.path().join("pre-compact-99-1.json"), DAY, now);
        file(&tmp.path().join("pre-compact-98-2.json"), DAY * 2, now);
        let doomed = plan(tmp.path(), now);
        let expected: Vec<String> = (18..25)
            .map(|i| format!("pre-compact-{i:02}.json"))
            .collect();
        assert_eq!(names(&doomed, tmp.path()), expected);
    }

    #[test]
    fn offload_kept_while_referenced() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let now = SystemTime::now();
        file(&s.join("context-offload/aaaa.md"), DAY * 8, now);
        file(&s.join("context-offload/bbbb.md"), DAY * 8, now);
        file(&s.join("context-offload/cccc.md"), DAY * 2, now);
        fs::create_dir_all(s.join("pipeline")).unwrap();
        fs::write(
            s.join("pipeline/1.json"),
            br#"{"1":{"note":"see context-offload/bbbb.md"}}"#,
        )
        .unwrap();
        // A stale reference does not count.
        file(&s.join("deliberations/old.json"), DAY * 9, now);
        fs::write(s.join("deliberations/old.json"), b"aaaa.md").unwrap();
        let old = now - DAY * 9;
        fs::File::options()
            .write(true)
            .open(s.join("deliberations/old.json"))
            .unwrap()
            .set_times(FileTimes::new().set_modified(old).set_accessed(old))
            .unwrap();
        assert_eq!(names(&plan(s, now), s), ["context-offload/aaaa.md"]);
    }

    #[test]
    fn sessions_temp_files_and_locks() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let now = SystemTime::now();
        file(&s.join("session-snapshots/old.json"), DAY * 31, now);
        file(&s.join("session-snapshots/.old.json.lock"), DAY * 31, now);
        file(&s.join("session-snapshots/older.json"), DAY * 40, now);
        file(
            &s.join("session-snapshots/.x.json.abc.tmp"),
            Duration::from_secs(3600),
            now,
        );
        file(
            &s.join("session-snapshots/.y.json.abc.tmp"),
            Duration::from_secs(60),
            now,
        );
        file(
            &s.join(".pre-compact-1.json.q.tmp"),
            Duration::from_secs(3600),
            now,
        );
        // Everything old: the newest (old.json) stays, so load has something.
        assert_eq!(
            names(&plan(s, now), s),
            [
                ".pre-compact-1.json.q.tmp",
                "session-snapshots/.x.json.abc.tmp",
                "session-snapshots/older.json"
            ]
        );
        file(&s.join("session-snapshots/new.json"), DAY, now);
        assert_eq!(
            names(&plan(s, now), s),
            [
                ".pre-compact-1.json.q.tmp",
                "session-snapshots/.old.json.lock",
                "session-snapshots/.x.json.abc.tmp",
                "session-snapshots/old.json",
                "session-snapshots/older.json"
            ]
        );
    }
}
