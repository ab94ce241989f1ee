//! The watch cache: one storage watch feeds a bounded ring of events, and every HTTP watcher
//! reads from that ring by revision. Each event's JSON is built once from the stored bytes, with
//! its `resourceVersion` spliced in rather than the object decoded and serialized again, and
//! shared by every watcher; the object is decoded only when something needs it as a tree
//! (selectors, another representation or version, a read of the object). A watcher that falls
//! behind the ring, or asks for a revision older than the ring holds, is served straight from
//! storage (or told its revision expired).
//!
//! The cache also keeps the current state: the newest version of every live object, loaded
//! from storage at start and kept by the same events, so that lists are served from memory
//! (the events' JSON, spliced into the list), as kube-apiserver serves them from its watch
//! cache.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use atoll_runtime::backoff::Retries;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{Notify, watch};

use crate::registry::selector::{FieldSelector, LabelSelector};
use crate::registry::store::{decode, matches};
use crate::storage::{Backend, EventKind, KeyValue, Revision};

/// One committed change.
#[derive(Debug)]
pub struct CachedEvent {
    pub revision: Revision,
    pub kind: EventKind,
    pub key: String,
    /// The object after the change as stored (for deletions: its last state, with the delete's
    /// revision).
    stored: KeyValue,
    /// The object's JSON with its `resourceVersion`, as serializing the decoded object gives it:
    /// built once for an event, which every watcher sends; the current state leaves it out and
    /// builds it when a list asks (see [`Self::current`]).
    json: Option<Bytes>,
    /// The object's `apiVersion` (the storage version).
    api_version: String,
    /// The object decoded, kept for consumers that read a small set of objects again and
    /// again (policies, RBAC, the namespaces and params policies look up): see [`Self::object`].
    object: OnceLock<Arc<Value>>,
    /// The stored object before the change, when the backend gave it.
    prev_stored: Option<KeyValue>,
    /// Stored size of the object and its previous state, counted against the cache's budget.
    stored_bytes: usize,
}

impl CachedEvent {
    /// The object serialized as JSON: an event's, shared by every watcher; a current object's,
    /// built from its stored bytes for this caller.
    pub fn object_json(&self) -> Bytes {
        match &self.json {
            Some(json) => json.clone(),
            None => with_resource_version(&self.stored.value, self.revision)
                .map_or_else(|| self.stored.value.clone(), |(json, _)| json),
        }
    }

    /// Appends the object's JSON to `out` (a list's body), splicing a current object's
    /// `resourceVersion` in as it goes rather than building its JSON apart first; the length
    /// it appends is at most [`Self::json_len_bound`].
    pub fn write_json(&self, out: &mut bytes::BytesMut) {
        use bytes::BufMut;
        if let Some(json) = &self.json {
            return out.put_slice(json);
        }
        let stored = &self.stored.value[..];
        match plan_splice(stored, self.revision) {
            Some((_, Some((at, field)))) => {
                out.put_slice(&stored[..at]);
                out.put_slice(field.as_bytes());
                out.put_slice(&stored[at..]);
            }
            Some((_, None)) => out.put_slice(stored),
            None => out.put_slice(&self.object_json()),
        }
    }

    /// The most [`Self::write_json`] appends: the stored bytes and the field it may splice in.
    pub fn json_len_bound(&self) -> usize {
        match &self.json {
            Some(json) => json.len(),
            None => self.stored.value.len() + RESOURCE_VERSION_FIELD_BOUND,
        }
    }

    /// The object's `apiVersion`.
    pub fn api_version(&self) -> &str {
        &self.api_version
    }

    /// The object after the change, decoded once and kept with the event however many ask.
    /// Only for the few kinds read again and again: a tree is several times the size of the
    /// stored bytes the ring's and the state's budgets count, so paths that see every event or
    /// every object once use [`Self::decoded`] and [`Self::matches`] instead.
    pub fn object(&self) -> &Arc<Value> {
        self.object
            .get_or_init(|| Arc::new(decode(&self.stored).unwrap_or(Value::Null)))
    }

    /// The object after the change as a tree, not kept: the one [`Self::object`] kept if there
    /// is one, else decoded for this caller alone.
    pub fn decoded(&self) -> Arc<Value> {
        match self.object.get() {
            Some(object) => object.clone(),
            None => Arc::new(decode(&self.stored).unwrap_or(Value::Null)),
        }
    }

    /// The object before the change as a tree, not kept, when the backend gave it.
    pub fn previous(&self) -> Option<Value> {
        self.prev_stored.as_ref().and_then(|kv| decode(kv).ok())
    }

    /// The stored JSON of the object before the change, when the backend gave it.
    pub fn prev_json(&self) -> Option<&[u8]> {
        self.prev_stored.as_ref().map(|kv| &kv.value[..])
    }

