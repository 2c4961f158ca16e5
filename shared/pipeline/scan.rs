//! A strict JSON scanner for pipeline files: it checks a whole document and
//! hands back only the values the normalized view reads.
//!
//! `jkz-pre-compact` reads every pipeline file on each compaction, often
//! thousands, and copies each valid file verbatim into its snapshot. So a
//! file must be accepted exactly when `serde_json` would parse it into a
//! `Value` (or the snapshot would not be JSON), but only a few of its values
//! are needed. Going through `serde_json`'s deserializer for the whole
//! document cost about 4 µs per file, most of the hook's own time. This
//! scanner does the common cases itself and hands the rare ones to
//! `serde_json`, so the rules stay `serde_json`'s own:
//!
//! - a string with no backslash is checked here: no control character, valid
//!   UTF-8, and borrowed as it is; a string with an escape is decoded by
//!   `serde_json` (surrogate pairs, bad escapes);
//! - an integer of at most 19 digits is checked here (serde_json never
//!   refuses one: it is an integer, or an `f64` well within range); any
//!   other number (fraction, exponent, more digits) by `serde_json`, which
//!   refuses one out of `f64`'s range;
//! - nesting stops at `serde_json`'s recursion limit ([`MAX_DEPTH`]);
//! - whitespace is JSON's four characters; nothing may follow the value.
//!
//! The oracle in the tests (and in the `pipeline_state` fuzz target) is
//! `serde_json::from_slice::<Value>` itself.

use std::borrow::Cow;

use serde_json::Value;

/// Nesting `serde_json` refuses: 128 arrays or objects deep.
pub const MAX_DEPTH: usize = 128;

/// True when `bytes` is one JSON value that `serde_json` parses into a
/// `Value` (surrounding whitespace allowed).
pub fn is_valid_json(bytes: &[u8]) -> bool {
    let mut scan = Scanner::new(bytes);
    scan.whitespace();
    scan.value().is_some() && scan.end().is_some()
}

/// The bytes a string's text runs on over: printable ASCII but the quote
/// and the backslash.
static PLAIN: [bool; 256] = {
    let mut plain = [false; 256];
    let mut b = 0x20;
    while b < 0x80 {
        plain[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    plain
};

/// A string's text, checked: as it stands in the bytes when it has no
/// escape, else decoded.
#[derive(Debug, PartialEq)]
pub(super) enum Text<'a> {
    /// Valid UTF-8 (checked), borrowed.
    Plain(&'a [u8]),
    Decoded(String),
}

impl<'a> Text<'a> {
    /// The text's bytes (UTF-8): what keys are compared by.
    pub(super) fn as_bytes(&self) -> &[u8] {
        match self {
            Text::Plain(bytes) => bytes,
            Text::Decoded(text) => text.as_bytes(),
        }
    }

    fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            // Checked already, but a `str` needs it said again.
            Text::Plain(bytes) => std::str::from_utf8(bytes).ok().map(Cow::Borrowed),
            Text::Decoded(text) => Some(Cow::Owned(text)),
        }
    }
}

