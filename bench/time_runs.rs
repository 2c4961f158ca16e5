//! Times programs as whole processes, for `bench/pre_compact.sh`: spawns
//! each one RUNS times with EVENT_FILE on stdin and stdout to /dev/null,
//! and prints, one line per program, the p50 and p90 of the wall time from
//! spawn to exit, in ms. The programs take turns (one run of each, then
//! again), so a change in the machine's speed during the bench (this VM's
//! disk and CPU vary by tens of percent within minutes) reaches them all
//! alike, and their ratios hold. Between runs (untimed) it removes the
//! snapshots the run wrote in STATE_DIR, so every run starts from the same
//! state.
//!
//! Spawning from a small process keeps the launcher's own cost (a `fork` of
//! a large shell costs the shell's size) out of the figure; the bench also
//! times `/bin/true` this way, which is the cost of any process here.
//! Built with `rustc -O`.
//!
//! Usage: time-runs RUNS STATE_DIR EVENT_FILE PROGRAM...
//! (a PROGRAM with spaces is a program and its arguments: `floor /s/state`)
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [runs, state, event, programs @ ..] = args.as_slice() else {
        eprintln!("usage: time-runs RUNS STATE_DIR EVENT_FILE PROGRAM...");
        std::process::exit(2);
    };
    if programs.is_empty() {
        eprintln!("usage: time-runs RUNS STATE_DIR EVENT_FILE PROGRAM...");
        std::process::exit(2);
    }
    let runs: usize = runs.parse().expect("RUNS: a number");
    let event = std::fs::read(event).expect("EVENT_FILE");
    let mut ms: Vec<Vec<f64>> = programs.iter().map(|_| Vec::with_capacity(runs)).collect();
    for _ in 0..runs {
        for (program, times) in programs.iter().zip(&mut ms) {
            times.push(time_one(program, &event));
            remove_snapshots(state);
        }
    }
    for mut times in ms {
        times.sort_by(f64::total_cmp);
        let rank = |p: usize| times[(runs * p).div_ceil(100).max(1) - 1];
        println!("{:.2} {:.2}", rank(50), rank(90));
    }
}

/// One run of `program`, in ms.
fn time_one(program: &str, event: &[u8]) -> f64 {
    let start = Instant::now();
    let mut words = program.split(' ');
    let mut child = Command::new(words.next().expect("a program"))
        .args(words)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    // A program that exits without reading its input is fine.
    let _ = child.stdin.take().expect("stdin").write_all(event);
    let status = child.wait().expect("wait");
    let ms = start.elapsed().as_secs_f64() * 1e3;
    assert!(status.success(), "{program} failed: {status}");
    ms
}

fn remove_snapshots(state: &str) {
    for entry in std::fs::read_dir(state).expect("STATE_DIR") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with("pre-compact-") && name.ends_with(".json") {
            std::fs::remove_file(&path).expect("remove a snapshot");
        }
    }
}
