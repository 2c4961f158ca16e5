//! The service-level objectives a project declares in `jkz.toml` (at the
//! project root, committed; never runtime state):
//!
//! ```toml
//! [slo]
//! window = "7d"                  # what the objectives are measured over
//! completion_rate_min = 0.8      # completed / (completed + failed)
//! fix_iterations_p90_max = 3     # p90 of review_fix_count + qa_fix_count
//! plan_iterations_p90_max = 2    # p90 of plan_iterations
//! [slo.phase_p90_max]            # p90 time in a phase, per phase
//! building = "30m"
//! ```
//!
//! Without `jkz.toml`, or without its `[slo]` table, the defaults apply:
//! [`DEFAULT_WINDOW`], completion rate at least [`DEFAULT_COMPLETION_RATE_MIN`],
//! fix iterations p90 at most [`DEFAULT_FIX_ITERATIONS_P90_MAX`]. With an
//! `[slo]` table, exactly the objectives it names (the window defaults to
//! [`DEFAULT_WINDOW`]). Other tables of `jkz.toml` are other settings, not
//! read here; an unknown key inside `[slo]` is an error (a typo would
//! otherwise silently check nothing).

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

pub use crate::jkz_toml::{ConfigError, CONFIG_FILE};
use crate::time_span::parse_span;

pub const DEFAULT_WINDOW: &str = "7d";
pub const DEFAULT_COMPLETION_RATE_MIN: f64 = 0.8;
pub const DEFAULT_FIX_ITERATIONS_P90_MAX: f64 = 3.0;

/// The objectives to check.
#[derive(Clone, Debug, PartialEq)]
pub struct Objectives {
    /// Where they come from: the file, or `None` for the defaults.
    pub file: Option<PathBuf>,
    pub window: Duration,
    pub window_text: String,
    pub completion_rate_min: Option<f64>,
    pub fix_iterations_p90_max: Option<f64>,
    pub plan_iterations_p90_max: Option<f64>,
    /// Phase, its bound, the bound as written.
    pub phase_p90_max: Vec<(String, Duration, String)>,
}

impl Objectives {
    /// The defaults (no `jkz.toml`, or no `[slo]` in it).
    pub fn defaults(file: Option<PathBuf>) -> Objectives {
        Objectives {
            file,
            window: parse_span(DEFAULT_WINDOW).expect("the default window parses"),
            window_text: DEFAULT_WINDOW.into(),
            completion_rate_min: Some(DEFAULT_COMPLETION_RATE_MIN),
            fix_iterations_p90_max: Some(DEFAULT_FIX_ITERATIONS_P90_MAX),
            plan_iterations_p90_max: None,
            phase_p90_max: Vec::new(),
        }
    }
}

/// Reads the objectives of the project at `root`.
pub fn load(root: &Path) -> Result<Objectives, ConfigError> {
    let file = root.join(CONFIG_FILE);
    let error = |key: Option<&str>, why: String| ConfigError {
        file: file.clone(),
        key: key.map(str::to_string),
        why,
    };
    let Some(table) = crate::jkz_toml::read(&file)? else {
        return Ok(Objectives::defaults(None));
    };
    parse(&table, file.clone()).map_err(|(key, why)| error(Some(&key), why))
}

/// The objectives of a parsed `jkz.toml`: `Err((key, why))`.
pub fn parse(table: &Table, file: PathBuf) -> Result<Objectives, (String, String)> {
    let Some(slo) = table.get("slo") else {
        return Ok(Objectives::defaults(Some(file)));
    };
    let Value::Table(slo) = slo else {
        return Err((
            "slo".into(),
            format!("expected a table ([slo]), found {}", slo.type_str()),
        ));
    };
    let mut o = Objectives {
        completion_rate_min: None,
        fix_iterations_p90_max: None,
        ..Objectives::defaults(Some(file))
    };
    for (key, value) in slo {
        let name = format!("slo.{key}");
        match key.as_str() {
            "window" => {
                let text = string(value, &name)?;
                o.window = span(text, &name)?;
                if o.window.is_zero() {
                    return Err((name, "must be longer than 0".into()));
                }
                o.window_text = text.to_string();
            }
            "completion_rate_min" => {
                let rate = number(value, &name)?;
                if !(0.0..=1.0).contains(&rate) {
                    return Err((name, format!("{rate} is not a rate: expected a number from 0 to 1 (e.g. 0.8)")));
                }
                o.completion_rate_min = Some(rate);
            }
            "fix_iterations_p90_max" => o.fix_iterations_p90_max = Some(count(value, &name)?),
            "plan_iterations_p90_max" => o.plan_iterations_p90_max = Some(count(value, &name)?),
            "phase_p90_max" => {
                let Value::Table(phases) = value else {
                    return Err((
                        name,
                        format!("expected a table of phase = \"span\" ([slo.phase_p90_max]), found {}", value.type_str()),
                    ));
                };
                for (phase, bound) in phases {
                    let name = format!("slo.phase_p90_max.{phase}");
                    let text = string(bound, &name)?;
                    o.phase_p90_max.push((phase.clone(), span(text, &name)?, text.to_string()));
                }
            }
            _ => {
                return Err((
                    name,
                    "unknown objective: expected window, completion_rate_min, fix_iterations_p90_max, plan_iterations_p90_max or phase_p90_max".into(),
                ))
            }
        }
    }
    Ok(o)
}

