//! Times `jkz state set` as a whole process, for `bench/events.sh`: each
//! PROGRAM (a jkz binary) runs RUNS times, taking turns (one run of each,
//! then again, so a change in the machine's speed reaches them alike), as
//! `PROGRAM --state-dir DIR/<k> state set 7 current_phase phase-<i>`: a new
//! value each run, so that every run changes the phase (and, where the
//! binary has the event log, appends one event). Prints one line per
//! program: p50 and p90 of the wall time from spawn to exit, in ms.
//! Built with `rustc -O`.
//!
//! Usage: events-runs RUNS DIR PROGRAM...
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [runs, dir, programs @ ..] = args.as_slice() else {
        eprintln!("usage: events-runs RUNS DIR PROGRAM...");
        std::process::exit(2);
    };
    let runs: usize = runs.parse().expect("RUNS: a number");
    let mut ms: Vec<Vec<f64>> = programs.iter().map(|_| Vec::with_capacity(runs)).collect();
    for i in 0..runs {
        for (k, (program, times)) in programs.iter().zip(&mut ms).enumerate() {
            let state = format!("{dir}/{k}");
            let phase = format!("phase-{i}");
            let start = Instant::now();
            let status = Command::new(program)
                .args(["--state-dir", &state, "state", "set", "7", "current_phase", &phase])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .expect("spawn");
            times.push(start.elapsed().as_secs_f64() * 1000.0);
            assert!(status.success(), "{program} failed");
        }
    }
    for mut times in ms {
        times.sort_by(f64::total_cmp);
        let rank = |p: usize| times[(runs * p).div_ceil(100).max(1) - 1];
        println!("{:.3} {:.3}", rank(50), rank(90));
    }
}
