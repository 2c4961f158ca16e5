//! jkz's entries in a Claude Code `settings.json`: adding them without
//! disturbing anything else, finding them, and taking them out again.
//!
//! Shape (Claude Code's):
//! `{"hooks": {"PreCompact": [{"matcher": "", "hooks": [{"type": "command",
//! "command": "…"}]}], …}}`. jkz registers one matcher group of its own per
//! entry in [`REGISTRATIONS`]; other groups, other hooks in them and every
//! other key are never touched. A hook is jkz's when the program of its
//! command (first word, quotes removed) is named `jkz-pre-compact`,
//! `jkz-session-start`, `jkz-post-tool-use` or `jkz-chat`: that survives a
//! reinstall to another prefix.

use serde_json::{Map, Value};

/// The hook programs jkz registers.
pub const HOOK_PROGRAMS: [&str; 4] = [
    "jkz-pre-compact",
    "jkz-session-start",
    "jkz-post-tool-use",
    "jkz-chat",
];

/// One registration: Claude Code event, matcher, hook program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registration {
    pub event: &'static str,
    pub matcher: &'static str,
    pub program: &'static str,
}

/// What `jkz install` registers: PreCompact for every trigger (manual and
/// auto), SessionStart after a compaction, on resume and in a forked
/// session, PostCompact (the same program: it checks what the summary
/// dropped, for SessionStart to restore first), PostToolUse for
/// the tools whose output can be large (Bash, Read, Grep, every MCP tool);
/// and the cross-chat registry's `jkz-chat` on every event of a chat's life
/// (start, prompt, tool call, end) and before the tools that change files.
pub const REGISTRATIONS: [Registration; 11] = [
    Registration {
        event: "PreCompact",
        matcher: "",
        program: "jkz-pre-compact",
    },
    Registration {
        event: "SessionStart",
        matcher: "compact",
        program: "jkz-session-start",
    },
    Registration {
        event: "SessionStart",
        matcher: "resume",
        program: "jkz-session-start",
    },
    Registration {
        event: "SessionStart",
        matcher: "fork",
        program: "jkz-session-start",
    },
    Registration {
        event: "PostCompact",
        matcher: "",
        program: "jkz-session-start",
    },
    Registration {
        event: "PostToolUse",
        matcher: "Bash|Read|Grep|mcp__.*",
        program: "jkz-post-tool-use",
    },
    Registration {
        event: "SessionStart",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "UserPromptSubmit",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "PreToolUse",
        matcher: "Edit|Write|MultiEdit|NotebookEdit|Bash",
        program: "jkz-chat",
    },
    Registration {
        event: "PostToolUse",
        matcher: "",
        program: "jkz-chat",
    },
    Registration {
        event: "SessionEnd",
        matcher: "",
        program: "jkz-chat",
    },
];

/// One registration as install and doctor name it: `PreCompact →
/// jkz-pre-compact`, `SessionStart (compact) → jkz-session-start`.
pub fn describe(reg: &Registration) -> String {
    match reg.matcher {
        "" => format!("{} → {}", reg.event, reg.program),
        m => format!("{} ({m}) → {}", reg.event, reg.program),
    }
}

/// What install says once it registered `registrations` in `file`: a line
/// naming the file, then one line per registration.
pub fn registered_summary(registrations: &[Registration], file: &std::path::Path) -> String {
    let mut text = format!(
        "registered {} hooks in {}:",
        registrations.len(),
        file.display()
    );
    for reg in registrations {
        text.push_str("\n  ");
        text.push_str(&describe(reg));
    }
    text
}

/// Settings whose shape jkz cannot edit safely; the file is left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError(pub String);

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses settings bytes; only a JSON object is accepted. An empty file (or
/// one of only whitespace) counts as `{}`, as Claude Code treats it.
pub fn parse(bytes: &[u8]) -> Result<Map<String, Value>, String> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("not a JSON object".to_string()),
        Err(e) => Err(format!("invalid JSON: {e}")),
    }
}

/// Serializes the way Claude Code writes settings: two-space indents, key
/// order kept, final newline.
pub fn serialize(map: &Map<String, Value>) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(map).expect("a JSON map serializes");
    bytes.push(b'\n');
    bytes
}

