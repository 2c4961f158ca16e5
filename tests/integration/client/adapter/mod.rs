//! One adapter per real client, each a [`RealClient`](super::RealClient):
//! how to install it, point it at the stub model, run it headless, and
//! tell its summarizer's request. A new client is one file here and one
//! line below.

mod claude_code;
mod codex_cli;
mod copilot_cli;
mod gemini_cli;
pub mod opencode;

pub use claude_code::ClaudeCode;
pub use codex_cli::CodexCli;
pub use copilot_cli::CopilotCli;
pub use gemini_cli::GeminiCli;
pub use opencode::OpenCode;
