//! The two files `jkz ui` owns: `state/watch-list.json` and
//! `state/live-session.json`.
//!
//! Both are validated on every read. A bad one (not JSON, wrong shape, an
//! invalid issue number, a link, too large) is reported — the page shows the
//! error — and left as it is: it is replaced only by the next explicit
//! change (pinning or unpinning an issue; starting a server), never silently.
//! Writes are atomic ([`crate::atomic`]); unknown fields of a valid watch
//! list are kept.

use std::io;
use std::path::Path;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::pipeline::IssueNumber;
use crate::state_dir::layout::{LIVE_SESSION, WATCH_LIST};
use crate::state_dir::{read_whole_state_file, StateDir};

/// The largest own file read: far more than any watch list needs.
pub const MAX_OWN_FILE: u64 = 1024 * 1024;

/// The watch list as read: the pinned issues, in pin order, and what was
/// wrong with the file, if anything.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WatchList {
    pub pinned: Vec<String>,
    /// Why the file was not used (it then counts as empty).
    pub error: Option<String>,
    /// The whole object, unknown fields included, when it was valid.
    #[serde(skip)]
    pub object: Map<String, Value>,
}

/// Reads and validates `state/watch-list.json`; a missing file is an empty,
/// valid list.
pub fn read_watch_list(state: &StateDir) -> WatchList {
    let path = state.join(WATCH_LIST);
    match read_object(&path) {
        Ok(None) => WatchList::default(),
        Ok(Some(object)) => match pinned_of(&object) {
            Ok(pinned) => WatchList {
                pinned,
                error: None,
                object,
            },
            Err(e) => bad(e),
        },
        Err(e) => bad(e),
    }
}

fn bad(error: String) -> WatchList {
    WatchList {
        error: Some(format!(
            "{WATCH_LIST} is not a valid watch list ({error}); it is replaced on the next pin or unpin"
        )),
        ..WatchList::default()
    }
}

fn pinned_of(object: &Map<String, Value>) -> Result<Vec<String>, String> {
    let Some(pinned) = object.get("pinned") else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = pinned else {
        return Err("\"pinned\" is not an array".into());
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let raw = match item {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => return Err(format!("\"pinned\" holds {other}, not an issue number")),
        };
        let issue = IssueNumber::parse(&raw).map_err(|e| format!("\"pinned\": {e}"))?;
        if !out.iter().any(|p| p == issue.as_str()) {
            out.push(issue.as_str().to_string());
        }
    }
    Ok(out)
}

/// Pins or unpins `issue`, and returns the list as written. A bad file is
/// replaced by a list holding only this change.
pub fn set_pinned(state: &StateDir, issue: &IssueNumber, pinned: bool) -> io::Result<WatchList> {
    let current = read_watch_list(state);
    let mut list = current.pinned;
    list.retain(|p| p != issue.as_str());
    if pinned {
        list.push(issue.as_str().to_string());
    }
    let mut object = current.object;
    object.insert("pinned".into(), json!(list));
    let mut bytes = serde_json::to_vec_pretty(&Value::Object(object.clone())).expect("serializes");
    bytes.push(b'\n');
    write_own(state, WATCH_LIST, &bytes)?;
    Ok(WatchList {
        pinned: list,
        error: None,
        object,
    })
}

/// The running server, as `state/live-session.json` records it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LiveSession {
    pub pid: u64,
    pub port: u16,
    pub url: String,
    pub started_at: String,
}

/// Reads and validates `state/live-session.json`: `Ok(None)` when absent,
/// `Err` with what is wrong when it is bad.
pub fn read_live_session(state: &StateDir) -> Result<Option<LiveSession>, String> {
    let Some(object) = read_object(&state.join(LIVE_SESSION)).map_err(|e| {
        format!("{LIVE_SESSION} is not valid ({e}); it is replaced when a server starts")
    })?
    else {
        return Ok(None);
    };
    let field = |name: &str| object.get(name);
    let session = (|| {
        Some(LiveSession {
            pid: field("pid")?.as_u64()?,
            port: u16::try_from(field("port")?.as_u64()?).ok()?,
            url: field("url")?.as_str()?.to_string(),
            started_at: field("started_at")?.as_str()?.to_string(),
        })
    })();
    session.map(Some).ok_or_else(|| {
        format!(
            "{LIVE_SESSION} lacks a valid pid, port, url or started_at; it is replaced when a server starts"
        )
    })
}

