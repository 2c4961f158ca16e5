//! The metrics in Prometheus' text exposition format (version 0.0.4), for
//! `jkz metrics --format prometheus` and `/metrics` on `jkz ui`: every
//! family named `jkz_…` with its `# HELP` and `# TYPE`. Windowed values are
//! gauges (and summaries for durations); `jkz_events_total` counts every
//! event ever logged.
//!
//! The `jkz_tool_output_…_total` counters sum the savings ledger, both its
//! files, by family and path (`via`; `-` where a line does not say). Bytes
//! saved are the client's bytes minus the shown ones, and can be negative
//! (jkz added text), so they are no counter: a query subtracts the two
//! counters. Rotating the ledger drops its older file (every ~45,000
//! calls), which a scraper sees as a counter reset.

use std::fmt::Write;

use super::report::{Report, Spread};
use crate::tool_output::stats::ByFamilyAndVia;

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The exposition of `report` and of the ledger's sums (`ledger`).
pub fn exposition(report: &Report, ledger: &ByFamilyAndVia) -> String {
    let mut text = Text(String::new());
    text.family(
        "jkz_window_seconds",
        "gauge",
        "Length of the window the other jkz_ metrics cover.",
    );
    text.sample("jkz_window_seconds", &[], report.window_seconds as f64);
    text.family(
        "jkz_issues",
        "gauge",
        "Issues that reached an end phase within the window, by outcome.",
    );
    text.sample(
        "jkz_issues",
        &[("outcome", "completed")],
        report.completed as f64,
    );
    text.sample("jkz_issues", &[("outcome", "failed")], report.failed as f64);
    text.family(
        "jkz_completion_rate",
        "gauge",
        "Completed / (completed + failed) issues within the window; NaN without any.",
    );
    text.sample(
        "jkz_completion_rate",
        &[],
        report.completion_rate.unwrap_or(f64::NAN),
    );
    text.summary(
        "jkz_fix_iterations",
        "Fix iterations (review_fix_count + qa_fix_count) of the issues active in the window.",
        &[(vec![], &report.fix_iterations)],
    );
    text.summary(
        "jkz_plan_iterations",
        "Plan iterations of the issues active in the window.",
        &[(vec![], &report.plan_iterations)],
    );
    let phases: Vec<_> = report
        .phases
        .iter()
        .map(|p| (vec![("phase", p.phase.as_str())], &p.seconds))
        .collect();
    text.summary(
        "jkz_phase_duration_seconds",
        "Time spent in a phase, per stay that ended within the window.",
        &phases,
    );
    let roles: Vec<_> = report
        .roles
        .iter()
        .map(|r| (vec![("role", r.role.as_str())], &r.seconds))
        .collect();
    text.summary(
        "jkz_agent_duration_seconds",
        "Duration of agent invocations (jkz run) within the window, per role.",
        &roles,
    );
    text.family(
        "jkz_agent_invocations",
        "gauge",
        "Agent invocations within the window, per role and outcome.",
    );
    for r in &report.roles {
        text.sample(
            "jkz_agent_invocations",
            &[("role", &r.role), ("status", "ok")],
            (r.runs - r.failed) as f64,
        );
        text.sample(
            "jkz_agent_invocations",
            &[("role", &r.role), ("status", "failed")],
            r.failed as f64,
        );
    }
    text.family(
        "jkz_agent_tokens",
        "gauge",
        "Tokens the agents' wrappers reported within the window, per role.",
    );
    for r in &report.roles {
        if let Some(n) = r.tokens_in {
            text.sample(
                "jkz_agent_tokens",
                &[("role", &r.role), ("direction", "input")],
                n as f64,
            );
        }
        if let Some(n) = r.tokens_out {
            text.sample(
                "jkz_agent_tokens",
                &[("role", &r.role), ("direction", "output")],
                n as f64,
            );
        }
    }
    text.family(
        "jkz_compactions",
        "gauge",
        "Context compactions within the window.",
    );
    text.sample("jkz_compactions", &[], report.compactions as f64);
    text.family(
        "jkz_issue_fix_iterations",
        "gauge",
        "Fix iterations of each issue active in the window.",
    );
    for i in &report.issues {
        if let Some(n) = i.fix_iterations {
            text.sample("jkz_issue_fix_iterations", &[("issue", &i.issue)], n as f64);
        }
    }
    text.family(
        "jkz_issue_plan_iterations",
        "gauge",
        "Plan iterations of each issue active in the window.",
    );
    for i in &report.issues {
        if let Some(n) = i.plan_iterations {
            text.sample(
                "jkz_issue_plan_iterations",
                &[("issue", &i.issue)],
                n as f64,
            );
        }
    }
    text.family(
        "jkz_issue_compactions",
        "gauge",
        "Compactions of the chats holding each issue's claim, within the window.",
    );
    for i in &report.issues {
        text.sample(
            "jkz_issue_compactions",
            &[("issue", &i.issue)],
            i.compactions as f64,
        );
    }
    text.family("jkz_events_total", "counter", "Events in the log, by type.");
    for (kind, n) in &report.events {
        text.sample("jkz_events_total", &[("type", kind)], *n as f64);
    }
    tool_output(&mut text, ledger);
    text.0
}

