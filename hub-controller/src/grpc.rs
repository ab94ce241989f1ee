//! The gRPC service agents call (`atoll.hub.v1.Hub`). Join authenticates with a bootstrap token;
//! every other call with the cluster's credential, from which the hub derives who is calling
//! before the message is read (`guard`, which also caps each method's message size and paces
//! sources whose joins fail; `listener` bounds the open connections). A request naming another
//! cluster is refused with PERMISSION_DENIED before anything is read or written. A replica
//! that does not lead answers every call with UNAVAILABLE (`standby`).

pub mod guard;
pub mod listener;
pub mod standby;

use std::sync::Arc;
use std::time::Instant;

use atoll_api::inventory::{Property, is_dns_label, validate_property};
use atoll_api::names::{PROPERTY_CLUSTER_ID, SYSTEM_NAMESPACE};
use atoll_proto::v1::hub_server::Hub;
use atoll_proto::v1::{
    HeartbeatRequest, HeartbeatResponse, JoinRequest, JoinResponse, RenewCredentialRequest,
    RenewCredentialResponse, SyncEvent, SyncRequest, WorkStatusAck, WorkStatusReport,
    join_response,
};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rand::Rng as _;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::bootstrap::{self, Token};
use crate::clusterset::membership_event;
use crate::digest::Digest;
use crate::digest::sha256;
use crate::fleet::{Changes, Fleet, Health, Identity, Member};
use crate::inventory::{ensure_namespace, ensure_profile};
use crate::record::{self, Record};
use crate::work::{self, WorkIndex};

/// The most ClusterProperties a profile carries.
const PROPERTIES_MAX: usize = 256;
/// The most reasons a profile gives for properties it left out; the rest are counted.
const REFUSED_REASONS_MAX: usize = 16;
/// The shortest join secret the hub accepts.
const JOIN_SECRET_MIN_LEN: usize = 16;
/// How many events may wait for a slow agent before the hub drops its stream (the agent then
/// reconnects and receives what it missed).
const SYNC_BUFFER: usize = 256;

/// What the sync stream does with each event its channel holds (see [`crate::fleet::SyncSender`]).
type Unbox = fn(Box<SyncEvent>) -> Result<SyncEvent, Status>;
/// How long a call waits for the hub's first list of Works before it is told to try again.
const WORKS_LOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// The most Works an agent may list as its own when it opens a sync stream (which fit in
/// `guard::SYNC_MAX_BYTES` with names of any length).
const SYNC_KNOWN_MAX: usize = 25_000;
/// The longest health message and Kubernetes version an agent may report, in characters; longer
/// ones are cut.
const HEALTH_MESSAGE_MAX_CHARS: usize = 1024;
/// See [`HEALTH_MESSAGE_MAX_CHARS`].
const VERSION_MAX_CHARS: usize = 64;
/// The largest Work status an agent may report, in bytes.
const STATUS_MAX_BYTES: usize = 1024 * 1024;

/// The hub's side of the protocol.
pub struct HubService {
    fleet: Arc<Fleet>,
    works: Arc<WorkIndex>,
    client: kube::Client,
    auto_accept: bool,
    joins: Arc<guard::JoinLimiter>,
    /// The bootstrap tokens a watch has seen.
    tokens: Arc<bootstrap::Tokens>,
    credential_lifetime: std::time::Duration,
    /// Work status writes in flight to the API server. Each report is one write; a fleet
    /// reporting at once would otherwise send thousands together, past the API server's
    /// in-flight limit (which answers 429), where waiting here costs nothing.
    status_writes: Arc<tokio::sync::Semaphore>,
}

/// Work status writes the hub sends the API server at once: well under kube-apiserver's default
/// of 200 mutating requests in flight, which the hub's other writes share.
pub const STATUS_WRITES_IN_FLIGHT: usize = 96;

