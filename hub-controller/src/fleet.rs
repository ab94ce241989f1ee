//! The hub's in-memory view of its member clusters: who they are (records and credential hashes),
//! what their agents last reported, their ClusterSet membership and their open sync streams.
//!
//! The API server holds the durable truth (member records as Secrets in `atoll-system`,
//! ClusterProfiles, ClusterSets); this view is rebuilt from it at start and kept current by
//! watches, so the gRPC paths answer from memory and write only when something changed.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use atoll_api::inventory::{AccessProvider, Property};
use atoll_proto::v1::SyncEvent;
use tokio::sync::{Notify, mpsc};

use crate::clusterset::Decision;
use crate::digest::Digest;
use crate::record::Record;

/// The sending half of an agent's sync stream. Events are boxed: a channel allocates its slots
/// 32 at a time, and an agent's stream lives as long as its connection (32 events in place were
/// a few KiB per member cluster, most of the time empty).
pub type SyncSender = mpsc::Sender<Box<SyncEvent>>;

/// How the hub judges heartbeats.
#[derive(Debug, Clone, Copy)]
pub struct Leases {
    /// How often an agent must send a heartbeat.
    pub lease: Duration,
    /// How many leases may pass without one before the cluster is shown Unknown.
    pub missed: u32,
}

impl Leases {
    /// How long the hub waits for a heartbeat before it calls a cluster Unknown.
    pub fn grace(&self) -> Duration {
        self.lease * self.missed
    }
}

impl Default for Leases {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(10),
            missed: 3,
        }
    }
}

/// The health of a member's control plane, as the hub concluded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// No heartbeat yet since the cluster was accepted or the hub started.
    Awaiting,
    /// A fresh heartbeat reported a ready API server.
    Ready,
    /// A fresh heartbeat reported an API server that is not ready, and why.
    NotReady(String),
    /// Heartbeats stopped: the last one arrived at this wall-clock time (if ever).
    Lost(Option<jiff::Timestamp>),
}

/// Who a credential identifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The member cluster.
    pub name: String,
    /// When the credential stops working (`None`: never).
    pub expires: Option<jiff::Timestamp>,
    /// Whether it is the member's current credential, not the one a renewal replaced.
    pub current: bool,
}

/// Why a credential does not identify a member.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "unknown cluster credential: the cluster was removed from the hub or never joined; join again with a bootstrap token"
    )]
    Unknown,
    #[error(
        "the cluster credential expired at {0}: the agent renews it before then, or joins again with a bootstrap token"
    )]
    Expired(jiff::Timestamp),
}

/// One member cluster.
#[derive(Debug, Clone)]
pub struct Member {
    /// The cluster's name: its ClusterProfile, its namespace on the hub.
    pub name: String,
    /// Whether an administrator (or auto-accept) let it in.
    pub accepted: bool,
    /// Hash of the secret the agent presented when it asked to join.
    pub join_secret: Option<Digest>,
    /// Hash of the cluster's credential, once issued.
    pub credential: Option<Digest>,
    /// When the credential stops working (`None`: never).
    pub credential_expires: Option<jiff::Timestamp>,
    /// The credential the current one replaced, and until when it still works.
    pub previous: Option<(Digest, jiff::Timestamp)>,
    /// The cluster ID the hub holds for it.
    pub cluster_id: String,
    /// The cluster ID its agent last reported (differs from `cluster_id` only when it changed
    /// while the cluster was in a ClusterSet).
    pub reported_cluster_id: String,
    /// Kubernetes version from the last heartbeat or the join.
    pub version: String,
    /// ClusterProperties from the last heartbeat or the join.
    pub properties: Vec<Property>,
    /// Why the ClusterProperties the hub refused (a name or value it cannot copy) were left
    /// out of `properties`.
    pub refused_properties: Vec<String>,
    /// The control plane's health (set through [`Member::set_health`]).
    pub health: Health,
    /// When the control plane last turned ready or not ready, as the hub saw it.
    pub health_since: Instant,
    /// When the last heartbeat arrived (or the hub started watching).
    pub last_heartbeat: Instant,
    /// Wall-clock time of the last heartbeat.
    pub last_heartbeat_at: Option<jiff::Timestamp>,
    /// The ClusterSet its ClusterProfile's label names.
    pub label_set: Option<String>,
    /// Its ClusterProfile's labels (what WorkPlacement label selectors match).
    pub labels: std::collections::BTreeMap<String, String>,
    /// When its ClusterProfile was created (orders who keeps a contested cluster ID).
    pub created: Option<jiff::Timestamp>,
    /// The UID of its ClusterProfile, as last seen.
    pub profile_uid: Option<String>,
    /// The resourceVersion of the newest record applied.
    pub record_version: u64,
    /// The hub's membership decision.
    pub membership: Decision,
    /// The open sync stream of its agent.
    pub stream: Option<SyncSender>,
    /// The UID of the HostedCluster whose control plane this is, when the hub runs it.
    pub hosted_by: Option<String>,
    /// Why the hub stopped this hosted cluster's control plane on purpose (it is suspended), so
    /// that its profile says so rather than calling it lost.
    pub suspended: Option<String>,
    /// Why the ClusterSet its agent asked for at the join was not granted.
    pub set_not_granted: Option<String>,
    /// How the inventory's consumers reach the cluster (`status.accessProviders`), when the hub
    /// knows it (hosted clusters); `None` leaves what the profile holds.
    pub access: Option<Vec<AccessProvider>>,
}

