//! `jkz state …`: the pipeline state from a terminal or a bash script.
//!
//! Output is stable and colourless (scripts parse it): `get` prints a string
//! value bare and any other value as compact JSON, one line; `show` and
//! `list --json` print JSON; `list` prints an aligned table with `-` for
//! empty cells; `validate` prints one line per problem. Stored text reaches
//! a terminal only through [`crate::terminal_text`]: the table and the
//! problems always, `get` when its stdout is a terminal (a script reading
//! it through a pipe gets the value exactly).
//!
//! Exit codes of `jkz state`:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | no such file or field (`get`, `show`), no PR number (`pr`), a refused value (`set`), problems found (`validate`) |
//! | 2 | usage error (a PR that is not a number too), a repository whose layout cannot be read, or a file that could not be read (corrupt, too large) or written |
//! | 3 | `set`: refused, issue N is claimed by another live chat (see `jkz claim`); nothing written |
//! | 4 | no state directory (every subcommand; `set` creates one the user named) |

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::Value;

use crate::exit::{Failure, EXIT_OK, EXIT_USAGE};
use crate::pipeline::{self, IssueNumber, PipelineDoc, SetError};
use crate::state_dir::StateDir;
use crate::terminal_text::{inert, inert_lines};

/// `jkz state`'s exit code when the answer is no: no such file or field
/// (`get`, `show`), no PR number (`pr`), a value refused or a file left
/// invalid (`set`), problems found (`validate`). The table is in
/// docs/exit-codes.md.
pub const EXIT_FAILED: u8 = 1;

/// `jkz state`'s exit code when what it needs cannot be used: a repository whose layout cannot be read,
/// a file that could not be read or written. The same code as a usage
/// error ([`EXIT_USAGE`]): the caller must fix something before asking again.
pub const EXIT_UNUSABLE: u8 = EXIT_USAGE;

/// `jkz state`: read and write `state/pipeline/<N>.json`.
#[derive(Args, Debug)]
pub struct StateArgs {
    #[command(subcommand)]
    pub command: StateCommand,
}

