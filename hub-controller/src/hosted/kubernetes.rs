//! `Kubernetes`-mode hosted control planes: etcd, kube-apiserver, kube-controller-manager,
//! kube-scheduler and the cluster's agent rendered as workloads of the hub cluster, in the
//! namespace `<namespace>-<name>`, with a PKI the hub generates and keeps in Secrets there. This
//! file is the thin I/O of one reconcile: read what runs, decide with the pure modules
//! ([`version`] which version each component rolls to, [`network`] which networks it has,
//! [`pki`] which certificates to issue, [`render`] the objects, [`status`] the conditions),
//! apply with server-side apply (field manager `atoll-hub`, forced), read back, and write the
//! status. Every object carries the label
//! `atoll.dev/hosted-cluster: <namespace>.<name>`; deleting the HostedCluster deletes the
//! namespace (owner references cannot cross namespaces).

/// The add-ons applied into the hosted cluster: kube-proxy and CoreDNS.
pub mod addons;
/// What `kubeadm join` needs inside the hosted cluster.
pub mod join;
/// The networks a control plane is rendered with.
pub mod network;
/// Certificates: what to issue, and issuing it.
pub mod pki;
/// The objects of a control plane.
pub mod render;
/// Conditions from the workloads' status.
pub mod status;
/// Supported versions and the rollout order.
pub mod version;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use atoll_api::hosted::network::Network;
use atoll_api::hosted::{HostedCluster, HostedClusterSpec, ServiceType};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim, Pod, Secret, Service};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::runtime::controller::Action;
use serde_json::{Value, json};

use super::plan::{Phase, Problem};
use super::runtime::Key;
use super::{Context, Error, Place};
use status::Component;
use version::{Rollout, Settled};

/// Field manager of what the hub applies to the hub cluster for `Kubernetes`-mode control
/// planes.
pub const FIELD_MANAGER: &str = "atoll-hub";
/// The Secret holding the join secret of the cluster's agent (made once, kept across hub
/// restarts).
const JOIN_SECRET: &str = "atoll-join";
/// How often a settled control plane is looked at again (certificates near their end).
const RECHECK: Duration = Duration::from_secs(3600);
/// How long writing what `kubeadm join` needs into a hosted cluster may take.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(30);
/// When a failed write of what `kubeadm join` needs is tried again.
const PUBLISH_RETRY: Duration = Duration::from_secs(30);

/// How this hub renders `Kubernetes`-mode control planes.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Whether it may: its API server is a real cluster's, which runs pods (`hub-controller`;
    /// not `atoll up`).
    pub enabled: bool,
    /// Where the control plane's images come from.
    pub registry: String,
    /// The agent's image.
    pub agent_image: String,
    /// The hub's gRPC address as pods of the hub cluster reach it (the first address it
    /// publishes).
    pub hub_address: Option<String>,
    /// How the hub reaches hosted API servers to write what `kubeadm join` needs.
    pub api_access: ApiAccess,
}

/// How the hub reaches a hosted cluster's API server (with the admin certificate of its PKI)
/// to write the bootstrap token, `cluster-info` and kubeadm's RBAC.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiAccess {
    /// Through its Service, `https://kube-apiserver.<namespace>.svc:6443`: hub-controller runs
    /// inside the hub cluster.
    #[default]
    Service,
    /// Through its published endpoint (the NodePort at the hosted host, or the LoadBalancer's
    /// address): hub-controller runs outside the hub cluster.
    Endpoint,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: false,
            registry: render::DEFAULT_REGISTRY.to_owned(),
            agent_image: crate::agents::default_image(),
            hub_address: None,
            api_access: ApiAccess::Service,
        }
    }
}

/// A control-plane namespace name too long to be one (and to be the value of its label).
pub fn namespace_problem(key: &Key) -> Option<Problem> {
    let namespace = render::namespace_of(key);
    (namespace.len() > 63).then(|| Problem {
        reason: "InvalidName",
        message: format!(
            "the control plane's namespace {namespace:?} (the HostedCluster's namespace and name) is longer than 63 characters; choose a shorter name"
        ),
        blocks: true,
    })
}

/// The problems of a `Kubernetes`-mode spec this hub can see before it renders anything.
pub fn problems(spec: &HostedClusterSpec, enabled: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    if !enabled {
        out.push(Problem {
            reason: "ModeUnavailable",
            message: "this hub cannot run mode Kubernetes: its API server runs no pods (atoll up); run hub-controller on a Kubernetes cluster (--hosted-kubernetes, its default), or use mode Embedded or Process".to_owned(),
            blocks: true,
        });
        return out;
    }
    if let Some(size) = spec.storage.as_ref().and_then(|s| s.size.as_ref())
        && let Err(e) = atoll_api::hosted::parse_bytes(&Value::String(size.clone()))
    {
        out.push(Problem {
            reason: "InvalidStorage",
            message: format!("spec.storage.size: {e}"),
            blocks: true,
        });
    }
    if render::service_type(spec) == ServiceType::NodePort
        && let Some(port) = spec.api_server.as_ref().and_then(|a| a.port)
        && !(30000..=32767).contains(&port)
    {
        out.push(Problem {
            reason: "InvalidPort",
            message: format!(
                "spec.apiServer.port {port} is outside the NodePort range (30000-32767) of serviceType NodePort; choose a port in it, or leave it unset for one the hub cluster picks"
            ),
            blocks: true,
        });
    }
    out
}

