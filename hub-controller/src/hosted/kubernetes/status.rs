//! The status of a `Kubernetes`-mode HostedCluster from its workloads' status: one condition per
//! component (`EtcdAvailable`, `APIServerAvailable`, `ControllerManagerAvailable`,
//! `SchedulerAvailable`), `AgentJoined`, and `Available`, `Progressing` and `Degraded` rolled up
//! from them, each naming the component and what it waits for. Pure: the controller reads the
//! objects and writes what this concludes.

use std::collections::BTreeMap;
use std::time::Duration;

use atoll_api::hosted::{
    CONDITION_AGENT_JOINED, CONDITION_API_SERVER_AVAILABLE, CONDITION_AVAILABLE,
    CONDITION_CONTROLLER_MANAGER_AVAILABLE, CONDITION_DEGRADED, CONDITION_ETCD_AVAILABLE,
    CONDITION_PROGRESSING, CONDITION_SCHEDULER_AVAILABLE, Endpoint, HostedClusterStatus,
    KUBECONFIG_KEY, SecretKey, ServiceType, kubeconfig_secret_name,
};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};

use super::render::{self, ANNOTATION_VERSION, LABEL_COMPONENT};
use super::version::{Rollout, Version};
use crate::conditions::{Verdict, merge};
use crate::hosted::plan::{Problem, format_duration};

/// How long a PersistentVolumeClaim may stay Pending, or a LoadBalancer without an address,
/// before the cluster is Degraded for it.
pub const PENDING_DEADLINE: Duration = Duration::from_secs(300);

/// A component of the control plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Component {
    /// The etcd StatefulSet.
    Etcd,
    /// The kube-apiserver Deployment.
    ApiServer,
    /// The kube-controller-manager Deployment.
    ControllerManager,
    /// The kube-scheduler Deployment.
    Scheduler,
}

impl Component {
    /// Every component, in the order they start.
    pub const ALL: [Component; 4] = [
        Component::Etcd,
        Component::ApiServer,
        Component::ControllerManager,
        Component::Scheduler,
    ];

    /// Its workload's name (and its pods' component label).
    pub fn name(self) -> &'static str {
        match self {
            Component::Etcd => render::ETCD,
            Component::ApiServer => render::API_SERVER,
            Component::ControllerManager => render::CONTROLLER_MANAGER,
            Component::Scheduler => render::SCHEDULER,
        }
    }

    /// Its condition.
    pub fn condition(self) -> &'static str {
        match self {
            Component::Etcd => CONDITION_ETCD_AVAILABLE,
            Component::ApiServer => CONDITION_API_SERVER_AVAILABLE,
            Component::ControllerManager => CONDITION_CONTROLLER_MANAGER_AVAILABLE,
            Component::Scheduler => CONDITION_SCHEDULER_AVAILABLE,
        }
    }

    fn of_label(value: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.name() == value)
    }

    fn kind(self) -> &'static str {
        match self {
            Component::Etcd => "StatefulSet",
            _ => "Deployment",
        }
    }
}

/// What a workload's status says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workload {
    /// Replicas asked for.
    pub replicas: i32,
    /// Replicas available (ready, for a StatefulSet).
    pub available: i32,
    /// Replicas at the current template.
    pub updated: i32,
    /// Whether its controller observed its current generation.
    pub current: bool,
    /// The version it is rendered at.
    pub version: Option<Version>,
    /// Why its rollout failed, from its conditions.
    pub failure: Option<String>,
    /// The networks it records having been made with (kube-apiserver's).
    pub network: Option<String>,
}

impl Workload {
    /// Enough replicas available: a quorum of etcd members, one of the others.
    pub fn available(&self, component: Component) -> bool {
        let needed = match component {
            Component::Etcd => self.replicas / 2 + 1,
            _ => 1,
        };
        self.available >= needed.max(1)
    }

    /// Available, and every replica at the current template.
    pub fn settled(&self, component: Component) -> bool {
        self.available(component)
            && self.current
            && self.updated >= self.replicas
            && self.available >= self.replicas
    }
}

/// The version a workload's annotation says it is rendered at.
fn version_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<Version> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_VERSION))
        .and_then(|v| Version::parse(v))
}

/// The component and status of a workload as the server answered its apply (`None` for an
/// object that is not a component's workload, such as the agent's Deployment).
pub fn of_applied(
    object: &serde_json::Value,
) -> Result<Option<(Component, Workload)>, serde_json::Error> {
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let Some(component) = Component::of_label(name) else {
        return Ok(None);
    };
    let workload = match (component, object["kind"].as_str()) {
        (Component::Etcd, Some("StatefulSet")) => {
            of_stateful_set(&serde_json::from_value(object.clone())?)
        }
        (_, Some("Deployment")) => of_deployment(&serde_json::from_value(object.clone())?),
        _ => return Ok(None),
    };
    Ok(Some((component, workload)))
}

