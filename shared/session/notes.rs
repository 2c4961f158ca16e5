//! What `/jkz:save` records: the notes a session leaves for the next one,
//! read from markdown sections or JSON, and merged into the snapshot.
//!
//! Stored under `notes` in the snapshot, one array per section, newest first,
//! each item `{"text": …, "saved_at": …}`. A save puts its items in front of
//! the section's older items (an item saved again moves to the front, no
//! duplicate), except `next_steps`, which a save replaces whole: an old plan
//! beside a new one misleads. Each section keeps at most [`MAX_ITEMS`].

use crate::cut::{cut_str, Keep};
use serde_json::{Map, Value};

/// Items kept per section; the oldest go first.
pub const MAX_ITEMS: usize = 100;
/// Longest item kept, in bytes; longer ones are cut at a character boundary.
pub const MAX_ITEM_BYTES: usize = 4096;

/// The sections of a session's notes, in the order a reader wants them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    NextSteps,
    Decisions,
    Gotchas,
    CompletedWork,
    /// Text under a heading jkz does not know, or before the first heading.
    Other,
}

impl Section {
    pub const ALL: [Section; 5] = [
        Section::NextSteps,
        Section::Decisions,
        Section::Gotchas,
        Section::CompletedWork,
        Section::Other,
    ];

    /// The key in JSON input and in the snapshot's `notes`.
    pub fn key(self) -> &'static str {
        match self {
            Section::NextSteps => "next_steps",
            Section::Decisions => "decisions",
            Section::Gotchas => "gotchas",
            Section::CompletedWork => "completed_work",
            Section::Other => "other_notes",
        }
    }

    /// The markdown heading.
    pub fn title(self) -> &'static str {
        match self {
            Section::NextSteps => "Next steps",
            Section::Decisions => "Decisions",
            Section::Gotchas => "Gotchas",
            Section::CompletedWork => "Completed work",
            Section::Other => "Other notes",
        }
    }

    fn from_heading(text: &str) -> Option<Section> {
        let t: String = text
            .trim()
            .trim_matches(|c| matches!(c, '*' | '_' | '`' | ':'))
            .trim()
            .to_lowercase()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        Some(match t.as_str() {
            "completed work" | "completed" | "work completed" | "done" => Section::CompletedWork,
            "decisions" | "decisions made" => Section::Decisions,
            "gotchas" | "pitfalls" | "caveats" => Section::Gotchas,
            "next steps" | "next" | "todo" | "to do" => Section::NextSteps,
            "other notes" | "notes" => Section::Other,
            _ => return None,
        })
    }

    fn from_key(key: &str) -> Option<Section> {
        Section::ALL.into_iter().find(|s| s.key() == key)
    }
}

/// The notes of one save: each section given, with its items in order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Notes {
    pub sections: Vec<(Section, Vec<String>)>,
}

impl Notes {
    fn items_mut(&mut self, section: Section) -> &mut Vec<String> {
        if let Some(i) = self.sections.iter().position(|(s, _)| *s == section) {
            return &mut self.sections[i].1;
        }
        self.sections.push((section, Vec::new()));
        &mut self.sections.last_mut().expect("just pushed").1
    }

    pub fn item_count(&self) -> usize {
        self.sections.iter().map(|(_, items)| items.len()).sum()
    }
}

/// What the input must look like, for error messages.
pub const EXPECTED: &str = "expected markdown with sections ## Completed work, ## Decisions, ## Gotchas, ## Next steps \
     (or a JSON object with keys completed_work, decisions, gotchas, next_steps, other_notes: strings or arrays of strings)";

/// Reads save input: a JSON object when it starts with `{`, else markdown.
pub fn parse(text: &str) -> Result<Notes, String> {
    let notes = if text.trim_start().starts_with('{') {
        parse_json(text)?
    } else {
        parse_markdown(text)?
    };
    if notes.item_count() == 0 && notes.sections.is_empty() {
        return Err(format!("nothing to save: {EXPECTED}"));
    }
    Ok(notes)
}

fn clip(mut text: String) -> String {
    if text.len() > MAX_ITEM_BYTES {
        let end = cut_str(&text, MAX_ITEM_BYTES - '…'.len_utf8(), Keep::Head).len();
        text.truncate(end);
        text.push('…');
    }
    text
}