/// An API for the kind of `object` (in `namespace`, or cluster-wide).
fn dynamic(client: &kube::Client, namespace: Option<&str>, object: &Value) -> Api<DynamicObject> {
    let api_version = object["apiVersion"].as_str().unwrap_or("v1");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap_or_default();
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Applies `object` (server-side apply, forced) and answers what the server holds.
async fn apply_object(client: &kube::Client, object: &Value) -> Result<DynamicObject, Error> {
    let namespace = object["metadata"]["namespace"].as_str();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    Ok(dynamic(client, namespace, object)
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(object),
        )
        .await?)
}

/// The workloads of the control plane, as found.
async fn workloads(
    client: &kube::Client,
    namespace: &str,
) -> Result<BTreeMap<Component, status::Workload>, Error> {
    let mut out = BTreeMap::new();
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    if let Some(etcd) = sets.get_opt(render::ETCD).await? {
        out.insert(Component::Etcd, status::of_stateful_set(&etcd));
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    for c in [
        Component::ApiServer,
        Component::ControllerManager,
        Component::Scheduler,
    ] {
        if let Some(d) = deployments.get_opt(c.name()).await? {
            out.insert(c, status::of_deployment(&d));
        }
    }
    Ok(out)
}

/// The versions the components are rendered at, when kube-apiserver is (a control plane that
/// started).
fn deployed(found: &BTreeMap<Component, status::Workload>) -> Option<Rollout> {
    let api_server = found.get(&Component::ApiServer)?.version?;
    let at = |c| found.get(&c).and_then(|w| w.version).unwrap_or(api_server);
    Some(Rollout {
        etcd: at(Component::Etcd),
        api_server,
        controllers: at(Component::ControllerManager).min(at(Component::Scheduler)),
    })
}

/// The join secret of the cluster's agent, made at the first reconcile and kept in the
/// control plane's namespace.
async fn join_secret(
    client: &kube::Client,
    namespace: &str,
    labels: &Value,
) -> Result<String, Error> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let read = |s: &Secret| {
        s.data
            .as_ref()
            .and_then(|d| d.get(render::JOIN_SECRET_KEY))
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
    };
    if let Some(found) = api.get_opt(JOIN_SECRET).await?.as_ref().and_then(read) {
        return Ok(found);
    }
    let fresh = fresh_join_secret();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": JOIN_SECRET, "namespace": namespace, "labels": labels},
        "type": "Opaque",
        "stringData": {render::JOIN_SECRET_KEY: fresh},
    }))
    .map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(fresh),
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let stored = api.get(JOIN_SECRET).await?;
            Ok(read(&stored).unwrap_or(fresh))
        }
        Err(e) => Err(e.into()),
    }
}

/// A new join secret: 32 random lower-case letters and digits.
fn fresh_join_secret() -> String {
    use rand::Rng as _;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..32)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// The Secrets of the PKI found in the namespace, as text.
async fn pki_found(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
) -> Result<BTreeMap<String, pki::Data>, Error> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let mut out = BTreeMap::new();
    for secret in api.list(&ListParams::default().labels(selector)).await? {
        let name = secret.metadata.name.clone().unwrap_or_default();
        let data: pki::Data = secret
            .data
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| String::from_utf8(v.0).ok().map(|v| (k, v)))
            .collect();
        out.insert(name, data);
    }
    Ok(out)
}

/// A Secret of the PKI as an object to apply (its data base64-encoded: server-side apply
/// owns `data` keys, which `stringData` would not be).
fn pki_secret(namespace: &str, name: &str, stored: &pki::Stored, labels: &Value) -> Value {
    use base64::Engine as _;
    let data: BTreeMap<&String, String> = stored
        .data
        .iter()
        .map(|(k, v)| (k, base64::engine::general_purpose::STANDARD.encode(v)))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "type": stored.type_,
        "data": data,
    })
}

