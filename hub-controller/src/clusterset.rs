//! ClusterSet membership (KEP-1645, KEP-2149). Membership is the label
//! `multicluster.x-k8s.io/clusterset` on a cluster's ClusterProfile; the hub is the authority that
//! admits it: the set must exist, the cluster must have an ID, the ID must be unique in the set
//! and must not change while the cluster is a member (a label holds one set, so a cluster is in at
//! most one). Admitted clusters' agents are told to write `clusterset.k8s.io`; refused ones are
//! told to remove it, and the reason shows on the ClusterProfile and in the ClusterSet's status.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use atoll_api::clusterset::{ClusterSet, ClusterSetMember, ClusterSetStatus};
use atoll_api::names::CONDITION_READY;
use atoll_proto::v1::{Membership, SyncEvent, sync_event};
use kube::api::{Api, Patch, PatchParams};
use tokio::sync::watch;

use crate::conditions::{Verdict, merge};
use crate::fleet::{Changes, Fleet, Health, Member};
use crate::queue::{self, Queue, lock};

pub use atoll_api::names::CONDITION_MEMBERSHIP_REJECTED;

/// The hub's decision about one cluster's membership.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Decision {
    /// The cluster asks for no set.
    #[default]
    None,
    /// The cluster is a member of `set`.
    Member {
        /// The ClusterSet.
        set: String,
    },
    /// The cluster asks for `set` and was refused.
    Rejected {
        /// The ClusterSet asked for.
        set: String,
        /// CamelCase reason.
        reason: &'static str,
        /// Why, and what to do.
        message: String,
    },
}

/// What the decision needs to know about one cluster.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    /// Cluster name.
    pub name: &'a str,
    /// The set its label names.
    pub label_set: Option<&'a str>,
    /// The ID the hub holds for it.
    pub cluster_id: &'a str,
    /// The ID its agent last reported.
    pub reported_cluster_id: &'a str,
    /// The last decision.
    pub previous: &'a Decision,
    /// When its profile was created.
    pub created: Option<jiff::Timestamp>,
}

