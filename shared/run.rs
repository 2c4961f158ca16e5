//! `jkz run … -- CMD [ARGS…]`: how a pipeline calls an external model
//! wrapper.
//!
//! CMD's stdout goes through the truncation engine ([`crate::truncate`]:
//! the same caps, roles, markers and protected blocks as `jkz-truncate`) to
//! jkz's stdout; its stderr passes straight through; its exit code comes
//! out as jkz's. Meanwhile the complete answer is kept, and one deliberation
//! record is written per invocation ([`crate::deliberation`]). With
//! `--service S` the service's circuit breaker ([`crate::circuit`]) decides
//! whether CMD starts at all; with `--lock KIND:NAME` a lock
//! ([`crate::lock`]) is held for the run. With `--issue` and `--iteration`,
//! the findings of the verdict it records go to the findings history
//! ([`crate::findings::run_import`]).
//!
//! Exit codes (one table, also in `--help` and docs/exit-codes.md):
//!
//! | code | meaning |
//! |---|---|
//! | CMD's | CMD exited with it |
//! | 128+N | CMD was killed by signal N; or jkz received signal N (SIGTERM, SIGINT, SIGHUP) and forwarded it |
//! | 0 | also: the reader of jkz's stdout went away (a broken pipe), and CMD's group was ended |
//! | 2 | usage error (bad flag) |
//! | 75 | the circuit of `--service` is open: CMD was not started |
//! | 76 | the `--lock` is held by another owner: CMD was not started |
//! | 124 | CMD ran past `--timeout` and its process group was ended |
//! | 125 | jkz itself failed before CMD ran (no state directory for `--service`/`--lock`, a repository whose layout cannot be read, an I/O error) |
//! | 126 | CMD could not be executed |
//! | 127 | CMD was not found |
//!
//! CMD may exit with any of these codes itself; the one line jkz writes on
//! stderr for 75, 76, 124–127 and a forwarded signal tells them apart.
//!
//! # CMD's process group
//!
//! CMD runs as the leader of a process group of its own ([`group`]), and
//! the run lasts until that whole group is gone: a job CMD leaves in the
//! background keeps the run (and its `--lock`) until it ends. A stop ends
//! the group ([`supervise`]): `--timeout` (SIGTERM, SIGKILL after
//! [`supervise::GRACE`]), a SIGTERM, SIGINT or SIGHUP sent to jkz
//! (forwarded, then SIGKILL after the grace; [`signals`]), or a closed
//! stdout while CMD's answer is still coming (jkz stops reading, keeps what
//! it read, marked incomplete, and unless the answer ends within the grace
//! ends the group as for a timeout). The record is written in every case,
//! then the lock released. Being in a group of its own, CMD cannot read
//! from the terminal (it would be stopped): give it its input through a
//! file or a pipe.

mod group;
mod signals;
mod supervise;

use std::ffi::OsString;
use std::io::{self, BufWriter};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use crate::circuit::{self, Admission, Policy};
use crate::deliberation::{self, usage, Context, Record, Status};
use crate::exit::Failure;
use crate::lock::{self, Acquired};
use crate::state_dir::StateDir;
use crate::truncate::{self, roles, Mode, Settings};

use self::group::ProcessGroup;
use self::signals::Signals;
use self::supervise::{Stop, Supervisor};

/// Exit code: the `--lock` is held by another owner.
pub const EXIT_LOCKED: u8 = 76;
/// Exit code: CMD ran past `--timeout`.
pub const EXIT_TIMEOUT: u8 = 124;
/// Exit code: jkz failed before CMD ran.
pub const EXIT_FAILED: u8 = 125;
/// Exit code: CMD could not be executed.
pub const EXIT_CANNOT_EXECUTE: u8 = 126;
/// Exit code: CMD was not found.
pub const EXIT_NOT_FOUND: u8 = 127;

const PROGRAM: &str = "jkz run";