/// Brings a `Kubernetes`-mode HostedCluster's control plane to what it asks, and writes its
/// status: read what runs, decide the versions, render and apply, read the pods and volumes,
/// write into the hosted cluster, then the status.
pub(super) async fn apply(hc: &HostedCluster, ctx: &Context) -> Result<Action, Error> {
    let key = super::key_of(hc);
    let seen = *ctx
        .memory()
        .first_seen
        .entry(key.clone())
        .or_insert_with(Instant::now);
    let namespace = render::namespace_of(&key);
    let mut problems = super::spec_problems(hc, ctx, None, None);
    problems.extend(namespace_problem(&key));
    let ns_exists = namespace_is_ours(ctx, &key, &namespace, &mut problems).await?;
    let found = if ns_exists {
        workloads(&ctx.client, &namespace).await?
    } else {
        BTreeMap::new()
    };
    let made = found
        .get(&Component::ApiServer)
        .map(|w| network::made_with(w.network.as_deref()));
    let (network, network_problems) = network::plan(hc.spec.network.as_ref(), made);
    problems.extend(network_problems);
    let (target, rollout) = plan_rollout(hc, &found, &mut problems);
    let mut rendered = Rendered::nothing(hc, found);
    if let Some(plan) = rollout
        && let Some(network) = &network
        && let Some(now_rendered) =
            render_and_apply(hc, ctx, &key, &namespace, plan, network, &mut problems).await?
    {
        rendered = Rendered {
            published: rendered.published || now_rendered.published,
            ..now_rendered
        };
    }
    let (pods, claims) = if ns_exists || rollout.is_some() {
        pods_and_claims(&ctx.client, &namespace, &key).await?
    } else {
        (Vec::new(), Vec::new())
    };
    let (workers, addons, look_again) =
        hosted_writes(ctx, hc, &key, &namespace, &rendered, rollout.zip(network)).await;
    let now = jiff::Timestamp::now();
    let all_available = rendered.all_available();
    let observed = status::Observed {
        name: &key.name,
        namespace: &namespace,
        generation: hc.metadata.generation,
        problems: &problems,
        troubles: status::troubles(&pods),
        pending_claims: status::pending_claims(&claims, now.as_second()),
        exposure: rendered.exposure,
        rollout,
        target,
        endpoint: rendered.endpoint,
        kubeconfig: rendered.published,
        joined: joined(hc, ctx, &key, rendered.claimed),
        ready_after: all_available.then(|| seen.elapsed()),
        workloads: rendered.workloads,
        workers,
        addons,
    };
    let previous = hc.status.clone().unwrap_or_default();
    let next = status::status(&observed, &previous, now);
    if next != previous {
        super::write_status(ctx, &key, &next).await?;
    }
    Ok(Action::requeue(next_look(&observed, look_again)))
}

/// Whether the control plane's namespace exists and is this HostedCluster's; one of that name
/// that is another's is a problem that blocks.
async fn namespace_is_ours(
    ctx: &Context,
    key: &Key,
    namespace: &str,
    problems: &mut Vec<Problem>,
) -> Result<bool, Error> {
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    let Some(found) = api.get_opt(namespace).await? else {
        return Ok(false);
    };
    if ours(&found, key) {
        return Ok(true);
    }
    problems.push(Problem {
        reason: "NamespaceInUse",
        message: format!(
            "the control plane's namespace {namespace} exists and is not this HostedCluster's (no label {}={}); delete or rename it, or choose another name",
            render::LABEL_HOSTED_CLUSTER,
            render::label_of(key)
        ),
        blocks: true,
    });
    Ok(false)
}

/// The version the spec asks for (a refused one is a problem) and, unless a problem blocks,
/// the version each component is rendered at now.
fn plan_rollout(
    hc: &HostedCluster,
    found: &BTreeMap<Component, status::Workload>,
    problems: &mut Vec<Problem>,
) -> (Option<version::Version>, Option<Rollout>) {
    let running = deployed(found);
    let asked = hc.spec.kubernetes_version.as_deref();
    let target = match version::check(asked, running.map(|r| r.oldest())) {
        Ok(v) => Some(v),
        Err(problem) => {
            problems.push(problem);
            None
        }
    };
    let settled = |c| found.get(&c).is_some_and(|w| w.settled(c));
    let settled = Settled {
        etcd: settled(Component::Etcd),
        api_server: settled(Component::ApiServer),
    };
    let rollout = target
        .filter(|_| !problems.iter().any(|p| p.blocks))
        .map(|t| version::rollout(t, running, settled));
    (target, rollout)
}

/// The pods and volume claims of the control plane.
async fn pods_and_claims(
    client: &kube::Client,
    namespace: &str,
    key: &Key,
) -> Result<(Vec<Pod>, Vec<PersistentVolumeClaim>), Error> {
    let selector = format!("{}={}", render::LABEL_HOSTED_CLUSTER, render::label_of(key));
    let list = ListParams::default().labels(&selector);
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    Ok((pods.list(&list).await?.items, pvcs.list(&list).await?.items))
}

