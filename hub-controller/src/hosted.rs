//! Hosted control planes: the controller of HostedClusters. Each HostedCluster is a member
//! cluster whose control plane this hub runs: an atoll API server inside the hub's process
//! (`Embedded`) or as a child process (`Process`), with its own data directory, CA, admin
//! credentials and port, and an agent in the hub's process that joins the hub over the same
//! gRPC path as any agent. Its admin kubeconfig is published as the Secret
//! `<name>-admin-kubeconfig` beside it, and its ClusterProfile carries `accessProviders`.
//!
//! Shaped as kube-runtime controllers are: a [`Context`], a `reconcile` of one HostedCluster
//! (pure decisions in [`plan`], thin I/O here and in [`claim`]), an `error_policy` that backs
//! off per object, on kube-runtime's per-object queue. The control planes themselves are run by
//! [`runtime`] (one supervisor task each), whose phase changes queue their HostedCluster again.
//! Modules: `plan` (decisions), `claim` (the cluster's records on the hub), `datadir` (data
//! directories), `datastore` (the etcd that `storage.backend: etcd` clusters share), `runtime`
//! (supervisors), `embedded` and `process` (the two ways to serve).

pub mod claim;
pub mod datadir;
pub mod datastore;
mod embedded;
pub mod kubernetes;
pub mod plan;
pub mod process;
pub mod runtime;

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use atoll_api::hosted::{
    ANNOTATION_RESTORE, Endpoint, FINALIZER, HostedCluster, HostedClusterStatus, parse_bytes,
};
use atoll_api::inventory::{AccessProvider, ClusterProfile, KubeconfigCluster, NamedExtension};
use atoll_api::names::{
    CLUSTER_MANAGER_NAME, INVENTORY_NAMESPACE, LABEL_CLUSTER_MANAGER, SYSTEM_NAMESPACE,
};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::finalizer::{Event, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use tokio::sync::{mpsc, watch};

use crate::fleet::{Changes, Fleet};
use crate::record::{self, Record};
use plan::{Capabilities, EtcdSupport, Phase, Problem};
use runtime::{AgentHub, ControlPlanes, Desired, Key, Shared};

/// Label on the bootstrap token the hub makes, at each start, for its hosted clusters' agents.
pub const LABEL_HOSTED_AGENTS_TOKEN: &str = "atoll.dev/hosted-agents";
/// Name of the access provider hosted clusters' profiles carry.
pub const ACCESS_PROVIDER: &str = "atoll";
/// Extension of that access provider naming the Secret with the admin kubeconfig.
pub const KUBECONFIG_EXTENSION: &str = "atoll.dev/kubeconfig-secret";

/// How many HostedClusters are reconciled at once.
const CONCURRENCY: u16 = 16;

/// How the hub runs hosted control planes.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where hosted control planes keep their data; `None`: this hub runs no Embedded or
    /// Process control planes (it says so in their conditions).
    pub data_dir: Option<PathBuf>,
    /// The address hosted API servers listen on.
    pub listen_ip: IpAddr,
    /// The host kubeconfigs name, reachable by users (in every serving certificate).
    pub host: String,
    /// The `atoll` binary Process-mode control planes run.
    pub binary: Option<PathBuf>,
    /// How often hosted clusters' agents apply every Work again.
    pub resync: Duration,
    /// The etcd that clusters with `storage.backend: etcd` keep their data in; `None`: this hub
    /// has none (such clusters say so in their conditions). Boxed: settings travel by value.
    pub etcd: Option<Box<datastore::HostedEtcd>>,
    /// How `Kubernetes`-mode control planes are rendered, if this hub may.
    pub kubernetes: kubernetes::Settings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            data_dir: None,
            listen_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            host: "127.0.0.1".to_owned(),
            binary: None,
            resync: Duration::from_secs(60),
            etcd: None,
            kubernetes: kubernetes::Settings::default(),
        }
    }
}

/// Why a HostedCluster could not be reconciled (retried with backoff).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the hub's API server failed a request")]
    Api(#[from] kube::Error),
    #[error("cannot remove the data directory {path}")]
    DataDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot delete the data of hosted cluster {cluster} in etcd")]
    Erase {
        cluster: String,
        #[source]
        source: datastore::EraseError,
    },
    #[error("cannot issue the certificates of hosted cluster {cluster}")]
    Pki {
        cluster: String,
        #[source]
        source: atoll_pki::Error,
    },
    #[error("the control plane's namespace {namespace} is still being deleted")]
    NamespaceTerminating { namespace: String },
    #[error("finalizer")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
}

/// What every reconcile shares.
pub struct Context {
    client: kube::Client,
    fleet: Arc<Fleet>,
    can: Capabilities,
    /// The control planes, when this hub runs any.
    planes: Option<ControlPlanes>,
    /// The etcd of clusters on etcd, if this hub has one.
    etcd: Option<datastore::HostedEtcd>,
    /// How `Kubernetes`-mode control planes are rendered.
    kubernetes: kubernetes::Settings,
    /// How hosted clusters' agents join this hub (when it runs any).
    agents: Option<AgentHub>,
    /// The host users reach hosted API servers at (NodePort Services in `Kubernetes` mode).
    hosted_host: String,
    memory: Mutex<Memory>,
}

