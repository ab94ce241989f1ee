//! Garbage collection by `ownerReferences`, as kube-controller-manager's garbage collector does
//! it: a dependent whose owners are all gone is deleted; one that keeps an owner loses its
//! references to the gone ones; an owner deleted in the foreground (finalizer
//! `foregroundDeletion`) goes once its blocking dependents (`blockOwnerDeletion: true`) are gone;
//! an owner deleted orphaning (finalizer `orphan`) goes once no dependent names it.
//!
//! The collector keeps a graph of the objects that have owners, built from storage at start and
//! kept by following the watch cache; only objects with owner references or a deletion in
//! progress are decoded (their metadata only). Decisions are pure functions ([`judge`]); the
//! I/O around them reads owners through the store and writes with preconditions, so a
//! namesake created meanwhile is never touched.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use atoll_runtime::backoff::Retries;
use memchr::memmem::Finder;
use serde::Deserialize;
use tokio::sync::watch;

use super::ResourceType;
use super::actor::Actor;
use super::store::{
    DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation, Store, WriteOptions,
};
use crate::error::{Error, Result};
use crate::storage::{self, EventKind, Revision};
use crate::watch::{CachedEvent, Feed, Taken, next_pass};

const FIELD_MANAGER: &str = "atoll-garbage-collector";
/// How many rounds of tasks queued by tasks run before the collector waits.
const ROUNDS: usize = 4;
/// Objects read from storage per page while the graph is built.
const PAGE: usize = 500;

/// The metadata the collector reads of an object.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    owner_references: Vec<OwnerRef>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
    #[serde(default)]
    finalizers: Vec<String>,
}

#[derive(Deserialize)]
struct Object {
    #[serde(default)]
    metadata: Meta,
}

/// One `ownerReferences` entry.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRef {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub block_owner_deletion: Option<bool>,
}

/// What became of one owner, as the dependent's namespace and the owner's kind resolve it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// There, with the UID the reference names, and not being deleted in the foreground.
    Present,
    /// Gone, or replaced by a namesake with another UID.
    Absent,
    /// Being deleted in the foreground: waiting for its dependents.
    DeletingForeground,
    /// Its kind is not served (or a cluster-scoped object names a namespaced owner): nothing
    /// is concluded from it, as upstream concludes nothing.
    Unresolvable,
}

/// What to do with a dependent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    /// Delete it: every owner is gone or waits for it.
    Delete,
    /// It keeps an owner: drop its references to these UIDs (gone or deleting owners).
    DropReferences(Vec<String>),
}

/// Upstream's `attemptToDeleteItem` decision: a dependent with a solid owner stays (losing its
/// references to gone or foreground-deleting owners); one whose owners are all gone or waiting
/// for it goes; one with an owner that cannot be resolved stays.
pub fn judge(owners: &[(OwnerRef, Owner)]) -> Verdict {
    if owners.is_empty() {
        return Verdict::Keep;
    }
    let solid = owners.iter().any(|(_, o)| *o == Owner::Present);
    let unresolved = owners.iter().any(|(_, o)| *o == Owner::Unresolvable);
    let gone: Vec<String> = owners
        .iter()
        .filter(|(_, o)| matches!(o, Owner::Absent | Owner::DeletingForeground))
        .map(|(r, _)| r.uid.clone())
        .collect();
    if solid {
        if gone.is_empty() {
            Verdict::Keep
        } else {
            Verdict::DropReferences(gone)
        }
    } else if unresolved || gone.is_empty() {
        Verdict::Keep
    } else {
        Verdict::Delete
    }
}

/// An object with owners, in the graph.
#[derive(Clone, Debug)]
struct Node {
    uid: String,
    owners: Vec<OwnerRef>,
}

/// A piece of work, by storage key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Task {
    /// Look at a dependent's owners.
    Dependent(String),
    /// Advance the deletion of an owner held by `foregroundDeletion` or `orphan`.
    Owner(String),
}

#[derive(Default)]
struct Graph {
    /// Objects with owners, by key.
    nodes: HashMap<String, Node>,
    /// The keys of the dependents of each owner UID.
    dependents: HashMap<String, BTreeSet<String>>,
    /// Owners in a foreground or orphaning deletion: UID to key.
    deleting: HashMap<String, String>,
}