impl HubService {
    /// A service over the fleet view, writing through `client`; failed joins are counted in
    /// `joins`, which the guard in front of it reads; joins find their bootstrap token in
    /// `tokens` (fed by [`crate::sources::bootstrap_tokens`]) or else read it.
    pub fn new(
        fleet: Arc<Fleet>,
        works: Arc<WorkIndex>,
        client: kube::Client,
        auto_accept: bool,
        joins: Arc<guard::JoinLimiter>,
        tokens: Arc<bootstrap::Tokens>,
        credential_lifetime: std::time::Duration,
    ) -> Self {
        Self {
            fleet,
            works,
            client,
            auto_accept,
            joins,
            tokens,
            credential_lifetime,
            status_writes: Arc::new(tokio::sync::Semaphore::new(STATUS_WRITES_IN_FLIGHT)),
        }
    }

    /// When a credential issued now stops working.
    fn credential_expiry(&self) -> jiff::Timestamp {
        let now = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
            .unwrap_or_else(|_| jiff::Timestamp::now());
        jiff::SignedDuration::try_from(self.credential_lifetime)
            .ok()
            .and_then(|lifetime| now.checked_add(lifetime).ok())
            .unwrap_or(jiff::Timestamp::MAX)
    }

    /// The cluster a call's credential belongs to (as the guard found it), checked against the
    /// name the call states.
    fn identify<T>(&self, request: &Request<T>, stated: &str) -> Result<String, Status> {
        self.caller(request, stated).map(|identity| identity.name)
    }

    /// Who a call's credential identifies (as the guard found it), checked against the name the
    /// call states.
    fn caller<T>(&self, request: &Request<T>, stated: &str) -> Result<Identity, Status> {
        let identity = request
            .extensions()
            .get::<guard::Caller>()
            .map(|c| c.0.clone())
            .ok_or_else(|| Status::unauthenticated("the call was not authenticated"))?;
        let name = identity.name.as_str();
        if stated != name {
            return Err(Status::permission_denied(format!(
                "this credential belongs to cluster {name:?}, not {stated:?}"
            )));
        }
        Ok(identity)
    }

    /// Waits for the hub's first list of Works: until then it would tell an agent that every
    /// Work it has is gone (and the agent would delete what they applied).
    async fn works_loaded(&self) -> Result<(), Status> {
        tokio::time::timeout(WORKS_LOAD_WAIT, self.works.wait_loaded())
            .await
            .map_err(|_| Status::unavailable("the hub is still loading its Works; try again"))
    }

    fn lease_seconds(&self) -> u32 {
        self.fleet.leases().lease.as_secs().max(1) as u32
    }

    async fn issue_credential(
        &self,
        name: &str,
        mut record: Record,
    ) -> Result<JoinResponse, Status> {
        let credential = new_credential();
        let expires = self.credential_expiry();
        record.credential = Some(sha256(credential.as_bytes()));
        record.credential_expires = Some(expires);
        record.previous = None;
        self.store_record(&record).await?;
        Ok(self.accepted(name, credential, Some(expires)))
    }

