//! What every call to the hub's gRPC service passes before its message is read: a credential
//! (a bootstrap token's shape for Join, a cluster credential the hub knows for the others), a
//! per-method cap on the message's size, and, for a source address whose joins keep failing, a
//! pause. A client holding nothing gets refusals that cost the hub a hash and a map lookup.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Frame;
use tonic::Status;
use tonic::body::Body;
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};

use crate::bootstrap::Token;
use crate::digest::sha256;
use crate::fleet::Fleet;

/// The largest message of each method, in bytes: Join and Heartbeat carry a cluster's
/// properties, ReportWorkStatus at most one Work status and its envelope, Sync the versions of
/// the Works an agent has.
pub use atoll_proto::{HEARTBEAT_MAX_BYTES, JOIN_MAX_BYTES, SYNC_MAX_BYTES};
/// See [`JOIN_MAX_BYTES`].
pub const REPORT_MAX_BYTES: usize = super::STATUS_MAX_BYTES + 64 * 1024;
/// See [`JOIN_MAX_BYTES`].
pub const RENEW_MAX_BYTES: usize = 1024;

/// Failed joins a source address may make at once before it must wait.
const JOIN_FAILURES_BURST: f64 = 10.0;
/// How fast a source address earns back a failed join.
const JOIN_FAILURE_REFILL: Duration = Duration::from_secs(6);
/// The most source addresses the join limiter remembers.
const JOIN_SOURCES_MAX: usize = 4096;

/// Who a call's credential identifies, put in the request's extensions by the guard.
#[derive(Debug, Clone)]
pub struct Caller(pub crate::fleet::Identity);

/// The source address of a call, put in the request's extensions by the guard.
#[derive(Debug, Clone, Copy)]
pub struct Source(pub Option<IpAddr>);

/// Which method a call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Join,
    Heartbeat,
    Sync,
    ReportWorkStatus,
    RenewCredential,
}

impl Method {
    /// The method's name, as the metrics label it.
    fn name(self) -> &'static str {
        match self {
            Method::Join => "Join",
            Method::Heartbeat => "Heartbeat",
            Method::Sync => "Sync",
            Method::ReportWorkStatus => "ReportWorkStatus",
            Method::RenewCredential => "RenewCredential",
        }
    }

    fn of(path: &str) -> Option<Self> {
        match path.strip_prefix("/atoll.hub.v1.Hub/")? {
            "Join" => Some(Method::Join),
            "Heartbeat" => Some(Method::Heartbeat),
            "Sync" => Some(Method::Sync),
            "ReportWorkStatus" => Some(Method::ReportWorkStatus),
            "RenewCredential" => Some(Method::RenewCredential),
            _ => None,
        }
    }

    fn max_bytes(self) -> usize {
        match self {
            Method::Join => JOIN_MAX_BYTES,
            Method::Heartbeat => HEARTBEAT_MAX_BYTES,
            Method::Sync => SYNC_MAX_BYTES,
            Method::ReportWorkStatus => REPORT_MAX_BYTES,
            Method::RenewCredential => RENEW_MAX_BYTES,
        }
    }
}

/// Failed joins by source address: a token bucket each, so a client guessing tokens is slowed to
/// one guess every few seconds while clusters that join with valid tokens never wait.
#[derive(Default)]
pub struct JoinLimiter {
    sources: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl JoinLimiter {
    /// How long `ip` must wait before it may try to join again, if it must.
    pub fn wait(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        let tokens = sources.get_mut(&ip).map(|bucket| refill(bucket, now))?;
        (tokens < 1.0).then(|| JOIN_FAILURE_REFILL.mul_f64(1.0 - tokens))
    }

    /// Records a failed join from `ip`.
    pub fn failed(&self, ip: IpAddr, now: Instant) {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        if !sources.contains_key(&ip) && sources.len() >= JOIN_SOURCES_MAX {
            // Forget the sources that have earned everything back, or else any one.
            sources.retain(|_, bucket| refill(bucket, now) < JOIN_FAILURES_BURST);
            if sources.len() >= JOIN_SOURCES_MAX
                && let Some(any) = sources.keys().next().copied()
            {
                sources.remove(&any);
            }
        }
        let bucket = sources.entry(ip).or_insert((JOIN_FAILURES_BURST, now));
        let tokens = refill(bucket, now);
        bucket.0 = (tokens - 1.0).max(0.0);
    }
}

/// Refills a bucket up to `now`; returns its tokens.
fn refill(bucket: &mut (f64, Instant), now: Instant) -> f64 {
    let earned =
        now.saturating_duration_since(bucket.1).as_secs_f64() / JOIN_FAILURE_REFILL.as_secs_f64();
    bucket.0 = (bucket.0 + earned).min(JOIN_FAILURES_BURST);
    bucket.1 = now;
    bucket.0
}

/// The guard as a tower layer around the hub's routes.
#[derive(Clone)]
pub struct GuardLayer {
    fleet: Arc<Fleet>,
    joins: Arc<JoinLimiter>,
}

impl GuardLayer {
    /// A guard that knows credentials from `fleet` and failed joins from `joins`.
    pub fn new(fleet: Arc<Fleet>, joins: Arc<JoinLimiter>) -> Self {
        Self { fleet, joins }
    }
}

impl<S> tower::Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            inner,
            layer: self.clone(),
        }
    }
}

