//! `jkz-session`: per-session snapshots another chat can resume from
//! (`/jkz:save`, `/jkz:load`).
//!
//! A snapshot is `state/session-snapshots/<id>.json`, one JSON object shared
//! with `jkz-pre-compact` (which records compaction facts there). A save
//! edits it under its lock ([`crate::json_file::update_object`]): fields it
//! does not own survive, and concurrent saves into the same session all land
//! — their items merge, and `next_steps`, replaced by each save, is the last
//! writer's, whole. Fields owned here:
//!
//! | field | content |
//! |---|---|
//! | `session_id` | the id, as in the file name |
//! | `saved_at` | RFC 3339 UTC time of the last save |
//! | `saves` | how many saves went into the file |
//! | `notes` | `{completed_work, decisions, gotchas, next_steps, other_notes}`, see [`notes`] |
//! | `git` | [`crate::git::GitState`] at the last save (branch, head, changed paths) |
//! | `pipeline` | [`crate::pipeline::Normalized`] of every pipeline at the last save |
//!
//! Session identity: the order of [`crate::session_id::resolve_raw`]
//! (`--session`, then `JKZ_SESSION`, `CLAUDE_SESSION_ID`, `CLAUDE_CODE_SESSION_ID`),
//! else `anonymous`, validated by [`SessionId::parse`].

pub mod notes;
pub mod render;

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::state_dir::layout::SESSION_RECORD_DIR;

use chrono::{DateTime, SecondsFormat, Utc};
use clap::{Parser, Subcommand};
use serde_json::{Map, Value};

use crate::exit::{Failure, EXIT_OK, EXIT_USAGE};
use crate::git;
use crate::json_file::{update_object, UpdateError};
use crate::pipeline;
use crate::session_id::SessionId;
use crate::state_dir::StateDir;
use crate::terminal_text::inert;

/// The largest save input accepted, in bytes.
pub const MAX_INPUT_BYTES: u64 = 1 << 20;

/// The session id used when none is given or set.
pub const ANONYMOUS: &str = "anonymous";

/// Exit code of a failure: I/O, no state directory to save into, a
/// repository whose layout cannot be read, a state directory git tracks
/// (the others: success
/// [`EXIT_OK`], usage [`EXIT_USAGE`]).
pub const EXIT_FAILED: u8 = 1;

/// Save and load per-session snapshots (/jkz:save, /jkz:load).
///
/// Exit codes: 0 success (also: nothing to load); 1 failure (I/O, no state
/// directory to save into, a repository whose layout cannot be read, a
/// state directory git tracks);
/// 2 usage (bad arguments, an invalid session id, save input without sections).
#[derive(Parser, Debug)]
#[command(
    name = "jkz-session",
    version,
    about = "Save and load per-session snapshots (/jkz:save, /jkz:load)"
)]
pub struct SessionCli {
    #[command(flatten)]
    pub state: crate::state_dir::StateDirArg,
    /// The session id (default: $JKZ_SESSION, else $CLAUDE_SESSION_ID, else $CLAUDE_CODE_SESSION_ID, else "anonymous").
    /// 1 to 128 characters from A-Z a-z 0-9 . _ -
    #[arg(long, global = true, value_name = "ID")]
    pub session: Option<String>,
    #[command(subcommand)]
    pub command: SessionCommand,
}

#[derive(Subcommand, Debug)]
pub enum SessionCommand {
    /// Merge notes (markdown sections ## Completed work, ## Decisions, ## Gotchas,
    /// ## Next steps, or the same as JSON) into this session's snapshot, with git
    /// state and pipeline status; print where it was written.
    Save(SaveArgs),
    /// Print a snapshot as markdown for the model (newest facts first, at most
    /// 8,000 bytes): the named session's, else the most recent other session's,
    /// else this session's.
    Load(LoadArgs),
    /// List saved sessions, newest first: age, branch, headline.
    List(ListArgs),
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// One JSON array instead of a table: each session's session_id,
    /// current (this session's), saved_at, branch and headline.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct SaveArgs {
    /// Read the notes from FILE ("-" or nothing: standard input).
    #[arg(value_name = "FILE")]
    pub input: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// Print the whole snapshot as JSON instead of markdown.
    #[arg(long)]
    pub json: bool,
}

