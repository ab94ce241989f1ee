//! The etcd that hosted clusters with `storage.backend: etcd` share, as Kamaji's DataStores:
//! each cluster's API server keeps its keys under a prefix of its own,
//! `<hosted prefix>/<namespace>/<name>/<uid>` (its objects under `<prefix>/registry/...`, its
//! shared credentials at the key `<prefix>` itself). The UID makes a cluster created again under
//! the same name start empty; the fixed depth makes two clusters' prefixes never nest (a server
//! on `/a` would see the keys of one on `/a/b`). Pure choices here, and the one write the hub
//! makes itself: erasing a deleted cluster's keys.

use std::path::PathBuf;
use std::time::Duration;

use atoll_apiserver::storage::etcd::{EtcdOptions, MAX_PREFIX_LEN, check_prefix};

/// The hosted prefix when none is given (`hub-controller`; `atoll up --storage etcd` takes its
/// own `--etcd-prefix` followed by `-hosted`).
pub const DEFAULT_PREFIX: &str = "/atoll-hosted";

/// The longest namespace, name (DNS labels) and UID (a UUID) a cluster's prefix adds, with their
/// slashes.
const CLUSTER_SEGMENTS_LEN: usize = 1 + 63 + 1 + 63 + 1 + 36;

/// The longest hosted prefix: each cluster's prefix must stay within the API server's limit.
pub const MAX_HOSTED_PREFIX_LEN: usize = MAX_PREFIX_LEN - CLUSTER_SEGMENTS_LEN;

/// Where kube-apiserver keeps its keys by default (its `--etcd-prefix`): a hosted prefix must
/// not nest with it, for the hub cluster's own etcd may be the one given.
pub const KUBE_APISERVER_PREFIX: &str = "/registry";

/// The etcd this hub keeps etcd-backed hosted clusters in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedEtcd {
    /// Client URLs.
    pub endpoints: Vec<String>,
    /// The hosted prefix: every cluster's prefix is under it.
    pub prefix: String,
    /// The CA of etcd's serving certificates (PEM), for `https://` endpoints.
    pub ca_file: Option<PathBuf>,
    /// A client certificate (PEM), with its key.
    pub cert_file: Option<PathBuf>,
    /// The key of the client certificate (PEM).
    pub key_file: Option<PathBuf>,
    /// How long one call to etcd may take.
    pub timeout: Duration,
}

impl HostedEtcd {
    /// An etcd at `endpoints` with hosted prefix `prefix`, without TLS files.
    pub fn new(endpoints: Vec<String>, prefix: impl Into<String>) -> Self {
        Self {
            endpoints,
            prefix: prefix.into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            timeout: Duration::from_secs(10),
        }
    }

    /// The options of an API server (or of the hub erasing it) on the cluster prefix `prefix`.
    pub fn options(&self, prefix: &str) -> EtcdOptions {
        let mut options = EtcdOptions::new(self.endpoints.clone(), prefix);
        options.ca_file = self.ca_file.clone();
        options.cert_file = self.cert_file.clone();
        options.key_file = self.key_file.clone();
        options.timeout = self.timeout;
        options
    }

    /// `etcd at <endpoints> under <prefix>`, for messages.
    pub fn describe(&self, prefix: &str) -> String {
        describe(&self.endpoints, prefix)
    }
}

/// `etcd at <endpoints> under <prefix>`, for messages.
pub fn describe(endpoints: &[String], prefix: &str) -> String {
    format!("etcd at {} under {prefix}", endpoints.join(","))
}

/// Whether two prefixes nest: an API server on one would see keys of the other (or both are
/// the same).
pub fn nest(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}/")) || b.starts_with(&format!("{a}/"))
}

/// Checks a hosted prefix (`--hosted-etcd-prefix`): a valid etcd prefix, short enough for its
/// clusters' prefixes, and apart from kube-apiserver's.
pub fn check_hosted_prefix(prefix: &str) -> Result<(), String> {
    check_prefix(prefix).map_err(|e| e.to_string())?;
    if prefix.len() > MAX_HOSTED_PREFIX_LEN {
        return Err(format!(
            "the hosted etcd prefix is at most {MAX_HOSTED_PREFIX_LEN} bytes, so that each cluster's prefix (adding its namespace, name and UID) stays within {MAX_PREFIX_LEN}"
        ));
    }
    if nest(prefix, KUBE_APISERVER_PREFIX) {
        return Err(format!(
            "the hosted etcd prefix {prefix:?} nests with {KUBE_APISERVER_PREFIX}, where kube-apiserver keeps its keys; choose another, such as {DEFAULT_PREFIX}"
        ));
    }
    Ok(())
}

