//! `jkz findings` and `state/cr-history.db` through the real binaries: a
//! CodeRabbit review-comments export in the GitHub API's shape (fixtures in
//! `fixtures/findings/`: three iterations of one pull request), verdict and
//! jg sources, line drift, dedupe across sources, every status transition,
//! re-imports, bad inputs, `jkz run`'s import, the compaction hooks and the
//! observer.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::util::{Dir, Run};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/integration/fixtures/findings")
        .join(name)
}

/// A project with an (empty) state directory.
fn project() -> Dir {
    let dir = Dir::new();
    std::fs::create_dir_all(dir.join("state")).unwrap();
    dir
}

fn jkz(dir: &Dir) -> crate::util::Cmd {
    dir.cmd("jkz").arg("--state-dir").arg(dir.join("state"))
}

fn import(dir: &Dir, iteration: u32, source: &str, file: impl Into<std::ffi::OsString>) -> Run {
    jkz(dir)
        .args(["findings", "import", "--issue", "42", "--iteration"])
        .arg(iteration.to_string())
        .args(["--source", source])
        .arg(file)
        .run()
}

fn listed(dir: &Dir, extra: &[&str]) -> Vec<Value> {
    let run = jkz(dir)
        .args(["findings", "--issue", "42", "--json"])
        .args(extra)
        .run()
        .success();
    serde_json::from_slice(run.stdout()).unwrap_or_else(|e| panic!("{e}\n{}", run.report()))
}

/// The finding whose message contains `text`.
fn find<'a>(list: &'a [Value], text: &str) -> &'a Value {
    let found: Vec<&Value> = list
        .iter()
        .filter(|f| f["message"].as_str().unwrap().contains(text))
        .collect();
    assert_eq!(found.len(), 1, "{text:?} in {list:#?}");
    found[0]
}

fn status_of(list: &[Value], text: &str) -> String {
    find(list, text)["status"].as_str().unwrap().to_string()
}

/// Everything the history holds of issue 42, as the listing shows it with
/// every sighting: what "nothing stored changed" is checked against.
fn stored(dir: &Dir) -> String {
    jkz(dir)
        .args(["findings", "--issue", "42", "--json", "--explain"])
        .run()
        .success()
        .stdout_str()
}

const ROUNDING: &str = "Round after converting to cents";
const MAGIC: &str = "Extract the magic number";
const CARD: &str = "Do not log the card number";
const TYPO: &str = "Typo";
const NONE_RATE: &str = "Handle the `None` case";

#[test]
fn a_coderabbit_export_keeps_what_the_reviewer_said_and_folds_replies() {
    let dir = project();
    let run = import(&dir, 1, "coderabbit", fixture("coderabbit-1.json")).success();
    assert!(
        run.stdout_str()
            .contains("issue 42, iteration 1, coderabbit: 4 findings, 4 new to the history"),
        "{}",
        run.report()
    );
    let list = listed(&dir, &[]);
    assert_eq!(list.len(), 4, "{list:#?}");
    for f in &list {
        for key in [
            "id",
            "file",
            "line",
            "message",
            "status",
            "first_iteration",
            "last_iteration",
            "sources",
        ] {
            assert!(f.get(key).is_some(), "{key} missing in {f}");
        }
        assert_eq!(f["status"], "new");
        assert_eq!(f["sources"], json!(["coderabbit"]));
        assert_eq!(f["author"], "coderabbitai[bot]");
        let text = format!("{}{}", f["message"], f["detail"]);
        for boilerplate in [
            "<details",
            "Potential issue",
            "Committable suggestion",
            "<!--",
            "Prompt for AI Agents",
            "**",
        ] {
            assert!(!text.contains(boilerplate), "{boilerplate} in {f:#}");
        }
    }
    let rounding = find(&list, ROUNDING);
    assert_eq!(
        rounding["message"],
        "Round after converting to cents, not before."
    );
    assert_eq!(
        (&rounding["file"], &rounding["line"], &rounding["severity"]),
        (&json!("src/pay.rs"), &json!(88), &json!("major"))
    );
    assert_eq!(
        rounding["suggestion"], "    let cents = (amount * 100.0).round() as i64;\n",
        "the committable suggestion is kept for display"
    );
    // Both replies (one a reply to a reply) fold into the thread.
    assert_eq!(
        rounding["replies"],
        json!([
            "alice: Good catch, fixing it in the next push.",
            "coderabbitai[bot]: @alice Thank you! The rounding now happens on the cents value."
        ])
    );
    assert_eq!(find(&list, CARD)["severity"], "critical");
    assert_eq!(find(&list, MAGIC)["severity"], "minor");
    assert_eq!(
        find(&list, MAGIC)["line"],
        118,
        "a range starts at start_line"
    );
    assert_eq!(find(&list, TYPO)["severity"], "nit");
}

