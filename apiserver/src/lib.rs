//! atoll-apiserver: a Kubernetes-compatible API server over a revisioned key-value store.
//!
//! It is the hub's API server when atoll runs on one machine, and every hosted control plane is
//! one more instance of it. Clients reach it only over HTTPS, exactly as they reach a real
//! kube-apiserver; `../shared/reference/apiserver-compat.md` is the contract.
//!
//! Requests flow one way: [`http`] → [`registry`] (object semantics) → [`validation`] / [`patch`]
//! / [`apply`] → [`storage`], with the [`watch`] cache fed by storage.
//!
//! This crate must not depend on a Kubernetes client, nor on hub or agent code.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

pub mod apply;
pub mod auth;
pub mod discovery;
pub mod error;
pub mod http;
pub mod kubeconfig;
pub mod openapi;
pub mod patch;
pub mod pki;
pub mod protobuf;
pub mod registry;
pub mod serve;
pub mod storage;
pub mod table;
pub mod validation;
pub mod watch;

use registry::store::Store;
use storage::Backend;

/// Which storage backend to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StorageKind {
    /// SQLite in the data directory (`state.db`): durable.
    #[default]
    Sqlite,
    /// In memory: lost at exit; for tests and benchmarks.
    Memory,
}

/// How to run one API server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Holds the database, the CA, the token file and the kubeconfig.
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    pub storage: StorageKind,
    /// File name of the admin kubeconfig written into `data_dir`.
    pub kubeconfig_name: String,
    /// Cluster and context name in that kubeconfig.
    pub cluster_name: String,
    /// Extra DNS names or addresses for the serving certificate.
    pub extra_hosts: Vec<String>,
    /// How often history is compacted (what was current one interval ago is compacted).
    pub compaction_interval: Duration,
    /// How many recent events the watch cache keeps at most.
    pub watch_cache_events: usize,
    /// How many bytes of stored objects the watch cache keeps at most (the decoded objects take
    /// a few times more memory). Watchers that fall further behind re-list (410 Gone).
    pub watch_cache_bytes: usize,
}

