//! `jkz gc`: retention for the state directory. What goes:
//!
//! | what | rule |
//! |---|---|
//! | `pre-compact-*.json` snapshots | older than 7 days, except the newest 20 (always kept) |
//! | `context-offload/*` (offloaded sections, full outputs) | not used or referenced for 7 days |
//! | `context-offload/<64 hex digits>.txt` (deliberation responses) | never: the audit trail |
//! | `session-snapshots/<id>.json` | not written for 30 days (an orphan: its chat is over), except the newest snapshot |
//! | `.*.tmp` in `state/`, `context-offload/`, `session-snapshots/` | older than 10 minutes (left by a killed writer), and not locked by a writer that still has it open |
//! | `pipeline/.<N>.json.<random>.tmp` | older than 10 minutes: what a killed `jkz state set` leaves |
//! | `tool-output.jsonl`, `tool-output.1.jsonl` | never: the savings ledger's writer bounds it (rotated at 8 MiB, two files at most; see `tool_output::ledger`) |
//! | `locks/<kind>-<name>.json` | past its TTL, or its holder's pid gone on this host; a held lock never |
//! | `.*.tmp` in `circuit/`, `locks/` | older than 10 minutes, and not locked by its writer |
//! | chats in the registry (`chat.db`, or the team's) | holding no claim, and their client exited on this host (or, with no process recorded, such as a pipeline script's session, silent for 5 minutes): see `registry::prune` |
//!
//! Age is the file's modification time. An offloaded file is *used* while it
//! was read or written within 7 days (access or modification time; a
//! compress that finds the content already offloaded refreshes both, so a
//! reused file counts as used; Linux `relatime` updates the access time of a
//! read at least daily, which is enough at this scale) and *referenced* while
//! its file name appears in a state file written within 7 days (a snapshot,
//! a pipeline file, a deliberation record). The reference scan is one
//! streaming pass over those files that collects the idle names it finds:
//! memory is one buffer and the names, whatever the files weigh. Compressed
//! documents outside `state/` are not scanned: `touch` an offloaded file, or
//! restore the document, to keep it longer.
//!
//! A file is removed only as it was judged: a writer may change it between
//! the judgement and the removal, and its change must survive. A session
//! record is re-checked and removed under its writers' lock; any other file
//! is first moved aside (a rename, so no writer can reach it by name any
//! more), checked, and put back if it changed. A removed session snapshot
//! takes its lock file (`.<name>.lock`) with it, under that lock.
//!
//! Nothing in `state/deliberations/` is ever touched, nor an offloaded
//! response (`context-offload/<sha256>.txt`, whatever its age): they are
//! the audit trail. A response is known by its name alone, so it is kept
//! even when the records that name it cannot be read. Nothing in `state/pipeline/` is removed
//! but the temp files of jkz's own pipeline writer (removed under the
//! pipeline file's lock, so never one a writer is still at).

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::exit::{Failure, EXIT_FAILED, EXIT_OK};
use crate::json_file::lock_path;
use crate::state_dir::layout::{is_snapshot_name, CIRCUIT_DIR, LOCKS_DIR};
use crate::state_dir::retention::{
    expired_pre_compact, older_than, OFFLOAD_MAX_IDLE, SESSION_MAX_AGE, TEMP_MAX_AGE,
};
use crate::state_dir::StateDir;
use crate::terminal_text::inert;

/// How long gc waits for a writer's lock before it leaves the file alone
/// (a writer holds it for milliseconds).
const LOCK_WAIT: Duration = Duration::from_secs(2);
/// The reference scan reads this much at a time.
const SCAN_CHUNK: usize = 1 << 20;

/// `jkz gc`: remove state past its retention.
#[derive(clap::Args, Debug, Clone)]
pub struct GcArgs {
    /// List what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print one JSON object instead of lines: state_dir, dry_run, removed
    /// (each file's path, bytes and why), files and freed_bytes.
    #[arg(long)]
    pub json: bool,
}

