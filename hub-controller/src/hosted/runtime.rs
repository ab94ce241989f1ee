//! The control planes this hub runs, one supervisor task each: it prepares the data directory,
//! starts the API server (in this process, or as a child `atoll apiserver`), starts the cluster's
//! agent in this process once the server serves, and starts everything again with backoff when
//! it fails. The controller asks for what it wants ([`ControlPlanes::ensure`], `stop`) and reads
//! where each one is; every change of phase is also sent on a channel that makes the controller
//! reconcile that cluster again.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use atoll_api::hosted::{HostedMode, StorageBackend};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::Instrument as _;

use atoll_apiserver::storage::etcd::EtcdOptions;

use super::datadir::{self, Layout, Saved};
use super::datastore::HostedEtcd;
use super::plan::{Component, Phase};
use super::{embedded, process};

/// How long a stop waits for a control plane before it aborts its task.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);
/// How long `ensure` waits for a starting control plane before it answers `Starting`.
const START_WAIT: Duration = Duration::from_secs(5);
/// The longest pause between two attempts to start a failing control plane.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A control plane that ran this long before failing starts its backoff afresh.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// A HostedCluster's namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What the agents of hosted clusters need to join this hub.
#[derive(Debug, Clone, Default)]
pub struct AgentHub {
    /// The hub's gRPC address, `https://host:port`.
    pub url: String,
    /// The hub's CA, PEM.
    pub ca_pem: String,
    /// The bootstrap token the hub made for its hosted clusters' agents.
    pub token: String,
    /// How often the agents apply every Work again.
    pub resync: Duration,
}

/// What every control plane of this hub shares.
#[derive(Debug, Clone)]
pub struct Shared {
    pub layout: Layout,
    /// The address API servers listen on.
    pub listen_ip: IpAddr,
    /// The host kubeconfigs name (in every serving certificate).
    pub host: String,
    /// The `atoll` binary that Process-mode control planes run.
    pub binary: Option<PathBuf>,
    pub agents: AgentHub,
    /// The etcd of clusters on etcd, if this hub has one.
    pub etcd: Option<HostedEtcd>,
}

/// Limits a control plane's API server enforces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    pub objects: Option<u64>,
    pub storage_bytes: Option<u64>,
    pub requests_in_flight: Option<u32>,
}

/// What the controller wants of one control plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    /// The HostedCluster's UID.
    pub uid: String,
    pub mode: HostedMode,
    pub storage: StorageBackend,
    /// For a cluster on etcd, its key prefix (the one its data directory records, else the one
    /// chosen for it now).
    pub etcd_prefix: Option<String>,
    /// The port the spec asks for.
    pub port: Option<u16>,
    pub extra_sans: Vec<String>,
    pub limits: Limits,
    /// Whether the cluster is being restored from a backup (it starts empty and waits for one).
    pub restore: bool,
}

impl Desired {
    /// Whether a control plane running as `self` serves what `other` asks (whether a restore
    /// was asked for matters only at the first start).
    pub fn same_config(&self, other: &Desired) -> bool {
        let plain = |d: &Desired| Desired {
            restore: false,
            ..d.clone()
        };
        plain(self) == plain(other)
    }
}

/// A control plane's admin credentials, as its kubeconfig holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub ca_pem: String,
    pub token: String,
}

/// Where a control plane is.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub phase: Phase,
    /// The port it serves on, once known.
    pub port: Option<u16>,
    pub credentials: Option<Credentials>,
}

impl Snapshot {
    fn absent() -> Self {
        Self {
            phase: Phase::Absent,
            port: None,
            credentials: None,
        }
    }
}

struct Instance {
    desired: Desired,
    state: watch::Receiver<Snapshot>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Every control plane this hub runs.
pub struct ControlPlanes {
    shared: Arc<Shared>,
    instances: Mutex<HashMap<Key, Instance>>,
    changed: mpsc::Sender<Key>,
}

impl ControlPlanes {
    /// No control planes yet; phase changes are sent on `changed`.
    pub fn new(shared: Shared, changed: mpsc::Sender<Key>) -> Self {
        Self {
            shared: Arc::new(shared),
            instances: Mutex::default(),
            changed,
        }
    }