/// The session id from the flag, else the environment, else `anonymous`.
pub fn resolve_session(
    flag: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(SessionId, bool), Failure> {
    let (raw, explicit) =
        crate::session_id::resolve_raw(flag, env).unwrap_or_else(|| (ANONYMOUS.to_string(), false));
    SessionId::parse(&raw)
        .map(|id| (id, explicit))
        .map_err(|e| Failure::new(EXIT_USAGE, e.to_string()))
}

/// The normalized status of every pipeline, most recently updated first; a
/// file that cannot be read as one is listed with its issue and the reason.
pub fn pipeline_status(state: &StateDir) -> Vec<Value> {
    let files = pipeline::list(state).unwrap_or_default();
    let mut views: Vec<Value> = pipeline::load_all(&files)
        .into_iter()
        .map(|loaded| match loaded.view {
            Ok(view) => {
                let view = serde_json::to_value(view).expect("a view serializes");
                // The record nests each view two levels down (object,
                // `pipeline` array): a deeper one would make the record
                // unreadable, and lose every note saved in it.
                let depth = crate::json_depth::depth(&view);
                if depth > crate::json_depth::MAX_READABLE_DEPTH - 2 {
                    serde_json::json!({
                        "issue": loaded.file.issue.as_str(),
                        "error": format!("a field nests {depth} levels; not recorded"),
                    })
                } else {
                    view
                }
            }
            Err(e) => serde_json::json!({"issue": loaded.file.issue.as_str(), "error": e.0}),
        })
        .collect();
    let updated = |v: &Value| v["last_updated"].as_str().unwrap_or("").to_string();
    views.sort_by_key(|v| std::cmp::Reverse(updated(v)));
    views
}

/// Runs a parsed command line with the process environment.
pub fn run(cli: &SessionCli, stdin: impl Read, out: &mut impl Write) -> Result<u8, Failure> {
    let (id, explicit) = resolve_session(cli.session.as_deref(), crate::session_id::process_env)?;
    let state = cli.state.resolve();
    state
        .check()
        .map_err(|why| Failure::new(EXIT_FAILED, why))?;
    // A state directory git tracks holds a repository's files: a snapshot
    // there is not one jkz saved.
    state
        .check_untracked()
        .map_err(|why| Failure::new(EXIT_FAILED, why))?;
    let now = Utc::now();
    let code = match &cli.command {
        SessionCommand::Save(args) => {
            let text = read_input(args.input.as_deref(), stdin)?;
            let project = std::env::var_os("CLAUDE_PROJECT_DIR")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."));
            save(&state, &id, &text, &project, now, out)?
        }
        SessionCommand::Load(args) => load(&state, &id, explicit, args.json, now, out)?,
        SessionCommand::List(args) => list(&state, &id, now, args.json, out)?,
    };
    out.flush()
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(code)
}

fn read_input(input: Option<&Path>, stdin: impl Read) -> Result<String, Failure> {
    let mut bytes = Vec::new();
    let (shown, result) = match input {
        None => (
            "standard input".to_string(),
            stdin.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes),
        ),
        Some(p) if p == Path::new("-") => (
            "standard input".to_string(),
            stdin.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes),
        ),
        Some(p) => (
            p.display().to_string(),
            fs::File::open(p).and_then(|f| f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)),
        ),
    };
    result.map_err(|e| Failure::io(EXIT_FAILED, format!("reading {shown}"), e))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(Failure::new(
            EXIT_USAGE,
            format!("{shown} is over {MAX_INPUT_BYTES} bytes; save notes, not transcripts"),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| Failure::new(EXIT_USAGE, format!("{shown} is not UTF-8 text")))
}