fn parse_json(text: &str) -> Result<Notes, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("invalid JSON input: {e}"))?;
    let Value::Object(map) = value else {
        return Err(format!("JSON input is not an object: {EXPECTED}"));
    };
    let mut notes = Notes::default();
    for (key, value) in map {
        let section = Section::from_key(&key)
            .ok_or_else(|| format!("unknown key \"{key}\" in JSON input: {EXPECTED}"))?;
        let items = notes.items_mut(section);
        match value {
            Value::String(s) => items.push(s),
            Value::Array(list) => {
                for v in list {
                    match v {
                        Value::String(s) => items.push(s),
                        _ => return Err(format!("\"{key}\" holds a non-string item: {EXPECTED}")),
                    }
                }
            }
            Value::Null => {}
            _ => {
                return Err(format!(
                    "\"{key}\" is neither a string nor an array: {EXPECTED}"
                ))
            }
        }
    }
    for (_, items) in &mut notes.sections {
        *items = std::mem::take(items)
            .into_iter()
            .map(|s| clip(s.trim().to_string()))
            .filter(|s| !s.is_empty())
            .collect();
    }
    Ok(notes)
}

fn heading(line: &str) -> Option<&str> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let hashes = t.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &t[hashes..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim())
}

fn bullet(line: &str) -> Option<&str> {
    let t = line.trim_start_matches(' ');
    if line.len() - t.len() > 3 {
        return None;
    }
    let after = if let Some(r) = t.strip_prefix(['-', '*', '+']) {
        r
    } else {
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        if !(1..=3).contains(&digits) {
            return None;
        }
        t[digits..].strip_prefix(['.', ')'])?
    };
    if after.is_empty() {
        return Some("");
    }
    after.strip_prefix([' ', '\t']).map(str::trim)
}

fn fence_marker(line: &str) -> Option<&str> {
    let t = line.trim_start();
    ["```", "~~~"].into_iter().find(|m| t.starts_with(m))
}

fn parse_markdown(text: &str) -> Result<Notes, String> {
    let mut notes = Notes::default();
    let mut known = false;
    let mut section = Section::Other;
    // Text under an unknown heading keeps the heading as its prefix.
    let mut prefix: Option<String> = None;
    let mut item: Option<String> = None;
    let mut fence: Option<&str> = None;

    let flush = |notes: &mut Notes,
                 section: Section,
                 item: &mut Option<String>,
                 prefix: &Option<String>| {
        if let Some(text) = item.take() {
            let text = text.trim_end().to_string();
            if !text.is_empty() {
                let text = match prefix {
                    Some(p) => format!("{p}: {text}"),
                    None => text,
                };
                notes.items_mut(section).push(clip(text));
            }
        }
    };

    for line in text.lines() {
        if let Some(marker) = fence {
            let it = item.get_or_insert_with(String::new);
            it.push('\n');
            it.push_str(line);
            if line.trim_start().starts_with(marker) {
                fence = None;
            }
            continue;
        }
        if let Some(title) = heading(line) {
            flush(&mut notes, section, &mut item, &prefix);
            match Section::from_heading(title) {
                Some(s) => {
                    section = s;
                    prefix = None;
                    known = true;
                    notes.items_mut(s);
                }
                None => {
                    section = Section::Other;
                    prefix = Some(title.to_string());
                }
            }
            continue;
        }
        if let Some(marker) = fence_marker(line) {
            fence = Some(marker);
            match &mut item {
                Some(it) => {
                    it.push('\n');
                    it.push_str(line);
                }
                None => item = Some(line.to_string()),
            }
            continue;
        }
        if line.trim().is_empty() {
            flush(&mut notes, section, &mut item, &prefix);
            continue;
        }
        if let Some(rest) = bullet(line) {
            flush(&mut notes, section, &mut item, &prefix);
            item = Some(rest.to_string());
            continue;
        }
        match &mut item {
            Some(it) => {
                it.push('\n');
                it.push_str(line.trim());
            }
            None => item = Some(line.trim().to_string()),
        }
    }
    flush(&mut notes, section, &mut item, &prefix);
    if !known {
        return Err(format!("no known section heading in the input: {EXPECTED}"));
    }
    Ok(notes)
}

