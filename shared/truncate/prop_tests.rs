//! The streaming truncator against a naive in-memory oracle.
//!
//! The oracle holds the whole input, takes the blocks from one scan of it,
//! chooses with a byte-mask greedy (no interval arithmetic), cuts with
//! [`crate::cut`] on the whole input, and assembles by walking a coverage
//! mask. The streaming side reads through a reader that returns random chunk
//! sizes down to 1 byte, with tiny line pieces and tail chunks (and so batches) so
//! the window's eviction and the pool's pruning are reached by small inputs.

use std::cmp::Reverse;
use std::io::{self, Read};

use proptest::prelude::*;

use super::*;
use crate::blocks::{BlockScanner, Event};

const MAX_LINE: usize = 16;

/// Precedence-ordered greedy over a mask: (chosen, used).
fn naive_select(spans: &[Span], cap: u64, marker: u64, len: usize) -> (Vec<bool>, u64) {
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by_key(|&i| {
        (
            spans[i].kind,
            Reverse(spans[i].start),
            Reverse(spans[i].end),
        )
    });
    let mut mask = vec![false; len];
    let mut chosen = vec![false; spans.len()];
    let mut used = marker;
    for i in order {
        let range = spans[i].start as usize..spans[i].end as usize;
        let new = mask[range.clone()].iter().filter(|&&m| !m).count() as u64;
        if new == 0 || used + new + marker <= cap {
            chosen[i] = true;
            if new > 0 {
                used += new + marker;
                mask[range].iter_mut().for_each(|m| *m = true);
            }
        }
    }
    (chosen, used)
}

/// Blocks in the order the scanner reports them.
fn arrivals(input: &[u8]) -> Vec<Span> {
    let mut scanner = BlockScanner::with_max_line(MAX_LINE);
    let mut events = Vec::new();
    scanner.scan(input, &mut events);
    scanner.finish(&mut events);
    events
        .into_iter()
        .filter_map(|e| match e {
            Event::Block(b) => Some(Span {
                kind: b.kind,
                start: b.start,
                end: b.end,
            }),
            Event::Heading { .. } => None,
        })
        .collect()
}

/// The pool's rule, spelled out: keep blocks up to the cap long; when the
/// kept bytes pass the threshold, keep only what the greedy would choose.
fn naive_pool(input: &[u8], cap: u64) -> Vec<Span> {
    let mut pool: Vec<Span> = Vec::new();
    let mut bytes = 0;
    let mut prune_at = 2 * cap;
    for span in arrivals(input) {
        if span.end - span.start > cap {
            continue;
        }
        pool.push(span);
        bytes += span.end - span.start;
        if bytes > prune_at {
            let (keep, _) = naive_select(&pool, cap, marker_floor(), input.len());
            pool = pool
                .into_iter()
                .zip(keep)
                .filter(|p| p.1)
                .map(|p| p.0)
                .collect();
            bytes = pool.iter().map(|s| s.end - s.start).sum();
            prune_at = bytes + 2 * cap;
        }
    }
    pool
}

struct Oracle {
    output: Vec<u8>,
    /// Chosen blocks' bytes.
    chosen: Vec<Vec<u8>>,
    /// Head and tail byte counts, when truncated with markers.
    cuts: Option<(usize, usize)>,
}