/// See [`GuardLayer`].
#[derive(Clone)]
pub struct Guard<S> {
    inner: S,
    layer: GuardLayer,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S> tower::Service<http::Request<Body>> for Guard<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let started = Instant::now();
        let method = Method::of(request.uri().path());
        if let Some(method) = method {
            let metrics = &self.layer.fleet.metrics;
            metrics.started(method.name(), method == Method::Sync);
        }
        let call = Call {
            metrics: self.layer.fleet.metrics.clone(),
            method,
            started,
        };
        match self.admit(&mut request) {
            Ok(method) => {
                let request = request.map(|body| Body::new(CappedBody::new(body, method)));
                let answer = self.inner.call(request);
                Box::pin(async move { Ok(call.answered(answer.await?)) })
            }
            Err(status) => {
                call.ended(status.code());
                Box::pin(std::future::ready(Ok(status.into_http())))
            }
        }
    }
}

/// One call, counted once it ends: at once when the answer carries its status in its headers
/// (refusals), or when its body ends with the status in the trailers (answers and streams).
struct Call {
    metrics: Arc<crate::metrics::Metrics>,
    /// `None` for a path the hub does not serve (counted as no method).
    method: Option<Method>,
    started: Instant,
}

impl Call {
    fn ended(self, code: tonic::Code) {
        let Some(method) = self.method else {
            return;
        };
        if method == Method::Join && code != tonic::Code::Ok {
            self.metrics.join_refused(code);
        }
        self.metrics.handled(
            method.name(),
            method == Method::Sync,
            code,
            self.started.elapsed(),
        );
    }

    fn answered(self, response: http::Response<Body>) -> http::Response<Body> {
        if let Some(code) = grpc_status(response.headers()) {
            self.ended(code);
            return response;
        }
        response.map(|body| {
            Body::new(CountedBody {
                body,
                call: Some(self),
            })
        })
    }
}

/// The `grpc-status` of headers or trailers.
fn grpc_status(headers: &http::HeaderMap) -> Option<tonic::Code> {
    headers
        .get("grpc-status")
        .map(|v| tonic::Code::from_bytes(v.as_bytes()))
}

/// An answer's body that counts its call when it ends: with the trailers' status, or
/// `Canceled` when the client went away first.
struct CountedBody {
    body: Body,
    call: Option<Call>,
}

impl http_body::Body for CountedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        let code = match &polled {
            Poll::Ready(Some(Ok(frame))) => frame.trailers_ref().map(grpc_status),
            Poll::Ready(Some(Err(status))) => Some(Some(status.code())),
            Poll::Ready(None) => Some(None),
            Poll::Pending => None,
        };
        if let Some(code) = code
            && let Some(call) = self.call.take()
        {
            call.ended(code.unwrap_or(tonic::Code::Ok));
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for CountedBody {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            call.ended(tonic::Code::Cancelled);
        }
    }
}

impl<S> Guard<S> {
    /// Checks a call's credential and notes its caller and source; returns its method.
    fn admit(&self, request: &mut http::Request<Body>) -> Result<Method, Status> {
        let method = Method::of(request.uri().path())
            .ok_or_else(|| Status::unimplemented("the hub serves no such method"))?;
        let ip = peer_ip(request.extensions());
        request.extensions_mut().insert(Source(ip));
        let token = bearer(request.headers())?;
        if method == Method::Join {
            let now = Instant::now();
            if let Some(ip) = ip
                && let Some(wait) = self.layer.joins.wait(ip, now)
            {
                return Err(Status::resource_exhausted(format!(
                    "too many failed joins from {ip}; try again in {}s",
                    wait.as_secs().max(1)
                )));
            }
            if let Err(error) = Token::parse(token) {
                if let Some(ip) = ip {
                    self.layer.joins.failed(ip, now);
                }
                return Err(Status::unauthenticated(error.to_string()));
            }
        } else {
            let name = self
                .layer
                .fleet
                .identify(&sha256(token.as_bytes()), jiff::Timestamp::now())
                .map_err(|refused| Status::unauthenticated(refused.to_string()))?;
            request.extensions_mut().insert(Caller(name));
        }
        Ok(method)
    }
}