impl Member {
    /// A member as a join creates it.
    pub fn new(name: &str, cluster_id: &str) -> Self {
        Self {
            name: name.to_owned(),
            accepted: false,
            join_secret: None,
            credential: None,
            credential_expires: None,
            previous: None,
            cluster_id: cluster_id.to_owned(),
            reported_cluster_id: cluster_id.to_owned(),
            version: String::new(),
            properties: Vec::new(),
            health: Health::Awaiting,
            health_since: Instant::now(),
            last_heartbeat: Instant::now(),
            last_heartbeat_at: None,
            label_set: None,
            labels: Default::default(),
            created: None,
            profile_uid: None,
            record_version: 0,
            membership: Decision::None,
            stream: None,
            hosted_by: None,
            suspended: None,
            set_not_granted: None,
            access: None,
            refused_properties: Vec::new(),
        }
    }

    /// Sets the control plane's health, noting when it turned ready or not ready.
    pub fn set_health(&mut self, health: Health) {
        if (self.health == Health::Ready) != (health == Health::Ready) {
            self.health_since = Instant::now();
        }
        self.health = health;
    }

    /// How long the control plane has not been ready at `now` (`None`: it is ready): since the
    /// last heartbeat for a cluster whose heartbeats stopped, since it said so otherwise.
    pub fn unready_for(&self, now: Instant) -> Option<Duration> {
        if self.health == Health::Ready {
            return None;
        }
        let since = match self.health {
            Health::Lost(_) | Health::Awaiting => self.health_since.min(self.last_heartbeat),
            _ => self.health_since,
        };
        Some(now.saturating_duration_since(since))
    }

    /// The ClusterSet this member belongs to, if admitted.
    pub fn cluster_set(&self) -> Option<&str> {
        match &self.membership {
            Decision::Member { set } => Some(set),
            _ => None,
        }
    }
}

/// What changed in a member, so the right loops wake.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Changes {
    /// The ClusterProfile status needs a write.
    pub profile: bool,
    /// ClusterSet membership needs a new decision (label, ID, health or set changes).
    pub membership: bool,
}

/// The shared view.
pub struct Fleet {
    inner: Mutex<Inner>,
    leases: Leases,
    /// Wakes the ClusterProfile status writer.
    pub profiles_dirty: Notify,
    /// Wakes the ClusterSet membership loop.
    pub membership_dirty: Notify,
    /// Wakes the WorkPlacement loop (membership, labels, health or Works changed).
    pub placements_dirty: Notify,
    /// Where the hub's controllers and services, which all share this view, count what they
    /// do.
    pub metrics: Arc<crate::metrics::Metrics>,
}

#[derive(Default)]
struct Inner {
    members: HashMap<String, Member>,
    by_credential: HashMap<Digest, String>,
    dirty: HashSet<String>,
    sets: BTreeSet<String>,
}

impl Fleet {
    /// An empty view.
    pub fn new(leases: Leases) -> Arc<Self> {
        Self::with_metrics(leases, Arc::default())
    }

