//! The fields of the data that the contract names, each spelled
//! once: the scalars every writer stores as strings ([`STRING_FIELDS`]),
//! which of them hold a count or a flag, and what the normalized view reads
//! ([`VIEW_FIELDS`]: the scalars and the three fields that hold more).

/// Scalar fields of the contract: stored as strings (or absent, or null).
pub const STRING_FIELDS: [&str; 12] = [
    "current_phase",
    "active_agent",
    "issue_type",
    "pr_number",
    "started_at",
    "last_updated",
    "plan_iterations",
    "review_fix_count",
    "qa_fix_count",
    "review_passed",
    "qa_passed",
    "failure_context",
];

/// Fields holding a count, stored as a string of digits.
pub const COUNT_FIELDS: &[&str] = &["plan_iterations", "review_fix_count", "qa_fix_count"];

/// Fields holding a boolean, stored as `"true"` or `"false"`.
pub const FLAG_FIELDS: &[&str] = &["review_passed", "qa_passed"];

/// The fields of the data that [`super::Normalized::from_fields`]
/// reads: every scalar, then the three that are not strings.
pub(super) const VIEW_FIELDS: [&str; 15] = {
    let mut fields = [""; 15];
    let mut i = 0;
    while i < STRING_FIELDS.len() {
        fields[i] = STRING_FIELDS[i];
        i += 1;
    }
    fields[12] = "pending_decisions";
    fields[13] = "approved_plan";
    fields[14] = "sub_issues";
    fields
};

/// The siblings of the numeric key that [`super::Normalized::from_fields`]
/// reads.
pub(super) const VIEW_SIBLINGS: [&str; 2] = ["lastActivity", "heartbeat_pid"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_reads_every_scalar_once() {
        assert_eq!(VIEW_FIELDS[..STRING_FIELDS.len()], STRING_FIELDS);
        let mut names = VIEW_FIELDS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), VIEW_FIELDS.len());
        assert!(!names.contains(&""));
    }
}
