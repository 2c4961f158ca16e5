//! `jkz.toml`: a project's committed settings, at its root (never runtime
//! state). Each feature reads its own table of it (`[slo]`, `[[filters]]`);
//! the file is found, bounded, checked and parsed here, once, the same way
//! for all of them.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use toml::Table;

/// The file, at the project root.
pub const CONFIG_FILE: &str = "jkz.toml";

/// The project's other settings file, relative to its root: the user's
/// head-share rules for the tool-output guard, `SHARE WORDS…` a line
/// (docs/tool-output-guard.md). It sits in Claude Code's project
/// directory, where jkz first read it; the guard reads it there for every
/// client, and users already have it there, so the path stays.
pub const TOOL_ROLES_FILE: &str = ".claude/jkz-tool-roles";

/// A `jkz.toml` that cannot be used: which file, which key, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// The key at fault (`slo.window`), when one is.
    pub key: Option<String>,
    pub why: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{}: {key}: {}", self.file.display(), self.why),
            None => write!(f, "{}: {}", self.file.display(), self.why),
        }
    }
}

/// The parsed file at `file`; `Ok(None)` when there is none.
pub fn read(file: &Path) -> Result<Option<Table>, ConfigError> {
    let error = |why: String| ConfigError {
        file: file.to_path_buf(),
        key: None,
        why,
    };
    match std::fs::metadata(file) {
        Ok(meta) if meta.is_dir() => {
            return Err(error("unreadable: a directory, not a file".into()))
        }
        Ok(meta) if !meta.is_file() => {
            return Err(error(
                "unreadable: not a regular file (a FIFO, device or socket)".into(),
            ))
        }
        _ => {}
    }
    let bytes = match crate::state_dir::read_user_file(file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(error(format!("unreadable: {e}"))),
    };
    let text = String::from_utf8(bytes).map_err(|_| error("not UTF-8 text".into()))?;
    text.parse().map(Some).map_err(|e: toml::de::Error| {
        error(format!(
            "not valid TOML: {}",
            e.to_string().trim().replace('\n', " ")
        ))
    })
}
