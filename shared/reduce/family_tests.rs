//! Each family on real output: what real tools printed (captured from
//! cargo 1.95, go 1.19, gcc 12, javac 17, python 3, pip, npm 10, apt and git
//! on the machine that wrote these tests, in `testdata/`), reduced as the
//! family's rules say. The lines a developer needs from each output must be
//! in the view verbatim; the noise must not.

use super::stream::{reduce_with, Tuning};
use super::table::{FilterTable, Is, SignalKind};
use super::{ClientCut, Context, Reduced, DEFAULT_BUDGET, FAILURE_BUDGET};
use crate::reduce::classifier::Classifier;
use crate::reduce::item::units;

fn reduce(input: &str, command: Option<&str>, exit_code: i32, budget: usize) -> Reduced {
    reduce_for(input, command, exit_code, budget, None)
}

/// As `jkz reduce` does: knowing what the client itself would show whole.
fn reduce_as_cli(input: &str, command: Option<&str>, exit_code: i32, budget: usize) -> Reduced {
    reduce_for(
        input,
        command,
        exit_code,
        budget,
        Some(crate::client::claude::shown::bash(Some(exit_code))),
    )
}

fn reduce_for(
    input: &str,
    command: Option<&str>,
    exit_code: i32,
    budget: usize,
    client: Option<ClientCut>,
) -> Reduced {
    let ctx = Context {
        command,
        exit_code: Some(exit_code),
        budget_chars: budget,
        keep: None,
        client,
        ..Context::default()
    };
    let mut warnings = Vec::new();
    let r = reduce_with(
        &mut input.as_bytes(),
        &ctx,
        &FilterTable::built_in(),
        &mut warnings,
        Tuning::default(),
    )
    .unwrap();
    assert!(warnings.is_empty());
    assert!(units(&r.view) <= budget || !r.stats.reduced);
    r
}

fn view(r: &Reduced) -> String {
    String::from_utf8(r.view.clone()).unwrap()
}

/// Every one of `needed` is a line of the view.
fn assert_kept(view: &str, needed: &[&str]) {
    for line in needed {
        assert!(
            view.lines().any(|l| l == *line),
            "missing {line:?} in\n{view}"
        );
    }
}

/// What a family makes of each line on its own.
fn is(family: &str, line: &str) -> Is {
    Classifier::new(&FilterTable::built_in(), family)
        .unwrap()
        .classify_alone(line)
        .0
}

#[test]
fn a_failing_cargo_test_keeps_its_failures_panics_and_summary_and_collapses_1200_passing_tests() {
    let input = include_str!("testdata/cargo-test.txt");
    let r = reduce(input, Some("cargo test"), 101, FAILURE_BUDGET);
    let v = view(&r);
    assert_eq!(r.family, "tests");
    assert_kept(
        &v,
        &[
            "running 1202 tests",
            "[jkz: lines 6-1205: 1,200 passing tests collapsed]",
            "test tests::unicode ... FAILED",
            "test tests::empty_is_zero ... FAILED",
            "---- tests::unicode stdout ----",
            "assertion `left == right` failed: one character",
            "  left: 2",
            " right: 1",
            "             at ./src/lib.rs:1203:24",
            "    tests::empty_is_zero",
            "test result: FAILED. 1200 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.28s",
            "error: test failed, to rerun pass `--lib`",
        ],
    );
    assert!(v.lines().any(|l| l.starts_with("thread 'tests::unicode'")
        && l.ends_with("panicked at src/lib.rs:1203:24:")));
    assert!(!v.contains("... ok"), "{v}");
    assert!(!v.contains("core::panicking"), "library frames collapse");
    assert!(!r.stats.overflow);
    assert!(
        r.stats.view_chars * 20 < r.stats.input_chars,
        "{:?}",
        r.stats
    );
}