    /// Writes a member's record (the Secret exists) and applies it to the fleet view.
    async fn store_record(&self, record: &Record) -> Result<(), Status> {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), SYSTEM_NAMESPACE);
        // Only the record's new version is read back, not its data.
        let stored = secrets
            .patch_metadata(
                &record::secret_name(&record.name),
                &PatchParams::default(),
                &Patch::Merge(&record.data_patch()),
            )
            .await
            .map_err(internal)?;
        self.fleet
            .upsert_record(record, record::version(&stored.metadata));
        Ok(())
    }

    fn accepted(
        &self,
        name: &str,
        credential: String,
        expires: Option<jiff::Timestamp>,
    ) -> JoinResponse {
        tracing::info!(cluster = %name, "credential issued");
        JoinResponse {
            state: join_response::State::Accepted as i32,
            credential,
            message: format!("cluster {name:?} joined the hub"),
            lease_seconds: self.lease_seconds(),
            credential_expires_unix_seconds: expires.map_or(0, |at| at.as_second()),
        }
    }

    /// When the holder of a credential should renew it: once a third of its lifetime is left,
    /// or at once for the credential a renewal replaced and for one issued before credentials
    /// expired (which has no expiry).
    fn renew_after(&self, identity: &Identity) -> Option<jiff::Timestamp> {
        let Some(expires) = identity.expires.filter(|_| identity.current) else {
            return Some(jiff::Timestamp::now());
        };
        let third = jiff::SignedDuration::try_from(self.credential_lifetime / 3).ok()?;
        expires.checked_sub(third).ok()
    }

    /// Creates the cluster's namespace and ClusterProfile unless they exist.
    async fn ensure_cluster_objects(
        &self,
        name: &str,
        cluster_set: Option<&str>,
    ) -> Result<(), Status> {
        self.ensure_namespace(name).await?;
        self.ensure_profile(name, cluster_set).await
    }

    /// Creates the cluster's namespace unless it exists; refuses the name of a namespace the
    /// hub has for itself: a cluster's Works live in the namespace of its name, which it would
    /// take over (and delete when removed).
    async fn ensure_namespace(&self, name: &str) -> Result<(), Status> {
        ensure_namespace(self.client.clone(), name)
            .await
            .map_err(internal)?
            .map_err(Status::already_exists)
    }

    async fn ensure_profile(&self, name: &str, cluster_set: Option<&str>) -> Result<(), Status> {
        ensure_profile(self.client.clone(), name, cluster_set)
            .await
            .map_err(internal)?;
        self.fleet.mark_dirty(name);
        Ok(())
    }

    /// Whether a new cluster with ID `cluster_id` may join ClusterSet `set`: the set exists and
    /// no member of it has that ID.
    fn check_set_for(&self, set: &str, cluster_id: &str) -> Result<(), Status> {
        if !self.fleet.cluster_sets().contains(set) {
            return Err(Status::not_found(format!(
                "ClusterSet {set:?} does not exist on the hub; create it first (atoll clusterset create {set})"
            )));
        }
        // Read in place: a copy of every member at each join made a storm of joins
        // quadratic in the fleet's size.
        let holder = self.fleet.with_members(|members| {
            members
                .values()
                .find(|m| m.cluster_set() == Some(set) && m.cluster_id == cluster_id)
                .map(|m| m.name.clone())
        });
        match holder {
            Some(holder) => Err(Status::already_exists(format!(
                "cluster ID {cluster_id:?} is already used by cluster {holder:?} in ClusterSet {set:?}; IDs must be unique in a set"
            ))),
            None => Ok(()),
        }
    }

    /// The join of a cluster the hub knows: the same agent again (its join secret matches), a
    /// credential once accepted; another agent is refused.
    async fn rejoin(
        &self,
        member: Member,
        req: &JoinRequest,
        join_secret: Digest,
    ) -> Result<JoinResponse, Status> {
        let name = req.cluster_name.as_str();
        if member.join_secret != Some(join_secret) {
            return Err(Status::already_exists(format!(
                "cluster {name:?} has already joined this hub from another agent; to replace it, remove it first (atoll cluster remove {name}) and join again"
            )));
        }
        let (properties, refused) = to_properties(&req.properties);
        let version = cut(req.kubernetes_version.clone(), VERSION_MAX_CHARS);
        self.fleet.update(name, |m| {
            let changed = m.version != version
                || m.properties != properties
                || m.refused_properties != refused;
            m.version = version;
            m.properties = properties;
            m.refused_properties = refused;
            (
                Changes {
                    profile: changed,
                    membership: false,
                },
                (),
            )
        });
        let record = Record {
            name: name.to_owned(),
            accepted: member.accepted,
            join_secret: Some(join_secret),
            credential: member.credential,
            credential_expires: member.credential_expires,
            previous: member.previous,
            // A hosted cluster's record is made before its agent knows the cluster's ID.
            cluster_id: if member.cluster_id.is_empty() {
                req.cluster_id.clone()
            } else {
                member.cluster_id.clone()
            },
            hosted_by: member.hosted_by.clone(),
        };
        if !member.accepted {
            return Ok(self.pending(name));
        }
        // An earlier attempt may have stopped before the cluster's objects existed.
        self.ensure_cluster_objects(name, None).await?;
        self.issue_credential(name, record).await
    }

    /// Checks the bootstrap token a join presents (from the token watch, else read) and gives
    /// the ClusterSet it is scoped to; a refusal counts against the caller's address.
    async fn token_scope(&self, request: &Request<JoinRequest>) -> Result<Option<String>, Status> {
        let source = request
            .extensions()
            .get::<guard::Source>()
            .and_then(|s| s.0);
        let refuse = |message: String| {
            if let Some(ip) = source {
                self.joins.failed(ip, Instant::now());
            }
            Status::unauthenticated(message)
        };
        let token = guard::bearer(request.metadata().as_ref())
            .and_then(|t| Token::parse(t).map_err(|e| Status::unauthenticated(e.to_string())))
            .map_err(|status| refuse(status.message().to_owned()))?;
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), SYSTEM_NAMESPACE);
        let token_secret = bootstrap::secret_name(token.id());
        let stored = match self.tokens.get(&token_secret) {
            Some(seen) => Some(seen),
            None => secrets
                .get_opt(&token_secret)
                .await
                .map_err(internal)?
                .map(Arc::new),
        };
        Ok(token
            .verify(stored.as_deref(), jiff::Timestamp::now())
            .map_err(|e| refuse(e.to_string()))?
            .cluster_set)
    }

    fn pending(&self, name: &str) -> JoinResponse {
        JoinResponse {
            state: join_response::State::Pending as i32,
            credential: String::new(),
            message: format!(
                "cluster {name:?} waits for an administrator to accept it on the hub: atoll cluster accept {name}"
            ),
            lease_seconds: self.lease_seconds(),
            credential_expires_unix_seconds: 0,
        }
    }
}