/// The program path of a hook command, shell quotes removed.
pub fn command_path(command: &str) -> String {
    let command = command.trim_start();
    match command.chars().next() {
        Some(q @ ('\'' | '"')) => {
            // Our own quoting writes '\'' for a quote inside single quotes.
            let mut out = String::new();
            let mut rest = &command[1..];
            loop {
                match rest.find(q) {
                    None => {
                        out.push_str(rest);
                        break;
                    }
                    Some(i) => {
                        out.push_str(&rest[..i]);
                        rest = &rest[i + 1..];
                        if let Some(r) = rest.strip_prefix("\\''") {
                            out.push('\'');
                            rest = r;
                        } else {
                            break;
                        }
                    }
                }
            }
            out
        }
        _ => command.split_whitespace().next().unwrap_or("").to_string(),
    }
}

/// The program a hook command runs, without its directory.
pub fn command_program(command: &str) -> String {
    let path = command_path(command);
    path.rsplit('/').next().unwrap_or("").to_string()
}

/// True when a hook command runs one of jkz's hook programs.
pub fn is_jkz_command(command: &str) -> bool {
    HOOK_PROGRAMS.contains(&command_program(command).as_str())
}

/// Quotes a path for a shell command line when it needs it.
pub fn shell_quote(path: &str) -> String {
    let plain = !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%,=".contains(&b));
    if plain {
        path.to_string()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
    }
}

fn matcher_of(group: &Value) -> &str {
    group.get("matcher").and_then(Value::as_str).unwrap_or("")
}

fn hooks_object(
    settings: &mut Map<String, Value>,
) -> Result<Option<&mut Map<String, Value>>, ShapeError> {
    match settings.get_mut("hooks") {
        None => Ok(None),
        Some(Value::Object(hooks)) => Ok(Some(hooks)),
        Some(_) => Err(ShapeError("\"hooks\" is not an object".into())),
    }
}

fn event_array<'a>(
    hooks: &'a mut Map<String, Value>,
    event: &str,
) -> Result<Option<&'a mut Vec<Value>>, ShapeError> {
    match hooks.get_mut(event) {
        None => Ok(None),
        Some(Value::Array(groups)) => Ok(Some(groups)),
        Some(_) => Err(ShapeError(format!("\"hooks.{event}\" is not an array"))),
    }
}

