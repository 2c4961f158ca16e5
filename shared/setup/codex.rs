//! `jkz install --client codex` and `jkz uninstall --client codex`: jkz's
//! entries in Codex CLI's configuration.

use std::io::Write;

use super::{InstallArgs, UninstallArgs};
use crate::exit::Failure;

/// Runs `jkz install --client codex`.
pub fn install(_args: &InstallArgs, _out: &mut impl Write) -> Result<u8, Failure> {
    Err(Failure::new(2, "jkz install --client codex: not built yet"))
}

/// Runs `jkz uninstall --client codex`.
pub fn uninstall(_args: &UninstallArgs, _out: &mut impl Write) -> Result<u8, Failure> {
    Err(Failure::new(
        2,
        "jkz uninstall --client codex: not built yet",
    ))
}
