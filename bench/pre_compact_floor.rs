//! The floor under `jkz-pre-compact`, for `bench/pre_compact.sh`: only the
//! work no implementation can skip, done the cheapest way jkz knows. It
//! lists `state/pipeline/`, reads every file on two threads with one open,
//! one read and one close each (as the hook does), writes their bytes twice
//! into one temp file (the real snapshot holds each file's JSON and its
//! normalized view, about twice the bytes), syncs it (fdatasync) and renames
//! it into place. No parsing, no git, no digest, no session record, no
//! ordering of the files. Built with `rustc -O`.
//!
//! Usage: pre-compact-floor [STATE_DIR]   (default $CLAUDE_PROJECT_DIR/state)
use std::io::{Read, Write};

fn main() {
    let state = match std::env::args_os().nth(1) {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            let project = std::env::var_os("CLAUDE_PROJECT_DIR").expect("CLAUDE_PROJECT_DIR");
            std::path::Path::new(&project).join("state")
        }
    };
    let paths: Vec<_> = std::fs::read_dir(state.join("pipeline"))
        .expect("state/pipeline")
        .map(|e| e.expect("entry").path())
        .collect();
    let read = |paths: &[std::path::PathBuf]| {
        let mut bytes = Vec::new();
        let mut buf = vec![0; 64 * 1024];
        for p in paths {
            let n = std::fs::File::open(p).and_then(|mut f| f.read(&mut buf)).expect("read");
            bytes.extend_from_slice(&buf[..n]);
        }
        bytes
    };
    let (first, second) = paths.split_at(paths.len() / 2);
    let (a, b) = std::thread::scope(|s| {
        let other = s.spawn(|| read(second));
        (read(first), other.join().expect("thread"))
    });
    let tmp = state.join(".pre-compact-floor.tmp");
    let mut file = std::fs::File::create(&tmp).expect("create");
    for _ in 0..2 {
        file.write_all(&a).and_then(|_| file.write_all(&b)).expect("write");
    }
    file.sync_data().expect("fdatasync");
    std::fs::rename(&tmp, state.join("pre-compact-floor.json")).expect("rename");
    println!("Issue # floor: {} bytes", a.len() + b.len());
}
