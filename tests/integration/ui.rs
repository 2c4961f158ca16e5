//! `jkz ui`: the JSON API over a fixture state directory, and its refusals
//! (foreign Host/Origin, any request without the token, paths that try to
//! leave the state directory, a corrupt watch list).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use crate::util::{bin, Dir};

/// A running `jkz ui`, stopped when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    pub token: String,
    /// The printed URL, token and all.
    pub url: String,
    /// `name=value` of the session cookie the printed URL set.
    pub cookie: String,
}

/// One answer: status, headers (names lower-cased), body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Server {
    pub fn start(state: &std::path::Path) -> Server {
        Server::start_with(state, &[])
    }

    /// Starts `jkz ui` with `envs` set as well.
    pub fn start_with(state: &std::path::Path, envs: &[(&str, &str)]) -> Server {
        Server::start_args(state, &[], envs)
    }

    /// Starts `jkz ui` with more arguments and `envs`, and opens the printed
    /// URL as a browser would: it must answer with the session cookie and
    /// a redirect to the clean URL.
    pub fn start_args(state: &std::path::Path, args: &[&str], envs: &[(&str, &str)]) -> Server {
        let mut child = Command::new(bin("jkz"))
            .args(["ui", "--state-dir"])
            .arg(state)
            .args(args)
            .env_remove("JKZ_STATE_DIR")
            .envs(envs.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("jkz ui starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("jkz ui: ")
            .unwrap_or_else(|| panic!("no URL on stdout: {line:?}"))
            .to_string();
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
        let port = rest.split('/').next().unwrap().parse().unwrap();
        let token = url.split("token=").nth(1).unwrap().to_string();
        let mut server = Server {
            child,
            port,
            token,
            url,
            cookie: String::new(),
        };
        let path = &server.url[format!("http://127.0.0.1:{port}").len()..];
        let signed_in = server.answer("GET", path, &[], "");
        assert_eq!(signed_in.status, 303, "{}", signed_in.body);
        assert_eq!(signed_in.header("location"), Some("/"));
        assert!(signed_in.body.is_empty(), "{}", signed_in.body);
        let set = signed_in.header("set-cookie").expect("a session cookie");
        let mut attrs = set.split(';').map(str::trim);
        server.cookie = attrs.next().unwrap().to_string();
        let attrs: Vec<&str> = attrs.collect();
        for want in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(attrs.contains(&want), "{want} in {set}");
        }
        assert_eq!(
            server.cookie,
            format!("jkz-ui-{port}={}", server.token),
            "{set}"
        );
        server
    }

    /// One request over a fresh connection, with exactly `headers` (and
    /// `Host`, unless given): no credential unless the caller adds one.
    pub fn answer(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut s = self.send(method, path, headers, body);
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let mut hs = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut hs);
        let httparse::Status::Complete(at) = resp.parse(&raw).unwrap() else {
            panic!("incomplete response: {}", String::from_utf8_lossy(&raw));
        };
        Answer {
            status: resp.code.unwrap(),
            headers: resp
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect(),
            body: String::from_utf8_lossy(&raw[at..]).into_owned(),
        }
    }

    /// The status line only, for a response that does not end (the event
    /// stream).
    pub fn status_of(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> u16 {
        let s = self.send(method, path, headers, "");
        let mut head = Vec::new();
        let mut reader = BufReader::new(s);
        while !head.ends_with(b"\r\n\r\n") {
            let n = reader.read_until(b'\n', &mut head).unwrap();
            assert!(n > 0, "closed before the headers ended");
        }
        let mut hs = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut hs);
        resp.parse(&head).unwrap();
        resp.code.unwrap()
    }

    fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> TcpStream {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        let own_host = format!("127.0.0.1:{}", self.port);
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {own_host}\r\n"));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        s.write_all(req.as_bytes()).unwrap();
        s
    }

    /// [`Server::answer`]'s status and body.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
        let a = self.answer(method, path, headers, body);
        (a.status, a.body)
    }

    /// A GET as the signed-in page makes it: with the session cookie.
    pub fn get(&self, path: &str) -> (u16, String) {
        self.request("GET", path, &[("Cookie", &self.cookie)], "")
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        let (code, body) = self.get(path);
        assert_eq!(code, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    }

    /// `Authorization: Bearer TOKEN`, as a script or a scraper sends it.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn pipeline(issue: u32, phase: &str, review: &str, qa: &str) -> String {
    format!(
        r#"{{"{issue}": {{"current_phase": "{phase}", "active_agent": "judge", "issue_type": "feature", "pr_number": "{issue}", "review_passed": "{review}", "qa_passed": "{qa}", "plan_iterations": "2", "last_updated": "2099-01-01T00:00:00Z"}}, "heartbeat_pid": {pid}}}"#,
        pid = std::process::id()
    )
}