/// What the controller remembers between reconciles, per HostedCluster.
#[derive(Default)]
struct Memory {
    /// When the hub first saw each (what `readyAfter` counts from).
    first_seen: HashMap<Key, Instant>,
    /// The kubeconfig last published.
    published: HashMap<Key, String>,
    /// The profile labels last set.
    labelled: HashMap<Key, String>,
    /// Failures in a row (for the error policy's backoff).
    failures: HashMap<Key, u32>,
    /// The data directory record last kept in a Secret (clusters on etcd).
    kept: HashMap<Key, datadir::Saved>,
}

impl Context {
    fn memory(&self) -> MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn forget(&self, key: &Key) {
        let mut memory = self.memory();
        memory.first_seen.remove(key);
        memory.published.remove(key);
        memory.labelled.remove(key);
        memory.failures.remove(key);
        memory.kept.remove(key);
    }
}

fn key_of(hc: &HostedCluster) -> Key {
    Key {
        namespace: hc.namespace().unwrap_or_default(),
        name: hc.name_any(),
    }
}

/// Runs the HostedCluster controller until shutdown, then stops every control plane.
pub async fn run(
    client: kube::Client,
    fleet: Arc<Fleet>,
    settings: Settings,
    hub_url: String,
    hub_ca_pem: String,
    shutdown: watch::Receiver<bool>,
) {
    let (changed, changes) = mpsc::channel::<Key>(4096);
    let agents = if settings.data_dir.is_some() || settings.kubernetes.enabled {
        let Some(token) = retry(&shutdown, "make the hosted agents' bootstrap token", || {
            agents_token(&client)
        })
        .await
        else {
            return;
        };
        Some(AgentHub {
            url: hub_url,
            ca_pem: hub_ca_pem,
            token,
            resync: settings.resync,
        })
    } else {
        None
    };
    let planes = control_planes(&settings, agents.as_ref(), changed);
    if let Some(planes) = &planes {
        let Some(()) = retry(&shutdown, "clean up after deleted hosted clusters", || {
            sweep(&client, &planes.shared().layout, settings.etcd.as_deref())
        })
        .await
        else {
            return;
        };
    }
    let ctx = Arc::new(Context::new(client, fleet, &settings, planes, agents));
    let controller = controller(Arc::clone(&ctx), changes, shutdown.clone());
    // The controller ends once its reconciles in flight are done. Told to stop within about a
    // second of the hub starting to lead (Kubernetes mode's watches still starting), it was seen
    // not to end at all; the control planes below must still be stopped, so it gets a grace.
    let mut stopped = shutdown;
    tokio::select! {
        () = controller => {}
        () = async {
            let _ = stopped.wait_for(|s| *s).await;
            tokio::time::sleep(CONTROLLER_STOP_GRACE).await;
        } => {
            tracing::warn!(grace = ?CONTROLLER_STOP_GRACE, "the HostedCluster controller did not end within its grace after the hub's stop; leaving it");
        }
    }
    if let Some(planes) = &ctx.planes {
        planes.stop_all().await;
    }
}

/// The control planes this hub runs: Embedded and Process ones need a data directory, and an
/// agent hub for their agents to join.
fn control_planes(
    settings: &Settings,
    agents: Option<&AgentHub>,
    changed: mpsc::Sender<Key>,
) -> Option<ControlPlanes> {
    let (dir, agents) = (settings.data_dir.as_ref()?, agents?);
    let shared = Shared {
        layout: datadir::Layout::new(dir),
        listen_ip: settings.listen_ip,
        host: settings.host.clone(),
        binary: settings.binary.clone(),
        etcd: settings.etcd.as_deref().cloned(),
        agents: agents.clone(),
    };
    Some(ControlPlanes::new(shared, changed))
}

impl Context {
    fn new(
        client: kube::Client,
        fleet: Arc<Fleet>,
        settings: &Settings,
        planes: Option<ControlPlanes>,
        agents: Option<AgentHub>,
    ) -> Self {
        Context {
            client,
            fleet,
            can: Capabilities {
                data_dir: settings.data_dir.is_some(),
                processes: settings.binary.is_some(),
                etcd: match &settings.etcd {
                    _ if !datastore::BUILT_WITH_ETCD => EtcdSupport::NotBuilt,
                    Some(_) => EtcdSupport::Configured,
                    None => EtcdSupport::NotConfigured,
                },
                kubernetes: settings.kubernetes.enabled,
            },
            planes,
            etcd: settings.etcd.as_deref().cloned(),
            kubernetes: settings.kubernetes.clone(),
            agents,
            hosted_host: settings.host.clone(),
            memory: Mutex::default(),
        }
    }
}

