//! The one shape of a warning line.

use std::io::Write;

/// One warning line on `warnings` (stderr): `PROGRAM: warning: …`, PROGRAM
/// being the program that is running (`jkz-truncate`, `jkz run`, …).
pub fn warn(warnings: &mut dyn Write, program: &str, message: &dyn std::fmt::Display) {
    // Nothing sensible is left to do if stderr itself fails.
    let _ = writeln!(warnings, "{program}: warning: {message}");
}
