//! The offload marker: one line that stands in for an offloaded stretch.
//!
//! ```text
//! <!-- jkz:offload sha256=<64 hex> bytes=<N> lines=<N> excerpt=<N> path=<P> -->
//! ```
//!
//! `sha256`, `bytes` and `lines` describe the offloaded content (the whole
//! stretch, excerpt included, so the file alone reads as the full section).
//! `excerpt` is how many of its first bytes stay inline just before the
//! marker: restore needs it to know where the inline text stops. `path` is
//! where the file was written, for a reader; restore looks in the state
//! directory first. The marker is itself a jkz signal comment, so the
//! protected-block scanner sees it as a [`Kind::Signal`] block: compressing a
//! compressed document leaves every marker in place.
//!
//! [`Kind::Signal`]: crate::blocks::Kind::Signal

use std::fmt::Write as _;

const OPEN: &str = "<!-- jkz:offload sha256=";
const CLOSE: &str = " -->";

/// What a marker says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// Lower-case hex sha256 of the offloaded content.
    pub sha256: String,
    pub bytes: u64,
    pub lines: u64,
    /// Bytes of the content kept inline before the marker (`<= bytes`).
    pub excerpt: u64,
    pub path: String,
}

impl Marker {
    /// The marker line, with its `\n`.
    pub fn line(&self) -> String {
        let mut s = String::with_capacity(Self::len_for(
            self.bytes,
            self.lines,
            self.excerpt,
            self.path.len(),
        ) as usize);
        let _ = writeln!(
            s,
            "{OPEN}{} bytes={} lines={} excerpt={} path={}{CLOSE}",
            self.sha256, self.bytes, self.lines, self.excerpt, self.path
        );
        s
    }

    /// The length of a marker line with these fields (and a 64-digit hash).
    pub fn len_for(bytes: u64, lines: u64, excerpt: u64, path_len: usize) -> u64 {
        let digits = |n: u64| n.checked_ilog10().unwrap_or(0) as u64 + 1;
        (OPEN.len() + 64 + " bytes=".len() + " lines=".len() + " excerpt=".len()) as u64
            + (" path=".len() + path_len + CLOSE.len() + 1) as u64
            + digits(bytes)
            + digits(lines)
            + digits(excerpt)
    }

    /// Parses one whole line, with its `\n` or without (the last line of a
    /// file). Only the exact written form is a marker: extra text, a `\r`, a
    /// missing field or a signed number is not.
    pub fn parse(line: &[u8]) -> Option<Marker> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = std::str::from_utf8(line).ok()?;
        let rest = line.strip_prefix(OPEN)?.strip_suffix(CLOSE)?;
        let (sha256, rest) = rest.split_at_checked(64)?;
        if !sha256
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return None;
        }
        let (bytes, rest) = field(rest, " bytes=")?;
        let (lines, rest) = field(rest, " lines=")?;
        let (excerpt, rest) = field(rest, " excerpt=")?;
        let path = rest.strip_prefix(" path=")?;
        if path.is_empty() || excerpt > bytes {
            return None;
        }
        Some(Marker {
            sha256: sha256.to_string(),
            bytes,
            lines,
            excerpt,
            path: path.to_string(),
        })
    }
}

/// ` name=<digits>` at the start of `s`: the number and what follows.
fn field<'a>(s: &'a str, name: &str) -> Option<(u64, &'a str)> {
    let s = s.strip_prefix(name)?;
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    Some((s[..n].parse().ok()?, &s[n..]))
}

/// Lines in `content` as a reader counts them: newlines, plus one for an
/// unterminated last line.
pub fn count_lines(newlines: u64, len: u64, last_byte: Option<u8>) -> u64 {
    if len == 0 {
        0
    } else {
        newlines + u64::from(last_byte != Some(b'\n'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Marker {
        Marker {
            sha256: "ab".repeat(32),
            bytes: 123456,
            lines: 789,
            excerpt: 2048,
            path: "/tmp/a b/state/context-offload/x.md".into(),
        }
    }

    #[test]
    fn round_trip_and_length() {
        let m = sample();
        let line = m.line();
        assert!(line.ends_with(" -->\n"));
        assert_eq!(
            line.len() as u64,
            Marker::len_for(123456, 789, 2048, m.path.len())
        );
        assert_eq!(Marker::parse(line.as_bytes()), Some(m));
    }

    #[test]
    fn the_scanner_sees_a_marker_as_a_signal_block() {
        let line = sample().line();
        let blocks = crate::blocks::find_blocks(line.as_bytes());
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].kind, crate::blocks::Kind::Signal);
        assert_eq!(blocks[0].len(), line.len() as u64);
    }

    #[test]
    fn near_misses_are_not_markers() {
        let good = sample().line();
        for bad in [
            good.replace("<!-- jkz", " <!-- jkz"),
            good.replace(" -->", " --> x"),
            good.replace("bytes=123456", "bytes=+123456"),
            good.replace("excerpt=2048", "excerpt=999999"),
            good.replace("sha256=ab", "sha256=AB"),
            good.replace(" path=", " path"),
            good.replace("\n", "\r\n"),
        ] {
            assert_eq!(Marker::parse(bad.as_bytes()), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn any_fields_round_trip(bytes in 0u64.., lines in 0u64.., path in "[^\n]{1,40}") {
            let excerpt = bytes / 2;
            let m = Marker { sha256: "0f".repeat(32), bytes, lines, excerpt, path };
            let line = m.line();
            prop_assert_eq!(line.len() as u64, Marker::len_for(bytes, lines, excerpt, m.path.len()));
            prop_assert_eq!(Marker::parse(line.as_bytes()), Some(m));
        }
    }
}