static AFTER_HELP: LazyLock<String> = LazyLock::new(|| {
    format!(
        "\
CMD runs in a process group of its own, and the run lasts until the whole
group is gone (a job CMD leaves in the background too). --timeout, a
SIGTERM, SIGINT or SIGHUP sent to jkz (forwarded to the group), and a
closed stdout end the group: SIGTERM (or the signal forwarded), then
SIGKILL {grace} ms later. (After a closed stdout jkz reads no more, and
CMD has that grace to end its answer on its own: one that does completes
the run as usual.) The record is written in every case (status timeout,
or interrupted with its signal), then the --lock is released.
In a group of its own, CMD cannot read from the terminal: give it its
input through a file or a pipe.

The whole answer is kept for the record: inline up to {inline} bytes of
UTF-8, else as STATE/context-offload/<sha256>.txt, the file the markers
name; at most {limit} bytes of it (1 GiB). A kept answer that is not
whole (cut at that bound, or stopped early by a closed stdout) says why in
the record's response_incomplete.

Exit codes:
  CMD's  CMD exited with it
  128+N  CMD was killed by signal N, or jkz received signal N and forwarded it
  0      also when the reader of stdout went away (broken pipe): the group was ended
  {usage}      usage error (bad flag or value)
  {open}     the --service's circuit is open: CMD was not started
  {locked}     the --lock is held by another owner: CMD was not started
  {timeout}    CMD ran past --timeout: its process group was ended
  {failed}    jkz failed before CMD ran (no state directory for --service/--lock, an I/O error)
  {cannot}    CMD could not be executed
  {missing}    CMD was not found",
        grace = supervise::GRACE.as_millis(),
        inline = truncate::thousands(deliberation::INLINE_MAX as u64),
        limit = truncate::thousands(truncate::full_output::KEEP_LIMIT),
        usage = crate::exit::EXIT_USAGE,
        open = circuit::EXIT_OPEN,
        locked = EXIT_LOCKED,
        timeout = EXIT_TIMEOUT,
        failed = EXIT_FAILED,
        cannot = EXIT_CANNOT_EXECUTE,
        missing = EXIT_NOT_FOUND,
    )
});

/// `jkz run`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = AFTER_HELP.as_str())]
pub struct RunArgs {
    #[command(flatten)]
    pub context: Context,

    /// The external service CMD calls: its circuit breaker decides whether
    /// CMD starts (state/circuit/<S>.json).
    #[arg(long, value_name = "S")]
    pub service: Option<String>,

    /// Default cap (see `jkz-truncate --help`).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = Mode::Primary,
          help = format!("Default cap: {}", Mode::caps_text()))]
    pub mode: Mode,

    /// Output cap in bytes (0: no truncation). Default: JKZ_MAX_OUTPUT_BYTES,
    /// else the mode's cap.
    #[arg(long, value_name = "N")]
    pub max_bytes: Option<u64>,

    /// Hold the lock KIND:NAME (e.g. pipeline:42) while CMD runs, renewed
    /// every third of its TTL; if another owner holds it, CMD is not started
    /// (exit 76).
    #[arg(long, value_name = "KIND:NAME", value_parser = parse_lock)]
    pub lock: Option<(String, String)>,

    /// The --lock's TTL in seconds (an expiry past year 9999 is held until
    /// then).
    #[arg(long, value_name = "SECS", default_value_t = lock::DEFAULT_TTL)]
    pub lock_ttl: u64,

    /// Consecutive failures that open the --service's circuit.
    #[arg(long, value_name = "N", default_value_t = circuit::DEFAULT_THRESHOLD)]
    pub failure_threshold: u32,

    /// Seconds an open circuit waits before it lets one probe through.
    #[arg(long, value_name = "SECS", default_value_t = circuit::DEFAULT_COOLDOWN)]
    pub cooldown: u64,

    /// End CMD's process group after SECS seconds (SIGTERM, then SIGKILL
    /// half a second later): status timeout, exit 124. SECS: a number, 0 or
    /// more.
    #[arg(long, value_name = "SECS", value_parser = parse_timeout)]
    pub timeout: Option<f64>,

    /// Put the "## Accumulated Patterns" section for this --role and
    /// --issue (jkz patterns inject) before CMD's stdin, and in the file
    /// named by JKZ_PATTERNS_FILE; the record lists the ids injected.
    #[arg(long)]
    pub inject_patterns: bool,

    /// The most bytes of that section.
    #[arg(long, value_name = "B", default_value_t = crate::patterns::inject::DEFAULT_BUDGET,
          requires = "inject_patterns")]
    pub pattern_budget: usize,

    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

fn parse_lock(s: &str) -> Result<(String, String), String> {
    let (kind, name) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}': use KIND:NAME, e.g. pipeline:42"))?;
    lock::validate(kind, name)?;
    Ok((kind.to_string(), name.to_string()))
}

/// `--timeout`: a finite number of seconds, 0 or more (`nan`, `inf` and
/// negative numbers are usage errors).
fn parse_timeout(s: &str) -> Result<f64, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if secs.is_finite() && secs >= 0.0 {
        Ok(secs)
    } else {
        Err(format!("'{s}': give a finite number of seconds, 0 or more"))
    }
}

