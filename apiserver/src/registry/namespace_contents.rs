//! What every active namespace holds on a real cluster before anyone writes to it: the
//! ServiceAccount `default` (kube-controller-manager's serviceaccount controller) and the
//! ConfigMap `kube-root-ca.crt` with the cluster's CA (its root-ca-certificate-publisher), both
//! put back when deleted, and the ConfigMap when edited.
//!
//! The controller follows a feed of the watch cache: a namespace created or changed, a
//! `default` ServiceAccount deleted, a `kube-root-ca.crt` ConfigMap changed or deleted wake it
//! for that namespace only (nothing else does). It looks at every namespace once at start, and
//! again when it fell behind.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use atoll_runtime::backoff::Retries;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::ResourceType;
use super::actor::Actor;
use super::store::{ListOptions, Store, WriteOptions};
use crate::error::{Error, Result};
use crate::storage::EventKind;
use crate::watch::{CachedEvent, Feed, Taken, next_pass};

/// The ConfigMap with the cluster's CA.
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";
/// The ServiceAccount every namespace has.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
const FIELD_MANAGER: &str = "atoll-namespace-contents";
/// How many namespaces are looked at at once: a burst of new namespaces (a fleet joining makes
/// one per cluster) has their writes stored in shared commits rather than one after another,
/// each waiting for its own.
const CONCURRENCY: usize = 16;

/// The controller's context.
struct Context {
    store: Arc<Store>,
    ca_pem: String,
}

/// Gives every namespace there is its contents, before the server serves (so a new server
/// holds them from its first request): the namespaces it failed for, or `None` when it could
/// not list them.
pub async fn settle(store: &Arc<Store>, ca_pem: &str) -> Option<BTreeSet<String>> {
    let ctx = Context {
        store: store.clone(),
        ca_pem: ca_pem.to_owned(),
    };
    ctx.settle().await
}

/// The events the controller follows: see [`disturbed`].
pub fn wants(event: &CachedEvent) -> bool {
    disturbed(event).is_some()
}

/// Runs until `shutdown` turns true, following `feed` (made with [`wants`] before the look
/// at every namespace that `settled` tells the outcome of).
pub async fn run(
    store: Arc<Store>,
    feed: Arc<Feed>,
    ca_pem: String,
    settled: Option<BTreeSet<String>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let ctx = Context { store, ca_pem };
    let mut listed = settled.is_some();
    // Namespaces whose last look failed (a write refused by an admission policy, say): looked
    // at again after each one's backoff, or at once when an event concerns it.
    let mut retries = Retries::default();
    for ns in settled.unwrap_or_default() {
        retries.failed(ns, Instant::now());
    }
    loop {
        if !listed {
            listed = ctx.settle_into(&mut retries).await;
        }
        match feed.take() {
            Taken::Events(events) => {
                let mut namespaces: BTreeSet<String> = events
                    .iter()
                    .filter_map(|e| disturbed(e).map(str::to_owned))
                    .collect();
                namespaces.extend(retries.due(Instant::now()));
                ctx.reconcile_each(namespaces, &mut retries).await;
            }
            // Fell behind: look at everything again.
            Taken::Lagged => listed = ctx.settle_into(&mut retries).await,
        }
        if !next_pass(&feed, !listed, &retries, &mut shutdown).await {
            return;
        }
    }
}

/// The namespace an event concerns, when it is a namespace's creation or change, the deletion
/// of a `default` ServiceAccount, or a change to a root CA ConfigMap.
fn disturbed(event: &CachedEvent) -> Option<&str> {
    let rest = event.key.strip_prefix("/registry/core/")?;
    let mut parts = rest.split('/');
    match (parts.next()?, parts.next()?, parts.next()) {
        ("namespaces", name, None) if event.kind != EventKind::Delete => Some(name),
        ("serviceaccounts", ns, Some(DEFAULT_SERVICE_ACCOUNT))
            if event.kind == EventKind::Delete =>
        {
            Some(ns)
        }
        ("configmaps", ns, Some(ROOT_CA_CONFIGMAP)) => Some(ns),
        _ => None,
    }
}

impl Context {
    /// Looks at every namespace: those it failed for, or `None` when it could not list them.
    async fn settle(&self) -> Option<BTreeSet<String>> {
        let mut retries = Retries::default();
        self.settle_into(&mut retries)
            .await
            .then(|| retries.failing().cloned().collect())
    }

