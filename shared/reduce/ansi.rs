//! A line as the reducer classifies and shows it: without terminal colour
//! and cursor codes (CSI sequences, `ESC [ … letter`) and without the `\r`
//! of a CR LF line end. A compiler run with `--pretty` or a `git log
//! --color=always` then matches the same rules as a plain one, and the
//! model is not shown escape bytes it cannot use. The kept file has the
//! bytes as they came.

/// The bytes of `line` without its CSI sequences and a final `\r`: `line`
/// itself when it has neither, else `buf` filled with what is left.
pub fn clean<'a>(line: &'a [u8], buf: &'a mut Vec<u8>) -> &'a [u8] {
    let Some(first) = memchr::memchr(0x1b, line) else {
        return line.strip_suffix(b"\r").unwrap_or(line);
    };
    buf.clear();
    buf.extend_from_slice(&line[..first]);
    let mut i = first;
    while i < line.len() {
        if line[i] == 0x1b {
            if let Some(end) = csi_end(&line[i..]) {
                i += end;
                continue;
            }
        }
        buf.push(line[i]);
        i += 1;
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    buf
}

/// The length of the CSI sequence `s` starts with (`ESC [`, parameter
/// bytes 0x30–0x3F, intermediate bytes 0x20–0x2F, one final byte
/// 0x40–0x7E), if it is one.
fn csi_end(s: &[u8]) -> Option<usize> {
    if s.get(1) != Some(&b'[') {
        return None;
    }
    let mut i = 2;
    while i < s.len() && (0x30..=0x3f).contains(&s[i]) {
        i += 1;
    }
    while i < s.len() && (0x20..=0x2f).contains(&s[i]) {
        i += 1;
    }
    match s.get(i) {
        Some(b) if (0x40..=0x7e).contains(b) => Some(i + 1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cleaned(s: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        clean(s, &mut buf).to_vec()
    }

    #[test]
    fn colour_codes_and_a_final_cr_go_the_text_stays() {
        assert_eq!(
            cleaned(b"\x1b[96msrc/a.ts\x1b[0m:\x1b[93m5\x1b[0m - \x1b[91merror\x1b[0m TS1"),
            b"src/a.ts:5 - error TS1"
        );
        assert_eq!(cleaned(b"plain\r"), b"plain");
        assert_eq!(cleaned(b"a\rb"), b"a\rb", "only the line end's CR");
        assert_eq!(cleaned(b"\x1b[2K\x1b[1Gdone"), b"done");
        assert_eq!(
            cleaned(b"broken \x1b[12"),
            b"broken \x1b[12",
            "unterminated: kept"
        );
        assert_eq!(cleaned(b"\x1bx"), b"\x1bx", "not a CSI: kept");
        assert_eq!(cleaned(b""), b"");
    }

    /// The oracle: what the bench compares lines as (the pattern
    /// `\x1b\[[0-9;?]*[A-Za-z]` removed, then a final `\r`), by hand.
    fn naive(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0;
        'outer: while i < s.len() {
            if s[i] == 0x1b && s.get(i + 1) == Some(&b'[') {
                let mut j = i + 2;
                while j < s.len() && (s[j].is_ascii_digit() || s[j] == b';' || s[j] == b'?') {
                    j += 1;
                }
                if j < s.len() && s[j].is_ascii_alphabetic() {
                    i = j + 1;
                    continue 'outer;
                }
            }
            out.push(s[i]);
            i += 1;
        }
        if out.last() == Some(&b'\r') {
            out.pop();
        }
        out
    }

    proptest! {
        #[test]
        fn what_the_bench_calls_colour_is_removed(
            parts in prop::collection::vec(prop_oneof![
                "[a-z :]{0,6}".prop_map(String::into_bytes),
                "\x1b\\[[0-9;]{0,6}[mKGHJ]".prop_map(String::into_bytes),
                Just(b"\r".to_vec()),
            ], 0..12)
        ) {
            let line = parts.concat();
            prop_assert_eq!(cleaned(&line), naive(&line));
        }
    }
}