    /// Whether the object after the change (`before` false), or before it (`before` true, false
    /// when the backend did not give it), matches the selectors. Only its name, namespace and
    /// labels are decoded unless a field selector reads other fields, and nothing decoded is
    /// kept.
    pub fn matches(&self, labels: &LabelSelector, fields: &FieldSelector, before: bool) -> bool {
        if !before && let Some(object) = self.object.get() {
            return matches(object, labels, fields);
        }
        let stored = if before {
            self.prev_stored.as_ref()
        } else {
            Some(&self.stored)
        };
        let Some(stored) = stored else {
            return false;
        };
        let object = if fields.reads_only_metadata() {
            selectable(&stored.value)
        } else {
            decode(stored).ok()
        };
        object.is_some_and(|object| matches(&object, labels, fields))
    }

    /// The same object without its previous state and without its JSON: what the current
    /// state keeps. It holds the stored bytes, which a backend that keeps its latest values in
    /// memory (SQLite) shares with them, so that every live object's bytes are held once, not
    /// once by the backend and again, with the `resourceVersion` spliced in, by the cache; a
    /// list splices it in for each object it sends.
    fn current(&self) -> Self {
        CachedEvent {
            revision: self.revision,
            kind: self.kind,
            key: self.key.clone(),
            stored: self.stored.clone(),
            json: None,
            api_version: self.api_version.clone(),
            object: self.object.clone(),
            prev_stored: None,
            stored_bytes: self.stored.value.len(),
        }
    }

    /// A live object as storage holds it, for the state loaded at start.
    fn stored(kv: &KeyValue) -> Option<Self> {
        let api_version = api_version_of(&kv.value)?;
        Some(CachedEvent {
            revision: kv.mod_revision,
            kind: EventKind::Create,
            key: kv.key.clone(),
            stored: kv.clone(),
            stored_bytes: kv.value.len(),
            json: None,
            api_version,
            object: OnceLock::new(),
            prev_stored: None,
        })
    }

    fn from_storage(event: &crate::storage::Event) -> Option<Self> {
        let (json, api_version) = with_resource_version(&event.kv.value, event.kv.mod_revision)?;
        Some(CachedEvent {
            revision: event.revision(),
            kind: event.kind,
            key: event.kv.key.clone(),
            stored: event.kv.clone(),
            json: Some(json),
            api_version,
            object: OnceLock::new(),
            prev_stored: event.prev.clone(),
            stored_bytes: event.kv.value.len() + event.prev.as_ref().map_or(0, |p| p.value.len()),
        })
    }
}

/// What selectors read of a stored object when they read no other fields: `metadata` with
/// its `name`, `namespace` and `labels`; the rest of the JSON is skipped, not decoded.
fn selectable(stored: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Object {
        metadata: Option<Metadata>,
    }
    #[derive(serde::Deserialize)]
    struct Metadata {
        name: Option<Value>,
        namespace: Option<Value>,
        labels: Option<Value>,
    }
    let object: Object = serde_json::from_slice(stored).ok()?;
    let mut metadata = serde_json::Map::new();
    if let Some(m) = object.metadata {
        for (key, value) in [
            ("name", m.name),
            ("namespace", m.namespace),
            ("labels", m.labels),
        ] {
            if let Some(value) = value {
                metadata.insert(key.to_owned(), value);
            }
        }
    }
    Some(serde_json::json!({ "metadata": metadata }))
}

/// The stored JSON of an object with `metadata.resourceVersion` set to `revision`, byte for byte
/// what decoding it and serializing it again gives (stored objects are compact JSON with their
/// keys in order), and its `apiVersion`; `None` when the bytes are not a JSON object. The field
/// is spliced into the bytes where it belongs among the metadata's keys: nothing is decoded but
/// the names of the top-level fields and of the metadata's (a list splices every object it
/// sends). Metadata that already has the field, or keys with escapes, take the longer way.
fn with_resource_version(stored: &[u8], revision: Revision) -> Option<(Bytes, String)> {
    let Some((top, splice)) = plan_splice(stored, revision) else {
        return with_resource_version_decoding(stored, revision);
    };
    let json = match splice {
        Some((at, field)) => {
            // Sized exactly: the cache may keep this buffer as long as the event.
            let mut json = Vec::with_capacity(stored.len() + field.len());
            json.extend_from_slice(&stored[..at]);
            json.extend_from_slice(field.as_bytes());
            json.extend_from_slice(&stored[at..]);
            Bytes::from(json)
        }
        None => Bytes::copy_from_slice(stored),
    };
    Some((json, top.api_version()))
}

/// How the `resourceVersion` field goes into stored bytes without decoding them: the object's
/// top level, and where to insert what (`None`: there is no metadata object, so nothing to set,
/// as decoding would leave it). `None` when the bytes need the decoding way.
fn plan_splice(stored: &[u8], revision: Revision) -> Option<(Top<'_>, Option<(usize, String)>)> {
    let top = Top::parse(stored)?;
    let splice = match top.metadata {
        Some(metadata) if metadata.get().starts_with('{') => {
            Some(splice_point(stored, metadata, revision)?)
        }
        _ => None,
    };
    Some((top, splice))
}

/// The most `"resourceVersion":"N",` takes, with any revision.
const RESOURCE_VERSION_FIELD_BOUND: usize = r#","resourceVersion":"""#.len() + 20 + 1;

/// What [`with_resource_version`] reads of an object's top level: the rest is skipped.
#[derive(serde::Deserialize)]
struct Top<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    api_version: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    metadata: Option<&'a RawValue>,
}

