//! Where to cut a byte stream: UTF-8 safe, preferring line boundaries.
//!
//! Input is bytes, not `str`: tool output may hold invalid UTF-8, and that
//! must pass through without a panic. The rule is that a cut never splits a
//! *valid* UTF-8 sequence; inside invalid bytes any position is a boundary.
//! Whether a position splits a sequence is decided locally: a lead byte at
//! most three bytes back whose well-formed sequence reaches past the position.
//!
//! Line preference: a head cut takes the last line end at or before `max`,
//! a tail cut the first line start at or after `len - max`, but only when
//! that costs at most [`line_slack`]`(max)` bytes of the budget — a quarter
//! of it, never more than [`LINE_SLACK`]. Past that (one very long line) the
//! cut falls back to the nearest character boundary, so a 1 MiB JSON line
//! cannot eat a whole budget.
//!
//! Lookahead: every function here reads at most 3 bytes beyond the cut
//! position and at most 3 (char) or 1 (line) before it, plus the searched
//! span. Streaming callers rely on that to get the same answer from a window
//! as from the whole input.

use memchr::{memchr, memrchr};

/// The most a line boundary may cost before a cut falls back to a character
/// boundary (see [`line_slack`]).
pub const LINE_SLACK: usize = 4096;

/// How many bytes of a `max`-byte budget a cut may give up to land on a line
/// boundary: `min(max / 4, LINE_SLACK)`.
pub fn line_slack(max: usize) -> usize {
    (max / 4).min(LINE_SLACK)
}