/// The ledger's counters, each by family and path.
fn tool_output(text: &mut Text, ledger: &ByFamilyAndVia) {
    type Field = fn(&crate::tool_output::stats::Totals) -> u64;
    let counters: [(&str, &str, Field); 7] = [
        (
            "jkz_tool_output_calls_total",
            "Tool calls in the savings ledger, by the reduction engine's family and the path the output took (via); - where a line does not say.",
            |t| t.calls,
        ),
        (
            "jkz_tool_output_raw_bytes_total",
            "Bytes of the tools' whole output.",
            |t| t.full_bytes,
        ),
        (
            "jkz_tool_output_client_bytes_total",
            "Bytes the client alone would have put in the model's window, by its own rules (never the raw size). Saved = client - shown, negative where jkz added text: subtract jkz_tool_output_shown_bytes_total.",
            |t| t.client_bytes,
        ),
        (
            "jkz_tool_output_shown_bytes_total",
            "Bytes jkz put in the model's window.",
            |t| t.jkz_bytes,
        ),
        (
            "jkz_tool_output_repeats_total",
            "Calls whose output repeated an earlier call's and became a pointer to it.",
            |t| t.repeats,
        ),
        (
            "jkz_tool_output_signal_lines_total",
            "Distinct signal lines (errors, failures, summaries) in the output of the calls that report them.",
            |t| t.signals,
        ),
        (
            "jkz_tool_output_signal_lines_shown_total",
            "Of those signal lines, the ones jkz showed.",
            |t| t.signals_shown,
        ),
    ];
    for (name, help, field) in counters {
        text.family(name, "counter", help);
        for ((family, via), totals) in ledger {
            text.sample(
                name,
                &[("family", family), ("via", via)],
                field(totals) as f64,
            );
        }
    }
}

struct Text(String);

impl Text {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"{}\"", escape_label(v));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {}", number(value));
    }

    fn summary(&mut self, name: &str, help: &str, series: &[(Vec<(&str, &str)>, &Spread)]) {
        self.family(name, "summary", help);
        for (labels, spread) in series {
            for (q, v) in [("0.5", spread.p50), ("0.9", spread.p90)] {
                let mut with = labels.clone();
                with.push(("quantile", q));
                self.sample(name, &with, v.unwrap_or(f64::NAN));
            }
            self.sample(&format!("{name}_sum"), labels, spread.sum);
            self.sample(&format!("{name}_count"), labels, spread.count as f64);
        }
    }
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else {
        format!("{v}")
    }
}

/// A label value: backslash, double quote and newline escaped.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Help text: backslash and newline escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_report() -> Report {
        Report {
            since: String::new(),
            until: String::new(),
            window_seconds: 0,
            completed: 0,
            failed: 0,
            completion_rate: None,
            fix_iterations: Spread::default(),
            plan_iterations: Spread::default(),
            phases: Vec::new(),
            roles: Vec::new(),
            compactions: 0,
            issues: Vec::new(),
            days: Vec::new(),
            events: Default::default(),
        }
    }

    #[test]
    fn the_ledger_counts_by_family_and_path() {
        use crate::tool_output::stats::Totals;
        let mut ledger = ByFamilyAndVia::new();
        let totals = |calls, full, client, jkz| Totals {
            calls,
            full_bytes: full,
            client_bytes: client,
            jkz_bytes: jkz,
            signals: 7,
            signals_shown: 5,
            repeats: 1,
            ..Totals::default()
        };
        ledger.insert(("test".into(), "wrap".into()), totals(3, 90, 60, 30));
        ledger.insert(("-".into(), "-".into()), totals(1, 9, 2, 8));
        ledger.insert(("a\"b".into(), "-".into()), totals(1, 1, 1, 1));
        let text = exposition(&empty_report(), &ledger);
        for want in [
            "# TYPE jkz_tool_output_calls_total counter",
            "jkz_tool_output_calls_total{family=\"test\",via=\"wrap\"} 3",
            "jkz_tool_output_raw_bytes_total{family=\"test\",via=\"wrap\"} 90",
            "jkz_tool_output_client_bytes_total{family=\"test\",via=\"wrap\"} 60",
            "jkz_tool_output_shown_bytes_total{family=\"test\",via=\"wrap\"} 30",
            "jkz_tool_output_repeats_total{family=\"test\",via=\"wrap\"} 1",
            "jkz_tool_output_signal_lines_total{family=\"test\",via=\"wrap\"} 7",
            "jkz_tool_output_signal_lines_shown_total{family=\"test\",via=\"wrap\"} 5",
            // Where jkz added text, both sides stay as they are: no negative counter.
            "jkz_tool_output_client_bytes_total{family=\"-\",via=\"-\"} 2",
            "jkz_tool_output_shown_bytes_total{family=\"-\",via=\"-\"} 8",
            "jkz_tool_output_calls_total{family=\"a\\\"b\",via=\"-\"} 1",
        ] {
            assert!(text.lines().any(|l| l == want), "{want} in\n{text}");
        }
        assert!(!text.contains("saved_bytes_total"), "{text}");
        // Without a ledger: the families, no samples.
        let empty = exposition(&empty_report(), &ByFamilyAndVia::new());
        assert!(empty.contains("# HELP jkz_tool_output_shown_bytes_total "));
        assert!(!empty.contains("jkz_tool_output_calls_total{"));
    }

    #[test]
    fn escapes_and_numbers() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.25), "0.25");
    }
}
