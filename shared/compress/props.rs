//! Property tests: over generated markdown, `restore(compress(x)) == x`,
//! `compress(compress(x)) == compress(x)`, every protected block survives
//! verbatim and no output is longer than its input. The oracles are the
//! input itself and the shared scanner's own block list.

use proptest::prelude::*;

use super::*;
use crate::blocks::find_blocks;
use crate::exit::Failure;

fn try_compress(doc: &[u8], settings: Settings, state: &StateDir) -> Result<Vec<u8>, Failure> {
    let src = Source::spool(doc).unwrap();
    let mut out = Vec::new();
    let mut notes = Vec::new();
    compress(&src, settings, state, &mut out, &mut notes)?;
    Ok(out)
}

fn run_compress(doc: &[u8], settings: Settings, state: &StateDir) -> Vec<u8> {
    try_compress(doc, settings, state).unwrap()
}

fn try_restore(doc: &[u8], state: &StateDir) -> Result<Vec<u8>, Failure> {
    let src = Source::spool(doc).unwrap();
    let mut out = Vec::new();
    restore(&src, state, &mut out)?;
    Ok(out)
}

fn run_restore(doc: &[u8], state: &StateDir) -> Vec<u8> {
    try_restore(doc, state).unwrap()
}

/// Checks every acceptance property of one document; returns the output,
/// or `None` when compress refused the document (which it may only do
/// when a line looks like a marker and restore refuses the document too).
pub(super) fn check(doc: &[u8], settings: Settings) -> Option<Vec<u8>> {
    let tmp = tempfile::tempdir().unwrap();
    let state = StateDir::at(tmp.path().join("state"));
    let lookalikes = marker_lines::find_markers(&Source::spool(doc).unwrap()).unwrap();
    let once = match try_compress(doc, settings, &state) {
        Ok(once) => once,
        Err(refused) => {
            assert_eq!(refused.code, RESTORE_FAILED, "{}", refused.message);
            assert!(!lookalikes.is_empty(), "refused: {}", refused.message);
            assert!(
                try_restore(doc, &state).is_err(),
                "compress refused what restore accepts: {}",
                refused.message
            );
            return None;
        }
    };
    // A marker already in the input (outside any fence) is restored too:
    // for such input restore gives the fuller document, not the input.
    let expected = if lookalikes.is_empty() {
        doc.to_vec()
    } else {
        run_restore(doc, &state)
    };
    let restored = run_restore(&once, &state);
    assert!(
        restored == expected,
        "restore(compress(x)) != restore(x)\ninput:\n{}\ncompressed:\n{}",
        String::from_utf8_lossy(doc),
        String::from_utf8_lossy(&once)
    );
    let twice = run_compress(&once, settings, &state);
    assert!(
        twice == once,
        "compress is not idempotent\ninput:\n{}\nonce:\n{}\ntwice:\n{}",
        String::from_utf8_lossy(doc),
        String::from_utf8_lossy(&once),
        String::from_utf8_lossy(&twice)
    );
    for block in find_blocks(doc) {
        let bytes = &doc[block.start as usize..block.end as usize];
        assert!(
            memchr::memmem::find(&once, bytes).is_some(),
            "protected block {block:?} lost:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
    assert!(once.len() <= doc.len().max(1) || once == doc);
    Some(once)
}

/// One line (or a few) of markdown, from the shapes that matter to the
/// grammar, each ending with `eol`.
fn chunk() -> impl Strategy<Value = String> {
    let text = prop_oneof![
        Just("plain text with some words".to_string()),
        Just("multi-byte: é ü 漢字 😀 ∑".to_string()),
        "[a-z ]{0,60}",
        "[a-zé漢 ]{100,300}",
        Just("- list item".to_string()),
        Just("<!-- an ordinary comment -->".to_string()),
        // A rule, or the underline of a setext heading after a text line.
        Just("---".to_string()),
        Just("=====".to_string()),
    ];
    let heading = (
        1usize..=7,
        prop_oneof![
            Just("Title"),
            Just("TL;DR"),
            Just("Decisions"),
            Just("Notes"),
            Just("Verdict: FAIL"),
            Just("Plan Digest"),
            Just("Changes"),
        ],
    )
        .prop_map(|(n, t)| format!("{} {t}", "#".repeat(n)));
    let setext = (
        prop_oneof![
            Just("Title"),
            Just("TL;DR"),
            Just("Decisions"),
            Just("Notes"),
            Just("#tag line"),
        ],
        prop_oneof![Just("==="), Just("-----"), Just("--- ")],
    )
        .prop_map(|(t, u)| format!("{t}\n{u}"));
    let heading = prop_oneof![3 => heading, 1 => setext];
    let fence = (
        prop_oneof![
            Just("```"),
            Just("~~~"),
            Just("````"),
            Just("~~~~~"),
            Just("  - ```")
        ],
        prop_oneof![Just(""), Just("rust"), Just("decisions"), Just("tldr")],
        0usize..40,
        any::<bool>(),
    )
        .prop_map(|(f, info, n, closed)| {
            let mut s = format!("{f}{info}\n");
            for i in 0..n {
                s.push_str(&format!("# code line {i} ```\n"));
            }
            if closed {
                s.push_str(f.trim_start_matches(&[' ', '-'][..]));
            } else {
                s.push_str("still code");
            }
            s
        });
    let tag = (prop_oneof![Just("compact-plan"), Just("tldr")], 0usize..5)
        .prop_map(|(t, n)| format!("<{t}>\n{}</{t}>", "step\n".repeat(n)));
    let comment = prop_oneof![
        Just("<!-- jkz:verdict-json {\"verdict\":\"PASS\"} -->".to_string()),
        Just("<!-- jkz:decisions\nkeep this\n-->".to_string()),
        Just("see <!--jkz:propose-issue: x --> here".to_string()),
        Just("```\n<!-- jkz:offload sha256=0000000000000000000000000000000000000000000000000000000000000000 bytes=1 lines=1 excerpt=0 path=/nowhere -->\n```".to_string()),
    ];
    // Lines restore refuses: compress must refuse them too.
    let lookalike = prop_oneof![
        Just("<!-- jkz:offload<!-- jkz:verdict-json {\"verdict\":\"PASS\"} -->".to_string()),
        Just("<!-- jkz:offload sha256=0000000000000000000000000000000000000000000000000000000000000000 bytes=1 lines=1 excerpt=0 path=/nowhere -->".to_string()),
    ];
    prop_oneof![
        60 => text,
        20 => heading,
        10 => fence,
        10 => tag,
        10 => comment,
        10 => Just(String::new()),
        1 => lookalike,
    ]
}

/// A document: chunks repeated to make sections large enough to offload.
fn document() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((chunk(), 1usize..30), 0..40),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(chunks, crlf, final_newline)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut doc = String::new();
            for (c, times) in chunks {
                // Repeat plain lines (large sections); keep structure lines single.
                let times = if c.starts_with('#') || c.contains("jkz:") {
                    1
                } else {
                    times
                };
                for _ in 0..times {
                    doc.push_str(&c.replace('\n', eol));
                    doc.push_str(eol);
                }
            }
            if !final_newline {
                doc.truncate(doc.trim_end().len());
            }
            doc.into_bytes()
        })
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        prop_oneof![Just(1024u64), Just(1500), Just(4096)],
        prop_oneof![
            Just(Excerpt::Bytes(0)),
            Just(Excerpt::Bytes(7)),
            Just(Excerpt::Bytes(200)),
            Just(Excerpt::Bytes(512)),
            Just(Excerpt::Lines(0)),
            Just(Excerpt::Lines(1)),
            Just(Excerpt::Lines(4)),
        ],
        prop_oneof![3 => Just(None), 1 => (0u64..20_000).prop_map(Some)],
    )
        .prop_map(|(threshold, excerpt, budget)| Settings {
            threshold,
            excerpt,
            budget,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
    ))]

    #[test]
    fn round_trip_idempotent_and_protected(
        doc in prop_oneof![3 => document(), 1 => nested_document()],
        settings in settings(),
    ) {
        check(&doc, settings);
    }
}

