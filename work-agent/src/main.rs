//! `work-agent`: the agent of one member cluster. Flags only; the work is in the library.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;

/// Joins this cluster to an atoll hub and keeps it reported there.
#[derive(Parser)]
#[command(name = "work-agent", version)]
struct Args {
    /// The hub's gRPC address; several (one hub's replicas) separated by commas, tried in turn
    /// when one cannot be reached or does not lead.
    #[arg(long, env = "ATOLL_HUB", value_name = "https://HOST:PORT[,...]")]
    hub: String,
    /// The hub's CA certificate (PEM), e.g. `.atoll/hub-ca.crt`.
    #[arg(long, env = "ATOLL_HUB_CA", value_name = "FILE")]
    hub_ca: PathBuf,
    /// A file holding a bootstrap token (`atoll token create`); read only for a first join.
    #[arg(long, env = "ATOLL_BOOTSTRAP_TOKEN_FILE", value_name = "FILE")]
    bootstrap_token_file: PathBuf,
    /// The cluster's name on the hub (a DNS label).
    #[arg(long, env = "ATOLL_CLUSTER_NAME", value_name = "NAME")]
    cluster_name: String,
    /// The kubeconfig of this cluster's API server; default: in-cluster or `KUBECONFIG`.
    #[arg(long, env = "ATOLL_KUBECONFIG", value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// A file holding the join secret the hub arranged for this cluster (the agents of hosted
    /// clusters, whose records the hub makes already accepted); without it the agent makes its
    /// own.
    #[arg(long, env = "ATOLL_JOIN_SECRET_FILE", value_name = "FILE")]
    join_secret_file: Option<PathBuf>,
    /// A ClusterSet to join with.
    #[arg(long, env = "ATOLL_CLUSTERSET", value_name = "SET")]
    clusterset: Option<String>,
    /// How often every Work is applied again, correcting drift, in seconds.
    #[arg(long, env = "ATOLL_RESYNC_SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86400))]
    resync_seconds: u64,
    /// Namespaces Works may not touch (comma-separated; an empty value allows every one).
    #[arg(
        long,
        env = "ATOLL_DENY_NAMESPACES",
        value_delimiter = ',',
        default_value = "kube-system,kube-public,atoll-system"
    )]
    deny_namespaces: Vec<String>,
    /// Kinds Works may not touch, as `Kind` (core group) or `Kind.group`, comma-separated, e.g.
    /// `Secret,ClusterRoleBinding.rbac.authorization.k8s.io`.
    #[arg(long, env = "ATOLL_DENY_KINDS", value_delimiter = ',')]
    deny_kinds: Vec<String>,
    /// Address of the health and metrics endpoint (`/livez`, `/readyz`, `/metrics`; plain
    /// HTTP).
    #[arg(long, env = "ATOLL_METRICS_ADDR", value_name = "HOST:PORT", default_value = "127.0.0.1:8082", value_parser = metrics_addr)]
    metrics_addr: std::net::SocketAddr,
    /// Log output format (filter with `ATOLL_LOG`).
    #[arg(long, env = "ATOLL_LOG_FORMAT", default_value = "plain", value_parser = ["plain", "json"])]
    log_format: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_env("ATOLL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if args.log_format == "json" {
        logs.json().init();
    } else {
        logs.init();
    }
    let mut registry = atoll_runtime::prometheus_client::registry::Registry::default();
    let readiness = atoll_runtime::endpoint::Readiness::default();
    let read = |path: &PathBuf, what: &str| {
        std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the {what} {}", path.display()))
    };
    let config = atoll_agent::Config {
        hub: args.hub,
        hub_ca_pem: read(&args.hub_ca, "hub CA")?,
        bootstrap_token: read(&args.bootstrap_token_file, "bootstrap token file")?
            .trim()
            .to_owned(),
        cluster_name: args.cluster_name,
        cluster_set: args.clusterset,
        resync: std::time::Duration::from_secs(args.resync_seconds),
        join_secret: match &args.join_secret_file {
            Some(path) => Some(read(path, "join secret file")?.trim().to_owned()),
            None => None,
        },
        deny: atoll_agent::deny::Deny::parse(&args.deny_namespaces, &args.deny_kinds)
            .map_err(anyhow::Error::msg)?,
        metrics: atoll_agent::metrics::Metrics::register(&mut registry),
        ready: Some(readiness.pending("the agent has not joined the hub and synced yet")),
    };
    let (stop_endpoint, endpoint_stopped) = tokio::sync::watch::channel(false);
    let endpoint = atoll_runtime::endpoint::Endpoint::new(registry, readiness.clone());
    let metrics_addr = args.metrics_addr;
    atoll_runtime::endpoint::start(metrics_addr, endpoint, endpoint_stopped)
        .await
        .with_context(|| format!("cannot serve --metrics-addr {metrics_addr}"))?;
    let member = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
            let options = kube::config::KubeConfigOptions::default();
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .with_context(|| format!("cannot use the kubeconfig {}", path.display()))?;
            kube::Client::try_from(config).context("cannot build a client for this cluster")?
        }
        None => kube::Client::try_default()
            .await
            .context("cannot find this cluster's API server")?,
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        atoll_runtime::signal().await;
        readiness.pending("the agent is stopping");
        tracing::info!("stopping; a second signal stops at once");
        atoll_runtime::exit_on_second_signal();
        let _ = stop.send(true);
    });
    atoll_agent::run(config, member, stopped).await?;
    let _ = stop_endpoint.send(true);
    Ok(())
}

/// Parses `--metrics-addr`.
fn metrics_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    atoll_runtime::endpoint::parse_addr(text).map_err(|e| e.to_string())
}