    /// Looks at every namespace, counting its failures in `retries`; false when it could not
    /// list them.
    async fn settle_into(&self, retries: &mut Retries<String>) -> bool {
        match self.all_namespaces().await {
            Ok(all) => {
                self.reconcile_each(all, retries).await;
                true
            }
            Err(error) => {
                tracing::warn!(%error, "cannot list namespaces; retrying");
                false
            }
        }
    }

    /// Looks at each namespace, [`CONCURRENCY`] at once, counting its failure or success in
    /// `retries`.
    async fn reconcile_each(&self, namespaces: BTreeSet<String>, retries: &mut Retries<String>) {
        let mut looked = futures::stream::iter(namespaces)
            .map(|ns| async move {
                let outcome = self.reconcile(&ns).await;
                (ns, outcome)
            })
            .buffer_unordered(CONCURRENCY);
        while let Some((ns, outcome)) = looked.next().await {
            match outcome {
                Ok(()) => retries.succeeded(&ns),
                Err(error) => {
                    let (failures, wait) = retries.failed(ns.clone(), Instant::now());
                    tracing::warn!(namespace = %ns, %error, failures, retry_in = ?wait, "cannot give the namespace its service account and CA; retrying");
                }
            }
        }
    }

    fn resource(&self, plural: &str) -> Result<Arc<ResourceType>> {
        self.store
            .registry()
            .catalog()
            .lookup("", "v1", plural)
            .ok_or(Error::UnknownPath)
    }

    async fn all_namespaces(&self) -> Result<BTreeSet<String>> {
        let namespaces = self.resource("namespaces")?;
        let list = self
            .store
            .list(&namespaces, None, &ListOptions::default())
            .await?;
        Ok(list
            .items
            .iter()
            .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_owned))
            .collect())
    }

    /// Gives an active namespace its service account and CA ConfigMap, as they should be.
    async fn reconcile(&self, ns: &str) -> Result<()> {
        let namespaces = self.resource("namespaces")?;
        let namespace = match self.store.get(&namespaces, None, ns).await {
            Ok(namespace) => namespace,
            Err(Error::NotFound(_)) => return Ok(()),
            Err(error) => return Err(error),
        };
        if namespace["metadata"].get("deletionTimestamp").is_some() {
            return Ok(());
        }
        let options = |actor| WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            actor: Some(actor),
            ..Default::default()
        };
        let accounts = self.resource("serviceaccounts")?;
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": ns}});
        self.ensure(
            &accounts,
            ns,
            DEFAULT_SERVICE_ACCOUNT,
            account,
            None,
            &options(Actor::ServiceAccountController),
        )
        .await?;
        let configmaps = self.resource("configmaps")?;
        let data = json!({"ca.crt": self.ca_pem});
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": ROOT_CA_CONFIGMAP, "namespace": ns,
                "annotations": {"kubernetes.io/description": DESCRIPTION}},
            "data": data});
        self.ensure(
            &configmaps,
            ns,
            ROOT_CA_CONFIGMAP,
            configmap,
            Some(&data),
            &options(Actor::RootCaCertPublisher),
        )
        .await
    }

    /// Creates `object` when missing; with `data`, puts the stored object's data back to it.
    async fn ensure(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        object: Value,
        data: Option<&Value>,
        options: &WriteOptions,
    ) -> Result<()> {
        match self.store.get(rt, Some(ns), name).await {
            Ok(mut stored) => {
                let Some(data) = data.filter(|d| stored["data"] != **d) else {
                    return Ok(());
                };
                stored["data"] = data.clone();
                match self
                    .store
                    .update(rt, Some(ns), name, None, stored, options)
                    .await
                {
                    // A concurrent write wakes the controller again.
                    Ok(_) | Err(Error::Conflict { .. } | Error::NotFound(_)) => Ok(()),
                    Err(error) => Err(error),
                }
            }
            Err(Error::NotFound(_)) => {
                match self.store.create(rt, Some(ns), object, options).await {
                    Ok(_) => {
                        tracing::debug!(namespace = %ns, name, kind = %rt.kind, "created");
                        Ok(())
                    }
                    // Raced with another writer, or the namespace began terminating.
                    Err(Error::AlreadyExists(_) | Error::Forbidden(_)) => Ok(()),
                    Err(error) => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }
}