    /// What every control plane shares.
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, Instance>> {
        self.instances.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where `key`'s control plane is, if it runs.
    pub fn snapshot(&self, key: &Key) -> Option<Snapshot> {
        self.lock().get(key).map(|i| i.state.borrow().clone())
    }

    /// Starts `key`'s control plane unless it runs as `desired` already (one that runs
    /// otherwise is stopped first), and answers where it is once it left `Starting` or after a
    /// few seconds.
    pub async fn ensure(&self, key: &Key, desired: Desired) -> Snapshot {
        let (current, previous) = {
            let mut instances = self.lock();
            match instances.get(key) {
                Some(i) if i.desired.same_config(&desired) => (Some(i.state.clone()), None),
                _ => (None, instances.remove(key)),
            }
        };
        let mut state = match current {
            Some(state) => state,
            None => {
                if let Some(previous) = previous {
                    tracing::info!(cluster = %key, "restarting the hosted control plane with a new configuration");
                    stop_instance(key, previous).await;
                }
                self.start(key, desired)
            }
        };
        let _ = tokio::time::timeout(
            START_WAIT,
            state.wait_for(|s| !matches!(s.phase, Phase::Starting | Phase::Absent)),
        )
        .await;
        state.borrow().clone()
    }

    fn start(&self, key: &Key, desired: Desired) -> watch::Receiver<Snapshot> {
        let (state_tx, state) = watch::channel(Snapshot {
            phase: Phase::Starting,
            port: None,
            credentials: None,
        });
        let (stop, stopped) = watch::channel(false);
        let supervisor = Supervisor {
            key: key.clone(),
            desired: desired.clone(),
            shared: self.shared.clone(),
            state: state_tx,
            stopped,
            changed: self.changed.clone(),
        };
        // Its own root span: the supervisor outlives the reconcile that started it.
        let span = tracing::info_span!(parent: None, "hosted", cluster = %key);
        let task = tokio::spawn(supervisor.run().instrument(span));
        self.lock().insert(
            key.clone(),
            Instance {
                desired,
                state: state.clone(),
                stop,
                task,
            },
        );
        state
    }

    /// Stops `key`'s control plane and its agent, and waits until they stopped.
    pub async fn stop(&self, key: &Key) {
        let instance = self.lock().remove(key);
        if let Some(instance) = instance {
            stop_instance(key, instance).await;
        }
    }

    /// Stops every control plane (at the hub's shutdown), all at once.
    pub async fn stop_all(&self) {
        let all: Vec<(Key, Instance)> = self.lock().drain().collect();
        futures::future::join_all(all.into_iter().map(|(k, i)| async move {
            stop_instance(&k, i).await;
        }))
        .await;
    }
}

async fn stop_instance(key: &Key, instance: Instance) {
    let _ = instance.stop.send(true);
    let mut task = instance.task;
    if tokio::time::timeout(STOP_TIMEOUT, &mut task).await.is_err() {
        tracing::warn!(cluster = %key, "the hosted control plane did not stop in time; aborting it");
        task.abort();
    }
}

/// How one run of a control plane ended.
pub enum Outcome {
    /// Asked to stop.
    Stopped,
    /// It must start again at once (a restored backup was staged).
    Restart,
    /// It failed.
    Failed(Failure),
}

/// Why a control plane failed.
#[derive(Debug, Clone)]
pub struct Failure {
    pub component: Component,
    pub reason: &'static str,
    pub message: String,
}

impl Failure {
    pub fn new(component: Component, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            component,
            reason,
            message: message.into(),
        }
    }
}

/// One control plane's supervisor.
struct Supervisor {
    key: Key,
    desired: Desired,
    shared: Arc<Shared>,
    state: watch::Sender<Snapshot>,
    stopped: watch::Receiver<bool>,
    changed: mpsc::Sender<Key>,
}

impl Supervisor {
    async fn run(mut self) {
        let mut attempts = 0u32;
        loop {
            if *self.stopped.borrow() {
                break;
            }
            let started = Instant::now();
            let outcome = match self.prepare() {
                Ok(saved) => {
                    let mut run = Run {
                        key: &self.key,
                        desired: &self.desired,
                        shared: &self.shared,
                        dir: self.shared.layout.dir(&self.key.namespace, &self.key.name),
                        saved,
                        state: &self.state,
                        stopped: self.stopped.clone(),
                        changed: &self.changed,
                    };
                    match self.desired.mode {
                        HostedMode::Embedded => embedded::serve(&mut run).await,
                        HostedMode::Process => process::serve(&mut run).await,
                        HostedMode::Kubernetes => Outcome::Failed(Failure::new(
                            Component::ApiServer,
                            "ModeUnavailable",
                            "this hub cannot run Kubernetes-mode control planes",
                        )),
                    }
                }
                Err(failure) => Outcome::Failed(failure),
            };
            match outcome {
                Outcome::Stopped => break,
                Outcome::Restart => {
                    attempts = 0;
                    tracing::info!("starting the control plane again");
                }
                Outcome::Failed(failure) => {
                    if started.elapsed() > HEALTHY_RUN {
                        attempts = 0;
                    }
                    attempts += 1;
                    tracing::warn!(reason = failure.reason, error = %failure.message, attempts, "the hosted control plane failed; retrying");
                    self.publish(|s| {
                        s.phase = Phase::Failed {
                            component: failure.component,
                            reason: failure.reason,
                            message: failure.message.clone(),
                            attempts,
                        };
                    })
                    .await;
                    let delay = Duration::from_millis(500)
                        .saturating_mul(1 << attempts.min(8))
                        .min(MAX_BACKOFF);
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = self.stopped.wait_for(|s| *s) => break,
                    }
                }
            }
        }
        self.publish(|s| *s = Snapshot::absent()).await;
    }