/// Length of the UTF-8 sequence a lead byte announces (1 for ASCII and for
/// bytes that cannot lead a multi-byte sequence).
fn sequence_len(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The valid multi-byte sequence that strictly contains position `i`
/// (`start < i < start + len`), if any.
fn enclosing_sequence(bytes: &[u8], i: usize) -> Option<(usize, usize)> {
    if i == 0 || i >= bytes.len() || !is_continuation(bytes[i]) {
        return None;
    }
    for back in 1..=3 {
        let start = i.checked_sub(back)?;
        let b = bytes[start];
        if is_continuation(b) {
            continue;
        }
        let len = sequence_len(b);
        let whole = bytes.get(start..start + len)?;
        return (len > back && std::str::from_utf8(whole).is_ok()).then_some((start, len));
    }
    None
}

/// True when cutting before `bytes[i]` splits no valid UTF-8 sequence.
pub fn is_char_boundary(bytes: &[u8], i: usize) -> bool {
    enclosing_sequence(bytes, i).is_none()
}

/// The largest boundary `≤ i` (`i` clamped to the length).
pub fn floor_char_boundary(bytes: &[u8], i: usize) -> usize {
    let i = i.min(bytes.len());
    enclosing_sequence(bytes, i).map_or(i, |(start, _)| start)
}

/// The smallest boundary `≥ i` (`i` clamped to the length).
pub fn ceil_char_boundary(bytes: &[u8], i: usize) -> usize {
    let i = i.min(bytes.len());
    enclosing_sequence(bytes, i).map_or(i, |(start, len)| start + len)
}

/// How many leading bytes to keep so the head is at most `max` bytes: all of
/// `bytes` when it fits, else just after the last `\n` within `max` when
/// that costs at most [`line_slack`], else the character boundary at or
/// before `max`. Reads `bytes[..max + 3]` at most.
pub fn head_cut(bytes: &[u8], max: usize) -> usize {
    if bytes.len() <= max {
        return bytes.len();
    }
    if let Some(nl) = memrchr(b'\n', &bytes[..max]) {
        if max - (nl + 1) <= line_slack(max) {
            return nl + 1;
        }
    }
    floor_char_boundary(bytes, max)
}

/// Where the kept tail starts so it is at most `max` bytes: 0 when all of
/// `bytes` fits, else the first line start at or after `len - max` when that
/// costs at most [`line_slack`], else the character boundary at or after
/// `len - max`. Reads from `len - max - 3` on.
pub fn tail_cut(bytes: &[u8], max: usize) -> usize {
    let len = bytes.len();
    if len <= max {
        return 0;
    }
    let from = len - max; // ≥ 1
    if let Some(nl) = memchr(b'\n', &bytes[from - 1..]) {
        let line_start = from + nl;
        if line_start - from <= line_slack(max) {
            return line_start;
        }
    }
    ceil_char_boundary(bytes, from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The oracle: positions strictly inside a character of a valid run, as
    /// the standard library's decoder sees them.
    fn forbidden(bytes: &[u8]) -> Vec<bool> {
        let mut out = vec![false; bytes.len() + 1];
        let mut at = 0;
        for chunk in bytes.utf8_chunks() {
            for (i, c) in chunk.valid().char_indices() {
                for k in 1..c.len_utf8() {
                    out[at + i + k] = true;
                }
            }
            at += chunk.valid().len() + chunk.invalid().len();
        }
        out
    }

    fn naive_head(bytes: &[u8], max: usize) -> usize {
        if bytes.len() <= max {
            return bytes.len();
        }
        let bad = forbidden(bytes);
        let line = (0..=max)
            .rev()
            .find(|&j| j > 0 && bytes[j - 1] == b'\n')
            .filter(|&j| max - j <= line_slack(max));
        line.unwrap_or_else(|| (0..=max).rev().find(|&j| !bad[j]).unwrap())
    }

    fn naive_tail(bytes: &[u8], max: usize) -> usize {
        let len = bytes.len();
        if len <= max {
            return 0;
        }
        let from = len - max;
        let bad = forbidden(bytes);
        let line = (from..=len)
            .find(|&j| bytes[j - 1] == b'\n')
            .filter(|&j| j - from <= line_slack(max));
        line.unwrap_or_else(|| (from..=len).find(|&j| !bad[j]).unwrap())
    }

    /// Bytes that make cut points interesting: multi-byte characters, stray
    /// continuation bytes, truncated sequences, newlines.
    fn text() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"a".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just("é".as_bytes().to_vec()),
            Just("€".as_bytes().to_vec()),
            Just("𝄞".as_bytes().to_vec()),
            Just(vec![0x80]),
            Just(vec![0xE2, 0x82]),
            Just(vec![0xF0, 0x9D]),
            Just(vec![0xFF]),
            Just(vec![0xED, 0xA0, 0x80]), // a surrogate: invalid
            Just(vec![0xC0, 0xAF]),       // overlong: invalid
        ];
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn boundaries_match_the_decoder(bytes in text()) {
            let bad = forbidden(&bytes);
            for i in 0..=bytes.len() {
                prop_assert_eq!(is_char_boundary(&bytes, i), !bad[i], "at {}", i);
                let f = floor_char_boundary(&bytes, i);
                prop_assert_eq!(f, (0..=i).rev().find(|&j| !bad[j]).unwrap());
                let c = ceil_char_boundary(&bytes, i);
                prop_assert_eq!(c, (i..=bytes.len()).find(|&j| !bad[j]).unwrap());
            }
        }

        #[test]
        fn cuts_match_the_oracle(bytes in text(), max in 0usize..60) {
            let h = head_cut(&bytes, max);
            prop_assert_eq!(h, naive_head(&bytes, max));
            prop_assert!(h <= max || h == bytes.len() && bytes.len() <= max);
            let t = tail_cut(&bytes, max);
            prop_assert_eq!(t, naive_tail(&bytes, max));
            prop_assert!(bytes.len() - t <= max);
        }

        #[test]
        fn cuts_read_only_their_documented_window(bytes in text(), extra in text(), max in 0usize..60) {
            // A head cut looks at no more than max + 3 bytes.
            let mut longer = bytes.clone();
            longer.extend_from_slice(&extra);
            if bytes.len() > max + 3 {
                prop_assert_eq!(head_cut(&bytes[..max + 3], max), head_cut(&longer, max));
            }
            // A tail cut looks at no more than max + 3 trailing bytes.
            let mut earlier = extra.clone();
            earlier.extend_from_slice(&bytes);
            if bytes.len() > max + 3 {
                let window = &bytes[bytes.len() - max - 3..];
                let skipped = bytes.len() - window.len();
                prop_assert_eq!(
                    tail_cut(window, max) + skipped + extra.len(),
                    tail_cut(&earlier, max)
                );
            }
        }
    }

    #[test]
    fn prefers_lines_within_the_slack() {
        let text = b"aaaa\nbbbbbbbbbbbbbbbbbbbb\ncc";
        // max 24: last newline at 4 would give up 19 > 24/4 bytes.
        assert_eq!(head_cut(text, 24), 24);
        // max 26: the newline at 25 costs nothing.
        assert_eq!(head_cut(text, 26), 26);
        assert_eq!(
            tail_cut(b"aaaa\nbbbbbbbbbbbbbbbbbbbb\ncccccccccccc", 14),
            26
        );
        assert_eq!(tail_cut(text, 4), 24);
        assert_eq!(tail_cut(b"x\xE2\x82\xACyz", 4), 4);
    }
}

