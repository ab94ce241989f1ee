//! Revisioned key-value storage with etcd's and kine's semantics.
//!
//! Every write gets the next value of one global revision, which the HTTP layer exposes as
//! `resourceVersion`. Keys are plain strings such as `/registry/configmaps/default/demo`; values
//! are the JSON bytes of an object without its `resourceVersion` (the server fills that in from
//! `mod_revision` on the way out, as kube-apiserver's etcd3 store does).
//!
//! Nothing here knows about HTTP or Kubernetes objects. Backends: [`memory`] for tests and
//! benchmarks, [`sqlite`] (WAL, group commit) for durable use on one machine, and [`etcd`] for
//! API servers that share an etcd cluster; all pass the conformance suite in
//! `storage/conformance.rs`.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures::Stream;

#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(not(feature = "etcd"))]
#[path = "storage/etcd_disabled.rs"]
pub mod etcd;
mod etcd_options;
pub mod memory;
pub mod sqlite;

#[cfg(test)]
mod conformance;

/// A position in the store's history. Starts at 1 for an empty store; 0 means "before anything".
pub type Revision = i64;

/// One key at one revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// The revision that created this key (kept across updates).
    pub create_revision: Revision,
    /// The revision of the last write to this key.
    pub mod_revision: Revision,
}

/// What a committed write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Create,
    Update,
    Delete,
}

/// One committed write, as watchers see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    /// For Create and Update, the new value. For Delete, the last value before deletion, with
    /// `mod_revision` set to the revision of the delete itself.
    pub kv: KeyValue,
    /// The value before this write (None for Create).
    pub prev: Option<KeyValue>,
}

impl Event {
    /// The revision of the write this event records.
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }
}

/// A page of keys read at one revision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListPage {
    pub items: Vec<KeyValue>,
    /// The revision the page was read at (current revision when none was asked for).
    pub revision: Revision,
    /// Keys under the prefix after the last item of this page, at the same revision.
    pub remaining: usize,
}

/// What a store holds now: live keys and the bytes of their values. Kept as running counters by
/// every backend, so reading it costs nothing (limits check it before every write).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Live keys.
    pub objects: u64,
    /// The sum of the lengths of the live keys' values.
    pub bytes: u64,
}

impl Usage {
    /// The usage after the write an event records.
    fn after(self, event: &Event) -> Usage {
        let len = |kv: &KeyValue| u64::try_from(kv.value.len()).unwrap_or(u64::MAX);
        let mut usage = self;
        if let Some(prev) = &event.prev {
            usage.objects = usage.objects.saturating_sub(1);
            usage.bytes = usage.bytes.saturating_sub(len(prev));
        }
        if event.kind != EventKind::Delete {
            usage.objects = usage.objects.saturating_add(1);
            usage.bytes = usage.bytes.saturating_add(len(&event.kv));
        }
        usage
    }

    /// The usage of a set of live keys.
    fn of<'a>(live: impl IntoIterator<Item = &'a KeyValue>) -> Usage {
        live.into_iter().fold(Usage::default(), |usage, kv| Usage {
            objects: usage.objects + 1,
            bytes: usage
                .bytes
                .saturating_add(u64::try_from(kv.value.len()).unwrap_or(u64::MAX)),
        })
    }
}

/// [`Usage`] as two counters that writers update and anyone reads without a lock.
#[derive(Debug, Default)]
struct UsageCounters {
    objects: std::sync::atomic::AtomicU64,
    bytes: std::sync::atomic::AtomicU64,
}

impl UsageCounters {
    fn new(usage: Usage) -> Self {
        let counters = UsageCounters::default();
        counters.set(usage);
        counters
    }

    fn get(&self) -> Usage {
        use std::sync::atomic::Ordering;
        Usage {
            objects: self.objects.load(Ordering::Acquire),
            bytes: self.bytes.load(Ordering::Acquire),
        }
    }