fn string<'a>(value: &'a Value, name: &str) -> Result<&'a str, (String, String)> {
    value.as_str().ok_or_else(|| {
        (
            name.to_string(),
            format!(
                "expected a string such as \"30m\" or \"7d\", found {}",
                value.type_str()
            ),
        )
    })
}

fn span(text: &str, name: &str) -> Result<Duration, (String, String)> {
    parse_span(text).map_err(|e| (name.to_string(), e))
}

fn number(value: &Value, name: &str) -> Result<f64, (String, String)> {
    match value {
        Value::Float(f) if f.is_finite() => Ok(*f),
        Value::Integer(i) => Ok(*i as f64),
        other => Err((
            name.to_string(),
            format!("expected a number, found {}", other.type_str()),
        )),
    }
}

fn count(value: &Value, name: &str) -> Result<f64, (String, String)> {
    let n = number(value, name)?;
    if n < 0.0 {
        return Err((
            name.to_string(),
            format!("{n} is negative: expected a count of iterations (e.g. 3)"),
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Objectives, (String, String)> {
        parse(&text.parse::<Table>().unwrap(), PathBuf::from("jkz.toml"))
    }

    #[test]
    fn a_full_table_and_the_defaults() {
        let o = parsed(
            "[slo]\nwindow = \"14d\"\ncompletion_rate_min = 0.9\nfix_iterations_p90_max = 2\n[slo.phase_p90_max]\nbuilding = \"30m\"\n",
        )
        .unwrap();
        assert_eq!(o.window, Duration::from_secs(14 * 86_400));
        assert_eq!(o.completion_rate_min, Some(0.9));
        assert_eq!(o.fix_iterations_p90_max, Some(2.0));
        assert_eq!(
            o.phase_p90_max,
            [(
                "building".to_string(),
                Duration::from_secs(1800),
                "30m".to_string()
            )]
        );
        let d = parsed("[other]\nx = 1\n").unwrap();
        assert_eq!(d.completion_rate_min, Some(DEFAULT_COMPLETION_RATE_MIN));
        assert_eq!(
            d.fix_iterations_p90_max,
            Some(DEFAULT_FIX_ITERATIONS_P90_MAX)
        );
        let only = parsed("[slo]\nplan_iterations_p90_max = 4\n").unwrap();
        assert_eq!(
            (only.completion_rate_min, only.plan_iterations_p90_max),
            (None, Some(4.0))
        );
    }

    #[test]
    fn each_bad_value_names_its_key() {
        for (text, key) in [
            ("slo = 3", "slo"),
            ("[slo]\nwindow = \"7x\"", "slo.window"),
            ("[slo]\nwindow = 7", "slo.window"),
            ("[slo]\nwindow = \"0s\"", "slo.window"),
            (
                "[slo]\ncompletion_rate_min = 1.5",
                "slo.completion_rate_min",
            ),
            (
                "[slo]\ncompletion_rate_min = \"high\"",
                "slo.completion_rate_min",
            ),
            (
                "[slo]\nfix_iterations_p90_max = -1",
                "slo.fix_iterations_p90_max",
            ),
            ("[slo]\ncompletion_rate = 0.8", "slo.completion_rate"),
            ("[slo]\nphase_p90_max = \"30m\"", "slo.phase_p90_max"),
            (
                "[slo.phase_p90_max]\nbuilding = \"soon\"",
                "slo.phase_p90_max.building",
            ),
        ] {
            let (got, why) = parsed(text).unwrap_err();
            assert_eq!(got, key, "{text}: {why}");
        }
    }
}