#[test]
fn a_build_with_120_warnings_keeps_the_error_with_its_snippet_and_groups_the_warnings() {
    let input = include_str!("testdata/cargo-build.txt");
    let r = reduce(input, Some("cargo build"), 101, 4_000);
    let v = view(&r);
    assert_eq!(r.family, "builds");
    assert_kept(
        &v,
        &[
            "error[E0308]: mismatched types",
            "  --> src/lib.rs:61:23",
            "   |                 ---   ^^^^ expected `u32`, found `&str`",
            "warning: `warn` (lib) generated 120 warnings",
            "error: could not compile `warn` (lib) due to 1 previous error; 120 warnings emitted",
            "[jkz: 120 warning lines by kind: 120 × warning: unused variable: `…`]",
        ],
    );
    assert!(
        r.stats.overflow,
        "240 warning and anchor lines do not fit 4,000"
    );
    assert!(v.contains("signal lines not shown"));
    assert!(!v.contains("Compiling warn"));
    // With room, every distinct warning and its anchor; the snippets
    // between them are not what fills it.
    let r = reduce(input, Some("cargo build"), 101, FAILURE_BUDGET);
    let v = view(&r);
    assert!(!r.stats.overflow);
    for i in 1..=60 {
        assert_kept(
            &v,
            &[
                &format!("warning: unused variable: `x{i}`"),
                &format!("warning: unused variable: `y{i}`"),
            ],
        );
    }
    assert!(
        r.stats.view_chars * 2 < r.stats.input_chars,
        "{:?}",
        r.stats
    );
}

#[test]
fn a_failing_go_test_keeps_the_assertion_the_panic_and_the_package_result() {
    let input = include_str!("testdata/go-test.txt");
    let r = reduce(input, Some("go test -v ./..."), 1, FAILURE_BUDGET);
    let v = view(&r);
    assert_kept(
        &v,
        &[
            "    parse_test.go:11: got 2, want 1",
            "--- FAIL: TestUnicode (0.00s)",
            "--- FAIL: TestPanics (0.00s)",
            "panic: runtime error: index out of range [3] with length 0 [recovered]",
            "goroutine 50 [running]:",
            "\t/tmp/rdx/gox/parse_test.go:15 +0x1a",
            "FAIL\texample.com/parse\t0.008s",
        ],
    );
    assert!(!v.contains("=== RUN"));
    assert!(!v.contains("--- PASS"));
    // The command says nothing: the first lines do.
    let sniffed = reduce(input, Some("./ci.sh"), 1, FAILURE_BUDGET);
    assert_eq!(sniffed.family, "tests");
}

#[test]
fn compilers_name_their_errors_warnings_and_anchors() {
    // gcc through make.
    assert_eq!(
        is("builds", "main.c:6:31: error: expected ‘;’ before ‘return’"),
        Is::Signal(SignalKind::Error)
    );
    assert_eq!(
        is("builds", "main.c:5:15: warning: initialization of ‘char *’ from ‘int’ makes pointer from integer without a cast [-Wint-conversion]"),
        Is::Signal(SignalKind::Warning)
    );
    assert_eq!(
        is("builds", "make: *** [<builtin>: main.o] Error 1"),
        Is::Signal(SignalKind::Exit)
    );
    assert_eq!(
        is("builds", "    6 |     printf(\"%d\\n\", parse(\"x\"))"),
        Is::Context
    );
    // javac.
    assert_eq!(
        is("builds", "Main.java:4: error: ';' expected"),
        Is::Signal(SignalKind::Error)
    );
    // Small outputs come back as they are: nothing to save.
    for (input, command) in [
        (include_str!("testdata/make.txt"), "make"),
        (include_str!("testdata/javac.txt"), "javac Main.java"),
    ] {
        let r = reduce(input, Some(command), 2, FAILURE_BUDGET);
        assert!(!r.stats.reduced);
        assert_eq!(r.view, input.as_bytes());
        assert_eq!(r.family, "builds");
    }
}

#[test]
fn a_python_traceback_is_signal_from_its_header_to_its_exception() {
    let input = include_str!("testdata/python-traceback.txt");
    let c = Classifier::new(&FilterTable::built_in(), "generic").unwrap();
    let kinds: Vec<Is> = input.lines().map(|l| c.classify_alone(l).0).collect();
    assert_eq!(kinds[0], Is::Signal(SignalKind::Traceback));
    assert_eq!(
        kinds[1],
        Is::Signal(SignalKind::Traceback),
        "{}",
        input.lines().nth(1).unwrap()
    );
    assert_eq!(kinds.last(), Some(&Is::Signal(SignalKind::Error)));
}

