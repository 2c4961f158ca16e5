//! Every line the reducer writes itself, `[jkz: …]`: what a gap holds, the
//! warnings by kind, the signals that did not fit, and where the whole
//! output is. They say plainly what was left out and where it is, so a view
//! never reads as tampered with.

use std::collections::HashMap;
use std::path::Path;

use crate::thousands::thousands;

use super::classifier::REPEATED;
use super::table::SignalKind;

/// At most this many counts of each sort (signal kinds, labels) are named in
/// one gap line; the rest are counted with the other lines. With it, a gap
/// line is never longer than [`GAP_LINE_MAX`].
const NAMED_PER_GAP: usize = 3;

/// An upper bound on a gap line's length (three kinds, three labels of at
/// most 40 characters, every number at its widest).
pub const GAP_LINE_MAX: usize = 500;

/// `1 passing tests` reads wrong: a count of one takes the singular of the
/// label's last word (`tests` → `test`, `lines` → `line`).
fn counted(n: u64, plural: &str) -> String {
    if n != 1 {
        return format!("{} {plural}", thousands(n));
    }
    match plural.strip_suffix('s') {
        Some(one) if !one.ends_with('s') => format!("1 {one}"),
        _ => format!("1 {plural}"),
    }
}

/// What lies between two shown lines: lines `first..end` (0-based, end
/// exclusive), the signal lines among them by kind, and the collapsed
/// lines by label. The rest were context, omitted.
pub fn gap_line(
    first: u64,
    end: u64,
    signals: &[(SignalKind, u64)],
    collapsed: &[(&str, u64)],
) -> String {
    let lines = end - first;
    let range = if lines == 1 {
        format!("line {}", first + 1)
    } else {
        format!("lines {}-{}", first + 1, end)
    };
    let mut named = 0;
    let mut parts = Vec::new();
    let sig: Vec<String> = signals
        .iter()
        .filter(|(_, n)| *n > 0)
        .take(NAMED_PER_GAP)
        .map(|(k, n)| {
            named += n;
            counted(*n, k.lines())
        })
        .collect();
    if !sig.is_empty() {
        parts.push(format!("{} not shown", sig.join(", ")));
    }
    // Repeats of the line before (a second blank line) are worth naming
    // only when they are what the gap mostly is.
    let col: Vec<String> = collapsed
        .iter()
        .filter(|(label, n)| *n > 0 && (*label != REPEATED || *n * 2 >= lines))
        .take(NAMED_PER_GAP)
        .map(|(label, n)| {
            named += n;
            counted(*n, label)
        })
        .collect();
    if !col.is_empty() {
        parts.push(format!("{} collapsed", col.join(", ")));
    }
    if parts.is_empty() {
        return format!("[jkz: {range} omitted]");
    }
    let other = lines.saturating_sub(named);
    if other > 0 {
        parts.push(format!("{} omitted", counted(other, "other lines")));
    }
    format!("[jkz: {range}: {}]", parts.join("; "))
}

/// A gap of at most this many lines, none of them a signal, is not marked
/// where it is: between a commit's hash and its subject, or an error and
/// its anchor, a line saying "3 lines omitted" would cost more than it
/// tells. One note after the view counts them all ([`quiet_gaps_line`]).
pub const QUIET_GAP: u64 = 40;

/// The short gaps left unmarked: how many lines in how many places, and
/// the collapsed ones among them by label.
pub fn quiet_gaps_line(lines: u64, gaps: u64, collapsed: &[(&str, u64)]) -> String {
    let mut named = 0;
    let parts: Vec<String> = collapsed
        .iter()
        .filter(|(_, n)| *n > 0)
        .take(NAMED_PER_GAP)
        .map(|(label, n)| {
            named += n;
            counted(*n, label)
        })
        .collect();
    let place = format!(
        "{} left out in {} above",
        counted(lines, "more lines"),
        counted(gaps, "short gaps")
    );
    if parts.is_empty() {
        return format!("[jkz: {place}, all context]");
    }
    let other = lines.saturating_sub(named);
    let rest = if other > 0 {
        quiet_rest(other)
    } else {
        String::new()
    };
    format!("[jkz: {place}: {}{rest}]", parts.join(", "))
}

/// The end of a quiet gaps' note that counts the context among them.
pub fn quiet_rest(other: u64) -> String {
    format!("; {} of context", counted(other, "other lines"))
}

