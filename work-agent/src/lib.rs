//! atoll-agent: the agent in a member cluster. It joins a hub over gRPC with a bootstrap token
//! (keeping the credential it receives in a Secret of its own cluster, so a restart does not join
//! again), heartbeats with its API server's readiness, version and ClusterProperties, and writes
//! the ClusterSet membership the hub sends. When the hub is away it retries with jittered
//! exponential backoff.
//!
//! May depend on `atoll-api` and `atoll-proto`, never on hub internals. Modules: `hub` (the
//! channel), `credential` (its stored state), `properties` (ClusterProperties).

pub mod apply;
pub mod credential;
pub mod deny;
pub mod fields;
pub mod health;
pub mod hub;
pub mod metrics;
pub mod properties;
pub mod queue;
pub mod works;

use std::sync::Arc;
use std::time::Duration;

use atoll_proto::v1::{
    Health, HeartbeatRequest, JoinRequest, Property, RenewCredentialRequest, SyncRequest,
    join_response, sync_event,
};
use backon::BackoffBuilder as _;
use futures::StreamExt as _;
use rand::Rng as _;
use tokio::sync::{Notify, watch};
use tonic::Code;

use atoll_api::names::PROPERTY_CLUSTER_SET;

use crate::credential::Stored;

/// How long a unary call to the hub may take before the agent gives up on it and retries.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Field manager of what the agent writes in its cluster.
pub const FIELD_MANAGER: &str = atoll_api::names::FIELD_MANAGER_WORK_AGENT;

/// Why the agent stops.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("its own cluster's API server failed ({what}): {}", explain(source))]
    Member {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0}")]
    Crd(String),
    #[error("{0}")]
    Hub(String),
    #[error("the hub refused the join of cluster {cluster:?}: {message}")]
    JoinRefused { cluster: String, message: String },
}

/// A member API server's failure in a line: its own message when it answered (a 403 names who
/// may not do what), the client's error otherwise.
fn explain(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(e) => format!("{} ({})", e.message, e.code),
        other => other.to_string(),
    }
}

impl Error {
    fn member(what: &str) -> impl FnOnce(kube::Error) -> Error + '_ {
        move |source| Error::Member {
            what: what.to_owned(),
            source,
        }
    }
}

/// How the agent runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The hub's gRPC address, `https://HOST:PORT`, or several of one hub's replicas separated
    /// by commas (tried in turn: see [`hub`]).
    pub hub: String,
    /// The hub's CA certificate, PEM.
    pub hub_ca_pem: String,
    /// The bootstrap token, used only when the agent has no credential yet.
    pub bootstrap_token: String,
    /// The cluster's name on the hub.
    pub cluster_name: String,
    /// A ClusterSet to join with, if any.
    pub cluster_set: Option<String>,
    /// How often every Work is applied again, correcting drift.
    pub resync: Duration,
    /// The join secret to present, when the hub arranged one (the agents of hosted clusters,
    /// whose records the hub creates already accepted); otherwise the agent makes its own.
    pub join_secret: Option<String>,
    /// The namespaces and kinds Works may not touch.
    pub deny: deny::Deny,
    /// Where the agent counts what it does.
    pub metrics: Arc<metrics::Metrics>,
    /// Met once the agent has joined and the hub's first sync arrived: what `/readyz` waits
    /// for.
    pub ready: Option<atoll_runtime::endpoint::Pending>,
}

impl Config {
    /// A fresh state for a first join.
    fn fresh(&self) -> Stored {
        let mut stored = Stored::new(&self.hub, &self.cluster_name);
        if let Some(secret) = &self.join_secret {
            stored.join_secret = secret.clone();
        }
        stored
    }
}

