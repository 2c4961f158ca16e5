//! The verdict of an answer, for `jkz deliberations list`: the `verdict`
//! field of the last `verdict-json` block (one grammar: [`crate::blocks`]) in
//! what was printed. The printed text is the truncated output, where the
//! newest verdict is placed first, so the verdict survives truncation; with
//! no truncation (cap 0) only the last [`WINDOW`] bytes are looked at.

use std::collections::VecDeque;
use std::io::{self, Write};

use serde_json::{Map, Value};

use crate::blocks::{find_blocks, Kind};

/// How much of the printed text is kept to look for the verdict.
pub const WINDOW: usize = 1024 * 1024;

/// Passes output through, keeping its last [`WINDOW`] bytes.
pub struct OutputTail<W> {
    inner: W,
    tail: VecDeque<u8>,
}

impl<W: Write> OutputTail<W> {
    pub fn new(inner: W) -> OutputTail<W> {
        OutputTail {
            inner,
            tail: VecDeque::new(),
        }
    }

    /// The verdict in what was written, if any.
    pub fn verdict(&mut self) -> Option<String> {
        verdict(self.tail.make_contiguous())
    }

    /// The whole JSON object of that verdict (what `jkz run` imports
    /// findings from), if any.
    pub fn verdict_object(&mut self) -> Option<Map<String, Value>> {
        verdict_object(self.tail.make_contiguous())
    }
}

impl<W: Write> Write for OutputTail<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let kept = &buf[n.saturating_sub(WINDOW)..n];
        let overflow = (self.tail.len() + kept.len()).saturating_sub(WINDOW);
        self.tail.drain(..overflow);
        self.tail.extend(kept);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The `verdict` of the last `verdict-json` block of `text` whose JSON
/// carries one (a string, or any other JSON value as its text).
pub fn verdict(text: &[u8]) -> Option<String> {
    verdict_object(text).as_ref().map(verdict_of)
}

/// The JSON object of the block [`verdict`] reads.
pub fn verdict_object(text: &[u8]) -> Option<Map<String, Value>> {
    last_object(text, |map| map.contains_key("verdict"))
}

/// The `verdict` field of a verdict's object, as text.
pub fn verdict_of(object: &Map<String, Value>) -> String {
    match object.get("verdict") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// The first JSON object in the last `verdict-json` block of `text` that
/// has one for which `wanted` holds.
pub fn last_object(
    text: &[u8],
    wanted: impl Fn(&Map<String, Value>) -> bool,
) -> Option<Map<String, Value>> {
    find_blocks(text)
        .iter()
        .rev()
        .filter(|b| b.kind == Kind::VerdictJson)
        .find_map(|b| object_of(&text[b.start as usize..b.end as usize], &wanted))
}

fn object_of(
    block: &[u8],
    wanted: &impl Fn(&Map<String, Value>) -> bool,
) -> Option<Map<String, Value>> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'{', &block[from..]) {
        let at = from + i;
        let mut values = serde_json::Deserializer::from_slice(&block[at..]).into_iter::<Value>();
        if let Some(Ok(Value::Object(map))) = values.next() {
            if wanted(&map) {
                return Some(map);
            }
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_verdict_of_any_form() {
        let text = b"intro\n<!-- jkz:verdict-json {\"verdict\":\"FAIL\",\"n\":1} -->\nmore\n\
```verdict-json\n{\"verdict\": \"PASS\"}\n```\nend\n";
        assert_eq!(verdict(text).as_deref(), Some("PASS"));
        assert_eq!(verdict(b"no verdict here {\"verdict\":\"X\"}\n"), None);
        let mut out = OutputTail::new(Vec::new());
        out.write_all(b"<!-- jkz:verdict-json {\"verdict\":\"FAIL\"} -->\n")
            .unwrap();
        assert_eq!(out.verdict().as_deref(), Some("FAIL"));
    }
}
