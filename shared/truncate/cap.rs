//! The cap: `--mode`'s budgets, and the one order a run picks its cap in
//! (`--max-bytes`, else `JKZ_MAX_OUTPUT_BYTES`, else the mode's).

use std::io::Write;

use super::warning::warn;
use crate::thousands::thousands;

/// The byte budget chosen by `--mode` when neither `--max-bytes` nor
/// `JKZ_MAX_OUTPUT_BYTES` is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// The main model's window: 300 KiB.
    #[default]
    Primary,
    /// A smaller fallback model: 100 KiB.
    Fallback,
    /// A sub-agent's reply: 80 KiB.
    Agent,
}

impl Mode {
    /// The name `--mode` takes.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Primary => "primary",
            Mode::Fallback => "fallback",
            Mode::Agent => "agent",
        }
    }

    pub fn cap(self) -> u64 {
        match self {
            Mode::Primary => 307_200,
            Mode::Fallback => 102_400,
            Mode::Agent => 81_920,
        }
    }

    /// Whose window the mode's cap is sized for.
    fn purpose(self) -> &'static str {
        match self {
            Mode::Primary => "the main model's window",
            Mode::Fallback => "a smaller fallback model",
            Mode::Agent => "a sub-agent's reply",
        }
    }

    /// Every mode, in `--help`'s order.
    pub const ALL: [Mode; 3] = [Mode::Primary, Mode::Fallback, Mode::Agent];

    /// The modes' caps as help text says them:
    /// `primary 307,200 bytes, fallback 102,400, agent 81,920`.
    pub fn caps_text() -> String {
        Mode::ALL
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let unit = if i == 0 { " bytes" } else { "" };
                format!("{} {}{unit}", m.name(), thousands(m.cap()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `--mode`'s values; each one's help is its cap (`300 KiB: …`).
impl clap::ValueEnum for Mode {
    fn value_variants<'a>() -> &'a [Self] {
        &Mode::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = format!("{} KiB: {}", self.cap() / 1024, self.purpose());
        Some(clap::builder::PossibleValue::new(self.name()).help(help))
    }
}

/// The environment variable that sets the cap when `--max-bytes` is absent.
pub const CAP_VARIABLE: &str = "JKZ_MAX_OUTPUT_BYTES";

/// The cap: the flag, else [`CAP_VARIABLE`] (its value `env`), else the
/// mode's. A pipe filter fails open: an empty value counts as unset, and an
/// invalid one gives `Err` with the mode's cap and a one-line warning naming
/// the variable, never a lost output.
pub fn resolve_cap(
    flag: Option<u64>,
    env: Option<&std::ffi::OsStr>,
    mode: Mode,
) -> Result<u64, (u64, String)> {
    if let Some(cap) = flag {
        return Ok(cap);
    }
    let default_words = format!(
        "the {} mode's cap of {} bytes",
        mode.name(),
        thousands(mode.cap())
    );
    crate::byte_cap::byte_cap(CAP_VARIABLE, env, mode.cap(), &default_words)
}

/// The cap [`resolve_cap`] picks from the flag and the process environment;
/// an invalid [`CAP_VARIABLE`] is one warning on `stderr`.
pub fn cap_from_env(flag: Option<u64>, mode: Mode, program: &str, stderr: &mut dyn Write) -> u64 {
    let env = std::env::var_os(CAP_VARIABLE);
    match resolve_cap(flag, env.as_deref(), mode) {
        Ok(cap) => cap,
        Err((cap, warning)) => {
            warn(stderr, program, &warning);
            cap
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_variable_fails_open() {
        use std::ffi::OsStr;
        let env = |v: &str| resolve_cap(None, Some(OsStr::new(v)), Mode::Agent);
        assert_eq!(
            resolve_cap(Some(5), Some(OsStr::new("x")), Mode::Agent),
            Ok(5)
        );
        assert_eq!(resolve_cap(None, None, Mode::Fallback), Ok(102_400));
        assert_eq!(env(""), Ok(81_920), "empty is unset");
        assert_eq!(env(" 1000 "), Ok(1000));
        assert_eq!(env("0"), Ok(0));
        for bad in ["abc", "-1", "1e6", "18446744073709551616", "12 kb"] {
            let (cap, warning) = env(bad).unwrap_err();
            assert_eq!(cap, 81_920, "{bad}");
            assert!(
                warning.starts_with("JKZ_MAX_OUTPUT_BYTES=") && warning.contains("81,920"),
                "{warning}"
            );
            assert!(!warning.contains('\n'), "{warning}");
        }
    }
}