/// Decides membership for every candidate, in order.
pub fn decide(sets: &BTreeSet<String>, candidates: &[Candidate<'_>]) -> Vec<Decision> {
    let mut decisions = vec![Decision::None; candidates.len()];
    let mut by_id: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for (i, c) in candidates.iter().enumerate() {
        let Some(set) = c.label_set else { continue };
        let reject = |reason, message: String| Decision::Rejected {
            set: set.to_owned(),
            reason,
            message,
        };
        let was_member = matches!(c.previous, Decision::Member { set: s } if s == set);
        decisions[i] = if !sets.contains(set) {
            reject(
                "ClusterSetNotFound",
                format!(
                    "ClusterSet {set:?} does not exist; create it (atoll clusterset create {set}) or remove the label"
                ),
            )
        } else if c.cluster_id.is_empty() {
            reject(
                "ClusterIDMissing",
                "the cluster has no ID (ClusterProperty cluster.clusterset.k8s.io); its agent writes one when it connects".to_owned(),
            )
        } else if was_member && c.reported_cluster_id != c.cluster_id {
            reject(
                "ClusterIDChanged",
                format!(
                    "the cluster ID changed from {:?} to {:?} while the cluster was in ClusterSet {set:?}; an ID must not change during membership: restore it, or remove the cluster from the set and add it again",
                    c.cluster_id, c.reported_cluster_id
                ),
            )
        } else {
            by_id.entry((set, c.cluster_id)).or_default().push(i);
            continue;
        };
    }
    for ((set, id), mut holders) in by_id {
        // Who keeps a contested ID: a cluster that already held it, then the older profile.
        holders.sort_by_key(|&i| {
            let c = &candidates[i];
            let kept = matches!(c.previous, Decision::Member { set: s } if s == set);
            (!kept, c.created, c.name)
        });
        let winner = candidates[holders[0]].name;
        decisions[holders[0]] = Decision::Member {
            set: set.to_owned(),
        };
        for &i in &holders[1..] {
            decisions[i] = Decision::Rejected {
                set: set.to_owned(),
                reason: "DuplicateClusterID",
                message: format!(
                    "cluster ID {id:?} is already used by cluster {winner:?} in ClusterSet {set:?}; IDs must be unique in a set"
                ),
            };
        }
    }
    decisions
}

/// The status a ClusterSet should show, given the members' decisions.
pub fn set_status<'a>(
    set: &str,
    generation: Option<i64>,
    members: impl IntoIterator<Item = &'a Member>,
    previous: &ClusterSetStatus,
    now: jiff::Timestamp,
) -> ClusterSetStatus {
    let mut admitted: Vec<ClusterSetMember> = Vec::new();
    let mut rejected: Vec<String> = Vec::new();
    for m in members {
        match &m.membership {
            Decision::Member { set: s } if s == set => admitted.push(ClusterSetMember {
                name: m.name.clone(),
                cluster_id: Some(m.cluster_id.clone()),
                ready: m.health == Health::Ready,
            }),
            Decision::Rejected {
                set: s, message, ..
            } if s == set => {
                rejected.push(format!("{}: {message}", m.name));
            }
            _ => {}
        }
    }
    admitted.sort_by(|a, b| a.name.cmp(&b.name));
    rejected.sort();
    let count = admitted.len();
    let ready = admitted.iter().filter(|m| m.ready).count();
    let ready_verdict = if count == 0 {
        Verdict::new(
            CONDITION_READY,
            "True",
            "NoMembers",
            "the set has no members yet",
        )
    } else if ready == count {
        Verdict::new(
            CONDITION_READY,
            "True",
            "AllMembersHealthy",
            format!("{ready} of {count} members are healthy"),
        )
    } else {
        let unhealthy: Vec<&str> = admitted
            .iter()
            .filter(|m| !m.ready)
            .map(|m| m.name.as_str())
            .take(10)
            .collect();
        Verdict::new(
            CONDITION_READY,
            "False",
            "MembersUnhealthy",
            format!(
                "{ready} of {count} members are healthy; not healthy: {}",
                unhealthy.join(", ")
            ),
        )
    };
    let rejected_verdict = if rejected.is_empty() {
        Verdict::new(
            CONDITION_MEMBERSHIP_REJECTED,
            "False",
            "NoneRejected",
            "every cluster that asked is a member",
        )
    } else {
        let shown: Vec<&str> = rejected.iter().map(String::as_str).take(10).collect();
        let more = rejected.len().saturating_sub(shown.len());
        let mut message = shown.join("; ");
        if more > 0 {
            message.push_str(&format!("; and {more} more"));
        }
        Verdict::new(
            CONDITION_MEMBERSHIP_REJECTED,
            "True",
            "MembershipRejected",
            message,
        )
    };
    ClusterSetStatus {
        observed_generation: generation,
        member_count: count as i32,
        ready_count: ready as i32,
        members: admitted,
        conditions: merge(
            &previous.conditions,
            vec![ready_verdict, rejected_verdict],
            generation,
            now,
        ),
    }
}

/// The membership controller: whenever labels, IDs, health or sets change, decides every
/// cluster's membership at once (a cluster ID belongs to one set, so the decision is the fleet's,
/// not one set's) and tells the agents whose membership changed; then each ClusterSet's status is
/// written on its own, on a work queue (per-set backoff, a span per write).
pub async fn run(fleet: Arc<Fleet>, client: kube::Client, shutdown: watch::Receiver<bool>) {
    let api: Api<ClusterSet> = Api::all(client);
    let written: Mutex<HashMap<String, ClusterSetStatus>> = Mutex::default();
    let queue = Queue::default();
    let decisions = async {
        loop {
            fleet.membership_dirty.notified().await;
            // Let a burst of changes settle into one decision.
            tokio::time::sleep(Duration::from_millis(100)).await;
            decide_membership(&fleet);
            let gone: Vec<String> = lock(&written).keys().cloned().collect();
            for set in fleet.cluster_sets().into_iter().chain(gone) {
                queue.add(set);
            }
        }
    };
    let statuses = queue::run(
        &queue,
        STATUS_CONCURRENCY,
        "ClusterSet status",
        &fleet.metrics,
        |set| write_status(set, &fleet, &api, &written),
        shutdown,
    );
    tokio::select! {
        () = decisions => {}
        () = statuses => {}
    }
}