    /// Makes the data directory ready and reads what it records.
    fn prepare(&self) -> Result<Saved, Failure> {
        let dir = self.shared.layout.dir(&self.key.namespace, &self.key.name);
        let fresh = Saved::new(
            &self.desired.uid,
            self.desired.mode,
            self.desired.storage,
            self.desired.port,
        )
        .with_etcd_prefix(self.desired.etcd_prefix.clone());
        let saved = datadir::prepare(&dir, fresh).map_err(|e| {
            Failure::new(
                Component::Datastore,
                "DataDirectoryFailed",
                format!("cannot prepare the data directory {}: {e}", dir.display()),
            )
        })?;
        // A server writes its CA at its first start: before that, a restore may still come.
        let never_started = !dir.join("ca.crt").exists();
        // (A backup cannot go into etcd: the controller refuses that restore.)
        if never_started && self.desired.restore && self.desired.storage != StorageBackend::Etcd {
            atoll_apiserver::backup::mark_restore_pending(&dir).map_err(|e| {
                Failure::new(
                    Component::Datastore,
                    "DataDirectoryFailed",
                    format!("cannot prepare {} for a restore: {e}", dir.display()),
                )
            })?;
        }
        Ok(saved)
    }

    async fn publish(&self, change: impl FnOnce(&mut Snapshot)) {
        publish(&self.state, &self.changed, &self.key, change).await;
    }
}

async fn publish(
    state: &watch::Sender<Snapshot>,
    changed: &mpsc::Sender<Key>,
    key: &Key,
    change: impl FnOnce(&mut Snapshot),
) {
    state.send_modify(change);
    let _ = changed.send(key.clone()).await;
}

