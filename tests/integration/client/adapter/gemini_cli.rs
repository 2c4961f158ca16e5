//! Gemini CLI: `gemini -m MODEL -o json -p PROMPT`, the Gemini API at
//! `GOOGLE_GEMINI_BASE_URL`, a dummy API key, its own `HOME` whose settings
//! turn off telemetry and updates.

use std::ffi::OsString;
use std::time::Duration;

use serde_json::json;

use super::super::stub_model::Request;
use super::super::{NpmClient, Project, RealClient};

/// The model asked for (explicit, so Gemini CLI's router is not consulted).
const MODEL: &str = "gemini-2.5-flash";

pub struct GeminiCli;

impl RealClient for GeminiCli {
    const NPM: NpmClient = NpmClient {
        name: "Gemini CLI",
        dir: "gemini-cli",
        bin: "gemini",
        package: "@google/gemini-cli",
        version: "0.61.0",
        home_var: "HOME",
    };
    const JKZ_CLIENT: &'static str = "gemini";
    const CONFIG_DIR: &'static str = ".gemini";
    /// It starts slowly on a loaded machine: ~10 s of CPU-bound start-up.
    const RUN_TIMEOUT: Duration = Duration::from_secs(240);
    const OWN_ENV: &'static [&'static str] = &["GEMINI", "GOOGLE"];

    fn prepare(project: &Project<Self>) {
        // Offline: an API key (a dummy), no telemetry, no update checks.
        let user = json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
        });
        let settings = project.home().join(".gemini/settings.json");
        std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
        std::fs::write(settings, user.to_string()).unwrap();
    }

    fn offline_env(project: &Project<Self>) -> Vec<(&'static str, OsString)> {
        vec![
            ("HOME", project.home().into()),
            ("GEMINI_API_KEY", "jkz-test-dummy-key".into()),
            ("GOOGLE_GEMINI_BASE_URL", project.model_url().into()),
            ("GEMINI_CLI_TRUST_WORKSPACE", "true".into()),
        ]
    }

    fn headless(prompt: &str) -> Vec<String> {
        ["-m", MODEL, "-o", "json", "-p", prompt]
            .map(String::from)
            .to_vec()
    }

    /// The compression summarizer asks, unstreamed, for a
    /// `<state_snapshot>` in its system instruction.
    fn is_summarizing(r: &Request) -> bool {
        r.path.contains(":generateContent")
            && r.body["systemInstruction"]
                .to_string()
                .contains("<state_snapshot>")
    }
}
