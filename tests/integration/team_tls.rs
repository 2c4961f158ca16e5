//! Team mode over TLS, on a real PostgreSQL started with `ssl=on` and a
//! server certificate signed by a CA made here with the `openssl` command
//! line (the certificate names `localhost` only, so `verify-full` to
//! `127.0.0.1` must fail where `verify-ca` passes). `require` and the
//! default `prefer` encrypt (the server's `pg_stat_ssl` says so for jkz's
//! own session), `verify-full` connects with the right CA and is refused
//! with a wrong one, and a hook that meets a refused handshake still fails
//! open within its bound.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::postgres::{self, Server, PASSWORD};
use crate::registry::T;
use crate::util::{bin, cannot_run, scrubbed, Cmd, Dir, Run};

/// `pg_advisory_xact_lock`'s first key for locks (`LockClass::Lock`).
const LOCK_CLASS: i32 = 0x6a6b_7a32;

/// The TLS server and the directory of its certificates: `ca.crt` (the
/// CA that signed `server.crt`) and `other.crt` (a CA that signed
/// nothing).
struct Tls {
    server: Server,
    certs: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes the CAs and the server's certificate in a new directory.
fn certificates() -> Option<PathBuf> {
    if Command::new("openssl")
        .arg("version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        cannot_run("the openssl command line is not installed (apt-get install openssl)");
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("jkz-tls-")
        .tempdir()
        .unwrap()
        .keep();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
    for (name, cn) in [("ca", "jkz test CA"), ("other", "jkz other CA")] {
        let key = format!("{name}.key");
        let crt = format!("{name}.crt");
        let subj = format!("/CN={cn}");
        let mut args = vec!["req", "-x509"];
        args.extend(ec);
        args.extend(["-nodes", "-keyout", &key, "-out", &crt, "-days", "2"]);
        args.extend(["-subj", &subj]);
        openssl(&dir, &args);
    }
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend(["-nodes", "-keyout", "server.key", "-out", "server.csr"]);
    args.extend(["-subj", "/CN=localhost"]);
    openssl(&dir, &args);
    std::fs::write(dir.join("san.ext"), "subjectAltName=DNS:localhost\n").unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ],
    );
    Some(dir)
}

/// The shared TLS server; `None` to skip (outside CI).
fn tls() -> Option<&'static Tls> {
    static TLS: OnceLock<Option<Tls>> = OnceLock::new();
    TLS.get_or_init(|| {
        let certs = certificates()?;
        let crt = std::fs::read(certs.join("server.crt")).unwrap();
        let key = std::fs::read(certs.join("server.key")).unwrap();
        let server = Server::start_with(
            "-c ssl=on",
            &[
                ("server.crt", crt.as_slice()),
                ("server.key", key.as_slice()),
            ],
        )?;
        Some(Tls { server, certs })
    })
    .as_ref()
}

/// A checkout of its own, with an empty `HOME` (no
/// `~/.postgresql/root.crt`) and the password in `PGPASSWORD`.
struct Checkout {
    dir: Dir,
    env: Vec<(String, String)>,
}

impl Checkout {
    fn new(url: &str, env: &[(&str, &str)]) -> Checkout {
        let dir = Dir::new();
        std::fs::create_dir(dir.join("state")).unwrap();
        std::fs::create_dir(dir.join("home")).unwrap();
        let mut all = vec![
            ("HOME".to_string(), dir.join("home").display().to_string()),
            ("JKZ_HOST".into(), "machine-a".into()),
            ("PGPASSWORD".into(), PASSWORD.into()),
            ("JKZ_REGISTRY_URL".into(), url.into()),
        ];
        all.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Checkout { dir, env: all }
    }

    fn cmd(&self, name: &str) -> Cmd {
        let mut cmd = self.dir.cmd(name).env("JKZ_TEST_NOW", T.to_string());
        for key in ["PGSSLMODE", "PGSSLROOTCERT", "PGUSER", "PGPASSFILE"] {
            if !self.env.iter().any(|(k, _)| k == key) {
                cmd = cmd.env(key, "");
            }
        }
        for (k, v) in &self.env {
            cmd = cmd.env(k, v);
        }
        cmd
    }

