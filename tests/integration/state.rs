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
    // Nothing else in the directory: no temp file left behind.
    let names: Vec<_> = dir
        .files()
        .into_iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(names, ["st/pipeline/.42.json.lock", "st/pipeline/42.json"]);
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
    let run = state(&dir)
        .args(["set", "9", "current_phase", "x"])
        .run()
        .expect_code(1);
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
        .expect_code(2);
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
        r#"{"2": {"pr_number": 12, "review_passed": "yes"}, "heartbeat_pid": "x"}"#,
    );
    dir.write("st/pipeline/3.json", "not json");
    dir.write("st/pipeline/3-compact-plan.md", "companion, never invalid");
    let run = state(&dir).args(["validate"]).run().expect_code(1);
    let out = run.stdout_str();
    let lines: Vec<_> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{}", run.report());
    assert_eq!(
        lines[0],
        "st/pipeline/2.json: pr_number: expected a string (scalars are stored as strings), found 12"
    );
    assert_eq!(
        lines[1],
        "st/pipeline/2.json: review_passed: expected \"true\" or \"false\", found \"yes\""
    );
    assert_eq!(
        lines[2],
        "st/pipeline/2.json: heartbeat_pid: expected a process id (integer), found \"x\""
    );
    assert!(
        lines[3].starts_with("st/pipeline/3.json: invalid JSON"),
        "{}",
        lines[3]
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
    // A level that is not a number is skipped.
    assert_eq!(pr(&["7", "x"], Some("y")).success().stdout_str(), "42\n");
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