    /// Called by the one writer of a backend (under its lock or on its writer thread).
    fn set(&self, usage: Usage) {
        use std::sync::atomic::Ordering;
        self.objects.store(usage.objects, Ordering::Release);
        self.bytes.store(usage.bytes, Ordering::Release);
    }
}

/// Parameters of a list.
#[derive(Clone, Debug, Default)]
pub struct ListOptions<'a> {
    /// Only keys that start with this prefix.
    pub prefix: &'a str,
    /// Read at this revision; `None` reads the latest. Err(Compacted) if compacted away, Err(FutureRevision) if ahead.
    pub revision: Option<Revision>,
    /// Only keys strictly greater than this one (for paging).
    pub start_after: Option<&'a str>,
    /// At most this many items; `None` or 0 for all.
    pub limit: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("key {0:?} already exists")]
    AlreadyExists(String),
    #[error("key {0:?} not found")]
    NotFound(String),
    /// A compare-and-swap found another revision. Carries the current value so that callers can
    /// report or retry without a second read.
    #[error("key {key:?} was modified: expected revision {expected}, found {}", current.mod_revision)]
    Conflict {
        key: String,
        expected: Revision,
        current: Box<KeyValue>,
    },
    #[error("revision {requested} has been compacted (compacted revision is {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    #[error("revision {requested} is ahead of the current revision {current}")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    #[error("storage backend failed")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("storage backend is closed")]
    Closed,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How many writes the layer above a backend has under way (being decoded, validated, admitted)
/// towards it: a backend that commits writes in batches waits for them to join the batch rather
/// than commit each alone. Each write is counted while a [`WriteUnderWay`] lives.
#[derive(Clone, Debug, Default)]
pub struct WritesUnderWay(Arc<AtomicUsize>);

impl WritesUnderWay {
    /// Counts one more write under way, until the returned guard drops.
    pub fn start(&self) -> WriteUnderWay<'_> {
        self.0.fetch_add(1, Ordering::Relaxed);
        WriteUnderWay(self)
    }

    pub fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One write counted in [`WritesUnderWay`].
#[derive(Debug)]
pub struct WriteUnderWay<'a>(&'a WritesUnderWay);

impl Drop for WriteUnderWay<'_> {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A stream of committed events in revision order. Ends when the backend shuts down; yields
/// `Err(Error::Compacted)` once if the watcher fell so far behind that events were lost.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Arc<Event>>> + Send>>;

/// The storage contract, with etcd's semantics.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Creates `key`; fails with `AlreadyExists` if it is live. Returns the new revision.
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision>;

    /// Replaces `key` if its `mod_revision` equals `expected`. `NotFound` if absent, `Conflict`
    /// if the revision moved. Returns the new revision.
    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision>;

    /// Deletes `key`, if `expected` is given only when its `mod_revision` equals it. Returns the
    /// revision of the delete and the value that was deleted, with `mod_revision` set to the
    /// revision of the delete (as in the `Delete` event, and as kube-apiserver reports it).
    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<(Revision, KeyValue)>;

    /// The latest value of `key`, if live.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>>;

    /// Live keys under a prefix at one revision, in key order.
    async fn list(&self, options: ListOptions<'_>) -> Result<ListPage>;

    /// Every event with a revision greater than `after`, under `prefix`, then live events as they
    /// commit. `Err(Compacted)` if `after` is older than the compacted revision.
    async fn watch(&self, prefix: &str, after: Revision) -> Result<EventStream>;

    /// Forgets history up to and including `revision`: older versions of keys and deleted keys.
    /// The latest version of every live key stays. Reads and watches at older revisions then
    /// fail with `Compacted`. Compacting at or below the compacted revision does nothing;
    /// compacting ahead of the current revision is `FutureRevision`.
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// The revision of the last committed write (0 for an empty store).
    fn current_revision(&self) -> Revision;

    /// Where the layer above counts the writes it has under way, for a backend that gathers
    /// them into batches; `None` for one that does not.
    fn writes_under_way(&self) -> Option<&WritesUnderWay> {
        None
    }

    /// The revision the store was last compacted at (0 if never).
    fn compacted_revision(&self) -> Revision;

    /// The live keys and the bytes of their values, at the latest revision.
    fn usage(&self) -> Usage;
}