/// Merges one save's notes into the snapshot's `notes` object.
pub fn merge(notes_obj: &mut Map<String, Value>, notes: &Notes, saved_at: &str) {
    for (section, items) in &notes.sections {
        let fresh: Vec<Value> = items
            .iter()
            .map(|text| {
                let mut item = Map::new();
                item.insert("text".into(), text.clone().into());
                item.insert("saved_at".into(), saved_at.into());
                Value::Object(item)
            })
            .collect();
        let merged = if *section == Section::NextSteps {
            fresh
        } else {
            let older = match notes_obj.remove(section.key()) {
                Some(Value::Array(list)) => list,
                _ => Vec::new(),
            };
            let mut merged = fresh;
            merged.extend(older.into_iter().filter(|old| {
                !old.get("text")
                    .and_then(Value::as_str)
                    .is_some_and(|t| items.iter().any(|i| i == t))
            }));
            merged
        };
        let mut merged = merged;
        merged.truncate(MAX_ITEMS);
        notes_obj.insert(section.key().into(), Value::Array(merged));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sections(notes: &Notes) -> Vec<(&'static str, Vec<&str>)> {
        notes
            .sections
            .iter()
            .map(|(s, items)| (s.key(), items.iter().map(String::as_str).collect()))
            .collect()
    }

    #[test]
    fn markdown_sections_and_items() {
        let md = "intro line\n\n## Completed work\n- built the parser\n  with tests\n* second\n\n## Decisions:\n1. use JSON\n2) keep order\n\nA paragraph item\nthat wraps.\n### Next steps\n- ship\n## Risks\n- disk full\n## Gotchas\n```sh\n## not a heading\n- not a bullet\n```\n";
        let notes = parse(md).unwrap();
        assert_eq!(
            sections(&notes),
            vec![
                ("other_notes", vec!["intro line", "Risks: disk full"]),
                (
                    "completed_work",
                    vec!["built the parser\nwith tests", "second"]
                ),
                (
                    "decisions",
                    vec!["use JSON", "keep order", "A paragraph item\nthat wraps."]
                ),
                ("next_steps", vec!["ship"]),
                (
                    "gotchas",
                    vec!["```sh\n## not a heading\n- not a bullet\n```"]
                ),
            ]
        );
    }

    #[test]
    fn json_input() {
        let notes =
            parse(r#"{"decisions": ["a", " b "], "next_steps": "go", "gotchas": []}"#).unwrap();
        assert_eq!(
            sections(&notes),
            vec![
                ("decisions", vec!["a", "b"]),
                ("next_steps", vec!["go"]),
                ("gotchas", vec![])
            ]
        );
        for bad in [
            r#"{"decision": "x"}"#,
            r#"{"decisions": [1]}"#,
            "[1]",
            "{",
            "{}",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refuses_text_without_sections() {
        assert!(parse("just some text\n").is_err());
        assert!(parse("").is_err());
        assert!(parse("# Title\nx\n").is_err());
    }

    #[test]
    fn long_items_are_clipped_on_a_char_boundary() {
        let long = "é".repeat(MAX_ITEM_BYTES);
        let notes = parse(&format!("## Decisions\n- {long}\n")).unwrap();
        let item = &notes.sections[0].1[0];
        assert!(item.len() <= MAX_ITEM_BYTES && item.ends_with('…'));
    }

    #[test]
    fn merge_puts_new_first_dedups_and_replaces_next_steps() {
        let mut obj = Map::new();
        merge(
            &mut obj,
            &parse("## Decisions\n- a\n- b\n## Next steps\n- old\n").unwrap(),
            "t1",
        );
        merge(
            &mut obj,
            &parse("## Decisions\n- c\n- a\n## Next steps\n- new\n").unwrap(),
            "t2",
        );
        let texts = |k: &str| -> Vec<(String, String)> {
            obj[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    (
                        i["text"].as_str().unwrap().into(),
                        i["saved_at"].as_str().unwrap().into(),
                    )
                })
                .collect()
        };
        let pair = |t: &str, s: &str| (t.to_string(), s.to_string());
        assert_eq!(
            texts("decisions"),
            vec![pair("c", "t2"), pair("a", "t2"), pair("b", "t1")]
        );
        assert_eq!(texts("next_steps"), vec![pair("new", "t2")]);
        assert_eq!(obj["decisions"][0], json!({"text": "c", "saved_at": "t2"}));
    }

    #[test]
    fn merge_keeps_at_most_max_items() {
        let mut obj = Map::new();
        for i in 0..(MAX_ITEMS + 5) {
            merge(
                &mut obj,
                &parse(&format!("## Gotchas\n- g{i}\n")).unwrap(),
                "t",
            );
        }
        let list = obj["gotchas"].as_array().unwrap();
        assert_eq!(list.len(), MAX_ITEMS);
        assert_eq!(list[0]["text"], format!("g{}", MAX_ITEMS + 4));
    }

    proptest::proptest! {
        /// Oracle: the sections and items written are the ones read back.
        #[test]
        fn markdown_round_trips(
            given in proptest::collection::vec(
                (0usize..4, proptest::collection::vec("[a-zA-Z0-9][a-zA-Z0-9 .,:;()'\"/-]{0,40}", 0..5)),
                1..6,
            )
        ) {
            let known = [Section::CompletedWork, Section::Decisions, Section::Gotchas, Section::NextSteps];
            let mut md = String::new();
            let mut expected: Vec<(Section, Vec<String>)> = Vec::new();
            for (which, items) in &given {
                let section = known[*which];
                md.push_str(&format!("## {}\n", section.title()));
                for item in items {
                    md.push_str(&format!("- {item}\n"));
                }
                md.push('\n');
                let items: Vec<String> = items.iter().map(|i| i.trim().to_string()).collect();
                match expected.iter_mut().find(|(s, _)| *s == section) {
                    Some((_, list)) => list.extend(items),
                    None => expected.push((section, items)),
                }
            }
            let notes = parse(&md).unwrap();
            proptest::prop_assert_eq!(notes.sections, expected);
        }
    }
}
