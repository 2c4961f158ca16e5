//! The metrics over a window of time, read from `metrics.db`: what `jkz
//! metrics` prints, `/metrics` exposes and `jkz slo check` judges.
//!
//! Definitions (window = `[since, now]`):
//! - completion rate: issues whose current phase is an end (`done`,
//!   `merged` completed; `failed`, `abandoned` failed) reached within the
//!   window: completed / (completed + failed); none without any.
//! - fix and plan iterations: per issue active in the window (any event in
//!   it), its last `review_fix_count` + `qa_fix_count`, its last
//!   `plan_iterations`; p50 and p90 over those issues.
//! - phase durations: each stay in a phase that ended within the window;
//!   p50 and p90 per phase.
//! - agent runs: `agent.finished` within the window, per role: count,
//!   failures, duration p50 and p90, tokens where the wrapper reported them.
//! - compactions: `session.compacted` within the window; per issue, those
//!   of a chat while it held the issue's claim.
//!
//! Percentiles are nearest-rank: the smallest value with at least p of the
//! values at or below it.

use std::collections::BTreeMap;
use std::io;

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection};
use serde::Serialize;

use super::db::sql;
use super::db::MetricsDb;

/// p50 and p90 of a set of values, and how many there were.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub count: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub sum: f64,
}

impl Spread {
    pub fn of(mut values: Vec<f64>) -> Spread {
        values.sort_by(f64::total_cmp);
        Spread {
            count: values.len() as u64,
            p50: percentile(&values, 0.5),
            p90: percentile(&values, 0.9),
            sum: values.iter().sum::<f64>() + 0.0,
        }
    }
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil().max(1.0) as usize;
    Some(sorted[rank.min(sorted.len()) - 1])
}

/// Durations of one phase, in seconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseStat {
    pub phase: String,
    pub seconds: Spread,
}

/// Agent runs of one role.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoleStat {
    pub role: String,
    pub runs: u64,
    pub failed: u64,
    pub seconds: Spread,
    pub tokens_in: Option<i64>,
    pub tokens_out: Option<i64>,
}

/// Agent runs of one role, as they are counted.
#[derive(Default)]
struct RoleTally {
    runs: u64,
    failed: u64,
    seconds: Vec<f64>,
    tokens_in: Option<i64>,
    tokens_out: Option<i64>,
}

/// One issue's metrics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IssueStat {
    pub issue: String,
    pub phase: Option<String>,
    pub outcome: Option<String>,
    pub outcome_at: Option<String>,
    pub fix_iterations: Option<i64>,
    pub review_fix_count: Option<i64>,
    pub qa_fix_count: Option<i64>,
    pub plan_iterations: Option<i64>,
    pub compactions: u64,
    pub agent_runs: u64,
    /// Total seconds spent in each phase (stays that ended, and the
    /// current one up to now).
    pub phase_seconds: BTreeMap<String, f64>,
}

/// Completions and failures of one UTC day.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Day {
    pub day: String,
    pub completed: u64,
    pub failed: u64,
}

/// Everything over one window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub since: String,
    pub until: String,
    pub window_seconds: i64,
    pub completed: u64,
    pub failed: u64,
    pub completion_rate: Option<f64>,
    pub fix_iterations: Spread,
    pub plan_iterations: Spread,
    pub phases: Vec<PhaseStat>,
    pub roles: Vec<RoleStat>,
    pub compactions: u64,
    /// The issues active in the window.
    pub issues: Vec<IssueStat>,
    pub days: Vec<Day>,
    /// Every event in the log, by type (not only the window's).
    pub events: BTreeMap<String, u64>,
}