impl<'a> Top<'a> {
    /// `None` unless `stored` is one JSON object with a string `apiVersion`, if any, and at
    /// most one `metadata`.
    fn parse(stored: &'a [u8]) -> Option<Self> {
        let first = stored.iter().find(|b| !b.is_ascii_whitespace())?;
        if *first != b'{' {
            return None;
        }
        serde_json::from_slice(stored).ok()
    }

    fn api_version(&self) -> String {
        self.api_version.as_deref().unwrap_or_default().to_owned()
    }
}

/// Where in `stored` the field goes, before the first metadata key that sorts after it or
/// before the metadata's closing brace, and the text to insert there. `None` when the metadata
/// has the field already or a key with an escape.
fn splice_point(stored: &[u8], metadata: &RawValue, revision: Revision) -> Option<(usize, String)> {
    const FIELD: &str = "resourceVersion";
    let keys: BTreeMap<&str, serde::de::IgnoredAny> = serde_json::from_str(metadata.get()).ok()?;
    if keys.contains_key(FIELD) {
        return None;
    }
    let offset = |text: &str| (text.as_ptr() as usize).checked_sub(stored.as_ptr() as usize);
    let next = keys
        .range::<str, _>((std::ops::Bound::Excluded(FIELD), std::ops::Bound::Unbounded))
        .next();
    match next {
        Some((key, _)) => {
            // The key's opening quote.
            let at = offset(key)?.checked_sub(1)?;
            (stored.get(at) == Some(&b'"')).then(|| (at, format!("\"{FIELD}\":\"{revision}\",")))
        }
        None => {
            let at = offset(metadata.get())? + metadata.get().len() - 1;
            let comma = if keys.is_empty() { "" } else { "," };
            (stored.get(at) == Some(&b'}'))
                .then(|| (at, format!("{comma}\"{FIELD}\":\"{revision}\"")))
        }
    }
}

/// [`with_resource_version`] by splitting the top level and the metadata into raw values and
/// serializing them again.
fn with_resource_version_decoding(stored: &[u8], revision: Revision) -> Option<(Bytes, String)> {
    let top: BTreeMap<String, &RawValue> = serde_json::from_slice(stored).ok()?;
    let api_version = api_version_in(&top);
    let metadata = top
        .get("metadata")
        .and_then(|m| serde_json::from_str::<BTreeMap<String, &RawValue>>(m.get()).ok());
    let Some(mut metadata) = metadata else {
        return Some((Bytes::copy_from_slice(stored), api_version));
    };
    let version = RawValue::from_string(format!("\"{revision}\"")).ok()?;
    metadata.insert("resourceVersion".to_owned(), &version);
    let metadata = serde_json::value::to_raw_value(&metadata).ok()?;
    let object: BTreeMap<&str, &RawValue> = top
        .iter()
        .map(|(key, value)| match key.as_str() {
            "metadata" => (key.as_str(), &*metadata),
            _ => (key.as_str(), *value),
        })
        .collect();
    let mut json = Vec::with_capacity(stored.len() + version.get().len() + 20);
    serde_json::to_writer(&mut json, &object).ok()?;
    Some((Bytes::from(json), api_version))
}

/// The `apiVersion` of a stored object (empty when it has none); `None` when the bytes are not
/// a JSON object, which [`with_resource_version`] refuses too.
fn api_version_of(stored: &[u8]) -> Option<String> {
    if let Some(top) = Top::parse(stored) {
        return Some(top.api_version());
    }
    let top: BTreeMap<String, &RawValue> = serde_json::from_slice(stored).ok()?;
    Some(api_version_in(&top))
}

fn api_version_in(top: &BTreeMap<String, &RawValue>) -> String {
    top.get("apiVersion")
        .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
        .unwrap_or_default()
}

/// Why the cache cannot serve a revision.
#[derive(Debug, PartialEq, Eq)]
pub struct TooOld;

/// The cache never holds fewer events than this, whatever their size.
const MIN_EVENTS: usize = 16;

struct Ring {
    events: VecDeque<Arc<CachedEvent>>,
    /// The newest event of each key the ring holds: a read of an object the cache has decoded
    /// already does not decode it again.
    newest: HashMap<String, Arc<CachedEvent>>,
    /// The sum of the events' `stored_bytes`.
    bytes: usize,
    /// The ring holds every event with a revision above this one.
    complete_after: Revision,
}

/// The newest version of every live object, as of `revision`.
struct State {
    objects: BTreeMap<String, Arc<CachedEvent>>,
    revision: Revision,
    /// How many of `objects` each resource has (`pods`, `deployments.apps`).
    counts: HashMap<String, u64>,
}

impl State {
    fn count(&mut self, key: &str, added: bool) {
        let Some((group, plural)) = crate::metrics::resource_of_key(key) else {
            return;
        };
        let resource = crate::metrics::storage_resource(group, plural);
        if added {
            *self.counts.entry(resource).or_default() += 1;
        } else if let Some(count) = self.counts.get_mut(&resource) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.counts.remove(&resource);
            }
        }
    }
}

/// How many objects one read of storage loads into the state at start.
const LOAD_PAGE: usize = 10_000;