/// What a Deployment's status says.
pub fn of_deployment(d: &Deployment) -> Workload {
    let status = d.status.clone().unwrap_or_default();
    let failure = status.conditions.iter().flatten().find_map(|c| {
        let failed = (c.type_ == "Progressing"
            && c.status == "False"
            && c.reason.as_deref() == Some("ProgressDeadlineExceeded"))
            || (c.type_ == "ReplicaFailure" && c.status == "True");
        failed.then(|| {
            format!(
                "{}: {}",
                c.reason.clone().unwrap_or_else(|| c.type_.clone()),
                c.message.clone().unwrap_or_default()
            )
        })
    });
    Workload {
        replicas: d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        available: status.available_replicas.unwrap_or(0),
        updated: status.updated_replicas.unwrap_or(0),
        current: status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0),
        version: version_of(&d.metadata),
        failure,
        network: d
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(super::network::ANNOTATION_NETWORK))
            .cloned(),
    }
}

/// What a StatefulSet's status says.
pub fn of_stateful_set(s: &StatefulSet) -> Workload {
    let status = s.status.clone().unwrap_or_default();
    Workload {
        replicas: s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        available: status.ready_replicas.unwrap_or(0),
        updated: status.updated_replicas.unwrap_or(0),
        current: status.observed_generation.unwrap_or(0) >= s.metadata.generation.unwrap_or(0),
        version: version_of(&s.metadata),
        failure: None,
        network: None,
    }
}

/// Something wrong with a component's pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trouble {
    /// Whose pod it is.
    pub component: Component,
    /// CamelCase reason.
    pub reason: &'static str,
    /// What is wrong, naming the pod and container.
    pub message: String,
}

/// The troubles of the control plane's pods: containers crash-looping or whose image cannot
/// be pulled, pods that cannot be scheduled.
pub fn troubles(pods: &[Pod]) -> Vec<Trouble> {
    let mut out = Vec::new();
    for pod in pods {
        let Some(component) = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_COMPONENT))
            .and_then(|c| Component::of_label(c))
        else {
            continue;
        };
        let name = pod.metadata.name.clone().unwrap_or_default();
        let status = pod.status.clone().unwrap_or_default();
        for container in status.container_statuses.iter().flatten() {
            let Some(waiting) = container.state.as_ref().and_then(|s| s.waiting.as_ref()) else {
                continue;
            };
            let reason = match waiting.reason.as_deref() {
                Some("CrashLoopBackOff") => "CrashLoopBackOff",
                Some("ImagePullBackOff" | "ErrImagePull" | "InvalidImageName") => {
                    "ImagePullBackOff"
                }
                Some("CreateContainerConfigError" | "CreateContainerError") => {
                    "ContainerConfigError"
                }
                _ => continue,
            };
            let mut message = format!(
                "container {} of pod {name} is in {} (restarted {} time(s))",
                container.name,
                waiting.reason.as_deref().unwrap_or(reason),
                container.restart_count
            );
            if let Some(m) = waiting.message.as_deref().filter(|m| !m.is_empty()) {
                message.push_str(": ");
                message.push_str(m);
            }
            out.push(Trouble {
                component,
                reason,
                message,
            });
        }
        for condition in status.conditions.iter().flatten() {
            if condition.type_ == "PodScheduled"
                && condition.status == "False"
                && condition.reason.as_deref() == Some("Unschedulable")
            {
                out.push(Trouble {
                    component,
                    reason: "Unschedulable",
                    message: format!(
                        "pod {name} cannot be scheduled: {}",
                        condition.message.clone().unwrap_or_default()
                    ),
                });
            }
        }
    }
    out
}

/// A PersistentVolumeClaim still Pending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingClaim {
    /// Its name.
    pub name: String,
    /// The storage class it asks for (`None`: the cluster's default).
    pub storage_class: Option<String>,
    /// How long it has been pending.
    pub age: Duration,
}

/// The claims still Pending, at `now` (Unix seconds).
pub fn pending_claims(claims: &[PersistentVolumeClaim], now: i64) -> Vec<PendingClaim> {
    claims
        .iter()
        .filter(|c| {
            c.status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .unwrap_or("Pending")
                == "Pending"
        })
        .map(|c| PendingClaim {
            name: c.metadata.name.clone().unwrap_or_default(),
            storage_class: c.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
            age: age(&c.metadata, now),
        })
        .collect()
}

