//! A durable backend on one SQLite file, in the spirit of kine.
//!
//! # Layout
//!
//! Table `kv` is the log: one row per write, `id` is the revision. A row records the key
//! (`name`, as a BLOB so that ranges compare bytes), whether it `created` or `deleted` the key,
//! the key's `create_revision`, the revision of the key's previous row (`prev_revision`, 0 for a
//! create) and the value (empty for a delete; the deleted value is the previous row's). An index on
//! `(name, id)` finds the newest row of a key at or before a revision. Table `meta` holds the
//! compacted revision. Compaction removes the rows that a newer row at or before the compacted
//! revision replaced, and the deletes at or before it, so the state at the compacted revision and
//! every later one stays readable.
//!
//! # Writes: group commit
//!
//! One writer thread owns the only writing connection. Requests arrive on a bounded channel; the
//! thread takes all that are waiting (up to [`MAX_BATCH`]), applies them in order in one
//! transaction (each write gets the next revision, and compare-and-swap checks see the earlier
//! writes of the same batch), commits once (`synchronous=FULL` in WAL mode: one fsync per batch,
//! and an acknowledged write survives a crash or power loss), then updates the in-memory state,
//! publishes the events in revision order and answers every request.
//!
//! # Reads
//!
//! The latest value of every live key is cached in memory (as kube-apiserver's watch cache
//! does), so `get`, a `list` of the latest state and compare-and-swap checks need no SQL. Lists
//! at past revisions and watch replays older than the in-memory ring of recent events read the
//! log through a small pool of read-only connections on blocking threads.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rusqlite::types::{Type, Value};
use rusqlite::{Connection, OpenFlags, Row, Transaction, TransactionBehavior};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};

use super::{
    Backend, Error, Event, EventKind, EventStream, History, KeyValue, ListOptions, ListPage,
    Result, Revision, Usage, UsageCounters, WritesUnderWay, check_snapshot_record, event_stream,
};

/// The most writes committed in one transaction.
const MAX_BATCH: usize = 512;
/// How long the writer waits at a time, and at most, for writes under way to join a batch before
/// it commits. A fleet's writes come from many clients at once (the hub stamps 64 Works at a
/// time), each a few hundred microseconds of the store's work behind the other; committed as
/// they came, batches held two writes on average and the log's sync, once a commit, was most of
/// the writer's cost.
const GATHER_SLICE: Duration = Duration::from_micros(100);
const GATHER_MAX: Duration = Duration::from_millis(2);
/// How many write requests may wait for the writer thread.
const QUEUE_CAPACITY: usize = 4096;
/// How many recent events are kept in memory to feed watchers without SQL.
const RING_CAPACITY: usize = if cfg!(test) { 64 } else { 8192 };
/// How many bytes of values (each event's and the one it replaced) the ring holds at most: 8,192
/// events of objects near the 1.5 MiB limit would hold gigabytes, and a fleet's Works of a few
/// KiB each filled it with over a hundred MiB. A watcher behind the ring reads the log.
const RING_BYTES: usize = if cfg!(test) {
    64 * 1024
} else {
    32 * 1024 * 1024
};
/// The newest events the ring keeps whatever their size.
const RING_MIN_EVENTS: usize = if cfg!(test) { 4 } else { 64 };
/// How many events one history read of the log table returns at most.
const REPLAY_CHUNK: usize = if cfg!(test) { 50 } else { 1000 };
/// How many read-only connections serve lists at past revisions and watch replays.
const READERS: usize = 3;
/// How long a connection waits for a lock held by another connection.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS kv (
    id INTEGER PRIMARY KEY,
    name BLOB NOT NULL,
    created INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision INTEGER NOT NULL,
    value BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS kv_name_id ON kv (name, id);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (key, value) VALUES ('compacted', 0);
";

const INSERT_ROW: &str = "INSERT INTO kv (id, name, created, deleted, create_revision, prev_revision, value) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// A revisioned key-value store in one SQLite file.
///
/// Dropping it stops the writer thread once the writes already queued are committed, and ends
/// every watch stream.
pub struct SqliteBackend {
    requests: mpsc::Sender<Request>,
    /// The last revision published; the writer thread holds the other reference, and watches
    /// end when both are gone.
    published: Arc<watch::Sender<Revision>>,
    shared: Arc<Shared>,
}

/// State shared by the backend, the writer thread and watch streams.
struct Shared {
    /// The latest value of every live key.
    latest: RwLock<BTreeMap<String, KeyValue>>,
    /// Recent events; locked while publishing a revision so that watches see them in order.
    recent: Mutex<Recent>,
    current: AtomicI64,
    compacted: AtomicI64,
    /// Live keys and value bytes of `latest`, updated with it.
    usage: UsageCounters,
    readers: ReadPool,
    /// The writes the store above has under way, which the writer waits a little for.
    under_way: WritesUnderWay,
    /// Transactions committed (each one sync of the log).
    commits: AtomicU64,
}

struct Recent {
    /// The newest events, contiguous, the last with revision `published`.
    events: VecDeque<Arc<Event>>,
    published: Revision,
    /// The value bytes of `events`, counted against [`RING_BYTES`].
    bytes: usize,
}

