//! A backend on an etcd v3 cluster, for API servers that outgrow one machine.
//!
//! # Layout
//!
//! Every key lives in etcd under one prefix per API server (`--etcd-prefix`), so that several
//! API servers (hosted clusters, say) can share one etcd as Kamaji's DataStores do, and several
//! replicas of one API server share theirs. Keys the API server stores start with `/`
//! (`/registry/configmaps/default/demo`), so the prefix `/atoll/hub` stores that key as
//! `/atoll/hub/registry/configmaps/default/demo`, and the prefixes `/a` and `/ab` never see each
//! other's keys.
//!
//! # Revisions
//!
//! Revisions are etcd's own: the revision a write returns, a key's `create_revision` and
//! `mod_revision`, and the revisions lists and watches read at, are those etcd reports. An empty
//! etcd starts at revision 1, and an etcd shared with other prefixes numbers their writes too:
//! the revisions of one prefix increase but need not be contiguous.
//!
//! # Writes
//!
//! Each write is one etcd transaction that compares and writes in one step, as kube-apiserver's
//! etcd3 store does: a create compares `create_revision == 0`, an update `mod_revision ==
//! expected`, a delete (with an expected revision) the same. A failed comparison reads the key in
//! the same transaction, so that `Conflict` carries the current value.
//!
//! # The feed
//!
//! One etcd watch over the whole prefix keeps the store's running figures: the current revision
//! (the newest write under the prefix, by whichever API server) and the usage (live keys and
//! bytes, counted once at start). A write returns once the feed has seen it, so that a caller
//! that wrote reads its write in both. Watches are etcd watches of their own (etcd fans out
//! events), from `after + 1`, with the previous value of every key.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{
    Certificate, Client, CompactionOptions, Compare, CompareOp, ConnectOptions, DeleteOptions,
    EventType, GetOptions, Identity, KvClient, TlsOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
    WatchStream,
};
use futures::StreamExt;
use tokio::sync::watch;
use tracing::Instrument;

use super::{
    Backend, Error, Event, EventKind, EventStream, KeyValue, ListOptions, ListPage, Result,
    Revision, Usage, UsageCounters,
};

pub use super::etcd_options::*;

#[cfg(test)]
pub(crate) mod cluster;

/// How many keys one read of etcd returns while counting the usage at start.
const COUNT_PAGE: i64 = 1000;
/// How long a watch whose store was dropped keeps delivering the events committed before.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How many times a watch reopens after its connection to etcd broke, before it fails.
const WATCH_REOPENS: u32 = 10;
/// The pause before reopening a broken watch; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Why the etcd backend could not do something.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error(transparent)]
    Options(#[from] OptionError),
    #[error("{0}")]
    Tls(String),
    #[error("cannot read {path}")]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot reach etcd at {endpoints} within {timeout:?}")]
    Unreachable {
        endpoints: String,
        timeout: Duration,
        #[source]
        source: Option<etcd_client::Error>,
    },
    #[error("etcd did not answer {operation} within {timeout:?}")]
    Timeout {
        operation: &'static str,
        timeout: Duration,
    },
    #[error("etcd refused {operation}")]
    Request {
        operation: &'static str,
        #[source]
        source: etcd_client::Error,
    },
    #[error("etcd answered {operation} with {what}")]
    Answer {
        operation: &'static str,
        what: &'static str,
    },
    #[error("etcd holds key {0:?}, which is not UTF-8")]
    Key(String),
    #[error("etcd canceled a watch: {0}")]
    WatchCanceled(String),
    #[error("a watch lost its connection to etcd {0} times in a row")]
    WatchBroken(u32),
}

impl From<EtcdError> for Error {
    fn from(error: EtcdError) -> Self {
        Error::Backend(Box::new(error))
    }
}

/// A revisioned key-value store on etcd. Dropping it stops its feed and ends every watch
/// stream (once each has delivered what was committed before).
pub struct EtcdBackend {
    etcd: Etcd,
    shared: Arc<Shared>,
    /// `Some(revision)` once the backend is dropped: watches end after that revision.
    closed: watch::Sender<Option<Revision>>,
}

/// State shared by the backend, its feed and its watches.
struct Shared {
    /// The newest revision the feed has seen under the prefix.
    current: AtomicI64,
    /// The newest compacted revision known.
    compacted: AtomicI64,
    usage: UsageCounters,
    /// The revision up to which the feed has applied every event, for writers to wait on.
    published: watch::Sender<Revision>,
}

impl EtcdBackend {
    /// Connects, counts the keys under the prefix and starts the feed. Fails within a bounded
    /// time when etcd cannot be reached.
    pub async fn connect(options: &EtcdOptions) -> Result<Self> {
        let client = client(options).await?;
        let endpoints = options.endpoints.join(",");
        let unreachable = |source| EtcdError::Unreachable {
            endpoints: endpoints.clone(),
            timeout: options.timeout,
            source,
        };

        let backend = EtcdBackend {
            etcd: Etcd {
                client,
                prefix: options.prefix.clone(),
                timeout: options.timeout,
            },
            shared: Arc::new(Shared {
                current: AtomicI64::new(0),
                compacted: AtomicI64::new(0),
                usage: UsageCounters::default(),
                published: watch::channel(0).0,
            }),
            closed: watch::channel(None).0,
        };
        // The first call says whether etcd answers at all.
        let (usage, revision) = match backend.etcd.count().await {
            Ok(counted) => counted,
            Err(Error::Backend(source)) => match source.downcast::<EtcdError>() {
                Ok(error) => match *error {
                    EtcdError::Timeout { .. } => return Err(unreachable(None).into()),
                    EtcdError::Request { source, .. } => {
                        return Err(unreachable(Some(source)).into());
                    }
                    other => return Err(other.into()),
                },
                Err(source) => return Err(Error::Backend(source)),
            },
            Err(other) => return Err(other),
        };
        let compacted = backend.etcd.find_compacted(1).await?;
        backend.shared.usage.set(usage);
        backend.shared.current.store(revision, Ordering::Release);
        backend.shared.compacted.store(compacted, Ordering::Release);
        backend.shared.published.send_replace(revision);
        tracing::info!(
            endpoints = %endpoints,
            prefix = %backend.etcd.prefix,
            revision,
            compacted,
            keys = usage.objects,
            "opened etcd storage"
        );
        let feed = Feed {
            etcd: backend.etcd.clone(),
            shared: Arc::clone(&backend.shared),
            closed: backend.closed.subscribe(),
        };
        tokio::spawn(feed.run().instrument(tracing::info_span!("etcd-feed")));
        Ok(backend)
    }