/// How long ago an object was created.
fn age(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, now: i64) -> Duration {
    let created = meta
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0.as_second());
    Duration::from_secs(u64::try_from(now - created).unwrap_or(0))
}

/// How the API server's Service is exposed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    /// Its type.
    pub kind: ServiceType,
    /// Its address on the hub cluster.
    pub cluster_ip: Option<String>,
    /// For a NodePort, its port.
    pub node_port: Option<i32>,
    /// For a LoadBalancer, its address once given.
    pub load_balancer: Option<String>,
    /// How long it has existed.
    pub age: Duration,
}

/// What the API server's Service says.
pub fn exposure(service: &Service, now: i64) -> Exposure {
    let spec = service.spec.clone().unwrap_or_default();
    let kind = match spec.type_.as_deref() {
        Some("NodePort") => ServiceType::NodePort,
        Some("LoadBalancer") => ServiceType::LoadBalancer,
        _ => ServiceType::ClusterIP,
    };
    let load_balancer = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .and_then(|i| i.first())
        .and_then(|i| i.ip.clone().or_else(|| i.hostname.clone()));
    Exposure {
        kind,
        cluster_ip: spec.cluster_ip.filter(|ip| !ip.is_empty() && ip != "None"),
        node_port: spec.ports.iter().flatten().find_map(|p| p.node_port),
        load_balancer,
        age: age(&service.metadata, now),
    }
}

/// Where users reach the API server: a LoadBalancer's address, the hub's hosted host with a
/// NodePort, or the Service's name inside the hub cluster; `None` while a LoadBalancer has no
/// address.
pub fn endpoint(exposure: &Exposure, namespace: &str, hub_host: &str) -> Option<Endpoint> {
    match exposure.kind {
        ServiceType::ClusterIP => Some(Endpoint {
            host: format!("{}.{namespace}.svc", super::pki::API_SERVICE),
            port: super::pki::API_PORT,
        }),
        ServiceType::NodePort => exposure.node_port.map(|port| Endpoint {
            host: hub_host.to_owned(),
            port,
        }),
        ServiceType::LoadBalancer => exposure.load_balancer.clone().map(|host| Endpoint {
            host,
            port: super::pki::API_PORT,
        }),
    }
}

/// What the hub observed of a `Kubernetes`-mode control plane.
#[derive(Debug, Clone)]
pub struct Observed<'a> {
    /// The cluster's name.
    pub name: &'a str,
    /// The control plane's namespace.
    pub namespace: &'a str,
    /// The HostedCluster's generation.
    pub generation: Option<i64>,
    /// What in its spec needs a person.
    pub problems: &'a [Problem],
    /// Each component's workload, when found.
    pub workloads: BTreeMap<Component, Workload>,
    /// What is wrong with the components' pods.
    pub troubles: Vec<Trouble>,
    /// etcd's volumes still Pending.
    pub pending_claims: Vec<PendingClaim>,
    /// How the API server's Service is exposed, once applied.
    pub exposure: Option<Exposure>,
    /// What is rendered (`None` when a problem blocks).
    pub rollout: Option<Rollout>,
    /// The version asked for (`None` when refused).
    pub target: Option<Version>,
    /// Where users reach the API server, once known.
    pub endpoint: Option<Endpoint>,
    /// Whether the kubeconfig Secret is published.
    pub kubeconfig: bool,
    /// `None` until the cluster has a member record; then whether its agent holds a credential.
    pub joined: Option<bool>,
    /// How long after the hub first saw the cluster it became Available, once it has.
    pub ready_after: Option<Duration>,
    /// Whether what `kubeadm join` needs is written into the cluster.
    pub workers: super::join::Joinable,
    /// Where the add-ons stand in the cluster.
    pub addons: super::addons::Addons,
}

impl Observed<'_> {
    fn blocking(&self) -> Option<&Problem> {
        self.problems.iter().find(|p| p.blocks)
    }

    fn available(&self, c: Component) -> bool {
        self.workloads.get(&c).is_some_and(|w| w.available(c))
    }

    fn all_available(&self) -> bool {
        Component::ALL.into_iter().all(|c| self.available(c))
    }

    fn url(&self) -> Option<String> {
        self.endpoint
            .as_ref()
            .map(|e| format!("https://{}:{}", e.host, e.port))
    }

    fn lb_pending(&self) -> Option<&Exposure> {
        self.exposure
            .as_ref()
            .filter(|e| e.kind == ServiceType::LoadBalancer && e.load_balancer.is_none())
    }
}

