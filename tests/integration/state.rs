//! `jkz state`: the pipeline-state contract from the command line.

use serde_json::{json, Value};

use crate::util::Dir;

fn read_json(dir: &Dir, rel: &str) -> Value {
    serde_json::from_slice(&dir.read(rel)).expect("valid JSON")
}

fn state(dir: &Dir) -> crate::util::Cmd {
    dir.cmd("jkz").args(["--state-dir", "st", "state"])
}

#[test]
fn set_stores_strings_and_get_prints_them_bare() {
    let dir = Dir::new();
    state(&dir)
        .args(["set", "42", "current_phase", "building"])
        .run()
        .success();
    state(&dir)
        .args(["set", "42", "pr_number", "42"])
        .run()
        .success();
    state(&dir)
        .args(["set", "42", "sub_issues", "[43, 44]", "--json"])
        .run()
        .success();
    let v = read_json(&dir, "st/pipeline/42.json");
    assert_eq!(v["42"]["current_phase"], "building");
    assert_eq!(v["42"]["pr_number"], "42", "scalars are stored as strings");
    assert_eq!(v["42"]["sub_issues"], json!([43, 44]));
    let stamp = v["42"]["last_updated"].as_str().unwrap();
    assert_eq!(v["lastActivity"], stamp);
    assert!(stamp.ends_with('Z') && stamp.len() == 24, "{stamp}");

    let run = state(&dir)
        .args(["get", "42", "current_phase"])
        .run()
        .success();
    assert_eq!(run.stdout_str(), "building\n");
    let run = state(&dir)
        .args(["get", "42", "sub_issues"])
        .run()
        .success();
    assert_eq!(run.stdout_str(), "[43,44]\n");
    let run = state(&dir)
        .args(["get", "42", "lastActivity"])
        .run()
        .success();
    assert_eq!(run.stdout_str(), format!("{stamp}\n"));
    let run = state(&dir).args(["get", "42", "nope"]).run().expect_code(1);
    assert!(
        run.stderr_str().contains("issue 42 has no field \"nope\""),
        "{}",
        run.report()
    );
    state(&dir)
        .args(["get", "7", "current_phase"])
        .run()
        .expect_code(1);
}

