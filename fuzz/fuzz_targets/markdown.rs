//! The markdown structure and offload on arbitrary documents: compression
//! never panics, `restore(compress(x)) == x` byte for byte, and compressing
//! the output again changes nothing.
#![no_main]

use std::sync::OnceLock;

use jkz::compress::{compress, restore, Excerpt, Settings, Source};
use jkz::state_dir::StateDir;
use libfuzzer_sys::fuzz_target;

fn state() -> &'static StateDir {
    static DIR: OnceLock<(tempfile::TempDir, StateDir)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().expect("temp dir");
        let state = StateDir::at(tmp.path().join("state"));
        (tmp, state)
    })
    .1
}

fn run(doc: &[u8], settings: Settings) -> Vec<u8> {
    let src = Source::spool(doc).expect("spool to a temp file");
    let mut out = Vec::new();
    compress(&src, settings, state(), &mut out, &mut std::io::sink()).expect("compress");
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&knob, doc)) = data.split_first() else {
        return;
    };
    let settings = Settings {
        threshold: 1024,
        excerpt: if knob & 1 == 0 {
            Excerpt::Bytes(u64::from(knob) * 2)
        } else {
            Excerpt::Lines(u64::from(knob % 8))
        },
        budget: (knob & 2 != 0).then_some(u64::from(knob) * 16),
    };
    let once = run(doc, settings);
    let src = Source::spool(&once[..]).expect("spool");
    let mut back = Vec::new();
    restore(&src, state(), &mut back).expect("restore of fresh output");
    assert!(back == doc, "restore(compress(x)) != x");
    let twice = run(&once, settings);
    assert!(twice == once, "compress is not idempotent");
});
