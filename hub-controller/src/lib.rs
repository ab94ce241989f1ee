//! atoll-hub: the hub. It keeps the cluster inventory (one ClusterProfile per member cluster in
//! `fleet-system`), administers ClusterSet membership, fans Work out to member clusters, serves the
//! agents' gRPC protocol over TLS with a CA it generates and keeps in `atoll-system`, and runs
//! hosted control planes (HostedClusters).
//!
//! It talks to its API server only through kube-rs, whether that is atoll's embedded server or a
//! real cluster's. It depends on `atoll-apiserver` and `atoll-agent` only to run hosted clusters'
//! API servers and their agents in its process. Modules: `bootstrap` (join tokens), `record`
//! (member records and the administrator's accept/remove), `grpc` (the agents' service), `fleet`
//! (the in-memory view the service answers from), `inventory` (ClusterProfile status and
//! leases), `clusterset` (membership), `work` and `placement` (Work and WorkPlacements), `hosted`
//! (HostedClusters), `sources` (the watches feeding the view), `setup` (namespaces, CRDs, CA),
//! `leader` (the Lease hub replicas elect their leader with: only the leader reconciles and
//! serves agents; the others hold a [`Standby`] that refuses agents with UNAVAILABLE).

pub mod agents;
pub mod bootstrap;
pub mod clusterset;
pub mod conditions;
pub mod digest;
pub mod flags;
pub mod fleet;
pub mod grpc;
pub mod hosted;
pub mod inventory;
pub mod leader;
pub mod metrics;
pub mod placement;
pub mod queue;
pub mod record;
pub mod replica;
pub mod setup;
pub mod sources;
pub mod work;
pub mod work_override;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

use atoll_api::clusterset::ClusterSet;
use atoll_api::inventory::ClusterProfile;
use atoll_api::names::{
    CLUSTER_MANAGER_NAME, INVENTORY_NAMESPACE, LABEL_CLUSTER_MANAGER, SYSTEM_NAMESPACE,
};
use atoll_proto::v1::hub_server::HubServer;
use atoll_runtime::Tasks;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};
use tokio::sync::watch;

pub use fleet::{Fleet, Leases};

use crate::clusterset::Decision;
use crate::record::Record;

/// Why the hub cannot start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot set up {what} on the hub's API server")]
    Setup {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0}")]
    Crds(String),
    #[error("cannot create or load the hub's CA")]
    Ca(#[from] atoll_pki::Error),
    #[error("cannot listen for agents on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot configure TLS for the gRPC server")]
    Tls(#[from] tonic::transport::Error),
}

/// How the hub runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where agents connect (gRPC over TLS).
    pub grpc_addr: SocketAddr,
    /// Names and addresses in the gRPC serving certificate, besides `localhost` and the listen
    /// address.
    pub grpc_hosts: Vec<String>,
    /// Accept every cluster that presents a valid bootstrap token, without `atoll cluster accept`.
    pub auto_accept: bool,
    /// Heartbeat lease and how many may be missed.
    pub leases: Leases,
    /// How long a deleting Work waits for its Unknown cluster to clean up before it goes anyway.
    pub lost_cluster_grace: std::time::Duration,
    /// How the hub runs hosted control planes.
    pub hosted: hosted::Settings,
    /// The most gRPC connections open at once; more are closed as they come.
    pub grpc_max_connections: usize,
    /// How long a cluster credential works; agents renew theirs with a third of it left.
    pub credential_lifetime: std::time::Duration,
    /// Where the hub counts what it does (see [`metrics`]).
    pub metrics: Arc<metrics::Metrics>,
    /// Met once the hub serves with its caches synced (its first list of Works in): what
    /// `/readyz` waits for.
    pub ready: Option<atoll_runtime::endpoint::Pending>,
}

impl Config {
    /// Defaults: listen on `grpc_addr`, no auto-accept, 10 s leases, Unknown after 3, deleting
    /// Works of an Unknown cluster let go after 5 minutes.
    pub fn new(grpc_addr: SocketAddr) -> Self {
        Self {
            grpc_addr,
            grpc_hosts: Vec::new(),
            auto_accept: false,
            leases: Leases::default(),
            lost_cluster_grace: work::LOST_CLUSTER_GRACE,
            hosted: hosted::Settings::default(),
            grpc_max_connections: GRPC_MAX_CONNECTIONS,
            credential_lifetime: CREDENTIAL_LIFETIME,
            metrics: Arc::default(),
            ready: None,
        }
    }
}

