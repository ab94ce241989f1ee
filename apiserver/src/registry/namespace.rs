//! Namespace lifecycle: a terminating namespace is emptied, then its `kubernetes` finalizer is
//! cleared and it goes away, as kube-controller-manager's namespace controller does. Without this
//! `kubectl delete ns` would wait forever.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::watch;

use super::store::{DeleteOptions, Deleted, ListOptions, Store, WriteOptions};
use crate::error::{Error, Result};

/// How often terminating namespaces are looked at again while some are waiting on finalizers.
const RESYNC: Duration = Duration::from_secs(1);

/// Runs until `shutdown` turns true.
pub async fn run(store: Arc<Store>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let pending = match reconcile_all(&store).await {
            Ok(pending) => pending,
            Err(err) => {
                tracing::warn!(error = %err, "namespace cleanup failed; retrying");
                true
            }
        };
        let wait = async {
            if pending {
                tokio::time::sleep(RESYNC).await
            } else {
                // Also look again now and then, in case a wake-up was missed.
                tokio::select! {
                    _ = store.namespace_deleted() => {}
                    _ = tokio::time::sleep(RESYNC * 30) => {}
                }
            }
        };
        tokio::select! {
            _ = wait => {}
            _ = shutdown.changed() => return,
        }
        if *shutdown.borrow() {
            return;
        }
    }
}

/// Advances every terminating namespace; true if some still wait.
async fn reconcile_all(store: &Store) -> Result<bool> {
    let catalog = store.registry().catalog();
    let Some(namespaces) = catalog.lookup("", "v1", "namespaces") else {
        return Ok(false);
    };
    let list = store
        .list(&namespaces, None, &ListOptions::default())
        .await?;
    let mut pending = false;
    for ns in list.items {
        if ns["metadata"].get("deletionTimestamp").is_none() {
            continue;
        }
        let name = ns["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !empty_namespace(store, &name).await? {
            pending = true;
            continue;
        }
        // Empty: drop the `kubernetes` finalizer; the store deletes the namespace once no
        // finalizer remains.
        let mut done = ns.clone();
        done["spec"]["finalizers"] = json!([]);
        let options = WriteOptions {
            field_manager: "atoll-namespace-controller".into(),
            ..Default::default()
        };
        match store
            .update(&namespaces, None, &name, Some("finalize"), done, &options)
            .await
        {
            Ok(_) | Err(Error::NotFound(_)) => {
                tracing::info!(namespace = %name, "namespace deleted");
            }
            Err(Error::Conflict { .. }) => pending = true,
            Err(err) => return Err(err),
        }
    }
    Ok(pending)
}

/// Deletes what a namespace holds; true when nothing is left.
async fn empty_namespace(store: &Store, ns: &str) -> Result<bool> {
    let catalog = store.registry().catalog();
    let mut empty = true;
    for rt in catalog.namespaced_storage_types() {
        let list = store.list(&rt, Some(ns), &ListOptions::default()).await?;
        for item in list.items {
            empty = false;
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            match store
                .delete(&rt, Some(ns), name, &DeleteOptions::default())
                .await
            {
                Ok(Deleted::Gone(_) | Deleted::Pending(_)) | Err(Error::NotFound(_)) => {}
                Err(err) => return Err(err),
            }
        }
    }
    Ok(empty)
}
