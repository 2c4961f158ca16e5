//! `jkz stats` and the ledger's Prometheus counters, through the real
//! binaries, from ledger lines written as the hooks write them (old lines
//! without the newer fields among them).

use chrono::{Duration, SecondsFormat, Utc};
use serde_json::{json, Value};

use crate::ui::Server;
use crate::util::{Cmd, Dir};

fn jkz(dir: &Dir) -> Cmd {
    dir.cmd("jkz").arg("--state-dir").arg(dir.join("state"))
}

fn ago(minutes: i64) -> String {
    (Utc::now() - Duration::minutes(minutes)).to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A ledger of five calls: a failing `cargo test` reduced in the wrap, its
/// repeat, a `git log` the guard reduced, a build where jkz showed more
/// than the client would have, and a line from before families existed.
fn ledger(dir: &Dir) {
    let lines = [
        json!({"ts": ago(10), "tool": "Bash", "call": "cargo test --locked 2>&1", "full": 400_000,
               "client": 10_000, "jkz": 6_000, "blocks": 1, "ms": 4, "via": "wrap",
               "family": "test", "exit": 101, "signals": 9, "signals_shown": 9}),
        json!({"ts": ago(9), "tool": "Bash", "call": "cargo test --locked 2>&1", "full": 400_000,
               "client": 10_000, "jkz": 120, "blocks": 0, "ms": 1, "via": "wrap",
               "family": "test", "exit": 101, "repeat": true}),
        json!({"ts": ago(8), "tool": "Bash", "call": "git -C repo log -n 200", "full": 136_229,
               "client": 2_100, "jkz": 1_900, "blocks": 0, "ms": 3, "via": "post-tool-use",
               "family": "git", "exit": 0, "signals": 0, "signals_shown": 0}),
        json!({"ts": ago(7), "tool": "Bash", "call": "cd web && npm run build", "full": 90_000,
               "client": 2_000, "jkz": 9_500, "blocks": 2, "ms": 2, "via": "post-tool-use",
               "family": "build", "exit": 0, "signals": 40, "signals_shown": 31}),
        // Three hours old, and written before the newer fields.
        json!({"ts": ago(180), "tool": "Read", "call": "Read", "full": 90_000,
               "client": 90_000, "jkz": 19_000, "blocks": 1, "ms": 5}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    dir.write("state/tool-output.jsonl", text + "not a ledger line\n");
}

#[test]
fn stats_by_family_as_json_counts_against_the_client_and_keeps_negatives() {
    let dir = Dir::new();
    ledger(&dir);
    let run = jkz(&dir)
        .args(["stats", "--by", "family", "--json"])
        .run()
        .success();
    let s: Value = serde_json::from_slice(run.stdout()).unwrap();
    let families = s["families"].as_object().unwrap();
    assert_eq!(
        families.keys().collect::<Vec<_>>(),
        ["-", "build", "git", "test"],
        "{}",
        run.report()
    );
    let test = &s["families"]["test"];
    assert_eq!(test["calls"], 2);
    assert_eq!(test["client_bytes"], 20_000);
    assert_eq!(test["jkz_bytes"], 6_120);
    assert_eq!(test["saved_bytes"], 13_880);
    assert_eq!(test["saved_tokens_estimate"], 3_470);
    assert_eq!(test["saved_percent"], 69.4);
    assert_eq!(test["repeats"], 1);
    // Only the call that reported its signal lines counts them.
    assert_eq!(test["signal_calls"], 1);
    assert_eq!(
        (test["signals_shown"].clone(), test["signals"].clone()),
        (json!(9), json!(9))
    );
    // jkz showed more than the client would have: negative, not 0.
    let build = &s["families"]["build"];
    assert_eq!(build["saved_bytes"], -7_500);
    assert_eq!(build["saved_tokens_estimate"], -1_875);
    assert_eq!(build["saved_percent"], -375.0);
    assert_eq!(s["families"]["-"]["saved_bytes"], 71_000);
    assert_eq!(s["total"]["calls"], 5);
    assert_eq!(s["total"]["saved_bytes"], 13_880 + 200 - 7_500 + 71_000);
    assert_eq!(s["bad_lines"], 1);
    // Every grouping is in the JSON, whatever --by says.
    assert_eq!(s["tools"]["Bash"]["calls"], 4);
    assert_eq!(s["commands"]["cargo test"]["calls"], 2);
    assert_eq!(s["commands"]["git log"]["calls"], 1);
    assert_eq!(s["commands"]["npm run"]["calls"], 1);
    assert_eq!(s["since"], Value::Null);
}

#[test]
fn stats_by_command_prints_an_aligned_table_with_the_estimate_labelled() {
    let dir = Dir::new();
    ledger(&dir);
    let run = jkz(&dir).args(["stats", "--by", "command"]).run().success();
    let text = run.stdout_str();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "COMMAND",
            "CALLS",
            "RAW",
            "CLIENT",
            "JKZ",
            "SAVED",
            "SAVED%",
            "≈TOKENS",
            "PREVIEWED",
            "REPEATS",
            "SIGNALS"
        ],
        "{text}"
    );
    assert_eq!(
        rows[1],
        [
            "cargo", "test", "2", "800,000", "20,000", "6,120", "13,880", "69.4%", "3,470", "2",
            "1", "9/9"
        ],
        "{text}"
    );
    let npm = rows.iter().find(|r| r[..2] == ["npm", "run"]).unwrap();
    assert_eq!(npm[6..9], ["-7,500", "-375.0%", "-1,875"], "{text}");
    let total = rows.iter().find(|r| r[0] == "total").unwrap();
    assert_eq!(total[5], "77,580", "{text}");
    assert!(text.contains("(bytes/4, an estimate)"), "{text}");
    assert!(text.contains("1 ledger lines could not be read"), "{text}");
    let widths: Vec<usize> = text.lines().take(6).map(|l| l.chars().count()).collect();
    assert!(widths.iter().all(|w| *w == widths[0]), "{text}");
}

#[test]
fn stats_since_leaves_out_older_calls_and_refuses_a_bad_span() {
    let dir = Dir::new();
    ledger(&dir);
    let run = jkz(&dir)
        .args(["stats", "--since", "1h", "--json"])
        .run()
        .success();
    let s: Value = serde_json::from_slice(run.stdout()).unwrap();
    assert_eq!(s["total"]["calls"], 4, "{}", run.report());
    assert_eq!(s["before_window"], 1);
    assert!(s["tools"].get("Read").is_none(), "{}", run.report());
    assert!(s["since"].as_str().unwrap().ends_with('Z'));
    let run = jkz(&dir).args(["stats", "--since", "4h"]).run().success();
    assert!(run.stdout_str().contains("Read "), "{}", run.report());
    assert!(
        run.stdout_str().contains("; 0 earlier left out."),
        "{}",
        run.report()
    );

    let run = jkz(&dir)
        .args(["stats", "--since", "yesterday"])
        .run()
        .expect_code(2);
    assert!(
        run.stderr_str()
            .contains("\"yesterday\" is not a point in time: expected a span back from now"),
        "{}",
        run.report()
    );
    assert!(run.stdout().is_empty());
}

#[test]
fn stats_help_says_what_saved_counts_against() {
    let dir = Dir::new();
    let run = dir.cmd("jkz").args(["stats", "--help"]).run().success();
    let help = run.stdout_str();
    for want in [
        "--by <GROUPING>",
        "--since <WHEN>",
        "never the raw size",
        "negative when jkz added",
        "bytes/4, an estimate",
    ] {
        assert!(help.contains(want), "{want:?} in\n{help}");
    }
}

fn ledger_counter(text: &str, metric: &str, family: &str, via: &str) -> f64 {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let sample = scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == metric
                && s.labels.get("family") == Some(family)
                && s.labels.get("via") == Some(via)
        })
        .unwrap_or_else(|| panic!("no {metric}{{family={family},via={via}}} in\n{text}"));
    match sample.value {
        prometheus_parse::Value::Counter(v) => v,
        ref other => panic!("{metric} is no counter: {other:?}"),
    }
}

