//! The patterns on the page: `GET /api/patterns` lists them with their
//! evidence, `POST /api/patterns/P12` (with the token, like every change)
//! pins, unpins or rejects one.
//!
//! The list reads `memory.db` as it is, read-only. A change goes through
//! the patterns' own writer ([`crate::patterns`]): one event in the
//! feedback log, applied to `memory.db`; these two files, and the
//! observer's own, are all the observer ever writes.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::patterns::cmd::pattern_json;
use crate::patterns::inject::{ranked, Request};
use crate::patterns::log::Event;
use crate::patterns::store::{parse_tag, Memory};
use crate::state_dir::StateDir;

/// The most patterns the page lists (best first).
pub const MAX_SHOWN: usize = 200;

/// `GET /api/patterns`: `present` (is there a `memory.db`), `error`,
/// `count`, and the best [`MAX_SHOWN`] patterns, each with its `issues`
/// (the distinct issues of its sources) and no longer list of sources.
pub fn list(state: &StateDir, now: DateTime<Utc>) -> Value {
    let read = || -> Result<Option<(usize, Vec<Value>)>, String> {
        let Some(memory) = Memory::open_read_only(state.path(), crate::json_file::lock_wait())
            .map_err(|e| e.message)?
        else {
            return Ok(None);
        };
        memory
            .read(|m| {
                let req = Request {
                    role: None,
                    issue: None,
                    budget: 0,
                    now,
                    half_life: crate::patterns::score::half_life("jkz ui"),
                };
                let all = ranked(m, &req)?;
                let mut shown = Vec::new();
                for r in all.iter().take(MAX_SHOWN) {
                    let mut v = pattern_json(m, &r.stats, r.score)?;
                    let mut issues: Vec<u64> = v["sources"]
                        .as_array()
                        .map(|s| s.iter().filter_map(|x| x["issue"].as_u64()).collect())
                        .unwrap_or_default();
                    issues.sort_unstable();
                    issues.dedup();
                    v["sources"] = json!(v["sources"].as_array().map_or(0, Vec::len));
                    v["issues"] = json!(issues);
                    shown.push(v);
                }
                Ok(Some((all.len(), shown)))
            })
            .map_err(|e| e.message)
    };
    match read() {
        Ok(Some((count, patterns))) => {
            json!({"present": true, "error": null, "count": count, "patterns": patterns})
        }
        Ok(None) => json!({"present": false, "error": null, "count": 0, "patterns": []}),
        Err(e) => json!({"present": true, "error": e, "count": 0, "patterns": []}),
    }
}

/// What a person may do to a pattern from the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Pin,
    Unpin,
    Reject,
}

/// `POST /api/patterns/ID` `{"action": "pin"|"unpin"|"reject"}`: the
/// pattern as it now is, or an HTTP status and why.
pub fn act(
    state: &StateDir,
    id: &str,
    action: Action,
    now: DateTime<Utc>,
) -> Result<Value, (u16, String)> {
    let n = parse_tag(id).ok_or_else(|| (400, format!("not a pattern id: {id:?}")))?;
    let memory = crate::patterns::open(state, "jkz ui", &mut std::io::stderr())
        .map_err(|e| (500, e.message))?;
    let at = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let done = memory
        .write(|m| {
            let Some(pattern) = m.pattern_ref(n)? else {
                return Ok((false, Vec::new()));
            };
            let event = match action {
                Action::Pin => Event::Pin { at, pattern },
                Action::Unpin => Event::Unpin { at, pattern },
                Action::Reject => Event::Reject { at, pattern },
            };
            Ok((true, vec![event]))
        })
        .map_err(|e| (500, e.message))?;
    if !done {
        return Err((404, format!("no pattern P{n}")));
    }
    let d = memory
        .detail(n)
        .map_err(|e| (500, e.message))?
        .ok_or_else(|| (404, format!("no pattern P{n}")))?;
    let score = d
        .stats
        .score(now, crate::patterns::score::half_life("jkz ui"));
    pattern_json(&memory, &d.stats, score).map_err(|e| (500, e.message))
}
