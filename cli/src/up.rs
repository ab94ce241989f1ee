//! `atoll up` (the embedded hub) and `atoll apiserver` (a plain member API server): start in the
//! foreground, log one line when ready, stop gracefully on SIGTERM or SIGINT (a second signal
//! stops at once).
//!
//! `atoll apiserver` is also what the hub runs for each Process-mode hosted cluster: it exits
//! with a status that says what failed (`atoll_hub::hosted::process::EXIT_*`), stops when its
//! standard input closes (`--exit-on-stdin-close`), and exits to be started again once a
//! restored backup was uploaded to it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use atoll_api::clusterset::{ClusterSet, ClusterSetSpec};
use atoll_api::hosted::{CONDITION_AGENT_JOINED, CONDITION_AVAILABLE, HostedCluster};
use atoll_api::inventory::ClusterProfile;
use atoll_api::names::{
    CONDITION_CONTROL_PLANE_HEALTHY, CONDITION_JOINED, HOSTED_CLUSTERS_NAMESPACE,
    INVENTORY_NAMESPACE, SYSTEM_NAMESPACE,
};
use atoll_apiserver::{Config, Server, StorageKind};
use atoll_hub::hosted::process::{EXIT_DATASTORE, EXIT_LISTEN, EXIT_RESTART};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ObjectMeta, PostParams};
use serde::Deserialize as _;

pub enum Mode {
    /// The hub: kubeconfig `hub.kubeconfig`, the hub controllers and the gRPC server, and at
    /// the first start `hosted_clusters` embedded hosted clusters in ClusterSet `default`.
    Hub {
        /// Boxed: the hub's configuration is much larger than a member's.
        config: Box<atoll_hub::Config>,
        hosted_clusters: u32,
        /// Where `/livez`, `/readyz` and `/metrics` are served.
        metrics_addr: SocketAddr,
        /// A backup to start from (a new data directory only).
        restore: Option<PathBuf>,
        /// How replicas on one etcd elect the one that leads; `None`: this hub simply leads.
        election: Option<atoll_hub::leader::Timing>,
    },
    /// A plain API server: kubeconfig `admin.kubeconfig`.
    Member(Member),
}

/// How a plain API server runs.
pub struct Member {
    pub tls_sans: Vec<String>,
    pub limits: atoll_apiserver::Limits,
    pub exit_on_stdin_close: bool,
}

/// The ClusterSet `atoll up` puts its first hosted clusters in.
const DEFAULT_CLUSTER_SET: &str = "default";
/// How long `atoll up` waits for its first hosted clusters before it says it is ready anyway.
const FIRST_CLUSTERS_WAIT: Duration = Duration::from_secs(60);

/// Parses a quantity of bytes (`268435456`, `256Mi`, `1G`).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    atoll_api::hosted::parse_bytes(&serde_json::Value::String(text.to_owned()))
        .map_err(|e| e.to_string())
}

/// `atoll up`'s defaults for hosted control planes: data under the hub's, served on the API
/// address's host, by this very binary; and, for a hub on etcd (`etcd`: its own settings),
/// clusters with `storage.backend: etcd` in the same etcd under `<--etcd-prefix>-hosted`. Refuses
/// a hosted prefix that nests with the hub's own.
pub fn hosted_defaults(
    hosted: &mut atoll_hub::hosted::Settings,
    flags: &atoll_hub::flags::Flags,
    data_dir: &Path,
    api_addr: SocketAddr,
    etcd: Option<&atoll_apiserver::storage::etcd::EtcdOptions>,
) -> anyhow::Result<()> {
    if let Some(hub) = etcd {
        let hosted_etcd = hosted.etcd.get_or_insert_with(|| {
            let prefix = flags
                .hosted_etcd
                .hosted_etcd_prefix
                .clone()
                .unwrap_or_else(|| format!("{}-hosted", hub.prefix));
            let mut same =
                atoll_hub::hosted::datastore::HostedEtcd::new(hub.endpoints.clone(), prefix);
            same.ca_file = hub.ca_file.clone();
            same.cert_file = hub.cert_file.clone();
            same.key_file = hub.key_file.clone();
            same.timeout = hub.timeout;
            Box::new(same)
        });
        if atoll_hub::hosted::datastore::nest(&hosted_etcd.prefix, &hub.prefix) {
            anyhow::bail!(
                "the hosted clusters' etcd prefix {:?} (--hosted-etcd-prefix) nests with the hub's own {:?} (--etcd-prefix): the hub's API server would see their keys; choose prefixes neither of which is the other or under it",
                hosted_etcd.prefix,
                hub.prefix
            );
        }
    }
    // Its API server runs no pods: mode Kubernetes only when asked for.
    hosted.kubernetes.enabled = flags.hosted_kubernetes.hosted_kubernetes.unwrap_or(false);
    if hosted.data_dir.is_none() {
        hosted.data_dir = Some(data_dir.join("hosted"));
    }
    if flags.hosted_listen.is_none() {
        hosted.listen_ip = api_addr.ip();
    }
    if flags.hosted_host.is_none() {
        hosted.host = if api_addr.ip().is_unspecified() {
            "127.0.0.1".to_owned()
        } else {
            api_addr.ip().to_string()
        };
    }
    if flags.apiserver_binary.is_none()
        && let Ok(this) = std::env::current_exe()
    {
        hosted.binary = Some(this);
    }
    Ok(())
}

