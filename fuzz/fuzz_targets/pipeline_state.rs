//! A pipeline file on arbitrary bytes: parsing, the normalized view and
//! validation never panic, and validation agrees with parsing. The hook's
//! own route (the strict scanner and the direct view) agrees with
//! `serde_json`: it accepts exactly the documents a `Value` parse accepts,
//! and views them the same.
#![no_main]

use jkz::pipeline::{scan, validate, view_of_bytes, IssueNumber, PipelineDoc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let issue = IssueNumber::parse("42").expect("a valid issue number");
    let is_json = serde_json::from_slice::<serde_json::Value>(data).is_ok();
    assert_eq!(scan::is_valid_json(data), is_json, "the scanner disagrees with serde_json");
    let parsed = PipelineDoc::parse(issue.clone(), data);
    let problems = validate("42.json", &issue, data);
    let direct = view_of_bytes(&issue, data);
    match parsed {
        Ok(doc) => {
            let view = doc.normalized();
            let _ = serde_json::to_string(&view);
            assert_eq!(direct.as_ref(), Some(&view), "the direct view differs");
        }
        Err(_) => {
            assert!(!problems.is_empty(), "an unparsable file must be invalid");
            assert_eq!(direct, None, "the direct view accepted an unparsable file");
        }
    }
});