fn oracle(input: &[u8], cap: u64, share: f64) -> Oracle {
    let n = input.len();
    if cap == 0 || n as u64 <= cap {
        return Oracle {
            output: input.to_vec(),
            chosen: Vec::new(),
            cuts: None,
        };
    }
    let marker = marker_line(n as u64, n as u64, None, Some(b'x')).len() as u64;
    if marker > cap {
        return Oracle {
            output: input[..cut::head_cut(input, cap as usize)].to_vec(),
            chosen: Vec::new(),
            cuts: None,
        };
    }
    let pool = naive_pool(input, cap);
    let (chosen, used) = naive_select(&pool, cap, marker, n);
    let rest = cap - used;
    let head_budget = ((rest as f64 * share).floor() as u64).min(rest);
    let tail_budget = rest - head_budget;
    let h = cut::head_cut(input, head_budget as usize);
    let t = cut::tail_cut(input, tail_budget as usize);
    let mut keep = vec![false; n];
    keep[..h].iter_mut().for_each(|k| *k = true);
    keep[t..].iter_mut().for_each(|k| *k = true);
    let mut chosen_bytes = Vec::new();
    for (s, c) in pool.iter().zip(&chosen) {
        if *c {
            let r = s.start as usize..s.end as usize;
            keep[r.clone()].iter_mut().for_each(|k| *k = true);
            chosen_bytes.push(input[r].to_vec());
        }
    }
    let mut output = Vec::new();
    let mut i = 0;
    while i < n {
        let j = (i..n).find(|&j| keep[j] != keep[i]).unwrap_or(n);
        if keep[i] {
            output.extend_from_slice(&input[i..j]);
        } else {
            let lines = input[i..j].iter().filter(|&&b| b == b'\n').count() as u64;
            let line = marker_line((j - i) as u64, lines, None, output.last().copied());
            output.extend_from_slice(line.as_bytes());
        }
        i = j;
    }
    Oracle {
        output,
        chosen: chosen_bytes,
        cuts: Some((h, n - t)),
    }
}

/// A reader returning the given chunk sizes in turn (sizes ≥ 1).
struct Chunked<'a> {
    data: &'a [u8],
    sizes: Vec<usize>,
    next: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let want = self.sizes[self.next % self.sizes.len()];
        self.next += 1;
        let n = want.min(out.len()).min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn streaming(input: &[u8], cap: u64, share: f64, sizes: Vec<usize>, tuning: Tuning) -> Vec<u8> {
    let settings = Settings {
        cap,
        head_share: share,
        full_output: None,
    };
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let reader = Chunked {
        data: input,
        sizes,
        next: 0,
    };
    truncate_with(reader, &mut out, &settings, "test", &mut warnings, tuning).unwrap();
    assert!(warnings.is_empty());
    out
}

fn piece() -> impl Strategy<Value = &'static [u8]> {
    prop::sample::select(vec![
        &b"plain log line\n"[..],
        b"x\r\n",
        "caf\u{e9} \u{20ac}\u{1d11e}\n".as_bytes(),
        "\u{1d11e}\u{1d11e}\u{1d11e}".as_bytes(),
        b"\xff\xfe\x80 bad\n",
        b"a long line without a break that runs past a piece boundary\n",
        b"no newline at all",
        b"\n",
        b"```verdict-json\n",
        b"{\"verdict\":\"FAIL\"}\n",
        b"```\n",
        b"~~~decisions\n",
        b"~~~\n",
        b"<!-- jkz:tldr started\n",
        b"-->\n",
        b"<!-- jkz:verdict-json {\"v\":1} -->\n",
        b"<!-- jkz:propose-issue: Title | body -->\n",
        b"<compact-plan>\n",
        b"</compact-plan>\n",
        b"<tldr>short</tldr>\n",
        b"## TL;DR\n",
        b"# Heading\n",
        b"### Decisions\r\n",
        b"## Verdict: PASS\n",
    ])
}

fn document() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(piece(), 0..60).prop_map(|v| v.concat())
}

