//! The registry's reading of a Bash command on arbitrary bytes: it never
//! panics (a hook that panics guards nothing), and every write it names is
//! an issue number or an absolute path when the command ran in one.
#![no_main]

use std::path::Path;

use jkz::registry::bash::{writes, Write};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let command = String::from_utf8_lossy(data);
    for w in writes(&command, Path::new("/p")) {
        match w {
            Write::StateSet(n) => assert!(!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
            Write::Path(_) => {}
        }
    }
});
