//! The protected-block scanner on arbitrary bytes: it never panics, every
//! block is a run of whole lines inside the input, and reading the input
//! through `LineReader` in odd-sized chunks finds exactly the same blocks.
#![no_main]

use std::io::Read;

use jkz::blocks::{in_order, BlockScanner};
use jkz::lines::LineReader;
use libfuzzer_sys::fuzz_target;

struct Chunked<'a>(&'a [u8], usize);

impl Read for Chunked<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.len().min(self.1).min(out.len());
        out[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&knob, doc)) = data.split_first() else {
        return;
    };
    let max_line = 1 + (knob as usize % 64);
    let chunk = 1 + (knob as usize / 4);

    let mut whole = BlockScanner::with_max_line(max_line);
    let mut expected = Vec::new();
    whole.scan(doc, &mut expected);
    whole.finish(&mut expected);
    let expected = in_order(expected);

    let mut reader = LineReader::with_capacity(Chunked(doc, chunk), max_line * 2, max_line);
    let mut scanner = BlockScanner::with_max_line(max_line);
    let mut events = Vec::new();
    let mut seen = Vec::new();
    while let Some(batch) = reader.next_batch().expect("in-memory reads do not fail") {
        seen.extend_from_slice(batch);
        scanner.scan(batch, &mut events);
    }
    scanner.finish(&mut events);
    assert_eq!(seen, doc, "batches must concatenate to the input");
    assert_eq!(in_order(events), expected, "streaming must equal whole-input scanning");

    for b in &expected {
        let (s, e) = (b.start as usize, b.end as usize);
        assert!(s < e && e <= doc.len(), "block {b:?} outside input");
    }
});
