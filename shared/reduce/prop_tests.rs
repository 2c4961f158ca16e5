//! The streaming reducer against a naive oracle.
//!
//! The oracle holds the whole input, splits it into lines, finds the
//! protected blocks with one scan of all of it, and classifies each line,
//! without its colour codes, with the family's rules on its own (the state
//! a rule can carry, its `next`, `run`, `through` and `continued`, followed
//! by hand). From that it knows every signal line the view owes (not a
//! repeat of an earlier one, a warning's message again, an anchor of a
//! repeated warning, or in a family with `templates` a line of an earlier
//! one's shape that names nothing new), and checks what the engine must
//! guarantee whatever the input and however it is read: every such line is
//! in the view verbatim (without colour codes), or the view says how many
//! are not shown (and there are at least that many missing); the view fits
//! its budget (or is the input, unchanged); the kept file is the input byte
//! for byte; the lines shown are input lines, in input order. The
//! engine reads through a reader that returns random chunk sizes down to 1
//! byte, with tiny chunks and line pieces, so every edge of the buffers is
//! reached by small inputs.

use proptest::prelude::*;

use std::collections::{HashMap, HashSet};

use super::ansi::clean;
use super::classifier::Classifier;
use super::item::units;
use super::shape::{identifiers, shape_into, without_location};
use super::stream::{reduce_with, Tuning};
use super::table::{parse_families, FilterTable, Is, SignalKind};
use super::Context;
use crate::blocks::{in_order, BlockScanner};
use crate::lines::test_io::Trickle;
use crate::state_dir::StateDir;

/// A family whose rules the generated lines exercise (the built-in
/// `common` follows them, as it follows every family).
const FAMILY: &str = r#"
[[filters]]
name = "probe"
commands = ["probe"]
[[filters.rules]]
match = '^E\d'
is = "signal:error"
after = 2
[[filters.rules]]
match = '^W\d'
is = "signal:warning"
[[filters.rules]]
match = '^ok '
is = "collapse:passing tests"
[[filters.rules]]
match = '^D: '
is = "context"
next = "signal:id"
[[filters.rules]]
match = '^R\d'
is = "signal:panic"
run = "context"
[[filters.rules]]
match = '^<<<'
is = "signal:id"
through = '^>>>'
[[filters.rules]]
match = '^T: '
is = "signal:error"
continued = '^\t'
[[filters.rules]]
match = '^\S+:\d+: warn '
is = "signal:warning"
after = 1

[[filters]]
name = "probe-tight"
commands = ["probe-tight"]
include = ["probe"]
context = 300

[[filters]]
name = "probe-log"
commands = ["probe-log"]
include = ["probe"]
templates = true
"#;

fn table() -> FilterTable {
    let doc = FAMILY.parse().unwrap();
    FilterTable::built_in().with_user(parse_families(&doc, None).unwrap())
}