#[test]
fn ui_api_serves_ten_thousand_pipelines_with_their_verdicts() {
    let dir = Dir::new();
    for n in 1..=10_000u32 {
        let (review, qa) = if n % 2 == 0 {
            ("true", "true")
        } else {
            ("true", "false")
        };
        dir.write(
            format!("state/pipeline/{n}.json"),
            pipeline(n, "qa", review, qa),
        );
    }
    dir.write("state/pipeline/17.json", "{not json");
    let server = Server::start(&dir.join("state"));
    let v = server.json("/api/pipelines");
    assert_eq!(v["count"], 10_000);
    let rows = v["pipelines"].as_array().unwrap();
    assert_eq!(rows[0]["issue"], "1");
    assert_eq!(rows[0]["view"]["verdict"], "FAIL");
    assert_eq!(rows[1]["view"]["verdict"], "PASS");
    assert_eq!(rows[1]["stale"], false);
    assert!(rows[16]["view"].is_null());
    assert!(!rows[16]["error"].as_str().unwrap().is_empty());
    // Everything the state lacks answers empty, not as an error.
    let now = server.json("/api/now");
    assert_eq!(now["circuits"], serde_json::json!([]));
    assert_eq!(now["registry"]["chats"], serde_json::json!([]));
    let issue = server.json("/api/issues/2");
    assert_eq!(issue["view"]["current_phase"], "qa");
    assert_eq!(issue["deliberations"], serde_json::json!([]));
}

#[test]
fn ui_refuses_foreign_host_and_origin_and_changes_without_the_token() {
    let dir = Dir::new();
    dir.write(
        "state/pipeline/5.json",
        pipeline(5, "building", "true", "true"),
    );
    let server = Server::start(&dir.join("state"));
    let evil_host = format!("evil.example:{}", server.port);
    for headers in [
        vec![("Host", evil_host.as_str())],
        vec![("Host", "127.0.0.1")],
        vec![("Origin", "http://evil.example")],
        vec![("Origin", "null")],
    ] {
        let (code, body) = server.request("GET", "/api/pipelines", &headers, "");
        assert_eq!(code, 403, "{headers:?}: {body}");
        assert!(!body.contains("building"), "{body}");
    }
    let own_origin = format!("http://localhost:{}", server.port);
    let cookie = ("Cookie", server.cookie.as_str());
    let (code, _) = server.request(
        "GET",
        "/api/pipelines",
        &[("Origin", &own_origin), cookie],
        "",
    );
    assert_eq!(code, 200);
    let pin = r#"{"issue": "5", "pinned": true}"#;
    let ct = ("Content-Type", "application/json");
    // Without the token, with a wrong one, or with the page's cookie but
    // without the Origin every browser sends with a change: not signed in.
    for headers in [
        vec![ct],
        vec![ct, ("X-Jkz-Token", "0123")],
        vec![ct, ("Authorization", "Bearer 0123")],
        vec![ct, cookie],
    ] {
        let (code, body) = server.request("POST", "/api/watch-list", &headers, pin);
        assert_eq!(code, 401, "{headers:?}: {body}");
    }
    assert!(!dir.join("state/watch-list.json").exists());
    let token = server.token.clone();
    let with = [ct, ("X-Jkz-Token", token.as_str())];
    let evil = [
        ct,
        ("X-Jkz-Token", token.as_str()),
        ("Origin", "http://evil.example"),
    ];
    assert_eq!(server.request("POST", "/api/watch-list", &evil, pin).0, 403);
    let (code, body) = server.request("POST", "/api/watch-list", &with, pin);
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        server.json("/api/pipelines")["pipelines"][0]["pinned"],
        true
    );
    // The page's own change: the cookie and its own Origin.
    let unpin = r#"{"issue": "5", "pinned": false}"#;
    let page = [ct, cookie, ("Origin", own_origin.as_str())];
    let (code, body) = server.request("POST", "/api/watch-list", &page, unpin);
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        server.json("/api/pipelines")["pipelines"][0]["pinned"],
        false
    );
}