#[derive(Subcommand, Debug)]
pub enum StateCommand {
    /// Print one field of issue N (a string bare, anything else as JSON).
    Get {
        /// The issue number (digits; leading zeros are dropped: 007 is 7).
        #[arg(value_parser = IssueNumber::parse)]
        issue: IssueNumber,
        /// The field: one in the issue's data, `lastActivity`/`heartbeat_pid`
        /// (beside it), or one the normalized view derives (`verdict`, …).
        field: String,
    },
    /// Set one field of issue N (`lastActivity` and `heartbeat_pid` beside the
    /// issue's data, as the contract puts them); also stamps `last_updated`
    /// and `lastActivity`. Refused when the file would break the contract,
    /// and (exit 3) when another live chat has claimed issue N. From a chat
    /// (its Bash tool; or --session, or $JKZ_SESSION, $CLAUDE_SESSION_ID,
    /// $CLAUDE_CODE_SESSION_ID naming one), also claims issue N for it when
    /// no other chat holds it (see `jkz claim`).
    Set {
        #[arg(value_parser = IssueNumber::parse)]
        issue: IssueNumber,
        field: String,
        /// Stored as a string (the contract stores scalars as strings) unless --json.
        value: String,
        /// Parse VALUE as JSON (for arrays and objects, e.g. '["a","b"]').
        #[arg(long)]
        json: bool,
        /// Write even though another live chat has claimed issue N, with a
        /// warning naming that chat. For a person at a terminal: from inside
        /// a chat it is refused (exit 3).
        #[arg(long)]
        force: bool,
        /// Write as this session (a pipeline script's, as it claimed with
        /// `jkz claim --session ID`): its claim on issue N is its own. Default:
        /// the chat whose client runs this command, else $JKZ_SESSION, else
        /// $CLAUDE_SESSION_ID, else $CLAUDE_CODE_SESSION_ID; inside a chat it
        /// may name only that chat (exit 3).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
    },
    /// Print issue N's normalized view as JSON.
    Show {
        #[arg(value_parser = IssueNumber::parse)]
        issue: IssueNumber,
    },
    /// List every pipeline: issue, phase, agent, type, PR, verdict, last update.
    List {
        /// Print the normalized views as a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print the PR number to act on for issue N: PR when it is a number,
    /// else $JKZ_PR_NUMBER when it is one, else the issue's pr_number field
    /// (exit 1 when none of them is).
    Pr {
        #[arg(value_parser = IssueNumber::parse)]
        issue: IssueNumber,
        /// An explicit PR number (digits, a leading # allowed: 12 or #12);
        /// it wins over the others. Empty counts as not given; anything
        /// else that is not a PR number is an error (exit 2).
        pr: Option<String>,
    },
    /// Check pipeline files against the contract (all of them when no FILE).
    /// A pr_number that is not a PR number reads as null: a warning on
    /// stderr, not a problem.
    Validate {
        /// Pipeline files (`<N>.json`) to check.
        files: Vec<PathBuf>,
    },
}

/// Runs a `jkz state` command; output goes to `out`. Returns the exit code.
pub fn run(args: StateArgs, state: &StateDir, out: &mut impl Write) -> Result<u8, Failure> {
    let write_err = |e| Failure::io(EXIT_UNUSABLE, "writing stdout", e);
    match args.command {
        StateCommand::Get { issue, field } => {
            let doc = read_doc(state, &issue)?;
            let Some(value) = field_value(&doc, &field) else {
                return Err(Failure::new(
                    EXIT_FAILED,
                    format!("issue {issue} has no field {field:?}"),
                ));
            };
            let text = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            if std::io::stdout().is_terminal() {
                writeln!(out, "{}", inert_lines(&text))
            } else {
                writeln!(out, "{text}")
            }
            .map_err(write_err)?;
        }
        StateCommand::Set {
            issue,
            field,
            value,
            json,
            force,
            session,
        } => {
            let value = if json {
                serde_json::from_str(&value).map_err(|e| {
                    Failure::new(
                        EXIT_FAILED,
                        format!(
                            "--json: VALUE is not JSON ({e}): {}",
                            pipeline::shorten(&value, 80)
                        ),
                    )
                })?
            } else {
                Value::String(value)
            };
            let dir = state
                .ensure_subdir(crate::state_dir::layout::PIPELINE_DIR)
                .map_err(|e| {
                    Failure::io(
                        EXIT_UNUSABLE,
                        format!(
                            "creating {}",
                            state.join(crate::state_dir::layout::PIPELINE_DIR).display()
                        ),
                        e,
                    )
                })?;
            if dir.is_none() {
                return Err(no_state_dir(state));
            }
            // The claim is enforced here, by the writer, whatever spelling
            // of the command got this far.
            for line in
                crate::registry::writer::may_write(state.path(), &issue, force, session.as_deref())?
            {
                eprintln!("jkz state set: {line}");
            }
            let path = pipeline::pipeline_path(state, &issue);
            let logged = |from: Option<&Value>, to: &Value| {
                crate::events::sources::pipeline_field_set(&path, &issue, &field, from, to)
            };
            let now = pipeline::now_timestamp();
            pipeline::set_field(&path, &issue, &field, value, &now, logged).map_err(
                |e| match e {
                    SetError::Refused(why) => {
                        Failure::new(EXIT_FAILED, format!("{}: {why}", path.display()))
                    }
                    SetError::Update(crate::json_file::UpdateError::NotAnObject(why)) => {
                        Failure::new(
                            EXIT_UNUSABLE,
                            format!("{why}: could not be read; fix or remove it"),
                        )
                    }
                    SetError::Update(crate::json_file::UpdateError::Io(e)) => {
                        Failure::io(EXIT_UNUSABLE, format!("writing {}", path.display()), e)
                    }
                },
            )?;
        }
        StateCommand::Show { issue } => {
            let doc = read_doc(state, &issue)?;
            let text = serde_json::to_string_pretty(&doc.normalized()).expect("serializes");
            writeln!(out, "{text}").map_err(write_err)?;
        }
        StateCommand::List { json } => {
            let files = pipeline::list(state).map_err(|e| {
                Failure::io(
                    EXIT_UNUSABLE,
                    format!(
                        "reading {}",
                        state.join(crate::state_dir::layout::PIPELINE_DIR).display()
                    ),
                    e,
                )
            })?;
            let mut views = Vec::new();
            for loaded in pipeline::load_all(&files) {
                match loaded.view {
                    Ok(view) => views.push(view),
                    Err(e) => eprintln!(
                        "jkz state list: {}",
                        inert(&format!("{}: {e}", loaded.file.path.display()))
                    ),
                }
            }
            if json {
                let text = serde_json::to_string_pretty(&views).expect("serializes");
                writeln!(out, "{text}").map_err(write_err)?;
            } else {
                write_table(out, &views).map_err(write_err)?;
            }
        }
        StateCommand::Pr { issue, pr } => {
            let env = std::env::var("JKZ_PR_NUMBER").ok();
            for (what, level) in [("PR", &pr), ("JKZ_PR_NUMBER", &env)] {
                let given = level.as_deref().map(str::trim).filter(|s| !s.is_empty());
                if let Some(given) = given {
                    if pipeline::resolve_pr_number(Some(given), None, None).is_none() {
                        return Err(Failure::new(
                            EXIT_USAGE,
                            format!(
                                "{what} {:?} is not a PR number: expected digits, a leading # allowed, e.g. 12 or #12",
                                pipeline::shorten(given, 40)
                            ),
                        ));
                    }
                }
            }
            // The file is read only when the first two levels give nothing.
            let resolved = match pipeline::resolve_pr_number(pr.as_deref(), env.as_deref(), None) {
                Some(n) => Some(n),
                None => {
                    let doc = read_doc(state, &issue)?;
                    pipeline::resolve_pr_number(None, None, Some(&doc.normalized()))
                }
            };
            let Some(n) = resolved else {
                return Err(Failure::new(
                    EXIT_FAILED,
                    format!(
                        "no PR number for issue {issue}: none given, JKZ_PR_NUMBER unset or not a number, and its pr_number field empty or not a number"
                    ),
                ));
            };
            writeln!(out, "{n}").map_err(write_err)?;
        }
        StateCommand::Validate { files } => {
            let mut problems = 0usize;
            let targets: Vec<PathBuf> = if files.is_empty() {
                if !state.exists() {
                    return Err(no_state_dir(state));
                }
                let dir = state.join(crate::state_dir::layout::PIPELINE_DIR);
                for (_, why) in pipeline::misnamed_in(&dir) {
                    problems += 1;
                    writeln!(out, "{}", inert(&format!("{}: {why}", dir.display())))
                        .map_err(write_err)?;
                }
                pipeline::list(state)
                    .map_err(|e| {
                        Failure::io(EXIT_UNUSABLE, format!("reading {}", dir.display()), e)
                    })?
                    .into_iter()
                    .map(|f| f.path)
                    .collect()
            } else {
                files
            };
            for path in &targets {
                let checked = validate_path(path);
                for line in checked.problems {
                    problems += 1;
                    writeln!(out, "{}", inert(&line.to_string())).map_err(write_err)?;
                }
                for line in checked.warnings {
                    eprintln!("jkz state validate: warning: {}", inert(&line.to_string()));
                }
            }
            out.flush().map_err(write_err)?;
            if std::io::stderr().is_terminal() {
                eprintln!(
                    "jkz state validate: checked {} pipeline file{}: {}",
                    targets.len(),
                    if targets.len() == 1 { "" } else { "s" },
                    match problems {
                        0 => "no problems".to_string(),
                        1 => "1 problem".to_string(),
                        n => format!("{n} problems"),
                    }
                );
            }
            return Ok(if problems > 0 { 1 } else { 0 });
        }
    }
    out.flush().map_err(write_err)?;
    Ok(EXIT_OK)
}

fn no_state_dir(state: &StateDir) -> Failure {
    Failure::new(crate::exit::EXIT_NO_STATE_DIR, state.missing())
}

fn read_doc(state: &StateDir, issue: &IssueNumber) -> Result<PipelineDoc, Failure> {
    let path = pipeline::pipeline_path(state, issue);
    let bytes = match crate::state_dir::read_state_file(&path, pipeline::MAX_PIPELINE_FILE) {
        Ok(b) if b.len() as u64 > pipeline::MAX_PIPELINE_FILE => {
            return Err(Failure::new(
                EXIT_UNUSABLE,
                format!(
                    "{}: larger than {} bytes: not a pipeline file",
                    path.display(),
                    pipeline::MAX_PIPELINE_FILE
                ),
            ))
        }
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Failure::new(
                EXIT_FAILED,
                format!(
                    "no pipeline state for issue {issue} ({} does not exist)",
                    path.display()
                ),
            ))
        }
        Err(e) => {
            return Err(Failure::io(
                EXIT_UNUSABLE,
                format!("reading {}", path.display()),
                e,
            ))
        }
    };
    PipelineDoc::parse(issue.clone(), &bytes).map_err(|e| {
        Failure::new(
            EXIT_UNUSABLE,
            format!(
                "{}: could not be read: {e}; fix or remove it (jkz state validate)",
                path.display()
            ),
        )
    })
}