/// What `jkz gc --json` prints.
#[derive(Debug, serde::Serialize)]
struct GcReport {
    state_dir: PathBuf,
    dry_run: bool,
    /// Each file removed (or, with `--dry-run`, that would be).
    removed: Vec<GcRemoved>,
    files: u64,
    freed_bytes: u64,
    /// The registry's chats forgotten (or that would be).
    forgotten_chats: Vec<GcForgotten>,
}

#[derive(Debug, serde::Serialize)]
struct GcForgotten {
    session_id: String,
    why: String,
}

#[derive(Debug, serde::Serialize)]
struct GcRemoved {
    path: PathBuf,
    bytes: u64,
    why: &'static str,
}

/// One file chosen for removal, with what it was when judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doomed {
    pub path: PathBuf,
    pub bytes: u64,
    pub why: &'static str,
    /// The file as judged: removed only while it is still this.
    pub judged: Stamp,
    pub guard: Guard,
}

/// What a file was when judged: the same inode, size and times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: SystemTime,
    accessed: SystemTime,
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified,
            accessed: meta.accessed().unwrap_or(modified),
        }
    }
}

/// How a removal is kept from racing a writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guard {
    /// Re-checked and removed under the lock of this file (the writers'
    /// lock of a session record, of a pipeline file).
    LockOf(PathBuf),
    /// The lock file of a session record: removed, under itself, only once
    /// the record is gone.
    LockFileOf(PathBuf),
    /// No writers' lock: moved aside, checked, put back if changed.
    MoveAside,
}

struct Entry {
    path: PathBuf,
    name: String,
    stamp: Stamp,
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
        out.push(Entry {
            path: e.path(),
            name: e.file_name().to_string_lossy().into_owned(),
            stamp: Stamp::of(&meta),
        });
    }
    out
}

fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(crate::atomic::TEMP_SUFFIX)
}

/// The pipeline file whose writer left the temp file `name` (jkz's atomic
/// writes name theirs `.<file>.<random>.tmp`), if it is one.
fn pipeline_temp_target(name: &str) -> Option<&str> {
    let inner = name
        .strip_prefix('.')?
        .strip_suffix(crate::atomic::TEMP_SUFFIX)?;
    let (file, random) = inner.rsplit_once('.')?;
    let valid = crate::pipeline::issue_of_file_name(file).is_some()
        && !random.is_empty()
        && random.bytes().all(|b| b.is_ascii_alphanumeric());
    valid.then_some(file)
}

fn doomed(e: Entry, why: &'static str, guard: Guard) -> Doomed {
    Doomed {
        path: e.path,
        bytes: e.stamp.len,
        why,
        judged: e.stamp,
        guard,
    }
}

