//! The hub, its agents and member clusters in one process, for tests: each part still talks to
//! the others over real gRPC with TLS and real HTTPS API servers.

use std::time::Duration;

use atoll_api::clusterset::{ClusterSet, ClusterSetSpec};
use atoll_api::inventory::{ClusterProfile, ClusterProperty};
use atoll_api::names::{INVENTORY_NAMESPACE, LABEL_CLUSTER_SET};
use atoll_apiserver::StorageKind;
use atoll_hub::Leases;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};

use crate::{TestServer, free_addr};

pub const WAIT: Duration = Duration::from_secs(20);

/// A hub: its API server and the hub itself, with one bootstrap token.
pub struct TestHub {
    pub api: TestServer,
    pub hub: Option<atoll_hub::Hub>,
    pub client: kube::Client,
    pub token: String,
    pub url: String,
    pub ca: String,
}

impl TestHub {
    /// Starts an API server in memory and a hub on it with one bootstrap token.
    pub async fn start(auto_accept: bool, leases: Leases) -> TestHub {
        Self::start_with(auto_accept, leases, |_| {}).await
    }

    /// The same, with the hub's configuration changed by `configure` first.
    pub async fn start_with(
        auto_accept: bool,
        leases: Leases,
        configure: impl FnOnce(&mut atoll_hub::Config),
    ) -> TestHub {
        let api = TestServer::start(StorageKind::Memory).await.unwrap();
        let client = api.client().await.unwrap();
        let addr = free_addr().unwrap();
        let mut config = hub_config(addr, auto_accept, leases);
        configure(&mut config);
        let hub = atoll_hub::Hub::start(client.clone(), config).await.unwrap();
        let (token, _) = atoll_hub::bootstrap::create(client.clone(), None, "tests", None)
            .await
            .unwrap();
        TestHub {
            url: format!("https://{}", hub.grpc_addr()),
            ca: hub.ca_pem().to_owned(),
            api,
            hub: Some(hub),
            client,
            token: token.to_string(),
        }
    }

    /// A raw protocol client presenting `token`.
    pub fn raw(&self, token: &str) -> atoll_agent::hub::Client {
        atoll_agent::hub::client(
            atoll_agent::hub::channel(&self.url, &self.ca).unwrap(),
            token,
        )
        .unwrap()
    }

    pub fn profiles(&self) -> Api<ClusterProfile> {
        Api::namespaced(self.client.clone(), INVENTORY_NAMESPACE)
    }

    pub async fn profile(&self, name: &str) -> Option<ClusterProfile> {
        self.profiles().get_opt(name).await.unwrap()
    }

