//! A real PostgreSQL server for the team-mode tests: Debian's `postgresql`
//! binaries (`/usr/lib/postgresql/<version>/bin`), `initdb` and `pg_ctl` in a
//! temporary directory, listening on a free port of 127.0.0.1 only. As
//! root (CI) the server runs as `nobody` (PostgreSQL refuses to run as
//! root) through `runuser`. One server is shared by the whole test run
//! ([`shared`]); each test takes a fresh database ([`Server::database`]).
//! A test that stops the server starts one of its own ([`Server::start`]).
//!
//! Without the binaries a test fails when `CI` is set (`.ci/run` installs
//! them) and otherwise says on stderr that it was skipped.
//!
//! Each server is watched by a small shell that stops it and removes its
//! directory once the test process is gone, so no server outlives the run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The superuser's password (scram-sha-256 over TCP).
pub const PASSWORD: &str = "jkz-test-secret";

/// A running server.
pub struct Server {
    bin: PathBuf,
    dir: PathBuf,
    pub port: u16,
    /// More server settings (`-c name=value …`), e.g. `-c ssl=on`.
    extra: String,
}

/// The directory holding `initdb` and `pg_ctl`, the newest version's.
fn binaries() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// `program` from the server's binaries, as the unprivileged user when
/// this process is root.
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// The shared server, started once; `None` (the caller returns) when the
/// binaries are missing outside CI.
pub fn shared() -> Option<&'static Server> {
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    SERVER.get_or_init(Server::start).as_ref()
}

/// A free TCP port on 127.0.0.1 (free when asked: the server binds it
/// right after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// Initializes and starts a server of its own; `None` when the binaries
    /// are missing outside CI (a visible skip), a panic in CI.
    pub fn start() -> Option<Server> {
        Server::start_with("", &[])
    }

    /// [`Server::start`] with more settings (`extra`, as `-c ssl=on`) and
    /// files written into the data directory first, readable by the
    /// server's user only (`server.crt`, `server.key`: TLS).
    pub fn start_with(extra: &str, files: &[(&str, &[u8])]) -> Option<Server> {
        let Some(bin) = binaries() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "the PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb) are missing: \
                 .ci/run installs them (apt-get install postgresql)"
            );
            eprintln!(
                "skipped: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)"
            );
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("jkz-pg-")
            .tempdir()
            .unwrap()
            .keep();
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "nobody"])
                .arg(&dir)
                .status()
                .unwrap();
            assert!(status.success(), "chown nobody {}", dir.display());
        }
        std::fs::write(dir.join("pw"), PASSWORD).unwrap();
        if is_root() {
            Command::new("chown")
                .arg("nobody")
                .arg(dir.join("pw"))
                .status()
                .unwrap();
        }
        let out = as_server_user(&bin.join("initdb"))
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-U", "postgres", "-E", "UTF8", "--no-sync"])
            .args(["--auth-host=scram-sha-256", "--auth-local=trust"])
            .arg(format!("--pwfile={}", dir.join("pw").display()))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (name, bytes) in files {
            let path = dir.join("data").join(name);
            std::fs::write(&path, bytes).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .unwrap();
            if is_root() {
                let status = Command::new("chown")
                    .arg("nobody")
                    .arg(&path)
                    .status()
                    .unwrap();
                assert!(status.success(), "chown nobody {}", path.display());
            }
        }
        let server = Server {
            bin,
            dir,
            port: free_port(),
            extra: extra.to_string(),
        };
        server.up();
        server.watch();
        Some(server)
    }

    /// Starts (or restarts) the server and waits until it accepts
    /// connections.
    pub fn up(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -c unix_socket_directories='{}' -c fsync=off \
             -c max_connections=200 -c shared_buffers=16MB {}",
            self.port,
            self.dir.display(),
            self.extra
        );
        let out = as_server_user(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("log"))
            .args(["-w", "-t", "60", "-o", &options, "start"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
        );
    }

    /// Stops the server (fast shutdown: connections are cut).
    pub fn down(&self) {
        let out = as_server_user(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-w", "-m", "fast", "stop"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl stop failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Stops the server and removes its directory once this test process
    /// is gone.
    fn watch(&self) {
        let pg_ctl = self.bin.join("pg_ctl");
        let stop = if is_root() {
            format!("runuser -u nobody -- '{}'", pg_ctl.display())
        } else {
            format!("'{}'", pg_ctl.display())
        };
        let script = format!(
            "while [ -d /proc/{pid} ]; do sleep 1; done; \
             {stop} -D '{data}' -m immediate stop >/dev/null 2>&1; rm -rf '{dir}'",
            pid = std::process::id(),
            data = self.dir.join("data").display(),
            dir = self.dir.display(),
        );
        // The watcher outlives this process by design: it is what stops the
        // server once the tests are gone, so nothing here waits for it.
        #[allow(clippy::zombie_processes)]
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server's watcher starts");
    }

    /// The URL of `database`, without the password (it goes in PGPASSWORD).
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// A client on `database` as the superuser.
    pub fn admin(&self, database: &str) -> postgres::Client {
        postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user("postgres")
            .password(PASSWORD)
            .dbname(database)
            .connect(postgres::NoTls)
            .unwrap_or_else(|e| panic!("connecting to {database}: {e}"))
    }

    /// A fresh, empty database for one test.
    pub fn database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "jkz_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        self.admin("postgres")
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        name
    }
}