/// Decides what retention removes from `state` at time `now`.
pub fn plan(state: &Path, now: SystemTime) -> Vec<Doomed> {
    let mut out = Vec::new();

    // Pre-compact snapshots: the retention table's rule, shared with the hook.
    let snaps = entries(state)
        .into_iter()
        .filter(|e| is_snapshot_name(&e.name))
        .map(|e| {
            let (name, modified) = (e.name.clone(), e.stamp.modified);
            (e, name, modified)
        })
        .collect();
    for e in expired_pre_compact(snaps, now) {
        out.push(doomed(
            e,
            "pre-compact snapshot older than 7 days",
            Guard::MoveAside,
        ));
    }

    // Session snapshots: not written for 30 days; the newest always stays.
    let sessions_dir = state.join(crate::state_dir::layout::SESSION_RECORD_DIR);
    let mut sessions: Vec<Entry> = entries(&sessions_dir)
        .into_iter()
        .filter(|e| !e.name.starts_with('.') && e.name.ends_with(".json"))
        .collect();
    sessions.sort_by_key(|e| std::cmp::Reverse(e.stamp.modified));
    for e in sessions.into_iter().skip(1) {
        if older_than(now, e.stamp.modified, SESSION_MAX_AGE) {
            let record = e.path.clone();
            let lock = lock_path(&record);
            out.push(doomed(
                e,
                "session snapshot not written for 30 days",
                Guard::LockOf(record.clone()),
            ));
            if let Ok(meta) = fs::symlink_metadata(&lock) {
                if meta.is_file() {
                    out.push(Doomed {
                        path: lock,
                        bytes: meta.len(),
                        why: "lock of a removed session snapshot",
                        judged: Stamp::of(&meta),
                        guard: Guard::LockFileOf(record),
                    });
                }
            }
        }
    }

    // Offloaded content: idle by its own times, then not named by a recent
    // state file.
    let offload_dir = state.join(crate::state_dir::layout::OFFLOAD_DIR);
    let idle: Vec<Entry> = entries(&offload_dir)
        .into_iter()
        .filter(|e| !is_temp(&e.name) && !is_response_name(&e.name))
        .filter(|e| {
            older_than(now, e.stamp.modified, OFFLOAD_MAX_IDLE)
                && older_than(now, e.stamp.accessed, OFFLOAD_MAX_IDLE)
        })
        .collect();
    if !idle.is_empty() {
        let names: Vec<&[u8]> = idle.iter().map(|e| e.name.as_bytes()).collect();
        let mut scan = ReferenceScan::new(&names);
        scan_recent_state(state, &offload_dir, now, &mut scan);
        let referenced: HashSet<Vec<u8>> = scan.found().map(<[u8]>::to_vec).collect();
        for e in idle {
            if !referenced.contains(e.name.as_bytes()) {
                out.push(doomed(
                    e,
                    "offloaded content not used or referenced for 7 days",
                    Guard::MoveAside,
                ));
            }
        }
    }

    // Temp files of killed writers: in the state directory and jkz's own
    // subdirectories; in `pipeline/` only those of jkz's pipeline writer;
    // anything else is not jkz's to clean.
    let temp_dirs = [
        state.to_path_buf(),
        offload_dir,
        sessions_dir,
        state.join(CIRCUIT_DIR),
        state.join(LOCKS_DIR),
        state.join(crate::state_dir::layout::PIPELINE_DIR),
    ];
    for (i, dir) in temp_dirs.iter().enumerate() {
        let in_pipeline = i == temp_dirs.len() - 1;
        for e in entries(dir) {
            if !is_temp(&e.name) || !older_than(now, e.stamp.modified, TEMP_MAX_AGE) {
                continue;
            }
            let guard = match in_pipeline {
                false => Guard::MoveAside,
                true => match pipeline_temp_target(&e.name) {
                    Some(file) => Guard::LockOf(dir.join(file)),
                    None => continue,
                },
            };
            out.push(doomed(
                e,
                "temp file of an interrupted write, older than 10 minutes",
                guard,
            ));
        }
    }

    // Locks past their TTL, or whose holder is gone: re-checked under the
    // lock's own writers' lock, so a lock renewed meanwhile stays.
    let now_utc = chrono::DateTime::<chrono::Utc>::from(now);
    for e in entries(&state.join(LOCKS_DIR)) {
        if e.name.starts_with('.') || !e.name.ends_with(".json") {
            continue;
        }
        let Ok(Some(record)) = crate::lock::read(&e.path) else {
            continue;
        };
        let why = match record.state(now_utc) {
            crate::lock::LockState::Held => continue,
            crate::lock::LockState::Expired => "lock past its TTL",
            crate::lock::LockState::OwnerGone => "lock whose holder is gone",
        };
        let path = e.path.clone();
        out.push(doomed(e, why, Guard::LockOf(path)));
    }
    out
}