impl Recent {
    /// Adds the newest event, letting the oldest go past [`RING_CAPACITY`] events or
    /// [`RING_BYTES`] bytes.
    fn push(&mut self, event: Arc<Event>) {
        self.published = event.revision();
        self.bytes += value_bytes(&event);
        self.events.push_back(event);
        while self.events.len() > RING_CAPACITY
            || (self.bytes > RING_BYTES && self.events.len() > RING_MIN_EVENTS)
        {
            match self.events.pop_front() {
                Some(oldest) => self.bytes -= value_bytes(&oldest),
                None => break,
            }
        }
    }
}

/// The bytes of an event's value and of the value it replaced.
fn value_bytes(event: &Event) -> usize {
    event.kv.value.len() + event.prev.as_ref().map_or(0, |prev| prev.value.len())
}

/// Read-only connections, opened on first use.
struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

struct Request {
    op: Op,
    reply: oneshot::Sender<Result<Done>>,
}

enum Op {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Revision,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
    Compact {
        revision: Revision,
    },
}

enum Done {
    Written(Revision),
    Deleted(Revision, KeyValue),
    Compacted,
}

impl From<rusqlite::Error> for Error {
    fn from(error: rusqlite::Error) -> Self {
        Error::Backend(Box::new(error))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // No code panics while holding these locks, so a poisoned lock still holds consistent state.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SqliteBackend {
    /// Opens the store in the file at `path`, creating the file and schema if needed, and
    /// starts its writer thread. Current and compacted revisions continue from the file.
    pub fn open(path: &Path) -> Result<Self> {
        let conn = Connection::open(path)?;
        let journal: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        if !journal.eq_ignore_ascii_case("wal") {
            return Err(Error::Backend(
                format!("sqlite refused WAL journal mode (got {journal})").into(),
            ));
        }
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.execute_batch(SCHEMA)?;

        let compacted: Revision = conn.query_row(
            "SELECT value FROM meta WHERE key = 'compacted'",
            [],
            |row| row.get(0),
        )?;
        let newest: Option<Revision> =
            conn.query_row("SELECT MAX(id) FROM kv", [], |row| row.get(0))?;
        // Compaction may have removed the newest row (a delete), never a revision.
        let current = newest.unwrap_or(0).max(compacted);
        let latest = load_latest(&conn)?;
        tracing::info!(
            path = %path.display(),
            revision = current,
            compacted,
            keys = latest.len(),
            "opened sqlite storage"
        );

        let usage = UsageCounters::new(Usage::of(latest.values()));
        let shared = Arc::new(Shared {
            usage,
            latest: RwLock::new(latest),
            recent: Mutex::new(Recent {
                // Grows with writes: an idle store holds no ring.
                events: VecDeque::new(),
                published: current,
                bytes: 0,
            }),
            current: AtomicI64::new(current),
            compacted: AtomicI64::new(compacted),
            under_way: WritesUnderWay::default(),
            commits: AtomicU64::new(0),
            readers: ReadPool {
                path: path.to_owned(),
                idle: Mutex::new(Vec::with_capacity(READERS)),
                permits: Arc::new(Semaphore::new(READERS)),
            },
        });
        let (requests, queue) = mpsc::channel(QUEUE_CAPACITY);
        let published = Arc::new(watch::Sender::new(current));
        let writer = Writer {
            conn,
            published: Arc::clone(&published),
            shared: Arc::clone(&shared),
        };
        std::thread::Builder::new()
            .name("sqlite-writer".to_owned())
            .spawn(move || writer.run(queue))
            .map_err(|error| Error::Backend(Box::new(error)))?;
        Ok(Self {
            requests,
            published,
            shared,
        })
    }

    async fn submit(&self, op: Op) -> Result<Done> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request { op, reply })
            .await
            .map_err(|_| Error::Closed)?;
        answer.await.map_err(|_| Error::Closed)?
    }
}

/// Writes a new store file at `path` holding a snapshot: the live keys at `revision`, which
/// becomes both the current and the compacted revision of the store opened from it (so revisions
/// continue after it, and watches from older revisions answer `Compacted`: a snapshot has no
/// history). Each record is one row whose id is its `mod_revision`. The file is written in one
/// transaction with the rollback journal and synced, so that it can then be renamed into place
/// whole; an existing file at `path` is replaced. Refuses records in the future of `revision`,
/// with impossible revisions, or repeating a key or a revision.
pub fn write_snapshot(
    path: &Path,
    revision: Revision,
    records: impl IntoIterator<Item = Result<KeyValue>>,
) -> Result<Usage> {
    for stale in [
        path.to_owned(),
        sibling(path, "-journal"),
        sibling(path, "-wal"),
        sibling(path, "-shm"),
    ] {
        match std::fs::remove_file(&stale) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(Error::Backend(Box::new(error))),
        }
    }
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(SCHEMA)?;
    let mut usage = Usage::default();
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare(INSERT_ROW)?;
        let mut names = tx.prepare("SELECT 1 FROM kv WHERE name = ?1 LIMIT 1")?;
        for record in records {
            let kv = record?;
            check_snapshot_record(&kv, revision)?;
            if names.exists([kv.key.as_bytes()])? {
                return Err(Error::Backend(
                    format!("the snapshot holds key {:?} twice", kv.key).into(),
                ));
            }
            // A row with no previous row: history starts here.
            insert.execute(rusqlite::params![
                kv.mod_revision,
                kv.key.as_bytes(),
                true,
                false,
                kv.create_revision,
                0,
                kv.value.as_ref(),
            ])?;
            usage = usage.after(&Event {
                kind: EventKind::Create,
                kv,
                prev: None,
            });
        }
    }
    tx.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'compacted'",
        [revision],
    )?;
    tx.commit()?;
    conn.close().map_err(|(_, error)| error)?;
    std::fs::File::open(path)
        .and_then(|file| file.sync_all())
        .map_err(|error| Error::Backend(Box::new(error)))?;
    Ok(usage)
}

