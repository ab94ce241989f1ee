//! `atoll up` (the embedded hub) and `atoll apiserver` (a plain member API server): start in the
//! foreground, log one line when ready, stop gracefully on SIGTERM or SIGINT (a second signal
//! stops at once).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use atoll_apiserver::{Config, Server, StorageKind};

pub enum Mode {
    /// The hub: kubeconfig `hub.kubeconfig`, the hub controllers and the gRPC server.
    Hub(atoll_hub::Config),
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
    let what = match &mode {
        Mode::Hub(_) => {
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
    let hub = match mode {
        Mode::Hub(config) => Some(start_hub(&server, &data_dir, config).await?),
        Mode::Member => None,
    };
    tracing::info!(
        url = %server.url(),
        kubeconfig = %server.kubeconfig_path().display(),
        grpc = ?hub.as_ref().map(|h| format!("https://{}", h.grpc_addr())),
        "{what} is ready"
    );
    wait_for_signal().await;
    tracing::info!("stopping; a second signal stops at once");
    let stop = async {
        if let Some(hub) = hub {
            hub.shutdown().await;
        }
        server.shutdown().await;
    };
    tokio::select! {
        _ = stop => {}
        _ = wait_for_signal() => {
            tracing::warn!("second signal: stopping at once");
            std::process::exit(130);
        }
    }
    tracing::info!("{what} stopped");
    Ok(())
}

/// Starts the hub controllers and gRPC server against the embedded API server, and writes what
/// local agents need: `hub-ca.crt` and `bootstrap-token` in the data directory.
async fn start_hub(
    server: &Server,
    data_dir: &Path,
    config: atoll_hub::Config,
) -> anyhow::Result<atoll_hub::Hub> {
    let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig_path())?;
    let client_config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    let client = kube::Client::try_from(client_config)?;
    let grpc_addr = config.grpc_addr;
    let hub = atoll_hub::Hub::start(client.clone(), config)
        .await
        .with_context(|| format!("cannot start the hub (gRPC on {grpc_addr})"))?;
    let ca_path = data_dir.join("hub-ca.crt");
    std::fs::write(&ca_path, hub.ca_pem())
        .with_context(|| format!("cannot write {}", ca_path.display()))?;
    let token_path = data_dir.join("bootstrap-token");
    let existing = std::fs::read_to_string(&token_path).ok();
    let still_valid = match existing.as_deref().map(atoll_hub::bootstrap::Token::parse) {
        Some(Ok(token)) => {
            let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
                kube::Api::namespaced(client.clone(), atoll_api::SYSTEM_NAMESPACE);
            let stored = secrets
                .get_opt(&atoll_hub::bootstrap::secret_name(token.id()))
                .await?;
            token
                .verify(stored.as_ref(), jiff::Timestamp::now())
                .is_ok()
        }
        _ => false,
    };
    if !still_valid {
        let (token, _) =
            atoll_hub::bootstrap::create(client, None, "local agents (written by atoll up)")
                .await?;
        atoll_apiserver::pki::write_private(&token_path, format!("{token}\n").as_bytes())?;
    }
    Ok(hub)
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
