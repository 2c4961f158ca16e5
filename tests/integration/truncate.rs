//! `jkz-truncate` through the real binary.

use crate::util::{bin, Dir};

/// `n` bytes of numbered filler lines (the last one cut short to fit, but
/// still ending with a newline).
fn filler(tag: &str, n: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < n {
        out.push_str(&format!("{tag} filler line {i:06}\n"));
        i += 1;
    }
    out.truncate(n - 1);
    out.push('\n');
    out
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

fn markers(out: &str) -> usize {
    count(out, "[jkz-truncate: ")
}

/// Truncates `input` with `--max-bytes cap` plus `args`; asserts success and
/// the cap, returns stdout.
fn truncate(input: &str, cap: usize, args: &[&str]) -> String {
    let dir = Dir::new();
    let run = dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", &cap.to_string()])
        .args(args)
        .stdin(input)
        .run()
        .success();
    assert!(
        run.stdout().len() <= cap,
        "output {} > cap {cap}\n{}",
        run.stdout().len(),
        run.report()
    );
    run.stdout_str()
}

const FORMS: [(&str, &str); 4] = [
    (
        "comment",
        "<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"id\":\"FORM\"} -->\n",
    ),
    ("fence", "```decisions\n- keep FORM\n- and more\n```\n"),
    (
        "tag",
        "<compact-plan>\n1. do FORM\n2. verify\n</compact-plan>\n",
    ),
    ("heading", "## TL;DR\nsummary of FORM\n\n## Next part\n"),
];

#[test]
fn every_form_survives_at_head_middle_and_tail_exactly_once() {
    for (name, block) in FORMS {
        let block = block.replace("FORM", name);
        let protected = block.trim_end_matches("## Next part\n");
        for place in ["head", "middle", "tail"] {
            let input = match place {
                "head" => format!("{block}{}", filler("a", 20_000)),
                "middle" => format!("{}{block}{}", filler("a", 10_000), filler("b", 10_000)),
                _ => format!("{}{block}", filler("a", 20_000)),
            };
            let out = truncate(&input, 2_000, &[]);
            assert_eq!(
                count(&out, protected),
                1,
                "{name} at {place}: block missing or repeated\n{out}"
            );
            assert!(input.starts_with(out.lines().next().unwrap()));
            assert!(markers(&out) >= 1, "{out}");
        }
    }
}

#[test]
fn blocks_straddling_head_and_tail_are_emitted_once_and_whole() {
    // Head budget ≈ (2000 - markers) / 2: a block from 800 to ~1100 straddles it.
    let block = "```tldr\nstraddling the head cut\nline two\nline three\nline four\n```\n";
    let input = format!("{}{block}{}", filler("a", 800), filler("b", 30_000));
    let out = truncate(&input, 2_000, &[]);
    assert_eq!(count(&out, block), 1, "{out}");
    assert!(out.starts_with(&input[..800]), "{out}");
    // A block straddling the tail cut.
    let input = format!("{}{block}{}", filler("a", 30_000), filler("b", 700));
    let out = truncate(&input, 2_000, &[]);
    assert_eq!(count(&out, block), 1, "{out}");
    assert!(out.ends_with(&input[input.len() - 700..]), "{out}");
    // Output is always input pieces in order: no byte repeated.
    let mut pos = 0;
    for piece in out.split("[jkz-truncate: ") {
        let piece = piece.split_once("omitted]\n").map_or(piece, |p| p.1);
        let piece = piece.trim_end_matches('\n');
        if piece.is_empty() {
            continue;
        }
        let at = input[pos..].find(piece).expect("piece in input order") + pos;
        pos = at + piece.len();
    }
}

#[test]
fn over_budget_blocks_go_by_priority_and_newest_first() {
    let mut input = String::new();
    let big = |id: &str| format!("<!-- jkz:tldr {id} {} -->\n", "x".repeat(400));
    input.push_str(&filler("a", 5_000));
    input.push_str(&big("oldest-summary"));
    input.push_str(&filler("b", 5_000));
    input.push_str("<!-- jkz:verdict-json {\"verdict\":\"FAIL\"} -->\n");
    input.push_str(&filler("c", 5_000));
    input.push_str(&big("middle-summary"));
    input.push_str(&filler("d", 5_000));
    input.push_str(&big("newest-summary"));
    input.push_str(&filler("e", 5_000));
    input.push_str("<!-- jkz:propose-issue: small signal -->\n");
    input.push_str(&filler("f", 5_000));
    // Room for the verdict, one 400-byte summary, the small signal, markers.
    let out = truncate(&input, 1_000, &["--head-share", "0.5"]);
    assert!(out.contains("\"verdict\":\"FAIL\""), "{out}");
    assert!(out.contains("newest-summary"), "{out}");
    assert!(!out.contains("middle-summary"), "{out}");
    assert!(!out.contains("oldest-summary"), "{out}");
    assert!(
        out.contains("small signal"),
        "a smaller block still fits\n{out}"
    );
    // In input order.
    let v = out.find("verdict").unwrap();
    let n = out.find("newest-summary").unwrap();
    let s = out.find("small signal").unwrap();
    assert!(v < n && n < s, "{out}");
}

#[test]
fn unterminated_blocks_are_protected_to_the_end_or_their_bound() {
    for open in [
        "```verdict-json\n",
        "<!-- jkz:decisions\n",
        "<compact-plan>\n",
    ] {
        // Near the end: protected through the end of the input.
        let tail = format!("{open}never closed {}\nlast words\n", "y".repeat(300));
        let input = format!("{}{tail}", filler("a", 20_000));
        let out = truncate(&input, 1_000, &["--head-share", "1.0"]);
        assert!(out.ends_with(&tail), "{open}\n{out}");
    }
    // Early and never closed: the fence stops at its bound, so a verdict
    // printed later is still found.
    let mut input = String::from("```decisions\n");
    input.push_str(&filler("a", 1_100_000));
    input.push_str("<!-- jkz:verdict-json {\"verdict\":\"LATE\"} -->\n");
    input.push_str(&filler("b", 100_000));
    let out = truncate(&input, 4_000, &[]);
    assert!(out.contains("\"LATE\""), "{out}");
}

#[test]
fn crlf_input_keeps_whole_lines_and_blocks() {
    let block = "## Verdict\r\nFAIL: two tests\r\n";
    let lines: String = (0..2_000).map(|i| format!("row {i:05}\r\n")).collect();
    let input = format!("{lines}{block}## Log\r\n{lines}");
    let out = truncate(&input, 1_500, &[]);
    assert_eq!(count(&out, block), 1, "{out}");
    let head = out.split("[jkz-truncate: ").next().unwrap();
    assert!(head.ends_with("\r\n"), "head cut on a line end: {head:?}");
    let tail = out.rsplit("omitted]\n").next().unwrap();
    assert!(
        tail.starts_with("row "),
        "tail cut on a line start: {tail:?}"
    );
}

#[test]
fn multi_byte_characters_are_never_split() {
    // No newlines: every cut is a character cut, at every offset mod 3/4.
    let input = "€𝄞é".repeat(3_000);
    let dir = Dir::new();
    for cap in 300..340 {
        for share in ["0", "0.3", "1"] {
            let run = dir
                .cmd("jkz-truncate")
                .args(["--max-bytes", &cap.to_string(), "--head-share", share])
                .stdin(&input)
                .run()
                .success();
            assert!(run.stdout().len() <= cap);
            assert!(
                std::str::from_utf8(run.stdout()).is_ok(),
                "cap {cap} share {share} split a character\n{}",
                run.report()
            );
        }
    }
}

#[test]
fn invalid_utf8_passes_through() {
    let mut input = b"ok \xff\xfe bad \xe2\x82 cut\n".repeat(500);
    input.extend_from_slice(b"<!-- jkz:tldr \xff -->\n");
    let dir = Dir::new();
    let run = dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", "100000"])
        .stdin(&input)
        .run()
        .success();
    assert_eq!(run.stdout(), &input[..]);
    let run = dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", "500"])
        .stdin(&input)
        .run()
        .success();
    assert!(run.stdout().len() <= 500);
    assert!(run.stdout().ends_with(b"<!-- jkz:tldr \xff -->\n"));
}

#[test]
fn sizes_at_the_cap() {
    let input = filler("a", 5_000);
    assert_eq!(truncate(&input, 5_000, &[]), input, "exactly the cap");
    assert_eq!(truncate("", 5_000, &[]), "", "empty input");
    let over = format!("{input}z");
    let out = truncate(&over, 5_000, &[]);
    assert_ne!(out, over);
    assert_eq!(markers(&out), 1, "{out}");
    assert!(out.contains("bytes ("), "{out}");
    // A cap too small for a marker: the head alone, cut to the cap.
    let out = truncate(&input, 30, &[]);
    assert_eq!(out, &input[..30]);
}

#[test]
fn modes_and_the_environment_set_the_cap() {
    let input = filler("a", 400_000);
    let dir = Dir::new();
    for (mode, cap) in [
        ("primary", 307_200),
        ("fallback", 102_400),
        ("agent", 81_920),
    ] {
        let run = dir
            .cmd("jkz-truncate")
            .args(["--mode", mode, "--no-full-output"])
            .stdin(&input)
            .run()
            .success();
        let n = run.stdout().len();
        assert!(n <= cap && n > cap - 200, "{mode}: {n} bytes");
        // Exactly the cap passes unchanged.
        let run = dir
            .cmd("jkz-truncate")
            .args(["--mode", mode])
            .stdin(&input[..cap])
            .run()
            .success();
        assert_eq!(run.stdout(), &input.as_bytes()[..cap], "{mode}");
    }
    // Default mode is primary.
    let run = dir.cmd("jkz-truncate").stdin(&input).run().success();
    assert!(run.stdout().len() <= 307_200 && run.stdout().len() > 307_000);
    // The environment beats the mode, the flag beats the environment.
    let run = dir
        .cmd("jkz-truncate")
        .env("JKZ_MAX_OUTPUT_BYTES", "1000")
        .args(["--mode", "agent"])
        .stdin(&input)
        .run()
        .success();
    assert!(run.stdout().len() <= 1000 && run.stdout().len() > 800);
    let run = dir
        .cmd("jkz-truncate")
        .env("JKZ_MAX_OUTPUT_BYTES", "1000")
        .args(["--max-bytes", "2000"])
        .stdin(&input)
        .run()
        .success();
    assert!(run.stdout().len() <= 2000 && run.stdout().len() > 1800);
    // 0 disables truncation.
    let run = dir
        .cmd("jkz-truncate")
        .env("JKZ_MAX_OUTPUT_BYTES", "0")
        .stdin(&input)
        .run()
        .success();
    assert_eq!(run.stdout(), input.as_bytes());
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}

/// Bytes before the first marker.
fn head_len(out: &str) -> usize {
    out.find("[jkz-truncate: ").unwrap()
}

#[test]
fn roles_set_the_head_share() {
    let input = filler("a", 50_000);
    let judge = truncate(&input, 4_000, &["--role", "judge"]);
    let architect = truncate(&input, 4_000, &["--role", "architect"]);
    let unknown = truncate(&input, 4_000, &["--role", "someone-new"]);
    let (j, a, u) = (head_len(&judge), head_len(&architect), head_len(&unknown));
    assert!(j < u && u < a, "judge {j}, unknown {u}, architect {a}");
    // Shares are of the same remaining budget: about 0.25, 0.5, 0.7.
    let rest = 4_000.0 - 2.0 * 60.0;
    assert!((j as f64 - 0.25 * rest).abs() < 80.0, "judge head {j}");
    assert!((a as f64 - 0.7 * rest).abs() < 80.0, "architect head {a}");
    // --head-share overrides the role.
    let all_head = truncate(&input, 4_000, &["--role", "judge", "--head-share", "1"]);
    assert!(all_head.ends_with("omitted]\n"), "{all_head}");
    let all_tail = truncate(&input, 4_000, &["--head-share", "0"]);
    assert!(all_tail.starts_with("[jkz-truncate: "), "{all_tail}");
    assert!(input.ends_with(all_tail.split_once("omitted]\n").unwrap().1));
}

#[test]
fn markers_count_bytes_and_lines() {
    let input = filler("a", 10_000);
    let out = truncate(&input, 1_000, &[]);
    let head = head_len(&out);
    let marker_line = out[head..].lines().next().unwrap();
    let tail = out.len() - head - marker_line.len() - 1;
    let omitted = input.len() - head - tail;
    let lines = input[head..input.len() - tail].matches('\n').count();
    let want = format!("[jkz-truncate: {omitted} bytes ({lines} lines) omitted]");
    let want = want.replacen(&omitted.to_string(), &thousands(omitted), 1);
    assert_eq!(marker_line, want);
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn full_output_is_saved_only_where_allowed() {
    let input = filler("a", 20_000);
    // Explicit state dir: created, full input saved, marker names it.
    let dir = Dir::new();
    let run = dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", "2000", "--state-dir", "st"])
        .stdin(&input)
        .run()
        .success();
    let files = dir.files();
    assert_eq!(files.len(), 1, "{files:?}");
    let saved = files[0].to_string_lossy().into_owned();
    assert!(saved.starts_with("st/context-offload/full-") && saved.ends_with(".txt"));
    assert_eq!(dir.read(&saved), input.as_bytes());
    // The marker names it from the root, to be found from anywhere.
    let named = dir.path().canonicalize().unwrap().join(&saved);
    assert!(run
        .stdout_str()
        .contains(&format!("; full output: {}]", named.display())));
    assert!(run.stdout().len() <= 2000);

    // From the environment, too.
    let dir = Dir::new();
    let state = dir.join("envstate");
    dir.cmd("jkz-truncate")
        .env("JKZ_STATE_DIR", &state)
        .args(["--max-bytes", "2000"])
        .stdin(&input)
        .run()
        .success();
    assert_eq!(dir.files().len(), 1);

    // --no-full-output, or input that fits: nothing written anywhere.
    let dir = Dir::new();
    let run = dir
        .cmd("jkz-truncate")
        .args([
            "--max-bytes",
            "2000",
            "--state-dir",
            "st",
            "--no-full-output",
        ])
        .stdin(&input)
        .run()
        .success();
    assert!(dir.files().is_empty() && !dir.join("st").exists());
    assert!(!run.stdout_str().contains("full output"));
    dir.cmd("jkz-truncate")
        .args(["--max-bytes", "50000", "--state-dir", "st"])
        .stdin(&input)
        .run()
        .success();
    assert!(!dir.join("st").exists(), "input fitting leaves nothing");

    // Implicit ./state: used only when the project opted in.
    let dir = Dir::new();
    dir.cmd("jkz-truncate")
        .args(["--max-bytes", "2000"])
        .stdin(&input)
        .run()
        .success();
    assert!(!dir.join("state").exists());
    std::fs::create_dir(dir.join("state")).unwrap();
    let run = dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", "2000"])
        .stdin(&input)
        .run()
        .success();
    assert_eq!(dir.files().len(), 1);
    let offload = dir
        .path()
        .canonicalize()
        .unwrap()
        .join("state/context-offload/full-");
    assert!(
        run.stdout_str()
            .contains(&format!("full output: {}", offload.display())),
        "{}",
        run.report()
    );
}

#[test]
fn full_output_of_a_long_stream_is_whole() {
    // Several MiB: most of it leaves the window while the input streams and
    // is written beside the reading, the rest at the end.
    let input = filler("long", 5 << 20);
    let dir = Dir::new();
    let run = dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", "2000", "--state-dir", "st"])
        .stdin(&input)
        .run()
        .success();
    let files = dir.files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        dir.read(&files[0]) == input.as_bytes(),
        "saved copy differs"
    );
    assert!(run.stdout().len() <= 2000);
    assert!(run.stdout_str().ends_with(&input[input.len() - 500..]));
}

#[test]
fn failing_to_save_the_full_output_still_prints() {
    let dir = Dir::new();
    dir.write("st", "a file where the state directory should be");
    let input = filler("a", 20_000);
    let run = dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", "2000", "--state-dir", "st"])
        .stdin(&input)
        .run()
        .success();
    assert!(run.stdout().len() <= 2000 && run.stdout().len() > 1500);
    assert!(run.stdout_str().contains("[jkz-truncate: "));
    assert!(!run.stdout_str().contains("full output"));
    assert!(run.stderr_str().contains("warning"), "{}", run.report());
}

#[test]
fn reads_a_file_and_reports_read_errors() {
    let dir = Dir::new();
    let input = filler("a", 3_000);
    dir.write("in.txt", &input);
    let run = dir.cmd("jkz-truncate").arg("in.txt").run().success();
    assert_eq!(run.stdout_str(), input);
    let run = dir
        .cmd("jkz-truncate")
        .arg("missing.txt")
        .run()
        .expect_code(1);
    assert_eq!(run.stderr_str().lines().count(), 1, "{}", run.report());
    assert!(run.stderr_str().contains("missing.txt"));
    // A directory opens but cannot be read.
    let run = dir.cmd("jkz-truncate").arg(".").run().expect_code(1);
    assert_eq!(run.stderr_str().lines().count(), 1, "{}", run.report());
}

#[test]
fn usage_errors_exit_2() {
    let dir = Dir::new();
    for args in [
        &["--head-share", "1.5"][..],
        &["--head-share", "x"],
        &["--mode", "huge"],
        &["--max-bytes", "-1"],
        &["--bogus"],
    ] {
        dir.cmd("jkz-truncate").args(args).run().expect_code(2);
    }
}

#[test]
fn broken_pipe_downstream_is_success() {
    let dir = Dir::new();
    dir.write("big.txt", filler("a", 4_000_000));
    for args in ["--max-bytes 0", "--max-bytes 1000000", ""] {
        let script = format!("set -o pipefail; \"$0\" {args} big.txt | head -c 10 > /dev/null");
        let status = std::process::Command::new("bash")
            .current_dir(dir.path())
            .arg("-c")
            .arg(&script)
            .arg(bin("jkz-truncate"))
            .env_remove("JKZ_MAX_OUTPUT_BYTES")
            .env_remove("JKZ_STATE_DIR")
            .env_remove("CLAUDE_PROJECT_DIR")
            .status()
            .unwrap();
        assert!(status.success(), "{args}: {status}");
    }
}

#[test]
fn help_documents_flags_roles_caps_and_exit_codes() {
    let dir = Dir::new();
    let run = dir.cmd("jkz-truncate").arg("--help").run().success();
    let help = run.stdout_str();
    for needle in [
        "--mode",
        "--role",
        "--max-bytes",
        "--head-share",
        "--state-dir",
        "--no-full-output",
        "JKZ_MAX_OUTPUT_BYTES",
        "JKZ_STATE_DIR",
        "CLAUDE_PROJECT_DIR",
        "307,200",
        "security-reviewer",
        "judge",
        "architect",
        "Exit codes",
        "broken pipe",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}\n{help}");
    }
}

