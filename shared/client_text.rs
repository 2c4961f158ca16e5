//! Text measured as the client counts it: UTF-16 units, not bytes. Claude
//! Code caps what a hook prints by its JavaScript string length, so every
//! budget jkz fits text into (a compaction digest, a session's notes, a
//! findings list) is counted and cut here.

use crate::cut::{cut_str, Keep};

/// Length as the client counts it (JavaScript string length: UTF-16 units):
/// one per character, two for a character outside the BMP (4 bytes in
/// UTF-8). Counted from the bytes, eight at a time: a pipeline file can
/// hold a 10 MB failure log, and this is asked of it.
pub fn client_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    client_len_bytes(s.as_bytes())
}

/// [`client_len`] of UTF-8 bytes that may start or end inside a
/// character: each byte counts on its own, so the lengths of the pieces of
/// a stream add up to the length of the whole. (Invalid UTF-8 is counted
/// as if it were valid: approximately.)
pub fn client_len_bytes(bytes: &[u8]) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Continuation bytes (10xxxxxx) are no unit; 4-byte leads (11110xxx)
    // are two.
    let mut continuation = 0;
    let mut four_byte_leads = 0;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        continuation += (w & !(w << 1) & HIGH).count_ones() as usize;
        four_byte_leads += (w & (w << 1) & (w << 2) & (w << 3) & HIGH).count_ones() as usize;
    }
    for &b in words.remainder() {
        continuation += usize::from(b & 0xC0 == 0x80);
        four_byte_leads += usize::from(b >= 0xF0);
    }
    bytes.len() - continuation + four_byte_leads
}

/// The share of a cut text's budget its head keeps; the tail keeps the
/// rest. The end is favoured: a failure log ends with the error, a plan's
/// last steps are the ones still to do, and a decision's question closes it.
pub const HEAD_SHARE_THIRDS: usize = 1;

/// `s` when it has at most `max` client characters; else its first third
/// and its last two thirds of `max` around a note saying how much was cut
/// and where the whole is (`whole`). The note is not counted in `max`.
/// Every place a digest cuts text cuts here.
pub fn head_tail(s: &str, max: usize, whole: &str) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let len = client_len(s);
    if len <= max {
        return s.to_string();
    }
    let (head, tail) = split_head_tail(s, max);
    let cut = len - client_len(head) - client_len(tail);
    format!("{head} […{cut} of {len} characters cut here; {whole}] {tail}")
}

/// The head and the tail [`head_tail`] keeps of a text longer than `max`
/// client characters: the head a third of `max`, the tail the rest.
pub fn split_head_tail(s: &str, max: usize) -> (&str, &str) {
    let head = head_units(s, max * HEAD_SHARE_THIRDS / 3);
    let rest = cut_str(s, s.len() - head.len(), Keep::Tail);
    let tail = tail_units(rest, max - client_len(head));
    (head, tail)
}

/// The longest start of `s` of at most `max` client characters.
pub fn head_units(s: &str, max: usize) -> &str {
    cut_str(s, byte_len_of_units(s.chars(), max), Keep::Head)
}

/// The longest end of `s` of at most `max` client characters.
pub fn tail_units(s: &str, max: usize) -> &str {
    cut_str(s, byte_len_of_units(s.chars().rev(), max), Keep::Tail)
}

/// The bytes of the whole characters of `chars` that fit in `max` UTF-16
/// units, taken in order.
fn byte_len_of_units(chars: impl Iterator<Item = char>, max: usize) -> usize {
    let (mut units, mut bytes) = (0, 0);
    for c in chars {
        units += c.len_utf16();
        if units > max {
            break;
        }
        bytes += c.len_utf8();
    }
    bytes
}
