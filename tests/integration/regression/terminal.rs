//! Regression tests: what jkz prints to a terminal. Each test is named
//! after what broke.

use serde_json::Value;

use crate::util::{bin, scrubbed, Dir, Run};

/// An OSC 52 clipboard write (`ESC ] 52 ; c ; base64 BEL`: the terminal
/// puts "echo pwned" on the clipboard) and a clear-screen (`ESC [ 2 J`).
const OSC_52: &str = "x\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}\u{1b}[2J";
/// How a terminal is shown it.
const SHOWN: &str = "x\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2J";

fn jkz(dir: &Dir, args: &[&str]) -> Run {
    dir.cmd("jkz")
        .args(["--state-dir", "state"])
        .args(args)
        .run()
        .success()
}

/// Nothing in `run`'s output can act on a terminal: no ESC, no BEL.
fn inert(run: &Run, what: &str) {
    let out = run.stdout();
    assert!(
        !out.contains(&0x1b) && !out.contains(&0x07),
        "{what} printed a control character:\n{}",
        run.report()
    );
}

/// `jkz state set 77 current_phase $'x\e]52;c;…\a\e[2J'`, then `jkz state
/// list`, `jkz events`, `jkz metrics` and `jkz findings` (a finding with
/// the sequence in its message and its file) wrote the clipboard and
/// cleared the screen: stored text was printed raw. Now every table shows
/// it escaped, `show` and every `--json` carry it exactly (JSON escapes),
/// and `state get` prints it exactly into a pipe but escaped to a terminal.
#[test]
fn a_phase_holding_an_osc_52_clipboard_write_and_a_clear_screen_reached_the_terminal() {
    let dir = Dir::new();
    std::fs::create_dir(dir.join("state")).unwrap();
    jkz(&dir, &["state", "set", "77", "current_phase", OSC_52]);
    // A later phase ends the stay, so the metrics' phase table has it too.
    jkz(&dir, &["state", "set", "77", "current_phase", "review"]);
    jkz(&dir, &["state", "set", "78", "current_phase", OSC_52]);
    let finding = serde_json::json!({"blockers": [
        {"file": format!("src/{OSC_52}.rs"), "line": 3, "description": format!("Fix {OSC_52} now")}
    ]});
    let file = dir.write("review-result.json", finding.to_string());
    dir.cmd("jkz")
        .args([
            "--state-dir",
            "state",
            "findings",
            "import",
            "--issue",
            "77",
        ])
        .args(["--iteration", "1", "--source", "jg"])
        .arg(file)
        .run()
        .success();

    let list = jkz(&dir, &["state", "list"]);
    inert(&list, "jkz state list");
    assert!(list.stdout_str().contains(SHOWN), "{}", list.report());
    let events = jkz(&dir, &["events"]);
    inert(&events, "jkz events");
    assert!(events.stdout_str().contains(SHOWN), "{}", events.report());
    for args in [&["metrics"][..], &["metrics", "--issue", "78"]] {
        let metrics = jkz(&dir, args);
        inert(&metrics, "jkz metrics");
        assert!(
            metrics.stdout_str().contains("x\\x1b]52;c;ZWNob"),
            "{}",
            metrics.report()
        );
    }
    let findings = jkz(&dir, &["findings", "--issue", "77"]);
    inert(&findings, "jkz findings");
    assert!(
        findings.stdout_str().contains(&format!("Fix {SHOWN} now")),
        "{}",
        findings.report()
    );
    let explained = jkz(&dir, &["findings", "--issue", "77", "--explain"]);
    inert(&explained, "jkz findings --explain");
    let show = jkz(&dir, &["state", "show", "78"]);
    inert(&show, "jkz state show");

    // --json carries the value exactly.
    let v: Value = serde_json::from_slice(show.stdout()).unwrap();
    assert_eq!(v["current_phase"], OSC_52);
    let v: Value =
        serde_json::from_slice(jkz(&dir, &["state", "list", "--json"]).stdout()).unwrap();
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .any(|p| p["current_phase"] == OSC_52),
        "{v}"
    );
    let logged = jkz(&dir, &["events", "--json", "--issue", "78"]).stdout_str();
    let to: Vec<Value> = logged
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["payload"]["to"].clone())
        .collect();
    assert!(to.contains(&Value::from(OSC_52)), "{logged}");
    let v: Value =
        serde_json::from_slice(jkz(&dir, &["metrics", "--json", "--issue", "78"]).stdout())
            .unwrap();
    assert_eq!(v["issues"][0]["phase"], OSC_52, "{v}");
    let v: Value =
        serde_json::from_slice(jkz(&dir, &["findings", "--issue", "77", "--json"]).stdout())
            .unwrap();
    assert_eq!(v[0]["message"], format!("Fix {OSC_52} now"));
    assert_eq!(v[0]["file"], format!("src/{OSC_52}.rs"));

    // `get` is a script's way to read a value: exact through a pipe ...
    let got = jkz(&dir, &["state", "get", "78", "current_phase"]);
    assert_eq!(got.stdout(), format!("{OSC_52}\n").as_bytes());
    // ... and escaped on a terminal (`script` runs it on a pseudo-terminal).
    let command = format!(
        "'{}' --state-dir state state get 78 current_phase",
        bin("jkz").display()
    );
    let on_tty = scrubbed("script", dir.path())
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script(1) runs");
    let shown = String::from_utf8_lossy(&on_tty.stdout);
    assert!(
        !on_tty.stdout.contains(&0x1b) && shown.contains(SHOWN),
        "{shown:?}"
    );
}