#[test]
fn ui_request_paths_never_leave_the_state_directory() {
    let dir = Dir::new();
    dir.write("secret.json", r#"{"response": "SECRET"}"#);
    dir.write("state/pipeline/1.json", pipeline(1, "qa", "true", "true"));
    dir.write("state/deliberations/x.json", "{}");
    let server = Server::start(&dir.join("state"));
    for path in [
        "/api/deliberations/..%2F..%2Fsecret",
        "/api/deliberations/..",
        "/api/deliberations/%2e%2e%2fsecret",
        "/api/issues/..%2F1",
        "/api/issues/1%2F..%2F..%2Fsecret",
        "/../secret.json",
        "/api/../../secret.json",
    ] {
        let (code, body) = server.get(path);
        assert!((400..=404).contains(&code), "{path}: {code} {body}");
        assert!(!body.contains("SECRET"), "{path}: {body}");
    }
}

#[test]
fn ui_reports_a_corrupt_watch_list_and_replaces_it_only_on_a_change() {
    let dir = Dir::new();
    dir.write("state/pipeline/3.json", pipeline(3, "qa", "true", "true"));
    dir.write("state/watch-list.json", "{\"pinned\": [\"3\"");
    let server = Server::start(&dir.join("state"));
    let v = server.json("/api/pipelines");
    assert!(
        v["watch_list"]["error"]
            .as_str()
            .unwrap()
            .contains("watch-list.json"),
        "{v}"
    );
    assert_eq!(v["pipelines"][0]["pinned"], false);
    assert_eq!(
        dir.read("state/watch-list.json"),
        b"{\"pinned\": [\"3\"",
        "left as it was"
    );
    let token = server.token.clone();
    let with = [("X-Jkz-Token", token.as_str())];
    let (code, body) = server.request(
        "POST",
        "/api/watch-list",
        &with,
        r#"{"issue": "3", "pinned": true}"#,
    );
    assert_eq!(code, 200, "{body}");
    let v = server.json("/api/pipelines");
    assert!(v["watch_list"]["error"].is_null(), "{v}");
    assert_eq!(v["pipelines"][0]["pinned"], true);
    // The pipeline file is never written.
    assert_eq!(
        dir.read("state/pipeline/3.json"),
        pipeline(3, "qa", "true", "true").as_bytes()
    );
}

#[test]
fn ui_now_shows_live_chats_and_claims_from_the_registry_without_writing_it() {
    let dir = Dir::new();
    dir.write("state/pipeline/42.json", pipeline(42, "building", "", ""));
    let server = Server::start(&dir.join("state"));
    let empty = server.json("/api/now");
    assert_eq!(empty["registry"]["present"], false);
    assert_eq!(empty["registry"]["chats"], serde_json::json!([]));
    dir.cmd("jkz")
        .args([
            "--state-dir",
            "state",
            "claim",
            "42",
            "--session",
            "sess-ui",
        ])
        .run()
        .success();
    let db = std::fs::read(dir.join("state/chat.db")).unwrap();
    let files = dir.files();
    let now = server.json("/api/now");
    let reg = &now["registry"];
    assert_eq!(reg["present"], true, "{now}");
    assert_eq!(reg["chats"][0]["session_id"], "sess-ui", "{now}");
    assert_eq!(reg["chats"][0]["state"], "live");
    assert_eq!(reg["claims"][0]["issue"], "42");
    assert_eq!(std::fs::read(dir.join("state/chat.db")).unwrap(), db);
    // A reader of a WAL database may create SQLite's own -wal and -shm
    // companions (every chat's hook does too); nothing else appears.
    let after: Vec<_> = dir
        .files()
        .into_iter()
        .filter(|f| {
            !f.to_string_lossy().ends_with("-wal") && !f.to_string_lossy().ends_with("-shm")
        })
        .collect();
    assert_eq!(after, files, "the registry read wrote nothing of its own");
}

/// A state directory whose every part holds `CANARY`: a pipeline, a
/// deliberation record (`rec-1`), the event log and the metrics derived from
/// it, the registry, a lock, a learned pattern (`P1`), the watch list.
fn canary_state(dir: &Dir) {
    let jkz = |args: &[&str]| {
        dir.cmd("jkz")
            .args(["--state-dir", "state"])
            .args(args)
            .run()
            .success();
    };
    jkz(&["state", "set", "42", "current_phase", "plan-CANARY"]);
    jkz(&["state", "set", "42", "current_phase", "done"]);
    jkz(&["state", "set", "42", "failure_context", "CANARY"]);
    let response = "## Accumulated Patterns\n\n- CANARY rule\n";
    dir.write(
        "state/deliberations/rec-1.json",
        serde_json::json!({"role": "judge", "timestamp": "2099-01-01T00:00:00.000Z",
            "status": "ok", "issue": 42, "pr": null, "phase": "CANARY", "iteration": null,
            "model": null, "endpoint": null, "command": null, "exit_code": 0,
            "duration_ms": 1, "tokens": null, "response_bytes": response.len(),
            "response_sha256": "0".repeat(64), "response": response})
        .to_string(),
    );
    jkz(&["patterns", "mine"]);
    jkz(&["claim", "42", "--session", "CANARY-chat"]);
    jkz(&["lock", "acquire", "deploy", "CANARY", "--owner", "CANARY"]);
    dir.write("state/watch-list.json", r#"{"pinned": ["42"]}"#);
}

/// A path of `route` with its parameters filled in with what the canary
/// state holds, so that a request with the token would find data.
fn concrete(route: &str) -> String {
    let filled = route
        .replace("/api/deliberations/{id}", "/api/deliberations/rec-1")
        .replace("/api/patterns/{id}", "/api/patterns/P1")
        .replace("{issue}", "42");
    assert!(
        !filled.contains('{'),
        "a new route parameter in {route}: give it a value that finds data here"
    );
    filled
}

/// Every route the router has (and one it has not) answers 401 and nothing
/// of the state to a request that does not carry the token: none at all, a
/// wrong one, the right one under another server's cookie name, the right
/// one in the query of anything but the printed URL; the printed URL with a
/// wrong token too. With the cookie or the bearer token each one answers.
#[test]
fn ui_answers_nothing_without_the_token_on_any_route() {
    let dir = Dir::new();
    canary_state(&dir);
    let server = Server::start(&dir.join("state"));
    let routes = jkz::ui::server::routes();
    for want in [("GET", "/"), ("GET", "/api/events"), ("GET", "/metrics")] {
        assert!(routes.contains(&want), "{want:?} in {routes:?}");
    }
    let wrong = "0".repeat(server.token.len());
    let wrong_cookie = format!("jkz-ui-{}={wrong}", server.port);
    let other_server = format!("jkz-ui-{}={}", server.port + 1, server.token);
    let wrong_bearer = format!("Bearer {wrong}");
    let basic = format!("Basic {}", server.token);
    let strangers: [Vec<(&str, &str)>; 6] = [
        vec![],
        vec![("Cookie", &wrong_cookie)],
        vec![("Cookie", &other_server)],
        vec![("Authorization", &wrong_bearer)],
        vec![("Authorization", &basic)],
        vec![("X-Jkz-Token", &wrong)],
    ];
    let mut tried = 0;
    let mut paths: Vec<(&str, String)> = routes.iter().map(|(m, r)| (*m, concrete(r))).collect();
    paths.push(("GET", "/no-such-page".into()));
    for (method, path) in &paths {
        let with_query = format!("{path}?token={}", server.token);
        let mut asks: Vec<(&str, Vec<(&str, &str)>)> = strangers
            .iter()
            .map(|h| (path.as_str(), h.clone()))
            .collect();
        if path != "/" {
            asks.push((with_query.as_str(), vec![]));
        }
        for (p, headers) in asks {
            let a = server.answer(method, p, &headers, r#"{"issue": "42", "pinned": false}"#);
            assert_eq!(a.status, 401, "{method} {p} {headers:?}: {}", a.body);
            assert!(
                !a.body.contains("CANARY") && !a.body.contains("42"),
                "{method} {p}: {}",
                a.body
            );
            let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
            assert_eq!(v.as_object().unwrap().len(), 1, "only the error: {v}");
            assert!(a.header("www-authenticate").is_some(), "{method} {p}");
            assert!(a.header("set-cookie").is_none(), "{method} {p}");
            tried += 1;
        }
    }
    assert!(tried > 6 * routes.len(), "{tried}");
    let a = server.answer("GET", &format!("/?token={wrong}"), &[], "");
    assert_eq!(a.status, 401, "{}", a.body);
    assert!(a.header("set-cookie").is_none());
    assert_eq!(
        std::fs::read_to_string(dir.join("state/watch-list.json")).unwrap(),
        r#"{"pinned": ["42"]}"#,
        "no change went through"
    );

    // With the token each route answers: the cookie (a change with the
    // page's Origin) or the bearer token.
    let origin = format!("http://127.0.0.1:{}", server.port);
    let bearer = server.bearer();
    for signed_in in [
        vec![
            ("Cookie", server.cookie.as_str()),
            ("Origin", origin.as_str()),
        ],
        vec![("Authorization", bearer.as_str())],
    ] {
        for (method, path) in &paths {
            let status = if *method == "GET" {
                server.status_of(method, path, &signed_in)
            } else {
                server
                    .answer(method, path, &signed_in, r#"{"action": "pin"}"#)
                    .status
            };
            let want = if path == "/no-such-page" {
                404
            } else if path == "/api/watch-list" && *method == "POST" {
                400 // a pattern's body, not a pin's: read, and refused
            } else {
                200
            };
            assert_eq!(status, want, "{method} {path} {signed_in:?}");
        }
    }
    let (code, body) = server.get("/api/deliberations/rec-1");
    assert_eq!(code, 200);
    assert!(body.contains("CANARY rule"), "{body}");
}

#[test]
fn ui_metrics_takes_the_bearer_token_and_is_open_only_with_metrics_public() {
    let dir = Dir::new();
    canary_state(&dir);
    let server = Server::start(&dir.join("state"));
    let bearer = server.bearer();
    let a = server.answer("GET", "/metrics", &[("Authorization", &bearer)], "");
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let scrape =
        prometheus_parse::Scrape::parse(a.body.lines().map(|l| Ok(l.to_string()))).unwrap();
    let completed = scrape
        .samples
        .iter()
        .find(|s| s.metric == "jkz_issues" && s.labels.get("outcome") == Some("completed"))
        .unwrap_or_else(|| panic!("no jkz_issues{{outcome=completed}} in\n{}", a.body));
    assert_eq!(completed.value, prometheus_parse::Value::Gauge(1.0));
    let (code, body) = server.request("GET", "/metrics", &[], "");
    assert_eq!(code, 401, "{body}");
    assert!(!body.contains("jkz_"), "{body}");
    drop(server);

    let public = Server::start_args(&dir.join("state"), &["--metrics-public"], &[]);
    let (code, body) = public.request("GET", "/metrics", &[], "");
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("jkz_issues{outcome=\"completed\"} 1"),
        "{body}"
    );
    // Only /metrics: everything else still needs the token.
    for path in ["/", "/api/now", "/api/issues/42", "/api/metrics"] {
        let (code, body) = public.request("GET", path, &[], "");
        assert_eq!(code, 401, "{path}: {body}");
    }
    let evil = format!("evil.example:{}", public.port);
    let (code, _) = public.request("GET", "/metrics", &[("Host", &evil)], "");
    assert_eq!(code, 403, "the Host check stands");
}