/// The controller on kube-runtime's per-object queue: HostedClusters, the Secrets they own,
/// their profiles, the phase changes of their control planes (`changes`) and, in Kubernetes
/// mode, the workloads of their control planes. Ends at shutdown once its reconciles in flight
/// are done.
fn controller(
    ctx: Arc<Context>,
    changes: mpsc::Receiver<Key>,
    shutdown: watch::Receiver<bool>,
) -> impl std::future::Future<Output = ()> {
    let client = ctx.client.clone();
    let reconcile = ctx.fleet.metrics.timed("HostedCluster", reconcile);
    let changes = tokio_stream::wrappers::ReceiverStream::new(changes)
        .map(|key: Key| ObjectRef::new(&key.name).within(&key.namespace));
    let mut stop = shutdown;
    let mut controller = Controller::new(
        Api::<HostedCluster>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(
        Api::<Secret>::all(client.clone()),
        watcher::Config::default().labels(claim::LABEL_HOSTED_CLUSTER),
    );
    if ctx.kubernetes.enabled {
        controller = watch_workloads(controller, &client);
    }
    let profiles: Api<ClusterProfile> = Api::namespaced(client, INVENTORY_NAMESPACE);
    controller
        .watches(
            profiles,
            watcher::Config::default()
                .labels(&format!("{LABEL_CLUSTER_MANAGER}={CLUSTER_MANAGER_NAME}")),
            |profile| {
                claim::hosted_cluster_of(&profile)
                    .map(|(namespace, name)| ObjectRef::new(&name).within(&namespace))
            },
        )
        .reconcile_on(changes)
        .with_config(controller::Config::default().concurrency(CONCURRENCY))
        .graceful_shutdown_on(async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "HostedCluster reconcile failed");
            }
        })
}

/// Kubernetes mode: the workloads of the control planes, by their label, queue their
/// HostedCluster; so do a namespace being deleted (which lets its HostedCluster go once it is
/// gone) and a Secret of the PKI deleted by hand (issued again at once).
fn watch_workloads(
    controller: Controller<HostedCluster>,
    client: &kube::Client,
) -> Controller<HostedCluster> {
    use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
    use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod, Service};
    fn of_label<K: kube::Resource>(object: K) -> Option<ObjectRef<HostedCluster>> {
        let value = object
            .meta()
            .labels
            .as_ref()?
            .get(kubernetes::render::LABEL_HOSTED_CLUSTER)?;
        let key = kubernetes::render::key_of_label(value)?;
        Some(ObjectRef::new(&key.name).within(&key.namespace))
    }
    let labelled = || watcher::Config::default().labels(kubernetes::render::LABEL_HOSTED_CLUSTER);
    controller
        .watches(Api::<Deployment>::all(client.clone()), labelled(), of_label)
        .watches(
            Api::<StatefulSet>::all(client.clone()),
            labelled(),
            of_label,
        )
        .watches(Api::<Pod>::all(client.clone()), labelled(), of_label)
        .watches(
            Api::<PersistentVolumeClaim>::all(client.clone()),
            labelled(),
            of_label,
        )
        .watches(Api::<Service>::all(client.clone()), labelled(), of_label)
        .watches(Api::<Namespace>::all(client.clone()), labelled(), of_label)
        .watches(Api::<Secret>::all(client.clone()), labelled(), of_label)
}

/// How long the HostedCluster controller may take to end once the hub stops, before the hub
/// stops its control planes without it.
const CONTROLLER_STOP_GRACE: Duration = Duration::from_secs(10);

/// Tries `what` until it works or the hub stops (`None`).
async fn retry<T, F, Fut>(shutdown: &watch::Receiver<bool>, what: &str, mut attempt: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    let mut delay = Duration::from_millis(200);
    loop {
        match attempt().await {
            Ok(value) => return Some(value),
            Err(error) => tracing::warn!(%error, ?delay, "cannot {what}; retrying"),
        }
        let mut stop = shutdown.clone();
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|s| *s) => return None,
        }
        delay = (delay * 2).min(Duration::from_secs(10));
    }
}

