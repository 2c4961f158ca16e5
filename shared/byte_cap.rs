//! A byte cap set by an environment variable: the one rule for every
//! variable that sets one (`JKZ_MAX_OUTPUT_BYTES`, `JKZ_TOOL_OUTPUT_BYTES`).
//!
//! Unset or empty is unset: the caller's default holds. A whole number
//! (spaces around it allowed) is the cap, 0 meaning no cap. Anything else
//! is the caller's default and one warning naming the variable and the
//! value: a filter or a hook fails open, it never loses an output over a
//! typo in the environment.

use std::ffi::OsStr;

/// The cap `value` (the value of `variable`, if set) gives: `Err` with
/// `default` and the one-line warning when it is not a byte count.
/// `default_words` says what `default` is in that warning ("the default
/// cap of 20,000 bytes").
pub fn byte_cap(
    variable: &str,
    value: Option<&OsStr>,
    default: u64,
    default_words: &str,
) -> Result<u64, (u64, String)> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return Ok(default);
    };
    match value.to_str().and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(cap) => Ok(cap),
        None => Err((
            default,
            format!(
                "{variable}={} is not a byte count (a whole number, 0 for no limit); using {default_words}",
                shell_quote(&value.to_string_lossy()),
            ),
        )),
    }
}

/// `'value'` with any `'` escaped, so a warning shows the value exactly.
fn shell_quote(value: &str) -> String {
    let short: String = value.chars().take(64).collect();
    let more = if short.len() < value.len() { "…" } else { "" };
    format!("'{}'{more}", short.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_empty_numbers_and_junk() {
        let cap = |v: Option<&str>| byte_cap("V", v.map(OsStr::new), 7, "seven");
        assert_eq!(cap(None), Ok(7));
        assert_eq!(cap(Some("")), Ok(7));
        assert_eq!(cap(Some(" 0 ")), Ok(0));
        assert_eq!(cap(Some("8000")), Ok(8000));
        let (fallback, warning) = cap(Some("it's lots")).unwrap_err();
        assert_eq!(fallback, 7);
        assert_eq!(
            warning,
            "V='it'\\''s lots' is not a byte count (a whole number, 0 for no limit); using seven"
        );
    }
}
