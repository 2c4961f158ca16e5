//! Doctor's checks of how jkz is registered with Claude Code for a project:
//! through the plugin, or through settings (`jkz install`: the project's
//! `.claude/settings.json` or `settings.local.json`, or the user's) — and
//! only one of them, since Claude Code runs every registered hook, so jkz
//! registered twice snapshots twice and re-injects its context twice.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::super::plugin::{self, EnabledPlugin};
use super::super::settings::{self, REGISTRATIONS};
use super::super::{Target, COMMANDS};
use super::{find_on_path, is_executable, Report, Status};
use crate::exit::Failure;

/// Where the plugin's launcher looks after `PATH` (`plugin/scripts/run-hook`).
fn launcher_fallbacks(program: &str) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".cargo")));
    home.map(|h| h.join(".local/bin"))
        .into_iter()
        .chain(cargo_home.map(|c| c.join("bin")))
        .map(|dir| dir.join(program))
        .collect()
}

/// Checks the registration: which path is active, that it is complete and
/// points at programs that run, and that jkz is not registered twice.
pub(super) fn check<W: Write>(
    report: &mut Report<W>,
    project: &Target,
    user: Option<&Target>,
    path_var: &OsStr,
) -> Result<(), Failure> {
    let project_dir = project.project.clone().expect("a project target");
    let mut sources: Vec<(String, Map<String, Value>)> = Vec::new();
    for path in plugin::settings_files(project, user) {
        let Ok(bytes) = crate::state_dir::read_user_file(&path) else {
            continue;
        };
        match settings::parse(&bytes) {
            Ok(map) => sources.push((path.display().to_string(), map)),
            Err(why) => report.line(
                Status::Fail,
                format_args!(
                    "{}: {why}; fix it (Claude Code cannot read it either)",
                    path.display()
                ),
            )?,
        }
    }
    let in_settings: Vec<&str> = sources
        .iter()
        .filter(|(_, map)| settings::has_jkz_hooks(map))
        .map(|(shown, _)| shown.as_str())
        .collect();
    let from_plugin = plugin::enabled(project, user);

    // Registered twice?
    let mut places: Vec<String> = in_settings.iter().map(|s| s.to_string()).collect();
    if let Some(p) = &from_plugin {
        places.insert(0, format!("the plugin {}", p.id));
        // The plugin's /jkz:save, /jkz:load and installed ones collide too.
        for dir in std::iter::once(project)
            .chain(user)
            .map(Target::commands_dir)
        {
            if COMMANDS.iter().any(|(name, _)| dir.join(name).is_file()) {
                places.push(format!("the commands in {}", dir.display()));
            }
        }
    }
    if places.len() > 1 {
        let fix = match &from_plugin {
            Some(p) => format!(
                "keep the plugin and run jkz uninstall --project {} (and jkz uninstall --user if listed), or claude plugin uninstall {}",
                project_dir.display(),
                p.id
            ),
            None => format!(
                "keep one: jkz uninstall --user, or jkz uninstall --project {}",
                project_dir.display()
            ),
        };
        report.line(
            Status::Fail,
            format_args!(
                "jkz is registered more than once ({}): Claude Code would run every hook twice; {fix}",
                places.join("; ")
            ),
        )?;
    }

    match &from_plugin {
        Some(p) => check_plugin(report, p, path_var),
        None => check_settings(report, &project_dir, &sources, path_var),
    }
}

/// In a linked worktree where jkz is registered nowhere Claude Code looks
/// (the worktree's own settings, the user's, the plugin): the one step that
/// gives it the hooks, as one line. `git worktree add` checks out a commit,
/// and the main checkout's `.claude/` reaches a worktree only through one.
pub(super) fn worktree_step(project: &Target, user: Option<&Target>) -> Option<String> {
    let project_dir = project.project.as_deref()?;
    let found = crate::state_dir::root::find(project_dir).ok()?;
    let crate::state_dir::root::Why::MainWorktree { worktree } = &found.why else {
        return None;
    };
    let registered = plugin::settings_files(project, user)
        .iter()
        .any(|f| plugin::read_settings(f).is_some_and(|m| settings::has_jkz_hooks(&m)))
        || plugin::enabled(project, user).is_some();
    if registered {
        return None;
    }
    let main = found.path.parent()?;
    let main_settings = main.join(".claude").join("settings.json");
    let in_main =
        plugin::read_settings(&main_settings).is_some_and(|m| settings::has_jkz_hooks(&m));
    let dir = settings::shell_quote(&main.to_string_lossy());
    let commit = format!(
        "`git -C {dir} add .claude/settings.json .claude/commands/jkz && git -C {dir} commit -m 'Register jkz hooks'`"
    );
    let why = match (
        in_main,
        crate::state_dir::tracked::is_tracked(&main_settings) == Some(true),
    ) {
        (true, false) => format!(
            "the main checkout registers them in {}, which git does not track, so `git worktree add` did not bring it: commit it there, {commit}, then bring that commit into this worktree's branch (git merge or git rebase; worktrees added from it have the hooks)",
            main_settings.display()
        ),
        (true, true) => format!(
            "the main checkout's {} registers them and is committed, but this worktree's branch does not have that commit: merge or rebase it onto the branch that has it",
            main_settings.display()
        ),
        (false, _) => format!(
            "jkz is not registered in the main checkout {} either: run jkz install there and commit what it names, {commit}, then bring that commit into this worktree's branch",
            main.display()
        ),
    };
    Some(format!(
        "jkz's hooks are not registered in this linked worktree {}: Claude Code reads .claude/settings.json from the worktree's own files; {why}; or register jkz for every project and worktree of yours once: jkz install --user (docs/setup.md#worktrees-and-clones)",
        worktree.display()
    ))
}