impl Graph {
    /// Records `key`'s owners (none: it leaves the graph); the owners it no longer names.
    fn set(&mut self, key: &str, node: Option<Node>) -> Vec<String> {
        let old = match node {
            Some(node) => {
                for owner in &node.owners {
                    self.dependents
                        .entry(owner.uid.clone())
                        .or_default()
                        .insert(key.to_owned());
                }
                self.nodes.insert(key.to_owned(), node.clone()).map(|old| {
                    (
                        old,
                        node.owners
                            .iter()
                            .map(|o| o.uid.clone())
                            .collect::<Vec<_>>(),
                    )
                })
            }
            None => self.nodes.remove(key).map(|old| (old, Vec::new())),
        };
        let Some((old, kept)) = old else {
            return Vec::new();
        };
        let mut dropped = Vec::new();
        for owner in old.owners {
            if kept.contains(&owner.uid) {
                continue;
            }
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
            dropped.push(owner.uid);
        }
        dropped
    }

    /// Whether any dependent of `uid` still blocks its foreground deletion.
    fn blocked(&self, uid: &str) -> bool {
        self.dependents.get(uid).is_some_and(|keys| {
            keys.iter().any(|k| {
                self.nodes.get(k).is_some_and(|n| {
                    n.owners
                        .iter()
                        .any(|o| o.uid == uid && o.block_owner_deletion == Some(true))
                })
            })
        })
    }
}

/// The collector's context.
struct Collector {
    store: Arc<Store>,
    graph: Graph,
    tasks: BTreeSet<Task>,
    /// Tasks that failed (a delete a policy refuses, say), each tried again after its backoff,
    /// or at once when an event queues it again.
    retries: Retries<Task>,
}

/// The events the collector follows: deletions (of owners, or of dependents it knows), and
/// writes of objects that have, or had, owner references or a deletion in progress.
pub fn wants(event: &CachedEvent) -> bool {
    if event.kind == EventKind::Delete {
        return true;
    }
    if concerns(&event.object_json()) {
        return true;
    }
    // An update that took the last owner reference away, or ended a deletion's finalizers.
    event.kind == EventKind::Update && event.prev_json().is_none_or(concerns)
}

/// Whether stored JSON has owner references or a deletion timestamp (a substring search, not a
/// parse: every committed write is searched).
fn concerns(json: &[u8]) -> bool {
    static OWNERS: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new(b"\"ownerReferences\""));
    static DELETION: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new(b"\"deletionTimestamp\""));
    OWNERS.find(json).is_some() || DELETION.find(json).is_some()
}

/// Runs until `shutdown` turns true, following `feed` (made with [`wants`]).
pub async fn run(store: Arc<Store>, feed: Arc<Feed>, mut shutdown: watch::Receiver<bool>) {
    let mut collector = Collector {
        store,
        graph: Graph::default(),
        tasks: BTreeSet::new(),
        retries: Retries::default(),
    };
    // The revision the graph was built at; `None` until it is built.
    let mut built: Option<Revision> = None;
    loop {
        built = match (built, feed.take()) {
            (Some(at), Taken::Events(events)) => {
                // Events the build read already are skipped.
                for event in events.iter().filter(|e| e.revision > at) {
                    collector.observe(event);
                }
                Some(at)
            }
            // At start, or fell behind: build the graph again.
            _ => collector.build().await,
        };
        let pending = collector.work().await;
        let retry = pending || built.is_none();
        if !next_pass(&feed, retry, &collector.retries, &mut shutdown).await {
            return;
        }
    }
}

