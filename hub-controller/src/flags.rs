//! The hub's command-line flags, shared by `hub-controller` and `atoll up`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::hosted::datastore::{DEFAULT_PREFIX, HostedEtcd};
use crate::{Config, Leases};

/// How the hub serves agents.
#[derive(clap::Args, Debug, Clone)]
pub struct Flags {
    /// Address the gRPC server for agents listens on.
    #[arg(long, env = "ATOLL_GRPC_ADDR", default_value = "127.0.0.1:9443")]
    pub grpc_addr: SocketAddr,
    /// A DNS name or address agents use to reach the hub, put in its serving certificate besides
    /// `localhost` and the listen address (repeat, or separate with commas).
    #[arg(long = "grpc-host", env = "ATOLL_GRPC_HOSTS", value_delimiter = ',')]
    pub grpc_hosts: Vec<String>,
    /// The most agent connections open at once; more are closed as they come (each agent holds
    /// one, so keep it above the number of clusters and below the process's file limit).
    #[arg(long, env = "ATOLL_GRPC_MAX_CONNECTIONS", default_value_t = crate::GRPC_MAX_CONNECTIONS as u32, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub grpc_max_connections: u32,
    /// How long a cluster credential works, in hours (agents renew theirs with a third left;
    /// `atoll cluster remove` revokes one at once).
    #[arg(long, env = "ATOLL_CREDENTIAL_LIFETIME_HOURS", default_value_t = 720, value_parser = clap::value_parser!(u64).range(1..=87_600))]
    pub credential_lifetime_hours: u64,
    /// Accept every cluster that joins with a valid bootstrap token, without `atoll cluster accept`.
    #[arg(long, env = "ATOLL_AUTO_ACCEPT")]
    pub auto_accept: bool,
    /// How often agents send heartbeats, in seconds.
    #[arg(long, env = "ATOLL_LEASE_SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub lease_seconds: u64,
    /// How many leases may pass without a heartbeat before a cluster shows Unknown.
    #[arg(long, env = "ATOLL_MISSED_LEASES", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub missed_leases: u32,
    /// How long a deleted Work waits for its Unknown cluster to clean up before it goes anyway,
    /// in seconds.
    #[arg(long, env = "ATOLL_LOST_CLUSTER_GRACE_SECONDS", default_value_t = 300)]
    pub lost_cluster_grace_seconds: u64,
    /// Where hosted control planes (Embedded and Process HostedClusters) keep their data; a
    /// persistent volume under hub-controller [default: DATA_DIR/hosted for atoll up; none for
    /// hub-controller, which then runs no hosted control planes].
    #[arg(long, env = "ATOLL_HOSTED_DATA_DIR", value_name = "DIR")]
    pub hosted_data_dir: Option<PathBuf>,
    /// The DNS name or address users reach hosted clusters' API servers at, named in their
    /// kubeconfigs and serving certificates [default: the host of the API address for atoll up,
    /// 127.0.0.1 for hub-controller].
    #[arg(long, env = "ATOLL_HOSTED_HOST", value_name = "HOST")]
    pub hosted_host: Option<String>,
    /// The address hosted clusters' API servers listen on [default: that of the API address
    /// for atoll up, 127.0.0.1 for hub-controller].
    #[arg(long, env = "ATOLL_HOSTED_LISTEN", value_name = "IP")]
    pub hosted_listen: Option<IpAddr>,
    /// The atoll binary that Process-mode hosted clusters run as `atoll apiserver` [default:
    /// atoll up runs itself; hub-controller runs `atoll` beside its own binary].
    #[arg(long, env = "ATOLL_APISERVER_BINARY", value_name = "FILE")]
    pub apiserver_binary: Option<PathBuf>,
    /// How `mode: Kubernetes` hosted clusters are rendered (boxed: the flags of `atoll up`
    /// stay small).
    #[command(flatten)]
    pub hosted_kubernetes: Box<HostedKubernetesFlags>,
    /// The etcd of hosted clusters with `storage.backend: etcd` (boxed: the flags of `atoll up`
    /// stay small).
    #[command(flatten)]
    pub hosted_etcd: Box<HostedEtcdFlags>,
    /// Address of the health and metrics endpoint (`/livez`, `/readyz`, `/metrics`; plain
    /// HTTP, off the API and gRPC ports).
    #[arg(long, env = "ATOLL_METRICS_ADDR", value_name = "HOST:PORT", default_value = "127.0.0.1:8081", value_parser = metrics_addr)]
    pub metrics_addr: SocketAddr,
}

