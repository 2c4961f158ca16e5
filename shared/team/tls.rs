//! TLS to the team registry, as libpq does it: `sslmode` (from the URL,
//! else `PGSSLMODE`, else `prefer`) and the CA to verify the server with
//! (`sslrootcert` in the URL, else `PGSSLROOTCERT`, else
//! `~/.postgresql/root.crt` when it exists).
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `allow`, `prefer` (the default) | when the server offers it | not checked |
//! | `require` | always | not checked, unless a CA file is given or `~/.postgresql/root.crt` exists: then as `verify-ca` |
//! | `verify-ca` | always | signed by the CA |
//! | `verify-full` | always | signed by the CA, and names the URL's host |
//!
//! `sslrootcert=system` verifies against the system's trusted roots
//! (the platform's certificate store, [`rustls_native_certs`]) instead of a
//! file.
//!
//! The handshake is rustls' with the `ring` provider
//! ([`tokio_postgres_rustls`]), linked into jkz: nothing is loaded at
//! start-up, and its configuration is made only when the server agreed to
//! TLS: a server without TLS, met with the default `prefer`, costs jkz
//! nothing but the one-byte answer.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use postgres::config::SslMode;
use postgres::tls::{MakeTlsConnect, TlsConnect};
use postgres::Socket;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How the client uses TLS (`sslmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Mode {
    /// The values libpq accepts, as `sslmode` spells them.
    pub const NAMES: [&'static str; 6] = [
        "disable",
        "allow",
        "prefer",
        "require",
        "verify-ca",
        "verify-full",
    ];

    /// `sslmode`'s value, or why it is not one.
    pub fn parse(value: &str) -> Result<Mode, String> {
        Ok(match value {
            "disable" => Mode::Disable,
            "allow" => Mode::Allow,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            other => {
                return Err(format!(
                    "{other:?} is not an sslmode: use one of {}",
                    Mode::NAMES.join(", ")
                ))
            }
        })
    }

    /// The client's negotiation: whether it asks for TLS, and whether it
    /// goes on without it.
    pub fn negotiation(self) -> SslMode {
        match self {
            Mode::Disable => SslMode::Disable,
            // `allow` starts without TLS and retries with it; a server
            // that requires TLS is met by `prefer` as well.
            Mode::Allow | Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }
}

/// The CA the server's certificate is verified with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root {
    /// A PEM file of one or more CA certificates.
    File(PathBuf),
    /// The system's trusted roots (`sslrootcert=system`).
    System,
}

/// Whether and how the server's certificate is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Not checked: the connection is encrypted, the server not proven.
    Nothing,
    /// Signed by the CA.
    Ca(Root),
    /// Signed by the CA and naming the host connected to.
    Full(Root),
}

/// The TLS settings of one registry URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tls {
    pub mode: Mode,
    pub verify: Verify,
}

/// libpq's default CA file, `~/.postgresql/root.crt`.
fn default_root(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    env("HOME").map(|h| Path::new(&h).join(".postgresql/root.crt"))
}

impl Tls {
    /// The settings for `mode` (the URL's `sslmode`, else `PGSSLMODE`,
    /// else `prefer`) and `root` (the URL's `sslrootcert`, else
    /// `PGSSLROOTCERT`). A verifying mode without a CA is an error that
    /// says what to give.
    pub fn resolve(
        mode: Option<&str>,
        root: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Tls, String> {
        let mode = match mode {
            Some(m) => Mode::parse(m).map_err(|why| format!("sslmode: {why}"))?,
            None => match env("PGSSLMODE") {
                Some(m) => Mode::parse(&m).map_err(|why| format!("PGSSLMODE: {why}"))?,
                None => Mode::Prefer,
            },
        };
        let given = root
            .map(str::to_string)
            .or_else(|| env("PGSSLROOTCERT"))
            .map(|r| {
                if r == "system" {
                    Root::System
                } else {
                    Root::File(PathBuf::from(r))
                }
            });
        let root = match given {
            Some(r) => Some(r),
            None => default_root(env).filter(|p| p.is_file()).map(Root::File),
        };
        let verify = match (mode, root) {
            (Mode::Disable | Mode::Allow | Mode::Prefer, _) => Verify::Nothing,
            (Mode::Require, None) => Verify::Nothing,
            (Mode::Require | Mode::VerifyCa, Some(r)) => Verify::Ca(r),
            (Mode::VerifyFull, Some(r)) => Verify::Full(r),
            (Mode::VerifyCa | Mode::VerifyFull, None) => {
                let name = if mode == Mode::VerifyCa {
                    "verify-ca"
                } else {
                    "verify-full"
                };
                return Err(format!(
                    "sslmode={name} needs the CA that signed the server's certificate, and none was given: \
                     set PGSSLROOTCERT (or sslrootcert= in the URL) to its PEM file, or put it in ~/.postgresql/root.crt, \
                     or use sslrootcert=system for the system's trusted roots"
                ));
            }
        };
        Ok(Tls { mode, verify })
    }

    /// The CA file named, for messages.
    pub fn root_file(&self) -> Option<&Path> {
        match &self.verify {
            Verify::Ca(Root::File(p)) | Verify::Full(Root::File(p)) => Some(p),
            _ => None,
        }
    }

    /// What jkz hands the client for the handshake.
    pub fn connector(&self) -> Connector {
        Connector {
            verify: Arc::new(self.verify.clone()),
        }
    }
}

/// The client's TLS: makes a rustls handshake for the host connected to,
/// once the server has agreed to TLS.
#[derive(Clone)]
pub struct Connector {
    verify: Arc<Verify>,
}

/// One handshake, for one host.
pub struct Handshake {
    verify: Arc<Verify>,
    domain: String,
}

impl MakeTlsConnect<Socket> for Connector {
    type Stream = TlsStream;
    type TlsConnect = Handshake;
    type Error = std::convert::Infallible;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Handshake, Self::Error> {
        Ok(Handshake {
            verify: self.verify.clone(),
            domain: domain.to_string(),
        })
    }
}

/// The encrypted connection to the server.
pub type TlsStream = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream;

type BoxError = Box<dyn std::error::Error + Sync + Send>;

impl TlsConnect<Socket> for Handshake {
    type Stream = TlsStream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<TlsStream, BoxError>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        let config = match self.config() {
            Ok(config) => config,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let mut make = MakeRustlsConnect::new(config);
        let tls = match MakeTlsConnect::<Socket>::make_tls_connect(&mut make, &self.domain) {
            Ok(tls) => tls,
            Err(never) => match never {},
        };
        let handshake = tls.connect(stream);
        Box::pin(async move {
            handshake.await.map_err(|e| {
                let refused = e
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<rustls::Error>());
                match refused {
                    Some(rustls::Error::InvalidCertificate(why)) => self.refusal(why).into(),
                    _ => e.into(),
                }
            })
        })
    }
}

/// The cryptography of every handshake: rustls' `ring` provider.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Handshake {
    /// The rustls configuration for this handshake: the CA (only the one
    /// given, or the system's) and whether the host name is checked.
    fn config(&self) -> Result<ClientConfig, BoxError> {
        let provider = provider();
        let verifier: Arc<dyn ServerCertVerifier> = match &*self.verify {
            Verify::Nothing => Arc::new(AnyCertificate(provider.signature_verification_algorithms)),
            Verify::Ca(root) => Arc::new(CaOnly(webpki(root, &provider)?)),
            Verify::Full(root) => webpki(root, &provider)?,
        };
        Ok(ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth())
    }

    /// Why the server's certificate was refused, and what to do.
    fn refusal(&self, why: &CertificateError) -> String {
        let ca = match &*self.verify {
            Verify::Ca(Root::File(p)) | Verify::Full(Root::File(p)) => {
                format!("the CA in {}", p.display())
            }
            _ => "the system's trusted roots (sslrootcert=system)".to_string(),
        };
        if is_name_mismatch(why) {
            return format!(
                "the server's certificate does not name the host name {:?} the URL connects to (sslmode=verify-full): \
                 connect by a name the certificate holds, or use sslmode=verify-ca to check the CA only",
                self.domain
            );
        }
        let why = match why {
            CertificateError::UnknownIssuer => {
                "it is not signed by a trusted CA (unknown issuer)".to_string()
            }
            other => other.to_string(),
        };
        format!(
            "the server's certificate was refused: {why} (checked against {ca}): \
             give the CA that signed it in PGSSLROOTCERT or sslrootcert=, \
             or use sslmode=require with no CA given to encrypt without verifying"
        )
    }
}

/// Whether the certificate was refused only for not naming the host.
fn is_name_mismatch(why: &CertificateError) -> bool {
    matches!(
        why,
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
    )
}

/// The verifier of the chain and the host name against `root`.
fn webpki(
    root: &Root,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, BoxError> {
    let roots = match root {
        Root::File(path) => ca_store(path)?,
        Root::System => system_store()?,
    };
    Ok(WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build()?)
}

/// The system's trusted roots.
fn system_store() -> Result<RootCertStore, BoxError> {
    let found = rustls_native_certs::load_native_certs();
    let mut store = RootCertStore::empty();
    store.add_parsable_certificates(found.certs);
    if store.is_empty() {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(format!(
            "sslrootcert=system: the system holds no trusted root certificate{why}: \
             install them (Debian: ca-certificates), or give the CA's PEM file in PGSSLROOTCERT or sslrootcert="
        )
        .into());
    }
    Ok(store)
}

/// The most bytes of a CA file read: a distribution's whole bundle is
/// about 200 KiB.
const MAX_CA_FILE: u64 = 16 * 1024 * 1024;

/// A certificate store holding exactly the CA certificates of `path`.
fn ca_store(path: &Path) -> Result<RootCertStore, BoxError> {
    let pem = crate::user_file::read_user_file_bounded(path, MAX_CA_FILE).map_err(|e| {
        format!(
            "reading the CA file {} (sslrootcert, PGSSLROOTCERT or ~/.postgresql/root.crt): {e}",
            path.display()
        )
    })?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            format!(
                "the CA file {} holds no PEM certificate ({e}): give the CA's certificate (-----BEGIN CERTIFICATE-----)",
                path.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "the CA file {} holds no PEM certificate: give the CA's certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        )
        .into());
    }
    let mut store = RootCertStore::empty();
    for cert in certs {
        store.add(cert).map_err(|e| {
            format!(
                "the CA file {} holds a certificate that cannot be a CA ({e}): give the CA's certificate",
                path.display()
            )
        })?;
    }
    Ok(store)
}

/// `sslmode=verify-ca`: the chain is verified against the CA, the host name
/// is not (a certificate that does not name the host is accepted).
#[derive(Debug)]
struct CaOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for CaOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(why)) if is_name_mismatch(&why) => {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `sslmode=require` (and `prefer`) without a CA: any certificate is
/// accepted, so the connection is encrypted but the server not proven;
/// the handshake's signatures are still checked, so the peer holds the
/// key of the certificate it sent.
#[derive(Debug)]
struct AnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_url_wins_over_pgsslmode_and_prefer_is_the_default() {
        let none = env_of(&[("HOME", "/nonexistent")]);
        assert_eq!(Tls::resolve(None, None, &none).unwrap().mode, Mode::Prefer);
        let env = env_of(&[("HOME", "/nonexistent"), ("PGSSLMODE", "disable")]);
        assert_eq!(Tls::resolve(None, None, &env).unwrap().mode, Mode::Disable);
        let t = Tls::resolve(Some("require"), None, &env).unwrap();
        assert_eq!((t.mode, t.verify), (Mode::Require, Verify::Nothing));
        assert_eq!(t.mode.negotiation(), SslMode::Require);
        let e = Tls::resolve(Some("verify-everything"), None, &none).unwrap_err();
        assert!(e.contains("sslmode") && e.contains("verify-full"), "{e}");
        let bad = env_of(&[("PGSSLMODE", "on")]);
        let e = Tls::resolve(None, None, &bad).unwrap_err();
        assert!(e.starts_with("PGSSLMODE"), "{e}");
    }

    #[test]
    fn verifying_needs_a_ca_and_require_with_one_verifies_it() {
        let none = env_of(&[("HOME", "/nonexistent")]);
        for mode in ["verify-ca", "verify-full"] {
            let e = Tls::resolve(Some(mode), None, &none).unwrap_err();
            assert!(e.contains(mode) && e.contains("PGSSLROOTCERT"), "{e}");
        }
        let ca = env_of(&[("HOME", "/nonexistent"), ("PGSSLROOTCERT", "/etc/ca.pem")]);
        let file = Root::File("/etc/ca.pem".into());
        let t = Tls::resolve(Some("verify-full"), None, &ca).unwrap();
        assert_eq!(t.verify, Verify::Full(file.clone()));
        assert_eq!(t.root_file(), Some(Path::new("/etc/ca.pem")));
        let t = Tls::resolve(Some("require"), None, &ca).unwrap();
        assert_eq!(t.verify, Verify::Ca(file));
        let t = Tls::resolve(Some("verify-ca"), Some("system"), &none).unwrap();
        assert_eq!(t.verify, Verify::Ca(Root::System));
        // The URL's CA wins over the environment's.
        let t = Tls::resolve(Some("verify-ca"), Some("/mine.pem"), &ca).unwrap();
        assert_eq!(t.verify, Verify::Ca(Root::File("/mine.pem".into())));
        let t = Tls::resolve(Some("prefer"), None, &ca).unwrap();
        assert_eq!(t.verify, Verify::Nothing);
    }

    #[test]
    fn a_default_root_file_in_home_is_used() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".postgresql")).unwrap();
        std::fs::write(home.path().join(".postgresql/root.crt"), "x").unwrap();
        let h = home.path().to_string_lossy().to_string();
        let env = move |n: &str| (n == "HOME").then(|| h.clone());
        let t = Tls::resolve(Some("verify-full"), None, &env).unwrap();
        assert_eq!(
            t.verify,
            Verify::Full(Root::File(home.path().join(".postgresql/root.crt")))
        );
    }

    #[test]
    fn a_ca_file_without_a_certificate_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ca.pem");
        std::fs::write(&file, "not a certificate\n").unwrap();
        let e = ca_store(&file).expect_err("refused").to_string();
        assert!(
            e.contains("ca.pem") && e.contains("no PEM certificate"),
            "{e}"
        );
        let e = ca_store(&dir.path().join("missing.pem"))
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("missing.pem") && e.contains("PGSSLROOTCERT"),
            "{e}"
        );
    }
}
