//! Choosing what a prompt gets: the ranked, injectable patterns for a role
//! and an issue that reach that issue ([`super::reach`]) and that no
//! quarantine rule holds back ([`super::quarantine`]), each with where it
//! was seen, as one section within a budget; and the record of an
//! injection in the feedback log.

use chrono::{DateTime, Utc};

use super::log::Event;
use super::reach::{provenance, Reach, NAMED_ISSUES, NAMED_RECORDS, SHORTEST_PROVENANCE};
use super::relevance::{issue_context, relevance};
use super::score::{self, Ranked};
use super::section::Builder;
use super::store::{tag, Memory, Result};

/// The most patterns looked at for one section (a budget of a few KiB
/// holds far fewer).
pub const MAX_OFFERED: usize = 2000;

/// The default budget of a section, in bytes.
pub const DEFAULT_BUDGET: usize = 4096;

/// What is asked for.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub role: Option<&'a str>,
    pub issue: Option<u64>,
    pub budget: usize,
    pub now: DateTime<Utc>,
    pub half_life: std::time::Duration,
}

/// What a section request came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Injection {
    /// The section and the ids of its patterns, best first.
    Section { text: String, ids: Vec<i64> },
    /// No pattern is injectable.
    Nothing,
    /// No bullet fits in the budget: the smallest section needs this many
    /// bytes.
    TooSmall { needs: usize },
}

/// The patterns [`compose`] sorts first; the rest only when a section
/// wants more than these.
const SORTED_FIRST: usize = 512;

/// Every pattern with its score and rank for the request's role and
/// issue, in no order.
fn scored(memory: &Memory, req: &Request) -> Result<Vec<Ranked>> {
    let relevant = match req.issue {
        Some(n) => relevance(memory, &issue_context(&memory.state, n))?,
        None => Default::default(),
    };
    Ok(score::scored(
        memory.all_stats(req.role)?,
        req.now,
        req.half_life,
        &relevant,
    ))
}

/// Every pattern in rank order for the request's role and issue.
pub fn ranked(memory: &Memory, req: &Request) -> Result<Vec<Ranked>> {
    let mut all = scored(memory, req)?;
    all.sort_unstable_by(score::order);
    Ok(all)
}

/// The section for `req` (see [`super::section`]).
pub fn compose(memory: &Memory, req: &Request) -> Result<Injection> {
    memory.read(|memory| compose_in(memory, req))
}

fn compose_in(memory: &Memory, req: &Request) -> Result<Injection> {
    let mut candidates = scored(memory, req)?;
    candidates.retain(|r| {
        r.stats.injectable(r.score)
            && Reach::of(&r.stats).covers(req.issue)
            && (r.stats.approved || !r.stats.quarantined)
    });
    // Only the head needs an order, unless the section takes more.
    let head = candidates.len().min(SORTED_FIRST);
    if candidates.len() > head {
        candidates.select_nth_unstable_by(head - 1, score::order);
    }
    candidates[..head].sort_unstable_by(score::order);
    let mut builder = Builder::new(req.budget);
    let mut offered = 0;
    let mut sorted = head;
    let mut at = 0;
    while at < candidates.len() && offered < MAX_OFFERED {
        if at == sorted {
            candidates[sorted..].sort_unstable_by(score::order);
            sorted = candidates.len();
        }
        let r = &candidates[at];
        at += 1;
        let Some((id, text)) = memory.texts(&[r.stats.id])?.pop() else {
            continue;
        };
        offered += 1;
        let more = if builder.cannot_fit(id, SHORTEST_PROVENANCE.len(), &text) {
            builder.pass()
        } else {
            let seen = memory.seen_in(id, NAMED_ISSUES, NAMED_RECORDS)?;
            builder.offer(id, &provenance(&r.stats, &seen), &text)
        };
        if !more {
            break;
        }
    }
    Ok(match builder.finish() {
        Ok((text, ids)) => Injection::Section { text, ids },
        Err(None) => Injection::Nothing,
        Err(Some(needs)) => Injection::TooSmall { needs },
    })
}

/// Logs that `ids` went into a prompt for `issue` (an injection on no
/// issue is not logged: no verdict can ever judge it).
pub fn record(
    memory: &Memory,
    ids: &[i64],
    issue: Option<u64>,
    role: Option<&str>,
    record: Option<&str>,
    at: DateTime<Utc>,
) -> Result<()> {
    let Some(issue) = issue else {
        return Ok(());
    };
    memory.write(|m| {
        let mut patterns = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(r) = m.pattern_ref(id)? {
                patterns.push(r);
            }
        }
        let event = Event::Inject {
            at: at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            record: record.map(String::from),
            issue,
            role: role.map(String::from),
            patterns,
        };
        Ok(((), vec![event]))
    })
}

/// `P12, P7`.
pub fn tags(ids: &[i64]) -> Vec<String> {
    ids.iter().map(|&id| tag(id)).collect()
}