/// The remote address of a connection, as tonic records it.
fn peer_ip(extensions: &http::Extensions) -> Option<IpAddr> {
    let tcp = extensions
        .get::<TlsConnectInfo<TcpConnectInfo>>()
        .map(TlsConnectInfo::get_ref)
        .or_else(|| extensions.get::<TcpConnectInfo>());
    tcp.and_then(TcpConnectInfo::remote_addr)
        .map(|addr| addr.ip().to_canonical())
}

/// The token of `authorization: Bearer <token>`.
pub fn bearer(headers: &http::HeaderMap) -> Result<&str, Status> {
    let value = headers.get(atoll_proto::AUTHORIZATION).ok_or_else(|| {
        Status::unauthenticated("the call carries no credential (authorization: Bearer ...)")
    })?;
    let text = value
        .to_str()
        .map_err(|_| Status::unauthenticated("the authorization metadata is not text"))?;
    text.strip_prefix("Bearer ").map(str::trim).ok_or_else(|| {
        Status::unauthenticated("the authorization metadata must read \"Bearer <token>\"")
    })
}

/// A request body that fails as soon as its message says it is larger than its method's limit
/// (every method takes one request message, whose 5-byte gRPC prefix carries its length), or
/// once it carries more bytes than that.
struct CappedBody {
    body: Body,
    method: Method,
    left: usize,
    /// The first message's prefix, as far as it has arrived.
    prefix: [u8; 5],
    seen: usize,
}

impl CappedBody {
    fn new(body: Body, method: Method) -> Self {
        Self {
            body,
            method,
            // The first message's prefix comes on top of the message.
            left: method.max_bytes() + 5,
            prefix: [0; 5],
            seen: 0,
        }
    }

    fn too_large(&self) -> Status {
        Status::resource_exhausted(format!(
            "the {:?} message is larger than its limit of {} bytes",
            self.method,
            self.method.max_bytes()
        ))
    }

    /// Reads the prefix out of the first bytes; whether the message it announces fits.
    fn announced_fits(&mut self, data: &[u8]) -> bool {
        if self.seen >= self.prefix.len() {
            return true;
        }
        let take = (self.prefix.len() - self.seen).min(data.len());
        self.prefix[self.seen..self.seen + take].copy_from_slice(&data[..take]);
        self.seen += take;
        if self.seen < self.prefix.len() {
            return true;
        }
        let length = u32::from_be_bytes([
            self.prefix[1],
            self.prefix[2],
            self.prefix[3],
            self.prefix[4],
        ]);
        length as usize <= self.method.max_bytes()
    }
}

impl http_body::Body for CappedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let frame = match Pin::new(&mut self.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        if let Some(data) = frame.data_ref() {
            if data.len() > self.left || !self.announced_fits(&data.clone()) {
                return Poll::Ready(Some(Err(self.too_large())));
            }
            self.left -= data.len();
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_joins_are_paced_per_source_and_earned_back() {
        let limiter = JoinLimiter::default();
        let (a, b): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let start = Instant::now();
        for _ in 0..10 {
            assert_eq!(limiter.wait(a, start), None);
            limiter.failed(a, start);
        }
        let wait = limiter.wait(a, start).expect("the eleventh must wait");
        assert!(wait <= JOIN_FAILURE_REFILL, "{wait:?}");
        assert_eq!(limiter.wait(b, start), None, "another source does not wait");
        assert_eq!(limiter.wait(a, start + JOIN_FAILURE_REFILL), None);
    }

    #[test]
    fn the_limiter_remembers_a_bounded_number_of_sources() {
        let limiter = JoinLimiter::default();
        let now = Instant::now();
        for i in 0..(JOIN_SOURCES_MAX as u32 + 100) {
            limiter.failed(IpAddr::from(i.to_be_bytes()), now);
        }
        assert!(limiter.sources.lock().unwrap().len() <= JOIN_SOURCES_MAX);
    }

    #[test]
    fn methods_are_known_by_path() {
        assert_eq!(Method::of("/atoll.hub.v1.Hub/Join"), Some(Method::Join));
        assert_eq!(Method::of("/atoll.hub.v1.Hub/Nope"), None);
        assert_eq!(Method::of("/other.Service/Join"), None);
    }
}
