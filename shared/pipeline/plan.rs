//! The approved plan of an issue: a companion file, else the field.

use std::path::Path;

use serde::Serialize;

use super::{IssueNumber, Normalized, MAX_PLAN_BYTES};

/// An approved plan and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ApprovedPlan {
    /// The companion file name, or `approved_plan` for the field.
    pub source: String,
    pub text: String,
}

/// The approved plan of issue N: the companion `<N>-compact-plan.json`, else
/// `<N>-compact-plan.md` (read up to [`MAX_PLAN_BYTES`]), else the field
/// `approved_plan`.
pub fn approved_plan(
    pipeline_dir: &Path,
    issue: &IssueNumber,
    normalized: Option<&Normalized>,
) -> Option<ApprovedPlan> {
    for ext in ["json", "md"] {
        let name = format!("{issue}-compact-plan.{ext}");
        if let Some(text) = read_bounded_text(&pipeline_dir.join(&name), MAX_PLAN_BYTES) {
            if !text.trim().is_empty() {
                return Some(ApprovedPlan { source: name, text });
            }
        }
    }
    normalized
        .and_then(|n| n.approved_plan.clone())
        .map(|text| ApprovedPlan {
            source: "approved_plan".into(),
            text,
        })
}

/// A file's text (lossy UTF-8) up to `max` bytes; none when unreadable.
pub fn read_bounded_text(path: &Path, max: u64) -> Option<String> {
    let mut bytes = crate::state_dir::read_state_file(path, max).ok()?;
    bytes.truncate(max as usize);
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::testing::*;
    use serde_json::json;

    #[test]
    fn approved_plan_prefers_companion_files() {
        let tmp = tempfile::tempdir().unwrap();
        let n = view(json!({"approved_plan": "inline plan"}));
        let plan = approved_plan(tmp.path(), &issue("42"), Some(&n)).unwrap();
        assert_eq!(
            (plan.source.as_str(), plan.text.as_str()),
            ("approved_plan", "inline plan")
        );
        std::fs::write(tmp.path().join("42-compact-plan.md"), "md plan").unwrap();
        let plan = approved_plan(tmp.path(), &issue("42"), Some(&n)).unwrap();
        assert_eq!(plan.text, "md plan");
        std::fs::write(tmp.path().join("42-compact-plan.json"), "{\"p\":1}").unwrap();
        let plan = approved_plan(tmp.path(), &issue("42"), Some(&n)).unwrap();
        assert_eq!(plan.source, "42-compact-plan.json");
        assert_eq!(approved_plan(tmp.path(), &issue("7"), None), None);
    }
}
