//! `jkz install --client gemini` and `jkz uninstall --client gemini`: jkz's
//! entries in Gemini CLI's configuration.

use std::io::Write;

use super::{InstallArgs, UninstallArgs};
use crate::exit::Failure;

/// Runs `jkz install --client gemini`.
pub fn install(_args: &InstallArgs, _out: &mut impl Write) -> Result<u8, Failure> {
    Err(Failure::new(
        2,
        "jkz install --client gemini: not built yet",
    ))
}

/// Runs `jkz uninstall --client gemini`.
pub fn uninstall(_args: &UninstallArgs, _out: &mut impl Write) -> Result<u8, Failure> {
    Err(Failure::new(
        2,
        "jkz uninstall --client gemini: not built yet",
    ))
}