/// Runs the agent until `shutdown` turns true. Returns an error only for what retrying cannot
/// fix: a refused join, or a cluster whose API server rejects the agent.
pub async fn run(
    config: Config,
    member: kube::Client,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), Error> {
    let properties = properties::install_crds(&member).await?;
    let cluster_id = properties.ensure_cluster_id(&member).await?;
    let channel = hub::channel(&config.hub, &config.hub_ca_pem)?;
    let works = works::Works::new(member.clone(), &config.cluster_name, config.deny.clone())
        .with_metrics(config.metrics.clone());
    loop {
        let stored = credential::load(&member)
            .await
            .map_err(Error::member("Secret atoll-system/atoll-agent"))?
            .filter(|s| {
                hub::same_hub(&s.hub, &config.hub) && s.cluster_name == config.cluster_name
            });
        let credential = match stored.as_ref().and_then(|s| s.credential.clone()) {
            Some(c) => c,
            None => {
                let stored = stored.unwrap_or_else(|| config.fresh());
                tokio::select! {
                    joined = join(&config, &member, &properties, &channel, &cluster_id, stored) => joined?,
                    _ = shutdown.changed() => return Ok(()),
                }
            }
        };
        let session = Session {
            config: &config,
            member: &member,
            properties: &properties,
            client: hub::client(channel.clone(), &credential)?,
            beat_now: Arc::new(Notify::new()),
            membership: std::sync::Mutex::new(None),
            works: &works,
        };
        tokio::select! {
            ended = session.run() => match ended {
                Ended::Renewed => {
                    tracing::info!("credential renewed; reconnecting with it");
                }
                Ended::Unauthenticated(message) => {
                    tracing::warn!(%message, "the hub no longer accepts this cluster's credential; joining again");
                    // With the same join secret: the hub knows this agent and issues a new
                    // credential (an expired or lost one); a removed cluster joins as new.
                    // A join secret the agent is given (a hosted cluster's, whose record the hub
                    // made) stands over the stored one.
                    let again = credential::load(&member)
                        .await
                        .map_err(Error::member("Secret atoll-system/atoll-agent"))?
                        .filter(|s| s.hub == config.hub && s.cluster_name == config.cluster_name)
                        .map(|s| Stored {
                            credential: None,
                            join_secret: config.join_secret.clone().unwrap_or(s.join_secret),
                            ..s
                        })
                        .unwrap_or_else(|| config.fresh());
                    credential::save(&member, &again).await.map_err(Error::member("Secret atoll-system/atoll-agent"))?;
                }
                Ended::Fatal(e) => return Err(e),
            },
            _ = shutdown.changed() => return Ok(()),
        }
    }
}

/// The jittered exponential backoff between attempts to reach the hub.
fn backoff() -> impl Iterator<Item = Duration> {
    backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(Duration::from_secs(30))
        .with_jitter()
        .without_max_times()
        .build()
}

async fn join(
    config: &Config,
    member: &kube::Client,
    properties: &properties::Properties,
    channel: &hub::Hubs,
    cluster_id: &str,
    mut stored: Stored,
) -> Result<String, Error> {
    credential::save(member, &stored)
        .await
        .map_err(Error::member("Secret atoll-system/atoll-agent"))?;
    let mut client = hub::client(channel.clone(), config.bootstrap_token.trim())?;
    let mut delays = backoff();
    let mut announced = false;
    loop {
        let (version, props) = observe(member, properties).await;
        let request = JoinRequest {
            cluster_name: config.cluster_name.clone(),
            cluster_id: cluster_id.to_owned(),
            kubernetes_version: version,
            properties: props,
            join_secret: stored.join_secret.clone(),
            cluster_set: config.cluster_set.clone().unwrap_or_default(),
        };
        let mut request = tonic::Request::new(request);
        request.set_timeout(CALL_TIMEOUT);
        match client.join(request).await {
            Ok(response) => {
                let response = response.into_inner();
                if response.state == join_response::State::Accepted as i32 {
                    stored.credential = Some(response.credential.clone());
                    credential::save(member, &stored)
                        .await
                        .map_err(Error::member("Secret atoll-system/atoll-agent"))?;
                    tracing::info!(cluster = %config.cluster_name, hub = %config.hub, "joined the hub");
                    return Ok(response.credential);
                }
                if !announced {
                    tracing::info!(message = %response.message, "join pending");
                    announced = true;
                }
                delays = backoff();
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            Err(status) if retryable(status.code()) => {
                let delay = delays.next().unwrap_or(Duration::from_secs(30));
                tracing::warn!(code = ?status.code(), message = %status.message(), ?delay, "cannot reach the hub to join; retrying");
                tokio::time::sleep(delay).await;
            }
            Err(status) => {
                return Err(Error::JoinRefused {
                    cluster: config.cluster_name.clone(),
                    message: status.message().to_owned(),
                });
            }
        }
    }
}

fn retryable(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::Unknown
            | Code::DeadlineExceeded
            | Code::Aborted
            | Code::ResourceExhausted
            | Code::Internal
    )
}

/// The member's Kubernetes version and ClusterProperties, as far as they can be read.
async fn observe(
    member: &kube::Client,
    properties: &properties::Properties,
) -> (String, Vec<Property>) {
    let version = member
        .apiserver_version()
        .await
        .map(|v| v.git_version)
        .unwrap_or_default();
    let props = match properties.list().await {
        Ok(list) => {
            let (kept, left_out) = properties::fit(list, properties::SENT_MAX_BYTES);
            if !left_out.is_empty() {
                tracing::warn!(
                    ?left_out,
                    limit = properties::SENT_MAX_BYTES,
                    "ClusterProperties larger than the hub takes in all; the rest are not sent"
                );
            }
            kept.into_iter()
                .map(|(name, value)| Property { name, value })
                .collect()
        }
        Err(error) => {
            tracing::warn!(%error, "cannot read ClusterProperties");
            Vec::new()
        }
    };
    (version, props)
}

