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

use rcgen::PublicKeyData as _;
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
    /// Loads `<stem>.crt` and `<stem>.key` from `dir`, or creates them on first start (named
    /// `common_name`). A CA found there keeps its own common name, so that what it issues names
    /// it as the issuer even when another program made it (a hosted cluster's CA given to an
    /// API server standing in for its kube-apiserver).
    pub fn load_or_create(dir: &Path, stem: &str, common_name: &str) -> Result<Self> {
        let cert_path = dir.join(format!("{stem}.crt"));
        let key_path = dir.join(format!("{stem}.key"));
        if cert_path.exists() && key_path.exists() {
            let cert_pem = read(&cert_path)?;
            let key = KeyPair::from_pem(&read(&key_path)?)?;
            let common_name = inspect(&cert_pem)
                .ok()
                .map(|i| i.common_name)
                .filter(|cn| !cn.is_empty())
                .unwrap_or_else(|| common_name.to_owned());
            return Ok(Self {
                cert_pem,
                key,
                common_name,
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

/// What a leaf certificate is for (its extended key usages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// TLS server authentication.
    Server,
    /// TLS client authentication.
    Client,
    /// Both, as etcd members use theirs (each is a client of its peers).
    ServerAndClient,
}

/// A leaf certificate to issue: whom it names, for what, and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// The subject's common name (a client certificate's user).
    pub common_name: String,
    /// The subject's organizations (a client certificate's groups). A certificate that serves
    /// holds at most one.
    pub organizations: Vec<String>,
    /// DNS names and IP addresses (a certificate that serves).
    pub sans: Vec<String>,
    /// What it is for.
    pub usage: Usage,
    /// How long it is valid, from now (backdated a few minutes: clocks differ).
    pub valid_for: std::time::Duration,
}

/// What a certificate says, as read back from its PEM.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inspected {
    /// The subject's common name.
    pub common_name: String,
    /// The subject's organizations, in order.
    pub organizations: Vec<String>,
    /// Its DNS names.
    pub dns_names: Vec<String>,
    /// Its IP addresses.
    pub ip_addresses: Vec<IpAddr>,
    /// Valid from, in seconds since the Unix epoch.
    pub not_before: i64,
    /// Valid until, in seconds since the Unix epoch.
    pub not_after: i64,
    /// Whether it is a CA.
    pub is_ca: bool,
}

/// How far back a certificate's validity starts, for clocks that differ.
const BACKDATE: time::Duration = time::Duration::minutes(5);

fn validity(
    valid_for: std::time::Duration,
) -> Result<(time::OffsetDateTime, time::OffsetDateTime)> {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .map_err(|_| Error::Invalid("the clock cannot be read as a certificate time".to_owned()))?;
    let span = time::Duration::try_from(valid_for)
        .map_err(|_| Error::Invalid("the validity is out of range".to_owned()))?;
    Ok((now - BACKDATE, now + span))
}

impl CertificateAuthority {
    /// Generates a new CA valid for `valid_for` from now, kept only in memory until the caller
    /// stores [`Self::key_pem`].
    pub fn generate_valid_for(common_name: &str, valid_for: std::time::Duration) -> Result<Self> {
        let key = KeyPair::generate()?;
        let mut params = ca_params(common_name)?;
        (params.not_before, params.not_after) = validity(valid_for)?;
        let cert_pem = params.self_signed(&key)?.pem();
        Ok(Self {
            cert_pem,
            key,
            common_name: common_name.to_owned(),
        })
    }

    /// Issues `leaf` with a fresh key. A client certificate may name several groups; one that
    /// serves names at most one organization.
    pub fn issue(&self, leaf: &Leaf) -> Result<CertifiedKey> {
        if leaf.usage == Usage::Client {
            let key = KeyPair::generate()?;
            let subject = client::Subject {
                user: leaf.common_name.clone(),
                groups: leaf.organizations.clone(),
            };
            let (_, not_after) = validity(leaf.valid_for)?;
            let cert_pem = self.sign_client(&subject, &key.subject_public_key_info(), not_after)?;
            return Ok(CertifiedKey {
                cert_pem,
                key_pem: key.serialize_pem(),
            });
        }
        if leaf.organizations.len() > 1 {
            return Err(Error::Invalid(format!(
                "certificate {:?} serves, and may name one organization at most (it names {})",
                leaf.common_name,
                leaf.organizations.len()
            )));
        }
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, leaf.common_name.as_str());
        if let Some(organization) = leaf.organizations.first() {
            params
                .distinguished_name
                .push(DnType::OrganizationName, organization.as_str());
        }
        for host in &leaf.sans {
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
        params.extended_key_usages = match leaf.usage {
            Usage::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
            Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
            Usage::ServerAndClient => vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        };
        (params.not_before, params.not_after) = validity(leaf.valid_for)?;
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate()?;
        let issuer = Issuer::new(ca_params(&self.common_name)?, &self.key);
        let cert = params.signed_by(&key, &issuer)?;
        Ok(CertifiedKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A fresh key pair (ECDSA P-256), PEM encoded: the private key (PKCS#8) and the public key
/// (SubjectPublicKeyInfo), as kube-apiserver takes a service-account signing key and its
/// verifying key.
pub fn generate_key_pair() -> Result<(String, String)> {
    let key = KeyPair::generate()?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

/// Reads what a PEM certificate says.
pub fn inspect(cert_pem: &str) -> Result<Inspected> {
    use x509_parser::extensions::GeneralName;
    use x509_parser::prelude::{FromDer, X509Certificate};
    let der = client::der_of_pem(cert_pem, "CERTIFICATE")?;
    let (_, cert) = X509Certificate::from_der(&der)
        .map_err(|_| Error::Invalid("the certificate is not valid DER".to_owned()))?;
    let text = |a: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        a.as_str().map(str::to_owned).unwrap_or_default()
    };
    let mut out = Inspected {
        common_name: cert
            .subject()
            .iter_common_name()
            .next()
            .map(text)
            .unwrap_or_default(),
        organizations: cert.subject().iter_organization().map(text).collect(),
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
        is_ca: cert.is_ca(),
        ..Inspected::default()
    };
    if let Ok(Some(sans)) = cert.subject_alternative_name() {
        for name in &sans.value.general_names {
            match name {
                GeneralName::DNSName(dns) => out.dns_names.push((*dns).to_owned()),
                GeneralName::IPAddress(bytes) => match bytes.len() {
                    4 => out.ip_addresses.push(IpAddr::from(
                        <[u8; 4]>::try_from(*bytes).unwrap_or_default(),
                    )),
                    16 => out.ip_addresses.push(IpAddr::from(
                        <[u8; 16]>::try_from(*bytes).unwrap_or_default(),
                    )),
                    _ => {}
                },
                _ => {}
            }
        }
    }
    Ok(out)
}

/// Whether the PEM certificate `cert_pem` was signed by the CA certificate `ca_pem` (its
/// signature verifies with the CA's key, and it names the CA as its issuer).
pub fn signed_by(cert_pem: &str, ca_pem: &str) -> bool {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let (Ok(cert), Ok(ca)) = (
        client::der_of_pem(cert_pem, "CERTIFICATE"),
        client::der_of_pem(ca_pem, "CERTIFICATE"),
    ) else {
        return false;
    };
    let (Ok((_, cert)), Ok((_, ca))) = (
        X509Certificate::from_der(&cert),
        X509Certificate::from_der(&ca),
    ) else {
        return false;
    };
    cert.issuer() == ca.subject() && cert.verify_signature(Some(ca.public_key())).is_ok()
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

    const DAY: u64 = 86_400;

    #[test]
    fn a_ca_and_its_leaves_have_the_validity_asked_and_verify() {
        let ten_years = std::time::Duration::from_secs(3650 * DAY);
        let ca = CertificateAuthority::generate_valid_for("kubernetes", ten_years).unwrap();
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let read = inspect(ca.cert_pem()).unwrap();
        assert!(read.is_ca);
        assert_eq!(read.common_name, "kubernetes");
        assert!(
            (read.not_after - now - 3650 * DAY as i64).abs() < 60,
            "{read:?}"
        );
        assert!(read.not_before <= now - 240);
        let serving = ca
            .issue(&Leaf {
                common_name: "kube-apiserver".into(),
                organizations: vec![],
                sans: vec!["kubernetes.default.svc".into(), "10.96.0.1".into()],
                usage: Usage::Server,
                valid_for: std::time::Duration::from_secs(365 * DAY),
            })
            .unwrap();
        let leaf = inspect(&serving.cert_pem).unwrap();
        assert!(!leaf.is_ca);
        assert_eq!(leaf.dns_names, ["kubernetes.default.svc"]);
        assert_eq!(leaf.ip_addresses, ["10.96.0.1".parse::<IpAddr>().unwrap()]);
        assert!(
            (leaf.not_after - now - 365 * DAY as i64).abs() < 60,
            "{leaf:?}"
        );
        assert!(signed_by(&serving.cert_pem, ca.cert_pem()));
        let other = CertificateAuthority::generate_valid_for("other", ten_years).unwrap();
        assert!(!signed_by(&serving.cert_pem, other.cert_pem()));
        // The same CA loaded back from its PEM signs leaves that chain to the same certificate.
        let loaded =
            CertificateAuthority::from_pem(ca.cert_pem(), &ca.key_pem(), "kubernetes").unwrap();
        let again = loaded
            .issue(&Leaf {
                common_name: "etcd-peer".into(),
                organizations: vec![],
                sans: vec!["etcd-0.etcd.ns.svc".into()],
                usage: Usage::ServerAndClient,
                valid_for: std::time::Duration::from_secs(DAY),
            })
            .unwrap();
        assert!(signed_by(&again.cert_pem, ca.cert_pem()));
    }

    #[test]
    fn client_certificates_name_their_user_and_groups() {
        let ca = CertificateAuthority::generate_valid_for(
            "kubernetes",
            std::time::Duration::from_secs(DAY),
        )
        .unwrap();
        let admin = ca
            .issue(&Leaf {
                common_name: "atoll-admin".into(),
                organizations: vec!["system:masters".into(), "ops".into()],
                sans: vec![],
                usage: Usage::Client,
                valid_for: std::time::Duration::from_secs(365 * DAY),
            })
            .unwrap();
        let read = inspect(&admin.cert_pem).unwrap();
        assert_eq!(read.common_name, "atoll-admin");
        assert_eq!(read.organizations, ["system:masters", "ops"]);
        assert!(signed_by(&admin.cert_pem, ca.cert_pem()));
        let two = ca.issue(&Leaf {
            common_name: "x".into(),
            organizations: vec!["a".into(), "b".into()],
            sans: vec!["x".into()],
            usage: Usage::Server,
            valid_for: std::time::Duration::from_secs(DAY),
        });
        assert!(two.is_err());
    }

    #[test]
    fn key_pairs_are_pem() {
        let (private, public) = generate_key_pair().unwrap();
        assert!(private.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"));
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
