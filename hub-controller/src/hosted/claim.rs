//! A hosted cluster's place on the hub: its member record (made accepted, and labelled with the
//! HostedCluster's UID so that a HostedCluster never takes over or removes a cluster it did not
//! make), its namespace and ClusterProfile, the Secret with its admin kubeconfig, and for a
//! cluster on etcd the Secret keeping its data directory's record.

use std::collections::BTreeMap;

use atoll_api::hosted::{HostedCluster, KUBECONFIG_KEY, kubeconfig_secret_name};
use atoll_api::inventory::ClusterProfile;
use atoll_api::names::{INVENTORY_NAMESPACE, SYSTEM_NAMESPACE};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Resource as _;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};

use crate::digest::sha256;
use crate::inventory::{ensure_namespace, is_member_namespace, new_profile};
use crate::record::{self, Record};

/// Field manager of what the hosted cluster controller writes.
pub const FIELD_MANAGER: &str = "atoll-hosted";
/// Annotation on a hosted cluster's ClusterProfile naming its HostedCluster (`namespace/name`).
pub const ANNOTATION_HOSTED_CLUSTER: &str = "atoll.dev/hosted-cluster";
/// Label on the kubeconfig Secret naming its hosted cluster.
pub const LABEL_HOSTED_CLUSTER: &str = "atoll.dev/hosted-cluster";

/// Whether the hub is the HostedCluster's to use for its member cluster.
#[derive(Debug)]
pub enum Claim {
    /// The record is the HostedCluster's (made now or before), at this resourceVersion; and
    /// whether its ClusterProfile was made now (without labels of the spec's yet).
    Ours(Box<Record>, u64, bool),
    /// Something else has the name; why.
    InUse(String),
}

/// Makes the member record, namespace and ClusterProfile of HostedCluster `hc`'s cluster,
/// unless something that is not the HostedCluster's holds the name.
pub async fn claim(
    client: &kube::Client,
    hc: &HostedCluster,
    join_secret: &str,
) -> kube::Result<Claim> {
    let name = hc.metadata.name.as_deref().unwrap_or_default();
    let uid = hc.metadata.uid.as_deref().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let not_ours = |record: &Record| {
        (record.hosted_by.as_deref() != Some(uid)).then(|| {
            format!(
                "a member cluster named {name:?} is on this hub already, not made by this HostedCluster; choose another name, or remove that cluster first (atoll cluster remove {name})"
            )
        })
    };
    let existing = secrets.get_opt(&record::secret_name(name)).await?;
    if let Some(record) = existing.as_ref().and_then(Record::from_secret)
        && let Some(why) = not_ours(&record)
    {
        return Ok(Claim::InUse(why));
    }
    if let Err(why) = ensure_namespace(client.clone(), name).await? {
        return Ok(Claim::InUse(why));
    }
    let (record, version) = match existing
        .as_ref()
        .and_then(|s| Record::from_secret(s).map(|r| (r, record::version(&s.metadata))))
    {
        Some(found) => found,
        None => {
            let record = Record {
                name: name.to_owned(),
                accepted: true,
                join_secret: Some(sha256(join_secret.as_bytes())),
                credential: None,
                credential_expires: None,
                previous: None,
                cluster_id: String::new(),
                hosted_by: Some(uid.to_owned()),
            };
            match secrets
                .create(&PostParams::default(), &record.to_secret())
                .await
            {
                Ok(stored) => (record, record::version(&stored.metadata)),
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    let stored = secrets.get(&record::secret_name(name)).await?;
                    let Some(record) = Record::from_secret(&stored) else {
                        return Ok(Claim::InUse(format!(
                            "the hub holds a Secret {SYSTEM_NAMESPACE}/{} that is not a member record; remove it",
                            record::secret_name(name)
                        )));
                    };
                    if let Some(why) = not_ours(&record) {
                        return Ok(Claim::InUse(why));
                    }
                    (record, record::version(&stored.metadata))
                }
                Err(e) => return Err(e),
            }
        }
    };
    let profiles: Api<ClusterProfile> = Api::namespaced(client.clone(), INVENTORY_NAMESPACE);
    let mut profile = new_profile(name, hc.spec.cluster_set.as_deref());
    profile.metadata.annotations = Some(annotations(hc));
    let made = match profiles.create(&PostParams::default(), &profile).await {
        Ok(_) => true,
        Err(kube::Error::Api(e)) if e.code == 409 => false,
        Err(e) => return Err(e),
    };
    Ok(Claim::Ours(Box::new(record), version, made))
}

