//! `hub-controller`: the hub on a Kubernetes cluster (production). Flags only; the work is in the
//! library. It talks to the cluster it runs in (in-cluster, or `KUBECONFIG` outside one).
//!
//! With leader election (the default), a replica that does not lead holds its gRPC address,
//! answering agents UNAVAILABLE, and is not ready; once it takes the Lease it loads the fleet from
//! the API server and serves. A leader that loses the Lease exits at once with code 1 (as
//! client-go's default OnStoppedLeading): its view may be stale and another replica may already
//! act, so it stops every controller and agent stream in one step rather than unwinding them, and
//! its Deployment restarts it as a replica that waits to lead.

use std::time::Instant;

use anyhow::Context as _;
use atoll_hub::leader::{self, Elector, Lost};
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

/// The exit code of a leader that lost its Lease.
const EXIT_LOST_LEADERSHIP: i32 = 1;

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
    let timing = args.election.timing()?;
    let client = kube::Client::try_default()
        .await
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
        atoll_runtime::signal().await;
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
    let mut elector = Elector::new(client.clone(), leader::identity(), timing);
    let identity = elector.identity().to_owned();
    tracing::info!(%identity, grpc = %format!("https://{}", standby.grpc_addr()), metrics = %format!("http://{metrics_addr}/metrics"), lease_duration = ?timing.lease_duration, "hub-controller running; waiting to lead");
    let waiting = Instant::now();
    tokio::select! {
        () = elector.acquire() => {}
        () = atoll_runtime::signal() => {
            tracing::info!("stopping before leading");
            standby.stop().await;
            let _ = stop_endpoint.send(true);
            return Ok(());
        }
    }
    metrics.leading(true);
    not_leading.done();
    tracing::info!(%identity, waited_ms = waiting.elapsed().as_millis() as u64, "leading: this replica reconciles and serves agents");

    // The Lease is renewed from now on, while the hub loads too; a release asked for ends it.
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let mut holding = tokio::spawn(async move {
        tokio::select! {
            lost = elector.hold() => Some(lost),
            _ = released => {
                match elector.release().await {
                    Ok(()) => tracing::info!(identity = %elector.identity(), "released the leader Lease"),
                    Err(error) => tracing::warn!(error = %atoll_apiserver::error::chain(&error), "cannot release the leader Lease; another replica takes over when it runs out"),
                }
                None
            }
        }
    });
    let hub = tokio::select! {
        hub = standby.lead(client, config) => hub.with_context(cannot_start)?,
        lost = &mut holding => stop_leading(&identity, lost.ok().flatten()),
    };
    tracing::info!(grpc = %format!("https://{}", hub.grpc_addr()), "hub is serving as the leader");
    tokio::select! {
        lost = &mut holding => stop_leading(&identity, lost.ok().flatten()),
        () = atoll_runtime::signal() => {}
    }
    tracing::info!("stopping; a second signal stops at once");
    atoll_runtime::exit_on_second_signal();
    let _stopping = readiness.pending("the hub is stopping");
    hub.shutdown().await;
    metrics.leading(false);
    let _ = release.send(());
    let _ = tokio::time::timeout(timing.renew_deadline, holding).await;
    let _ = stop_endpoint.send(true);
    Ok(())
}

/// A leader that lost its Lease stops at once: see the header.
fn stop_leading(identity: &str, lost: Option<Lost>) -> ! {
    let reason = lost.map_or_else(
        || "the task renewing the Lease ended".to_owned(),
        |l| l.to_string(),
    );
    tracing::error!(%identity, %reason, code = EXIT_LOST_LEADERSHIP, "lost leadership: exiting at once so that no two replicas act; restarted, this process waits to lead again");
    std::process::exit(EXIT_LOST_LEADERSHIP)
}