/// Makes this start's bootstrap token for hosted clusters' agents, deleting those of earlier
/// starts (agents that joined hold credentials and no longer need one).
async fn agents_token(client: &kube::Client) -> kube::Result<String> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let selector = format!("{LABEL_HOSTED_AGENTS_TOKEN}=true");
    for old in secrets
        .list(&ListParams::default().labels(&selector))
        .await?
    {
        match secrets
            .delete(&old.name_any(), &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let token = crate::bootstrap::Token::generate();
    let mut secret = token.to_secret(
        None,
        "agents of hosted clusters (made by the hub at start)",
        None,
    );
    secret
        .labels_mut()
        .insert(LABEL_HOSTED_AGENTS_TOKEN.to_owned(), "true".to_owned());
    secrets.create(&PostParams::default(), &secret).await?;
    Ok(token.to_string())
}

fn secrets_in_system(client: &kube::Client) -> Api<Secret> {
    Api::namespaced(client.clone(), SYSTEM_NAMESPACE)
}

/// Deletes a cluster's keys in etcd (every key under its prefix, and the prefix's own key). A
/// hub without etcd (no longer configured, or built without it) cannot: it says so and leaves
/// them.
async fn erase(ctx: &Context, key: &Key, prefix: &str) -> Result<(), Error> {
    let Some(etcd) = &ctx.etcd else {
        tracing::warn!(cluster = %key, prefix, "this hub has no etcd for hosted clusters any more (--hosted-etcd-endpoints): the cluster's keys stay in etcd");
        return Ok(());
    };
    match datastore::erase(&etcd.options(prefix)).await {
        Ok(keys) => {
            tracing::info!(cluster = %key, datastore = %etcd.describe(prefix), keys, "deleted the hosted cluster's data in etcd");
            Ok(())
        }
        Err(datastore::EraseError::NotBuilt) => {
            tracing::warn!(cluster = %key, datastore = %etcd.describe(prefix), "this hub was built without etcd storage: the cluster's keys stay in etcd");
            Ok(())
        }
        Err(source) => Err(Error::Erase {
            cluster: key.to_string(),
            source,
        }),
    }
}

/// Says on a HostedCluster being deleted why its data in etcd is not deleted yet (it is
/// retried with backoff; the HostedCluster stays until it is).
async fn report_erase_failure(hc: &HostedCluster, ctx: &Context, key: &Key, error: &Error) {
    let previous = hc.status.clone().unwrap_or_default();
    let status = plan::deleting(
        &previous,
        hc.metadata.generation,
        &atoll_apiserver::error::chain(error),
        jiff::Timestamp::now(),
    );
    if status != previous
        && let Err(error) = write_status(ctx, key, &status).await
    {
        tracing::debug!(cluster = %key, %error, "cannot say why the data is not deleted yet");
    }
}

/// Removes what deleted HostedClusters left behind while the hub was down: data directories,
/// and the members (record, profile, namespace with its Works) whose HostedCluster is gone.
async fn sweep(
    client: &kube::Client,
    layout: &datadir::Layout,
    etcd: Option<&datastore::HostedEtcd>,
) -> kube::Result<()> {
    let hosted: Api<HostedCluster> = Api::all(client.clone());
    let listed = hosted.list(&ListParams::default()).await?;
    let live: HashSet<String> = listed
        .iter()
        .filter_map(|hc| hc.metadata.uid.clone())
        .collect();
    let names: HashSet<(String, String)> = listed
        .iter()
        .map(|hc| (hc.namespace().unwrap_or_default(), hc.name_any()))
        .collect();
    sweep_data(client, layout, etcd, &live).await?;
    sweep_members(client, &live, &names).await
}

/// Removes the data (etcd keys, directories, kept directories' claims) of the clusters not in
/// `live` (UIDs). What cannot be deleted now stays for the next start.
async fn sweep_data(
    client: &kube::Client,
    layout: &datadir::Layout,
    etcd: Option<&datastore::HostedEtcd>,
    live: &HashSet<String>,
) -> kube::Result<()> {
    let mut keep = live.clone();
    // Keys in etcd first: a directory that goes is the last record of where they are.
    if let Some(etcd) = etcd {
        for (dir, saved) in layout.all() {
            let Some(saved) = saved.filter(|s| !live.contains(&s.uid)) else {
                continue;
            };
            let Some(prefix) = &saved.etcd_prefix else {
                continue;
            };
            match datastore::erase(&etcd.options(prefix)).await {
                Ok(keys) => {
                    tracing::info!(datastore = %etcd.describe(prefix), keys, "deleted the data of a deleted hosted cluster in etcd");
                }
                Err(datastore::EraseError::NotBuilt) => {}
                Err(error) => {
                    // Its directory stays, and the next start tries again.
                    tracing::warn!(dir = %dir.display(), datastore = %etcd.describe(prefix), error = %atoll_apiserver::error::chain(&error), "cannot delete the data of a deleted hosted cluster in etcd");
                    keep.insert(saved.uid.clone());
                }
            }
        }
    }
    let kept = secrets_in_system(client)
        .list(&ListParams::default().labels(&format!("{}=true", claim::LABEL_KEPT_DATADIR)))
        .await?;
    for secret in kept {
        if let Some(saved) = claim::kept_in(&secret)
            && !keep.contains(&saved.uid)
        {
            if let Some(etcd) = etcd
                && let Some(prefix) = &saved.etcd_prefix
                && let Err(error) = datastore::erase(&etcd.options(prefix)).await
                && !matches!(error, datastore::EraseError::NotBuilt)
            {
                tracing::warn!(datastore = %etcd.describe(prefix), error = %atoll_apiserver::error::chain(&error), "cannot delete the data of a deleted hosted cluster in etcd");
                continue;
            }
            claim::forget_datadir(client, &saved.uid).await?;
        }
    }
    for dir in layout.sweep(&keep) {
        tracing::info!(dir = %dir.display(), "removed the data of a deleted hosted cluster");
    }
    Ok(())
}

/// Removes the members of hosted clusters that are gone: those whose record names a
/// HostedCluster UID not in `live`, and those with a profile of a HostedCluster not in
/// `names` (namespace, name) and no record.
async fn sweep_members(
    client: &kube::Client,
    live: &HashSet<String>,
    names: &HashSet<(String, String)>,
) -> kube::Result<()> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    let records = secrets
        .list(&ListParams::default().labels(record::LABEL_HOSTED_BY))
        .await?;
    let mut orphans: std::collections::BTreeSet<String> = records
        .iter()
        .filter_map(Record::from_secret)
        .filter(|r| r.hosted_by.as_ref().is_some_and(|uid| !live.contains(uid)))
        .map(|r| r.name)
        .collect();
    let profiles: Api<ClusterProfile> = Api::namespaced(client.clone(), INVENTORY_NAMESPACE);
    // A profile with a record of any member, hosted or joined, is that member's.
    let recorded: HashSet<String> = secrets
        .list(&ListParams::default().labels(record::LABEL_CLUSTER))
        .await?
        .iter()
        .filter_map(Record::from_secret)
        .filter(|r| !orphans.contains(&r.name))
        .map(|r| r.name)
        .collect();
    for profile in profiles.list(&ListParams::default()).await? {
        let name = profile.name_any();
        if let Some(owner) = claim::hosted_cluster_of(&profile)
            && !names.contains(&owner)
            && !recorded.contains(&name)
        {
            orphans.insert(name);
        }
    }
    for name in orphans {
        tracing::info!(cluster = %name, "removing the member of a deleted hosted cluster");
        claim::remove_member(client, &name).await?;
    }
    Ok(())
}