// Regressions: each named after what broke, with the input that broke it.

/// `n` bytes (at least) of plain log lines, numbered, each tagged.
fn log_lines(tag: &str, n: usize) -> String {
    let mut out = String::new();
    let mut i = 0;
    while out.len() < n {
        out.push_str(&format!(
            "2025-03-01T12:00:00Z INFO {tag} step {i}: compiled module.rs in 12 ms\n"
        ));
        i += 1;
    }
    out
}

/// The input's last line (with its newline).
fn last_line(s: &str) -> &str {
    let body = &s[..s.len() - 1];
    &s[body.rfind('\n').map_or(0, |i| i + 1)..]
}

#[test]
fn oversized_tldr_section_keeps_its_head_instead_of_being_dropped() {
    let tldr = "## TL;DR\n\nShip it: all green except J1.\n";
    // As reported (the section runs to the end of the input), and behind a
    // preamble longer than the head's share.
    for preamble in [String::new(), log_lines("preamble", 40_000)] {
        let input = format!("{preamble}{tldr}{}", log_lines("body", 200_000));
        let out = truncate(&input, 50_000, &["--head-share", "0", "--no-full-output"]);
        assert!(out.contains(tldr), "{out}");
        assert_eq!(count(&out, "[jkz-truncate: tldr block cut:"), 1, "{out}");
        // Whole lines of the section follow its heading up to the marker.
        let at = out.find(tldr).unwrap();
        let cut = out.find("[jkz-truncate: tldr block cut:").unwrap();
        assert!(cut - at > 10_000, "the head is more than the first line");
        assert!(out.ends_with(last_line(&input)), "the tail stays");
    }
}