    /// An empty view whose users count into `metrics`.
    pub fn with_metrics(leases: Leases, metrics: Arc<crate::metrics::Metrics>) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner::default()),
            leases,
            profiles_dirty: Notify::new(),
            membership_dirty: Notify::new(),
            placements_dirty: Notify::new(),
            metrics,
        })
    }

    /// Looks at every member in turn, under the view's lock (keep `f` short).
    pub fn each_member(&self, mut f: impl FnMut(&Member)) {
        for member in self.lock().members.values() {
            f(member);
        }
    }

    /// The lease settings.
    pub fn leases(&self) -> Leases {
        self.leases
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain data behind; carry on with it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The member a credential belongs to, if it still works at `now`.
    pub fn identify(&self, credential: &Digest, now: jiff::Timestamp) -> Result<Identity, Refused> {
        let inner = self.lock();
        let name = inner
            .by_credential
            .get(credential)
            .ok_or(Refused::Unknown)?;
        let member = inner.members.get(name).ok_or(Refused::Unknown)?;
        let current = member.credential.as_ref() == Some(credential);
        let expires = if current {
            member.credential_expires
        } else {
            member
                .previous
                .as_ref()
                .filter(|(d, _)| d == credential)
                .map(|(_, until)| *until)
        };
        match expires {
            Some(at) if at <= now => Err(Refused::Expired(at)),
            _ => Ok(Identity {
                name: name.clone(),
                expires,
                current,
            }),
        }
    }

    /// A copy of one member.
    pub fn get(&self, name: &str) -> Option<Member> {
        self.lock().members.get(name).cloned()
    }

    /// What `read` makes of every member, read in place (under the fleet's lock: keep it quick,
    /// no waiting); cheaper than a copy of every member when only a little of each is wanted.
    pub fn with_members<R>(&self, read: impl FnOnce(&HashMap<String, Member>) -> R) -> R {
        read(&self.lock().members)
    }

    /// A copy of every member.
    pub fn members(&self) -> Vec<Member> {
        self.lock().members.values().cloned().collect()
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.lock().members.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inserts or replaces a member's durable record (from a join or a watch of the records),
    /// keeping what only memory knows (health, streams, membership). `version` is the record's
    /// resourceVersion: a record older than the one already applied (a watch event arriving
    /// after the hub's own later write) is ignored, so a credential just issued is never undone.
    pub fn upsert_record(&self, record: &Record, version: u64) {
        let name = record.name.as_str();
        let mut guard = self.lock();
        let inner = &mut *guard;
        let member = inner
            .members
            .entry(name.to_owned())
            .or_insert_with(|| Member::new(name, &record.cluster_id));
        if version != 0 && version <= member.record_version {
            return;
        }
        member.record_version = version;
        let (accepted, join_secret, credential, cluster_id) = (
            record.accepted,
            record.join_secret,
            record.credential,
            record.cluster_id.as_str(),
        );
        let was_accepted = member.accepted;
        if let Some(old) = member.credential.take() {
            inner.by_credential.remove(&old);
        }
        if let Some((old, _)) = member.previous.take() {
            inner.by_credential.remove(&old);
        }
        member.accepted = accepted;
        member.hosted_by = record.hosted_by.clone();
        member.join_secret = join_secret;
        member.credential = credential;
        member.credential_expires = record.credential_expires;
        member.previous = record.previous;
        if let Some((previous, _)) = record.previous {
            inner.by_credential.insert(previous, name.to_owned());
        }
        if member.cluster_id.is_empty() || member.cluster_set().is_none() {
            member.cluster_id = cluster_id.to_owned();
        }
        if let Some(credential) = credential {
            inner.by_credential.insert(credential, name.to_owned());
        }
        if accepted && !was_accepted {
            member.last_heartbeat = Instant::now();
            member.set_health(Health::Awaiting);
        }
        inner.dirty.insert(name.to_owned());
        drop(guard);
        self.profiles_dirty.notify_one();
        self.membership_dirty.notify_one();
    }

    /// Forgets a member; its credential stops working and its stream ends.
    pub fn remove(&self, name: &str) -> Option<Member> {
        let mut inner = self.lock();
        let member = inner.members.remove(name)?;
        if let Some(credential) = &member.credential {
            inner.by_credential.remove(credential);
        }
        if let Some((previous, _)) = &member.previous {
            inner.by_credential.remove(previous);
        }
        inner.dirty.remove(name);
        drop(inner);
        self.membership_dirty.notify_one();
        Some(member)
    }

    /// Applies `change` to a member and wakes the loops that must react. Returns `None` when
    /// there is no such member.
    pub fn update<T>(
        &self,
        name: &str,
        change: impl FnOnce(&mut Member) -> (Changes, T),
    ) -> Option<T> {
        let mut inner = self.lock();
        let member = inner.members.get_mut(name)?;
        let (changes, out) = change(member);
        if changes.profile {
            inner.dirty.insert(name.to_owned());
        }
        drop(inner);
        if changes.profile {
            self.profiles_dirty.notify_one();
        }
        if changes.membership {
            self.membership_dirty.notify_one();
            self.placements_dirty.notify_one();
        }
        Some(out)
    }

    /// Takes the names whose ClusterProfile status may need a write.
    pub fn take_dirty(&self) -> Vec<String> {
        self.lock().dirty.drain().collect()
    }

    /// Marks a member's ClusterProfile status for another write attempt.
    pub fn mark_dirty(&self, name: &str) {
        self.lock().dirty.insert(name.to_owned());
        self.profiles_dirty.notify_one();
    }

    /// Records that a ClusterSet exists (`true`) or was deleted (`false`).
    pub fn set_cluster_set(&self, name: &str, exists: bool) {
        let mut inner = self.lock();
        let changed = if exists {
            inner.sets.insert(name.to_owned())
        } else {
            inner.sets.remove(name)
        };
        drop(inner);
        if changed {
            self.membership_dirty.notify_one();
        }
    }

    /// The ClusterSets that exist.
    pub fn cluster_sets(&self) -> BTreeSet<String> {
        self.lock().sets.clone()
    }

    /// Registers an agent's sync stream, replacing an older one (which then ends).
    pub fn attach_stream(&self, name: &str, sender: SyncSender) -> bool {
        self.update(name, |m| {
            m.stream = Some(sender);
            (Changes::default(), ())
        })
        .is_some()
    }

    /// Sends an event to a member's agent if it is connected.
    pub fn send(&self, name: &str, event: SyncEvent) {
        let mut inner = self.lock();
        if let Some(member) = inner.members.get_mut(name) {
            offer(name, member, event);
        }
    }

    /// Sends an event to every connected agent.
    pub fn broadcast(&self, event: &SyncEvent) {
        let mut inner = self.lock();
        for (name, member) in inner.members.iter_mut() {
            offer(name, member, event.clone());
        }
    }

    /// Ends every agent's sync stream (at shutdown, so that connections can close).
    pub fn close_streams(&self) {
        for member in self.lock().members.values_mut() {
            member.stream = None;
        }
    }

    /// Marks accepted members whose heartbeats stopped as lost; returns how many changed.
    pub fn expire_leases(&self, now: Instant) -> usize {
        let grace = self.leases.grace();
        let mut guard = self.lock();
        let inner = &mut *guard;
        let mut changed = 0;
        for member in inner.members.values_mut() {
            if !member.accepted || matches!(member.health, Health::Lost(_)) {
                continue;
            }
            if now.duration_since(member.last_heartbeat) > grace {
                let lost = Health::Lost(member.last_heartbeat_at);
                member.set_health(lost);
                inner.dirty.insert(member.name.clone());
                changed += 1;
            }
        }
        drop(guard);
        if changed > 0 {
            self.profiles_dirty.notify_one();
            self.membership_dirty.notify_one();
            // Placements that fail over count from here.
            self.placements_dirty.notify_one();
        }
        changed
    }
}

/// Queues an event on a member's sync stream. A stream that has gone is forgotten; so is one
/// whose agent fell `SYNC_BUFFER` events behind: dropping it ends the stream once the agent has
/// read what it holds, and the agent reconnects and receives what it missed, where keeping the
/// stream and skipping the event would leave the agent without it.
fn offer(name: &str, member: &mut Member, event: SyncEvent) {
    let Some(stream) = &member.stream else {
        return;
    };
    match stream.try_send(Box::new(event)) {
        Ok(()) => {}
        Err(mpsc::error::TrySendError::Closed(_)) => member.stream = None,
        Err(mpsc::error::TrySendError::Full(_)) => {
            tracing::warn!(cluster = %name, "the agent fell behind its sync stream; ending it so that it reconnects and catches up");
            member.stream = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::sha256;

    fn record(name: &str, accepted: bool, credential: Option<Digest>) -> Record {
        Record {
            name: name.into(),
            accepted,
            join_secret: None,
            credential,
            credential_expires: None,
            previous: None,
            cluster_id: format!("id-{name}"),
            hosted_by: None,
        }
    }

    fn fleet() -> Arc<Fleet> {
        Fleet::new(Leases {
            lease: Duration::from_millis(10),
            missed: 3,
        })
    }

    #[test]
    fn credentials_identify_their_member_until_removed_or_replaced() {
        let fleet = fleet();
        let now = jiff::Timestamp::now();
        let identify = |d: &Digest| fleet.identify(d, now).ok().map(|i| i.name);
        let first = sha256(b"first");
        fleet.upsert_record(&record("a", true, Some(first)), 1);
        assert_eq!(identify(&first).as_deref(), Some("a"));
        let second = sha256(b"second");
        fleet.upsert_record(&record("a", true, Some(second)), 3);
        assert_eq!(identify(&first), None);
        assert_eq!(identify(&second).as_deref(), Some("a"));
        // A late watch event of an older version does not undo the newer credential.
        fleet.upsert_record(&record("a", true, None), 2);
        assert_eq!(identify(&second).as_deref(), Some("a"));
        fleet.remove("a");
        assert_eq!(identify(&second), None);
    }

    #[test]
    fn credentials_expire_and_a_renewed_ones_predecessor_works_until_its_time() {
        let fleet = fleet();
        let now: jiff::Timestamp = "2026-12-01T12:00:00Z".parse().unwrap();
        let hour = jiff::SignedDuration::from_hours(1);
        let (old, new) = (sha256(b"old"), sha256(b"new"));
        let mut renewed = record("a", true, Some(new));
        renewed.credential_expires = Some(now + hour * 24);
        renewed.previous = Some((old, now + hour));
        fleet.upsert_record(&renewed, 1);
        let who = fleet.identify(&new, now).unwrap();
        assert_eq!((who.name.as_str(), who.current), ("a", true));
        let who = fleet.identify(&old, now).unwrap();
        assert_eq!(
            (who.name.as_str(), who.current, who.expires),
            ("a", false, Some(now + hour))
        );
        assert_eq!(
            fleet.identify(&old, now + hour),
            Err(Refused::Expired(now + hour))
        );
        assert_eq!(
            fleet.identify(&new, now + hour * 24),
            Err(Refused::Expired(now + hour * 24))
        );
        assert_eq!(
            fleet.identify(&sha256(b"other"), now),
            Err(Refused::Unknown)
        );
        // Another renewal forgets the oldest.
        let mut again = record("a", true, Some(sha256(b"newer")));
        again.previous = Some((new, now + hour));
        fleet.upsert_record(&again, 2);
        assert_eq!(fleet.identify(&old, now), Err(Refused::Unknown));
        fleet.remove("a");
        assert_eq!(fleet.identify(&new, now), Err(Refused::Unknown));
    }

    #[test]
    fn an_agent_that_falls_behind_loses_its_stream_not_an_event() {
        let fleet = fleet();
        fleet.upsert_record(&record("a", true, None), 1);
        let (sender, mut receiver) = mpsc::channel(2);
        assert!(fleet.attach_stream("a", sender));
        let event = |n: &str| SyncEvent {
            event: Some(atoll_proto::v1::sync_event::Event::WorkDelete(
                atoll_proto::v1::WorkDelete {
                    name: n.into(),
                    uid: n.into(),
                },
            )),
        };
        for n in ["1", "2", "3", "4"] {
            fleet.send("a", event(n));
        }
        // The agent reads what was queued, then its stream ends (it reconnects and resyncs)
        // rather than carrying on without the third event.
        assert_eq!(*receiver.try_recv().unwrap(), event("1"));
        assert_eq!(*receiver.try_recv().unwrap(), event("2"));
        assert!(matches!(
            receiver.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }

    #[test]
    fn missed_leases_turn_an_accepted_member_lost_once() {
        let fleet = fleet();
        fleet.upsert_record(&record("a", true, None), 1);
        fleet.upsert_record(&record("pending", false, None), 2);
        fleet.take_dirty();
        let start = Instant::now();
        assert_eq!(fleet.expire_leases(start + Duration::from_millis(20)), 0);
        assert_eq!(fleet.expire_leases(start + Duration::from_millis(40)), 1);
        assert_eq!(fleet.get("a").unwrap().health, Health::Lost(None));
        assert_eq!(fleet.take_dirty(), vec!["a".to_owned()]);
        assert_eq!(fleet.expire_leases(start + Duration::from_millis(80)), 0);
        assert_eq!(fleet.get("pending").unwrap().health, Health::Awaiting);
    }
}
