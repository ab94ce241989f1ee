//! `atoll up` (the embedded hub) and `atoll apiserver` (a plain member API server): start in the
//! foreground, log one line when ready, stop gracefully on SIGTERM or SIGINT (a second signal
//! stops at once).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use atoll_apiserver::{Config, Server, StorageKind};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The hub: kubeconfig `hub.kubeconfig`.
    Hub,
    /// A plain API server: kubeconfig `admin.kubeconfig`.
    Member,
}

pub async fn run(
    mode: Mode,
    data_dir: PathBuf,
    api_addr: SocketAddr,
    storage: StorageKind,
) -> anyhow::Result<()> {
    let mut config = Config::new(&data_dir, api_addr);
    config.storage = storage;
    let what = match mode {
        Mode::Hub => {
            config.kubeconfig_name = "hub.kubeconfig".into();
            config.cluster_name = "atoll-hub".into();
            "atoll hub"
        }
        Mode::Member => {
            config.kubeconfig_name = "admin.kubeconfig".into();
            config.cluster_name = "atoll".into();
            "atoll API server"
        }
    };
    let server = Server::start(config)
        .await
        .with_context(|| format!("cannot start the {what} in {}", data_dir.display()))?;
    tracing::info!(
        url = %server.url(),
        kubeconfig = %server.kubeconfig_path().display(),
        "{what} is ready"
    );
    wait_for_signal().await;
    tracing::info!("stopping; a second signal stops at once");
    tokio::select! {
        _ = server.shutdown() => {}
        _ = wait_for_signal() => {
            tracing::warn!("second signal: stopping at once");
            std::process::exit(130);
        }
    }
    tracing::info!("{what} stopped");
    Ok(())
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
