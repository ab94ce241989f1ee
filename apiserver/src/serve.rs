//! The HTTPS listener: TLS handshakes, HTTP/2 or HTTP/1.1 connections (as ALPN decided) serving
//! the router, and a graceful stop that lets in-flight requests finish (watches end on the same
//! signal).
//!
//! Like kube-apiserver, the server offers `h2` before `http/1.1`, so that a client's many
//! watches share one connection. HTTP/2 is bounded as kube-apiserver bounds it: 250 concurrent
//! streams (Go's default), 1 MiB of headers, 256 KiB frames and per-stream flow-control windows
//! and send buffers; the connection's window is bounded too ([`CONNECTION_WINDOW`]), and pings
//! find dead peers so that their watches end. HTTP/1.1 keeps its limits, plus kube-apiserver's
//! header read timeout. A connection that serves nothing for the idle timeout is closed (both
//! protocols), and connections past a cap are closed as they are accepted, so that idle or slow
//! clients cannot hold the server's sockets and memory. Request bodies, requests in flight and
//! watches are bounded by the router, for both.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsAcceptor;

/// How long a stop waits for in-flight requests.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a refused connection is logged at most.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);
/// The largest request header block of an HTTP/2 request (kube-apiserver's `MaxHeaderBytes`;
/// HTTP/1.1 requests are bounded tighter, by hyper's read buffer).
const MAX_HEADER_BYTES: u32 = 1 << 20;
/// Streams one HTTP/2 connection may have open at once.
pub const MAX_CONCURRENT_STREAMS: u32 = 250;
/// The largest HTTP/2 frame read, each stream's flow-control window, and what a stream buffers
/// for a client that reads slowly: most objects fit in one frame (kube-apiserver's
/// `resourceBody99Percentile`).
const STREAM_WINDOW: u32 = 256 * 1024;
/// The flow-control window of a whole HTTP/2 connection: what a client may have sent that the
/// server has not read yet. Bounded (kube-apiserver allows one stream window per stream) so that
/// a connection holds a few MiB at most however many streams it opens.
const CONNECTION_WINDOW: u32 = 16 * STREAM_WINDOW;
/// How often an HTTP/2 connection is pinged, and how long the answer may take before the
/// connection (and every watch on it) is closed.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// The ALPN protocols the server offers, most preferred first.
pub const ALPN_PROTOCOLS: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// How long a client may take, kube-apiserver's figures by default.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// A TLS handshake.
    pub handshake: Duration,
    /// An HTTP/1.1 request's headers (`ReadHeaderTimeout`).
    pub header_read: Duration,
    /// A connection with no request in progress and no response streaming (`IdleTimeout`).
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            handshake: Duration::from_secs(10),
            header_read: Duration::from_secs(32),
            idle: Duration::from_secs(90),
        }
    }
}

/// The bounds on client connections.
#[derive(Clone, Copy, Debug, Default)]
pub struct Connections {
    /// Connections open at once (`None`: unbounded).
    pub max: Option<u32>,
    pub timeouts: Timeouts,
}

/// The connection builder for both protocols, with every limit set.
fn builder(timeouts: &Timeouts) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.header_read);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .max_header_list_size(MAX_HEADER_BYTES)
        .max_frame_size(STREAM_WINDOW)
        .initial_stream_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_send_buf_size(STREAM_WINDOW as usize)
        .keep_alive_interval(KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(KEEP_ALIVE_TIMEOUT);
    builder
}

/// Accepts connections until `shutdown` turns true, then drains: each connection finishes the
/// requests it serves (watches end on the same signal), for [`DRAIN_TIMEOUT`] at most.
pub async fn run(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    limits: Connections,
    shutdown: watch::Receiver<bool>,
) {
    let acceptor = TlsAcceptor::from(tls);
    // One permit per open connection; all of them back once every connection has ended.
    let capacity = limits.max.unwrap_or(u32::MAX >> 3);
    let slots = Arc::new(Semaphore::new(capacity as usize));
    let http1 = builder(&limits.timeouts).http1_only();
    let http2 = builder(&limits.timeouts).http2_only();
    let mut last_refusal: Option<Instant> = None;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        tracing::warn!(error = %err, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    // Closed at once: the client fails fast instead of waiting in the backlog.
                    drop(tcp);
                    if last_refusal.is_none_or(|t| t.elapsed() >= REFUSAL_LOG_INTERVAL) {
                        last_refusal = Some(Instant::now());
                        tracing::warn!(%peer, max = capacity, "connection refused: the server has as many open as it allows");
                    }
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let connection = Connection {
                    acceptor: acceptor.clone(),
                    router: router.clone(),
                    builder: (http1.clone(), http2.clone()),
                    timeouts: limits.timeouts,
                    shutdown: shutdown.clone(),
                };
                tokio::spawn(async move {
                    connection.serve(tcp, peer).await;
                    drop(slot);
                });
            }
            _ = crate::stopped(shutdown.clone()) => break,
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, slots.acquire_many(capacity)).await;
    if drained.is_err() {
        tracing::warn!("connections still open after the drain timeout");
    }
}

