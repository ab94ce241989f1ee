//! Client certificates, as kube-apiserver reads them: the subject's common name is the user and
//! each organization a group. This module writes the certificate signing requests that ask for
//! them (`atoll user create`), reads and verifies such requests (the cluster's
//! `kubernetes.io/kube-apiserver-client` signer), signs the certificates with the cluster CA,
//! and reads who a presented certificate names.
//!
//! Names are DER-encoded here with yasna because rcgen's distinguished names hold each attribute
//! type once, and a user in two groups needs two organizations.

use rcgen::{KeyPair, PublicKeyData, SigningKey};
use time::OffsetDateTime;
use x509_parser::prelude::{FromDer, X509Certificate};
use yasna::models::{ObjectIdentifier, UTCTime};
use yasna::{DERWriter, Tag};

use super::{CertificateAuthority, Error, Result};

/// Who a client certificate names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    pub user: String,
    pub groups: Vec<String>,
}

const COMMON_NAME: &[u64] = &[2, 5, 4, 3];
const ORGANIZATION: &[u64] = &[2, 5, 4, 10];
const ECDSA_SHA256: &[u64] = &[1, 2, 840, 10045, 4, 3, 2];
const KEY_USAGE: &[u64] = &[2, 5, 29, 15];
const EXTENDED_KEY_USAGE: &[u64] = &[2, 5, 29, 37];
const BASIC_CONSTRAINTS: &[u64] = &[2, 5, 29, 19];
const CLIENT_AUTH: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 3, 2];

fn invalid(what: &str) -> Error {
    Error::Invalid(what.to_owned())
}

fn write_name(w: DERWriter<'_>, subject: &Subject) {
    w.write_sequence(|w| {
        let mut attribute = |oid: &[u64], value: &str| {
            w.next().write_set(|w| {
                w.next().write_sequence(|w| {
                    w.next().write_oid(&ObjectIdentifier::from_slice(oid));
                    w.next().write_utf8_string(value);
                });
            });
        };
        for group in &subject.groups {
            attribute(ORGANIZATION, group);
        }
        attribute(COMMON_NAME, &subject.user);
    });
}

fn write_ecdsa_sha256(w: DERWriter<'_>) {
    w.write_sequence(|w| {
        w.next()
            .write_oid(&ObjectIdentifier::from_slice(ECDSA_SHA256))
    });
}

/// `to_be_signed`, signed by `key`, as a certificate or request: the data, the algorithm and
/// the signature.
fn signed(to_be_signed: Vec<u8>, key: &KeyPair) -> Result<Vec<u8>> {
    if key.algorithm() != &rcgen::PKCS_ECDSA_P256_SHA256 {
        return Err(invalid("only ECDSA P-256 keys sign client certificates"));
    }
    let signature = key.sign(&to_be_signed)?;
    Ok(yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_der(&to_be_signed);
            write_ecdsa_sha256(w.next());
            w.next().write_bitvec_bytes(&signature, signature.len() * 8);
        })
    }))
}

/// `der` as a PEM block of type `tag`.
pub fn pem(tag: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    format!(
        "-----BEGIN {tag}-----\n{}\n-----END {tag}-----\n",
        lines.join("\n")
    )
}

pub(crate) fn der_of_pem(text: &str, tag: &str) -> Result<Vec<u8>> {
    use base64::Engine as _;
    let begin = format!("-----BEGIN {tag}-----");
    let end = format!("-----END {tag}-----");
    let start = text
        .find(&begin)
        .ok_or_else(|| invalid(&format!("no PEM block of type {tag:?}")))?;
    let rest = &text[start + begin.len()..];
    let stop = rest
        .find(&end)
        .ok_or_else(|| invalid(&format!("the {tag} PEM block does not end")))?;
    let body: String = rest[..stop].split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| invalid(&format!("the {tag} PEM block is not base64")))
}

/// A PEM certificate signing request for `subject`, signed by `key` (ECDSA P-256), asking for
/// client authentication.
pub fn request(key: &KeyPair, subject: &Subject) -> Result<String> {
    let info = yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_u8(0);
            write_name(w.next(), subject);
            w.next().write_der(&key.subject_public_key_info());
            // No attributes: the signer decides the usages from the API object.
            w.next()
                .write_tagged_implicit(Tag::context(0), |w| w.write_set(|_| {}));
        })
    });
    Ok(pem("CERTIFICATE REQUEST", &signed(info, key)?))
}

/// A verified request: who it names, and its public key (DER `SubjectPublicKeyInfo`).
pub struct Request {
    pub subject: Subject,
    pub public_key: Vec<u8>,
}

/// Reads a PEM certificate signing request and checks its signature.
pub fn read_request(text: &str) -> Result<Request> {
    let der = der_of_pem(text, "CERTIFICATE REQUEST")?;
    let (_, csr) = x509_parser::certification_request::X509CertificationRequest::from_der(&der)
        .map_err(|_| invalid("the certificate signing request is not valid DER"))?;
    csr.verify_signature()
        .map_err(|_| invalid("the certificate signing request's signature does not verify"))?;
    let info = &csr.certification_request_info;
    Ok(Request {
        subject: subject_of_name(&info.subject)?,
        public_key: info.subject_pki.raw.to_vec(),
    })
}