pub async fn run(
    mut mode: Mode,
    data_dir: PathBuf,
    api_addr: SocketAddr,
    (storage, etcd): (
        StorageKind,
        Option<atoll_apiserver::storage::etcd::EtcdOptions>,
    ),
    audit: Option<atoll_apiserver::audit::Options>,
) -> anyhow::Result<()> {
    let signals = atoll_runtime::Stop::listen();
    let first_start = prepare_data(&mode, &data_dir, storage, etcd.as_ref()).await?;
    let (mut config, what) = server_config(&mode, &data_dir, api_addr);
    config.storage = storage;
    config.etcd = etcd;
    config.audit = audit;
    // The hub serves its health and metrics before anything else starts, so that a probe sees
    // it starting, and a bad --metrics-addr stops it at once.
    let mut health = None;
    if let Mode::Hub {
        config: hub,
        metrics_addr,
        ..
    } = &mut mode
    {
        health = Some(Health::start(*metrics_addr, &mut config, hub).await?);
    }
    let member = matches!(mode, Mode::Member(_));
    let server = Server::start(config)
        .await
        .map_err(|error| start_failed(error, what, &data_dir, member))?;
    if let Some(health) = &health {
        health.serving.done();
    }
    let (mut hub, stdin_close) = match mode {
        Mode::Hub {
            config,
            hosted_clusters,
            election,
            ..
        } => {
            let readiness = health.as_ref().map(|h| &h.readiness);
            let client = hub_client(&server).await?;
            let started = start_hub(
                client.clone(),
                &data_dir,
                *config,
                election,
                readiness,
                &signals,
            )
            .await?;
            let Some(hub) = started else {
                // Stopped before it led.
                server.shutdown().await;
                health.into_iter().for_each(Health::stop);
                tracing::info!("{what} stopped");
                return Ok(());
            };
            if first_start && hosted_clusters > 0 {
                let first = readiness
                    .map(|readiness| readiness.pending("the first hosted clusters are starting"));
                first_clusters(client, hosted_clusters).await?;
                first.inspect(atoll_runtime::endpoint::Pending::done);
            }
            (Some(hub), false)
        }
        Mode::Member(member) => (None, member.exit_on_stdin_close),
    };
    tracing::info!(
        url = %server.url(),
        kubeconfig = %server.kubeconfig_path().display(),
        grpc = ?hub.as_ref().map(|h| format!("https://{}", h.grpc_addr())),
        "{what} is ready"
    );
    let restarting = until_stopped(&server, &signals, stdin_close, hub.as_mut()).await;
    tracing::info!("stopping; a second signal stops at once");
    atoll_runtime::exit_on_second_signal();
    let stopping = health.as_ref().map(|h| h.readiness.pending("stopping"));
    if let Some(hub) = hub {
        hub.shutdown().await;
    }
    server.shutdown().await;
    drop(stopping);
    health.into_iter().for_each(Health::stop);
    tracing::info!("{what} stopped");
    if restarting {
        std::process::exit(EXIT_RESTART);
    }
    Ok(())
}

