//! Team mode through PgBouncer (Debian's `pgbouncer`) in transaction
//! pooling, set up as docs/worktrees.md says: the whole flow of two
//! machines (chats, claims, the guard and its replica, locks, circuits,
//! `jkz doctor`) works through the pooler, with one winner.
//!
//! Without the binary a test fails when `CI` is set (`.ci/run` installs
//! it) and otherwise says on stderr that it was skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::postgres::{self, free_port, PASSWORD};
use crate::registry::T;
use crate::team::{deny_reason, quiet, Backend, Machine};

const PGBOUNCER: &str = "/usr/sbin/pgbouncer";

/// A PgBouncer in front of the shared server, in transaction pooling;
/// stopped when dropped.
struct Pooler {
    dir: PathBuf,
    port: u16,
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
    })
}

impl Pooler {
    fn start(server_port: u16) -> Option<Pooler> {
        if !Path::new(PGBOUNCER).is_file() {
            assert!(
                std::env::var_os("CI").is_none(),
                "pgbouncer ({PGBOUNCER}) is missing: .ci/run installs it (apt-get install pgbouncer)"
            );
            eprintln!("skipped: no {PGBOUNCER} (apt-get install pgbouncer)");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("jkz-pgbouncer-")
            .tempdir()
            .unwrap()
            .keep();
        let port = free_port();
        // The configuration docs/worktrees.md gives, on loopback.
        let ini = format!(
            "[databases]\n* = host=127.0.0.1 port={server_port}\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = scram-sha-256\nauth_file = {dir}/userlist.txt\n\
             pool_mode = transaction\nignore_startup_parameters = options\n\
             max_client_conn = 200\ndefault_pool_size = 10\n\
             logfile = {dir}/pgbouncer.log\npidfile = {dir}/pgbouncer.pid\n",
            dir = dir.display()
        );
        std::fs::write(dir.join("pgbouncer.ini"), ini).unwrap();
        std::fs::write(
            dir.join("userlist.txt"),
            format!("\"postgres\" \"{PASSWORD}\"\n"),
        )
        .unwrap();
        let mut start = if is_root() {
            let status = Command::new("chown")
                .args(["-R", "nobody"])
                .arg(&dir)
                .status()
                .unwrap();
            assert!(status.success());
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--", PGBOUNCER]);
            c
        } else {
            Command::new(PGBOUNCER)
        };
        let out = start
            .args(["-d", "-q"])
            .arg(dir.join("pgbouncer.ini"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pgbouncer: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pooler = Pooler { dir, port };
        // Listening once its pid file is written (it daemonizes first).
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(pooler);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!(
            "pgbouncer never listened: {}",
            std::fs::read_to_string(pooler.dir.join("pgbouncer.log")).unwrap_or_default()
        );
    }

    fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }
}

impl Drop for Pooler {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            if let Ok(pid) = pid.trim().parse() {
                crate::util::signal(pid, rustix::process::Signal::TERM);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Two machines on a fresh database of the shared server, both through a
/// PgBouncer of their own in transaction pooling (kept running while the
/// returned pooler lives); `None` to skip.
fn two_machines_through_a_pooler() -> Option<(Pooler, Machine, Machine)> {
    let server = postgres::shared()?;
    let pooler = Pooler::start(server.port)?;
    let url = pooler.url(&server.database());
    let a = Machine::new("machine-a", Backend::Team(url.clone()));
    let b = Machine::new("machine-b", Backend::Team(url));
    Some((pooler, a, b))
}

#[test]
fn team_through_pgbouncer_in_transaction_pooling_works_as_direct() {
    let Some((_pooler, a, b)) = two_machines_through_a_pooler() else {
        return;
    };
    // The first writer creates the schema through the pooler.
    quiet(&a.hook("SessionStart", "chat-a", json!({"source": "startup"}), T));
    quiet(&b.hook("SessionStart", "chat-b", json!({"source": "startup"}), T));
    a.jkz(&["claim", "42", "--session", "chat-a"], T).success();
    b.jkz(&["claim", "42", "--session", "chat-b"], T)
        .expect_code(3);
    quiet(&b.hook("PostToolUse", "chat-b", json!({}), T));
    let pipeline = b.dir.join("state/pipeline/42.json");
    let why = deny_reason(&b.edit("chat-b", pipeline.clone(), T + 1));
    assert!(why.contains("chat-a on machine-a"), "{why}");
    // Past the replica's bound the guard asks the server through the pooler.
    deny_reason(&b.edit("chat-b", pipeline, T + 5));
    let seen = b.chats(T + 5);
    assert_eq!(seen.len(), 2, "{seen:?}");
    a.jkz(&["release", "42", "--session", "chat-a"], T + 5)
        .success();
    b.jkz(&["claim", "42", "--session", "chat-b"], T + 5)
        .success();
    // Locks and circuits: one holder, the list readable.
    a.jkz(&["lock", "acquire", "pipeline", "7", "--owner", "alice"], T)
        .success();
    b.jkz(&["lock", "acquire", "pipeline", "7", "--owner", "bob"], T)
        .expect_code(3);
    let listed = b.jkz(&["lock", "list", "--json"], T).success().stdout_str();
    assert!(listed.contains("alice"), "{listed}");
    a.jkz(&["lock", "release", "pipeline", "7", "--owner", "alice"], T)
        .success();
    b.jkz(&["circuit", "status"], T).success();
    let doctor = b.jkz(&["doctor"], T + 5);
    let text = doctor.stdout_str();
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok") && l.contains("registry: PostgreSQL")),
        "{}",
        doctor.report()
    );
    assert!(
        text.contains("registry: machine machine-a: 1 chat(s)"),
        "{}",
        doctor.report()
    );
}

/// Through PgBouncer in transaction pooling, `jkz registry migrate` (and a
/// claim, a listing) used named prepared statements: with other jkz
/// processes on the pooler's server connections they failed with
/// `prepared statement "s0" already exists` (or `does not exist`); and the
/// migrations it re-applies lost deadlocks against chats' transactions.
#[test]
fn registry_migrate_through_pgbouncer_met_other_processes_statements_and_deadlocks() {
    let Some((_pooler, a, b)) = two_machines_through_a_pooler() else {
        return;
    };
    quiet(&a.hook("SessionStart", "chat-a", json!({"source": "startup"}), T));
    quiet(&b.hook("SessionStart", "chat-b", json!({"source": "startup"}), T));
    // The schema check reads the catalogs through the pooler too.
    let migrated = b.jkz(&["registry", "migrate"], T).success();
    assert!(
        migrated.stdout_str().contains("schema version"),
        "{}",
        migrated.report()
    );
    // Eighteen at once from both machines (schema checks, claims,
    // listings) share the pooler's server connections: the statements one
    // prepares never meet another's.
    let issues: Vec<String> = (0..6).map(|i| format!("{}", 100 + i)).collect();
    let racing: Vec<_> = (0..6)
        .flat_map(|i| {
            let (m, session) = [(&a, "chat-a"), (&b, "chat-b")][i % 2];
            [
                m.spawn(&["registry", "migrate"]),
                m.spawn(&["claim", &issues[i], "--session", session]),
                m.spawn(&["chats", "--json"]),
            ]
        })
        .collect();
    for child in racing {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
