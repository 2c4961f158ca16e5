//! Codex CLI: `codex exec PROMPT`, OpenAI Responses through a provider of
//! its own `CODEX_HOME/config.toml`.
//!
//! The configuration names the loopback provider, trusts the project
//! (Codex reads a project's `.codex/` only then; it finds the project by
//! git, so the project is a repository) and sets
//! `model_auto_compact_token_limit` low, so a reply that reports many
//! tokens forces a compaction. `--dangerously-bypass-hook-trust` runs the
//! project's hooks without the interactive trust review.

use std::ffi::OsString;
use std::time::Duration;

use super::super::pipeline::BRANCH;
use super::super::stub_model::Request;
use super::super::{NpmClient, Project, RealClient};
use crate::util::git;

/// A model slug Codex ships metadata for, so it offers `apply_patch`.
const MODEL: &str = "gpt-5.5";

/// The token limit past which Codex compacts: a turn reporting more
/// ([`Turn::reporting`](super::super::stub_model::Turn::reporting)) forces
/// a compaction.
pub const AUTO_COMPACT_LIMIT: u64 = 2000;

pub struct CodexCli;

impl RealClient for CodexCli {
    const NPM: NpmClient = NpmClient {
        name: "Codex",
        dir: "codex-cli",
        bin: "codex",
        package: "@openai/codex",
        version: "0.169.0",
        home_var: "CODEX_HOME",
    };
    const JKZ_CLIENT: &'static str = "codex";
    const CONFIG_DIR: &'static str = ".codex";
    const RUN_TIMEOUT: Duration = Duration::from_secs(120);
    const OWN_ENV: &'static [&'static str] = &["CODEX", "OPENAI"];

    fn prepare(project: &Project<Self>) {
        let dir = std::fs::canonicalize(project.path()).expect("the project's path");
        let config = format!(
            "model = \"{MODEL}\"\nmodel_provider = \"jkz\"\nmodel_auto_compact_token_limit = {AUTO_COMPACT_LIMIT}\n\n\
             [model_providers.jkz]\nname = \"jkz\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"JKZ_CODEX_TEST_KEY\"\n\n\
             [projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            project.model_url(),
            dir.display()
        );
        std::fs::write(project.home().join("config.toml"), config).expect("write config.toml");
        git(&dir, &["init", "-q", "-b", BRANCH]);
    }

    fn offline_env(project: &Project<Self>) -> Vec<(&'static str, OsString)> {
        vec![
            ("CODEX_HOME", project.home().into()),
            ("JKZ_CODEX_TEST_KEY", "sk-jkz-test".into()),
        ]
    }

    fn headless(prompt: &str) -> Vec<String> {
        [
            "exec",
            "--dangerously-bypass-hook-trust",
            "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check",
            prompt,
        ]
        .map(String::from)
        .to_vec()
    }

    /// Codex's summarizing request offers the model no tools.
    fn is_summarizing(r: &Request) -> bool {
        r.tools_offered() == 0
    }
}

impl Project<CodexCli> {
    /// Raises `model_auto_compact_token_limit` out of reach: a long tool
    /// output alone would otherwise compact the history it is measured in.
    pub fn without_auto_compaction(&self) {
        let config = self.home().join("config.toml");
        let text = std::fs::read_to_string(&config).unwrap().replace(
            &format!("model_auto_compact_token_limit = {AUTO_COMPACT_LIMIT}\n"),
            "model_auto_compact_token_limit = 100000000\n",
        );
        std::fs::write(config, text).unwrap();
    }
}
