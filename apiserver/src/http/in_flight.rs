//! What a request holds while it is served: a slot of the requests-in-flight limit of its kind
//! (read-only or mutating, as kube-apiserver counts them) until its response is ready, or for a
//! watch a slot of its user's watches until the watch's stream ends.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::Method;
use hyper::body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{ApiState, Query, is_public, path};
use crate::auth::User;
use crate::error::{Error, Result};

/// kube-apiserver's answer past the in-flight limits.
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";

/// The limits on requests served at once, read-only and mutating apart, and on each user's
/// open watches (`None`: unlimited).
#[derive(Clone, Default)]
pub struct InFlight {
    pub read_only: Option<Arc<Semaphore>>,
    pub mutating: Option<Arc<Semaphore>>,
    pub watches: Option<Arc<WatchCounts>>,
    /// Members of `system:masters` take no slot, as kube-apiserver's filter lets them through
    /// (a hosted cluster's limits bound its admin too: they protect the hub from a tenant).
    pub exempt_masters: bool,
}

/// How many watches each user has open, against a bound per user.
pub struct WatchCounts {
    per_user: u32,
    /// What refusals name as the source of the bound.
    source: String,
    open: Mutex<HashMap<String, u32>>,
}

impl WatchCounts {
    pub fn new(per_user: u32, source: &str) -> Self {
        WatchCounts {
            per_user,
            source: source.to_owned(),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// A slot for one more watch of `user`, or 429 at the bound.
    fn take(self: &Arc<Self>, user: &str) -> Result<WatchSlot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(user.to_owned()).or_default();
        if *count >= self.per_user {
            return Err(Error::TooManyRequests(format!(
                "too many watches: user {user:?} has {count} open, the most {} allows; close \
                 some or retry later",
                self.source
            )));
        }
        *count += 1;
        Ok(WatchSlot {
            counts: self.clone(),
            user: user.to_owned(),
        })
    }

    /// Watches open now, all users together.
    pub fn open(&self) -> u32 {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.values().sum()
    }
}

/// One open watch of a user; gives its slot back when dropped.
pub struct WatchSlot {
    counts: Arc<WatchCounts>,
    user: String,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        let mut open = self.counts.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.user) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.user);
            }
        }
    }
}

/// What an admitted request holds.
pub enum Slot {
    /// Nothing: no limit applies.
    Free,
    /// A slot of the in-flight limit, given back once the response is ready.
    Request(#[allow(dead_code)] OwnedSemaphorePermit),
    /// A slot of the user's watches, given back when the watch's stream ends.
    Watch(WatchSlot),
}

impl Slot {
    /// `response`, holding the slot as long as its body streams when it is a watch's.
    pub fn hold(self, response: Response) -> Response {
        match self {
            Slot::Watch(slot) => hold_while_sent(response, slot),
            Slot::Free | Slot::Request(_) => response,
        }
    }
}

/// Takes the slot a request needs, or refuses it with 429 when none is left. Long-running
/// requests (watches, a backup's download) and the health and version endpoints take no
/// in-flight slot, as kube-apiserver's max-in-flight filter leaves them out; watches take one of
/// their user's.
pub fn admit(state: &ApiState, request: &http::request::Parts, user: &User) -> Result<Slot> {
    let limits = &state.in_flight;
    if limits.exempt_masters && user.groups.iter().any(|g| g == crate::authz::MASTERS) {
        return Ok(Slot::Free);
    }
    let path = request.uri.path();
    if Query::parse(request.uri.query().unwrap_or_default()).flag("watch") {
        return match &limits.watches {
            Some(watches) => watches.take(&user.name).map(Slot::Watch),
            None => Ok(Slot::Free),
        };
    }
    if is_public(path) || path == path::BACKUP {
        return Ok(Slot::Free);
    }
    let read_only = matches!(request.method, Method::GET | Method::HEAD | Method::OPTIONS);
    let limit = if read_only {
        &limits.read_only
    } else {
        &limits.mutating
    };
    let Some(limit) = limit else {
        return Ok(Slot::Free);
    };
    limit
        .clone()
        .try_acquire_owned()
        .map(Slot::Request)
        .map_err(|_| Error::TooManyRequests(TOO_MANY_REQUESTS.into()))
}

/// `response` with `guard` kept until its body has been sent or the client has gone.
pub fn hold_while_sent<G: Send + Sync + Unpin + 'static>(response: Response, guard: G) -> Response {
    response.map(|body| {
        Body::new(Held {
            body,
            _guard: guard,
        })
    })
}

/// A body that holds a guard for as long as it lives.
struct Held<G> {
    body: Body,
    _guard: G,
}

impl<G: Unpin> hyper::body::Body for Held<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
