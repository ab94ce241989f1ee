//! Watch responses: a chunked stream of newline-terminated JSON events, fed from the watch cache
//! (or from storage for a revision older than the cache holds), with bookmarks, streaming lists
//! (`sendInitialEvents`), `timeoutSeconds`, and an expired revision reported in-band as an
//! `ERROR` event with code 410 so that clients re-list.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use super::representation::{Representation, partial};
use super::{ApiState, Query};
use crate::error::{Error, Result};
use crate::registry::ResourceType;
use crate::registry::store::{ListOptions, Store, convert};
use crate::storage::{EventKind, Revision};
use crate::validation::{CauseType, FieldError};
use crate::watch::{CachedEvent, WatchCache, decode_event};

/// How often an idle watch that allows bookmarks gets one.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(10);
/// How long a watch without `timeoutSeconds` stays open (upstream picks 30-60 minutes).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The longest `timeoutSeconds` honoured as asked (a year; longer ones get a year): a deadline
/// must be a time the clock can hold.
const LONGEST_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

struct Watcher {
    rt: Arc<ResourceType>,
    prefix: String,
    list: ListOptions,
    representation: Representation,
    bookmarks: bool,
    tx: mpsc::Sender<Result<Bytes, Infallible>>,
    /// Table watches send column definitions with the first event only, as upstream does.
    sent_columns: std::sync::atomic::AtomicBool,
}