/// The member API server's readiness, from `/readyz`.
async fn readiness(member: &kube::Client) -> Health {
    let request = http::Request::get("/readyz").body(Vec::new());
    let result = match request {
        Ok(r) => member.request_text(r).await,
        Err(e) => {
            return Health {
                ready: false,
                message: e.to_string(),
            };
        }
    };
    match result {
        Ok(_) => Health {
            ready: true,
            message: String::new(),
        },
        Err(error) => Health {
            ready: false,
            message: format!("/readyz failed: {error}"),
        },
    }
}

enum Ended {
    /// The credential was renewed and stored: a new session uses it.
    Renewed,
    Unauthenticated(String),
    Fatal(Error),
}

struct Session<'a> {
    config: &'a Config,
    properties: &'a properties::Properties,
    member: &'a kube::Client,
    client: hub::Client,
    beat_now: Arc<Notify>,
    /// The ClusterSet the hub last said this cluster is in (`""`: none), once it has said.
    membership: std::sync::Mutex<Option<String>>,
    works: &'a works::Works,
}

impl Session<'_> {
    async fn run(&self) -> Ended {
        tokio::select! {
            ended = self.heartbeats() => ended,
            ended = self.sync() => ended,
            ended = self.resync() => ended,
            // The workers never stop by themselves; the session ends with the others.
            () = self.works.work(&self.client) => Ended::Fatal(Error::Hub("the Work workers stopped".to_owned())),
        }
    }

    /// Applies a Work again as soon as one of its objects changes in the cluster, and every
    /// Work once a resync period, correcting what drifted.
    async fn resync(&self) -> Ended {
        let mut next = tokio::time::Instant::now() + self.config.resync;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {
                    self.works.resync();
                    next = tokio::time::Instant::now() + self.config.resync;
                }
                Some(work) = self.works.next_changed() => {
                    // Let a burst of changes settle, then apply once.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    self.works.reapply(&work);
                }
            }
        }
    }

    async fn heartbeats(&self) -> Ended {
        let mut client = self.client.clone();
        let mut lease = Duration::from_secs(10);
        let mut delays = backoff();
        loop {
            // Someone may have edited clusterset.k8s.io in this cluster: the hub decides it.
            let desired = self
                .membership
                .lock()
                .map(|m| m.clone())
                .unwrap_or_default();
            let (version, mut props) = observe(self.member, self.properties).await;
            if let Some(set) = desired {
                let listed = props
                    .iter()
                    .find(|p| p.name == PROPERTY_CLUSTER_SET)
                    .map_or("", |p| p.value.as_str());
                // Only a difference costs a request: the list above has the property.
                if listed != set {
                    match self.properties.set_cluster_set(&set).await {
                        Ok(_) => {
                            props.retain(|p| p.name != PROPERTY_CLUSTER_SET);
                            if !set.is_empty() {
                                props.push(Property {
                                    name: PROPERTY_CLUSTER_SET.to_owned(),
                                    value: set,
                                });
                                props.sort_by(|a, b| a.name.cmp(&b.name));
                            }
                        }
                        Err(error) => {
                            tracing::warn!(%error, "cannot restore ClusterProperty clusterset.k8s.io");
                        }
                    }
                }
            }
            let request = HeartbeatRequest {
                cluster_name: self.config.cluster_name.clone(),
                health: Some(readiness(self.member).await),
                kubernetes_version: version,
                properties: props,
            };
            let mut request = tonic::Request::new(request);
            request.set_timeout(CALL_TIMEOUT);
            let wait = match client.heartbeat(request).await {
                Ok(response) => {
                    delays = backoff();
                    let response = response.into_inner();
                    let renew_after = response.credential_renew_after_unix_seconds;
                    if renew_after != 0
                        && jiff::Timestamp::now().as_second() >= renew_after
                        && self.renew(&mut client).await
                    {
                        return Ended::Renewed;
                    }
                    let seconds = response.lease_seconds.max(1);
                    lease = Duration::from_secs(u64::from(seconds));
                    // Beat a little early, with jitter, so one late beat never costs a lease.
                    lease.mul_f64(rand::rng().random_range(0.7..0.9))
                }
                Err(status) if status.code() == Code::Unauthenticated => {
                    return Ended::Unauthenticated(status.message().to_owned());
                }
                Err(status) if retryable(status.code()) => {
                    let delay = delays.next().unwrap_or(lease).min(lease);
                    tracing::warn!(code = ?status.code(), message = %status.message(), ?delay, "heartbeat failed; retrying");
                    delay
                }
                Err(status) => {
                    return Ended::Fatal(Error::Hub(format!(
                        "the hub refused a heartbeat: {}",
                        status.message()
                    )));
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.beat_now.notified() => {}
            }
        }
    }

    /// Exchanges the credential for a new one and stores it; whether it did (when not, the old
    /// one still works and the next heartbeat tries again).
    async fn renew(&self, client: &mut hub::Client) -> bool {
        let mut request = tonic::Request::new(RenewCredentialRequest {
            cluster_name: self.config.cluster_name.clone(),
        });
        request.set_timeout(CALL_TIMEOUT);
        let renewed = match client.renew_credential(request).await {
            Ok(response) => response.into_inner(),
            Err(status) => {
                tracing::warn!(code = ?status.code(), message = %status.message(), "cannot renew the credential; trying again at the next heartbeat");
                return false;
            }
        };
        let stored = match credential::load(self.member).await {
            Ok(Some(stored)) => stored,
            Ok(None) => {
                tracing::warn!("the agent's Secret is gone; cannot store a renewed credential");
                return false;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot read the stored credential to renew it");
                return false;
            }
        };
        let stored = credential::Stored {
            credential: Some(renewed.credential),
            ..stored
        };
        if let Err(error) = credential::save(self.member, &stored).await {
            tracing::warn!(%error, "cannot store the renewed credential; trying again at the next heartbeat");
            return false;
        }
        tracing::info!(
            expires_unix_seconds = renewed.credential_expires_unix_seconds,
            "credential renewed"
        );
        true
    }

    async fn sync(&self) -> Ended {
        let mut client = self.client.clone();
        let mut delays = backoff();
        loop {
            let known = match self.works.known().await {
                Ok(known) => known,
                Err(error) => {
                    tracing::warn!(%error, "cannot list this cluster's AppliedWorks; retrying");
                    tokio::time::sleep(delays.next().unwrap_or(Duration::from_secs(30))).await;
                    continue;
                }
            };
            let request = SyncRequest {
                cluster_name: self.config.cluster_name.clone(),
                works: known,
                // Every Work, so that drift correction has their specs after a restart.
                full: true,
            };
            match client.sync(request).await {
                Ok(response) => {
                    tracing::info!("connected to the hub");
                    self.config.metrics.connected(true);
                    let mut stream = response.into_inner();
                    while let Some(item) = stream.next().await {
                        match item {
                            Ok(event) => {
                                delays = backoff();
                                if let Err(e) = self.handle(event).await {
                                    tracing::warn!(error = %e, "cannot carry out what the hub sent");
                                }
                                // The first event of a stream is the membership, which comes
                                // after every Work the agent lacks has been queued.
                                if let Some(ready) = &self.config.ready {
                                    ready.done();
                                }
                            }
                            Err(status) if status.code() == Code::Unauthenticated => {
                                self.config.metrics.connected(false);
                                return Ended::Unauthenticated(status.message().to_owned());
                            }
                            Err(status) => {
                                tracing::warn!(code = ?status.code(), message = %status.message(), "the sync stream broke");
                                break;
                            }
                        }
                    }
                    self.config.metrics.connected(false);
                }
                Err(status) if status.code() == Code::Unauthenticated => {
                    return Ended::Unauthenticated(status.message().to_owned());
                }
                Err(status) if !retryable(status.code()) => {
                    return Ended::Fatal(Error::Hub(format!(
                        "the hub refused the sync stream: {}",
                        status.message()
                    )));
                }
                Err(status) => {
                    tracing::warn!(code = ?status.code(), message = %status.message(), "cannot open the sync stream");
                }
            }
            let delay = delays.next().unwrap_or(Duration::from_secs(30));
            tracing::info!(?delay, "reconnecting to the hub");
            tokio::time::sleep(delay).await;
        }
    }

    async fn handle(&self, event: atoll_proto::v1::SyncEvent) -> Result<(), Error> {
        match event.event {
            Some(sync_event::Event::Membership(m)) => {
                if let Ok(mut known) = self.membership.lock() {
                    *known = Some(m.cluster_set.clone());
                }
                if self.properties.set_cluster_set(&m.cluster_set).await? {
                    self.beat_now.notify_one();
                }
            }
            Some(sync_event::Event::Keepalive(_)) | None => {}
            Some(sync_event::Event::WorkUpsert(w)) => self.works.upsert(w),
            Some(sync_event::Event::WorkDelete(w)) => self.works.delete(w),
        }
        Ok(())
    }
}