/// Which end of a text a cut keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    Head,
    Tail,
}

/// The one way jkz cuts a `str`: at most `max` bytes of `s`, its start
/// ([`Keep::Head`]) or its end ([`Keep::Tail`]), never splitting a
/// character (slicing a `str` inside one panics). Callers that count
/// characters or UTF-16 units find their byte position and cut here.
pub fn cut_str(s: &str, max: usize, keep: Keep) -> &str {
    if s.len() <= max {
        return s;
    }
    // For valid UTF-8 these are exactly `str`'s char boundaries (the
    // boundary tests above hold them to the decoder).
    match keep {
        Keep::Head => &s[..floor_char_boundary(s.as_bytes(), max)],
        Keep::Tail => &s[ceil_char_boundary(s.as_bytes(), s.len() - max)..],
    }
}

#[cfg(test)]
mod str_tests {
    use super::*;
    use proptest::prelude::*;

    /// The oracle: the longest run of whole characters from that end whose
    /// bytes fit.
    fn naive(s: &str, max: usize, keep: Keep) -> String {
        let mut chars: Vec<char> = s.chars().collect();
        if keep == Keep::Tail {
            chars.reverse();
        }
        let mut used = 0;
        let mut kept: Vec<char> = chars
            .into_iter()
            .take_while(|c| {
                used += c.len_utf8();
                used <= max
            })
            .collect();
        if keep == Keep::Tail {
            kept.reverse();
        }
        kept.into_iter().collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn cut_str_keeps_whole_characters_from_either_end(
            s in "[a€é😀\n]{0,40}|\\PC{0,40}",
            max in 0usize..100,
        ) {
            for keep in [Keep::Head, Keep::Tail] {
                let got = cut_str(&s, max, keep);
                let want = naive(&s, max, keep);
                prop_assert_eq!(got, want.as_str());
                prop_assert!(got.len() <= max);
                match keep {
                    Keep::Head => prop_assert!(s.starts_with(got)),
                    Keep::Tail => prop_assert!(s.ends_with(got)),
                }
            }
        }
    }

    /// `"a€€€€€"` cut at 12 bytes used to panic in `jkz-session load`.
    #[test]
    fn a_cut_inside_a_character_backs_off_to_its_start() {
        assert_eq!(cut_str("a€€€€€", 12, Keep::Head), "a€€€");
        assert_eq!(cut_str("a€€€€€", 12, Keep::Tail), "€€€€");
        assert_eq!(cut_str("😀", 3, Keep::Head), "");
    }
}
