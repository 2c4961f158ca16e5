//! How good a pattern is: its score, and the order patterns are injected in.
//!
//! ```text
//! raw   = ln(1 + occurrences)                      evidence: records it was seen in
//!       + 1.0 × helpful − 2.0 × harmful            feedback
//!       − 0.1 × max(0, injected − 3 × helpful)     injections nothing vouched for
//! score = raw × 0.5^(age / half-life)   when raw > 0 (age: since it was last
//!                                       seen or last found helpful)
//!       = raw                           otherwise (harm does not wear off)
//! ```
//!
//! The half-life is 30 days unless `JKZ_PATTERN_HALF_LIFE_DAYS` says
//! otherwise. A pattern is injected when it is pinned, or not rejected and
//! its score is at least [`INJECT_THRESHOLD`]: one seen once drops out
//! after about 1.5 half-lives unless seen again; a pattern injected five
//! times with no helpful signal sinks below it, one found harmful once at
//! once. (Whether a prompt may get it at all is its reach and its
//! quarantine: [`super::reach`], [`super::quarantine`].) A pattern is dead
//! (`jkz patterns prune` removes it) when it is not pinned and rejected, or
//! its score is below [`DEAD_THRESHOLD`].
//!
//! Ranking for a role and an issue: pinned patterns first, then by
//! `score × (1 + 0.5 × role + 1.0 × relevance)`, where `role` is 1 when the
//! pattern was seen in an answer of that role, and `relevance` (0 to 1) is
//! the pattern's FTS5 bm25 match against the issue's context over the best
//! match's. Ties: more occurrences, then the earlier first seen, then the
//! id, so the same records and feedback always give the same order. Everything is computed from counts and times in a fixed order:
//! deterministic.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// The default half-life of a score.
pub const HALF_LIFE: Duration = Duration::from_secs(30 * 86_400);

/// The environment variable overriding [`HALF_LIFE`], in days.
pub const HALF_LIFE_VARIABLE: &str = "JKZ_PATTERN_HALF_LIFE_DAYS";

pub const HELPFUL_WEIGHT: f64 = 1.0;
pub const HARMFUL_WEIGHT: f64 = 2.0;
pub const UNHELPED_WEIGHT: f64 = 0.1;
/// Injections one helpful signal vouches for.
pub const INJECTIONS_PER_HELPFUL: i64 = 3;
pub const INJECT_THRESHOLD: f64 = 0.25;
pub const DEAD_THRESHOLD: f64 = 0.05;
pub const ROLE_BOOST: f64 = 0.5;
pub const ISSUE_BOOST: f64 = 1.0;

/// The half-life in effect: [`HALF_LIFE_VARIABLE`] (a positive number of
/// days), else [`HALF_LIFE`]; a bad value is a one-line warning.
pub fn half_life(program: &str) -> Duration {
    match std::env::var(HALF_LIFE_VARIABLE) {
        Err(_) => HALF_LIFE,
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(days) if days.is_finite() && days > 0.0 && days < 1e6 => {
                Duration::from_secs_f64(days * 86_400.0)
            }
            _ => {
                eprintln!(
                    "{program}: warning: {HALF_LIFE_VARIABLE}={v:?} is not a positive number of days; using 30"
                );
                HALF_LIFE
            }
        },
    }
}

/// What a score is computed from (a row of `patterns`, numbers only: a
/// ranking reads every row).
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub id: i64,
    pub occurrences: i64,
    pub helpful: i64,
    pub harmful: i64,
    pub injected: i64,
    /// Unix milliseconds.
    pub first_seen: i64,
    pub last_seen: i64,
    pub last_helpful: Option<i64>,
    /// Which issues' prompts it may go into.
    pub reach: super::reach::Reach,
    pub pinned: bool,
    pub rejected: bool,
    /// Seen in an answer of the role the ranking is for.
    pub role_match: bool,
    /// A person approved its text as it reads now.
    pub approved: bool,
    /// A quarantine rule holds its text back ([`super::quarantine`]).
    pub quarantined: bool,
}

impl Stats {
    /// The score at `now` (see the module docs).
    pub fn score(&self, now: DateTime<Utc>, half_life: Duration) -> f64 {
        let unhelped = (self.injected - INJECTIONS_PER_HELPFUL * self.helpful).max(0);
        let raw = (1.0 + self.occurrences.max(0) as f64).ln()
            + HELPFUL_WEIGHT * self.helpful as f64
            - HARMFUL_WEIGHT * self.harmful as f64
            - UNHELPED_WEIGHT * unhelped as f64;
        if raw <= 0.0 {
            return raw;
        }
        let last = self.last_seen.max(self.last_helpful.unwrap_or(i64::MIN));
        let age_ms = (now.timestamp_millis() - last).max(0) as f64;
        let half_ms = half_life.as_secs_f64() * 1000.0;
        raw * 0.5f64.powf(age_ms / half_ms)
    }