fn tuning() -> impl Strategy<Value = Tuning> {
    (MAX_LINE..4 * MAX_LINE).prop_map(|chunk| Tuning {
        chunk,
        max_line: MAX_LINE,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn streaming_matches_the_oracle(
        input in document(),
        cap in 0u64..500,
        share in prop::sample::select(vec![0.0, 0.2, 0.5, 0.7, 1.0, 0.333]),
        sizes in prop::collection::vec(1usize..24, 1..8),
        tuning in tuning(),
    ) {
        let got = streaming(&input, cap, share, sizes, tuning);
        let want = oracle(&input, cap, share);
        prop_assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want.output)
        );
        prop_assert_eq!(&got, &want.output);

        if cap == 0 || input.len() as u64 <= cap {
            prop_assert_eq!(&got, &input);
            return Ok(());
        }
        prop_assert!(got.len() as u64 <= cap, "{} > cap {}", got.len(), cap);
        prop_assert!(input.starts_with(&got[..got.len().min(want.cuts.map_or(got.len(), |c| c.0))]));
        let Some((h, t)) = want.cuts else {
            prop_assert!(input.starts_with(&got));
            return Ok(());
        };
        // Head is a prefix, tail a suffix of the input.
        prop_assert_eq!(&got[..h], &input[..h]);
        prop_assert_eq!(&got[got.len() - t..], &input[input.len() - t..]);
        // Every chosen block appears verbatim.
        for block in &want.chosen {
            prop_assert!(memchr::memmem::find(&got, block).is_some());
        }
        // The block that comes first of all (highest kind, last occurrence)
        // appears whenever it fits beside two markers.
        let marker = marker_bound(input.len() as u64, None);
        let spans = arrivals(&input);
        if let Some(top) = spans.iter().min_by_key(|s| (s.kind, Reverse(s.start), Reverse(s.end))) {
            if top.end - top.start + 2 * marker <= cap {
                let bytes = &input[top.start as usize..top.end as usize];
                prop_assert!(memchr::memmem::find(&got, bytes).is_some(), "top block missing");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The full output is the input, byte for byte, whatever the chunk size
    /// and read sizes (chunks reach the writer as they leave the window and
    /// at the end), and nothing at all when the input fits.
    #[test]
    fn full_output_is_the_whole_input(
        input in prop::collection::vec(piece(), 0..120).prop_map(|v| v.concat()),
        cap in 1u64..300,
        sizes in prop::collection::vec(1usize..40, 1..8),
        tuning in tuning(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings {
            cap,
            head_share: 0.5,
            full_output: Some(StateDir::at(dir.path().join("state"))),
        };
        let reader = Chunked { data: &input, sizes, next: 0 };
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        let summary = truncate_with(reader, &mut out, &settings, "test", &mut warnings, tuning)
            .unwrap();
        prop_assert!(warnings.is_empty(), "{}", String::from_utf8_lossy(&warnings));
        let offload = dir.path().join("state").join(full_output::SUBDIR);
        if input.len() as u64 <= cap {
            prop_assert_eq!(summary.full_output, None);
            prop_assert!(!offload.exists());
            return Ok(());
        }
        let saved = summary.full_output.expect("saved");
        prop_assert_eq!(std::fs::read(&saved).unwrap(), input);
        prop_assert_eq!(std::fs::read_dir(&offload).unwrap().count(), 1, "no temp file left");
    }
}

#[test]
fn several_blocks_over_budget_keep_priority_and_the_newest() {
    let mut doc = Vec::new();
    doc.extend_from_slice(b"<!-- jkz:tldr old summary -->\n");
    doc.extend(std::iter::repeat_n(b'.', 300));
    doc.extend_from_slice(b"\n<!-- jkz:verdict-json {\"verdict\":\"FAIL\"} -->\n");
    doc.extend(std::iter::repeat_n(b'.', 300));
    doc.extend_from_slice(b"\n<!-- jkz:tldr new summary -->\n");
    doc.extend(std::iter::repeat_n(b'.', 300));
    doc.push(b'\n');
    let out = streaming(&doc, 230, 0.5, vec![7], Tuning::default());
    let text = String::from_utf8_lossy(&out);
    assert!(out.len() <= 230, "{text}");
    assert!(text.contains("verdict\":\"FAIL"), "{text}");
    assert!(text.contains("new summary"), "{text}");
    assert!(!text.contains("old summary"), "{text}");
}