fn subject_of_name(name: &x509_parser::x509::X509Name<'_>) -> Result<Subject> {
    let text = |attribute: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        attribute
            .as_str()
            .map(str::to_owned)
            .map_err(|_| invalid("a subject attribute is not text"))
    };
    let user = match name.iter_common_name().next() {
        Some(cn) => text(cn)?,
        None => String::new(),
    };
    let groups = name
        .iter_organization()
        .map(text)
        .collect::<Result<Vec<_>>>()?;
    Ok(Subject { user, groups })
}

/// Who a DER client certificate names (`None` when it cannot be read). The certificate's chain
/// is checked by the TLS handshake, not here.
pub fn subject_of(certificate: &[u8]) -> Option<Subject> {
    let (_, cert) = X509Certificate::from_der(certificate).ok()?;
    subject_of_name(cert.subject()).ok()
}

impl CertificateAuthority {
    /// Signs a client certificate for `subject` and `public_key`, valid from five minutes ago
    /// (clocks differ, as upstream's signer backdates) until `not_after`.
    pub fn sign_client(
        &self,
        subject: &Subject,
        public_key: &[u8],
        not_after: OffsetDateTime,
    ) -> Result<String> {
        let ca = der_of_pem(&self.cert_pem, "CERTIFICATE")?;
        let (_, ca_cert) = X509Certificate::from_der(&ca)
            .map_err(|_| invalid("the CA certificate is not valid DER"))?;
        let issuer = ca_cert.tbs_certificate.subject.as_raw();
        let not_before = OffsetDateTime::now_utc() - time::Duration::minutes(5);
        // UTCTime holds whole seconds.
        let whole = |t: OffsetDateTime| t.replace_nanosecond(0).ok();
        let (Some(from), Some(until)) = (
            whole(not_before).and_then(UTCTime::from_datetime_opt),
            whole(not_after).and_then(UTCTime::from_datetime_opt),
        ) else {
            return Err(invalid("the certificate's validity is out of range"));
        };
        let mut serial = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut serial);
        serial[0] &= 0x7f;
        let extension = |w: DERWriter<'_>, oid: &[u64], critical: bool, value: Vec<u8>| {
            w.write_sequence(|w| {
                w.next().write_oid(&ObjectIdentifier::from_slice(oid));
                if critical {
                    w.next().write_bool(true);
                }
                w.next().write_bytes(&value);
            });
        };
        let tbs = yasna::construct_der(|w| {
            w.write_sequence(|w| {
                w.next().write_tagged(Tag::context(0), |w| w.write_u8(2));
                w.next().write_bigint_bytes(&serial, true);
                write_ecdsa_sha256(w.next());
                w.next().write_der(issuer);
                w.next().write_sequence(|w| {
                    w.next().write_utctime(&from);
                    w.next().write_utctime(&until);
                });
                write_name(w.next(), subject);
                w.next().write_der(public_key);
                w.next().write_tagged(Tag::context(3), |w| {
                    w.write_sequence(|w| {
                        // Digital signature and key encipherment.
                        let usage = yasna::construct_der(|w| w.write_bitvec_bytes(&[0xa0], 3));
                        extension(w.next(), KEY_USAGE, true, usage);
                        let extended = yasna::construct_der(|w| {
                            w.write_sequence(|w| {
                                w.next()
                                    .write_oid(&ObjectIdentifier::from_slice(CLIENT_AUTH));
                            })
                        });
                        extension(w.next(), EXTENDED_KEY_USAGE, false, extended);
                        let not_ca = yasna::construct_der(|w| w.write_sequence(|_| {}));
                        extension(w.next(), BASIC_CONSTRAINTS, true, not_ca);
                    });
                });
            })
        });
        Ok(pem("CERTIFICATE", &signed(tbs, &self.key)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_request_becomes_a_certificate_naming_user_and_groups() {
        let ca = CertificateAuthority::generate("test-ca").unwrap();
        let key = KeyPair::generate().unwrap();
        let subject = Subject {
            user: "alice".into(),
            groups: vec!["devs".into(), "oncall".into()],
        };
        let csr = request(&key, &subject).unwrap();
        let read = read_request(&csr).unwrap();
        assert_eq!(read.subject, subject);
        let cert = ca
            .sign_client(
                &read.subject,
                &read.public_key,
                OffsetDateTime::now_utc() + time::Duration::hours(1),
            )
            .unwrap();
        let der = der_of_pem(&cert, "CERTIFICATE").unwrap();
        assert_eq!(subject_of(&der), Some(subject));
        // The certificate verifies against the CA as rustls checks a client's.
        let roots = {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(der_of_pem(ca.cert_pem(), "CERTIFICATE").unwrap().into())
                .unwrap();
            std::sync::Arc::new(roots)
        };
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(roots, provider)
            .build()
            .unwrap();
        verifier
            .verify_client_cert(&der.into(), &[], rustls::pki_types::UnixTime::now())
            .unwrap();
    }

    #[test]
    fn a_tampered_request_is_refused() {
        let key = KeyPair::generate().unwrap();
        let csr = request(
            &key,
            &Subject {
                user: "bob".into(),
                groups: vec![],
            },
        )
        .unwrap();
        let mut der = der_of_pem(&csr, "CERTIFICATE REQUEST").unwrap();
        let at = der.windows(3).position(|w| w == b"bob").unwrap();
        der[at] = b'r';
        let tampered = pem("CERTIFICATE REQUEST", &der);
        assert!(read_request(&tampered).is_err());
        assert!(read_request("not pem").is_err());
    }
}