#[test]
fn oversized_compact_plan_fence_keeps_its_head_and_names_the_full_output() {
    let mut plan = String::from("```compact-plan\n1. the first step of the plan\n");
    plan.push_str(&log_lines("plan", 500_000));
    plan.push_str("```\n");
    let input = format!(
        "{}{plan}{}",
        log_lines("before", 400_000),
        log_lines("after", 400_000)
    );
    let dir = Dir::new();
    let run = dir
        .cmd("jkz-truncate")
        .args(["--max-bytes", "307200", "--state-dir", "state"])
        .stdin(&input)
        .run()
        .success();
    let out = run.stdout_str();
    assert!(out.len() <= 307_200, "{}", run.report());
    assert!(
        out.contains("```compact-plan\n1. the first step of the plan\n"),
        "{}",
        run.report()
    );
    let marker = out
        .lines()
        .find(|l| l.starts_with("[jkz-truncate: compact-plan block cut:"))
        .unwrap_or_else(|| panic!("no cut marker\n{}", run.report()));
    assert!(marker.contains("full output: "), "{marker}");
    let path = marker.rsplit("full output: ").next().unwrap();
    let saved = std::fs::read(dir.join(path.trim_end_matches(']'))).unwrap();
    assert_eq!(saved, input.as_bytes());
}