/// Checks one record of a snapshot read at `revision`: its revisions are possible (created no
/// later than last modified, both after 0 and at or before the snapshot's revision).
fn check_snapshot_record(kv: &KeyValue, revision: Revision) -> Result<()> {
    if kv.create_revision < 1 || kv.create_revision > kv.mod_revision || kv.mod_revision > revision
    {
        return Err(Error::Backend(
            format!(
                "the snapshot at revision {revision} holds key {:?} created at revision {} and modified at {}",
                kv.key, kv.create_revision, kv.mod_revision
            )
            .into(),
        ));
    }
    Ok(())
}

/// Where a watch reads its events: its initial replay, and every batch the backend publishes
/// after it. A backend keeps its recent events in memory within a byte budget, and older ones
/// where it stores them.
#[async_trait::async_trait]
trait History: Send + Sync + 'static {
    /// Events under `prefix` with revisions in `(after, upto]`, in order, and the revision up to
    /// which that range has been read: `upto`, or less when the answer was cut short, but always
    /// more than `after` when `after < upto`. `Err(Compacted)` if `after` is compacted away.
    async fn read(
        self: Arc<Self>,
        prefix: &str,
        after: Revision,
        upto: Revision,
    ) -> Result<(Vec<Arc<Event>>, Revision)>;
}

/// The revision of the last event a backend published; watches wait on it. It carries no
/// events: a channel of events would keep its last events alive whatever their size (a thousand
/// events of 1.5 MiB objects, gigabytes), where a backend's history keeps to its byte budget.
type Published = tokio::sync::watch::Receiver<Revision>;

/// A watch over everything a backend publishes, in revision order, read from `history`.
///
/// The stream first replays `(after, upto]` (the caller subscribed `published` when `upto` was
/// the last published revision), then waits for each newer revision and reads up to it. If
/// history no longer has what the stream needs, it yields `Err(Compacted)` once and ends. It
/// ends when the backend is dropped.
fn event_stream(
    history: Arc<dyn History>,
    published: Published,
    prefix: String,
    after: Revision,
    upto: Revision,
) -> EventStream {
    struct Feed {
        history: Arc<dyn History>,
        published: Published,
        prefix: String,
        /// The last revision looked at, whether or not it matched the prefix.
        last: Revision,
        /// Read history up to here before waiting for the next revision.
        target: Revision,
        pending: VecDeque<Arc<Event>>,
        done: bool,
    }

    let feed = Feed {
        history,
        published,
        prefix,
        last: after,
        target: upto,
        pending: VecDeque::new(),
        done: false,
    };
    Box::pin(futures::stream::unfold(feed, |mut feed| async move {
        loop {
            if let Some(event) = feed.pending.pop_front() {
                return Some((Ok(event), feed));
            }
            if feed.done {
                return None;
            }
            if feed.last < feed.target {
                let read = Arc::clone(&feed.history)
                    .read(&feed.prefix, feed.last, feed.target)
                    .await;
                match read {
                    Ok((events, covered)) if covered > feed.last => {
                        feed.pending.extend(events);
                        feed.last = covered;
                    }
                    Ok(_) => {
                        feed.done = true;
                        let stuck = format!(
                            "watch history made no progress after revision {}",
                            feed.last
                        );
                        return Some((Err(Error::Backend(stuck.into())), feed));
                    }
                    Err(error) => {
                        feed.done = true;
                        return Some((Err(error), feed));
                    }
                }
                continue;
            }
            // An error: the backend is gone.
            feed.published.changed().await.ok()?;
            feed.target = *feed.published.borrow_and_update();
        }
    }))
}