/// ClusterSet statuses written at once.
const STATUS_CONCURRENCY: usize = 4;

/// Decides every cluster's membership again and tells the agents whose membership changed.
fn decide_membership(fleet: &Fleet) {
    let sets = fleet.cluster_sets();
    // Decided on the members in place (a copy of thousands of members at every join burst
    // cost more than the decision).
    let changed: Vec<(String, Decision)> = fleet.with_members(|members| {
        // Undecided until there is something to decide on: a cluster not accepted yet, or one
        // whose agent has still to join and say its ID (a hosted cluster the hub made a moment
        // ago).
        let mut candidates: Vec<Candidate<'_>> = members
            .values()
            .filter(|m| m.accepted && !(m.cluster_id.is_empty() && m.credential.is_none()))
            .map(|m| Candidate {
                name: &m.name,
                label_set: m.label_set.as_deref(),
                cluster_id: &m.cluster_id,
                reported_cluster_id: &m.reported_cluster_id,
                previous: &m.membership,
                created: m.created,
            })
            .collect();
        candidates.sort_by(|a, b| a.name.cmp(b.name));
        let decisions = decide(&sets, &candidates);
        candidates
            .iter()
            .zip(decisions)
            .filter(|(c, d)| c.previous != d)
            .map(|(c, d)| (c.name.to_owned(), d))
            .collect()
    });
    for (name, decision) in changed {
        let new_set = match &decision {
            Decision::Member { set } => set.clone(),
            _ => String::new(),
        };
        tracing::info!(cluster = %name, ?decision, "ClusterSet membership changed");
        fleet.update(&name, |m| {
            m.membership = decision.clone();
            (
                Changes {
                    profile: true,
                    membership: false,
                },
                (),
            )
        });
        fleet.send(&name, membership_event(&new_set));
        fleet.placements_dirty.notify_one();
    }
}

/// Writes one ClusterSet's status, if it changed; forgets a set that is gone.
async fn write_status(
    set: String,
    fleet: &Fleet,
    api: &Api<ClusterSet>,
    written: &Mutex<HashMap<String, ClusterSetStatus>>,
) -> kube::Result<Option<Duration>> {
    if !fleet.cluster_sets().contains(&set) {
        lock(written).remove(&set);
        return Ok(None);
    }
    let known = lock(written).get(&set).cloned();
    let previous = match known {
        Some(s) => s,
        None => match api.get_opt(&set).await? {
            Some(obj) => obj.status.unwrap_or_default(),
            None => return Ok(None),
        },
    };
    let now = jiff::Timestamp::now();
    let status =
        fleet.with_members(|members| set_status(&set, None, members.values(), &previous, now));
    if lock(written).get(&set) == Some(&status) {
        return Ok(None);
    }
    let mut body = serde_json::to_value(&status).unwrap_or_default();
    if let Some(obj) = body.as_object_mut() {
        obj.entry("members").or_insert(serde_json::json!([]));
    }
    let patch = Patch::Merge(serde_json::json!({ "status": body }));
    match api
        .patch_status(&set, &PatchParams::default(), &patch)
        .await
    {
        Ok(_) => {
            lock(written).insert(set, status);
        }
        Err(kube::Error::Api(e)) if e.code == 404 => {
            lock(written).remove(&set);
        }
        Err(e) => return Err(e),
    }
    Ok(None)
}

