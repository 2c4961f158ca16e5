//! The markdown structure and offload on arbitrary documents: compression
//! never panics; it refuses a document only when a line in it looks like an
//! offload marker and restore refuses the document too; otherwise
//! `restore(compress(x)) == restore(x)` (which is `x` when no line looks
//! like a marker) byte for byte, and compressing the output again changes
//! nothing.
#![no_main]

use std::sync::OnceLock;

use jkz::compress::marker_lines::find_markers;
use jkz::compress::{compress, restore, Excerpt, Settings, Source, RESTORE_FAILED};
use jkz::exit::Failure;
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

fn run(doc: &[u8], settings: Settings) -> Result<Vec<u8>, Failure> {
    let src = Source::spool(doc).expect("spool to a temp file");
    let mut out = Vec::new();
    compress(&src, settings, state(), &mut out, &mut std::io::sink())?;
    Ok(out)
}

fn run_restore(doc: &[u8]) -> Result<Vec<u8>, Failure> {
    let src = Source::spool(doc).expect("spool to a temp file");
    let mut out = Vec::new();
    restore(&src, state(), &mut out)?;
    Ok(out)
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
    let lookalikes = find_markers(&Source::spool(doc).expect("spool"))
        .expect("scan")
        .len();
    let once = match run(doc, settings) {
        Ok(once) => once,
        Err(refused) => {
            assert_eq!(
                refused.code, RESTORE_FAILED,
                "compress: {}",
                refused.message
            );
            assert!(
                lookalikes > 0,
                "refused without a marker-like line: {}",
                refused.message
            );
            assert!(
                run_restore(doc).is_err(),
                "compress refused what restore accepts: {}",
                refused.message
            );
            return;
        }
    };
    // Markers the input already had are expanded too.
    let expected = if lookalikes == 0 {
        doc.to_vec()
    } else {
        run_restore(doc).expect("restore accepts what compress accepted")
    };
    let back = run_restore(&once).expect("restore of fresh output");
    assert!(back == expected, "restore(compress(x)) != restore(x)");
    let twice = run(&once, settings).expect("compress of compressed output");
    assert!(twice == once, "compress is not idempotent");
});
