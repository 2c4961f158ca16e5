//! `jkz install --client opencode` and `jkz uninstall --client opencode`:
//! jkz's plugin for OpenCode.
//!
//! OpenCode has no command hooks; it loads every `*.js` of a project's
//! `.opencode/plugins/` and of `~/.config/opencode/plugins/` when it
//! starts. jkz's plugin (`plugin/opencode/jkz.js`, carried inside the `jkz`
//! binary) hands each hook to jkz's binaries, which it finds on `PATH`,
//! in `~/.local/bin` or in `~/.cargo/bin`. jkz owns one file there,
//! `jkz.js` ([`file`]): install writes it whole, uninstall removes it (and
//! the directories install created, when empty), so the tree is as it was
//! byte for byte. A `jkz.js` that is not jkz's plugin is refused,
//! untouched. As for the other clients, a project install creates the
//! state directory (with `/state/` in `.gitignore`); `--user` writes none.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::install::installed_binaries;
use super::settings::Registration;
use super::whole_file::{self, read, WholeFile};
use super::{InstallArgs, Target, UninstallArgs};
use crate::exit::Failure;

/// The plugin, as this `jkz` ships it.
pub const PLUGIN: &str = include_str!("../../plugin/opencode/jkz.js");

/// Which binary the plugin hands each OpenCode hook or event to (what
/// `jkz doctor --probe --client opencode` runs).
pub const REGISTRATIONS: [Registration; 8] = [
    Registration {
        event: "experimental.session.compacting",
        matcher: "",
        program: "jkz-pre-compact",
    },
    Registration {
        event: "session.compacted",
        matcher: "",
        program: "jkz-session-start",
    },
    Registration {
        event: "tool.execute.after",
        matcher: "",
        program: "jkz-post-tool-use",
    },
    Registration {
        event: "session.created",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "chat.message",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "tool.execute.before",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "tool.execute.after",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "session.deleted",
        matcher: "",
        program: "jkz-chat",
    },
];

/// Where the plugin finds `program`: on `PATH`, then in `~/.local/bin`,
/// then in `${CARGO_HOME:-~/.cargo}/bin` (its `findProgram`).
pub fn find_program(program: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let home = PathBuf::from(home);
        dirs.push(home.join(".local").join("bin"));
        let cargo = std::env::var_os("CARGO_HOME")
            .filter(|c| !c.is_empty())
            .map_or_else(|| home.join(".cargo"), PathBuf::from);
        dirs.push(cargo.join("bin"));
    }
    dirs.into_iter()
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(program))
        .find(|f| {
            use std::os::unix::fs::PermissionsExt;
            f.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// jkz's plugin OpenCode loads for `project` (the project's, else the
/// user's), when there is one.
pub fn installed(project: &Path) -> Option<PathBuf> {
    [file(Some(project)), file(None)]
        .into_iter()
        .flatten()
        .find(|f| has_jkz_plugin(f))
}

/// How every version of jkz's plugin starts: a file that does not is
/// someone else's.
const FIRST_LINE: &str = "// jkz for OpenCode:";

/// jkz's plugin file: the project's `.opencode/plugins/jkz.js`, or
/// `~/.config/opencode/plugins/jkz.js`.
pub fn file(project: Option<&Path>) -> Option<PathBuf> {
    let dir = match project {
        Some(p) => p.join(".opencode"),
        None => PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?)
            .join(".config")
            .join("opencode"),
    };
    Some(dir.join("plugins").join("jkz.js"))
}

/// True when `bytes` are a version of jkz's plugin.
fn is_jkz_plugin(bytes: &[u8]) -> bool {
    bytes.starts_with(FIRST_LINE.as_bytes())
}

/// True when `path` is a version of jkz's plugin.
pub fn has_jkz_plugin(path: &Path) -> bool {
    read(path).is_ok_and(|b| b.is_some_and(|b| is_jkz_plugin(&b)))
}

/// Runs `jkz install --client opencode`.
pub fn install(args: &InstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    let target = whole_file::target(
        "opencode",
        args.project.as_deref(),
        args.user,
        args.registry.is_some(),
        out,
    )?;
    // The plugin runs the binaries by name: they must all be there.
    installed_binaries()?;
    let file = whole_file(&target)?;
    let written = format!(
        "placed jkz's OpenCode plugin at {}: OpenCode loads it when it starts",
        file.path.display()
    );
    file.install(&target, PLUGIN.as_bytes(), &written, out)?;
    out.flush()
        .map_err(|e| Failure::io(1, "writing stdout", e))?;
    Ok(0)
}

/// Runs `jkz uninstall --client opencode`.
pub fn uninstall(args: &UninstallArgs, out: &mut impl Write) -> Result<u8, Failure> {
    let target = whole_file::target("opencode", args.project.as_deref(), args.user, false, out)?;
    whole_file(&target)?.uninstall(&target, out)
}

/// The plugin file of `target`, as jkz writes it whole.
fn whole_file(target: &Target) -> Result<WholeFile<'static>, Failure> {
    Ok(WholeFile {
        client: "OpenCode",
        path: whole_file::path(
            "opencode",
            "~/.config/opencode/plugins/",
            file(target.project.as_deref()),
        )?,
        is_ours: &is_jkz_plugin,
        not_ours: (
            "is not jkz's plugin (jkz writes this file whole)",
            "is not jkz's plugin; left as it is",
        ),
        // plugins/, then .opencode/ (or ~/.config/opencode/).
        empty_parents: 2,
    })
}