/// Documents whose size is not monotone in the threshold: sections with
/// many subsections between the floor and the threshold, so a lower
/// threshold leaves an excerpt per subsection where a higher one left one
/// per section.
fn nested_document() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((1usize..6, 200usize..2500), 1..6),
        0usize..3000,
    )
        .prop_map(|(sections, tail)| {
            let mut doc = String::from("# Guide\n");
            for (i, (subsections, size)) in sections.into_iter().enumerate() {
                doc.push_str(&format!("## Part {i}\n"));
                for j in 0..subsections {
                    doc.push_str(&format!("### Item {i}.{j}\n"));
                    let line = format!("text of item {i}.{j}, some words\n");
                    doc.push_str(&line.repeat(size / line.len() + 1));
                }
            }
            doc.push_str(&"a closing paragraph line\n".repeat(tail / 25));
            doc.into_bytes()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(100)
    ))]

    /// With a budget the output is the first of the ladder's outputs that
    /// fits (tried in order), else the smallest found, and never larger
    /// than without a budget. The oracle compresses at each threshold of
    /// the ladder without a budget.
    #[test]
    fn a_budget_never_makes_the_output_larger(
        doc in prop_oneof![document(), nested_document()],
        threshold in prop_oneof![Just(1024u64), Just(2048), Just(4096)],
        excerpt in prop_oneof![Just(Excerpt::Bytes(100)), Just(Excerpt::Bytes(400)), Just(Excerpt::Lines(2))],
        budget in 0u64..40_000,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("state"));
        let plain = Settings { threshold, excerpt, budget: None };
        let with_budget = Settings { budget: Some(budget), ..plain };
        let Ok(out) = try_compress(&doc, with_budget, &state) else {
            // A line restore would refuse: refused with or without a budget.
            prop_assert!(try_compress(&doc, plain, &state).is_err(), "refused only with a budget");
            return Ok(());
        };
        let unbudgeted = run_compress(&doc, plain, &state);
        prop_assert!(out.len() <= unbudgeted.len(), "{} > {}", out.len(), unbudgeted.len());
        let floor = with_budget.floor().min(threshold);
        let ladder: Vec<Vec<u8>> = budget::ladder(threshold, floor)
            .into_iter()
            .map(|t| run_compress(&doc, Settings { threshold: t, ..plain }, &state))
            .collect();
        match ladder.iter().find(|o| o.len() as u64 <= budget) {
            Some(first) => prop_assert!(&out == first, "not the first output that fits"),
            None => {
                let least = ladder.iter().map(Vec::len).min().unwrap();
                prop_assert!(out.len() <= least, "{} > the smallest found, {least}", out.len());
            }
        }
    }
}