/// Whether the hub starts for the first time (no data yet: it then makes its first hosted
/// clusters), after staging the backup it was asked to start from (a restored hub is not new).
async fn prepare_data(
    mode: &Mode,
    data_dir: &Path,
    storage: StorageKind,
    etcd: Option<&atoll_apiserver::storage::etcd::EtcdOptions>,
) -> anyhow::Result<bool> {
    let first_start = match (storage, etcd) {
        (StorageKind::Memory, _) => true,
        // Nothing under the prefix yet: no replica of the hub has started on it. (Only the hub
        // asks; a plain API server reports an unreachable etcd as it opens storage.)
        (StorageKind::Etcd, Some(etcd)) if matches!(mode, Mode::Hub { .. }) => {
            etcd_is_empty(etcd).await?
        }
        (StorageKind::Etcd, _) => false,
        _ => !data_dir.join("state.db").exists(),
    };
    if let Mode::Hub {
        restore: Some(backup),
        ..
    } = mode
    {
        crate::backup::stage(data_dir, backup, first_start).await?;
        return Ok(false);
    }
    Ok(first_start)
}

/// The API server's configuration for `mode`, and what the logs call the server.
fn server_config(mode: &Mode, data_dir: &Path, api_addr: SocketAddr) -> (Config, &'static str) {
    let mut config = Config::new(data_dir, api_addr);
    let what = match mode {
        Mode::Hub { .. } => {
            config.kubeconfig_name = "hub.kubeconfig".into();
            config.cluster_name = "atoll-hub".into();
            "atoll hub"
        }
        Mode::Member(member) => {
            config.kubeconfig_name = "admin.kubeconfig".into();
            config.cluster_name = "atoll".into();
            config.extra_hosts = member.tls_sans.clone();
            config.limits = member.limits.clone();
            "atoll API server"
        }
    };
    (config, what)
}

/// Why the server could not start. A plain API server exits at once with a code that says what
/// failed (its supervisor, a Process-mode hub, reads it).
fn start_failed(
    error: atoll_apiserver::Error,
    what: &str,
    data_dir: &Path,
    member: bool,
) -> anyhow::Error {
    let code = match &error {
        atoll_apiserver::Error::DataDir { .. }
        | atoll_apiserver::Error::DataDirInUse { .. }
        | atoll_apiserver::Error::DataFormat(_)
        | atoll_apiserver::Error::Storage(_)
        | atoll_apiserver::Error::Credentials(_) => EXIT_DATASTORE,
        atoll_apiserver::Error::Listen { .. } => EXIT_LISTEN,
        _ => 1,
    };
    let error = anyhow::Error::new(error)
        .context(format!("cannot start the {what} in {}", data_dir.display()));
    if member && code != 1 {
        eprintln!("Error: {error:#}");
        std::process::exit(code);
    }
    error
}