/// The gRPC server agents call, with the limits a server on the network needs: TLS handshakes
/// that end within 10 s, HTTP/2 keepalives that find dead peers, a bounded number of streams per
/// connection and of calls in flight on each, a deadline for every unary call, and the guard.
fn serve_agents(
    identity: tonic::transport::Identity,
    fleet: &Arc<Fleet>,
    joins: Arc<grpc::guard::JoinLimiter>,
) -> Result<
    tonic::transport::Server<
        tower::layer::util::Stack<grpc::guard::GuardLayer, tower::layer::util::Identity>,
    >,
    Error,
> {
    use std::time::Duration;
    let tls = tonic::transport::ServerTlsConfig::new()
        .identity(identity)
        .timeout(Duration::from_secs(10));
    Ok(tonic::transport::Server::builder()
        .tls_config(tls)?
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(20)))
        .max_concurrent_streams(Some(GRPC_STREAMS_PER_CONNECTION))
        .http2_max_header_list_size(Some(16 * 1024))
        .http2_max_pending_accept_reset_streams(Some(32))
        .layer(grpc::guard::GuardLayer::new(fleet.clone(), joins)))
}

/// Streams one agent connection may hold open at once (an agent uses three or four).
const GRPC_STREAMS_PER_CONNECTION: u32 = 32;
/// How long a cluster credential works, by default.
pub const CREDENTIAL_LIFETIME: std::time::Duration = std::time::Duration::from_secs(30 * 86_400);
/// Open gRPC connections, by default: one per agent.
pub const GRPC_MAX_CONNECTIONS: usize = 20_000;
/// How long a stopping hub waits for its tasks, hosted control planes included.
pub const SHUTDOWN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// What the hub's writes are recorded as: kube-apiserver names the field manager of a write that
/// names none after its client's `User-Agent` (up to the first `/`), and logs the agent too.
pub const USER_AGENT: &str = concat!("atoll-hub/", env!("CARGO_PKG_VERSION"));

/// `config` with the hub's [`USER_AGENT`], so that its status and metadata writes are owned by
/// `atoll-hub` in `managedFields` rather than by an unnamed client.
pub fn identified(mut config: kube::Config) -> kube::Config {
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    config
}

/// A running hub.
pub struct Hub {
    grpc_addr: SocketAddr,
    ca_pem: String,
    fleet: Arc<Fleet>,
    shutdown: watch::Sender<bool>,
    /// The gRPC server, the controllers and watches, and the HostedCluster controller (which
    /// stops every hosted control plane as it ends), all ending on `shutdown`.
    tasks: Tasks,
}

/// What every hub replica sets up, leading or not: its namespaces, the CA (kept in a Secret on
/// the API server, so that every replica serves agents with the same one and accepts the same
/// credentials), its gRPC socket and its serving certificate.
struct Prepared {
    listener: Arc<tokio::net::TcpListener>,
    grpc_addr: SocketAddr,
    ca: atoll_pki::CertificateAuthority,
    identity: tonic::transport::Identity,
}

impl Prepared {
    async fn new(client: &kube::Client, config: &Config) -> Result<Self, Error> {
        setup::namespaces(client).await?;
        let ca = setup::load_or_create_ca(client).await?;
        let listener = tokio::net::TcpListener::bind(config.grpc_addr)
            .await
            .map_err(|source| Error::Bind {
                addr: config.grpc_addr,
                source,
            })?;
        let grpc_addr = listener.local_addr().map_err(|source| Error::Bind {
            addr: config.grpc_addr,
            source,
        })?;
        let mut hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            grpc_addr.ip().to_string(),
        ];
        hosts.extend(config.grpc_hosts.iter().cloned());
        let serving = ca.issue_serving(&hosts)?;
        let identity = tonic::transport::Identity::from_pem(&serving.cert_pem, &serving.key_pem);
        Ok(Prepared {
            listener: Arc::new(listener),
            grpc_addr,
            ca,
            identity,
        })
    }
}

/// A hub replica that does not lead (yet): it holds the gRPC address and answers every agent's
/// call with UNAVAILABLE ([`grpc::standby`]), reconciles nothing, and loads nothing, until
/// [`Standby::lead`].
pub struct Standby {
    prepared: Prepared,
    stop: watch::Sender<bool>,
    server: Tasks,
}

/// How long the refusing server of a [`Standby`] may take to close its connections.
const STANDBY_STOP_DEADLINE: std::time::Duration = std::time::Duration::from_secs(5);

impl Standby {
    /// The address agents connect to.
    pub fn grpc_addr(&self) -> SocketAddr {
        self.prepared.grpc_addr
    }