/// How `mode: Kubernetes` hosted clusters are rendered as workloads of the hub cluster.
#[derive(clap::Args, Debug, Clone)]
pub struct HostedKubernetesFlags {
    /// Render `mode: Kubernetes` hosted clusters as workloads of the hub cluster (etcd,
    /// kube-apiserver, controller manager, scheduler, agent) [default: true for hub-controller;
    /// false for atoll up, whose API server runs no pods].
    #[arg(long, env = "ATOLL_HOSTED_KUBERNETES", action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    pub hosted_kubernetes: Option<bool>,
    /// The registry `mode: Kubernetes` control planes' images come from (`etcd`,
    /// `kube-apiserver`, `kube-controller-manager`, `kube-scheduler`; a HostedCluster's
    /// `spec.images` overrides each).
    #[arg(long, env = "ATOLL_HOSTED_IMAGE_REGISTRY", value_name = "REGISTRY", default_value = crate::hosted::kubernetes::render::DEFAULT_REGISTRY)]
    pub hosted_image_registry: String,
    /// The image of the agents `mode: Kubernetes` hosted clusters run [default: the one in
    /// manifests/agent].
    #[arg(long, env = "ATOLL_HOSTED_AGENT_IMAGE", value_name = "IMAGE")]
    pub hosted_agent_image: Option<String>,
    /// How the hub reaches `mode: Kubernetes` hosted API servers to write what `kubeadm join`
    /// needs: `service` (their Service in the hub cluster, for hub-controller running inside
    /// it) or `endpoint` (their published NodePort or LoadBalancer address, for hub-controller
    /// running outside it).
    #[arg(long, env = "ATOLL_HOSTED_API_ACCESS", value_enum, default_value_t = crate::hosted::kubernetes::ApiAccess::Service, value_name = "HOW")]
    pub hosted_api_access: crate::hosted::kubernetes::ApiAccess,
}

/// Where hosted clusters with `storage.backend: etcd` keep their data.
#[derive(clap::Args, Debug, Clone)]
pub struct HostedEtcdFlags {
    /// etcd client URLs where hosted clusters with `storage.backend: etcd` keep their data, each
    /// under a prefix of its own (repeat, or separate with commas) [default: the hub's own
    /// --etcd-endpoints for atoll up --storage etcd; none for hub-controller, which then runs no
    /// etcd-backed hosted clusters].
    #[arg(long, env = "ATOLL_HOSTED_ETCD_ENDPOINTS", value_name = "URL", value_delimiter = ',', value_parser = etcd_endpoint)]
    pub hosted_etcd_endpoints: Vec<String>,
    /// The etcd key prefix hosted clusters' prefixes go under, as
    /// `PREFIX/<namespace>/<name>/<uid>`; it must not nest with another API server's prefix on
    /// the same etcd [default: /atoll-hosted; for atoll up --storage etcd, its --etcd-prefix
    /// followed by `-hosted`].
    #[arg(long, env = "ATOLL_HOSTED_ETCD_PREFIX", value_name = "PREFIX", value_parser = hosted_etcd_prefix)]
    pub hosted_etcd_prefix: Option<String>,
    /// The CA of the hosted etcd's serving certificates (PEM), for https://
    /// --hosted-etcd-endpoints.
    #[arg(long, env = "ATOLL_HOSTED_ETCD_CAFILE", value_name = "FILE")]
    pub hosted_etcd_cafile: Option<PathBuf>,
    /// A client certificate (PEM) for a hosted etcd that authenticates its clients (with
    /// --hosted-etcd-keyfile).
    #[arg(
        long,
        env = "ATOLL_HOSTED_ETCD_CERTFILE",
        value_name = "FILE",
        requires = "hosted_etcd_keyfile"
    )]
    pub hosted_etcd_certfile: Option<PathBuf>,
    /// The key of --hosted-etcd-certfile (PEM).
    #[arg(
        long,
        env = "ATOLL_HOSTED_ETCD_KEYFILE",
        value_name = "FILE",
        requires = "hosted_etcd_certfile"
    )]
    pub hosted_etcd_keyfile: Option<PathBuf>,
}

