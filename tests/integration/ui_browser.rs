//! `jkz ui` in a real browser: headless Chromium (the distribution's
//! package, `/usr/bin/chromium`), driven over the DevTools protocol on a
//! WebSocket. Opens the printed URL (which signs the browser in with a
//! cookie: every request after it carries no token), loads the page against a fixture state directory, checks the
//! pipelines table, pins an issue through the page, changes a pipeline file
//! on disk and sees the change without a reload, shows an issue's review
//! findings by iteration (a new import shows without a reload too), and
//! shows the tool-output savings (per family, a negative saving as what jkz
//! added, updated live), and saves a screenshot (to `$JKZ_UI_SCREENSHOT`
//! when set); pins and rejects a learned pattern; and makes the screenshot
//! in docs/ui.md from a state directory with something in every panel
//! (`JKZ_UPDATE_SCREENSHOT=1` writes it to `docs/jkz-ui.png`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{stream::MaybeTlsStream, Message, WebSocket};

use crate::ui::{pipeline, Server};
use crate::util::Dir;

const CHROMIUM: &str = "/usr/bin/chromium";

struct Browser {
    child: Child,
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    session: Option<String>,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Browser {
    fn start() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--window-size=1280,800",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let ws_url = loop {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "chromium exited before listening"
            );
            if let Some(at) = line.find("ws://") {
                break line[at..].trim().to_string();
            }
        };
        // Keep draining stderr so Chromium never blocks on it.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while err.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        let (ws, _) = tungstenite::connect(ws_url.as_str()).expect("DevTools connects");
        Browser {
            child,
            ws,
            next_id: 0,
            session: None,
            _profile: profile,
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws.send(Message::text(msg.to_string())).unwrap();
        loop {
            let Message::Text(text) = self.ws.read().unwrap() else {
                continue;
            };
            let v: Value = serde_json::from_str(&text).unwrap();
            if v["id"] == id {
                assert!(v["error"].is_null(), "{method}: {v}");
                return v["result"].clone();
            }
        }
    }

    fn open(&mut self, url: &str) {
        let target = self.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = self.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        self.session = Some(attached["sessionId"].as_str().unwrap().to_string());
        self.call("Page.navigate", json!({"url": url}));
    }

    fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        r["result"]["value"].clone()
    }

    /// Evaluates `expression` until it is true, for at most `within`.
    fn wait_for(&mut self, expression: &str, within: Duration) -> Duration {
        let start = Instant::now();
        loop {
            if self.eval(expression) == json!(true) {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < within,
                "not true within {within:?}: {expression}\npage: {}",
                self.eval("document.body ? document.body.innerText.slice(0, 2000) : ''")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether Chromium is here; where it is not, says so (and fails in CI).
fn chromium_present() -> bool {
    if !std::path::Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)"
        );
        eprintln!("skipped: {CHROMIUM} is not installed (apt-get install chromium)");
        return false;
    }
    true
}

#[test]
fn ui_in_chromium_pins_and_rejects_a_learned_pattern() {
    if !chromium_present() {
        return;
    }
    let dir = Dir::new();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let response = "## Accumulated Patterns\n\n- Check every exit code\n- Keep hooks fast\n";
    dir.write(
        "state/deliberations/r1.json",
        json!({"role": "judge", "timestamp": now, "status": "ok", "issue": 5, "pr": null,
               "phase": null, "iteration": null, "model": null, "endpoint": null,
               "command": null, "exit_code": 0, "duration_ms": 1, "tokens": null,
               "response_bytes": response.len(), "response_sha256": "0".repeat(64),
               "response": response})
        .to_string(),
    );
    crate::util::Cmd::new("jkz", dir.path())
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(["patterns", "mine"])
        .run()
        .success();
    let server = Server::start(&dir.join("state"));
    let mut b = Browser::start();
    b.open(&server.url);
    let row = |id: &str| format!("document.querySelector('tr[data-pattern=\"{id}\"]')");
    b.wait_for(
        &format!(
            "!!{r} && {r}.querySelector('td.text').textContent === 'Check every exit code'",
            r = row("P1")
        ),
        Duration::from_secs(10),
    );
    b.eval(&format!(
        "{}.querySelector('.pat-pin').click(); true",
        row("P2")
    ));
    b.wait_for(
        &format!(
            "{}.querySelector('.pat-pin').getAttribute('aria-pressed') === 'true'",
            row("P2")
        ),
        Duration::from_secs(5),
    );
    assert_eq!(
        b.eval("document.querySelector('#patterns tbody tr').dataset.pattern"),
        json!("P2"),
        "pinned first"
    );
    b.eval(&format!(
        "{}.querySelector('.pat-reject').click(); true",
        row("P1")
    ));
    b.wait_for(
        &format!(
            "{}.querySelector('td.state').textContent === 'rejected'",
            row("P1")
        ),
        Duration::from_secs(5),
    );
    let log = String::from_utf8(dir.read("state/patterns-feedback.jsonl")).unwrap();
    assert!(
        log.contains("\"op\":\"pin\"") && log.contains("\"op\":\"reject\""),
        "{log}"
    );
}

