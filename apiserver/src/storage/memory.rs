//! An in-memory backend with full history, for tests and benchmarks.
//!
//! Every version of every key is kept until [`Backend::compact`], so lists at past revisions and
//! watches from past revisions work exactly as on the durable backend. Nothing survives a restart.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use tokio::sync::watch;

use super::{
    Backend, Error, Event, EventKind, EventStream, History, KeyValue, ListOptions, ListPage,
    Result, Revision, Usage, UsageCounters, check_snapshot_record, event_stream,
};

/// A revisioned key-value store held in memory.
pub struct MemoryBackend {
    shared: Arc<Shared>,
    /// The last revision written. Only the backend holds the sender, so watches end when the
    /// backend is dropped.
    published: watch::Sender<Revision>,
}

struct Shared {
    state: Mutex<State>,
    current: AtomicI64,
    compacted: AtomicI64,
    usage: UsageCounters,
}

struct State {
    /// Every version of every key after compaction, oldest first.
    keys: BTreeMap<String, Vec<Version>>,
    /// Every event after `compacted`: `log[i]` has revision `compacted + 1 + i`.
    log: VecDeque<Arc<Event>>,
    current: Revision,
    compacted: Revision,
}

/// One write to a key: a value, or a tombstone (`value == None`).
struct Version {
    mod_revision: Revision,
    create_revision: Revision,
    value: Option<Bytes>,
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBackend {
    /// An empty store at revision 0.
    pub fn new() -> Self {
        Self::with_state(BTreeMap::new(), 0, Usage::default())
    }

    /// A store holding a snapshot: the live keys at `revision`, which becomes both its current
    /// and its compacted revision (the history before it is not part of a snapshot, so watches
    /// from older revisions answer `Compacted`). Refuses records in the future of `revision`,
    /// with impossible revisions, or repeating a key.
    pub fn restored(
        revision: Revision,
        records: impl IntoIterator<Item = Result<KeyValue>>,
    ) -> Result<Self> {
        let mut keys = BTreeMap::new();
        let mut usage = Usage::default();
        for record in records {
            let kv = record?;
            check_snapshot_record(&kv, revision)?;
            usage = usage.after(&Event {
                kind: EventKind::Create,
                kv: kv.clone(),
                prev: None,
            });
            let version = Version {
                mod_revision: kv.mod_revision,
                create_revision: kv.create_revision,
                value: Some(kv.value),
            };
            if keys.insert(kv.key.clone(), vec![version]).is_some() {
                return Err(Error::Backend(
                    format!("the snapshot holds key {:?} twice", kv.key).into(),
                ));
            }
        }
        Ok(Self::with_state(keys, revision, usage))
    }

    fn with_state(keys: BTreeMap<String, Vec<Version>>, revision: Revision, usage: Usage) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    keys,
                    log: VecDeque::new(),
                    current: revision,
                    compacted: revision,
                }),
                current: AtomicI64::new(revision),
                compacted: AtomicI64::new(revision),
                usage: UsageCounters::new(usage),
            }),
            published: watch::Sender::new(revision),
        }
    }

    /// Records one write: the new version of `key`, the event, and the new revision, then
    /// publishes the revision while still holding the lock so that watches see revision order.
    fn commit(&self, state: &mut State, key: &str, version: Version, event: Event) {
        let revision = version.mod_revision;
        state.keys.entry(key.to_owned()).or_default().push(version);
        self.shared.usage.set(self.shared.usage.get().after(&event));
        state.log.push_back(Arc::new(event));
        state.current = revision;
        self.shared.current.store(revision, Ordering::Release);
        // Whether anybody watches or not.
        self.published.send_replace(revision);
    }
}

impl Shared {
    /// The state behind the lock. No code panics while holding it, so a poisoned lock still
    /// holds consistent state.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// The live value of `key` at `revision`, if any.
    fn value_at(key: &str, versions: &[Version], revision: Revision) -> Option<KeyValue> {
        let version = versions.iter().rev().find(|v| v.mod_revision <= revision)?;
        let value = version.value.clone()?;
        Some(KeyValue {
            key: key.to_owned(),
            value,
            create_revision: version.create_revision,
            mod_revision: version.mod_revision,
        })
    }

    fn latest(&self, key: &str) -> Option<KeyValue> {
        let versions = self.keys.get(key)?;
        Self::value_at(key, versions, self.current)
    }

    fn check_compare(key: &str, current: &KeyValue, expected: Revision) -> Result<()> {
        if current.mod_revision == expected {
            Ok(())
        } else {
            Err(Error::Conflict {
                key: key.to_owned(),
                expected,
                current: Box::new(current.clone()),
            })
        }
    }
}