    /// Waits until cluster `name` shows condition `type_` with `status` (and `reason`, if given).
    pub async fn wait_condition(
        &self,
        name: &str,
        type_: &str,
        status: &str,
        reason: Option<&str>,
    ) -> ClusterProfile {
        let deadline = std::time::Instant::now() + WAIT;
        loop {
            let p = self.profile(name).await;
            let hit = p.as_ref().is_some_and(|p| {
                condition(p, type_)
                    .is_some_and(|c| c.status == status && reason.is_none_or(|r| c.reason == r))
            });
            if hit || std::time::Instant::now() > deadline {
                let profile = p.unwrap_or_else(|| panic!("cluster {name} has no ClusterProfile"));
                assert!(
                    hit,
                    "cluster {name}: {type_} never became {status} {reason:?}: {:#?}",
                    profile.status
                );
                break profile;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn create_set(&self, name: &str) {
        let api: Api<ClusterSet> = Api::all(self.client.clone());
        let set = ClusterSet {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: ClusterSetSpec::default(),
            status: None,
        };
        api.create(&PostParams::default(), &set).await.unwrap();
    }

    pub async fn set_status(&self, name: &str) -> atoll_api::clusterset::ClusterSetStatus {
        let api: Api<ClusterSet> = Api::all(self.client.clone());
        api.get(name).await.unwrap().status.unwrap_or_default()
    }

    pub async fn label(&self, cluster: &str, set: Option<&str>) {
        let patch = serde_json::json!({"metadata": {"labels": {LABEL_CLUSTER_SET: set}}});
        self.profiles()
            .patch(cluster, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    /// Every Secret on the hub, as text, to search for leaked credentials.
    pub async fn all_secret_text(&self) -> String {
        let api: Api<Secret> = Api::all(self.client.clone());
        let list = api.list(&ListParams::default()).await.unwrap();
        list.items
            .iter()
            .flat_map(|s| s.data.clone().unwrap_or_default().into_values())
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

pub async fn start_hub(
    client: &kube::Client,
    addr: std::net::SocketAddr,
    auto_accept: bool,
    leases: Leases,
) -> atoll_hub::Hub {
    let config = hub_config(addr, auto_accept, leases);
    atoll_hub::Hub::start(client.clone(), config).await.unwrap()
}

/// The configuration tests run hubs with.
fn hub_config(addr: std::net::SocketAddr, auto_accept: bool, leases: Leases) -> atoll_hub::Config {
    let mut config = atoll_hub::Config::new(addr);
    config.auto_accept = auto_accept;
    config.leases = leases;
    // Deleting Works of a lost cluster wait as long as it takes to call the cluster lost.
    config.lost_cluster_grace = leases.grace();
    config
}

pub fn condition<'a>(
    p: &'a ClusterProfile,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    p.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

/// A member cluster (its own API server) and its agent, which can be stopped and started again.
pub struct Member {
    /// Kept so that the member's API server runs as long as the member.
    _api: TestServer,
    pub client: kube::Client,
    pub name: String,
    pub stop: Option<tokio::sync::watch::Sender<bool>>,
    pub task: Option<tokio::task::JoinHandle<Result<(), atoll_agent::Error>>>,
    /// How often its agent applies every Work again.
    pub resync: Duration,
    /// What its agent refuses to touch.
    pub deny: atoll_agent::deny::Deny,
}

impl Member {
    pub async fn start(hub: &TestHub, name: &str) -> Member {
        Self::start_with_resync(hub, name, Duration::from_secs(1)).await
    }

    /// A member whose agent applies every Work again once per `resync`.
    pub async fn start_with_resync(hub: &TestHub, name: &str, resync: Duration) -> Member {
        Self::start_with(hub, name, resync, atoll_agent::deny::Deny::default()).await
    }

    /// A member whose agent resyncs once per `resync` and refuses what `deny` names.
    pub async fn start_with(
        hub: &TestHub,
        name: &str,
        resync: Duration,
        deny: atoll_agent::deny::Deny,
    ) -> Member {
        let api = TestServer::start(StorageKind::Memory).await.unwrap();
        let client = api.client().await.unwrap();
        let mut member = Member {
            _api: api,
            client,
            name: name.to_owned(),
            stop: None,
            task: None,
            resync,
            deny,
        };
        member.run_agent(hub, None);
        member
    }

    pub fn run_agent(&mut self, hub: &TestHub, cluster_set: Option<&str>) {
        let config = atoll_agent::Config {
            hub: hub.url.clone(),
            hub_ca_pem: hub.ca.clone(),
            bootstrap_token: hub.token.clone(),
            cluster_name: self.name.clone(),
            cluster_set: cluster_set.map(str::to_owned),
            resync: self.resync,
            join_secret: None,
            deny: self.deny.clone(),
            metrics: Default::default(),
            ready: None,
        };
        let (stop, stopped) = tokio::sync::watch::channel(false);
        self.stop = Some(stop);
        self.task = Some(tokio::spawn(atoll_agent::run(
            config,
            self.client.clone(),
            stopped,
        )));
    }

    pub async fn stop_agent(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap().unwrap();
        }
    }

    pub async fn property(&self, name: &str) -> Option<String> {
        let api: Api<ClusterProperty> = Api::all(self.client.clone());
        api.get_opt(name).await.unwrap().map(|p| p.spec.value)
    }

    pub async fn kube_system_uid(&self) -> String {
        let api: Api<Namespace> = Api::all(self.client.clone());
        api.get("kube-system").await.unwrap().metadata.uid.unwrap()
    }
}