#[test]
fn five_thousand_verdicts_leave_the_tail_its_last_lines() {
    let mut input = String::new();
    for i in 0..5_000 {
        input.push_str(&format!(
            "<!-- jkz:verdict-json {{\"verdict\":\"FAIL\",\"n\":{i}}} -->\n"
        ));
    }
    let ending = "all checks done\nfinal answer: ship after J1 is fixed\n";
    input.push_str(ending);
    let out = truncate(&input, 3_000, &["--role", "judge"]);
    assert!(out.ends_with(ending), "{out}");
    assert!(out.contains("\"n\":4999}"), "the newest verdict\n{out}");
    // The tail keeps at least its guaranteed share: a quarter of the cap,
    // three quarters of that for a judge, less a line's slack.
    let tail = out.rsplit("omitted]\n").next().unwrap();
    assert!(
        tail.len() >= 3_000 / 4 * 3 / 4 * 3 / 4,
        "{}: {tail}",
        tail.len()
    );
}

#[test]
fn setext_headings_end_a_tldr_section() {
    let tldr = "## TL;DR\nShip it: the release notes below are long.\n";
    let mut notes = String::new();
    for v in 0..300 {
        notes.push_str(&format!("Release 1.{v}\n=============\n\n"));
        notes.push_str(&log_lines("note", 3_000));
    }
    assert!(notes.len() > 890_000);
    let input = format!("{}{tldr}{notes}", log_lines("preamble", 200_000));
    let out = truncate(&input, 100_000, &["--no-full-output"]);
    assert!(out.contains(tldr), "the whole section survives\n{out}");
    assert_eq!(count(&out, "block cut:"), 0, "{out}");
}

