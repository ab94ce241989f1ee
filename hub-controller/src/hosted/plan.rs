//! Pure decisions about one HostedCluster: what in its spec this hub cannot run, and the status
//! its control plane's state earns. No I/O: the controller gathers what it observed and writes
//! what these functions conclude.

use std::time::Duration;

use atoll_api::hosted::{
    CONDITION_AGENT_JOINED, CONDITION_API_SERVER_AVAILABLE, CONDITION_AVAILABLE,
    CONDITION_DATASTORE_AVAILABLE, CONDITION_DEGRADED, CONDITION_PROGRESSING, Endpoint,
    HostedClusterSpec, HostedClusterStatus, HostedMode, KUBECONFIG_KEY, SecretKey, StorageBackend,
    kubeconfig_secret_name, name_problem, parse_bytes,
};
use atoll_api::names::{LABEL_CLUSTER_MANAGER, LABEL_CLUSTER_SET};

use crate::conditions::{Verdict, merge};

/// The Kubernetes version embedded and process-mode control planes serve.
pub const SERVED_VERSION: &str = atoll_apiserver::discovery::KUBERNETES_VERSION;

/// Something in a spec that needs a person: shown as `Degraded` with its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// CamelCase reason.
    pub reason: &'static str,
    /// What is wrong and what to do.
    pub message: String,
    /// Whether the hub must not start (or change) the control plane because of it. A control
    /// plane already running keeps running as it was.
    pub blocks: bool,
}

impl Problem {
    fn blocking(reason: &'static str, message: String) -> Self {
        Self {
            reason,
            message,
            blocks: true,
        }
    }
}

/// What this hub can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Whether the hub has a data directory for Embedded and Process control planes.
    pub data_dir: bool,
    /// Whether the hub can start `atoll apiserver` processes.
    pub processes: bool,
    /// Whether the hub can keep clusters on etcd.
    pub etcd: EtcdSupport,
    /// Whether the hub may render `Kubernetes`-mode control planes as workloads of its
    /// cluster.
    pub kubernetes: bool,
}

/// Whether a hub can keep hosted clusters on etcd (`storage.backend: etcd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtcdSupport {
    /// It was given an etcd for them.
    Configured,
    /// It was given none.
    NotConfigured,
    /// It was built without etcd storage.
    NotBuilt,
}

/// How a cluster was first provisioned (kept in its data directory): what cannot change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provisioned {
    /// Where its control plane runs.
    pub mode: HostedMode,
    /// Where its data is.
    pub storage: StorageBackend,
}

/// The problems of a spec, in the order a person should fix them.
pub fn problems(
    name: &str,
    spec: &HostedClusterSpec,
    can: Capabilities,
    provisioned: Option<Provisioned>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    if let Some(message) = name_problem(name) {
        out.push(Problem::blocking("InvalidName", message));
    }
    let storage = spec.storage.as_ref().map(|s| s.backend).unwrap_or_default();
    if let Some(was) = provisioned {
        out.extend(immutable_problems(spec.mode, storage, was));
    }
    // What the cluster was provisioned as is what runs, whatever the spec now asks.
    let mode = provisioned.map_or(spec.mode, |p| p.mode);
    let storage = provisioned.map_or(storage, |p| p.storage);
    out.extend(storage_problem(mode, storage, can.etcd));
    out.extend(mode_problems(mode, spec, can));
    out.extend(field_problems(spec));
    out
}

/// What a spec changed that cannot change once a cluster is provisioned. These do not block:
/// the cluster goes on as it was provisioned.
fn immutable_problems(
    mode: HostedMode,
    storage: StorageBackend,
    was: Provisioned,
) -> impl Iterator<Item = Problem> {
    let mode = (was.mode != mode).then(|| Problem {
        reason: "ImmutableFieldChanged",
        message: format!(
            "spec.mode cannot change: the cluster runs as {} (asked: {mode}); set it back, or delete the cluster and create it again",
            was.mode
        ),
        blocks: false,
    });
    let storage = (was.storage != storage).then(|| Problem {
        reason: "ImmutableFieldChanged",
        message: format!(
            "spec.storage.backend cannot change: the cluster keeps its data in {} (asked: {}); set it back, or back the cluster up and restore it into a new one",
            was.storage.as_str(),
            storage.as_str()
        ),
        blocks: false,
    });
    mode.into_iter().chain(storage)
}