#[test]
fn every_status_transition_across_iterations() {
    let dir = project();
    for k in 1..=3 {
        import(
            &dir,
            k,
            "coderabbit",
            fixture(&format!("coderabbit-{k}.json")),
        )
        .success();
    }
    // Iteration 1: everything is new.
    let one = listed(&dir, &["--iteration", "1"]);
    assert!(one.iter().all(|f| f["status"] == "new"), "{one:#?}");
    // Iteration 2: 2001 and 2006 were addressed (resolved), 2002 and 2003
    // stand (open), 2101 appeared (new).
    let two = listed(&dir, &["--iteration", "2"]);
    assert_eq!(status_of(&two, ROUNDING), "resolved");
    assert_eq!(status_of(&two, TYPO), "resolved");
    assert_eq!(status_of(&two, MAGIC), "open");
    assert_eq!(status_of(&two, CARD), "open");
    assert_eq!(status_of(&two, NONE_RATE), "new");
    // Iteration 3: the rounding came back (reintroduced), the rest
    // resolved but the magic number.
    let three = listed(&dir, &[]);
    assert_eq!(
        status_of(&three, "Round after converting to cents"),
        "reintroduced"
    );
    let rounding = find(&three, ROUNDING);
    assert_eq!(
        (&rounding["first_iteration"], &rounding["last_iteration"]),
        (&json!(1), &json!(3))
    );
    assert_eq!(rounding["line"], 91, "shown at its newest line");
    assert_eq!(status_of(&three, MAGIC), "open");
    assert_eq!(status_of(&three, CARD), "resolved");
    assert_eq!(status_of(&three, NONE_RATE), "resolved");
    assert_eq!(three.len(), 5, "{three:#?}");
    // Line drift: 118 → 122 → 129, one finding throughout.
    let magic = find(&three, MAGIC);
    assert_eq!(
        (
            &magic["line"],
            &magic["first_iteration"],
            &magic["last_iteration"]
        ),
        (&json!(129), &json!(1), &json!(3))
    );

    // A fourth review that still reports the rounding: open again.
    let four: Vec<Value> =
        serde_json::from_slice(&std::fs::read(fixture("coderabbit-3.json")).unwrap()).unwrap();
    dir.write("cr-4.json", serde_json::to_vec(&four).unwrap());
    import(&dir, 4, "coderabbit", dir.join("cr-4.json")).success();
    assert_eq!(status_of(&listed(&dir, &[]), ROUNDING), "open");

    // Dismissed, with the reason; it stays dismissed whatever comes later.
    let id = find(&listed(&dir, &[]), MAGIC)["id"].as_i64().unwrap();
    let run = jkz(&dir)
        .args(["findings", "dismiss"])
        .arg(id.to_string())
        .args(["--why", "the factor is the definition of a cent"])
        .run()
        .success();
    assert!(
        run.stdout_str()
            .contains(&format!("dismissed finding {id} of issue 42")),
        "{}",
        run.report()
    );
    dir.write("cr-5.json", serde_json::to_vec(&four).unwrap());
    import(&dir, 5, "coderabbit", dir.join("cr-5.json")).success();
    let now = listed(&dir, &[]);
    assert_eq!(status_of(&now, MAGIC), "dismissed");
    assert_eq!(
        find(&now, MAGIC)["dismissed_why"],
        "the factor is the definition of a cent"
    );
    let dismissed = listed(&dir, &["--status", "dismissed"]);
    assert_eq!(dismissed.len(), 1);

    // Text output: one row per finding, with the counts.
    let text = jkz(&dir)
        .args(["findings", "--issue", "42"])
        .run()
        .success()
        .stdout_str();
    assert!(text.starts_with("issue 42: latest iteration 5 (imported: 1, 2, 3, 4, 5); 1 open, 3 resolved, 1 dismissed"), "{text}");
    assert!(
        text.contains("[dismissed: the factor is the definition of a cent]"),
        "{text}"
    );
}

