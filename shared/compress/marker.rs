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

/// What a line that looks like a marker starts with ([`looks_like_marker`]).
pub const PREFIX: &str = "<!-- jkz:offload";
const OPEN: &str = "<!-- jkz:offload sha256=";
const CLOSE: &str = " -->";

/// True when `line` looks like an offload marker: it starts with
/// [`PREFIX`]. Restore treats every such line (outside code) as a marker:
/// one that does not parse, or whose attributes do not match its file, is
/// an error, never plain text. The one definition of "looks like".
pub fn looks_like_marker(line: &[u8]) -> bool {
    line.starts_with(PREFIX.as_bytes())
}

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
        Marker::parse_or_why(line).ok()
    }

    /// [`Marker::parse`], saying what is wrong with a line that is not a
    /// marker (for a line that [looks like one](looks_like_marker)).
    pub fn parse_or_why(line: &[u8]) -> Result<Marker, String> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = std::str::from_utf8(line).map_err(|_| "it is not valid UTF-8".to_string())?;
        let rest = line
            .strip_prefix(OPEN)
            .ok_or("it does not start with `<!-- jkz:offload sha256=`")?
            .strip_suffix(CLOSE)
            .ok_or("it does not end with ` -->` (nothing may follow it on its line)")?;
        let sha256 = rest
            .get(..64)
            .filter(|h| h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .ok_or("sha256= is not 64 lower-case hex digits")?;
        let rest = &rest[64..];
        let (bytes, rest) = field(rest, "bytes")?;
        let (lines, rest) = field(rest, "lines")?;
        let (excerpt, rest) = field(rest, "excerpt")?;
        let path = rest
            .strip_prefix(" path=")
            .filter(|p| !p.is_empty())
            .ok_or("path= is missing or empty after excerpt=")?;
        if excerpt > bytes {
            return Err(format!("excerpt={excerpt} is larger than bytes={bytes}"));
        }
        Ok(Marker {
            sha256: sha256.to_string(),
            bytes,
            lines,
            excerpt,
            path: path.to_string(),
        })
    }
}

/// ` name=<digits>` at the start of `s`: the number and what follows.
fn field<'a>(s: &'a str, name: &str) -> Result<(u64, &'a str), String> {
    let why = || format!("{name}= is missing, out of place or not a whole number");
    let s = s
        .strip_prefix(' ')
        .and_then(|s| s.strip_prefix(name))
        .and_then(|s| s.strip_prefix('='))
        .ok_or_else(why)?;
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    let value = s[..n].parse().map_err(|_| why())?;
    Ok((value, &s[n..]))
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
            assert!(looks_like_marker(bad.as_bytes()) || bad.starts_with(' '));
        }
        let why = |line: String| Marker::parse_or_why(line.as_bytes()).unwrap_err();
        assert!(why(good.replace("bytes=123456", "bytes=x12")).contains("bytes="));
        assert!(why(good.replace("excerpt=2048", "excerpt=999999")).contains("larger than"));
        assert!(why(good.replace("sha256=ab", "sha256=AB")).contains("sha256="));
        assert!(why(good.replace(" lines=", " lines=-")).contains("lines="));
        assert!(why(good.replace("\n", "\r\n")).contains("` -->`"));
        assert!(!looks_like_marker(b"<!-- jkz:tldr -->"));
        assert!(!looks_like_marker(b" <!-- jkz:offload -->"));
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