/// What a component's condition says, and whether it degrades the cluster.
struct Finding {
    status: &'static str,
    reason: &'static str,
    message: String,
    degrades: bool,
}

impl Finding {
    /// Not available: `reason`, `message`, and whether a person is needed.
    fn not(reason: &'static str, message: String, degrades: bool) -> Self {
        Self {
            status: "False",
            reason,
            message,
            degrades,
        }
    }
}

/// A component's condition, and whether what it says degrades the cluster: available; else
/// what is wrong with its pods, its rollout or its volume; else what it waits for.
fn component(o: &Observed<'_>, c: Component) -> (Verdict, bool) {
    let finding = match o.workloads.get(&c) {
        None => not_rendered(o, c),
        Some(w) if w.available(c) => serving(o, c, w),
        Some(w) => trouble(o, c)
            .or_else(|| rollout_failed(o, c, w))
            .or_else(|| volume_pending(o, c))
            .unwrap_or_else(|| waiting(o, c, w)),
    };
    let verdict = Verdict::new(
        c.condition(),
        finding.status,
        finding.reason,
        finding.message,
    );
    (verdict, finding.degrades)
}

/// A component not rendered: a problem of the spec blocks it, or the hub is rendering it.
fn not_rendered(o: &Observed<'_>, c: Component) -> Finding {
    match o.blocking() {
        Some(p) => Finding::not(p.reason, p.message.clone(), false),
        None => Finding::not(
            "NotRendered",
            format!(
                "the hub is rendering {} {}/{}",
                c.kind(),
                o.namespace,
                c.name()
            ),
            false,
        ),
    }
}

/// An available component: its replicas and version.
fn serving(o: &Observed<'_>, c: Component, w: &Workload) -> Finding {
    let at = w.version.map(|v| format!(" at {v}")).unwrap_or_default();
    Finding {
        status: "True",
        reason: "AsExpected",
        message: format!(
            "{} {}/{}{at} has {} of {} replica(s) available",
            c.kind(),
            o.namespace,
            c.name(),
            w.available,
            w.replicas
        ),
        degrades: false,
    }
}

/// What is wrong with the component's pods (a crash loop, an image that does not pull).
fn trouble(o: &Observed<'_>, c: Component) -> Option<Finding> {
    let t = o.troubles.iter().find(|t| t.component == c)?;
    Some(Finding::not(
        t.reason,
        format!("{}: {}", c.name(), t.message),
        true,
    ))
}

/// A rollout its controller gave up on.
fn rollout_failed(o: &Observed<'_>, c: Component, w: &Workload) -> Option<Finding> {
    let failure = w.failure.as_ref()?;
    Some(Finding::not(
        "RolloutFailed",
        format!(
            "Deployment {}/{} cannot roll out: {failure}",
            o.namespace,
            c.name()
        ),
        true,
    ))
}

/// etcd's volume still Pending (degrading past [`PENDING_DEADLINE`]).
fn volume_pending(o: &Observed<'_>, c: Component) -> Option<Finding> {
    if c != Component::Etcd {
        return None;
    }
    let claim = o.pending_claims.first()?;
    let class = match &claim.storage_class {
        Some(class) => format!("storage class {class:?} (spec.storage.storageClassName)"),
        None => "the hub cluster's default storage class".to_owned(),
    };
    let late = claim.age >= PENDING_DEADLINE;
    let (since, hint) = if late {
        (
            format!(" for more than {}", format_duration(PENDING_DEADLINE)),
            "; check that the storage class exists and can provision volumes",
        )
    } else {
        (String::new(), "")
    };
    Some(Finding::not(
        "VolumePending",
        format!(
            "etcd waits for PersistentVolumeClaim {}/{}, Pending{since} from {class}{hint}",
            o.namespace, claim.name
        ),
        late,
    ))
}

/// What an unavailable component waits for: the one before it, or its own pods.
fn waiting(o: &Observed<'_>, c: Component, w: &Workload) -> Finding {
    let waits_for = match c {
        Component::Etcd => None,
        Component::ApiServer => Some(Component::Etcd),
        Component::ControllerManager | Component::Scheduler => Some(Component::ApiServer),
    };
    if let Some(before) = waits_for.filter(|b| !o.available(*b)) {
        return Finding::not(
            "WaitingForDependency",
            format!(
                "{} waits for {} to be available ({} of {} replica(s) available)",
                c.name(),
                before.name(),
                w.available,
                w.replicas
            ),
            false,
        );
    }
    Finding::not(
        "WaitingForReplicas",
        format!(
            "{} {}/{} has {} of {} replica(s) available; waiting for its pods to be ready",
            c.kind(),
            o.namespace,
            c.name(),
            w.available,
            w.replicas
        ),
        false,
    )
}

