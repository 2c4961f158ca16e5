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
//! Exit codes (one table, also in `--help` and the README):
//!
//! | code | meaning |
//! |---|---|
//! | CMD's | CMD exited with it |
//! | 128+N | CMD was killed by signal N |
//! | 2 | usage error (bad flag) |
//! | 75 | the circuit of `--service` is open: CMD was not started |
//! | 76 | the `--lock` is held by another owner: CMD was not started |
//! | 124 | CMD ran past `--timeout` and was killed |
//! | 125 | jkz itself failed before CMD ran (no state directory for `--service`/`--lock`, an I/O error) |
//! | 126 | CMD could not be executed |
//! | 127 | CMD was not found |
//!
//! CMD may exit with any of these codes itself; the one line jkz writes on
//! stderr for 75, 76, 124–127 tells them apart.

use std::ffi::OsString;
use std::io::{self, BufWriter};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::circuit::{self, Admission, Policy};
use crate::deliberation::{self, usage, Context, Record, Status};
use crate::exit::Failure;
use crate::lock::{self, Acquired};
use crate::state_dir::StateDir;
use crate::truncate::{self, roles, Mode, Settings};

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

/// `jkz run`.
#[derive(clap::Args, Debug, Clone)]
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

    /// The --lock's TTL in seconds.
    #[arg(long, value_name = "SECS", default_value_t = lock::DEFAULT_TTL)]
    pub lock_ttl: u64,

    /// Consecutive failures that open the --service's circuit.
    #[arg(long, value_name = "N", default_value_t = circuit::DEFAULT_THRESHOLD)]
    pub failure_threshold: u32,

    /// Seconds an open circuit waits before it lets one probe through.
    #[arg(long, value_name = "SECS", default_value_t = circuit::DEFAULT_COOLDOWN)]
    pub cooldown: u64,

    /// Kill CMD (SIGKILL) after SECS seconds: status timeout, exit 124.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,

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

    // CMD starts before jkz's own setup, which then overlaps with CMD's.
    let usage_file = usage::create().ok();
    let spawned = spawn(args, usage_file.as_deref());
    let records = deliberation::records_dir(state, PROGRAM);
    let outcome = match spawned {
        Ok(child) => invoke(args, child, state, usage_file.as_deref(), &mut record),
        Err(code) => {
            record.status = Status::Failed;
            record.exit_code = Some(code.into());
            Ok(code)
        }
    };
    record.duration_ms = Some(clock.elapsed().as_millis() as u64);
    if let (Some(service), Some(admission)) = (&args.service, &admission) {
        let success = record.status == Status::Ok;
        if let Err(e) = circuit::report(state, service, policy, admission, me, success) {
            say(format_args!(
                "warning: updating the circuit of {service}: {e}"
            ));
        }
    }
    deliberation::keep_record(records.as_deref(), &id, &record, PROGRAM);
    release(&held);
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

/// Starts CMD with its stdout piped to jkz; on failure, one line on stderr
/// and the exit code (127 not found, 126 cannot execute).
fn spawn(args: &RunArgs, usage_file: Option<&std::path::Path>) -> Result<Child, u8> {
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]).stdout(Stdio::piped());
    if let Some(path) = usage_file {
        cmd.env(deliberation::USAGE_FILE_VARIABLE, path);
    }
    cmd.spawn().map_err(|e| {
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

/// Streams CMD's answer and waits for CMD; fills in the record.
fn invoke(
    args: &RunArgs,
    mut child: Child,
    state: &StateDir,
    usage_file: Option<&std::path::Path>,
    record: &mut Record,
) -> Result<u8, Failure> {
    let stdout = child.stdout.take().expect("piped stdout");
    truncate::grow_pipe(&stdout);
    let child = Arc::new(Mutex::new(child));
    let timed_out = Arc::new(AtomicBool::new(false));
    let watchdog = args.timeout.map(|secs| {
        let (done, wait) = mpsc::channel::<()>();
        let child = Arc::clone(&child);
        let timed_out = Arc::clone(&timed_out);
        let limit = Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::MAX);
        let handle = std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
                timed_out.store(true, Ordering::SeqCst);
                let _ = child.lock().expect("child").kill();
            }
        });
        (done, handle)
    });

    let settings = settings(args, state);
    let mut stderr = io::stderr();
    let mut output = deliberation::verdict::OutputTail::new(BufWriter::with_capacity(
        1 << 20,
        io::stdout().lock(),
    ));
    let mut stdout = Counted {
        inner: stdout,
        bytes: 0,
    };
    let (streamed, kept) = truncate::truncate_keeping(
        &mut stdout,
        &mut output,
        &settings,
        "CMD's stdout",
        &mut stderr,
    );
    let verdict = output.verdict_object();
    drop(output);
    record.verdict = verdict.as_ref().map(deliberation::verdict::verdict_of);
    crate::findings::run_import::import_verdict(state, &args.context, verdict.as_ref(), PROGRAM);

    let status = match wait(&child, watchdog.is_some()) {
        Ok(status) => status,
        Err(e) => return Err(Failure::io(EXIT_FAILED, "waiting for CMD", e)),
    };
    if let Some((done, handle)) = watchdog {
        let _ = done.send(());
        let _ = handle.join();
    }
    let code = exit_code(status);
    record.exit_code = Some(code);
    // Judged by what CMD wrote, whether or not it could be kept or passed on.
    let empty = deliberation::is_empty(kept.as_ref(), Some(stdout.bytes));
    deliberation::set_response(record, kept, PROGRAM);
    if let Some(path) = usage_file {
        match usage::read(path) {
            Ok(tokens) => record.tokens = tokens,
            Err(warning) => say(format_args!("warning: {warning}")),
        }
    }
    record.status = if timed_out.load(Ordering::SeqCst) {
        Status::Timeout
    } else if code != 0 || empty {
        Status::Failed
    } else {
        Status::Ok
    };
    if let Err(f) = streamed {
        if !crate::exit::is_broken_pipe(&f) {
            say(&f);
        }
    }
    if record.status == Status::Timeout {
        say(format_args!(
            "CMD ran past --timeout {}s and was killed",
            args.timeout.unwrap_or_default()
        ));
        return Ok(EXIT_TIMEOUT);
    }
    Ok(u8::try_from(code).unwrap_or(EXIT_FAILED))
}

/// A reader that counts the bytes it reads.
struct Counted<R> {
    inner: R,
    bytes: u64,
}

impl<R: io::Read> io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// The truncation settings: the same resolution as `jkz-truncate`'s. The
/// full response is kept for the record, and its file is the one the
/// markers name.
fn settings(args: &RunArgs, state: &StateDir) -> Settings {
    Settings {
        cap: truncate::cap_from_env(args.max_bytes, args.mode, &mut io::stderr()),
        head_share: roles::resolve_head_share(None, args.context.role.as_deref()),
        full_output: deliberation::response_keep(state, PROGRAM),
    }
}

/// Waits for CMD; polled when a watchdog may need the child to kill it.
fn wait(child: &Mutex<Child>, shared: bool) -> io::Result<ExitStatus> {
    if !shared {
        return child.lock().expect("child").wait();
    }
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.lock().expect("child").try_wait()? {
            return Ok(status);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
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