/// Whether the cluster's agent joined: from the inventory when the cluster is this
/// HostedCluster's now; when not rendered now (a refused spec), a member this HostedCluster
/// made keeps saying whether its agent joined.
fn joined(hc: &HostedCluster, ctx: &Context, key: &Key, claimed: bool) -> Option<bool> {
    if claimed {
        return super::inventory_view(ctx, key, &Phase::Running);
    }
    let uid = hc.metadata.uid.as_deref();
    ctx.fleet
        .get(&key.name)
        .filter(|m| m.hosted_by.as_deref() == uid && uid.is_some())
        .map(|m| m.accepted && m.credential.is_some())
}

/// Writes into the hosted cluster once kube-apiserver is available and has an endpoint;
/// otherwise says what that waits for.
async fn hosted_writes(
    ctx: &Context,
    hc: &HostedCluster,
    key: &Key,
    namespace: &str,
    rendered: &Rendered,
    rendered_at: Option<(Rollout, Network)>,
) -> (join::Joinable, addons::Addons, Duration) {
    let api_available = rendered
        .workloads
        .get(&Component::ApiServer)
        .is_some_and(|w| w.available(Component::ApiServer));
    match (
        api_available,
        &rendered.admin,
        &rendered.endpoint,
        rendered_at,
    ) {
        (true, Some(admin), Some(endpoint), Some((rollout, network))) => {
            let target = Hosted {
                key,
                namespace,
                spec: &hc.spec,
                admin,
                endpoint,
                internal: rendered
                    .exposure
                    .as_ref()
                    .is_none_or(|e| e.kind == ServiceType::ClusterIP),
                rollout,
                network,
                pod_subnet: network.pod.map(|p| p.to_string()),
                dns_ip: network.dns.to_string(),
            };
            write_into_hosted(ctx, &target).await
        }
        (true, Some(_), None, _) => (
            join::Joinable::WaitingForEndpoint,
            addons::Addons::Waiting,
            RECHECK,
        ),
        _ => (
            join::Joinable::WaitingForAPIServer,
            addons::Addons::Waiting,
            RECHECK,
        ),
    }
}

/// When to look again without a change to wake the controller: soon while a deadline runs (a
/// pending volume or load balancer), else at the recheck of certificates near their end, or
/// sooner when the hosted cluster asks (a token's renewal, a retry).
fn next_look(observed: &status::Observed<'_>, look_again: Duration) -> Duration {
    let pending = !observed.pending_claims.is_empty()
        || observed
            .exposure
            .as_ref()
            .is_some_and(|e| e.kind == ServiceType::LoadBalancer && e.load_balancer.is_none());
    let base = if pending {
        Duration::from_secs(30)
    } else {
        RECHECK
    };
    base.min(look_again)
}

/// The hosted cluster that the hub writes into: what `kubeadm join` needs, and the add-ons.
struct Hosted<'a> {
    key: &'a Key,
    namespace: &'a str,
    spec: &'a HostedClusterSpec,
    /// The admin client certificate's Secret data (`ca.crt`, `tls.crt`, `tls.key`).
    admin: &'a pki::Data,
    /// Where workers reach the API server.
    endpoint: &'a atoll_api::hosted::Endpoint,
    /// Whether that is reachable only inside the hub cluster.
    internal: bool,
    /// The version each component is rendered at.
    rollout: Rollout,
    /// The cluster's networks.
    network: Network,
    /// Its pod network, as kube-proxy's `clusterCIDR` holds it.
    pod_subnet: Option<String>,
    /// The `kube-dns` Service's address.
    dns_ip: String,
}

impl Hosted<'_> {
    /// What `kubeadm join` reads, rendered for this cluster.
    fn join_input<'a>(
        &'a self,
        ca_pem: &'a str,
        version: &'a str,
        registry: &'a str,
    ) -> join::Input<'a> {
        join::Input {
            cluster: &self.key.name,
            namespace: self.namespace,
            endpoint: self.endpoint,
            ca_pem,
            version,
            network: &self.network,
            registry,
            kube_proxy: addons::Addon::KubeProxy.enabled(self.spec),
            core_dns: addons::Addon::CoreDns.enabled(self.spec),
        }
    }

    /// The add-ons' input: at the version the whole control plane runs (kube-proxy moves once
    /// the controllers did).
    fn addons_input<'a>(&'a self, registry: &'a str) -> addons::Input<'a> {
        addons::Input {
            spec: self.spec,
            version: self.rollout.oldest(),
            registry,
            endpoint: self.endpoint,
            pod_subnet: self.pod_subnet.as_deref(),
            dns_ip: &self.dns_ip,
            dns_domain: join::DNS_DOMAIN,
        }
    }
}