async fn reconcile(hc: Arc<HostedCluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = key_of(&hc);
    let api: Api<HostedCluster> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let result = finalizer(&api, FINALIZER, hc, |event| async {
        match event {
            Event::Apply(hc) => apply(&hc, &ctx).await,
            Event::Cleanup(hc) => cleanup(&hc, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)));
    if result.is_ok() {
        ctx.memory().failures.remove(&key);
    }
    result
}

fn error_policy(hc: Arc<HostedCluster>, error: &Error, ctx: Arc<Context>) -> Action {
    let key = key_of(&hc);
    // Waiting for a control plane's namespace to go is no failure: no backoff.
    if let Error::Finalizer(e) = error
        && let kube::runtime::finalizer::Error::CleanupFailed(Error::NamespaceTerminating {
            namespace,
        }) = e.as_ref()
    {
        tracing::debug!(cluster = %key, %namespace, "waiting for the control plane's namespace to go");
        return Action::requeue(Duration::from_secs(2));
    }
    let (attempts, delay) = atoll_runtime::backoff::after_failure(&mut ctx.memory().failures, &key);
    tracing::warn!(cluster = %key, error = %atoll_apiserver::error::chain(error), attempts, ?delay, "cannot reconcile HostedCluster; retrying");
    Action::requeue(delay)
}

/// Brings a HostedCluster's control plane, inventory entry and kubeconfig to what it asks, and
/// writes its status: what its spec asks that this hub cannot do, its place in the inventory,
/// its control plane, what is published about it, and what all that earns.
async fn apply(hc: &HostedCluster, ctx: &Context) -> Result<Action, Error> {
    if hc.spec.mode == atoll_api::hosted::HostedMode::Kubernetes {
        return kubernetes::apply(hc, ctx).await;
    }
    let key = key_of(hc);
    let began = Instant::now();
    let seen = *ctx
        .memory()
        .first_seen
        .entry(key.clone())
        .or_insert_with(Instant::now);
    let dir = ctx
        .planes
        .as_ref()
        .map(|p| p.shared().layout.dir(&key.namespace, &key.name));
    let mut saved = dir
        .as_deref()
        .and_then(|d| datadir::load(d).ok().flatten())
        .filter(|s| Some(s.uid.as_str()) == hc.metadata.uid.as_deref());
    if saved.is_none()
        && let Some(dir) = &dir
    {
        saved = recover_datadir(hc, ctx, &key, dir).await?;
    }
    let etcd_prefix = etcd_prefix(hc, ctx, saved.as_ref());
    let mut problems = spec_problems(hc, ctx, saved.as_ref(), etcd_prefix.as_ref());
    let etcd_prefix = etcd_prefix.and_then(Result::ok);
    let place = Place {
        dir: dir.as_deref(),
        etcd_prefix: etcd_prefix.as_deref(),
    };
    let claimed = take_place(hc, ctx, &key, saved.as_ref(), place, &mut problems, None).await?;
    let snapshot = run_control_plane(hc, ctx, &key, saved.as_ref(), place, &problems).await;
    let phase = snapshot.as_ref().map_or(Phase::Absent, |s| s.phase.clone());
    let endpoint = snapshot.as_ref().and_then(|s| s.port).map(|port| Endpoint {
        host: ctx
            .planes
            .as_ref()
            .map(|p| p.shared().host.clone())
            .unwrap_or_default(),
        port: i32::from(port),
    });
    let published = match (
        &endpoint,
        snapshot.as_ref().and_then(|s| s.credentials.as_ref()),
    ) {
        (Some(endpoint), Some(credentials)) => {
            publish(hc, ctx, &key, endpoint, credentials, claimed).await?;
            true
        }
        _ => hc.status.as_ref().is_some_and(|s| s.kubeconfig.is_some()),
    };
    let joined = if claimed {
        inventory_view(ctx, &key, &phase)
    } else {
        None
    };
    let ready_after = (phase == Phase::Running).then(|| seen.elapsed());
    let observed = plan::Observed {
        name: &key.name,
        spec: &hc.spec,
        generation: hc.metadata.generation,
        problems: &problems,
        phase,
        endpoint,
        kubeconfig: published,
        joined,
        data_dir: dir.as_ref().map(|d| d.display().to_string()),
        etcd: etcd_prefix
            .as_deref()
            .zip(ctx.etcd.as_ref())
            .map(|(prefix, etcd)| etcd.describe(prefix)),
        ready_after,
    };
    let previous = hc.status.clone().unwrap_or_default();
    let status = plan::status(&observed, &previous, jiff::Timestamp::now());
    if status != previous {
        write_status(ctx, &key, &status).await?;
    }
    if let Some(dir) = &dir {
        keep_datadir(hc, ctx, &key, dir).await?;
    }
    tracing::debug!(cluster = %key, ms = began.elapsed().as_millis(), since_seen_ms = seen.elapsed().as_millis(), "reconciled");
    Ok(Action::await_change())
}

/// Where a cluster's data goes: its data directory, and its etcd prefix when it is on etcd.
#[derive(Debug, Clone, Copy)]
struct Place<'a> {
    dir: Option<&'a std::path::Path>,
    etcd_prefix: Option<&'a str>,
}