/// One run of one control plane, as `embedded::serve` and `process::serve` see it.
pub struct Run<'a> {
    pub key: &'a Key,
    pub desired: &'a Desired,
    pub shared: &'a Shared,
    /// The data directory.
    pub dir: PathBuf,
    /// What the data directory records.
    pub saved: Saved,
    state: &'a watch::Sender<Snapshot>,
    stopped: watch::Receiver<bool>,
    changed: &'a mpsc::Sender<Key>,
}

impl Run<'_> {
    /// The port to serve on: the spec's, else the one chosen before; `None` to choose one.
    pub fn port(&self) -> Option<u16> {
        self.desired.port.or(self.saved.port)
    }

    /// Records the port the API server serves on, so a restart keeps it.
    pub fn remember_port(&mut self, port: u16) -> Result<(), Failure> {
        if self.saved.port != Some(port) {
            self.saved.port = Some(port);
            datadir::save(&self.dir, &self.saved).map_err(|e| {
                Failure::new(
                    Component::Datastore,
                    "DataDirectoryFailed",
                    format!("cannot record the port in {}: {e}", self.dir.display()),
                )
            })?;
        }
        Ok(())
    }

    /// For a cluster on etcd, how its API server reaches its data: the hub's etcd, under the
    /// prefix its data directory records. `None` for other backends.
    pub fn etcd(&self) -> Result<Option<EtcdOptions>, Failure> {
        if self.desired.storage != StorageBackend::Etcd {
            return Ok(None);
        }
        let unavailable =
            |message: String| Failure::new(Component::Datastore, "StorageUnavailable", message);
        let Some(etcd) = &self.shared.etcd else {
            return Err(unavailable(
                "the cluster keeps its data in etcd, but this hub has no etcd for hosted clusters (--hosted-etcd-endpoints)".to_owned(),
            ));
        };
        let Some(prefix) = self
            .saved
            .etcd_prefix
            .as_ref()
            .or(self.desired.etcd_prefix.as_ref())
        else {
            return Err(unavailable(format!(
                "{} records no etcd prefix for the cluster",
                self.dir.join(datadir::FILE).display()
            )));
        };
        Ok(Some(etcd.options(prefix)))
    }

    /// The names and addresses the serving certificate holds besides `localhost`, `127.0.0.1`
    /// and the listen address.
    pub fn hosts(&self) -> Vec<String> {
        let mut hosts = vec![self.shared.host.clone()];
        hosts.extend(self.desired.extra_sans.iter().cloned());
        hosts.dedup();
        hosts
    }

    /// The address to listen on.
    pub fn listen(&self, port: u16) -> SocketAddr {
        SocketAddr::new(self.shared.listen_ip, port)
    }

    /// The limits as the API server takes them.
    pub fn limits(&self) -> atoll_apiserver::Limits {
        let l = &self.desired.limits;
        atoll_apiserver::Limits {
            objects: l.objects,
            storage_bytes: l.storage_bytes,
            // One limit for each kind, read-only and mutating; kube-apiserver's defaults
            // without one.
            requests_in_flight: l.requests_in_flight.or(Some(400)),
            mutating_requests_in_flight: l.requests_in_flight.or(Some(200)),
            watches_per_user: Some(atoll_apiserver::DEFAULT_WATCHES_PER_USER),
            connections: Some(atoll_apiserver::DEFAULT_CONNECTIONS),
            exempt_masters: false,
            source: format!("spec.limits of HostedCluster {}", self.key),
        }
    }

    /// Whether the data directory waits for a backup to be uploaded.
    pub fn awaiting_restore(&self) -> bool {
        self.dir
            .join(atoll_apiserver::backup::RESTORE_PENDING)
            .exists()
    }

    /// Says the control plane serves (or waits for a restore) on `port`.
    pub async fn serving(&self, port: u16, credentials: Credentials) {
        let phase = if self.awaiting_restore() {
            Phase::AwaitingRestore
        } else {
            Phase::Running
        };
        tracing::info!(?phase, port, "hosted control plane serving");
        publish(self.state, self.changed, self.key, |s| {
            s.phase = phase;
            s.port = Some(port);
            s.credentials = Some(credentials);
        })
        .await;
    }

    /// Resolves when the supervisor is asked to stop.
    pub async fn stopped(&self) {
        let mut stopped = self.stopped.clone();
        let _ = stopped.wait_for(|s| *s).await;
    }

    /// Starts the cluster's agent in this process, unless the cluster waits for a restore.
    pub fn start_agent(&self) -> Option<Agent> {
        if self.awaiting_restore() {
            return None;
        }
        let (stop, stopped) = watch::channel(false);
        let kubeconfig = self.dir.join(KUBECONFIG_FILE);
        let config = atoll_agent::Config {
            hub: self.shared.agents.url.clone(),
            hub_ca_pem: self.shared.agents.ca_pem.clone(),
            bootstrap_token: self.shared.agents.token.clone(),
            cluster_name: self.key.name.clone(),
            cluster_set: None,
            resync: self.shared.agents.resync,
            join_secret: Some(self.saved.join_secret.clone()),
            deny: atoll_agent::deny::Deny::default(),
            metrics: Default::default(),
            ready: None,
        };
        let task = tokio::spawn(
            run_agent(config, kubeconfig, stopped).instrument(tracing::info_span!("agent")),
        );
        Some(Agent { stop, task })
    }
}

