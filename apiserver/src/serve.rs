//! The HTTPS listener: TLS handshakes, HTTP/2 or HTTP/1.1 connections (as ALPN decided) serving
//! the router, and a graceful stop that lets in-flight requests finish (watches end on the same
//! signal).
//!
//! Like kube-apiserver, the server offers `h2` before `http/1.1`, so that a client's many
//! watches share one connection. HTTP/2 is bounded as kube-apiserver bounds it: 250 concurrent
//! streams (Go's default), 1 MiB of headers, 256 KiB frames and per-stream flow-control windows
//! and send buffers; the connection's window is bounded too ([`CONNECTION_WINDOW`]), and pings
//! find dead peers so that their watches end. HTTP/1.1 keeps its limits, plus kube-apiserver's header read timeout.
//! Request bodies, requests in flight and watches are bounded by the router, for both.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a stop waits for in-flight requests.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an HTTP/1.1 client may take to send a request's headers (kube-apiserver's
/// `ReadHeaderTimeout`).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);
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

/// The connection builder for both protocols, with every limit set.
fn builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
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

/// Accepts connections until `shutdown` turns true, then drains.
pub async fn run(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: watch::Receiver<bool>,
) {
    let acceptor = TlsAcceptor::from(tls);
    let graceful = GracefulShutdown::new();
    let http1 = builder().http1_only();
    let http2 = builder().http2_only();
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
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let router = router.clone();
                let watcher = graceful.watcher();
                let (http1, http2) = (http1.clone(), http2.clone());
                tokio::spawn(async move {
                    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(err)) => {
                            tracing::debug!(%peer, error = %err, "TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    };
                    // As Go's server: HTTP/2 only when ALPN chose it.
                    let tls = stream.get_ref().1;
                    let builder = if tls.alpn_protocol() == Some(b"h2") {
                        &http2
                    } else {
                        &http1
                    };
                    // Every request of the connection carries who its certificate names.
                    let certificate = tls
                        .peer_certificates()
                        .and_then(|chain| chain.first())
                        .and_then(|leaf| crate::auth::ClientCertificate::of(leaf));
                    let service = TowerToHyperService::new(tower::ServiceExt::map_request(
                        router,
                        move |mut request: http::Request<hyper::body::Incoming>| {
                            if let Some(certificate) = &certificate {
                                request.extensions_mut().insert(certificate.clone());
                            }
                            request
                        },
                    ));
                    let connection = builder.serve_connection(TokioIo::new(stream), service);
                    if let Err(err) = watcher.watch(connection).await {
                        tracing::debug!(%peer, error = %err, "connection ended with an error");
                    }
                });
            }
            _ = crate::stopped(shutdown.clone()) => break,
        }
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(DRAIN_TIMEOUT) => {
            tracing::warn!("connections still open after the drain timeout");
        }
    }
}