/// A deliberation response's name, `<sha256 in lowercase hex>.txt` (see
/// `truncate::full_output::Keeper`): the audit trail, never removed.
fn is_response_name(name: &str) -> bool {
    name.strip_suffix(".txt").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Feeds every regular state file written within the offload idle time,
/// outside `skip`, to `scan`, stopping once every name is found.
fn scan_recent_state(state: &Path, skip: &Path, now: SystemTime, scan: &mut ReferenceScan) {
    let mut buf = Vec::new();
    let mut dirs = vec![state.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
            if scan.all_found() {
                return;
            }
            let path = e.path();
            // Not followed: a link is neither a directory nor a file here.
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
            if let Ok(file) = crate::state_dir::open_state_file(&path) {
                // A file that fails midway counted for what was read.
                let _ = scan.feed(file, SCAN_CHUNK, &mut buf);
            }
        }
    }
}

/// Which of a set of names occur in streamed text: one pass, memory one
/// chunk plus the names, however much text goes through.
///
/// Names are grouped by their last bytes (up to three, e.g. `.md`); each
/// group's key is searched with `memmem`, and where it ends, the text just
/// before is looked up among that group's names of each length. Chunks
/// overlap by the longest name less one byte, so a name across two reads is
/// found.
pub struct ReferenceScan {
    groups: Vec<(memchr::memmem::Finder<'static>, Vec<usize>)>,
    names: HashSet<Vec<u8>>,
    found: HashSet<Vec<u8>>,
    longest: usize,
}

impl ReferenceScan {
    pub fn new(names: &[&[u8]]) -> ReferenceScan {
        let mut keys: Vec<(Vec<u8>, Vec<usize>)> = Vec::new();
        let mut set = HashSet::new();
        for name in names.iter().filter(|n| !n.is_empty()) {
            let key = name[name.len().saturating_sub(3)..].to_vec();
            match keys.iter_mut().find(|(k, _)| *k == key) {
                Some((_, lens)) if lens.contains(&name.len()) => {}
                Some((_, lens)) => lens.push(name.len()),
                None => keys.push((key, vec![name.len()])),
            }
            set.insert(name.to_vec());
        }
        ReferenceScan {
            groups: keys
                .into_iter()
                .map(|(k, lens)| (memchr::memmem::Finder::new(&k).into_owned(), lens))
                .collect(),
            longest: set.iter().map(Vec::len).max().unwrap_or(0),
            names: set,
            found: HashSet::new(),
        }
    }

    /// True once every name was found (nothing left to look for).
    pub fn all_found(&self) -> bool {
        self.found.len() == self.names.len()
    }

    /// The names found so far.
    pub fn found(&self) -> impl Iterator<Item = &[u8]> {
        self.found.iter().map(Vec::as_slice)
    }

    /// Scans everything `input` yields, `chunk` bytes at a time, in `buf`.
    pub fn feed(
        &mut self,
        mut input: impl Read,
        chunk: usize,
        buf: &mut Vec<u8>,
    ) -> io::Result<()> {
        let chunk = chunk.max(1);
        buf.clear();
        loop {
            let kept = buf.len();
            buf.resize(kept + chunk, 0);
            let n = match input.read(&mut buf[kept..]) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    buf.truncate(kept);
                    continue;
                }
                Err(e) => {
                    buf.truncate(kept);
                    return Err(e);
                }
            };
            buf.truncate(kept + n);
            if n == 0 {
                return Ok(());
            }
            self.search(buf, kept);
            if self.all_found() {
                return Ok(());
            }
            // Keep the tail a name across this read and the next needs.
            let keep = self.longest.saturating_sub(1).min(buf.len());
            buf.drain(..buf.len() - keep);
        }
    }

    /// Looks for names in `text` that end past `old` (the bytes before it
    /// were searched already).
    fn search(&mut self, text: &[u8], old: usize) {
        for (finder, lens) in &self.groups {
            let key = finder.needle().len();
            // Every occurrence, overlapping ones too (`find_iter` skips
            // those: in `bbbb`, the key `bbb` ends at two places).
            let mut from = old.saturating_sub(key - 1);
            while let Some(at) = finder.find(&text[from..]) {
                let end = from + at + key;
                from += at + 1;
                for &len in lens {
                    if let Some(name) = end.checked_sub(len).map(|start| &text[start..end]) {
                        if !self.found.contains(name) && self.names.contains(name) {
                            self.found.insert(name.to_vec());
                        }
                    }
                }
            }
        }
    }
}