#[test]
fn a_quoted_marker_of_a_real_file_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let state = StateDir::at(tmp.path().join("state"));
    let big = format!("# A\n{}", "line of text\n".repeat(200));
    let once = run_compress(
        big.as_bytes(),
        Settings::default().with_threshold(1024),
        &state,
    );
    let marker = String::from_utf8(once).unwrap();
    let marker = marker
        .lines()
        .find(|l| l.starts_with("<!-- jkz:offload"))
        .unwrap()
        .to_string();
    // A document quoting that marker (whose file exists) inside a fence.
    let doc = format!("# Quote\n```\n{marker}\n```\n");
    assert_eq!(run_restore(doc.as_bytes(), &state), doc.as_bytes());
    check(doc.as_bytes(), Settings::default().with_threshold(1024)).expect("not refused");
}

#[test]
fn compress_refuses_what_restore_refuses_and_passes_valid_markers() {
    let tmp = tempfile::tempdir().unwrap();
    let state = StateDir::at(tmp.path().join("state"));
    let settings = Settings::default().with_threshold(1024);
    let big = format!("# A\n{}", "line of text\n".repeat(200));
    let once = run_compress(big.as_bytes(), settings, &state);
    // Valid markers pass: compressing again changes nothing.
    assert_eq!(run_compress(&once, settings, &state), once);
    let bad =
        format!("# B\n<!-- jkz:offload<!-- jkz:verdict-json {{\"verdict\":\"PASS\"}} -->\n{big}");
    // `once` with its file gone.
    std::fs::remove_dir_all(tmp.path().join("state").join(OFFLOAD_DIR)).unwrap();
    for (doc, line) in [(bad.as_bytes(), "line 2 "), (&once[..], "marker on line ")] {
        let fresh = tempfile::tempdir().unwrap();
        let state = StateDir::at(fresh.path().join("state"));
        let refused = try_compress(doc, settings, &state).unwrap_err();
        assert_eq!(refused.code, RESTORE_FAILED);
        assert!(refused.message.contains(line), "{}", refused.message);
        assert!(try_restore(doc, &state).is_err());
        // Nothing was offloaded either.
        assert!(!fresh.path().join("state").join(OFFLOAD_DIR).exists());
    }
}

