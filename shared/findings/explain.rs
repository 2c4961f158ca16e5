//! Near-misses: findings the identity rule kept apart although they look
//! alike, so that a person can see why two were not merged (and reword a
//! source, or dismiss the duplicate).
//!
//! Two kinds: in the same file, normalized messages sharing at least
//! [`SIMILAR`] of their words ([`identity::similarity`]); in different
//! files, the same normalized message (a file renamed or moved).

use std::collections::HashMap;

use super::identity;
use super::store::FindingRow;

/// The least share of words two messages in one file must have in common to
/// be shown as a near-miss.
pub const SIMILAR: f64 = 0.4;

/// The most findings of one file compared pairwise (the rest are not).
const MAX_PER_FILE: usize = 500;

/// Two findings kept apart.
#[derive(Clone, Debug, PartialEq)]
pub struct NearMiss {
    pub a: i64,
    pub b: i64,
    pub why: Why,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Why {
    /// Same file, messages this similar (0 to 1), not equal once normalized.
    SimilarMessage(f64),
    /// Same normalized message, different files.
    OtherFile,
}

impl NearMiss {
    /// One line saying why the two are apart.
    pub fn reason(&self, rows: &HashMap<i64, &FindingRow>) -> String {
        let (a, b) = (rows[&self.a], rows[&self.b]);
        match self.why {
            Why::SimilarMessage(s) => format!(
                "#{} and #{} in {}: {:.0}% of their words in common, but their normalized messages differ ({:?} vs {:?})",
                a.id,
                b.id,
                a.file,
                s * 100.0,
                a.identity,
                b.identity
            ),
            Why::OtherFile => format!(
                "#{} and #{}: the same message in {} and {} (the file is part of the identity)",
                a.id, b.id, a.file, b.file
            ),
        }
    }
}

/// The near-misses among `rows`, most similar first.
pub fn near_misses(rows: &[FindingRow]) -> Vec<NearMiss> {
    let mut out = Vec::new();
    let mut by_file: HashMap<&str, Vec<&FindingRow>> = HashMap::new();
    let mut by_identity: HashMap<&str, Vec<&FindingRow>> = HashMap::new();
    for r in rows {
        by_file.entry(&r.file).or_default().push(r);
        by_identity.entry(&r.identity).or_default().push(r);
    }
    for group in by_file.values() {
        let group = &group[..group.len().min(MAX_PER_FILE)];
        for (i, a) in group.iter().enumerate() {
            for b in &group[i + 1..] {
                let s = identity::similarity(&a.identity, &b.identity);
                if s >= SIMILAR {
                    out.push(NearMiss {
                        a: a.id.min(b.id),
                        b: a.id.max(b.id),
                        why: Why::SimilarMessage(s),
                    });
                }
            }
        }
    }
    for group in by_identity.values().filter(|g| g.len() > 1) {
        for (i, a) in group.iter().enumerate() {
            for b in &group[i + 1..] {
                out.push(NearMiss {
                    a: a.id.min(b.id),
                    b: a.id.max(b.id),
                    why: Why::OtherFile,
                });
            }
        }
    }
    let weight = |w: &Why| match w {
        Why::OtherFile => 2.0,
        Why::SimilarMessage(s) => *s,
    };
    out.sort_by(|x, y| {
        weight(&y.why)
            .total_cmp(&weight(&x.why))
            .then((x.a, x.b).cmp(&(y.a, y.b)))
    });
    out
}
