//! `jkz findings import`'s parsers on arbitrary bytes (the first byte picks
//! the source): parsing never panics, and every finding an accepted input
//! yields names a file and has a bounded message whose identity can be
//! computed.
#![no_main]

use jkz::findings::finding::{MAX_MESSAGE, MAX_TEXT};
use jkz::findings::identity::normalize_message;
use jkz::findings::import::{parse, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let source = [Source::Coderabbit, Source::Verdict, Source::Jg][pick as usize % 3];
    let Ok(parsed) = parse(source, input) else {
        return;
    };
    for f in &parsed.findings {
        assert!(!f.file.is_empty() && !f.file.starts_with("./"), "{f:?}");
        assert!(!f.message.trim().is_empty() && f.message.len() <= MAX_MESSAGE, "{f:?}");
        for text in [&f.detail, &f.suggestion].into_iter().flatten() {
            assert!(text.len() <= MAX_TEXT);
        }
        let _ = normalize_message(&f.message);
    }
});
