//! The git index reader (which paths a checkout tracks below the state
//! directory) on arbitrary bytes: it never panics and never claims more than
//! it found: the paths it names lie below the directory asked about, at most
//! as many as asked for, and no more than it counted.
#![no_main]

use jkz::git::index::{tracked_in_bytes, ObjectFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for format in [ObjectFormat::Sha1, ObjectFormat::Sha256] {
        for dir in [&b"state"[..], b""] {
            if let Ok(found) = tracked_in_bytes(data, format, dir, 3) {
                assert!(found.first.len() <= 3 && found.first.len() <= found.count);
                for path in &found.first {
                    assert!(
                        dir.is_empty()
                            || path.as_slice() == dir
                            || (path.starts_with(dir) && path.get(dir.len()) == Some(&b'/')),
                        "{path:?} is not below {dir:?}"
                    );
                }
            }
        }
    }
});