/// Merges `text` into the snapshot of `id`; prints where it wrote.
pub fn save(
    state: &StateDir,
    id: &SessionId,
    text: &str,
    project: &Path,
    now: DateTime<Utc>,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    let notes = notes::parse(text).map_err(|why| Failure::new(EXIT_USAGE, why))?;
    let dir = state
        .ensure_subdir(SESSION_RECORD_DIR)
        .map_err(|e| {
            Failure::io(
                EXIT_FAILED,
                format!("creating {}", state.join(SESSION_RECORD_DIR).display()),
                e,
            )
        })?
        .ok_or_else(|| Failure::new(EXIT_FAILED, state.missing()))?;
    let path = crate::session_record::record_path(state, id);
    debug_assert_eq!(path.parent(), Some(dir.as_path()));
    let saved_at = now.to_rfc3339_opts(SecondsFormat::Millis, true);
    // Gathered before the lock is taken: git may be slow.
    let git = serde_json::to_value(git::state_of(project, git::SAVE_TIMEOUT))
        .expect("git state serializes");
    let pipeline = pipeline_status(state);
    let saves = update_object(&path, |snap| -> Result<u64, SaveError> {
        snap.insert("session_id".into(), id.as_str().into());
        snap.insert("saved_at".into(), saved_at.clone().into());
        let saves = snap.get("saves").and_then(Value::as_u64).unwrap_or(0) + 1;
        snap.insert("saves".into(), saves.into());
        let mut notes_obj = match snap.remove("notes") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        notes::merge(&mut notes_obj, &notes, &saved_at);
        snap.insert("notes".into(), Value::Object(notes_obj));
        snap.insert("git".into(), git.clone());
        snap.insert("pipeline".into(), Value::Array(pipeline.clone()));
        Ok(saves)
    })
    .map_err(|e| match e.0 {
        UpdateError::Io(err) => {
            Failure::io(EXIT_FAILED, format!("writing {}", path.display()), err)
        }
        UpdateError::NotAnObject(why) => Failure::new(
            EXIT_FAILED,
            format!("{why}; move it away to start this session's snapshot afresh"),
        ),
    })?;
    let counts: Vec<String> = notes
        .sections
        .iter()
        .map(|(s, items)| format!("{} {}", items.len(), s.title().to_lowercase()))
        .collect();
    writeln!(
        out,
        "saved session {} to {} (save {saves}: {})",
        id,
        path.display(),
        counts.join(", ")
    )
    .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
}

struct SaveError(UpdateError);

impl From<UpdateError> for SaveError {
    fn from(e: UpdateError) -> Self {
        SaveError(e)
    }
}

/// One snapshot file as found.
struct Found {
    id: String,
    snap: Map<String, Value>,
    /// `saved_at`, when the session was ever saved.
    saved_at: Option<DateTime<Utc>>,
    modified: DateTime<Utc>,
}

impl Found {
    fn when(&self) -> DateTime<Utc> {
        self.saved_at.unwrap_or(self.modified)
    }
}

/// Every readable snapshot, newest first (by `saved_at`, else file time).
fn snapshots(state: &StateDir) -> Vec<Found> {
    let mut found = Vec::new();
    for e in fs::read_dir(state.join(SESSION_RECORD_DIR))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".json") else {
            continue;
        };
        if SessionId::parse(id).is_err() || name.starts_with('.') {
            continue;
        }
        let Ok(Ok(Value::Object(snap))) =
            crate::state_dir::read_state_file(&e.path(), crate::session_record::MAX_RECORD_BYTES)
                .map(|b| serde_json::from_slice::<Value>(&b))
        else {
            continue;
        };
        let modified = e
            .metadata()
            .and_then(|m| m.modified())
            .map(DateTime::<Utc>::from)
            .unwrap_or_default();
        let saved_at = snap
            .get("saved_at")
            .and_then(Value::as_str)
            .and_then(render::parse_time);
        found.push(Found {
            id: id.to_string(),
            snap,
            saved_at,
            modified,
        });
    }
    found.sort_by(|a, b| b.when().cmp(&a.when()).then(a.id.cmp(&b.id)));
    found
}

