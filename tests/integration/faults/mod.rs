//! Fault injection: `kill -9` in the middle of every kind of write, a full
//! disk, and 32 writers at once. After each fault every file under `state/`
//! must parse and be either the old or the new version; the only debris
//! allowed is what `jkz gc` removes (`.*.tmp`) and harmless lock files.
//!
//! Kills land after a random delay drawn from a seeded generator: the seed
//! is printed at the start of each test (shown on failure) and
//! `JKZ_FAULT_SEED=N` replays it. `JKZ_FAULT_ROUNDS=K` multiplies the kill
//! counts for a longer soak.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::util::{bin, scrubbed, Dir};

mod concurrency;
mod disk_full;
mod gc_against_writers;
mod held_lock;
mod kill;

// The harness: seeded kills, surveys of the state directory.

/// SplitMix64: small, seedable, good enough to spread kill delays.
struct Rng(u64);

impl Rng {
    /// Seeded from `JKZ_FAULT_SEED`, else the clock; says which on stderr
    /// (the test harness shows it when the test fails).
    fn from_env(test: &str) -> Rng {
        let seed = std::env::var("JKZ_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{test}: seed {seed} (replay: JKZ_FAULT_SEED={seed} cargo test {test})");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..=max`.
    fn delay(&mut self, max: Duration) -> Duration {
        let micros = max.as_micros() as u64;
        Duration::from_micros(self.next() % (micros + 1))
    }
}

fn rounds() -> usize {
    std::env::var("JKZ_FAULT_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// A command for a jkz binary, its environment scrubbed by the harness,
/// stdout and stderr discarded (a killed child must not block on a pipe).
fn command(name: &str, cwd: &Path) -> Command {
    let mut cmd = scrubbed(bin(name), cwd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Starts `cmd`, feeding `stdin` (small: it must fit the pipe buffer, so a
/// killed child cannot block us).
fn start(mut cmd: Command, stdin: Option<&[u8]>) -> Child {
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("spawn");
    if let Some(bytes) = stdin {
        assert!(bytes.len() < 32 * 1024, "stdin must fit a pipe buffer");
        let mut pipe = child.stdin.take().unwrap();
        let _ = pipe.write_all(bytes);
    }
    child
}

/// What a kill loop saw.
#[derive(Default, Debug)]
struct KillStats {
    /// Runs ended by SIGKILL.
    killed: usize,
    /// Runs that finished before the kill.
    finished: usize,
    /// Kills after which a temp file was left: the kill hit a write.
    mid_write: usize,
}

/// Runs `runs` processes, killing each after a random delay in
/// `0..=window`; `check(i, status)` runs after each one and returns how many temp files
/// are left in all (a kill that adds one hit a write).
///
/// The window starts at one measured run and adapts, so the share of runs
/// that are killed does not depend on how busy the machine is: a run that
/// finished before its kill shrinks it by a fifth, a killed run widens it by
/// a twentieth. That settles near four kills in five, with delays around
/// the moment the writes happen.
fn kill_loop(
    rng: &mut Rng,
    runs: usize,
    window: Duration,
    mut spawn: impl FnMut(usize) -> Child,
    mut check: impl FnMut(usize, ExitStatus) -> usize,
) -> KillStats {
    let mut stats = KillStats::default();
    let mut temps_before = 0;
    let mut window = window;
    for i in 0..runs {
        let delay = rng.delay(window);
        let mut child = spawn(i);
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let status = child.wait().expect("wait");
        if status.signal() == Some(9) {
            stats.killed += 1;
            window = window.mul_f64(1.05);
        } else {
            assert_eq!(status.code(), Some(0), "run {i} failed on its own");
            stats.finished += 1;
            window = window.mul_f64(0.8).max(Duration::from_micros(100));
        }
        let temps = check(i, status);
        if temps > temps_before && status.signal() == Some(9) {
            stats.mid_write += 1;
        }
        temps_before = temps;
    }
    stats
}

/// How long one uninterrupted run takes (the kill window is drawn from it).
fn time_run(child: Child) -> Duration {
    let started = Instant::now();
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "reference run failed: {out:?}");
    started.elapsed()
}

fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

fn is_lock(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".lock")
}

/// Every file below `dir`, recursively.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn name_of(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// Sorts the files under `state` into temp files, lock files and data
/// files; every data file must pass `valid` (which says why not).
fn survey(state: &Path, mut valid: impl FnMut(&Path) -> Result<(), String>) -> usize {
    let mut temps = 0;
    for path in walk(state) {
        let name = name_of(&path);
        if is_temp(&name) {
            temps += 1;
        } else if is_lock(&name) {
            let len = fs::metadata(&path).unwrap().len();
            assert_eq!(len, 0, "lock file {} holds data", path.display());
        } else if path.parent().map(name_of).as_deref() == Some("events") {
            if let Err(why) = valid_event_log_file(&path) {
                panic!("{}: {why}", path.display());
            }
        } else if let Err(why) = valid(&path) {
            panic!("{}: {why}", path.display());
        }
    }
    temps
}

/// A file of the event log (`state/events/`), whatever the writer: a
/// segment is whole lines of events (a writer killed mid-line may leave a
/// torn last line, which readers skip); the index is derived (SQLite).
fn valid_event_log_file(path: &Path) -> Result<(), String> {
    let name = name_of(path);
    if name.starts_with("index.db") {
        return Ok(());
    }
    if !name.ends_with(".jsonl") {
        return Err("unexpected file in the event log".into());
    }
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else {
        return Ok(()); // empty, or one torn line
    };
    for line in bytes[..end].split(|&b| b == b'\n') {
        let v: Value =
            serde_json::from_slice(line).map_err(|e| format!("a line that is not JSON ({e})"))?;
        if !(v["id"].is_string() && v["type"].is_string()) {
            return Err(format!("a line that is not an event: {v}"));
        }
    }
    Ok(())
}

fn parse_json(path: &Path) -> Result<Value, String> {
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("not JSON ({e}), {} bytes", bytes.len()))
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The leftover temp files are exactly what `jkz gc` removes once they are
/// old: young ones stay (a writer may be at work), aged ones go, and gc
/// removes nothing else.
fn gc_cleans_temps(dir: &Dir, state: &Path) -> usize {
    let temps: Vec<PathBuf> = walk(state)
        .into_iter()
        .filter(|p| is_temp(&name_of(p)))
        .collect();
    let others: Vec<PathBuf> = walk(state)
        .into_iter()
        .filter(|p| !is_temp(&name_of(p)))
        .collect();
    let young = jkz::gc::plan(state, SystemTime::now());
    assert!(
        young.iter().all(|d| !temps.contains(&d.path)),
        "gc would remove a temp file younger than 10 minutes: {young:?}"
    );
    for t in &temps {
        crate::util::age(t, Duration::from_secs(11 * 60));
    }
    dir.cmd("jkz")
        .arg("--state-dir")
        .arg(state)
        .arg("gc")
        .run()
        .success();
    let left: Vec<PathBuf> = walk(state)
        .into_iter()
        .filter(|p| is_temp(&name_of(p)))
        .collect();
    assert!(left.is_empty(), "jkz gc left temp files: {left:?}");
    for p in &others {
        assert!(p.exists(), "jkz gc removed {}", p.display());
    }
    temps.len()
}

fn report(test: &str, stats: &KillStats, temps: usize) {
    eprintln!(
        "{test}: {} killed ({} mid-write), {} finished first; {temps} temp files left, all removed by jkz gc",
        stats.killed, stats.mid_write, stats.finished
    );
}

// Fixtures shared by the fault kinds.

/// Issue `n`'s pipeline document, its notes `filler` bytes long.
fn pipeline_doc(n: usize, filler: usize) -> Value {
    let issue = json!({
        "current_phase": "building",
        "active_agent": "builder",
        "plan_iterations": "1",
        "notes": "x".repeat(filler),
    });
    crate::util::pipeline_doc(
        n,
        issue,
        json!({ "lastActivity": "2025-01-01T00:00:00.000Z" }),
    )
}

fn pre_compact_event(cwd: &Path, session: &str) -> Vec<u8> {
    json!({
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": cwd,
        "hook_event_name": "PreCompact",
        "trigger": "auto",
        "custom_instructions": "",
    })
    .to_string()
    .into_bytes()
}

/// A document whose four sections are each over the offload threshold,
/// different for every run (so every run has new files to write).
fn compress_doc(i: usize) -> String {
    let mut doc = String::from("# Report\n\n");
    for s in 0..4 {
        doc.push_str(&format!("## Section {s} of run {i}\n\n"));
        for l in 0..1500 {
            doc.push_str(&format!(
                "run {i} section {s} line {l}: some text to offload\n"
            ));
        }
    }
    doc
}

/// The truncate input of run `i`: 1 MiB of lines, the first naming the run.
fn truncate_input(i: usize) -> Vec<u8> {
    let mut text = format!("run {i}\n").into_bytes();
    let mut l = 0;
    while text.len() < 1 << 20 {
        text.extend_from_slice(format!("line {l} of the agent's long answer\n").as_bytes());
        l += 1;
    }
    text
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

/// Every data file under `state` with its bytes (temp and lock files apart).
fn snapshot_tree(state: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walk(state)
        .into_iter()
        .filter(|p| !is_temp(&name_of(p)) && !is_lock(&name_of(p)))
        .map(|p| {
            let b = fs::read(&p).unwrap();
            (p, b)
        })
        .collect()
}

fn temps_under(state: &Path) -> Vec<PathBuf> {
    walk(state)
        .into_iter()
        .filter(|p| is_temp(&name_of(p)))
        .collect()
}

fn snapshots_valid(state: &Path) -> usize {
    let names = jkz::compaction::snapshot::list(state);
    for n in &names {
        let v = parse_json(&state.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(v["jkz_snapshot"], 1, "{n}");
    }
    names.len()
}

fn record(state: &Path, session: &str) -> Value {
    parse_json(&state.join(format!("session-snapshots/{session}.json"))).unwrap()
}

fn texts(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|i| i["text"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}
