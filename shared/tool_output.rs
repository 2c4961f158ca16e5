//! `jkz-post-tool-use`: the truncation contract on every tool output that
//! enters the model's window, as far as the client lets a hook touch it
//! ([`crate::client::Client::output_control`]).
//!
//! A client that lets a hook replace a tool's output gets, when the output
//! is longer than the cap, what
//! [`crate::truncate`] — the same engine as `jkz-truncate`, called, not
//! copied — makes of the full output: the head, every protected block that
//! fits, the tail, one marker per gap naming the saved full output
//! (`state/context-offload/`, when the project opted in). At or under the
//! cap, the hook prints nothing and the result stands. A client that lets
//! a hook only append gets what its own cut would drop ([`rescue`]); one
//! that lets it do nothing, nothing.
//!
//! - The full output comes from the client's persisted file when it saved
//!   one (a shell output over its inline limit, whose text in the hook
//!   input is already cut), else from the hook input. The file is opened
//!   by the client's module, only when it is a regular file in the
//!   client's own directory for this session, reached through no link;
//!   any other path leaves the output as it stands. The file is streamed:
//!   memory is the engine's, whatever its size.
//! - The head share comes from the call ([`roles`]).
//! - The cap is `JKZ_TOOL_OUTPUT_BYTES` (default [`DEFAULT_CAP`]); for a
//!   shell output it is also kept under the client's own inline limit,
//!   less `stderr`, so the answer is shown inline rather than persisted
//!   again.
//! - Each guarded call appends one line to the savings ledger
//!   ([`ledger`]), counted against what the client would have shown
//!   ([`crate::client::Viewer`]); `jkz stats` sums it up ([`stats`]).
//!
//! Never hurts a tool call: bad input, an unreadable file, a deadline
//! ([`DEADLINE`]) passed, any error at all: one line on stderr, nothing on
//! stdout, exit 0, and the original result stands.

pub mod help;
pub mod ledger;
pub mod outline;
pub mod recent;
pub mod reduce_call;
pub mod rescue;
pub mod roles;
pub mod stats;
pub mod wrap;

use std::ffi::OsStr;
use std::io::{self, Read};
use std::time::{Duration, Instant};

use crate::client::edge::Hook;
use crate::client::view::FullOutput;
use crate::client::{
    Answer, Body, EventKind, EventName, HookEvent, OutputControl, Tool, ToolOutput, ToolUse,
};
use crate::hook::Warnings;
use crate::state_dir::StateDir;
use crate::truncate::{self, Settings};

use self::ledger::Entry;

/// The environment variable that sets the cap.
pub const CAP_VARIABLE: &str = "JKZ_TOOL_OUTPUT_BYTES";

/// The hook's name, as its warnings say it.
pub const PROGRAM: &str = "jkz-post-tool-use";

/// The default cap, in bytes. Measured on the client: an answer of up to
/// 30,000 characters is shown inline, a longer one is persisted again and
/// previewed (2 KB of its head). 20,000 stays well under that with room for
/// `stderr`, holds a few hundred lines of head and tail around the
/// protected blocks, and is twice what the client keeps of a failing
/// command (10,000 characters).
pub const DEFAULT_CAP: u64 = 20_000;

/// Below this many bytes for the body (after `stderr`), the hook leaves the
/// output alone: there is no room to say anything useful.
pub const MIN_BUDGET: u64 = 1_000;

/// The largest hook input read: the client sends MCP results whole (it
/// persists them only after the hook). Larger inputs are left alone.
pub const MAX_INPUT: u64 = 32 * 1024 * 1024;

/// The hook gives up (no answer, the original stands) when reading the
/// full output takes longer than this, well before the client's own hook
/// timeout (60 seconds unless the registration says otherwise).
pub const DEADLINE: Duration = Duration::from_secs(20);

/// The cap: [`CAP_VARIABLE`] (its value `env`), else [`DEFAULT_CAP`]; 0
/// turns the guard off. An invalid value gives `Err` with the default and
/// a one-line warning naming the variable.
pub fn resolve_cap(env: Option<&OsStr>) -> Result<u64, (u64, String)> {
    let default_words = format!(
        "the default cap of {} bytes",
        crate::thousands::thousands(DEFAULT_CAP)
    );
    crate::byte_cap::byte_cap(CAP_VARIABLE, env, DEFAULT_CAP, &default_words)
}