#[tonic::async_trait]
impl Hub for HubService {
    async fn join(&self, request: Request<JoinRequest>) -> Result<Response<JoinResponse>, Status> {
        let scope = self.token_scope(&request).await?;
        let req = request.into_inner();
        validate_join(&req)?;
        let name = req.cluster_name.as_str();
        let join_secret = sha256(req.join_secret.as_bytes());

        if let Some(member) = self.fleet.get(name) {
            return self
                .rejoin(member, &req, join_secret)
                .await
                .inspect(|_| self.fleet.metrics.joined("rejoined"))
                .map(Response::new);
        }

        let (granted, not_granted) = granted_set(name, &req.cluster_set, scope.as_deref());
        let cluster_set = granted.as_deref();
        if let Some(set) = cluster_set {
            self.check_set_for(set, &req.cluster_id)?;
        }

        // The namespace first, so that the name of one of the hub's own is refused before
        // anything is stored (and a new cluster's join reads nothing more to find that out).
        self.ensure_namespace(name).await?;

        // Accepted at once: the credential's hash goes into the record as it is created.
        let credential = self.auto_accept.then(new_credential);
        let record = Record {
            name: name.to_owned(),
            accepted: self.auto_accept,
            join_secret: Some(join_secret),
            credential: credential.as_deref().map(|c| sha256(c.as_bytes())),
            credential_expires: credential.as_ref().map(|_| self.credential_expiry()),
            previous: None,
            cluster_id: req.cluster_id.clone(),
            hosted_by: None,
        };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), SYSTEM_NAMESPACE);
        let stored = match secrets
            .create(&PostParams::default(), &record.to_secret())
            .await
        {
            Ok(stored) => stored,
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Err(Status::aborted(format!(
                    "another join of cluster {name:?} is under way; try again"
                )));
            }
            Err(e) => return Err(internal(e)),
        };
        self.fleet
            .upsert_record(&record, record::version(&stored.metadata));
        let (properties, refused) = to_properties(&req.properties);
        let version = cut(req.kubernetes_version.clone(), VERSION_MAX_CHARS);
        if let Some(why) = &not_granted {
            tracing::info!(cluster = %name, %why, "the ClusterSet asked for at the join is not granted");
        }
        self.fleet.update(name, |m| {
            m.version = version;
            m.properties = properties;
            m.refused_properties = refused;
            m.set_not_granted = not_granted;
            (
                Changes {
                    profile: true,
                    membership: false,
                },
                (),
            )
        });
        self.ensure_profile(name, cluster_set).await?;
        tracing::info!(cluster = %name, cluster_id = %req.cluster_id, accepted = self.auto_accept, "cluster asked to join");
        match credential {
            Some(credential) => {
                let expires = record.credential_expires;
                self.fleet.metrics.joined("accepted");
                Ok(Response::new(self.accepted(name, credential, expires)))
            }
            None => {
                self.fleet.metrics.joined("pending");
                Ok(Response::new(self.pending(name)))
            }
        }
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let identity = self.caller(&request, &request.get_ref().cluster_name)?;
        self.fleet.metrics.heartbeat();
        let name = identity.name.clone();
        let req = request.into_inner();
        let health = match req.health {
            Some(h) if h.ready => Health::Ready,
            Some(h) if h.message.is_empty() => Health::NotReady("no reason given".to_owned()),
            Some(h) => Health::NotReady(cut(h.message, HEALTH_MESSAGE_MAX_CHARS)),
            None => Health::NotReady("the agent sent no health".to_owned()),
        };
        let version = cut(req.kubernetes_version, VERSION_MAX_CHARS);
        let (properties, refused) = to_properties(&req.properties);
        let reported_id = properties
            .iter()
            .find(|p| p.name == PROPERTY_CLUSTER_ID)
            .map(|p| p.value.clone());
        let properties_changed = self.fleet.update(&name, |m| {
            let mut changes = Changes::default();
            m.last_heartbeat = Instant::now();
            m.last_heartbeat_at =
                jiff::Timestamp::from_second(jiff::Timestamp::now().as_second()).ok();
            if m.health != health {
                changes.profile = true;
                changes.membership = true;
                m.set_health(health);
            }
            if m.version != version {
                m.version = version;
                changes.profile = true;
            }
            let properties_changed = m.properties != properties;
            if properties_changed || m.refused_properties != refused {
                m.properties = properties;
                m.refused_properties = refused;
                changes.profile = true;
            }
            if let Some(id) = reported_id
                && id != m.reported_cluster_id
            {
                if m.cluster_set().is_none() {
                    m.cluster_id = id.clone();
                }
                m.reported_cluster_id = id;
                changes.membership = true;
            }
            (changes, properties_changed)
        });
        if properties_changed == Some(true) {
            // Overrides may read the properties: the placements render their Works anew.
            self.fleet.placements_dirty.notify_one();
        }
        Ok(Response::new(HeartbeatResponse {
            lease_seconds: self.lease_seconds(),
            credential_expires_unix_seconds: identity.expires.map_or(0, |at| at.as_second()),
            credential_renew_after_unix_seconds: self
                .renew_after(&identity)
                .map_or(0, |at| at.as_second()),
        }))
    }

    async fn renew_credential(
        &self,
        request: Request<RenewCredentialRequest>,
    ) -> Result<Response<RenewCredentialResponse>, Status> {
        let name = self.identify(&request, &request.get_ref().cluster_name)?;
        let member = self.fleet.get(&name).ok_or_else(|| {
            Status::unauthenticated(format!("cluster {name:?} was removed from the hub"))
        })?;
        let now = jiff::Timestamp::now();
        // The credential replaced keeps working for an hour at most, never past its own expiry.
        let grace = now + jiff::SignedDuration::from_hours(1);
        let previous = member.credential.map(|digest| {
            let until = member.credential_expires.map_or(grace, |at| at.min(grace));
            (digest, until)
        });
        let credential = new_credential();
        let expires = self.credential_expiry();
        let record = Record {
            name: name.clone(),
            accepted: member.accepted,
            join_secret: member.join_secret,
            credential: Some(sha256(credential.as_bytes())),
            credential_expires: Some(expires),
            previous,
            cluster_id: member.cluster_id.clone(),
            hosted_by: member.hosted_by.clone(),
        };
        self.store_record(&record).await?;
        tracing::info!(cluster = %name, %expires, "credential renewed");
        Ok(Response::new(RenewCredentialResponse {
            credential,
            credential_expires_unix_seconds: expires.as_second(),
        }))
    }

    type SyncStream = futures::stream::Map<ReceiverStream<Box<SyncEvent>>, Unbox>;

    async fn sync(
        &self,
        request: Request<SyncRequest>,
    ) -> Result<Response<Self::SyncStream>, Status> {
        let name = self.identify(&request, &request.get_ref().cluster_name)?;
        self.works_loaded().await?;
        let known = &request.get_ref().works;
        if known.len() > SYNC_KNOWN_MAX {
            return Err(Status::invalid_argument(format!(
                "the sync request lists {} Works, more than the limit of {SYNC_KNOWN_MAX}",
                known.len()
            )));
        }
        let set = self
            .fleet
            .get(&name)
            .and_then(|m| m.cluster_set().map(str::to_owned))
            .unwrap_or_default();
        // What differs between the Works the agent has and the hub's. The stream holds all of
        // it and `SYNC_BUFFER` events more: however many Works a cluster has, it converges.
        let events = work::diff(known, &self.works.of_cluster(&name), request.get_ref().full);
        let (sender, receiver) = tokio::sync::mpsc::channel(SYNC_BUFFER + events.len() + 1);
        // The first event is always the membership, so the agent converges at once.
        let initial = std::iter::once(membership_event(&set)).chain(events);
        for event in initial {
            sender
                .try_send(Box::new(event))
                .map_err(|_| Status::internal("the sync stream cannot hold its first events"))?;
        }
        self.fleet.attach_stream(&name, sender);
        tracing::debug!(cluster = %name, "agent connected its sync stream");
        Ok(Response::new(
            ReceiverStream::new(receiver).map((|event: Box<SyncEvent>| Ok(*event)) as Unbox),
        ))
    }

    async fn report_work_status(
        &self,
        request: Request<WorkStatusReport>,
    ) -> Result<Response<WorkStatusAck>, Status> {
        let name = self.identify(&request, &request.get_ref().cluster_name)?;
        let report = request.into_inner();
        if report.status.len() > STATUS_MAX_BYTES {
            return Err(Status::invalid_argument(format!(
                "the status of Work {:?} is {} bytes, more than the limit of {STATUS_MAX_BYTES}",
                report.work_name,
                report.status.len()
            )));
        }
        if report.deleted {
            self.works_loaded().await?;
            // The hub's own index says whether the Work reported is still there (no read of
            // the API): a Work of that name made again since has another UID, and stays.
            let current = self.works.get(&name, &report.work_name);
            if current.is_some_and(|w| w.uid == report.work_uid) {
                work::release(self.client.clone(), &name, &report.work_name)
                    .await
                    .map_err(internal)?;
                tracing::info!(cluster = %name, work = %report.work_name, "Work cleaned up on its cluster; released");
            }
            return Ok(Response::new(WorkStatusAck {}));
        }
        self.works_loaded().await?;
        // The hub's own index says whether this cluster has that Work (no read of the API).
        let known = self
            .works
            .get(&name, &report.work_name)
            .is_some_and(|e| e.uid == report.work_uid);
        if !known {
            return Err(Status::not_found(format!(
                "cluster {name:?} has no Work {:?} with UID {:?}",
                report.work_name, report.work_uid
            )));
        }
        let _slot = self.status_writes.acquire().await.map_err(|_| {
            Status::unavailable("the hub is stopping; report again to the next hub")
        })?;
        match work::write_status(&self.client, &name, &report.work_name, &report.status).await {
            Ok(()) => {}
            Err(work::WriteStatusError::NotJson(e)) => {
                return Err(Status::invalid_argument(format!(
                    "the status of Work {:?} is not JSON: {e}",
                    report.work_name
                )));
            }
            // The hub's API refuses the status itself (a condition out of its schema, say):
            // the agent's to fix, not a reason to retry.
            Err(work::WriteStatusError::Api(kube::Error::Api(e)))
                if e.code == 400 || e.code == 422 =>
            {
                return Err(Status::invalid_argument(format!(
                    "the hub's API refused the status of Work {:?}: {}",
                    report.work_name, e.message
                )));
            }
            Err(work::WriteStatusError::Api(e)) => return Err(internal(e)),
        }
        Ok(Response::new(WorkStatusAck {}))
    }
}