/// One line on stderr, `jkz run: …`.
fn say(line: impl std::fmt::Display) {
    eprintln!("{PROGRAM}: {line}");
}

/// Runs `jkz run`; the exit code, or a failure before CMD ran.
pub fn run(args: &RunArgs, state: &StateDir) -> Result<u8, Failure> {
    let me = std::process::id();
    let started = chrono::Utc::now();
    let clock = Instant::now();
    let fail = |what: &str, e: io::Error| Failure::io(EXIT_FAILED, what, e);

    // Failed until CMD is known to have answered: every error path on the
    // way reports a failure to the circuit.
    let mut record = Record::new(&args.context, Status::Failed, started);
    record.service = args.service.clone();
    record.mode = Some(args.mode.name().to_string());
    record.command = Some(
        args.command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
    );
    let id = deliberation::record_id(&record, started, me);

    // The lock first: a run that may not work on its issue asks no service.
    let held = match &args.lock {
        None => None,
        Some((kind, name)) => {
            let req = lock::Request {
                kind: kind.clone(),
                name: name.clone(),
                owner: format!("run:{}:{me}", crate::process::hostname()),
                pid: me,
                ttl: Duration::from_secs(args.lock_ttl),
            };
            match lock::try_acquire(state, &req).map_err(|e| fail("taking the --lock", e))? {
                Acquired::Busy(held) => {
                    say(format_args!(
                        "lock {kind}:{name} is held by {} (pid {} on {}) until {}; CMD not started",
                        held.owner, held.holder.pid, held.holder.host, held.expires
                    ));
                    return Ok(EXIT_LOCKED);
                }
                Acquired::Taken { .. } => Some(req),
            }
        }
    };
    // Renewed while CMD runs, so a call longer than the TTL keeps it.
    let renewal = Renewal::start(state, held.as_ref());
    let release = |held: &Option<lock::Request>| {
        renewal.stop();
        if let Some(req) = held {
            if let Err(e) = lock::release(state, &req.kind, &req.name, &req.owner) {
                say(format_args!(
                    "warning: releasing lock {}:{}: {e}",
                    req.kind, req.name
                ));
            }
        }
    };

    let policy = Policy {
        threshold: args.failure_threshold,
        cooldown: Duration::from_secs(args.cooldown),
    };
    let admission = match &args.service {
        None => None,
        Some(service) => match circuit::admit(state, service, policy, me) {
            Ok(a) => Some(a),
            Err(e) => {
                release(&held);
                return Err(fail("reading the --service's circuit", e));
            }
        },
    };
    if let Some(Admission::ShortCircuit(why)) = &admission {
        say(format_args!(
            "{why}; CMD not started (exit {})",
            circuit::EXIT_OPEN
        ));
        record.status = Status::ShortCircuited;
        record.duration_ms = Some(clock.elapsed().as_millis() as u64);
        deliberation::keep_record(
            deliberation::records_dir(state, PROGRAM).as_deref(),
            &id,
            &record,
            PROGRAM,
        );
        release(&held);
        return Ok(circuit::EXIT_OPEN);
    }

    // From here on SIGTERM, SIGINT and SIGHUP are forwarded to CMD's group.
    let signals = match Signals::catch() {
        Ok(signals) => signals,
        Err(e) => {
            release(&held);
            return Err(fail("catching SIGTERM, SIGINT and SIGHUP", e));
        }
    };
    // The patterns CMD is given, chosen before it starts.
    let patterns = args.inject_patterns.then(|| {
        crate::patterns::in_run::prepare(
            state,
            &args.context,
            args.pattern_budget,
            &id,
            started,
            PROGRAM,
        )
    });
    record.patterns_injected = patterns.as_ref().map(|p| p.ids.clone());
    // CMD starts before jkz's own setup, which then overlaps with CMD's.
    let usage_file = usage::create().ok();
    let spawned = spawn(args, usage_file.as_deref(), patterns.as_ref());
    let records = deliberation::records_dir(state, PROGRAM);
    let mut group_gone = true;
    let outcome = match spawned {
        Ok(child) => invoke(
            args,
            child,
            signals,
            state,
            usage_file.as_deref(),
            &mut record,
            &mut group_gone,
        ),
        Err(code) => {
            record.status = Status::Failed;
            record.exit_code = Some(code.into());
            Ok(code)
        }
    };
    record.duration_ms = Some(clock.elapsed().as_millis() as u64);
    // An interrupted run says nothing about the service: not reported (a
    // probe that is gone is replaced by the next run).
    if let (Some(service), Some(admission)) = (&args.service, &admission) {
        let success = record.status == Status::Ok;
        let reported = record.status != Status::Interrupted;
        if let Err(e) = reported
            .then(|| circuit::report(state, service, policy, admission, me, success))
            .transpose()
        {
            say(format_args!(
                "warning: updating the circuit of {service}: {e}"
            ));
        }
    }
    // Mined for patterns and feedback as it is written.
    if let Some(path) = deliberation::keep_record(records.as_deref(), &id, &record, PROGRAM) {
        crate::patterns::in_run::after_record(&path, &record, PROGRAM);
    }
    if group_gone {
        release(&held);
    } else {
        // Still held for a process of CMD's that outlived SIGKILL: the lock
        // expires with its TTL, or once jkz is gone.
        renewal.stop();
    }
    outcome
}