/// Writes into the hosted cluster, each part bounded in time: what `kubeadm join` needs, then
/// the add-ons. Answers where each stands and when to look again (the token's renewal, or a
/// retry). Never an error: the rest of the reconcile does not wait on the hosted API server.
async fn write_into_hosted(
    ctx: &Context,
    target: &Hosted<'_>,
) -> (join::Joinable, addons::Addons, Duration) {
    let server = match ctx.kubernetes.api_access {
        ApiAccess::Service => format!(
            "https://{}.{}.svc:{}",
            pki::API_SERVICE,
            target.namespace,
            pki::API_PORT
        ),
        ApiAccess::Endpoint => format!("https://{}:{}", target.endpoint.host, target.endpoint.port),
    };
    let client = match hosted_client(&server, &target.key.name, target.admin).await {
        Ok(client) => client,
        Err(message) => {
            let joinable = join::Joinable::Failed {
                server: server.clone(),
                message: message.clone(),
            };
            return (joinable, addons::Addons::failed(&message), PUBLISH_RETRY);
        }
    };
    let (joinable, again) = publish_for_workers(ctx, &client, &server, target).await;
    let registry = &ctx.kubernetes.registry;
    let input = target.addons_input(registry);
    let addons = match tokio::time::timeout(PUBLISH_TIMEOUT, apply_addons(&client, &input)).await {
        Ok(outcomes) => addons::Addons::Done(outcomes),
        Err(_) => addons::Addons::failed(&format!(
            "the hosted API server at {server} gave no answer within {}s",
            PUBLISH_TIMEOUT.as_secs()
        )),
    };
    let failed = addons.any_failed();
    if failed {
        tracing::warn!(cluster = %target.key, %server, "cannot apply the add-ons; retrying");
    }
    let again = if failed {
        again.min(PUBLISH_RETRY)
    } else {
        again
    };
    (joinable, addons, again)
}

/// Writes what `kubeadm join` needs into the hosted cluster, bounded in time; answers where
/// that stands and when to look again (the token's renewal, or a retry).
async fn publish_for_workers(
    ctx: &Context,
    client: &kube::Client,
    server: &str,
    target: &Hosted<'_>,
) -> (join::Joinable, Duration) {
    let outcome = tokio::time::timeout(PUBLISH_TIMEOUT, publish(ctx, client, target)).await;
    let failed = |message: String| {
        tracing::warn!(cluster = %target.key, %server, %message, "cannot write what kubeadm join needs");
        (
            join::Joinable::Failed {
                server: server.to_owned(),
                message,
            },
            PUBLISH_RETRY,
        )
    };
    match outcome {
        Ok(Ok(token)) => {
            let now = jiff::Timestamp::now();
            let again = join::renew_in(&token, now);
            (
                join::Joinable::Published {
                    endpoint: target.endpoint.clone(),
                    internal: target.internal,
                    token_id: token.id,
                    expires: token.expires,
                },
                again,
            )
        }
        Ok(Err(message)) => failed(message),
        Err(_) => failed(format!("no answer within {}s", PUBLISH_TIMEOUT.as_secs())),
    }
}

/// A client of the hosted API server at `server`, as its admin.
async fn hosted_client(
    server: &str,
    name: &str,
    admin: &pki::Data,
) -> Result<kube::Client, String> {
    let text = |k: &str| admin.get(k).cloned().unwrap_or_default();
    let kubeconfig = atoll_apiserver::kubeconfig::render_certificate(
        name,
        server,
        &text(pki::CA_CRT),
        "atoll-admin",
        &text(pki::TLS_CRT),
        &text(pki::TLS_KEY),
    );
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&kubeconfig)
        .map_err(|e| format!("the admin kubeconfig cannot be read: {e}"))?;
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .map_err(|e| format!("the admin kubeconfig cannot be used: {e}"))?;
    config.connect_timeout = Some(Duration::from_secs(5));
    config.read_timeout = Some(Duration::from_secs(15));
    kube::Client::try_from(config).map_err(|e| format!("cannot make a client: {e}"))
}

/// Applies what `kubeadm join` reads, deletes expired tokens and makes one when the hub's is
/// near its end; answers the hub's current token.
async fn publish(
    ctx: &Context,
    client: &kube::Client,
    target: &Hosted<'_>,
) -> Result<join::Token, String> {
    let ca = target.admin.get(pki::CA_CRT).cloned().unwrap_or_default();
    let version = target.rollout.api_server.to_string();
    let input = target.join_input(&ca, &version, &ctx.kubernetes.registry);
    for object in join::objects(&input) {
        apply_to(client, &object).await?;
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), join::TOKEN_NAMESPACE);
    let list = ListParams::default()
        .labels(join::LABEL_TOKEN_BY)
        .limit(100);
    let found = secrets
        .list(&list)
        .await
        .map_err(|e| {
            format!(
                "cannot list the bootstrap tokens in kube-system: {}",
                error_chain(&e)
            )
        })?
        .items;
    let found = join::Token::all_in(found);
    let now = jiff::Timestamp::now();
    let plan = join::plan_tokens(&found, now);
    for name in &plan.delete {
        match secrets.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(cluster = %target.key, secret = %name, "deleted an expired bootstrap token")
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(format!("Secret kube-system/{name}: {}", error_chain(&e))),
        }
    }
    match plan.current {
        Some(current) if !plan.create => Ok(current),
        _ => {
            let token = join::Token::generate(now, join::DEFAULT_TTL, join::MadeBy::Hub);
            apply_to(client, &token.secret()).await?;
            tracing::info!(cluster = %target.key, token = %token.id, "made a bootstrap token for kubeadm join");
            Ok(token)
        }
    }
}