#[test]
fn nested_subsections_are_not_protected_with_their_tldr() {
    let tldr = "## TL;DR\nShip it.\n";
    let input = format!(
        "{}{tldr}### Test log\n{}### Build log\n{}",
        log_lines("preamble", 200_000),
        log_lines("tests", 400_000),
        log_lines("build", 400_000)
    );
    let out = truncate(&input, 100_000, &["--no-full-output"]);
    // The section is its own text only: kept whole, the logs cut.
    let at = out
        .find(tldr)
        .unwrap_or_else(|| panic!("TL;DR lost\n{out}"));
    assert!(
        out[at + tldr.len()..].starts_with("[jkz-truncate: "),
        "{}",
        &out[at..at + 200]
    );
    assert_eq!(count(&out, "block cut:"), 0);
    assert!(out.len() <= 100_000);
}

#[test]
fn empty_or_invalid_max_output_bytes_variable_fails_open() {
    let input = filler("a", 400_000);
    let dir = Dir::new();
    for (value, warns) in [("", false), ("abc", true), ("-5", true), ("1e6", true)] {
        let run = dir
            .cmd("jkz-truncate")
            .env("JKZ_MAX_OUTPUT_BYTES", value)
            .args(["--no-full-output"])
            .stdin(&input)
            .run()
            .success();
        let n = run.stdout().len();
        assert!(n <= 307_200 && n > 300_000, "{}", run.report());
        let stderr = run.stderr_str();
        if warns {
            assert_eq!(stderr.lines().count(), 1, "{}", run.report());
            assert!(
                stderr.contains("JKZ_MAX_OUTPUT_BYTES") && stderr.contains("307,200"),
                "{}",
                run.report()
            );
        } else {
            assert!(stderr.is_empty(), "{}", run.report());
        }
    }
    // The mode's cap is the fallback.
    let run = dir
        .cmd("jkz-truncate")
        .env("JKZ_MAX_OUTPUT_BYTES", "abc")
        .args(["--mode", "agent"])
        .stdin(&input)
        .run()
        .success();
    assert!(run.stdout().len() <= 81_920 && run.stdout().len() > 80_000);
    // A bad flag stays a usage error.
    dir.cmd("jkz-truncate")
        .args(["--max-bytes", "abc"])
        .stdin(&input)
        .run()
        .expect_code(2);
}

