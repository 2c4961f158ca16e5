//! Claude Code: `claude -p PROMPT --output-format json`, Anthropic Messages
//! (`ANTHROPIC_BASE_URL`), a dummy API key, no telemetry or updates.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::{json, Value};

use super::super::stub_model::Request;
use super::super::{NpmClient, Project, RealClient};

pub struct ClaudeCode;

impl RealClient for ClaudeCode {
    const NPM: NpmClient = NpmClient {
        name: "Claude Code",
        dir: "claude-code",
        bin: "claude",
        package: "@anthropic-ai/claude-code",
        version: "2.1.332",
        home_var: "HOME",
    };
    const JKZ_CLIENT: &'static str = "claude";
    const CONFIG_DIR: &'static str = ".claude";
    const RUN_TIMEOUT: Duration = Duration::from_secs(90);
    const OWN_ENV: &'static [&'static str] = &["ANTHROPIC"];

    fn prepare(_: &Project<Self>) {}

    fn offline_env(project: &Project<Self>) -> Vec<(&'static str, OsString)> {
        vec![
            ("HOME", project.home().into()),
            ("ANTHROPIC_BASE_URL", project.model_url().into()),
            ("ANTHROPIC_API_KEY", "sk-jkz-test".into()),
            ("DISABLE_TELEMETRY", "1".into()),
            ("DISABLE_AUTOUPDATER", "1".into()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ]
    }

    fn headless(prompt: &str) -> Vec<String> {
        ["-p", prompt, "--output-format", "json"]
            .map(String::from)
            .to_vec()
    }

    /// `/compact` (and an automatic compaction) asks the model for a
    /// summary of the conversation, with the hook's additional
    /// instructions when a PreCompact hook printed some.
    fn is_summarizing(r: &Request) -> bool {
        let text = r.last_user_text();
        text.contains("summary of the conversation") || text.contains("Additional Instructions")
    }
}

impl Project<ClaudeCode> {
    /// Writes `.claude/settings.json` with `hooks` as its `hooks` object.
    pub fn register_hooks(&self, hooks: Value) {
        let settings = json!({ "hooks": hooks });
        self.write(".claude/settings.json", settings.to_string());
    }
}