/// Applies each add-on the spec asks for and removes what the hub applied of those it turned
/// off; one add-on's failure stays its own.
async fn apply_addons(
    client: &kube::Client,
    input: &addons::Input<'_>,
) -> BTreeMap<addons::Addon, addons::Outcome> {
    let mut out = BTreeMap::new();
    for addon in addons::Addon::ALL {
        let objects = addons::objects(addon, input);
        let done = if addon.enabled(input.spec) {
            apply_all(client, &objects)
                .await
                .map(|()| addons::Outcome::Applied {
                    image: addons::image(addon, input),
                })
        } else {
            remove_applied(client, addon, &objects)
                .await
                .map(|()| addons::Outcome::Removed)
        };
        out.insert(
            addon,
            done.unwrap_or_else(|message| addons::Outcome::Failed { message }),
        );
    }
    out
}

/// Applies `objects` in order; the first failure names its object.
async fn apply_all(client: &kube::Client, objects: &[Value]) -> Result<(), String> {
    for object in objects {
        apply_to(client, object).await?;
    }
    Ok(())
}

/// Deletes those of `objects` that the hosted cluster holds with the hub's label for `addon`
/// (what someone else made under the same name stays).
async fn remove_applied(
    client: &kube::Client,
    addon: addons::Addon,
    objects: &[Value],
) -> Result<(), String> {
    for object in objects.iter().rev() {
        let namespace = object["metadata"]["namespace"].as_str();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let api = dynamic(client, namespace, object);
        let found = match api.get_opt(name).await {
            Ok(Some(found)) => serde_json::to_value(found).unwrap_or_default(),
            Ok(None) => continue,
            Err(e) => return Err(format!("{}: {}", describe(object), error_chain(&e))),
        };
        if !addons::applied_by_hub(addon, &found) {
            continue;
        }
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {
                tracing::info!(addon = addon.name(), object = %describe(object), "removed an add-on's object")
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(format!("{}: {}", describe(object), error_chain(&e))),
        }
    }
    Ok(())
}

/// Applies `object` to the hosted cluster; the error names it.
async fn apply_to(client: &kube::Client, object: &Value) -> Result<(), String> {
    let namespace = object["metadata"]["namespace"].as_str();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    dynamic(client, namespace, object)
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(object),
        )
        .await
        .map(drop)
        .map_err(|e| format!("{}: {}", describe(object), error_chain(&e)))
}

