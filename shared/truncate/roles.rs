//! The role table: how much of the head/tail budget goes to the head.
//!
//! A pipeline role's output has a shape. Planners and architects put their
//! findings first and pad the end with detail; judges, security reviewers,
//! auditors and QA reason at length and conclude at the end. The share is
//! the head's fraction of what remains after protected blocks and markers;
//! the tail gets the rest.

/// One row: role name, head share, why.
pub struct Role {
    pub name: &'static str,
    pub head_share: f64,
    pub why: &'static str,
}

/// The share for roles not in the table: an even split.
pub const DEFAULT_HEAD_SHARE: f64 = 0.5;

/// Every known role. Names are matched case-insensitively; `_` and `-` are
/// the same.
pub const ROLES: &[Role] = &[
    Role {
        name: "architect",
        head_share: 0.7,
        why: "the design and its decisions come first; the end is elaboration",
    },
    Role {
        name: "planner",
        head_share: 0.7,
        why: "the plan's steps lead; later text expands on them",
    },
    Role {
        name: "researcher",
        head_share: 0.6,
        why: "the summary of findings leads, sources and detail follow",
    },
    Role {
        name: "triager",
        head_share: 0.6,
        why: "the classification is stated up front",
    },
    Role {
        name: "builder",
        head_share: 0.4,
        why: "a build log's end holds the result: last errors, test summary, commit",
    },
    Role {
        name: "fixer",
        head_share: 0.4,
        why: "like a builder: what finally passed or failed is at the end",
    },
    Role {
        name: "lens",
        head_share: 0.4,
        why: "findings are spread through the review, the summary closes it",
    },
    Role {
        name: "inspector",
        head_share: 0.35,
        why: "inspects step by step and states what it found at the end",
    },
    Role {
        name: "reviewer",
        head_share: 0.3,
        why: "the review's conclusion and requested changes come last",
    },
    Role {
        name: "sentinel",
        head_share: 0.3,
        why: "a watcher: the newest state, at the end, is what matters",
    },
    Role {
        name: "judge",
        head_share: 0.25,
        why: "reasons first, the verdict lands at the end",
    },
    Role {
        name: "auditor",
        head_share: 0.25,
        why: "the audit's findings and sign-off close the report",
    },
    Role {
        name: "qa",
        head_share: 0.25,
        why: "test runs scroll by; pass/fail counts and failures are at the end",
    },
    Role {
        name: "tester",
        head_share: 0.25,
        why: "as qa: the results are at the end",
    },
    Role {
        name: "security-reviewer",
        head_share: 0.2,
        why: "the security conclusion and its severity are the last thing written",
    },
];

/// The head share for `role` (the default for unknown roles).
pub fn head_share(role: &str) -> f64 {
    find(role).map_or(DEFAULT_HEAD_SHARE, |r| r.head_share)
}

/// The head share to use: `--head-share` when given, else the role's, else
/// [`DEFAULT_HEAD_SHARE`].
pub fn resolve_head_share(flag: Option<f64>, role: Option<&str>) -> f64 {
    flag.unwrap_or_else(|| role.map_or(DEFAULT_HEAD_SHARE, head_share))
}

/// The table row for `role`, if it is known.
pub fn find(role: &str) -> Option<&'static Role> {
    let norm = role.trim().to_ascii_lowercase().replace('_', "-");
    ROLES.iter().find(|r| r.name == norm)
}

/// The table as text, for `--help`.
pub fn table() -> String {
    share_table(
        ROLES.iter().map(|r| (r.name, r.head_share, r.why)),
        DEFAULT_HEAD_SHARE,
        18,
    )
}

/// A table of head shares as `--help` shows it: one `name share why` line
/// a row, names padded to `width`, then the `(other)` row with `default`.
/// `jkz-truncate`'s roles and `jkz-post-tool-use`'s command rules both use it.
pub fn share_table<'a>(
    rows: impl IntoIterator<Item = (&'a str, f64, &'a str)>,
    default: f64,
    width: usize,
) -> String {
    let mut out = String::new();
    for (name, share, why) in rows {
        out.push_str(&format!("  {name:<width$} {share:.2}  {why}\n"));
    }
    out.push_str(&format!(
        "  {:<width$} {default:.2}  no known shape: split evenly\n",
        "(other)"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_valid_and_names_unique() {
        for (i, r) in ROLES.iter().enumerate() {
            assert!((0.0..=1.0).contains(&r.head_share), "{}", r.name);
            assert!(ROLES[..i].iter().all(|o| o.name != r.name), "{}", r.name);
        }
    }

    #[test]
    fn lookup() {
        assert_eq!(head_share("judge"), 0.25);
        assert_eq!(head_share("Security_Reviewer"), 0.2);
        assert_eq!(head_share("someone-new"), DEFAULT_HEAD_SHARE);
        assert!(head_share("architect") > 0.5 && head_share("qa") < 0.5);
    }
}
