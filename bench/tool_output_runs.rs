//! Times commands as whole processes, for `bench/tool_output.sh`: each
//! command runs RUNS times (taking turns, one run of each, then again, so a
//! change in the machine's speed reaches them alike), with its stdin from a
//! file, stdout to /dev/null; prints one line per command: p50 and p90 of
//! the wall time from spawn to exit, in ms. Between runs (untimed) it
//! empties CLEAN_DIR/context-offload and removes CLEAN_DIR/tool-output.jsonl,
//! so each run of the hook starts from the same state. Built with `rustc -O`.
//!
//! Usage: tool-output-runs RUNS CLEAN_DIR STDIN PROGRAM ARGS... [:: STDIN PROGRAM ARGS...]...
//! (STDIN `-` is /dev/null)
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [runs, clean, rest @ ..] = args.as_slice() else {
        eprintln!("usage: tool-output-runs RUNS CLEAN_DIR STDIN PROGRAM ARGS... [:: …]");
        std::process::exit(2);
    };
    let runs: usize = runs.parse().expect("RUNS: a number");
    let commands: Vec<&[String]> = rest.split(|a| a == "::").collect();
    let mut ms: Vec<Vec<f64>> = commands.iter().map(|_| Vec::with_capacity(runs)).collect();
    for _ in 0..runs {
        for (command, times) in commands.iter().zip(&mut ms) {
            times.push(time_one(command));
            let _ = std::fs::remove_dir_all(format!("{clean}/context-offload"));
            let _ = std::fs::remove_file(format!("{clean}/tool-output.jsonl"));
        }
    }
    for mut times in ms {
        times.sort_by(f64::total_cmp);
        let rank = |p: usize| times[(runs * p).div_ceil(100).max(1) - 1];
        println!("{:.2} {:.2}", rank(50), rank(90));
    }
}

fn time_one(command: &[String]) -> f64 {
    let [stdin, program, args @ ..] = command else {
        panic!("a command needs STDIN and PROGRAM");
    };
    let input = if stdin == "-" {
        Stdio::null()
    } else {
        Stdio::from(std::fs::File::open(stdin).expect("STDIN file"))
    };
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .stdin(input)
        .stdout(Stdio::null())
        .status()
        .expect("spawn");
    let took = start.elapsed().as_secs_f64() * 1000.0;
    assert!(status.success(), "{program} failed: {status}");
    took
}