    /// Stores `value` under the key that is the prefix itself, unless one is stored there
    /// already, and returns the value stored: the first server on a prefix decides what every
    /// later one shares (its credentials). That key is outside every object's (`<prefix>/...`),
    /// so lists, watches, the usage and the feed never see it.
    pub async fn share(&self, value: Bytes) -> Result<Bytes> {
        let physical = self.etcd.prefix.clone().into_bytes();
        let txn = Txn::new()
            .when([Compare::create_revision(
                physical.clone(),
                CompareOp::Equal,
                0,
            )])
            .and_then([TxnOp::put(physical.clone(), value.to_vec(), None)])
            .or_else([TxnOp::get(physical, None)]);
        let answer = self
            .etcd
            .call(|mut kv: KvClient| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
            .map_err(|e| e.into_error("a write of the shared credentials", self.etcd.timeout))?;
        if answer.succeeded() {
            return Ok(value);
        }
        answer
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Get(get) => get
                    .kvs()
                    .first()
                    .map(|kv| Bytes::copy_from_slice(kv.value())),
                _ => None,
            })
            .ok_or_else(|| {
                Error::Backend(
                    format!(
                        "etcd holds no shared credentials under {} and refused to store them",
                        self.etcd.prefix
                    )
                    .into(),
                )
            })
    }

    /// Returns once the feed has applied the write at `revision` (or, if it lags by more than
    /// the timeout, counts the revision as current anyway: the write stands).
    async fn settled(&self, revision: Revision) {
        let mut published = self.shared.published.subscribe();
        let seen = tokio::time::timeout(
            self.etcd.timeout,
            published.wait_for(|published| *published >= revision),
        )
        .await;
        if !matches!(seen, Ok(Ok(_))) {
            tracing::warn!(revision, "the etcd feed lags behind a write");
            self.shared.current.fetch_max(revision, Ordering::AcqRel);
        }
    }

    fn known_compacted(&self) -> Revision {
        self.shared.compacted.load(Ordering::Acquire)
    }

    /// The compacted revision after etcd said `requested` is compacted.
    async fn compacted_after(&self, requested: Revision) -> Result<Error> {
        let compacted = self
            .etcd
            .find_compacted(requested.saturating_add(1))
            .await?;
        self.shared.compacted.fetch_max(compacted, Ordering::AcqRel);
        Ok(Error::Compacted {
            requested,
            compacted: compacted.max(requested.saturating_add(1)),
        })
    }
}

impl Drop for EtcdBackend {
    fn drop(&mut self) {
        self.closed
            .send_replace(Some(self.shared.current.load(Ordering::Acquire)));
    }
}

/// A client of the etcd `options` name (checked), connected within the timeout.
async fn client(options: &EtcdOptions) -> Result<Client> {
    check_prefix(&options.prefix)?;
    if options.endpoints.is_empty() || options.endpoints.len() > MAX_ENDPOINTS {
        return Err(OptionError::Endpoints.into());
    }
    for endpoint in &options.endpoints {
        check_endpoint(endpoint)?;
    }
    let mut connect = ConnectOptions::new()
        .with_timeout(options.timeout)
        .with_connect_timeout(options.timeout)
        .with_keep_alive(Duration::from_secs(10), options.timeout)
        .with_require_leader(true);
    if let Some(tls) = tls(options)? {
        connect = connect.with_tls(tls);
    }
    let unreachable = |source| EtcdError::Unreachable {
        endpoints: options.endpoints.join(","),
        timeout: options.timeout,
        source,
    };
    let client = tokio::time::timeout(
        options.timeout,
        Client::connect(&options.endpoints, Some(connect)),
    )
    .await
    .map_err(|_| unreachable(None))?
    .map_err(|e| unreachable(Some(e)))?;
    Ok(client)
}

/// Deletes every key of the API server on `options.prefix`, in one transaction: those under
/// `<prefix>/` and the key `<prefix>` itself (its shared credentials). Answers how many went.
pub async fn erase(options: &EtcdOptions) -> Result<i64> {
    let mut client = client(options).await?;
    let txn = Txn::new().and_then([
        TxnOp::delete(
            format!("{}/", options.prefix),
            Some(DeleteOptions::new().with_prefix()),
        ),
        TxnOp::delete(options.prefix.as_str(), None),
    ]);
    let answer = tokio::time::timeout(options.timeout, client.txn(txn))
        .await
        .map_err(|_| EtcdError::Timeout {
            operation: "an erase of the prefix",
            timeout: options.timeout,
        })?
        .map_err(|source| EtcdError::Request {
            operation: "an erase of the prefix",
            source,
        })?;
    Ok(answer
        .op_responses()
        .iter()
        .map(|op| match op {
            TxnOpResponse::Delete(d) => d.deleted(),
            _ => 0,
        })
        .sum())
}

/// A client with the prefix and timeout it works with.
#[derive(Clone)]
struct Etcd {
    client: Client,
    prefix: String,
    timeout: Duration,
}

/// How a call to etcd failed.
enum Failed {
    Timeout,
    Etcd(etcd_client::Error),
}

impl Failed {
    fn into_error(self, operation: &'static str, timeout: Duration) -> Error {
        match self {
            Failed::Timeout => EtcdError::Timeout { operation, timeout }.into(),
            Failed::Etcd(source) => EtcdError::Request { operation, source }.into(),
        }
    }

    /// etcd's `ErrCompacted`: the revision asked for is compacted away.
    fn is_compacted(&self) -> bool {
        self.says("required revision has been compacted")
    }

    /// etcd's `ErrFutureRev`: the revision asked for is ahead of the current one.
    fn is_future(&self) -> bool {
        self.says("required revision is a future revision")
    }

    fn says(&self, text: &str) -> bool {
        matches!(self, Failed::Etcd(etcd_client::Error::GRpcStatus(status)) if status.message().contains(text))
    }
}

