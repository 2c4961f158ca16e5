//! The one rule for a name jkz turns into a file name (a session id, a
//! lock's name, a circuit's service, a deliberation record's id):
//! `[A-Za-z0-9._-]{1,128}`, never `.` or `..`. Anything else is refused
//! before a path is built, so no name can leave its directory. Each caller
//! keeps its own error message: what the name is and how to spell one.

/// The longest name, in bytes.
pub const MAX_LEN: usize = 128;

/// Whether `name` can be used as (part of) a file name.
pub fn is_safe(name: &str) -> bool {
    (1..=MAX_LEN).contains(&name.len())
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// [`is_safe`], and not hidden: no leading `.` (a name jkz's own temp and
/// lock files, `.<name>.tmp` and `.<name>.lock`, could be mistaken for).
pub fn is_safe_visible(name: &str) -> bool {
    is_safe(name) && !name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_rule() {
        for ok in ["a", "0f3c-9a.b_c", &"x".repeat(128), "...", ".hidden"] {
            assert!(is_safe(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a:b",
            "a b",
            "é",
            &"x".repeat(129),
            "a\0",
        ] {
            assert!(!is_safe(bad), "{bad:?}");
        }
        assert!(!is_safe_visible(".hidden"));
        assert!(!is_safe_visible("..."));
        assert!(is_safe_visible("codex"));
    }
}
