//! Namespace lifecycle: a terminating namespace is emptied, then its `kubernetes` finalizer is
//! cleared and it goes away, as kube-controller-manager's namespace controller does. Without this
//! `kubectl delete ns` would wait forever.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::watch;

use super::actor::Actor;
use super::store::{DeleteOptions, Deleted, ListOptions, Store, WriteOptions};
use crate::error::{Error, Result};

/// How long a terminating namespace that waits on finalizers waits after a write before it is
/// looked at again (so that a burst of writes costs one look).
const SETTLE: Duration = Duration::from_secs(1);
/// How often namespaces are looked at with nothing to wake the controller, in case a wake-up
/// was missed.
const RESYNC: Duration = Duration::from_secs(30);

/// What the controller does after a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Next {
    /// Nothing terminates: sleep until a namespace starts terminating.
    Sleep,
    /// A namespace waits for finalizers of what it holds: look again after a write.
    AfterWrite,
    /// The pass deleted something or lost a race: look again shortly.
    Soon,
}

/// Runs until `shutdown` turns true. Idle, it sleeps until a namespace starts terminating; while
/// one waits on finalizers of what it holds, it looks again after writes (which is how
/// finalizers go), never on a short timer.
pub async fn run(store: Arc<Store>, mut shutdown: watch::Receiver<bool>) {
    let mut changes = store.changes();
    loop {
        if let Some(changes) = changes.as_mut() {
            changes.borrow_and_update();
        }
        let next = match reconcile_all(&store).await {
            Ok(next) => next,
            Err(err) => {
                tracing::warn!(error = %err, "namespace cleanup failed; retrying");
                Next::Soon
            }
        };
        let wait = async {
            match (next, changes.as_mut()) {
                (Next::AfterWrite, Some(changes)) => {
                    tokio::select! {
                        _ = changes.changed() => tokio::time::sleep(SETTLE).await,
                        _ = tokio::time::sleep(RESYNC) => {}
                    }
                }
                (Next::AfterWrite | Next::Soon, _) => tokio::time::sleep(SETTLE).await,
                (Next::Sleep, _) => {
                    tokio::select! {
                        _ = store.namespace_deleted() => {}
                        _ = tokio::time::sleep(RESYNC) => {}
                    }
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

/// Advances every terminating namespace; one namespace's failure (logged) does not hold the
/// others, and is tried again soon.
async fn reconcile_all(store: &Store) -> Result<Next> {
    let catalog = store.registry().catalog();
    let Some(namespaces) = catalog.lookup("", "v1", "namespaces") else {
        return Ok(Next::Sleep);
    };
    let list = store
        .list(&namespaces, None, &ListOptions::default())
        .await?;
    let mut next = Next::Sleep;
    for ns in list.items {
        if ns["metadata"].get("deletionTimestamp").is_none() {
            continue;
        }
        let name = ns["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match finalize(store, &namespaces, &name, ns).await {
            Ok(step) => next = next.max(step),
            Err(error) => {
                tracing::warn!(namespace = %name, %error, "cannot finish deleting the namespace; retrying");
                next = Next::Soon;
            }
        }
    }
    Ok(next)
}

/// Empties a terminating namespace, and once it is empty drops its `kubernetes` finalizer (the
/// store deletes the namespace once no finalizer remains).
async fn finalize(
    store: &Store,
    namespaces: &super::ResourceType,
    name: &str,
    ns: serde_json::Value,
) -> Result<Next> {
    let emptied = empty_namespace(store, name).await?;
    if emptied != Next::Sleep {
        return Ok(emptied);
    }
    let mut done = ns;
    done["spec"]["finalizers"] = json!([]);
    let options = WriteOptions {
        field_manager: "atoll-namespace-controller".into(),
        actor: Some(Actor::NamespaceController),
        ..Default::default()
    };
    match store
        .update(namespaces, None, name, Some("finalize"), done, &options)
        .await
    {
        Ok(_) | Err(Error::NotFound(_)) => {
            tracing::info!(namespace = %name, "namespace deleted");
            Ok(Next::Sleep)
        }
        Err(Error::Conflict { .. }) => Ok(Next::Soon),
        Err(err) => Err(err),
    }
}

/// Deletes what a namespace holds: `Sleep` when nothing is left, `Soon` when something was
/// deleted now, `AfterWrite` when only objects waiting on their finalizers remain. An object
/// that cannot be deleted (a policy refuses it) does not hold the others; the first such error
/// is returned once all were tried.
async fn empty_namespace(store: &Store, ns: &str) -> Result<Next> {
    let catalog = store.registry().catalog();
    let mut next = Next::Sleep;
    let mut failed = None;
    let options = DeleteOptions {
        actor: Some(Actor::NamespaceController),
        ..Default::default()
    };
    for rt in catalog.namespaced_storage_types() {
        let list = store.list(&rt, Some(ns), &ListOptions::default()).await?;
        for item in list.items {
            if item["metadata"].get("deletionTimestamp").is_some() {
                next = next.max(Next::AfterWrite);
                continue;
            }
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            match store.delete(&rt, Some(ns), name, &options).await {
                Ok(Deleted::Gone(_)) | Err(Error::NotFound(_)) => next = Next::Soon,
                Ok(Deleted::Pending(_)) => next = next.max(Next::AfterWrite),
                Err(err) => failed = failed.or(Some(err)),
            }
        }
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(next),
    }
}