#[test]
fn one_finding_from_three_sources_is_one_finding() {
    let dir = project();
    import(&dir, 1, "coderabbit", fixture("coderabbit-1.json")).success();
    import(&dir, 2, "coderabbit", fixture("coderabbit-2.json")).success();
    let run = jkz(&dir)
        .args([
            "findings",
            "import",
            "--issue",
            "42",
            "--iteration",
            "2",
            "--source",
            "verdict",
            "--role",
            "reviewer",
        ])
        .arg(fixture("verdict-2.md"))
        .run()
        .success();
    assert!(
        run.stdout_str()
            .contains("verdict (reviewer): 3 findings, 2 new"),
        "{}",
        run.report()
    );
    let run = import(&dir, 2, "jg", fixture("review-result-2.json")).success();
    assert!(
        run.stdout_str().contains("jg (review): 2 findings, 0 new"),
        "{}",
        run.report()
    );
    let run = import(&dir, 2, "jg", fixture("test-result-2.json")).success();
    assert!(
        run.stdout_str().contains("jg (test): 1 finding, 1 new"),
        "{}",
        run.report()
    );

    let list = listed(&dir, &[]);
    // "Do not log the card number." (CodeRabbit, twice in iteration 2, in
    // other words), "Do not log the card number" (the verdict, at line 46)
    // and "Do not log the card number!" (jg, a blocker): one finding.
    let card = find(&list, CARD);
    assert_eq!(card["sources"], json!(["coderabbit", "jg", "verdict"]));
    assert_eq!(card["status"], "open");
    assert_eq!(card["severity"], "critical");
    // The jg concern names the constant differently inside its code span:
    // still CodeRabbit's finding.
    assert_eq!(find(&list, MAGIC)["sources"], json!(["coderabbit", "jg"]));
    // A failing test is known by its name.
    let test = find(&list, "test_half_cent_rounding failed");
    assert_eq!(
        (&test["file"], &test["severity"]),
        (&json!("tests/test_pay.py"), &json!("critical"))
    );
    assert_eq!(test["detail"], "AssertionError: expected 1050, got 1000");
    // A string item carries its file and line.
    let doc = find(&list, "module doc still says");
    assert_eq!(
        (&doc["file"], &doc["line"]),
        (&json!("src/pay.rs"), &json!(12))
    );
    assert_eq!(list.len(), 8, "{list:#?}");

    // CodeRabbit's third review no longer has the card number: one of its
    // reporters looked again and did not see it, so it is resolved.
    import(&dir, 3, "coderabbit", fixture("coderabbit-3.json")).success();
    let list = listed(&dir, &[]);
    assert_eq!(status_of(&list, CARD), "resolved");
    // The verdict's own finding is judged by the verdict only: CodeRabbit's
    // review of iteration 3 does not resolve it.
    assert_eq!(status_of(&list, "module doc still says"), "open");
    assert_eq!(status_of(&list, "test_half_cent_rounding"), "open");
}

#[test]
fn reimporting_an_iteration_replaces_it_and_never_duplicates() {
    let dir = project();
    import(&dir, 1, "coderabbit", fixture("coderabbit-1.json")).success();
    import(&dir, 2, "coderabbit", fixture("coderabbit-2.json")).success();
    let before = stored(&dir);
    let run = import(&dir, 2, "coderabbit", fixture("coderabbit-2.json")).success();
    assert!(
        run.stdout_str()
            .contains("replaced the earlier import of this iteration"),
        "{}",
        run.report()
    );
    assert_eq!(stored(&dir), before, "the same input again changes nothing");

    // A corrected export of iteration 2 without the new finding: it is gone
    // (it was only ever reported there), the others keep their ids.
    let mut two: Vec<Value> =
        serde_json::from_slice(&std::fs::read(fixture("coderabbit-2.json")).unwrap()).unwrap();
    two.retain(|c| c["id"] != 2101);
    dir.write("cr-2b.json", serde_json::to_vec(&two).unwrap());
    let ids_before: Vec<Value> = listed(&dir, &[]).iter().map(|f| f["id"].clone()).collect();
    import(&dir, 2, "coderabbit", dir.join("cr-2b.json")).success();
    let after = listed(&dir, &[]);
    assert!(
        after
            .iter()
            .all(|f| !f["message"].as_str().unwrap().contains("None")),
        "{after:#?}"
    );
    assert_eq!(after.len(), ids_before.len() - 1);
    for f in &after {
        assert!(ids_before.contains(&f["id"]), "ids are kept: {f}");
    }
    // Re-importing an earlier iteration is allowed too (it replaces it).
    import(&dir, 1, "coderabbit", fixture("coderabbit-1.json")).success();
    assert_eq!(listed(&dir, &[]).len(), after.len());
}

