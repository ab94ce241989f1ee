//! One hub replica among several, as `hub-controller` and `atoll up` on etcd run it: it waits,
//! not ready, answering agents UNAVAILABLE ([`Standby`]), until it takes the Lease
//! ([`leader::Elector`]); then it loads the fleet from the API server and serves, renewing the
//! Lease; at a stop it shuts the hub down and releases the Lease, so that another replica takes
//! over at its next try.
//!
//! A leader that loses the Lease exits the process at once with [`EXIT_LOST_LEADERSHIP`] (as
//! client-go's default OnStoppedLeading): its view may be stale and another replica may already
//! act, so it stops every controller and agent stream in one step rather than unwinding them, and
//! whatever supervises it starts it again as a replica that waits to lead.

use std::future::Future;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::leader::{Elector, Lost};
use crate::{Config, Error, Hub, Standby};

/// The exit code of a leader that lost its Lease.
pub const EXIT_LOST_LEADERSHIP: i32 = 1;

/// A replica that leads: its hub serving, its Lease renewed in the background.
pub struct Leading {
    hub: Hub,
    identity: String,
    metrics: std::sync::Arc<crate::metrics::Metrics>,
    /// Renews the Lease; ends with why leadership was lost, or `None` once released.
    holding: JoinHandle<Option<Lost>>,
    /// Asks `holding` to release the Lease.
    release: oneshot::Sender<()>,
    renew_deadline: Duration,
}

/// Waits until `elector` holds the Lease, then starts the hub on `standby`'s socket. Returns
/// `None` when `stop` resolves first (the standby stopped). The Lease is renewed from the moment
/// it is taken, while the hub loads too.
pub async fn lead(
    standby: Standby,
    client: kube::Client,
    config: Config,
    mut elector: Elector,
    stop: impl Future<Output = ()>,
) -> Result<Option<Leading>, Error> {
    let identity = elector.identity().to_owned();
    let metrics = config.metrics.clone();
    let renew_deadline = elector.timing().renew_deadline;
    let waiting = Instant::now();
    tokio::select! {
        () = elector.acquire() => {}
        () = stop => {
            tracing::info!(%identity, "stopping before leading");
            standby.stop().await;
            return Ok(None);
        }
    }
    metrics.leading(true);
    tracing::info!(%identity, waited_ms = waiting.elapsed().as_millis() as u64, "leading: this replica reconciles and serves agents");
    let (release, released) = oneshot::channel::<()>();
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
        hub = standby.lead(client, config) => hub?,
        lost = &mut holding => stop_leading(&identity, lost.ok().flatten()),
    };
    tracing::info!(grpc = %format!("https://{}", hub.grpc_addr()), "hub is serving as the leader");
    Ok(Some(Leading {
        hub,
        identity,
        metrics,
        holding,
        release,
        renew_deadline,
    }))
}

impl Leading {
    /// The hub this replica runs.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Serves until `stop` resolves, and answers what it resolved to; a lost Lease exits the
    /// process (see the module's header).
    pub async fn until<T>(&mut self, stop: impl Future<Output = T>) -> T {
        tokio::select! {
            lost = &mut self.holding => stop_leading(&self.identity, lost.ok().flatten()),
            stopped = stop => stopped,
        }
    }

    /// Stops the hub, then releases the Lease (waiting at most the renew deadline for it).
    pub async fn shutdown(self) {
        self.hub.shutdown().await;
        self.metrics.leading(false);
        let _ = self.release.send(());
        let _ = tokio::time::timeout(self.renew_deadline, self.holding).await;
    }
}

/// A leader that lost its Lease stops at once: see the module's header.
fn stop_leading(identity: &str, lost: Option<Lost>) -> ! {
    let reason = lost.map_or_else(
        || "the task renewing the Lease ended".to_owned(),
        |l| l.to_string(),
    );
    tracing::error!(%identity, %reason, code = EXIT_LOST_LEADERSHIP, "lost leadership: exiting at once so that no two replicas act; restarted, this process waits to lead again");
    std::process::exit(EXIT_LOST_LEADERSHIP)
}