/// What `jkz-post-tool-use` handles.
pub const HOOK: Hook = Hook {
    handles: &[EventName::PostToolUse],
    default: None,
    max_input: MAX_INPUT,
    on_bad_input: "; the tool's output stands",
    // An output that fits is left alone before the state directory is
    // looked at.
    refuse_tracked_state: false,
    tool_output: true,
};

/// The hook's answer to `event` (a tool's output, as the client lets jkz
/// touch it), and the call recorded in the ledger.
pub fn answer(event: &HookEvent, warnings: &mut Warnings) -> Answer {
    let started = Instant::now();
    let EventKind::PostToolUse(used) = &event.kind else {
        return Answer::Nothing;
    };
    match event.client.output_control(&used.tool) {
        OutputControl::Replace => {}
        OutputControl::Append(cut) => {
            return rescue::answer(used, cut, event.client.title());
        }
        OutputControl::Nothing => return Answer::Nothing,
    }
    if used.name.is_empty() {
        warnings.warn("PostToolUse event without a tool_name");
        return Answer::Nothing;
    }
    let Some(output) = &used.output else {
        return Answer::Nothing;
    };
    let call = match &used.tool {
        Tool::Shell { command, .. } => command.as_str(),
        Tool::Read { .. } | Tool::Edit { .. } | Tool::Patch { .. } | Tool::Other => {
            used.name.as_str()
        }
    };
    let guarded_call = GuardedCall {
        event,
        used,
        output,
        call,
    };
    let cwd = event.cwd.clone();
    let input_meta = Meta {
        session: event.session_id.clone(),
        plan_mode: event.plan_mode,
        read_range: matches!(used.tool, Tool::Read { range: true }),
    };
    let cap = match resolve_cap(std::env::var_os(CAP_VARIABLE).as_deref()) {
        Ok(cap) => cap,
        Err((cap, warning)) => {
            warnings.warn(warning);
            cap
        }
    };
    if cap == 0 {
        return Answer::Nothing;
    }
    let project = crate::hook::project_dir(cwd.clone());
    let state = StateDir::resolve(None, cwd.as_deref());
    crate::hook::warn_state_problem(&state, warnings);
    // Its full output could be kept, and its ledger line written, only in
    // a state directory git tracks: the output stands instead. (An output
    // that fits is left alone before the index is read.)
    if may_need_guard(output, cap) && crate::hook::refuse_tracked_state(&state, warnings) {
        return Answer::Nothing;
    }
    let Tool::Read { .. } = used.tool else {
        return reduce_output(&guarded_call, &state, &input_meta, cap, started, warnings)
            .map_or(Answer::Nothing, Answer::ReplaceOutput);
    };
    let mut notes = Vec::new();
    let rules: Vec<roles::Rule> = roles::user_rules(&project, &mut notes)
        .into_iter()
        .chain(roles::built_in())
        .collect();
    let head_share = roles::head_share(call, &rules);
    let outlined = outline_read(output, &input_meta, cap);
    let family = outlined.as_ref().map(|_| "outline".to_string());
    let guarded = match outlined {
        Some(g) => Ok(Some(g)),
        None => guard(&guarded_call, cap, head_share, &state, &mut notes),
    };
    for n in notes {
        warnings.warn(n);
    }
    let guarded = match guarded {
        Ok(Some(g)) => g,
        Ok(None) => return Answer::Nothing,
        Err(e) => {
            warnings.warn(format!("{e}; the tool's output stands"));
            return Answer::Nothing;
        }
    };
    let entry = Entry {
        ts: chrono::Utc::now()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string(),
        tool: used.name.clone(),
        call: ledger::short_call(call),
        full: guarded.full,
        client: guarded.client,
        jkz: guarded.jkz,
        blocks: guarded.blocks,
        ms: started.elapsed().as_millis() as u64,
        via: Some("post-tool-use".into()),
        family,
        ..Entry::default()
    };
    if let Err(e) = ledger::append(&state, &entry) {
        warnings.warn(format!(
            "cannot append to {}: {e}",
            state
                .join(crate::state_dir::layout::TOOL_OUTPUT_LEDGER)
                .display()
        ));
    }
    crate::events::sources::tool_output_guarded(&state, None, &entry.tool, entry.full, entry.jkz);
    Answer::ReplaceOutput(guarded.text)
}