impl MetricsDb {
    /// The metrics over `[since, now]`, for every issue or one.
    pub fn report(
        &self,
        since: DateTime<Utc>,
        now: DateTime<Utc>,
        issue: Option<&str>,
    ) -> io::Result<Report> {
        let (from, to) = (since.timestamp_millis(), now.timestamp_millis());
        let c = &self.conn;
        let only = issue.unwrap_or("");
        let all = issue.is_none();
        // `?1`..`?4` of every query over the window: from, to, and the
        // issue filter.
        let window = params![from, to, all, only];

        let mut completed = 0;
        let mut failed = 0;
        let mut days: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        {
            let outcomes = text_and_number(
                c,
                "SELECT outcome, outcome_ms FROM issues WHERE outcome IS NOT NULL
                 AND outcome_ms BETWEEN ?1 AND ?2 AND (?3 OR issue = ?4)",
                window,
            )?;
            for (outcome, at) in outcomes {
                let day = DateTime::from_timestamp_millis(at)
                    .map(|t| t.format("%Y-%m-%d").to_string())
                    .unwrap_or_default();
                let entry = days.entry(day).or_default();
                if outcome == "completed" {
                    completed += 1;
                    entry.0 += 1;
                } else {
                    failed += 1;
                    entry.1 += 1;
                }
            }
        }
        let completion_rate =
            (completed + failed > 0).then(|| completed as f64 / (completed + failed) as f64);

        let compactions_of = |issue: &str| -> io::Result<u64> {
            c.prepare_cached(
                "SELECT count(DISTINCT k.id) FROM compactions k JOIN claims c ON c.session = k.session
                 WHERE c.issue = ?1 AND k.at_ms >= c.from_ms AND (c.to_ms IS NULL OR k.at_ms <= c.to_ms)
                 AND k.at_ms BETWEEN ?2 AND ?3",
            )
            .and_then(|mut s| s.query_row(params![issue, from, to], |r| r.get::<_, i64>(0)))
            .map(|n| n as u64)
            .map_err(sql)
        };

        let mut issues = Vec::new();
        {
            let mut stmt = c
                .prepare(
                    "SELECT issue, phase, outcome, outcome_ms, fix_iterations, review_fix_count, qa_fix_count,
                            plan_iterations
                     FROM issues WHERE last_ms >= ?1 AND first_ms <= ?2 AND (?3 OR issue = ?4)
                     ORDER BY length(issue), issue",
                )
                .map_err(sql)?;
            let mut rows = stmt.query(window).map_err(sql)?;
            while let Some(r) = rows.next().map_err(sql)? {
                let issue: String = r.get(0).map_err(sql)?;
                issues.push(IssueStat {
                    phase: r.get(1).map_err(sql)?,
                    outcome: r.get(2).map_err(sql)?,
                    outcome_at: r
                        .get::<_, Option<i64>>(3)
                        .map_err(sql)?
                        .and_then(DateTime::from_timestamp_millis)
                        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                    fix_iterations: r.get(4).map_err(sql)?,
                    review_fix_count: r.get(5).map_err(sql)?,
                    qa_fix_count: r.get(6).map_err(sql)?,
                    plan_iterations: r.get(7).map_err(sql)?,
                    compactions: 0,
                    agent_runs: 0,
                    phase_seconds: BTreeMap::new(),
                    issue,
                });
            }
        }
        let spread = |count: fn(&IssueStat) -> Option<i64>| {
            Spread::of(issues.iter().filter_map(count).map(|n| n as f64).collect())
        };
        let fix_iterations = spread(|i| i.fix_iterations);
        let plan_iterations = spread(|i| i.plan_iterations);

        // Per-issue details: only for one issue, or a bounded number.
        if issues.len() <= 20_000 {
            let runs = counts(text_and_number(
                c,
                "SELECT issue, count(*) FROM agent_runs WHERE issue IS NOT NULL AND at_ms BETWEEN ?1 AND ?2
                 AND (?3 OR issue = ?4) GROUP BY issue",
                window,
            )?);
            let per_issue_compactions = counts(text_and_number(
                c,
                "SELECT c.issue, count(DISTINCT k.id) FROM compactions k JOIN claims c ON c.session = k.session
                 WHERE k.at_ms >= c.from_ms AND (c.to_ms IS NULL OR k.at_ms <= c.to_ms)
                 AND k.at_ms BETWEEN ?1 AND ?2 AND (?3 OR c.issue = ?4) GROUP BY c.issue",
                window,
            )?);
            for stat in &mut issues {
                stat.agent_runs = runs.get(&stat.issue).copied().unwrap_or(0);
                stat.compactions = per_issue_compactions.get(&stat.issue).copied().unwrap_or(0);
            }
        }
        if let Some(one) = issue {
            if let Some(stat) = issues.iter_mut().find(|s| s.issue == one) {
                let mut stmt = c
                    .prepare("SELECT phase, entered_ms, left_ms FROM phase_visits WHERE issue = ?1")
                    .map_err(sql)?;
                let rows = stmt
                    .query_map([one], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, Option<i64>>(2)?,
                        ))
                    })
                    .map_err(sql)?;
                for row in rows {
                    let (phase, entered, left) = row.map_err(sql)?;
                    let secs = (left.unwrap_or(to) - entered).max(0) as f64 / 1000.0;
                    *stat.phase_seconds.entry(phase).or_default() += secs;
                }
            }
        }

        let mut phases: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        {
            let visits = text_and_number(
                c,
                "SELECT phase, left_ms - entered_ms FROM phase_visits
                 WHERE left_ms IS NOT NULL AND left_ms BETWEEN ?1 AND ?2 AND (?3 OR issue = ?4)",
                window,
            )?;
            for (phase, ms) in visits {
                phases
                    .entry(phase)
                    .or_default()
                    .push(ms.max(0) as f64 / 1000.0);
            }
        }
        let phases = phases
            .into_iter()
            .map(|(phase, v)| PhaseStat {
                phase,
                seconds: Spread::of(v),
            })
            .collect();

        let mut roles: BTreeMap<String, RoleTally> = BTreeMap::new();
        {
            let mut stmt = c
                .prepare(
                    "SELECT role, status, duration_ms, tokens_in, tokens_out FROM agent_runs
                     WHERE at_ms BETWEEN ?1 AND ?2 AND (?3 OR issue = ?4)",
                )
                .map_err(sql)?;
            let rows = stmt
                .query_map(window, |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, Option<i64>>(3)?,
                        r.get::<_, Option<i64>>(4)?,
                    ))
                })
                .map_err(sql)?;
            for row in rows {
                let (role, status, ms, tin, tout) = row.map_err(sql)?;
                let e = roles.entry(role).or_default();
                e.runs += 1;
                e.failed += u64::from(status != "ok");
                if let Some(ms) = ms {
                    e.seconds.push(ms.max(0) as f64 / 1000.0);
                }
                let add = |acc: &mut Option<i64>, v: Option<i64>| {
                    if let Some(v) = v {
                        *acc = Some(acc.unwrap_or(0).saturating_add(v));
                    }
                };
                add(&mut e.tokens_in, tin);
                add(&mut e.tokens_out, tout);
            }
        }
        let roles = roles
            .into_iter()
            .map(|(role, t)| RoleStat {
                role,
                runs: t.runs,
                failed: t.failed,
                seconds: Spread::of(t.seconds),
                tokens_in: t.tokens_in,
                tokens_out: t.tokens_out,
            })
            .collect();

        let compactions = match issue {
            Some(one) => compactions_of(one)?,
            None => c
                .query_row(
                    "SELECT count(*) FROM compactions WHERE at_ms BETWEEN ?1 AND ?2",
                    params![from, to],
                    |r| r.get::<_, i64>(0),
                )
                .map(|n| n as u64)
                .map_err(sql)?,
        };
        let events = counts(text_and_number(c, "SELECT type, n FROM event_counts", [])?);
        Ok(Report {
            since: since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            until: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            window_seconds: (to - from) / 1000,
            completed,
            failed,
            completion_rate,
            fix_iterations,
            plan_iterations,
            phases,
            roles,
            compactions,
            issues,
            days: days
                .into_iter()
                .map(|(day, (completed, failed))| Day {
                    day,
                    completed,
                    failed,
                })
                .collect(),
            events,
        })
    }
}

/// The rows of `query`, each a text and an integer.
fn text_and_number(
    c: &Connection,
    query: &str,
    params: impl rusqlite::Params,
) -> io::Result<Vec<(String, i64)>> {
    let mut stmt = c.prepare(query).map_err(sql)?;
    let rows = stmt
        .query_map(params, |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })
        .map_err(sql)?;
    rows.collect::<rusqlite::Result<_>>().map_err(sql)
}

/// Counts by name (SQLite counts them as integers).
fn counts(rows: Vec<(String, i64)>) -> BTreeMap<String, u64> {
    rows.into_iter().map(|(name, n)| (name, n as u64)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(5.0));
        assert_eq!(percentile(&v, 0.9), Some(9.0));
        assert_eq!(percentile(&[3.0], 0.9), Some(3.0));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[1.0, 2.0], 0.0), Some(1.0));
        let s = Spread::of(vec![4.0, 1.0, 3.0, 2.0]);
        assert_eq!(
            (s.count, s.p50, s.p90, s.sum),
            (4, Some(2.0), Some(4.0), 10.0)
        );
    }
}
