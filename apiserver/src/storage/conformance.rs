//! The storage conformance suite: every check runs against every backend.
//!
//! Each check is an async fn taking a fresh store; the `suite!` macro turns it into one
//! `#[tokio::test]` per backend, with a timeout. Checks count revisions from the store's current
//! revision at start: 0 for an empty store, 1 for a fresh etcd (etcd's first revision). The
//! etcd store of each check is on a 3-member etcd cluster of its own, started on loopback.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;

use super::memory::MemoryBackend;
use super::sqlite::SqliteBackend;
use super::{
    Backend, Error, Event, EventKind, EventStream, KeyValue, ListOptions, Revision, Usage,
};

type Store = Arc<dyn Backend>;

const TEST_TIMEOUT: Duration = Duration::from_secs(60);
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

async fn run<F, Fut>(store: Store, check: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = ()>,
{
    tokio::time::timeout(TEST_TIMEOUT, check(store))
        .await
        .expect("check timed out");
}

macro_rules! suite {
    ($($check:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    super::run(
                        std::sync::Arc::new(super::MemoryBackend::new()),
                        super::$check,
                    )
                    .await;
                }
            )*
        }

        #[cfg(feature = "etcd")]
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    let cluster = crate::storage::etcd::cluster::EtcdCluster::start(3).await;
                    let store = cluster.backend("/conformance").await;
                    super::run(std::sync::Arc::new(store), super::$check).await;
                    drop(cluster);
                }
            )*
        }

        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let store = super::SqliteBackend::open(&dir.path().join("store.db"))
                        .expect("open sqlite store");
                    super::run(std::sync::Arc::new(store), super::$check).await;
                }
            )*
        }
    };
}

suite!(
    revisions_increase_by_one_per_write,
    create_of_a_live_key_fails,
    update_compares_revisions,
    delete_with_and_without_expected_revision,
    get_returns_the_latest_live_value,
    list_matches_a_plain_string_prefix,
    list_pages_with_start_after_and_limit,
    list_at_a_past_revision_shows_the_old_state,
    list_at_a_compacted_revision_fails,
    list_ahead_of_the_current_revision_fails,
    watch_replays_history_then_follows_live_writes,
    watch_from_a_past_revision_starts_after_it,
    watch_filters_by_prefix,
    watch_from_a_compacted_revision_fails,
    watch_of_a_slow_reader_loses_nothing,
    watch_ends_when_the_store_is_dropped,
    compaction_keeps_the_latest_values,
    delete_event_carries_the_last_value,
    create_revision_is_stable_across_updates,
    concurrent_writers_get_contiguous_revisions,
    compact_ahead_of_the_current_revision_fails,
    usage_counts_live_keys_and_their_value_bytes,
);

fn value(text: &str) -> Bytes {
    Bytes::from(text.to_owned())
}

fn prefix(prefix: &str) -> ListOptions<'_> {
    ListOptions {
        prefix,
        ..ListOptions::default()
    }
}

fn keys(items: &[KeyValue]) -> Vec<&str> {
    items.iter().map(|kv| kv.key.as_str()).collect()
}

async fn next_event(stream: &mut EventStream) -> Arc<Event> {
    tokio::time::timeout(EVENT_TIMEOUT, stream.next())
        .await
        .expect("no event in time")
        .expect("stream ended")
        .expect("stream failed")
}

/// The next `n` events as `(kind, key, revision)`.
async fn next_events(stream: &mut EventStream, n: usize) -> Vec<(EventKind, String, Revision)> {
    let mut events = Vec::with_capacity(n);
    for _ in 0..n {
        let event = next_event(stream).await;
        events.push((event.kind, event.kv.key.clone(), event.revision()));
    }
    events
}