/// Whether the hub can keep the cluster's data where it asks (a `Kubernetes`-mode cluster's
/// etcd is one of its own workloads).
fn storage_problem(
    mode: HostedMode,
    storage: StorageBackend,
    etcd: EtcdSupport,
) -> Option<Problem> {
    if storage != StorageBackend::Etcd || mode == HostedMode::Kubernetes {
        return None;
    }
    match etcd {
        EtcdSupport::Configured => None,
        EtcdSupport::NotConfigured => Some(Problem::blocking(
            "StorageUnavailable",
            "spec.storage.backend is etcd, but this hub has no etcd for hosted clusters; start it with --hosted-etcd-endpoints (atoll up --storage etcd gives its own etcd), or choose sqlite or memory".to_owned(),
        )),
        EtcdSupport::NotBuilt => Some(Problem::blocking(
            "StorageUnavailable",
            "spec.storage.backend is etcd, but this hub was built without etcd storage; run a hub built with the etcd feature, or choose sqlite or memory".to_owned(),
        )),
    }
}

/// Whether the hub can run the cluster's control plane as `mode`, at the version asked.
fn mode_problems(mode: HostedMode, spec: &HostedClusterSpec, can: Capabilities) -> Vec<Problem> {
    match mode {
        HostedMode::Kubernetes => super::kubernetes::problems(spec, can.kubernetes),
        HostedMode::Embedded | HostedMode::Process if !can.data_dir => vec![Problem::blocking(
            "ModeUnavailable",
            format!(
                "this hub has no data directory for {mode} control planes; start hub-controller with --hosted-data-dir on a persistent volume"
            ),
        )],
        HostedMode::Process if !can.processes => vec![Problem::blocking(
            "ModeUnavailable",
            "this hub cannot find the atoll binary to run Process-mode control planes; give it with --apiserver-binary".to_owned(),
        )],
        HostedMode::Embedded | HostedMode::Process => spec
            .kubernetes_version
            .as_ref()
            .filter(|asked| !serves(asked))
            .map(|asked| Problem::blocking(
                "UnsupportedVersion",
                format!(
                    "{mode} control planes serve Kubernetes {SERVED_VERSION} (atoll's API server); spec.kubernetesVersion asks for {asked:?}: leave it unset or ask for {SERVED_VERSION}"
                ),
            ))
            .into_iter()
            .collect(),
    }
}

/// The fields of a spec that are wrong whatever the hub can do: limits that do not parse,
/// labels that only the hub sets.
fn field_problems(spec: &HostedClusterSpec) -> Vec<Problem> {
    let mut out = Vec::new();
    if let Some(limits) = &spec.limits
        && let Some(bytes) = &limits.storage_bytes
        && let Err(e) = parse_bytes(bytes)
    {
        out.push(Problem::blocking(
            "InvalidLimits",
            format!("spec.limits.storageBytes: {e}"),
        ));
    }
    let reserved: Vec<&str> = spec
        .labels
        .keys()
        .map(String::as_str)
        .filter(|k| [LABEL_CLUSTER_MANAGER, LABEL_CLUSTER_SET].contains(k))
        .collect();
    if !reserved.is_empty() {
        out.push(Problem::blocking(
            "InvalidLabels",
            format!(
                "spec.labels may not set {}: the hub sets the cluster manager, and the ClusterSet comes from spec.clusterSet",
                reserved.join(", ")
            ),
        ));
    }
    out
}

/// A restore asked for (`atoll hosted create --restore`) into a cluster on etcd, which the API
/// server cannot take (a backup goes into etcd with etcd's own tools); only before the cluster
/// was first started, when a restore can still happen.
pub fn restore_problem(
    spec: &HostedClusterSpec,
    restore: bool,
    provisioned: bool,
) -> Option<Problem> {
    (restore && !provisioned && storage(spec) == StorageBackend::Etcd).then(|| {
        Problem::blocking(
            "RestoreUnsupported",
            "a backup cannot be restored into spec.storage.backend etcd; restore it into a cluster on sqlite or memory".to_owned(),
        )
    })
}

/// A cluster whose data lives in its data directory (SQLite), served before (its kubeconfig was
/// published) but whose directory is not on this hub: on another hub replica's machine, or lost.
/// The hub never makes such a cluster again empty, which would pass for it with none of its data.
pub fn missing_data_problem(
    spec: &HostedClusterSpec,
    served_before: bool,
    has_data_dir: bool,
    dir: &str,
) -> Option<Problem> {
    (served_before && !has_data_dir && storage(spec) == StorageBackend::Sqlite).then(|| {
        Problem::blocking(
            "DataDirectoryMissing",
            format!(
                "the cluster was served before, but its data directory {dir} is not on this hub: its data (spec.storage.backend sqlite) stays on the machine that served it, or was lost; the hub does not make it again empty. Bring the directory back (start the hub where it is), or restore a backup into a new cluster (atoll hosted create NAME --restore FILE), or delete this HostedCluster. A cluster that must move between hub replicas keeps its data in etcd (spec.storage.backend: etcd)"
            ),
        )
    })
}

