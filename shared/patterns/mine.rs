//! Mining: from deliberation records to patterns (evidence) and to
//! feedback events.
//!
//! A record is mined once (`mined`): each candidate of its response
//! ([`super::extract`]) becomes one occurrence of a pattern
//! ([`Memory::add`]), counted once per record however often the response
//! repeats it. Then its verdict (the last `verdict-json` block's object)
//! is read for feedback, unless the log already holds feedback from this
//! record:
//!
//! - `pattern_feedback`: `{"P12": "helpful", "P7": "harmful"}`, each a
//!   signal for that pattern (an unknown id or value is a warning);
//! - `verdict` `PASS` or `FAIL` on an issue with open injections (patterns
//!   injected for the issue at or before this record's time, not closed by
//!   an earlier verdict): a PASS counts as helpful for each pattern
//!   injected; a FAIL counts as harmful for each injected pattern that one
//!   of its `findings` matches (at least [`FINDING_MATCH`] of the
//!   pattern's words appear in the finding; a finding is a string, or an
//!   object's `title`, `summary`, `message`, `text`, `description`,
//!   `finding`, `detail` and `body`). Either closes those injections. A
//!   pattern the verdict names in `pattern_feedback` gets only that signal.
//!
//! The signals are events in the feedback log, stamped with the record's
//! time, so a rebuild gives the same scores.
//!
//! A response kept in a file is read up to [`MAX_MINED`] bytes: a larger
//! one is mined in its first and last halves of that bound.

use std::collections::HashSet;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde_json::{Map, Value};

use super::extract;
use super::log::{Event, Verdict};
use super::normalize::Words;
use super::store::{millis, Added, Memory, MemoryError, Reserved, Result, Seen};
use crate::deliberation::index;
use crate::deliberation::verdict::verdict_object;
use crate::deliberation::Record;
use crate::state_dir::layout::{DELIBERATIONS_DIR, OFFLOAD_DIR, PATTERNS_FEEDBACK};

/// The most of a response file read for mining.
pub const MAX_MINED: u64 = 4 * 1024 * 1024;

/// A FAIL's finding matches a pattern when at least this share of the
/// pattern's words appear in it.
pub const FINDING_MATCH: f64 = 0.6;

/// The most findings read from one verdict.
const MAX_FINDINGS: usize = 200;

/// Records mined per transaction by [`mine_all`] (other writers get a turn
/// between batches).
const BATCH: usize = 500;

/// What mining did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub records: usize,
    pub new: usize,
    pub merged: usize,
    pub feedback: usize,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.records += other.records;
        self.new += other.new;
        self.merged += other.merged;
        self.feedback += other.feedback;
    }
}

/// Who answered, about what, when: what mining takes from a record.
#[derive(Clone, Debug)]
pub struct RecordFacts {
    pub id: String,
    pub issue: Option<u64>,
    pub role: Option<String>,
    /// The record's timestamp, RFC 3339.
    pub timestamp: String,
    /// The same in Unix milliseconds (0 when it does not parse).
    pub at: i64,
}

impl RecordFacts {
    pub fn of(id: &str, record: &Record) -> RecordFacts {
        RecordFacts {
            id: id.to_string(),
            issue: record.issue,
            role: record.role.clone(),
            timestamp: record.timestamp.clone(),
            at: millis(&record.timestamp).unwrap_or(0),
        }
    }
}