/// Runs jkz-truncate with `args` on `input` under a 128 MiB address-space
/// limit; returns stdout.
fn truncate_in_128_mib(dir: &Dir, input: &[u8], args: &str) -> Vec<u8> {
    dir.write("input.txt", input);
    let out = std::process::Command::new("bash")
        .current_dir(dir.path())
        .arg("-c")
        .arg(format!(
            "ulimit -v 131072; exec \"$0\" --no-full-output {args} < input.txt"
        ))
        .arg(bin("jkz-truncate"))
        .env_remove("JKZ_MAX_OUTPUT_BYTES")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args}: {} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn comment_dense_lines_stay_in_bounded_memory() {
    let dir = Dir::new();
    // 294 KB, under the cap: out unchanged.
    let mut input = "<!-- jkz:x -->".repeat(21_000).into_bytes();
    input.push(b'\n');
    assert_eq!(truncate_in_128_mib(&dir, &input, ""), input);
    // 4 MB on one line with a 2 MB cap.
    let mut input = "<!-- jkz:x -->".repeat(300_000).into_bytes();
    input.push(b'\n');
    let out = truncate_in_128_mib(&dir, &input, "--max-bytes 2000000");
    assert!(
        out.len() <= 2_000_000 && out.len() > 1_000_000,
        "{}",
        out.len()
    );
    assert!(input.starts_with(&out[..1_000_000]));
}