impl Etcd {
    /// Runs one call to etcd, bounded by the timeout.
    async fn call_once<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, Failed> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(Failed::Etcd(error)),
            Err(_) => Err(Failed::Timeout),
        }
    }

    /// Runs a call to etcd, again while it could not be sent (a member that just died is
    /// still among the client's endpoints until a connection to it fails), all within the
    /// timeout. A call that reached etcd is never repeated: a write runs at most once.
    async fn call<T, F>(&self, mut attempt: impl FnMut(KvClient) -> F) -> Result<T, Failed>
    where
        F: std::future::Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            match tokio::time::timeout_at(deadline, attempt(self.client.kv_client())).await {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(error))
                    if unsent(&error) && tokio::time::Instant::now() + pause < deadline =>
                {
                    tracing::debug!(%error, "an etcd call could not be sent; trying again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                Ok(Err(error)) => return Err(Failed::Etcd(error)),
                Err(_) => return Err(Failed::Timeout),
            }
        }
    }

    /// The etcd key of a store key. Store keys start with `/`.
    fn key(&self, key: &str) -> Result<Vec<u8>> {
        if !key.starts_with('/') {
            return Err(Error::Backend(
                format!("key {key:?} does not start with '/'").into(),
            ));
        }
        Ok(format!("{}{key}", self.prefix).into_bytes())
    }

    /// The etcd key range `[start, end)` of the store keys under `prefix`, starting after
    /// `start_after` when that is under it; `None` when no store key can match.
    fn range(&self, prefix: &str, start_after: Option<&str>) -> Option<(Vec<u8>, Vec<u8>)> {
        let physical = match prefix {
            "" => format!("{}/", self.prefix),
            _ if prefix.starts_with('/') => format!("{}{prefix}", self.prefix),
            _ => return None,
        };
        let end = super::sqlite::prefix_end(&physical)?;
        let start = match start_after {
            Some(after) if after >= prefix => {
                let mut start = format!("{}{after}", self.prefix).into_bytes();
                start.push(0);
                start.max(physical.into_bytes())
            }
            _ => physical.into_bytes(),
        };
        Some((start, end))
    }

    /// The store key of an etcd key.
    fn store_key(&self, key: &[u8]) -> Result<String> {
        let key = key
            .strip_prefix(self.prefix.as_bytes())
            .ok_or_else(|| EtcdError::Key(String::from_utf8_lossy(key).into_owned()))?;
        String::from_utf8(key.to_vec())
            .map_err(|_| EtcdError::Key(String::from_utf8_lossy(key).into_owned()).into())
    }

    fn key_value(&self, kv: &etcd_client::KeyValue) -> Result<KeyValue> {
        Ok(KeyValue {
            key: self.store_key(kv.key())?,
            value: Bytes::copy_from_slice(kv.value()),
            create_revision: kv.create_revision(),
            mod_revision: kv.mod_revision(),
        })
    }

    /// A store event from an etcd event.
    fn event(&self, event: &etcd_client::Event) -> Result<Event> {
        let kv = event.kv().ok_or(EtcdError::Answer {
            operation: "watch",
            what: "an event without a key",
        })?;
        let prev = event
            .prev_kv()
            .map(|prev| self.key_value(prev))
            .transpose()?;
        Ok(match event.event_type() {
            EventType::Put => Event {
                kind: if kv.version() == 1 {
                    EventKind::Create
                } else {
                    EventKind::Update
                },
                kv: self.key_value(kv)?,
                prev: if kv.version() == 1 { None } else { prev },
            },
            EventType::Delete => {
                let deleted = match &prev {
                    Some(prev) => KeyValue {
                        mod_revision: kv.mod_revision(),
                        ..prev.clone()
                    },
                    None => {
                        // etcd no longer had the value (compacted): the delete alone.
                        KeyValue {
                            key: self.store_key(kv.key())?,
                            value: Bytes::new(),
                            create_revision: 0,
                            mod_revision: kv.mod_revision(),
                        }
                    }
                };
                Event {
                    kind: EventKind::Delete,
                    kv: deleted,
                    prev,
                }
            }
        })
    }

    /// The live keys under the prefix and their bytes, and the revision they were read at,
    /// a page at a time.
    async fn count(&self) -> Result<(Usage, Revision)> {
        let Some((mut start, end)) = self.range("", None) else {
            return Ok((Usage::default(), 0));
        };
        let mut usage = Usage::default();
        let mut revision = None;
        loop {
            let mut options = GetOptions::new()
                .with_range(end.clone())
                .with_limit(COUNT_PAGE);
            if let Some(revision) = revision {
                options = options.with_revision(revision);
            }
            let page = self
                .call(|mut kv: KvClient| {
                    let key = start.clone();
                    let options = Some(options.clone());
                    async move { kv.get(key, options).await }
                })
                .await
                .map_err(|e| e.into_error("a count of the keys", self.timeout))?;
            let at = revision.unwrap_or(header_revision(page.header(), "a count of the keys")?);
            revision = Some(at);
            for kv in page.kvs() {
                usage.objects += 1;
                usage.bytes = usage
                    .bytes
                    .saturating_add(u64::try_from(kv.value().len()).unwrap_or(u64::MAX));
            }
            match page.kvs().last() {
                Some(last) if page.more() => {
                    start = last.key().to_vec();
                    start.push(0);
                }
                _ => return Ok((usage, at)),
            }
        }
    }

    /// etcd's compacted revision, which is at least `lower`, or 0 if `lower` is readable and at
    /// most 1. etcd does not tell it, but reads below it fail: the smallest readable revision.
    async fn find_compacted(&self, lower: Revision) -> Result<Revision> {
        let lower = lower.max(1);
        let readable = |revision: Revision| async move {
            let options = GetOptions::new().with_revision(revision).with_count_only();
            let read = |mut kv: KvClient| {
                let key = self.prefix.clone();
                let options = Some(options.clone());
                async move { kv.get(key, options).await }
            };
            match self.call(read).await {
                Ok(_) => Ok(true),
                Err(failed) if failed.is_compacted() => Ok(false),
                Err(failed) if failed.is_future() => Ok(true),
                Err(failed) => Err(failed.into_error("a read at a past revision", self.timeout)),
            }
        };
        if readable(lower).await? {
            return Ok(if lower == 1 { 0 } else { lower });
        }
        let latest = self
            .call(|mut kv: KvClient| {
                let key = self.prefix.clone();
                let options = Some(GetOptions::new().with_count_only());
                async move { kv.get(key, options).await }
            })
            .await
            .map_err(|e| e.into_error("a read of the current revision", self.timeout))?;
        // Not readable at `low`, readable at `high`.
        let (mut low, mut high) = (lower, header_revision(latest.header(), "a read")?);
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if readable(middle).await? {
                high = middle;
            } else {
                low = middle;
            }
        }
        Ok(high)
    }

    /// Opens a watch of `[start, end)` from revision `from` (inclusive) with previous values,
    /// and waits for etcd to confirm it.
    async fn open_watch(
        &self,
        (start, end): (Vec<u8>, Vec<u8>),
        from: Revision,
    ) -> Result<WatchStream, WatchFailed> {
        // Progress notifications (sent only once the watch has caught up) let a watch that
        // reopens start after the newest revision it knows complete, not after its last event:
        // under a quiet prefix of a shared etcd that one may be compacted away meanwhile.
        let options = WatchOptions::new()
            .with_range(end)
            .with_start_revision(from)
            .with_prev_key()
            .with_progress_notify();
        let mut watcher = self.client.watch_client();
        let mut stream = self
            .call_once(watcher.watch(start, Some(options)))
            .await
            .map_err(|e| WatchFailed::Broken(e.into_error("a watch", self.timeout)))?;
        let created = self
            .call_once(stream.message())
            .await
            .map_err(|e| WatchFailed::Broken(e.into_error("a watch", self.timeout)))?;
        match created {
            Some(response) if response.compact_revision() > 0 => {
                Err(WatchFailed::Compacted(response.compact_revision()))
            }
            Some(response) if response.canceled() => Err(WatchFailed::Canceled(
                EtcdError::WatchCanceled(response.cancel_reason().to_owned()).into(),
            )),
            Some(response) if response.created() => Ok(stream),
            _ => Err(WatchFailed::Broken(
                EtcdError::Answer {
                    operation: "a watch",
                    what: "no confirmation",
                }
                .into(),
            )),
        }
    }
}

