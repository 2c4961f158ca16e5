//! OpenCode: `opencode run PROMPT`, a custom OpenAI-compatible provider at
//! the stub model (Chat Completions) in the configuration of its own
//! `HOME`, measured on `opencode-ai` 1.18.33.
//!
//! OpenCode installs its plugin SDK (`@opencode-ai/plugin`, about 64 MB)
//! from npm into every configuration directory it reads, the project's
//! `.opencode/` and `~/.config/opencode/`, at each start, unless the
//! directory already has a `node_modules/` and a lock file naming that
//! package. jkz's plugin imports nothing, so the adapter writes that
//! marker into both directories and points npm at a closed port: the run
//! stays offline.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::super::pipeline::BRANCH;
use super::super::stub_model::Request;
use super::super::{NpmClient, Project, RealClient};
use crate::util::git;

/// The model's context window in the configuration: small, so that a test
/// makes OpenCode compact by reporting more input tokens than this.
pub const CONTEXT_TOKENS: u64 = 20_000;

pub struct OpenCode;

impl RealClient for OpenCode {
    const NPM: NpmClient = NpmClient {
        name: "OpenCode",
        dir: "opencode",
        bin: "opencode",
        package: "opencode-ai",
        version: "1.18.33",
        home_var: "HOME",
    };
    const JKZ_CLIENT: &'static str = "opencode";
    const CONFIG_DIR: &'static str = ".opencode";
    const RUN_TIMEOUT: Duration = Duration::from_secs(180);
    const OWN_ENV: &'static [&'static str] = &["OPENCODE", "OPENAI", "ANTHROPIC", "AGENT"];

    fn prepare(project: &Project<Self>) {
        git(project.path(), &["init", "-q", "-b", BRANCH]);
        let config = project.home().join(".config/opencode");
        let settings = json!({
            "$schema": "https://opencode.ai/config.json",
            "provider": {"stub": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Stub",
                "options": {"baseURL": format!("{}/v1", project.model_url()), "apiKey": "sk-jkz-test"},
                "models": {"stub-model": {"name": "Stub",
                                          "limit": {"context": CONTEXT_TOKENS, "output": 4000}}}
            }},
            "model": "stub/stub-model",
            "autoupdate": false,
            "share": "disabled",
            "permission": {"bash": "allow", "edit": "allow", "read": "allow",
                           "external_directory": "allow"}
        });
        plugin_sdk_present(&config);
        std::fs::write(config.join("opencode.json"), settings.to_string()).unwrap();
        plugin_sdk_present(&project.path().join(Self::CONFIG_DIR));
    }

    fn offline_env(project: &Project<Self>) -> Vec<(&'static str, OsString)> {
        let closed = OsString::from("http://127.0.0.1:9");
        vec![
            ("HOME", project.home().into()),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1".into()),
            ("OPENCODE_DISABLE_AUTOUPDATE", "1".into()),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".into()),
            ("npm_config_registry", closed.clone()),
            ("BUN_CONFIG_REGISTRY", closed),
            ("TERM", "dumb".into()),
        ]
    }

    fn headless(prompt: &str) -> Vec<String> {
        vec!["run".into(), prompt.into()]
    }

    /// The summarizer is a request of its own, with its own system prompt.
    fn is_summarizing(r: &Request) -> bool {
        system_text(r).starts_with("You are a context summarization agent.")
    }

    /// The request OpenCode makes first in a session: a title for it,
    /// without tools.
    fn is_aside(r: &Request) -> bool {
        system_text(r).starts_with("You are a title generator.")
    }
}

/// The request's system messages, joined: OpenCode's prompt first, then
/// what plugins added (`experimental.chat.system.transform`).
pub fn system_text(r: &Request) -> String {
    r.items()
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Makes `dir` look as if OpenCode had installed its plugin SDK there, so
/// it does not fetch it from npm (OpenCode checks for `node_modules/` and
/// for the package in the lock file's root dependencies).
fn plugin_sdk_present(dir: &Path) {
    let version = OpenCode::NPM.version;
    std::fs::create_dir_all(dir.join("node_modules")).unwrap();
    let deps = json!({ "@opencode-ai/plugin": version });
    std::fs::write(
        dir.join("package.json"),
        json!({ "dependencies": deps }).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("package-lock.json"),
        json!({"lockfileVersion": 3, "packages": {"": {"dependencies": deps}}}).to_string(),
    )
    .unwrap();
}