#[async_trait::async_trait]
impl Backend for MemoryBackend {
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision> {
        let mut state = self.shared.lock();
        if state.latest(key).is_some() {
            return Err(Error::AlreadyExists(key.to_owned()));
        }
        let revision = state.current + 1;
        let kv = KeyValue {
            key: key.to_owned(),
            value: value.clone(),
            create_revision: revision,
            mod_revision: revision,
        };
        let version = Version {
            mod_revision: revision,
            create_revision: revision,
            value: Some(value),
        };
        let event = Event {
            kind: EventKind::Create,
            kv,
            prev: None,
        };
        self.commit(&mut state, key, version, event);
        Ok(revision)
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision> {
        let mut state = self.shared.lock();
        let prev = state
            .latest(key)
            .ok_or_else(|| Error::NotFound(key.to_owned()))?;
        State::check_compare(key, &prev, expected)?;
        let revision = state.current + 1;
        let kv = KeyValue {
            key: key.to_owned(),
            value: value.clone(),
            create_revision: prev.create_revision,
            mod_revision: revision,
        };
        let version = Version {
            mod_revision: revision,
            create_revision: prev.create_revision,
            value: Some(value),
        };
        let event = Event {
            kind: EventKind::Update,
            kv,
            prev: Some(prev),
        };
        self.commit(&mut state, key, version, event);
        Ok(revision)
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<(Revision, KeyValue)> {
        let mut state = self.shared.lock();
        let prev = state
            .latest(key)
            .ok_or_else(|| Error::NotFound(key.to_owned()))?;
        if let Some(expected) = expected {
            State::check_compare(key, &prev, expected)?;
        }
        let revision = state.current + 1;
        let deleted = KeyValue {
            mod_revision: revision,
            ..prev.clone()
        };
        let version = Version {
            mod_revision: revision,
            create_revision: prev.create_revision,
            value: None,
        };
        let event = Event {
            kind: EventKind::Delete,
            kv: deleted.clone(),
            prev: Some(prev),
        };
        self.commit(&mut state, key, version, event);
        Ok((revision, deleted))
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        Ok(self.shared.lock().latest(key))
    }

    async fn list(&self, options: ListOptions<'_>) -> Result<ListPage> {
        let state = self.shared.lock();
        let revision = match options.revision {
            None => state.current,
            Some(requested) if requested < state.compacted => {
                return Err(Error::Compacted {
                    requested,
                    compacted: state.compacted,
                });
            }
            Some(requested) if requested > state.current => {
                return Err(Error::FutureRevision {
                    requested,
                    current: state.current,
                });
            }
            Some(requested) => requested,
        };
        let prefix = options.prefix;
        let lower = match options.start_after {
            Some(start) if start >= prefix => Bound::Excluded(start),
            _ => Bound::Included(prefix),
        };
        let mut visible = state
            .keys
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter_map(|(key, versions)| State::value_at(key, versions, revision));
        let limit = options
            .limit
            .filter(|&limit| limit > 0)
            .unwrap_or(usize::MAX);
        let items: Vec<KeyValue> = visible.by_ref().take(limit).collect();
        let remaining = visible.count();
        Ok(ListPage {
            items,
            revision,
            remaining,
        })
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<EventStream> {
        let state = self.shared.lock();
        if after < state.compacted {
            return Err(Error::Compacted {
                requested: after,
                compacted: state.compacted,
            });
        }
        // Subscribed under the lock: the receiver sees every revision after `state.current`.
        let published = self.published.subscribe();
        let upto = state.current;
        drop(state);
        let history = Arc::clone(&self.shared);
        Ok(event_stream(
            history,
            published,
            prefix.to_owned(),
            after,
            upto,
        ))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let mut state = self.shared.lock();
        if revision <= state.compacted {
            return Ok(());
        }
        if revision > state.current {
            return Err(Error::FutureRevision {
                requested: revision,
                current: state.current,
            });
        }
        state.keys.retain(|_, versions| {
            if let Some(newest_kept) = versions.iter().rposition(|v| v.mod_revision <= revision) {
                versions.drain(..newest_kept);
                if versions.first().is_some_and(|v| v.value.is_none()) {
                    versions.remove(0);
                }
            }
            !versions.is_empty()
        });
        let dropped = usize::try_from(revision - state.compacted).unwrap_or(usize::MAX);
        let dropped = dropped.min(state.log.len());
        state.log.drain(..dropped);
        state.compacted = revision;
        self.shared.compacted.store(revision, Ordering::Release);
        Ok(())
    }

    fn current_revision(&self) -> Revision {
        self.shared.current.load(Ordering::Acquire)
    }

    fn compacted_revision(&self) -> Revision {
        self.shared.compacted.load(Ordering::Acquire)
    }

    fn usage(&self) -> Usage {
        self.shared.usage.get()
    }
}

#[async_trait::async_trait]
impl History for Shared {
    async fn read(
        self: Arc<Self>,
        prefix: &str,
        after: Revision,
        upto: Revision,
    ) -> Result<(Vec<Arc<Event>>, Revision)> {
        let state = self.lock();
        if after < state.compacted {
            return Err(Error::Compacted {
                requested: after,
                compacted: state.compacted,
            });
        }
        let upto = upto.min(state.current);
        // `log[i]` has revision `compacted + 1 + i`.
        let first = usize::try_from(after - state.compacted).unwrap_or(usize::MAX);
        let end = usize::try_from(upto - state.compacted).unwrap_or(0);
        let events = state
            .log
            .range(first.min(end)..end)
            .filter(|event| event.kv.key.starts_with(prefix))
            .cloned()
            .collect();
        Ok((events, upto))
    }
}