/// True when none of the eight bytes of `word` is a quote, a backslash, a
/// control character or beyond ASCII: none can end or interrupt a string's
/// plain text. (Each test is the classic "some byte is below n" bit trick,
/// which never misses one; the byte loop after it decides.)
fn all_plain(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH;
    let quote = below(word ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(word ^ (ONES * u64::from(b'\\')), 1);
    let control = below(word, 0x20);
    (quote | backslash | control | (word & HIGH)) == 0
}

/// A wanted value as read: a string borrowed from the bytes (owned only
/// when an escape was decoded), or any other JSON value.
#[derive(Debug, PartialEq)]
pub(super) enum Kept<'a> {
    Str(Cow<'a, str>),
    Other(Value),
}

/// A position in a document being checked. Every method that reads a part
/// of the document returns `None` on the first thing `serde_json` would
/// refuse there; where it stops then does not matter.
pub(super) struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Arrays and objects open around the current position.
    depth: usize,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Scanner<'a> {
        Scanner {
            bytes,
            pos: 0,
            depth: 0,
        }
    }

    /// The byte at the position; none at the end.
    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub(super) fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Consumes `byte` (after whitespace).
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.whitespace();
        if self.peek()? != byte {
            return None;
        }
        self.pos += 1;
        Some(())
    }

    /// Whitespace, then the end of the bytes.
    pub(super) fn end(&mut self) -> Option<()> {
        self.whitespace();
        (self.pos == self.bytes.len()).then_some(())
    }

    /// Opens an array or object (its bracket already consumed).
    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth < MAX_DEPTH).then_some(())
    }

    /// Reads an object's members, giving each key to `member`, which must
    /// consume the value. The position is at the `{`.
    pub(super) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, Text<'a>) -> Option<()>,
    ) -> Option<()> {
        debug_assert_eq!(self.peek(), Some(b'{'));
        self.elements(b'}', |scan| {
            let key = scan.text()?;
            scan.expect(b':')?;
            scan.whitespace();
            member(scan, key)
        })
    }

    fn array(&mut self) -> Option<()> {
        debug_assert_eq!(self.peek(), Some(b'['));
        self.elements(b']', Self::value)
    }

    /// The elements of an array or the members of an object (`element`
    /// reads one, from its first byte), separated by commas, up to `close`;
    /// the position is at the opening bracket.
    fn elements(
        &mut self,
        close: u8,
        mut element: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.pos += 1;
        self.enter()?;
        self.whitespace();
        if self.peek()? == close {
            self.pos += 1;
        } else {
            loop {
                self.whitespace();
                element(self)?;
                self.whitespace();
                match self.peek()? {
                    b',' => self.pos += 1,
                    b if b == close => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// Checks one value and steps over it. The position is at its first byte.
    pub(super) fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(|scan, _| scan.value()),
            b'[' => self.array(),
            // (An escaped string is decoded only to be dropped here: rare,
            // and the decoding is what checks it.)
            b'"' => self.text().map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// Reads one value, keeping it (see [`Kept`]).
    pub(super) fn kept(&mut self) -> Option<Kept<'a>> {
        if self.peek()? == b'"' {
            return self.text()?.into_str().map(Kept::Str);
        }
        let start = self.pos;
        self.value()?;
        // Checked above, in its place (nesting included): parsing the span
        // alone gives the `Value` a whole-document parse would hold there.
        serde_json::from_slice(&self.bytes[start..self.pos])
            .ok()
            .map(Kept::Other)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if !self.bytes[self.pos..].starts_with(word) {
            return None;
        }
        self.pos += word.len();
        Some(())
    }

    /// A string, checked; the position is at its opening quote.
    pub(super) fn text(&mut self) -> Option<Text<'a>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.pos + 1;
        // Eight bytes at a time while all are printable ASCII but the quote
        // and the backslash, then byte by byte: printable ASCII runs on,
        // anything else stops the loop and is looked at.
        let mut at = start;
        while let Some(word) = self.bytes.get(at..at + 8) {
            let word = u64::from_le_bytes(word.try_into().ok()?);
            if !all_plain(word) {
                break;
            }
            at += 8;
        }
        let mut ascii = true;
        loop {
            let b = *self.bytes.get(at)?;
            if PLAIN[usize::from(b)] {
                at += 1;
                continue;
            }
            match b {
                b'"' => break,
                b'\\' => return self.escaped_text(at),
                0x80.. => {
                    ascii = false;
                    at += 1;
                }
                _ => return None, // a control character must be escaped
            }
        }
        let text = &self.bytes[start..at];
        // Only text beyond ASCII needs its UTF-8 checked.
        if !ascii {
            std::str::from_utf8(text).ok()?;
        }
        self.pos = at + 1;
        Some(Text::Plain(text))
    }

    /// The rest of a string with an escape (the backslash at `at`): finds
    /// the closing quote (the first one no backslash escapes), and lets
    /// serde_json decode and check the whole string.
    fn escaped_text(&mut self, mut at: usize) -> Option<Text<'a>> {
        let close = loop {
            match self.bytes.get(at)? {
                b'\\' => at += 2,
                b'"' => break at,
                _ => at += 1,
            }
        };
        let text = serde_json::from_slice::<String>(&self.bytes[self.pos..=close]).ok()?;
        self.pos = close + 1;
        Some(Text::Decoded(text))
    }

    /// A number, by JSON's grammar; see the module's note for its range.
    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        let digits = |scan: &mut Self| {
            let from = scan.pos;
            while let Some(b'0'..=b'9') = scan.peek() {
                scan.pos += 1;
            }
            scan.pos - from
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let whole = match self.peek()? {
            b'0' => {
                self.pos += 1;
                // No leading zero: "012" is refused.
                if let Some(b'0'..=b'9') = self.peek() {
                    return None;
                }
                1
            }
            b'1'..=b'9' => digits(self),
            _ => return None,
        };
        let mut plain = whole <= 19;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return None;
            }
            plain = false;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return None;
            }
            plain = false;
        }
        if plain {
            return Some(());
        }
        // Range: serde_json refuses what would not fit in an f64.
        serde_json::from_slice::<Value>(&self.bytes[start..self.pos])
            .ok()
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn oracle(bytes: &[u8]) -> bool {
        serde_json::from_slice::<Value>(bytes).is_ok()
    }

    #[track_caller]
    fn agrees(text: &[u8]) {
        assert_eq!(
            is_valid_json(text),
            oracle(text),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }

    #[test]
    fn agrees_with_serde_json_on_edge_cases() {
        let cases: &[&str] = &[
            "",
            " ",
            "{}",
            " {} \n",
            "{} {}",
            "{}x",
            "[]",
            "[1,]",
            "[,1]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{\"a\":}",
            "{1:2}",
            "{\"a\":1 \"b\":2}",
            "[1 2]",
            "\t[\r1\n,\t2 ]",
            "true",
            "truex",
            "tru",
            "nul",
            "null",
            "false",
            "[true,false,null]",
            "0",
            "-0",
            "-",
            "012",
            "-012",
            "0.5",
            "0.",
            ".5",
            "1e5",
            "1E+5",
            "1e-5",
            "1e",
            "1e+",
            "1.5e3",
            "1e308",
            "1.8e308",
            "1e999",
            "-1e999",
            "1e-999",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "9999999999999999999",
            "99999999999999999999",
            "+1",
            "01.5",
            "1.5.5",
            "\"a\"",
            "\"a",
            "\"\\\"",
            "\"\\\\\"",
            "\"\\\"\"",
            "\"a\\nb\"",
            "\"\\x\"",
            "\"\\u00e9\"",
            "\"\\u00e\"",
            "\"\\u\"",
            "\"\\ud83d\\ude00\"",
            "\"\\ud800\"",
            "\"\\ud800x\"",
            "\"\\ud800\\u0041\"",
            "\"\\udc00\"",
            "\"\\ude00\\ud83d\"",
            "\"tab\there\"",
            "\"nl\nhere\"",
            "\"\u{7f}\"",
            "\"é\"",
            "\"\\/\"",
            "{\"k\\u0065y\":1}",
            "{\"k\":1,\"k\":2}",
            "[\"a\\\\\",\"b\"]",
        ];
        for case in cases {
            agrees(case.as_bytes());
        }
        // Bytes that are not UTF-8, in and out of strings.
        for bytes in [
            &b"\"\xff\""[..],
            b"\"\xc3\"",
            b"\"\xc3\xa9\"",
            b"\"\\n\xff\"",
            b"\xef\xbb\xbf{}",
            b"{\"a\":1}\x00",
        ] {
            agrees(bytes);
        }
    }

    #[test]
    fn nesting_stops_where_serde_json_stops() {
        for depth in MAX_DEPTH - 3..MAX_DEPTH + 3 {
            let arrays = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            agrees(arrays.as_bytes());
            let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
            agrees(objects.as_bytes());
            let mixed = format!("{}{}", "[{\"a\":".repeat(depth / 2), "}]".repeat(depth / 2));
            agrees(mixed.as_bytes());
        }
    }

    /// The eight-byte test against the byte table.
    #[test]
    fn all_plain_sees_every_byte_that_stops_plain_text() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = [b'a'; 8];
                bytes[at] = b;
                let word = u64::from_le_bytes(bytes);
                assert_eq!(all_plain(word), PLAIN[usize::from(b)], "{b:#x} at {at}");
                bytes[(at + 3) % 8] = b'"';
                assert!(!all_plain(u64::from_le_bytes(bytes)), "{b:#x} and a quote");
            }
        }
    }

    proptest! {
        #[test]
        fn all_plain_agrees_with_the_byte_table(bytes in any::<[u8; 8]>()) {
            let want = bytes.iter().all(|&b| PLAIN[usize::from(b)]);
            prop_assert_eq!(all_plain(u64::from_le_bytes(bytes)), want);
        }
    }

    #[test]
    fn strings_are_borrowed_unless_an_escape_is_decoded() {
        let mut scan = Scanner::new(br#""plain" "es\"caped\u00e9""#);
        assert!(matches!(
            scan.kept(),
            Some(Kept::Str(Cow::Borrowed("plain")))
        ));
        scan.whitespace();
        assert_eq!(
            scan.kept(),
            Some(Kept::Str(Cow::Owned("es\"capedé".to_string())))
        );
        assert_eq!(scan.end(), Some(()));
        let mut scan = Scanner::new(br#"[1, {"a": 1.5}]"#);
        assert_eq!(
            scan.kept(),
            Some(Kept::Other(serde_json::json!([1, {"a": 1.5}])))
        );
    }

    /// JSON-like text: valid values, and near misses of each part.
    fn jsonish() -> impl Strategy<Value = String> {
        let atom = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("nul".to_string()),
            "-?(0|[1-9][0-9]{0,22})(\\.[0-9]{0,3})?([eE][+-]?[0-9]{0,4})?",
            "-?0[0-9]{1,2}",
            "\"[a-zA-Z0-9 :./\u{7f}é\u{1}\\\\\"]{0,40}\"?",
            "\"([a-z é\\t\u{1}]|\\\\[nt\"\\\\/bfrx]|\\\\u[0-9a-fA-F]{4}|\\\\u[dD][89abAB][0-9a-f]{2}|\\\\u[dD][c-f][0-9a-f]{2}|\\\\u[0-9a-f]{0,3}){0,6}\"?",
        ];
        atom.prop_recursive(4, 40, 6, |inner| {
            let sep = prop_oneof![Just(","), Just(", "), Just(" ,\n"), Just(""), Just(",,")];
            prop_oneof![
                (
                    proptest::collection::vec(inner.clone(), 0..5),
                    sep.clone(),
                    any::<bool>()
                )
                    .prop_map(|(items, sep, trailing)| {
                        let tail = if trailing { "," } else { "" };
                        format!("[{}{tail}]", items.join(sep))
                    }),
                (
                    proptest::collection::vec(("\"[a-z]{0,3}\"|[a-z]|1", inner), 0..5),
                    sep,
                    prop_oneof![Just(":"), Just(" : "), Just("")],
                )
                    .prop_map(|(members, sep, colon)| {
                        let body: Vec<String> = members
                            .iter()
                            .map(|(k, v)| format!("{k}{colon}{v}"))
                            .collect();
                        format!("{{{}}}", body.join(sep))
                    }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn accepts_exactly_what_serde_json_accepts(
            text in jsonish(),
            lead in prop_oneof![Just(""), Just(" "), Just("\n\t")],
            tail in prop_oneof![Just(""), Just(" \r\n"), Just(" x"), Just("]")],
        ) {
            let text = format!("{lead}{text}{tail}");
            prop_assert_eq!(is_valid_json(text.as_bytes()), oracle(text.as_bytes()), "{}", text);
        }

        #[test]
        fn accepts_exactly_what_serde_json_accepts_on_any_bytes(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b'\\'),
                    Just(b':'), Just(b','), Just(b' '), Just(b'1'), Just(b'0'), Just(b'-'),
                    Just(b'e'), Just(b'.'), Just(b'u'), Just(b'n'), Just(b'a'), Just(0xc3u8),
                    Just(0xa9u8), Just(0xffu8), Just(0x01u8), any::<u8>(),
                ],
                0..40,
            ),
        ) {
            prop_assert_eq!(is_valid_json(&bytes), oracle(&bytes), "{:?}", String::from_utf8_lossy(&bytes));
        }
    }
}