/// Renews the `--lock` every third of its TTL until stopped.
struct Renewal(Mutex<Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>>);

impl Renewal {
    fn start(state: &StateDir, held: Option<&lock::Request>) -> Renewal {
        let thread = held.filter(|req| !req.ttl.is_zero()).map(|req| {
            let (stop, stopped) = mpsc::channel::<()>();
            let (state, req) = (state.clone(), req.clone());
            let every = req.ttl / 3;
            let handle = std::thread::spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    match lock::try_acquire(&state, &req) {
                        Ok(Acquired::Taken { .. }) => {}
                        Ok(Acquired::Busy(held)) => {
                            say(format_args!(
                                "warning: lock {}:{} was taken by {} while CMD ran",
                                req.kind, req.name, held.owner
                            ));
                            return;
                        }
                        Err(e) => say(format_args!(
                            "warning: renewing lock {}:{}: {e}",
                            req.kind, req.name
                        )),
                    }
                }
            });
            (stop, handle)
        });
        Renewal(Mutex::new(thread))
    }

    /// Stops renewing (before the lock is released: a renewal after the
    /// release would take it again).
    fn stop(&self) {
        let thread = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((stop, handle)) = thread {
            drop(stop);
            let _ = handle.join();
        }
    }
}

/// Starts CMD, the leader of a new process group, with its stdout piped
/// to jkz; on failure, one line on stderr and the exit code (127 not
/// found, 126 cannot execute).
fn spawn(
    args: &RunArgs,
    usage_file: Option<&std::path::Path>,
    patterns: Option<&crate::patterns::in_run::Prepared>,
) -> Result<Child, u8> {
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..])
        .stdout(Stdio::piped())
        .process_group(0);
    if let Some(path) = usage_file {
        cmd.env(deliberation::USAGE_FILE_VARIABLE, path);
    }
    let prefix = patterns.map(|p| p.stdin_prefix.clone()).unwrap_or_default();
    if let Some(file) = patterns.and_then(|p| p.file.as_deref()) {
        cmd.env(crate::patterns::in_run::PATTERNS_FILE_VARIABLE, file);
    }
    if !prefix.is_empty() {
        cmd.stdin(Stdio::piped());
    }
    cmd.spawn()
        .map(|mut child| {
            if let Some(stdin) = child.stdin.take() {
                feed_stdin(stdin, prefix);
            }
            child
        })
        .map_err(|e| {
            say(format_args!(
                "cannot run {}: {e}",
                args.command[0].to_string_lossy()
            ));
            match e.kind() {
                io::ErrorKind::NotFound => EXIT_NOT_FOUND,
                _ => EXIT_CANNOT_EXECUTE,
            }
        })
}

/// Writes `prefix`, then jkz's own stdin, to CMD's stdin, on a thread of
/// its own (a CMD that reads none of it ends the copy with a broken pipe;
/// a stdin that never ends keeps the thread, not the run).
fn feed_stdin(mut to_cmd: std::process::ChildStdin, prefix: Vec<u8>) {
    use std::io::Write;
    std::thread::spawn(move || {
        if to_cmd.write_all(&prefix).is_ok() {
            let _ = io::copy(&mut io::stdin().lock(), &mut to_cmd);
        }
    });
}