/// The counters both `jkz metrics --format prometheus` and `/metrics` show.
fn assert_ledger_counters(text: &str) {
    let c = |metric, family, via| ledger_counter(text, metric, family, via);
    assert_eq!(c("jkz_tool_output_calls_total", "test", "wrap"), 2.0);
    assert_eq!(
        c("jkz_tool_output_raw_bytes_total", "test", "wrap"),
        800_000.0
    );
    assert_eq!(
        c("jkz_tool_output_client_bytes_total", "test", "wrap"),
        20_000.0
    );
    assert_eq!(
        c("jkz_tool_output_shown_bytes_total", "test", "wrap"),
        6_120.0
    );
    assert_eq!(c("jkz_tool_output_repeats_total", "test", "wrap"), 1.0);
    assert_eq!(
        c(
            "jkz_tool_output_signal_lines_total",
            "build",
            "post-tool-use"
        ),
        40.0
    );
    assert_eq!(
        c(
            "jkz_tool_output_signal_lines_shown_total",
            "build",
            "post-tool-use"
        ),
        31.0
    );
    // Where jkz added text, shown exceeds client; nothing goes negative.
    assert_eq!(
        c(
            "jkz_tool_output_client_bytes_total",
            "build",
            "post-tool-use"
        ),
        2_000.0
    );
    assert_eq!(
        c(
            "jkz_tool_output_shown_bytes_total",
            "build",
            "post-tool-use"
        ),
        9_500.0
    );
    assert_eq!(c("jkz_tool_output_calls_total", "-", "-"), 1.0);
    assert!(
        !text
            .lines()
            .any(|l| !l.starts_with('#') && l.contains("saved")),
        "saved can go negative: no counter\n{text}"
    );
    assert!(text.contains("# TYPE jkz_tool_output_calls_total counter\n"));
    assert!(text.contains("# HELP jkz_tool_output_client_bytes_total "));
}

#[test]
fn prometheus_counts_the_ledger_by_family_and_path() {
    let dir = Dir::new();
    ledger(&dir);
    let run = jkz(&dir)
        .args(["metrics", "--format", "prometheus"])
        .run()
        .success();
    assert_ledger_counters(&run.stdout_str());
}

#[test]
fn ui_metrics_serves_the_ledger_counters_too() {
    let dir = Dir::new();
    ledger(&dir);
    let server = Server::start(&dir.join("state"));
    let bearer = server.bearer();
    let a = server.answer("GET", "/metrics", &[("Authorization", &bearer)], "");
    assert_eq!(a.status, 200, "{}", a.body);
    assert_ledger_counters(&a.body);
}