impl Config {
    pub fn new(data_dir: impl Into<PathBuf>, listen: SocketAddr) -> Self {
        Config {
            data_dir: data_dir.into(),
            listen,
            storage: StorageKind::Sqlite,
            kubeconfig_name: "admin.kubeconfig".into(),
            cluster_name: "atoll".into(),
            extra_hosts: Vec::new(),
            compaction_interval: Duration::from_secs(5 * 60),
            watch_cache_events: 10_000,
            watch_cache_bytes: 8 * 1024 * 1024,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot create the data directory {path}")]
    DataDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the data directory {path} is in use by another atoll process")]
    DataDirInUse { path: PathBuf },
    #[error("cannot open storage")]
    Storage(#[from] storage::Error),
    #[error("cannot set up TLS")]
    Pki(#[from] pki::Error),
    #[error("cannot set up authentication")]
    Auth(#[from] auth::Error),
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot prepare the API")]
    Api(#[from] error::Error),
}

/// A running API server.
pub struct Server {
    /// Held for the server's life: one process per data directory.
    _lock: std::fs::File,
    addr: SocketAddr,
    kubeconfig: PathBuf,
    admin_token: String,
    ca_pem: String,
    backend: Arc<dyn Backend>,
    shutdown: signal::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Server {
    /// Opens storage, prepares TLS and authentication, writes the admin kubeconfig and starts
    /// serving. Returns once the server accepts connections.
    pub async fn start(config: Config) -> Result<Server, Error> {
        std::fs::create_dir_all(&config.data_dir).map_err(|source| Error::DataDir {
            path: config.data_dir.clone(),
            source,
        })?;
        let lock = lock_data_dir(&config.data_dir)?;
        let backend: Arc<dyn Backend> = match config.storage {
            StorageKind::Sqlite => {
                let path = config.data_dir.join("state.db");
                Arc::new(
                    tokio::task::spawn_blocking(move || {
                        storage::sqlite::SqliteBackend::open(&path)
                    })
                    .await
                    .map_err(|e| storage::Error::Backend(Box::new(e)))??,
                )
            }
            StorageKind::Memory => Arc::new(storage::memory::MemoryBackend::new()),
        };
        let ca = pki::CertificateAuthority::load_or_create(
            &config.data_dir,
            "ca",
            "atoll-apiserver-ca",
        )?;
        let (authenticator, admin_token) = auth::Authenticator::load_or_create(&config.data_dir)?;

        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|source| Error::Listen {
                addr: config.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Listen {
            addr: config.listen,
            source,
        })?;
        let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        if !addr.ip().is_unspecified() {
            hosts.push(addr.ip().to_string());
        }
        hosts.extend(config.extra_hosts.iter().cloned());
        let serving = ca.issue_serving(&hosts)?;
        let tls = pki::server_config(&serving)?;

        let (shutdown, shutdown_rx) = signal::channel(false);
        let registry = Arc::new(registry::Registry::new());
        let store = Arc::new(Store::new(backend.clone(), registry));
        store.reload_crds().await?;
        store.seed().await?;
        let cache = watch::WatchCache::start(
            backend.clone(),
            config.watch_cache_events,
            config.watch_cache_bytes,
            shutdown_rx.clone(),
        )
        .await?;
        store.read_through(cache.clone());

        let server_host = if addr.ip().is_unspecified() {
            SocketAddr::new([127, 0, 0, 1].into(), addr.port())
        } else {
            addr
        };
        let state = Arc::new(http::ApiState {
            store: store.clone(),
            cache,
            auth: authenticator,
            shutdown: shutdown_rx.clone(),
            server_address: server_host.to_string(),
        });
        let kubeconfig = config.data_dir.join(&config.kubeconfig_name);
        let contents = kubeconfig::render(
            &config.cluster_name,
            &format!("https://{server_host}"),
            ca.cert_pem(),
            &admin_token,
        );
        pki::write_private(&kubeconfig, contents.as_bytes())?;

        let tasks = vec![
            tokio::spawn(registry::namespace::run(store.clone(), shutdown_rx.clone())),
            tokio::spawn(compact_periodically(
                backend.clone(),
                config.compaction_interval,
                shutdown_rx.clone(),
            )),
            tokio::spawn(serve::run(listener, tls, http::router(state), shutdown_rx)),
        ];
        Ok(Server {
            _lock: lock,
            addr,
            kubeconfig,
            admin_token,
            ca_pem: ca.cert_pem().to_owned(),
            backend,
            shutdown,
            tasks,
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        let host = if self.addr.ip().is_unspecified() {
            SocketAddr::new([127, 0, 0, 1].into(), self.addr.port())
        } else {
            self.addr
        };
        format!("https://{host}")
    }

    /// Path of the admin kubeconfig.
    pub fn kubeconfig_path(&self) -> &std::path::Path {
        &self.kubeconfig
    }

    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The CA certificate (PEM) clients pin.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The storage backend (for compaction and inspection).
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Compacts history up to the current revision now.
    pub async fn compact(&self) -> Result<storage::Revision, storage::Error> {
        let revision = self.backend.current_revision();
        self.backend.compact(revision).await?;
        Ok(revision)
    }

    /// Stops accepting connections, ends watches, and waits for in-flight requests.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// Takes the data directory's lock file, so that a second server on the same directory fails
/// at start instead of writing the same database.
fn lock_data_dir(dir: &std::path::Path) -> Result<std::fs::File, Error> {
    let path = dir.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| Error::DataDir {
            path: path.clone(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::DataDirInUse {
            path: dir.to_owned(),
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(Error::DataDir { path, source }),
    }
}

/// Compacts, every interval, what was the current revision one interval before.
async fn compact_periodically(
    backend: Arc<dyn Backend>,
    interval: Duration,
    shutdown: signal::Receiver<bool>,
) {
    let mut previous = backend.current_revision();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stopped(shutdown.clone()) => return,
        }
        if previous > backend.compacted_revision() {
            match backend.compact(previous).await {
                Ok(()) => tracing::debug!(revision = previous, "compacted"),
                Err(err) => tracing::warn!(error = %err, "compaction failed"),
            }
        }
        previous = backend.current_revision();
    }
}

/// Resolves once a shutdown signal turns true (or its sender is gone).
pub(crate) async fn stopped(mut shutdown: signal::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}