fn check_plugin<W: Write>(
    report: &mut Report<W>,
    p: &EnabledPlugin,
    path_var: &OsStr,
) -> Result<(), Failure> {
    let Some(copy) = &p.install_path else {
        return report.line(
            Status::Fail,
            format_args!(
                "the plugin {} is enabled in {} but not installed (no copy in ~/.claude/plugins); run claude plugin install {}",
                p.id,
                p.enabled_in.display(),
                p.id
            ),
        );
    };
    report.line(
        Status::Ok,
        format_args!(
            "active path: the plugin {} (enabled in {}; the client's copy in {})",
            p.id,
            p.enabled_in.display(),
            copy.display()
        ),
    )?;
    let missing = plugin::missing_hooks(
        &crate::state_dir::read_user_file(&copy.join("hooks/hooks.json")).unwrap_or_default(),
    );
    report.check(
        missing.is_empty(),
        format_args!(
            "the plugin's copy registers all {} hooks ({})",
            REGISTRATIONS.len(),
            REGISTRATIONS
                .iter()
                .map(settings::describe)
                .collect::<Vec<_>>()
                .join("; ")
        ),
        format_args!(
            "the plugin's copy lacks the hooks {}; run claude plugin update {}",
            missing.join(", "),
            p.id
        ),
    )?;
    for program in settings::HOOK_PROGRAMS {
        let found = find_on_path(path_var, program).or_else(|| {
            launcher_fallbacks(program)
                .into_iter()
                .find(|p| is_executable(p))
        });
        match found {
            Some(path) => report.line(
                Status::Ok,
                format_args!("the plugin runs {program} ({})", path.display()),
            )?,
            None => report.line(
                Status::Fail,
                format_args!(
                    "the plugin cannot find {program} (not on PATH, in ~/.local/bin or ~/.cargo/bin); run ./install.sh in a jkz checkout"
                ),
            )?,
        }
    }
    for (name, text) in COMMANDS {
        let path = copy.join("commands").join(name);
        let command = format!("/jkz:{}", name.trim_end_matches(".md"));
        let same = crate::state_dir::read_user_file(&path).is_ok_and(|b| b == text.as_bytes());
        report.check(
            same,
            format_args!("{command} (the plugin's, {})", path.display()),
            format_args!(
                "{command} of the plugin ({}) is missing or differs from this jkz version's; run claude plugin update {}",
                path.display(),
                p.id
            ),
        )?;
    }
    Ok(())
}

fn check_settings<W: Write>(
    report: &mut Report<W>,
    project_dir: &Path,
    sources: &[(String, Map<String, Value>)],
    path_var: &OsStr,
) -> Result<(), Failure> {
    if let Some((shown, _)) = sources.iter().find(|(_, m)| settings::has_jkz_hooks(m)) {
        report.line(
            Status::Ok,
            format_args!("active path: settings (jkz install), {shown}"),
        )?;
    }
    for reg in REGISTRATIONS {
        let found = sources.iter().find_map(|(shown, map)| {
            settings::registered_commands(map, reg.event, reg.matcher, reg.program)
                .into_iter()
                .next()
                .map(|c| (shown.clone(), c))
        });
        let what = format!("hook {}", settings::describe(&reg));
        match found {
            Some((shown, command)) => {
                let program = settings::command_path(&command);
                let runnable = if program.contains('/') {
                    is_executable(Path::new(&program))
                } else {
                    find_on_path(path_var, &program).is_some()
                };
                report.check(
                    runnable,
                    format_args!("{what}: {command} (in {shown})"),
                    format_args!("{what}: {command} (in {shown}) is not an executable file; run jkz install again"),
                )?
            }
            None => report.line(
                Status::Fail,
                format_args!(
                    "{what} not registered; run jkz install --project {}, or install the plugin (claude plugin install jkz@jkz)",
                    project_dir.display()
                ),
            )?,
        }
    }
    Ok(())
}
