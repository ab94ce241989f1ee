//! The cluster inventory: one ClusterProfile per member in `fleet-system`, its status computed
//! from what the hub knows (`Joined`, `ControlPlaneHealthy`, ClusterSet membership, version and
//! properties) and written only when it changed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use atoll_api::inventory::{
    ClusterManager, ClusterProfile, ClusterProfileSpec, ClusterProfileStatus, ClusterVersion,
    PROFILE_PROPERTY_VALUE_MAX_CHARS, Property,
};
use atoll_api::names::{
    CLUSTER_MANAGER_NAME, CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, INVENTORY_NAMESPACE,
    LABEL_CLUSTER_MANAGER, LABEL_CLUSTER_SET, LABEL_INVENTORY_MEMBER_ID,
};
use atoll_proto::v1::{Keepalive, SyncEvent, sync_event};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use tokio::sync::watch;

use crate::clusterset::Decision;
use crate::conditions::{Verdict, merge};
use crate::fleet::{Fleet, Health, Leases, Member};
use crate::queue::{self, Queue};
use crate::record::LABEL_CLUSTER;

pub use atoll_api::names::CONDITION_CLUSTER_SET_MEMBER;
/// ClusterProfile condition, present only when a property could not be copied.
pub const CONDITION_PROPERTIES_COPIED: &str = "PropertiesCopied";

/// How long the status writer waits after a change before it writes, to gather a burst.
const WRITE_DELAY: Duration = Duration::from_millis(100);

/// How many ClusterProfile status writes run at once.
const WRITE_CONCURRENCY: usize = 32;

