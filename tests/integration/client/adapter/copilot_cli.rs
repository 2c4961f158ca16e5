//! GitHub Copilot CLI: `copilot -p PROMPT`, OpenAI Chat Completions through
//! its bring-your-own-provider variables, offline (`COPILOT_OFFLINE`), no
//! GitHub sign-in (measured on 1.0.102).
//!
//! A repository's `.github/hooks/` run only in a trusted folder:
//! `COPILOT_ALLOW_ALL=true` trusts it for the headless run. Copilot
//! extracts its bundle (about 235 MB) into its cache on first start; the
//! cache is shared by every test project through `XDG_CACHE_HOME`.

use std::ffi::OsString;
use std::time::Duration;

use super::super::pipeline::BRANCH;
use super::super::stub_model::Request;
use super::super::{target_dir, NpmClient, Project, RealClient};
use crate::util::git;

pub struct CopilotCli;

impl RealClient for CopilotCli {
    const NPM: NpmClient = NpmClient {
        name: "Copilot CLI",
        dir: "copilot-cli",
        bin: "copilot",
        package: "@github/copilot",
        version: "1.0.102",
        home_var: "HOME",
    };
    const JKZ_CLIENT: &'static str = "copilot";
    const CONFIG_DIR: &'static str = ".github/hooks";
    const RUN_TIMEOUT: Duration = Duration::from_secs(180);
    const OWN_ENV: &'static [&'static str] = &["COPILOT", "GITHUB_TOKEN", "GH_TOKEN"];

    fn prepare(project: &Project<Self>) {
        git(project.path(), &["init", "-q", "-b", BRANCH]);
    }

    fn offline_env(project: &Project<Self>) -> Vec<(&'static str, OsString)> {
        vec![
            ("HOME", project.home().into()),
            (
                "XDG_CACHE_HOME",
                target_dir().join("copilot-cli-cache").into(),
            ),
            (
                "COPILOT_PROVIDER_BASE_URL",
                format!("{}/v1", project.model_url()).into(),
            ),
            ("COPILOT_MODEL", "stub-model".into()),
            ("COPILOT_OFFLINE", "true".into()),
            ("COPILOT_PROVIDER_API_KEY", "sk-jkz-test".into()),
            ("COPILOT_ALLOW_ALL", "true".into()),
            ("TERM", "dumb".into()),
        ]
    }

    fn headless(prompt: &str) -> Vec<String> {
        ["-p", prompt, "--allow-all-tools", "--no-auto-update"]
            .map(String::from)
            .to_vec()
    }

    /// Copilot's summarizing request carries every tool too: its prompt
    /// tells it.
    fn is_summarizing(r: &Request) -> bool {
        r.last_user_text()
            .starts_with("Please create a detailed summary of the conversation so far.")
    }
}