#[test]
fn ui_in_chromium_shows_pins_and_updates_live() {
    if !std::path::Path::new(CHROMIUM).exists() {
        crate::util::cannot_run(&format!(
            "{CHROMIUM} is not installed (apt-get install chromium; .ci/run installs it)"
        ));
        return;
    }
    let dir = Dir::new();
    dir.write(
        "state/pipeline/101.json",
        pipeline(101, "building", "true", "true"),
    );
    dir.write(
        "state/pipeline/102.json",
        pipeline(102, "review", "false", "true"),
    );
    dir.write("state/pipeline/103.json", pipeline(103, "qa", "", ""));
    dir.write(
        "state/tool-output.jsonl",
        // Two lines from before families, one family where jkz saved and
        // one where it showed more than the client would have.
        "{\"tool\":\"Bash\",\"full\":90000,\"client\":30000,\"jkz\":8000,\"blocks\":1,\"ms\":3}\n{\"tool\":\"Grep\",\"full\":20000,\"client\":20000,\"jkz\":6000,\"blocks\":0,\"ms\":1}\n\
         {\"tool\":\"Bash\",\"call\":\"cargo test\",\"full\":400000,\"client\":10000,\"jkz\":2500,\"blocks\":0,\"ms\":2,\"via\":\"wrap\",\"family\":\"test\",\"exit\":101,\"signals\":9,\"signals_shown\":9}\n\
         {\"tool\":\"Bash\",\"call\":\"npm run build\",\"full\":90000,\"client\":2000,\"jkz\":9500,\"blocks\":2,\"ms\":2,\"via\":\"post-tool-use\",\"family\":\"build\"}\n",
    );
    let import = |iteration: u32| {
        let fixture = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
            "tests/integration/fixtures/findings/coderabbit-{iteration}.json"
        ));
        crate::util::Cmd::new("jkz", dir.path())
            .arg("--state-dir")
            .arg(dir.join("state"))
            .args([
                "findings",
                "import",
                "--issue",
                "102",
                "--source",
                "coderabbit",
            ])
            .arg("--iteration")
            .arg(iteration.to_string())
            .arg(fixture)
            .run()
            .success();
    };
    import(1);
    import(2);
    let server = Server::start(&dir.join("state"));
    let mut b = Browser::start();
    b.open(&server.url);

    // The table shows the fixture's issues with their verdicts.
    let row = |n: u32| format!("document.querySelector('tr[data-issue=\"{n}\"]')");
    let cell_text = |n: u32, sel: &str| {
        format!(
            "({r} && {r}.querySelector('{sel}').textContent)",
            r = row(n)
        )
    };
    b.wait_for(
        &format!("{} === 'PASS'", cell_text(101, "td.verdict")),
        Duration::from_secs(10),
    );
    // Signed in by the printed URL: the address bar is the clean URL, and
    // no script on the page can read the token (the cookie is HttpOnly).
    assert_eq!(
        b.eval("location.href"),
        json!(format!("http://127.0.0.1:{}/", server.port))
    );
    assert_eq!(b.eval("document.cookie"), json!(""));
    assert_eq!(b.eval(&cell_text(102, "td.verdict")), json!("FAIL"));
    assert_eq!(b.eval(&cell_text(103, "td.verdict")), json!(""));

    // Pinning through the page writes the watch list; the row shows it.
    b.eval("window.__no_reload = 1; true");
    b.eval(&format!("{}.querySelector('.pin').click(); true", row(103)));
    b.wait_for(
        &format!(
            "{}.querySelector('.pin').getAttribute('aria-pressed') === 'true'",
            row(103)
        ),
        Duration::from_secs(5),
    );
    let list: Value = serde_json::from_slice(&dir.read("state/watch-list.json")).unwrap();
    assert_eq!(list["pinned"], json!(["103"]));
    assert_eq!(
        b.eval("document.querySelector('#pipelines tbody tr').dataset.issue"),
        json!("103"),
        "pinned first"
    );

    // A change on disk shows on the open page, without a reload.
    b.eval(&format!("{}.click(); true", row(102)));
    b.wait_for(
        "document.getElementById('issue').textContent.includes('#102')",
        Duration::from_secs(5),
    );
    // Its review findings, by iteration, the newest open.
    let findings = "(document.querySelector('#issue .findings') || {textContent: ''}).textContent";
    b.wait_for(
        &format!("{findings}.includes('Findings (3 standing)')"),
        Duration::from_secs(5),
    );
    let text = b.eval(findings).as_str().unwrap().to_string();
    for want in [
        "iteration 2 · 1 new · 2 open · 2 resolved",
        "iteration 1 · 4 new",
        "resolved [major] src/pay.rs:88 — Round after converting to cents, not before.",
    ] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
    assert_eq!(
        b.eval("document.querySelector('#issue .findings details').open"),
        json!(true)
    );
    // A new import shows on the open page, without a reload.
    import(3);
    b.wait_for(
        &format!("{findings}.includes('iteration 3 · 1 open · 1 reintroduced · 2 resolved')"),
        Duration::from_secs(5),
    );
    dir.write(
        "state/pipeline/102.json",
        pipeline(102, "merged", "true", "true"),
    );
    let took = b.wait_for(
        &format!("{} === 'merged'", cell_text(102, "td:nth-child(3)")),
        Duration::from_secs(3),
    );
    assert!(
        took < Duration::from_millis(1500),
        "the change took {took:?} to show"
    );
    assert_eq!(b.eval(&cell_text(102, "td.verdict")), json!("PASS"));
    assert_eq!(
        b.eval("window.__no_reload"),
        json!(1),
        "the page was reloaded"
    );
    b.wait_for(
        "document.getElementById('issue').textContent.includes('merged')",
        Duration::from_secs(3),
    );
    b.wait_for(
        "!!document.querySelector('#now svg rect')",
        Duration::from_secs(3),
    );

    // The savings: against what the client alone would have shown, per
    // family, a negative saving said as what jkz added.
    assert_eq!(
        b.eval("document.getElementById('savings-total').textContent"),
        json!("4 calls · what the client alone would have shown 62,000 B → what jkz showed 26,000 B · saved 36,000 B (≈ 9,000 tokens, estimate: bytes/4)")
    );
    let family = |name: &str| {
        format!(
            "[...document.querySelectorAll('#savings-families tr[data-family=\"{name}\"] td')].map((td) => td.textContent)"
        )
    };
    assert_eq!(
        b.eval(&family("test")),
        json!(["test", "1", "10,000", "2,500", "7,500", "9/9"])
    );
    assert_eq!(
        b.eval(&family("build")),
        json!(["build", "1", "2,000", "9,500", "added 7,500", "-"])
    );
    assert_eq!(
        b.eval(&family("-")),
        json!(["- (unknown)", "2", "50,000", "14,000", "36,000", "-"])
    );
    assert_eq!(
        b.eval("document.querySelector('#savings-families tbody tr').dataset.family"),
        json!("-"),
        "the most calls first"
    );
    assert_eq!(
        b.eval("document.documentElement.scrollWidth <= document.documentElement.clientWidth"),
        json!(true),
        "the savings table widens the page"
    );
    // When jkz showed more in all, the total says so: no negative saving.
    std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("state/tool-output.jsonl"))
        .unwrap()
        .write_all(b"{\"tool\":\"Bash\",\"call\":\"make\",\"full\":900000,\"client\":2000,\"jkz\":50000,\"blocks\":0,\"ms\":2,\"family\":\"build\"}\n")
        .unwrap();
    b.wait_for(
        "document.getElementById('savings-total').textContent.endsWith('what jkz showed 76,000 B · jkz added 12,000 B (≈ 3,000 tokens, estimate: bytes/4)')",
        Duration::from_secs(3),
    );
    assert_eq!(
        b.eval(&family("build")),
        json!(["build", "2", "4,000", "59,500", "added 55,500", "-"])
    );

    let shot = b.call("Page.captureScreenshot", json!({"format": "png"}));
    let png = data_encoding::BASE64
        .decode(shot["data"].as_str().unwrap().as_bytes())
        .unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let out = std::env::var_os("JKZ_UI_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.join("ui.png"));
    std::fs::write(out, png).unwrap();
}