/// Whether a requested version is the one atoll serves: `1.35`, `v1.35`, `1.35.0` or `v1.35.0`
/// (with or without a `+build` suffix).
pub fn serves(asked: &str) -> bool {
    let served = SERVED_VERSION.trim_start_matches('v');
    let asked = asked.trim().trim_start_matches('v');
    let asked = asked.split('+').next().unwrap_or_default();
    let minor = served.rsplit_once('.').map_or(served, |(m, _)| m);
    asked == served || asked == minor
}

/// Which part of a control plane failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    ApiServer,
    Datastore,
}

/// Where a control plane is, as its supervisor last reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Not running, and not asked to (a blocking problem, or not reconciled yet).
    Absent,
    /// Being started.
    Starting,
    /// Serving.
    Running,
    /// Serving only the restore endpoint, waiting for a backup to be uploaded.
    AwaitingRestore,
    /// Stopped on purpose, its data kept.
    Suspended,
    /// It failed and is retried with backoff.
    Failed {
        component: Component,
        reason: &'static str,
        message: String,
        /// How many times in a row it failed.
        attempts: u32,
    },
}

/// What the hub observed of a HostedCluster's control plane and agent.
#[derive(Debug, Clone)]
pub struct Observed<'a> {
    pub name: &'a str,
    pub spec: &'a HostedClusterSpec,
    pub generation: Option<i64>,
    pub problems: &'a [Problem],
    pub phase: Phase,
    /// Where the API server is reached, once known.
    pub endpoint: Option<Endpoint>,
    /// Whether the kubeconfig Secret is published.
    pub kubeconfig: bool,
    /// `None` until the cluster has a member record; then whether its agent holds a credential.
    pub joined: Option<bool>,
    /// The data directory, for messages.
    pub data_dir: Option<String>,
    /// For a cluster on etcd, where (`etcd at <endpoints> under <prefix>`), for messages.
    pub etcd: Option<String>,
    /// How long after the hub first saw the cluster it became Available, once it has.
    pub ready_after: Option<Duration>,
}

/// The verdicts a HostedCluster's status should carry.
pub fn verdicts(o: &Observed<'_>) -> Vec<Verdict> {
    let (api, datastore) = components(o);
    let available = available(o, &api, &datastore);
    vec![
        available,
        progressing(o),
        degraded(o),
        api,
        datastore,
        agent_joined(o),
    ]
}

impl Observed<'_> {
    /// The first problem that keeps the control plane from starting.
    fn blocking(&self) -> Option<&Problem> {
        self.problems.iter().find(|p| p.blocks)
    }

    /// `https://host:port`, or empty when the endpoint is not known yet.
    fn url(&self) -> String {
        self.endpoint
            .as_ref()
            .map(|e| format!("https://{}:{}", e.host, e.port))
            .unwrap_or_default()
    }

    /// Where the data is kept, for messages.
    fn data_kept(&self) -> String {
        match (storage(self.spec), &self.data_dir) {
            (StorageBackend::Memory, _) => "in memory".to_owned(),
            (StorageBackend::Sqlite, Some(dir)) => format!("SQLite in {dir}"),
            (StorageBackend::Sqlite, None) => "SQLite".to_owned(),
            (StorageBackend::Etcd, _) => match &self.etcd {
                Some(place) => format!("in {place}"),
                None => "in etcd".to_owned(),
            },
        }
    }
}