/// The shared event cache.
pub struct WatchCache {
    ring: RwLock<Ring>,
    state: RwLock<State>,
    capacity: usize,
    budget: usize,
    latest: watch::Sender<Revision>,
    /// The controllers' feeds, each fed the events it wants.
    feeds: RwLock<Vec<Arc<Feed>>>,
    backend: Arc<dyn Backend>,
}

impl WatchCache {
    /// Starts feeding the cache from the backend's current revision; the feeding task ends when
    /// `shutdown` turns true or the backend closes. The cache keeps at most `capacity` events and
    /// at most `budget` bytes of stored objects (the newest 16 events always stay).
    pub async fn start(
        backend: Arc<dyn Backend>,
        capacity: usize,
        budget: usize,
        mut shutdown: watch::Receiver<bool>,
    ) -> crate::storage::Result<Arc<Self>> {
        let start = backend.current_revision();
        let objects = load(&*backend, start).await?;
        let mut events = backend.watch("/registry/", start).await?;
        let (latest, _) = watch::channel(start);
        let cache = Arc::new(WatchCache {
            ring: RwLock::new(Ring {
                events: VecDeque::new(),
                newest: HashMap::new(),
                bytes: 0,
                complete_after: start,
            }),
            state: RwLock::new({
                let mut state = State {
                    objects: BTreeMap::new(),
                    revision: start,
                    counts: HashMap::new(),
                };
                for key in objects.keys() {
                    state.count(key, true);
                }
                state.objects = objects;
                state
            }),
            capacity: capacity.max(MIN_EVENTS),
            budget,
            latest,
            feeds: RwLock::new(Vec::new()),
            backend,
        });
        let feeder = cache.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    next = events.next() => match next {
                        Some(Ok(event)) => feeder.push(&event),
                        Some(Err(err)) => {
                            tracing::error!(error = %err, "watch cache lost its storage watch; restarting it");
                            let from = *feeder.latest.borrow();
                            match feeder.backend.watch("/registry/", from).await {
                                Ok(stream) => events = stream,
                                Err(err) => {
                                    tracing::error!(error = %err, "cannot restart the storage watch");
                                    return;
                                }
                            }
                        }
                        None => return,
                    },
                    _ = shutdown.changed() => return,
                }
            }
        });
        Ok(cache)
    }

    fn push(&self, event: &crate::storage::Event) {
        let Some(cached) = CachedEvent::from_storage(event) else {
            tracing::error!(key = %event.kv.key, "cannot decode a stored object; watchers skip it");
            // Lists do not show a version it replaced.
            let mut state = match self.state.write() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            if state.objects.remove(&event.kv.key).is_some() {
                state.count(&event.kv.key, false);
            }
            state.revision = event.revision();
            drop(state);
            self.latest.send_replace(event.revision());
            return;
        };
        let revision = cached.revision;
        let cached = Arc::new(cached);
        for feed in read(&self.feeds).iter() {
            feed.offer(&cached);
        }
        {
            let mut ring = match self.ring.write() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            ring.bytes += cached.stored_bytes;
            ring.newest.insert(cached.key.clone(), cached.clone());
            ring.events.push_back(cached.clone());
            while ring.events.len() > self.capacity
                || (ring.bytes > self.budget && ring.events.len() > MIN_EVENTS)
            {
                if let Some(evicted) = ring.events.pop_front() {
                    ring.bytes -= evicted.stored_bytes;
                    ring.complete_after = evicted.revision;
                    if ring
                        .newest
                        .get(&evicted.key)
                        .is_some_and(|newest| Arc::ptr_eq(newest, &evicted))
                    {
                        ring.newest.remove(&evicted.key);
                    }
                }
            }
        }
        {
            let mut state = match self.state.write() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            match cached.kind {
                EventKind::Delete => {
                    if state.objects.remove(&cached.key).is_some() {
                        state.count(&cached.key, false);
                    }
                }
                EventKind::Create | EventKind::Update => {
                    let before = state
                        .objects
                        .insert(cached.key.clone(), Arc::new(cached.current()));
                    if before.is_none() {
                        state.count(&cached.key, true);
                    }
                }
            }
            state.revision = revision;
        }
        self.latest.send_replace(revision);
    }

    /// The live objects under `prefix`, in key order, and the revision they are current at.
    pub fn list(&self, prefix: &str) -> (Vec<Arc<CachedEvent>>, Revision) {
        let state = read(&self.state);
        let objects = state
            .objects
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(_, object)| object.clone())
            .collect();
        (objects, state.revision)
    }

    /// How many live objects each resource has (`pods`, `deployments.apps`), by name.
    pub fn object_counts(&self) -> Vec<(String, u64)> {
        let mut counts: Vec<(String, u64)> = read(&self.state)
            .counts
            .iter()
            .map(|(resource, count)| (resource.clone(), *count))
            .collect();
        counts.sort();
        counts
    }

    /// Waits (at most `timeout`) until the cache holds every event up to `revision`; whether
    /// it does.
    pub async fn caught_up(&self, revision: Revision, timeout: std::time::Duration) -> bool {
        let mut latest = self.latest.subscribe();
        matches!(
            tokio::time::timeout(timeout, latest.wait_for(|seen| *seen >= revision)).await,
            Ok(Ok(_))
        )
    }

    /// A feed of the events `wants` picks, from now on: what a controller follows.
    pub fn feed(&self, wants: fn(&CachedEvent) -> bool) -> Arc<Feed> {
        let feed = Arc::new(Feed {
            wants,
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
        });
        let mut feeds = match self.feeds.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        feeds.push(feed.clone());
        feed
    }

    /// A receiver that changes whenever an event enters the cache.
    pub fn subscribe(&self) -> watch::Receiver<Revision> {
        self.latest.subscribe()
    }

    /// The object stored under `key` at `revision` (at the storage version, with its
    /// `resourceVersion`), when the cache still holds that write and has it decoded already
    /// (this decodes nothing, and so keeps nothing).
    pub fn object(&self, key: &str, revision: Revision) -> Option<Arc<Value>> {
        let ring = read(&self.ring);
        ring.newest
            .get(key)
            .filter(|e| e.revision == revision && e.kind != EventKind::Delete)
            .and_then(|e| e.object.get().cloned())
    }

    /// The events under `prefix` with a revision above `after`, oldest first, plus the revision
    /// the caller has now seen up to (including events under other prefixes).
    pub fn events_after(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<(Vec<Arc<CachedEvent>>, Revision), TooOld> {
        let ring = read(&self.ring);
        if after < ring.complete_after {
            return Err(TooOld);
        }
        let start = ring.events.partition_point(|e| e.revision <= after);
        let mut seen = after;
        let mut out = Vec::new();
        for event in ring.events.range(start..) {
            seen = event.revision;
            if event.key.starts_with(prefix) {
                out.push(event.clone());
            }
        }
        Ok((out, seen))
    }
}

