//! `jkz reduce` and `jkz filters` through the real binary.

use std::path::PathBuf;

use crate::util::Dir;

/// Real output captured for the library's own tests.
fn testdata(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("shared/reduce/testdata")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Client characters (UTF-16 units) of a view.
fn chars(bytes: &[u8]) -> usize {
    String::from_utf8_lossy(bytes).encode_utf16().count()
}

fn kept_files(dir: &Dir) -> Vec<PathBuf> {
    match std::fs::read_dir(dir.join("state/context-offload")) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn a_failing_test_run_is_reduced_its_signals_kept_and_the_whole_kept_on_disk() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    let input = testdata("cargo-test.txt");
    let run = dir
        .cmd("jkz")
        .args([
            "--state-dir",
            "state",
            "reduce",
            "--command",
            "cargo test",
            "--exit-code",
            "101",
        ])
        .stdin(&input)
        .run()
        .success();
    let view = run.stdout_str();
    assert!(
        chars(run.stdout()) <= 10_000,
        "the failure budget\n{}",
        run.report()
    );
    assert!(run.stdout().len() * 10 < input.len(), "{}", run.report());
    for needed in [
        "test tests::unicode ... FAILED",
        "assertion `left == right` failed: one character",
        "test result: FAILED. 1200 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.28s",
        "[jkz: lines 6-1205: 1,200 passing tests collapsed]",
    ] {
        assert!(view.lines().any(|l| l == needed), "{needed}\n{}", run.report());
    }
    // The last line names the whole output, its size, and how to read it.
    let files = kept_files(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::read(&files[0]).unwrap(),
        input,
        "kept byte for byte"
    );
    let last = view.lines().last().unwrap();
    let path = std::fs::canonicalize(&files[0]).unwrap();
    assert!(
        last.starts_with(&format!(
            "[jkz: full output: {} (36,855 bytes, 1,268 lines)",
            path.display()
        )),
        "{last}"
    );
    assert!(
        last.ends_with("Read it with offset = line number, limit = line count]"),
        "{last}"
    );
    assert!(run.stderr_str().is_empty(), "{}", run.report());
}

#[test]
fn the_command_picks_the_rules_and_without_one_the_first_lines_do() {
    let dir = Dir::new();
    let input = testdata("go-test.txt");
    for args in [
        &[
            "reduce",
            "--no-full-output",
            "--command",
            "go test -v ./...",
        ][..],
        &["reduce", "--no-full-output"],
    ] {
        let run = dir.cmd("jkz").args(args).stdin(&input).run().success();
        let view = run.stdout_str();
        assert!(
            view.contains("--- FAIL: TestUnicode (0.00s)\n"),
            "{}",
            run.report()
        );
        assert!(!view.contains("=== RUN"), "{}", run.report());
        assert!(
            !view.contains("[jkz: full output"),
            "not kept: {}",
            run.report()
        );
    }
    assert!(kept_files(&dir).is_empty());
}

#[test]
fn an_output_with_little_to_save_comes_back_unchanged_and_nothing_is_kept() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    for input in [testdata("make.txt"), testdata("git-show.txt"), Vec::new()] {
        let run = dir
            .cmd("jkz")
            .args(["--state-dir", "state", "reduce", "--command", "git show"])
            .stdin(&input)
            .run()
            .success();
        assert_eq!(run.stdout(), &input[..], "{}", run.report());
    }
    assert!(kept_files(&dir).is_empty());
}

#[test]
fn a_budget_bounds_the_view_and_signals_past_it_are_counted() {
    let dir = Dir::new();
    let input = testdata("cargo-build.txt");
    let run = dir
        .cmd("jkz")
        .args([
            "reduce",
            "--no-full-output",
            "--command",
            "cargo build",
            "--budget",
            "3000",
        ])
        .stdin(&input)
        .run()
        .success();
    assert!(chars(run.stdout()) <= 3_000, "{}", run.report());
    let view = run.stdout_str();
    assert!(
        view.contains("error[E0308]: mismatched types\n"),
        "{}",
        run.report()
    );
    assert!(
        view.lines().any(|l| l.starts_with("[jkz: ")
            && l.contains(" signal lines not shown (over 3,000 characters)")),
        "{}",
        run.report()
    );
}

#[test]
fn bad_flags_are_usage_errors() {
    let dir = Dir::new();
    for (args, why) in [
        (&["reduce", "--budget", "500"][..], "500 is under 1000"),
        (
            &["reduce", "--budget", "lots"],
            "not a number of characters",
        ),
        (&["reduce", "--exit-code", "x"], "invalid value"),
    ] {
        let run = dir.cmd("jkz").args(args).run().expect_code(2);
        assert!(run.stderr_str().contains(why), "{}", run.report());
    }
}

