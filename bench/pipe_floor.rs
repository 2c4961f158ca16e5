//! The floor for `jkz-truncate` on this machine: the least any program can
//! do with a pipe's bytes. Built by `bench/truncate.sh` with plain rustc
//! (no dependencies).
//!
//!   pipe_floor read          read stdin into one 256 KiB buffer, discard
//!   pipe_floor copy FILE     the same, and write every byte to FILE
//!                            (no fsync), as the full output does
use std::io::{Read, Write};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut copy = match args.get(1).map(String::as_str) {
        Some("read") => None,
        Some("copy") => Some(std::fs::File::create(&args[2]).expect("create the copy")),
        _ => panic!("usage: pipe_floor read | pipe_floor copy FILE"),
    };
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = stdin.read(&mut buf).expect("read stdin");
        if n == 0 {
            break;
        }
        if let Some(file) = &mut copy {
            file.write_all(&buf[..n]).expect("write the copy");
        }
    }
}
