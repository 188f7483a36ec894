//! How the command reaches a cluster: the options `redis-cli` users know
//! (`--tls`, `--cacert`, `--cert`, `--key`, `--user`, `--pass`), turned
//! into the client builder's settings; and failures told with what to do.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use zaris_client::rustls::pki_types::pem::PemObject;
use zaris_client::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use zaris_client::{rustls, Builder, Client, Error};

/// Options for reaching a cluster, shared by every subcommand that does.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct Options {
    /// Speak TLS (certificates checked against the Mozilla roots, or
    /// --cacert's).
    #[arg(long)]
    tls: bool,
    /// Trust the CA certificates in this PEM file (implies --tls).
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// Present this client certificate chain (PEM) for mutual TLS; with --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// The private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// The ACL user to log in as (with --pass).
    #[arg(long, requires = "pass")]
    user: Option<String>,
    /// The password (AUTH); REDISCLI_AUTH is read when this is not given.
    #[arg(long, env = "REDISCLI_AUTH", hide_env_values = true)]
    pass: Option<String>,
    /// How long one request may take before it counts as failed.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = humantime::parse_duration)]
    timeout: Duration,
}

impl Options {
    /// The client builder these options describe.
    fn builder(&self) -> Result<Builder, Failure> {
        let mut builder = Client::builder()
            .attempt_timeout(self.timeout)
            .request_timeout(Some(self.timeout * 3));
        if let Some(password) = &self.pass {
            builder = builder.auth(self.user.as_deref(), password);
        }
        if self.uses_tls() {
            builder = builder.tls(self.tls_config()?);
        }
        Ok(builder)
    }

    /// A rustls configuration trusting --cacert (or the Mozilla roots)
    /// and presenting --cert when given.
    fn tls_config(&self) -> Result<rustls::ClientConfig, Failure> {
        let provider = rustls::crypto::ring::default_provider();
        let builder = rustls::ClientConfig::builder_with_provider(provider.into())
            .with_safe_default_protocol_versions()
            .map_err(|e| Failure::new(format!("TLS: {e}")))?;
        let mut roots = rustls::RootCertStore::empty();
        match &self.cacert {
            Some(path) => {
                for cert in pem_certs(path)? {
                    roots.add(cert).map_err(|e| {
                        Failure::new(format!(
                            "{}: not a usable CA certificate: {e}",
                            path.display()
                        ))
                    })?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        let builder = builder.with_root_certificates(roots);
        match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let chain = pem_certs(cert)?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    Failure::new(format!("{}: no private key read: {e}", key.display()))
                })?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| Failure::new(format!("--cert and --key do not go together: {e}")))
            }
            _ => Ok(builder.with_no_client_auth()),
        }
    }

    /// Whether TLS is on (a `rediss://` seed turns it on in the client too).
    fn uses_tls(&self) -> bool {
        self.tls || self.cacert.is_some() || self.cert.is_some()
    }

    /// A client connected to the cluster `seeds` belong to, a spinner
    /// showing the wait.
    pub(crate) async fn connect(&self, seeds: &[String]) -> Result<Client, Failure> {
        self.connect_with(seeds, |b| b).await
    }

    /// As [`Self::connect`], with more settings.
    pub(crate) async fn connect_with(
        &self,
        seeds: &[String],
        more: impl FnOnce(Builder) -> Builder,
    ) -> Result<Client, Failure> {
        let spinner = spinner(&format!("connecting to {}", seeds.join(", ")));
        let client = more(self.builder()?).connect(seeds).await;
        spinner.finish_and_clear();
        client.map_err(Failure::from)
    }
}

/// Every certificate in a PEM file.
fn pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, Failure> {
    let read = |e: &dyn fmt::Display| Failure::new(format!("{}: {e}", path.display()));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| read(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| read(&e))?;
    if certs.is_empty() {
        return Err(Failure::new(format!(
            "{}: no certificate in it",
            path.display()
        )));
    }
    Ok(certs)
}

/// A spinner on stderr (drawn only when stderr is a terminal).
pub(crate) fn spinner(message: &str) -> ProgressBar {
    let spinner = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        spinner.set_style(style);
    }
    spinner.set_message(message.to_owned());
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner
}

/// What went wrong, in words, and what to do about it.
#[derive(Debug)]
pub(crate) struct Failure {
    message: String,
}

impl Failure {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        let message = match &error {
            Error::NoSeedReachable { tried } if !tried.is_empty() => {
                let mut text = String::from("no seed answered with a cluster map:");
                for (node, why) in tried {
                    text.push_str(&format!("\n  {node}: {why}\n    -> {}", advice(why)));
                }
                text
            }
            Error::Tls { node, detail } => format!(
                "TLS with {node} failed: {detail}\n  -> check --cacert (the CA that signed the \
                 node's certificate), or leave out --tls for a plain-text port"
            ),
            other => {
                let text = other.to_string();
                format!("{text}\n  -> {}", advice(&text))
            }
        };
        Self { message }
    }
}

/// What to try, from what a node said.
fn advice(why: &str) -> &'static str {
    let why = why.to_ascii_lowercase();
    if why.contains("wrongpass") || why.contains("noauth") || why.contains("auth") {
        "check --user and --pass (or REDISCLI_AUTH)"
    } else if why.contains("refused") {
        "is a node listening there? check the host and port"
    } else if why.contains("cluster support disabled") || why.contains("cluster mode") {
        "that node is not in cluster mode (cluster-enabled yes)"
    } else if why.contains("tls") || why.contains("certificate") || why.contains("handshake") {
        "check --tls and --cacert against how the node listens"
    } else if why.contains("timed out") || why.contains("time-out") {
        "the node did not answer in time: is it frozen or behind a firewall? (--timeout)"
    } else {
        "check the address, and that the node is part of a cluster"
    }
}
