//! What `jkz-session load` prints for the model: a bounded markdown view of
//! one snapshot, newest facts first; and the lines of `jkz-session list`.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::notes::Section;
use crate::client_text::head_units;
use crate::cut::{cut_str, Keep};
use crate::outside_text::{self, short as value};

/// The most `load` prints, in bytes. Well under what a slash command's
/// injected output may carry, and small enough not to crowd the window.
pub const LOAD_MAX_BYTES: usize = 8000;

/// Room kept for each section's "… more" line.
const OMISSION_LINE: usize = 80;

/// "3m", "2h", "4d": how long ago `then` was.
pub fn age(then: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let s = (now - then).num_seconds().max(0);
    match s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// The git state ([`crate::git::GitState`] as JSON) in one line.
fn git_line(git: &Value) -> Option<String> {
    let text = |k: &str| git.get(k).and_then(Value::as_str);
    let short = text("head").map(|h| cut_str(h, 12, Keep::Head));
    let mut line = match (text("branch"), short) {
        (Some(branch), Some(head)) => format!("branch `{}` at {}", value(branch), value(head)),
        (Some(branch), None) => format!("branch `{}` (no commit yet)", value(branch)),
        (None, Some(head)) => format!("detached HEAD at {}", value(head)),
        (None, None) => return text("error").map(|e| format!("git state unknown ({})", value(e))),
    };
    if let Some(n) = git.get("dirty_count").and_then(Value::as_u64) {
        line.push_str(&format!(", {n} uncommitted path(s)"));
    }
    Some(line)
}

/// A text in one line, cut to about `max` characters head and tail with
/// the end favoured (a failure log ends with the error), as every digest cuts.
fn short(text: &str, max: usize, whole: &str) -> String {
    outside_text::inline(text, max, whole)
}

/// A pipeline's normalized view ([`crate::pipeline::Normalized`] as JSON):
/// one line, then its pending decisions and failure context beneath.
fn pipeline_lines(p: &Value) -> String {
    let text = |k: &str| p.get(k).and_then(Value::as_str);
    let count = |k: &str| p.get(k).and_then(Value::as_u64);
    let issue = match p.get("issue") {
        Some(Value::String(s)) => value(s),
        Some(Value::Number(n)) => n.to_string(),
        _ => "?".into(),
    };
    if let Some(error) = text("error") {
        return format!(
            "- issue {issue}: unreadable pipeline file ({})\n",
            short(error, 160, "see the pipeline file")
        );
    }
    let mut line = format!(
        "- issue {issue}: phase `{}`",
        value(text("current_phase").unwrap_or("unknown"))
    );
    if let Some(a) = text("active_agent") {
        line.push_str(&format!(", agent {}", value(a)));
    }
    if let Some(pr) = count("pr_number") {
        line.push_str(&format!(", PR #{pr}"));
    }
    if let Some(v) = text("verdict") {
        line.push_str(&format!(", verdict {}", value(v)));
    }
    for (key, name) in [
        ("plan_iterations", "plan iteration"),
        ("review_fix_count", "review fix"),
        ("qa_fix_count", "QA fix"),
    ] {
        if let Some(n) = count(key) {
            line.push_str(&format!(", {name} {n}"));
        }
    }
    if let Some(t) = text("last_updated") {
        line.push_str(&format!(", updated {}", value(t)));
    }
    line.push('\n');
    let pending = p.get("pending_decisions").and_then(Value::as_array);
    for d in pending
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .take(5)
    {
        line.push_str(&format!(
            "  - pending decision: {}\n",
            short(d, 200, "see `--json`")
        ));
    }
    if let Some(f) = text("failure_context") {
        line.push_str(&format!("  - failure: {}\n", short(f, 300, "see `--json`")));
    }
    line
}

/// One saved note as a markdown bullet: its first line after the bullet,
/// the rest quoted under it ([`outside_text`]: a note is what a chat wrote,
/// and cannot open a heading or an item of this view).
fn bullet(text: &str, note: Option<&str>) -> String {
    let text = text.trim_end();
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let mut out = format!("- {}", outside_text::inline(first, usize::MAX, ""));
    if let Some(note) = note {
        out.push_str(&format!(" _(saved {})_", value(note)));
    }
    if !rest.trim().is_empty() {
        out.push('\n');
        out.push_str(&outside_text::block(rest, usize::MAX, "", "  "));
    }
    out.push('\n');
    out
}

fn cut(text: &mut String, max: usize) {
    if text.len() > max {
        let end = cut_str(text, max.saturating_sub('…'.len_utf8() + 1), Keep::Head).len();
        text.truncate(end);
        text.push_str("…\n");
    }
}

/// The markdown `load` prints for snapshot `snap` of session `id`, at most
/// `max` bytes.
pub fn load_markdown(
    id: &str,
    snap: &Map<String, Value>,
    now: DateTime<Utc>,
    max: usize,
) -> String {
    let mut out = format!("# jkz session snapshot: {id}\n\n");
    let saved_at = snap.get("saved_at").and_then(Value::as_str);
    let mut facts = Vec::new();
    match saved_at.and_then(parse_time) {
        Some(t) => facts.push(format!(
            "saved {} ago ({})",
            age(t, now),
            saved_at.unwrap_or("")
        )),
        None => facts.push("never saved with /jkz:save".to_string()),
    }
    if let Some(line) = snap.get("git").and_then(git_line) {
        facts.push(line);
    }
    out.push_str(&facts.join("; "));
    out.push_str(".\n");

    let pipeline: Vec<&Value> = snap
        .get("pipeline")
        .and_then(Value::as_array)
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    if !pipeline.is_empty() {
        out.push_str("\n## Pipeline status (at save time)\n");
        for p in pipeline.iter().take(10) {
            out.push_str(&pipeline_lines(p));
        }
        if pipeline.len() > 10 {
            out.push_str(&format!("- … {} more issue(s)\n", pipeline.len() - 10));
        }
    }
    cut(&mut out, max / 2);

    let notes = snap.get("notes").and_then(Value::as_object);
    let present: Vec<(Section, &Vec<Value>)> = Section::ALL
        .into_iter()
        .filter_map(|s| {
            let list = notes?.get(s.key())?.as_array()?;
            (!list.is_empty()).then_some((s, list))
        })
        .collect();
    if present.is_empty() {
        out.push_str("\nNo notes were saved in this snapshot.\n");
        cut(&mut out, max);
        return out;
    }
    // Each section gets an equal share of what is left; what one does not
    // use passes to the next, so a long section cannot starve the others.
    let mut remaining = max.saturating_sub(out.len());
    for (i, (section, items)) in present.iter().enumerate() {
        let share = remaining / (present.len() - i);
        let mut text = format!("\n## {}\n", section.title());
        let mut shown = 0;
        for item in items.iter() {
            let Some(t) = item.get("text").and_then(Value::as_str) else {
                continue;
            };
            let older = item
                .get("saved_at")
                .and_then(Value::as_str)
                .filter(|s| Some(*s) != saved_at);
            let mut line = bullet(t, older);
            let room = share.saturating_sub(text.len() + OMISSION_LINE);
            if line.len() > room {
                if shown > 0 || room < 40 {
                    break;
                }
                cut(&mut line, room);
            }
            text.push_str(&line);
            shown += 1;
        }
        let hidden = items.len() - shown;
        if hidden > 0 {
            text.push_str(&format!(
                "- … {hidden} older item(s) not shown (jkz-session load --json has all)\n"
            ));
        }
        cut(&mut text, share);
        remaining = remaining.saturating_sub(text.len());
        out.push_str(&text);
    }
    out
}

/// The headline of a snapshot for `list`: the newest completed work, else
/// decision, else next step, first line only.
pub fn headline(snap: &Map<String, Value>) -> String {
    let notes = snap.get("notes").and_then(Value::as_object);
    let first = [
        Section::CompletedWork,
        Section::Decisions,
        Section::NextSteps,
        Section::Gotchas,
    ]
    .into_iter()
    .find_map(|s| {
        notes?
            .get(s.key())?
            .as_array()?
            .first()?
            .get("text")?
            .as_str()
    });
    let Some(text) = first else {
        return "(no notes saved)".to_string();
    };
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > 72 {
        format!("{}…", head_units(line, 71))
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snap(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn sections_in_reading_order_with_older_items_marked() {
        let now = parse_time("2025-01-02T00:00:00Z").unwrap();
        let s = snap(json!({
            "saved_at": "2025-01-01T23:00:00Z",
            "git": {"branch": "main", "head": "abc1234def5678abc1234def5678abc1234def56", "dirty": ["a", "b"], "dirty_count": 2, "error": null},
            "pipeline": [{"issue": "42", "current_phase": "building", "active_agent": "builder", "pr_number": 7, "verdict": null,
                          "pending_decisions": ["ship now?"], "failure_context": null, "plan_iterations": 2}],
            "notes": {
                "completed_work": [{"text": "w", "saved_at": "2025-01-01T23:00:00Z"}],
                "decisions": [{"text": "new", "saved_at": "2025-01-01T23:00:00Z"},
                              {"text": "old\nsecond line", "saved_at": "2025-01-01T10:00:00Z"}],
                "next_steps": [{"text": "n", "saved_at": "2025-01-01T23:00:00Z"}]
            }
        }));
        let md = load_markdown("s1", &s, now, LOAD_MAX_BYTES);
        let expected = "# jkz session snapshot: s1\n\nsaved 1h ago (2025-01-01T23:00:00Z); branch `main` at abc1234def56, 2 uncommitted path(s).\n\n## Pipeline status (at save time)\n- issue 42: phase `building`, agent builder, PR #7, plan iteration 2\n  - pending decision: ship now?\n\n## Next steps\n- n\n\n## Decisions\n- new\n- old _(saved 2025-01-01T10:00:00Z)_\n  > second line\n\n## Completed work\n- w\n";
        assert_eq!(md, expected);
    }

    #[test]
    fn output_is_bounded_and_every_section_shows() {
        let now = Utc::now();
        let many = |p: &str| -> Vec<Value> {
            (0..100)
                .map(|i| json!({"text": format!("{p} {i} {}", "x".repeat(300)), "saved_at": "t"}))
                .collect()
        };
        let s = snap(json!({"notes": {
            "completed_work": many("done"), "decisions": many("dec"),
            "gotchas": many("got"), "next_steps": many("next")}}));
        for max in [LOAD_MAX_BYTES, 2000, 600] {
            let md = load_markdown("s", &s, now, max);
            assert!(md.len() <= max, "{} > {max}", md.len());
            for title in [
                "## Next steps",
                "## Decisions",
                "## Gotchas",
                "## Completed work",
            ] {
                assert!(md.contains(title), "{title} missing at {max}:\n{md}");
            }
        }
        let md = load_markdown("s", &s, now, LOAD_MAX_BYTES);
        assert!(md.contains("- next 0 "), "newest next step first");
        assert!(md.contains("older item(s) not shown"));
    }

    #[test]
    fn headline_prefers_completed_work() {
        let s = snap(
            json!({"notes": {"decisions": [{"text": "d"}], "completed_work": [{"text": "c\nmore"}]}}),
        );
        assert_eq!(headline(&s), "c");
        assert_eq!(headline(&Map::new()), "(no notes saved)");
    }
}