/// One tool call whose output the guard may replace.
pub struct GuardedCall<'a> {
    pub event: &'a HookEvent,
    pub used: &'a ToolUse,
    pub output: &'a ToolOutput,
    /// The shell command, else the tool's name: what the role table and
    /// the ledger see.
    pub call: &'a str,
}

/// What the hook input says beside the output.
struct Meta {
    session: Option<String>,
    plan_mode: bool,
    /// A Read of a range the agent chose (`offset` or `limit`).
    read_range: bool,
}

/// A whole Read of a large source file, as its head and its outline
/// ([`outline`]); `None` when the Read stands or gets the head cut: a
/// range the agent asked for, a language the scan does not know, nothing
/// gained.
fn outline_read(output: &ToolOutput, meta: &Meta, cap: u64) -> Option<Guarded> {
    if meta.read_range || meta.plan_mode || !may_need_guard(output, cap) {
        return None;
    }
    let file = output.file.as_ref()?;
    let Body::Inline(text) = &output.body else {
        return None;
    };
    if file.start != 1 || !outline::knows(&file.path) {
        return None;
    }
    let budget = budget_of(output, cap);
    let view = outline::outline(&file.path, text, file.total, budget as usize)?;
    if view.len() as u64 > budget {
        return None;
    }
    let over_limit = output
        .viewer
        .inline_limit()
        .is_some_and(|l| text.chars().count() as u64 + output.beside > l);
    let head = &text.as_bytes()[..text.len().min(output.viewer.head_bytes())];
    Some(finish(
        output,
        view,
        text.len() as u64,
        0,
        over_limit,
        head,
        None,
    ))
}

/// A shell command's output (one that ran unwrapped), a search's, an MCP
/// tool's: reduced by the engine for the client's view ([`reduce_call`]),
/// counted in the ledger; `None` when the output stands (it was wrapped
/// and reduced already, the raw output was asked for, plan mode, or
/// nothing to gain).
fn reduce_output(
    guarded: &GuardedCall,
    state: &StateDir,
    meta: &Meta,
    cap: u64,
    started: Instant,
    warnings: &mut Warnings,
) -> Option<String> {
    let output = guarded.output;
    let command = match guarded.used.tool {
        Tool::Shell { .. } => Some(guarded.call),
        Tool::Read { .. } | Tool::Edit { .. } | Tool::Patch { .. } | Tool::Other => None,
    };
    if meta.plan_mode
        || command
            .is_some_and(|c| wrap::is_wrapped(c) || c.trim_start().starts_with(wrap::RAW_REQUEST))
    {
        return None;
    }
    let viewer = output.viewer;
    // A client that does not say runs its hook for a command that
    // succeeded only.
    let exit_code = command.map(|_| output.exit.unwrap_or(0));
    let budget = viewer
        .budget(exit_code)
        .min(usize::try_from(cap).unwrap_or(usize::MAX))
        .saturating_sub(output.beside as usize)
        .max(crate::reduce::MIN_BUDGET);
    if let Body::Inline(text) = &output.body {
        // Too short for any saving worth a replacement: nothing to read or
        // write, no ledger line.
        if (text.len() as u64) < MIN_BUDGET {
            return None;
        }
    }
    if crate::hook::refuse_tracked_state(state, warnings) {
        return None;
    }
    // Nothing can be kept under state/: the client's own copy is the
    // whole output the view names.
    let client_copy = match &output.body {
        Body::Persisted(path) if state.check().is_err() || !state.exists() => Some(path.as_path()),
        _ => None,
    };
    let call = reduce_call::Call {
        tool: &guarded.used.name,
        command,
        exit_code,
        via: "post-tool-use",
        viewer,
        session: meta.session.as_deref(),
        state,
        kept_at: client_copy,
        budget: Some(budget),
        started,
        exit_later: false,
    };
    let mut notes = Vec::new();
    let table = crate::reduce::cmd::project_table(state, &mut notes);
    let outcome = match &output.body {
        Body::Inline(text) => {
            reduce_call::reduce_call(&mut text.as_bytes(), &call, &table, &mut notes)
        }
        Body::Persisted(path) => match guarded.event.client.open_persisted(guarded.event, path) {
            Ok(file) => reduce_call::reduce_call(
                &mut Watched::new(file, DEADLINE, viewer.head_bytes()),
                &call,
                &table,
                &mut notes,
            ),
            Err(e) => {
                warnings.warn(e);
                return None;
            }
        },
    };
    for line in String::from_utf8_lossy(&notes).lines() {
        warnings.warn(line.strip_prefix("jkz: ").unwrap_or(line));
    }
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            warnings.warn(format!("{e}; the tool's output stands"));
            return None;
        }
    };
    let e = &outcome.entry;
    crate::events::sources::tool_output_guarded(state, None, &e.tool, e.full, e.jkz);
    if !outcome.changed {
        return None;
    }
    let text = match String::from_utf8(outcome.view) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Some(text)
}

