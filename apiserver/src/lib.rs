//! atoll-apiserver: a Kubernetes-compatible API server over a revisioned key-value store.
//!
//! It is the hub's API server when atoll runs on one machine, and every hosted control plane is
//! one more instance of it. Clients reach it only over HTTPS, exactly as they reach a real
//! kube-apiserver; `../shared/reference/apiserver-compat.md` is the contract.
//!
//! Requests flow one way: [`http`] → [`registry`] (object semantics) → [`validation`] / [`patch`]
//! / [`apply`] → [`storage`], with the [`watch`] cache fed by storage.
//!
//! Many servers may run in one process (one per hosted cluster): what is read-only is built once
//! per process and shared (built-in resource types, schemas, OpenAPI documents), each server
//! enforces its own [`Limits`], and an idle one holds a few hundred KiB and runs no timers but
//! slow ones. [`backup`] takes consistent backups of a serving cluster and restores them into a
//! fresh one.
//!
//! This crate must not depend on a Kubernetes client, nor on hub or agent code.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch as signal;
use tokio::task::JoinHandle;

pub mod admission;
pub mod apply;
pub mod audit;
pub mod auth;
pub mod authz;
pub mod backup;
pub mod credentials;
pub mod data_format;
pub mod discovery;
pub mod error;
pub mod http;
pub mod kubeconfig;
pub mod metrics;
pub mod openapi;
pub mod patch;
/// The certificate authority and certificates, from the shared `atoll-pki` crate.
pub use atoll_pki as pki;
pub mod protobuf;
pub mod registry;
pub mod serve;
pub mod storage;
pub mod table;
pub mod validation;
pub mod watch;
pub mod yaml;

#[cfg(test)]
mod tests;

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
    /// An etcd cluster, under a key prefix ([`Config::etcd`]): several API servers share it.
    Etcd,
}

/// What one API server may hold and serve at once, so that one tenant of a process cannot starve
/// the others. `None` is no limit.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    /// Stored objects: a create that would store more is refused.
    pub objects: Option<u64>,
    /// Bytes of stored object values: a write that grows the data past this is refused.
    pub storage_bytes: Option<u64>,
    /// Read-only requests served at once; more are answered 429 (watches and /livez, /readyz,
    /// /healthz, /version aside). kube-apiserver's `--max-requests-inflight`.
    pub requests_in_flight: Option<u32>,
    /// Mutating requests (create, update, patch, delete) served at once; more are answered
    /// 429. kube-apiserver's `--max-mutating-requests-inflight`.
    pub mutating_requests_in_flight: Option<u32>,
    /// Watches one user may have open at once; more are answered 429. atoll's own bound
    /// (kube-apiserver leaves watches to priority and fairness).
    pub watches_per_user: Option<u32>,
    /// Whether members of `system:masters` pass the in-flight and watch limits, as on
    /// kube-apiserver.
    pub exempt_masters: bool,
    /// Client connections open at once; a connection past it is closed as soon as it is
    /// accepted. atoll's own bound (Go's server has none).
    pub connections: Option<u32>,
    /// Where the limits come from, named in refusals, e.g. "spec.limits of HostedCluster
    /// clusters/c1" or "the server's flags".
    pub source: String,
}

impl Limits {
    /// kube-apiserver's defaults, 400 read-only and 200 mutating requests in flight, and
    /// atoll's for what kube-apiserver leaves unbounded: 1,000 watches per user and 10,000
    /// connections. Stored objects and bytes are not bounded.
    pub fn kube_defaults(source: &str) -> Self {
        Limits {
            requests_in_flight: Some(400),
            mutating_requests_in_flight: Some(200),
            watches_per_user: Some(DEFAULT_WATCHES_PER_USER),
            connections: Some(DEFAULT_CONNECTIONS),
            exempt_masters: true,
            source: source.to_owned(),
            ..Limits::default()
        }
    }

    /// Whether stored objects or bytes are limited.
    pub fn bounds_storage(&self) -> bool {
        self.objects.is_some() || self.storage_bytes.is_some()
    }

    /// `source`, or a generic name when it is empty.
    pub fn source(&self) -> &str {
        if self.source.is_empty() {
            "the server's configuration"
        } else {
            &self.source
        }
    }
}

/// Watches one user may have open at once, by default.
pub const DEFAULT_WATCHES_PER_USER: u32 = 1_000;
/// Client connections open at once, by default.
pub const DEFAULT_CONNECTIONS: u32 = 10_000;