/// Streams CMD's answer and waits for CMD's group to be gone, stopping it
/// when `--timeout`, a signal or a closed stdout says so; fills in the
/// record. `group_gone` turns false when a process of the group outlived
/// SIGKILL (the lock is then not released).
fn invoke(
    args: &RunArgs,
    mut child: Child,
    signals: Signals,
    state: &StateDir,
    usage_file: Option<&std::path::Path>,
    record: &mut Record,
    group_gone: &mut bool,
) -> Result<u8, Failure> {
    let pipe = child.stdout.take().expect("piped stdout");
    truncate::grow_pipe(&pipe);
    // A timeout past what a Duration holds is no deadline.
    let timeout = args
        .timeout
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok());
    let mut watch = Supervisor::new(ProcessGroup::led_by(&child), signals, timeout);

    let settings = settings(args, state);
    let mut stderr = io::stderr();
    let mut output = deliberation::verdict::OutputTail::new(BufWriter::with_capacity(
        1 << 20,
        io::stdout().lock(),
    ));
    let mut cmd_output = watch.reader(pipe);
    let (streamed, kept) = truncate::truncate_keeping(
        &mut cmd_output,
        &mut output,
        &settings,
        "CMD's stdout",
        &mut stderr,
    );
    // A write that failed before the answer's end (no truncation): the
    // rest of the answer has a grace to end, as for a closed stdout noticed
    // while reading; one that fails after it ends nothing.
    let broken_pipe = streamed
        .as_ref()
        .is_err_and(|f| crate::exit::is_broken_pipe(f));
    if broken_pipe && !cmd_output.ended {
        cmd_output.finish_unread();
    }
    let read = cmd_output.bytes;
    // jkz's end of the pipe closes here: a CMD still writing gets EPIPE.
    drop(cmd_output);
    let verdict = output.verdict_object();
    drop(output);
    record.verdict = verdict.as_ref().map(deliberation::verdict::verdict_of);
    crate::findings::run_import::import_verdict(state, &args.context, verdict.as_ref(), PROGRAM);

    let end = watch
        .wait(&mut child)
        .map_err(|e| Failure::io(EXIT_FAILED, "waiting for CMD", e))?;
    *group_gone = end.group_gone;
    if !end.group_gone {
        say(format_args!(
            "warning: a process of CMD's group (pgid {}) outlived SIGKILL; the lock stays until it expires",
            child.id()
        ));
    }
    let code = exit_code(end.status);
    record.exit_code = Some(code);
    // Judged by what CMD wrote, whether or not it could be kept or passed on.
    let empty = truncate::record::is_empty(kept.as_ref(), Some(read));
    truncate::record::set_response(record, kept, PROGRAM);
    if let Some(path) = usage_file {
        match usage::read(path) {
            Ok(tokens) => record.tokens = tokens,
            Err(warning) => say(format_args!("warning: {warning}")),
        }
    }
    let stop = watch.stop();
    record.status = match stop {
        Some(Stop::Timeout) => Status::Timeout,
        Some(Stop::Signal(_) | Stop::ClosedStdout) => Status::Interrupted,
        None if code != 0 || empty => Status::Failed,
        None => Status::Ok,
    };
    if let Err(f) = streamed {
        if !crate::exit::is_broken_pipe(&f) {
            say(&f);
        }
    }
    match stop {
        Some(Stop::Timeout) => {
            say(format_args!(
                "CMD ran past --timeout {}s; its process group was ended",
                args.timeout.unwrap_or_default()
            ));
            Ok(EXIT_TIMEOUT)
        }
        Some(Stop::Signal(signal)) => {
            let name = signals::name(signal);
            say(format_args!(
                "{name} received and forwarded to CMD's process group, which has ended"
            ));
            record.signal = Some(name);
            Ok(u8::try_from(128 + signal).unwrap_or(EXIT_FAILED))
        }
        // The reader has all it wanted: a normal end, as for any pipe.
        Some(Stop::ClosedStdout) => Ok(0),
        None => Ok(u8::try_from(code).unwrap_or(EXIT_FAILED)),
    }
}

/// The truncation settings: the same resolution as `jkz-truncate`'s. The
/// full response is kept for the record, and its file is the one the
/// markers name.
fn settings(args: &RunArgs, state: &StateDir) -> Settings {
    Settings {
        cap: truncate::cap_from_env(args.max_bytes, args.mode, PROGRAM, &mut io::stderr()),
        head_share: roles::resolve_head_share(None, args.context.role.as_deref()),
        full_output: truncate::record::response_keep(state, PROGRAM),
        program: PROGRAM,
    }
}

/// CMD's exit code, or 128+N for a signal N.
pub fn exit_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => EXIT_FAILED.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_a_finite_number_of_seconds() {
        assert_eq!(parse_timeout("1.5"), Ok(1.5));
        assert_eq!(parse_timeout("0"), Ok(0.0));
        assert_eq!(parse_timeout("1e300"), Ok(1e300));
        for bad in [
            "nan", "NaN", "inf", "-inf", "infinity", "-1", "-0.5", "soon", "",
        ] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
    }
}
