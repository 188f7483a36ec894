//! Certificates for TLS clusters, made fresh by each test run (`rcgen`): a
//! CA, a certificate for the nodes (valid for `localhost`, `127.0.0.1` and
//! `*.zaris.test`), a client certificate for mutual TLS, an expired node
//! certificate, and a second CA nobody signed with (the wrong-CA case).
//! The PEM files live in a temporary directory the servers read.

use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Which certificate a server presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerCert {
    /// Valid, signed by the CA.
    Valid,
    /// Signed by the CA, but expired in 2001.
    Expired,
}

/// A test PKI on disk.
pub struct Pki {
    dir: tempfile::TempDir,
}

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl Pki {
    /// Generates every certificate and writes them to a temporary directory.
    ///
    /// # Errors
    /// Key generation or the directory failed.
    pub fn generate() -> io::Result<Arc<Self>> {
        let dir = tempfile::Builder::new().prefix("zaris-pki-").tempdir()?;
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text);

        let (ca_pem, issuer) = ca("Zaris test CA")?;
        write("ca.pem", ca_pem)?;
        let (other_ca_pem, _) = ca("Some other CA")?;
        write("other-ca.pem", other_ca_pem)?;

        let leaf = |cn: &str, expired: bool| -> io::Result<(String, String)> {
            let mut params = CertificateParams::default();
            params.distinguished_name.push(DnType::CommonName, cn);
            params.subject_alt_names = vec![
                SanType::DnsName("localhost".try_into().map_err(other)?),
                SanType::DnsName("*.zaris.test".try_into().map_err(other)?),
                SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            ];
            if expired {
                params.not_before = rcgen::date_time_ymd(2000, 1, 1);
                params.not_after = rcgen::date_time_ymd(2001, 1, 1);
            }
            let key = KeyPair::generate().map_err(other)?;
            let cert = params.signed_by(&key, &issuer).map_err(other)?;
            Ok((cert.pem(), key.serialize_pem()))
        };
        for (name, cn, expired) in [
            ("node", "zaris node", false),
            ("client", "zaris client", false),
            ("expired", "zaris expired node", true),
        ] {
            let (cert, key) = leaf(cn, expired)?;
            write(&format!("{name}.pem"), cert)?;
            write(&format!("{name}.key"), key)?;
        }
        Ok(Arc::new(Self { dir }))
    }

    /// Where one of the files is (`ca.pem`, `client.pem`, `client.key`, ...).
    #[must_use]
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The server arguments for a TLS-only node on `port`: no plain-text
    /// port, TLS between the nodes too; clients need a certificate only when
    /// `mutual`.
    #[must_use]
    pub fn server_args(&self, port: u16, cert: ServerCert, mutual: bool) -> Vec<String> {
        let name = match cert {
            ServerCert::Valid => "node",
            ServerCert::Expired => "expired",
        };
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        [
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--tls-cert-file",
            &path(self.path(&format!("{name}.pem"))),
            "--tls-key-file",
            &path(self.path(&format!("{name}.key"))),
            "--tls-ca-cert-file",
            &path(self.path("ca.pem")),
            "--tls-cluster",
            "yes",
            "--tls-replication",
            "yes",
            "--tls-auth-clients",
            if mutual { "yes" } else { "optional" },
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    }

    /// A rustls client configuration trusting `ca` (`"ca.pem"` or
    /// `"other-ca.pem"`), with the client certificate when `client_cert`.
    ///
    /// # Errors
    /// A PEM file did not parse.
    pub fn client_config(&self, ca: &str, client_cert: bool) -> io::Result<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in read_certs(&self.path(ca))? {
            roots.add(cert).map_err(other)?;
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(other)?
        .with_root_certificates(roots);
        if client_cert {
            let chain = read_certs(&self.path("client.pem"))?;
            let key = PrivateKeyDer::from_pem_file(self.path("client.key")).map_err(other)?;
            builder.with_client_auth_cert(chain, key).map_err(other)
        } else {
            Ok(builder.with_no_client_auth())
        }
    }
}

/// The harness's own connections accept any certificate: they drive and
/// inspect servers (an expired certificate among them); what a certificate
/// is worth is the client's business, tested there.
#[derive(Debug)]
pub(crate) struct AnyCert(Arc<rustls::crypto::CryptoProvider>);

impl AnyCert {
    /// A client configuration trusting any server and presenting the
    /// test client certificate.
    pub(crate) fn config(pki: &Pki) -> io::Result<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let chain = read_certs(&pki.path("client.pem"))?;
        let key = PrivateKeyDer::from_pem_file(pki.path("client.key")).map_err(other)?;
        rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(other)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert(provider)))
            .with_client_auth_cert(chain, key)
            .map_err(other)
    }
}

impl rustls::client::danger::ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn read_certs(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    CertificateDer::pem_file_iter(path)
        .map_err(other)?
        .collect::<Result<_, _>>()
        .map_err(other)
}

/// A self-signed CA: its PEM and the issuer to sign with.
fn ca(name: &str) -> io::Result<(String, Issuer<'static, KeyPair>)> {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().map_err(other)?;
    let cert = params.self_signed(&key).map_err(other)?;
    Ok((cert.pem(), Issuer::new(params, key)))
}