    /// Stops refusing and starts the hub on the same socket: it loads what the API server holds
    /// now (the previous leader's members, credentials and statuses) and serves agents.
    pub async fn lead(self, client: kube::Client, config: Config) -> Result<Hub, Error> {
        let _ = self.stop.send(true);
        self.server.join(STANDBY_STOP_DEADLINE).await;
        Hub::serve(client, config, self.prepared).await
    }

    /// The CA agents pin (PEM), the same on every replica.
    pub fn ca_pem(&self) -> &str {
        self.prepared.ca.cert_pem()
    }

    /// Stops refusing, leading never.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        self.server.join(STANDBY_STOP_DEADLINE).await;
    }
}

impl Hub {
    /// Sets up the hub's API server, loads what it knows, and starts serving agents.
    pub async fn start(client: kube::Client, config: Config) -> Result<Self, Error> {
        let prepared = Prepared::new(&client, &config).await?;
        Hub::serve(client, config, prepared).await
    }

    /// A replica that waits to lead: its namespaces and CA set up, its gRPC address bound and
    /// answering agents UNAVAILABLE.
    pub async fn standby(client: &kube::Client, config: &Config) -> Result<Standby, Error> {
        let prepared = Prepared::new(client, config).await?;
        let tls = tonic::transport::ServerTlsConfig::new()
            .identity(prepared.identity.clone())
            .timeout(std::time::Duration::from_secs(10));
        let server = tonic::transport::Server::builder()
            .tls_config(tls)?
            .http2_keepalive_interval(Some(std::time::Duration::from_secs(30)))
            .http2_keepalive_timeout(Some(std::time::Duration::from_secs(20)))
            .max_concurrent_streams(Some(GRPC_STREAMS_PER_CONNECTION))
            .http2_max_header_list_size(Some(16 * 1024))
            .timeout(std::time::Duration::from_secs(10))
            .add_service(
                HubServer::new(grpc::standby::Standby)
                    .max_decoding_message_size(grpc::guard::SYNC_MAX_BYTES),
            );
        let incoming =
            grpc::listener::admit(prepared.listener.clone(), config.grpc_max_connections);
        let (stop, mut stopped) = watch::channel(false);
        let mut tasks = Tasks::default();
        tasks.spawn("grpc-standby", async move {
            let signal = async move {
                let _ = stopped.wait_for(|s| *s).await;
            };
            if let Err(error) = server.serve_with_incoming_shutdown(incoming, signal).await {
                tracing::error!(%error, "the gRPC server of a replica that does not lead stopped");
            }
        });
        tracing::info!(grpc_addr = %prepared.grpc_addr, "not leading: refusing agents until this replica leads");
        Ok(Standby {
            prepared,
            stop,
            server: tasks,
        })
    }

    /// Serves agents and runs the controllers, on what `prepared` set up.
    async fn serve(
        client: kube::Client,
        config: Config,
        prepared: Prepared,
    ) -> Result<Self, Error> {
        let Prepared {
            listener,
            grpc_addr,
            ca,
            identity,
        } = prepared;
        setup::crds(&client).await?;
        let fleet = Fleet::with_metrics(config.leases, config.metrics.clone());
        let written = load(&fleet, &client).await?;
        let addresses = setup::agent_addresses(grpc_addr, &config.grpc_hosts);
        // Only `atoll agent-manifests` reads it: a hub that cannot write it still serves.
        if let Err(error) = setup::publish_endpoint(&client, &addresses, ca.cert_pem()).await {
            tracing::warn!(error = %atoll_apiserver::error::chain(&error), "cannot publish how agents reach the hub; atoll agent-manifests needs it");
        }

        let (shutdown, stop) = watch::channel(false);
        let works = Arc::new(work::WorkIndex::default());
        config.metrics.watch(&fleet, &works);
        let mut tasks = Tasks::default();
        spawn_agent_server(
            &mut tasks,
            (identity, listener),
            &fleet,
            &works,
            &client,
            &config,
            &stop,
        )?;
        if let Some(ready) = config.ready.clone() {
            let (works, mut stop) = (works.clone(), stop.clone());
            tasks.spawn("readiness", async move {
                tokio::select! {
                    _ = works.wait_loaded() => ready.done(),
                    _ = stop.wait_for(|s| *s) => {}
                }
            });
        }
        spawn_controllers(
            &mut tasks,
            &fleet,
            works,
            &client,
            written,
            &stop,
            config.lost_cluster_grace,
        );
        tasks.spawn(
            "hosted-clusters",
            hosted::run(
                client,
                fleet.clone(),
                hosted_settings(&config.hosted, addresses.first().cloned()),
                agent_url(grpc_addr),
                ca.cert_pem().to_owned(),
                stop,
            ),
        );
        fleet.membership_dirty.notify_one();
        fleet.profiles_dirty.notify_one();
        tracing::info!(%grpc_addr, clusters = fleet.len(), auto_accept = config.auto_accept, "hub is serving agents");
        Ok(Self {
            grpc_addr,
            ca_pem: ca.cert_pem().to_owned(),
            fleet,
            shutdown,
            tasks,
        })
    }