/// The hub's `/livez`, `/readyz` and `/metrics`, served while it runs.
struct Health {
    readiness: atoll_runtime::endpoint::Readiness,
    /// Pending until the API server serves.
    serving: atoll_runtime::endpoint::Pending,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Health {
    /// Serves on `addr` the metrics `config` (the API server's) and `hub` register, and the
    /// readiness the hub reports.
    async fn start(
        addr: SocketAddr,
        config: &mut Config,
        hub: &mut atoll_hub::Config,
    ) -> anyhow::Result<Health> {
        let mut registry = atoll_runtime::prometheus_client::registry::Registry::default();
        config.metrics = Some(atoll_apiserver::metrics::Metrics::register(&mut registry));
        hub.metrics = atoll_hub::metrics::Metrics::register(&mut registry);
        let readiness = atoll_runtime::endpoint::Readiness::default();
        let serving = readiness.pending("the API server is starting");
        hub.ready = Some(readiness.pending("the hub is loading and syncing its caches"));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let served = atoll_runtime::endpoint::Endpoint::new(registry, readiness.clone());
        let addr = atoll_runtime::endpoint::start(addr, served, stopped)
            .await
            .with_context(|| format!("cannot serve --metrics-addr {addr}"))?;
        tracing::info!(metrics = %format!("http://{addr}/metrics"), "serving health and metrics");
        Ok(Health {
            readiness,
            serving,
            stop,
        })
    }

    fn stop(self) {
        let _ = self.stop.send(true);
    }
}

/// Waits for a signal, the end of standard input (`stdin_close`), or a staged restore (then
/// answers `true`: stop to start again); a leading hub that loses its Lease exits meanwhile.
async fn until_stopped(
    server: &Server,
    signals: &atoll_runtime::Stop,
    stdin_close: bool,
    hub: Option<&mut HubRun>,
) -> bool {
    let mut restart = server.restart_requested();
    let stop = async {
        tokio::select! {
            () = signals.asked() => false,
            _ = stdin_closed(), if stdin_close => {
                tracing::info!("standard input closed");
                false
            }
            _ = restart.wait_for(|r| *r) => {
                tracing::info!("a restored backup was staged; stopping to start again");
                true
            }
        }
    };
    match hub {
        Some(HubRun::Leading(leading)) => leading.until(stop).await,
        _ => stop.await,
    }
}

/// Resolves when standard input reaches its end (its writer, a supervisor, is gone).
async fn stdin_closed() {
    use tokio::io::AsyncReadExt as _;
    let mut stdin = tokio::io::stdin();
    let mut buffer = [0u8; 256];
    while let Ok(n) = stdin.read(&mut buffer).await {
        if n == 0 {
            break;
        }
    }
}

/// Creates ClusterSet `default` and `count` embedded hosted clusters in it, and waits (a
/// while) until they serve and joined, so that the first `atoll get clusters` shows a fleet.
async fn first_clusters(client: kube::Client, count: u32) -> anyhow::Result<()> {
    let sets: Api<ClusterSet> = Api::all(client.clone());
    let set = ClusterSet {
        metadata: ObjectMeta {
            name: Some(DEFAULT_CLUSTER_SET.to_owned()),
            ..ObjectMeta::default()
        },
        spec: ClusterSetSpec {
            description: Some("the hosted clusters atoll up made at its first start".to_owned()),
        },
        status: None,
    };
    match sets.create(&PostParams::default(), &set).await {
        Ok(_) => {}
        // Another replica on the same etcd, started at the same time, made the first clusters
        // (and the user may have deleted some since): nothing to make again.
        Err(kube::Error::Api(e)) if e.code == 409 => return Ok(()),
        Err(e) => return Err(e).context("cannot create ClusterSet default"),
    }
    let hosted: Api<HostedCluster> = Api::namespaced(client.clone(), HOSTED_CLUSTERS_NAMESPACE);
    let names: Vec<String> = (1..=count).map(|i| format!("cluster-{i}")).collect();
    for name in &names {
        let hc = HostedCluster::new(
            name,
            atoll_api::hosted::HostedClusterSpec {
                cluster_set: Some(DEFAULT_CLUSTER_SET.to_owned()),
                ..Default::default()
            },
        );
        match hosted.create(&PostParams::default(), &hc).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create hosted cluster {name}"));
            }
        }
    }
    tracing::info!(clusters = %names.join(", "), "created the first hosted clusters in ClusterSet default");
    // Ready as a user sees it: serving, and in the inventory joined, healthy and in the set.
    let profiles: Api<ClusterProfile> = Api::namespaced(client, INVENTORY_NAMESPACE);
    let started = Instant::now();
    let all_true = |conditions: &[Condition], types: &[&str]| {
        types.iter().all(|t| {
            conditions
                .iter()
                .any(|c| c.type_ == *t && c.status == "True")
        })
    };
    loop {
        let hosted_clusters = hosted.list(&Default::default()).await?;
        let inventory = profiles.list(&Default::default()).await?;
        let waiting: Vec<String> = names
            .iter()
            .filter(|n| {
                let serving = hosted_clusters.items.iter().any(|hc| {
                    hc.metadata.name.as_ref() == Some(*n)
                        && all_true(
                            hc.status
                                .as_ref()
                                .map(|s| &s.conditions[..])
                                .unwrap_or_default(),
                            &[CONDITION_AVAILABLE, CONDITION_AGENT_JOINED],
                        )
                });
                let listed = inventory.items.iter().any(|p| {
                    p.metadata.name.as_ref() == Some(*n)
                        && all_true(
                            p.status
                                .as_ref()
                                .map(|s| &s.conditions[..])
                                .unwrap_or_default(),
                            &[
                                CONDITION_JOINED,
                                CONDITION_CONTROL_PLANE_HEALTHY,
                                atoll_api::names::CONDITION_CLUSTER_SET_MEMBER,
                            ],
                        )
                });
                !(serving && listed)
            })
            .cloned()
            .collect();
        if waiting.is_empty() {
            return Ok(());
        }
        if started.elapsed() > FIRST_CLUSTERS_WAIT {
            tracing::warn!(waiting = %waiting.join(", "), "hosted clusters not yet available; see atoll hosted list -o wide");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The embedded hub's own user: its controllers and gRPC service act as it, with the rights the
/// ClusterRole `atoll-hub` and the Role `atoll-hub` (in `atoll-system`) of `manifests/hub` give
/// the hub on a real cluster, not as the admin.
pub const HUB_USER: &str = "atoll:hub";
/// The bindings of [`HUB_USER`] to those roles.
const HUB_BINDING: &str = "atoll-hub-embedded";
/// How long the hub's client certificate is valid; a new one is made at each start.
const HUB_CERTIFICATE_TTL: Duration = Duration::from_secs(365 * 24 * 3600);
/// The hub's manifests on a real cluster, whose ClusterRole and Role are the embedded hub's too.
const HUB_MANIFESTS: &str = include_str!("../../manifests/hub/hub.yaml");

/// A client acting as [`HUB_USER`]: as the admin, applies the hub's ClusterRole and its Role in
/// `atoll-system` (as `manifests/hub` has them, so that an upgrade brings new rules) and binds the
/// user to them, then signs a client certificate for the user.
async fn hub_client(server: &Server) -> anyhow::Result<kube::Client> {
    let admin = config_of(&std::fs::read_to_string(server.kubeconfig_path())?).await?;
    let admin = kube::Client::try_from(admin)?;
    let manifest = |kind: &str| {
        serde_yaml_ng::Deserializer::from_str(HUB_MANIFESTS)
            .map(serde_json::Value::deserialize)
            .filter_map(Result::ok)
            .find(|doc| doc["kind"] == kind)
            .with_context(|| format!("manifests/hub has no {kind}"))
    };
    let apply = kube::api::PatchParams::apply("atoll-up").force();
    let subjects = serde_json::json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": HUB_USER}]);

    let role = manifest("ClusterRole")?;
    let name = role["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    roles
        .patch(&name, &apply, &kube::api::Patch::Apply(&role))
        .await
        .with_context(|| format!("cannot apply ClusterRole {name}"))?;
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": HUB_BINDING},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": subjects,
    });
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    bindings
        .patch(HUB_BINDING, &apply, &kube::api::Patch::Apply(&binding))
        .await
        .with_context(|| format!("cannot apply ClusterRoleBinding {HUB_BINDING}"))?;

    // The Role lives in atoll-system, which the hub itself creates only later.
    let namespace = SYSTEM_NAMESPACE;
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    namespaces
        .patch(namespace, &apply, &kube::api::Patch::Apply(&ns))
        .await
        .with_context(|| format!("cannot apply Namespace {namespace}"))?;
    let mut role = manifest("Role")?;
    role["metadata"]["namespace"] = serde_json::json!(namespace);
    let role_name = role["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let roles: Api<Role> = Api::namespaced(admin.clone(), namespace);
    roles
        .patch(&role_name, &apply, &kube::api::Patch::Apply(&role))
        .await
        .with_context(|| format!("cannot apply Role {namespace}/{role_name}"))?;
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": HUB_BINDING, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
        "subjects": subjects,
    });
    let bindings: Api<RoleBinding> = Api::namespaced(admin, namespace);
    bindings
        .patch(HUB_BINDING, &apply, &kube::api::Patch::Apply(&binding))
        .await
        .with_context(|| format!("cannot apply RoleBinding {namespace}/{HUB_BINDING}"))?;

    let kubeconfig = server
        .user_kubeconfig(HUB_USER, &[], HUB_CERTIFICATE_TTL)
        .context("cannot sign the hub's client certificate")?;
    tracing::info!(user = HUB_USER, role = %name, "the hub's controllers act as their own user");
    let config = config_of(&kubeconfig).await?;
    Ok(kube::Client::try_from(atoll_hub::identified(config))?)
}