/// Removes `d` if it is still as it was judged. Returns whether it was
/// removed (false: gone already, or changed since, so kept).
pub fn remove_judged(d: &Doomed) -> io::Result<bool> {
    match &d.guard {
        Guard::LockOf(data) => {
            // A lock file gc has to create to take the lock goes again.
            let lock_file = lock_path(data);
            let created = fs::symlink_metadata(&lock_file).is_err();
            let Ok(lock) = crate::json_file::lock_within(data, LOCK_WAIT) else {
                return Ok(false); // a writer is at it: in use
            };
            let removed = match is_unchanged(&d.path, &d.judged)? {
                true => remove_if_there(&d.path)?,
                false => false,
            };
            if created {
                // Held, so safe to remove (see `Guard::LockFileOf`).
                let _ = fs::remove_file(&lock_file);
            }
            drop(lock);
            Ok(removed)
        }
        Guard::LockFileOf(record) => {
            let Ok(_lock) = crate::json_file::lock_within(record, LOCK_WAIT) else {
                return Ok(false);
            };
            // Kept with a record that was kept (or written again since).
            if fs::symlink_metadata(record).is_ok() {
                return Ok(false);
            }
            // Writers check, once they hold a lock, that its file is still
            // the one named, so removing it while held cannot give two
            // writers the lock at once.
            remove_if_there(&d.path)
        }
        Guard::MoveAside => {
            let aside = aside_path(&d.path);
            match fs::rename(&d.path, &aside) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(e),
            }
            // Nobody reaches it by its name now: what it is, it stays. A
            // temp file whose writer still has it open (and so its lock,
            // see `atomic::create_temp`) is in use, however old.
            let temp = is_temp(&d.path.file_name().unwrap_or_default().to_string_lossy());
            let lock = if temp { take_lock(&aside)? } else { None };
            let in_use = temp && lock.is_none();
            if !in_use && is_unchanged(&aside, &d.judged)? {
                fs::remove_file(&aside)?;
                return Ok(true);
            }
            drop(lock);
            // Changed after it was judged: back in place, unless a new one
            // was written there meanwhile (it is then the newer).
            match fs::hard_link(&aside, &d.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(_) => return fs::rename(&aside, &d.path).map(|()| false),
            }
            fs::remove_file(&aside)?;
            Ok(false)
        }
    }
}

/// The name a file is moved aside to: a temp file's (so a gc killed before
/// it finishes leaves debris the next one removes), unique to this process.
fn aside_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.gc{}{}",
        std::process::id(),
        crate::atomic::TEMP_SUFFIX
    ))
}

/// The temp file at `path`, its lock taken by gc; `None` while its writer
/// holds the lock (or when the file is gone).
fn take_lock(path: &Path) -> io::Result<Option<fs::File>> {
    let file = match crate::state_dir::open_state_file(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(fs::TryLockError::WouldBlock) => Ok(None),
        Err(fs::TryLockError::Error(e)) => Err(e),
    }
}

fn is_unchanged(path: &Path, judged: &Stamp) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(meta.is_file() && Stamp::of(&meta) == *judged),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

