//! Service-level objectives: what a project declares in `jkz.toml`
//! ([`config`]), judged against the metrics of its event log
//! ([`crate::metrics`]) by `jkz slo check` ([`cmd`]).
//!
//! An objective is met, violated, or has no data (nothing in the window to
//! measure it by: no issue completed or failed, no stay in the phase); an
//! objective without data is not violated.

pub mod cmd;
pub mod config;

use serde::Serialize;

use crate::metrics::Report;
use crate::time_span::format_span;
use config::Objectives;

/// How an objective stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    Met,
    Violated,
    NoData,
}

impl Standing {
    pub fn name(self) -> &'static str {
        match self {
            Standing::Met => "met",
            Standing::Violated => "violated",
            Standing::NoData => "no data",
        }
    }
}

/// One objective, judged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judged {
    /// Its key in `jkz.toml` (`slo.completion_rate_min`).
    pub key: String,
    /// The bound, for people (`≥ 80%`, `≤ 30m`).
    pub target: String,
    /// What was measured, for people; `-` without data.
    pub measured: String,
    pub standing: Standing,
}

/// Judges every objective against `report` (measured over the objectives'
/// window).
pub fn judge(objectives: &Objectives, report: &Report) -> Vec<Judged> {
    let mut out = Vec::new();
    let percent = |r: f64| format!("{:.1}%", r * 100.0);
    if let Some(min) = objectives.completion_rate_min {
        out.push(judged(
            "slo.completion_rate_min",
            format!("≥ {}", percent(min)),
            report.completion_rate.map(|r| (percent(r), r >= min)),
        ));
    }
    let count = |n: f64| format!("{n}");
    if let Some(max) = objectives.fix_iterations_p90_max {
        out.push(judged(
            "slo.fix_iterations_p90_max",
            format!("≤ {}", count(max)),
            report.fix_iterations.p90.map(|p| (count(p), p <= max)),
        ));
    }
    if let Some(max) = objectives.plan_iterations_p90_max {
        out.push(judged(
            "slo.plan_iterations_p90_max",
            format!("≤ {}", count(max)),
            report.plan_iterations.p90.map(|p| (count(p), p <= max)),
        ));
    }
    for (phase, max, text) in &objectives.phase_p90_max {
        let p90 = report
            .phases
            .iter()
            .find(|p| &p.phase == phase)
            .and_then(|p| p.seconds.p90);
        out.push(judged(
            &format!("slo.phase_p90_max.{phase}"),
            format!("≤ {text}"),
            p90.map(|s| {
                let took = std::time::Duration::from_secs_f64(s.max(0.0));
                (format_span(took), took <= *max)
            }),
        ));
    }
    out
}

fn judged(key: &str, target: String, measured: Option<(String, bool)>) -> Judged {
    let (measured, standing) = match measured {
        None => ("-".to_string(), Standing::NoData),
        Some((m, true)) => (m, Standing::Met),
        Some((m, false)) => (m, Standing::Violated),
    };
    Judged {
        key: key.to_string(),
        target,
        measured,
        standing,
    }
}