/// `jkz findings import` refused: exit 3, one line naming what is wrong.
fn refused(run: &Run, why: &str) {
    assert_eq!(run.code(), Some(3), "{}", run.report());
    run.one_line("jkz findings", why);
    assert!(
        run.stderr_str().contains("nothing stored changed"),
        "{}",
        run.report()
    );
}

#[test]
fn bad_inputs_are_refused_whole_and_leave_the_store_unchanged() {
    let dir = project();
    import(&dir, 1, "coderabbit", fixture("coderabbit-1.json")).success();
    import(&dir, 2, "coderabbit", fixture("coderabbit-2.json")).success();
    let before = stored(&dir);

    let mut with_pathless: Vec<Value> =
        serde_json::from_slice(&std::fs::read(fixture("coderabbit-2.json")).unwrap()).unwrap();
    with_pathless[5].as_object_mut().unwrap().remove("path");
    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        ("coderabbit", "truncated.json", b"[{\"id\": 1, \"path\": \"a.rs\", \"body\": \"x\"".to_vec(), "malformed JSON at line 1"),
        ("coderabbit", "object.json", br#"{"path": "a.rs", "body": "x"}"#.to_vec(), "expected the JSON array GitHub returns"),
        ("coderabbit", "github-error.json", br#"{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}"#.to_vec(), "GitHub's error answer (\"Not Found\")"),
        ("coderabbit", "strings.json", br#"["a.rs: looks wrong"]"#.to_vec(), "comments[0] is a string, expected a review comment object"),
        ("coderabbit", "pathless.json", serde_json::to_vec(&with_pathless).unwrap(), "comments[5] (id 2006) has no path"),
        ("coderabbit", "empty.json", b"  \n".to_vec(), "the input is empty"),
        ("verdict", "pathless-object.md", b"```verdict-json\n{\"verdict\": \"FAIL\", \"blockers\": [{\"file\": \"a.rs\", \"message\": \"x\"}, {\"message\": \"no file here\"}]}\n```\n".to_vec(), "blockers[1] has no file (or path)"),
        ("verdict", "pathless-string.md", b"<!-- jkz:verdict-json {\"verdict\": \"FAIL\", \"concerns\": [\"Consider adding docs\"]} -->\n".to_vec(), "concerns[0] is a string without a file"),
        ("verdict", "no-block.md", b"The review found two problems.\n".to_vec(), "no verdict-json block with a findings, blockers or concerns array"),
        ("verdict", "not-an-array.json", br#"{"verdict": "FAIL", "findings": {"file": "a.rs"}}"#.to_vec(), "`findings` is an object, expected an array of findings"),
        ("jg", "list.json", br#"[{"file": "a.rs"}]"#.to_vec(), "expected a review-result.json or test-result.json object, got an array"),
        ("jg", "other.json", br#"{"passed": 3}"#.to_vec(), "found none of them"),
        ("jg", "bad-item.json", br#"{"nits": [42]}"#.to_vec(), "nits[0] is a number"),
    ];
    for (source, name, bytes, why) in cases {
        let path = dir.write(name, bytes);
        let run = import(&dir, 3, source, &path);
        refused(&run, why);
        assert!(
            run.stderr_str().contains(name),
            "names the input: {}",
            run.report()
        );
        assert_eq!(stored(&dir), before, "{name}");
    }
    // 50 MB: refused before it is read whole, saying the limit; from a
    // file and from stdin.
    let big = dir.join("big.json");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(50 * 1024 * 1024).unwrap();
    refused(
        &import(&dir, 3, "coderabbit", &big),
        "larger than 16 MiB (16777216 bytes)",
    );
    let run = jkz(&dir)
        .args([
            "findings",
            "import",
            "--issue",
            "42",
            "--iteration",
            "3",
            "--source",
            "coderabbit",
            "-",
        ])
        .stdin(vec![b' '; 50 * 1024 * 1024])
        .run();
    refused(&run, "stdin is larger than 16 MiB (16777216 bytes)");
    // An iteration lower than one imported, and never imported itself.
    import(&dir, 5, "verdict", fixture("verdict-2.md")).success();
    let before = stored(&dir);
    let run = import(&dir, 4, "coderabbit", fixture("coderabbit-2.json"));
    refused(
        &run,
        "iteration 4 is lower than iteration 5, already imported for issue 42",
    );
    assert_eq!(stored(&dir), before);
}

#[test]
fn refused_inputs_never_touch_the_history_file() {
    let dir = project();
    import(&dir, 1, "coderabbit", fixture("coderabbit-1.json")).success();
    let before = stored(&dir);
    let files = |dir: &Dir| -> Vec<(PathBuf, Vec<u8>)> {
        dir.files()
            .into_iter()
            .filter(|p| p.starts_with("state"))
            .map(|p| {
                let bytes = std::fs::read(dir.join(&p)).unwrap();
                (p, bytes)
            })
            .collect()
    };
    let on_disk = files(&dir);
    let path = dir.write("bad.json", b"[1, 2");
    refused(&import(&dir, 2, "coderabbit", &path), "malformed JSON");
    assert_eq!(files(&dir), on_disk, "no file in state/ changed");
    assert_eq!(stored(&dir), before);
}

#[test]
fn jkz_run_imports_the_findings_of_the_verdict_it_records() {
    let dir = project();
    let answer = |verdict: Value| format!("Review done.\n\n```verdict-json\n{verdict}\n```\n");
    let run_with = |role: &str, iteration: u32, text: &str| {
        let file = dir.write(format!("answer-{role}-{iteration}.md"), text);
        jkz(&dir)
            .args(["run", "--issue", "42", "--iteration"])
            .arg(iteration.to_string())
            .args(["--role", role, "--", "cat"])
            .arg(file)
            .run()
    };
    let reviewer = answer(json!({"verdict": "FAIL", "blockers": [
        {"file": "src/pay.rs", "line": 88, "message": "Round after converting to cents", "severity": "critical"}
    ], "concerns": ["src/pay.rs:120: extract the magic number 100"]}));
    let run = run_with("reviewer", 1, &reviewer).success();
    assert!(
        run.stdout_str().contains("verdict-json"),
        "the answer passes through"
    );
    let qa = answer(json!({"verdict": "FAIL", "findings": [
        {"path": "tests/test_pay.py", "line": 12, "description": "half-cent case not covered"}
    ]}));
    run_with("qa", 1, &qa).success();
    let list = listed(&dir, &[]);
    assert_eq!(list.len(), 3, "{list:#?}");
    assert!(list.iter().all(|f| f["sources"] == json!(["verdict"])));
    assert_eq!(find(&list, "Round after")["severity"], "critical");
    assert_eq!(find(&list, "magic number")["severity"], "major");

    // Iteration 2: the reviewer passes with nothing left; QA does not run.
    // The reviewer's findings resolve, QA's stands.
    let pass = answer(json!({"verdict": "PASS", "blockers": [], "concerns": []}));
    run_with("reviewer", 2, &pass).success();
    let list = listed(&dir, &[]);
    assert_eq!(status_of(&list, "Round after"), "resolved");
    assert_eq!(status_of(&list, "magic number"), "resolved");
    assert_eq!(status_of(&list, "half-cent case"), "open");

    // The deliberation record keeps the verdict as before.
    let records = jkz(&dir)
        .args(["deliberations", "list", "--json"])
        .run()
        .success()
        .stdout_str();
    assert!(records.contains("\"PASS\""), "{records}");

    // A verdict whose findings cannot be imported: one warning, the answer
    // and CMD's exit code as they were, nothing stored changed.
    let before = stored(&dir);
    let bad = answer(json!({"verdict": "FAIL", "concerns": ["Consider adding docs"]}));
    let run = run_with("reviewer", 3, &bad).success();
    assert!(
        run.stderr_str().contains("jkz run: warning: the verdict's findings were not imported: concerns[0] is a string without a file"),
        "{}",
        run.report()
    );
    assert_eq!(stored(&dir), before);
    // Without --iteration nothing is imported (nothing to file it under).
    let file = dir.write("answer-none.md", &reviewer);
    jkz(&dir)
        .args(["run", "--issue", "43", "--role", "reviewer", "--", "cat"])
        .arg(file)
        .run()
        .success();
    let none = jkz(&dir)
        .args(["findings", "--issue", "43", "--json"])
        .run()
        .success();
    assert_eq!(none.stdout_str().trim(), "[]");
}

fn hook_event(dir: &Dir, event: &str, extra: Value) -> Vec<u8> {
    let mut e = json!({
        "session_id": "s-findings",
        "transcript_path": dir.join("t.jsonl"),
        "cwd": dir.path(),
        "hook_event_name": event,
    });
    for (k, v) in extra.as_object().unwrap() {
        e[k] = v.clone();
    }
    serde_json::to_vec(&e).unwrap()
}

fn active_pipeline(dir: &Dir) {
    dir.write(
        "state/pipeline/42.json",
        json!({"42": {"current_phase": "review-fix", "active_agent": "builder",
                      "review_fix_count": "3", "review_passed": "false",
                      "last_updated": "2025-06-04T15:00:00Z"}})
        .to_string(),
    );
}

#[test]
fn pre_compact_lists_standing_findings_most_severe_first_and_resolved_as_safe_to_drop() {
    let dir = project();
    active_pipeline(&dir);
    for k in 1..=3 {
        import(
            &dir,
            k,
            "coderabbit",
            fixture(&format!("coderabbit-{k}.json")),
        )
        .success();
    }
    import(&dir, 2, "jg", fixture("test-result-2.json")).success();
    let run = dir
        .cmd("jkz-pre-compact")
        .stdin(hook_event(&dir, "PreCompact", json!({"trigger": "manual"})))
        .run()
        .success();
    let out = run.stdout_str();
    assert!(run.stderr_str().is_empty(), "{}", run.report());
    let standing = out
        .find("- Review findings still to fix, as reviewers reported them (iteration 3; 3 standing, most severe first; all: `jkz findings --issue 42`):")
        .unwrap_or_else(|| panic!("{out}"));
    // Most severe first: the failing test (critical), the reintroduced
    // rounding (major), the magic number (minor).
    let order: Vec<usize> = [
        "1. [critical, open] tests/test_pay.py — tests/test_pay.py::test_half_cent_rounding failed",
        "2. [major, reintroduced] src/pay.rs:91 — Round after converting to cents — not before!",
        "3. [minor, open] src/pay.rs:129 — Extract the magic number `100` into a named constant.",
    ]
    .iter()
    .map(|l| {
        out.find(l)
            .unwrap_or_else(|| panic!("{l:?} missing in\n{out}"))
    })
    .collect();
    assert!(
        standing < order[0] && order[0] < order[1] && order[1] < order[2],
        "{out}"
    );
    let resolved = out
        .lines()
        .find(|l| l.starts_with("- Resolved review findings, safe to drop (3): "))
        .unwrap_or_else(|| panic!("{out}"));
    for name in [
        "src/api/handler.rs:47 (Do not log the card number.)",
        "src/pay.rs:140",
        "README.md:12",
    ] {
        assert!(resolved.contains(name), "{name} in {resolved}");
    }
    // And SessionStart re-injects the standing ones, not the resolved.
    let run = dir
        .cmd("jkz-session-start")
        .stdin(hook_event(
            &dir,
            "SessionStart",
            json!({"source": "compact"}),
        ))
        .run()
        .success();
    let v: Value = serde_json::from_slice(run.stdout()).unwrap();
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("[major, reintroduced] src/pay.rs:91"),
        "{context}"
    );
    assert!(
        context.contains("[critical, open] tests/test_pay.py"),
        "{context}"
    );
    assert!(!context.contains("safe to drop"), "{context}");
    assert!(context.encode_utf16().count() < 4000);
}

#[test]
fn many_findings_stay_within_the_hooks_budgets() {
    let dir = project();
    active_pipeline(&dir);
    let findings: Vec<Value> = (0..300)
        .map(|i| {
            let severity = ["critical", "major", "minor", "nit"][i % 4];
            json!({"file": format!("src/mod{}.rs", i % 17), "line": i,
                   "message": format!("finding number {i}: {}", "the handler does too much at once ".repeat(12)),
                   "severity": severity})
        })
        .collect();
    dir.write(
        "many.json",
        json!({"verdict": "FAIL", "findings": findings}).to_string(),
    );
    jkz(&dir)
        .args([
            "findings",
            "import",
            "--issue",
            "42",
            "--iteration",
            "1",
            "--source",
            "verdict",
        ])
        .arg(dir.join("many.json"))
        .run()
        .success();
    let out = dir
        .cmd("jkz-pre-compact")
        .stdin(hook_event(&dir, "PreCompact", json!({"trigger": "auto"})))
        .run()
        .success()
        .stdout_str();
    assert!(out.encode_utf16().count() <= 8_000, "{}", out.len());
    assert!(out.contains("300 standing, most severe first"), "{out}");
    assert!(out.contains("more: `jkz findings --issue 42`"), "{out}");
    let first = out
        .find("1. [critical, new]")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(!out[..first].contains("[major, new]"));
    let run = dir
        .cmd("jkz-session-start")
        .stdin(hook_event(
            &dir,
            "SessionStart",
            json!({"source": "resume"}),
        ))
        .run()
        .success();
    let v: Value = serde_json::from_slice(run.stdout()).unwrap();
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.encode_utf16().count() < 4000, "{}", context.len());
    assert!(context.contains("[critical, new]"), "{context}");
}

#[test]
fn a_broken_history_costs_the_hooks_one_line_never_their_answer() {
    let dir = project();
    active_pipeline(&dir);
    dir.write("state/cr-history.db", vec![b'x'; 8192]);
    let run = dir
        .cmd("jkz-pre-compact")
        .stdin(hook_event(&dir, "PreCompact", json!({"trigger": "manual"})))
        .run()
        .success();
    assert!(
        run.stdout_str().contains("### Issue #42"),
        "{}",
        run.report()
    );
    run.one_line("jkz-pre-compact", "review findings not read");
    assert_eq!(
        std::fs::read(dir.join("state/cr-history.db")).unwrap(),
        vec![b'x'; 8192]
    );
    let run = jkz(&dir)
        .args(["findings", "--issue", "42"])
        .run()
        .expect_code(1);
    run.one_line("jkz findings", "is not a readable findings history");
}

#[test]
fn explain_shows_how_findings_were_matched_and_the_near_misses() {
    let dir = project();
    import(&dir, 1, "coderabbit", fixture("coderabbit-1.json")).success();
    import(&dir, 2, "coderabbit", fixture("coderabbit-2.json")).success();
    import(&dir, 2, "verdict", fixture("verdict-2.md")).success();
    let text = jkz(&dir)
        .args(["findings", "--issue", "42", "--explain"])
        .run()
        .success()
        .stdout_str();
    // The card number: three wordings, one normalized message.
    assert!(
        text.contains("src/api/handler.rs  \"do not log the card number\""),
        "{text}"
    );
    assert!(
        text.contains("iteration 2 coderabbit, line 47: \"do NOT log the card number!\"")
            || text.contains("iteration 2 coderabbit, line 47: \"Do not log the card number.\""),
        "{text}"
    );
    assert!(
        text.contains("iteration 2 verdict, line 46: \"Do not log the card number\""),
        "{text}"
    );
    // CodeRabbit's `None`/`rate_for(currency)` and the verdict's plain
    // words are kept apart, and shown as a near-miss.
    let near = text
        .split("Near-misses (kept apart by the rule):")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        near.contains("in src/pay.rs") && near.contains("\"handle the ` case of `\""),
        "{near}"
    );
    let list = listed(&dir, &["--explain"]);
    let none_rate = find(&list, NONE_RATE);
    assert_eq!(none_rate["identity"], "handle the ` case of `");
    assert_eq!(none_rate["near_misses"][0]["why"], "similar message");
    assert_eq!(find(&list, CARD)["sightings"].as_array().unwrap().len(), 3);
}

#[test]
fn the_observer_shows_each_issues_findings_by_iteration() {
    let dir = project();
    active_pipeline(&dir);
    for k in 1..=3 {
        import(
            &dir,
            k,
            "coderabbit",
            fixture(&format!("coderabbit-{k}.json")),
        )
        .success();
    }
    let server = crate::ui::Server::start(&dir.join("state"));
    let (status, body) = server.get("/api/issues/42");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let f = &v["findings"];
    assert_eq!(f["error"], Value::Null);
    let its = f["iterations"].as_array().unwrap();
    let counts: Vec<&Value> = its.iter().map(|i| &i["counts"]).collect();
    assert_eq!(
        counts,
        [
            &json!({"new": 4}),
            &json!({"new": 1, "open": 2, "resolved": 2}),
            &json!({"open": 1, "reintroduced": 1, "resolved": 2}),
        ]
    );
    assert_eq!(its[2]["iteration"], 3);
    assert_eq!(f["now"].as_array().unwrap().len(), 5);
    // An issue without findings answers empty.
    let (_, body) = server.get("/api/issues/7");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["findings"]["iterations"], json!([]));
}

#[test]
fn concurrent_importers_take_turns_and_all_land() {
    let dir = project();
    import(&dir, 1, "coderabbit", fixture("coderabbit-1.json")).success();
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let state = dir.join("state");
            let file = dir.write(
                format!("v{i}.json"),
                json!({"findings": [{"file": format!("src/w{i}.rs"), "line": i, "message": format!("worker {i} finding")}]}).to_string(),
            );
            let cwd = dir.path().to_path_buf();
            std::thread::spawn(move || {
                crate::util::Cmd::new("jkz", &cwd)
                    .arg("--state-dir")
                    .arg(state)
                    .args(["findings", "import", "--issue", "42", "--iteration", "1", "--source", "verdict", "--role"])
                    .arg(format!("worker{i}"))
                    .arg(file)
                    .run()
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap().success();
    }
    let list = listed(&dir, &[]);
    assert_eq!(list.len(), 4 + 8, "{list:#?}");
}

#[test]
fn usage_and_lookup_errors_say_what_to_do() {
    let dir = project();
    let run = jkz(&dir)
        .args(["findings", "--issue", "42"])
        .run()
        .success();
    assert!(
        run.stdout_str().contains("issue 42: no findings imported"),
        "{}",
        run.report()
    );
    jkz(&dir).args(["findings"]).run().expect_code(2);
    jkz(&dir)
        .args(["findings", "--issue", "42", "--status", "closed"])
        .run()
        .expect_code(2);
    let run = jkz(&dir)
        .args(["findings", "dismiss", "7", "--why", "x"])
        .run()
        .expect_code(1);
    run.one_line("jkz findings", "no finding 7");
    import(&dir, 1, "coderabbit", fixture("coderabbit-1.json")).success();
    let run = jkz(&dir)
        .args(["findings", "dismiss", "99", "--why", "x"])
        .run()
        .expect_code(1);
    run.one_line("jkz findings", "no finding 99");
    jkz(&dir)
        .args(["findings", "dismiss", "1", "--why", "  "])
        .run()
        .expect_code(2);
    let run = jkz(&dir)
        .args(["findings", "--issue", "42", "--iteration", "9"])
        .run()
        .expect_code(1);
    run.one_line(
        "jkz findings",
        "issue 42 has no iteration 9 imported (imported: 1)",
    );
    // No state directory: import says so and creates nothing.
    let bare = Dir::new();
    let run = bare
        .cmd("jkz")
        .args([
            "findings",
            "import",
            "--issue",
            "1",
            "--iteration",
            "1",
            "--source",
            "coderabbit",
        ])
        .arg(fixture("coderabbit-1.json"))
        .run()
        .expect_code(4);
    run.one_line("jkz findings", "no state directory");
    assert!(bare.files().is_empty());
}