fn remove_if_there(path: &Path) -> io::Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
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
    // A file's name in the state directory is shown, never obeyed.
    let say = |out: &mut dyn Write, line: std::fmt::Arguments| {
        writeln!(out, "{}", inert(&line.to_string()))
            .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))
    };
    if state.is_absent() {
        return Err(Failure::new(
            crate::exit::EXIT_NO_STATE_DIR,
            state.missing(),
        ));
    }
    if !state.exists() {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{} is not a directory: nothing to collect (move it away, or name another state directory)",
                state.path().display()
            ),
        ));
    }
    let doomed = plan(state.path(), SystemTime::now());
    let mut freed = 0;
    let mut removed = 0;
    let mut listed = Vec::new();
    for d in &doomed {
        if !args.dry_run {
            match remove_judged(d) {
                Ok(true) => {}
                // Gone already (another gc, the owner), or changed since it
                // was judged: kept.
                Ok(false) => continue,
                Err(e) => {
                    return Err(Failure::io(
                        EXIT_FAILED,
                        format!("removing {}", d.path.display()),
                        e,
                    ));
                }
            }
        }
        let verb = if args.dry_run {
            "would remove"
        } else {
            "removed"
        };
        if args.json {
            listed.push(GcRemoved {
                path: d.path.clone(),
                bytes: d.bytes,
                why: d.why,
            });
        } else {
            say(
                out,
                format_args!(
                    "{verb} {} ({}; {})",
                    d.path.display(),
                    human(d.bytes),
                    d.why
                ),
            )?;
        }
        freed += d.bytes;
        removed += 1;
    }
    // The registry's chats that will never be heard from again.
    let mut forgotten = Vec::new();
    if crate::registry::backend::may_hold_claims(state.path()) {
        match crate::registry::prune::prune(state.path(), args.dry_run, crate::clock::now()) {
            Ok((pruned, note)) => {
                if let Some(note) = note {
                    eprintln!("jkz gc: {note}");
                }
                forgotten = pruned;
            }
            Err(e) => eprintln!("jkz gc: the registry's chats were not pruned: {e}"),
        }
    }
    if args.json {
        let report = GcReport {
            state_dir: state.path().to_path_buf(),
            dry_run: args.dry_run,
            removed: listed,
            files: removed,
            freed_bytes: freed,
            forgotten_chats: forgotten
                .iter()
                .map(|p| GcForgotten {
                    session_id: p.session_id.clone(),
                    why: p.why.clone(),
                })
                .collect(),
        };
        crate::json_output::write(out, &report)
            .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
        return Ok(EXIT_OK);
    }
    let verb = if args.dry_run {
        "would forget"
    } else {
        "forgot"
    };
    for p in &forgotten {
        say(
            out,
            format_args!("{verb} chat {} in the registry ({})", p.session_id, p.why),
        )?;
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
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
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

    #[test]
    fn temp_files_only_where_jkz_writes_them() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let now = SystemTime::now();
        let hour = Duration::from_secs(3600);
        for rel in [
            "pipeline/.7.json.Ab12Cd.tmp",
            "pipeline/.notes.md.Ab12Cd.tmp",
            "pipeline/.7-compact-plan.md.Ab12Cd.tmp",
            "deliberations/.r.json.Ab12Cd.tmp",
            "deliberations/.7.json.Ab12Cd.tmp",
            "elsewhere/.x.json.Ab12Cd.tmp",
            "context-offload/.a.md.Ab12Cd.tmp",
        ] {
            file(&s.join(rel), hour, now);
        }
        let doomed = plan(s, now);
        assert_eq!(
            names(&doomed, s),
            [
                "context-offload/.a.md.Ab12Cd.tmp",
                "pipeline/.7.json.Ab12Cd.tmp"
            ]
        );
        let pipeline_temp = doomed
            .iter()
            .find(|d| d.path.ends_with("pipeline/.7.json.Ab12Cd.tmp"));
        assert_eq!(
            pipeline_temp.unwrap().guard,
            Guard::LockOf(s.join("pipeline/7.json"))
        );
        // Under its pipeline file's lock: a writer at work keeps it.
        let held = crate::json_file::lock(&s.join("pipeline/7.json")).unwrap();
        let started = std::time::Instant::now();
        assert!(!remove_judged(pipeline_temp.unwrap()).unwrap());
        assert!(started.elapsed() >= LOCK_WAIT);
        drop(held);
        assert!(remove_judged(pipeline_temp.unwrap()).unwrap());
    }

    /// Whatever guards it, a file changed after it was judged stays; one
    /// that did not change goes.
    #[test]
    fn a_file_changed_after_it_was_judged_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let now = SystemTime::now();
        file(&s.join("session-snapshots/old.json"), DAY * 31, now);
        file(&s.join("session-snapshots/.old.json.lock"), DAY * 31, now);
        file(&s.join("session-snapshots/new.json"), DAY, now);
        file(&s.join("context-offload/aaaa.md"), DAY * 8, now);
        file(&s.join(".pre-compact-1.json.q.tmp"), DAY, now);
        let doomed = plan(s, now);
        assert_eq!(doomed.len(), 4, "{doomed:?}");
        // Each changed after the judgement, the way its writer changes it:
        // the record saved again, the offload reused (touched), the temp
        // file written to.
        crate::atomic::write_atomic(&s.join("session-snapshots/old.json"), b"{\"saved\":1}")
            .unwrap();
        fs::File::options()
            .write(true)
            .open(s.join("context-offload/aaaa.md"))
            .unwrap()
            .set_times(FileTimes::new().set_modified(now).set_accessed(now))
            .unwrap();
        fs::write(s.join(".pre-compact-1.json.q.tmp"), b"more").unwrap();
        for d in &doomed {
            assert!(!remove_judged(d).unwrap(), "{} removed", d.path.display());
        }
        assert_eq!(
            fs::read(s.join("session-snapshots/old.json")).unwrap(),
            b"{\"saved\":1}"
        );
        for rel in [
            "session-snapshots/.old.json.lock",
            "context-offload/aaaa.md",
            ".pre-compact-1.json.q.tmp",
        ] {
            assert!(s.join(rel).is_file(), "{rel}");
        }
        // Nothing left aside.
        let aside: Vec<_> = fs::read_dir(s.join("context-offload"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(aside, ["aaaa.md"]);

        // Unchanged: all go, the lock with its record.
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        file(&s.join("session-snapshots/old.json"), DAY * 31, now);
        file(&s.join("session-snapshots/.old.json.lock"), DAY * 31, now);
        file(&s.join("session-snapshots/new.json"), DAY, now);
        file(&s.join("context-offload/aaaa.md"), DAY * 8, now);
        let doomed = plan(s, now);
        for d in &doomed {
            assert!(remove_judged(d).unwrap(), "{} kept", d.path.display());
        }
        assert_eq!(fs::read_dir(s.join("context-offload")).unwrap().count(), 0);
        let left: Vec<_> = fs::read_dir(s.join("session-snapshots"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["new.json"]);
    }

    #[test]
    fn references_past_the_first_mebibytes_count() {
        let tmp = tempfile::tempdir().unwrap();
        let s = tmp.path();
        let now = SystemTime::now();
        let name = format!("{}.md", "ab".repeat(32));
        file(&s.join("context-offload").join(&name), DAY * 8, now);
        let mut text = vec![b' '; 5 << 20];
        text.extend_from_slice(format!("context-offload/{name}").as_bytes());
        fs::write(s.join("pre-compact-x.json"), &text).unwrap();
        assert!(plan(s, now).is_empty());
    }

    /// The naive oracle: which names occur anywhere in the text.
    fn naive(text: &[u8], names: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut found: Vec<Vec<u8>> = names
            .iter()
            .filter(|n| !n.is_empty() && text.windows(n.len()).any(|w| w == &n[..]))
            .cloned()
            .collect();
        found.sort();
        found.dedup();
        found
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        #[test]
        fn the_streaming_scan_finds_what_a_naive_search_finds(
            text in proptest::collection::vec(proptest::sample::select(b"ab.md".to_vec()), 0..300),
            names in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(b"ab.md".to_vec()), 1..8),
                1..6,
            ),
            chunk in 1usize..40,
        ) {
            let refs: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
            let mut scan = ReferenceScan::new(&refs);
            let mut buf = Vec::new();
            scan.feed(&text[..], chunk, &mut buf).unwrap();
            let mut got: Vec<Vec<u8>> = scan.found().map(<[u8]>::to_vec).collect();
            got.sort();
            proptest::prop_assert_eq!(got, naive(&text, &names));
            proptest::prop_assert!(buf.capacity() <= chunk + 8 + 64);
        }
    }
}