impl Settings {
    fn with_threshold(mut self, threshold: u64) -> Settings {
        self.threshold = threshold;
        self.excerpt = Excerpt::Bytes(threshold / 4);
        self
    }
}

/// A small deterministic generator for the corpus (no extra dependency).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }

    fn words(&mut self, n: usize) -> String {
        const WORDS: [&str; 16] = [
            "context", "window", "section", "the", "agent", "pipeline", "é", "naïve", "数据",
            "offload", "of", "a", "verdict", "and", "🚀", "build",
        ];
        (0..n)
            .map(|_| WORDS[self.next(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A project README: intro, install, usage with code, many API sections.
fn readme(r: &mut Lcg) -> String {
    let mut s =
        String::from("# jkz-example\n\nA tool that does things.\n\n## TL;DR\n\nIt works.\n\n");
    s.push_str(
        "## Install\n\n```sh\ncargo install jkz-example\n# not a heading: a shell comment\n```\n\n",
    );
    for api in 0..80 {
        s.push_str(&format!("## API {api}\n\n{}\n\n", r.words(40)));
        for sub in 0..r.next(4) {
            s.push_str(&format!("### `fn call_{api}_{sub}()`\n\n"));
            for _ in 0..r.next(60) {
                s.push_str(&format!("{}\n", r.words(12)));
            }
            s.push_str(
                "\n- item one\n  ```rust\n  let x = 1; // # not a heading\n  ```\n- item two\n\n",
            );
        }
    }
    s
}

/// A changelog: many versions, each with Added / Fixed lists.
fn changelog(r: &mut Lcg) -> String {
    let mut s = String::from("# Changelog\n\n<!-- jkz:verdict-json {\"verdict\":\"PASS\"} -->\n\n");
    for v in (0..300).rev() {
        s.push_str(&format!("## [1.{v}.0] - 2024-01-01\n\n### Added\n\n"));
        for _ in 0..r.next(30) {
            s.push_str(&format!("- {}\n", r.words(10)));
        }
        s.push_str("\n### Fixed\n\n");
        for _ in 0..r.next(20) {
            s.push_str(&format!("- {}\r\n", r.words(8)));
        }
        s.push('\n');
    }
    s
}

/// A design doc: long prose, tables, diagrams, and every protected form.
fn design(r: &mut Lcg) -> String {
    let mut s = String::from("Preamble before any heading.\n\n# Design\n\n");
    for part in 0..40 {
        s.push_str(&format!("## Part {part}\n\n"));
        for _ in 0..r.next(300) {
            s.push_str(&format!("{}\n", r.words(15)));
        }
        s.push_str("\n| a | b |\n|---|---|\n| 1 | 2 |\n\n~~~~text\n```\n# inside a tilde fence\n```\n~~~~\n\n");
        match part % 5 {
            0 => s.push_str("<compact-plan>\n1. keep this\n2. and this\n</compact-plan>\n"),
            1 => s.push_str("```decisions\n- chose A over B\n```\n"),
            2 => s.push_str("### Accumulated Patterns\n\n- pattern one\n- pattern two\n"),
            3 => s.push_str(&format!("<!-- jkz:tldr\n{}\n-->\n", r.words(30))),
            _ => s.push_str("#### Verdict: FAIL\n\nreasons\n"),
        }
        if part == 39 {
            s.push_str("```\nan unterminated fence at the very end\n");
        }
    }
    s
}

#[test]
fn corpus_of_generated_documents() {
    let mut r = Lcg(42);
    let docs = [readme(&mut r), changelog(&mut r), design(&mut r)];
    for doc in &docs {
        assert!(
            doc.len() > 60_000,
            "corpus documents are large: {}",
            doc.len()
        );
        for settings in [
            Settings::default(),
            Settings {
                threshold: 2048,
                excerpt: Excerpt::Lines(3),
                budget: None,
            },
            Settings {
                threshold: 4096,
                excerpt: Excerpt::Bytes(100),
                budget: Some(20_000),
            },
        ] {
            let out = check(doc.as_bytes(), settings).expect("nothing looks like a marker");
            assert!(
                out.len() < doc.len(),
                "nothing offloaded from {} with {settings:?}",
                &doc[..40]
            );
        }
    }
}
