//! A finding's status, from which imports saw it.
//!
//! An *import* is what one reporter — a source and a role (`coderabbit`;
//! `verdict` from the reviewer; `verdict` from QA; `jg` review or test) —
//! said about one iteration of an issue. A finding is judged only by the
//! reporters that have reported it: an iteration in which none of them
//! looked (only QA ran, say) leaves it as it was, so a CodeRabbit finding
//! never reads as resolved because the pipeline's own reviewer did not
//! repeat it.
//!
//! With `latest` the latest iteration (any reporter), and a
//! finding's *judged* iterations those in which one of its reporters
//! imported:
//!
//! - **resolved**: absent from its last judged iteration;
//! - **new**: seen only in the latest iteration (first seen now);
//! - **reintroduced**: seen in its last judged iteration, absent from the
//!   judged iteration before that, and seen before that (it came back);
//! - **open**: seen in its last judged iteration and otherwise (seen in the
//!   one before too; or first seen in an earlier iteration that none of its
//!   reporters has looked at again since);
//! - **dismissed**: someone said why it will not be fixed
//!   (`jkz findings dismiss`); whatever comes later, it stays dismissed.
//!
//! As of iteration K (`--iteration K`, the observer's history), the same
//! rule over the imports of iterations up to K.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

/// Where a finding stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    New,
    Open,
    Reintroduced,
    Resolved,
    Dismissed,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::New,
        Status::Open,
        Status::Reintroduced,
        Status::Resolved,
        Status::Dismissed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::Open => "open",
            Status::Reintroduced => "reintroduced",
            Status::Resolved => "resolved",
            Status::Dismissed => "dismissed",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.name() == s)
    }

    /// Still standing: what must survive a compaction.
    pub fn is_standing(self) -> bool {
        matches!(self, Status::New | Status::Open | Status::Reintroduced)
    }
}

/// One import: who reported, about which iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportRef {
    pub id: i64,
    pub iteration: u32,
    pub source: String,
    pub role: String,
}

/// What a finding's sightings make of it, as of an iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derived {
    pub status: Status,
    pub first_iteration: u32,
    /// The last iteration it was seen in.
    pub last_iteration: u32,
    /// The sources that reported it, sorted, each once.
    pub sources: Vec<String>,
    /// The import whose sighting is shown: the latest it was seen in
    /// (ties: the lowest import id).
    pub shown: i64,
}