#[test]
fn set_keeps_unknown_fields_and_their_order() {
    let dir = Dir::new();
    let original = r#"{"a-first": 1, "42": {"zz": {"k": [1, 2]}, "current_phase": "plan", "aa": "x"}, "heartbeat_pid": 9, "z-last": null}"#;
    dir.write("st/pipeline/42.json", original);
    state(&dir)
        .args(["set", "42", "current_phase", "qa"])
        .run()
        .success();
    let v = read_json(&dir, "st/pipeline/42.json");
    let top: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        top,
        ["a-first", "42", "heartbeat_pid", "z-last", "lastActivity"]
    );
    let data: Vec<_> = v["42"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(data, ["zz", "current_phase", "aa", "last_updated"]);
    assert_eq!(v["42"]["zz"]["k"], json!([1, 2]));
    assert_eq!(v["42"]["current_phase"], "qa");
    // Nothing else in the directory: no temp file left behind (the event
    // log holds the change).
    let names: Vec<_> = dir
        .files()
        .into_iter()
        .map(|p| p.display().to_string())
        .filter(|p| !p.starts_with("st/events/"))
        .collect();
    assert_eq!(names, ["st/pipeline/.42.json.lock", "st/pipeline/42.json"]);
    let log: Vec<_> = std::fs::read_dir(dir.join("st/events"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(log.len() == 1 && log[0].ends_with("-0000.jsonl"), "{log:?}");
}

#[test]
fn set_refuses_what_breaks_the_contract_and_leaves_the_file() {
    let dir = Dir::new();
    dir.write("st/pipeline/42.json", r#"{"42": {"qa_passed": "true"}}"#);
    let run = state(&dir)
        .args(["set", "42", "qa_passed", "maybe"])
        .run()
        .expect_code(1);
    assert!(
        run.stderr_str()
            .contains("qa_passed: expected \"true\" or \"false\""),
        "{}",
        run.report()
    );
    let run = state(&dir)
        .args(["set", "42", "pending_decisions", "{", "--json"])
        .run()
        .expect_code(1);
    assert!(run.stderr_str().contains("not JSON"), "{}", run.report());
    assert_eq!(
        dir.read("st/pipeline/42.json"),
        br#"{"42": {"qa_passed": "true"}}"#
    );
    dir.write("st/pipeline/9.json", "{broken");
    // A file that cannot be read is exit 2, as for every jkz state command.
    let run = state(&dir)
        .args(["set", "9", "current_phase", "x"])
        .run()
        .expect_code(2);
    assert!(
        run.stderr_str().contains("invalid JSON"),
        "{}",
        run.report()
    );
    assert_eq!(dir.read("st/pipeline/9.json"), b"{broken");
    // An issue number is digits only: never a path.
    for bad in ["../42", "4/2", "-1", ""] {
        state(&dir)
            .args(["set", bad, "f", "v"])
            .run()
            .expect_code(2);
    }
    assert!(!dir.join("42").exists() && !dir.join("st/42.json").exists());
}

#[test]
fn set_without_a_state_directory_creates_none() {
    let dir = Dir::new();
    let run = dir
        .cmd("jkz")
        .args(["state", "set", "42", "current_phase", "x"])
        .run()
        .expect_code(4);
    assert!(
        run.stderr_str().contains("no state directory"),
        "{}",
        run.report()
    );
    assert!(!dir.join("state").exists());
    // Named through the environment, it may be created.
    dir.cmd("jkz")
        .env("JKZ_STATE_DIR", dir.join("envstate"))
        .args(["state", "set", "42", "current_phase", "x"])
        .run()
        .success();
    assert!(dir.join("envstate/pipeline/42.json").exists());
}

#[test]
fn concurrent_sets_of_different_fields_all_land() {
    let dir = Dir::new();
    state(&dir)
        .args(["set", "5", "current_phase", "x"])
        .run()
        .success();
    std::thread::scope(|s| {
        for i in 0..12 {
            let dir = &dir;
            s.spawn(move || {
                state(dir)
                    .args(["set", "5", &format!("field_{i}"), &format!("v{i}")])
                    .run()
                    .success();
            });
        }
    });
    let v = read_json(&dir, "st/pipeline/5.json");
    for i in 0..12 {
        assert_eq!(v["5"][format!("field_{i}")], format!("v{i}"));
    }
}

#[test]
fn show_prints_the_normalized_view() {
    let dir = Dir::new();
    dir.write(
        "st/pipeline/42.json",
        r#"{"42": {"active_agent": "", "pr_number": "x", "review_passed": "true", "qa_passed": "true",
            "plan_iterations": "3"}, "lastActivity": "T9"}"#,
    );
    let run = state(&dir).args(["show", "42"]).run().success();
    let v: Value = serde_json::from_str(&run.stdout_str()).unwrap();
    assert_eq!(v["issue"], "42");
    assert_eq!(v["current_phase"], "unknown");
    assert_eq!(v["active_agent"], Value::Null);
    assert_eq!(v["issue_type"], "feature");
    assert_eq!(v["pr_number"], Value::Null);
    assert_eq!(v["last_updated"], "T9");
    assert_eq!(v["verdict"], "PASS");
    assert_eq!(v["plan_iterations"], 3);
}

#[test]
fn list_prints_a_table_or_json_and_skips_companions() {
    let dir = Dir::new();
    dir.write(
        "st/pipeline/42.json",
        r#"{"42": {"current_phase": "building", "active_agent": "builder", "pr_number": "42", "qa_passed": "false", "last_updated": "T1"}}"#,
    );
    dir.write("st/pipeline/7.json", r#"{"7": {}}"#);
    dir.write("st/pipeline/42-compact-plan.md", "the plan");
    dir.write("st/pipeline/42-compact-plan.json", "{}");
    let run = state(&dir).args(["list"]).run().success();
    assert_eq!(
        run.stdout_str(),
        "ISSUE  PHASE     AGENT    TYPE     PR  VERDICT  UPDATED\n\
         7      unknown   -        feature  -   -        -\n\
         42     building  builder  feature  42  FAIL     T1\n"
    );
    let run = state(&dir).args(["list", "--json"]).run().success();
    let v: Value = serde_json::from_str(&run.stdout_str()).unwrap();
    let issues: Vec<_> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["issue"].clone())
        .collect();
    assert_eq!(issues, [json!("7"), json!("42")]);
    // No colour codes, ever.
    assert!(!run.stdout_str().contains('\x1b'));
}

#[test]
fn validate_reports_one_line_per_problem() {
    let dir = Dir::new();
    dir.write(
        "st/pipeline/1.json",
        r#"{"1": {"current_phase": "qa", "pr_number": "12"}}"#,
    );
    dir.write(
        "st/pipeline/2.json",
        r##"{"2": {"pr_number": "PR-12", "review_passed": "yes"}, "heartbeat_pid": "x"}"##,
    );
    dir.write("st/pipeline/3.json", "not json");
    dir.write("st/pipeline/3-compact-plan.md", "companion, never invalid");
    let run = state(&dir).args(["validate"]).run().expect_code(1);
    let out = run.stdout_str();
    let lines: Vec<_> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{}", run.report());
    assert_eq!(
        lines[0],
        "st/pipeline/2.json: review_passed: expected \"true\" or \"false\", found \"yes\""
    );
    assert_eq!(
        lines[1],
        "st/pipeline/2.json: heartbeat_pid: expected a process id (integer), found \"x\""
    );
    assert!(
        lines[2].starts_with("st/pipeline/3.json: invalid JSON"),
        "{}",
        lines[2]
    );
    // A pr_number that is not one reads as null: a warning, not a problem.
    assert!(
        run.stderr_str().contains(
            "jkz state validate: warning: st/pipeline/2.json: pr_number: found \"PR-12\"; it reads as null"
        ),
        "{}",
        run.report()
    );

    state(&dir)
        .args(["validate", "st/pipeline/1.json"])
        .run()
        .success();
    let run = state(&dir)
        .args(["validate", "st/pipeline/3-compact-plan.md"])
        .run()
        .expect_code(1);
    assert!(
        run.stdout_str().contains("file name: expected <N>.json"),
        "{}",
        run.report()
    );
}

#[test]
fn help_documents_every_flag() {
    let run = Dir::new()
        .cmd("jkz")
        .args(["state", "set", "--help"])
        .run()
        .success();
    assert!(run.stdout_str().contains("--json"));
    assert!(run.stdout_str().contains("--state-dir"));
    assert!(run.stdout_str().contains("--force"));
}

#[test]
fn pr_resolves_argument_then_environment_then_field() {
    let dir = Dir::new();
    state(&dir)
        .args(["set", "7", "pr_number", "42"])
        .run()
        .success();
    let pr = |args: &[&str], env: Option<&str>| {
        let mut cmd = state(&dir).arg("pr").args(args.iter().copied());
        if let Some(v) = env {
            cmd = cmd.env("JKZ_PR_NUMBER", v);
        }
        cmd.run()
    };
    assert_eq!(pr(&["7"], None).success().stdout_str(), "42\n");
    assert_eq!(pr(&["7"], Some("9")).success().stdout_str(), "9\n");
    assert_eq!(pr(&["7", "5"], Some("9")).success().stdout_str(), "5\n");
    // An empty level counts as not given; one that is not a number is an
    // error, never silently replaced by the next level.
    assert_eq!(pr(&["7", ""], Some("")).success().stdout_str(), "42\n");
    for (args, env) in [(&["7", "x"][..], Some("9")), (&["7"][..], Some("y"))] {
        let run = pr(args, env).expect_code(2);
        assert!(run.stdout_str().is_empty(), "{}", run.report());
        assert!(
            run.stderr_str().contains("is not a PR number"),
            "{}",
            run.report()
        );
    }
    // No file needed when a level above the field answers.
    assert_eq!(pr(&["8"], Some("3")).success().stdout_str(), "3\n");
    let run = pr(&["8"], None).expect_code(1);
    assert!(
        run.stderr_str().contains("no pipeline state for issue 8"),
        "{}",
        run.report()
    );
    state(&dir)
        .args(["set", "9", "current_phase", "planning"])
        .run()
        .success();
    let run = pr(&["9"], None).expect_code(1);
    assert!(
        run.stderr_str().contains("no PR number for issue 9"),
        "{}",
        run.report()
    );
}

#[test]
fn set_heartbeat_pid_and_last_activity_land_beside_the_issue_data() {
    let dir = Dir::new();
    state(&dir)
        .args(["set", "42", "heartbeat_pid", "1234"])
        .run()
        .success();
    state(&dir)
        .args(["set", "42", "lastActivity", "2025-03-01T00:00:00.000Z"])
        .run()
        .success();
    let v = read_json(&dir, "st/pipeline/42.json");
    assert_eq!(v["heartbeat_pid"], 1234, "{v}");
    assert_eq!(v["lastActivity"], "2025-03-01T00:00:00.000Z", "{v}");
    assert!(v["42"].get("heartbeat_pid").is_none(), "{v}");
    assert!(v["42"].get("lastActivity").is_none(), "{v}");
    // Read back where they are, and by the view.
    let get = |field: &str| {
        state(&dir)
            .args(["get", "42", field])
            .run()
            .success()
            .stdout_str()
    };
    assert_eq!(get("heartbeat_pid"), "1234\n");
    assert_eq!(get("lastActivity"), "2025-03-01T00:00:00.000Z\n");
    let view: Value = serde_json::from_str(
        &state(&dir)
            .args(["show", "42"])
            .run()
            .success()
            .stdout_str(),
    )
    .unwrap();
    assert_eq!(view["heartbeat_pid"], 1234, "{view}");
    // A sibling's value is checked like the view reads it.
    state(&dir)
        .args(["set", "42", "heartbeat_pid", "me"])
        .run()
        .expect_code(1);
}

#[test]
fn issue_numbers_have_one_spelling_007_is_7_and_0_is_refused() {
    let dir = Dir::new();
    state(&dir)
        .args(["set", "007", "current_phase", "building"])
        .run()
        .success();
    assert!(!dir.join("st/pipeline/007.json").exists());
    let v = read_json(&dir, "st/pipeline/7.json");
    assert_eq!(v["7"]["current_phase"], "building", "{v}");
    for spelling in ["7", "07", "0007"] {
        let run = state(&dir)
            .args(["get", spelling, "current_phase"])
            .run()
            .success();
        assert_eq!(run.stdout_str(), "building\n");
    }
    for zero in ["0", "000"] {
        let run = state(&dir)
            .args(["set", zero, "current_phase", "x"])
            .run()
            .expect_code(2);
        assert!(run.stderr_str().contains("start at 1"), "{}", run.report());
    }
    assert!(!dir.join("st/pipeline/0.json").exists());
    // A file spelled otherwise is named by validate, not silently skipped.
    dir.write("st/pipeline/012.json", r#"{"012": {}}"#);
    let run = state(&dir).args(["validate"]).run().expect_code(1);
    assert!(
        run.stdout_str().contains("rename it to 12.json"),
        "{}",
        run.report()
    );
    let listed = state(&dir).args(["list"]).run().success().stdout_str();
    assert_eq!(listed.lines().count(), 2, "{listed}");
}

#[test]
fn get_on_a_corrupt_pipeline_file_exits_2_not_1() {
    let dir = Dir::new();
    dir.write("st/pipeline/5.json", "{\"5\": {\"current_phase\": ");
    for args in [
        &["get", "5", "current_phase"][..],
        &["show", "5"],
        &["pr", "5"],
    ] {
        let run = state(&dir).args(args.iter().copied()).run().expect_code(2);
        assert!(
            run.stderr_str().contains("could not be read"),
            "{}",
            run.report()
        );
    }
    // Missing stays exit 1: a script can tell missing from broken.
    state(&dir)
        .args(["get", "6", "current_phase"])
        .run()
        .expect_code(1);
    state(&dir).args(["get", "5", "nope"]).run().expect_code(2);
}

#[test]
fn validate_and_show_read_counts_by_one_rule() {
    let dir = Dir::new();
    dir.write(
        "st/pipeline/3.json",
        r#"{"3": {"plan_iterations": 2, "qa_passed": true, "pr_number": 12}}"#,
    );
    let view: Value =
        serde_json::from_str(&state(&dir).args(["show", "3"]).run().success().stdout_str())
            .unwrap();
    assert_eq!(view["plan_iterations"], 2);
    assert_eq!(view["pr_number"], 12);
    state(&dir).args(["validate"]).run().success();
    // What the view cannot read, validate reports.
    dir.write("st/pipeline/3.json", r#"{"3": {"plan_iterations": "two"}}"#);
    let view: Value =
        serde_json::from_str(&state(&dir).args(["show", "3"]).run().success().stdout_str())
            .unwrap();
    assert_eq!(view["plan_iterations"], Value::Null);
    let run = state(&dir).args(["validate"]).run().expect_code(1);
    assert!(
        run.stdout_str().contains("plan_iterations"),
        "{}",
        run.report()
    );
}

#[test]
fn set_on_a_file_that_fails_validation_is_refused_and_leaves_it() {
    let dir = Dir::new();
    let invalid = r#"{"4": {"qa_passed": "maybe", "current_phase": "qa"}}"#;
    dir.write("st/pipeline/4.json", invalid);
    let run = state(&dir)
        .args(["set", "4", "current_phase", "fixing"])
        .run()
        .expect_code(1);
    assert!(
        run.stderr_str().contains("qa_passed") && run.stderr_str().contains("nothing was changed"),
        "{}",
        run.report()
    );
    assert_eq!(dir.read("st/pipeline/4.json"), invalid.as_bytes());
    // Setting the broken field itself to a valid value repairs the file.
    state(&dir)
        .args(["set", "4", "qa_passed", "false"])
        .run()
        .success();
    state(&dir).args(["validate"]).run().success();
    let v = read_json(&dir, "st/pipeline/4.json");
    assert_eq!(v["4"]["current_phase"], "qa");
}

#[test]
fn get_reads_derived_fields_of_the_normalized_view() {
    let dir = Dir::new();
    dir.write(
        "st/pipeline/42.json",
        r#"{"42": {"review_passed": "true", "qa_passed": "false", "pr_number": " 9 "}}"#,
    );
    let get = |field: &str| state(&dir).args(["get", "42", field]).run();
    assert_eq!(get("verdict").success().stdout_str(), "FAIL\n");
    assert_eq!(get("current_phase").success().stdout_str(), "unknown\n");
    assert_eq!(get("issue_type").success().stdout_str(), "feature\n");
    // Stored fields are printed as stored.
    assert_eq!(get("pr_number").success().stdout_str(), " 9 \n");
    // A derived null is no value.
    get("active_agent").expect_code(1);
}

/// `#12` is a PR number (issue 23: it used to be refused);
/// `PR-12` is not, and is named in the refusal.
#[test]
fn pr_refuses_what_is_not_a_pr_number() {
    let dir = Dir::new();
    state(&dir)
        .args(["set", "9", "pr_number", "4"])
        .run()
        .success();
    let run = state(&dir).args(["pr", "9", "PR-12"]).run().expect_code(2);
    assert!(run.stdout_str().is_empty(), "{}", run.report());
    assert!(run.stderr_str().contains("\"PR-12\""), "{}", run.report());
    for given in ["12", "#12"] {
        assert_eq!(
            state(&dir)
                .args(["pr", "9", given])
                .run()
                .success()
                .stdout_str(),
            "12\n"
        );
    }
}

#[test]
fn validate_without_a_state_directory_exits_4_and_says_so() {
    let dir = Dir::new();
    let run = state(&dir).args(["validate"]).run().expect_code(4);
    assert!(
        run.stderr_str().contains("no state directory"),
        "{}",
        run.report()
    );
    // With one (even without pipeline/), nothing to check is success.
    std::fs::create_dir_all(dir.join("st")).unwrap();
    state(&dir).args(["validate"]).run().success();
}

#[test]
fn validate_says_how_many_files_it_checked_when_stderr_is_a_terminal() {
    let dir = Dir::new();
    dir.write("st/pipeline/1.json", r#"{"1": {}}"#);
    dir.write("st/pipeline/2.json", r#"{"2": {}}"#);
    // A pseudo-terminal for stderr, through script(1).
    let jkz = crate::util::bin("jkz");
    let out = std::process::Command::new("script")
        .args(["-qec"])
        .arg(format!(
            "{} --state-dir st state validate 2>&1 >/dev/null",
            jkz.display()
        ))
        .arg("/dev/null")
        .current_dir(dir.path())
        .output();
    let Ok(out) = out else {
        panic!("this test needs script(1) (util-linux) for a terminal");
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("checked 2 pipeline files: no problems"),
        "{out:?}"
    );
    // Not a terminal: nothing on stderr.
    let run = state(&dir).args(["validate"]).run().success();
    assert!(run.stderr_str().is_empty(), "{}", run.report());
}
