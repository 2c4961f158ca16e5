//! The one `--state-dir DIR` argument every command that takes it flattens
//! into its own: one spelling, one help line, one way to resolve it.

use std::path::{Path, PathBuf};

use super::StateDir;

/// `--state-dir DIR`: names the state directory, beating every other rule.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StateDirArg {
    /// The state directory (default: the repository's; which one, and
    /// why: docs/worktrees.md).
    #[arg(long = "state-dir", global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl StateDirArg {
    /// The directory named on the command line, if any.
    pub fn named(&self) -> Option<&Path> {
        self.state_dir.as_deref()
    }

    /// The state directory a command uses (no hook event to start from).
    pub fn resolve(&self) -> StateDir {
        StateDir::resolve(self.named(), None)
    }
}