async fn revisions_increase_by_one_per_write(store: Store) {
    // An empty store is at revision 0 (1 for etcd, which starts there).
    let base = store.current_revision();
    assert!(matches!(base, 0 | 1), "{base}");
    assert_eq!(store.compacted_revision(), 0);
    let a = store.create("/a", value("1")).await.unwrap();
    assert_eq!(a, base + 1);
    let b = store.create("/b", value("1")).await.unwrap();
    assert_eq!(b, base + 2);
    let a2 = store.update("/a", value("2"), a).await.unwrap();
    assert_eq!(a2, base + 3);
    let (deleted, _) = store.delete("/b", None).await.unwrap();
    assert_eq!(deleted, base + 4);
    // Failed writes do not use a revision.
    assert!(store.create("/a", value("x")).await.is_err());
    assert!(store.update("/a", value("x"), a).await.is_err());
    assert_eq!(store.current_revision(), base + 4);
    assert_eq!(store.create("/c", value("1")).await.unwrap(), base + 5);
}

async fn create_of_a_live_key_fails(store: Store) {
    let first = store.create("/k", value("1")).await.unwrap();
    let err = store.create("/k", value("2")).await.unwrap_err();
    assert!(
        matches!(err, Error::AlreadyExists(ref key) if key == "/k"),
        "{err:?}"
    );
    assert_eq!(store.get("/k").await.unwrap().unwrap().value, value("1"));

    store.delete("/k", None).await.unwrap();
    let again = store.create("/k", value("3")).await.unwrap();
    let kv = store.get("/k").await.unwrap().unwrap();
    assert_eq!(kv.create_revision, again);
    assert!(again > first);
}

