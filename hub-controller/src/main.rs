//! `hub-controller`: the hub on a Kubernetes cluster (production). Flags only; the work is in the
//! library. It talks to the cluster it runs in (in-cluster, or `KUBECONFIG` outside one).
//!
//! With leader election (the default), a replica that does not lead holds its gRPC address,
//! answering agents UNAVAILABLE, and is not ready; once it takes the Lease it loads the fleet from
//! the API server and serves ([`atoll_hub::replica`]). A leader that loses the Lease exits at once
//! with code 1, and its Deployment restarts it as a replica that waits to lead.

use anyhow::Context as _;
use atoll_hub::leader::{self, Elector};
use atoll_hub::replica;
use clap::Parser;

/// Runs the atoll hub's controllers and its gRPC server for agents against a Kubernetes API.
#[derive(Parser)]
#[command(name = "hub-controller", version)]
struct Args {
    #[command(flatten)]
    hub: atoll_hub::flags::Flags,
    #[command(flatten)]
    election: atoll_hub::flags::Election,
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
    let signals = atoll_runtime::Stop::listen();
    let timing = args.election.timing()?;
    let client = kube::Config::infer()
        .await
        .map_err(anyhow::Error::from)
        .and_then(|config| Ok(kube::Client::try_from(atoll_hub::identified(config))?))
        .context("cannot find the hub cluster's API server (in-cluster or KUBECONFIG)")?;
    let mut config = args.hub.config();
    let mut registry = atoll_runtime::prometheus_client::registry::Registry::default();
    let metrics = atoll_hub::metrics::Metrics::register(&mut registry);
    config.metrics = metrics.clone();
    let readiness = atoll_runtime::endpoint::Readiness::default();
    let not_leading = args.election.leader_elect.then(|| {
        readiness.pending(format!(
            "this replica is not leading (Lease {}/{})",
            atoll_api::names::SYSTEM_NAMESPACE,
            leader::LEASE_NAME
        ))
    });
    config.ready = Some(readiness.pending("the hub is loading and syncing its caches"));
    let (stop_endpoint, endpoint_stopped) = tokio::sync::watch::channel(false);
    let endpoint = atoll_runtime::endpoint::Endpoint::new(registry, readiness.clone());
    let metrics_addr = args.hub.metrics_addr;
    let metrics_addr = atoll_runtime::endpoint::start(metrics_addr, endpoint, endpoint_stopped)
        .await
        .with_context(|| format!("cannot serve --metrics-addr {metrics_addr}"))?;
    let grpc_addr = config.grpc_addr;
    let cannot_start = || format!("cannot start the hub (gRPC on {grpc_addr})");

    let Some(not_leading) = not_leading else {
        metrics.leading(true);
        let hub = atoll_hub::Hub::start(client, config)
            .await
            .with_context(cannot_start)?;
        tracing::info!(grpc = %format!("https://{}", hub.grpc_addr()), metrics = %format!("http://{metrics_addr}/metrics"), "hub-controller running, without leader election");
        signals.asked().await;
        tracing::info!("stopping; a second signal stops at once");
        atoll_runtime::exit_on_second_signal();
        let _stopping = readiness.pending("the hub is stopping");
        hub.shutdown().await;
        let _ = stop_endpoint.send(true);
        return Ok(());
    };

    metrics.leading(false);
    let standby = atoll_hub::Hub::standby(&client, &config)
        .await
        .with_context(cannot_start)?;
    let elector = Elector::new(client.clone(), leader::identity(), timing);
    tracing::info!(identity = %elector.identity(), grpc = %format!("https://{}", standby.grpc_addr()), metrics = %format!("http://{metrics_addr}/metrics"), lease_duration = ?timing.lease_duration, "hub-controller running; waiting to lead");
    let Some(mut leading) = replica::lead(standby, client, config, elector, signals.asked())
        .await
        .with_context(cannot_start)?
    else {
        let _ = stop_endpoint.send(true);
        return Ok(());
    };
    not_leading.done();
    leading.until(signals.asked()).await;
    tracing::info!("stopping; a second signal stops at once");
    atoll_runtime::exit_on_second_signal();
    let _stopping = readiness.pending("the hub is stopping");
    leading.shutdown().await;
    let _ = stop_endpoint.send(true);
    Ok(())
}