/// `APIServerAvailable` and `DatastoreAvailable`, from the phase.
fn components(o: &Observed<'_>) -> (Verdict, Verdict) {
    let api = |status, reason, message: String| {
        Verdict::new(CONDITION_API_SERVER_AVAILABLE, status, reason, message)
    };
    let datastore = |status, reason, message: String| {
        Verdict::new(CONDITION_DATASTORE_AVAILABLE, status, reason, message)
    };
    match &o.phase {
        Phase::Running => (
            api(
                "True",
                "AsExpected",
                format!("the API server serves at {}", o.url()),
            ),
            datastore(
                "True",
                "AsExpected",
                format!("the data is kept {}", o.data_kept()),
            ),
        ),
        Phase::AwaitingRestore => (
            api(
                "False",
                "AwaitingRestore",
                format!(
                    "the API server at {} waits for a backup to be uploaded (atoll hosted create {} --restore FILE)",
                    o.url(),
                    o.name
                ),
            ),
            datastore(
                "False",
                "AwaitingRestore",
                "the datastore is empty until the backup is restored".to_owned(),
            ),
        ),
        Phase::Suspended => {
            let kept = if storage(o.spec) == StorageBackend::Memory {
                "its data was in memory and is gone".to_owned()
            } else {
                format!("its data is kept {}", o.data_kept())
            };
            (
                api(
                    "False",
                    "Suspended",
                    "the control plane is suspended (spec.suspended); set it to false to serve again"
                        .to_owned(),
                ),
                datastore("False", "Suspended", kept),
            )
        }
        Phase::Starting => (
            api("False", "Starting", "the API server is starting".to_owned()),
            datastore(
                "Unknown",
                "Starting",
                "the datastore is being opened".to_owned(),
            ),
        ),
        Phase::Failed {
            component,
            reason,
            message,
            attempts,
        } => failed(*component, reason, message, *attempts),
        Phase::Absent => {
            let (reason, message) = match o.blocking() {
                Some(p) => (p.reason, p.message.clone()),
                None => (
                    "NotStarted",
                    "the control plane has not started yet".to_owned(),
                ),
            };
            (
                api("False", reason, message.clone()),
                datastore("False", reason, message),
            )
        }
    }
}

/// The components of a control plane that failed: the one that failed says why, the other
/// what that means for it.
fn failed(
    component: Component,
    reason: &'static str,
    message: &str,
    attempts: u32,
) -> (Verdict, Verdict) {
    let failed = format!("{message} (failed {attempts} time(s) in a row; retrying)");
    match component {
        Component::Datastore => (
            Verdict::new(
                CONDITION_API_SERVER_AVAILABLE,
                "False",
                "DatastoreUnavailable",
                "the API server cannot serve without its datastore",
            ),
            Verdict::new(CONDITION_DATASTORE_AVAILABLE, "False", reason, failed),
        ),
        Component::ApiServer => (
            Verdict::new(CONDITION_API_SERVER_AVAILABLE, "False", reason, failed),
            Verdict::new(
                CONDITION_DATASTORE_AVAILABLE,
                "Unknown",
                "APIServerUnavailable",
                "the datastore is opened by the API server, which is not running",
            ),
        ),
    }
}

/// `Available`: both components serve; else the first one that does not says why.
fn available(o: &Observed<'_>, api: &Verdict, datastore: &Verdict) -> Verdict {
    if api.status == "True" && datastore.status == "True" {
        return Verdict::new(
            CONDITION_AVAILABLE,
            "True",
            "AsExpected",
            format!("the control plane serves at {}", o.url()),
        );
    }
    let cause = if api.status != "True" { api } else { datastore };
    Verdict::new(
        CONDITION_AVAILABLE,
        "False",
        cause.reason,
        cause.message.clone(),
    )
}

/// `AgentJoined`, from the fleet.
fn agent_joined(o: &Observed<'_>) -> Verdict {
    match (o.joined, &o.phase) {
        (Some(true), _) => Verdict::new(
            CONDITION_AGENT_JOINED,
            "True",
            "Joined",
            format!(
                "the cluster's agent joined the hub; it is ClusterProfile fleet-system/{}",
                o.name
            ),
        ),
        (_, Phase::Running) => Verdict::new(
            CONDITION_AGENT_JOINED,
            "False",
            "Joining",
            "the cluster's agent is joining the hub",
        ),
        _ => Verdict::new(
            CONDITION_AGENT_JOINED,
            "False",
            "ControlPlaneNotRunning",
            "the agent joins once the control plane serves",
        ),
    }
}

/// `Degraded`: the first problem of the spec, else a failure of the control plane.
fn degraded(o: &Observed<'_>) -> Verdict {
    if let Some(p) = o.problems.first() {
        return Verdict::new(CONDITION_DEGRADED, "True", p.reason, p.message.clone());
    }
    match &o.phase {
        Phase::Failed {
            reason, message, ..
        } => Verdict::new(CONDITION_DEGRADED, "True", reason, message.clone()),
        _ => Verdict::new(CONDITION_DEGRADED, "False", "AsExpected", "all is well"),
    }
}

