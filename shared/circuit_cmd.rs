//! `jkz circuit status [S]` and `jkz circuit reset S` (rules in
//! [`crate::circuit`]).
//!
//! Exit codes: 0 success; 1 an I/O error; 2 usage; 4 no state directory.

use std::io::Write;

use crate::circuit;
use crate::exit::{Failure, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::state_dir::StateDir;
use crate::terminal_text::inert;

#[derive(clap::Args, Debug, Clone)]
pub struct CircuitArgs {
    #[command(subcommand)]
    pub command: CircuitCommand,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum CircuitCommand {
    /// Show every circuit (or S's): state, consecutive failures, when it
    /// opened, its probe.
    Status {
        service: Option<String>,
        /// One JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Close S's circuit and clear its failure count.
    Reset { service: String },
}

pub fn run(args: &CircuitArgs, state: &StateDir, out: &mut dyn Write) -> Result<u8, Failure> {
    let writing = |e| Failure::io(EXIT_FAILED, "writing stdout", e);
    let usage = |s: &str| circuit::validate(s).map_err(|e| Failure::new(EXIT_USAGE, e));
    match &args.command {
        CircuitCommand::Status { service, json } => {
            if let Some(s) = service {
                usage(s)?;
            }
            let all = circuit::status(state, service.as_deref())
                .map_err(|e| Failure::io(EXIT_FAILED, "reading circuits", e))?;
            if *json {
                serde_json::to_writer_pretty(&mut *out, &all).map_err(|e| writing(e.into()))?;
                writeln!(out).map_err(writing)?;
            } else {
                writeln!(
                    out,
                    "{:<20} {:<10} {:>8}  {:<25} PROBE",
                    "SERVICE", "STATE", "FAILURES", "OPENED"
                )
                .map_err(writing)?;
                for c in &all {
                    // Read from the circuit's file: shown, never obeyed.
                    let probe = c.probe.as_ref().map_or("-".to_string(), |p| {
                        format!(
                            "pid {} on {} since {}",
                            p.holder.pid,
                            inert(&p.holder.host),
                            inert(&p.started_at)
                        )
                    });
                    writeln!(
                        out,
                        "{:<20} {:<10} {:>8}  {:<25} {probe}",
                        inert(&c.service),
                        c.state.name(),
                        c.consecutive_failures,
                        inert(c.opened_at.as_deref().unwrap_or("-"))
                    )
                    .map_err(writing)?;
                }
            }
        }
        CircuitCommand::Reset { service } => {
            usage(service)?;
            circuit::reset(state, service)
                .map_err(|e| Failure::io(EXIT_FAILED, "resetting the circuit", e))?;
            writeln!(out, "circuit {service} is closed").map_err(writing)?;
        }
    }
    out.flush().map_err(writing)?;
    Ok(EXIT_OK)
}