/// Prints a snapshot for the model (or as JSON).
pub fn load(
    state: &StateDir,
    current: &SessionId,
    explicit: bool,
    json: bool,
    now: DateTime<Utc>,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    let all = snapshots(state);
    let chosen = if explicit {
        let path = crate::session_record::record_path(state, current);
        match all.into_iter().find(|f| f.id == current.as_str()) {
            Some(f) => f,
            None => {
                // Said on stdout with success: the slash command shows a
                // failing command's output to no one.
                writeln!(
                    out,
                    "No snapshot for session {current} ({} is missing or unreadable). jkz-session list shows the saved sessions.",
                    path.display()
                )
                .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
                return Ok(EXIT_OK);
            }
        }
    } else {
        // Another session's save first; this session's only if alone.
        let mut saved = all.into_iter().filter(|f| f.saved_at.is_some());
        let mut own = None;
        let mut other = None;
        for f in saved.by_ref() {
            if f.id == current.as_str() {
                own.get_or_insert(f);
            } else {
                other = Some(f);
                break;
            }
        }
        match other.or(own) {
            Some(f) => f,
            None => {
                writeln!(
                    out,
                    "No saved jkz session snapshot to load (none in {}). Save one with /jkz:save (jkz-session save) first.",
                    state.join(SESSION_RECORD_DIR).display()
                )
                .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
                return Ok(EXIT_OK);
            }
        }
    };
    let text = if json {
        let mut text = serde_json::to_string_pretty(&Value::Object(chosen.snap))
            .expect("a JSON map serializes");
        text.push('\n');
        text
    } else {
        render::load_markdown(&chosen.id, &chosen.snap, now, render::LOAD_MAX_BYTES)
    };
    out.write_all(text.as_bytes())
        .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
    Ok(EXIT_OK)
}

/// Prints one line per snapshot, newest first: `*` for this session, id,
/// age, branch, headline.
pub fn list(
    state: &StateDir,
    current: &SessionId,
    now: DateTime<Utc>,
    json: bool,
    out: &mut impl Write,
) -> Result<u8, Failure> {
    let all = snapshots(state);
    let branch_of = |f: &Found| {
        f.snap
            .get("git")
            .and_then(|g| g.get("branch"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    if json {
        let rows: Vec<Value> = all
            .iter()
            .map(|f| {
                serde_json::json!({
                    "session_id": f.id,
                    "current": f.id == current.as_str(),
                    "saved_at": f.when().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    "branch": branch_of(f),
                    "headline": render::headline(&f.snap),
                })
            })
            .collect();
        crate::json_output::write(out, &rows)
            .map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))?;
        return Ok(EXIT_OK);
    }
    // A snapshot's branch and headline are shown, never obeyed.
    let w = |out: &mut dyn Write, line: String| {
        writeln!(out, "{}", inert(&line)).map_err(|e| Failure::io(EXIT_FAILED, "writing stdout", e))
    };
    if all.is_empty() {
        w(
            out,
            format!(
                "no session snapshots in {}",
                state.join(SESSION_RECORD_DIR).display()
            ),
        )?;
        return Ok(EXIT_OK);
    }
    let id_width = all.iter().map(|f| f.id.len()).max().unwrap_or(0);
    for f in &all {
        let mark = if f.id == current.as_str() { '*' } else { ' ' };
        let branch = branch_of(f);
        let branch = branch.as_deref().unwrap_or("-");
        w(
            out,
            format!(
                "{mark} {:<id_width$}  {:>4}  {:<16}  {}",
                f.id,
                render::age(f.when(), now),
                branch,
                render::headline(&f.snap)
            ),
        )?;
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        SessionCli::command().debug_assert();
    }

    #[test]
    fn identity_precedence() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let both: &[(&str, &str)] = &[("CLAUDE_SESSION_ID", "a"), ("CLAUDE_CODE_SESSION_ID", "b")];
        assert_eq!(
            resolve_session(Some("f"), env(both)).unwrap().0.as_str(),
            "f"
        );
        assert_eq!(resolve_session(None, env(both)).unwrap().0.as_str(), "a");
        assert_eq!(
            resolve_session(None, env(&both[1..])).unwrap().0.as_str(),
            "b"
        );
        let empty: &[(&str, &str)] = &[("CLAUDE_SESSION_ID", ""), ("CLAUDE_CODE_SESSION_ID", "b")];
        assert_eq!(resolve_session(None, env(empty)).unwrap().0.as_str(), "b");
        assert_eq!(
            resolve_session(None, env(&[])).unwrap(),
            (SessionId::parse("anonymous").unwrap(), false)
        );
        let bad: &[(&str, &str)] = &[("CLAUDE_SESSION_ID", "../x")];
        assert_eq!(resolve_session(None, env(bad)).unwrap_err().code, 2);
    }
}
