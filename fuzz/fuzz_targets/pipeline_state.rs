//! A pipeline file on arbitrary bytes: parsing, the normalized view and
//! validation never panic, and validation agrees with parsing.
#![no_main]

use jkz::pipeline::{validate, IssueNumber, PipelineDoc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let issue = IssueNumber::parse("42").expect("a valid issue number");
    let parsed = PipelineDoc::parse(issue.clone(), data);
    let problems = validate("42.json", &issue, data);
    match parsed {
        Ok(doc) => {
            let view = doc.normalized();
            let _ = serde_json::to_string(&view);
        }
        Err(_) => assert!(!problems.is_empty(), "an unparsable file must be invalid"),
    }
});