/// How to run one API server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Holds the database, the CA, the token file and the kubeconfig.
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    pub storage: StorageKind,
    /// Where etcd is, for [`StorageKind::Etcd`].
    pub etcd: Option<storage::etcd::EtcdOptions>,
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
    /// What the cluster may hold and serve at once.
    pub limits: Limits,
    /// The largest backup `PUT /atoll/v1/restore` accepts (413 beyond).
    pub max_restore_bytes: u64,
    /// How long a client may take over a TLS handshake, a request's headers, or nothing.
    pub timeouts: serve::Timeouts,
    /// Where the server counts its requests and stored objects; none: not counted.
    pub metrics: Option<Arc<metrics::Metrics>>,
    /// Where the audit log goes and what it records (`None`: no audit log).
    pub audit: Option<audit::Options>,
}

impl Config {
    pub fn new(data_dir: impl Into<PathBuf>, listen: SocketAddr) -> Self {
        Config {
            data_dir: data_dir.into(),
            listen,
            storage: StorageKind::Sqlite,
            etcd: None,
            kubeconfig_name: "admin.kubeconfig".into(),
            cluster_name: "atoll".into(),
            extra_hosts: Vec::new(),
            compaction_interval: Duration::from_secs(5 * 60),
            watch_cache_events: 10_000,
            watch_cache_bytes: 8 * 1024 * 1024,
            limits: Limits::kube_defaults("the server's defaults"),
            max_restore_bytes: 1024 * 1024 * 1024,
            timeouts: serve::Timeouts::default(),
            metrics: None,
            audit: None,
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
    #[error(transparent)]
    DataFormat(#[from] data_format::FormatError),
    #[error("cannot open storage")]
    Storage(#[from] storage::Error),
    #[error("cannot set up TLS")]
    Pki(#[from] pki::Error),
    #[error("cannot set up authentication")]
    Auth(#[from] auth::Error),
    #[error("cannot share the credentials of the servers on this etcd prefix")]
    Credentials(#[from] credentials::ShareError),
    #[error("cannot listen on {addr}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the audit log {path}")]
    Audit {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot prepare the API")]
    Api(#[from] error::Error),
}

/// The SQLite database in the data directory.
pub(crate) const DATABASE_FILE: &str = "state.db";

/// A running API server.
pub struct Server {
    /// Held for the server's life: one process per data directory.
    _lock: std::fs::File,
    addr: SocketAddr,
    kubeconfig: PathBuf,
    admin_token: String,
    ca_pem: String,
    /// Signs the client certificates of [`Server::user_kubeconfig`].
    ca: Arc<pki::CertificateAuthority>,
    /// The cluster's name and URL, as the admin kubeconfig has them.
    cluster_name: String,
    server_url: String,
    backend: Arc<dyn Backend>,
    backup: Arc<backup::Source>,
    /// Held exclusively while compacting, shared by backups (which read at one revision).
    compaction: Arc<tokio::sync::RwLock<()>>,
    restart: signal::Receiver<bool>,
    /// Keeps [`Server::restart_requested`] open (and false) on a serving server; in restore
    /// mode the restore handler holds the sender.
    _restart_sender: Option<signal::Sender<bool>>,
    shutdown: signal::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    #[cfg(test)]
    router: axum::Router,
    #[cfg(test)]
    in_flight: (http::InFlight, Limits),
}

impl Server {
    /// Opens storage, prepares TLS and authentication, writes the admin kubeconfig and starts
    /// serving. Returns once the server accepts connections.
    ///
    /// A data directory marked with [`backup::mark_restore_pending`] starts in restore mode: the
    /// server has its credentials and kubeconfig as usual, but serves only health checks and
    /// `PUT /atoll/v1/restore` until a backup is uploaded, then asks to be restarted
    /// ([`Server::restart_requested`]); the next start installs the backup before storage opens.
    pub async fn start(config: Config) -> Result<Server, Error> {
        std::fs::create_dir_all(&config.data_dir).map_err(|source| Error::DataDir {
            path: config.data_dir.clone(),
            source,
        })?;
        // The directory holds the CA key, the tokens and every Secret: its owner's only.
        restrict(&config.data_dir, 0o700).map_err(|source| Error::DataDir {
            path: config.data_dir.clone(),
            source,
        })?;
        let lock = lock_data_dir(&config.data_dir)?;
        data_format::check_and_migrate(&config.data_dir)?;
        let prepared = {
            let data_dir = config.data_dir.clone();
            let storage = config.storage;
            tokio::task::spawn_blocking(move || backup::restore::prepare(&data_dir, storage))
                .await
                .map_err(|e| storage::Error::Backend(Box::new(e)))?
        };
        let backend = open_backend(&config, prepared.waiting, prepared.memory).await?;
        let ca = Arc::new(pki::CertificateAuthority::load_or_create(
            &config.data_dir,
            credentials::CA_STEM,
            credentials::CA_NAME,
        )?);
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
        hosts.dedup();
        let serving = ca.issue_serving(&hosts)?;
        let tls = pki::server_config(&serving, Some(ca.cert_pem()), &serve::ALPN_PROTOCOLS)?;

        let server_host = if addr.ip().is_unspecified() {
            SocketAddr::new([127, 0, 0, 1].into(), addr.port())
        } else {
            addr
        };
        let (shutdown, shutdown_rx) = signal::channel(false);
        let (restart_tx, restart) = signal::channel(false);
        let compaction = Arc::new(tokio::sync::RwLock::new(()));
        let backup = Arc::new(backup::Source {
            backend: backend.clone(),
            data_dir: config.data_dir.clone(),
            cluster_name: config.cluster_name.clone(),
            server: format!("https://{server_host}"),
            hosts,
            compaction: compaction.clone(),
            waiting: prepared.waiting,
        });
        let semaphore =
            |n: Option<u32>| n.map(|n| Arc::new(tokio::sync::Semaphore::new(n as usize)));
        let in_flight = http::InFlight {
            read_only: semaphore(config.limits.requests_in_flight),
            mutating: semaphore(config.limits.mutating_requests_in_flight),
            watches: config
                .limits
                .watches_per_user
                .map(|n| Arc::new(http::WatchCounts::new(n, config.limits.source()))),
            exempt_masters: config.limits.exempt_masters,
        };

        let mut restart_sender = None;
        let (router, mut tasks) = if prepared.waiting {
            tracing::info!(
                data_dir = %config.data_dir.display(),
                "waiting for a backup to be restored (PUT /atoll/v1/restore)"
            );
            let state = Arc::new(http::RestoreState {
                auth: authenticator,
                data_dir: config.data_dir.clone(),
                cluster_name: config.cluster_name.clone(),
                max_restore_bytes: config.max_restore_bytes,
                restart: restart_tx,
                failure: prepared.failure,
                uploading: tokio::sync::Mutex::new(()),
            });
            (http::restore_router(state), Vec::new())
        } else {
            restart_sender = Some(restart_tx);
            let state = Serving {
                backend: backend.clone(),
                ca_pem: ca.cert_pem().to_owned(),
                ca: ca.clone(),
                authenticator,
                server_address: server_host.to_string(),
                in_flight: in_flight.clone(),
                backup: backup.clone(),
                compaction: compaction.clone(),
                shutdown: shutdown_rx.clone(),
            };
            serve_api(&config, state).await?
        };

        let kubeconfig = config.data_dir.join(&config.kubeconfig_name);
        let server_url = format!("https://{server_host}");
        let contents = kubeconfig::render(
            &config.cluster_name,
            &server_url,
            ca.cert_pem(),
            &admin_token,
        );
        pki::write_private(&kubeconfig, contents.as_bytes())?;

        let connections = serve::Connections {
            max: config.limits.connections,
            timeouts: config.timeouts,
        };
        tasks.push(tokio::spawn(serve::run(
            listener,
            tls,
            router.clone(),
            connections,
            shutdown_rx,
        )));
        #[cfg(test)]
        let in_flight = (in_flight, config.limits.clone());
        Ok(Server {
            _lock: lock,
            addr,
            kubeconfig,
            admin_token,
            ca_pem: ca.cert_pem().to_owned(),
            ca,
            cluster_name: config.cluster_name.clone(),
            server_url,
            backend,
            backup,
            compaction,
            restart,
            _restart_sender: restart_sender,
            shutdown,
            tasks,
            #[cfg(test)]
            router,
            #[cfg(test)]
            in_flight,
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

    /// A kubeconfig for `user` in `groups`, with a client certificate the cluster CA signs
    /// here (no CertificateSigningRequest: for identities of the process itself, such as the
    /// embedded hub's), valid for `ttl`. What the user may do is what RBAC grants the name.
    pub fn user_kubeconfig(
        &self,
        user: &str,
        groups: &[&str],
        ttl: Duration,
    ) -> Result<String, pki::Error> {
        let key = rcgen::KeyPair::generate()?;
        let subject = pki::client::Subject {
            user: user.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        };
        let seconds = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX);
        let not_after = time::OffsetDateTime::now_utc()
            .checked_add(time::Duration::seconds(seconds))
            .unwrap_or(time::OffsetDateTime::now_utc());
        let cert = self.ca.sign_client(
            &subject,
            &rcgen::PublicKeyData::subject_public_key_info(&key),
            not_after,
        )?;
        Ok(kubeconfig::render_certificate(
            &self.cluster_name,
            &self.server_url,
            &self.ca_pem,
            user,
            &cert,
            &key.serialize_pem(),
        ))
    }

    /// The storage backend (for compaction and inspection).
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Whether the server waits for a backup to be restored into it (see [`Server::start`]).
    pub fn waits_for_restore(&self) -> bool {
        self.backup.waiting
    }

    /// Turns true once a backup has been uploaded into a server in restore mode: the server
    /// must then be shut down and started again on the same configuration, which installs it.
    pub fn restart_requested(&self) -> signal::Receiver<bool> {
        self.restart.clone()
    }

    /// Streams a backup of the cluster into `out`: every object at one revision, read while
    /// the server keeps serving, and the CA, tokens and signing key that its clients'
    /// credentials depend on. See [`backup`] for the format.
    pub async fn backup(
        &self,
        out: &mut (impl tokio::io::AsyncWrite + Unpin),
    ) -> Result<backup::Header, backup::Error> {
        self.backup.write(out).await
    }

    /// Compacts history up to the current revision now.
    pub async fn compact(&self) -> Result<storage::Revision, storage::Error> {
        let _exclusive = self.compaction.write().await;
        let revision = self.backend.current_revision();
        self.backend.compact(revision).await?;
        Ok(revision)
    }

    /// The router the server serves, for tests that send requests without TLS.
    #[cfg(test)]
    pub(crate) fn router(&self) -> axum::Router {
        self.router.clone()
    }

    /// How many requests hold a slot of the requests-in-flight limit now.
    #[cfg(test)]
    pub(crate) fn requests_in_flight(&self) -> usize {
        let (in_flight, limits) = &self.in_flight;
        let taken = |semaphore: &Option<Arc<tokio::sync::Semaphore>>, limit: Option<u32>| {
            semaphore
                .as_ref()
                .zip(limit)
                .map_or(0, |(s, n)| n as usize - s.available_permits())
        };
        taken(&in_flight.read_only, limits.requests_in_flight)
            + taken(&in_flight.mutating, limits.mutating_requests_in_flight)
    }

    /// Stops accepting connections, ends watches, and waits for in-flight requests.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// The storage backend of a server: none yet while it waits for a restore (an empty memory
/// store), the snapshot a restore installed for the memory backend, the SQLite database, or
/// etcd.
async fn open_backend(
    config: &Config,
    waiting: bool,
    restored: Option<storage::memory::MemoryBackend>,
) -> Result<Arc<dyn Backend>, Error> {
    Ok(match (config.storage, restored) {
        // Nothing to serve until a backup arrives: no database is opened.
        _ if waiting => Arc::new(storage::memory::MemoryBackend::new()),
        (StorageKind::Memory, Some(restored)) => Arc::new(restored),
        (StorageKind::Memory, None) => Arc::new(storage::memory::MemoryBackend::new()),
        (StorageKind::Etcd, _) => {
            let options = config.etcd.as_ref().ok_or_else(|| {
                storage::Error::Backend("etcd storage needs etcd endpoints and a prefix".into())
            })?;
            let backend = storage::etcd::EtcdBackend::connect(options).await?;
            credentials::share(&config.data_dir, &options.prefix, &backend).await?;
            Arc::new(backend)
        }
        (StorageKind::Sqlite, _) => {
            let path = config.data_dir.join(DATABASE_FILE);
            // Made 0600 before SQLite opens it (SQLite gives its journal files the database's
            // mode), and made so if an older server left it readable.
            if !path.exists() {
                pki::write_private(&path, b"")?;
            }
            restrict(&path, 0o600).map_err(|source| Error::DataDir {
                path: path.clone(),
                source,
            })?;
            Arc::new(
                tokio::task::spawn_blocking(move || storage::sqlite::SqliteBackend::open(&path))
                    .await
                    .map_err(|e| storage::Error::Backend(Box::new(e)))??,
            )
        }
    })
}

/// What a serving server's API is built from.
struct Serving {
    backend: Arc<dyn Backend>,
    /// The cluster CA every namespace's `kube-root-ca.crt` carries.
    ca_pem: String,
    /// The same CA, which signs approved client certificate requests.
    ca: Arc<pki::CertificateAuthority>,
    authenticator: auth::Authenticator,
    server_address: String,
    in_flight: http::InFlight,
    backup: Arc<backup::Source>,
    compaction: Arc<tokio::sync::RwLock<()>>,
    shutdown: signal::Receiver<bool>,
}

/// The API of a serving server: its store (CRDs loaded, built-in namespaces seeded) behind the
/// watch cache, the router, and the tasks beside it (namespace deletion, compaction).
async fn serve_api(
    config: &Config,
    s: Serving,
) -> Result<(axum::Router, Vec<JoinHandle<()>>), Error> {
    let registry = Arc::new(registry::Registry::new());
    let store =
        Arc::new(Store::new(s.backend.clone(), registry).with_limits(config.limits.clone()));
    store.reload_crds().await?;
    store.seed().await?;
    let cache = watch::WatchCache::start(
        s.backend.clone(),
        config.watch_cache_events,
        config.watch_cache_bytes,
        s.shutdown.clone(),
    )
    .await?;
    store.read_through(cache.clone());
    let rbac = cache.feed(authz::wants);
    let authorizer = authz::prepare(&store, rbac.clone()).await?;
    let audit = match config.audit.clone() {
        Some(options) => {
            let path = options.path.clone();
            Some(audit::AuditLog::open(options).map_err(|source| Error::Audit { path, source })?)
        }
        None => None,
    };
    // From here on, the server's own controllers write as the users upstream's are, through
    // the admission policies and into the audit log (the bootstrap RBAC roles and the seeded
    // namespaces above were written before any policy could be read).
    let gate = Arc::new(admission::Gate {
        policies: admission::Policies::default(),
        registry: store.registry().clone(),
        cache: cache.clone(),
        authorizer: authorizer.clone(),
        audit: audit.clone(),
    });
    store.guard(gate.clone());
    let state = Arc::new(http::ApiState {
        store: store.clone(),
        cache: cache.clone(),
        auth: s.authenticator,
        authz: authorizer.clone(),
        admission: gate,
        shutdown: s.shutdown.clone(),
        server_address: s.server_address,
        in_flight: s.in_flight,
        backup: s.backup,
        metrics: config.metrics.clone(),
        audit,
    });
    if let Some(metrics) = &config.metrics {
        metrics.serving(&cache);
    }
    if let Err(error) = registry::kubernetes_service::ensure(&store, &state.server_address).await {
        tracing::warn!(%error, "cannot write the kubernetes Service");
    }
    // Each controller's feed is made before it first looks at storage, so that nothing written
    // meanwhile escapes it.
    let garbage = cache.feed(registry::garbage::wants);
    let endpoints = cache.feed(registry::endpoints::wants);
    let contents = cache.feed(registry::namespace_contents::wants);
    let certificates = cache.feed(registry::certificates::wants);
    let addresses = cache.feed(registry::service_ip_repair::wants);
    let policy_status = cache.feed(admission::status::wants);
    let settled = registry::namespace_contents::settle(&store, &s.ca_pem).await;
    let tasks = vec![
        tokio::spawn(authz::run(
            store.clone(),
            authorizer,
            rbac,
            s.shutdown.clone(),
        )),
        tokio::spawn(registry::certificates::run(
            store.clone(),
            s.ca,
            certificates,
            s.shutdown.clone(),
        )),
        tokio::spawn(registry::garbage::run(
            store.clone(),
            garbage,
            s.shutdown.clone(),
        )),
        tokio::spawn(registry::endpoints::run(
            store.clone(),
            endpoints,
            s.shutdown.clone(),
        )),
        tokio::spawn(registry::namespace_contents::run(
            store.clone(),
            contents,
            s.ca_pem,
            settled,
            s.shutdown.clone(),
        )),
        tokio::spawn(registry::service_ip_repair::run(
            store.clone(),
            addresses,
            s.shutdown.clone(),
        )),
        tokio::spawn(admission::status::run(
            store.clone(),
            policy_status,
            s.shutdown.clone(),
        )),
        tokio::spawn(registry::namespace::run(store, s.shutdown.clone())),
        tokio::spawn(compact_periodically(
            s.backend,
            s.compaction,
            config.compaction_interval,
            s.shutdown,
        )),
    ];
    Ok((http::router(state), tasks))
}

/// Sets a file's or directory's mode (on Unix; elsewhere nothing).
fn restrict(path: &std::path::Path, mode: u32) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
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

/// Compacts, every interval, what was the current revision one interval before (unless a backup,
/// which reads at one revision, is in progress).
async fn compact_periodically(
    backend: Arc<dyn Backend>,
    compaction: Arc<tokio::sync::RwLock<()>>,
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
            // A backup in progress reads at one revision: compact at the next interval instead.
            let Ok(_exclusive) = compaction.try_write() else {
                tracing::debug!("a backup is in progress; compaction waits for the next interval");
                continue;
            };
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