/// The response of `record` as mining reads it (see the module docs);
/// empty when the record names none.
pub fn response_text(state: &Path, record: &Record) -> io::Result<Vec<u8>> {
    if let Some(text) = &record.response {
        return Ok(text.as_bytes().to_vec());
    }
    let Some(file) = &record.response_file else {
        return Ok(Vec::new());
    };
    // Only a content-addressed response file: `context-offload/<hex>.txt`.
    let name = file
        .strip_prefix(OFFLOAD_DIR)
        .and_then(|n| n.strip_prefix('/'))
        .filter(|n| {
            n.strip_suffix(".txt")
                .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the record names {file:?}, not a response file"),
            )
        })?;
    let mut f = crate::state_dir::open_state_file(&state.join(OFFLOAD_DIR).join(name))?;
    let len = f.metadata()?.len();
    let mut bytes = Vec::new();
    if len <= MAX_MINED {
        f.take(MAX_MINED).read_to_end(&mut bytes)?;
        return Ok(bytes);
    }
    let half = MAX_MINED / 2;
    (&mut f).take(half).read_to_end(&mut bytes)?;
    // The head ends, and the tail starts, at a line boundary.
    bytes.truncate(memchr::memrchr(b'\n', &bytes).map_or(0, |i| i + 1));
    f.seek(SeekFrom::Start(len - half))?;
    let mut tail = Vec::new();
    f.take(half).read_to_end(&mut tail)?;
    let from = memchr::memchr(b'\n', &tail).map_or(tail.len(), |i| i + 1);
    bytes.extend_from_slice(&tail[from..]);
    Ok(bytes)
}

/// Adds the record's candidates as evidence.
pub fn evidence(
    memory: &Memory,
    facts: &RecordFacts,
    text: &[u8],
    reserved: Option<&Reserved>,
) -> Result<Counts> {
    let mut counts = Counts {
        records: 1,
        ..Counts::default()
    };
    if !extract::may_hold_patterns(text) {
        return Ok(counts);
    }
    let seen = Seen {
        record: &facts.id,
        issue: facts.issue,
        role: facts.role.as_deref(),
        at: facts.at,
    };
    for candidate in extract::candidates(text) {
        match memory.add(&candidate, &seen, reserved)? {
            Added::New => counts.new += 1,
            Added::Merged => counts.merged += 1,
            Added::Nothing => {}
        }
    }
    Ok(counts)
}

/// The verdict object of a response, when it may hold feedback: a
/// `pattern_feedback`, or a PASS or FAIL (on an issue).
pub fn feedback_verdict(text: &[u8], issue: Option<u64>) -> Option<Map<String, Value>> {
    if memchr::memmem::find(text, b"erdict").is_none()
        && memchr::memmem::find(text, b"ERDICT").is_none()
    {
        return None;
    }
    let v = verdict_object(text)?;
    let decides = issue.is_some() && pass_or_fail(&v).is_some();
    (decides || v.contains_key("pattern_feedback")).then_some(v)
}

fn pass_or_fail(v: &Map<String, Value>) -> Option<&'static str> {
    match v
        .get("verdict")?
        .as_str()?
        .trim()
        .to_ascii_uppercase()
        .as_str()
    {
        "PASS" => Some("PASS"),
        "FAIL" => Some("FAIL"),
        _ => None,
    }
}

