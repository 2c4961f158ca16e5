//! INTERIM: stand-ins for `jkz::git` (git state with a timeout) and
//! `jkz::pipeline` (normalized pipeline view and validation), which are
//! being built on another branch. Everything that needs them calls through
//! this one file so that, when they land, it is deleted and its three
//! callers point at the real modules. Keep it minimal.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Map, Value};

/// Branch, short head and the number of changed paths of the work tree at
/// `dir`; `null` when it is not a git work tree or git is not available.
pub fn git_state(dir: &Path) -> Value {
    let run = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    };
    let Some(branch) = run(&["rev-parse", "--abbrev-ref", "HEAD"]) else {
        return Value::Null;
    };
    let mut git = Map::new();
    git.insert("branch".into(), branch.into());
    if let Some(head) = run(&["rev-parse", "--short", "HEAD"]) {
        git.insert("head".into(), head.into());
    }
    if let Some(status) = run(&["status", "--porcelain"]) {
        git.insert("dirty_files".into(), status.lines().count().into());
    }
    Value::Object(git)
}

/// The normalized view of every `state/pipeline/<N>.json` (see DESIGN.md):
/// one object per issue, newest `last_updated` first.
pub fn pipeline_status(state: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for (issue, file) in pipeline_files(state) {
        let Ok(Ok(Value::Object(root))) =
            std::fs::read(&file).map(|b| serde_json::from_slice::<Value>(&b))
        else {
            continue;
        };
        let data = root
            .get(&issue)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let s = |k: &str| {
            data.get(k).and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                _ => None,
            })
        };
        let verdict = match (s("review_passed").as_deref(), s("qa_passed").as_deref()) {
            (Some("true"), Some("true")) => Value::from("PASS"),
            (Some("false"), _) | (_, Some("false")) => Value::from("FAIL"),
            _ => Value::Null,
        };
        let mut view = Map::new();
        view.insert(
            "issue".into(),
            issue.parse::<u64>().map(Value::from).unwrap_or(Value::Null),
        );
        view.insert(
            "current_phase".into(),
            s("current_phase")
                .unwrap_or_else(|| "unknown".into())
                .into(),
        );
        view.insert(
            "active_agent".into(),
            s("active_agent")
                .filter(|a| !a.is_empty())
                .map(Value::from)
                .unwrap_or(Value::Null),
        );
        view.insert(
            "issue_type".into(),
            s("issue_type").unwrap_or_else(|| "feature".into()).into(),
        );
        view.insert(
            "pr_number".into(),
            s("pr_number")
                .and_then(|p| p.parse::<u64>().ok())
                .map(Value::from)
                .unwrap_or(Value::Null),
        );
        view.insert(
            "last_updated".into(),
            s("last_updated")
                .or_else(|| {
                    root.get("lastActivity")
                        .and_then(Value::as_str)
                        .map(String::from)
                })
                .map(Value::from)
                .unwrap_or(Value::Null),
        );
        view.insert("verdict".into(), verdict);
        out.push(Value::Object(view));
    }
    let key = |v: &Value| v["last_updated"].as_str().unwrap_or("").to_string();
    out.sort_by_key(|v| std::cmp::Reverse(key(v)));
    out
}

/// Every `state/pipeline/<N>.json` with its issue number, sorted by path.
pub fn pipeline_files(state: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut files: Vec<_> = std::fs::read_dir(state.join("pipeline"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let issue = name.strip_suffix(".json")?;
            (!issue.is_empty() && issue.bytes().all(|b| b.is_ascii_digit()))
                .then(|| (issue.to_string(), e.path()))
        })
        .collect();
    files.sort();
    files
}

/// Why a pipeline file is invalid, if it is.
pub fn validate_pipeline_file(issue: &str, path: &Path) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(root)) => match root.get(issue) {
            Some(Value::Object(_)) | None => Ok(()),
            Some(_) => Err(format!("\"{issue}\" is not an object")),
        },
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("invalid JSON: {e}")),
    }
}