    pub fn injectable(&self, score: f64) -> bool {
        self.pinned || (!self.rejected && score >= INJECT_THRESHOLD)
    }

    pub fn dead(&self, score: f64) -> bool {
        !self.pinned && (self.rejected || score < DEAD_THRESHOLD)
    }
}

/// A pattern in rank order, with what placed it there.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    pub stats: Stats,
    pub score: f64,
    pub rank: f64,
}

/// `patterns` in rank order for their role match and `relevance`
/// (pattern id → 0..1; see the module docs).
pub fn rank(
    patterns: Vec<Stats>,
    now: DateTime<Utc>,
    half_life: Duration,
    relevance: &std::collections::HashMap<i64, f64>,
) -> Vec<Ranked> {
    let mut out = scored(patterns, now, half_life, relevance);
    // Unstable is enough: the id settles every tie.
    out.sort_unstable_by(order);
    out
}

/// `patterns` with their score and rank, in no order.
pub fn scored(
    patterns: Vec<Stats>,
    now: DateTime<Utc>,
    half_life: Duration,
    relevance: &std::collections::HashMap<i64, f64>,
) -> Vec<Ranked> {
    patterns
        .into_iter()
        .map(|stats| {
            let score = stats.score(now, half_life);
            let rel = relevance.get(&stats.id).copied().unwrap_or(0.0);
            let boost =
                1.0 + ROLE_BOOST * f64::from(u8::from(stats.role_match)) + ISSUE_BOOST * rel;
            // A negative score is not made better by a boost.
            let rank = if score > 0.0 { score * boost } else { score };
            Ranked { stats, score, rank }
        })
        .collect()
}

/// The rank order: pinned first, then by rank, then the ties (see the
/// module docs).
pub fn order(a: &Ranked, b: &Ranked) -> std::cmp::Ordering {
    b.stats
        .pinned
        .cmp(&a.stats.pinned)
        .then(b.rank.total_cmp(&a.rank))
        .then(b.stats.occurrences.cmp(&a.stats.occurrences))
        .then(a.stats.first_seen.cmp(&b.stats.first_seen))
        .then(a.stats.id.cmp(&b.stats.id))
}

/// Rounds a score for display (six decimals).
pub fn shown(score: f64) -> f64 {
    (score * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(id: i64, occurrences: i64) -> Stats {
        Stats {
            id,
            occurrences,
            helpful: 0,
            harmful: 0,
            injected: 0,
            first_seen: 0,
            last_seen: 0,
            last_helpful: None,
            reach: crate::patterns::reach::Reach::Issue(1),
            pinned: false,
            rejected: false,
            role_match: false,
            approved: false,
            quarantined: false,
        }
    }

    #[test]
    fn a_score_halves_every_half_life_and_harm_does_not_wear_off() {
        let t0 = DateTime::from_timestamp_millis(0).unwrap();
        let s = stats(1, 1);
        let fresh = s.score(t0, HALF_LIFE);
        assert!((fresh - 2f64.ln()).abs() < 1e-12);
        let later = t0 + chrono::Duration::days(30);
        assert!((s.score(later, HALF_LIFE) - fresh / 2.0).abs() < 1e-12);
        assert!(
            s.injectable(fresh)
                && !s.injectable(s.score(t0 + chrono::Duration::days(45), HALF_LIFE))
        );
        let harmed = Stats {
            harmful: 1,
            ..s.clone()
        };
        assert_eq!(harmed.score(later, HALF_LIFE), harmed.score(t0, HALF_LIFE));
        assert!(harmed.dead(harmed.score(t0, HALF_LIFE)));
        let unhelped = Stats { injected: 5, ..s };
        assert!(!unhelped.injectable(unhelped.score(t0, HALF_LIFE)));
    }

    #[test]
    fn pinned_first_then_rank_then_ties_by_first_seen_and_id() {
        let t0 = DateTime::from_timestamp_millis(0).unwrap();
        let mut pinned = stats(5, 1);
        pinned.pinned = true;
        let got: Vec<i64> = rank(
            vec![stats(3, 1), stats(2, 1), stats(4, 9), pinned],
            t0,
            HALF_LIFE,
            &Default::default(),
        )
        .iter()
        .map(|r| r.stats.id)
        .collect();
        assert_eq!(got, [5, 4, 2, 3]);
    }
}