#[test]
fn installs_name_their_errors_and_collapse_their_progress() {
    for line in include_str!("testdata/npm.txt").lines() {
        assert_eq!(
            is("installs", line),
            Is::Signal(SignalKind::Error),
            "{line}"
        );
    }
    let pip = include_str!("testdata/pip.txt");
    assert_eq!(
        is("installs", pip.lines().nth(2).unwrap()),
        Is::Signal(SignalKind::Error)
    );
    assert_eq!(
        is("installs", pip.lines().nth(1).unwrap()),
        Is::Signal(SignalKind::Warning)
    );
    let apt = include_str!("testdata/apt.txt");
    assert_eq!(
        is("installs", apt.lines().next().unwrap()),
        Is::Collapse("progress lines".into())
    );
    assert_eq!(
        is(
            "installs",
            "2 upgraded, 0 newly installed, 0 to remove and 117 not upgraded."
        ),
        Is::Signal(SignalKind::Summary)
    );
    assert_eq!(
        reduce(apt, Some("sudo apt-get install -y jq"), 0, DEFAULT_BUDGET).family,
        "installs"
    );
}

#[test]
fn a_git_log_keeps_every_hash_and_subject() {
    let input = include_str!("testdata/git-log.txt");
    let r = reduce(input, Some("git log -n 40"), 0, DEFAULT_BUDGET);
    let v = view(&r);
    assert_eq!(r.family, "git-log");
    assert!(r.stats.reduced && !r.stats.overflow, "{:?}", r.stats);
    let lines: Vec<&str> = input.lines().collect();
    let mut commits = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("commit ") {
            commits += 1;
            assert_kept(&v, &[line]);
            // The subject: the first non-blank line after Date:.
            let date = i + lines[i..]
                .iter()
                .position(|l| l.starts_with("Date:"))
                .unwrap();
            let subject = lines[date + 1..].iter().find(|l| !l.is_empty()).unwrap();
            assert_kept(&v, &[subject]);
        }
    }
    assert_eq!(commits, 40);
    assert!(
        r.stats.view_chars * 10 < r.stats.input_chars * 6,
        "{:?}",
        r.stats
    );
    // Past the budget: the first commits, the last, and a count.
    let r = reduce(input, Some("git log -n 40"), 0, 2_000);
    assert!(r.stats.overflow);
    assert_kept(&view(&r), &[lines[0]]);
}

#[test]
fn a_diff_keeps_its_file_and_hunk_headers_and_as_much_of_its_lines_as_fit() {
    let input = include_str!("testdata/git-show.txt");
    let r = reduce(input, Some("git show HEAD~1"), 0, 2_000);
    let v = view(&r);
    assert_eq!(r.family, "git-diff");
    for line in input.lines() {
        if line.starts_with("diff --cc") || line.starts_with("@@@") || line.starts_with("commit ") {
            assert_kept(&v, &[line]);
        }
    }
    assert!(units(&r.view) <= 2_000);
    // A diff the client would show whole is what was asked for: all of it,
    // whatever the budget.
    let r = reduce_as_cli(input, Some("git show HEAD~1"), 0, 2_000);
    assert!(!r.stats.reduced, "{:?}", r.stats);
    assert!(r.stats.unchanged.unwrap().contains("what was asked for"));
}

#[test]
fn git_status_unmerged_paths_are_identifiers_and_changed_ones_context() {
    let input = include_str!("testdata/git-status.txt");
    let modified = input
        .lines()
        .find(|l| l.starts_with("\tmodified:"))
        .unwrap();
    assert_eq!(is("git", modified), Is::Context);
    assert_eq!(
        is("git", "\tboth modified:   src/click/core.py"),
        Is::Signal(SignalKind::Id)
    );
    assert_eq!(
        is("git", "\tdeleted by them: src/click/_termui_impl.py"),
        Is::Signal(SignalKind::Id)
    );
    assert_eq!(
        is(
            "git",
            "  (use \"git add <file>...\" to update what will be committed)"
        ),
        Is::Collapse("git hints".into())
    );
}

#[test]
fn listings_are_what_was_asked_for() {
    for (input, command) in [
        (include_str!("testdata/ls.txt"), "ls -la"),
        (
            include_str!("testdata/find.txt"),
            "find shared -name '*.rs'",
        ),
    ] {
        let r = reduce_as_cli(input, Some(command), 0, 1_200);
        assert_eq!(r.family, "listings");
        assert!(
            !r.stats.reduced,
            "a listing the client shows whole is left whole"
        );
    }
    let find = include_str!("testdata/find.txt");
    let r = reduce(find, Some("find shared"), 0, 1_200);
    let v = view(&r);
    assert!(r.stats.reduced);
    assert_kept(
        &v,
        &[find.lines().next().unwrap(), find.lines().last().unwrap()],
    );
}