/// The file every API server writes its admin kubeconfig to, in its data directory.
pub const KUBECONFIG_FILE: &str = "admin.kubeconfig";

/// A hosted cluster's agent, running in this process.
pub struct Agent {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Agent {
    /// Stops the agent and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let mut task = self.task;
        if tokio::time::timeout(Duration::from_secs(5), &mut task)
            .await
            .is_err()
        {
            task.abort();
        }
    }
}

/// Runs an agent until stopped; one that fails is started again after a pause.
async fn run_agent(
    config: atoll_agent::Config,
    kubeconfig: PathBuf,
    mut stopped: watch::Receiver<bool>,
) {
    let mut delay = Duration::from_millis(500);
    loop {
        let result = match member_client(&kubeconfig).await {
            Ok(member) => atoll_agent::run(config.clone(), member, stopped.clone())
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => return,
            Err(error) => {
                tracing::warn!(%error, ?delay, "the hosted cluster's agent stopped; starting it again");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stopped.wait_for(|s| *s) => return,
        }
        delay = (delay * 2).min(Duration::from_secs(30));
    }
}

/// A client of a control plane, from the admin kubeconfig in its data directory.
pub async fn member_client(kubeconfig: &Path) -> Result<kube::Client, String> {
    let parsed = kube::config::Kubeconfig::read_from(kubeconfig)
        .map_err(|e| format!("cannot read {}: {e}", kubeconfig.display()))?;
    let config =
        kube::Config::from_custom_kubeconfig(parsed, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| format!("cannot use {}: {e}", kubeconfig.display()))?;
    kube::Client::try_from(config).map_err(|e| format!("cannot build a client: {e}"))
}

/// The CA and admin token of the kubeconfig an API server wrote.
pub fn credentials(kubeconfig: &Path) -> Result<Credentials, String> {
    use base64::Engine as _;
    let text = std::fs::read_to_string(kubeconfig)
        .map_err(|e| format!("cannot read {}: {e}", kubeconfig.display()))?;
    let value: serde_json::Value = serde_yaml_ng::from_str(&text)
        .map_err(|e| format!("{} is not a kubeconfig: {e}", kubeconfig.display()))?;
    let ca = value["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok());
    let token = value["users"][0]["user"]["token"].as_str();
    match (ca, token) {
        (Some(ca_pem), Some(token)) => Ok(Credentials {
            ca_pem,
            token: token.to_owned(),
        }),
        _ => Err(format!("{} holds no CA or token", kubeconfig.display())),
    }
}