/// What the guard made of an output longer than its budget.
#[derive(Debug)]
pub struct Guarded {
    /// The text the model sees instead of the body.
    pub text: String,
    /// Bytes of the full output (body and what is beside it).
    pub full: u64,
    /// Bytes the client would have shown.
    pub client: u64,
    /// Bytes jkz shows.
    pub jkz: u64,
    /// Protected blocks in `text`.
    pub blocks: u64,
}

/// Truncates the call's output body to its budget; `Ok(None)` when it
/// fits. A persisted body is read only as the client's module opens it
/// (from the client's own directory; `Err`: nothing is read). Warnings
/// (a full output that could not be saved, bad rule lines) are added to
/// `notes`.
pub fn guard(
    guarded: &GuardedCall,
    cap: u64,
    head_share: f64,
    state: &StateDir,
    notes: &mut Vec<String>,
) -> Result<Option<Guarded>, String> {
    if !may_need_guard(guarded.output, cap) {
        return Ok(None);
    }
    let output = guarded.output;
    let budget = budget_of(output, cap);
    match &output.body {
        Body::Inline(text) => {
            if text.len() as u64 <= budget {
                return Ok(None);
            }
            let over_limit = output
                .viewer
                .inline_limit()
                .is_some_and(|l| text.chars().count() as u64 + output.beside > l);
            let mut head = text.as_bytes();
            head = &head[..head.len().min(output.viewer.head_bytes())];
            run_engine(
                text.as_bytes(),
                budget,
                head_share,
                state,
                "the hook input",
                None,
                notes,
            )
            .map(|r| {
                r.map(|(text, full, blocks)| {
                    finish(output, text, full, blocks, over_limit, head, None)
                })
            })
        }
        Body::Persisted(path) => {
            let file = guarded.event.client.open_persisted(guarded.event, path)?;
            let mut reader = Watched::new(file, DEADLINE, output.viewer.head_bytes());
            let shown = path.display().to_string();
            let result = run_engine(
                &mut reader,
                budget,
                head_share,
                state,
                &shown,
                Some(&shown),
                notes,
            )?;
            let head = reader.head;
            Ok(result.map(|(text, full, blocks)| {
                finish(output, text, full, blocks, true, &head, Some(&shown))
            }))
        }
    }
}

/// The bytes of `output`'s body the model may see.
fn budget_of(output: &ToolOutput, cap: u64) -> u64 {
    let limit = output.viewer.inline_limit().map_or(cap, |l| cap.min(l));
    limit.saturating_sub(output.beside)
}

/// False when `output` stands as it is (it fits, or no useful budget is
/// left): nothing to guard, nothing to read or write in the state
/// directory.
fn may_need_guard(output: &ToolOutput, cap: u64) -> bool {
    let budget = budget_of(output, cap);
    budget >= MIN_BUDGET
        && match &output.body {
            Body::Inline(text) => text.len() as u64 > budget,
            Body::Persisted(_) => true,
        }
}