/// Every live object at `revision`, read from storage a page at a time.
async fn load(
    backend: &dyn Backend,
    revision: Revision,
) -> crate::storage::Result<BTreeMap<String, Arc<CachedEvent>>> {
    let mut objects = BTreeMap::new();
    let mut after: Option<String> = None;
    loop {
        let page = backend
            .list(crate::storage::ListOptions {
                prefix: "/registry/",
                revision: Some(revision),
                start_after: after.as_deref(),
                limit: Some(LOAD_PAGE),
            })
            .await?;
        for kv in &page.items {
            match CachedEvent::stored(kv) {
                Some(object) => {
                    objects.insert(kv.key.clone(), Arc::new(object));
                }
                None => {
                    tracing::error!(key = %kv.key, "cannot decode a stored object; lists from the cache skip it")
                }
            }
        }
        after = page.items.last().map(|kv| kv.key.clone());
        if page.remaining == 0 || after.is_none() {
            return Ok(objects);
        }
    }
}

/// Converts a storage event for a watcher that is served from storage rather than the cache.
pub fn decode_event(event: &crate::storage::Event) -> Option<Arc<CachedEvent>> {
    CachedEvent::from_storage(event).map(Arc::new)
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    match lock.read() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Events a feed holds at most before its controller is told it fell behind.
const FEED_EVENTS: usize = 4096;
/// Stored bytes a feed's events hold at most (they stay alive while queued, ring or not).
const FEED_BYTES: usize = 16 << 20;

/// The events one controller follows, as an informer hands them: only those its filter picks
/// are queued for it as the cache takes them, so a write that concerns no controller (the
/// creation of a ConfigMap, say) wakes none. A controller that does not keep up, with more than
/// [`FEED_EVENTS`] events or [`FEED_BYTES`] waiting, loses them and is told to look at
/// everything again.
pub struct Feed {
    wants: fn(&CachedEvent) -> bool,
    queue: Mutex<Queue>,
    wake: Notify,
}

#[derive(Default)]
struct Queue {
    events: Vec<Arc<CachedEvent>>,
    bytes: usize,
    lagged: bool,
}

/// What a controller takes from its feed.
#[derive(Debug)]
pub enum Taken {
    /// The events since the last take, oldest first (maybe none).
    Events(Vec<Arc<CachedEvent>>),
    /// Events were dropped: the controller must look at everything again.
    Lagged,
}

impl Feed {
    fn offer(&self, event: &Arc<CachedEvent>) {
        if !(self.wants)(event) {
            return;
        }
        {
            let mut queue = self.lock();
            if queue.lagged {
                return;
            }
            queue.events.push(event.clone());
            queue.bytes += event.stored_bytes;
            if queue.events.len() > FEED_EVENTS || queue.bytes > FEED_BYTES {
                *queue = Queue {
                    lagged: true,
                    ..Queue::default()
                };
            }
        }
        self.wake.notify_one();
    }

    /// Takes what is queued.
    pub fn take(&self) -> Taken {
        let queue = std::mem::take(&mut *self.lock());
        if queue.lagged {
            Taken::Lagged
        } else {
            Taken::Events(queue.events)
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        match self.queue.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// How long a controller that follows the cache waits before it tries again what failed.
pub const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// What a controller following a feed does between passes: waits until the feed has something
/// (an event it wants, or news that it lagged), [`RETRY`] passes when `retry` (a whole pass
/// failed), the next key of `retries` is due (a key that failed, after its backoff), or the
/// server stops. False when it stops.
pub async fn next_pass<K: Ord + Clone>(
    feed: &Feed,
    retry: bool,
    retries: &Retries<K>,
    shutdown: &mut watch::Receiver<bool>,
) -> bool {
    let due = retries.next_in(std::time::Instant::now());
    let within = match (retry.then_some(RETRY), due) {
        (Some(retry), Some(due)) => Some(retry.min(due)),
        (retry, due) => retry.or(due),
    };
    next_pass_within(feed, within, shutdown).await
}

/// As [`next_pass`], with the longest wait given: `None` waits for the feed alone.
pub async fn next_pass_within(
    feed: &Feed,
    within: Option<std::time::Duration>,
    shutdown: &mut watch::Receiver<bool>,
) -> bool {
    let timer = async {
        match within {
            Some(wait) => tokio::time::sleep(wait).await,
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = feed.wake.notified() => {}
        _ = timer => {}
        _ = shutdown.changed() => return false,
    }
    !*shutdown.borrow()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::memory::MemoryBackend;

    /// Waits (5 s at most) until the cache has taken in the write at `revision`.
    async fn until_cached(cache: &WatchCache, revision: Revision) {
        let mut changes = cache.subscribe();
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while *changes.borrow_and_update() < revision {
                changes.changed().await.unwrap();
            }
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn events_enter_the_cache_in_order_and_old_ones_expire() {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let (_tx, rx) = watch::channel(false);
        let cache = WatchCache::start(backend.clone(), 16, usize::MAX, rx)
            .await
            .unwrap();
        let mut last = 0;
        for i in 0..40 {
            last = backend
                .create(
                    &format!("/registry/core/configmaps/ns/c{i:02}"),
                    Bytes::from(r#"{"metadata":{"name":"x"}}"#),
                )
                .await
                .unwrap();
        }
        until_cached(&cache, last).await;
        assert!(matches!(cache.events_after("/registry/", 0), Err(TooOld)));
        let (events, seen) = cache
            .events_after("/registry/core/configmaps/", last - 5)
            .unwrap();
        assert_eq!(seen, last);
        let revisions: Vec<_> = events.iter().map(|e| e.revision).collect();
        assert_eq!(revisions, ((last - 4)..=last).collect::<Vec<_>>());
        assert_eq!(
            events[0].object()["metadata"]["resourceVersion"],
            (last - 4).to_string()
        );
        let (none, _) = cache
            .events_after("/registry/core/secrets/", last - 5)
            .unwrap();
        assert!(none.is_empty());
    }

    #[tokio::test]
    async fn the_cache_keeps_to_its_byte_budget() {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let (_tx, rx) = watch::channel(false);
        // Room for about 20 objects of 1 KB, far fewer than the event capacity.
        let cache = WatchCache::start(backend.clone(), 1000, 20_000, rx)
            .await
            .unwrap();
        let filler = "x".repeat(1000);
        let mut last = 0;
        for i in 0..100 {
            let body = format!(r#"{{"metadata":{{"name":"c{i}"}},"data":{{"k":"{filler}"}}}}"#);
            last = backend
                .create(
                    &format!("/registry/core/configmaps/ns/c{i:03}"),
                    Bytes::from(body),
                )
                .await
                .unwrap();
        }
        until_cached(&cache, last).await;
        assert!(matches!(
            cache.events_after("/registry/", last - 30),
            Err(TooOld)
        ));
        let (events, _) = cache.events_after("/registry/", last - 16).unwrap();
        assert_eq!(events.len(), 16);
    }

    fn is_service(event: &CachedEvent) -> bool {
        event.key.starts_with("/registry/core/services/")
    }

    #[tokio::test]
    async fn a_feed_holds_the_events_it_wants_and_wakes_only_for_them() {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let (_tx, mut rx) = watch::channel(false);
        let cache = WatchCache::start(backend.clone(), 1000, 1 << 20, rx.clone())
            .await
            .unwrap();
        let feed = cache.feed(is_service);
        let mut last = 0;
        for i in 0..5 {
            last = backend
                .create(&format!("/registry/core/configmaps/ns/c{i}"), json_bytes())
                .await
                .unwrap();
        }
        until_cached(&cache, last).await;
        // Nothing it wants: no wake, nothing taken.
        let woken = tokio::time::timeout(
            std::time::Duration::from_millis(100),
            next_pass(&feed, false, &Retries::<()>::default(), &mut rx),
        )
        .await;
        assert!(woken.is_err(), "a ConfigMap woke a Service feed");
        assert!(matches!(feed.take(), Taken::Events(e) if e.is_empty()));
        let a = backend
            .create("/registry/core/services/ns/a", json_bytes())
            .await
            .unwrap();
        let b = backend
            .create("/registry/core/services/ns/b", json_bytes())
            .await
            .unwrap();
        until_cached(&cache, b).await;
        assert!(next_pass(&feed, false, &Retries::<()>::default(), &mut rx).await);
        let Taken::Events(events) = feed.take() else {
            panic!("the feed lagged");
        };
        let revisions: Vec<Revision> = events.iter().map(|e| e.revision).collect();
        assert_eq!(revisions, [a, b]);
    }

    #[tokio::test]
    async fn a_feed_that_is_not_read_lags_instead_of_growing() {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let (_tx, rx) = watch::channel(false);
        let cache = WatchCache::start(backend.clone(), 100, 1 << 20, rx)
            .await
            .unwrap();
        let feed = cache.feed(is_service);
        let mut last = 0;
        for i in 0..=FEED_EVENTS {
            last = backend
                .create(&format!("/registry/core/services/ns/s{i}"), json_bytes())
                .await
                .unwrap();
        }
        until_cached(&cache, last).await;
        assert!(matches!(feed.take(), Taken::Lagged));
        // Afterwards it follows again.
        let next = backend
            .create("/registry/core/services/ns/after", json_bytes())
            .await
            .unwrap();
        until_cached(&cache, next).await;
        assert!(matches!(feed.take(), Taken::Events(e) if e.len() == 1 && e[0].revision == next));
    }

    fn json_bytes() -> Bytes {
        Bytes::from_static(br#"{"metadata":{"name":"x"}}"#)
    }

    #[tokio::test]
    async fn selectors_read_the_stored_bytes_and_keep_nothing_decoded() {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let (_tx, rx) = watch::channel(false);
        let cache = WatchCache::start(backend.clone(), 16, usize::MAX, rx)
            .await
            .unwrap();
        let key = "/registry/core/secrets/ns/a";
        let labelled = |app: &str| {
            Bytes::from(format!(
                r#"{{"metadata":{{"name":"a","namespace":"ns","labels":{{"app":"{app}"}}}},"type":"Opaque","data":{{"k":"dg=="}}}}"#
            ))
        };
        let first = backend.create(key, labelled("web")).await.unwrap();
        let second = backend.update(key, labelled("db"), first).await.unwrap();
        until_cached(&cache, second).await;
        let (events, _) = cache.events_after(key, first).unwrap();
        let update = &events[0];
        let labels = |s: &str| LabelSelector::parse(s).unwrap();
        let fields = |s: &str| FieldSelector::parse(s, &["type"]).unwrap();
        let none = fields("");
        // After the change and before it.
        assert!(update.matches(&labels("app=db"), &none, false));
        assert!(!update.matches(&labels("app=db"), &none, true));
        assert!(update.matches(&labels("app=web"), &none, true));
        assert!(update.matches(&labels("app"), &fields("metadata.name=a"), false));
        assert!(!update.matches(&labels(""), &fields("metadata.namespace=other"), false));
        // A field beyond name and namespace is read from the whole object.
        assert!(update.matches(&labels(""), &fields("type=Opaque"), false));
        assert!(!update.matches(&labels(""), &fields("type!=Opaque"), true));
        // Neither the event nor the state the list serves keeps a tree.
        assert!(update.object.get().is_none());
        let (state, _) = cache.list(key);
        assert!(state.iter().all(|o| o.object.get().is_none()));
        assert!(cache.object(key, second).is_none());
        // A create has no state before it.
        let (events, _) = cache.events_after(key, 0).unwrap();
        assert!(!events[0].matches(&labels(""), &none, true));
    }

    #[tokio::test]
    async fn the_state_holds_the_stored_bytes_once_and_lists_splice_the_resource_version() {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let config = |name: &str| {
            Bytes::from(format!(
                r#"{{"apiVersion":"v1","data":{{"k":"1"}},"kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns"}}}}"#
            ))
        };
        let loaded = "/registry/core/configmaps/ns/loaded";
        let before = backend.create(loaded, config("loaded")).await.unwrap();
        let (_tx, rx) = watch::channel(false);
        let cache = WatchCache::start(backend.clone(), 16, usize::MAX, rx)
            .await
            .unwrap();
        let written = "/registry/core/configmaps/ns/written";
        let after = backend.create(written, config("written")).await.unwrap();
        until_cached(&cache, after).await;
        let (state, _) = cache.list("/registry/core/configmaps/ns/");
        assert_eq!(state.len(), 2);
        for (object, revision) in state.iter().zip([before, after]) {
            let stored = backend.get(&object.key).await.unwrap().unwrap();
            // Loaded at start or kept from an event, the state holds the backend's bytes, not
            // a copy of its own.
            assert_eq!(object.stored.value.as_ptr(), stored.value.as_ptr());
            assert!(object.json.is_none());
            // A list gets the JSON decoding and serializing again would give.
            let decoded = decode(&stored).unwrap();
            assert_eq!(decoded["metadata"]["resourceVersion"], revision.to_string());
            assert_eq!(
                object.object_json(),
                Bytes::from(serde_json::to_vec(&decoded).unwrap())
            );
            // A list writes the same into its body.
            let mut body = bytes::BytesMut::new();
            object.write_json(&mut body);
            assert!(body.len() <= object.json_len_bound());
            assert_eq!(body.freeze(), object.object_json());
            assert_eq!(object.api_version(), "v1");
        }
    }

    #[tokio::test]
    async fn the_cache_answers_reads_of_the_writes_it_holds() {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let (_tx, rx) = watch::channel(false);
        let cache = WatchCache::start(backend.clone(), 16, usize::MAX, rx)
            .await
            .unwrap();
        let key = "/registry/core/configmaps/ns/a";
        let first = backend
            .create(
                key,
                Bytes::from(r#"{"metadata":{"name":"a"},"data":{"k":"1"}}"#),
            )
            .await
            .unwrap();
        let second = backend
            .update(
                key,
                Bytes::from(r#"{"metadata":{"name":"a"},"data":{"k":"2"}}"#),
                first,
            )
            .await
            .unwrap();
        until_cached(&cache, second).await;
        // Nothing decoded, nothing kept: a read decodes the stored bytes itself.
        assert!(cache.object(key, second).is_none());
        let (events, _) = cache.events_after(key, 0).unwrap();
        for event in &events {
            event.object();
        }
        // Once decoded, only the newest write of a key is kept for reads.
        assert!(cache.object(key, first).is_none());
        let object = cache.object(key, second).unwrap();
        assert_eq!(object["data"]["k"], "2");
        assert_eq!(object["metadata"]["resourceVersion"], second.to_string());
        // A deletion answers none.
        let (deleted, _) = backend.delete(key, None).await.unwrap();
        until_cached(&cache, deleted).await;
        assert!(cache.object(key, second).is_none());
        assert!(cache.object(key, deleted).is_none());
    }

    #[tokio::test]
    async fn objects_are_counted_by_resource_from_the_load_and_the_events() {
        let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let object = |name: &str| Bytes::from(format!(r#"{{"metadata":{{"name":"{name}"}}}}"#));
        backend
            .create("/registry/core/configmaps/ns/loaded", object("loaded"))
            .await
            .unwrap();
        let (_tx, rx) = watch::channel(false);
        let cache = WatchCache::start(backend.clone(), 16, usize::MAX, rx)
            .await
            .unwrap();
        assert_eq!(cache.object_counts(), [("configmaps".to_owned(), 1)]);
        let key = "/registry/apps/deployments/ns/d";
        let created = backend.create(key, object("d")).await.unwrap();
        let updated = backend.update(key, object("d"), created).await.unwrap();
        let other = backend
            .create("/registry/core/configmaps/ns/b", object("b"))
            .await
            .unwrap();
        until_cached(&cache, other.max(updated)).await;
        assert_eq!(
            cache.object_counts(),
            [
                ("configmaps".to_owned(), 2),
                ("deployments.apps".to_owned(), 1)
            ]
        );
        let (deleted, _) = backend.delete(key, None).await.unwrap();
        until_cached(&cache, deleted).await;
        assert_eq!(cache.object_counts(), [("configmaps".to_owned(), 2)]);
    }

    #[test]
    fn the_spliced_json_is_what_the_decoded_object_serializes_to() {
        let objects = [
            serde_json::json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "namespace": "ns", "uid": "u-1", "labels": {"a\"b": "é ✓"},
                    "ownerReferences": [], "annotations": {"x": "line\nbreak\t\u{0001}"}},
                "spec": {"n": -12, "f": 1.5, "big": 12345678901234567u64, "e": 1e300, "z": 0.0,
                    "list": [1, "two", null, {"k": []}, true], "empty": {}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}
            }),
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
            serde_json::json!({"kind": "NoMetadata", "data": {"a": "b"}}),
            serde_json::json!({"kind": "OddMetadata", "metadata": "not an object"}),
            serde_json::json!({"apiVersion": "v1", "data": {"metadata": {"z": 1}}, "kind": "ConfigMap",
                "metadata": {"name": "before", "namespace": "all"}}),
            serde_json::json!({"metadata": {"uid": "after", "selfLink": "/x"}, "spec": {}}),
            serde_json::json!({"metadata": {"resourceVersion": "7", "name": "had-one"}}),
            serde_json::json!({"metadata": {"na\"me": "escaped", "zz": 1}}),
            serde_json::json!({"metadata": null}),
        ];
        for object in objects {
            let stored = KeyValue {
                key: "/registry/k".to_owned(),
                value: Bytes::from(serde_json::to_vec(&object).unwrap()),
                create_revision: 3,
                mod_revision: 42,
            };
            let (json, api_version) = with_resource_version(&stored.value, 42).unwrap();
            let decoded = decode(&stored).unwrap();
            assert_eq!(
                String::from_utf8(json.to_vec()).unwrap(),
                serde_json::to_string(&decoded).unwrap()
            );
            assert_eq!(
                api_version,
                object["apiVersion"].as_str().unwrap_or_default()
            );
        }
        assert!(with_resource_version(b"[1, 2]", 1).is_none());
        assert!(with_resource_version(b"{not json", 1).is_none());
        assert!(with_resource_version(br#"{"metadata": {"name": "a"}, "spec": [}"#, 1).is_none());
        // Bytes not in serde_json's form still get the field, in a JSON object.
        let (json, _) =
            with_resource_version(br#" { "metadata" : { "name" : "a" } } "#, 9).unwrap();
        let object: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(object["metadata"]["resourceVersion"], "9");
        assert_eq!(object["metadata"]["name"], "a");
    }
}
