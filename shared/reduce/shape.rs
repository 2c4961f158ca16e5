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

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A signal's kind, as text: quoted parts (`` `…` ``, `'…'`, `"…"`, `‘…’`)
/// emptied to `…`, then shaped. Bounded: only the first 200 bytes count.
pub fn kind_text(line: &[u8]) -> String {
    let line = &line[..line.len().min(200)];
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
        assert_eq!(kind_text(b"unterminated `quote"), "unterminated `");
    }
}
