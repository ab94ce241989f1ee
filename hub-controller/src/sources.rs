//! Watches that keep the fleet view current: member records (Secrets in `atoll-system`),
//! ClusterProfiles (labels an administrator sets, deletions) and ClusterSets; and the bootstrap
//! tokens joins are checked against. Also the removal of a member: its record gone, the hub
//! deletes its ClusterProfile and namespace.

use std::sync::Arc;
use std::time::Duration;

use atoll_api::clusterset::ClusterSet;
use atoll_api::inventory::ClusterProfile;
use atoll_api::names::{
    CLUSTER_MANAGER_NAME, INVENTORY_NAMESPACE, LABEL_CLUSTER_MANAGER, LABEL_CLUSTER_SET,
    SYSTEM_NAMESPACE,
};
use futures::{Stream, StreamExt as _};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams};
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;

use crate::bootstrap::{self, Tokens};
use crate::fleet::{Changes, Fleet};
use crate::record::{self, Record};

/// Feeds member record changes into the fleet; cleans up after removed members.
pub async fn records(fleet: Arc<Fleet>, client: kube::Client, shutdown: watch::Receiver<bool>) {
    let api: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let config = watcher::Config::default().labels(record::LABEL_CLUSTER);
    run(watcher::watcher(api, config), shutdown, "member records", |event| match event {
        Event::Apply(secret) | Event::InitApply(secret) => {
            if let Some(r) = Record::from_secret(&secret) {
                fleet.upsert_record(&r, record::version(&secret.metadata));
            }
        }
        Event::Delete(secret) => {
            if let Some(r) = Record::from_secret(&secret)
                && fleet.remove(&r.name).is_some()
            {
                tracing::info!(cluster = %r.name, "cluster removed; deleting its ClusterProfile and namespace");
                tokio::spawn(clean_up(client.clone(), r.name));
            }
        }
        Event::Init | Event::InitDone => {}
    })
    .await;
}

/// Keeps the bootstrap token Secrets joins are checked against.
pub async fn bootstrap_tokens(
    tokens: Arc<Tokens>,
    client: kube::Client,
    shutdown: watch::Receiver<bool>,
) {
    let api: Api<Secret> = Api::namespaced(client, SYSTEM_NAMESPACE);
    let config = watcher::Config::default().labels(bootstrap::LABEL);
    // A list (at the start, and again after a watch broke) replaces what was known.
    let mut listing = Vec::new();
    run(
        watcher::watcher(api, config),
        shutdown,
        "bootstrap tokens",
        |event| match event {
            Event::Init => listing.clear(),
            Event::InitApply(secret) => listing.push(secret),
            Event::InitDone => tokens.replace(std::mem::take(&mut listing)),
            Event::Apply(secret) => tokens.apply(secret),
            Event::Delete(secret) => tokens.delete(&secret),
        },
    )
    .await;
}

async fn clean_up(client: kube::Client, name: String) {
    let profiles: Api<ClusterProfile> = Api::namespaced(client.clone(), INVENTORY_NAMESPACE);
    let namespaces: Api<Namespace> = Api::all(client);
    // Only a namespace the hub made for the member goes with it, never one of the hub's own.
    let namespace = match namespaces.get_opt(&name).await {
        Ok(Some(ns)) if crate::inventory::is_member_namespace(&ns, &name) => namespaces
            .delete(&name, &DeleteParams::default())
            .await
            .map(|_| ()),
        Ok(Some(_)) => {
            tracing::warn!(cluster = %name, "the namespace of a removed cluster's name is not the member's; left in place");
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => Err(e),
    };
    for result in [
        profiles
            .delete(&name, &DeleteParams::default())
            .await
            .map(|_| ()),
        namespace,
    ] {
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(error) => {
                tracing::warn!(cluster = %name, %error, "cannot clean up after a removed cluster")
            }
        }
    }
}

/// Feeds ClusterProfile labels into the fleet; a deleted profile removes its member.
pub async fn profiles(fleet: Arc<Fleet>, client: kube::Client, shutdown: watch::Receiver<bool>) {
    let api: Api<ClusterProfile> = Api::namespaced(client.clone(), INVENTORY_NAMESPACE);
    let config = watcher::Config::default()
        .labels(&format!("{LABEL_CLUSTER_MANAGER}={CLUSTER_MANAGER_NAME}"));
    run(watcher::watcher(api, config), shutdown, "ClusterProfiles", |event| match event {
        Event::Apply(profile) | Event::InitApply(profile) => observe_profile(&fleet, &profile),
        Event::Delete(profile) => {
            let name = profile.metadata.name.unwrap_or_default();
            if fleet.get(&name).is_some() {
                let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
                tokio::spawn(async move {
                    match secrets.delete(&record::secret_name(&name), &DeleteParams::default()).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(e)) if e.code == 404 => {}
                        Err(error) => tracing::warn!(cluster = %name, %error, "cannot delete the record of a removed cluster"),
                    }
                });
            }
        }
        Event::Init | Event::InitDone => {}
    })
    .await;
}

/// Takes what the fleet needs from a ClusterProfile: its ClusterSet label and creation time.
pub fn observe_profile(fleet: &Fleet, profile: &ClusterProfile) {
    let name = profile.metadata.name.clone().unwrap_or_default();
    let label = profile
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_CLUSTER_SET))
        .filter(|s| !s.is_empty())
        .cloned();
    let created = profile.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let uid = profile.metadata.uid.clone();
    let labels = profile.metadata.labels.clone().unwrap_or_default();
    fleet.update(&name, |m| {
        let changed = m.label_set != label || m.created != created || m.labels != labels;
        m.labels = labels;
        // A new UID is a new or recreated profile: it needs its status written.
        let recreated = m.profile_uid != uid;
        m.label_set = label;
        m.created = created;
        m.profile_uid = uid;
        (
            Changes {
                profile: recreated,
                membership: changed,
            },
            (),
        )
    });
}

/// Feeds which ClusterSets exist into the fleet.
pub async fn cluster_sets(
    fleet: Arc<Fleet>,
    client: kube::Client,
    shutdown: watch::Receiver<bool>,
) {
    let api: Api<ClusterSet> = Api::all(client);
    run(
        watcher::watcher(api, watcher::Config::default()),
        shutdown,
        "ClusterSets",
        |event| match event {
            Event::Apply(set) | Event::InitApply(set) => {
                fleet.set_cluster_set(&set.metadata.name.unwrap_or_default(), true);
            }
            Event::Delete(set) => {
                fleet.set_cluster_set(&set.metadata.name.unwrap_or_default(), false)
            }
            Event::Init | Event::InitDone => {}
        },
    )
    .await;
}

/// Runs a watch until shutdown, handing every event to `handle` and retrying after errors.
pub(crate) async fn run<K>(
    stream: impl Stream<Item = Result<Event<K>, watcher::Error>>,
    mut shutdown: watch::Receiver<bool>,
    what: &str,
    mut handle: impl FnMut(Event<K>),
) {
    let mut stream = std::pin::pin!(stream);
    loop {
        tokio::select! {
            item = stream.next() => match item {
                Some(Ok(event)) => handle(event),
                Some(Err(error)) => {
                    tracing::warn!(%error, "watch of {what} failed; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                None => return,
            },
            _ = shutdown.changed() => return,
        }
    }
}