/// A line; `noise` weighs passing tests and context against the rest, so
/// some inputs have signals that fit and some have far too many.
fn line(noise: u32) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        5 * noise => (0u32..60).prop_map(|n| format!("ok {n}").into_bytes()),
        2 => (0u32..30).prop_map(|n| format!("E{n} failed at src/x.rs:{n}").into_bytes()),
        2 => (0u32..4).prop_map(|n| format!("W{n} beware").into_bytes()),
        4 * noise => (0u32..2000).prop_map(|n| format!("ctx line {n}").into_bytes()),
        1 => Just(b"ctx the same".to_vec()),
        1 => Just(Vec::new()),
        1 => (0u32..9).prop_map(|n| format!("D: {n}").into_bytes()),
        1 => (0u32..5).prop_map(|n| format!("R{n} assert").into_bytes()),
        1 => prop::sample::select(vec!["<<< ours", ">>> theirs", "\tmore", "T: trouble"])
            .prop_map(|s| s.as_bytes().to_vec()),
        1 => (0u32..3, 0u32..50).prop_map(|(f, n)| format!("f{f}.c:{n}: warn the same").into_bytes()),
        1 => (0u32..50).prop_map(|n| format!("  --> src/x.rs:{n}").into_bytes()),
        1 => (0u32..4, 0u32..99, 0u32..3).prop_map(|(e, conn, p)| {
            format!("E{e} conn *{conn} failed \"/p{p}\"").into_bytes()
        }),
        1 => (0u32..6).prop_map(|n| format!("\x1b[31mE{n} red\x1b[0m\r").into_bytes()),
        1 => prop::sample::select(vec![
            "<!-- jkz:verdict-json {\"v\": 1} -->",
            "```tldr",
            "```",
            "## TL;DR",
            "## Other",
            "TL;DR",
            "===",
            "-->",
            "<!-- jkz:note",
            "<compact-plan>",
            "</compact-plan>",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        1 => prop::collection::vec(any::<u8>().prop_filter("one line", |b| *b != b'\n'), 0..30),
        1 => (0usize..120).prop_map(|n| "é€😀".repeat(n).into_bytes()),
        1 => (1usize..400).prop_map(|n| vec![b'x'; n]),
        1 => (1usize..200).prop_map(|n| {
            let mut l = b"E9 ".to_vec();
            l.extend(std::iter::repeat_n(b'y', n));
            l
        }),
    ]
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    let lines = prop_oneof![Just(1u32), Just(30u32), Just(400u32)]
        .prop_flat_map(|noise| prop::collection::vec(line(noise), 0..1200));
    (lines, any::<bool>()).prop_map(|(lines, end)| {
        let mut input = lines.join(&b'\n');
        if end && !input.is_empty() {
            input.push(b'\n');
        }
        input
    })
}

/// The input's lines (the last without a newline when it has none).
fn lines_of(input: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if input.is_empty() || input.ends_with(b"\n") {
        lines.pop();
    }
    lines
}

/// The signal lines the view owes, as it shows them (without colour
/// codes; `None`: longer than what is kept of a line).
fn signals(
    input: &[u8],
    table: &FilterTable,
    max_line: usize,
    family: &str,
) -> Vec<Option<Vec<u8>>> {
    // `probe-tight` has probe's rules and keeps less context; `probe-log`
    // has them with templates; another command is generic.
    let classifier = Classifier::new(table, family).unwrap();
    let rules = &classifier.rules;
    let mut scanner = BlockScanner::with_max_line(max_line);
    let mut events = Vec::new();
    scanner.scan(input, &mut events);
    scanner.finish(&mut events);
    let blocks = in_order(events);
    let mut out = Vec::new();
    let mut next: Option<Is> = None;
    let mut last_rule: Option<usize> = None;
    let mut region: Option<(usize, u32)> = None;
    let mut seen: HashSet<(Vec<u8>, bool)> = HashSet::new();
    let mut repeat_anchors = 0u32;
    let mut templates: HashMap<Vec<u8>, HashSet<u64>> = HashMap::new();
    let mut start = 0u64;
    let mut buf = Vec::new();
    for line in lines_of(input) {
        let end = start + line.len() as u64 + 1;
        start = end;
        let in_block = blocks
            .iter()
            .any(|b| b.start < end && end - line.len() as u64 - 1 < b.end);
        let whole = line.len() <= max_line;
        let bare = clean(&line[..line.len().min(max_line)], &mut buf).to_vec();
        // What the line is, and the rule that said so.
        let (is, rule) = 'is: {
            if in_block {
                last_rule = None;
                break 'is (Is::Signal(SignalKind::Block), None);
            }
            if let Some((r, left)) = region.take() {
                let claimed = match (&rules[r].through, &rules[r].continued) {
                    (Some(end), _) => Some(!end.is_match(&bare)),
                    (None, Some(c)) => c.is_match(&bare).then_some(true),
                    _ => None,
                };
                if let Some(more) = claimed {
                    if more && left > 1 {
                        region = Some((r, left - 1));
                    }
                    last_rule = None;
                    next = None;
                    break 'is (rules[r].is.clone(), None);
                }
            }
            let matched = classifier.rule_for(&bare);
            let (mut is, rule) = match matched {
                Some(r) if rules[r].run.is_some() && last_rule == Some(r) => {
                    (rules[r].run.clone().unwrap(), None)
                }
                Some(r) => (rules[r].is.clone(), Some(r)),
                None => (Is::Context, None),
            };
            last_rule = matched;
            if !bare.iter().all(u8::is_ascii_whitespace) {
                if let Some(n) = next.take() {
                    if !matches!(is, Is::Signal(_)) {
                        is = n;
                    }
                }
            }
            if let Some(r) = rule {
                if let Some(n) = &rules[r].next {
                    next = Some(n.clone());
                }
                if rules[r].through.is_some() || rules[r].continued.is_some() {
                    region = Some((r, super::table::MAX_THROUGH));
                }
            }
            (is, rule)
        };
        match is {
            Is::Signal(kind) => {
                let message = if kind == SignalKind::Warning {
                    without_location(&bare).to_vec()
                } else {
                    bare.clone()
                };
                let anchors_left = std::mem::take(&mut repeat_anchors);
                let repeated = seen.contains(&(message.clone(), whole));
                if repeated && kind == SignalKind::Warning {
                    repeat_anchors = rule.map_or(0, |r| rules[r].after).max(1);
                }
                let similar = !repeated && classifier.templates && rule.is_some() && {
                    let mut shape = Vec::new();
                    shape_into(&bare, &mut shape);
                    let names = identifiers(&bare);
                    let old = templates
                        .get(&shape)
                        .is_some_and(|known| names.iter().all(|n| known.contains(n)));
                    if !old {
                        templates.entry(shape).or_default().extend(names);
                    }
                    old
                };
                if similar {
                    continue;
                }
                if repeated || (kind == SignalKind::Anchor && anchors_left > 0) {
                    if kind == SignalKind::Anchor && anchors_left > 0 {
                        repeat_anchors = anchors_left;
                    }
                    continue;
                }
                seen.insert((message, whole));
                out.push(whole.then_some(bare));
            }
            Is::Context => repeat_anchors = repeat_anchors.saturating_sub(1),
            Is::Collapse(_) => {}
        }
    }
    out
}