/// How hub replicas elect the one that leads: `hub-controller`'s replicas, and `atoll up`'s
/// replicas on one etcd (`--storage etcd`; on SQLite `atoll up` is one process, which simply
/// leads).
#[derive(clap::Args, Debug, Clone)]
pub struct Election {
    /// Elect a leader among hub replicas with the Lease atoll-system/atoll-hub: only the
    /// leader reconciles and serves agents; the others wait, not ready, answering agents
    /// UNAVAILABLE (`atoll up`'s replicas serve the API all the same). Turn it off only when
    /// exactly one replica can ever run. `atoll up` elects only with --storage etcd.
    #[arg(long, env = "ATOLL_LEADER_ELECT", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    pub leader_elect: bool,
    /// How long a leader's Lease lasts after its last renewal: how long the other replicas wait
    /// for a leader that vanished before one of them takes over (e.g. 15s, 1m).
    #[arg(long, env = "ATOLL_LEADER_LEASE_DURATION", default_value = "15s", value_parser = duration, value_name = "DURATION")]
    pub leader_lease_duration: Duration,
    /// How long a leader keeps trying to renew its Lease before it gives up leading (and
    /// exits); shorter than the lease duration.
    #[arg(long, env = "ATOLL_LEADER_RENEW_DEADLINE", default_value = "10s", value_parser = duration, value_name = "DURATION")]
    pub leader_renew_deadline: Duration,
    /// How often the leader renews its Lease and the others try to take it; shorter than the
    /// renew deadline.
    #[arg(long, env = "ATOLL_LEADER_RETRY_PERIOD", default_value = "2s", value_parser = duration, value_name = "DURATION")]
    pub leader_retry_period: Duration,
}

impl Election {
    /// The election's timing, checked (each above zero, retry < renew deadline < lease).
    pub fn timing(&self) -> Result<crate::leader::Timing, crate::leader::TimingError> {
        crate::leader::Timing::new(
            self.leader_lease_duration,
            self.leader_renew_deadline,
            self.leader_retry_period,
        )
    }
}

/// Parses a duration flag (`15s`, `1m30s`): one that does not parse is an error, never a
/// default.
pub fn duration(text: &str) -> Result<Duration, String> {
    atoll_api::placement::parse_duration(text)
}

/// Parses one of `--hosted-etcd-endpoints`.
pub fn etcd_endpoint(text: &str) -> Result<String, String> {
    atoll_apiserver::storage::etcd::check_endpoint(text)
        .map(|()| text.to_owned())
        .map_err(|e| e.to_string())
}

/// Parses `--hosted-etcd-prefix`.
pub fn hosted_etcd_prefix(text: &str) -> Result<String, String> {
    crate::hosted::datastore::check_hosted_prefix(text).map(|()| text.to_owned())
}

/// Parses `--metrics-addr`.
pub fn metrics_addr(text: &str) -> Result<SocketAddr, String> {
    atoll_runtime::endpoint::parse_addr(text).map_err(|e| e.to_string())
}

