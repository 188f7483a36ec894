//! A cluster over TLS, trusting a private CA (and presenting a client
//! certificate, for mutual TLS, when one is given).
//!
//! ```sh
//! cargo run -p zaris-client --example tls -- 127.0.0.1:7000 ca.pem [client.pem client.key]
//! ```

use zaris_client::rustls::pki_types::pem::PemObject;
use zaris_client::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use zaris_client::{rustls, Client};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seed = args
        .next()
        .ok_or("usage: tls SEED CA_PEM [CERT_PEM KEY_PEM]")?;
    let ca = args
        .next()
        .ok_or("usage: tls SEED CA_PEM [CERT_PEM KEY_PEM]")?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(&ca)? {
        roots.add(cert?)?;
    }
    let tls = rustls::ClientConfig::builder_with_provider(
        rustls::crypto::ring::default_provider().into(),
    )
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots);
    let tls = match (args.next(), args.next()) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(&cert)?.collect::<Result<Vec<_>, _>>()?;
            tls.with_client_auth_cert(chain, PrivateKeyDer::from_pem_file(&key)?)?
        }
        _ => tls.with_no_client_auth(),
    };
    let client = Client::builder().tls(tls).connect(&[seed.as_str()]).await?;
    client.set("tls:hello", "over TLS").await?;
    let value = client.get("tls:hello").await?.unwrap_or_default();
    println!(
        "tls:hello -> {} (from {})",
        String::from_utf8_lossy(&value),
        client.owner_of("tls:hello").unwrap_or_default()
    );
    Ok(())
}