/// An error with its sources, for a condition's message.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// `Kind namespace/name` of an object, for messages.
fn describe(object: &Value) -> String {
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    match meta["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// What one reconcile rendered and read back (nothing, when a problem blocks rendering).
struct Rendered {
    /// Whether the cluster's place in the inventory is this HostedCluster's.
    claimed: bool,
    /// How the API server's Service is exposed.
    exposure: Option<status::Exposure>,
    /// Where users reach the API server.
    endpoint: Option<atoll_api::hosted::Endpoint>,
    /// Whether the kubeconfig Secret is published.
    published: bool,
    /// The admin client certificate's Secret data, once issued.
    admin: Option<pki::Data>,
    /// The workloads, as applied (or found).
    workloads: BTreeMap<Component, status::Workload>,
}

impl Rendered {
    /// Whether every component's workload is available.
    fn all_available(&self) -> bool {
        Component::ALL
            .into_iter()
            .all(|c| self.workloads.get(&c).is_some_and(|w| w.available(c)))
    }

    /// Nothing rendered now: the workloads `found`, the kubeconfig as the status says.
    fn nothing(hc: &HostedCluster, found: BTreeMap<Component, status::Workload>) -> Self {
        Self {
            claimed: false,
            exposure: None,
            endpoint: None,
            published: hc.status.as_ref().is_some_and(|s| s.kubeconfig.is_some()),
            admin: None,
            workloads: found,
        }
    }
}

/// The names the control plane's certificates hold, before its Service has an address.
fn pki_names(hc: &HostedCluster, key: &Key, namespace: &str, network: &Network) -> pki::Names {
    pki::Names {
        cluster: key.name.clone(),
        namespace: namespace.to_owned(),
        etcd_members: render::etcd_members(&hc.spec),
        kubernetes_service_ip: network.kubernetes_service_ip().into(),
        service_ip: None,
        external_host: None,
        extra_sans: hc
            .spec
            .api_server
            .as_ref()
            .map(|a| a.extra_sans.clone())
            .unwrap_or_default(),
    }
}

/// Renders the control plane at `rollout` and applies it: the namespace, the cluster's place in
/// the inventory, the Services (read back for their addresses), the PKI (issuing what its plan
/// asks), the workloads, and the admin kubeconfig. `None` when the cluster's name is another's.
async fn render_and_apply(
    hc: &HostedCluster,
    ctx: &Context,
    key: &Key,
    namespace: &str,
    rollout: Rollout,
    network: &Network,
    problems: &mut Vec<Problem>,
) -> Result<Option<Rendered>, Error> {
    let client = &ctx.client;
    let settings = &ctx.kubernetes;
    let images = render::images(
        &hc.spec,
        &rollout,
        &settings.registry,
        &settings.agent_image,
    );
    let agent = ctx.agents.clone().unwrap_or_default();
    let hub_address = settings
        .hub_address
        .clone()
        .unwrap_or_else(|| agent.url.clone());
    let first_names = pki_names(hc, key, namespace, network);
    let no_digests = render::Digests::default();
    let base = render::Input {
        key,
        spec: &hc.spec,
        names: &first_names,
        network,
        rollout,
        images: &images,
        digests: &no_digests,
        agent: render::AgentJoin {
            hub_address: &hub_address,
            hub_ca_pem: &agent.ca_pem,
            token: &agent.token,
            join_secret: "",
        },
    };
    let labels = json!({render::LABEL_HOSTED_CLUSTER: render::label_of(key), render::LABEL_MANAGED_BY: "atoll"});
    let Some(join) = claim_place(hc, ctx, &base, &labels, problems).await? else {
        return Ok(None);
    };
    let api_service = apply_services(client, &base).await?;
    let now = jiff::Timestamp::now().as_second();
    let exposure = status::exposure(&api_service, now);
    let endpoint = status::endpoint(&exposure, namespace, &ctx.hosted_host);
    let names = first_names.exposed(&exposure, endpoint.as_ref());
    let issued = issue_pki(client, key, namespace, &names, &labels, now).await?;
    let digests = render::digests(&issued.secrets);
    let input = render::Input {
        names: &names,
        digests: &digests,
        agent: render::AgentJoin {
            join_secret: &join,
            ..base.agent.clone()
        },
        ..base.clone()
    };
    let workloads = apply_workloads(client, &input).await?;
    let admin = issued.secrets.get(pki::ADMIN).map(|s| s.data.clone());
    let published =
        publish_admin_kubeconfig(hc, ctx, key, endpoint.as_ref(), admin.as_ref()).await?;
    Ok(Some(Rendered {
        claimed: true,
        exposure: Some(exposure),
        endpoint,
        published,
        admin,
        workloads,
    }))
}

/// Applies the control plane's namespace and takes the cluster's place in the inventory, with
/// its agent's join secret (made once, kept in the namespace); `None` when the name is
/// another's.
async fn claim_place(
    hc: &HostedCluster,
    ctx: &Context,
    base: &render::Input<'_>,
    labels: &Value,
    problems: &mut Vec<Problem>,
) -> Result<Option<String>, Error> {
    apply_object(&ctx.client, &render::namespace(base)).await?;
    let join = join_secret(&ctx.client, &base.names.namespace, labels).await?;
    let place = Place {
        dir: None,
        etcd_prefix: None,
    };
    let claimed = super::take_place(hc, ctx, base.key, None, place, problems, Some(&join)).await?;
    Ok(claimed.then_some(join))
}

/// Applies the control plane's Services; answers the API server's as the server holds it.
async fn apply_services(
    client: &kube::Client,
    input: &render::Input<'_>,
) -> Result<Service, Error> {
    let mut api_service = None;
    for service in render::services(input) {
        let applied = apply_object(client, &service).await?;
        if service["metadata"]["name"] == pki::API_SERVICE {
            api_service = Some(applied);
        }
    }
    Ok(api_service
        .map(|d| serde_json::to_value(d).and_then(serde_json::from_value))
        .transpose()
        .map_err(kube::Error::SerdeError)?
        .unwrap_or_default())
}

/// Applies the workloads; answers each component's as the server holds it.
async fn apply_workloads(
    client: &kube::Client,
    input: &render::Input<'_>,
) -> Result<BTreeMap<Component, status::Workload>, Error> {
    let mut workloads = BTreeMap::new();
    for object in render::workloads(input) {
        let applied = apply_object(client, &object).await?;
        let value = serde_json::to_value(&applied).map_err(kube::Error::SerdeError)?;
        if let Some((component, workload)) =
            status::of_applied(&value).map_err(kube::Error::SerdeError)?
        {
            workloads.insert(component, workload);
        }
    }
    Ok(workloads)
}

/// Publishes the admin kubeconfig (at `endpoint`, with the admin client certificate) beside
/// the HostedCluster, once both are known; answers whether it did.
async fn publish_admin_kubeconfig(
    hc: &HostedCluster,
    ctx: &Context,
    key: &Key,
    endpoint: Option<&atoll_api::hosted::Endpoint>,
    admin: Option<&pki::Data>,
) -> Result<bool, Error> {
    let (Some(endpoint), Some(admin)) = (endpoint, admin) else {
        return Ok(false);
    };
    let server = format!("https://{}:{}", endpoint.host, endpoint.port);
    let text = |k: &str| admin.get(k).cloned().unwrap_or_default();
    let ca = text(pki::CA_CRT);
    let kubeconfig = atoll_apiserver::kubeconfig::render_certificate(
        &key.name,
        &server,
        &ca,
        "atoll-admin",
        &text(pki::TLS_CRT),
        &text(pki::TLS_KEY),
    );
    super::publish_text(hc, ctx, key, &server, &ca, kubeconfig, true).await?;
    Ok(true)
}

/// The PKI of the control plane for `names`: what the Secrets found are kept, what their plan
/// asks is issued and written (only that).
async fn issue_pki(
    client: &kube::Client,
    key: &Key,
    namespace: &str,
    names: &pki::Names,
    labels: &Value,
    now: i64,
) -> Result<pki::Issued, Error> {
    let selector = format!("{}={}", render::LABEL_HOSTED_CLUSTER, render::label_of(key));
    let found = pki_found(client, namespace, &selector).await?;
    let wanted = pki::wanted(names);
    let plan = pki::plan(&wanted, &found, now);
    let issued = pki::issue(&wanted, &found, &plan).map_err(|source| Error::Pki {
        cluster: key.to_string(),
        source,
    })?;
    for (name, why) in &issued.changed {
        tracing::info!(cluster = %key, secret = %name, why = %why, "issuing a certificate of the hosted control plane");
        if let Some(stored) = issued.secrets.get(name) {
            apply_object(client, &pki_secret(namespace, name, stored, labels)).await?;
        }
    }
    Ok(issued)
}

/// Whether a namespace is the control plane's of `key` (labelled so).
fn ours(namespace: &Namespace, key: &Key) -> bool {
    namespace
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(render::LABEL_HOSTED_CLUSTER))
        == Some(&render::label_of(key))
}

/// Deletes a `Kubernetes`-mode control plane's namespace (with everything in it); `Err` while
/// it is still going, so that the finalizer stays until it is gone.
pub(super) async fn delete(ctx: &Context, key: &Key) -> Result<(), Error> {
    let namespace = render::namespace_of(key);
    let api: Api<Namespace> = Api::all(ctx.client.clone());
    let Some(found) = api.get_opt(&namespace).await? else {
        return Ok(());
    };
    if !ours(&found, key) {
        return Ok(());
    }
    if found.metadata.deletion_timestamp.is_none() {
        match api.delete(&namespace, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        tracing::info!(cluster = %key, %namespace, "deleting the hosted control plane's namespace");
    }
    if api.get_opt(&namespace).await?.is_none() {
        return Ok(());
    }
    Err(Error::NamespaceTerminating { namespace })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_plane_namespace_too_long_is_refused_naming_it() {
        let short = Key {
            namespace: "clusters".into(),
            name: "c1".into(),
        };
        assert_eq!(namespace_problem(&short), None);
        let long = Key {
            namespace: "n".repeat(40),
            name: "c".repeat(30),
        };
        let problem = namespace_problem(&long).unwrap();
        assert!(
            problem.blocks && problem.message.contains("longer than 63"),
            "{problem:?}"
        );
    }

    #[test]
    fn spec_problems_name_the_field() {
        let spec: HostedClusterSpec = serde_json::from_value(json!({
            "mode": "Kubernetes",
            "storage": {"size": "lots"},
            "apiServer": {"serviceType": "NodePort", "port": 6443},
        }))
        .unwrap();
        let found = problems(&spec, true);
        let reasons: Vec<_> = found.iter().map(|p| p.reason).collect();
        assert_eq!(reasons, ["InvalidStorage", "InvalidPort"]);
        assert!(found[0].message.starts_with("spec.storage.size"));
        assert!(found[1].message.contains("spec.apiServer.port 6443"));
        let off = problems(&HostedClusterSpec::default(), false);
        assert_eq!(off[0].reason, "ModeUnavailable");
    }
}
