//! `jkz patterns`: mine, inject, judge, prune and look at the patterns in
//! `state/memory.db`.
//!
//! Exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (also `inject` that printed nothing: no pattern, or a budget too small, said on stderr) |
//! | 1 | `memory.db` or the state directory could not be used (an I/O or database error) |
//! | 2 | usage: bad arguments |
//! | 3 | no pattern has that id |
//! | 4 | no state directory (`mine` creates one the user named) |

use std::io::Write;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::confine::confine_to_item;
use super::inject::{self, Injection, Request};
use super::log::{Event, Verdict};
use super::reach::Reach;
use super::score::{self, Ranked};
use super::store::{parse_tag, rfc3339, tag, Memory, MemoryError};
use crate::exit::{Failure, EXIT_FAILED, EXIT_OK};
use crate::state_dir::StateDir;
use crate::terminal_text::inert;

/// Exit code: no pattern has that id.
pub const NOT_FOUND: u8 = 3;

static AFTER_HELP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "\
Patterns are mined from deliberation records (`jkz run` mines each new one):
the items of an \"Accumulated Patterns\" block in any protected form, and
<!-- jkz:pattern TEXT --> signals. Rephrasings merge (same words after
normalizing, or a word-set similarity of {similar} or more). Scores: evidence,
feedback and recency, halving every {half} days ({var}).

Reach: a pattern seen in one issue is injected only into that issue's
prompts; seen in {wide} or more issues, or approved by a person (approve), into
every issue's. Quarantine: a text that fetches and runs a script, overrides
instructions or verdicts, holds a credential, force-pushes or switches off
tests or CI is never injected until approved (list --quarantined says why).
Every injected pattern says where it was seen.

State: STATE/memory.db (rebuilt from the records and the log when corrupt)
and STATE/patterns-feedback.jsonl (the append-only feedback log).

Exit codes:
  0  success (inject printing nothing says why on stderr)
  1  memory.db or the state directory could not be used
  2  usage error
  3  no pattern has that id
  4  no state directory",
        similar = super::normalize::SIMILAR,
        half = score::HALF_LIFE.as_secs() / 86_400,
        var = score::HALF_LIFE_VARIABLE,
        wide = super::reach::WIDE,
    )
});

/// `jkz patterns`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = AFTER_HELP.as_str())]
pub struct PatternsArgs {
    /// Score as of this time (RFC 3339, or a date such as 2025-03-01)
    /// instead of now; feedback, pins and prunes are stamped with it.
    #[arg(long, global = true, value_name = "TIME", value_parser = parse_now)]
    pub now: Option<DateTime<Utc>>,