/// `path` with `suffix` appended to its file name (`state.db` → `state.db-wal`).
pub(crate) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Reads the latest row of every live key.
fn load_latest(conn: &Connection) -> Result<BTreeMap<String, KeyValue>> {
    let mut statement = conn.prepare(
        "SELECT kv.name, kv.create_revision, kv.id, kv.value FROM kv \
         JOIN (SELECT MAX(id) AS id FROM kv GROUP BY name) AS newest ON kv.id = newest.id \
         WHERE kv.deleted = 0",
    )?;
    let rows = statement.query_map([], key_value)?;
    let mut latest = BTreeMap::new();
    for row in rows {
        let kv = row?;
        latest.insert(kv.key.clone(), kv);
    }
    Ok(latest)
}

/// A `KeyValue` from columns `name, create_revision, id, value`.
fn key_value(row: &Row<'_>) -> rusqlite::Result<KeyValue> {
    Ok(KeyValue {
        key: name(row, 0)?,
        create_revision: row.get(1)?,
        mod_revision: row.get(2)?,
        value: Bytes::from(row.get::<_, Vec<u8>>(3)?),
    })
}

fn name(row: &Row<'_>, column: usize) -> rusqlite::Result<String> {
    String::from_utf8(row.get(column)?).map_err(|error| {
        rusqlite::Error::FromSqlConversionFailure(column, Type::Blob, Box::new(error))
    })
}

/// The smallest byte string greater than every string starting with `prefix`, if any.
pub(super) fn prefix_end(prefix: &str) -> Option<Vec<u8>> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

fn check_compacted(tx: &Transaction<'_>, requested: Revision) -> Result<()> {
    let compacted: Revision = tx.query_row(
        "SELECT value FROM meta WHERE key = 'compacted'",
        [],
        |row| row.get(0),
    )?;
    if requested < compacted {
        return Err(Error::Compacted {
            requested,
            compacted,
        });
    }
    Ok(())
}

