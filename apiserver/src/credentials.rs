//! The credential files of a data directory: the cluster CA (`ca.crt`, `ca.key`), the token file
//! and the service-account signing key. Each server makes its own at its first start; the servers
//! of one etcd prefix (replicas of one API server, or a hosted cluster served again elsewhere)
//! share one set instead, so that a kubeconfig, a client certificate or a service-account token
//! of one is valid on every other.
//!
//! The first server on a prefix stores its files in etcd under the key that is the prefix itself
//! (outside every object's key); every later one takes those in place of its own. Kubernetes
//! keeps its CA out of etcd; atoll's embedded servers have no other place every replica reaches,
//! and what etcd holds (every Secret) needs etcd's access control anyway.

use std::collections::BTreeMap;
use std::path::Path;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::{pki, storage};

/// The files of the cluster CA: `ca.crt` and `ca.key`.
pub const CA_STEM: &str = "ca";
/// The common name of the cluster CA a server makes.
pub const CA_NAME: &str = "atoll-apiserver-ca";
/// The credential files, in the order backups carry them.
pub const FILES: &[&str] = &[
    "ca.crt",
    "ca.key",
    crate::auth::TOKEN_FILE,
    crate::auth::SIGNING_KEY_FILE,
];
/// The largest shared record a server accepts from etcd.
const MAX_SHARED_BYTES: usize = 256 * 1024;
/// The format of the shared record this server writes and reads.
const FORMAT: u32 = 1;

/// The credentials as etcd holds them.
#[derive(Serialize, Deserialize, Debug, PartialEq, Eq)]
struct Shared {
    format: u32,
    /// File name to contents.
    files: BTreeMap<String, String>,
}

/// Why the credentials could not be shared.
#[derive(Debug, thiserror::Error)]
pub enum ShareError {
    #[error("cannot read or write the credential file {path}")]
    File {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the shared credentials in etcd under {prefix} are not ones this atoll reads ({reason}); another program wrote that key, or a newer atoll"
    )]
    Foreign { prefix: String, reason: String },
}

/// Makes this server's credential files those of every server on `backend`'s prefix: stores its
/// own (made now on a first start) if it is the first, else writes the stored ones over its own.
pub async fn share(
    dir: &Path,
    prefix: &str,
    backend: &storage::etcd::EtcdBackend,
) -> Result<(), crate::Error> {
    pki::CertificateAuthority::load_or_create(dir, CA_STEM, CA_NAME)?;
    crate::auth::Authenticator::load_or_create(dir)?;
    let local = read(dir)?;
    let record = Shared {
        format: FORMAT,
        files: local.clone(),
    };
    let value = serde_json::to_vec(&record).expect("a map of strings serializes");
    let stored = backend.share(Bytes::from(value)).await?;
    let shared = decode(&stored).map_err(|reason| ShareError::Foreign {
        prefix: prefix.to_owned(),
        reason,
    })?;
    if shared.files == local {
        return Ok(());
    }
    for (name, contents) in &shared.files {
        if local.get(name) != Some(contents) {
            let path = dir.join(name);
            pki::write_private(&path, contents.as_bytes())?;
        }
    }
    tracing::info!(
        prefix,
        "took the CA, tokens and signing key of the API servers already on this etcd prefix"
    );
    Ok(())
}

/// The credential files of `dir`, by name.
fn read(dir: &Path) -> Result<BTreeMap<String, String>, ShareError> {
    FILES
        .iter()
        .map(|name| {
            let path = dir.join(name);
            std::fs::read_to_string(&path)
                .map(|contents| ((*name).to_owned(), contents))
                .map_err(|source| ShareError::File {
                    path: path.display().to_string(),
                    source,
                })
        })
        .collect()
}