#[test]
fn cap_near_u64_max_passes_the_input_through() {
    let input = filler("a", 1_300_000);
    let dir = Dir::new();
    for cap in ["18446744073709551615", "18446744073709551608"] {
        let run = dir
            .cmd("jkz-truncate")
            .args(["--max-bytes", cap])
            .stdin(&input)
            .run()
            .success();
        assert_eq!(run.stdout(), input.as_bytes(), "cap {cap}");
        let run = dir
            .cmd("jkz-truncate")
            .env("JKZ_MAX_OUTPUT_BYTES", cap)
            .stdin(&input)
            .run()
            .success();
        assert_eq!(run.stdout(), input.as_bytes(), "variable {cap}");
    }
    assert!(dir.files().is_empty(), "{:?}", dir.files());
}

#[test]
fn help_documents_the_budget_division_and_the_heading_rule() {
    let dir = Dir::new();
    let help = dir
        .cmd("jkz-truncate")
        .arg("--help")
        .run()
        .success()
        .stdout_str();
    for needle in [
        "quarter of the cap",
        "newest block of each kind",
        "block cut:",
        "not even its first line fits",
        "next heading of any level",
        "setext",
        "empty\nJKZ_MAX_OUTPUT_BYTES counts as unset",
        "larger than the input",
    ] {
        assert!(help.contains(needle), "--help lacks {needle:?}\n{help}");
    }
}