impl Collector {
    /// Builds the graph from storage; the revision it was read at.
    async fn build(&mut self) -> Option<Revision> {
        self.graph = Graph::default();
        let backend = self.store.backend().clone();
        let start = backend.current_revision();
        let mut after: Option<String> = None;
        loop {
            let page = backend
                .list(storage::ListOptions {
                    prefix: "/registry/",
                    revision: Some(start),
                    start_after: after.as_deref(),
                    limit: Some(PAGE),
                })
                .await;
            let page = match page {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(%error, "garbage collector cannot read storage; retrying");
                    return None;
                }
            };
            for kv in &page.items {
                if let Some(meta) = meta_of(&kv.value) {
                    self.record(&kv.key, meta, true);
                }
            }
            match page.items.last() {
                Some(last) if page.remaining > 0 => after = Some(last.key.clone()),
                _ => break,
            }
        }
        Some(start)
    }

    /// Takes in one committed change.
    fn observe(&mut self, event: &CachedEvent) {
        let key = event.key.as_str();
        if event.kind == EventKind::Delete {
            let uid = self
                .graph
                .nodes
                .get(key)
                .map(|n| n.uid.clone())
                .or_else(|| meta_of(&event.object_json()).map(|m| m.uid));
            self.forget(key);
            if let Some(uid) = uid {
                self.graph.deleting.remove(&uid);
                for dependent in self.graph.dependents.get(&uid).into_iter().flatten() {
                    self.tasks.insert(Task::Dependent(dependent.clone()));
                }
            }
            return;
        }
        let json = event.object_json();
        match concerns(&json).then(|| meta_of(&json)).flatten() {
            Some(meta) => self.record(key, meta, event.kind == EventKind::Create),
            None => self.forget(key),
        }
    }

    /// Records an object's owners and deletion; `fresh` when the collector has not seen it
    /// before (at start, or created now).
    fn record(&mut self, key: &str, meta: Meta, fresh: bool) {
        let holds = meta
            .finalizers
            .iter()
            .any(|f| f == FOREGROUND_FINALIZER || f == ORPHAN_FINALIZER);
        if meta.deletion_timestamp.is_some() && holds {
            self.graph.deleting.insert(meta.uid.clone(), key.to_owned());
            self.tasks.insert(Task::Owner(key.to_owned()));
        }
        if meta.owner_references.is_empty() {
            self.forget(key);
            return;
        }
        let changed = fresh
            || self
                .graph
                .nodes
                .get(key)
                .is_none_or(|n| n.owners != meta.owner_references);
        let dropped = self.graph.set(
            key,
            Some(Node {
                uid: meta.uid,
                owners: meta.owner_references,
            }),
        );
        self.wake_owners(&dropped);
        if changed {
            self.tasks.insert(Task::Dependent(key.to_owned()));
        }
    }

    /// Takes `key` out of the graph, waking the deleting owners it held.
    fn forget(&mut self, key: &str) {
        let dropped = self.graph.set(key, None);
        self.wake_owners(&dropped);
    }

    fn wake_owners(&mut self, uids: &[String]) {
        for uid in uids {
            if let Some(owner) = self.graph.deleting.get(uid) {
                self.tasks.insert(Task::Owner(owner.clone()));
            }
        }
    }

    /// Carries out the queued tasks, and those they queue (a foreground deletion queues its
    /// dependents), for a few rounds, with the failed ones now due; whether any queued by the
    /// last round is left (failed ones wait for their backoff).
    async fn work(&mut self) -> bool {
        self.tasks.extend(self.retries.due(Instant::now()));
        for _ in 0..ROUNDS {
            let tasks = std::mem::take(&mut self.tasks);
            if tasks.is_empty() {
                break;
            }
            for task in tasks {
                let result = match &task {
                    Task::Dependent(key) => self.dependent(key).await,
                    Task::Owner(key) => self.owner(key).await,
                };
                match result {
                    Ok(()) => self.retries.succeeded(&task),
                    Err(error) => {
                        let (failures, wait) = self.retries.failed(task.clone(), Instant::now());
                        tracing::warn!(?task, %error, failures, retry_in = ?wait, "garbage collection failed; retrying");
                    }
                }
            }
        }
        !self.tasks.is_empty()
    }

    /// Looks at a dependent's owners and acts on the verdict.
    async fn dependent(&mut self, key: &str) -> Result<()> {
        let Some((rt, ns, name)) = self.locate(key) else {
            return Ok(());
        };
        let object = match self.store.get(&rt, ns.as_deref(), &name).await {
            Ok(object) => object,
            Err(Error::NotFound(_)) => return Ok(()),
            Err(error) => return Err(error),
        };
        let meta: Meta = serde_json::from_value(object["metadata"].clone()).unwrap_or_default();
        if meta.deletion_timestamp.is_some() {
            return Ok(());
        }
        let mut owners = Vec::with_capacity(meta.owner_references.len());
        for reference in &meta.owner_references {
            let state = self.owner_state(&rt, ns.as_deref(), reference).await?;
            owners.push((reference.clone(), state));
        }
        match judge(&owners) {
            Verdict::Keep => Ok(()),
            Verdict::Delete => {
                let options = DeleteOptions {
                    precondition_uid: Some(meta.uid.clone()),
                    propagation: Some(Propagation::Background),
                    actor: Some(Actor::GarbageCollector),
                    ..Default::default()
                };
                tracing::info!(object = %key, "deleting: its owners are gone");
                match self.store.delete(&rt, ns.as_deref(), &name, &options).await {
                    Ok(_) | Err(Error::NotFound(_) | Error::Conflict { .. }) => Ok(()),
                    Err(error) => Err(error),
                }
            }
            Verdict::DropReferences(uids) => {
                self.drop_references(&rt, ns.as_deref(), &name, &meta.uid, &uids)
                    .await
            }
        }
    }

    /// What became of the owner `reference` names, for a dependent of `rt` in `ns`.
    async fn owner_state(
        &self,
        dependent: &ResourceType,
        ns: Option<&str>,
        reference: &OwnerRef,
    ) -> Result<Owner> {
        let group = reference
            .api_version
            .rsplit_once('/')
            .map_or("", |(group, _)| group);
        let catalog = self.store.registry().catalog();
        let Some(rt) = catalog
            .types
            .iter()
            .find(|t| t.group == group && t.kind == reference.kind && !t.virtual_only)
            .cloned()
        else {
            return Ok(Owner::Unresolvable);
        };
        if rt.namespaced && !dependent.namespaced {
            return Ok(Owner::Unresolvable);
        }
        let owner_ns = if rt.namespaced { ns } else { None };
        match self.store.get(&rt, owner_ns, &reference.name).await {
            Ok(owner) => {
                let meta: Meta =
                    serde_json::from_value(owner["metadata"].clone()).unwrap_or_default();
                Ok(if meta.uid != reference.uid {
                    Owner::Absent
                } else if meta.deletion_timestamp.is_some()
                    && meta.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER)
                {
                    Owner::DeletingForeground
                } else {
                    Owner::Present
                })
            }
            Err(Error::NotFound(_)) => Ok(Owner::Absent),
            Err(error) => Err(error),
        }
    }

    /// Advances an owner's foreground or orphaning deletion.
    async fn owner(&mut self, key: &str) -> Result<()> {
        let Some((rt, ns, name)) = self.locate(key) else {
            return Ok(());
        };
        let object = match self.store.get(&rt, ns.as_deref(), &name).await {
            Ok(object) => object,
            Err(Error::NotFound(_)) => return Ok(()),
            Err(error) => return Err(error),
        };
        let meta: Meta = serde_json::from_value(object["metadata"].clone()).unwrap_or_default();
        if meta.deletion_timestamp.is_none() {
            return Ok(());
        }
        let dependents: Vec<String> = self
            .graph
            .dependents
            .get(&meta.uid)
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default();
        if meta.finalizers.iter().any(|f| f == ORPHAN_FINALIZER) {
            for dependent in &dependents {
                if let Some((drt, dns, dname)) = self.locate(dependent) {
                    let uid = self.graph.nodes.get(dependent).map(|n| n.uid.clone());
                    self.drop_references(
                        &drt,
                        dns.as_deref(),
                        &dname,
                        uid.as_deref().unwrap_or_default(),
                        std::slice::from_ref(&meta.uid),
                    )
                    .await?;
                }
            }
            return self
                .remove_finalizer(&rt, ns.as_deref(), &name, &meta.uid, ORPHAN_FINALIZER)
                .await;
        }
        if meta.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER) {
            // Its dependents go (each decides so, seeing its owner wait for it); the owner
            // goes once none blocks it.
            for dependent in dependents {
                self.tasks.insert(Task::Dependent(dependent));
            }
            if !self.graph.blocked(&meta.uid) {
                return self
                    .remove_finalizer(&rt, ns.as_deref(), &name, &meta.uid, FOREGROUND_FINALIZER)
                    .await;
            }
        }
        Ok(())
    }

    /// Removes the references to `uids` from a dependent (the one with UID `uid`).
    async fn drop_references(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        uid: &str,
        uids: &[String],
    ) -> Result<()> {
        self.rewrite(rt, ns, name, uid, |object| {
            if let Some(refs) = object["metadata"]
                .get_mut("ownerReferences")
                .and_then(serde_json::Value::as_array_mut)
            {
                refs.retain(|r| !uids.iter().any(|u| r["uid"] == u.as_str()));
            }
        })
        .await
    }

    async fn remove_finalizer(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        uid: &str,
        finalizer: &str,
    ) -> Result<()> {
        tracing::info!(kind = %rt.kind, namespace = ?ns, name, finalizer, "dependents handled; releasing the owner");
        self.rewrite(rt, ns, name, uid, |object| {
            if let Some(list) = object["metadata"]
                .get_mut("finalizers")
                .and_then(serde_json::Value::as_array_mut)
            {
                list.retain(|f| f != finalizer);
            }
        })
        .await
    }

    /// Reads the object with UID `uid`, changes it and writes it back, again on a conflict.
    async fn rewrite(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        uid: &str,
        change: impl Fn(&mut serde_json::Value),
    ) -> Result<()> {
        let options = WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            actor: Some(Actor::GarbageCollector),
            ..Default::default()
        };
        for _ in 0..5 {
            let mut object = match self.store.get(rt, ns, name).await {
                Ok(object) => object,
                Err(Error::NotFound(_)) => return Ok(()),
                Err(error) => return Err(error),
            };
            if !uid.is_empty() && object["metadata"]["uid"] != uid {
                return Ok(());
            }
            change(&mut object);
            match self
                .store
                .update(rt, ns, name, None, object, &options)
                .await
            {
                Ok(_) | Err(Error::NotFound(_)) => return Ok(()),
                Err(Error::Conflict { .. }) => continue,
                Err(error) => return Err(error),
            }
        }
        Err(Error::Conflict {
            target: rt.target(name),
            reason: "the object kept changing".into(),
        })
    }

    /// The resource, namespace and name of a storage key.
    fn locate(&self, key: &str) -> Option<(Arc<ResourceType>, Option<String>, String)> {
        let catalog = self.store.registry().catalog();
        let rt = catalog
            .types
            .iter()
            .filter(|t| t.version == t.storage_version && !t.virtual_only)
            .find(|t| key.starts_with(&t.key_prefix()))?
            .clone();
        let rest = &key[rt.key_prefix().len()..];
        if rt.namespaced {
            let (ns, name) = rest.split_once('/')?;
            Some((rt, Some(ns.to_owned()), name.to_owned()))
        } else {
            Some((rt, None, rest.to_owned()))
        }
    }
}

