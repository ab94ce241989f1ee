//! The hub's command-line flags, shared by `hub-controller` and `atoll up`.

use std::net::SocketAddr;
use std::time::Duration;

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
}

impl Flags {
    /// The hub's configuration.
    pub fn config(&self) -> Config {
        let mut config = Config::new(self.grpc_addr);
        config.grpc_hosts = self.grpc_hosts.clone();
        config.auto_accept = self.auto_accept;
        config.leases = Leases {
            lease: Duration::from_secs(self.lease_seconds),
            missed: self.missed_leases,
        };
        config.lost_cluster_grace = Duration::from_secs(self.lost_cluster_grace_seconds);
        config
    }
}