/// A field as `get` reads it: a sibling beside the issue's data, else a
/// field of the data as stored, else one the normalized view derives
/// (`verdict`, defaults such as `current_phase` `unknown`); a derived null
/// is no value.
fn field_value(doc: &PipelineDoc, field: &str) -> Option<Value> {
    if pipeline::SIBLINGS.contains(&field) {
        return doc.sibling(field).cloned();
    }
    if let Some(value) = doc.field(field) {
        return Some(value.clone());
    }
    match serde_json::to_value(doc.normalized()) {
        Ok(Value::Object(mut view)) => view.remove(field).filter(|v| !v.is_null()),
        _ => None,
    }
}

/// The problems of one file, as lines.
/// The problems (stdout, exit 1) and the warnings (stderr only) of one
/// pipeline file.
fn validate_path(path: &std::path::Path) -> pipeline::Checked {
    let shown = path.display().to_string();
    let problem = |message: String| pipeline::Checked {
        problems: vec![pipeline::Problem {
            file: shown.clone(),
            field: String::new(),
            message,
        }],
        warnings: Vec::new(),
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let Some(issue) = pipeline::issue_of_file_name(name) else {
        return problem("file name: expected <N>.json with N the issue number (digits)".into());
    };
    match crate::state_dir::read_whole_state_file(path, pipeline::MAX_PIPELINE_FILE) {
        Ok(bytes) => pipeline::check(&shown, &issue, &bytes),
        Err(e) => problem(format!("unreadable: {e}")),
    }
}

fn write_table(out: &mut impl Write, views: &[pipeline::Normalized]) -> std::io::Result<()> {
    let cell = |s: Option<String>| {
        s.filter(|s| !s.is_empty())
            .map(|s| inert(&s.split_whitespace().collect::<Vec<_>>().join("_")).into_owned())
            .unwrap_or_else(|| "-".into())
    };
    let mut rows = vec![[
        "ISSUE", "PHASE", "AGENT", "TYPE", "PR", "VERDICT", "UPDATED",
    ]
    .map(String::from)];
    for v in views {
        rows.push([
            v.issue.to_string(),
            cell(Some(v.current_phase.clone())),
            cell(v.active_agent.clone()),
            cell(Some(v.issue_type.clone())),
            cell(v.pr_number.map(|n| n.to_string())),
            cell(v.verdict.map(|v| v.as_str().to_string())),
            cell(v.last_updated.clone()),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    for row in &rows {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(c);
            } else {
                line.push_str(&format!("{c:<w$}  "));
            }
        }
        writeln!(out, "{line}")?;
    }
    Ok(())
}
