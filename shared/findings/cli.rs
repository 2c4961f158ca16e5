//! `jkz findings`: import review findings, list an issue's findings with
//! their status, dismiss one.
//!
//! Exit codes of `jkz findings`:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | the history could not be opened, read or written; no such finding (`dismiss`) or iteration (`--iteration`) |
//! | 2 | usage: bad arguments |
//! | 3 | `import`: the input was refused (malformed JSON, the wrong shape, too large, a finding without a file, an iteration out of order); nothing stored changed |
//! | 4 | no state directory (`import` creates one the user named) |

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::explain;
use super::import::{self, Source};
use super::status::Status;
use super::store::{FindingRow, Import, Store, StoreError, DB_FILE};
use crate::exit::{Failure, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::pipeline::IssueNumber;
use crate::state_dir::StateDir;
use crate::terminal_text::inert;

/// Exit code: the input was refused.
pub const EXIT_REFUSED: u8 = 3;

/// `jkz findings`.
#[derive(Args, Debug, Clone)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = IDENTITY_HELP
)]
pub struct FindingsArgs {
    #[command(subcommand)]
    pub command: Option<FindingsCommand>,
    #[command(flatten)]
    pub list: ListArgs,
}

const IDENTITY_HELP: &str = "\
Identity: a finding is the same across iterations and sources when its file
and its normalized message match: case, whitespace, punctuation, line
references (line 42, L42, path:42) and the contents of `code spans` are
ignored, and the line may move. --explain shows how findings were matched
and the near-misses.

Status: new (first seen in the latest iteration), open (still reported),
resolved (absent from the latest iteration its reporters reviewed),
reintroduced (back after being resolved), dismissed (jkz findings dismiss).

Exit codes: 0 done; 1 the history (state/cr-history.db) could not be used,
no such finding or iteration; 2 usage; 3 import refused the input (nothing
stored changed); 4 no state directory.";