/// The signals did not fit: how many are not shown, of how many, and where
/// they are.
pub fn overflow_line(not_shown: u64, total: u64, budget: usize, kept: bool) -> String {
    let where_ = if kept {
        "the gaps above give their lines in the full output"
    } else {
        "the gaps above give their lines (the full output was not kept)"
    };
    format!(
        "[jkz: {} of {} signal lines not shown (over {} characters); {where_}]",
        thousands(not_shown),
        thousands(total),
        thousands(budget as u64),
    )
}

/// The warnings by kind, most frequent first, when any kind came more than
/// once (`None` otherwise: each warning is shown where it is).
pub fn warnings_line(kinds: &HashMap<String, u64>, other: u64) -> Option<String> {
    if kinds.values().all(|&n| n < 2) {
        return None;
    }
    let total: u64 = kinds.values().sum::<u64>() + other;
    let mut by_count: Vec<(&String, &u64)> = kinds.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut listed = Vec::new();
    let mut len = 0;
    let mut rest = other;
    for (kind, n) in by_count {
        let kind: String = kind.chars().take(80).collect();
        let part = format!("{} × {kind}", thousands(*n));
        if len + part.len() > 300 {
            rest += n;
            continue;
        }
        len += part.len() + 2;
        listed.push(part);
    }
    if rest > 0 {
        listed.push(format!("{} other", thousands(rest)));
    }
    Some(format!(
        "[jkz: {} by kind: {}]",
        counted(total, "warning lines"),
        listed.join("; ")
    ))
}

/// Where the whole output is, and how to read a part of it with what the
/// agent's client has.
pub fn full_output_line(path: &Path, bytes: u64, lines: u64, reader: super::Reader) -> String {
    let how = match reader {
        super::Reader::ClaudeRead => "Read it with offset = line number, limit = line count",
        super::Reader::GeminiReadFile => {
            "read_file it with offset = line number - 1, limit = line count"
        }
        super::Reader::Shell => "read lines N to M with sed -n 'N,Mp' and the path",
    };
    format!(
        "[jkz: full output: {} ({} bytes, {}); {how}]",
        path.display(),
        thousands(bytes),
        counted(lines, "lines"),
    )
}

/// A failed command's status, for a client that does not show it.
pub fn exit_status(code: i32) -> String {
    format!("[jkz: the command exited with status {code}]\n")
}

/// The same, by file name only, for a budget the path does not fit.
pub fn full_output_line_short(path: &Path) -> String {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    format!("[jkz: full output: {name} in the state directory's context-offload/]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gap_says_what_it_holds_in_the_singular_when_one() {
        assert_eq!(
            gap_line(12, 1216, &[], &[("passing tests", 1204)]),
            "[jkz: lines 13-1216: 1,204 passing tests collapsed]"
        );
        assert_eq!(
            gap_line(6, 7, &[], &[("repeated lines", 1)]),
            "[jkz: line 7: 1 repeated line collapsed]"
        );
        assert_eq!(gap_line(0, 40, &[], &[]), "[jkz: lines 1-40 omitted]");
        assert_eq!(
            gap_line(
                0,
                400,
                &[(SignalKind::Error, 3), (SignalKind::Warning, 0), (SignalKind::Panic, 1)],
                &[("passing tests", 300), ("download lines", 0)]
            ),
            "[jkz: lines 1-400: 3 error lines, 1 assertion or panic line not shown; 300 passing tests collapsed; 96 other lines omitted]"
        );
        assert_eq!(
            gap_line(0, 2, &[], &[("passing tests", 1)]),
            "[jkz: lines 1-2: 1 passing test collapsed; 1 other line omitted]"
        );
    }

    #[test]
    fn a_gap_line_stays_under_its_bound_at_its_widest() {
        let kinds: Vec<(SignalKind, u64)> = SignalKind::ALL
            .iter()
            .map(|&k| (k, u64::MAX / 100))
            .collect();
        let label = "x".repeat(40);
        let labels: Vec<(&str, u64)> = (0..9).map(|_| (label.as_str(), u64::MAX / 100)).collect();
        let line = gap_line(0, u64::MAX, &kinds, &labels);
        assert!(line.len() <= GAP_LINE_MAX, "{} {line}", line.len());
    }

    #[test]
    fn warnings_by_kind_only_when_a_kind_repeats() {
        let mut kinds = HashMap::new();
        kinds.insert("warning: unused variable: `…`".to_string(), 1);
        assert_eq!(warnings_line(&kinds, 0), None);
        kinds.insert("warning: unused import: `…`".to_string(), 30);
        assert_eq!(
            warnings_line(&kinds, 2).unwrap(),
            "[jkz: 33 warning lines by kind: 30 × warning: unused import: `…`; 1 × warning: unused variable: `…`; 2 other]"
        );
    }
}
