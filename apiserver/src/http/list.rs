//! Lists, served from the watch cache's current state when it can answer them as storage would,
//! as kube-apiserver serves them from its watch cache: a list without `resourceVersion` once the
//! cache holds every write committed before the request (a consistent read), with
//! `resourceVersion=0` at once, with `resourceVersion=N` (not older than) once it holds N. Lists
//! at an exact revision, continuations and lists the cache does not catch up for within
//! [`CATCH_UP`] read storage. In JSON, at the version objects are stored at, a list is the
//! objects' cached JSON spliced together: no object is decoded or serialized again.

use std::sync::Arc;
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use bytes::{BufMut, BytesMut};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use super::ApiState;
use super::representation::Representation;
use crate::error::Result;
use crate::registry::ResourceType;
use crate::registry::store::{ListOptions, ObjectList, convert, encode_continue};
use crate::storage::Revision;
use crate::watch::CachedEvent;

/// How long a list waits for the cache to hold the writes it must see before it reads storage.
const CATCH_UP: Duration = Duration::from_secs(3);

/// Answers a list.
pub async fn serve(
    state: &ApiState,
    rt: &ResourceType,
    ns: Option<&str>,
    list: &ListOptions,
    representation: Representation,
) -> Result<Response> {
    let at_least = state.store.list_at_least(list)?;
    if let Some(at_least) = at_least
        && state.cache.caught_up(at_least, CATCH_UP).await
    {
        let (objects, revision) = state.cache.list(&rt.namespace_prefix(ns));
        return Ok(from_cache(rt, list, representation, objects, revision));
    }
    let page = state.store.list(rt, ns, list).await?;
    Ok(representation.response(StatusCode::OK, &representation.list(rt, page)))
}

/// The page of `objects` (current at `revision`) that `list` asks for.
fn from_cache(
    rt: &ResourceType,
    list: &ListOptions,
    representation: Representation,
    objects: Vec<Arc<CachedEvent>>,
    revision: Revision,
) -> Response {
    let filtered = !list.labels.is_empty() || !list.fields.is_empty();
    let mut objects: Vec<Arc<CachedEvent>> = if filtered {
        objects
            .into_iter()
            .filter(|o| o.matches(&list.labels, &list.fields, false))
            .collect()
    } else {
        objects
    };
    let mut continue_token = None;
    let mut remaining = None;
    if let Some(limit) = list.limit.filter(|l| *l > 0 && *l < objects.len()) {
        let rest = objects.split_off(limit);
        // The next pages read storage at this revision, which holds what the cache held.
        continue_token = objects.last().map(|o| encode_continue(revision, &o.key));
        remaining = (!filtered).then_some(rest.len());
    }
    let served_as = rt.api_version();
    if representation == Representation::Object
        && objects.iter().all(|o| o.api_version() == served_as)
    {
        return spliced(rt, &objects, revision, continue_token, remaining);
    }
    let items = objects
        .iter()
        .map(|o| {
            let mut object = Arc::unwrap_or_clone(o.decoded());
            convert(&mut object, rt);
            object
        })
        .collect();
    let page = ObjectList {
        items,
        revision,
        continue_token,
        remaining,
    };
    representation.response(StatusCode::OK, &representation.list(rt, page))
}

/// The JSON list of `objects`, byte for byte what serializing it as a value gives (keys in
/// order: `apiVersion`, `items`, `kind`, `metadata`).
fn spliced(
    rt: &ResourceType,
    objects: &[Arc<CachedEvent>],
    revision: Revision,
    continue_token: Option<String>,
    remaining: Option<usize>,
) -> Response {
    let mut metadata = json!({"resourceVersion": revision.to_string()});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(remaining) = remaining {
        metadata["remainingItemCount"] = json!(remaining);
    }
    let size: usize = objects.iter().map(|o| o.json_len_bound() + 1).sum();
    let mut body = BytesMut::with_capacity(size + 256);
    body.put_slice(b"{\"apiVersion\":");
    body.put_slice(&serde_json::to_vec(&rt.api_version()).unwrap_or_default());
    body.put_slice(b",\"items\":[");
    for (index, object) in objects.iter().enumerate() {
        if index > 0 {
            body.put_u8(b',');
        }
        object.write_json(&mut body);
    }
    body.put_slice(b"],\"kind\":");
    body.put_slice(&serde_json::to_vec(&rt.list_kind).unwrap_or_default());
    body.put_slice(b",\"metadata\":");
    body.put_slice(&serde_json::to_vec(&metadata).unwrap_or_default());
    body.put_u8(b'}');
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.freeze(),
    )
        .into_response()
}