async fn update_compares_revisions(store: Store) {
    let created = store.create("/k", value("1")).await.unwrap();
    let updated = store.update("/k", value("2"), created).await.unwrap();
    let kv = store.get("/k").await.unwrap().unwrap();
    assert_eq!((kv.value, kv.mod_revision), (value("2"), updated));

    let err = store.update("/k", value("3"), created).await.unwrap_err();
    match err {
        Error::Conflict {
            key,
            expected,
            current,
        } => {
            assert_eq!(key, "/k");
            assert_eq!(expected, created);
            assert_eq!(current.value, value("2"));
            assert_eq!(current.mod_revision, updated);
            assert_eq!(current.create_revision, created);
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(store.get("/k").await.unwrap().unwrap().value, value("2"));

    let err = store.update("/missing", value("1"), 1).await.unwrap_err();
    assert!(
        matches!(err, Error::NotFound(ref key) if key == "/missing"),
        "{err:?}"
    );

    store.delete("/k", None).await.unwrap();
    let err = store.update("/k", value("4"), updated).await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
}

async fn delete_with_and_without_expected_revision(store: Store) {
    let a = store.create("/a", value("a")).await.unwrap();
    let b = store.create("/b", value("b")).await.unwrap();

    let (at, deleted) = store.delete("/a", None).await.unwrap();
    assert_eq!(at, b + 1);
    assert_eq!(deleted.key, "/a");
    assert_eq!(deleted.value, value("a"));
    assert_eq!(deleted.create_revision, a);
    assert_eq!(deleted.mod_revision, at);
    assert_eq!(store.get("/a").await.unwrap(), None);

    let err = store.delete("/b", Some(a)).await.unwrap_err();
    match err {
        Error::Conflict { current, .. } => assert_eq!(current.mod_revision, b),
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert!(store.get("/b").await.unwrap().is_some());

    let (at, deleted) = store.delete("/b", Some(b)).await.unwrap();
    assert_eq!(deleted.value, value("b"));
    assert_eq!(store.current_revision(), at);

    let err = store.delete("/b", None).await.unwrap_err();
    assert!(
        matches!(err, Error::NotFound(ref key) if key == "/b"),
        "{err:?}"
    );
    let err = store.delete("/never", Some(1)).await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
}

async fn get_returns_the_latest_live_value(store: Store) {
    assert_eq!(store.get("/k").await.unwrap(), None);
    let created = store.create("/k", value("1")).await.unwrap();
    let updated = store.update("/k", value("2"), created).await.unwrap();
    assert_eq!(
        store.get("/k").await.unwrap(),
        Some(KeyValue {
            key: "/k".to_owned(),
            value: value("2"),
            create_revision: created,
            mod_revision: updated,
        })
    );
    store.delete("/k", None).await.unwrap();
    assert_eq!(store.get("/k").await.unwrap(), None);
}

async fn list_matches_a_plain_string_prefix(store: Store) {
    for key in ["/b/1", "/a/2", "/ab/1", "/a/1", "/a", "/a/sub/1"] {
        store.create(key, value(key)).await.unwrap();
    }
    let page = store.list(prefix("/a/")).await.unwrap();
    assert_eq!(keys(&page.items), ["/a/1", "/a/2", "/a/sub/1"]);
    assert_eq!(page.revision, store.current_revision());
    assert_eq!(page.remaining, 0);
    assert_eq!(page.items[0].value, value("/a/1"));

    let page = store.list(prefix("/a")).await.unwrap();
    assert_eq!(
        keys(&page.items),
        ["/a", "/a/1", "/a/2", "/a/sub/1", "/ab/1"]
    );

    let page = store.list(prefix("")).await.unwrap();
    assert_eq!(page.items.len(), 6);

    assert!(store.list(prefix("/c/")).await.unwrap().items.is_empty());
}

async fn list_pages_with_start_after_and_limit(store: Store) {
    for i in 1..=5 {
        store.create(&format!("/p/{i}"), value("v")).await.unwrap();
    }
    store.create("/q/1", value("v")).await.unwrap();

    let first = store
        .list(ListOptions {
            prefix: "/p/",
            limit: Some(2),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(keys(&first.items), ["/p/1", "/p/2"]);
    assert_eq!(first.remaining, 3);

    // Writes between pages do not show: the next pages read at the first page's revision.
    store.create("/p/0", value("v")).await.unwrap();
    store.delete("/p/4", None).await.unwrap();
    store.create("/p/6", value("v")).await.unwrap();

    let second = store
        .list(ListOptions {
            prefix: "/p/",
            revision: Some(first.revision),
            start_after: Some("/p/2"),
            limit: Some(2),
        })
        .await
        .unwrap();
    assert_eq!(keys(&second.items), ["/p/3", "/p/4"]);
    assert_eq!(second.remaining, 1);
    assert_eq!(second.revision, first.revision);

    let third = store
        .list(ListOptions {
            prefix: "/p/",
            revision: Some(first.revision),
            start_after: Some("/p/4"),
            limit: Some(2),
        })
        .await
        .unwrap();
    assert_eq!(keys(&third.items), ["/p/5"]);
    assert_eq!(third.remaining, 0);

    // The same on the latest state.
    let latest = store
        .list(ListOptions {
            prefix: "/p/",
            start_after: Some("/p/2"),
            limit: Some(2),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(keys(&latest.items), ["/p/3", "/p/5"]);
    assert_eq!(latest.remaining, 1);

    // A limit of 0 means no limit.
    let all = store
        .list(ListOptions {
            prefix: "/p/",
            limit: Some(0),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(all.items.len(), 6);
    assert_eq!(all.remaining, 0);
}

async fn list_at_a_past_revision_shows_the_old_state(store: Store) {
    let a = store.create("/r/a", value("a1")).await.unwrap();
    let b = store.create("/r/b", value("b1")).await.unwrap();
    let c = store.create("/r/c", value("c1")).await.unwrap();
    let before = store.current_revision();
    store.update("/r/a", value("a2"), a).await.unwrap();
    store.delete("/r/b", None).await.unwrap();
    store.create("/r/d", value("d1")).await.unwrap();
    store.update("/r/c", value("c2"), c).await.unwrap();

    let old = store
        .list(ListOptions {
            prefix: "/r/",
            revision: Some(before),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(old.revision, before);
    assert_eq!(
        old.items,
        vec![
            KeyValue {
                key: "/r/a".to_owned(),
                value: value("a1"),
                create_revision: a,
                mod_revision: a,
            },
            KeyValue {
                key: "/r/b".to_owned(),
                value: value("b1"),
                create_revision: b,
                mod_revision: b,
            },
            KeyValue {
                key: "/r/c".to_owned(),
                value: value("c1"),
                create_revision: c,
                mod_revision: c,
            },
        ]
    );

    let older = store
        .list(ListOptions {
            prefix: "/r/",
            revision: Some(a),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(keys(&older.items), ["/r/a"]);

    let empty = store
        .list(ListOptions {
            prefix: "/r/",
            revision: Some(0),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert!(empty.items.is_empty());

    let now = store.list(prefix("/r/")).await.unwrap();
    assert_eq!(keys(&now.items), ["/r/a", "/r/c", "/r/d"]);
    assert_eq!(now.items[0].value, value("a2"));
}

async fn list_at_a_compacted_revision_fails(store: Store) {
    let a = store.create("/a", value("1")).await.unwrap();
    store.update("/a", value("2"), a).await.unwrap();
    let at = store.create("/b", value("1")).await.unwrap();
    store.create("/c", value("1")).await.unwrap();
    store.compact(at).await.unwrap();
    assert_eq!(store.compacted_revision(), at);

    let err = store
        .list(ListOptions {
            prefix: "/",
            revision: Some(at - 1),
            ..ListOptions::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Compacted { requested, compacted } if requested == at - 1 && compacted == at),
        "{err:?}"
    );

    // The compacted revision itself stays readable.
    let page = store
        .list(ListOptions {
            prefix: "/",
            revision: Some(at),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(keys(&page.items), ["/a", "/b"]);
    assert_eq!(page.items[0].value, value("2"));
}

async fn list_ahead_of_the_current_revision_fails(store: Store) {
    let at = store.create("/a", value("1")).await.unwrap();
    let err = store
        .list(ListOptions {
            prefix: "/",
            revision: Some(at + 1),
            ..ListOptions::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::FutureRevision { requested, current } if requested == at + 1 && current == at),
        "{err:?}"
    );
}

async fn compact_ahead_of_the_current_revision_fails(store: Store) {
    let at = store.create("/a", value("1")).await.unwrap();
    let err = store.compact(at + 1).await.unwrap_err();
    assert!(matches!(err, Error::FutureRevision { .. }), "{err:?}");
    assert_eq!(store.compacted_revision(), 0);
    store.compact(at).await.unwrap();
    // Compacting again at or below is a no-op.
    store.compact(at).await.unwrap();
    store.compact(0).await.unwrap();
    assert_eq!(store.compacted_revision(), at);
}

async fn watch_replays_history_then_follows_live_writes(store: Store) {
    let base = store.current_revision();
    let a = store.create("/w/a", value("1")).await.unwrap();
    store.update("/w/a", value("2"), a).await.unwrap();
    store.create("/w/b", value("1")).await.unwrap();
    store.delete("/w/a", None).await.unwrap();

    let mut watch = store.watch("/w/", 0).await.unwrap();
    assert_eq!(
        next_events(&mut watch, 4).await,
        vec![
            (EventKind::Create, "/w/a".to_owned(), base + 1),
            (EventKind::Update, "/w/a".to_owned(), base + 2),
            (EventKind::Create, "/w/b".to_owned(), base + 3),
            (EventKind::Delete, "/w/a".to_owned(), base + 4),
        ]
    );

    store.create("/w/c", value("1")).await.unwrap();
    store.update("/w/b", value("2"), base + 3).await.unwrap();
    let live = next_event(&mut watch).await;
    assert_eq!(live.kind, EventKind::Create);
    assert_eq!(live.kv.key, "/w/c");
    assert_eq!(live.kv.value, value("1"));
    assert_eq!(live.revision(), base + 5);
    let live = next_event(&mut watch).await;
    assert_eq!(live.kind, EventKind::Update);
    assert_eq!(live.revision(), base + 6);
    assert_eq!(
        live.prev.as_ref().map(|prev| prev.value.clone()),
        Some(value("1"))
    );
}

async fn watch_from_a_past_revision_starts_after_it(store: Store) {
    let base = store.current_revision();
    for i in 1..=5 {
        store.create(&format!("/w/{i}"), value("v")).await.unwrap();
    }
    let mut watch = store.watch("/w/", base + 3).await.unwrap();
    store.create("/w/6", value("v")).await.unwrap();
    let revisions: Vec<Revision> = next_events(&mut watch, 3)
        .await
        .into_iter()
        .map(|(_, _, revision)| revision)
        .collect();
    assert_eq!(revisions, [base + 4, base + 5, base + 6]);

    // From the current revision: only what comes next.
    let mut watch = store.watch("/w/", store.current_revision()).await.unwrap();
    store.create("/w/7", value("v")).await.unwrap();
    assert_eq!(next_event(&mut watch).await.kv.key, "/w/7");
}

async fn watch_filters_by_prefix(store: Store) {
    let base = store.current_revision();
    store.create("/a/1", value("v")).await.unwrap();
    store.create("/ab/1", value("v")).await.unwrap();
    let mut watch = store.watch("/a/", 0).await.unwrap();
    store.create("/ab/2", value("v")).await.unwrap();
    store.create("/b/1", value("v")).await.unwrap();
    store.create("/a/2", value("v")).await.unwrap();
    let events = next_events(&mut watch, 2).await;
    assert_eq!(
        events,
        vec![
            (EventKind::Create, "/a/1".to_owned(), base + 1),
            (EventKind::Create, "/a/2".to_owned(), base + 5),
        ]
    );
}

async fn watch_from_a_compacted_revision_fails(store: Store) {
    let base = store.current_revision();
    for i in 1..=4 {
        store.create(&format!("/w/{i}"), value("v")).await.unwrap();
    }
    store.compact(base + 2).await.unwrap();
    let err = store
        .watch("/w/", base + 1)
        .await
        .err()
        .expect("watch below compaction");
    assert!(
        matches!(
            err,
            Error::Compacted {
                requested,
                compacted,
            } if requested == base + 1 && compacted == base + 2
        ),
        "{err:?}"
    );
    // Events after the compacted revision are still there.
    let mut watch = store.watch("/w/", base + 2).await.unwrap();
    let keys: Vec<String> = next_events(&mut watch, 2)
        .await
        .into_iter()
        .map(|(_, key, _)| key)
        .collect();
    assert_eq!(keys, ["/w/3", "/w/4"]);
}

async fn watch_of_a_slow_reader_loses_nothing(store: Store) {
    let base = store.current_revision();
    let mut watch = store.watch("/s/", 0).await.unwrap();
    let mut other = store.watch("/t/", 0).await.unwrap();
    // Far more writes than any live buffer holds, while nobody reads the watches.
    let writers: Vec<_> = (0..10)
        .map(|task| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for i in 0..100 {
                    let key = if i % 10 == 0 {
                        format!("/t/{task}-{i}")
                    } else {
                        format!("/s/{task}-{i}")
                    };
                    store.create(&key, value("v")).await.unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let events = next_events(&mut watch, 900).await;
    assert!(events.iter().all(|(_, key, _)| key.starts_with("/s/")));
    assert!(events.windows(2).all(|pair| pair[0].2 < pair[1].2));
    let others = next_events(&mut other, 100).await;
    assert!(others.iter().all(|(_, key, _)| key.starts_with("/t/")));

    store.create("/s/last", value("v")).await.unwrap();
    assert_eq!(next_event(&mut watch).await.revision(), base + 1001);
}

async fn watch_ends_when_the_store_is_dropped(store: Store) {
    store.create("/a", value("v")).await.unwrap();
    let mut watch = store.watch("/", 0).await.unwrap();
    drop(store);
    assert_eq!(next_event(&mut watch).await.kv.key, "/a");
    let end = tokio::time::timeout(EVENT_TIMEOUT, watch.next())
        .await
        .expect("stream did not end");
    assert!(end.is_none(), "{end:?}");
}

async fn compaction_keeps_the_latest_values(store: Store) {
    let a = store.create("/c/a", value("a1")).await.unwrap();
    let a2 = store.update("/c/a", value("a2"), a).await.unwrap();
    store.create("/c/b", value("b1")).await.unwrap();
    store.delete("/c/b", None).await.unwrap();
    let c = store.create("/c/c", value("c1")).await.unwrap();
    let at = store.current_revision();
    let c2 = store.update("/c/c", value("c2"), c).await.unwrap();
    store.compact(at).await.unwrap();

    let a_now = store.get("/c/a").await.unwrap().unwrap();
    assert_eq!(
        (a_now.value, a_now.create_revision, a_now.mod_revision),
        (value("a2"), a, a2)
    );
    assert_eq!(store.get("/c/b").await.unwrap(), None);

    let at_compaction = store
        .list(ListOptions {
            prefix: "/c/",
            revision: Some(at),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(keys(&at_compaction.items), ["/c/a", "/c/c"]);
    assert_eq!(at_compaction.items[1].value, value("c1"));
    assert_eq!(at_compaction.items[1].create_revision, c);

    let latest = store.list(prefix("/c/")).await.unwrap();
    assert_eq!(latest.items[1].value, value("c2"));
    assert_eq!(latest.items[1].mod_revision, c2);

    // Writes continue after compaction, and a key deleted before it can be created again.
    let b = store.create("/c/b", value("b2")).await.unwrap();
    assert_eq!(b, c2 + 1);
    let updated = store.update("/c/c", value("c3"), c2).await.unwrap();
    let mut watch = store.watch("/c/", at).await.unwrap();
    let events = next_events(&mut watch, 3).await;
    assert_eq!(
        events,
        vec![
            (EventKind::Update, "/c/c".to_owned(), c2),
            (EventKind::Create, "/c/b".to_owned(), b),
            (EventKind::Update, "/c/c".to_owned(), updated),
        ]
    );
}

async fn delete_event_carries_the_last_value(store: Store) {
    let created = store.create("/d/k", value("1")).await.unwrap();
    let updated = store.update("/d/k", value("2"), created).await.unwrap();
    let mut live = store.watch("/d/", updated).await.unwrap();
    let (deleted_at, deleted) = store.delete("/d/k", Some(updated)).await.unwrap();
    // Enough later writes that a replay reads the delete from the oldest history.
    for i in 0..100 {
        store.create(&format!("/f/{i}"), value("v")).await.unwrap();
    }
    let mut replay = store.watch("/d/", updated).await.unwrap();

    let expected = Event {
        kind: EventKind::Delete,
        kv: KeyValue {
            key: "/d/k".to_owned(),
            value: value("2"),
            create_revision: created,
            mod_revision: deleted_at,
        },
        prev: Some(KeyValue {
            key: "/d/k".to_owned(),
            value: value("2"),
            create_revision: created,
            mod_revision: updated,
        }),
    };
    assert_eq!(deleted, expected.kv);
    assert_eq!(*next_event(&mut live).await, expected);
    assert_eq!(*next_event(&mut replay).await, expected);

    let recreated = store.create("/d/k", value("3")).await.unwrap();
    for watch in [&mut live, &mut replay] {
        let event = next_event(watch).await;
        assert_eq!(event.kind, EventKind::Create);
        assert_eq!(event.prev, None);
        assert_eq!(event.kv.create_revision, recreated);
    }
}

async fn create_revision_is_stable_across_updates(store: Store) {
    let created = store.create("/k", value("0")).await.unwrap();
    let mut expected = created;
    for i in 1..=5 {
        expected = store
            .update("/k", value(&i.to_string()), expected)
            .await
            .unwrap();
        let kv = store.get("/k").await.unwrap().unwrap();
        assert_eq!(kv.create_revision, created);
        assert_eq!(kv.mod_revision, expected);
    }
    let mut watch = store.watch("/k", 0).await.unwrap();
    for _ in 0..6 {
        assert_eq!(next_event(&mut watch).await.kv.create_revision, created);
    }
}

async fn concurrent_writers_get_contiguous_revisions(store: Store) {
    let base = store.current_revision();
    let mut watch = store.watch("/x/", 0).await.unwrap();
    let writers: Vec<_> = (0..50)
        .map(|task| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut revisions = Vec::with_capacity(20);
                for i in 0..20 {
                    let key = format!("/x/{task}/{i}");
                    revisions.push(store.create(&key, value(&key)).await.unwrap());
                }
                revisions
            })
        })
        .collect();
    let mut revisions = Vec::with_capacity(1000);
    for writer in writers {
        let mine = writer.await.unwrap();
        // Each writer's own writes are ordered.
        assert!(mine.windows(2).all(|pair| pair[0] < pair[1]));
        revisions.extend(mine);
    }
    revisions.sort_unstable();
    assert_eq!(
        revisions,
        (base + 1..=base + 1000).collect::<Vec<Revision>>()
    );
    assert_eq!(store.current_revision(), base + 1000);

    let events = next_events(&mut watch, 1000).await;
    let seen: Vec<Revision> = events.iter().map(|(_, _, revision)| *revision).collect();
    assert_eq!(seen, (base + 1..=base + 1000).collect::<Vec<Revision>>());
    let page = store.list(prefix("/x/")).await.unwrap();
    assert_eq!(page.items.len(), 1000);
}

async fn usage_counts_live_keys_and_their_value_bytes(store: Store) {
    assert_eq!(store.usage(), Usage::default());
    let a = store.create("/a", value("12345")).await.unwrap();
    store.create("/b", value("xy")).await.unwrap();
    assert_eq!(
        store.usage(),
        Usage {
            objects: 2,
            bytes: 7
        }
    );
    let a = store.update("/a", value("1"), a).await.unwrap();
    assert_eq!(
        store.usage(),
        Usage {
            objects: 2,
            bytes: 3
        }
    );
    // Failed writes change nothing.
    assert!(store.create("/b", value("long value")).await.is_err());
    assert!(
        store
            .update("/a", value("long value"), a - 1)
            .await
            .is_err()
    );
    assert_eq!(
        store.usage(),
        Usage {
            objects: 2,
            bytes: 3
        }
    );
    store.delete("/b", None).await.unwrap();
    assert_eq!(
        store.usage(),
        Usage {
            objects: 1,
            bytes: 1
        }
    );
    // Compaction forgets history, not live keys.
    store.compact(store.current_revision()).await.unwrap();
    assert_eq!(
        store.usage(),
        Usage {
            objects: 1,
            bytes: 1
        }
    );
    store.create("/b", value("again")).await.unwrap();
    assert_eq!(
        store.usage(),
        Usage {
            objects: 2,
            bytes: 6
        }
    );
}

/// The records of a snapshot at revision 10: two keys, one updated after its creation.
fn snapshot_records() -> Vec<super::Result<KeyValue>> {
    vec![
        Ok(KeyValue {
            key: "/registry/a".into(),
            value: value("a"),
            create_revision: 2,
            mod_revision: 7,
        }),
        Ok(KeyValue {
            key: "/registry/b".into(),
            value: value("bb"),
            create_revision: 4,
            mod_revision: 4,
        }),
    ]
}

/// A store opened from a snapshot holds its keys with their revisions, continues numbering after
/// the snapshot's revision, and has no history before it.
async fn check_restored_snapshot(store: Store) {
    assert_eq!(store.current_revision(), 10);
    assert_eq!(store.compacted_revision(), 10);
    assert_eq!(
        store.usage(),
        Usage {
            objects: 2,
            bytes: 3
        }
    );
    let page = store.list(prefix("/registry/")).await.unwrap();
    assert_eq!(page.revision, 10);
    let expected: Vec<KeyValue> = snapshot_records().into_iter().map(Result::unwrap).collect();
    assert_eq!(page.items, expected);
    assert!(matches!(
        store.watch("/registry/", 7).await.err(),
        Some(Error::Compacted { .. })
    ));
    let mut watch = store.watch("/registry/", 10).await.unwrap();
    let updated = store.update("/registry/a", value("a2"), 7).await.unwrap();
    assert_eq!(updated, 11);
    let event = next_event(&mut watch).await;
    assert_eq!(
        (
            event.kind,
            event.kv.create_revision,
            event.prev.as_ref().map(|p| p.mod_revision)
        ),
        (EventKind::Update, 2, Some(7))
    );
    let (deleted, _) = store.delete("/registry/b", Some(4)).await.unwrap();
    assert_eq!(deleted, 12);
    store.compact(deleted).await.unwrap();
    let page = store.list(prefix("/registry/")).await.unwrap();
    assert_eq!(keys(&page.items), ["/registry/a"]);
    assert_eq!(
        store.usage(),
        Usage {
            objects: 1,
            bytes: 2
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store_from_a_snapshot() {
    let store = MemoryBackend::restored(10, snapshot_records()).unwrap();
    run(Arc::new(store), check_restored_snapshot).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store_from_a_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.db");
    // A store was there before: the snapshot replaces it.
    let old = SqliteBackend::open(&path).unwrap();
    old.create("/registry/old", value("x")).await.unwrap();
    drop(old);
    let usage = super::sqlite::write_snapshot(&path, 10, snapshot_records()).unwrap();
    assert_eq!(
        usage,
        Usage {
            objects: 2,
            bytes: 3
        }
    );
    let store = SqliteBackend::open(&path).unwrap();
    run(Arc::new(store), check_restored_snapshot).await;
    // Reopened after writes, it keeps numbering.
    let store = SqliteBackend::open(&path).unwrap();
    assert_eq!(store.current_revision(), 12);
    assert_eq!(
        store.usage(),
        Usage {
            objects: 1,
            bytes: 2
        }
    );
}

#[test]
fn snapshots_with_impossible_records_are_refused() {
    let bad = |create_revision, mod_revision| {
        vec![Ok(KeyValue {
            key: "/k".into(),
            value: value("v"),
            create_revision,
            mod_revision,
        })]
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.db");
    for (create, modified) in [(0, 1), (5, 4), (3, 11)] {
        assert!(MemoryBackend::restored(10, bad(create, modified)).is_err());
        assert!(super::sqlite::write_snapshot(&path, 10, bad(create, modified)).is_err());
    }
    let mut twice = bad(1, 2);
    twice.extend(bad(3, 3));
    assert!(MemoryBackend::restored(10, twice).is_err());
    let mut twice = bad(1, 2);
    twice.extend(bad(3, 3));
    assert!(super::sqlite::write_snapshot(&path, 10, twice).is_err());
}

/// Reopening a SQLite file keeps data, revisions and compaction, and numbering continues.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_reopen_keeps_data_and_revisions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.db");
    let check = async {
        let store = SqliteBackend::open(&path).unwrap();
        let a = store.create("/a", value("a1")).await.unwrap();
        let a2 = store.update("/a", value("a2"), a).await.unwrap();
        store.create("/b", value("b1")).await.unwrap();
        store.compact(a2).await.unwrap();
        let (deleted, _) = store.delete("/b", None).await.unwrap();
        drop(store);

        let store = SqliteBackend::open(&path).unwrap();
        assert_eq!(store.current_revision(), deleted);
        assert_eq!(store.compacted_revision(), a2);
        let kv = store.get("/a").await.unwrap().unwrap();
        assert_eq!(
            (kv.value, kv.create_revision, kv.mod_revision),
            (value("a2"), a, a2)
        );
        assert_eq!(store.get("/b").await.unwrap(), None);
        assert_eq!(store.create("/c", value("c1")).await.unwrap(), deleted + 1);

        // History after the compacted revision survives too.
        let mut watch = store.watch("/", a2).await.unwrap();
        assert_eq!(
            next_events(&mut watch, 3).await,
            vec![
                (EventKind::Create, "/b".to_owned(), a2 + 1),
                (EventKind::Delete, "/b".to_owned(), deleted),
                (EventKind::Create, "/c".to_owned(), deleted + 1),
            ]
        );

        // Compacting away the last write (a delete) does not rewind the revision on reopen.
        let (last, _) = store.delete("/c", None).await.unwrap();
        store.compact(last).await.unwrap();
        drop(store);
        let store = SqliteBackend::open(&path).unwrap();
        assert_eq!(store.current_revision(), last);
        assert_eq!(store.create("/d", value("d1")).await.unwrap(), last + 1);
    };
    tokio::time::timeout(TEST_TIMEOUT, check)
        .await
        .expect("timed out");
}