/// The shared record in `bytes`, checked: this format, bounded, every file and no other.
fn decode(bytes: &[u8]) -> Result<Shared, String> {
    if bytes.len() > MAX_SHARED_BYTES {
        return Err(format!(
            "{} bytes, more than {MAX_SHARED_BYTES}",
            bytes.len()
        ));
    }
    let shared: Shared = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if shared.format != FORMAT {
        return Err(format!(
            "format {}, this atoll reads {FORMAT}",
            shared.format
        ));
    }
    let names: Vec<&str> = shared.files.keys().map(String::as_str).collect();
    let mut wanted = FILES.to_vec();
    wanted.sort_unstable();
    if names != wanted {
        return Err(format!(
            "files {}, wanted {}",
            names.join(", "),
            wanted.join(", ")
        ));
    }
    Ok(shared)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(files: &[&str]) -> Vec<u8> {
        let shared = Shared {
            format: FORMAT,
            files: files
                .iter()
                .map(|n| ((*n).to_owned(), format!("contents of {n}")))
                .collect(),
        };
        serde_json::to_vec(&shared).unwrap()
    }

    #[test]
    fn a_record_must_hold_every_file_and_no_other_in_this_format() {
        assert!(decode(&record(FILES)).is_ok());
        let missing = decode(&record(&FILES[..3])).unwrap_err();
        assert!(missing.contains("wanted"), "{missing}");
        let mut extra = FILES.to_vec();
        extra.push("other");
        assert!(decode(&record(&extra)).is_err());
        let newer = serde_json::to_vec(&serde_json::json!({"format": 2, "files": {}})).unwrap();
        assert_eq!(decode(&newer).unwrap_err(), "format 2, this atoll reads 1");
        assert!(decode(b"not json").is_err());
        let huge = vec![b' '; MAX_SHARED_BYTES + 1];
        assert!(decode(&huge).unwrap_err().contains("more than"));
    }

    /// Two servers on one prefix, each with a data directory of its own, serve with one CA and
    /// one admin token; a server on another prefix has its own; the shared record is no object.
    #[cfg(feature = "etcd")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn servers_on_one_etcd_prefix_share_their_credentials() {
        let check = async {
            let cluster = storage::etcd::cluster::EtcdCluster::start(1).await;
            let dir = tempfile::tempdir().unwrap();
            let start = |name: &str, prefix: &str| {
                let mut config =
                    crate::Config::new(dir.path().join(name), "127.0.0.1:0".parse().unwrap());
                config.storage = crate::StorageKind::Etcd;
                config.etcd = Some(storage::etcd::EtcdOptions::new(cluster.endpoints(), prefix));
                crate::Server::start(config)
            };
            let one = start("one", "/hub").await.unwrap();
            let two = start("two", "/hub").await.unwrap();
            let other = start("other", "/other").await.unwrap();
            assert_eq!(one.ca_pem(), two.ca_pem());
            assert_eq!(one.admin_token(), two.admin_token());
            assert_ne!(one.ca_pem(), other.ca_pem());
            assert_ne!(one.admin_token(), other.admin_token());
            for file in FILES {
                let read = |name: &str| std::fs::read(dir.path().join(name).join(file)).unwrap();
                assert_eq!(read("one"), read("two"), "{file}");
            }
            let objects = one.backend.usage().objects;
            let listed = one
                .backend
                .list(storage::ListOptions::default())
                .await
                .unwrap()
                .items;
            assert_eq!(objects, listed.len() as u64);
            assert!(listed.iter().all(|kv| kv.key.starts_with("/registry/")));
            // A replica whose data directory was lost takes them again.
            two.shutdown().await;
            std::fs::remove_dir_all(dir.path().join("two")).unwrap();
            let again = start("two", "/hub").await.unwrap();
            assert_eq!(again.ca_pem(), one.ca_pem());
            for server in [one, again, other] {
                server.shutdown().await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(120), check)
            .await
            .unwrap();
    }

    #[test]
    fn the_files_of_a_new_data_directory_are_read_by_name() {
        let dir = tempfile::tempdir().unwrap();
        pki::CertificateAuthority::load_or_create(dir.path(), CA_STEM, CA_NAME).unwrap();
        crate::auth::Authenticator::load_or_create(dir.path()).unwrap();
        let files = read(dir.path()).unwrap();
        assert_eq!(files.len(), FILES.len());
        assert!(files["ca.crt"].starts_with("-----BEGIN CERTIFICATE-----"));
        std::fs::remove_file(dir.path().join("sa.key")).unwrap();
        let error = read(dir.path()).unwrap_err().to_string();
        assert!(error.contains("sa.key"), "{error}");
    }
}