fn annotations(hc: &HostedCluster) -> BTreeMap<String, String> {
    let namespace = hc.metadata.namespace.as_deref().unwrap_or_default();
    let name = hc.metadata.name.as_deref().unwrap_or_default();
    BTreeMap::from([(
        ANNOTATION_HOSTED_CLUSTER.to_owned(),
        format!("{namespace}/{name}"),
    )])
}

/// Gives the member record of a hosted cluster the join secret of its data directory, made anew
/// (its data was in memory and this hub has no directory for it: another replica served it, or
/// the directory was lost), so that its agent joins again as itself rather than being refused
/// as another agent. Answers the record as stored and its resourceVersion.
pub async fn rekey(
    client: &kube::Client,
    mut record: Record,
    join_secret: &str,
) -> kube::Result<(Record, u64)> {
    record.join_secret = Some(sha256(join_secret.as_bytes()));
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let stored = secrets
        .patch(
            &record::secret_name(&record.name),
            &PatchParams::default(),
            &Patch::Merge(&record.data_patch()),
        )
        .await?;
    Ok((record, record::version(&stored.metadata)))
}

/// Sets the labels the HostedCluster's spec asks for on its ClusterProfile, removing those it
/// set before and no longer asks for (the ClusterSet label, set once at creation, and labels
/// an administrator set stay).
pub async fn label_profile(client: &kube::Client, hc: &HostedCluster) -> kube::Result<()> {
    let name = hc.metadata.name.as_deref().unwrap_or_default();
    let profiles: Api<ClusterProfile> = Api::namespaced(client.clone(), INVENTORY_NAMESPACE);
    let patch = serde_json::json!({
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {
            "name": name,
            "namespace": INVENTORY_NAMESPACE,
            "labels": hc.spec.labels,
            "annotations": annotations(hc),
        },
    });
    profiles
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&patch),
        )
        .await
        .map(|_| ())
}

/// The HostedCluster a ClusterProfile belongs to, from its annotation.
pub fn hosted_cluster_of(profile: &ClusterProfile) -> Option<(String, String)> {
    let value = profile
        .metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION_HOSTED_CLUSTER)?;
    let (namespace, name) = value.split_once('/')?;
    Some((namespace.to_owned(), name.to_owned()))
}

/// Takes the cluster out of the inventory, when it is the HostedCluster's: its ClusterProfile,
/// its namespace (with its Works) and, last, its member record, so that a hub stopped half way
/// finds the record and finishes. A profile left without a record (by an earlier hub) goes too
/// when it names this HostedCluster.
pub async fn release(client: &kube::Client, hc: &HostedCluster) -> kube::Result<()> {
    let name = hc.metadata.name.as_deref().unwrap_or_default();
    let uid = hc.metadata.uid.as_deref().unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let profiles: Api<ClusterProfile> = Api::namespaced(client.clone(), INVENTORY_NAMESPACE);
    let record = secrets.get_opt(&record::secret_name(name)).await?;
    let ours = match record.as_ref().map(Record::from_secret) {
        Some(Some(r)) => r.hosted_by.as_deref() == Some(uid),
        // Not a record: not ours to touch.
        Some(None) => false,
        None => {
            let profile = profiles.get_opt(name).await?;
            profile.is_some_and(|p| {
                hosted_cluster_of(&p)
                    == Some((
                        hc.metadata.namespace.clone().unwrap_or_default(),
                        name.to_owned(),
                    ))
            })
        }
    };
    if !ours {
        return Ok(());
    }
    remove_member(client, name).await
}