/// Fills in the counts of a guarded output.
fn finish(
    output: &ToolOutput,
    text: String,
    body_bytes: u64,
    blocks: u64,
    over_limit: bool,
    head: &[u8],
    path: Option<&str>,
) -> Guarded {
    let full = body_bytes + output.beside;
    let client = output.viewer.shown_bytes(&FullOutput {
        bytes: full,
        over_limit,
        head,
        path,
    });
    let jkz = text.len() as u64 + output.beside;
    Guarded {
        text,
        full,
        client,
        jkz,
        blocks,
    }
}

/// Runs the truncation engine on `input` within `budget`; `None` when it
/// did not truncate. Returns the text, the input's length and the protected
/// blocks in the text. When no full output could be saved under `state/`
/// and the client has one (`client_copy`), a last line names it, within
/// the budget.
fn run_engine(
    input: impl Read,
    budget: u64,
    head_share: f64,
    state: &StateDir,
    source: &str,
    client_copy: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Option<(String, u64, u64)>, String> {
    let note = client_copy.map(|p| format!("[jkz: the full output is the client's copy: {p}]\n"));
    let reserve = note.as_ref().map_or(0, |n| n.len() as u64);
    let settings = Settings {
        cap: budget.saturating_sub(reserve).max(1),
        head_share,
        full_output: Some(truncate::full_output::Keep::WhenTruncated(state.clone())),
        program: PROGRAM,
    };
    let mut out = Vec::with_capacity(budget as usize);
    let mut engine_warnings = Vec::new();
    let summary = truncate::truncate(input, &mut out, &settings, source, &mut engine_warnings)
        .map_err(|f| f.message)?;
    for line in String::from_utf8_lossy(&engine_warnings).lines() {
        // The hook's warnings name the program once, when they are shown.
        let note = line
            .strip_prefix(PROGRAM)
            .and_then(|l| l.strip_prefix(": "));
        notes.push(note.unwrap_or(line).to_string());
    }
    if !summary.truncated {
        return Ok(None);
    }
    if summary.full_output.is_none() {
        if let Some(note) = note {
            if out.last().is_some_and(|&b| b != b'\n') {
                out.push(b'\n');
            }
            out.extend_from_slice(note.as_bytes());
        }
    }
    let blocks = crate::blocks::find_blocks(&out).len() as u64;
    let text = match String::from_utf8(out) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(Some((text, summary.input_bytes, blocks)))
}

/// A reader that keeps the first `keep` bytes read (the client's preview
/// is made from them) and fails once its deadline has passed.
struct Watched<R> {
    inner: R,
    deadline: Instant,
    head: Vec<u8>,
    keep: usize,
}

impl<R> Watched<R> {
    fn new(inner: R, within: Duration, keep: usize) -> Watched<R> {
        Watched {
            inner,
            deadline: Instant::now() + within,
            head: Vec::new(),
            keep,
        }
    }
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if Instant::now() > self.deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("gave up after {} s", DEADLINE.as_secs()),
            ));
        }
        let n = self.inner.read(buf)?;
        let want = self.keep.saturating_sub(self.head.len()).min(n);
        self.head.extend_from_slice(&buf[..want]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_variable() {
        assert_eq!(resolve_cap(None), Ok(DEFAULT_CAP));
        assert_eq!(resolve_cap(Some(OsStr::new(""))), Ok(DEFAULT_CAP));
        assert_eq!(resolve_cap(Some(OsStr::new(" 5000 "))), Ok(5000));
        assert_eq!(resolve_cap(Some(OsStr::new("0"))), Ok(0));
        let (cap, warning) = resolve_cap(Some(OsStr::new("20k"))).unwrap_err();
        assert_eq!(cap, DEFAULT_CAP);
        assert!(
            warning.starts_with("JKZ_TOOL_OUTPUT_BYTES='20k' is not a byte count"),
            "{warning}"
        );
    }

    #[test]
    fn the_watched_reader_keeps_the_head_and_keeps_time() {
        let data = vec![b'a'; 10_000];
        let mut r = Watched::new(&data[..], Duration::from_secs(60), 2_001);
        let mut sink = Vec::new();
        r.read_to_end(&mut sink).unwrap();
        assert_eq!(r.head.len(), 2_001);
        assert_eq!(sink, data);
        let mut late = Watched::new(&data[..], Duration::ZERO, 2_001);
        std::thread::sleep(Duration::from_millis(2));
        let err = late.read_to_end(&mut sink).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }
}
