//! Regression tests: `jkz ui`, the observer. Each test is named after what
//! broke.

use crate::ui::Server;
use crate::util::Dir;

/// A key in the shape of an AWS access key and its secret, as an agent's
/// answer may quote one from a file it read.
const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

/// The observer asked for the token on a change only: another user on the
/// machine (`su other -c 'curl http://127.0.0.1:PORT/api/deliberations/ID'`)
/// read a deliberation record holding an AWS key, and `/api/issues/N`,
/// `/api/now` and `/metrics` the same, from a state directory that is 0700.
///
/// Run here as the same user, without the token: the server cannot tell
/// users apart on loopback (it sees a TCP connection, not a uid), so a
/// request without the token is exactly what another local user can send,
/// and this test needs no second account.
#[test]
fn another_local_user_reads_a_deliberation_holding_an_aws_key_through_get() {
    let dir = Dir::new();
    let response = format!("Found credentials in .env:\naws_access_key_id = {AWS_KEY}\naws_secret_access_key = {AWS_SECRET}\n");
    let id = "20990101T000000.000Z-7-builder-1";
    dir.write(
        format!("state/deliberations/{id}.json"),
        serde_json::json!({"role": "builder", "timestamp": "2099-01-01T00:00:00.000Z",
            "status": "ok", "issue": 7, "pr": null, "phase": "building", "iteration": 1,
            "model": null, "endpoint": null, "command": null, "exit_code": 0,
            "duration_ms": 1, "tokens": null, "response_bytes": response.len(),
            "response_sha256": "0".repeat(64), "response": response})
        .to_string(),
    );
    dir.cmd("jkz")
        .args([
            "--state-dir",
            "state",
            "state",
            "set",
            "7",
            "failure_context",
        ])
        .arg(format!("the build read {AWS_KEY}"))
        .run()
        .success();
    let server = Server::start(&dir.join("state"));
    for path in [
        format!("/api/deliberations/{id}"),
        "/api/issues/7".into(),
        "/api/now".into(),
        "/api/pipelines".into(),
        "/metrics".into(),
        "/".into(),
    ] {
        let (code, body) = server.request("GET", &path, &[], "");
        assert_eq!(code, 401, "{path}: {body}");
        assert!(
            !body.contains(AWS_KEY) && !body.contains("AKIA") && !body.contains("building"),
            "{path}: {body}"
        );
    }
    // Its user, signed in by the printed URL, still reads the record.
    let (code, body) = server.get(&format!("/api/deliberations/{id}"));
    assert_eq!(code, 200);
    assert!(body.contains(AWS_KEY), "{body}");
}