/// Checks the parts of the settings jkz reads or writes have the shape
/// Claude Code expects, so an edit never has to stop half way.
pub fn check_shape(settings: &Map<String, Value>) -> Result<(), ShapeError> {
    let Some(hooks) = settings.get("hooks") else {
        return Ok(());
    };
    let Some(hooks) = hooks.as_object() else {
        return Err(ShapeError("\"hooks\" is not an object".into()));
    };
    for (event, groups) in hooks {
        let Some(groups) = groups.as_array() else {
            return Err(ShapeError(format!("\"hooks.{event}\" is not an array")));
        };
        for (i, group) in groups.iter().enumerate() {
            let Some(group) = group.as_object() else {
                return Err(ShapeError(format!(
                    "\"hooks.{event}[{i}]\" is not an object"
                )));
            };
            if let Some(list) = group.get("hooks") {
                if !list.is_array() {
                    return Err(ShapeError(format!(
                        "\"hooks.{event}[{i}].hooks\" is not an array"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The command of each jkz hook registered for (event, matcher).
pub fn registered_commands(
    settings: &Map<String, Value>,
    event: &str,
    matcher: &str,
    program: &str,
) -> Vec<String> {
    let groups = settings
        .get("hooks")
        .and_then(|h| h.get(event))
        .and_then(Value::as_array);
    groups
        .into_iter()
        .flatten()
        .filter(|g| matcher_of(g) == matcher)
        .filter_map(|g| g.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter_map(|h| h.get("command").and_then(Value::as_str))
        .filter(|c| command_program(c) == program)
        .map(str::to_string)
        .collect()
}

/// True when any jkz hook is registered anywhere in the settings.
pub fn has_jkz_hooks(settings: &Map<String, Value>) -> bool {
    let Some(hooks) = settings.get("hooks").and_then(Value::as_object) else {
        return false;
    };
    hooks
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|g| g.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter_map(|h| h.get("command").and_then(Value::as_str))
        .any(is_jkz_command)
}

/// Registers jkz's hooks; `command_for(program)` gives the command line of a
/// hook program. An existing jkz hook for the same event and matcher is
/// pointed at the new command (a reinstall elsewhere); one already right is
/// left as is. Returns true when anything changed.
pub fn add_hooks(
    settings: &mut Map<String, Value>,
    command_for: impl Fn(&str) -> String,
) -> Result<bool, ShapeError> {
    add_registrations(settings, &REGISTRATIONS, |reg| {
        let mut hook = Map::new();
        hook.insert("type".into(), "command".into());
        hook.insert("command".into(), command_for(reg.program).into());
        hook
    })
}

/// [`add_hooks`] for any client whose settings have Claude Code's shape:
/// registers each of `registrations` with the hook object `hook_for` makes
/// (its `command` names the program). An existing jkz hook of the same
/// event, matcher and program gets the new object's fields (other fields
/// of it are kept); one already right is left as is.
pub fn add_registrations(
    settings: &mut Map<String, Value>,
    registrations: &[Registration],
    hook_for: impl Fn(&Registration) -> Map<String, Value>,
) -> Result<bool, ShapeError> {
    check_shape(settings)?;
    let mut changed = false;
    for reg in registrations {
        let wanted = hook_for(reg);
        if hooks_object(settings)?.is_none() {
            settings.insert("hooks".into(), Value::Object(Map::new()));
        }
        let hooks = hooks_object(settings)?.expect("just inserted");
        if event_array(hooks, reg.event)?.is_none() {
            hooks.insert(reg.event.into(), Value::Array(Vec::new()));
        }
        let groups = event_array(hooks, reg.event)?.expect("just inserted");
        let mut found = false;
        for group in groups.iter_mut().filter(|g| matcher_of(g) == reg.matcher) {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                continue;
            };
            for hook in list.iter_mut() {
                let Some(Value::String(existing)) = hook.get("command") else {
                    continue;
                };
                if command_program(existing) != reg.program {
                    continue;
                }
                found = true;
                let Some(hook) = hook.as_object_mut() else {
                    continue;
                };
                for (key, value) in &wanted {
                    if hook.get(key) != Some(value) {
                        hook.insert(key.clone(), value.clone());
                        changed = true;
                    }
                }
            }
        }
        if !found {
            let mut group = Map::new();
            group.insert("matcher".into(), reg.matcher.into());
            group.insert(
                "hooks".into(),
                Value::Array(vec![Value::Object(wanted.clone())]),
            );
            groups.push(Value::Object(group));
            changed = true;
        }
    }
    Ok(changed)
}

/// Removes every jkz hook. A matcher group left without hooks, an event left
/// without groups and a `hooks` object left empty go too — but only when a
/// jkz hook was taken out of them, so containers another tool left empty stay.
/// Returns true when anything changed.
pub fn remove_hooks(settings: &mut Map<String, Value>) -> Result<bool, ShapeError> {
    check_shape(settings)?;
    let Some(hooks) = hooks_object(settings)? else {
        return Ok(false);
    };
    let mut changed = false;
    let events: Vec<String> = hooks.keys().cloned().collect();
    for event in events {
        let groups = event_array(hooks, &event)?.expect("listed key");
        let mut event_changed = false;
        groups.retain_mut(|group| {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let before = list.len();
            list.retain(|h| {
                !h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(is_jkz_command)
            });
            if list.len() == before {
                return true;
            }
            event_changed = true;
            !list.is_empty()
        });
        if event_changed {
            changed = true;
            if groups.is_empty() {
                hooks.remove(&event);
            }
        }
    }
    if changed && hooks.is_empty() {
        settings.remove("hooks");
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn cmd(p: &str) -> String {
        format!("/opt/jkz bin/{p}")
    }

    #[test]
    fn program_of_a_command() {
        assert_eq!(
            command_program("/a/b/jkz-pre-compact --x"),
            "jkz-pre-compact"
        );
        assert_eq!(
            command_program("'/a b/jkz-session-start'"),
            "jkz-session-start"
        );
        assert_eq!(
            command_program("\"/a b/jkz-session-start\" y"),
            "jkz-session-start"
        );
        assert_eq!(command_program("jkz-pre-compact"), "jkz-pre-compact");
        assert_eq!(command_program("other-tool jkz-pre-compact"), "other-tool");
        assert!(!is_jkz_command(""));
    }

    #[test]
    fn program_paths_come_out_of_our_quoting() {
        for path in ["/usr/bin/jkz-pre-compact", "/a b/it's/jkz-pre-compact"] {
            assert_eq!(command_path(&shell_quote(path)), path);
        }
        assert_eq!(command_path("/x/y --flag"), "/x/y");
    }

    #[test]
    fn quoting_round_trips_through_program_detection() {
        for path in ["/usr/bin/jkz-pre-compact", "/a b/it's/jkz-pre-compact"] {
            let quoted = shell_quote(path);
            assert!(is_jkz_command(&quoted), "{quoted}");
        }
        assert_eq!(shell_quote("/usr/bin/x"), "/usr/bin/x");
        assert_eq!(shell_quote("/a b"), "'/a b'");
    }

    #[test]
    fn adds_next_to_other_tools_and_is_idempotent() {
        let original = obj(json!({
            "model": "x",
            "hooks": {
                "PreCompact": [{"matcher": "", "hooks": [{"type": "command", "command": "other-pre"}]}],
                "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "other-post"}]}]
            }
        }));
        let mut s = original.clone();
        assert!(add_hooks(&mut s, |p| shell_quote(&cmd(p))).unwrap());
        let once = s.clone();
        assert!(!add_hooks(&mut s, |p| shell_quote(&cmd(p))).unwrap());
        assert_eq!(s, once);
        assert_eq!(s["hooks"]["PreCompact"].as_array().unwrap().len(), 2);
        assert_eq!(
            s["hooks"]["PreCompact"][0],
            original["hooks"]["PreCompact"][0]
        );
        // compact, resume, fork (jkz-session-start) and every source (jkz-chat).
        assert_eq!(s["hooks"]["SessionStart"].as_array().unwrap().len(), 4);
        assert_eq!(s["hooks"]["PostCompact"].as_array().unwrap().len(), 1);
        // The user's, jkz-post-tool-use's and jkz-chat's.
        assert_eq!(s["hooks"]["PostToolUse"].as_array().unwrap().len(), 3);
        assert_eq!(s["hooks"]["SessionEnd"].as_array().unwrap().len(), 1);
        assert_eq!(
            s["hooks"]["PostToolUse"][0],
            original["hooks"]["PostToolUse"][0]
        );
        for reg in REGISTRATIONS {
            assert_eq!(
                registered_commands(&s, reg.event, reg.matcher, reg.program),
                vec![shell_quote(&cmd(reg.program))]
            );
        }
        assert!(remove_hooks(&mut s).unwrap());
        assert_eq!(s, original);
    }

    #[test]
    fn reinstall_elsewhere_repoints_instead_of_duplicating() {
        let mut s = Map::new();
        add_hooks(&mut s, |p| format!("/old/{p}")).unwrap();
        assert!(add_hooks(&mut s, |p| format!("/new/{p}")).unwrap());
        assert_eq!(
            registered_commands(&s, "PreCompact", "", "jkz-pre-compact"),
            vec!["/new/jkz-pre-compact".to_string()]
        );
        assert!(remove_hooks(&mut s).unwrap());
        assert!(s.is_empty());
    }

    #[test]
    fn removal_keeps_containers_it_did_not_empty() {
        let original = obj(json!({"hooks": {"Stop": []}}));
        let mut s = original.clone();
        assert!(!remove_hooks(&mut s).unwrap());
        assert_eq!(s, original);
        // A jkz hook moved into another tool's group: only the hook goes.
        let mut s = obj(json!({"hooks": {"PreCompact": [{"matcher": "", "hooks": [
            {"type": "command", "command": "other"},
            {"type": "command", "command": "/x/jkz-pre-compact"}]}]}}));
        assert!(remove_hooks(&mut s).unwrap());
        assert_eq!(
            s,
            obj(json!({"hooks": {"PreCompact": [{"matcher": "", "hooks": [
                {"type": "command", "command": "other"}]}]}}))
        );
    }

    #[test]
    fn odd_shapes_are_refused_before_any_edit() {
        for bad in [
            json!({"hooks": []}),
            json!({"hooks": {"PreCompact": {}}}),
            json!({"hooks": {"PreCompact": [1]}}),
            json!({"hooks": {"PreCompact": [{"hooks": {}}]}}),
        ] {
            let mut s = obj(bad);
            let before = s.clone();
            assert!(add_hooks(&mut s, |p| p.to_string()).is_err());
            assert!(remove_hooks(&mut s).is_err());
            assert_eq!(s, before);
        }
        assert!(parse(b"[]").is_err());
        assert!(parse(b"{").is_err());
        assert_eq!(parse(b" \n").unwrap(), Map::new());
    }
}