/// The derived state of every finding seen by `as_of` (every iteration
/// when `None`), from the imports and its sightings
/// (finding id, import id). `dismissed` holds the dismissed findings.
pub fn derive(
    imports: &[ImportRef],
    sightings: &[(i64, i64)],
    dismissed: &dyn Fn(i64) -> bool,
    as_of: Option<u32>,
) -> HashMap<i64, Derived> {
    let within = |it: u32| as_of.is_none_or(|k| it <= k);
    let by_id: HashMap<i64, &ImportRef> = imports
        .iter()
        .filter(|i| within(i.iteration))
        .map(|i| (i.id, i))
        .collect();
    let Some(latest) = by_id.values().map(|i| i.iteration).max() else {
        return HashMap::new();
    };
    // The iterations each reporter imported.
    let mut judged_by: HashMap<(&str, &str), BTreeSet<u32>> = HashMap::new();
    for i in by_id.values() {
        judged_by
            .entry((i.source.as_str(), i.role.as_str()))
            .or_default()
            .insert(i.iteration);
    }
    // Each finding's sightings within the bound.
    let mut seen: HashMap<i64, Vec<&ImportRef>> = HashMap::new();
    for (finding, import) in sightings {
        if let Some(i) = by_id.get(import) {
            seen.entry(*finding).or_default().push(i);
        }
    }
    let mut out = HashMap::with_capacity(seen.len());
    for (finding, sights) in seen {
        let iterations: BTreeSet<u32> = sights.iter().map(|i| i.iteration).collect();
        let mut judged: BTreeSet<u32> = BTreeSet::new();
        for i in &sights {
            if let Some(its) = judged_by.get(&(i.source.as_str(), i.role.as_str())) {
                judged.extend(its);
            }
        }
        let first = *iterations.first().expect("seen at least once");
        let last_seen = *iterations.last().expect("seen at least once");
        let last_judged = *judged.last().expect("its own imports are judged");
        let status = if dismissed(finding) {
            Status::Dismissed
        } else if !iterations.contains(&last_judged) {
            Status::Resolved
        } else if iterations.len() == 1 {
            if first == latest {
                Status::New
            } else {
                Status::Open
            }
        } else {
            let before = judged.range(..last_judged).next_back().copied();
            match before {
                Some(b) if !iterations.contains(&b) => Status::Reintroduced,
                _ => Status::Open,
            }
        };
        let mut sources: Vec<String> = sights.iter().map(|i| i.source.clone()).collect();
        sources.sort();
        sources.dedup();
        let shown = sights
            .iter()
            .filter(|i| i.iteration == last_seen)
            .map(|i| i.id)
            .min()
            .expect("seen in its last iteration");
        out.insert(
            finding,
            Derived {
                status,
                first_iteration: first,
                last_iteration: last_seen,
                sources,
                shown,
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imp(id: i64, iteration: u32, source: &str) -> ImportRef {
        ImportRef {
            id,
            iteration,
            source: source.into(),
            role: String::new(),
        }
    }

    fn status(imports: &[ImportRef], seen_in: &[i64], as_of: Option<u32>) -> Option<Status> {
        let sightings: Vec<(i64, i64)> = seen_in.iter().map(|i| (7, *i)).collect();
        derive(imports, &sightings, &|_| false, as_of)
            .get(&7)
            .map(|d| d.status)
    }

    #[test]
    fn every_transition() {
        let cr: Vec<ImportRef> = (1..=5).map(|k| imp(k, k as u32, "coderabbit")).collect();
        assert_eq!(status(&cr, &[1], Some(1)), Some(Status::New));
        assert_eq!(status(&cr, &[1, 2], Some(2)), Some(Status::Open));
        assert_eq!(status(&cr, &[1, 2], Some(3)), Some(Status::Resolved));
        assert_eq!(status(&cr, &[1, 2, 4], Some(4)), Some(Status::Reintroduced));
        assert_eq!(status(&cr, &[1, 2, 4, 5], None), Some(Status::Open));
        assert_eq!(status(&cr, &[3], Some(2)), None, "not seen yet");
        let sightings = [(7, 1)];
        let d = derive(&cr, &sightings, &|id| id == 7, None);
        assert_eq!(d[&7].status, Status::Dismissed);
    }

    #[test]
    fn only_its_reporters_judge_a_finding() {
        // CodeRabbit saw it in 1; only the reviewer's verdict imported 2.
        let imports = [imp(1, 1, "coderabbit"), imp(2, 2, "verdict")];
        assert_eq!(status(&imports, &[1], None), Some(Status::Open));
        // Then CodeRabbit's review of 2 lacks it: resolved.
        let imports = [
            imp(1, 1, "coderabbit"),
            imp(2, 2, "verdict"),
            imp(3, 2, "coderabbit"),
        ];
        assert_eq!(status(&imports, &[1], None), Some(Status::Resolved));
        // Seen by both in 1; only the verdict repeats it in 2: open.
        let imports = [
            imp(1, 1, "coderabbit"),
            imp(2, 1, "verdict"),
            imp(3, 2, "verdict"),
            imp(4, 2, "coderabbit"),
        ];
        let sightings = [(7, 1), (7, 2), (7, 3)];
        let d = derive(&imports, &sightings, &|_| false, None);
        assert_eq!(d[&7].status, Status::Open);
        assert_eq!(d[&7].sources, vec!["coderabbit", "verdict"]);
        assert_eq!(d[&7].shown, 3);
    }
}
