//! The output-guard measurement every Chat Completions client's test makes:
//! a ~400 KB shell output with a verdict and a TL;DR in the middle and a
//! last line, what the model receives of it without jkz and with it, the
//! table, and what must hold.

use serde_json::json;

use super::pipeline::issue_42_in_a_fix_cycle;
use super::stub_model::{Request, Turn};
use super::RealClient;
use jkz::thousands::thousands;

/// The three things that must reach the model: (name, marker).
const NEEDED: [(&str, &str); 3] = [
    ("verdict (`jkz:verdict-json`)", "GUAVA-BLOCKER"),
    ("TL;DR (`<tldr>`)", "KIWI-TLDR"),
    ("last line", "LAST-LINE"),
];

/// A build log of ~400 KB: 4,300 lines, the verdict and the TL;DR, 4,300
/// more, the last line.
pub fn build_log() -> String {
    let mut big = String::new();
    for i in 0..4300 {
        big.push_str(&format!("compiling unit {i}: ok, nothing to report here\n"));
    }
    big.push_str(
        "<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"blocking\":\"GUAVA-BLOCKER in src/pay.rs\"} -->\n",
    );
    big.push_str("<tldr>\nKIWI-TLDR: the payment rounding is wrong\n</tldr>\n");
    for i in 0..4300 {
        big.push_str(&format!("linking unit {i}: ok, nothing to report here\n"));
    }
    big.push_str("LAST-LINE: 8600 units built\n");
    assert!((390_000..420_000).contains(&big.len()), "{}", big.len());
    big
}

/// What the model of client `C` receives of [`build_log`] read with its
/// shell tool `shell` (`cat build.log`), with jkz installed or not; and
/// the run's report.
pub fn received<C: RealClient>(shell: &'static str, with_jkz: bool) -> (String, String) {
    let server = C::model(move |r: &Request| match r.tool_outputs().len() {
        0 => Turn::Call {
            name: shell.into(),
            input: json!({"command": "cat build.log", "description": "run"}),
        },
        _ => Turn::Text("Done.".into()),
    });
    let project = C::project(&server);
    issue_42_in_a_fix_cycle(&project);
    project.write("build.log", build_log());
    if with_jkz {
        project.install_jkz();
    }
    let run = project.run("Build it.", &[]);
    run.assert_ok();
    let last = C::turns(&server).pop().expect("requests");
    let outputs: Vec<String> = last.tool_outputs().into_iter().map(|o| o.text).collect();
    assert_eq!(outputs.len(), 1, "{outputs:?}\n{}", run.report());
    (outputs[0].clone(), run.report())
}

/// Prints the table of what `without` and `with` (the tool output the
/// model received without jkz and with it) kept of [`build_log`], and
/// asserts that the client's own cut lost at least one of the three (else
/// the test measures nothing) and that jkz's view kept all three.
pub fn assert_kept_by_jkz(client: &str, without: &str, with: &str, report: &str) {
    let mut table =
        String::from("| in what the model receives | without jkz | with jkz |\n|---|---|---|\n");
    for (name, marker) in NEEDED {
        let mark = |s: &str| if s.contains(marker) { "kept" } else { "lost" };
        table.push_str(&format!(
            "| {name} | {} | {} |\n",
            mark(without),
            mark(with)
        ));
    }
    table.push_str(&format!(
        "| characters | {} | {} |\n",
        thousands(without.chars().count() as u64),
        thousands(with.chars().count() as u64)
    ));
    eprintln!(
        "{client}, a {} byte shell output:\n{table}",
        build_log().len()
    );
    assert!(
        NEEDED.iter().any(|(_, marker)| !without.contains(marker)),
        "{client}'s own cut kept all three: the test no longer measures anything\n{table}"
    );
    for (_, marker) in NEEDED {
        assert!(
            with.contains(marker),
            "{marker}\n{table}\n{report}\n{with:.3000}"
        );
    }
}
