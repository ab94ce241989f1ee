//! How every atoll binary (`atoll up`, `atoll apiserver`, `hub-controller`, `work-agent`) stops,
//! and how the hub stops its tasks:
//!
//! - the first SIGTERM or Ctrl-C starts a graceful stop ([`signal`], or [`Stop`] when a signal
//!   during a slow start must not be lost); from then on a second one
//!   exits at once with code 130 ([`exit_on_second_signal`]), so a stuck stop never needs a
//!   SIGKILL;
//! - a [`Tasks`] set names its tasks and stops them all within one deadline, saying which did
//!   not finish in time before it aborts them.
//!
//! How their controllers back off from an object whose reconcile fails: [`backoff`].
//!
//! And what every binary serves beside its own ports: [`endpoint`], the `/livez`, `/readyz` and
//! Prometheus `/metrics` endpoint, with the readiness conditions it reports.

pub mod backoff;
pub mod endpoint;
pub mod process;

/// The metrics library every crate registers its metrics with (the same version for all).
pub use prometheus_client;

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;

/// The exit code after a second signal: 128 + SIGINT, as shells report an interrupted program.
pub const EXIT_SECOND_SIGNAL: i32 = 130;

/// Waits for SIGTERM or SIGINT (Ctrl-C).
pub async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// A stop asked for with SIGTERM or Ctrl-C, listened for from the moment it is made: a signal
/// that arrives while the binary is still starting (before it would wait on [`signal`]) is kept,
/// not lost, and does not kill the process with the signal's default action.
#[derive(Clone)]
pub struct Stop(tokio::sync::watch::Receiver<bool>);

impl Stop {
    /// Starts listening (within a Tokio runtime).
    pub fn listen() -> Self {
        let (asked, stop) = tokio::sync::watch::channel(false);
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            // Registered here, not at a task's first poll, so that nothing slips in between.
            if let (Ok(mut term), Ok(mut interrupt)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) {
                tokio::spawn(async move {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                    let _ = asked.send(true);
                });
                return Stop(stop);
            }
        }
        tokio::spawn(async move {
            signal().await;
            let _ = asked.send(true);
        });
        Stop(stop)
    }

    /// Resolves once a stop was asked for (at once if it was already).
    pub async fn asked(&self) {
        let mut stop = self.0.clone();
        let _ = stop.wait_for(|asked| *asked).await;
    }
}

/// From now on, a SIGTERM or Ctrl-C exits the process at once with [`EXIT_SECOND_SIGNAL`]. Call
/// it once a graceful stop has begun.
pub fn exit_on_second_signal() {
    tokio::spawn(async {
        signal().await;
        tracing::warn!("second signal: stopping at once");
        std::process::exit(EXIT_SECOND_SIGNAL);
    });
}

/// Named tasks that stop together: each is told to stop by its own means (a watch channel, a
/// cancellation), and [`Tasks::join`] waits for all of them within one deadline.
#[derive(Default)]
pub struct Tasks {
    tasks: Vec<(&'static str, JoinHandle<()>)>,
}

impl Tasks {
    /// Runs `task` under `name`, the name a slow stop reports.
    pub fn spawn(&mut self, name: &'static str, task: impl Future<Output = ()> + Send + 'static) {
        self.tasks.push((name, tokio::spawn(task)));
    }

    /// The names of the tasks, in the order they were spawned.
    pub fn names(&self) -> Vec<&'static str> {
        self.tasks.iter().map(|(name, _)| *name).collect()
    }

    /// Waits until every task has ended, or `deadline` has passed: then the tasks still running
    /// are named in a warning and aborted. Returns the names of the tasks aborted.
    pub async fn join(self, deadline: Duration) -> Vec<&'static str> {
        let until = tokio::time::Instant::now() + deadline;
        let mut late = Vec::new();
        for (name, mut task) in self.tasks {
            if tokio::time::timeout_at(until, &mut task).await.is_err() {
                task.abort();
                late.push(name);
            }
        }
        if !late.is_empty() {
            tracing::warn!(tasks = ?late, ?deadline, "tasks did not stop in time; aborted them");
        }
        late
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn tasks_stop_within_one_deadline_and_the_late_are_named() {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut tasks = Tasks::default();
        for name in ["quick", "also-quick"] {
            let mut stopped = stopped.clone();
            tasks.spawn(name, async move {
                let _ = stopped.wait_for(|s| *s).await;
            });
        }
        tasks.spawn("stuck", std::future::pending());
        assert_eq!(tasks.names(), ["quick", "also-quick", "stuck"]);
        stop.send(true).unwrap();
        let started = tokio::time::Instant::now();
        let late = tasks.join(Duration::from_secs(5)).await;
        assert_eq!(late, ["stuck"]);
        // One deadline for all, not one per task.
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn tasks_that_stop_end_the_join_at_once() {
        let mut tasks = Tasks::default();
        tasks.spawn("done", async {});
        let started = tokio::time::Instant::now();
        assert!(tasks.join(Duration::from_secs(30)).await.is_empty());
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