#[test]
fn a_project_filter_applies_and_a_broken_one_costs_a_warning_not_the_output() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    dir.write(
        "jkz.toml",
        "[[filters]]\nname = \"deploy\"\ncommands = [\"./deploy.sh\"]\n\
         [[filters.rules]]\nmatch = '^step \\d+ ok$'\nis = \"collapse:deploy steps\"\n\
         examples = [{ line = \"step 12 ok\", is = \"collapse:deploy steps\" }]\n\
         [[filters.rules]]\nmatch = '^ROLLBACK'\nis = \"signal:error\"\n\
         examples = [{ line = \"ROLLBACK at step 3\", is = \"signal:error\" }]\n",
    );
    let mut input = String::new();
    for i in 0..500 {
        input.push_str(&format!("step {i} ok\n"));
    }
    input.push_str("ROLLBACK at step 500: disk full\n");
    let run = dir
        .cmd("jkz")
        .args([
            "--state-dir",
            "state",
            "reduce",
            "--no-full-output",
            "--command",
            "./deploy.sh prod",
        ])
        .stdin(&input)
        .run()
        .success();
    assert_eq!(
        run.stdout_str(),
        "[jkz: lines 1-500: 500 deploy steps collapsed]\nROLLBACK at step 500: disk full\n",
        "{}",
        run.report()
    );
    let run = dir
        .cmd("jkz")
        .args(["--state-dir", "state", "filters", "test"])
        .run()
        .success();
    assert!(run.stdout_str().starts_with("ok: "), "{}", run.report());

    dir.write("jkz.toml", "[[filters]]\nname = \"deploy\"\nrulez = []\n");
    let run = dir
        .cmd("jkz")
        .args([
            "--state-dir",
            "state",
            "reduce",
            "--no-full-output",
            "--command",
            "./deploy.sh prod",
        ])
        .stdin(&input)
        .run()
        .success();
    run.one_line("jkz reduce", "filters[0].rulez: unknown key");
    assert!(
        run.stdout_str()
            .contains("ROLLBACK at step 500: disk full\n"),
        "{}",
        run.report()
    );
    let run = dir
        .cmd("jkz")
        .args(["--state-dir", "state", "filters", "test"])
        .run()
        .expect_code(2);
    run.one_line("jkz filters", "filters[0].rulez: unknown key");
}

#[test]
fn filters_test_names_each_example_that_comes_out_otherwise() {
    let dir = Dir::new();
    dir.write(
        "mine.toml",
        "[[filters]]\nname = \"tests\"\n[[filters.rules]]\nmatch = '^never'\nis = \"signal:summary\"\n\
         examples = [{ line = \"test a::b ... ok\", is = \"signal:summary\" }]\n",
    );
    let run = dir
        .cmd("jkz")
        .args(["filters", "test", "--file", "mine.toml"])
        .run()
        .expect_code(1);
    let out = run.stdout_str();
    assert!(
        out.starts_with("FAIL mine.toml: filters[0].rules[0] (family tests): \"test a::b ... ok\" is collapse:passing tests, expected signal:summary (decided by built-in filters["),
        "{}",
        run.report()
    );
    assert!(
        out.ends_with("1 of 203 examples failed\n"),
        "{}",
        run.report()
    );
    let run = dir.cmd("jkz").args(["filters", "list"]).run().success();
    let out = run.stdout_str();
    for family in [
        "tests —",
        "builds —",
        "installs —",
        "git-log —",
        "git-diff —",
        "git —",
        "listings —",
        "logs —",
        "generic —",
        "common —",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(family)),
            "{family}\n{out}"
        );
    }
    assert!(out.contains("collapse:passing tests"), "{out}");
}

#[test]
fn a_large_input_streams_and_is_kept_whole() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    let mut input = Vec::new();
    let mut i = 0u64;
    while input.len() < 20 << 20 {
        input.extend_from_slice(
            format!(
                "2025-03-04T12:00:{:02}Z INFO request {i} served in {}ms\n",
                i % 60,
                i % 97
            )
            .as_bytes(),
        );
        if i % 200_000 == 7 {
            input.extend_from_slice(
                format!("2025-03-04T12:00:00Z ERROR request {i} failed: connection reset\n")
                    .as_bytes(),
            );
        }
        i += 1;
    }
    let run = dir
        .cmd("jkz")
        .args([
            "--state-dir",
            "state",
            "reduce",
            "--command",
            "kubectl logs api",
        ])
        .stdin(&input)
        .run()
        .success();
    let view = run.stdout_str();
    assert!(chars(run.stdout()) <= 20_000);
    let errors = view.lines().filter(|l| l.contains(" ERROR ")).count();
    assert_eq!(
        errors,
        input
            .split(|&b| b == b'\n')
            .filter(|l| l.windows(7).any(|w| w == b" ERROR "))
            .count(),
        "{}",
        run.report()
    );
    let files = kept_files(&dir);
    assert_eq!(files.len(), 1);
    assert!(
        std::fs::read(&files[0]).unwrap() == input,
        "kept byte for byte"
    );
}