    /// The address agents connect to.
    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc_addr
    }

    /// The CA certificate agents pin, PEM encoded.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The hub's view of its members.
    pub fn fleet(&self) -> &Arc<Fleet> {
        &self.fleet
    }

    /// Stops serving: ends the agents' streams, closes their connections (they reconnect to the
    /// next hub), tells every task to stop and waits for them all, at most [`SHUTDOWN_DEADLINE`]
    /// (hosted control planes stop within it too); a task still running then is named and
    /// aborted.
    pub async fn shutdown(self) {
        self.fleet.close_streams();
        let _ = self.shutdown.send(true);
        self.tasks.join(SHUTDOWN_DEADLINE).await;
    }
}

/// The agents' gRPC service on `listener` with the hub's serving `identity`, answering from
/// `fleet` and `works`, and the bootstrap tokens it admits joining clusters with: tasks that end
/// on `stop`.
fn spawn_agent_server(
    tasks: &mut Tasks,
    (identity, listener): (tonic::transport::Identity, Arc<tokio::net::TcpListener>),
    fleet: &Arc<Fleet>,
    works: &Arc<work::WorkIndex>,
    client: &kube::Client,
    config: &Config,
    stop: &watch::Receiver<bool>,
) -> Result<(), Error> {
    let joins = Arc::new(grpc::guard::JoinLimiter::default());
    let tokens = Arc::new(bootstrap::Tokens::default());
    let service = grpc::HubService::new(
        fleet.clone(),
        works.clone(),
        client.clone(),
        config.auto_accept,
        joins.clone(),
        tokens.clone(),
        config.credential_lifetime,
    );
    let server = serve_agents(identity, fleet, joins)?.add_service(
        HubServer::new(service).max_decoding_message_size(grpc::guard::SYNC_MAX_BYTES),
    );
    let incoming = grpc::listener::admit(listener, config.grpc_max_connections);
    let mut server_stop = stop.clone();
    tasks.spawn(
        "bootstrap-tokens",
        sources::bootstrap_tokens(tokens, client.clone(), stop.clone()),
    );
    tasks.spawn("grpc-server", async move {
        let signal = async move {
            let _ = server_stop.changed().await;
        };
        if let Err(error) = server.serve_with_incoming_shutdown(incoming, signal).await {
            tracing::error!(%error, "the hub's gRPC server stopped");
        }
    });
    Ok(())
}

/// The hub's settings for hosted control planes, whose agents reach the hub at `hub_address`
/// (the first address it publishes for agents, if any).
fn hosted_settings(hosted: &hosted::Settings, hub_address: Option<String>) -> hosted::Settings {
    hosted::Settings {
        kubernetes: hosted::kubernetes::Settings {
            hub_address,
            ..hosted.kubernetes.clone()
        },
        ..hosted.clone()
    }
}

/// Where agents the hub runs in its own process (those of hosted clusters) reach its gRPC
/// service: its listening address, or the loopback one when it listens on every address.
fn agent_url(grpc_addr: SocketAddr) -> String {
    let agent_host = if grpc_addr.ip().is_unspecified() {
        SocketAddr::new([127, 0, 0, 1].into(), grpc_addr.port())
    } else {
        grpc_addr
    };
    format!("https://{agent_host}")
}

/// The hub's controllers and watches, each a task that ends on `stop`.
fn spawn_controllers(
    tasks: &mut Tasks,
    fleet: &Arc<Fleet>,
    works: Arc<work::WorkIndex>,
    client: &kube::Client,
    written: inventory::Written,
    stop: &watch::Receiver<bool>,
    lost_cluster_grace: std::time::Duration,
) {
    let (f, c, s) = (fleet, client, stop);
    tasks.spawn(
        "member-records",
        sources::records(f.clone(), c.clone(), s.clone()),
    );
    tasks.spawn(
        "profile-source",
        sources::profiles(f.clone(), c.clone(), s.clone()),
    );
    tasks.spawn(
        "clusterset-source",
        sources::cluster_sets(f.clone(), c.clone(), s.clone()),
    );
    tasks.spawn(
        "profile-status",
        inventory::write_profiles(f.clone(), c.clone(), written, s.clone()),
    );
    tasks.spawn("leases", inventory::watch_leases(f.clone(), s.clone()));
    tasks.spawn(
        "work-index",
        work::watch_works(works.clone(), f.clone(), c.clone(), s.clone()),
    );
    tasks.spawn(
        "placements",
        placement::run(works.clone(), f.clone(), c.clone(), s.clone()),
    );
    let lifecycle = work::lifecycle::Context {
        index: works,
        fleet: f.clone(),
        client: c.clone(),
        grace: lost_cluster_grace,
    };
    tasks.spawn("work-lifecycle", work::lifecycle::run(lifecycle, s.clone()));
    tasks.spawn("work-overrides", work_override::run(c.clone(), s.clone()));
    tasks.spawn(
        "clustersets",
        clusterset::run(f.clone(), c.clone(), s.clone()),
    );
}