/// `jkz doctor --client opencode`'s line: the plugin (the project's, else
/// the user's) is there and is this jkz's.
pub fn doctor_lines(project: &Path) -> Vec<(bool, String)> {
    let project_file = file(Some(project)).expect("a project file");
    let path = match file(None) {
        Some(user) if !project_file.exists() && user.exists() => user,
        _ => project_file,
    };
    let line = match read(&path) {
        Ok(Some(bytes)) if bytes == PLUGIN.as_bytes() => (
            true,
            format!("OpenCode plugin {} is this jkz's", path.display()),
        ),
        Ok(Some(bytes)) if is_jkz_plugin(&bytes) => (
            false,
            format!(
                "OpenCode plugin {} is another version of jkz's; run jkz install --client opencode",
                path.display()
            ),
        ),
        Ok(Some(_)) => (
            false,
            format!(
                "{} is not jkz's plugin: OpenCode runs it instead; move it away and run jkz install --client opencode",
                path.display()
            ),
        ),
        Ok(None) => (
            false,
            format!(
                "{}: no such file; run jkz install --client opencode",
                path.display()
            ),
        ),
        Err(e) => (false, format!("{e}")),
    };
    vec![line]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_plugin_is_recognised_as_jkzs() {
        assert!(is_jkz_plugin(PLUGIN.as_bytes()));
        assert!(!is_jkz_plugin(b"export const Other = async () => ({});\n"));
        assert_eq!(
            file(Some(Path::new("/p"))),
            Some(PathBuf::from("/p/.opencode/plugins/jkz.js"))
        );
    }

    #[test]
    fn doctor_tells_this_plugin_from_another_version_and_from_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(Some(dir.path())).unwrap();
        let lines = doctor_lines(dir.path());
        assert!(
            !lines[0].0 && lines[0].1.contains("no such file"),
            "{lines:?}"
        );
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, PLUGIN).unwrap();
        assert!(doctor_lines(dir.path())[0].0);
        std::fs::write(&path, format!("{PLUGIN}// changed\n")).unwrap();
        let lines = doctor_lines(dir.path());
        assert!(
            !lines[0].0 && lines[0].1.contains("another version"),
            "{lines:?}"
        );
        std::fs::write(&path, "export const Other = 1;\n").unwrap();
        let lines = doctor_lines(dir.path());
        assert!(
            !lines[0].0 && lines[0].1.contains("not jkz's plugin"),
            "{lines:?}"
        );
    }
}
