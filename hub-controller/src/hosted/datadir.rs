//! The data directories of hosted control planes: `<root>/<namespace>/<name>/`, each the data
//! directory of one atoll API server (database, CA, tokens, admin kubeconfig) plus the hub's own
//! `hosted.json`: the UID of the HostedCluster it belongs to, what cannot change (mode and
//! storage, and for a cluster on etcd its key prefix), the port once chosen, and the join secret
//! of its agent.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use atoll_api::hosted::{HostedMode, StorageBackend};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

use super::plan::Provisioned;

/// The hub's file in each data directory.
pub const FILE: &str = "hosted.json";

/// What the hub keeps about one control plane, beside its data.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Saved {
    /// The HostedCluster this directory belongs to.
    pub uid: String,
    pub mode: HostedMode,
    pub storage: StorageBackend,
    /// The port the API server serves on, once chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// For a cluster on etcd: the key prefix its data is under (chosen at its first start, and
    /// kept even if the hub's hosted prefix changes later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_prefix: Option<String>,
    /// The secret the cluster's agent presents when it joins (the hub holds only its hash).
    pub join_secret: String,
}

impl Saved {
    /// A new record for a first start.
    pub fn new(uid: &str, mode: HostedMode, storage: StorageBackend, port: Option<u16>) -> Self {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let mut rng = rand::rng();
        Self {
            uid: uid.to_owned(),
            mode,
            storage,
            port,
            etcd_prefix: None,
            join_secret: (0..32)
                .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
                .collect(),
        }
    }

    /// The same record, keeping its data on etcd under `prefix` (`None`: not on etcd).
    pub fn with_etcd_prefix(mut self, prefix: Option<String>) -> Self {
        self.etcd_prefix = prefix;
        self
    }

    /// What cannot change.
    pub fn provisioned(&self) -> Provisioned {
        Provisioned {
            mode: self.mode,
            storage: self.storage,
        }
    }
}

/// Where the data directories live.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The data directory of HostedCluster `namespace/name`.
    pub fn dir(&self, namespace: &str, name: &str) -> PathBuf {
        self.root.join(namespace).join(name)
    }

    /// Every data directory there is, with what its `hosted.json` says (`None` when it has none
    /// or it cannot be read).
    pub fn all(&self) -> Vec<(PathBuf, Option<Saved>)> {
        let mut out = Vec::new();
        for namespace in read_dirs(&self.root) {
            for dir in read_dirs(&namespace) {
                let saved = load(&dir).ok().flatten();
                out.push((dir, saved));
            }
        }
        out
    }

    /// Removes the data directories whose HostedCluster is gone (`live` holds the UIDs that
    /// exist): what a hub stopped mid-deletion left behind. Returns what it removed.
    pub fn sweep(&self, live: &HashSet<String>) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for (dir, saved) in self.all() {
            let orphan = match &saved {
                Some(s) => !live.contains(&s.uid),
                // A directory without the hub's file was never started: nothing in it to keep.
                None => true,
            };
            if orphan {
                match remove(&dir) {
                    Ok(()) => removed.push(dir),
                    Err(error) => {
                        tracing::warn!(dir = %dir.display(), %error, "cannot remove an orphaned hosted cluster's data")
                    }
                }
            }
        }
        removed
    }
}

fn read_dirs(path: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(path) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

/// Reads `hosted.json`; `None` when the directory or the file does not exist.
pub fn load(dir: &Path) -> std::io::Result<Option<Saved>> {
    match std::fs::read(dir.join(FILE)) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes `hosted.json` (mode 0600), replacing it atomically.
pub fn save(dir: &Path, saved: &Saved) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(saved).map_err(std::io::Error::other)?;
    let temporary = dir.join(format!("{FILE}.tmp"));
    atoll_pki::write_private(&temporary, &bytes).map_err(std::io::Error::other)?;
    std::fs::rename(&temporary, dir.join(FILE))
}

/// Makes the data directory ready for `fresh`'s cluster: creates it (mode 0700), keeps what a
/// directory of the same HostedCluster holds, and clears one a deleted namesake left behind.
/// Returns what the directory now records.
pub fn prepare(dir: &Path, fresh: Saved) -> std::io::Result<Saved> {
    if let Some(saved) = load(dir)? {
        if saved.uid == fresh.uid {
            return Ok(saved);
        }
        tracing::info!(dir = %dir.display(), "clearing the data a deleted hosted cluster of the same name left");
        remove(dir)?;
    }
    create_private_dir(dir)?;
    save(dir, &fresh)?;
    Ok(fresh)
}

/// Creates a directory and its missing parents, readable by the hub's user only.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Deletes a data directory and everything in it; one that does not exist is fine.
pub fn remove(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => {
            // The namespace's folder goes with its last cluster.
            if let Some(parent) = dir.parent() {
                let _ = std::fs::remove_dir(parent);
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_kept_for_its_cluster_and_cleared_for_a_namesake() {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path());
        let dir = layout.dir("clusters", "c1");
        let first = prepare(
            &dir,
            Saved::new("uid-1", HostedMode::Embedded, StorageBackend::Sqlite, None),
        )
        .unwrap();
        std::fs::write(dir.join("state.db"), b"data").unwrap();
        let mut with_port = first.clone();
        with_port.port = Some(7001);
        save(&dir, &with_port).unwrap();
        // The same cluster again (a hub restart): everything stays, the join secret too.
        let again = prepare(
            &dir,
            Saved::new("uid-1", HostedMode::Process, StorageBackend::Memory, None),
        )
        .unwrap();
        assert_eq!(again, with_port);
        assert!(dir.join("state.db").exists());
        // A new cluster of the same name: the old data goes.
        let other = prepare(
            &dir,
            Saved::new("uid-2", HostedMode::Embedded, StorageBackend::Sqlite, None),
        )
        .unwrap();
        assert_eq!(other.uid, "uid-2");
        assert!(!dir.join("state.db").exists());
        assert_ne!(other.join_secret, first.join_secret);
    }

    #[test]
    fn the_etcd_prefix_is_recorded_and_older_records_read_without_one() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("c1");
        let fresh = Saved::new("uid-1", HostedMode::Embedded, StorageBackend::Etcd, None)
            .with_etcd_prefix(Some("/atoll-hosted/clusters/c1/uid-1".into()));
        prepare(&dir, fresh.clone()).unwrap();
        assert_eq!(load(&dir).unwrap(), Some(fresh));
        std::fs::write(
            dir.join(FILE),
            r#"{"uid":"u","mode":"Embedded","storage":"sqlite","joinSecret":"s"}"#,
        )
        .unwrap();
        assert_eq!(load(&dir).unwrap().unwrap().etcd_prefix, None);
    }

    #[test]
    fn sweeping_removes_only_the_data_of_clusters_that_are_gone() {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path());
        for (name, uid) in [("live", "u-live"), ("gone", "u-gone")] {
            prepare(
                &layout.dir("clusters", name),
                Saved::new(uid, HostedMode::Embedded, StorageBackend::Sqlite, None),
            )
            .unwrap();
        }
        std::fs::create_dir_all(layout.dir("team-a", "half-made")).unwrap();
        let live = HashSet::from(["u-live".to_owned()]);
        let removed = layout.sweep(&live);
        assert_eq!(removed.len(), 2, "{removed:?}");
        assert!(layout.dir("clusters", "live").exists());
        assert!(!layout.dir("clusters", "gone").exists());
        assert!(!root.path().join("team-a").exists());
    }
}