/// `Progressing`: whether the hub is still bringing the cluster to what its spec asks.
fn progressing(o: &Observed<'_>) -> Verdict {
    let verdict = |status, reason, message: &str| {
        Verdict::new(CONDITION_PROGRESSING, status, reason, message)
    };
    match (&o.phase, o.blocking()) {
        (Phase::Suspended, _) => verdict("False", "Suspended", "the control plane is suspended"),
        (Phase::Absent, Some(p)) => verdict(
            "False",
            p.reason,
            "the hub cannot go on until the spec is fixed",
        ),
        (Phase::Starting | Phase::Absent, _) => {
            verdict("True", "Starting", "the control plane is starting")
        }
        (Phase::AwaitingRestore, _) => verdict(
            "True",
            "AwaitingRestore",
            "waiting for a backup to be uploaded",
        ),
        (Phase::Failed { reason, .. }, _) => {
            verdict("True", reason, "retrying the control plane with backoff")
        }
        (Phase::Running, _) if o.joined != Some(true) => verdict(
            "True",
            "Joining",
            "the control plane serves; its agent is joining the hub",
        ),
        (Phase::Running, _) if !o.kubeconfig => verdict(
            "True",
            "PublishingKubeconfig",
            "the control plane serves; its kubeconfig is being published",
        ),
        (Phase::Running, _) => verdict(
            "False",
            "AsExpected",
            "the control plane serves and its agent joined the hub",
        ),
    }
}

/// The status a HostedCluster should show, keeping transition times from `previous`.
pub fn status(
    o: &Observed<'_>,
    previous: &HostedClusterStatus,
    now: jiff::Timestamp,
) -> HostedClusterStatus {
    let serving = matches!(o.phase, Phase::Running | Phase::AwaitingRestore);
    let endpoint = o
        .endpoint
        .clone()
        .or_else(|| previous.control_plane_endpoint.clone());
    HostedClusterStatus {
        observed_generation: o.generation,
        conditions: merge(&previous.conditions, verdicts(o), o.generation, now),
        url: endpoint
            .as_ref()
            .map(|e| format!("https://{}:{}", e.host, e.port)),
        control_plane_endpoint: endpoint,
        kubeconfig: if o.kubeconfig {
            Some(SecretKey {
                name: kubeconfig_secret_name(o.name),
                key: KUBECONFIG_KEY.to_owned(),
            })
        } else {
            previous.kubeconfig.clone()
        },
        version: if serving || previous.version.is_some() {
            Some(format!("{SERVED_VERSION}+atoll"))
        } else {
            None
        },
        ready_after: previous
            .ready_after
            .clone()
            .or_else(|| o.ready_after.map(format_duration)),
    }
}

/// The status of a HostedCluster being deleted whose data cannot be deleted yet: `Degraded`
/// says why (the rest stays as it was).
pub fn deleting(
    previous: &HostedClusterStatus,
    generation: Option<i64>,
    why: &str,
    now: jiff::Timestamp,
) -> HostedClusterStatus {
    let verdict = Verdict::new(
        CONDITION_DEGRADED,
        "True",
        "DataDeletionFailed",
        format!(
            "the cluster is being deleted, but its data cannot be deleted yet (retrying): {why}"
        ),
    );
    let mut conditions: Vec<_> = previous
        .conditions
        .iter()
        .filter(|c| c.type_ != CONDITION_DEGRADED)
        .cloned()
        .collect();
    conditions.extend(merge(&previous.conditions, vec![verdict], generation, now));
    HostedClusterStatus {
        conditions,
        ..previous.clone()
    }
}

/// A duration as Go prints one: `87ms`, `1.204s`, `2m3.5s`.
pub fn format_duration(d: Duration) -> String {
    let millis = d.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let seconds = d.as_secs_f64();
    if seconds < 60.0 {
        return format!("{}s", trim(seconds));
    }
    let minutes = (seconds / 60.0).floor();
    format!("{}m{}s", minutes as u64, trim(seconds - minutes * 60.0))
}