/// The ClusterProfile the hub creates when a cluster asks to join.
pub fn new_profile(name: &str, cluster_set: Option<&str>) -> ClusterProfile {
    let mut labels = BTreeMap::from([
        (
            LABEL_CLUSTER_MANAGER.to_owned(),
            CLUSTER_MANAGER_NAME.to_owned(),
        ),
        (LABEL_INVENTORY_MEMBER_ID.to_owned(), name.to_owned()),
    ]);
    if let Some(set) = cluster_set {
        labels.insert(LABEL_CLUSTER_SET.to_owned(), set.to_owned());
    }
    ClusterProfile {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(INVENTORY_NAMESPACE.to_owned()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: ClusterProfileSpec {
            display_name: Some(name.to_owned()),
            cluster_manager: ClusterManager {
                name: CLUSTER_MANAGER_NAME.to_owned(),
            },
        },
        status: None,
    }
}

/// Creates the profile, leaving one that exists as it is.
pub async fn ensure_profile(
    client: kube::Client,
    name: &str,
    cluster_set: Option<&str>,
) -> kube::Result<()> {
    let profile = new_profile(name, cluster_set);
    match create_unread(&client, &profile, Some(INVENTORY_NAMESPACE)).await {
        Ok(()) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates `object` without reading it back: a join creates a cluster's namespace and profile
/// and needs neither answer, so the API server answers with metadata and nothing is decoded.
async fn create_unread<K>(
    client: &kube::Client,
    object: &K,
    namespace: Option<&str>,
) -> kube::Result<()>
where
    K: kube::Resource<DynamicType = ()> + serde::Serialize,
{
    let url = K::url_path(&(), namespace);
    let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
    let request = kube::core::Request::new(url)
        .create(&PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    crate::work::send_write(client, request).await
}

/// Creates a member cluster's namespace on the hub (labelled as the member's), or finds it made
/// before. `Err` says why not when a namespace of that name exists that is not a member
/// cluster's: a cluster never takes over, nor (when removed) deletes, a namespace of the hub.
pub async fn ensure_namespace(
    client: kube::Client,
    name: &str,
) -> kube::Result<Result<(), String>> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some([(LABEL_CLUSTER.to_owned(), name.to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let existing = match create_unread(&client, &namespace, None).await {
        Ok(()) => return Ok(Ok(())),
        Err(kube::Error::Api(e)) if e.code == 409 => namespaces.get(name).await?,
        Err(e) => return Err(e),
    };
    Ok(if is_member_namespace(&existing, name) {
        Ok(())
    } else {
        Err(format!(
            "cluster name {name:?} is taken: the hub has a namespace {name:?} that is not a member cluster's (a member's Works live in the namespace of its name); choose another cluster name"
        ))
    })
}

/// Whether `namespace` is member cluster `name`'s (the hub made it, labelled).
pub fn is_member_namespace(namespace: &Namespace, name: &str) -> bool {
    namespace
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_CLUSTER))
        .is_some_and(|v| v == name)
}

/// The verdicts a member's profile should carry.
pub fn verdicts(member: &Member, leases: Leases) -> Vec<Verdict> {
    let name = &member.name;
    let joined = if !member.accepted {
        Verdict::new(
            CONDITION_JOINED,
            "False",
            "PendingAcceptance",
            format!(
                "the cluster asked to join and waits for an administrator: atoll cluster accept {name}"
            ),
        )
    } else if member.credential.is_none() {
        Verdict::new(
            CONDITION_JOINED,
            "False",
            "AwaitingAgent",
            "accepted; waiting for the agent to collect its credential",
        )
    } else if let Some(why) = &member.set_not_granted {
        Verdict::new(
            CONDITION_JOINED,
            "True",
            "ClusterSetNotGranted",
            format!("the cluster's agent joined and holds its credential; {why}"),
        )
    } else {
        Verdict::new(
            CONDITION_JOINED,
            "True",
            "Joined",
            "the cluster's agent joined and holds its credential",
        )
    };
    let healthy = control_plane_health(member, leases);
    let mut out = vec![joined, healthy];
    match &member.membership {
        Decision::None => {}
        Decision::Member { set } => out.push(Verdict::new(
            CONDITION_CLUSTER_SET_MEMBER,
            "True",
            "Member",
            format!("member of ClusterSet {set:?}"),
        )),
        Decision::Rejected {
            reason, message, ..
        } => {
            out.push(Verdict::new(
                CONDITION_CLUSTER_SET_MEMBER,
                "False",
                reason,
                message.clone(),
            ));
        }
    }
    let too_long: Vec<String> = member
        .properties
        .iter()
        .filter(|p| p.value.chars().count() > PROFILE_PROPERTY_VALUE_MAX_CHARS)
        .map(|p| format!("{} ({} characters)", p.name, p.value.chars().count()))
        .collect();
    if !member.refused_properties.is_empty() {
        let mut message = format!(
            "left out of this profile, refused by the hub: {}",
            member.refused_properties.join("; ")
        );
        if !too_long.is_empty() {
            message.push_str(&format!(
                "; longer than its limit of {PROFILE_PROPERTY_VALUE_MAX_CHARS} characters: {}",
                too_long.join(", ")
            ));
        }
        out.push(Verdict::new(
            CONDITION_PROPERTIES_COPIED,
            "False",
            "PropertyRefused",
            message,
        ));
    } else if !too_long.is_empty() {
        out.push(Verdict::new(
            CONDITION_PROPERTIES_COPIED,
            "False",
            "PropertyTooLong",
            format!(
                "left out of this profile, longer than its limit of {PROFILE_PROPERTY_VALUE_MAX_CHARS} characters: {}",
                too_long.join(", ")
            ),
        ));
    }
    out
}

/// `ControlPlaneHealthy`: suspended on purpose, not joined yet, or what the heartbeats say.
pub(crate) fn control_plane_health(member: &Member, leases: Leases) -> Verdict {
    if let Some(why) = &member.suspended {
        Verdict::new(
            CONDITION_CONTROL_PLANE_HEALTHY,
            "False",
            "Suspended",
            why.clone(),
        )
    } else if !member.accepted || member.credential.is_none() {
        Verdict::new(
            CONDITION_CONTROL_PLANE_HEALTHY,
            "Unknown",
            "NotJoined",
            "the cluster has not joined yet",
        )
    } else {
        match &member.health {
            Health::Awaiting => Verdict::new(
                CONDITION_CONTROL_PLANE_HEALTHY,
                "Unknown",
                "AwaitingHeartbeat",
                "no heartbeat from the cluster's agent yet",
            ),
            Health::Ready => Verdict::new(
                CONDITION_CONTROL_PLANE_HEALTHY,
                "True",
                "APIServerReady",
                "the cluster's API server reports ready (/readyz)",
            ),
            Health::NotReady(why) => Verdict::new(
                CONDITION_CONTROL_PLANE_HEALTHY,
                "False",
                "APIServerNotReady",
                format!("the agent reports its API server not ready: {why}"),
            ),
            Health::Lost(last) => {
                let grace = leases.grace().as_secs();
                let lease = leases.lease.as_secs();
                let missed = leases.missed;
                let since = match last {
                    Some(at) => format!("the last arrived at {at}"),
                    None => "none arrived since the hub started".to_owned(),
                };
                Verdict::new(
                    CONDITION_CONTROL_PLANE_HEALTHY,
                    "Unknown",
                    "AgentLost",
                    format!(
                        "no heartbeat from the cluster's agent for more than {grace}s ({missed} leases of {lease}s); {since}; check the agent and its connection to the hub"
                    ),
                )
            }
        }
    }
}

/// The status a member's profile should show, keeping transition times from `previous`.
pub fn status(
    member: &Member,
    leases: Leases,
    previous: &ClusterProfileStatus,
    now: jiff::Timestamp,
) -> ClusterProfileStatus {
    let mut properties: Vec<Property> = member
        .properties
        .iter()
        .filter(|p| p.value.chars().count() <= PROFILE_PROPERTY_VALUE_MAX_CHARS)
        .cloned()
        .collect();
    properties.sort_by(|a, b| a.name.cmp(&b.name));
    ClusterProfileStatus {
        conditions: merge(&previous.conditions, verdicts(member, leases), None, now),
        version: (!member.version.is_empty()).then(|| ClusterVersion {
            kubernetes: Some(member.version.clone()),
        }),
        properties,
        access_providers: member
            .access
            .clone()
            .unwrap_or_else(|| previous.access_providers.clone()),
        ..previous.clone()
    }
}

/// The statuses the hub knows to be stored, by cluster, with the UID of the profile holding each.
pub type Written = HashMap<String, (Option<String>, ClusterProfileStatus)>;

/// Writes ClusterProfile statuses that changed, one cluster at a time on a work queue (at most
/// `WRITE_CONCURRENCY` at once, a failed write retried after the cluster's backoff), until
/// shutdown. `written` holds the statuses
/// already stored (from the start-up list), so a restarted hub writes nothing that is current.
pub async fn write_profiles(
    fleet: Arc<Fleet>,
    client: kube::Client,
    written: Written,
    shutdown: watch::Receiver<bool>,
) {
    let api: Api<ClusterProfile> = Api::namespaced(client, INVENTORY_NAMESPACE);
    let written = std::sync::Mutex::new(written);
    let queue = Queue::default();
    let feed = async {
        loop {
            fleet.profiles_dirty.notified().await;
            // Let a burst settle (a join and the agent's first heartbeat): one write, not two.
            for name in fleet.take_dirty() {
                queue.add_after(name, WRITE_DELAY);
            }
        }
    };
    let work = queue::run(
        &queue,
        WRITE_CONCURRENCY,
        "ClusterProfile status",
        &fleet.metrics,
        |name| write_profile(name, &fleet, &api, &written),
        shutdown,
    );
    tokio::select! {
        () = feed => {}
        () = work => {}
    }
}

/// Writes one cluster's ClusterProfile status, if it differs from what is stored.
async fn write_profile(
    name: String,
    fleet: &Fleet,
    api: &Api<ClusterProfile>,
    written: &std::sync::Mutex<Written>,
) -> kube::Result<Option<Duration>> {
    let lock = || queue::lock(written);
    let Some(member) = fleet.get(&name) else {
        lock().remove(&name);
        return Ok(None);
    };
    let next = {
        let written = lock();
        let stored = written
            .get(&name)
            .filter(|(uid, _)| *uid == member.profile_uid)
            .map(|(_, s)| s);
        let next = status(
            &member,
            fleet.leases(),
            stored.unwrap_or(&ClusterProfileStatus::default()),
            jiff::Timestamp::now(),
        );
        if stored == Some(&next) {
            return Ok(None);
        }
        next
    };
    match patch_status(api, &name, &next).await {
        Ok(()) => {
            lock().insert(name, (member.profile_uid, next));
            Ok(None)
        }
        Err(kube::Error::Api(e)) if e.code == 404 => {
            lock().remove(&name);
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

async fn patch_status(
    api: &Api<ClusterProfile>,
    name: &str,
    status: &ClusterProfileStatus,
) -> kube::Result<()> {
    let mut body = serde_json::to_value(status).unwrap_or_default();
    if let Some(obj) = body.as_object_mut() {
        // A merge patch leaves out what is absent: say explicitly what is now empty.
        obj.entry("properties").or_insert(serde_json::json!([]));
        obj.entry("version").or_insert(serde_json::Value::Null);
    }
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "status": body })),
    )
    .await
    .map(|_| ())
}

/// Turns clusters whose heartbeats stopped Unknown, and sends keepalives down every sync stream
/// once a lease, until shutdown.
pub async fn watch_leases(fleet: Arc<Fleet>, mut shutdown: watch::Receiver<bool>) {
    // Checking is cheap (a scan of the members in memory): check often, so a lost cluster shows
    // within a tenth of a second of its grace running out.
    let tick =
        (fleet.leases().lease / 20).clamp(Duration::from_millis(20), Duration::from_millis(100));
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_keepalive = Instant::now();
    loop {
        tokio::select! {
            _ = interval.tick() => {}
            _ = shutdown.changed() => return,
        }
        let now = Instant::now();
        let lost = fleet.expire_leases(now);
        if lost > 0 {
            tracing::warn!(
                clusters = lost,
                "heartbeats stopped; clusters shown Unknown"
            );
        }
        if now.duration_since(last_keepalive) >= fleet.leases().lease {
            last_keepalive = now;
            fleet.broadcast(&SyncEvent {
                event: Some(sync_event::Event::Keepalive(Keepalive {
                    unix_millis: jiff::Timestamp::now().as_millisecond(),
                })),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::sha256;

    fn condition<'a>(
        status: &'a ClusterProfileStatus,
        type_: &str,
    ) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
        status.conditions.iter().find(|c| c.type_ == type_)
    }

    #[test]
    fn a_pending_cluster_says_how_to_accept_it() {
        let member = Member::new("east", "id");
        let s = status(
            &member,
            Leases::default(),
            &ClusterProfileStatus::default(),
            jiff::Timestamp::now(),
        );
        let joined = condition(&s, CONDITION_JOINED).unwrap();
        assert_eq!(
            (joined.status.as_str(), joined.reason.as_str()),
            ("False", "PendingAcceptance")
        );
        assert!(joined.message.contains("atoll cluster accept east"));
        assert_eq!(
            condition(&s, CONDITION_CONTROL_PLANE_HEALTHY)
                .unwrap()
                .status,
            "Unknown"
        );
    }

    #[test]
    fn health_follows_heartbeats_and_long_properties_are_left_out() {
        let mut member = Member::new("east", "id");
        member.accepted = true;
        member.credential = Some(sha256(b"c"));
        member.health = Health::Ready;
        member.version = "v1.35.0".into();
        member.properties = vec![
            Property {
                name: "b.example.com".into(),
                value: "x".repeat(2000),
                last_observed_time: None,
            },
            Property {
                name: "a.example.com".into(),
                value: "1".into(),
                last_observed_time: None,
            },
        ];
        let now = jiff::Timestamp::now();
        let s = status(
            &member,
            Leases::default(),
            &ClusterProfileStatus::default(),
            now,
        );
        assert_eq!(condition(&s, CONDITION_JOINED).unwrap().status, "True");
        assert_eq!(
            condition(&s, CONDITION_CONTROL_PLANE_HEALTHY)
                .unwrap()
                .status,
            "True"
        );
        assert_eq!(s.properties.len(), 1);
        assert_eq!(
            s.version.as_ref().unwrap().kubernetes.as_deref(),
            Some("v1.35.0")
        );
        let copied = condition(&s, CONDITION_PROPERTIES_COPIED).unwrap();
        assert!(copied.message.contains("b.example.com (2000 characters)"));
        member.health = Health::Lost(None);
        let lost = status(&member, Leases::default(), &s, now);
        let healthy = condition(&lost, CONDITION_CONTROL_PLANE_HEALTHY).unwrap();
        assert_eq!(
            (healthy.status.as_str(), healthy.reason.as_str()),
            ("Unknown", "AgentLost")
        );
        assert!(
            healthy.message.contains("more than 30s (3 leases of 10s)"),
            "{}",
            healthy.message
        );
        // Nothing changed: the same status, so no write.
        assert_eq!(status(&member, Leases::default(), &lost, now), lost);
    }
}
