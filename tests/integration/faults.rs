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

use crate::util::{bin, Dir};

// ---------------------------------------------------------------------------
// Harness

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

/// A command for a jkz binary with `CLAUDE*`/`JKZ_*` scrubbed (as the
/// harness does), stdout and stderr discarded.
fn command(name: &str, cwd: &Path) -> Command {
    let mut cmd = Command::new(bin(name));
    cmd.current_dir(cwd);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("CLAUDE") || k.starts_with("JKZ_") {
            cmd.env_remove(&key);
        }
    }
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
        } else if let Err(why) = valid(&path) {
            panic!("{}: {why}", path.display());
        }
    }
    temps
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
    let aged = SystemTime::now() - Duration::from_secs(11 * 60);
    for t in &temps {
        fs::File::options()
            .write(true)
            .open(t)
            .unwrap()
            .set_times(fs::FileTimes::new().set_modified(aged).set_accessed(aged))
            .unwrap();
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

// ---------------------------------------------------------------------------
// kill -9 during each kind of write

fn pipeline_doc(n: usize, filler: usize) -> Value {
    json!({
        n.to_string(): {
            "current_phase": "building",
            "active_agent": "builder",
            "plan_iterations": "1",
            "notes": "x".repeat(filler),
        },
        "lastActivity": "2025-01-01T00:00:00.000Z",
    })
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

/// A pre-compact snapshot or session record: JSON, whole, of its kind.
fn valid_compaction_file(path: &Path, pipelines: usize) -> Result<(), String> {
    let v = parse_json(path)?;
    let name = name_of(path);
    if name.starts_with("pre-compact-") {
        if v["jkz_snapshot"] != 1 {
            return Err("no jkz_snapshot".into());
        }
        let n = v["pipelines"].as_array().map_or(0, Vec::len);
        if n != pipelines {
            return Err(format!("{n} pipelines, expected {pipelines}"));
        }
    } else if path.parent().map(name_of).as_deref() == Some("session-snapshots") {
        if !v["compaction_count"].is_u64() {
            return Err("no compaction_count".into());
        }
    } else if path.parent().map(name_of).as_deref() == Some("pipeline") {
        // Read, never written, by the hook.
    } else {
        return Err("unexpected file".into());
    }
    Ok(())
}

#[test]
fn kill_during_pre_compact_snapshot() {
    let mut rng = Rng::from_env("kill_during_pre_compact_snapshot");
    let dir = Dir::new();
    let state = dir.join("state");
    const PIPELINES: usize = 40;
    for n in 1..=PIPELINES {
        dir.write(
            format!("state/pipeline/{n}.json"),
            pipeline_doc(n, 8 * 1024).to_string(),
        );
    }
    let record = state.join("session-snapshots/s1.json");
    let event = pre_compact_event(dir.path(), "s1");
    let spawn = |_: usize| {
        let mut cmd = command("jkz-pre-compact", dir.path());
        cmd.env("JKZ_STATE_DIR", &state);
        start(cmd, Some(&event))
    };
    let window = time_run(spawn(0));
    let mut count = 1;
    let mut seen = std::collections::BTreeSet::new();
    let runs = 160 * rounds();
    let stats = kill_loop(&mut rng, runs, window, spawn, |i, _| {
        let temps = survey(&state, |p| valid_compaction_file(p, PIPELINES));
        // No snapshot is ever lost: all are fresh, so retention keeps all.
        let now: std::collections::BTreeSet<String> = jkz::compaction::snapshot::list(&state)
            .into_iter()
            .collect();
        assert!(now.is_superset(&seen), "run {i}: a snapshot disappeared");
        seen = now;
        let rec = parse_json(&record).unwrap();
        let now = rec["compaction_count"].as_u64().unwrap();
        assert!(
            now == count || now == count + 1,
            "run {i}: compaction_count {now}, was {count}: neither old nor new"
        );
        count = now;
        // The nudge comes after the snapshot: the one it names is there.
        if let Some(snap) = rec["last_pre_compact_snapshot"].as_str() {
            assert!(state.join(snap).is_file(), "run {i}: {snap} missing");
        }
        temps
    });
    let snapshots = jkz::compaction::snapshot::list(&state).len() as u64;
    assert!(
        snapshots >= count,
        "{snapshots} snapshots for {count} nudges"
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("pre-compact", &stats, temps);
    // Lock files left by killed runs do not block the next one.
    assert!(time_run(spawn(0)) < Duration::from_secs(10));
    let rec = parse_json(&record).unwrap();
    assert_eq!(rec["compaction_count"].as_u64(), Some(count + 1));
    assert!(stats.killed >= runs / 2, "{stats:?}");
}

#[test]
fn kill_during_state_set() {
    let mut rng = Rng::from_env("kill_during_state_set");
    let dir = Dir::new();
    let state = dir.join("state");
    let path = state.join("pipeline/7.json");
    let ballast = "b".repeat(1 << 20);
    let mut doc = pipeline_doc(7, 0);
    doc["7"]["ballast"] = json!(ballast);
    doc["7"]["current_phase"] = json!("phase-start");
    doc["unknown_sibling"] = json!({"kept": [1, 2, 3]});
    dir.write(
        "state/pipeline/7.json",
        serde_json::to_vec_pretty(&doc).unwrap(),
    );
    let spawn = |i: usize| {
        let mut cmd = command("jkz", dir.path());
        cmd.args(["--state-dir"])
            .arg(&state)
            .args(["state", "set", "7", "current_phase"])
            .arg(format!("phase-{i}"));
        start(cmd, None)
    };
    let window = time_run(spawn(0));
    let mut old_bytes = fs::read(&path).unwrap();
    let mut old_phase = "phase-0".to_string();
    let runs = 150 * rounds();
    let stats = kill_loop(
        &mut rng,
        runs,
        window,
        |i| spawn(i + 1),
        |i, _| {
            let new = format!("phase-{}", i + 1);
            let temps = survey(&state, |p| parse_json(p).map(|_| ()));
            let bytes = fs::read(&path).unwrap();
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            let phase = v["7"]["current_phase"].as_str().unwrap().to_string();
            if phase == old_phase {
                assert!(
                    bytes == old_bytes,
                    "run {i}: old value but not the old file"
                );
            } else {
                assert_eq!(phase, new, "run {i}: neither the old value nor the new");
                // One write: both stamps from it, everything else as it was.
                assert_eq!(v["7"]["last_updated"], v["lastActivity"], "run {i}");
                assert_eq!(v["7"]["ballast"].as_str(), Some(ballast.as_str()));
                assert_eq!(v["unknown_sibling"]["kept"][2], 3);
                old_phase = phase;
                old_bytes = bytes;
            }
            temps
        },
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("state set", &stats, temps);
    let out = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(&state)
        .args(["state", "set", "7", "current_phase", "after"])
        .run();
    out.success();
    assert!(stats.killed >= runs / 2, "{stats:?}");
}

/// Session save input: one big decision (so the record is large and the
/// write takes a while) and a next step, both naming the run.
fn save_input(i: usize) -> String {
    json!({
        "decisions": [format!("d-{i} {}", "w".repeat(3900))],
        "next_steps": format!("n-{i}"),
    })
    .to_string()
}

#[test]
fn kill_during_session_save() {
    let mut rng = Rng::from_env("kill_during_session_save");
    let dir = Dir::new();
    let state = dir.join("state");
    let record = state.join("session-snapshots/s1.json");
    let runs = 150 * rounds();
    for i in 0..=101 + runs {
        dir.write(format!("in/{i}.json"), save_input(i));
    }
    let spawn = |i: usize| {
        let mut cmd = command("jkz-session", dir.path());
        cmd.arg("--state-dir")
            .arg(&state)
            .args(["--session", "s1", "save"])
            .arg(dir.join(format!("in/{i}.json")));
        start(cmd, None)
    };
    // Fill the record to its item bound so each save writes ~400 KB.
    for i in 0..100 {
        assert!(spawn(i).wait().unwrap().success());
    }
    let window = time_run(spawn(100));
    let mut old_bytes = fs::read(&record).unwrap();
    let runs = 150 * rounds();
    let stats = kill_loop(
        &mut rng,
        runs,
        window,
        |i| spawn(101 + i),
        |i, _| {
            let temps = survey(&state, |p| parse_json(p).map(|_| ()));
            let bytes = fs::read(&record).unwrap();
            if bytes == old_bytes {
                return temps;
            }
            let old: Value = serde_json::from_slice(&old_bytes).unwrap();
            let new: Value = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("run {i}: record is not JSON: {e}"));
            assert_eq!(new["saves"], old["saves"].as_u64().unwrap() + 1, "run {i}");
            // The merge rule: the new item in front, the older ones after it
            // (a repeated one moves, the oldest drop at the bound); next_steps
            // replaced whole. Items compared by their `d-N` tag.
            let tags = |v: &Value| -> Vec<String> {
                v["notes"]["decisions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| {
                        d["text"]
                            .as_str()
                            .unwrap()
                            .split(' ')
                            .next()
                            .unwrap()
                            .to_string()
                    })
                    .collect()
            };
            let n = 101 + i;
            let tag = format!("d-{n}");
            let mut want = vec![tag.clone()];
            want.extend(tags(&old).into_iter().filter(|t| *t != tag));
            want.truncate(jkz::session::notes::MAX_ITEMS);
            assert_eq!(tags(&new), want, "run {i}");
            let steps = texts(&new["notes"]["next_steps"]);
            assert_eq!(steps, [format!("n-{n}")], "run {i}");
            old_bytes = bytes;
            temps
        },
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("session save", &stats, temps);
    assert!(spawn(0).wait().unwrap().success());
    assert!(stats.killed >= runs / 2, "{stats:?}");
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

#[test]
fn kill_during_compress_offload() {
    let mut rng = Rng::from_env("kill_during_compress_offload");
    let dir = Dir::new();
    let state = dir.join("state");
    let runs = 140 * rounds();
    for i in 0..=runs {
        dir.write(format!("doc/{i}.md"), compress_doc(i));
    }
    let spawn = |i: usize| {
        let mut cmd = command("jkz-compress", dir.path());
        cmd.arg("--state-dir")
            .arg(&state)
            .arg(dir.join(format!("doc/{i}.md")));
        start(cmd, None)
    };
    let window = time_run(spawn(0));
    let offload = |p: &Path| -> Result<(), String> {
        let name = name_of(p);
        let Some(hex) = name.strip_suffix(".md") else {
            return Err("unexpected file".into());
        };
        let bytes = fs::read(p).map_err(|e| e.to_string())?;
        if sha256_hex(&bytes) != hex {
            return Err(format!(
                "content ({} bytes) does not hash to its name",
                bytes.len()
            ));
        }
        Ok(())
    };
    let stats = kill_loop(
        &mut rng,
        runs,
        window,
        |i| spawn(i + 1),
        |_, _| survey(&state, offload),
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("compress offload", &stats, temps);
    // Whatever a kill left, a rerun completes the store and restores whole.
    let doc = compress_doc(runs);
    let out = dir
        .cmd("jkz-compress")
        .arg("--state-dir")
        .arg(&state)
        .arg(dir.join(format!("doc/{runs}.md")))
        .run()
        .success();
    let back = dir
        .cmd("jkz-compress")
        .arg("--state-dir")
        .arg(&state)
        .arg("--restore")
        .stdin(out.stdout())
        .run()
        .success();
    assert_eq!(back.stdout(), doc.as_bytes());
    assert!(stats.killed >= runs / 2, "{stats:?}");
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

#[test]
fn kill_during_truncate_full_output() {
    let mut rng = Rng::from_env("kill_during_truncate_full_output");
    let dir = Dir::new();
    let state = dir.join("state");
    let runs = 140 * rounds();
    for i in 0..=runs {
        dir.write(format!("in/{i}.txt"), truncate_input(i));
    }
    let spawn = |i: usize| {
        let mut cmd = command("jkz-truncate", dir.path());
        cmd.arg("--state-dir")
            .arg(&state)
            .args(["--max-bytes", "4096"])
            .arg(dir.join(format!("in/{i}.txt")));
        start(cmd, None)
    };
    let window = time_run(spawn(0));
    let mut complete = 0;
    let full_output = |p: &Path, complete: &mut usize| -> Result<(), String> {
        let name = name_of(p);
        if !(name.starts_with("full-") && name.ends_with(".txt")) {
            return Err("unexpected file".into());
        }
        let bytes = fs::read(p).map_err(|e| e.to_string())?;
        let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
        let run: usize = std::str::from_utf8(first)
            .ok()
            .and_then(|l| l.strip_prefix("run "))
            .and_then(|n| n.parse().ok())
            .ok_or("no run header")?;
        if bytes != truncate_input(run) {
            return Err(format!("incomplete: {} bytes", bytes.len()));
        }
        *complete += 1;
        // Checked: remove it, so the disk holds one run's worth at a time.
        fs::remove_file(p).map_err(|e| e.to_string())
    };
    let stats = kill_loop(
        &mut rng,
        runs,
        window,
        |i| spawn(i + 1),
        |_, _| survey(&state, |p| full_output(p, &mut complete)),
    );
    let temps = gc_cleans_temps(&dir, &state);
    report("truncate full output", &stats, temps);
    eprintln!("truncate: {complete} complete full outputs checked");
    assert!(stats.killed >= runs / 2, "{stats:?}");
}

// ---------------------------------------------------------------------------
// Disk full

/// A finished run under a fault, with what is worth seeing on failure.
struct Ran {
    shown: String,
    out: std::process::Output,
}

impl Ran {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    fn expect(&self, code: i32) -> &Ran {
        assert_eq!(
            self.out.status.code(),
            Some(code),
            "{}\nstatus {}\nstderr:\n{}",
            self.shown,
            self.out.status,
            self.stderr()
        );
        self
    }

    /// The error is one line, from `program`, and says `why`.
    fn one_line(&self, program: &str, why: &str) -> &Ran {
        let err = self.stderr();
        let lines: Vec<&str> = err.lines().collect();
        assert!(
            lines.len() == 1
                && lines[0].starts_with(&format!("{program}: "))
                && lines[0].contains(why),
            "{}: expected one line from {program} saying {why:?}, got:\n{err}",
            self.shown
        );
        self
    }
}

/// Runs `name args` through `sh` with `prelude` first (a limit), env
/// scrubbed, `stdin` fed (small).
fn run_sh(dir: &Dir, prelude: &str, name: &str, args: &[&std::ffi::OsStr], stdin: &[u8]) -> Ran {
    let script = format!("{prelude} exec \"$0\" \"$@\"");
    let mut sh = Command::new("sh");
    sh.current_dir(dir.path())
        .arg("-c")
        .arg(&script)
        .arg(bin(name))
        .args(args);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k.starts_with("CLAUDE") || k.starts_with("JKZ_") {
            sh.env_remove(&key);
        }
    }
    sh.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = sh.spawn().expect("spawn sh");
    let mut pipe = child.stdin.take().unwrap();
    assert!(stdin.len() < 32 * 1024);
    let _ = pipe.write_all(stdin);
    drop(pipe);
    let out = child.wait_with_output().expect("wait");
    let shown = format!(
        "sh -c '{script}' {name} {}",
        args.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ran { shown, out }
}

/// `ulimit -f` in dash counts 512-byte blocks: 64 is 32 KiB.
const FSIZE_LIMIT: &str = "trap '' XFSZ; ulimit -f 64;";

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

/// The error each writer gives when its write does not fit: `why` is the
/// OS's reason ("File too large" under RLIMIT_FSIZE, "No space left on
/// device" on a full filesystem). `prelude` sets the limit (or nothing,
/// when the filesystem itself is full). Old files must stay byte for byte.
fn disk_full_cases(dir: &Dir, state: &Path, prelude: &str, why: &str) {
    let st = state.as_os_str();
    let before = snapshot_tree(state);
    let unchanged = |what: &str| {
        let after = snapshot_tree(state);
        for (p, b) in &before {
            assert!(
                after.get(p) == Some(b),
                "{what}: {} changed or vanished",
                p.display()
            );
        }
        let t = temps_under(state);
        assert!(t.is_empty(), "{what}: temp files left: {t:?}");
        after
    };

    // jkz state set: exit 2, the pipeline file as it was.
    let big = "v".repeat(100 * 1024);
    run_sh(
        dir,
        prelude,
        "jkz",
        &[
            os("--state-dir"),
            st,
            os("state"),
            os("set"),
            os("7"),
            os("notes"),
            os(&big),
        ],
        b"",
    )
    .expect(2)
    .one_line("jkz state", why);
    let after = unchanged("state set");
    assert_eq!(after.len(), before.len());

    // jkz-session save: exit 1, the record as it was.
    let notes = json!({"decisions": (0..30).map(|k| format!("{k} {}", "d".repeat(4000))).collect::<Vec<_>>()});
    let input = dir.write("big-notes.json", notes.to_string());
    run_sh(
        dir,
        prelude,
        "jkz-session",
        &[
            os("--state-dir"),
            st,
            os("--session"),
            os("s1"),
            os("save"),
            input.as_os_str(),
        ],
        b"",
    )
    .expect(1)
    .one_line("jkz-session", why);
    let after = unchanged("session save");
    assert_eq!(after.len(), before.len());

    // jkz-compress: exit 4, stdout empty, no new offload.
    let doc = dir.write("big-doc.md", compress_doc(999_999));
    let ran = run_sh(
        dir,
        prelude,
        "jkz-compress",
        &[os("--state-dir"), st, doc.as_os_str()],
        b"",
    );
    ran.expect(4).one_line("jkz-compress", why);
    assert!(
        ran.out.stdout.is_empty(),
        "compress printed half a document"
    );
    let after = unchanged("compress");
    assert_eq!(after.len(), before.len());

    // jkz-truncate: exit 0, the truncated output whole, a one-line warning,
    // no full output (neither whole nor half).
    let input = dir.write("big-input.txt", truncate_input(999_999));
    let ran = run_sh(
        dir,
        prelude,
        "jkz-truncate",
        &[
            os("--state-dir"),
            st,
            os("--max-bytes"),
            os("4096"),
            input.as_os_str(),
        ],
        b"",
    );
    ran.expect(0).one_line("jkz-truncate", why);
    assert!(ran.out.stdout.starts_with(b"run 999999\n") && ran.out.stdout.len() <= 4096);
    let after = unchanged("truncate");
    assert_eq!(after.len(), before.len());

    // jkz-pre-compact: exit 0, the reason on stderr, the summarizer still
    // gets its instructions; old snapshots untouched, no new one.
    let event = pre_compact_event(dir.path(), "s1");
    let ran = run_sh(
        dir,
        &format!(
            "{prelude} JKZ_STATE_DIR='{}' export JKZ_STATE_DIR;",
            state.display()
        ),
        "jkz-pre-compact",
        &[],
        &event,
    );
    ran.expect(0);
    let err = ran.stderr();
    assert!(
        err.lines().all(|l| l.starts_with("jkz-pre-compact: "))
            && err
                .lines()
                .any(|l| l.contains("writing snapshot") && l.contains(why)),
        "{}: {err}",
        ran.shown
    );
    assert!(
        !ran.out.stdout.is_empty(),
        "no instructions for the summarizer"
    );
    let after = snapshot_tree(state);
    for (p, b) in &before {
        if name_of(p) == "s1.json" {
            // The nudge is small; if it fit, it counts the compaction and
            // names no snapshot.
            let v: Value = serde_json::from_slice(&after[p]).unwrap();
            if &after[p] != b {
                assert_eq!(v["last_pre_compact_snapshot"], Value::Null);
            }
        } else {
            assert!(
                after.get(p) == Some(b),
                "pre-compact: {} changed",
                p.display()
            );
        }
    }
    assert_eq!(after.len(), before.len(), "pre-compact wrote a new file");
    assert!(temps_under(state).is_empty());
}

/// The files a disk-full run must leave intact: a pipeline, a session
/// record, a pre-compact snapshot, an offload.
fn seed_state(dir: &Dir, state: &Path, pipeline_filler: usize) {
    dir.write(
        "state/pipeline/7.json",
        pipeline_doc(7, pipeline_filler).to_string(),
    );
    let st = state.as_os_str();
    let notes = dir.write("small-notes.md", "## Decisions\n- keep it small\n");
    run_sh(
        dir,
        "",
        "jkz-session",
        &[
            os("--state-dir"),
            st,
            os("--session"),
            os("s1"),
            os("save"),
            notes.as_os_str(),
        ],
        b"",
    )
    .expect(0);
    let event = pre_compact_event(dir.path(), "s1");
    run_sh(
        dir,
        &format!("JKZ_STATE_DIR='{}' export JKZ_STATE_DIR;", state.display()),
        "jkz-pre-compact",
        &[],
        &event,
    )
    .expect(0);
    let mut doc = String::from("# Small\n\n## One\n\n");
    while doc.len() < 17 * 1024 {
        doc.push_str("a line of a section just over the threshold\n");
    }
    let doc = dir.write("small-doc.md", doc);
    run_sh(
        dir,
        "",
        "jkz-compress",
        &[os("--state-dir"), st, doc.as_os_str()],
        b"",
    )
    .expect(0);
    assert_eq!(jkz::compaction::snapshot::list(state).len(), 1);
    assert_eq!(
        fs::read_dir(state.join("context-offload")).unwrap().count(),
        1
    );
}

#[test]
fn disk_full_by_file_size_limit() {
    let dir = Dir::new();
    let state = dir.join("state");
    // Pipeline data of 40 KiB: every snapshot is over the 32 KiB limit.
    seed_state(&dir, &state, 40 * 1024);
    disk_full_cases(&dir, &state, FSIZE_LIMIT, "File too large");
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn disk_full_on_a_tiny_tmpfs() {
    let dir = Dir::new();
    let mount = dir.join("tiny");
    fs::create_dir(&mount).unwrap();
    let status = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs"])
        .arg(&mount)
        .stderr(Stdio::null())
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("disk_full_on_a_tiny_tmpfs: skipped, mount -t tmpfs refused here (needs root); the RLIMIT_FSIZE variant ran");
        return;
    }
    let _mounted = Tmpfs(mount.clone());
    let state = mount.join("state");
    seed_state(&dir, &state, 1024);
    // Fill what is left, so the next data block written anywhere fails.
    let mut ballast = fs::File::create(mount.join("ballast")).unwrap();
    let chunk = vec![0u8; 4096];
    while ballast
        .write_all(&chunk)
        .and_then(|_| ballast.sync_all())
        .is_ok()
    {}
    disk_full_cases(&dir, &state, "", "No space left on device");
}

// ---------------------------------------------------------------------------
// Concurrency: 32 writers at once

/// One writer of a concurrent run.
enum Writer {
    PreCompact {
        session: String,
    },
    StateSet {
        issue: usize,
        field: String,
        value: String,
    },
    SessionSave {
        session: String,
        input: PathBuf,
    },
}

/// Starts every writer before waiting for any, then checks each exited 0
/// with nothing on stderr.
fn run_all(dir: &Dir, state: &Path, writers: &[Writer]) {
    let children: Vec<(String, Child)> = writers
        .iter()
        .map(|w| {
            let (shown, mut cmd, stdin) = match w {
                Writer::PreCompact { session } => {
                    let mut cmd = command("jkz-pre-compact", dir.path());
                    cmd.env("JKZ_STATE_DIR", state);
                    (
                        "jkz-pre-compact".to_string(),
                        cmd,
                        Some(pre_compact_event(dir.path(), session)),
                    )
                }
                Writer::StateSet {
                    issue,
                    field,
                    value,
                } => {
                    let mut cmd = command("jkz", dir.path());
                    cmd.arg("--state-dir")
                        .arg(state)
                        .args(["state", "set"])
                        .arg(issue.to_string())
                        .arg(field)
                        .arg(value);
                    (format!("jkz state set {issue} {field} {value}"), cmd, None)
                }
                Writer::SessionSave { session, input } => {
                    let mut cmd = command("jkz-session", dir.path());
                    cmd.arg("--state-dir")
                        .arg(state)
                        .args(["--session", session, "save"])
                        .arg(input);
                    (format!("jkz-session --session {session} save"), cmd, None)
                }
            };
            cmd.stderr(Stdio::piped());
            (shown, start(cmd, stdin.as_deref()))
        })
        .collect();
    for (shown, child) in children {
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && err.is_empty(),
            "{shown}: {}\n{err}",
            out.status
        );
    }
    let t = temps_under(state);
    assert!(t.is_empty(), "temp files after clean runs: {t:?}");
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

#[test]
fn concurrent_pre_compact_loses_no_snapshot() {
    let dir = Dir::new();
    let state = dir.join("state");
    for n in 1..=5 {
        dir.write(
            format!("state/pipeline/{n}.json"),
            pipeline_doc(n, 1024).to_string(),
        );
    }
    let writers: Vec<Writer> = (0..32)
        .map(|_| Writer::PreCompact {
            session: "s1".into(),
        })
        .collect();
    run_all(&dir, &state, &writers);
    assert_eq!(snapshots_valid(&state), 32, "a snapshot was lost");
    assert_eq!(
        record(&state, "s1")["compaction_count"],
        32,
        "a nudge was lost"
    );
}

/// A git that does not answer within the hook's 2 s must not make hooks of
/// one session lose their nudges to each other: the record's lock is taken
/// once git has answered or been given up on, and held for milliseconds.
#[test]
fn concurrent_pre_compact_with_slow_git_loses_no_nudge() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Dir::new();
    let state = dir.join("state");
    dir.write("state/pipeline/1.json", pipeline_doc(1, 1024).to_string());
    let shim = dir.join("slow-git/git");
    dir.write("slow-git/git", "#!/bin/sh\nexec sleep 4\n");
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::join_paths(std::iter::once(dir.join("slow-git")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let event = pre_compact_event(dir.path(), "s1");
    let hooks: Vec<Child> = (0..4)
        .map(|_| {
            let mut cmd = command("jkz-pre-compact", dir.path());
            cmd.env("JKZ_STATE_DIR", &state)
                .env("PATH", &path)
                .stderr(Stdio::piped());
            start(cmd, Some(&event))
        })
        .collect();
    for hook in hooks {
        let out = hook.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !err.contains("gave up"), "{err}");
    }
    assert_eq!(snapshots_valid(&state), 4, "a snapshot was lost");
    assert_eq!(
        record(&state, "s1")["compaction_count"],
        4,
        "a nudge was lost"
    );
    // The slow git was the one run (and given up on).
    let newest = &jkz::compaction::snapshot::list(&state)[0];
    let snap = parse_json(&state.join(newest)).unwrap();
    assert!(
        snap["git"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out"),
        "{}",
        snap["git"]
    );
}

#[test]
fn concurrent_state_set_loses_no_field() {
    let dir = Dir::new();
    let state = dir.join("state");
    // No state/pipeline/ yet: the writers also race to create it.
    let writers: Vec<Writer> = (0..32)
        .map(|k| Writer::StateSet {
            issue: 9,
            field: format!("field_{k}"),
            value: format!("value {k}"),
        })
        .collect();
    run_all(&dir, &state, &writers);
    let v = parse_json(&state.join("pipeline/9.json")).unwrap();
    for k in 0..32 {
        assert_eq!(
            v["9"][format!("field_{k}")],
            format!("value {k}"),
            "field_{k} lost"
        );
    }
}

#[test]
fn concurrent_session_saves_merge() {
    let dir = Dir::new();
    let state = dir.join("state");
    let mut writers = Vec::new();
    for k in 0..32 {
        let input = dir.write(
            format!("in/{k}.md"),
            format!("## Decisions\n- decision {k}\n\n## Next steps\n- step {k}\n"),
        );
        let session = if k % 2 == 0 {
            "shared".to_string()
        } else {
            format!("own-{k}")
        };
        writers.push(Writer::SessionSave { session, input });
    }
    run_all(&dir, &state, &writers);
    let shared = record(&state, "shared");
    assert_eq!(
        shared["saves"], 16,
        "a save into the shared session was lost"
    );
    let mut decisions = texts(&shared["notes"]["decisions"]);
    decisions.sort();
    let mut want: Vec<String> = (0..32)
        .step_by(2)
        .map(|k| format!("decision {k}"))
        .collect();
    want.sort();
    assert_eq!(decisions, want);
    // next_steps is replaced whole by each save: the last writer's, alone.
    let steps = texts(&shared["notes"]["next_steps"]);
    assert!(
        steps.len() == 1 && (0..32).step_by(2).any(|k| steps[0] == format!("step {k}")),
        "{steps:?}"
    );
    for k in (1..32).step_by(2) {
        let own = record(&state, &format!("own-{k}"));
        assert_eq!(own["saves"], 1);
        assert_eq!(texts(&own["notes"]["decisions"]), [format!("decision {k}")]);
    }
}

#[test]
fn concurrent_mixed_writers() {
    let dir = Dir::new();
    let state = dir.join("state");
    dir.write("state/pipeline/9.json", pipeline_doc(9, 1024).to_string());
    let mut writers = Vec::new();
    let (mut hooks, mut sets, mut saves) = (0, 0, 0);
    for k in 0..32 {
        writers.push(match k % 3 {
            0 => {
                hooks += 1;
                Writer::PreCompact {
                    session: "mix".into(),
                }
            }
            1 => {
                sets += 1;
                Writer::StateSet {
                    issue: 9,
                    field: format!("field_{k}"),
                    value: format!("value {k}"),
                }
            }
            _ => {
                saves += 1;
                let input = dir.write(
                    format!("in/{k}.md"),
                    format!("## Decisions\n- decision {k}\n"),
                );
                Writer::SessionSave {
                    session: "mix".into(),
                    input,
                }
            }
        });
    }
    run_all(&dir, &state, &writers);
    assert_eq!(snapshots_valid(&state), hooks);
    let rec = record(&state, "mix");
    assert_eq!(rec["compaction_count"], hooks as u64, "a nudge was lost");
    assert_eq!(rec["saves"], saves as u64, "a save was lost");
    assert_eq!(texts(&rec["notes"]["decisions"]).len(), saves);
    let v = parse_json(&state.join("pipeline/9.json")).unwrap();
    let fields = (0..32)
        .filter(|k| k % 3 == 1)
        .filter(|k| v["9"][format!("field_{k}")] == format!("value {k}"))
        .count();
    assert_eq!(fields, sets, "a field was lost");
    assert_eq!(v["9"]["current_phase"], "building");
}

// ---------------------------------------------------------------------------
// Regressions

/// Waits for `child` up to `limit`; kills it and fails when it takes longer.
fn wait_at_most(mut child: Child, limit: Duration, what: &str) -> std::process::Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?} (hung on the lock)");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Broke: a writer frozen while holding a session record's lock (a
/// `jkz-session save` stopped with ^Z, a process stuck on a slow disk) made
/// `jkz-pre-compact` wait for it forever, holding up compaction until the
/// client's hook timeout. The hook now waits a bounded time, skips the
/// nudge with a one-line reason, and still writes its snapshot.
#[test]
fn pre_compact_does_not_hang_on_a_held_session_lock() {
    let dir = Dir::new();
    let state = dir.join("state");
    fs::create_dir_all(state.join("session-snapshots")).unwrap();
    let record = state.join("session-snapshots/s1.json");
    fs::write(&record, r#"{"session_id":"s1","compaction_count":4}"#).unwrap();
    let held = jkz::json_file::lock(&record).unwrap();
    let mut cmd = command("jkz-pre-compact", dir.path());
    cmd.env("JKZ_STATE_DIR", &state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = start(cmd, Some(&pre_compact_event(dir.path(), "s1")));
    let out = wait_at_most(child, Duration::from_secs(15), "jkz-pre-compact");
    drop(held);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("jkz-pre-compact: updating the session record of s1:")
            && err.contains("lock"),
        "{err}"
    );
    assert!(!out.stdout.is_empty());
    assert_eq!(
        snapshots_valid(&state),
        1,
        "the snapshot must not wait on the record"
    );
    assert_eq!(
        fs::read(&record).unwrap(),
        br#"{"session_id":"s1","compaction_count":4}"#
    );
}

/// Broke (same cause): `jkz-session save` and `jkz state set` waited forever
/// on a held lock. They now give up after a bounded wait with a one-line
/// error naming the lock file, exit code 1 and 2 as documented, file intact.
#[test]
fn writers_give_up_on_a_held_lock_with_a_clear_error() {
    let dir = Dir::new();
    let state = dir.join("state");
    dir.write("state/pipeline/7.json", pipeline_doc(7, 10).to_string());
    dir.write("state/session-snapshots/s1.json", r#"{"session_id":"s1"}"#);
    let pipeline = state.join("pipeline/7.json");
    let record = state.join("session-snapshots/s1.json");
    let _a = jkz::json_file::lock(&pipeline).unwrap();
    let _b = jkz::json_file::lock(&record).unwrap();
    let before = snapshot_tree(&state);
    let mut set = command("jkz", dir.path());
    set.env("JKZ_LOCK_WAIT_MS", "300")
        .arg("--state-dir")
        .arg(&state)
        .args(["state", "set", "7", "current_phase", "x"])
        .stderr(Stdio::piped());
    let out = wait_at_most(start(set, None), Duration::from_secs(15), "jkz state set");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.lines().count() == 1 && err.starts_with("jkz state: ") && err.contains(".7.json.lock"),
        "{err}"
    );
    let notes = dir.write("n.md", "## Decisions\n- d\n");
    let mut save = command("jkz-session", dir.path());
    save.env("JKZ_LOCK_WAIT_MS", "300")
        .arg("--state-dir")
        .arg(&state)
        .args(["--session", "s1", "save"])
        .arg(&notes)
        .stderr(Stdio::piped());
    let out = wait_at_most(
        start(save, None),
        Duration::from_secs(15),
        "jkz-session save",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.lines().count() == 1
            && err.starts_with("jkz-session: ")
            && err.contains(".s1.json.lock"),
        "{err}"
    );
    assert_eq!(snapshot_tree(&state), before);
}

// ---------------------------------------------------------------------------
// jkz gc against writers

/// Sets a file's modification and access times to `age` ago.
fn age(path: &Path, age: Duration) {
    let t = SystemTime::now() - age;
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_times(fs::FileTimes::new().set_modified(t).set_accessed(t))
        .unwrap();
}

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// Regression: gc picked its targets by modification time, scanned for
/// seconds, then removed them without looking again: a `jkz-session save`
/// in between reported success and was lost. Here the save comes exactly
/// between gc's judgement and its removal.
#[test]
fn gc_never_removes_a_session_record_saved_after_it_was_judged() {
    let dir = Dir::new();
    let state = dir.join("state");
    let save = |session: &str, decision: &str| {
        dir.cmd("jkz-session")
            .arg("--state-dir")
            .arg(&state)
            .args(["--session", session, "save"])
            .stdin(format!("## Decisions\n- {decision}\n"))
            .run()
            .success();
    };
    save("old", "first");
    save("new", "other");
    let record = state.join("session-snapshots/old.json");
    age(&record, DAY * 31);
    let judged = jkz::gc::plan(&state, SystemTime::now());
    assert!(
        judged.iter().any(|d| d.path == record),
        "the record is judged old: {judged:?}"
    );
    save("old", "saved while gc runs");
    for d in &judged {
        jkz::gc::remove_judged(d).unwrap();
    }
    let text = fs::read_to_string(&record).expect("the record saved after the judgement is kept");
    assert!(text.contains("saved while gc runs"), "{text}");
    // And a whole run of the real gc keeps it too (it is fresh now).
    dir.cmd("jkz")
        .arg("--state-dir")
        .arg(&state)
        .arg("gc")
        .run()
        .success();
    assert!(fs::read_to_string(&record)
        .unwrap()
        .contains("saved while gc runs"));
}

/// Regression: the reference scan read only the first 4 MiB of each recent
/// state file, so an offloaded file named further in was removed as
/// unreferenced (and the scan held all those MiB of every file at once).
#[test]
fn gc_keeps_an_offload_file_named_past_the_first_4_mib() {
    let dir = Dir::new();
    let state = dir.join("state");
    let name = format!("{}.md", "cd".repeat(32));
    let offload = dir.write(
        format!("state/context-offload/{name}"),
        "offloaded section\n",
    );
    let unnamed = dir.write(
        format!("state/context-offload/{}.md", "ef".repeat(32)),
        "nobody names me\n",
    );
    age(&offload, DAY * 8);
    age(&unnamed, DAY * 8);
    let mut snapshot = b"{\"pad\": \"".to_vec();
    snapshot.resize(5 << 20, b'x');
    snapshot
        .extend_from_slice(format!("\", \"ref\": \"state/context-offload/{name}\"}}").as_bytes());
    dir.write("state/pre-compact-20250101T000000.000Z-1.json", &snapshot);
    let run = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(&state)
        .arg("gc")
        .run()
        .success();
    assert!(
        offload.exists(),
        "a referenced offload file removed\n{}",
        run.report()
    );
    assert!(!unnamed.exists(), "{}", run.report());
}

/// Regression: gc removed `.*.tmp` files in `state/pipeline/` and
/// `state/deliberations/`, which the README says it never touches. Now
/// `deliberations/` is left whole, and in `pipeline/` only the temp files
/// of jkz's own pipeline writer go.
#[test]
fn gc_leaves_deliberations_and_other_writers_temp_files_alone() {
    let dir = Dir::new();
    let state = dir.join("state");
    let kept = [
        "state/deliberations/.round-2.json.x81Kq0.tmp",
        "state/deliberations/.7.json.x81Kq0.tmp",
        "state/pipeline/.notes.md.x81Kq0.tmp",
        "state/pipeline/.7-compact-plan.md.x81Kq0.tmp",
    ];
    let removed = "state/pipeline/.7.json.x81Kq0.tmp";
    for rel in kept.iter().chain([&removed]) {
        let path = dir.write(rel, "partial");
        age(&path, Duration::from_secs(3600));
    }
    let run = dir
        .cmd("jkz")
        .arg("--state-dir")
        .arg(&state)
        .arg("gc")
        .run()
        .success();
    for rel in kept {
        assert!(dir.join(rel).exists(), "{rel} removed\n{}", run.report());
    }
    assert!(!dir.join(removed).exists(), "{}", run.report());
}
