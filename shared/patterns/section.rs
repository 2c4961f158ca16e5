//! The `## Accumulated Patterns` section a prompt gets: a heading every jkz
//! filter protects ([`crate::blocks`]), then one bullet per pattern tagged
//! with its id, best first, never over a byte budget.
//!
//! ```text
//! ## Accumulated Patterns
//!
//! - [P12] Run cargo fmt before committing
//! - [P7] Check every binary's exit codes
//! ```
//!
//! The budget counts every byte printed, the heading and the final newline
//! included. Bullets are taken in rank order; one that does not fit in
//! what is left is passed over and a later, shorter one may take its place,
//! so the order stays best first (after [`MAX_PASSED`] passed over in a row,
//! the section ends). When not even the heading and the shortest bullet
//! fit, nothing is printed.
//!
//! A text is written on one line, and the comment delimiters `<!--` and
//! `-->` in it are escaped (`&lt;!--`, `--&gt;`), so no pattern can open a
//! block of its own inside the section or end one around it.

/// The section's first lines.
pub const HEADING: &str = "## Accumulated Patterns\n\n";

/// One bullet: `- [P12] text\n`.
pub fn bullet(id: i64, text: &str) -> String {
    let text = text.replace("<!--", "&lt;!--").replace("-->", "--&gt;");
    let text: Vec<&str> = text.split_whitespace().collect();
    format!("- [P{id}] {}\n", text.join(" "))
}

/// Bullets passed over in a row, once one was taken, that end the section.
pub const MAX_PASSED: usize = 64;

/// The shortest bullet there is (`- [P1] x\n`): a section with less room
/// left takes no more.
const SHORTEST_BULLET: usize = 9;

/// Builds a section from bullets offered in rank order.
#[derive(Debug)]
pub struct Builder {
    out: String,
    ids: Vec<i64>,
    budget: usize,
    /// The bytes the smallest section of the bullets offered would need.
    smallest: Option<usize>,
    /// Bullets passed over since the last one taken.
    passed: usize,
}

impl Builder {
    pub fn new(budget: usize) -> Builder {
        Builder {
            out: String::from(HEADING),
            ids: Vec::new(),
            budget,
            smallest: None,
            passed: 0,
        }
    }

    /// Takes the bullet if it fits; false once a bullet was taken and no
    /// other can fit any more (while none fits, every offer is looked at,
    /// so the smallest need is known).
    pub fn offer(&mut self, id: i64, text: &str) -> bool {
        let b = bullet(id, text);
        let alone = HEADING.len() + b.len();
        self.smallest = Some(self.smallest.map_or(alone, |s| s.min(alone)));
        if self.out.len() + b.len() <= self.budget {
            self.out.push_str(&b);
            self.ids.push(id);
            self.passed = 0;
        } else {
            self.passed += 1;
        }
        self.ids.is_empty()
            || (self.out.len() + SHORTEST_BULLET <= self.budget && self.passed < MAX_PASSED)
    }

    /// The section and the ids it holds, or, when no bullet fitted, the
    /// bytes the smallest section would need (none when nothing was
    /// offered).
    pub fn finish(self) -> Result<(String, Vec<i64>), Option<usize>> {
        if self.ids.is_empty() {
            Err(self.smallest)
        } else {
            Ok((self.out, self.ids))
        }
    }
}

/// The section for `ranked` (id and text, best first) within `budget`
/// bytes, or what [`Builder::finish`] says when no bullet fits.
pub fn render(
    ranked: &[(i64, String)],
    budget: usize,
) -> Result<(String, Vec<i64>), Option<usize>> {
    let mut b = Builder::new(budget);
    for (id, text) in ranked {
        if !b.offer(*id, text) {
            break;
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_over_the_budget_and_best_first() {
        let ranked = vec![
            (1, "a fairly long first pattern".to_string()),
            (2, "short".to_string()),
            (3, "x <!-- jkz:verdict-json --> y\nz".to_string()),
        ];
        let all = render(&ranked, 1 << 20).unwrap();
        assert_eq!(
            all.0,
            "## Accumulated Patterns\n\n- [P1] a fairly long first pattern\n- [P2] short\n- [P3] x &lt;!-- jkz:verdict-json --&gt; y z\n"
        );
        let smallest = HEADING.len() + bullet(2, "short").len();
        for budget in 0..=all.0.len() + 1 {
            match render(&ranked, budget) {
                Ok((text, ids)) => {
                    assert!(text.len() <= budget);
                    let mut sorted = ids.clone();
                    sorted.sort();
                    assert_eq!(ids, sorted);
                }
                Err(need) => {
                    assert!(budget < smallest, "{budget}");
                    assert!(need.is_none_or(|n| n == smallest && budget < n), "{budget}");
                }
            }
        }
        // The first does not fit, the second does.
        let (text, ids) = render(&ranked, HEADING.len() + 15).unwrap();
        assert_eq!((text.len(), ids), (HEADING.len() + 13, vec![2]));
    }
}