/// Builds the fleet view from the API server: member records, their profiles (labels, status
/// already written) and the ClusterSets with the members they admitted. Returns the stored
/// profile statuses.
async fn load(fleet: &Fleet, client: &kube::Client) -> Result<inventory::Written, Error> {
    let setup = |what: &str| {
        let what = what.to_owned();
        move |source| Error::Setup { what, source }
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let records = secrets
        .list(&ListParams::default().labels(record::LABEL_CLUSTER))
        .await
        .map_err(setup("member records"))?;
    for secret in &records {
        if let Some(r) = Record::from_secret(secret) {
            fleet.upsert_record(&r, record::version(&secret.metadata));
        }
    }
    let profiles: Api<ClusterProfile> = Api::namespaced(client.clone(), INVENTORY_NAMESPACE);
    let selector = format!("{LABEL_CLUSTER_MANAGER}={CLUSTER_MANAGER_NAME}");
    let listed = profiles
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(setup("ClusterProfiles"))?;
    let mut written = inventory::Written::new();
    for profile in &listed {
        sources::observe_profile(fleet, profile);
        let name = profile.metadata.name.clone().unwrap_or_default();
        if let (Some(member), Some(status)) = (fleet.get(&name), profile.status.clone()) {
            // The stored properties stand until the agent's first heartbeat.
            fleet.update(&name, |m| {
                m.properties = status.properties.clone();
                m.version = status
                    .version
                    .as_ref()
                    .and_then(|v| v.kubernetes.clone())
                    .unwrap_or_default();
                (fleet::Changes::default(), ())
            });
            written.insert(member.name, (profile.metadata.uid.clone(), status));
        }
    }
    let has_profile: HashSet<&str> = listed
        .iter()
        .filter_map(|p| p.metadata.name.as_deref())
        .collect();
    for member in fleet.members() {
        if !written.contains_key(&member.name) && !has_profile.contains(member.name.as_str()) {
            inventory::ensure_profile(client.clone(), &member.name, None)
                .await
                .map_err(setup("ClusterProfiles"))?;
        }
    }
    let sets: Api<ClusterSet> = Api::all(client.clone());
    for set in sets
        .list(&ListParams::default())
        .await
        .map_err(setup("ClusterSets"))?
    {
        let name = set.metadata.name.clone().unwrap_or_default();
        fleet.set_cluster_set(&name, true);
        for admitted in set.status.map(|s| s.members).unwrap_or_default() {
            fleet.update(&admitted.name, |m| {
                if m.label_set.as_deref() == Some(name.as_str()) {
                    m.membership = Decision::Member { set: name.clone() };
                }
                (fleet::Changes::default(), ())
            });
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_process_agents_reach_a_hub_listening_everywhere_over_loopback() {
        assert_eq!(
            agent_url("0.0.0.0:7443".parse().unwrap()),
            "https://127.0.0.1:7443"
        );
        assert_eq!(
            agent_url("[::]:7443".parse().unwrap()),
            "https://127.0.0.1:7443"
        );
        assert_eq!(
            agent_url("10.0.0.5:7443".parse().unwrap()),
            "https://10.0.0.5:7443"
        );
        assert_eq!(
            agent_url("[::1]:7443".parse().unwrap()),
            "https://[::1]:7443"
        );
    }

    #[test]
    fn hosted_control_planes_get_the_hubs_first_agent_address() {
        let configured = hosted::Settings {
            host: "hub.example".into(),
            ..hosted::Settings::default()
        };
        let settings = hosted_settings(&configured, Some("hub.example:7443".into()));
        assert_eq!(
            settings.kubernetes.hub_address.as_deref(),
            Some("hub.example:7443")
        );
        assert_eq!(settings.host, "hub.example", "the rest stays as configured");
        let settings = hosted_settings(&configured, None);
        assert_eq!(settings.kubernetes.hub_address, None);
    }
}