fn validate_join(req: &JoinRequest) -> Result<(), Status> {
    let name = req.cluster_name.as_str();
    if !is_dns_label(name) {
        return Err(Status::invalid_argument(format!(
            "cluster name {name:?} is not a DNS label (RFC 1123: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit)"
        )));
    }
    if atoll_api::names::is_reserved_cluster_name(name) {
        return Err(Status::invalid_argument(format!(
            "cluster name {name:?} is reserved on the hub (it names a system namespace); choose another"
        )));
    }
    if req.cluster_id.is_empty() {
        return Err(Status::invalid_argument(format!(
            "cluster {name:?}: the cluster ID is missing (the value of ClusterProperty {PROPERTY_CLUSTER_ID})"
        )));
    }
    validate_property(PROPERTY_CLUSTER_ID, &req.cluster_id)
        .map_err(|e| Status::invalid_argument(format!("cluster {name:?}: {e}")))?;
    if req.join_secret.len() < JOIN_SECRET_MIN_LEN {
        return Err(Status::invalid_argument(format!(
            "cluster {name:?}: the join secret must be at least {JOIN_SECRET_MIN_LEN} characters"
        )));
    }
    Ok(())
}

/// The ClusterProperties an agent reported that the hub copies into the profile (at most
/// [`PROPERTIES_MAX`], sorted by name), and why the others were left out: one property the hub
/// cannot copy does not fail the cluster's join or heartbeat.
fn to_properties(properties: &[atoll_proto::v1::Property]) -> (Vec<Property>, Vec<String>) {
    let mut kept = Vec::new();
    let mut refused = Vec::new();
    for p in properties {
        match validate_property(&p.name, &p.value) {
            Ok(()) if kept.len() < PROPERTIES_MAX => kept.push(Property {
                name: p.name.clone(),
                value: p.value.clone(),
                last_observed_time: None,
            }),
            Ok(()) => refused.push(format!(
                "property {:?}: more than {PROPERTIES_MAX} properties",
                p.name
            )),
            Err(e) => refused.push(e.to_string()),
        }
    }
    kept.sort_by(|a, b| a.name.cmp(&b.name));
    kept.dedup_by(|a, b| a.name == b.name);
    if refused.len() > REFUSED_REASONS_MAX {
        let more = refused.len() - REFUSED_REASONS_MAX;
        refused.truncate(REFUSED_REASONS_MAX);
        refused.push(format!("and {more} more properties left out"));
    }
    (kept, refused)
}