/// The feedback events a record's verdict gives (see the module docs);
/// warnings (unknown ids, bad values) go to `warn`.
pub fn derive(
    memory: &Memory,
    facts: &RecordFacts,
    verdict: &Map<String, Value>,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<Event>> {
    let mut events = Vec::new();
    let mut explicit = HashSet::new();
    if let Some(given) = verdict.get("pattern_feedback") {
        let Some(given) = given.as_object() else {
            warn(format!(
                "{}: pattern_feedback is not an object such as {{\"P12\": \"helpful\"}}; ignored",
                facts.id
            ));
            return Ok(events);
        };
        for (name, value) in given {
            let Some(signal) = value.as_str().and_then(Verdict::parse) else {
                warn(format!(
                    "{}: pattern_feedback {name}: {value} is not \"helpful\" or \"harmful\"; ignored",
                    facts.id
                ));
                continue;
            };
            let pattern = match super::store::parse_tag(name) {
                Some(id) => memory.pattern_ref(id)?,
                None => None,
            };
            let Some(pattern) = pattern else {
                warn(format!(
                    "{}: pattern_feedback names {name}, which is no pattern (see jkz patterns list); ignored",
                    facts.id
                ));
                continue;
            };
            if explicit.insert(pattern.id.clone()) {
                events.push(Event::Feedback {
                    at: facts.timestamp.clone(),
                    pattern,
                    verdict: signal,
                    source: "verdict".into(),
                    record: Some(facts.id.clone()),
                });
            }
        }
    }
    let (Some(issue), Some(decision)) = (facts.issue, pass_or_fail(verdict)) else {
        return Ok(events);
    };
    let open = memory.open_injections(issue, facts.at)?;
    if open.is_empty() {
        return Ok(events);
    }
    let findings: Vec<Words> = if decision == "FAIL" {
        findings(verdict).iter().map(|f| Words::of(f)).collect()
    } else {
        Vec::new()
    };
    for id in open {
        let Some(pattern) = memory.pattern_ref(id)? else {
            continue;
        };
        if explicit.contains(&pattern.id) {
            continue;
        }
        let signal = if decision == "PASS" {
            Some(Verdict::Helpful)
        } else {
            let text = memory
                .texts(&[id])?
                .pop()
                .map(|(_, t)| t)
                .unwrap_or_default();
            let words = Words::of(&text);
            findings
                .iter()
                .any(|f| matches_finding(&words, f))
                .then_some(Verdict::Harmful)
        };
        if let Some(verdict) = signal {
            events.push(Event::Feedback {
                at: facts.timestamp.clone(),
                pattern,
                verdict,
                source: decision.to_ascii_lowercase(),
                record: Some(facts.id.clone()),
            });
        }
    }
    events.push(Event::Resolve {
        at: facts.timestamp.clone(),
        record: facts.id.clone(),
        issue,
        verdict: decision.into(),
    });
    Ok(events)
}

/// Whether a finding's words hold at least [`FINDING_MATCH`] of the
/// pattern's.
pub fn matches_finding(pattern: &Words, finding: &Words) -> bool {
    !pattern.is_empty() && pattern.shared(finding) as f64 >= FINDING_MATCH * pattern.len() as f64
}

/// The texts of a verdict's `findings`.
pub fn findings(verdict: &Map<String, Value>) -> Vec<String> {
    const FIELDS: [&str; 8] = [
        "title",
        "summary",
        "message",
        "text",
        "description",
        "finding",
        "detail",
        "body",
    ];
    let Some(Value::Array(items)) = verdict.get("findings") else {
        return Vec::new();
    };
    items
        .iter()
        .take(MAX_FINDINGS)
        .filter_map(|item| match item {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => {
                let parts: Vec<&str> = FIELDS
                    .iter()
                    .filter_map(|f| o.get(*f).and_then(Value::as_str))
                    .collect();
                (!parts.is_empty()).then(|| parts.join(" "))
            }
            _ => None,
        })
        .collect()
}

/// Mines one record inside a write transaction: evidence once, then its
/// feedback unless the log already has it.
pub fn mine_one(
    memory: &Memory,
    facts: &RecordFacts,
    text: &[u8],
    warn: &mut dyn FnMut(String),
) -> Result<Counts> {
    if memory.is_mined(&facts.id)? {
        return Ok(Counts::default());
    }
    let mut counts = evidence(memory, facts, text, None)?;
    memory.mark_mined(&facts.id)?;
    if let Some(v) = feedback_verdict(text, facts.issue) {
        if !memory.feedback_known(&facts.id)? {
            let events = derive(memory, facts, &v, warn)?;
            counts.feedback += events
                .iter()
                .filter(|e| matches!(e, Event::Feedback { .. }))
                .count();
            memory.append(&events)?;
        }
    }
    Ok(counts)
}

/// Every record of the state directory, oldest first (id order).
fn records(memory: &Memory, warnings: &mut dyn Write) -> Result<Vec<index::Entry>> {
    let dir = memory.state.join(DELIBERATIONS_DIR);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    index::load(&dir, warnings).map_err(|e| MemoryError::io(dir.display(), e))
}

fn read(memory: &Memory, id: &str, warnings: &mut dyn Write) -> Option<(RecordFacts, Vec<u8>)> {
    let dir = memory.state.join(DELIBERATIONS_DIR);
    let record = match index::read_record(&dir, id) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(warnings, "skipped the record {id}: {e}");
            return None;
        }
    };
    let text = match response_text(&memory.state, &record) {
        Ok(t) => t,
        Err(e) => {
            let _ = writeln!(warnings, "skipped the response of {id}: {e}");
            return None;
        }
    };
    Some((RecordFacts::of(id, &record), text))
}