/// The etcd prefix of a cluster on etcd (`None` for other backends, or when this hub has no
/// etcd): the one its data directory records, else the one it gets under the hub's hosted
/// prefix; `Err` says why there can be none.
fn etcd_prefix(
    hc: &HostedCluster,
    ctx: &Context,
    saved: Option<&datadir::Saved>,
) -> Option<Result<String, String>> {
    let storage = saved.map_or(plan::storage(&hc.spec), |s| s.storage);
    if storage != atoll_api::hosted::StorageBackend::Etcd {
        return None;
    }
    if let Some(prefix) = saved.and_then(|s| s.etcd_prefix.clone()) {
        return Some(Ok(prefix));
    }
    let etcd = ctx.etcd.as_ref()?;
    let key = key_of(hc);
    let uid = hc.metadata.uid.as_deref().unwrap_or_default();
    Some(datastore::cluster_prefix(
        &etcd.prefix,
        &key.namespace,
        &key.name,
        uid,
    ))
}

/// The data directory of a cluster on etcd, made again from the record kept in a Secret when it
/// has none (another hub replica served the cluster, or the directory was lost): the same join
/// secret, port and prefix. `None` when there is no record to recover.
async fn recover_datadir(
    hc: &HostedCluster,
    ctx: &Context,
    key: &Key,
    dir: &std::path::Path,
) -> Result<Option<datadir::Saved>, Error> {
    if plan::storage(&hc.spec) != atoll_api::hosted::StorageBackend::Etcd {
        return Ok(None);
    }
    let uid = hc.metadata.uid.as_deref().unwrap_or_default();
    let Some(kept) = claim::kept_datadir(&ctx.client, uid).await? else {
        return Ok(None);
    };
    match datadir::prepare(dir, kept) {
        Ok(saved) => {
            tracing::info!(cluster = %key, dir = %dir.display(), "recovered the data directory's record of a hosted cluster on etcd");
            ctx.memory().kept.insert(key.clone(), saved.clone());
            Ok(Some(saved))
        }
        Err(error) => {
            // The supervisor reports the directory's failure.
            tracing::debug!(cluster = %key, %error, "cannot recover the data directory yet");
            Ok(None)
        }
    }
}

/// Keeps the data directory's record of a cluster on etcd in a Secret on the hub, when it
/// changed (its port is chosen at the first start): what another replica needs to serve it.
async fn keep_datadir(
    hc: &HostedCluster,
    ctx: &Context,
    key: &Key,
    dir: &std::path::Path,
) -> Result<(), Error> {
    let Some(saved) = datadir::load(dir)
        .ok()
        .flatten()
        .filter(|s| Some(s.uid.as_str()) == hc.metadata.uid.as_deref())
        .filter(|s| s.storage == atoll_api::hosted::StorageBackend::Etcd)
    else {
        return Ok(());
    };
    if ctx.memory().kept.get(key) == Some(&saved) {
        return Ok(());
    }
    claim::keep_datadir(&ctx.client, hc, &saved).await?;
    ctx.memory().kept.insert(key.clone(), saved);
    Ok(())
}

/// What in the spec this hub cannot do (or not yet: a ClusterSet that does not exist).
fn spec_problems(
    hc: &HostedCluster,
    ctx: &Context,
    saved: Option<&datadir::Saved>,
    etcd_prefix: Option<&Result<String, String>>,
) -> Vec<Problem> {
    let mut problems = plan::problems(
        &hc.name_any(),
        &hc.spec,
        ctx.can,
        saved.map(datadir::Saved::provisioned),
    );
    if let Some(Err(why)) = etcd_prefix {
        problems.push(Problem {
            reason: "StorageUnavailable",
            message: format!("spec.storage.backend is etcd, but {why}"),
            blocks: true,
        });
    }
    let restore = hc.annotations().contains_key(ANNOTATION_RESTORE);
    if let Some(problem) = plan::restore_problem(&hc.spec, restore, saved.is_some()) {
        problems.push(problem);
    }
    if let Some(dir) = ctx
        .planes
        .as_ref()
        .map(|p| p.shared().layout.dir(&key_of(hc).namespace, &hc.name_any()))
    {
        let served_before = hc.status.as_ref().is_some_and(|s| s.kubeconfig.is_some());
        let missing = plan::missing_data_problem(
            &hc.spec,
            served_before,
            saved.is_some(),
            &dir.display().to_string(),
        );
        problems.extend(missing);
    }
    if let Some(set) = &hc.spec.cluster_set
        && !ctx.fleet.cluster_sets().contains(set)
    {
        problems.push(Problem {
            reason: "ClusterSetNotFound",
            message: format!(
                "spec.clusterSet names ClusterSet {set:?}, which does not exist on the hub; create it (atoll clusterset create {set}) and the cluster joins it"
            ),
            blocks: false,
        });
    }
    problems
}