/// The verdicts a `Kubernetes`-mode HostedCluster's status should carry.
pub fn verdicts(o: &Observed<'_>) -> Vec<Verdict> {
    let components: Vec<(Verdict, bool)> = Component::ALL
        .into_iter()
        .map(|c| component(o, c))
        .collect();
    let available = match components.iter().find(|(v, _)| v.status != "True") {
        None => Verdict::new(
            CONDITION_AVAILABLE,
            "True",
            "AsExpected",
            match o.url() {
                Some(url) => format!("the control plane serves at {url}"),
                None => "the control plane serves".to_owned(),
            },
        ),
        Some((v, _)) => Verdict::new(CONDITION_AVAILABLE, "False", v.reason, v.message.clone()),
    };
    let degraded = degraded(o, &components);
    let progressing = progressing(o, &components);
    let mut out = vec![available, progressing, degraded];
    out.extend(components.into_iter().map(|(v, _)| v));
    out.push(agent_joined(o));
    out.push(super::join::verdict(&o.workers, o.name));
    out.push(super::addons::verdict(&o.addons));
    out
}

/// `Degraded`: the first problem of the spec, else the first component that needs a person,
/// else a LoadBalancer past its deadline. Messages hold no ages that move: a status written with
/// a new one would wake the controller again at once.
fn degraded(o: &Observed<'_>, components: &[(Verdict, bool)]) -> Verdict {
    if let Some(p) = o.problems.first() {
        return Verdict::new(CONDITION_DEGRADED, "True", p.reason, p.message.clone());
    }
    if let Some((v, _)) = components.iter().find(|(_, degrades)| *degrades) {
        return Verdict::new(CONDITION_DEGRADED, "True", v.reason, v.message.clone());
    }
    if o.lb_pending().is_some_and(|e| e.age >= PENDING_DEADLINE) {
        return Verdict::new(
            CONDITION_DEGRADED,
            "True",
            "LoadBalancerPending",
            format!(
                "Service {}/{} of type LoadBalancer has no address after {}: the hub cluster may have no load balancer; use spec.apiServer.serviceType NodePort or ClusterIP, or install one",
                o.namespace,
                super::pki::API_SERVICE,
                format_duration(PENDING_DEADLINE)
            ),
        );
    }
    Verdict::new(CONDITION_DEGRADED, "False", "AsExpected", "all is well")
}

/// `Progressing`: what the hub still waits for.
fn progressing(o: &Observed<'_>, components: &[(Verdict, bool)]) -> Verdict {
    let verdict = |status, reason, message: String| {
        Verdict::new(CONDITION_PROGRESSING, status, reason, message)
    };
    if let Some(p) = o.blocking() {
        return verdict(
            "False",
            p.reason,
            "the hub cannot go on until the spec is fixed".to_owned(),
        );
    }
    if let Some((v, _)) = components.iter().find(|(v, _)| v.status != "True") {
        return verdict("True", "Starting", v.message.clone());
    }
    if let (Some(rollout), Some(target)) = (o.rollout, o.target) {
        let unsettled = Component::ALL
            .into_iter()
            .find(|c| o.workloads.get(c).is_some_and(|w| !w.settled(*c)));
        if rollout != Rollout::all(target) || unsettled.is_some() {
            let waiting = match unsettled {
                Some(c) => format!("; {} is rolling out", c.name()),
                None => String::new(),
            };
            return verdict(
                "True",
                "Upgrading",
                format!(
                    "rolling to {target}: etcd at {}, kube-apiserver at {}, the controllers at {}{waiting}",
                    rollout.etcd, rollout.api_server, rollout.controllers
                ),
            );
        }
    }
    if o.lb_pending().is_some() {
        return verdict(
            "True",
            "WaitingForLoadBalancer",
            format!(
                "Service {}/{} waits for an address from the hub cluster's load balancer",
                o.namespace,
                super::pki::API_SERVICE
            ),
        );
    }
    if o.joined != Some(true) {
        return verdict(
            "True",
            "Joining",
            format!(
                "the control plane serves; its agent (Deployment {}/{}) is joining the hub",
                o.namespace,
                render::AGENT
            ),
        );
    }
    if !o.kubeconfig {
        return verdict(
            "True",
            "PublishingKubeconfig",
            "the control plane serves; its kubeconfig is being published".to_owned(),
        );
    }
    verdict(
        "False",
        "AsExpected",
        "the control plane serves and its agent joined the hub".to_owned(),
    )
}