/// The client configuration of the kubeconfig `text`.
async fn config_of(text: &str) -> anyhow::Result<kube::Config> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(text)?;
    Ok(kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?)
}

/// How long the bootstrap token `atoll up` writes for local agents works.
const LOCAL_TOKEN_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The hub `atoll up` runs: alone, or as the leading replica of several on one etcd.
enum HubRun {
    Single(atoll_hub::Hub),
    Leading(atoll_hub::replica::Leading),
}

impl HubRun {
    fn grpc_addr(&self) -> SocketAddr {
        match self {
            HubRun::Single(hub) => hub.grpc_addr(),
            HubRun::Leading(leading) => leading.hub().grpc_addr(),
        }
    }

    async fn shutdown(self) {
        match self {
            HubRun::Single(hub) => hub.shutdown().await,
            HubRun::Leading(leading) => leading.shutdown().await,
        }
    }
}

/// Starts the hub controllers and gRPC server against the embedded API server, and writes what
/// local agents need: `hub-ca.crt` and `bootstrap-token` in the data directory. With an
/// `election` (replicas sharing one etcd), the replica serves the API at once, holds the gRPC
/// address answering agents UNAVAILABLE and is not ready until it takes the Lease; `None` when
/// it was stopped before it led.
async fn start_hub(
    client: kube::Client,
    data_dir: &Path,
    config: atoll_hub::Config,
    election: Option<atoll_hub::leader::Timing>,
    readiness: Option<&atoll_runtime::endpoint::Readiness>,
    signals: &atoll_runtime::Stop,
) -> anyhow::Result<Option<HubRun>> {
    let grpc_addr = config.grpc_addr;
    let cannot_start = || format!("cannot start the hub (gRPC on {grpc_addr})");
    let write_ca = |pem: &str| {
        let path = data_dir.join("hub-ca.crt");
        std::fs::write(&path, pem).with_context(|| format!("cannot write {}", path.display()))
    };
    let token_path = data_dir.join("bootstrap-token");
    let Some(timing) = election else {
        config.metrics.leading(true);
        let hub = atoll_hub::Hub::start(client.clone(), config)
            .await
            .with_context(cannot_start)?;
        write_ca(hub.ca_pem())?;
        replace_local_token(client, &token_path).await?;
        return Ok(Some(HubRun::Single(hub)));
    };
    config.metrics.leading(false);
    let not_leading = readiness.map(|r| {
        r.pending(format!(
            "this replica is not leading (Lease {SYSTEM_NAMESPACE}/{})",
            atoll_hub::leader::LEASE_NAME
        ))
    });
    let standby = atoll_hub::Hub::standby(&client, &config)
        .await
        .with_context(cannot_start)?;
    write_ca(standby.ca_pem())?;
    replace_local_token(client.clone(), &token_path).await?;
    let elector =
        atoll_hub::leader::Elector::new(client.clone(), atoll_hub::leader::identity(), timing);
    tracing::info!(identity = %elector.identity(), grpc = %format!("https://{}", standby.grpc_addr()), lease_duration = ?timing.lease_duration, "the hub serves its API and waits to lead");
    let leading = atoll_hub::replica::lead(standby, client, config, elector, signals.asked())
        .await
        .with_context(cannot_start)?;
    not_leading.inspect(atoll_runtime::endpoint::Pending::done);
    Ok(leading.map(HubRun::Leading))
}

