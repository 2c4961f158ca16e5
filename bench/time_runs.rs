//! Times a program as a whole process, for `bench/pre_compact.sh`: spawns
//! it RUNS times with EVENT_FILE on stdin and stdout to /dev/null, and
//! prints the p50 and p90 of the wall time from spawn to exit, in ms.
//! Between runs (untimed) it removes the snapshots the run wrote in
//! STATE_DIR, so every run starts from the same state.
//!
//! Spawning from a small process keeps the launcher's own cost (a `fork` of
//! a large shell costs the shell's size) out of the figure; the bench also
//! times `/bin/true` this way, which is the cost of any process here.
//! Built with `rustc -O`.
//!
//! Usage: time-runs RUNS STATE_DIR EVENT_FILE PROGRAM [ARG...]
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [runs, state, event, program, rest @ ..] = args.as_slice() else {
        eprintln!("usage: time-runs RUNS STATE_DIR EVENT_FILE PROGRAM [ARG...]");
        std::process::exit(2);
    };
    let runs: usize = runs.parse().expect("RUNS: a number");
    let event = std::fs::read(event).expect("EVENT_FILE");
    let mut ms = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        let mut child = Command::new(program)
            .args(rest)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn");
        // A program that exits without reading its input is fine.
        let _ = child.stdin.take().expect("stdin").write_all(&event);
        let status = child.wait().expect("wait");
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        assert!(status.success(), "{program} failed: {status}");
        for entry in std::fs::read_dir(state).expect("STATE_DIR") {
            let path = entry.expect("entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if name.starts_with("pre-compact-") && name.ends_with(".json") {
                std::fs::remove_file(&path).expect("remove a snapshot");
            }
        }
    }
    ms.sort_by(f64::total_cmp);
    let rank = |p: usize| ms[(runs * p).div_ceil(100).max(1) - 1];
    println!("{:.2} {:.2}", rank(50), rank(90));
}