/// The ClusterSet a cluster joining as `name` goes into: the one its bootstrap token is scoped
/// to, if any (whatever set the agent asks for: only the administrator who made the token
/// chooses); and, when the agent asked for a set it does not get, why.
fn granted_set(name: &str, asked: &str, scope: Option<&str>) -> (Option<String>, Option<String>) {
    let granted = scope.map(str::to_owned);
    let why = match scope {
        _ if asked.is_empty() || Some(asked) == scope => None,
        Some(scope) => Some(format!(
            "the agent asked to join ClusterSet {asked:?}, but its bootstrap token is scoped to ClusterSet {scope:?}"
        )),
        None => Some(format!(
            "the agent asked to join ClusterSet {asked:?}, but its bootstrap token is not scoped to a ClusterSet; an administrator adds it with: atoll clusterset add {asked} {name}"
        )),
    };
    (granted, why)
}

/// `text` cut to at most `max` characters, saying so.
fn cut(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}... (cut at {max} characters)", &text[..end]),
        None => text,
    }
}

fn new_credential() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let body: String = (0..43)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("atoll-cluster.{body}")
}

fn internal(e: kube::Error) -> Status {
    tracing::warn!(error = %e, "hub API server call failed");
    Status::unavailable(format!("the hub cannot reach its API server: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_scoped_token_grants_a_cluster_set() {
        assert_eq!(granted_set("east", "", None), (None, None));
        assert_eq!(
            granted_set("east", "", Some("prod")),
            (Some("prod".to_owned()), None)
        );
        assert_eq!(
            granted_set("east", "prod", Some("prod")),
            (Some("prod".to_owned()), None)
        );
        let (set, why) = granted_set("east", "prod", None);
        assert_eq!(set, None);
        assert!(why.unwrap().ends_with("atoll clusterset add prod east"));
        let (set, why) = granted_set("east", "admin", Some("prod"));
        assert_eq!(set.as_deref(), Some("prod"));
        assert!(why.unwrap().contains("scoped to ClusterSet \"prod\""));
    }

    #[test]
    fn long_text_is_cut_on_a_character() {
        assert_eq!(cut("héllo".to_owned(), 10), "héllo");
        assert_eq!(cut("héllo".to_owned(), 2), "hé... (cut at 2 characters)");
    }
}
