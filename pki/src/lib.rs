//! Certificate authorities, serving certificates and client certificates: the API server's, the
//! hub's (for its agents' gRPC) and the CLI's (user certificate requests).
//!
//! A CA is generated on first start and kept in the data directory (`ca.crt`, `ca.key`, the key
//! with mode 0600); later starts reuse it, so kubeconfigs written before a restart stay valid. The
//! serving certificate is issued fresh by that CA at every start for the names and addresses the
//! server answers on.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read or write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot generate or load a certificate")]
    Certificate(#[from] rcgen::Error),
    #[error("the TLS configuration is invalid")]
    Tls(#[from] rustls::Error),
    #[error("{path} holds no usable PEM data")]
    Pem { path: PathBuf },
    #[error("{0}")]
    Invalid(String),
}

pub mod client;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A certificate authority whose key lives in the data directory.
pub struct CertificateAuthority {
    cert_pem: String,
    key: KeyPair,
    common_name: String,
}

/// A certificate and its private key, both PEM.
#[derive(Clone)]
pub struct CertifiedKey {
    pub cert_pem: String,
    pub key_pem: String,
}

impl CertificateAuthority {
    /// Loads `<stem>.crt` and `<stem>.key` from `dir`, or creates them on first start.
    pub fn load_or_create(dir: &Path, stem: &str, common_name: &str) -> Result<Self> {
        let cert_path = dir.join(format!("{stem}.crt"));
        let key_path = dir.join(format!("{stem}.key"));
        if cert_path.exists() && key_path.exists() {
            let cert_pem = read(&cert_path)?;
            let key = KeyPair::from_pem(&read(&key_path)?)?;
            return Ok(Self {
                cert_pem,
                key,
                common_name: common_name.to_owned(),
            });
        }
        let ca = Self::generate(common_name)?;
        write_private(&key_path, ca.key_pem().as_bytes())?;
        write(&cert_path, ca.cert_pem.as_bytes())?;
        Ok(ca)
    }

    /// Generates a new CA, kept only in memory until the caller stores [`Self::key_pem`].
    pub fn generate(common_name: &str) -> Result<Self> {
        let key = KeyPair::generate()?;
        let cert_pem = ca_params(common_name)?.self_signed(&key)?.pem();
        Ok(Self {
            cert_pem,
            key,
            common_name: common_name.to_owned(),
        })
    }

    /// A CA from its PEM certificate and key, as [`Self::generate`] made them.
    pub fn from_pem(cert_pem: &str, key_pem: &str, common_name: &str) -> Result<Self> {
        Ok(Self {
            cert_pem: cert_pem.to_owned(),
            key: KeyPair::from_pem(key_pem)?,
            common_name: common_name.to_owned(),
        })
    }

    /// The CA's private key, PEM encoded.
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// The CA certificate, PEM encoded, as clients pin it.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Issues a serving certificate for the given DNS names and IP addresses.
    pub fn issue_serving(&self, hosts: &[String]) -> Result<CertifiedKey> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(
            DnType::CommonName,
            hosts.first().map_or("atoll", |h| h.as_str()),
        );
        for host in hosts {
            let san = match host.parse::<IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName(host.clone().try_into()?),
            };
            if !params.subject_alt_names.contains(&san) {
                params.subject_alt_names.push(san);
            }
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.not_before = rcgen::date_time_ymd(2025, 1, 1);
        params.not_after = rcgen::date_time_ymd(2035, 1, 1);
        let key = KeyPair::generate()?;
        let issuer = Issuer::new(ca_params(&self.common_name)?, &self.key);
        let cert = params.signed_by(&key, &issuer)?;
        Ok(CertifiedKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// The parameters of the CA certificate. Deterministic, so that a CA loaded from disk signs with
/// the same subject and key identifier it was created with.
fn ca_params(common_name: &str) -> Result<CertificateParams> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = rcgen::date_time_ymd(2025, 1, 1);
    params.not_after = rcgen::date_time_ymd(2045, 1, 1);
    Ok(params)
}

/// A rustls server configuration for a serving certificate, offering the `alpn` protocols in
/// order of preference. With `client_ca` (PEM), clients may present a certificate that CA signed
/// (they need not: tokens and anonymous requests remain).
pub fn server_config(
    serving: &CertifiedKey,
    client_ca: Option<&str>,
    alpn: &[&[u8]],
) -> Result<Arc<rustls::ServerConfig>> {
    let certs = rustls_pemfile::certs(&mut serving.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Error::Io {
            path: PathBuf::from("<serving certificate>"),
            source,
        })?;
    let key = rustls_pemfile::private_key(&mut serving.key_pem.as_bytes())
        .map_err(|source| Error::Io {
            path: PathBuf::from("<serving key>"),
            source,
        })?
        .ok_or_else(|| Error::Pem {
            path: PathBuf::from("<serving key>"),
        })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_pemfile::certs(&mut ca.as_bytes()) {
                let cert = cert.map_err(|source| Error::Io {
                    path: PathBuf::from("<client CA>"),
                    source,
                })?;
                roots.add(cert)?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .map_err(|e| Error::Invalid(format!("the client CA cannot verify: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(certs, key)?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

fn write(path: &Path, contents: &[u8]) -> Result<()> {
    std::fs::write(path, contents).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

/// Writes a file readable only by its owner (mode 0600 on Unix).
pub fn write_private(path: &Path, contents: &[u8]) -> Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.open(path).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(io)?;
    }
    file.write_all(contents).map_err(io)?;
    file.sync_all().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_is_created_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = CertificateAuthority::load_or_create(dir.path(), "ca", "atoll-ca").unwrap();
        let second = CertificateAuthority::load_or_create(dir.path(), "ca", "atoll-ca").unwrap();
        assert_eq!(first.cert_pem(), second.cert_pem());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("ca.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn serving_certificate_builds_a_tls_config() {
        let dir = tempfile::tempdir().unwrap();
        let ca = CertificateAuthority::load_or_create(dir.path(), "ca", "atoll-ca").unwrap();
        let serving = ca
            .issue_serving(&["127.0.0.1".into(), "localhost".into()])
            .unwrap();
        let config = server_config(&serving, Some(ca.cert_pem()), &[b"h2", b"http/1.1"]).unwrap();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }
}