/// What serving one connection needs.
struct Connection {
    acceptor: TlsAcceptor,
    router: Router,
    /// The HTTP/1.1 and the HTTP/2 builder.
    builder: (auto::Builder<TokioExecutor>, auto::Builder<TokioExecutor>),
    timeouts: Timeouts,
    shutdown: watch::Receiver<bool>,
}

impl Connection {
    /// Handshakes, then serves requests until the client leaves, the connection idles past the
    /// idle timeout, or the server stops (the last two close it gracefully: requests in
    /// progress finish).
    async fn serve(self, tcp: tokio::net::TcpStream, peer: std::net::SocketAddr) {
        let stream =
            match tokio::time::timeout(self.timeouts.handshake, self.acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(err)) => {
                    tracing::debug!(%peer, error = %err, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
        // As Go's server: HTTP/2 only when ALPN chose it.
        let tls = stream.get_ref().1;
        let builder = if tls.alpn_protocol() == Some(b"h2") {
            &self.builder.1
        } else {
            &self.builder.0
        };
        // Every request of the connection carries who its certificate names.
        let certificate = tls
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|leaf| crate::auth::ClientCertificate::of(leaf));
        let activity = Arc::new(Activity::new());
        let service = {
            let activity = activity.clone();
            let router = self.router;
            tower::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
                if let Some(certificate) = &certificate {
                    request.extensions_mut().insert(certificate.clone());
                }
                request.extensions_mut().insert(crate::audit::Peer(peer));
                let busy = activity.begin();
                let served = tower::ServiceExt::oneshot(router.clone(), request);
                async move {
                    let response = served.await?;
                    Ok::<_, std::convert::Infallible>(crate::http::hold_while_sent(response, busy))
                }
            })
        };
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        tokio::pin!(connection);
        let mut closing = false;
        loop {
            tokio::select! {
                ended = connection.as_mut() => {
                    if let Err(err) = ended {
                        tracing::debug!(%peer, error = %err, "connection ended with an error");
                    }
                    return;
                }
                _ = activity.idle_for(self.timeouts.idle), if !closing => {
                    tracing::debug!(%peer, "closing an idle connection");
                    connection.as_mut().graceful_shutdown();
                    closing = true;
                }
                _ = crate::stopped(self.shutdown.clone()), if !closing => {
                    connection.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
        }
    }
}

/// What a connection is doing: requests in progress (a response counts until its body is
/// sent) and when the last one ended.
struct Activity {
    opened: Instant,
    busy: AtomicUsize,
    /// Milliseconds from `opened` to when the last request ended.
    last_ended: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            opened: Instant::now(),
            busy: AtomicUsize::new(0),
            last_ended: AtomicU64::new(0),
        }
    }

    /// Marks a request in progress until the guard is dropped.
    fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Busy(self.clone())
    }

    /// Resolves once the connection has had nothing in progress for `timeout`.
    async fn idle_for(&self, timeout: Duration) {
        loop {
            let wake = if self.busy.load(Ordering::SeqCst) > 0 {
                Instant::now() + timeout
            } else {
                let ended =
                    self.opened + Duration::from_millis(self.last_ended.load(Ordering::SeqCst));
                if ended.elapsed() >= timeout {
                    return;
                }
                ended + timeout
            };
            tokio::time::sleep_until(wake.into()).await;
        }
    }
}

/// A request in progress on a connection.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        let elapsed = u64::try_from(self.0.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.last_ended.store(elapsed, Ordering::SeqCst);
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}