/// The cluster's place in the inventory (its record, namespace and profile, with the spec's
/// labels), unless a problem blocks it or the name is another's (a problem then too). Whether
/// the place is the HostedCluster's.
async fn take_place(
    hc: &HostedCluster,
    ctx: &Context,
    key: &Key,
    saved: Option<&datadir::Saved>,
    place: Place<'_>,
    problems: &mut Vec<Problem>,
    join: Option<&str>,
) -> Result<bool, Error> {
    if problems.iter().any(|p| p.blocks) {
        return Ok(false);
    }
    let uid = hc.metadata.uid.as_deref().unwrap_or_default();
    let join_secret = match (join, saved) {
        (Some(join), _) => join.to_owned(),
        (None, Some(s)) => s.join_secret.clone(),
        (None, None) => fresh_join_secret(key, uid, hc, place),
    };
    let new_profile = match claim::claim(&ctx.client, hc, &join_secret).await? {
        claim::Claim::Ours(record, version, made) => {
            let fresh = Some(crate::digest::sha256(join_secret.as_bytes()));
            let (record, version) = if saved.is_none() && record.join_secret != fresh {
                tracing::info!(cluster = %key, "the cluster's data directory is new on this hub: its agent joins with the new directory's secret");
                claim::rekey(&ctx.client, *record, &join_secret).await?
            } else {
                (*record, version)
            };
            ctx.fleet.upsert_record(&record, version);
            made
        }
        claim::Claim::InUse(message) => {
            problems.push(Problem {
                reason: "NameInUse",
                message,
                blocks: true,
            });
            return Ok(false);
        }
    };
    if let Err(problem) = label_profile(hc, ctx, key, new_profile).await? {
        problems.push(problem);
    }
    Ok(true)
}

/// Runs, suspends or leaves the control plane as the spec and its problems say, and says where
/// it is (`None` when this hub runs no control planes).
async fn run_control_plane(
    hc: &HostedCluster,
    ctx: &Context,
    key: &Key,
    saved: Option<&datadir::Saved>,
    place: Place<'_>,
    problems: &[Problem],
) -> Option<runtime::Snapshot> {
    let planes = ctx.planes.as_ref()?;
    if problems.iter().any(|p| p.blocks) {
        // A control plane already running keeps running as it was.
        return planes.snapshot(key);
    }
    if hc.spec.suspended {
        planes.stop(key).await;
        return Some(runtime::Snapshot {
            phase: Phase::Suspended,
            port: saved.and_then(|s| s.port),
            credentials: None,
        });
    }
    Some(
        planes
            .ensure(key, desired(hc, saved, place.etcd_prefix))
            .await,
    )
}

/// Publishes how to reach a serving control plane: the kubeconfig Secret (written when it
/// changed) and, for a cluster in the inventory, its profile's access provider.
async fn publish(
    hc: &HostedCluster,
    ctx: &Context,
    key: &Key,
    endpoint: &Endpoint,
    credentials: &runtime::Credentials,
    claimed: bool,
) -> Result<(), Error> {
    let server = format!("https://{}:{}", endpoint.host, endpoint.port);
    let text = atoll_apiserver::kubeconfig::render(
        &key.name,
        &server,
        &credentials.ca_pem,
        &credentials.token,
    );
    publish_text(hc, ctx, key, &server, &credentials.ca_pem, text, claimed).await
}

/// Publishes a kubeconfig for `server` (written when it changed) and, for a cluster in the
/// inventory, its profile's access provider.
async fn publish_text(
    hc: &HostedCluster,
    ctx: &Context,
    key: &Key,
    server: &str,
    ca_pem: &str,
    text: String,
    claimed: bool,
) -> Result<(), Error> {
    if ctx.memory().published.get(key) != Some(&text) {
        claim::publish_kubeconfig(&ctx.client, &claim::kubeconfig_secret(hc, &text)).await?;
        ctx.memory().published.insert(key.clone(), text);
    }
    if claimed {
        let access = access_provider(key, server, ca_pem);
        ctx.fleet.update(&key.name, |m| {
            let changed = m.access.as_ref() != Some(&access);
            m.access = Some(access);
            (
                Changes {
                    profile: changed,
                    membership: false,
                },
                (),
            )
        });
    }
    Ok(())
}

/// Tells the fleet whether the cluster is suspended (its profile says so rather than calling it
/// lost), and answers whether its agent joined.
fn inventory_view(ctx: &Context, key: &Key, phase: &Phase) -> Option<bool> {
    let suspended = (*phase == Phase::Suspended).then(|| {
        format!(
            "the hosted control plane is suspended (spec.suspended of HostedCluster {key}); its data is kept"
        )
    });
    ctx.fleet.update(&key.name, |m| {
        let changed = m.suspended != suspended;
        m.suspended = suspended;
        (
            Changes {
                profile: changed,
                membership: changed,
            },
            m.accepted && m.credential.is_some(),
        )
    })
}

/// The join secret of a cluster not started yet: recorded in its data directory at once, so
/// that the record the hub makes and the agent agree.
fn fresh_join_secret(key: &Key, uid: &str, hc: &HostedCluster, place: Place<'_>) -> String {
    let fresh = datadir::Saved::new(uid, hc.spec.mode, plan::storage(&hc.spec), None)
        .with_etcd_prefix(place.etcd_prefix.map(str::to_owned));
    match place.dir.map(|d| datadir::prepare(d, fresh.clone())) {
        Some(Ok(saved)) => saved.join_secret,
        Some(Err(error)) => {
            // The supervisor reports the directory's failure; the agent cannot join anyway.
            tracing::debug!(cluster = %key, %error, "cannot prepare the data directory yet");
            fresh.join_secret
        }
        None => fresh.join_secret,
    }
}