/// `AgentJoined`, from the fleet.
fn agent_joined(o: &Observed<'_>) -> Verdict {
    if o.joined == Some(true) {
        return Verdict::new(
            CONDITION_AGENT_JOINED,
            "True",
            "Joined",
            format!(
                "the cluster's agent joined the hub; it is ClusterProfile fleet-system/{}",
                o.name
            ),
        );
    }
    if o.all_available() {
        return Verdict::new(
            CONDITION_AGENT_JOINED,
            "False",
            "Joining",
            format!(
                "the cluster's agent (Deployment {}/{}) is joining the hub",
                o.namespace,
                render::AGENT
            ),
        );
    }
    Verdict::new(
        CONDITION_AGENT_JOINED,
        "False",
        "ControlPlaneNotAvailable",
        "the agent joins once the control plane is available",
    )
}

/// The status a `Kubernetes`-mode HostedCluster should show, keeping transition times from
/// `previous`.
pub fn status(
    o: &Observed<'_>,
    previous: &HostedClusterStatus,
    now: jiff::Timestamp,
) -> HostedClusterStatus {
    let endpoint = o
        .endpoint
        .clone()
        .or_else(|| previous.control_plane_endpoint.clone());
    let settled = Component::ALL
        .into_iter()
        .all(|c| o.workloads.get(&c).is_some_and(|w| w.settled(c)));
    let version = match o.rollout {
        Some(rollout) if settled => Some(rollout.oldest().to_string()),
        _ => previous.version.clone(),
    };
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
        version,
        ready_after: previous
            .ready_after
            .clone()
            .or_else(|| o.ready_after.map(format_duration)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ready(replicas: i32) -> Workload {
        Workload {
            replicas,
            available: replicas,
            updated: replicas,
            current: true,
            version: Version::parse("1.35.0"),
            failure: None,
            network: None,
        }
    }

    fn starting(replicas: i32) -> Workload {
        Workload {
            available: 0,
            ..ready(replicas)
        }
    }

    fn all_ready() -> BTreeMap<Component, Workload> {
        Component::ALL.into_iter().map(|c| (c, ready(1))).collect()
    }

    fn observed(workloads: BTreeMap<Component, Workload>) -> Observed<'static> {
        let v = Version::parse("1.35.0").unwrap();
        Observed {
            name: "c1",
            namespace: "clusters-c1",
            generation: Some(1),
            problems: &[],
            workloads,
            troubles: vec![],
            pending_claims: vec![],
            exposure: None,
            rollout: Some(Rollout::all(v)),
            target: Some(v),
            endpoint: Some(Endpoint {
                host: "kube-apiserver.clusters-c1.svc".into(),
                port: 6443,
            }),
            kubeconfig: true,
            joined: Some(false),
            ready_after: None,
            workers: super::super::join::Joinable::WaitingForAPIServer,
            addons: super::super::addons::Addons::Waiting,
        }
    }

    fn condition(o: &Observed<'_>, type_: &str) -> (String, String, String) {
        let v = verdicts(o)
            .into_iter()
            .find(|v| v.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_}"));
        (v.status.to_owned(), v.reason.to_owned(), v.message)
    }

    #[test]
    fn nothing_rendered_yet_is_progressing_not_degraded() {
        let o = observed(BTreeMap::new());
        assert_eq!(condition(&o, "Available").1, "NotRendered");
        assert_eq!(condition(&o, "Progressing").0, "True");
        assert_eq!(condition(&o, "Degraded").0, "False");
        assert_eq!(condition(&o, "AgentJoined").1, "ControlPlaneNotAvailable");
    }

    #[test]
    fn components_wait_for_the_one_before_and_say_so() {
        let mut w = all_ready();
        w.insert(Component::Etcd, starting(1));
        w.insert(Component::ApiServer, starting(1));
        let o = observed(w);
        let (state, reason, message) = condition(&o, "EtcdAvailable");
        assert_eq!(
            (state.as_str(), reason.as_str()),
            ("False", "WaitingForReplicas")
        );
        assert!(
            message.contains("StatefulSet clusters-c1/etcd has 0 of 1"),
            "{message}"
        );
        let (_, reason, message) = condition(&o, "APIServerAvailable");
        assert_eq!(reason, "WaitingForDependency");
        assert!(
            message.contains("kube-apiserver waits for etcd"),
            "{message}"
        );
        let (state, reason, message) = condition(&o, "Available");
        assert_eq!(
            (state.as_str(), reason.as_str()),
            ("False", "WaitingForReplicas")
        );
        assert!(message.contains("etcd"), "{message}");
        assert_eq!(condition(&o, "Progressing").1, "Starting");
        // etcd of three has a quorum with two.
        let mut ha = all_ready();
        ha.insert(
            Component::Etcd,
            Workload {
                available: 2,
                ..ready(3)
            },
        );
        assert_eq!(condition(&observed(ha), "EtcdAvailable").0, "True");
    }

    #[test]
    fn every_component_available_is_available_and_then_joined_settles() {
        let mut o = observed(all_ready());
        let (state, _, message) = condition(&o, "Available");
        assert_eq!(state, "True");
        assert!(
            message.contains("https://kube-apiserver.clusters-c1.svc:6443"),
            "{message}"
        );
        for c in [
            "EtcdAvailable",
            "APIServerAvailable",
            "ControllerManagerAvailable",
            "SchedulerAvailable",
        ] {
            assert_eq!(condition(&o, c).0, "True", "{c}");
        }
        assert_eq!(condition(&o, "Progressing").1, "Joining");
        assert_eq!(condition(&o, "AgentJoined").1, "Joining");
        o.joined = Some(true);
        assert_eq!(
            condition(&o, "Progressing"),
            (
                "False".into(),
                "AsExpected".into(),
                "the control plane serves and its agent joined the hub".into()
            )
        );
        assert_eq!(condition(&o, "AgentJoined").0, "True");
        o.kubeconfig = false;
        assert_eq!(condition(&o, "Progressing").1, "PublishingKubeconfig");
        let s = super::status(&o, &HostedClusterStatus::default(), jiff::Timestamp::now());
        assert_eq!(s.version.as_deref(), Some("v1.35.0"));
        assert_eq!(
            s.url.as_deref(),
            Some("https://kube-apiserver.clusters-c1.svc:6443")
        );
    }

    fn pod(component: &str, reason: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{component}-abc"), "labels": {LABEL_COMPONENT: component}},
            "status": {"containerStatuses": [{
                "name": component, "image": "x", "imageID": "", "ready": false, "restartCount": 7,
                "state": {"waiting": {"reason": reason, "message": "back-off 5m0s restarting failed container"}},
            }]},
        }))
        .unwrap()
    }

    #[test]
    fn a_crash_looping_container_degrades_naming_its_component() {
        let mut w = all_ready();
        w.insert(Component::ControllerManager, starting(1));
        let mut o = observed(w);
        o.troubles = troubles(&[pod("kube-controller-manager", "CrashLoopBackOff")]);
        let (state, reason, message) = condition(&o, "Degraded");
        assert_eq!(
            (state.as_str(), reason.as_str()),
            ("True", "CrashLoopBackOff")
        );
        assert!(
            message.starts_with("kube-controller-manager: container kube-controller-manager of pod kube-controller-manager-abc is in CrashLoopBackOff (restarted 7 time(s))"),
            "{message}"
        );
        assert_eq!(
            condition(&o, "ControllerManagerAvailable").1,
            "CrashLoopBackOff"
        );
        assert_eq!(condition(&o, "Available").1, "CrashLoopBackOff");
        o.troubles = troubles(&[pod("kube-controller-manager", "ErrImagePull")]);
        assert_eq!(condition(&o, "Degraded").1, "ImagePullBackOff");
        // A pod of something else is not the control plane's.
        assert!(troubles(&[pod("other", "CrashLoopBackOff")]).is_empty());
    }

    #[test]
    fn a_deployment_past_its_deadline_degrades() {
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "kube-scheduler", "generation": 2, "annotations": {ANNOTATION_VERSION: "v1.35.0"}},
            "spec": {"replicas": 1, "selector": {}, "template": {}},
            "status": {"observedGeneration": 2, "conditions": [{
                "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                "message": "ReplicaSet \"kube-scheduler-1\" has timed out progressing."
            }]},
        }))
        .unwrap();
        let w = of_deployment(&d);
        assert!(w.current && w.failure.is_some() && w.version == Version::parse("1.35.0"));
        let mut all = all_ready();
        all.insert(Component::Scheduler, w);
        let o = observed(all);
        let (state, reason, message) = condition(&o, "Degraded");
        assert_eq!((state.as_str(), reason.as_str()), ("True", "RolloutFailed"));
        assert!(
            message.contains("kube-scheduler") && message.contains("timed out"),
            "{message}"
        );
    }

    #[test]
    fn a_pending_volume_waits_then_degrades_naming_the_storage_class() {
        let mut w = all_ready();
        w.insert(Component::Etcd, starting(1));
        let mut o = observed(w);
        let claim: PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "data-etcd-0", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"storageClassName": "missing"},
            "status": {"phase": "Pending"},
        }))
        .unwrap();
        let created = jiff::Timestamp::from_second(1_767_225_600)
            .unwrap()
            .as_second();
        o.pending_claims = pending_claims(std::slice::from_ref(&claim), created + 60);
        let (_, reason, message) = condition(&o, "EtcdAvailable");
        assert_eq!(reason, "VolumePending");
        assert!(
            message.contains("data-etcd-0") && message.contains("\"missing\""),
            "{message}"
        );
        assert_eq!(condition(&o, "Degraded").0, "False");
        let first = condition(&o, "EtcdAvailable");
        o.pending_claims = pending_claims(std::slice::from_ref(&claim), created + 61);
        assert_eq!(
            condition(&o, "EtcdAvailable"),
            first,
            "a message that moves with time"
        );
        o.pending_claims = pending_claims(&[claim], created + 600);
        let (state, reason, message) = condition(&o, "Degraded");
        assert_eq!((state.as_str(), reason.as_str()), ("True", "VolumePending"));
        assert!(
            message.contains("check that the storage class exists"),
            "{message}"
        );
    }

    #[test]
    fn a_load_balancer_without_an_address_waits_then_degrades() {
        let mut o = observed(all_ready());
        o.joined = Some(true);
        o.endpoint = None;
        let mut exposure = Exposure {
            kind: ServiceType::LoadBalancer,
            cluster_ip: Some("10.0.0.1".into()),
            node_port: None,
            load_balancer: None,
            age: Duration::from_secs(10),
        };
        assert_eq!(endpoint(&exposure, "clusters-c1", "hub"), None);
        o.exposure = Some(exposure.clone());
        assert_eq!(condition(&o, "Progressing").1, "WaitingForLoadBalancer");
        assert_eq!(condition(&o, "Degraded").0, "False");
        exposure.age = PENDING_DEADLINE;
        o.exposure = Some(exposure.clone());
        let (state, reason, message) = condition(&o, "Degraded");
        assert_eq!(
            (state.as_str(), reason.as_str()),
            ("True", "LoadBalancerPending")
        );
        assert!(message.contains("NodePort or ClusterIP"), "{message}");
        exposure.load_balancer = Some("203.0.113.9".into());
        assert_eq!(
            endpoint(&exposure, "ns", "hub").unwrap().host,
            "203.0.113.9"
        );
        exposure.kind = ServiceType::NodePort;
        exposure.node_port = Some(31000);
        assert_eq!(
            endpoint(&exposure, "ns", "hub.example.com"),
            Some(Endpoint {
                host: "hub.example.com".into(),
                port: 31000
            })
        );
    }

    #[test]
    fn a_refused_version_is_degraded_and_not_progressing() {
        let problems = [Problem {
            reason: "SkippedMinor",
            message: "spec.kubernetesVersion v1.35.0 skips a minor".into(),
            blocks: true,
        }];
        let mut o = observed(all_ready());
        o.problems = &problems;
        o.rollout = None;
        o.target = None;
        assert_eq!(condition(&o, "Degraded").1, "SkippedMinor");
        assert_eq!(condition(&o, "Progressing").0, "False");
        // What runs keeps running and says so.
        assert_eq!(condition(&o, "Available").0, "True");
    }

    #[test]
    fn an_upgrade_in_flight_is_progressing_and_names_each_components_version() {
        let old = Version::parse("1.34.0").unwrap();
        let new = Version::parse("1.35.0").unwrap();
        let mut o = observed(all_ready());
        o.joined = Some(true);
        o.target = Some(new);
        o.rollout = Some(Rollout {
            etcd: new,
            api_server: old,
            controllers: old,
        });
        let (state, reason, message) = condition(&o, "Progressing");
        assert_eq!((state.as_str(), reason.as_str()), ("True", "Upgrading"));
        assert!(message.contains("kube-apiserver at v1.34.0"), "{message}");
        let previous = HostedClusterStatus {
            version: Some("v1.34.0".into()),
            ..Default::default()
        };
        let mut rolling = o.clone();
        rolling.workloads.insert(
            Component::ApiServer,
            Workload {
                updated: 0,
                ..ready(1)
            },
        );
        assert_eq!(
            super::status(&rolling, &previous, jiff::Timestamp::now())
                .version
                .as_deref(),
            Some("v1.34.0")
        );
    }
}