/// The prefix of HostedCluster `namespace/name` with UID `uid` under hosted prefix `root`, or
/// why there can be none (each part must be one non-empty path segment).
pub fn cluster_prefix(
    root: &str,
    namespace: &str,
    name: &str,
    uid: &str,
) -> Result<String, String> {
    for (what, part) in [("namespace", namespace), ("name", name), ("UID", uid)] {
        let plain = !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
        if !plain || part == "." || part == ".." {
            return Err(format!(
                "the cluster's {what} {part:?} cannot be a segment of its etcd prefix"
            ));
        }
    }
    let prefix = format!("{root}/{namespace}/{name}/{uid}");
    check_prefix(&prefix).map_err(|e| e.to_string())?;
    Ok(prefix)
}

/// Why the hub could not erase a cluster's keys.
#[derive(Debug, thiserror::Error)]
pub enum EraseError {
    #[error("this hub was built without etcd storage (the etcd feature)")]
    NotBuilt,
    #[error("cannot erase the keys of {place}")]
    Etcd {
        place: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Deletes every key of the API server on `options.prefix`: those under `<prefix>/` and the key
/// `<prefix>` itself, in one transaction. Returns how many keys went.
pub async fn erase(options: &EtcdOptions) -> Result<i64, EraseError> {
    if !BUILT_WITH_ETCD {
        return Err(EraseError::NotBuilt);
    }
    atoll_apiserver::storage::etcd::erase(options)
        .await
        .map_err(|source| EraseError::Etcd {
            place: describe(&options.endpoints, &options.prefix),
            source: Box::new(source),
        })
}

/// Whether this hub was built with etcd storage.
pub const BUILT_WITH_ETCD: bool = cfg!(feature = "etcd");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cluster_has_its_own_prefix_and_none_nest() {
        let a = cluster_prefix("/atoll-hosted", "clusters", "c1", "0b5c-11").unwrap();
        assert_eq!(a, "/atoll-hosted/clusters/c1/0b5c-11");
        // The same name created again: another UID, another prefix.
        let again = cluster_prefix("/atoll-hosted", "clusters", "c1", "77aa-02").unwrap();
        assert_ne!(a, again);
        assert!(!nest(&a, &again));
        // Names that prefix each other do not nest: prefixes have one depth.
        let longer = cluster_prefix("/atoll-hosted", "clusters", "c1-b", "0b5c-11").unwrap();
        assert!(!nest(&a, &longer));
        let other_namespace = cluster_prefix("/atoll-hosted", "c1", "0b5c-11", "x").unwrap();
        assert!(!nest(&a, &other_namespace));
        for (namespace, name, uid) in [
            ("clusters", "c1", ""),
            ("clusters", "a/b", "u"),
            ("clusters", "..", "u"),
            ("", "c1", "u"),
            ("clusters", "c1", "u u"),
        ] {
            let error = cluster_prefix("/h", namespace, name, uid).unwrap_err();
            assert!(error.contains("segment of its etcd prefix"), "{error}");
        }
    }

    #[test]
    fn the_longest_cluster_prefix_fits() {
        let root = format!("/{}", "h".repeat(MAX_HOSTED_PREFIX_LEN - 1));
        check_hosted_prefix(&root).unwrap();
        let longest = cluster_prefix(
            &root,
            &"n".repeat(63),
            &"c".repeat(63),
            "123e4567-e89b-12d3-a456-426614174000",
        )
        .unwrap();
        assert_eq!(longest.len(), MAX_PREFIX_LEN);
        let error = check_hosted_prefix(&format!("{root}h")).unwrap_err();
        assert!(error.contains("at most"), "{error}");
    }

    #[test]
    fn prefixes_nest_only_at_a_slash() {
        assert!(nest("/atoll", "/atoll"));
        assert!(nest("/atoll", "/atoll/hosted"));
        assert!(nest("/atoll/hosted", "/atoll"));
        assert!(!nest("/atoll", "/atoll-hosted"));
        assert!(!nest("/a", "/ab"));
    }

    #[test]
    fn bad_hosted_prefixes_say_why() {
        check_hosted_prefix(DEFAULT_PREFIX).unwrap();
        for bad in ["atoll", "/atoll/", "/a b", ""] {
            let error = check_hosted_prefix(bad).unwrap_err();
            assert!(error.contains("must start with '/'"), "{bad}: {error}");
        }
        for near_kube in ["/registry", "/registry/atoll", "/"] {
            let error = check_hosted_prefix(near_kube).unwrap_err();
            assert!(
                error.contains("kube-apiserver") || error.contains("must start with"),
                "{near_kube}: {error}"
            );
        }
    }

    #[test]
    fn options_carry_the_cluster_prefix_and_the_hubs_tls() {
        let mut etcd = HostedEtcd::new(vec!["https://e1:2379".into()], DEFAULT_PREFIX);
        etcd.ca_file = Some("ca.pem".into());
        let options = etcd.options("/atoll-hosted/clusters/c1/u1");
        assert_eq!(options.prefix, "/atoll-hosted/clusters/c1/u1");
        assert_eq!(options.ca_file, etcd.ca_file);
        assert_eq!(
            etcd.describe(&options.prefix),
            "etcd at https://e1:2379 under /atoll-hosted/clusters/c1/u1"
        );
    }
}