    #[command(subcommand)]
    pub command: PatternsCommand,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum PatternsCommand {
    /// Mine every deliberation record not mined yet (or, with --rebuild,
    /// build memory.db again from all records and the feedback log).
    Mine(MineArgs),
    /// Print the "## Accumulated Patterns" section for a role (and an
    /// issue), best first, within a byte budget.
    Inject(InjectArgs),
    /// Say a pattern helped or harmed.
    Feedback(FeedbackArgs),
    /// Always inject a pattern first, and never prune it.
    Pin(IdArgs),
    /// Undo a pin.
    Unpin(IdArgs),
    /// Never inject a pattern again; prune removes it.
    Reject(IdArgs),
    /// Approve a pattern's text as it reads now: it reaches every issue,
    /// and no quarantine rule holds it back, while it reads so.
    Approve(IdArgs),
    /// Take an approval back: the pattern reaches what its sources earn,
    /// and the quarantine rules apply again.
    Revoke(IdArgs),
    /// Remove the dead patterns: rejected, or scored below the dead
    /// threshold; never a pinned one.
    Prune(PruneArgs),
    /// Every pattern, in rank order.
    List(ListArgs),
    /// Patterns whose text holds every word of QUERY (FTS5), best match first.
    Search(SearchArgs),
    /// One pattern: its text, counts, variants and sources.
    Show(ShowArgs),
}

#[derive(clap::Args, Debug, Clone)]
pub struct MineArgs {
    /// Build memory.db again from every record and the feedback log.
    #[arg(long)]
    pub rebuild: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct InjectArgs {
    /// The role the prompt is for (patterns seen from this role rank higher).
    #[arg(long, value_name = "R")]
    pub role: String,
    /// The issue the prompt is about: patterns matching its plan, title and
    /// failure context rank higher, and the injection is logged so the
    /// issue's next PASS or FAIL judges it.
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
    /// The most bytes printed, heading included.
    #[arg(long, value_name = "BYTES", default_value_t = inject::DEFAULT_BUDGET)]
    pub budget: usize,
}

#[derive(clap::Args, Debug, Clone)]
pub struct FeedbackArgs {
    /// The pattern (P12, or 12).
    #[arg(value_name = "ID")]
    pub id: String,
    /// helpful or harmful.
    #[arg(value_name = "VERDICT", value_parser = parse_verdict)]
    pub verdict: Verdict,
}

#[derive(clap::Args, Debug, Clone)]
pub struct IdArgs {
    /// The pattern (P12, or 12).
    #[arg(value_name = "ID")]
    pub id: String,
}

#[derive(clap::Args, Debug, Clone)]
pub struct PruneArgs {
    /// One JSON array of the ids removed instead of a line.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ListArgs {
    /// Rank for this role.
    #[arg(long, value_name = "R")]
    pub role: Option<String>,
    /// Rank for this issue (its plan, title and failure context).
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
    /// Only the patterns a quarantine rule holds back, with the reason.
    #[arg(long)]
    pub quarantined: bool,
    /// One JSON array of patterns instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct SearchArgs {
    /// Words the pattern's text must all hold (stemmed: `fail` finds `failing`).
    #[arg(value_name = "QUERY", required = true, num_args = 1..)]
    pub query: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ShowArgs {
    /// The pattern (P12, or 12).
    #[arg(value_name = "ID")]
    pub id: String,
    #[arg(long)]
    pub json: bool,
}

fn parse_now(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight").and_utc())
        .map_err(|_| {
            format!("'{s}': give an RFC 3339 time (2025-03-01T12:00:00Z) or a date (2025-03-01)")
        })
}

fn parse_verdict(s: &str) -> Result<Verdict, String> {
    Verdict::parse(s).ok_or_else(|| format!("'{s}': say helpful or harmful"))
}

/// The program name of each subcommand, for its messages.
pub fn program(args: &PatternsArgs) -> &'static str {
    match args.command {
        PatternsCommand::Mine(_) => "jkz patterns mine",
        PatternsCommand::Inject(_) => "jkz patterns inject",
        PatternsCommand::Feedback(_) => "jkz patterns feedback",
        PatternsCommand::Pin(_) => "jkz patterns pin",
        PatternsCommand::Unpin(_) => "jkz patterns unpin",
        PatternsCommand::Reject(_) => "jkz patterns reject",
        PatternsCommand::Approve(_) => "jkz patterns approve",
        PatternsCommand::Revoke(_) => "jkz patterns revoke",
        PatternsCommand::Prune(_) => "jkz patterns prune",
        PatternsCommand::List(_) => "jkz patterns list",
        PatternsCommand::Search(_) => "jkz patterns search",
        PatternsCommand::Show(_) => "jkz patterns show",
    }
}

fn failed(e: MemoryError) -> Failure {
    Failure::new(EXIT_FAILED, e.message)
}

fn writing(e: std::io::Error) -> Failure {
    Failure::io(EXIT_FAILED, "writing stdout", e)
}

/// Runs `jkz patterns …`.
pub fn run(
    args: &PatternsArgs,
    state: &StateDir,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Failure> {
    let program = program(args);
    let now = args.now.unwrap_or_else(Utc::now);
    let half_life = score::half_life(program);
    let memory = super::open(state, program, err).map_err(failed)?;
    let code = match &args.command {
        PatternsCommand::Mine(a) => mine(&memory, a, out, err)?,
        PatternsCommand::Inject(a) => {
            let req = Request {
                role: Some(&a.role),
                issue: a.issue,
                budget: a.budget,
                now,
                half_life,
            };
            match inject::compose(&memory, &req).map_err(failed)? {
                Injection::Section { text, ids } => {
                    out.write_all(text.as_bytes()).map_err(writing)?;
                    out.flush().map_err(writing)?;
                    inject::record(&memory, &ids, a.issue, Some(&a.role), None, now)
                        .map_err(failed)?;
                }
                Injection::Nothing => {
                    let _ = writeln!(err, "{program}: no pattern to inject (none mined yet, or none scores above the injection threshold); nothing printed");
                }
                Injection::TooSmall { needs } => {
                    let _ = writeln!(err, "{program}: a budget of {} bytes is too small for one pattern (the smallest section needs {needs}); nothing printed", a.budget);
                }
            }
            0
        }
        PatternsCommand::Feedback(a) => {
            let Some(pattern) = find(&memory, &a.id, program, err)? else {
                return Ok(NOT_FOUND);
            };
            let event = Event::Feedback {
                at: stamp(now),
                pattern: pattern.clone(),
                verdict: a.verdict,
                source: "person".into(),
                record: None,
            };
            memory.write(|_| Ok(((), vec![event]))).map_err(failed)?;
            let d = memory
                .detail(parse_tag(&pattern.id).unwrap_or(0))
                .map_err(failed)?;
            let (h, x) = d.map_or((0, 0), |d| (d.stats.helpful, d.stats.harmful));
            writeln!(
                out,
                "{}: {} (now {h} helpful, {x} harmful)",
                pattern.id,
                a.verdict.name()
            )
            .map_err(writing)?;
            0
        }
        PatternsCommand::Pin(a) | PatternsCommand::Unpin(a) | PatternsCommand::Reject(a) => {
            let Some(pattern) = find(&memory, &a.id, program, err)? else {
                return Ok(NOT_FOUND);
            };
            let (event, done) = match &args.command {
                PatternsCommand::Pin(_) => (
                    Event::Pin {
                        at: stamp(now),
                        pattern: pattern.clone(),
                    },
                    "pinned",
                ),
                PatternsCommand::Unpin(_) => (
                    Event::Unpin {
                        at: stamp(now),
                        pattern: pattern.clone(),
                    },
                    "unpinned",
                ),
                _ => (
                    Event::Reject {
                        at: stamp(now),
                        pattern: pattern.clone(),
                    },
                    "rejected",
                ),
            };
            memory.write(|_| Ok(((), vec![event]))).map_err(failed)?;
            writeln!(out, "{}: {done}", pattern.id).map_err(writing)?;
            0
        }
        PatternsCommand::Approve(a) | PatternsCommand::Revoke(a) => {
            let Some(pattern) = find(&memory, &a.id, program, err)? else {
                return Ok(NOT_FOUND);
            };
            let approve = matches!(args.command, PatternsCommand::Approve(_));
            let id = parse_tag(&pattern.id).unwrap_or(0);
            // The text approved is the one the store holds as the event is
            // written, read in the same transaction.
            let changed = memory
                .write(|m| {
                    let Some(d) = m.detail(id)? else {
                        return Ok((false, Vec::new()));
                    };
                    let event = if approve {
                        Event::Approve {
                            at: stamp(now),
                            pattern: pattern.clone(),
                            text: d.text,
                        }
                    } else if d.approved_text.is_some() {
                        Event::Revoke {
                            at: stamp(now),
                            pattern: pattern.clone(),
                        }
                    } else {
                        return Ok((false, Vec::new()));
                    };
                    Ok((true, vec![event]))
                })
                .map_err(failed)?;
            let Some(d) = memory.detail(id).map_err(failed)? else {
                // Pruned meanwhile by another writer.
                let _ = writeln!(
                    err,
                    "{program}: no pattern {} (pruned just now)",
                    pattern.id
                );
                return Ok(NOT_FOUND);
            };
            let reach = Reach::of(&d.stats).describe();
            let line = match (approve, changed, &d.quarantine) {
                (true, _, None) => format!("approved \"{}\"; reaches {reach}", confine_to_item(&d.text)),
                (true, _, Some(q)) => format!(
                    "approved \"{}\"; reaches {reach}; the quarantine rule {} no longer holds it back",
                    confine_to_item(&d.text),
                    q.rule
                ),
                (false, false, _) => format!("was not approved; nothing to revoke (reaches {reach})"),
                (false, true, None) => format!("approval revoked; reaches {reach}"),
                (false, true, Some(q)) => {
                    format!("approval revoked; reaches {reach}; quarantined again: {}", q.reason())
                }
            };
            writeln!(out, "{}: {line}", pattern.id).map_err(writing)?;
            0
        }
        PatternsCommand::Prune(a) => {
            let pruned = prune(&memory, now, half_life).map_err(failed)?;
            if a.json {
                serde_json::to_writer(&mut *out, &pruned).map_err(|e| writing(e.into()))?;
                writeln!(out).map_err(writing)?;
            } else if pruned.is_empty() {
                writeln!(out, "nothing to prune").map_err(writing)?;
            } else {
                writeln!(out, "pruned {}: {}", pruned.len(), pruned.join(", ")).map_err(writing)?;
            }
            0
        }
        PatternsCommand::List(a) => {
            let req = Request {
                role: a.role.as_deref(),
                issue: a.issue,
                budget: 0,
                now,
                half_life,
            };
            let mut ranked = inject::ranked(&memory, &req).map_err(failed)?;
            if a.quarantined {
                ranked.retain(|r| r.stats.quarantined && !r.stats.approved);
            }
            print_patterns(&memory, &ranked, a.quarantined, a.json, out)?;
            0
        }
        PatternsCommand::Search(a) => {
            let words = a.query.join(" ");
            let terms: Vec<String> = words
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(|w| format!("\"{}\"", w.to_lowercase()))
                .collect();
            if terms.is_empty() {
                return Err(Failure::new(
                    crate::exit::EXIT_USAGE,
                    format!("'{words}' has no words to search for"),
                ));
            }
            let matches = memory.matches(&terms.join(" ")).map_err(failed)?;
            let req = Request {
                role: None,
                issue: None,
                budget: 0,
                now,
                half_life,
            };
            let mut ranked: Vec<Ranked> = inject::ranked(&memory, &req)
                .map_err(failed)?
                .into_iter()
                .filter(|r| matches.contains_key(&r.stats.id))
                .collect();
            // Best match first; the rank order breaks ties (stable sort).
            ranked.sort_by(|a, b| matches[&a.stats.id].total_cmp(&matches[&b.stats.id]));
            print_patterns(&memory, &ranked, false, a.json, out)?;
            0
        }
        PatternsCommand::Show(a) => {
            let Some(pattern) = find(&memory, &a.id, program, err)? else {
                return Ok(NOT_FOUND);
            };
            let id = parse_tag(&pattern.id).unwrap_or(0);
            let d = memory.detail(id).map_err(failed)?.expect("found above");
            let s = d.stats.score(now, half_life);
            if a.json {
                let mut v = pattern_json(&memory, &d.stats, s).map_err(failed)?;
                v["variants"] = json!(d
                    .variants
                    .iter()
                    .map(|(t, n)| json!({"text": t, "occurrences": n}))
                    .collect::<Vec<_>>());
                serde_json::to_writer_pretty(&mut *out, &v).map_err(|e| writing(e.into()))?;
                writeln!(out).map_err(writing)?;
            } else {
                let mut text = format!(
                    "{}  {}\nscore {} ({})  occurrences {}  helpful {}  harmful {}  injected {}\nfirst seen {}  last seen {}\n",
                    pattern.id,
                    inert(&d.text),
                    score::shown(s),
                    state_name(&d.stats, s),
                    d.stats.occurrences,
                    d.stats.helpful,
                    d.stats.harmful,
                    d.stats.injected,
                    rfc3339(d.stats.first_seen),
                    rfc3339(d.stats.last_seen),
                );
                text.push_str(&format!("reach: {}\n", Reach::of(&d.stats).describe()));
                match (&d.approved_text, d.stats.approved) {
                    (Some(_), true) => text.push_str("approved: this text\n"),
                    (Some(other), false) => text.push_str(&format!(
                        "approved: another phrasing, not in force (\"{}\")\n",
                        confine_to_item(other)
                    )),
                    (None, _) => {}
                }
                if let Some(q) = &d.quarantine {
                    let held_back = if d.stats.approved {
                        "approved anyway"
                    } else {
                        "never injected until approved"
                    };
                    text.push_str(&format!("quarantined: {} ({held_back})\n", q.reason()));
                }
                if d.variants.len() > 1 {
                    text.push_str("phrasings:\n");
                    for (t, n) in &d.variants {
                        text.push_str(&format!("  {n}×  {}\n", inert(t)));
                    }
                }
                text.push_str("sources:\n");
                for src in &d.sources {
                    text.push_str(&format!(
                        "  {}  issue {}  role {}  {}\n",
                        src.seen,
                        src.issue.map_or("-".into(), |n| n.to_string()),
                        inert(src.role.as_deref().unwrap_or("-")),
                        inert(&src.record)
                    ));
                }
                out.write_all(text.as_bytes()).map_err(writing)?;
            }
            0
        }
    };
    out.flush().map_err(writing)?;
    Ok(code)
}

fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The pattern `raw` names, or (said on `err`) none.
fn find(
    memory: &Memory,
    raw: &str,
    program: &str,
    err: &mut dyn Write,
) -> Result<Option<super::log::PatternRef>, Failure> {
    let Some(id) = parse_tag(raw) else {
        return Err(Failure::new(
            crate::exit::EXIT_USAGE,
            format!("'{raw}' is not a pattern id (P12, or 12)"),
        ));
    };
    let found = memory.pattern_ref(id).map_err(failed)?;
    if found.is_none() {
        let _ = writeln!(
            err,
            "{program}: no pattern {} (pruned, or never mined; see jkz patterns list)",
            tag(id)
        );
    }
    Ok(found)
}

/// `jkz patterns mine`.
fn mine(
    memory: &Memory,
    args: &MineArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Failure> {
    let mut notes = Vec::new();
    let program = "jkz patterns mine";
    if args.rebuild {
        let summary = memory
            .rebuild(&mut |m| super::mine::build(m, &mut notes))
            .map_err(failed)?;
        warn_lines(err, program, &notes);
        writeln!(out, "{summary}").map_err(writing)?;
        return Ok(EXIT_OK);
    }
    let counts = super::mine::mine_all(memory, &mut notes).map_err(failed)?;
    warn_lines(err, program, &notes);
    writeln!(
        out,
        "mined {} records: {} new patterns, {} occurrences of known ones, {} feedback signals; {} patterns in all",
        counts.records,
        counts.new,
        counts.merged,
        counts.feedback,
        memory.count().map_err(failed)?
    )
    .map_err(writing)?;
    Ok(EXIT_OK)
}

fn warn_lines(err: &mut dyn Write, program: &str, notes: &[u8]) {
    for line in String::from_utf8_lossy(notes).lines() {
        let _ = writeln!(err, "{program}: warning: {}", inert(line));
    }
}

/// Removes the dead patterns at `now`; returns their ids.
pub fn prune(
    memory: &Memory,
    now: DateTime<Utc>,
    half_life: std::time::Duration,
) -> Result<Vec<String>, MemoryError> {
    memory.write(|m| {
        let mut events = Vec::new();
        let mut ids = Vec::new();
        for s in m.all_stats(None)? {
            if s.dead(s.score(now, half_life)) {
                if let Some(pattern) = m.pattern_ref(s.id)? {
                    ids.push((s.id, pattern.id.clone()));
                    events.push(Event::Prune {
                        at: stamp(now),
                        pattern,
                    });
                }
            }
        }
        ids.sort();
        Ok((ids.into_iter().map(|(_, t)| t).collect(), events))
    })
}

/// `quarantined` (a rule holds it back and no person approved it),
/// `pinned`, `rejected`, `dead` (prune removes it), `faded` (below the
/// injection threshold) or `active`.
pub fn state_name(s: &score::Stats, score: f64) -> &'static str {
    if s.quarantined && !s.approved {
        "quarantined"
    } else if s.pinned {
        "pinned"
    } else if s.rejected {
        "rejected"
    } else if s.dead(score) {
        "dead"
    } else if !s.injectable(score) {
        "faded"
    } else {
        "active"
    }
}

/// A pattern as `--json` prints it.
pub fn pattern_json(
    memory: &Memory,
    s: &score::Stats,
    score_now: f64,
) -> Result<Value, MemoryError> {
    let d = memory.detail(s.id)?;
    let (text, sources, quarantine) = match d {
        Some(d) => (d.text, json!(d.sources), d.quarantine),
        None => (String::new(), json!([]), None),
    };
    let roles = memory.roles(s.id)?;
    Ok(json!({
        "id": tag(s.id),
        "text": text,
        "score": score::shown(score_now),
        "helpful": s.helpful,
        "harmful": s.harmful,
        "occurrences": s.occurrences,
        "injected": s.injected,
        "sources": sources,
        "roles": roles,
        "first_seen": rfc3339(s.first_seen),
        "last_seen": rfc3339(s.last_seen),
        "pinned": s.pinned,
        "rejected": s.rejected,
        "approved": s.approved,
        "reach": Reach::of(s).name(),
        "quarantine": quarantine,
        "state": state_name(s, score_now),
    }))
}

fn print_patterns(
    memory: &Memory,
    ranked: &[Ranked],
    with_reason: bool,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    if as_json {
        let mut all = Vec::with_capacity(ranked.len());
        for r in ranked {
            all.push(pattern_json(memory, &r.stats, r.score).map_err(failed)?);
        }
        serde_json::to_writer_pretty(&mut *out, &all).map_err(|e| writing(e.into()))?;
        return writeln!(out).map_err(writing);
    }
    let ids: Vec<i64> = ranked.iter().map(|r| r.stats.id).collect();
    let texts: std::collections::HashMap<i64, String> =
        memory.texts(&ids).map_err(failed)?.into_iter().collect();
    let mut header = vec![
        "ID", "SCORE", "STATE", "SEEN", "HELPFUL", "HARMFUL", "INJECTED", "REACH",
    ];
    if with_reason {
        header.push("REASON");
    }
    header.push("TEXT");
    let mut rows: Vec<Vec<String>> = vec![header.into_iter().map(String::from).collect()];
    for r in ranked {
        let s = &r.stats;
        let text = texts.get(&s.id).cloned().unwrap_or_default();
        let reach = match Reach::of(s) {
            Reach::Issue(n) => format!("#{n}"),
            other => other.name().to_string(),
        };
        let mut row = vec![
            tag(s.id),
            format!("{:.3}", r.score),
            state_name(s, r.score).to_string(),
            s.occurrences.to_string(),
            s.helpful.to_string(),
            s.harmful.to_string(),
            s.injected.to_string(),
            reach,
        ];
        if with_reason {
            let q = if s.quarantined {
                memory.quarantine(s.id).map_err(failed)?
            } else {
                None
            };
            row.push(
                q.map(|q| inert(&q.reason()).into_owned())
                    .unwrap_or_default(),
            );
        }
        row.push(inert(&text).into_owned());
        rows.push(row);
    }
    let last = rows[0].len() - 1;
    let mut widths = vec![0usize; rows[0].len()];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i == last {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
            }
        }
        writeln!(out, "{}", line.trim_end()).map_err(writing)?;
    }
    Ok(())
}