/// Writes a new bootstrap token for local agents, valid for a day, and deletes the one written
/// at the previous start (clusters that joined with it keep their credentials).
async fn replace_local_token(client: kube::Client, path: &Path) -> anyhow::Result<()> {
    let previous = std::fs::read_to_string(path).ok();
    let (token, _) = atoll_hub::bootstrap::create(
        client.clone(),
        Some(LOCAL_TOKEN_TTL),
        "local agents (written by atoll up, replaced at each start)",
        None,
    )
    .await
    .context("cannot create the local bootstrap token")?;
    atoll_pki::write_private(path, format!("{token}\n").as_bytes())?;
    if let Some(Ok(old)) = previous.as_deref().map(atoll_hub::bootstrap::Token::parse) {
        match atoll_hub::bootstrap::delete(client, old.id()).await {
            Ok(()) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(error) => {
                tracing::warn!(token = old.id(), %error, "cannot delete the previous local bootstrap token")
            }
        }
    }
    Ok(())
}

/// Whether nothing is stored under the etcd prefix yet.
async fn etcd_is_empty(etcd: &atoll_apiserver::storage::etcd::EtcdOptions) -> anyhow::Result<bool> {
    use atoll_apiserver::storage::Backend;
    let backend = atoll_apiserver::storage::etcd::EtcdBackend::connect(etcd)
        .await
        .map_err(anyhow::Error::new)
        .context("cannot open etcd storage")?;
    Ok(backend.usage().objects == 0)
}