/// The metadata of stored or cached JSON, when it parses.
fn meta_of(json: &[u8]) -> Option<Meta> {
    serde_json::from_slice::<Object>(json)
        .ok()
        .map(|o| o.metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(uid: &str) -> OwnerRef {
        OwnerRef {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: format!("rs-{uid}"),
            uid: uid.into(),
            block_owner_deletion: Some(true),
        }
    }

    #[test]
    fn a_dependent_goes_when_every_owner_is_gone_or_waiting_for_it() {
        assert_eq!(judge(&[]), Verdict::Keep);
        assert_eq!(judge(&[(owner("a"), Owner::Present)]), Verdict::Keep);
        assert_eq!(judge(&[(owner("a"), Owner::Absent)]), Verdict::Delete);
        assert_eq!(
            judge(&[
                (owner("a"), Owner::Absent),
                (owner("b"), Owner::DeletingForeground)
            ]),
            Verdict::Delete
        );
        // A solid owner keeps it; the references to the others go.
        assert_eq!(
            judge(&[(owner("a"), Owner::Absent), (owner("b"), Owner::Present)]),
            Verdict::DropReferences(vec!["a".into()])
        );
        // An owner of a kind nobody serves: nothing is concluded.
        assert_eq!(
            judge(&[
                (owner("a"), Owner::Absent),
                (owner("b"), Owner::Unresolvable)
            ]),
            Verdict::Keep
        );
    }

    #[test]
    fn the_graph_follows_owners_and_blockers() {
        let mut graph = Graph::default();
        let node = |owners: Vec<OwnerRef>| Node {
            uid: "d".into(),
            owners,
        };
        assert!(graph.set("/k/a", Some(node(vec![owner("x")]))).is_empty());
        assert!(graph.blocked("x"));
        let mut loose = owner("y");
        loose.block_owner_deletion = None;
        // Another owner instead of x: x is dropped, and y blocks nothing.
        assert_eq!(graph.set("/k/a", Some(node(vec![loose]))), ["x"]);
        assert!(!graph.blocked("x"));
        assert!(!graph.blocked("y"));
        assert_eq!(graph.set("/k/a", None), ["y"]);
        assert!(graph.dependents.is_empty() && graph.nodes.is_empty());
    }

    #[test]
    fn only_metadata_is_read() {
        let json = br#"{"kind":"Pod","metadata":{"uid":"u","ownerReferences":[{"apiVersion":"v1","kind":"ReplicationController","name":"rc","uid":"o","controller":true}],"finalizers":["orphan"],"deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"containers":[]}}"#;
        let meta = meta_of(json).unwrap();
        assert_eq!(meta.uid, "u");
        assert_eq!(meta.owner_references[0].kind, "ReplicationController");
        assert!(meta.deletion_timestamp.is_some());
        assert!(meta_of(b"[1,2]").is_none());
        assert!(concerns(json));
        assert!(concerns(
            br#"{"metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"}}"#
        ));
        assert!(!concerns(
            br#"{"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"owner"}}"#
        ));
    }
}
