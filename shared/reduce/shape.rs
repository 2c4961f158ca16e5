//! A line's shape: the line with its numbers and ids blanked out, so that
//! `GET /users/123 200 5ms` and `GET /users/124 200 3ms` are two lines of
//! one template; and a signal's kind: its shape with quoted names blanked
//! too, so `unused variable: `x`` and `unused variable: `y`` are one kind of
//! warning.

use std::hash::{Hash, Hasher};

/// A word (a run of ASCII letters, digits and `_`) that holds a digit is a
/// number or an id: it becomes `#`. Writes the shape of `line` into `out`
/// and says whether anything was blanked.
pub fn shape_into(line: &[u8], out: &mut Vec<u8>) -> bool {
    out.clear();
    let mut blanked = false;
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if !is_word(b) {
            out.push(b);
            i += 1;
            continue;
        }
        let start = i;
        let mut digit = false;
        while i < line.len() && is_word(line[i]) {
            digit |= line[i].is_ascii_digit();
            i += 1;
        }
        if digit {
            out.push(b'#');
            blanked = true;
        } else {
            out.extend_from_slice(&line[start..i]);
        }
    }
    blanked
}

/// `line` without its first word when that word is a location: a path
/// followed by `:LINE` or `(LINE`, ending in `:`.
pub fn without_location(line: &[u8]) -> &[u8] {
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    let rest = &line[start..];
    let end = rest.iter().position(|b| *b == b' ').unwrap_or(rest.len());
    let word = &rest[..end];
    let located = word.ends_with(b":")
        && word
            .windows(2)
            .any(|w| matches!(w[0], b':' | b'(') && w[1].is_ascii_digit());
    if located {
        &rest[end..]
    } else {
        line
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A signal's kind, as text: without a leading location (`src/a.ts(3,5):`,
/// `main.c:3:5:`), quoted parts (`` `…` ``, `'…'`, `"…"`, `‘…’`) emptied to
/// `…`, then shaped. So `a.ts(1,2): error TS2304: Cannot find name 'x'.` in
/// one file and another are one kind. Bounded: only the first 200 bytes
/// count.
pub fn kind_text(line: &[u8]) -> String {
    let line = &line[..line.len().min(200)];
    let line = without_location(line);
    let text = String::from_utf8_lossy(line);
    let mut unquoted = String::with_capacity(text.len());
    let mut close: Option<char> = None;
    for c in text.trim().chars() {
        match close {
            Some(end) if c == end => {
                unquoted.push('…');
                unquoted.push(c);
                close = None;
            }
            Some(_) => {}
            None => {
                unquoted.push(c);
                close = match c {
                    '`' => Some('`'),
                    '\'' => Some('\''),
                    '"' => Some('"'),
                    '‘' => Some('’'),
                    _ => None,
                };
            }
        }
    }
    let mut out = Vec::new();
    shape_into(unquoted.as_bytes(), &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// What a line names that its shape does not keep apart: the digests of
/// its quoted strings (`"GET /static/p24.html HTTP/1.1"`), of its words
/// that are paths (`/static/p24.html`), and of its words with digits that
/// are not a time, a date, an address or a process's and connection's
/// number (`request 200007`, not `02:10:07`, `[14181]`, `*189`,
/// `14297#14297:`, `12ms`). Two log lines of one shape are one template
/// unless one of them names something new.
pub fn identifiers(line: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let q = line[i];
        if matches!(q, b'"' | b'`') {
            if let Some(n) = line[i + 1..].iter().position(|&b| b == q) {
                out.push(digest(&line[i + 1..i + 1 + n]));
                i += n + 2;
                continue;
            }
        }
        i += 1;
    }
    for raw in line.split(|b| b.is_ascii_whitespace()) {
        let word = trim_punctuation(raw);
        let path = word.first() == Some(&b'/') && word.iter().any(u8::is_ascii_alphabetic);
        if path || (word.iter().any(u8::is_ascii_digit) && !volatile(raw, word)) {
            out.push(digest(word));
        }
    }
    out
}

/// A word with digits that changes from line to line of one message
/// without naming anything: a date, a time or an address (digits joined
/// by `-`, `/`, `:` or `.`), a bracketed one (`[14181]`,
/// `[28/Nov/2026:02:10:07`), a connection or thread number (`*189`,
/// `14297#14297:`), a duration (`12ms`, `0.5s`).
fn volatile(raw: &[u8], word: &[u8]) -> bool {
    if raw.first() == Some(&b'[') || raw.first() == Some(&b'*') || word.contains(&b'#') {
        return true;
    }
    let digits = word.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = &word[digits..];
    if digits > 0 && matches!(rest.first(), Some(b'-' | b'/' | b':' | b'.')) {
        return true;
    }
    let unit = rest.strip_prefix(b".").map_or(rest, |r| {
        let d = r.iter().take_while(|b| b.is_ascii_digit()).count();
        &r[d..]
    });
    digits > 0 && matches!(unit, b"ms" | b"s" | b"us" | b"ns" | b"m" | b"h")
}

fn trim_punctuation(word: &[u8]) -> &[u8] {
    let edge = |b: &u8| {
        matches!(
            b,
            b'"' | b'\'' | b'`' | b'(' | b')' | b'[' | b']' | b',' | b';' | b':'
        )
    };
    let start = word.iter().position(|b| !edge(b)).unwrap_or(word.len());
    let end = word.iter().rposition(|b| !edge(b)).map_or(start, |e| e + 1);
    &word[start..end.max(start)]
}

/// A 64-bit digest of some bytes, for the sets that remember lines.
pub fn digest(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(s: &str) -> (String, bool) {
        let mut out = Vec::new();
        let b = shape_into(s.as_bytes(), &mut out);
        (String::from_utf8(out).unwrap(), b)
    }

    #[test]
    fn numbers_and_ids_are_blanked_words_are_not() {
        assert_eq!(
            shape("GET /users/123 200 5ms id=a1b2c3"),
            ("GET /users/# # # id=#".into(), true)
        );
        assert_eq!(shape("no digits here"), ("no digits here".into(), false));
        assert_eq!(shape(""), ("".into(), false));
        assert_eq!(shape("é1 ü"), ("é# ü".into(), true));
    }

    #[test]
    fn identifiers_are_quoted_strings_paths_and_numbers_that_name_something() {
        let a =
            identifiers(br#"[28/Nov/2026:02:10:07] "GET /static/p23.html HTTP/1.1" 404 (/srv/x)"#);
        let b =
            identifiers(br#"[28/Nov/2026:02:10:08] "GET /static/p23.html HTTP/1.1" 404 (/srv/x)"#);
        let c =
            identifiers(br#"[28/Nov/2026:02:10:08] "GET /static/p24.html HTTP/1.1" 404 (/srv/x)"#);
        assert_eq!(a, b, "a time is no identifier");
        assert_ne!(a, c);
        assert_eq!(
            a.len(),
            5,
            "the quoted request, its path, its protocol, the status and /srv/x"
        );
        let nginx = |conn: &str, t: &str| {
            identifiers(format!("2026/11/28 02:10:{t} [error] 14297#14297: *{conn} connect() failed (111: Connection refused)").as_bytes())
        };
        assert_eq!(
            nginx("5", "07"),
            nginx("189", "09"),
            "dates, times, pids and connections change"
        );
        let request = |n: u32| {
            identifiers(
                format!("2025-03-04T12:00:00Z ERROR request {n} failed after 12ms").as_bytes(),
            )
        };
        assert_ne!(request(7), request(200_007), "a request's number names it");
        assert!(identifiers(b"no names here").is_empty());
    }

    #[test]
    fn a_kind_empties_quotes() {
        assert_eq!(
            kind_text(b"warning: unused variable: `x`"),
            kind_text(b"warning: unused variable: `long_name`")
        );
        assert_ne!(
            kind_text(b"warning: unused variable: `x`"),
            kind_text(b"warning: unused import: `x`")
        );
        assert_eq!(kind_text(b"error: 'a' at line 3"), "error: '…' at line #");
        assert_eq!(
            kind_text(b"src/a.ts(3,5): error TS2304: Cannot find name 'x'."),
            kind_text(b"tests/b.test.tsx(70,1): error TS2304: Cannot find name 'yy'."),
            "the location is no part of the kind"
        );
        assert_eq!(
            kind_text(b"main.c:3:5: warning: unused variable 'x'"),
            "warning: unused variable '…'"
        );
        assert_ne!(
            kind_text(b"error[E0308]: mismatched types"),
            "mismatched types",
            "a code is no location"
        );
        assert_eq!(kind_text(b"unterminated `quote"), "unterminated `");
    }
}
