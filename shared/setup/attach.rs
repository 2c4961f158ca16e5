//! `jkz attach PATH` and `jkz detach`: a checkout that is not a worktree of
//! the repository (a clone made with `git clone --shared`, the isolation
//! some orchestrators use instead of worktrees; a second clone) shares
//! another checkout's state directory, so its chats see the same pipelines,
//! claims, locks and deliberations.
//!
//! `jkz attach PATH` finds the root PATH's repository uses, as every tool
//! finds it from PATH ([`crate::state_dir::root`]), and records it as
//! `jkz.stateDir` in this repository's own config file (`git config
//! --file <common git dir>/config`): every tool and hook started in any
//! checkout of this repository then uses it (read back with plain file
//! reads). Attaching opts in: the root is created (mode 0700) when missing.
//! It must be a directory of yours that nobody else can write to
//! ([`crate::state_dir::root::usable_root`]). `jkz detach` removes the
//! entry; the repository's own root applies again (not created).
//!
//! Exit codes: 0 attached, detached, or not attached (nothing to undo);
//! 1 failure (not in a git repository, PATH unusable or of this same
//! repository, `git config` failed).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::exit::{Failure, EXIT_FAILED, EXIT_OK};
use crate::state_dir::root::{self, Repository};
use crate::state_dir::{create_private_dir, stray};

/// `jkz attach PATH`.
#[derive(clap::Args, Debug, Clone)]
pub struct AttachArgs {
    /// A checkout (or any directory in one) of the repository whose state
    /// directory this repository shares from now on.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
}

/// `jkz detach`.
#[derive(clap::Args, Debug, Clone)]
pub struct DetachArgs {}

fn say(out: &mut impl Write, line: impl std::fmt::Display) -> Result<(), Failure> {
    writeln!(out, "{line}").map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))
}

/// This repository: the one the current directory is in.
fn this_repository(verb: &str) -> Result<(PathBuf, Repository), Failure> {
    let (here, repository) = root::repository_of(Path::new("")).map_err(|p| {
        Failure::new(
            EXIT_FAILED,
            format!("this repository's layout cannot be read: {p}"),
        )
    })?;
    let repository = repository.ok_or_else(|| {
        Failure::new(
            EXIT_FAILED,
            format!(
                "{} is in no git repository: jkz {verb} records the state directory in a repository's git config; run it in a checkout",
                here.display()
            ),
        )
    })?;
    Ok((here, repository))
}

/// Runs `git config --file FILE ARGS…`.
fn git_config(file: &Path, args: &[&std::ffi::OsStr]) -> Result<std::process::Output, Failure> {
    Command::new("git")
        .arg("config")
        .arg("--file")
        .arg(file)
        .args(args)
        .output()
        .map_err(|e| Failure::io(EXIT_FAILED, "running git config (is git installed?)", e))
}

/// Runs `jkz attach`.
pub fn attach(args: &AttachArgs, out: &mut impl Write) -> Result<u8, Failure> {
    let (here, repository) = this_repository("attach")?;
    let shown = args.path.display();
    if !args.path.is_dir() {
        return Err(Failure::new(
            EXIT_FAILED,
            format!("{shown} is not a directory: name a checkout of the repository whose state directory to share"),
        ));
    }
    let found = root::find(&args.path).map_err(|p| {
        Failure::new(
            EXIT_FAILED,
            format!("{shown}: its repository's layout cannot be read: {p}"),
        )
    })?;
    let Some(theirs) = &found.repository else {
        return Err(Failure::new(
            EXIT_FAILED,
            format!("{shown} is in no git repository: name a checkout of the repository whose state directory to share"),
        ));
    };
    if theirs.common == repository.common {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "{shown} is a checkout of this same repository, whose checkouts share {} already ({}): nothing attached{}",
                repository.own_root.display(),
                repository.own_why,
                if repository.attached.is_some() { "; `jkz detach` returns to it" } else { "" }
            ),
        ));
    }
    let mut state = found.path.clone();
    if !state.exists() {
        create_private_dir(&state)
            .map_err(|e| Failure::io(EXIT_FAILED, format!("creating {}", state.display()), e))?;
        say(out, format_args!("created {} (mode 0700)", state.display()))?;
    }
    root::usable_root(&state).map_err(|why| {
        Failure::new(
            EXIT_FAILED,
            format!("{} ({}) {why}: not attached", state.display(), found.why),
        )
    })?;
    state = std::fs::canonicalize(&state).unwrap_or(state);
    let config = repository.config_file();
    let set = git_config(&config, &["jkz.stateDir".as_ref(), state.as_os_str()])?;
    if !set.status.success() {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "git config --file {} jkz.stateDir failed: {}; nothing attached",
                config.display(),
                String::from_utf8_lossy(&set.stderr).trim()
            ),
        ));
    }
    say(
        out,
        format_args!(
            "attached {}: every jkz tool and hook started in this repository's checkouts uses {} ({}); recorded as jkz.stateDir in {}; `jkz detach` undoes it",
            here.display(),
            state.display(),
            found.why,
            config.display()
        ),
    )?;
    let own = &repository.own_root;
    if own.is_dir() && own != &state {
        let holds = stray::holdings(own);
        if holds.files > 0 {
            say(
                out,
                format_args!(
                    "note: {} holds {holds}, no longer used: `jkz doctor --fix` moves its files into {}",
                    own.display(),
                    state.display()
                ),
            )?;
        }
    }
    out.flush()
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
}

/// Runs `jkz detach`.
pub fn detach(_args: &DetachArgs, out: &mut impl Write) -> Result<u8, Failure> {
    let (_, repository) = this_repository("detach")?;
    let config = repository.config_file();
    let Some(was) = &repository.attached else {
        say(
            out,
            format_args!(
                "not attached ({} records no jkz.stateDir); nothing changed",
                config.display()
            ),
        )?;
        return Ok(EXIT_OK);
    };
    let unset = git_config(&config, &["--unset-all".as_ref(), "jkz.stateDir".as_ref()])?;
    if !unset.status.success() {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "git config --file {} --unset-all jkz.stateDir failed: {}; still attached",
                config.display(),
                String::from_utf8_lossy(&unset.stderr).trim()
            ),
        ));
    }
    let own = &repository.own_root;
    say(
        out,
        format_args!(
            "detached from {}: this repository uses {} again ({}){}",
            String::from_utf8_lossy(was),
            own.display(),
            repository.own_why,
            if own.is_dir() {
                ""
            } else {
                "; it does not exist yet: `jkz install` creates it"
            }
        ),
    )?;
    out.flush()
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
}