/// One event line at `ago` before now, as jkz writes them.
fn event_line(
    n: u32,
    ago: chrono::Duration,
    kind: &str,
    issue: Option<&str>,
    session: Option<&str>,
    payload: Value,
) -> String {
    let at = chrono::Utc::now() - ago;
    let mut e = json!({
        "id": format!("{:013x}-00000001-{n:04x}", at.timestamp_micros()),
        "type": kind,
        "timestamp": at.to_rfc3339(),
        "payload": payload,
    });
    if let Some(i) = issue {
        e["issue"] = json!(i);
    }
    if let Some(s) = session {
        e["session"] = json!(s);
    }
    format!("{e}\n")
}

#[test]
fn ui_in_chromium_draws_the_timeline_and_the_metrics_and_updates_them_live() {
    if !std::path::Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)"
        );
        eprintln!("skipped: {CHROMIUM} is not installed (apt-get install chromium)");
        return;
    }
    let dir = Dir::new();
    dir.write("state/pipeline/201.json", pipeline(201, "building", "", ""));
    let h = chrono::Duration::hours;
    let m = chrono::Duration::minutes;
    let phase = |from: Option<&str>, to: &str| json!({"from": from, "to": to});
    let log = [
        event_line(
            1,
            h(30),
            "phase.changed",
            Some("202"),
            None,
            phase(None, "plan"),
        ),
        event_line(
            2,
            h(26),
            "phase.changed",
            Some("202"),
            None,
            phase(Some("plan"), "done"),
        ),
        event_line(
            3,
            h(20),
            "phase.changed",
            Some("203"),
            None,
            phase(None, "plan"),
        ),
        event_line(
            4,
            h(19),
            "phase.changed",
            Some("203"),
            None,
            phase(Some("plan"), "failed"),
        ),
        event_line(
            5,
            h(3),
            "phase.changed",
            Some("201"),
            None,
            phase(None, "plan"),
        ),
        event_line(
            6,
            h(3),
            "claim.taken",
            Some("201"),
            Some("chat-1"),
            json!({}),
        ),
        event_line(
            7,
            h(2),
            "phase.changed",
            Some("201"),
            None,
            phase(Some("plan"), "building"),
        ),
        event_line(
            8,
            m(90),
            "agent.finished",
            Some("201"),
            None,
            json!({"role": "builder", "status": "ok", "duration_ms": 600_000}),
        ),
        event_line(
            9,
            m(80),
            "session.compacted",
            None,
            Some("chat-1"),
            json!({"trigger": "auto"}),
        ),
    ]
    .concat();
    dir.write(
        format!(
            "state/events/{}-0000.jsonl",
            chrono::Utc::now().format("%Y%m%d")
        ),
        log,
    );
    let server = Server::start(&dir.join("state"));
    let mut b = Browser::start();
    b.open(&server.url);

    // The metrics: completion rate and the phase-duration chart.
    b.wait_for(
        "(document.getElementById('completion') || {}).textContent?.includes('50.0%')",
        Duration::from_secs(10),
    );
    assert_eq!(
        b.eval(
            "[...document.querySelectorAll('#phase-chart rect.p50')].map((r) => r.dataset.phase)"
        ),
        json!(["plan"]),
        "only stays in plan ended within the window"
    );
    for kind in ["completed", "failed"] {
        let drawn = format!("[...document.querySelectorAll('#completion-chart rect.{kind}')].filter((r) => +r.getAttribute('height') > 0).length");
        assert_eq!(b.eval(&drawn), json!(1), "one issue {kind}");
    }

    // The timeline of issue 201: two phases, a run, a compaction, a claim.
    b.wait_for(
        "!!document.querySelector('tr[data-issue=\"201\"]')",
        Duration::from_secs(10),
    );
    b.eval(
        "window.__no_reload = 1; document.querySelector('tr[data-issue=\"201\"]').click(); true",
    );
    b.wait_for(
        "document.querySelectorAll('#timeline rect.phase').length === 2",
        Duration::from_secs(10),
    );
    let phases = b
        .eval("[...document.querySelectorAll('#timeline rect.phase')].map((r) => r.dataset.phase)");
    assert_eq!(phases, json!(["plan", "building"]));
    assert_eq!(
        b.eval("document.querySelectorAll('#timeline rect.run[data-role=builder]').length"),
        json!(1)
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#timeline path.compaction').length"),
        json!(1)
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#timeline rect.claim').length"),
        json!(1)
    );
    // The band is drawn in time order, left to right, the current phase up to now.
    let xs = b.eval("[...document.querySelectorAll('#timeline rect.phase')].map((r) => [+r.getAttribute('x'), +r.getAttribute('width')])");
    let (x0, w0, x1) = (
        xs[0][0].as_f64().unwrap(),
        xs[0][1].as_f64().unwrap(),
        xs[1][0].as_f64().unwrap(),
    );
    assert!((x0 + w0 - x1).abs() < 0.5 && x0 < x1, "{xs}");

    // A pipeline script writes the file directly: the observer logs the
    // change and the open timeline shows it, without a reload.
    dir.write("state/pipeline/201.json", pipeline(201, "review", "", ""));
    b.wait_for(
        "[...document.querySelectorAll('#timeline rect.phase')].map((r) => r.dataset.phase).join() === 'plan,building,review'",
        Duration::from_secs(10),
    );
    assert_eq!(
        b.eval("window.__no_reload"),
        json!(1),
        "the page was reloaded"
    );
    let direct = std::process::Command::new(crate::util::bin("jkz"))
        .args(["--state-dir"])
        .arg(dir.join("state"))
        .args([
            "events",
            "--json",
            "--issue",
            "201",
            "--type",
            "phase.changed",
        ])
        .output()
        .unwrap();
    let last = String::from_utf8_lossy(&direct.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(
        last.contains("\"to\":\"review\"") && last.contains("\"direct\":true"),
        "{last}"
    );

    // Prometheus scrapes the same server.
    let (code, body) = server.get("/metrics");
    assert_eq!(code, 200);
    assert!(
        body.contains("# TYPE jkz_completion_rate gauge")
            && body.contains("jkz_completion_rate 0.5"),
        "{body}"
    );

    let shot = b.call(
        "Page.captureScreenshot",
        json!({"format": "png", "captureBeyondViewport": true}),
    );
    let png = data_encoding::BASE64
        .decode(shot["data"].as_str().unwrap().as_bytes())
        .unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let out = std::env::var_os("JKZ_UI_TIMELINE_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.join("timeline.png"));
    std::fs::write(out, png).unwrap();
}

/// The screenshot in docs/ui.md, of a state directory with something in
/// every panel: pipelines, the open issue's timeline, deliberations and
/// review findings, Now (chats and claims, the savings), the metrics and the
/// learned patterns, each waited for before the shot. With
/// `JKZ_UPDATE_SCREENSHOT=1` the shot replaces `docs/jkz-ui.png`.
#[test]
fn ui_in_chromium_shows_every_panel_for_the_docs_screenshot() {
    if !chromium_present() {
        return;
    }
    let dir = Dir::new();
    let state = dir.join("state");
    let jkz = |args: &[&str]| {
        crate::util::Cmd::new("jkz", dir.path())
            .arg("--state-dir")
            .arg(&state)
            .args(args)
            .run()
            .success()
    };
    let h = chrono::Duration::hours;
    let m = chrono::Duration::minutes;
    let at = |ago: chrono::Duration| {
        (chrono::Utc::now() - ago).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    };
    let issue = |n: u32, phase: &str, agent: &str, review: &str, qa: &str, ago| {
        dir.write(
            format!("state/pipeline/{n}.json"),
            json!({n.to_string(): {"current_phase": phase, "active_agent": agent,
                    "issue_type": "feature", "pr_number": (n + 100).to_string(),
                    "review_passed": review, "qa_passed": qa, "plan_iterations": "2",
                    "last_updated": at(ago)}})
            .to_string(),
        );
    };
    issue(41, "merged", "", "true", "true", h(20));
    issue(42, "review", "judge", "false", "", m(12));
    issue(43, "building", "builder", "", "", m(3));
    issue(44, "planning", "planner", "", "", m(40));

    // The history: issue 42 from plan to review, with its runs, a
    // compaction of the chat holding it and its claim; three issues that
    // ended this week, for the metrics.
    let phase = |from: Option<&str>, to: &str| json!({"from": from, "to": to});
    let run = |role: &str, minutes: u64| json!({"role": role, "status": "ok", "duration_ms": minutes * 60_000});
    let events = [
        (
            h(50),
            "phase.changed",
            Some("39"),
            None,
            phase(None, "plan"),
        ),
        (
            h(47),
            "phase.changed",
            Some("39"),
            None,
            phase(Some("plan"), "building"),
        ),
        (
            h(40),
            "phase.changed",
            Some("39"),
            None,
            phase(Some("building"), "merged"),
        ),
        (
            h(30),
            "phase.changed",
            Some("40"),
            None,
            phase(None, "plan"),
        ),
        (
            h(29),
            "phase.changed",
            Some("40"),
            None,
            phase(Some("plan"), "failed"),
        ),
        (
            h(26),
            "phase.changed",
            Some("41"),
            None,
            phase(None, "plan"),
        ),
        (
            h(24),
            "phase.changed",
            Some("41"),
            None,
            phase(Some("plan"), "building"),
        ),
        (
            h(20),
            "phase.changed",
            Some("41"),
            None,
            phase(Some("building"), "merged"),
        ),
        (
            h(6),
            "claim.taken",
            Some("42"),
            Some("chat-7f3a"),
            json!({}),
        ),
        (h(6), "phase.changed", Some("42"), None, phase(None, "plan")),
        (h(5), "agent.finished", Some("42"), None, run("planner", 50)),
        (
            h(5),
            "phase.changed",
            Some("42"),
            None,
            phase(Some("plan"), "building"),
        ),
        (
            h(3),
            "agent.finished",
            Some("42"),
            None,
            run("builder", 110),
        ),
        (
            m(150),
            "session.compacted",
            None,
            Some("chat-7f3a"),
            json!({"trigger": "auto"}),
        ),
        (
            m(100),
            "phase.changed",
            Some("42"),
            None,
            phase(Some("building"), "review"),
        ),
        (m(70), "agent.finished", Some("42"), None, run("judge", 25)),
    ];
    let log: String = events
        .into_iter()
        .enumerate()
        .map(|(n, (ago, kind, issue, session, payload))| {
            event_line(n as u32 + 1, ago, kind, issue, session, payload)
        })
        .collect();
    dir.write(
        format!(
            "state/events/{}-0000.jsonl",
            chrono::Utc::now().format("%Y%m%d")
        ),
        log,
    );

    // The judge's two answers on issue 42, CodeRabbit's three reviews, and
    // a reviewer's patterns on issue 43: through jkz, as a pipeline writes them.
    let answer = |verdict: &str| {
        let wrapper = dir.write(
            format!("judge-{verdict}.sh"),
            format!(
                "#!/bin/sh\nprintf '## Accumulated Patterns\\n\\n- Round money after converting to cents\\n\\n```verdict-json\\n{{\"verdict\":\"{verdict}\"}}\\n```\\n'\n"
            ),
        );
        std::fs::set_permissions(
            &wrapper,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        wrapper
    };
    for (iteration, verdict) in [("1", "FAIL"), ("2", "FAIL")] {
        let wrapper = answer(verdict);
        jkz(&[
            "run",
            "--role",
            "judge",
            "--issue",
            "42",
            "--phase",
            "review",
            "--iteration",
            iteration,
            "--",
            wrapper.to_str().unwrap(),
        ]);
    }
    for k in 1..=3 {
        let fixture = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
            "tests/integration/fixtures/findings/coderabbit-{k}.json"
        ));
        jkz(&[
            "findings",
            "import",
            "--issue",
            "42",
            "--iteration",
            &k.to_string(),
            "--source",
            "coderabbit",
            fixture.to_str().unwrap(),
        ]);
    }
    crate::util::Cmd::new("jkz-truncate", dir.path())
        .args(["--state-dir", state.to_str().unwrap(), "--record", "--role", "reviewer", "--issue", "43"])
        .stdin("Done.\n\n## Accumulated Patterns\n\n- Run cargo fmt before committing\n- Check every binary's exit code\n- Keep the lockfile in the same commit as Cargo.toml\n")
        .run()
        .success();
    jkz(&["claim", "42", "--session", "chat-7f3a"]);
    jkz(&["claim", "43", "--session", "pipeline-43"]);
    jkz(&["lock", "acquire", "pipeline", "43"]);
    // Codex failed once with a threshold of one: its circuit is open.
    crate::util::Cmd::new("jkz", dir.path())
        .args(["--state-dir", state.to_str().unwrap()])
        .args([
            "run",
            "--service",
            "codex",
            "--failure-threshold",
            "1",
            "--",
            "false",
        ])
        .run()
        .expect_code(1);
    // The chat holding issue 42 was compacted: the snapshot that carried it.
    crate::util::Cmd::new("jkz-pre-compact", dir.path())
        .env("JKZ_STATE_DIR", &state)
        .stdin(r#"{"hook_event_name":"PreCompact","session_id":"chat-7f3a","trigger":"auto"}"#)
        .run()
        .success();
    dir.write(
        "state/tool-output.jsonl",
        "{\"tool\":\"Bash\",\"call\":\"cargo test\",\"full\":400000,\"client\":30000,\"jkz\":2500,\"blocks\":0,\"ms\":2,\"via\":\"wrap\",\"family\":\"test\",\"exit\":101,\"signals\":9,\"signals_shown\":9}\n\
         {\"tool\":\"Bash\",\"call\":\"cargo build\",\"full\":90000,\"client\":30000,\"jkz\":6100,\"blocks\":0,\"ms\":2,\"via\":\"wrap\",\"family\":\"build\",\"signals\":3,\"signals_shown\":3}\n\
         {\"tool\":\"Grep\",\"full\":60000,\"client\":30000,\"jkz\":9000,\"blocks\":0,\"ms\":1,\"family\":\"listing\"}\n\
         {\"tool\":\"Read\",\"full\":120000,\"client\":30000,\"jkz\":12000,\"blocks\":2,\"ms\":1}\n",
    );

    let server = Server::start(&state);
    let mut b = Browser::start();
    b.open(&server.url);
    b.wait_for(
        "!!document.querySelector('tr[data-issue=\"42\"]')",
        Duration::from_secs(10),
    );
    b.eval("document.querySelector('tr[data-issue=\"42\"]').click(); true");
    let text =
        |id: &str| format!("(document.getElementById('{id}') || {{textContent: ''}}).textContent");
    let issue_text = text("issue");
    let now_text = text("now");
    let panels = [
        // The timeline: three phases, the runs, the compaction, the claim.
        "document.querySelectorAll('#timeline rect.phase').length === 3".to_string(),
        "document.querySelectorAll('#timeline rect.run').length >= 3".to_string(),
        "document.querySelectorAll('#timeline path.compaction').length >= 1".to_string(),
        // The judge's answers, the snapshot that carried the issue, the findings.
        format!("{issue_text}.includes('Deliberations (2)')"),
        format!("{issue_text}.includes('Compactions (1)')"),
        format!("{issue_text}.includes('iteration 3 · 1 open · 1 reintroduced')"),
        // Now: both chats, the open circuit, the held lock, the savings chart.
        format!("{now_text}.includes('chat-7f3a') && {now_text}.includes('pipeline-43')"),
        format!("{now_text}.includes('codex')"),
        format!("{now_text}.includes('pipeline') && {now_text}.includes('43')"),
        "!!document.querySelector('#now svg rect')".to_string(),
        // The metrics: two issues merged, one failed; the phase durations.
        format!("{}.includes('66.7%')", text("completion")),
        "document.querySelectorAll('#phase-chart rect.p50').length >= 2".to_string(),
        // The patterns: the judge's one and the reviewer's three.
        "document.querySelectorAll('#patterns tbody tr').length === 4".to_string(),
    ];
    for ready in &panels {
        b.wait_for(ready, Duration::from_secs(10));
    }

    // The whole page in one picture: a viewport as tall as the page.
    let height = b.eval("document.documentElement.scrollHeight");
    b.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1440, "height": height, "deviceScaleFactor": 1, "mobile": false}),
    );
    b.wait_for(
        "document.documentElement.scrollHeight <= window.innerHeight",
        Duration::from_secs(5),
    );
    let shot = b.call("Page.captureScreenshot", json!({"format": "png"}));
    let png = data_encoding::BASE64
        .decode(shot["data"].as_str().unwrap().as_bytes())
        .unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let out = if std::env::var_os("JKZ_UPDATE_SCREENSHOT").is_some_and(|v| v == "1") {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/jkz-ui.png")
    } else {
        dir.join("jkz-ui.png")
    };
    std::fs::write(out, png).unwrap();
}