/// Removes a hosted cluster's member: its ClusterProfile, its namespace (when it is the
/// member's) and, last, its record, so that a hub stopped half way finds the record and
/// finishes.
pub async fn remove_member(client: &kube::Client, name: &str) -> kube::Result<()> {
    let gone = |result: kube::Result<()>| match result {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        other => other,
    };
    let profiles: Api<ClusterProfile> = Api::namespaced(client.clone(), INVENTORY_NAMESPACE);
    gone(
        profiles
            .delete(name, &DeleteParams::default())
            .await
            .map(|_| ()),
    )?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if let Some(namespace) = namespaces.get_opt(name).await?
        && is_member_namespace(&namespace, name)
    {
        gone(
            namespaces
                .delete(name, &DeleteParams::default())
                .await
                .map(|_| ()),
        )?;
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    gone(
        secrets
            .delete(&record::secret_name(name), &DeleteParams::default())
            .await
            .map(|_| ()),
    )
}

/// The Secret `<name>-admin-kubeconfig` holding `kubeconfig`, owned by the HostedCluster.
pub fn kubeconfig_secret(hc: &HostedCluster, kubeconfig: &str) -> Secret {
    let name = hc.metadata.name.as_deref().unwrap_or_default();
    Secret {
        metadata: ObjectMeta {
            name: Some(kubeconfig_secret_name(name)),
            namespace: hc.metadata.namespace.clone(),
            labels: Some([(LABEL_HOSTED_CLUSTER.to_owned(), name.to_owned())].into()),
            owner_references: hc.controller_owner_ref(&()).map(|r| vec![r]),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(BTreeMap::from([(
            KUBECONFIG_KEY.to_owned(),
            ByteString(kubeconfig.as_bytes().to_vec()),
        )])),
        ..Secret::default()
    }
}

/// Writes the kubeconfig Secret.
pub async fn publish_kubeconfig(client: &kube::Client, secret: &Secret) -> kube::Result<()> {
    let namespace = secret.metadata.namespace.as_deref().unwrap_or_default();
    let name = secret.metadata.name.as_deref().unwrap_or_default();
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut body = serde_json::to_value(secret).map_err(kube::Error::SerdeError)?;
    body["apiVersion"] = "v1".into();
    body["kind"] = "Secret".into();
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await
    .map(|_| ())
}

/// Deletes the kubeconfig Secret; one that is gone is fine.
pub async fn delete_kubeconfig(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> kube::Result<()> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    match api
        .delete(&kubeconfig_secret_name(name), &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Label on the Secrets in the hub's system namespace that keep what the data directory of a
/// cluster on etcd records (`hosted.json`), so that another hub replica, or this one after its
/// disk was lost, serves the cluster again with the same join secret, port and prefix.
pub const LABEL_KEPT_DATADIR: &str = "atoll.dev/hosted-datadir";
/// The key of `hosted.json` in such a Secret.
const KEPT_KEY: &str = "hosted.json";

/// The name of the Secret keeping the data directory record of the HostedCluster with `uid`.
pub fn kept_secret_name(uid: &str) -> String {
    format!("hosted-{uid}")
}

/// Writes (server-side apply) the Secret keeping `saved`, the record of HostedCluster `hc`'s
/// data directory.
pub async fn keep_datadir(
    client: &kube::Client,
    hc: &HostedCluster,
    saved: &super::datadir::Saved,
) -> kube::Result<()> {
    let bytes = serde_json::to_vec(saved).map_err(kube::Error::SerdeError)?;
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(kept_secret_name(&saved.uid)),
            namespace: Some(SYSTEM_NAMESPACE.to_owned()),
            labels: Some(BTreeMap::from([(
                LABEL_KEPT_DATADIR.to_owned(),
                "true".to_owned(),
            )])),
            annotations: Some(annotations(hc)),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(KEPT_KEY.to_owned(), ByteString(bytes))])),
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    };
    let api: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    api.patch(
        &kept_secret_name(&saved.uid),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&secret),
    )
    .await?;
    Ok(())
}

/// The data directory record kept for the HostedCluster with `uid`, if there is one (one that
/// does not parse, or is another cluster's, is none).
pub async fn kept_datadir(
    client: &kube::Client,
    uid: &str,
) -> kube::Result<Option<super::datadir::Saved>> {
    let api: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let Some(secret) = api.get_opt(&kept_secret_name(uid)).await? else {
        return Ok(None);
    };
    Ok(kept_in(&secret).filter(|s| s.uid == uid))
}

/// The record a keeping Secret holds.
pub fn kept_in(secret: &Secret) -> Option<super::datadir::Saved> {
    let bytes = secret.data.as_ref()?.get(KEPT_KEY)?;
    serde_json::from_slice(&bytes.0).ok()
}

/// Deletes the Secret keeping the data directory record of the HostedCluster with `uid`.
pub async fn forget_datadir(client: &kube::Client, uid: &str) -> kube::Result<()> {
    let api: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    match api
        .delete(&kept_secret_name(uid), &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