/// How many signal lines the view says it does not show.
fn not_shown(view: &[u8]) -> Option<u64> {
    let text = String::from_utf8_lossy(view);
    let line = text
        .lines()
        .find(|l| l.starts_with("[jkz: ") && l.contains(" signal lines not shown "))?;
    let n = line["[jkz: ".len()..].split(' ').next()?;
    n.replace(',', "").parse().ok()
}

fn run(
    input: &[u8],
    budget: usize,
    tuning: Tuning,
    read: usize,
    keep: Option<&StateDir>,
    command: &str,
) -> super::Reduced {
    let ctx = Context {
        command: Some(command),
        exit_code: None,
        budget_chars: budget,
        keep,
        client: None,
        ..Context::default()
    };
    let mut reader = Trickle(input, read);
    let mut warnings = Vec::new();
    let reduced = reduce_with(&mut reader, &ctx, &table(), &mut warnings, tuning).unwrap();
    assert!(
        warnings.is_empty(),
        "{}",
        String::from_utf8_lossy(&warnings)
    );
    reduced
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_signal_is_shown_or_counted_the_view_fits_and_the_kept_file_is_the_input(
        input in input(),
        budget in 1000usize..4000,
        max_line in prop::sample::select(vec![16usize, 64, 4096]),
        chunk_extra in 0usize..300,
        read in 1usize..3000,
        command in prop::sample::select(vec!["probe --all", "probe-tight", "probe-log"]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let tuning = Tuning { chunk: max_line + chunk_extra, max_line };
        let r = run(&input, budget, tuning, read, Some(&state), command);
        let view = &r.view;
        if !r.stats.reduced {
            prop_assert_eq!(view, &input);
            prop_assert!(r.stats.full_output.is_none());
            prop_assert!(std::fs::read_dir(dir.path().join("context-offload")).map_or(true, |mut d| d.next().is_none()), "nothing kept");
            return Ok(());
        }
        prop_assert!(units(view) <= budget, "{} > {budget}", units(view));
        let kept = r.stats.full_output.clone().expect("a reduced view keeps the input");
        prop_assert_eq!(std::fs::read(&kept).unwrap(), input.clone(), "the kept file is the input");

        // Every signal line, verbatim, or counted as not shown.
        let shown: std::collections::HashSet<&[u8]> = view.split(|&b| b == b'\n').collect();
        let mut missing: Vec<&Vec<u8>> = Vec::new();
        let mut cut = 0;
        let family = if command == "probe-log" { "probe-log" } else { "probe" };
        let all = signals(&input, &table(), max_line, family);
        for s in &all {
            match s {
                Some(line) if shown.contains(&line[..]) => {}
                Some(line) => missing.push(line),
                None => cut += 1,
            }
        }
        missing.sort();
        missing.dedup();
        if !missing.is_empty() || cut > 0 {
            let n = not_shown(view);
            prop_assert!(n.is_some(), "{} signal lines missing, no note: {:?}\n{}", missing.len(), missing.first().map(|l| String::from_utf8_lossy(l)), String::from_utf8_lossy(view));
            // Each missing text is the text of a signal not shown (a
            // repeat is only ever counted against an earlier signal).
            prop_assert!(n.unwrap() as usize >= missing.len(), "note says {n:?}, {} missing", missing.len());
        }

        // The lines shown are input lines (without colour codes), in order.
        let mut buf = Vec::new();
        let input_lines: Vec<Vec<u8>> = lines_of(&input).into_iter().map(|l| clean(l, &mut buf).to_vec()).collect();
        let mut at = 0;
        for l in view.split(|&b| b == b'\n').filter(|l| !l.is_empty() && !l.starts_with(b"[jkz: ")) {
            match input_lines[at..].iter().position(|x| *x == l) {
                Some(p) => at += p + 1,
                None => prop_assert!(false, "{:?} is not the next input line", String::from_utf8_lossy(l)),
            }
        }
    }

    #[test]
    fn the_view_does_not_depend_on_how_the_input_is_read(
        input in input(),
        budget in 1000usize..3000,
        max_line in prop::sample::select(vec![16usize, 64]),
        chunk_extra in 0usize..40,
        read in 1usize..40,
        command in prop::sample::select(vec!["probe", "probe-tight", "probe-log", "unknown"]),
    ) {
        let tiny = run(&input, budget, Tuning { chunk: max_line + chunk_extra, max_line }, read, None, command);
        let whole = run(&input, budget, Tuning { chunk: 1 << 20, max_line }, usize::MAX, None, command);
        prop_assert_eq!(&tiny.view, &whole.view);
        prop_assert_eq!(tiny.stats, whole.stats);
    }
}

/// The count a `not shown` note gives covers what is missing: checked
/// exactly on an input where it is known.
#[test]
fn three_hundred_errors_in_a_small_budget_keep_the_first_of_each_kind_and_the_last() {
    let mut input = String::new();
    for i in 0..300 {
        let kind = [
            "mismatched types",
            "unresolved name",
            "borrow of moved value",
        ][i % 3];
        input.push_str(&format!("E{} {kind} `v{i}`\n  ctx {i}\n", i % 10));
    }
    input.push_str("W1 the last warning\n");
    let r = run(
        input.as_bytes(),
        2000,
        Tuning::default(),
        usize::MAX,
        None,
        "probe",
    );
    let view = String::from_utf8(r.view).unwrap();
    assert!(units(view.as_bytes()) <= 2000);
    for first in [
        "E0 mismatched types `v0`",
        "E1 unresolved name `v1`",
        "E2 borrow of moved value `v2`",
        "W1 the last warning",
    ] {
        assert!(view.lines().any(|l| l == first), "{first}\n{view}");
    }
    assert!(
        view.contains("E9 borrow of moved value `v299`"),
        "the last error\n{view}"
    );
    let shown = view.lines().filter(|l| l.starts_with('E')).count() as u64;
    assert_eq!(not_shown(view.as_bytes()), Some(301 - shown - 1), "{view}");
    assert!(r.stats.overflow);
}
