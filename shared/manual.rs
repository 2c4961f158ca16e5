//! `jkz completions SHELL` and `jkz man --dir DIR`: shell completions and
//! man pages, made from the same clap definitions the binaries parse with
//! ([`crate::commands`]), so they never disagree with `--help`.
//! `install.sh` installs both.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::exit::{Failure, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::setup::BINARIES;

/// The shells jkz writes completions for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    fn generator(self) -> clap_complete::Shell {
        match self {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        }
    }
}

/// `jkz completions`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Where install.sh puts them (PREFIX is its --prefix, ~/.local/bin by default):
  bash  PREFIX/../share/bash-completion/completions/BINARY
  zsh   PREFIX/../share/zsh/site-functions/_BINARY (a directory on $fpath)
  fish  PREFIX/../share/fish/vendor_completions.d/BINARY.fish")]
pub struct CompletionsArgs {
    /// The shell: bash, zsh or fish.
    #[arg(value_enum)]
    pub shell: Shell,
    /// Whose completions: jkz (the default), or another of jkz's binaries
    /// (jkz-truncate, jkz-compress, jkz-session, the hooks).
    #[arg(long, value_name = "BINARY", default_value = "jkz")]
    pub binary: String,
}

/// `jkz man`.
#[derive(clap::Args, Debug, Clone)]
pub struct ManArgs {
    /// Write the pages here (created if missing): one per binary and one
    /// per subcommand (jkz.1, jkz-state.1, jkz-state-set.1, …,
    /// jkz-truncate.1, …); each written path is printed.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
}

/// The command line of `binary`, or a usage error naming the binaries.
fn command(binary: &str) -> Result<clap::Command, Failure> {
    crate::commands::of(binary).ok_or_else(|| {
        Failure::new(
            EXIT_USAGE,
            format!(
                "{binary:?} is not one of jkz's binaries ({})",
                BINARIES.join(", ")
            ),
        )
    })
}

/// Prints `binary`'s completion script for `shell`.
pub fn completions(args: &CompletionsArgs, out: &mut dyn Write) -> Result<u8, Failure> {
    let mut cmd = command(&args.binary)?;
    let mut script = Vec::new();
    clap_complete::generate(args.shell.generator(), &mut cmd, &args.binary, &mut script);
    out.write_all(&script)
        .and_then(|()| out.flush())
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
}

/// Writes the man pages of every binary and subcommand into `dir`;
/// returns their paths.
pub fn write_pages(dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for binary in BINARIES {
        let cmd = crate::commands::of(binary).expect("a binary of the list");
        pages(cmd.disable_help_subcommand(true), dir, &mut written)?;
    }
    Ok(written)
}

/// `cmd`'s page and its subcommands', depth first; a subcommand's page is
/// named after its path (`jkz-state-set.1`).
fn pages(mut cmd: clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> io::Result<()> {
    cmd.build();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages(sub.clone(), dir, written)?;
    }
    let man = clap_mangen::Man::new(cmd);
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)?;
    crate::atomic::write_atomic(&path, &page)?;
    written.push(path);
    Ok(())
}

/// `jkz man --dir DIR`.
pub fn man(args: &ManArgs, out: &mut dyn Write) -> Result<u8, Failure> {
    let written = write_pages(&args.dir).map_err(|e| {
        Failure::io(
            EXIT_FAILED,
            format!("writing man pages to {}", args.dir.display()),
            e,
        )
    })?;
    for path in &written {
        writeln!(out, "{}", path.display())
            .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    }
    out.flush()
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(shell: Shell, binary: &str) -> String {
        let mut out = Vec::new();
        let args = CompletionsArgs {
            shell,
            binary: binary.into(),
        };
        completions(&args, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_shell_completes_every_subcommand_of_jkz() {
        let subcommands: Vec<String> = crate::commands::of("jkz")
            .unwrap()
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        assert!(subcommands.len() > 20, "{subcommands:?}");
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = script(shell, "jkz");
            for sub in &subcommands {
                assert!(text.contains(sub.as_str()), "{shell:?} lacks {sub}");
            }
        }
    }

    #[test]
    fn other_binaries_have_completions_and_an_unknown_one_is_a_usage_error() {
        for binary in BINARIES {
            assert!(script(Shell::Bash, binary).contains(binary), "{binary}");
        }
        let mut out = Vec::new();
        let args = CompletionsArgs {
            shell: Shell::Fish,
            binary: "cargo".into(),
        };
        let err = completions(&args, &mut out).unwrap_err();
        assert_eq!(err.code, EXIT_USAGE);
        assert!(err.message.contains("jkz-truncate"), "{}", err.message);
    }

    #[test]
    fn a_page_for_every_binary_and_subcommand() {
        let tmp = tempfile::tempdir().unwrap();
        let written = write_pages(tmp.path()).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for page in [
            "jkz.1",
            "jkz-state.1",
            "jkz-state-set.1",
            "jkz-completions.1",
            "jkz-truncate.1",
            "jkz-compress.1",
            "jkz-pre-compact.1",
            "jkz-session-start.1",
            "jkz-post-tool-use.1",
            "jkz-chat.1",
            "jkz-session.1",
            "jkz-session-list.1",
        ] {
            assert!(names.iter().any(|n| n == page), "{page} missing: {names:?}");
        }
        // No two pages share a name (one would overwrite the other).
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        let set = std::fs::read_to_string(tmp.path().join("jkz-state-set.1")).unwrap();
        assert!(set.starts_with(".ie"), "{}", &set[..set.len().min(200)]);
        assert!(set.contains("jkz\\-state\\-set"), "{set}");
    }
}