/// Lists from the log at `revision`, inside one read transaction.
fn list_at(
    conn: &mut Connection,
    prefix: &str,
    start_after: Option<&str>,
    limit: Option<usize>,
    revision: Revision,
) -> Result<ListPage> {
    let tx = conn.transaction()?;
    check_compacted(&tx, revision)?;

    // The newest row of each key in range at `revision`, if it is not a delete.
    let mut newest = String::from("SELECT MAX(id) AS id FROM kv WHERE id <= ?1");
    let mut params = vec![Value::Integer(revision)];
    match start_after {
        Some(start) if start >= prefix => {
            newest.push_str(" AND name > ?2");
            params.push(Value::Blob(start.as_bytes().to_vec()));
        }
        _ => {
            newest.push_str(" AND name >= ?2");
            params.push(Value::Blob(prefix.as_bytes().to_vec()));
        }
    }
    if let Some(end) = prefix_end(prefix) {
        newest.push_str(" AND name < ?3");
        params.push(Value::Blob(end));
    }
    newest.push_str(" GROUP BY name");
    let from =
        format!("FROM kv JOIN ({newest}) AS newest ON kv.id = newest.id WHERE kv.deleted = 0");

    let limit = limit.filter(|&limit| limit > 0);
    let items = {
        let mut sql =
            format!("SELECT kv.name, kv.create_revision, kv.id, kv.value {from} ORDER BY kv.name");
        if let Some(limit) = limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let mut statement = tx.prepare(&sql)?;
        let rows = statement.query_map(rusqlite::params_from_iter(params.iter()), key_value)?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    let remaining = match (limit, items.last()) {
        (Some(limit), Some(last)) if items.len() == limit => {
            let mut params = params;
            params.push(Value::Blob(last.key.as_bytes().to_vec()));
            let sql = format!("SELECT COUNT(*) {from} AND kv.name > ?{}", params.len());
            let count: i64 =
                tx.query_row(&sql, rusqlite::params_from_iter(params.iter()), |row| {
                    row.get(0)
                })?;
            usize::try_from(count).unwrap_or(0)
        }
        _ => 0,
    };
    tx.commit()?;
    Ok(ListPage {
        items,
        revision,
        remaining,
    })
}

/// Reads events under `prefix` in `(after, upto]` from the log, at most [`REPLAY_CHUNK`].
fn read_events(
    conn: &mut Connection,
    prefix: &str,
    after: Revision,
    upto: Revision,
) -> Result<(Vec<Arc<Event>>, Revision)> {
    let tx = conn.transaction()?;
    check_compacted(&tx, after)?;
    let mut sql = String::from(
        "SELECT c.id, c.name, c.created, c.deleted, c.create_revision, c.value, \
         p.id, p.create_revision, p.value \
         FROM kv AS c LEFT JOIN kv AS p ON p.id = c.prev_revision \
         WHERE c.id > ?1 AND c.id <= ?2 AND c.name >= ?3",
    );
    let mut params = vec![
        Value::Integer(after),
        Value::Integer(upto),
        Value::Blob(prefix.as_bytes().to_vec()),
    ];
    if let Some(end) = prefix_end(prefix) {
        sql.push_str(" AND c.name < ?4");
        params.push(Value::Blob(end));
    }
    sql.push_str(&format!(" ORDER BY c.id LIMIT {REPLAY_CHUNK}"));
    let events = {
        let mut statement = tx.prepare(&sql)?;
        let rows =
            statement.query_map(rusqlite::params_from_iter(params.iter()), event_from_row)?;
        rows.collect::<rusqlite::Result<Vec<_>>>()?
    };
    tx.commit()?;
    let covered = match events.last() {
        Some(last) if events.len() == REPLAY_CHUNK => last.revision(),
        _ => upto,
    };
    Ok((events, covered))
}

/// An event from a row of the log joined with the key's previous row.
fn event_from_row(row: &Row<'_>) -> rusqlite::Result<Arc<Event>> {
    let revision: Revision = row.get(0)?;
    let key = name(row, 1)?;
    let created: bool = row.get(2)?;
    let deleted: bool = row.get(3)?;
    let create_revision: Revision = row.get(4)?;
    let prev = match row.get::<_, Option<Revision>>(6)? {
        Some(prev_revision) => Some(KeyValue {
            key: key.clone(),
            value: Bytes::from(row.get::<_, Vec<u8>>(8)?),
            create_revision: row.get(7)?,
            mod_revision: prev_revision,
        }),
        None => None,
    };
    let missing_prev = || {
        rusqlite::Error::FromSqlConversionFailure(
            6,
            Type::Null,
            format!("revision {revision} of {key:?} has no previous row").into(),
        )
    };
    let event = if created {
        Event {
            kind: EventKind::Create,
            kv: KeyValue {
                key,
                value: Bytes::from(row.get::<_, Vec<u8>>(5)?),
                create_revision,
                mod_revision: revision,
            },
            prev: None,
        }
    } else if deleted {
        let prev = prev.ok_or_else(missing_prev)?;
        Event {
            kind: EventKind::Delete,
            kv: KeyValue {
                mod_revision: revision,
                ..prev.clone()
            },
            prev: Some(prev),
        }
    } else {
        let prev = prev.ok_or_else(missing_prev)?;
        Event {
            kind: EventKind::Update,
            kv: KeyValue {
                key,
                value: Bytes::from(row.get::<_, Vec<u8>>(5)?),
                create_revision,
                mod_revision: revision,
            },
            prev: Some(prev),
        }
    };
    Ok(Arc::new(event))
}

impl Shared {
    /// Runs `read` on a read-only connection on a blocking thread.
    async fn with_reader<T, F>(self: &Arc<Self>, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let permit = Arc::clone(&self.readers.permits)
            .acquire_owned()
            .await
            .map_err(|_| Error::Closed)?;
        let shared = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let idle = lock(&shared.readers.idle).pop();
            let mut conn = match idle {
                Some(conn) => conn,
                None => shared.readers.open()?,
            };
            let result = read(&mut conn);
            lock(&shared.readers.idle).push(conn);
            result
        })
        .await
        .map_err(|error| Error::Backend(Box::new(error)))?
    }

    fn latest(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, KeyValue>> {
        self.latest.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ReadPool {
    fn open(&self) -> Result<Connection> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        Ok(conn)
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
        {
            let recent = lock(&self.recent);
            let upto = upto.min(recent.published);
            let held = i64::try_from(recent.events.len()).unwrap_or(i64::MAX);
            let before_first = recent.published - held;
            if after >= before_first {
                let first = usize::try_from(after - before_first).unwrap_or(usize::MAX);
                let end = usize::try_from(upto - before_first).unwrap_or(0);
                let events = recent
                    .events
                    .range(first.min(end)..end)
                    .filter(|event| event.kv.key.starts_with(prefix))
                    .cloned()
                    .collect();
                return Ok((events, upto));
            }
        }
        let prefix = prefix.to_owned();
        self.with_reader(move |conn| read_events(conn, &prefix, after, upto))
            .await
    }
}

#[async_trait::async_trait]
impl Backend for SqliteBackend {
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision> {
        let op = Op::Create {
            key: key.to_owned(),
            value,
        };
        match self.submit(op).await? {
            Done::Written(revision) => Ok(revision),
            _ => Err(unexpected_answer()),
        }
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<Revision> {
        let op = Op::Update {
            key: key.to_owned(),
            value,
            expected,
        };
        match self.submit(op).await? {
            Done::Written(revision) => Ok(revision),
            _ => Err(unexpected_answer()),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<(Revision, KeyValue)> {
        let op = Op::Delete {
            key: key.to_owned(),
            expected,
        };
        match self.submit(op).await? {
            Done::Deleted(revision, kv) => Ok((revision, kv)),
            _ => Err(unexpected_answer()),
        }
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        Ok(self.shared.latest().get(key).cloned())
    }

    async fn list(&self, options: ListOptions<'_>) -> Result<ListPage> {
        let revision = {
            let latest = self.shared.latest();
            let current = self.shared.current.load(Ordering::Acquire);
            match options.revision {
                None => return Ok(list_latest(&latest, &options, current)),
                Some(requested) if requested == current => {
                    return Ok(list_latest(&latest, &options, current));
                }
                Some(requested) if requested > current => {
                    return Err(Error::FutureRevision { requested, current });
                }
                Some(requested) => requested,
            }
        };
        let compacted = self.shared.compacted.load(Ordering::Acquire);
        if revision < compacted {
            return Err(Error::Compacted {
                requested: revision,
                compacted,
            });
        }
        let prefix = options.prefix.to_owned();
        let start_after = options.start_after.map(str::to_owned);
        let limit = options.limit;
        self.shared
            .with_reader(move |conn| {
                list_at(conn, &prefix, start_after.as_deref(), limit, revision)
            })
            .await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<EventStream> {
        let compacted = self.shared.compacted.load(Ordering::Acquire);
        if after < compacted {
            return Err(Error::Compacted {
                requested: after,
                compacted,
            });
        }
        let (published, upto) = {
            let recent = lock(&self.shared.recent);
            // Subscribed under the lock: the receiver sees every revision after `published`.
            (self.published.subscribe(), recent.published)
        };
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
        match self.submit(Op::Compact { revision }).await? {
            Done::Compacted => Ok(()),
            _ => Err(unexpected_answer()),
        }
    }

    fn current_revision(&self) -> Revision {
        self.shared.current.load(Ordering::Acquire)
    }

    fn writes_under_way(&self) -> Option<&WritesUnderWay> {
        Some(&self.shared.under_way)
    }

    fn compacted_revision(&self) -> Revision {
        self.shared.compacted.load(Ordering::Acquire)
    }

    fn usage(&self) -> Usage {
        self.shared.usage.get()
    }
}

fn unexpected_answer() -> Error {
    Error::Backend("sqlite writer answered a different kind of request".into())
}

/// A page of the cached latest state.
fn list_latest(
    latest: &BTreeMap<String, KeyValue>,
    options: &ListOptions<'_>,
    revision: Revision,
) -> ListPage {
    let prefix = options.prefix;
    let lower = match options.start_after {
        Some(start) if start >= prefix => Bound::Excluded(start),
        _ => Bound::Included(prefix),
    };
    let mut in_range = latest
        .range::<str, _>((lower, Bound::Unbounded))
        .take_while(|(key, _)| key.starts_with(prefix))
        .map(|(_, kv)| kv);
    let limit = options
        .limit
        .filter(|&limit| limit > 0)
        .unwrap_or(usize::MAX);
    let items = in_range.by_ref().take(limit).cloned().collect();
    ListPage {
        items,
        revision,
        remaining: in_range.count(),
    }
}

/// The writer thread: the only connection that writes.
struct Writer {
    conn: Connection,
    published: Arc<watch::Sender<Revision>>,
    shared: Arc<Shared>,
}

/// What one batch did, before it is committed and published.
struct Batch {
    revision: Revision,
    compacted: Revision,
    /// The new state of every key the batch wrote (`None`: deleted).
    changed: HashMap<String, Option<KeyValue>>,
    events: Vec<Arc<Event>>,
}

/// Takes the waiting requests into `batch`, up to [`MAX_BATCH`].
fn drain(queue: &mut mpsc::Receiver<Request>, batch: &mut Vec<Request>) {
    while batch.len() < MAX_BATCH {
        match queue.try_recv() {
            Ok(request) => batch.push(request),
            Err(_) => break,
        }
    }
}

impl Writer {
    fn run(mut self, mut queue: mpsc::Receiver<Request>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while let Some(first) = queue.blocking_recv() {
            batch.push(first);
            drain(&mut queue, &mut batch);
            self.gather(&mut queue, &mut batch);
            self.commit(&mut batch);
        }
        tracing::debug!("sqlite writer stopped");
    }

    /// Waits for the writes still under way in the store to join `batch`: [`GATHER_SLICE`] at a
    /// time while fewer writes are in the batch than under way, [`GATHER_MAX`] at most (a write
    /// under way may never come: refused, or changing nothing). One client writing alone never
    /// waits; many writing at once share a commit, and so one sync of the log.
    fn gather(&self, queue: &mut mpsc::Receiver<Request>, batch: &mut Vec<Request>) {
        let deadline = Instant::now() + GATHER_MAX;
        while batch.len() < MAX_BATCH
            && self.shared.under_way.count() > batch.len()
            && Instant::now() < deadline
        {
            std::thread::sleep(GATHER_SLICE);
            drain(queue, batch);
        }
    }

    /// Applies, commits, publishes and answers `requests`, leaving it empty.
    fn commit(&mut self, requests: &mut Vec<Request>) {
        let mut batch = Batch {
            revision: self.shared.current.load(Ordering::Acquire),
            compacted: self.shared.compacted.load(Ordering::Acquire),
            changed: HashMap::new(),
            events: Vec::with_capacity(requests.len()),
        };
        let applied = (|| -> rusqlite::Result<Vec<Result<Done>>> {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut answers = Vec::with_capacity(requests.len());
            for request in requests.iter() {
                answers.push(batch.apply(&tx, &self.shared, &request.op)?);
            }
            if !batch.events.is_empty()
                || batch.compacted != self.shared.compacted.load(Ordering::Acquire)
            {
                tx.commit()?;
                self.shared.commits.fetch_add(1, Ordering::Relaxed);
            }
            Ok(answers)
        })();
        match applied {
            Ok(answers) => {
                self.publish(batch);
                for (request, answer) in requests.drain(..).zip(answers) {
                    // The caller may have given up waiting; the write stands.
                    let _ = request.reply.send(answer);
                }
            }
            Err(error) => {
                tracing::error!(%error, writes = requests.len(), "sqlite commit failed");
                let error = Arc::new(error);
                for request in requests.drain(..) {
                    let _ = request
                        .reply
                        .send(Err(Error::Backend(Box::new(Arc::clone(&error)))));
                }
            }
        }
    }

    /// Makes a committed batch visible: cache, revisions, then events in order.
    fn publish(&self, batch: Batch) {
        {
            let mut latest = self
                .shared
                .latest
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            for (key, kv) in batch.changed {
                match kv {
                    Some(kv) => latest.insert(key, kv),
                    None => latest.remove(&key),
                };
            }
            let usage = batch
                .events
                .iter()
                .fold(self.shared.usage.get(), |usage, event| usage.after(event));
            self.shared.usage.set(usage);
            self.shared.current.store(batch.revision, Ordering::Release);
        }
        self.shared
            .compacted
            .store(batch.compacted, Ordering::Release);
        let mut recent = lock(&self.shared.recent);
        for event in batch.events {
            recent.push(event);
        }
        // Whether anybody watches or not.
        self.published.send_replace(recent.published);
    }
}

impl Batch {
    /// The latest value of `key` including this batch's earlier writes.
    fn current(&self, shared: &Shared, key: &str) -> Option<KeyValue> {
        match self.changed.get(key) {
            Some(kv) => kv.clone(),
            None => shared.latest().get(key).cloned(),
        }
    }

    /// Applies one request in the open transaction. The outer error fails the whole batch; the
    /// inner one answers this request only.
    fn apply(
        &mut self,
        tx: &Transaction<'_>,
        shared: &Shared,
        op: &Op,
    ) -> rusqlite::Result<Result<Done>> {
        match op {
            Op::Create { key, value } => self.create(tx, shared, key, value),
            Op::Update {
                key,
                value,
                expected,
            } => self.update(tx, shared, key, value, *expected),
            Op::Delete { key, expected } => self.delete(tx, shared, key, *expected),
            Op::Compact { revision } => self.compact(tx, *revision),
        }
    }

    /// Creates `key`, unless it is live.
    fn create(
        &mut self,
        tx: &Transaction<'_>,
        shared: &Shared,
        key: &str,
        value: &Bytes,
    ) -> rusqlite::Result<Result<Done>> {
        if self.current(shared, key).is_some() {
            return Ok(Err(Error::AlreadyExists(key.to_owned())));
        }
        let revision = self.revision + 1;
        insert_row(tx, revision, key, true, false, revision, 0, value)?;
        let kv = KeyValue {
            key: key.to_owned(),
            value: value.clone(),
            create_revision: revision,
            mod_revision: revision,
        };
        self.record(kv.clone(), Some(kv.clone()), EventKind::Create, None);
        Ok(Ok(Done::Written(revision)))
    }

    /// Replaces `key`'s value if its revision is `expected`.
    fn update(
        &mut self,
        tx: &Transaction<'_>,
        shared: &Shared,
        key: &str,
        value: &Bytes,
        expected: Revision,
    ) -> rusqlite::Result<Result<Done>> {
        let prev = match self.compare(shared, key, Some(expected)) {
            Ok(prev) => prev,
            Err(error) => return Ok(Err(error)),
        };
        let revision = self.append(tx, &prev, Some(value))?;
        let kv = KeyValue {
            key: key.to_owned(),
            value: value.clone(),
            create_revision: prev.create_revision,
            mod_revision: revision,
        };
        self.record(kv.clone(), Some(kv), EventKind::Update, Some(prev));
        Ok(Ok(Done::Written(revision)))
    }

    /// Deletes `key` if its revision is `expected` (when given).
    fn delete(
        &mut self,
        tx: &Transaction<'_>,
        shared: &Shared,
        key: &str,
        expected: Option<Revision>,
    ) -> rusqlite::Result<Result<Done>> {
        let prev = match self.compare(shared, key, expected) {
            Ok(prev) => prev,
            Err(error) => return Ok(Err(error)),
        };
        let revision = self.append(tx, &prev, None)?;
        let deleted = KeyValue {
            mod_revision: revision,
            ..prev.clone()
        };
        self.record(deleted.clone(), None, EventKind::Delete, Some(prev));
        Ok(Ok(Done::Deleted(revision, deleted)))
    }

    /// Appends the row of the next revision after the live `prev`: its new value, or (`None`)
    /// its delete.
    fn append(
        &self,
        tx: &Transaction<'_>,
        prev: &KeyValue,
        value: Option<&Bytes>,
    ) -> rusqlite::Result<Revision> {
        let revision = self.revision + 1;
        insert_row(
            tx,
            revision,
            &prev.key,
            false,
            value.is_none(),
            prev.create_revision,
            prev.mod_revision,
            value.unwrap_or(&Bytes::new()),
        )?;
        Ok(revision)
    }

    /// Compacts the log at `revision`: removes the rows that no read at or after it needs.
    fn compact(
        &mut self,
        tx: &Transaction<'_>,
        revision: Revision,
    ) -> rusqlite::Result<Result<Done>> {
        if revision <= self.compacted {
            return Ok(Ok(Done::Compacted));
        }
        if revision > self.revision {
            return Ok(Err(Error::FutureRevision {
                requested: revision,
                current: self.revision,
            }));
        }
        // Rows replaced by a newer row at or before `revision`, then deletes there.
        // Earlier compactions already removed everything replaced before `compacted`.
        tx.prepare_cached(
            "DELETE FROM kv WHERE id IN (SELECT prev_revision FROM kv \
             WHERE id > ?1 AND id <= ?2 AND created = 0)",
        )?
        .execute([self.compacted, revision])?;
        tx.prepare_cached("DELETE FROM kv WHERE id > ?1 AND id <= ?2 AND deleted = 1")?
            .execute([self.compacted, revision])?;
        tx.prepare_cached("UPDATE meta SET value = ?1 WHERE key = 'compacted'")?
            .execute([revision])?;
        self.compacted = revision;
        Ok(Ok(Done::Compacted))
    }

    /// The live value of `key` if its revision matches `expected` (when given).
    fn compare(&self, shared: &Shared, key: &str, expected: Option<Revision>) -> Result<KeyValue> {
        let current = self
            .current(shared, key)
            .ok_or_else(|| Error::NotFound(key.to_owned()))?;
        match expected {
            Some(expected) if expected != current.mod_revision => Err(Error::Conflict {
                key: key.to_owned(),
                expected,
                current: Box::new(current),
            }),
            _ => Ok(current),
        }
    }

    fn record(
        &mut self,
        kv: KeyValue,
        state: Option<KeyValue>,
        kind: EventKind,
        prev: Option<KeyValue>,
    ) {
        self.revision = kv.mod_revision;
        self.changed.insert(kv.key.clone(), state);
        self.events.push(Arc::new(Event { kind, kv, prev }));
    }
}

#[allow(clippy::too_many_arguments)]
fn insert_row(
    tx: &Transaction<'_>,
    revision: Revision,
    key: &str,
    created: bool,
    deleted: bool,
    create_revision: Revision,
    prev_revision: Revision,
    value: &Bytes,
) -> rusqlite::Result<()> {
    tx.prepare_cached(INSERT_ROW)?.execute(rusqlite::params![
        revision,
        key.as_bytes(),
        created,
        deleted,
        create_revision,
        prev_revision,
        value.as_ref(),
    ])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_is_the_first_key_after_the_prefix() {
        assert_eq!(prefix_end("/a/"), Some(b"/a0".to_vec()));
        assert_eq!(prefix_end(""), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_under_way_together_share_commits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(SqliteBackend::open(&dir.path().join("store.db")).expect("open"));
        let under_way = store.writes_under_way().expect("counted").clone();
        // 16 clients whose writes reach the store 100 µs apart, each counted from the start (as
        // the store counts a write from its request): longer apart than a commit takes here, so
        // that committing each as it came would take several commits.
        let counted: Vec<_> = (0..16).map(|_| under_way.start()).collect();
        let start = store.shared.commits.load(Ordering::Relaxed);
        let runtime = tokio::runtime::Handle::current();
        let writes: Vec<_> = (0..16u64)
            .map(|i| {
                let (store, runtime) = (Arc::clone(&store), runtime.clone());
                tokio::task::spawn_blocking(move || {
                    std::thread::sleep(Duration::from_micros(100 * i));
                    runtime.block_on(store.create(&format!("/k/{i}"), Bytes::from("v")))
                })
            })
            .collect();
        for write in writes {
            write.await.expect("write task").expect("create");
        }
        drop(counted);
        let commits = store.shared.commits.load(Ordering::Relaxed) - start;
        assert!(
            commits <= 4,
            "16 writes under way at once took {commits} commits"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn compaction_removes_replaced_rows_from_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store.db");
        let store = SqliteBackend::open(&path).expect("open");
        let mut revision = store.create("/k", Bytes::from("0")).await.expect("create");
        for i in 1..10 {
            revision = store
                .update("/k", Bytes::from(format!("{i}")), revision)
                .await
                .expect("update");
        }
        store
            .create("/gone", Bytes::from("x"))
            .await
            .expect("create");
        store.delete("/gone", None).await.expect("delete");
        let rows = || -> i64 {
            let conn = Connection::open(&path).expect("open file");
            conn.query_row("SELECT COUNT(*) FROM kv", [], |row| row.get(0))
                .expect("count rows")
        };
        assert_eq!(rows(), 12);
        store
            .compact(store.current_revision())
            .await
            .expect("compact");
        assert_eq!(rows(), 1);
        let kv = store.get("/k").await.expect("get").expect("key stays");
        assert_eq!(kv.value, Bytes::from("9"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn acknowledged_writes_survive_dropping_the_backend() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store.db");
        let store = SqliteBackend::open(&path).expect("open");
        let mut revisions = Vec::new();
        for i in 0..20 {
            let key = format!("/registry/things/{i}");
            revisions.push(
                store
                    .create(&key, Bytes::from(format!("v{i}")))
                    .await
                    .expect("create"),
            );
        }
        let (deleted_at, _) = store
            .delete("/registry/things/3", None)
            .await
            .expect("delete");
        // No close: the backend is dropped as a crashing process would leave it.
        drop(store);

        let reopened = SqliteBackend::open(&path).expect("reopen");
        assert_eq!(reopened.current_revision(), deleted_at);
        for (i, revision) in revisions.iter().enumerate() {
            let key = format!("/registry/things/{i}");
            let got = reopened.get(&key).await.expect("get");
            if i == 3 {
                assert_eq!(got, None);
            } else {
                let got = got.expect("key survives");
                assert_eq!(got.value, Bytes::from(format!("v{i}")));
                assert_eq!(got.mod_revision, *revision);
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_ring_of_recent_events_keeps_to_its_byte_budget_and_the_log_has_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteBackend::open(&dir.path().join("store.db")).expect("open");
        let value = |i: u8| Bytes::from(vec![b'a' + i; 16 * 1024]);
        let first = store.create("/big/k", value(0)).await.expect("create");
        let mut revision = first;
        for i in 1..20 {
            revision = store
                .update("/big/k", value(i), revision)
                .await
                .expect("update");
        }
        {
            // Each update holds 32 KiB (its value and the one before): the budget of 64 KiB
            // leaves the newest few.
            let recent = lock(&store.shared.recent);
            assert_eq!(recent.events.len(), RING_MIN_EVENTS);
            assert_eq!(recent.bytes, RING_MIN_EVENTS * 32 * 1024);
            assert_eq!(recent.published, revision);
        }
        // A watcher from the first write still gets every event, the older ones from the log.
        let (events, upto) = Arc::clone(&store.shared)
            .read("/big/", first - 1, revision)
            .await
            .expect("read history");
        assert_eq!(upto, revision);
        let values: Vec<u8> = events.iter().map(|e| e.kv.value[0]).collect();
        assert_eq!(values, (0..20).map(|i| b'a' + i).collect::<Vec<u8>>());
        // The newest few come from the ring.
        let (recent, _) = Arc::clone(&store.shared)
            .read("/big/", revision - 2, revision)
            .await
            .expect("read recent");
        assert_eq!(recent.len(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_watcher_keeps_no_event_the_ring_let_go_and_still_gets_every_one() {
        use futures::StreamExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteBackend::open(&dir.path().join("store.db")).expect("open");
        let mut slow = store.watch("/big/", 0).await.expect("watch");
        let mut fast = store.watch("/big/", 0).await.expect("watch");
        let value = |i: u8| Bytes::from(vec![b'a' + i; 16 * 1024]);
        // The fast watcher reads each event as it comes.
        let mut seen = Vec::new();
        let mut revision = 0;
        for i in 0..9 {
            revision = if i == 0 {
                store.create("/big/k", value(0)).await.expect("create")
            } else {
                let update = store.update("/big/k", value(i), revision);
                update.await.expect("update")
            };
            let event = fast.next().await.expect("an event").expect("no error");
            seen.push(Arc::downgrade(&event));
        }
        // Nine writes of up to 32 KiB each: the ring's budget of 64 KiB keeps the newest few.
        assert_eq!(lock(&store.shared.recent).events.len(), RING_MIN_EVENTS);
        // The slow watcher has read nothing, yet it holds none of the events the ring let go.
        let held: Vec<usize> = (0..9).filter(|&i| seen[i].upgrade().is_some()).collect();
        assert_eq!(held, (9 - RING_MIN_EVENTS..9).collect::<Vec<usize>>());
        // It still gets every event in order, the older ones from the log.
        let mut values = Vec::new();
        for _ in 0..9 {
            let event = slow.next().await.expect("an event").expect("no error");
            values.push(event.kv.value[0]);
        }
        assert_eq!(values, (0..9).map(|i| b'a' + i).collect::<Vec<u8>>());
    }
}