/// The event telling an agent its membership (`""` for none).
pub fn membership_event(set: &str) -> SyncEvent {
    SyncEvent {
        event: Some(sync_event::Event::Membership(Membership {
            cluster_set: set.to_owned(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn candidate<'a>(
        name: &'a str,
        set: Option<&'a str>,
        id: &'a str,
        previous: &'a Decision,
    ) -> Candidate<'a> {
        Candidate {
            name,
            label_set: set,
            cluster_id: id,
            reported_cluster_id: id,
            previous,
            created: None,
        }
    }

    fn reason(d: &Decision) -> &'static str {
        match d {
            Decision::Rejected { reason, .. } => reason,
            Decision::Member { .. } => "Member",
            Decision::None => "None",
        }
    }

    #[test]
    fn members_need_an_existing_set_and_an_id() {
        let none = Decision::None;
        let out = decide(
            &sets(&["prod"]),
            &[
                candidate("a", Some("prod"), "id-a", &none),
                candidate("b", Some("staging"), "id-b", &none),
                candidate("c", Some("prod"), "", &none),
                candidate("d", None, "id-d", &none),
            ],
        );
        assert_eq!(out[0], Decision::Member { set: "prod".into() });
        assert_eq!(reason(&out[1]), "ClusterSetNotFound");
        assert!(
            matches!(&out[1], Decision::Rejected { message, .. } if message.contains("\"staging\" does not exist"))
        );
        assert_eq!(reason(&out[2]), "ClusterIDMissing");
        assert_eq!(out[3], Decision::None);
    }

    #[test]
    fn a_duplicate_id_is_refused_and_the_earlier_member_keeps_it() {
        let member = Decision::Member { set: "prod".into() };
        let none = Decision::None;
        // "z" was admitted first; "a" sorts earlier by name but arrives later.
        let out = decide(
            &sets(&["prod"]),
            &[
                candidate("a", Some("prod"), "same", &none),
                candidate("z", Some("prod"), "same", &member),
            ],
        );
        assert_eq!(out[1], member);
        assert_eq!(reason(&out[0]), "DuplicateClusterID");
        assert!(
            matches!(&out[0], Decision::Rejected { message, .. } if message.contains("already used by cluster \"z\""))
        );
        // The same ID in two different sets is fine.
        let out = decide(
            &sets(&["prod", "dev"]),
            &[
                candidate("a", Some("dev"), "same", &none),
                candidate("z", Some("prod"), "same", &member),
            ],
        );
        assert_eq!(reason(&out[0]), "Member");
        assert_eq!(reason(&out[1]), "Member");
    }

    #[test]
    fn an_id_that_changes_during_membership_is_refused() {
        let member = Decision::Member { set: "prod".into() };
        let mut c = candidate("a", Some("prod"), "old", &member);
        c.reported_cluster_id = "new";
        let out = decide(&sets(&["prod"]), &[c]);
        assert_eq!(reason(&out[0]), "ClusterIDChanged");
    }

    #[test]
    fn set_status_counts_members_and_lists_refusals() {
        let mut a = Member::new("a", "id-a");
        a.membership = Decision::Member { set: "prod".into() };
        a.health = Health::Ready;
        let mut b = Member::new("b", "id-b");
        b.membership = Decision::Member { set: "prod".into() };
        let mut c = Member::new("c", "id-a");
        c.membership = Decision::Rejected {
            set: "prod".into(),
            reason: "DuplicateClusterID",
            message: "cluster ID \"id-a\" is already used".into(),
        };
        let now = jiff::Timestamp::now();
        let status = set_status(
            "prod",
            Some(1),
            &[a, b, c],
            &ClusterSetStatus::default(),
            now,
        );
        assert_eq!(status.member_count, 2);
        assert_eq!(status.ready_count, 1);
        assert_eq!(
            status
                .members
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        let ready = &status.conditions[0];
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "MembersUnhealthy")
        );
        assert!(ready.message.contains("not healthy: b"));
        let rejected = &status.conditions[1];
        assert_eq!(rejected.status, "True");
        assert!(rejected.message.starts_with("c: cluster ID"));
    }
}