/// Sets the spec's labels on the cluster's profile when they changed (a profile made just now
/// without labels to set needs no write); a label the API server refuses is a problem of the
/// spec.
async fn label_profile(
    hc: &HostedCluster,
    ctx: &Context,
    key: &Key,
    new_profile: bool,
) -> Result<Result<(), Problem>, Error> {
    let wanted = serde_json::to_string(&hc.spec.labels).unwrap_or_default();
    if new_profile && hc.spec.labels.is_empty() {
        ctx.memory().labelled.insert(key.clone(), wanted);
        return Ok(Ok(()));
    }
    if ctx.memory().labelled.get(key) == Some(&wanted) {
        return Ok(Ok(()));
    }
    match claim::label_profile(&ctx.client, hc).await {
        Ok(()) => {
            ctx.memory().labelled.insert(key.clone(), wanted);
            Ok(Ok(()))
        }
        Err(kube::Error::Api(e)) if e.code == 422 => Ok(Err(Problem {
            reason: "InvalidLabels",
            message: format!("spec.labels cannot go on the ClusterProfile: {}", e.message),
            blocks: false,
        })),
        Err(e) => Err(e.into()),
    }
}

/// What the runtime should run for a HostedCluster: what cannot change comes from its data
/// directory once it was started.
fn desired(
    hc: &HostedCluster,
    saved: Option<&datadir::Saved>,
    etcd_prefix: Option<&str>,
) -> Desired {
    let limits = hc.spec.limits.clone().unwrap_or_default();
    let api_server = hc.spec.api_server.clone().unwrap_or_default();
    Desired {
        uid: hc.metadata.uid.clone().unwrap_or_default(),
        mode: saved.map_or(hc.spec.mode, |s| s.mode),
        storage: saved.map_or(plan::storage(&hc.spec), |s| s.storage),
        etcd_prefix: etcd_prefix.map(str::to_owned),
        port: api_server.port.and_then(|p| u16::try_from(p).ok()),
        extra_sans: api_server.extra_sans,
        limits: runtime::Limits {
            objects: limits.objects.and_then(|n| u64::try_from(n).ok()),
            // Checked by plan::problems before anything runs.
            storage_bytes: limits
                .storage_bytes
                .as_ref()
                .and_then(|b| parse_bytes(b).ok()),
            requests_in_flight: limits
                .requests_in_flight
                .and_then(|n| u32::try_from(n).ok()),
        },
        restore: hc.annotations().contains_key(ANNOTATION_RESTORE),
    }
}

/// The access provider of a hosted cluster's profile: its server and CA, and where its admin
/// kubeconfig is.
fn access_provider(key: &Key, server: &str, ca_pem: &str) -> Vec<AccessProvider> {
    use base64::Engine as _;
    vec![AccessProvider {
        name: ACCESS_PROVIDER.to_owned(),
        cluster: Some(KubeconfigCluster {
            server: server.to_owned(),
            certificate_authority_data: Some(
                base64::engine::general_purpose::STANDARD.encode(ca_pem),
            ),
            extensions: vec![NamedExtension {
                name: KUBECONFIG_EXTENSION.to_owned(),
                extension: serde_json::json!({
                    "namespace": key.namespace,
                    "name": atoll_api::hosted::kubeconfig_secret_name(&key.name),
                    "key": atoll_api::hosted::KUBECONFIG_KEY,
                }),
            }],
            ..KubeconfigCluster::default()
        }),
    }]
}

async fn write_status(ctx: &Context, key: &Key, status: &HostedClusterStatus) -> kube::Result<()> {
    let api: Api<HostedCluster> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let patch = serde_json::json!({"status": status});
    match api
        .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        // Deleted meanwhile: nothing to say.
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Tears a deleted HostedCluster down: its control plane stops, the cluster leaves the inventory
/// (with its Works), and its kubeconfig and data go.
async fn cleanup(hc: &HostedCluster, ctx: &Context) -> Result<Action, Error> {
    let key = key_of(hc);
    let uid = hc.metadata.uid.clone().unwrap_or_default();
    if hc.spec.mode == atoll_api::hosted::HostedMode::Kubernetes {
        kubernetes::delete(ctx, &key).await?;
    }
    if let Some(planes) = &ctx.planes {
        planes.stop(&key).await;
    }
    claim::release(&ctx.client, hc).await?;
    claim::delete_kubeconfig(&ctx.client, &key.namespace, &key.name).await?;
    if let Some(planes) = &ctx.planes {
        let dir = planes.shared().layout.dir(&key.namespace, &key.name);
        let saved = datadir::load(&dir).ok().flatten();
        let ours = saved.as_ref().is_none_or(|s| s.uid == uid);
        if ours {
            let prefix = etcd_prefix(hc, ctx, saved.as_ref()).and_then(Result::ok);
            if let Some(prefix) = prefix
                && let Err(error) = erase(ctx, &key, &prefix).await
            {
                report_erase_failure(hc, ctx, &key, &error).await;
                return Err(error);
            }
            claim::forget_datadir(&ctx.client, &uid).await?;
            datadir::remove(&dir).map_err(|source| Error::DataDir {
                path: dir.display().to_string(),
                source,
            })?;
        }
    }
    ctx.forget(&key);
    tracing::info!(cluster = %key, "hosted cluster deleted");
    Ok(Action::await_change())
}
