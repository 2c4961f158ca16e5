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
    /// The bound as a number: a rate (0.8), a count, or seconds.
    pub target_value: f64,
    /// What was measured, in the bound's unit; `None` without data.
    pub measured_value: Option<f64>,
}

/// Judges every objective against `report` (measured over the objectives'
/// window).
pub fn judge(objectives: &Objectives, report: &Report) -> Vec<Judged> {
    let mut out = Vec::new();
    let percent = |r: f64| format!("{:.1}%", r * 100.0);
    if let Some(min) = objectives.completion_rate_min {
        out.push(judged(
            "slo.completion_rate_min",
            (format!("≥ {}", percent(min)), min),
            report.completion_rate.map(|r| (percent(r), r, r >= min)),
        ));
    }
    let count = |n: f64| format!("{n}");
    if let Some(max) = objectives.fix_iterations_p90_max {
        out.push(judged(
            "slo.fix_iterations_p90_max",
            (format!("≤ {}", count(max)), max),
            report.fix_iterations.p90.map(|p| (count(p), p, p <= max)),
        ));
    }
    if let Some(max) = objectives.plan_iterations_p90_max {
        out.push(judged(
            "slo.plan_iterations_p90_max",
            (format!("≤ {}", count(max)), max),
            report.plan_iterations.p90.map(|p| (count(p), p, p <= max)),
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
            (format!("≤ {text}"), max.as_secs_f64()),
            p90.map(|s| {
                let took = std::time::Duration::from_secs_f64(s.max(0.0));
                (format_span(took), s, took <= *max)
            }),
        ));
    }
    out
}

/// One objective: its key, its bound (for people, and as a number) and
/// what was measured (for people, as a number, and whether it meets the
/// bound), if anything was.
fn judged(
    key: &str,
    (target, target_value): (String, f64),
    measured: Option<(String, f64, bool)>,
) -> Judged {
    let (measured, measured_value, standing) = match measured {
        None => ("-".to_string(), None, Standing::NoData),
        Some((m, v, true)) => (m, Some(v), Standing::Met),
        Some((m, v, false)) => (m, Some(v), Standing::Violated),
    };
    Judged {
        key: key.to_string(),
        target,
        measured,
        standing,
        target_value,
        measured_value,
    }
}