/// Records this server in `state/live-session.json` (the token is not
/// written: the URL printed on start is the only place it appears).
pub fn write_live_session(state: &StateDir, session: &LiveSession) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(session).expect("serializes");
    bytes.push(b'\n');
    write_own(state, LIVE_SESSION, &bytes)
}

/// Removes `state/live-session.json` when it names the server `pid` (a
/// server started since owns it then): a stopped server is not named.
pub fn clear_live_session(state: &StateDir, pid: u64) -> io::Result<()> {
    match read_live_session(state) {
        Ok(Some(session)) if session.pid == pid => {
            match std::fs::remove_file(state.join(LIVE_SESSION)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

fn write_own(state: &StateDir, name: &str, bytes: &[u8]) -> io::Result<()> {
    let Some(root) = state.ensure()? else {
        return Err(io::Error::new(io::ErrorKind::NotFound, state.missing()));
    };
    crate::atomic::write_atomic(&root.join(name), bytes)
}

/// The file's JSON object; `Ok(None)` when there is no file.
fn read_object(path: &Path) -> Result<Option<Map<String, Value>>, String> {
    let bytes = match read_whole_state_file(path, MAX_OWN_FILE) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(object)) => Ok(Some(object)),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_watch_list_is_reported_kept_and_replaced_by_the_next_change() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let path = tmp.path().join(WATCH_LIST);
        for bad in [
            &b"{not json"[..],
            b"[1]",
            b"{\"pinned\": \"7\"}",
            b"{\"pinned\": [\"../x\"]}",
        ] {
            std::fs::write(&path, bad).unwrap();
            let list = read_watch_list(&state);
            assert!(list.error.is_some(), "{}", String::from_utf8_lossy(bad));
            assert!(list.pinned.is_empty());
            assert_eq!(std::fs::read(&path).unwrap(), bad, "left as it was");
        }
        let issue = IssueNumber::parse("42").unwrap();
        set_pinned(&state, &issue, true).unwrap();
        let list = read_watch_list(&state);
        assert_eq!((list.pinned, list.error), (vec!["42".to_string()], None));
    }

    #[test]
    fn pinning_keeps_order_and_unknown_fields() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let path = tmp.path().join(WATCH_LIST);
        std::fs::write(&path, br#"{"pinned": [3, "5"], "note": "mine"}"#).unwrap();
        let issue = |n: &str| IssueNumber::parse(n).unwrap();
        set_pinned(&state, &issue("9"), true).unwrap();
        set_pinned(&state, &issue("3"), false).unwrap();
        let list = read_watch_list(&state);
        assert_eq!(list.pinned, ["5", "9"]);
        assert_eq!(list.object["note"], "mine");
    }

    #[test]
    fn a_live_session_is_validated_on_read() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        assert_eq!(read_live_session(&state), Ok(None));
        std::fs::write(tmp.path().join(LIVE_SESSION), b"{\"pid\": -1}").unwrap();
        assert!(read_live_session(&state).is_err());
        let session = LiveSession {
            pid: 7,
            port: 8080,
            url: "http://127.0.0.1:8080/".into(),
            started_at: "2025-01-01T00:00:00Z".into(),
        };
        write_live_session(&state, &session).unwrap();
        assert_eq!(read_live_session(&state), Ok(Some(session.clone())));
        // Another server's record stays; this server's goes.
        clear_live_session(&state, session.pid + 1).unwrap();
        assert_eq!(read_live_session(&state), Ok(Some(session.clone())));
        clear_live_session(&state, session.pid).unwrap();
        assert_eq!(read_live_session(&state), Ok(None));
        clear_live_session(&state, session.pid).unwrap();
    }
}