/// Builds `memory.db` from scratch: every record's evidence (new patterns
/// take back the ids the log names them by), then the whole log, then the
/// feedback of records the log has none from. Runs inside the open's write
/// transaction; returns a one-line summary.
pub fn build(memory: &Memory, warnings: &mut dyn Write) -> Result<String> {
    let log_path = memory.state.join(PATTERNS_FEEDBACK);
    let logged =
        super::log::read_from(&log_path, 0).map_err(|e| MemoryError::io(log_path.display(), e))?;
    let reserved = Reserved::of(&logged.events);
    let entries = records(memory, warnings)?;
    let mut verdicts = Vec::new();
    let mut counts = Counts::default();
    for entry in &entries {
        let Some((facts, text)) = read(memory, &entry.id, warnings) else {
            continue;
        };
        counts.add(evidence(memory, &facts, &text, Some(&reserved))?);
        memory.mark_mined(&facts.id)?;
        if let Some(v) = feedback_verdict(&text, facts.issue) {
            verdicts.push((facts, v));
        }
    }
    memory.catch_up()?;
    let mut warn = |w: String| {
        let _ = writeln!(warnings, "{w}");
    };
    for (facts, v) in verdicts {
        if !memory.feedback_known(&facts.id)? {
            let events = derive(memory, &facts, &v, &mut warn)?;
            memory.append(&events)?;
        }
    }
    counts.add(recurring_findings(memory, warnings)?);
    memory.reserve_ids(reserved.max)?;
    Ok(format!(
        "built from {} deliberation records and {} feedback events: {} patterns",
        counts.records,
        logged.events.len(),
        memory.count()?
    ))
}

/// Adds the findings that recur across issues ([`super::findings`]); an
/// unreadable findings history is a warning.
fn recurring_findings(memory: &Memory, warnings: &mut dyn Write) -> Result<Counts> {
    match super::findings::recurring(&memory.state) {
        Ok(found) => {
            let (new, merged) = super::findings::mine_recurring(memory, &found)?;
            Ok(Counts {
                new,
                merged,
                ..Counts::default()
            })
        }
        Err(e) => {
            let _ = writeln!(warnings, "the findings history was not read: {e}");
            Ok(Counts::default())
        }
    }
}

/// Mines every record not mined yet, [`BATCH`] per transaction.
pub fn mine_all(memory: &Memory, warnings: &mut dyn Write) -> Result<Counts> {
    let entries = records(memory, warnings)?;
    let mined = memory.mined_records()?;
    let todo: Vec<&index::Entry> = entries.iter().filter(|e| !mined.contains(&e.id)).collect();
    let mut counts = Counts::default();
    for batch in todo.chunks(BATCH) {
        let (batch_counts, notes, said) = memory.write(|m| {
            let mut c = Counts::default();
            let mut notes: Vec<u8> = Vec::new();
            let mut said: Vec<String> = Vec::new();
            for entry in batch {
                if let Some((facts, text)) = read(m, &entry.id, &mut notes) {
                    c.add(mine_one(m, &facts, &text, &mut |w| said.push(w))?);
                }
            }
            Ok(((c, notes, said), Vec::new()))
        })?;
        let _ = warnings.write_all(&notes);
        for w in said {
            let _ = writeln!(warnings, "{w}");
        }
        counts.add(batch_counts);
    }
    let found = memory.write(|m| Ok((recurring_findings(m, warnings)?, Vec::new())))?;
    counts.add(found);
    if counts.records > BATCH {
        memory.checkpoint()?;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn findings_of_strings_and_objects() {
        let v = json!({"verdict": "FAIL", "findings": [
            "plain", {"title": "T", "detail": "D", "severity": "high"}, 3, {"x": 1}
        ]});
        assert_eq!(findings(v.as_object().unwrap()), ["plain", "T D"]);
    }

    #[test]
    fn a_finding_matches_most_of_a_pattern() {
        let p = Words::of("Check exit codes of every binary");
        assert!(matches_finding(
            &p,
            &Words::of("The binary's exit codes were not checked")
        ));
        assert!(!matches_finding(&p, &Words::of("Formatting is off")));
    }
}
