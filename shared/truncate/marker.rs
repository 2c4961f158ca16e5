//! The marker line written for each gap in a truncated output, and the
//! bounds of its length the budget is planned with.

use super::select::Markers;
use crate::blocks::Kind;
use crate::thousands::thousands;

/// One gap's marker line. It starts with a newline when the output so far
/// does not end with one, so the marker is always a line of its own.
pub fn marker_line(bytes: u64, lines: u64, path: Option<&str>, last: Option<u8>) -> String {
    let lead = if last.is_some_and(|b| b != b'\n') {
        "\n"
    } else {
        ""
    };
    let noun = if lines == 1 { "line" } else { "lines" };
    let saved = path.map_or(String::new(), |p| format!("; full output: {p}"));
    format!(
        "{lead}[jkz-truncate: {} bytes ({} {noun}) omitted{saved}]\n",
        thousands(bytes),
        thousands(lines)
    )
}

/// A gap's marker line when the gap starts inside a block cut to its head:
/// how much of the block it omits (`in_block`: bytes, lines) and, when the
/// gap (`in_all`) runs past the block's end, how much after it.
pub fn cut_marker_line(
    kind: Kind,
    in_block: (u64, u64),
    in_all: (u64, u64),
    path: Option<&str>,
    last: Option<u8>,
) -> String {
    let lead = if last.is_some_and(|b| b != b'\n') {
        "\n"
    } else {
        ""
    };
    let counts = |(bytes, lines): (u64, u64)| {
        let noun = if lines == 1 { "line" } else { "lines" };
        format!("{} bytes ({} {noun})", thousands(bytes), thousands(lines))
    };
    let after = (in_all.0 - in_block.0, in_all.1 - in_block.1);
    let after = if after.0 == 0 {
        String::new()
    } else {
        format!(", and {} after it", counts(after))
    };
    let saved = path.map_or(String::new(), |p| format!("; full output: {p}"));
    format!(
        "{lead}[jkz-truncate: {} block cut: {} of it omitted{after}{saved}]\n",
        kind.name(),
        counts(in_block)
    )
}

/// How much longer than [`marker_bound`] a cut block's marker can be.
pub(super) fn cut_marker_extra(total: u64, path: Option<&str>) -> u64 {
    let longest = Kind::ALL
        .into_iter()
        .max_by_key(|k| k.name().len())
        .expect("kinds");
    let most = (total, total);
    let all = (2 * total, 2 * total);
    let cut = cut_marker_line(longest, most, all, path, Some(b'x')).len() as u64;
    cut.saturating_sub(marker_bound(total, path))
}

/// The longest marker an input of `total` bytes can need.
pub(super) fn marker_bound(total: u64, path: Option<&str>) -> u64 {
    marker_line(total, total, path, Some(b'x')).len() as u64
}

/// The shortest markers there are; the pool prunes with them because the
/// final marker lengths are known only at the end of the input.
pub(super) fn marker_floor() -> Markers {
    let shortest = Kind::ALL
        .into_iter()
        .min_by_key(|k| k.name().len())
        .expect("kinds");
    let gap = marker_line(0, 0, None, None);
    let cut = cut_marker_line(shortest, (0, 0), (0, 0), None, None);
    Markers {
        gap: gap.len() as u64,
        cut: (cut.len() - gap.len()) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers() {
        assert_eq!(
            marker_line(1_234_567, 20_311, Some("state/context-offload/x.txt"), None),
            "[jkz-truncate: 1,234,567 bytes (20,311 lines) omitted; full output: state/context-offload/x.txt]\n"
        );
        assert_eq!(
            marker_line(5, 1, None, Some(b'a')),
            "\n[jkz-truncate: 5 bytes (1 line) omitted]\n"
        );
    }
}