impl Flags {
    /// The hub's configuration.
    pub fn config(&self) -> Config {
        let mut config = Config::new(self.grpc_addr);
        config.grpc_hosts = self.grpc_hosts.clone();
        config.auto_accept = self.auto_accept;
        config.grpc_max_connections = self.grpc_max_connections as usize;
        config.credential_lifetime = Duration::from_secs(self.credential_lifetime_hours * 3600);
        config.leases = Leases {
            lease: Duration::from_secs(self.lease_seconds),
            missed: self.missed_leases,
        };
        config.lost_cluster_grace = Duration::from_secs(self.lost_cluster_grace_seconds);
        let hosted = &mut config.hosted;
        hosted.data_dir = self.hosted_data_dir.clone();
        if let Some(ip) = self.hosted_listen {
            hosted.listen_ip = ip;
            hosted.host = ip.to_string();
        }
        if let Some(host) = &self.hosted_host {
            hosted.host = host.clone();
        }
        hosted.binary = self.apiserver_binary.clone().or_else(beside_this_binary);
        hosted.etcd = self.hosted_etcd().map(Box::new);
        let k = &self.hosted_kubernetes;
        hosted.kubernetes.enabled = k.hosted_kubernetes.unwrap_or(true);
        hosted.kubernetes.registry = k.hosted_image_registry.trim_end_matches('/').to_owned();
        if let Some(image) = &k.hosted_agent_image {
            hosted.kubernetes.agent_image = image.clone();
        }
        hosted.kubernetes.api_access = k.hosted_api_access;
        config
    }

    /// The etcd of etcd-backed hosted clusters the flags give, if any.
    pub fn hosted_etcd(&self) -> Option<HostedEtcd> {
        self.hosted_etcd.settings()
    }
}

impl HostedEtcdFlags {
    /// The etcd of etcd-backed hosted clusters these flags give, if any.
    pub fn settings(&self) -> Option<HostedEtcd> {
        if self.hosted_etcd_endpoints.is_empty() {
            return None;
        }
        let prefix = self
            .hosted_etcd_prefix
            .clone()
            .unwrap_or_else(|| DEFAULT_PREFIX.to_owned());
        let mut etcd = HostedEtcd::new(self.hosted_etcd_endpoints.clone(), prefix);
        etcd.ca_file = self.hosted_etcd_cafile.clone();
        etcd.cert_file = self.hosted_etcd_certfile.clone();
        etcd.key_file = self.hosted_etcd_keyfile.clone();
        Some(etcd)
    }
}

