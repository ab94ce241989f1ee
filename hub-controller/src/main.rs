//! `hub-controller`: the hub on a Kubernetes cluster (production). Flags only; the work is in the
//! library. It talks to the cluster it runs in (in-cluster, or `KUBECONFIG` outside one).

use anyhow::Context as _;
use clap::Parser;

/// Runs the atoll hub's controllers and its gRPC server for agents against a Kubernetes API.
#[derive(Parser)]
#[command(name = "hub-controller", version)]
struct Args {
    #[command(flatten)]
    hub: atoll_hub::flags::Flags,
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
    let client = kube::Client::try_default()
        .await
        .context("cannot find the hub cluster's API server (in-cluster or KUBECONFIG)")?;
    let mut config = args.hub.config();
    let mut registry = atoll_runtime::prometheus_client::registry::Registry::default();
    config.metrics = atoll_hub::metrics::Metrics::register(&mut registry);
    let readiness = atoll_runtime::endpoint::Readiness::default();
    config.ready = Some(readiness.pending("the hub is loading and syncing its caches"));
    let (stop_endpoint, endpoint_stopped) = tokio::sync::watch::channel(false);
    let endpoint = atoll_runtime::endpoint::Endpoint::new(registry, readiness.clone());
    let metrics_addr = args.hub.metrics_addr;
    let metrics_addr = atoll_runtime::endpoint::start(metrics_addr, endpoint, endpoint_stopped)
        .await
        .with_context(|| format!("cannot serve --metrics-addr {metrics_addr}"))?;
    let grpc_addr = config.grpc_addr;
    let hub = atoll_hub::Hub::start(client, config)
        .await
        .with_context(|| format!("cannot start the hub (gRPC on {grpc_addr})"))?;
    tracing::info!(grpc = %format!("https://{}", hub.grpc_addr()), metrics = %format!("http://{metrics_addr}/metrics"), "hub-controller running");
    atoll_runtime::signal().await;
    tracing::info!("stopping; a second signal stops at once");
    atoll_runtime::exit_on_second_signal();
    let _stopping = readiness.pending("the hub is stopping");
    hub.shutdown().await;
    let _ = stop_endpoint.send(true);
    Ok(())
}