    fn jkz(&self, args: &[&str]) -> Run {
        self.cmd("jkz").args(args).run()
    }

    fn hook(&self, event: &str) -> Run {
        let e = json!({
            "session_id": "chat-a",
            "transcript_path": "/dev/null",
            "cwd": self.dir.path(),
            "hook_event_name": event,
            "source": "startup",
        });
        self.cmd("jkz-chat").stdin(e.to_string()).run().success()
    }
}

/// Whether the session jkz opens with `url` and `env` is encrypted, as the
/// server sees it: `jkz lock acquire` waits on the lock's advisory lock,
/// held here, while `pg_stat_ssl` is read for its session (found by its
/// `application_name`).
fn session_is_encrypted(t: &Tls, database: &str, url: &str, env: &[(&str, &str)]) -> bool {
    // One name per call: a session of an earlier call may still be listed
    // while it ends.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let app = format!("jkz_tls_{}_{call}", std::process::id());
    let url = format!(
        "{url}{}application_name={app}",
        if url.contains('?') { '&' } else { '?' }
    );
    let m = Checkout::new(&url, env);
    let mut admin = t.server.admin(database);
    admin
        .execute(
            "SELECT pg_advisory_lock($1, hashtext('pipeline-42'))",
            &[&LOCK_CLASS],
        )
        .unwrap();
    let mut c = scrubbed(bin("jkz"), m.dir.path());
    for key in ["PGSSLMODE", "PGSSLROOTCERT"] {
        c.env_remove(key);
    }
    let child = c
        .args(["lock", "acquire", "pipeline", "42", "--owner", "tls"])
        .envs(m.env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let ssl = loop {
        let rows = admin
            .query(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
                 WHERE a.application_name = $1",
                &[&app],
            )
            .unwrap();
        if let Some(r) = rows.first() {
            let ssl = r.get::<_, bool>(0);
            // Every session of this call is the same way.
            assert!(rows.iter().all(|r| r.get::<_, bool>(0) == ssl), "{app}");
            break ssl;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "jkz's session never showed up in pg_stat_activity"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    admin
        .execute(
            "SELECT pg_advisory_unlock($1, hashtext('pipeline-42'))",
            &[&LOCK_CLASS],
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "jkz lock acquire: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    admin
        .execute(
            "DELETE FROM jkz_locks WHERE kind = 'pipeline' AND name = '42'",
            &[],
        )
        .unwrap();
    ssl
}

#[test]
fn team_tls_require_and_the_default_prefer_encrypt_the_session() {
    let Some(t) = tls() else { return };
    let db = t.server.database();
    let url = t.server.url(&db);
    let require = format!("{url}?sslmode=require");
    assert!(session_is_encrypted(t, &db, &require, &[]));
    // PGSSLMODE, when the URL says nothing; prefer by default, as libpq.
    assert!(session_is_encrypted(
        t,
        &db,
        &url,
        &[("PGSSLMODE", "require")]
    ));
    assert!(session_is_encrypted(t, &db, &url, &[]));
    assert!(!session_is_encrypted(
        t,
        &db,
        &url,
        &[("PGSSLMODE", "disable")]
    ));
    // The URL wins over PGSSLMODE.
    assert!(session_is_encrypted(
        t,
        &db,
        &require,
        &[("PGSSLMODE", "disable")]
    ));
}

#[test]
fn team_tls_verify_full_connects_with_the_right_ca_and_refuses_a_wrong_one() {
    let Some(t) = tls() else { return };
    let db = t.server.database();
    let ca = t.certs.join("ca.crt").display().to_string();
    let other = t.certs.join("other.crt").display().to_string();
    let by_name = format!("postgres://postgres@localhost:{}/{db}", t.server.port);
    let by_ip = t.server.url(&db);
    let full = format!("{by_name}?sslmode=verify-full");

    // The right CA, from PGSSLROOTCERT or from the URL.
    let m = Checkout::new(&full, &[("PGSSLROOTCERT", &ca)]);
    m.jkz(&["lock", "acquire", "pipeline", "1", "--owner", "a"])
        .success();
    let m = Checkout::new(&format!("{full}&sslrootcert={ca}"), &[]);
    m.jkz(&["lock", "acquire", "pipeline", "2", "--owner", "a"])
        .success();
    assert!(session_is_encrypted(
        t,
        &db,
        &full,
        &[("PGSSLROOTCERT", &ca)]
    ));

    // A wrong CA: refused, saying what to do, nothing written.
    for url in [full.clone(), format!("{by_name}?sslmode=verify-ca")] {
        let m = Checkout::new(&url, &[("PGSSLROOTCERT", &other)]);
        let run = m
            .jkz(&["lock", "acquire", "pipeline", "3", "--owner", "a"])
            .expect_code(1);
        let err = run.stderr_str();
        assert!(
            err.contains("certificate") && err.contains("other.crt"),
            "{}",
            run.report()
        );
        assert!(!err.contains(PASSWORD), "{}", run.report());
    }
    // The certificate names localhost, not 127.0.0.1: verify-full by IP
    // is refused, verify-ca (the CA only) connects.
    let m = Checkout::new(
        &format!("{by_ip}?sslmode=verify-full"),
        &[("PGSSLROOTCERT", &ca)],
    );
    let run = m
        .jkz(&["lock", "acquire", "pipeline", "4", "--owner", "a"])
        .expect_code(1);
    assert!(run.stderr_str().contains("host name"), "{}", run.report());
    let m = Checkout::new(
        &format!("{by_ip}?sslmode=verify-ca"),
        &[("PGSSLROOTCERT", &ca)],
    );
    m.jkz(&["lock", "acquire", "pipeline", "5", "--owner", "a"])
        .success();
    // verify-full without any CA: refused before connecting.
    let m = Checkout::new(&full, &[]);
    let run = m.jkz(&["lock", "list"]).expect_code(1);
    assert!(
        run.stderr_str().contains("PGSSLROOTCERT"),
        "{}",
        run.report()
    );

    let held: Vec<String> = t
        .server
        .admin(&db)
        .query("SELECT name FROM jkz_locks ORDER BY name", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(held, ["1", "2", "5"]);
}

#[test]
fn team_tls_require_against_a_server_without_tls_is_a_clear_error() {
    let Some(server) = postgres::shared() else {
        return;
    };
    let url = format!("{}?sslmode=require", server.url(&server.database()));
    let m = Checkout::new(&url, &[]);
    let run = m.jkz(&["chats"]).expect_code(1);
    let err = run.stderr_str();
    assert!(
        err.contains("TLS") && err.contains("sslmode"),
        "{}",
        run.report()
    );
}

#[test]
fn team_tls_a_hook_fails_open_within_its_bound_when_the_handshake_fails() {
    let Some(t) = tls() else { return };
    let db = t.server.database();
    let other = t.certs.join("other.crt").display().to_string();
    let ca = t.certs.join("ca.crt").display().to_string();
    let url = format!(
        "postgres://postgres@localhost:{}/{db}?sslmode=verify-full",
        t.server.port
    );
    let m = Checkout::new(&url, &[("PGSSLROOTCERT", &other)]);
    for event in ["SessionStart", "UserPromptSubmit"] {
        let started = Instant::now();
        let run = m.hook(event);
        assert!(run.stdout().is_empty(), "{}", run.report());
        let err = run.stderr_str();
        assert_eq!(err.trim_end().lines().count(), 1, "{}", run.report());
        assert!(err.contains("certificate"), "{}", run.report());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
    assert!(!m.dir.join("state/chat.db").exists());

    // A server that accepts and never answers the TLS request.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let m = Checkout::new(
        &format!("postgres://postgres@127.0.0.1:{port}/jkz?sslmode=verify-ca"),
        &[("PGSSLROOTCERT", &ca)],
    );
    let started = Instant::now();
    let run = m.hook("SessionStart");
    assert!(run.stdout().is_empty(), "{}", run.report());
    assert!(
        run.stderr_str().contains("no answer within"),
        "{}",
        run.report()
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(listener);
}