/// `atoll` in the folder of the running binary, if it is there.
fn beside_this_binary() -> Option<PathBuf> {
    let path = std::env::current_exe().ok()?.parent()?.join("atoll");
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser, Debug)]
    struct Args {
        #[command(flatten)]
        election: Election,
    }

    #[derive(clap::Parser, Debug)]
    struct HubArgs {
        #[command(flatten)]
        hub: Flags,
    }

    #[test]
    fn the_hosted_etcd_comes_from_its_flags() {
        let none = HubArgs::try_parse_from(["hub"]).unwrap();
        assert_eq!(none.hub.config().hosted.etcd, None);
        let args = HubArgs::try_parse_from([
            "hub",
            "--hosted-etcd-endpoints=https://e1:2379,https://e2:2379",
            "--hosted-etcd-cafile=ca.pem",
            "--hosted-etcd-certfile=hub.pem",
            "--hosted-etcd-keyfile=hub-key.pem",
        ])
        .unwrap();
        let etcd = args.hub.config().hosted.etcd.unwrap();
        assert_eq!(etcd.endpoints, ["https://e1:2379", "https://e2:2379"]);
        assert_eq!(etcd.prefix, DEFAULT_PREFIX);
        assert_eq!(etcd.ca_file, Some(PathBuf::from("ca.pem")));
        assert_eq!(etcd.key_file, Some(PathBuf::from("hub-key.pem")));
        let prefixed = HubArgs::try_parse_from([
            "hub",
            "--hosted-etcd-endpoints=http://e1:2379",
            "--hosted-etcd-prefix=/fleet/hosted",
        ])
        .unwrap();
        assert_eq!(
            prefixed.hub.config().hosted.etcd.unwrap().prefix,
            "/fleet/hosted"
        );
    }

    #[test]
    fn bad_hosted_etcd_flags_are_refused_naming_the_flag() {
        for (flag, value, why) in [
            (
                "--hosted-etcd-prefix",
                "atoll-hosted",
                "must start with '/'",
            ),
            ("--hosted-etcd-prefix", "/atoll-hosted/", "not end with '/'"),
            ("--hosted-etcd-prefix", "/registry", "kube-apiserver"),
            ("--hosted-etcd-prefix", "/registry/hosted", "kube-apiserver"),
            (
                "--hosted-etcd-endpoints",
                "e1:2379",
                "not an http:// or https:// URL",
            ),
        ] {
            let error = HubArgs::try_parse_from(["hub", &format!("{flag}={value}")])
                .expect_err(&format!("{flag}={value} refused"))
                .to_string();
            assert!(
                error.contains(&format!("invalid value '{value}' for '{flag} ")),
                "{error}"
            );
            assert!(error.contains(why), "{error}");
        }
        let long = format!("/{}", "p".repeat(200));
        let error = HubArgs::try_parse_from(["hub", "--hosted-etcd-prefix", &long])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--hosted-etcd-prefix") && error.contains("at most"),
            "{error}"
        );
        let error = HubArgs::try_parse_from(["hub", "--hosted-etcd-certfile=c.pem"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("--hosted-etcd-keyfile"), "{error}");
    }

    #[test]
    fn election_defaults_are_client_gos() {
        let args = Args::try_parse_from(["hub"]).unwrap();
        assert!(args.election.leader_elect);
        assert_eq!(
            args.election.timing().unwrap(),
            crate::leader::Timing::default()
        );
        let off = Args::try_parse_from(["hub", "--leader-elect=false"]).unwrap();
        assert!(!off.election.leader_elect);
        let on = Args::try_parse_from(["hub", "--leader-elect"]).unwrap();
        assert!(on.election.leader_elect);
    }

    #[test]
    fn durations_that_do_not_parse_are_refused_naming_the_flag() {
        for (flag, value) in [
            ("--leader-lease-duration", "15"),
            ("--leader-lease-duration", "fifteen"),
            ("--leader-renew-deadline", "10x"),
            ("--leader-retry-period", ""),
            ("--leader-retry-period", "-2s"),
            ("--leader-retry-period", "1.5s"),
        ] {
            let error = Args::try_parse_from(["hub", &format!("{flag}={value}")])
                .expect_err(&format!("{flag}={value} refused"))
                .to_string();
            assert!(
                error.contains(&format!("invalid value '{value}' for '{flag} <DURATION>'")),
                "{error}"
            );
            assert!(error.contains("a duration is whole hours"), "{error}");
        }
        let error = Args::try_parse_from(["hub", "--leader-elect=maybe"]).unwrap_err();
        assert!(
            error.to_string().contains("invalid value 'maybe'"),
            "{error}"
        );
    }

    #[test]
    fn a_renew_deadline_not_shorter_than_the_lease_is_refused() {
        let args = Args::try_parse_from([
            "hub",
            "--leader-lease-duration=10s",
            "--leader-renew-deadline=10s",
        ])
        .unwrap();
        let error = args.election.timing().unwrap_err().to_string();
        assert!(
            error.contains(
                "--leader-renew-deadline (10s) must be shorter than --leader-lease-duration (10s)"
            ),
            "{error}"
        );
        let zero = Args::try_parse_from(["hub", "--leader-retry-period=0s"]).unwrap();
        assert_eq!(
            zero.election.timing().unwrap_err().to_string(),
            "--leader-retry-period must be more than zero"
        );
    }
}