impl Etcd {
    /// [`Etcd::open_watch`], again while the connection fails (a member that died is still
    /// among the client's endpoints until a connection to it fails), within the timeout.
    /// Opening a watch writes nothing, so trying again is always safe.
    async fn open_watch_retrying(
        &self,
        range: (Vec<u8>, Vec<u8>),
        from: Revision,
    ) -> Result<WatchStream, WatchFailed> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut pause = Duration::from_millis(20);
        loop {
            match self.open_watch(range.clone(), from).await {
                Err(WatchFailed::Broken(error))
                    if tokio::time::Instant::now() + pause < deadline =>
                {
                    tracing::debug!(error = %crate::error::chain(&error), "an etcd watch could not be opened; trying again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                opened => return opened,
            }
        }
    }
}

/// Why a watch could not be opened.
enum WatchFailed {
    /// etcd compacted past its start: the compacted revision.
    Compacted(Revision),
    /// etcd refused it.
    Canceled(Error),
    /// The connection failed; another try may work.
    Broken(Error),
}

/// Whether a call failed before it reached etcd (no connection to the member it was sent to).
fn unsent(error: &etcd_client::Error) -> bool {
    match error {
        etcd_client::Error::GRpcStatus(status) => {
            status.code() == tonic::Code::Unavailable && status.message().contains("connect error")
        }
        etcd_client::Error::TransportError(_) => true,
        _ => false,
    }
}

fn header_revision(
    header: Option<&etcd_client::ResponseHeader>,
    operation: &'static str,
) -> Result<Revision> {
    header.map(|header| header.revision()).ok_or_else(|| {
        EtcdError::Answer {
            operation,
            what: "no header",
        }
        .into()
    })
}

/// The TLS settings for the endpoints, if they are `https`.
fn tls(options: &EtcdOptions) -> Result<Option<TlsOptions>, EtcdError> {
    let https = options
        .endpoints
        .iter()
        .filter(|endpoint| endpoint.starts_with("https://"))
        .count();
    let files =
        options.ca_file.is_some() || options.cert_file.is_some() || options.key_file.is_some();
    if https != 0 && https != options.endpoints.len() {
        return Err(EtcdError::Tls(
            "etcd endpoints are either all https:// or all http://".into(),
        ));
    }
    if https == 0 {
        if files {
            return Err(EtcdError::Tls(
                "etcd TLS files need https:// endpoints".into(),
            ));
        }
        return Ok(None);
    }
    let read = |path: &PathBuf| {
        std::fs::read(path).map_err(|source| EtcdError::File {
            path: path.clone(),
            source,
        })
    };
    let ca = options.ca_file.as_ref().ok_or_else(|| {
        EtcdError::Tls("https:// etcd endpoints need the CA file of etcd's certificates".into())
    })?;
    let mut tls = TlsOptions::new().ca_certificate(Certificate::from_pem(read(ca)?));
    match (&options.cert_file, &options.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
        }
        (None, None) => {}
        _ => {
            return Err(EtcdError::Tls(
                "an etcd client certificate needs its key, and a key its certificate".into(),
            ));
        }
    }
    Ok(Some(tls))
}

