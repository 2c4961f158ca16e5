//! The registry's reading of a Bash command on arbitrary bytes, and the
//! guard's classification of what it writes: nothing panics (a hook that
//! panics guards nothing), every issue it names is digits, every write it
//! cannot name says what it is, and the directory such a write is known to
//! lie in is absolute.
#![no_main]

use std::path::Path;

use jkz::registry::bash::{writes, Write};
use jkz::registry::target::{classify, Guarded};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let command = String::from_utf8_lossy(data);
    let guarded = Guarded {
        state_root: "/p/state".into(),
        pipeline_dir: "/p/state/pipeline".into(),
    };
    for w in writes(&command, Path::new("/p")) {
        match &w {
            Write::StateSet(n) => assert!(!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
            Write::Path { .. } => {}
            Write::Unknown { what, within } => {
                assert!(!what.is_empty());
                assert!(within.as_deref().is_none_or(Path::is_absolute));
            }
        }
        let _ = classify(&w, &guarded);
    }
});