/// `jkz findings --issue N …`: list.
#[derive(Args, Debug, Clone)]
pub struct ListArgs {
    /// The issue whose findings to list.
    #[arg(long, value_name = "N", value_parser = IssueNumber::parse, required = true)]
    pub issue: Option<IssueNumber>,
    /// Show the findings as they stood at iteration K (default: the latest).
    #[arg(long, value_name = "K")]
    pub iteration: Option<u32>,
    /// Only findings of this status: new, open, reintroduced, resolved,
    /// dismissed.
    #[arg(long, value_name = "S", value_parser = parse_status)]
    pub status: Option<Status>,
    /// One JSON array of objects (id, file, line, message, status,
    /// first_iteration, last_iteration, sources, severity, …).
    #[arg(long)]
    pub json: bool,
    /// Also show how each finding was matched (its normalized message and
    /// every sighting) and the near-misses the rule kept apart.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Subcommand, Debug, Clone)]
pub enum FindingsCommand {
    /// Import one source's findings for one iteration of an issue (a
    /// re-import of the same issue, iteration, source and role replaces it).
    Import(ImportArgs),
    /// Mark a finding as one that will not be fixed, with the reason.
    Dismiss(DismissArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// The issue the findings are about.
    #[arg(long, value_name = "N", value_parser = IssueNumber::parse)]
    pub issue: IssueNumber,
    /// The iteration of the fix cycle they were reported in (1, 2, …).
    #[arg(long, value_name = "K")]
    pub iteration: u32,
    /// Who reported them: coderabbit (a pull request's review comments as
    /// `gh api repos/O/R/pulls/N/comments` prints them), verdict (a text
    /// holding a verdict-json block), jg (review-result.json or
    /// test-result.json).
    #[arg(long, value_name = "SOURCE", value_enum)]
    pub source: Source,
    /// The agent or artifact that reported them (reviewer, qa, …): imports
    /// of one source by different roles stand side by side. Default: none
    /// (for jg: review or test, from the file's shape).
    #[arg(long, value_name = "ROLE", value_parser = parse_role)]
    pub role: Option<String>,
    /// The file to import, or - for stdin (at most 16 MiB).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct DismissArgs {
    /// The finding's id (from `jkz findings --issue N`).
    #[arg(value_name = "ID")]
    pub id: i64,
    /// Why it will not be fixed.
    #[arg(long, value_name = "TEXT", value_parser = parse_why)]
    pub why: String,
}

fn parse_status(s: &str) -> Result<Status, String> {
    Status::parse(s).ok_or_else(|| {
        let all: Vec<&str> = Status::ALL.iter().map(|s| s.name()).collect();
        format!("'{s}' is not a status: use one of {}", all.join(", "))
    })
}

fn parse_role(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    ok.then(|| s.to_string())
        .ok_or_else(|| format!("'{s}': a role is 1 to 64 letters, digits, '-', '_' or '.'"))
}

fn parse_why(s: &str) -> Result<String, String> {
    let s = s.trim();
    (!s.is_empty())
        .then(|| s.to_string())
        .ok_or_else(|| "say why the finding will not be fixed".to_string())
}

/// Runs `jkz findings …`.
pub fn run(args: &FindingsArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    match &args.command {
        Some(FindingsCommand::Import(a)) => import_cmd(a, state, out),
        Some(FindingsCommand::Dismiss(a)) => dismiss_cmd(a, state, out),
        None => list_cmd(&args.list, state, out),
    }
}

fn store_failure(e: StoreError) -> Failure {
    match e {
        StoreError::Refused(why) => Failure::new(
            EXIT_REFUSED,
            format!("refused: {why}; nothing stored changed"),
        ),
        StoreError::Unavailable(why) => Failure::new(EXIT_FAILED, why),
    }
}

fn writing(e: std::io::Error) -> Failure {
    Failure::io(EXIT_FAILED, "writing stdout", e)
}

/// The state directory to write in: it must exist (a tool never creates
/// `state/` where the project did not opt in).
fn state_root(state: &StateDir) -> Result<PathBuf, Failure> {
    match state.ensure() {
        Ok(Some(root)) => Ok(root.to_path_buf()),
        Ok(None) => Err(Failure::new(
            crate::exit::EXIT_NO_STATE_DIR,
            state.missing(),
        )),
        Err(e) => Err(Failure::io(EXIT_FAILED, state.path().display(), e)),
    }
}

/// Reads the input named `file` (`-`: stdin) within [`import::MAX_INPUT`].
fn read_input(file: &Path) -> Result<Vec<u8>, Failure> {
    let refused = |why: String| {
        Failure::new(
            EXIT_REFUSED,
            format!("refused: {why}; nothing stored changed"),
        )
    };
    if file == Path::new("-") {
        return import::read_bounded(std::io::stdin().lock(), "stdin").map_err(refused);
    }
    let name = file.display().to_string();
    let f = std::fs::File::open(file)
        .map_err(|e| Failure::io(EXIT_FAILED, format!("reading {name}"), e))?;
    if let Ok(meta) = f.metadata() {
        if meta.is_file() && meta.len() > import::MAX_INPUT {
            return Err(refused(format!(
                "{name} is {} bytes, larger than {} MiB ({} bytes), the most `jkz findings import` reads: import one review's comments, or split the input",
                meta.len(),
                import::MAX_INPUT / (1024 * 1024),
                import::MAX_INPUT
            )));
        }
    }
    import::read_bounded(f, &name).map_err(refused)
}

fn import_cmd(args: &ImportArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let bytes = read_input(&args.file)?;
    let name = args.file.display().to_string();
    let parsed = import::parse(args.source, &bytes).map_err(|why| {
        Failure::new(
            EXIT_REFUSED,
            format!(
                "refused {name} as {}: {why}; nothing stored changed",
                args.source.name()
            ),
        )
    })?;
    let root = state_root(state)?;
    let mut store = Store::open(&root.join(DB_FILE)).map_err(store_failure)?;
    let role = args
        .role
        .as_deref()
        .or(parsed.default_role)
        .unwrap_or_default();
    let done = store
        .import(&Import {
            issue: args.issue.as_str(),
            iteration: args.iteration,
            source: args.source.name(),
            role,
            input: &name,
            findings: &parsed.findings,
            now: crate::clock::now(),
        })
        .map_err(store_failure)?;
    let who = if role.is_empty() {
        args.source.name().to_string()
    } else {
        format!("{} ({role})", args.source.name())
    };
    let merged = if done.merged > 0 {
        format!(" ({} reported twice, merged)", done.merged)
    } else {
        String::new()
    };
    let replaced = if done.replaced {
        "; replaced the earlier import of this iteration"
    } else {
        ""
    };
    writeln!(
        out,
        "issue {}, iteration {}, {who}: {} finding{}{merged}, {} new to the history{replaced}",
        args.issue,
        args.iteration,
        done.findings,
        if done.findings == 1 { "" } else { "s" },
        done.created
    )
    .map_err(writing)?;
    writeln!(
        out,
        "issue {} now: {}",
        args.issue,
        counts_text(&done.counts)
    )
    .map_err(writing)?;
    for note in &parsed.notes {
        writeln!(out, "note: {}", inert(&note.to_string())).map_err(writing)?;
    }
    out.flush().map_err(writing)?;
    Ok(EXIT_OK)
}

fn dismiss_cmd(args: &DismissArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let root = state_root(state)?;
    let path = root.join(DB_FILE);
    if !path.exists() {
        return Err(Failure::new(
            EXIT_FAILED,
            format!(
                "no finding {}: nothing has been imported yet ({} does not exist)",
                args.id,
                path.display()
            ),
        ));
    }
    let mut store = Store::open(&path).map_err(store_failure)?;
    let row = store
        .dismiss(args.id, &args.why, crate::clock::now())
        .map_err(store_failure)?
        .ok_or_else(|| {
            Failure::new(
                EXIT_FAILED,
                format!(
                    "no finding {}: see the ids in `jkz findings --issue N`",
                    args.id
                ),
            )
        })?;
    writeln!(
        out,
        "dismissed finding {} of issue {} ({}: {}): {}",
        row.id,
        inert(&row.issue),
        inert(&row.place()),
        inert(&row.message),
        inert(&args.why)
    )
    .map_err(writing)?;
    out.flush().map_err(writing)?;
    Ok(EXIT_OK)
}

/// `2 new, 3 open, …` (statuses with none left out), or `no findings`.
pub fn counts_text(counts: &[(Status, usize)]) -> String {
    if counts.is_empty() {
        return "no findings".into();
    }
    counts
        .iter()
        .map(|(s, n)| format!("{n} {}", s.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_cmd(args: &ListArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let issue = args
        .issue
        .as_ref()
        .ok_or_else(|| Failure::new(EXIT_USAGE, "name the issue: jkz findings --issue N"))?;
    let store = Store::open_read_only(&state.join(DB_FILE)).map_err(store_failure)?;
    let Some(store) = store else {
        if args.json {
            writeln!(out, "[]").map_err(writing)?;
        } else {
            writeln!(
                out,
                "issue {issue}: no findings imported (jkz findings import --issue {issue} --iteration K --source S FILE)"
            )
            .map_err(writing)?;
        }
        out.flush().map_err(writing)?;
        return Ok(EXIT_OK);
    };
    let iterations = store.iterations(issue.as_str()).map_err(store_failure)?;
    let mut rows = match args.iteration {
        Some(k) if !iterations.contains(&k) => {
            return Err(Failure::new(
                EXIT_FAILED,
                format!(
                    "issue {issue} has no iteration {k} imported (imported: {})",
                    list_or_none(&iterations)
                ),
            ))
        }
        Some(k) => store
            .findings_as_of(issue.as_str(), k)
            .map_err(store_failure)?,
        None => store
            .findings(issue.as_str(), None)
            .map_err(store_failure)?,
    };
    let all = rows.clone();
    if let Some(s) = args.status {
        rows.retain(|r| r.status == s);
    }
    let explained = if args.explain {
        Some(Explained::of(&store, issue.as_str(), &all)?)
    } else {
        None
    };
    if args.json {
        let items: Vec<Value> = rows
            .iter()
            .map(|r| {
                let mut v = r.to_json();
                if let Some(x) = &explained {
                    x.annotate(r, &mut v);
                }
                v
            })
            .collect();
        serde_json::to_writer_pretty(&mut *out, &items).map_err(|e| writing(e.into()))?;
        writeln!(out).map_err(writing)?;
    } else {
        write_table(out, issue, args.iteration, &iterations, &all, &rows)?;
        if let Some(x) = &explained {
            x.write(out, &rows, &all)?;
        }
    }
    out.flush().map_err(writing)?;
    Ok(EXIT_OK)
}

fn list_or_none(its: &[u32]) -> String {
    if its.is_empty() {
        return "none".into();
    }
    its.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_table(
    out: &mut dyn Write,
    issue: &IssueNumber,
    as_of: Option<u32>,
    iterations: &[u32],
    all: &[FindingRow],
    rows: &[FindingRow],
) -> Result<(), Failure> {
    let mut counts: Vec<(Status, usize)> = Vec::new();
    for s in Status::ALL {
        let n = all.iter().filter(|r| r.status == s).count();
        if n > 0 {
            counts.push((s, n));
        }
    }
    let at = match (as_of, iterations.last()) {
        (Some(k), _) => format!("as of iteration {k}"),
        (None, Some(l)) => format!("latest iteration {l}"),
        (None, None) => "nothing imported".into(),
    };
    writeln!(
        out,
        "issue {issue}: {at} (imported: {}); {}",
        list_or_none(iterations),
        counts_text(&counts)
    )
    .map_err(writing)?;
    if rows.is_empty() {
        return Ok(());
    }
    // What a reviewer wrote is shown, never obeyed: every stored string
    // goes through `inert` before the widths are measured.
    let places: Vec<String> = rows
        .iter()
        .map(|r| inert(&r.place()).into_owned())
        .collect();
    let sources: Vec<String> = rows
        .iter()
        .map(|r| inert(&r.sources.join(",")).into_owned())
        .collect();
    let wide =
        |f: &dyn Fn(usize) -> usize, min: usize| (0..rows.len()).map(f).max().unwrap_or(0).max(min);
    let id_w = wide(&|i| rows[i].id.to_string().len(), 2);
    let place_w = wide(&|i| places[i].chars().count(), 5).min(48);
    let src_w = wide(&|i| sources[i].chars().count(), 7);
    writeln!(
        out,
        "{:>id_w$}  {:<12}  {:<8}  {:<place_w$}  {:<5}  {:<src_w$}  MESSAGE",
        "ID", "STATUS", "SEVERITY", "WHERE", "SEEN", "SOURCES"
    )
    .map_err(writing)?;
    for ((r, place), sources) in rows.iter().zip(&places).zip(&sources) {
        let seen = if r.first_iteration == r.last_iteration {
            r.first_iteration.to_string()
        } else {
            format!("{}-{}", r.first_iteration, r.last_iteration)
        };
        let message = r.message.split_whitespace().collect::<Vec<_>>().join(" ");
        let message = match &r.dismissed_why {
            Some(why) => format!("{message} [dismissed: {why}]"),
            None => message,
        };
        let message = inert(&message);
        writeln!(
            out,
            "{:>id_w$}  {:<12}  {:<8}  {:<place_w$}  {:<5}  {:<src_w$}  {}",
            r.id,
            r.status.name(),
            r.severity.map_or("-", |s| s.name()),
            place,
            seen,
            sources,
            message
        )
        .map_err(writing)?;
    }
    Ok(())
}

/// What `--explain` adds: every finding's sightings, and the near-misses.
struct Explained {
    sightings: HashMap<i64, Vec<super::store::SightingRow>>,
    near: Vec<explain::NearMiss>,
}

impl Explained {
    fn of(store: &Store, issue: &str, all: &[FindingRow]) -> Result<Explained, Failure> {
        let (_, sightings) = store.history(issue).map_err(store_failure)?;
        let mut by_finding: HashMap<i64, Vec<_>> = HashMap::new();
        for s in sightings {
            by_finding.entry(s.finding).or_default().push(s);
        }
        Ok(Explained {
            sightings: by_finding,
            near: explain::near_misses(all),
        })
    }

    fn annotate(&self, row: &FindingRow, v: &mut Value) {
        v["identity"] = json!(row.identity);
        v["sightings"] = self
            .sightings
            .get(&row.id)
            .map(|ss| {
                ss.iter()
                    .map(|s| {
                        json!({
                            "iteration": s.import.iteration,
                            "source": s.import.source,
                            "role": (!s.import.role.is_empty()).then_some(&s.import.role),
                            "line": s.line,
                            "message": s.message,
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .into();
        v["near_misses"] = self
            .near
            .iter()
            .filter_map(|n| {
                let other = if n.a == row.id {
                    n.b
                } else if n.b == row.id {
                    n.a
                } else {
                    return None;
                };
                Some(match n.why {
                    explain::Why::SimilarMessage(s) => {
                        json!({"id": other, "why": "similar message", "similarity": (s * 100.0).round() / 100.0})
                    }
                    explain::Why::OtherFile => json!({"id": other, "why": "same message, other file"}),
                })
            })
            .collect::<Vec<_>>()
            .into();
    }

    fn write(
        &self,
        out: &mut dyn Write,
        rows: &[FindingRow],
        all: &[FindingRow],
    ) -> Result<(), Failure> {
        writeln!(
            out,
            "\nHow findings were matched (same file and same normalized message; case, whitespace, punctuation, line references and code-span contents ignored):"
        )
        .map_err(writing)?;
        for r in rows {
            writeln!(out, "#{} {}  {:?}", r.id, inert(&r.file), r.identity).map_err(writing)?;
            for s in self.sightings.get(&r.id).into_iter().flatten() {
                let role = if s.import.role.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", inert(&s.import.role))
                };
                let line = s.line.map(|l| format!(", line {l}")).unwrap_or_default();
                writeln!(
                    out,
                    "    iteration {} {}{role}{line}: {:?}",
                    s.import.iteration,
                    inert(&s.import.source),
                    s.message
                )
                .map_err(writing)?;
            }
        }
        let shown: std::collections::HashSet<i64> = rows.iter().map(|r| r.id).collect();
        let by_id: HashMap<i64, &FindingRow> = all.iter().map(|r| (r.id, r)).collect();
        let near: Vec<_> = self
            .near
            .iter()
            .filter(|n| shown.contains(&n.a) || shown.contains(&n.b))
            .collect();
        if near.is_empty() {
            writeln!(out, "\nNear-misses: none").map_err(writing)?;
        } else {
            writeln!(out, "\nNear-misses (kept apart by the rule):").map_err(writing)?;
            for n in near {
                writeln!(out, "- {}", inert(&n.reason(&by_id))).map_err(writing)?;
            }
        }
        Ok(())
    }
}