#[async_trait::async_trait]
impl Backend for EtcdBackend {
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision> {
        let physical = self.etcd.key(key)?;
        let txn = Txn::new()
            .when([Compare::create_revision(
                physical.clone(),
                CompareOp::Equal,
                0,
            )])
            .and_then([TxnOp::put(physical, value.to_vec(), None)]);
        let answer = self
            .etcd
            .call(|mut kv: KvClient| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
            .map_err(|e| e.into_error("a create", self.etcd.timeout))?;
        if !answer.succeeded() {
            return Err(Error::AlreadyExists(key.to_owned()));
        }
        let revision = header_revision(answer.header(), "a create")?;
        self.settled(revision).await;
        Ok(revision)
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision> {
        let physical = self.etcd.key(key)?;
        let txn = Txn::new()
            .when([
                Compare::version(physical.clone(), CompareOp::Greater, 0),
                Compare::mod_revision(physical.clone(), CompareOp::Equal, expected),
            ])
            .and_then([TxnOp::put(physical.clone(), value.to_vec(), None)])
            .or_else([TxnOp::get(physical, None)]);
        let answer = self
            .etcd
            .call(|mut kv: KvClient| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
            .map_err(|e| e.into_error("an update", self.etcd.timeout))?;
        if !answer.succeeded() {
            return Err(self.mismatch(key, expected, &answer.op_responses())?);
        }
        let revision = header_revision(answer.header(), "an update")?;
        self.settled(revision).await;
        Ok(revision)
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<(Revision, KeyValue)> {
        let physical = self.etcd.key(key)?;
        let mut compare = vec![Compare::version(physical.clone(), CompareOp::Greater, 0)];
        if let Some(expected) = expected {
            compare.push(Compare::mod_revision(
                physical.clone(),
                CompareOp::Equal,
                expected,
            ));
        }
        let txn = Txn::new()
            .when(compare)
            .and_then([TxnOp::delete(
                physical.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(physical, None)]);
        let answer = self
            .etcd
            .call(|mut kv: KvClient| {
                let txn = txn.clone();
                async move { kv.txn(txn).await }
            })
            .await
            .map_err(|e| e.into_error("a delete", self.etcd.timeout))?;
        let responses = answer.op_responses();
        if !answer.succeeded() {
            return Err(self.mismatch(key, expected.unwrap_or(0), &responses)?);
        }
        let revision = header_revision(answer.header(), "a delete")?;
        let prev = match responses.first() {
            Some(TxnOpResponse::Delete(deleted)) => deleted.prev_kvs().first().cloned(),
            _ => None,
        }
        .ok_or(EtcdError::Answer {
            operation: "a delete",
            what: "no deleted value",
        })?;
        let deleted = KeyValue {
            mod_revision: revision,
            ..self.etcd.key_value(&prev)?
        };
        self.settled(revision).await;
        Ok((revision, deleted))
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        let physical = self.etcd.key(key)?;
        let answer = self
            .etcd
            .call(|mut kv: KvClient| {
                let key = physical.clone();
                let options = None;
                async move { kv.get(key, options).await }
            })
            .await
            .map_err(|e| e.into_error("a get", self.etcd.timeout))?;
        answer
            .kvs()
            .first()
            .map(|kv| self.etcd.key_value(kv))
            .transpose()
    }

    async fn list(&self, options: ListOptions<'_>) -> Result<ListPage> {
        let empty = |revision| ListPage {
            items: Vec::new(),
            revision,
            remaining: 0,
        };
        let requested = options.revision;
        if let Some(revision) = requested {
            let compacted = self.known_compacted();
            if revision < compacted {
                return Err(Error::Compacted {
                    requested: revision,
                    compacted,
                });
            }
            // etcd reads revision 0 as "the latest"; before the first revision nothing lived.
            if revision <= 0 {
                return Ok(empty(revision));
            }
        }
        let Some((start, end)) = self.etcd.range(options.prefix, options.start_after) else {
            return Ok(empty(requested.unwrap_or_else(|| self.current_revision())));
        };
        let mut get = GetOptions::new().with_range(end);
        if let Some(revision) = requested {
            get = get.with_revision(revision);
        }
        if let Some(limit) = options.limit.filter(|&limit| limit > 0) {
            get = get.with_limit(i64::try_from(limit).unwrap_or(i64::MAX));
        }
        let answer = match self
            .etcd
            .call(|mut kv: KvClient| {
                let key = start.clone();
                let options = Some(get.clone());
                async move { kv.get(key, options).await }
            })
            .await
        {
            Ok(answer) => answer,
            Err(failed) => {
                return Err(match requested {
                    Some(revision) if failed.is_compacted() => {
                        self.compacted_after(revision).await?
                    }
                    Some(revision) if failed.is_future() => Error::FutureRevision {
                        requested: revision,
                        current: self.current_revision(),
                    },
                    _ => failed.into_error("a list", self.etcd.timeout),
                });
            }
        };
        let items = answer
            .kvs()
            .iter()
            .map(|kv| self.etcd.key_value(kv))
            .collect::<Result<Vec<_>>>()?;
        let count = usize::try_from(answer.count()).unwrap_or(0);
        let revision = match requested {
            Some(revision) => revision,
            None => header_revision(answer.header(), "a list")?,
        };
        Ok(ListPage {
            remaining: count.saturating_sub(items.len()),
            items,
            revision,
        })
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<EventStream> {
        let compacted = self.known_compacted();
        if after < compacted {
            return Err(Error::Compacted {
                requested: after,
                compacted,
            });
        }
        let Some(range) = self.etcd.range(prefix, None) else {
            // No store key can match: a stream that only ends with the store.
            let mut closed = self.closed.subscribe();
            return Ok(Box::pin(
                futures::stream::once(async move {
                    let _ = closed.wait_for(Option::is_some).await;
                })
                .filter_map(|()| async { None }),
            ));
        };
        let stream = match self
            .etcd
            .open_watch_retrying(range.clone(), after + 1)
            .await
        {
            Ok(stream) => stream,
            Err(WatchFailed::Compacted(compacted)) => {
                self.shared.compacted.fetch_max(compacted, Ordering::AcqRel);
                return Err(Error::Compacted {
                    requested: after,
                    compacted,
                });
            }
            Err(WatchFailed::Canceled(error) | WatchFailed::Broken(error)) => return Err(error),
        };
        Ok(watching(Watching {
            etcd: self.etcd.clone(),
            shared: Arc::clone(&self.shared),
            range,
            stream: Some(stream),
            last: after,
            pending: std::collections::VecDeque::new(),
            closed: self.closed.subscribe(),
            closing: None,
            reopens: 0,
            done: false,
        }))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        if revision <= self.known_compacted() {
            return Ok(());
        }
        let current = self.current_revision();
        if revision > current {
            return Err(Error::FutureRevision {
                requested: revision,
                current,
            });
        }
        match self
            .etcd
            .call(|mut kv: KvClient| async move {
                kv.compact(revision, Some(CompactionOptions::new())).await
            })
            .await
        {
            Ok(_) => {
                self.shared.compacted.fetch_max(revision, Ordering::AcqRel);
                Ok(())
            }
            // Another API server on the same etcd compacted further already.
            Err(failed) if failed.is_compacted() => {
                let compacted = self.etcd.find_compacted(revision).await?;
                self.shared.compacted.fetch_max(compacted, Ordering::AcqRel);
                Ok(())
            }
            Err(failed) if failed.is_future() => Err(Error::FutureRevision {
                requested: revision,
                current,
            }),
            Err(failed) => Err(failed.into_error("a compaction", self.etcd.timeout)),
        }
    }

    fn current_revision(&self) -> Revision {
        self.shared.current.load(Ordering::Acquire)
    }

    fn compacted_revision(&self) -> Revision {
        self.known_compacted()
    }

    fn usage(&self) -> Usage {
        self.shared.usage.get()
    }
}

impl EtcdBackend {
    /// The error of a write whose comparison failed, from the read of the key in its `else`.
    fn mismatch(
        &self,
        key: &str,
        expected: Revision,
        responses: &[TxnOpResponse],
    ) -> Result<Error> {
        let current = match responses.first() {
            Some(TxnOpResponse::Get(got)) => got.kvs().first().cloned(),
            _ => None,
        };
        Ok(match current {
            None => Error::NotFound(key.to_owned()),
            Some(current) => Error::Conflict {
                key: key.to_owned(),
                expected,
                current: Box::new(self.etcd.key_value(&current)?),
            },
        })
    }
}

/// The one watch over the whole prefix that keeps the current revision and the usage.
struct Feed {
    etcd: Etcd,
    shared: Arc<Shared>,
    closed: watch::Receiver<Option<Revision>>,
}

impl Feed {
    async fn run(mut self) {
        let mut backoff = FIRST_BACKOFF;
        while self.closed.borrow().is_none() {
            let from = *self.shared.published.borrow() + 1;
            let Some(range) = self.etcd.range("", None) else {
                return;
            };
            match self.etcd.open_watch(range, from).await {
                Ok(mut stream) => loop {
                    let message = tokio::select! {
                        message = stream.message() => message,
                        _ = self.closed.changed() => return,
                    };
                    match message {
                        Ok(Some(response)) if response.compact_revision() > 0 => {
                            self.resync(response.compact_revision()).await;
                            break;
                        }
                        Ok(Some(response)) if response.canceled() => {
                            tracing::warn!(
                                reason = response.cancel_reason(),
                                "etcd canceled the feed"
                            );
                            break;
                        }
                        Ok(Some(response)) => {
                            backoff = FIRST_BACKOFF;
                            self.apply(response.events());
                        }
                        Ok(None) => break,
                        Err(error) => {
                            tracing::warn!(%error, "the etcd feed broke; reopening it");
                            break;
                        }
                    }
                },
                Err(WatchFailed::Compacted(compacted)) => self.resync(compacted).await,
                Err(WatchFailed::Canceled(error) | WatchFailed::Broken(error)) => {
                    tracing::warn!(%error, "cannot open the etcd feed; retrying");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.closed.changed() => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    fn apply(&self, events: &[etcd_client::Event]) {
        let mut usage = self.shared.usage.get();
        let mut newest = None;
        for event in events {
            match self.etcd.event(event) {
                Ok(event) => {
                    if event.kind == EventKind::Delete && event.prev.is_none() {
                        usage.objects = usage.objects.saturating_sub(1);
                    }
                    usage = usage.after(&event);
                    newest = Some(event.revision());
                }
                Err(error) => tracing::warn!(%error, "the etcd feed skips an event"),
            }
        }
        self.shared.usage.set(usage);
        if let Some(revision) = newest {
            self.shared.current.fetch_max(revision, Ordering::AcqRel);
            self.shared
                .published
                .send_if_modified(|published| std::mem::replace(published, revision) != revision);
        }
    }

    /// Counts again after the feed missed events that etcd compacted away.
    async fn resync(&self, compacted: Revision) {
        tracing::warn!(
            compacted,
            "the etcd feed fell behind a compaction; counting again"
        );
        self.shared.compacted.fetch_max(compacted, Ordering::AcqRel);
        match self.etcd.count().await {
            Ok((usage, revision)) => {
                self.shared.usage.set(usage);
                self.shared.current.fetch_max(revision, Ordering::AcqRel);
                self.shared.published.send_replace(revision);
            }
            Err(error) => tracing::warn!(%error, "cannot count the keys in etcd"),
        }
    }
}

/// The state of one watch stream.
struct Watching {
    etcd: Etcd,
    shared: Arc<Shared>,
    range: (Vec<u8>, Vec<u8>),
    /// `None` after the connection broke, until it is reopened.
    stream: Option<WatchStream>,
    /// The revision up to which every event was delivered: the last event's, a progress
    /// notification's, or the revision the watch started after.
    last: Revision,
    pending: std::collections::VecDeque<Arc<Event>>,
    closed: watch::Receiver<Option<Revision>>,
    /// Once the store is dropped: the last revision to deliver, and until when to try.
    closing: Option<(Revision, tokio::time::Instant)>,
    reopens: u32,
    done: bool,
}

fn watching(state: Watching) -> EventStream {
    Box::pin(futures::stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    }))
}

impl Watching {
    async fn next(&mut self) -> Option<Result<Arc<Event>>> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            if let Some((last, until)) = self.closing
                && (self.last >= last || tokio::time::Instant::now() >= until)
            {
                return None;
            }
            let Some(stream) = self.stream.as_mut() else {
                if let Some(error) = self.reopen().await {
                    self.done = true;
                    return Some(Err(error));
                }
                continue;
            };
            let until = self.closing.map(|(_, until)| until);
            let message = tokio::select! {
                message = stream.message() => message,
                _ = self.closed.changed(), if self.closing.is_none() => {
                    let last = self
                        .closed
                        .borrow()
                        .unwrap_or_else(|| self.shared.current.load(Ordering::Acquire));
                    self.closing = Some((last, tokio::time::Instant::now() + CLOSE_GRACE));
                    continue;
                }
                _ = sleep_until(until) => continue,
            };
            match message {
                Ok(Some(response)) if response.compact_revision() > 0 => {
                    let compacted = response.compact_revision();
                    self.shared.compacted.fetch_max(compacted, Ordering::AcqRel);
                    self.done = true;
                    return Some(Err(Error::Compacted {
                        requested: self.last,
                        compacted,
                    }));
                }
                Ok(Some(response)) if response.canceled() => {
                    self.done = true;
                    return Some(Err(EtcdError::WatchCanceled(
                        response.cancel_reason().to_owned(),
                    )
                    .into()));
                }
                Ok(Some(response)) => {
                    self.reopens = 0;
                    if response.events().is_empty()
                        && let Some(header) = response.header()
                    {
                        // A progress notification: every event up to here was sent.
                        self.last = self.last.max(header.revision());
                        continue;
                    }
                    for event in response.events() {
                        match self.etcd.event(event) {
                            Ok(event) => {
                                self.last = self.last.max(event.revision());
                                self.pending.push_back(Arc::new(event));
                            }
                            Err(error) => {
                                self.done = true;
                                self.pending.clear();
                                return Some(Err(error));
                            }
                        }
                    }
                }
                Ok(None) | Err(_) => self.stream = None,
            }
        }
    }

    /// Reopens the watch after the last delivered revision; an error when that is no longer
    /// possible (compacted, refused, or broken too many times in a row).
    async fn reopen(&mut self) -> Option<Error> {
        if self.closing.is_some() {
            self.done = true;
            return None;
        }
        loop {
            if self.reopens >= WATCH_REOPENS {
                return Some(EtcdError::WatchBroken(self.reopens).into());
            }
            let pause = FIRST_BACKOFF
                .saturating_mul(1 << self.reopens.min(5))
                .min(MAX_BACKOFF);
            self.reopens += 1;
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = self.closed.changed() => {
                    self.done = true;
                    return None;
                }
            }
            match self
                .etcd
                .open_watch(self.range.clone(), self.last + 1)
                .await
            {
                Ok(stream) => {
                    self.stream = Some(stream);
                    return None;
                }
                Err(WatchFailed::Compacted(compacted)) => {
                    self.shared.compacted.fetch_max(compacted, Ordering::AcqRel);
                    return Some(Error::Compacted {
                        requested: self.last,
                        compacted,
                    });
                }
                Err(WatchFailed::Canceled(error)) => return Some(error),
                Err(WatchFailed::Broken(error)) => {
                    tracing::debug!(%error, "cannot reopen an etcd watch yet");
                }
            }
        }
    }
}

/// Sleeps until `until`, or forever without one.
async fn sleep_until(until: Option<tokio::time::Instant>) {
    match until {
        Some(until) => tokio::time::sleep_until(until).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::cluster::EtcdCluster;
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(60);
    const EVENT: Duration = Duration::from_secs(20);

    async fn next(watch: &mut EventStream) -> Arc<Event> {
        tokio::time::timeout(EVENT, watch.next())
            .await
            .expect("an event in time")
            .expect("stream open")
            .expect("an event")
    }

    #[test]
    fn endpoints_are_urls_with_a_host() {
        for good in [
            "http://127.0.0.1:2379",
            "https://etcd-0.etcd:2379",
            "http://[::1]:2379",
            "http://localhost:2379/",
        ] {
            assert!(check_endpoint(good).is_ok(), "{good}");
        }
        for bad in [
            "127.0.0.1:2379",
            "etcd:2379",
            "unix:///run/etcd.sock",
            "http://",
            "http:// host:2379",
            "http://host:2379/path",
            "http://user@host:2379",
            "http://host:port",
        ] {
            let error = check_endpoint(bad).expect_err(bad);
            assert!(error.to_string().contains(bad), "{error}");
        }
    }

    #[test]
    fn prefixes_start_with_a_slash_and_do_not_end_with_one() {
        for good in ["/atoll", "/atoll/hub", "/kamaji/tenant-1"] {
            assert!(check_prefix(good).is_ok(), "{good}");
        }
        let long = format!("/{}", "a".repeat(MAX_PREFIX_LEN));
        for bad in ["", "/", "atoll", "/atoll/", "/a b", "/a\tb", long.as_str()] {
            assert!(check_prefix(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tls_files_need_https_endpoints_and_come_in_pairs() {
        let mut options = EtcdOptions::new(vec!["http://127.0.0.1:2379".into()], "/atoll");
        assert!(tls(&options).unwrap().is_none());
        options.ca_file = Some("ca.pem".into());
        assert!(tls(&options).unwrap_err().to_string().contains("https://"));
        options.endpoints = vec!["https://127.0.0.1:2379".into()];
        options.ca_file = None;
        assert!(tls(&options).unwrap_err().to_string().contains("CA file"));
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not read until a connection").unwrap();
        options.ca_file = Some(ca.clone());
        options.cert_file = Some(ca);
        assert!(tls(&options).unwrap_err().to_string().contains("key"));
        options.ca_file = Some(dir.path().join("missing.pem"));
        options.cert_file = None;
        assert!(
            tls(&options)
                .unwrap_err()
                .to_string()
                .contains("missing.pem")
        );
        options.endpoints = vec![
            "https://127.0.0.1:2379".into(),
            "http://127.0.0.1:2380".into(),
        ];
        assert!(tls(&options).unwrap_err().to_string().contains("all"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unreachable_etcd_fails_within_the_timeout() {
        // A port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut options = EtcdOptions::new(vec![format!("http://127.0.0.1:{port}")], "/atoll");
        options.timeout = Duration::from_secs(2);
        let started = std::time::Instant::now();
        let error = tokio::time::timeout(TIMEOUT, EtcdBackend::connect(&options))
            .await
            .expect("connect gives up by itself")
            .err()
            .expect("no etcd there");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let source = std::error::Error::source(&error).expect("the etcd error");
        assert!(
            source
                .to_string()
                .contains("cannot reach etcd at http://127.0.0.1:"),
            "{source}"
        );
    }

    /// Two stores on one prefix (two API servers) see each other's writes, in their watches,
    /// current revisions and usage; a store on another prefix, even one that starts the same,
    /// sees none of them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stores_on_one_prefix_share_their_keys_and_others_do_not() {
        let check = async {
            let cluster = EtcdCluster::start(1).await;
            let one = cluster.backend("/hub").await;
            let two = cluster.backend("/hub").await;
            let other = cluster.backend("/hub2").await;
            let mut watch = two
                .watch("/registry/", two.current_revision())
                .await
                .unwrap();
            let created = one
                .create("/registry/a", Bytes::from_static(b"one"))
                .await
                .unwrap();
            let event = next(&mut watch).await;
            assert_eq!(
                (event.kind, event.kv.key.as_str(), event.revision()),
                (EventKind::Create, "/registry/a", created)
            );
            // The other store's feed is an etcd watch of its own: it sees the write soon, not
            // necessarily before this watch does.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while two.current_revision() < created && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!(two.current_revision(), created);
            assert_eq!(
                two.usage(),
                Usage {
                    objects: 1,
                    bytes: 3
                }
            );
            let err = two
                .update("/registry/a", Bytes::from_static(b"two"), created - 1)
                .await
                .unwrap_err();
            assert!(matches!(err, Error::Conflict { .. }), "{err:?}");
            let updated = two
                .update("/registry/a", Bytes::from_static(b"two"), created)
                .await
                .unwrap();
            assert_eq!(
                one.get("/registry/a").await.unwrap().unwrap().mod_revision,
                updated
            );

            other
                .create("/registry/a", Bytes::from_static(b"other"))
                .await
                .unwrap();
            assert_eq!(other.usage().objects, 1);
            assert_eq!(
                one.list(ListOptions::default()).await.unwrap().items.len(),
                1
            );
            assert_eq!(
                other.get("/registry/a").await.unwrap().unwrap().value,
                Bytes::from_static(b"other")
            );
            let event = next(&mut watch).await;
            assert_eq!(event.revision(), updated);
            // A third store opened now counts what is there.
            let three = cluster.backend("/hub").await;
            assert_eq!(three.usage(), one.usage());
            assert_eq!(three.usage().bytes, 3);
        };
        tokio::time::timeout(TIMEOUT, check)
            .await
            .expect("timed out");
    }

    /// An etcd that serves TLS and asks for client certificates: reachable with its CA and a
    /// client certificate, refused (in bounded time) without the certificate or with another CA.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connects_over_tls_with_a_client_certificate() {
        let check = async {
            let dir = tempfile::tempdir().unwrap();
            let files = super::cluster::TlsFiles::generate(dir.path());
            let cluster = EtcdCluster::start_tls(1, &files).await;
            let mut options = EtcdOptions::new(cluster.endpoints(), "/tls");
            assert!(options.endpoints[0].starts_with("https://"));
            options.timeout = Duration::from_secs(3);
            options.ca_file = Some(files.ca.clone());
            options.cert_file = Some(files.client_cert.clone());
            options.key_file = Some(files.client_key.clone());
            let store = EtcdBackend::connect(&options)
                .await
                .expect("connect over TLS");
            let created = store
                .create("/registry/a", Bytes::from_static(b"v"))
                .await
                .unwrap();
            assert_eq!(
                store
                    .get("/registry/a")
                    .await
                    .unwrap()
                    .unwrap()
                    .mod_revision,
                created
            );

            let mut anonymous = options.clone();
            anonymous.cert_file = None;
            anonymous.key_file = None;
            let error = EtcdBackend::connect(&anonymous)
                .await
                .err()
                .expect("refused");
            let source = std::error::Error::source(&error).expect("the etcd error");
            assert!(source.to_string().contains("cannot reach etcd"), "{source}");

            let other = tempfile::tempdir().unwrap();
            let strangers = super::cluster::TlsFiles::generate(other.path());
            let mut wrong_ca = options.clone();
            wrong_ca.ca_file = Some(strangers.ca);
            assert!(EtcdBackend::connect(&wrong_ca).await.is_err());
        };
        tokio::time::timeout(TIMEOUT, check)
            .await
            .expect("timed out");
    }

    /// A watch under a quiet prefix, whose connection breaks after other API servers on the same
    /// etcd wrote and compacted, reopens after its last progress notification rather than its
    /// last event (compacted away) and goes on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_quiet_watch_reopens_past_a_compaction_by_others() {
        let check = async {
            let mut cluster = EtcdCluster::start(1).await;
            let quiet = cluster.backend("/quiet").await;
            let busy = cluster.backend("/busy").await;
            let mut watch = quiet
                .watch("/registry/", quiet.current_revision())
                .await
                .unwrap();
            for i in 0..10 {
                busy.create(&format!("/registry/{i}"), Bytes::from_static(b"v"))
                    .await
                    .unwrap();
            }
            // The test etcd sends progress notifications every 500 ms.
            tokio::time::sleep(Duration::from_secs(2)).await;
            busy.compact(busy.current_revision()).await.unwrap();
            cluster.kill(0);
            cluster.restart(0).await;
            let mut tries = 0;
            let created = loop {
                match quiet
                    .create("/registry/after", Bytes::from_static(b"v"))
                    .await
                {
                    Ok(revision) => break revision,
                    Err(error) if tries < 40 => {
                        tries += 1;
                        tracing::debug!(%error, "etcd is not back yet");
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                    Err(error) => panic!("no write after etcd restarted: {error}"),
                }
            };
            let event = next(&mut watch).await;
            assert_eq!(
                (event.kv.key.as_str(), event.revision()),
                ("/registry/after", created)
            );
        };
        tokio::time::timeout(TIMEOUT, check)
            .await
            .expect("timed out");
    }

    /// With one member of three killed, writes, reads, lists and a watch opened before go on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keeps_serving_when_one_member_is_killed() {
        let check = async {
            let mut cluster = EtcdCluster::start(3).await;
            let store = cluster.backend("/hub").await;
            let mut watch = store
                .watch("/registry/", store.current_revision())
                .await
                .unwrap();
            let mut revisions = Vec::new();
            for i in 0..5 {
                revisions.push(
                    store
                        .create(&format!("/registry/before/{i}"), Bytes::from_static(b"v"))
                        .await
                        .unwrap(),
                );
            }
            for revision in &revisions {
                assert_eq!(next(&mut watch).await.revision(), *revision);
            }
            cluster.kill(0);
            let started = std::time::Instant::now();
            for i in 0..20 {
                let key = format!("/registry/after/{i}");
                let mut tries = 0;
                let revision = loop {
                    // The first calls may go to the dead member before the client notices.
                    match store.create(&key, Bytes::from_static(b"v")).await {
                        Ok(revision) => break revision,
                        Err(Error::AlreadyExists(_)) => {
                            break store.get(&key).await.unwrap().unwrap().mod_revision;
                        }
                        Err(error) if tries < 20 => {
                            tries += 1;
                            tracing::debug!(%error, "retrying a write after the kill");
                            tokio::time::sleep(Duration::from_millis(250)).await;
                        }
                        Err(error) => panic!("writes fail after one member died: {error}"),
                    }
                };
                assert_eq!(next(&mut watch).await.revision(), revision);
            }
            assert!(started.elapsed() < TIMEOUT);
            let page = store
                .list(ListOptions {
                    prefix: "/registry/",
                    ..ListOptions::default()
                })
                .await
                .unwrap();
            assert_eq!(page.items.len(), 25);
            assert_eq!(store.usage().objects, 25);
            assert_eq!(store.current_revision(), page.revision);
        };
        tokio::time::timeout(2 * TIMEOUT, check)
            .await
            .expect("timed out");
    }
}