fn trim(seconds: f64) -> String {
    let text = format!("{seconds:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The storage a spec asks for.
pub fn storage(spec: &HostedClusterSpec) -> StorageBackend {
    spec.storage.as_ref().map(|s| s.backend).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_served_sqlite_cluster_without_its_data_directory_is_not_made_again() {
        let sqlite = HostedClusterSpec::default();
        let problem = missing_data_problem(&sqlite, true, false, "hosted/clusters/web").unwrap();
        assert_eq!(problem.reason, "DataDirectoryMissing");
        assert!(problem.blocks);
        assert!(
            problem.message.contains("hosted/clusters/web"),
            "{}",
            problem.message
        );
        assert!(
            problem.message.contains("spec.storage.backend"),
            "{}",
            problem.message
        );
        // A new cluster, one with its directory, or one whose data is elsewhere: no problem.
        assert!(missing_data_problem(&sqlite, false, false, "d").is_none());
        assert!(missing_data_problem(&sqlite, true, true, "d").is_none());
        for backend in [StorageBackend::Memory, StorageBackend::Etcd] {
            let spec = HostedClusterSpec {
                storage: Some(atoll_api::hosted::HostedStorage {
                    backend,
                    ..Default::default()
                }),
                ..Default::default()
            };
            assert!(missing_data_problem(&spec, true, false, "d").is_none());
        }
    }
    use atoll_api::hosted::{HostedLimits, HostedStorage};

    const CAN: Capabilities = Capabilities {
        data_dir: true,
        processes: true,
        etcd: EtcdSupport::Configured,
        kubernetes: true,
    };

    fn condition<'a>(status: &'a HostedClusterStatus, type_: &str) -> (&'a str, &'a str) {
        let c = status
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} in {status:?}"));
        (c.status.as_str(), c.reason.as_str())
    }

    fn observed<'a>(
        spec: &'a HostedClusterSpec,
        problems: &'a [Problem],
        phase: Phase,
    ) -> Observed<'a> {
        Observed {
            name: "c1",
            spec,
            generation: Some(1),
            problems,
            phase,
            endpoint: Some(Endpoint {
                host: "127.0.0.1".into(),
                port: 7001,
            }),
            kubeconfig: true,
            joined: Some(true),
            data_dir: Some("/data/clusters/c1".into()),
            etcd: None,
            ready_after: Some(Duration::from_millis(42)),
        }
    }

    #[test]
    fn a_running_joined_cluster_is_available_and_settled() {
        let spec = HostedClusterSpec::default();
        let o = observed(&spec, &[], Phase::Running);
        let s = status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        assert_eq!(condition(&s, "Available"), ("True", "AsExpected"));
        assert_eq!(condition(&s, "Progressing"), ("False", "AsExpected"));
        assert_eq!(condition(&s, "Degraded"), ("False", "AsExpected"));
        assert_eq!(condition(&s, "AgentJoined"), ("True", "Joined"));
        assert_eq!(s.url.as_deref(), Some("https://127.0.0.1:7001"));
        assert_eq!(s.ready_after.as_deref(), Some("42ms"));
        assert_eq!(s.kubeconfig.unwrap().name, "c1-admin-kubeconfig");
        assert_eq!(s.version.as_deref(), Some("v1.35.0+atoll"));
    }

    #[test]
    fn ready_after_is_kept_once_set() {
        let spec = HostedClusterSpec::default();
        let mut o = observed(&spec, &[], Phase::Running);
        let first = status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        o.ready_after = Some(Duration::from_secs(90));
        let second = status(&o, &first, jiff::Timestamp::now());
        assert_eq!(second.ready_after.as_deref(), Some("42ms"));
    }

    #[test]
    fn a_failed_datastore_degrades_and_names_the_cause() {
        let spec = HostedClusterSpec::default();
        let phase = Phase::Failed {
            component: Component::Datastore,
            reason: "DataDirectoryFailed",
            message: "cannot create the data directory /x: permission denied".into(),
            attempts: 2,
        };
        let o = observed(&spec, &[], phase);
        let s = status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        assert_eq!(
            condition(&s, "Available"),
            ("False", "DatastoreUnavailable")
        );
        assert_eq!(
            condition(&s, "DatastoreAvailable"),
            ("False", "DataDirectoryFailed")
        );
        assert_eq!(condition(&s, "Degraded"), ("True", "DataDirectoryFailed"));
        let message = &s
            .conditions
            .iter()
            .find(|c| c.type_ == "DatastoreAvailable")
            .unwrap()
            .message;
        assert!(
            message.contains("permission denied") && message.contains("2 time(s)"),
            "{message}"
        );
    }

    #[test]
    fn suspended_is_said_as_such() {
        let spec = HostedClusterSpec {
            suspended: true,
            ..Default::default()
        };
        let o = observed(&spec, &[], Phase::Suspended);
        let s = status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        assert_eq!(condition(&s, "Available"), ("False", "Suspended"));
        assert_eq!(condition(&s, "Progressing"), ("False", "Suspended"));
        assert_eq!(condition(&s, "Degraded"), ("False", "AsExpected"));
    }

    #[test]
    fn bad_specs_are_problems_that_name_the_field() {
        let spec = HostedClusterSpec {
            kubernetes_version: Some("v1.34.2".into()),
            limits: Some(HostedLimits {
                storage_bytes: Some(serde_json::json!("lots")),
                ..Default::default()
            }),
            labels: [(LABEL_CLUSTER_SET.to_owned(), "x".to_owned())].into(),
            ..Default::default()
        };
        let found = problems("c1", &spec, CAN, None);
        let reasons: Vec<_> = found.iter().map(|p| p.reason).collect();
        assert_eq!(
            reasons,
            ["UnsupportedVersion", "InvalidLimits", "InvalidLabels"]
        );
        assert!(found[0].message.contains("v1.35.0") && found[0].message.contains("v1.34.2"));
        assert!(found[1].message.contains("spec.limits.storageBytes"));
        assert!(found.iter().all(|p| p.blocks));
        let o = observed(&spec, &found, Phase::Absent);
        let s = status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        assert_eq!(condition(&s, "Degraded"), ("True", "UnsupportedVersion"));
        assert_eq!(condition(&s, "Available"), ("False", "UnsupportedVersion"));
        assert_eq!(
            condition(&s, "Progressing"),
            ("False", "UnsupportedVersion")
        );
    }

    #[test]
    fn names_and_modes_this_hub_cannot_run_block() {
        let spec = HostedClusterSpec::default();
        assert_eq!(problems("a.b", &spec, CAN, None)[0].reason, "InvalidName");
        let kubernetes = HostedClusterSpec {
            mode: HostedMode::Kubernetes,
            ..Default::default()
        };
        assert_eq!(problems("c1", &kubernetes, CAN, None), []);
        let no_pods = Capabilities {
            kubernetes: false,
            ..CAN
        };
        let found = problems("c1", &kubernetes, no_pods, None);
        assert_eq!(found[0].reason, "ModeUnavailable");
        assert!(
            found[0].message.contains("mode Kubernetes")
                && found[0].message.contains("hub-controller")
                && found[0].message.contains("Embedded or Process"),
            "{}",
            found[0].message
        );
        let no_dir = Capabilities {
            data_dir: false,
            ..CAN
        };
        let found = problems("c1", &spec, no_dir, None);
        assert!(found[0].message.contains("--hosted-data-dir"), "{found:?}");
        let process = HostedClusterSpec {
            mode: HostedMode::Process,
            ..Default::default()
        };
        let no_binary = Capabilities {
            processes: false,
            ..CAN
        };
        assert!(
            problems("c1", &process, no_binary, None)[0]
                .message
                .contains("--apiserver-binary")
        );
    }

    #[test]
    fn immutable_fields_changed_do_not_stop_what_runs() {
        let spec = HostedClusterSpec {
            mode: HostedMode::Process,
            storage: Some(HostedStorage {
                backend: StorageBackend::Memory,
                ..Default::default()
            }),
            ..Default::default()
        };
        let was = Provisioned {
            mode: HostedMode::Embedded,
            storage: StorageBackend::Sqlite,
        };
        let found = problems("c1", &spec, CAN, Some(was));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found
                .iter()
                .all(|p| p.reason == "ImmutableFieldChanged" && !p.blocks)
        );
        assert!(found[0].message.contains("spec.mode") && found[0].message.contains("Embedded"));
        assert!(found[1].message.contains("spec.storage.backend"));
    }

    fn on_etcd() -> HostedClusterSpec {
        HostedClusterSpec {
            storage: Some(HostedStorage {
                backend: StorageBackend::Etcd,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn etcd_on_a_hub_without_one_blocks_and_names_the_field_and_the_flag() {
        let spec = on_etcd();
        assert_eq!(problems("c1", &spec, CAN, None), []);
        let none = Capabilities {
            etcd: EtcdSupport::NotConfigured,
            ..CAN
        };
        let found = problems("c1", &spec, none, None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].reason, "StorageUnavailable");
        assert!(found[0].blocks);
        assert!(
            found[0].message.contains("spec.storage.backend")
                && found[0].message.contains("--hosted-etcd-endpoints"),
            "{}",
            found[0].message
        );
        let o = observed(&spec, &found, Phase::Absent);
        let s = status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        assert_eq!(condition(&s, "Degraded"), ("True", "StorageUnavailable"));
        assert_eq!(condition(&s, "Available"), ("False", "StorageUnavailable"));
        let not_built = Capabilities {
            etcd: EtcdSupport::NotBuilt,
            ..CAN
        };
        let found = problems("c1", &spec, not_built, None);
        assert!(found[0].message.contains("built without etcd"), "{found:?}");
        // Clusters on other backends do not need one.
        assert_eq!(
            problems("c1", &HostedClusterSpec::default(), none, None),
            []
        );
    }

    #[test]
    fn changing_the_backend_from_or_to_etcd_is_refused_as_the_others_are() {
        let was_etcd = Provisioned {
            mode: HostedMode::Embedded,
            storage: StorageBackend::Etcd,
        };
        let found = problems("c1", &HostedClusterSpec::default(), CAN, Some(was_etcd));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].reason, "ImmutableFieldChanged");
        assert!(!found[0].blocks);
        assert!(
            found[0].message.contains("spec.storage.backend")
                && found[0].message.contains("in etcd (asked: sqlite)"),
            "{}",
            found[0].message
        );
        let was_sqlite = Provisioned {
            storage: StorageBackend::Sqlite,
            ..was_etcd
        };
        let found = problems("c1", &on_etcd(), CAN, Some(was_sqlite));
        assert!(
            found[0].message.contains("in sqlite (asked: etcd)"),
            "{}",
            found[0].message
        );
        // What runs stays on etcd: the hub without etcd says so too.
        let none = Capabilities {
            etcd: EtcdSupport::NotConfigured,
            ..CAN
        };
        let reasons: Vec<_> = problems("c1", &HostedClusterSpec::default(), none, Some(was_etcd))
            .iter()
            .map(|p| p.reason)
            .collect();
        assert_eq!(reasons, ["ImmutableFieldChanged", "StorageUnavailable"]);
    }

    #[test]
    fn a_restore_into_etcd_is_refused_before_the_first_start() {
        let problem = restore_problem(&on_etcd(), true, false).unwrap();
        assert!(problem.blocks && problem.message.contains("spec.storage.backend etcd"));
        assert_eq!(restore_problem(&on_etcd(), true, true), None);
        assert_eq!(restore_problem(&on_etcd(), false, false), None);
        assert_eq!(
            restore_problem(&HostedClusterSpec::default(), true, false),
            None
        );
    }

    #[test]
    fn the_datastore_of_a_cluster_on_etcd_is_named_in_its_conditions() {
        let spec = on_etcd();
        let mut o = observed(&spec, &[], Phase::Running);
        o.etcd = Some("etcd at http://127.0.0.1:2379 under /atoll-hosted/clusters/c1/u1".into());
        let s = status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        let message = |s: &HostedClusterStatus, t: &str| {
            s.conditions
                .iter()
                .find(|c| c.type_ == t)
                .unwrap()
                .message
                .clone()
        };
        assert_eq!(
            message(&s, "DatastoreAvailable"),
            "the data is kept in etcd at http://127.0.0.1:2379 under /atoll-hosted/clusters/c1/u1"
        );
        let suspended = HostedClusterSpec {
            suspended: true,
            ..on_etcd()
        };
        let mut o = observed(&suspended, &[], Phase::Suspended);
        o.etcd = Some("etcd at http://e:2379 under /h/clusters/c1/u1".into());
        let s = status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        assert_eq!(
            message(&s, "DatastoreAvailable"),
            "its data is kept in etcd at http://e:2379 under /h/clusters/c1/u1"
        );
    }

    #[test]
    fn data_that_cannot_be_deleted_is_said_on_the_cluster_being_deleted() {
        let spec = on_etcd();
        let o = observed(&spec, &[], Phase::Running);
        let running = status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        let s = deleting(
            &running,
            Some(1),
            "cannot reach etcd at http://e:2379 under /h/clusters/c1/u1 within 10s",
            jiff::Timestamp::now(),
        );
        assert_eq!(condition(&s, "Degraded"), ("True", "DataDeletionFailed"));
        assert_eq!(condition(&s, "Available"), ("True", "AsExpected"));
        let degraded = s.conditions.iter().find(|c| c.type_ == "Degraded").unwrap();
        assert!(
            degraded.message.contains("under /h/clusters/c1/u1"),
            "{}",
            degraded.message
        );
    }

    #[test]
    fn versions_atoll_serves() {
        for ok in ["1.35", "v1.35", "v1.35.0", "1.35.0", "v1.35.0+atoll"] {
            assert!(serves(ok), "{ok}");
        }
        for bad in ["1.34", "v1.35.1", "1.36.0", "", "latest", "1.3"] {
            assert!(!serves(bad), "{bad}");
        }
    }

    #[test]
    fn durations_read_as_go_prints_them() {
        assert_eq!(format_duration(Duration::from_millis(87)), "87ms");
        assert_eq!(format_duration(Duration::from_millis(1204)), "1.204s");
        assert_eq!(format_duration(Duration::from_millis(2000)), "2s");
        assert_eq!(format_duration(Duration::from_millis(123_500)), "2m3.5s");
    }
}
