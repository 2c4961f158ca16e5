//! `jkz ui`: the JSON API over a fixture state directory, and its refusals
//! (foreign Host/Origin, a change without the token, paths that try to
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
    pub url: String,
}

impl Server {
    pub fn start(state: &std::path::Path) -> Server {
        Server::start_with(state, &[])
    }

    /// Starts `jkz ui` with `envs` set as well.
    pub fn start_with(state: &std::path::Path, envs: &[(&str, &str)]) -> Server {
        let mut child = Command::new(bin("jkz"))
            .args(["ui", "--state-dir"])
            .arg(state)
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
        Server {
            child,
            port,
            token,
            url,
        }
    }

    /// One request over a fresh connection; returns status and body.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> (u16, String) {
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
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let mut hs = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut hs);
        let httparse::Status::Complete(at) = resp.parse(&raw).unwrap() else {
            panic!("incomplete response: {}", String::from_utf8_lossy(&raw));
        };
        (
            resp.code.unwrap(),
            String::from_utf8_lossy(&raw[at..]).into_owned(),
        )
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        self.request("GET", path, &[], "")
    }

    pub fn json(&self, path: &str) -> serde_json::Value {
        let (code, body) = self.get(path);
        assert_eq!(code, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap()
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
    let (code, _) = server.request("GET", "/api/pipelines", &[("Origin", &own_origin)], "");
    assert_eq!(code, 200);
    let pin = r#"{"issue": "5", "pinned": true}"#;
    let ct = ("Content-Type", "application/json");
    for headers in [vec![ct], vec![ct, ("X-Jkz-Token", "0123")]] {
        let (code, body) = server.request("POST", "/api/watch-list", &headers, pin);
        assert_eq!(code, 403, "{body}");
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