/// Starts a watch and answers with its stream.
pub async fn serve(
    state: &ApiState,
    rt: Arc<ResourceType>,
    ns: Option<&str>,
    query: &Query,
    mut list: ListOptions,
    representation: Representation,
) -> Result<Response> {
    let send_initial = match query.get("sendInitialEvents") {
        Some("true" | "1") => true,
        Some("false" | "0") | None => false,
        Some(other) => {
            return Err(Error::BadRequest(format!(
                "sendInitialEvents: Invalid value: {other:?}"
            )));
        }
    };
    let rv_match = query.get("resourceVersionMatch").unwrap_or_default();
    if send_initial && rv_match != "NotOlderThan" {
        return Err(invalid_watch(
            "resourceVersionMatch",
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !send_initial && !rv_match.is_empty() {
        return Err(invalid_watch(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    let timeout = match query.get("timeoutSeconds") {
        None | Some("") => DEFAULT_TIMEOUT,
        Some(t) => Duration::from_secs(
            t.parse::<u64>()
                .map_err(|_| {
                    Error::BadRequest(format!(
                        "timeoutSeconds: Invalid value: {t:?}: must be a whole number of seconds"
                    ))
                })?
                .min(LONGEST_TIMEOUT.as_secs()),
        ),
    };
    let start = match query.get("resourceVersion") {
        None | Some("") | Some("0") => None,
        Some(rv) => Some(
            rv.parse::<Revision>()
                .map_err(|_| Error::BadRequest(format!("invalid resource version: {rv:?}")))?,
        ),
    };
    // A watch lists from the beginning of what it asks, never continues a paged list.
    list.limit = None;
    list.continue_token = None;
    list.resource_version = None;
    list.resource_version_match = None;

    let (tx, rx) = mpsc::channel(256);
    let watcher = Watcher {
        prefix: rt.namespace_prefix(ns),
        rt,
        list,
        representation,
        bookmarks: query.flag("allowWatchBookmarks"),
        tx,
        sent_columns: std::sync::atomic::AtomicBool::new(false),
    };
    let store = state.store.clone();
    let cache = state.cache.clone();
    let shutdown = state.shutdown.clone();
    let deadline = Instant::now() + timeout;
    let ns = ns.map(str::to_owned);
    tokio::spawn(async move {
        tokio::select! {
            _ = watcher.run(&store, &cache, ns.as_deref(), start, send_initial) => {}
            _ = tokio::time::sleep_until(deadline) => {}
            _ = crate::stopped(shutdown) => {}
        }
    });
    let content_type = representation.content_type(false);
    let mut response = Response::new(Body::from_stream(ReceiverStream::new(rx)));
    *response.status_mut() = StatusCode::OK;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(response)
}

fn invalid_watch(field: &str, message: &str) -> Error {
    Error::invalid(
        "ListOptions.meta.k8s.io",
        Default::default(),
        vec![FieldError {
            cause: CauseType::Forbidden,
            field: field.into(),
            message: message.into(),
            value: None,
        }],
    )
}

/// The watcher's session ended: the client left or the stream finished.
struct Closed;

impl Watcher {
    async fn run(
        &self,
        store: &Store,
        cache: &WatchCache,
        ns: Option<&str>,
        start: Option<Revision>,
        send_initial: bool,
    ) {
        let _ = self.run_inner(store, cache, ns, start, send_initial).await;
    }

    async fn run_inner(
        &self,
        store: &Store,
        cache: &WatchCache,
        ns: Option<&str>,
        start: Option<Revision>,
        send_initial: bool,
    ) -> Result<(), Closed> {
        let mut position = match start {
            Some(rv) if !send_initial => {
                let compacted = store.backend().compacted_revision();
                if rv < compacted {
                    return self.expired(rv, compacted).await;
                }
                rv
            }
            _ => {
                // Synthetic ADDED events for the current state, then changes after it.
                let page = match store.list(&self.rt, ns, &self.list).await {
                    Ok(page) => page,
                    Err(err) => return self.send(error_event(&err)).await,
                };
                for object in page.items {
                    self.send_event("ADDED", &object, None).await?;
                }
                if send_initial {
                    let mut bookmark = self.bookmark(page.revision);
                    bookmark["object"]["metadata"]["annotations"] =
                        json!({"k8s.io/initial-events-end": "true"});
                    self.send(line(&bookmark)).await?;
                }
                page.revision
            }
        };
        let mut changes = cache.subscribe();
        let mut last_sent = Instant::now();
        loop {
            changes.borrow_and_update();
            match cache.events_after(&self.prefix, position) {
                Ok((events, seen)) => {
                    for event in events {
                        self.deliver(&event).await?;
                        last_sent = Instant::now();
                    }
                    position = seen;
                }
                Err(_) => return self.serve_from_storage(store, position).await,
            }
            let idle = last_sent + BOOKMARK_INTERVAL;
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return Err(Closed) },
                _ = tokio::time::sleep_until(idle) => {
                    if self.bookmarks {
                        self.send(line(&self.bookmark(position))).await?;
                    }
                    last_sent = Instant::now();
                }
                _ = self.tx.closed() => return Err(Closed),
            }
        }
    }

    /// Serves a watcher the cache cannot: straight from the storage's history.
    async fn serve_from_storage(&self, store: &Store, position: Revision) -> Result<(), Closed> {
        let mut stream = match store.backend().watch(&self.prefix, position).await {
            Ok(stream) => stream,
            Err(crate::storage::Error::Compacted {
                requested,
                compacted,
            }) => return self.expired(requested, compacted).await,
            Err(err) => return self.send(error_event(&err.into())).await,
        };
        loop {
            tokio::select! {
                next = stream.next() => match next {
                    Some(Ok(event)) => {
                        if let Some(event) = decode_event(&event) {
                            self.deliver(&event).await?;
                        }
                    }
                    Some(Err(crate::storage::Error::Compacted { requested, compacted })) => {
                        return self.expired(requested, compacted).await;
                    }
                    Some(Err(err)) => return self.send(error_event(&err.into())).await,
                    None => return Err(Closed),
                },
                _ = self.tx.closed() => return Err(Closed),
            }
        }
    }

    async fn expired(&self, requested: Revision, compacted: Revision) -> Result<(), Closed> {
        let err = Error::Expired(format!(
            "too old resource version: {requested} ({compacted})"
        ));
        self.send(error_event(&err)).await?;
        Err(Closed)
    }

    /// Sends one change, as upstream does with selectors: an object that starts matching is
    /// ADDED, one that stops matching is DELETED.
    async fn deliver(&self, event: &CachedEvent) -> Result<(), Closed> {
        let filtered = !self.list.labels.is_empty() || !self.list.fields.is_empty();
        // Without selectors the object is not decoded here: its JSON is sent as the cache has it.
        let (labels, fields) = (&self.list.labels, &self.list.fields);
        let now_matches = !filtered || event.matches(labels, fields, false);
        // Without selectors every object matches, before and after; only a filtered watch needs
        // the previous state.
        let before = if filtered {
            event.matches(labels, fields, true)
        } else {
            event.kind != EventKind::Create
        };
        let kind = match (event.kind, before, now_matches) {
            (EventKind::Create, _, true) => "ADDED",
            (EventKind::Update, true, true) => "MODIFIED",
            (EventKind::Update, false, true) => "ADDED",
            (EventKind::Update, true, false) => "DELETED",
            (EventKind::Delete, _, true) => "DELETED",
            _ => return Ok(()),
        };
        let served_as = self.rt.api_version();
        if self.representation == Representation::Object && event.api_version() == served_as {
            let object = event.object_json();
            let mut buf = BytesMut::with_capacity(object.len() + 32);
            buf.put_slice(b"{\"type\":\"");
            buf.put_slice(kind.as_bytes());
            buf.put_slice(b"\",\"object\":");
            buf.put_slice(&object);
            buf.put_slice(b"}\n");
            return self.send(buf.freeze()).await;
        }
        self.send_event(kind, &event.decoded(), None).await
    }

    async fn send_event(&self, kind: &str, object: &Value, _: Option<()>) -> Result<(), Closed> {
        let mut object = object.clone();
        // Converting may change the metadata too (a v1 HorizontalPodAutoscaler's annotations).
        convert(&mut object, &self.rt);
        let object = match self.representation {
            Representation::Object => object,
            Representation::PartialMetadata => partial(object["metadata"].take()),
            Representation::Table(..) => {
                let mut table = self.representation.object(&self.rt, object);
                if self
                    .sent_columns
                    .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    crate::table::omit_column_definitions(&mut table);
                }
                table
            }
        };
        self.send(line(&json!({"type": kind, "object": object})))
            .await
    }

    fn bookmark(&self, revision: Revision) -> Value {
        let (api_version, kind) = match self.representation {
            Representation::Object => (self.rt.api_version(), self.rt.kind.clone()),
            Representation::PartialMetadata => (
                "meta.k8s.io/v1".to_owned(),
                "PartialObjectMetadata".to_owned(),
            ),
            Representation::Table(version, _) => {
                (version.api_version().to_owned(), "Table".to_owned())
            }
        };
        json!({
            "type": "BOOKMARK",
            "object": {
                "kind": kind,
                "apiVersion": api_version,
                "metadata": {"resourceVersion": revision.to_string()},
            }
        })
    }

    async fn send(&self, bytes: Bytes) -> Result<(), Closed> {
        self.tx.send(Ok(bytes)).await.map_err(|_| Closed)
    }
}

fn line(value: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

fn error_event(err: &Error) -> Bytes {
    line(&json!({"type": "ERROR", "object": err.to_status()}))
}
