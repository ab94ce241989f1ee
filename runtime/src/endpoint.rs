//! The health and metrics endpoint every long-running atoll binary serves on its own address
//! (`--metrics-addr`), in plain HTTP, off its API and gRPC ports:
//!
//! - `GET /livez`: 200 while the process runs;
//! - `GET /readyz`: 200 once every condition the binary waits for is met ([`Readiness`]), 503
//!   with what it still waits for before;
//! - `GET /metrics`: the registry in the Prometheus text format (version 0.0.4).
//!
//! It is bounded as a server on the network must be: requests that are not a small GET are
//! refused, a client has [`HEADER_READ_TIMEOUT`] to send its headers, and at most
//! [`MAX_CONNECTIONS`] connections are open at once (more are closed as they come).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// How long a client may take to send a request's headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections open at once (a scraper and a few probes need a handful).
pub const MAX_CONNECTIONS: usize = 64;
/// The most bytes of a request's head; a larger one is answered 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most bytes of a request's body (a GET has none); a larger one is answered 413.
pub const MAX_BODY_BYTES: u64 = 1024;

/// Why the endpoint cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{addr:?} is not an address (HOST:PORT)")]
    Address { addr: String },
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Parses `HOST:PORT`, where HOST is an IP address or a name that resolves (`localhost`); the
/// first address it resolves to is taken.
pub fn parse_addr(text: &str) -> Result<SocketAddr, Error> {
    use std::net::ToSocketAddrs as _;
    let refused = || Error::Address {
        addr: text.to_owned(),
    };
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    text.to_socket_addrs()
        .map_err(|_| refused())?
        .next()
        .ok_or_else(refused)
}

/// Listens on `addr`.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })
}

/// What a process waits for before it is ready: a set of named conditions, each met once.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    awaited: Arc<Mutex<Awaited>>,
}

#[derive(Debug, Default)]
struct Awaited {
    /// What is awaited, by the number it was given.
    pending: BTreeMap<u64, String>,
    next: u64,
}

/// One condition a [`Readiness`] waits for, until [`Pending::done`].
#[derive(Clone, Debug)]
pub struct Pending {
    readiness: Readiness,
    id: u64,
}

impl Readiness {
    /// Not ready until the returned condition is done; `what` says what is awaited, as
    /// `/readyz` reports it (e.g. "the hub's caches are syncing").
    pub fn pending(&self, what: impl Into<String>) -> Pending {
        let mut awaited = lock(&self.awaited);
        let id = awaited.next;
        awaited.next += 1;
        awaited.pending.insert(id, what.into());
        drop(awaited);
        Pending {
            readiness: self.clone(),
            id,
        }
    }

    /// What is still awaited, in the order it was asked for; empty when ready.
    pub fn awaited(&self) -> Vec<String> {
        lock(&self.awaited).pending.values().cloned().collect()
    }

    /// Whether nothing is awaited.
    pub fn is_ready(&self) -> bool {
        lock(&self.awaited).pending.is_empty()
    }
}

impl Pending {
    /// The condition is met.
    pub fn done(&self) {
        lock(&self.readiness.awaited).pending.remove(&self.id);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the endpoint serves.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub registry: Arc<Registry>,
    pub readiness: Readiness,
}

impl Endpoint {
    /// Serves `registry`, with the process's own figures ([`crate::process`]), ready once
    /// everything asked of `readiness` is done.
    pub fn new(mut registry: Registry, readiness: Readiness) -> Self {
        registry.register_collector(Box::new(crate::process::ProcessCollector));
        Endpoint {
            registry: Arc::new(registry),
            readiness,
        }
    }
}

impl Endpoint {
    /// The answer to one request.
    pub fn answer<B: http_body::Body>(&self, request: &Request<B>) -> Response<Full<Bytes>> {
        let text = |code: StatusCode, body: String| {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            *response.status_mut() = code;
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        };
        if !matches!(*request.method(), Method::GET | Method::HEAD) {
            let mut response = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "only GET and HEAD are served\n".into(),
            );
            response
                .headers_mut()
                .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let body = request.body().size_hint();
        if declared.is_some_and(|n| n > MAX_BODY_BYTES)
            || body.upper().is_none_or(|n| n > MAX_BODY_BYTES)
        {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("a request body may hold at most {MAX_BODY_BYTES} bytes\n"),
            );
        }
        match request.uri().path() {
            "/livez" => text(StatusCode::OK, "ok\n".into()),
            "/readyz" => {
                let awaited = self.readiness.awaited();
                if awaited.is_empty() {
                    text(StatusCode::OK, "ok\n".into())
                } else {
                    text(
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!("not ready: {}\n", awaited.join("; ")),
                    )
                }
            }
            "/metrics" => {
                let mut body = String::new();
                if let Err(error) =
                    prometheus_client::encoding::prometheus_text::encode(&mut body, &self.registry)
                {
                    tracing::error!(%error, "cannot encode the metrics");
                    return text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "cannot encode the metrics\n".into(),
                    );
                }
                let mut response = text(StatusCode::OK, body);
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    header::HeaderValue::from_static(
                        prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
                    ),
                );
                response
            }
            _ => text(
                StatusCode::NOT_FOUND,
                "not found: this endpoint serves /livez, /readyz and /metrics\n".into(),
            ),
        }
    }
}

/// Listens on `addr` and serves `endpoint` there, in a task, until `stop` turns true; returns
/// the address it serves on.
pub async fn start(
    addr: SocketAddr,
    endpoint: Endpoint,
    stop: watch::Receiver<bool>,
) -> Result<SocketAddr, Error> {
    use tracing::Instrument as _;
    let listener = bind(addr).await?;
    let local = listener
        .local_addr()
        .map_err(|source| Error::Bind { addr, source })?;
    let span = tracing::info_span!("metrics-endpoint", addr = %local);
    tokio::spawn(serve(listener, endpoint, stop).instrument(span));
    Ok(local)
}

/// Serves `endpoint` on `listener` until `stop` turns true; open connections are then closed.
pub async fn serve(listener: TcpListener, endpoint: Endpoint, mut stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|s| *s) => break,
            Some(_) = connections.join_next() => continue,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::debug!(%error, "cannot accept a connection to the metrics endpoint");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!(
                max = MAX_CONNECTIONS,
                "too many connections to the metrics endpoint; closing one"
            );
            continue;
        };
        let endpoint = endpoint.clone();
        connections.spawn(async move {
            let _slot = slot;
            let service =
                hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                    let response = endpoint.answer(&request);
                    async move { Ok::<_, Infallible>(response) }
                });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .max_buf_size(MAX_HEAD_BYTES)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            if let Err(error) = served {
                tracing::debug!(%error, "a metrics endpoint connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    async fn start(endpoint: Endpoint) -> (SocketAddr, watch::Sender<bool>) {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(serve(listener, endpoint, stopped));
        (addr, stop)
    }

    /// Sends `request` as it is and reads the whole answer (the connection is closed after it).
    async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    }

    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let answer =
            tokio::time::timeout(Duration::from_secs(10), exchange(addr, request.as_bytes()))
                .await
                .unwrap();
        let code = answer[9..12].parse().unwrap();
        let body = answer.split_once("\r\n\r\n").unwrap().1.to_owned();
        (code, body)
    }

    fn endpoint() -> Endpoint {
        let mut registry = Registry::default();
        let counter: prometheus_client::metrics::counter::Counter = Default::default();
        registry.register("test_events", "Events seen", counter.clone());
        counter.inc_by(3);
        Endpoint {
            registry: Arc::new(registry),
            readiness: Readiness::default(),
        }
    }

    #[tokio::test]
    async fn readyz_turns_ok_once_every_condition_is_met_and_livez_is_ok_throughout() {
        let endpoint = endpoint();
        let synced = endpoint.readiness.pending("caches are syncing");
        let joined = endpoint.readiness.pending("not joined yet");
        let readiness = endpoint.readiness.clone();
        let (addr, _stop) = start(endpoint).await;
        assert_eq!(get(addr, "/livez").await, (200, "ok\n".into()));
        let (code, body) = get(addr, "/readyz").await;
        assert_eq!(code, 503);
        assert_eq!(body, "not ready: caches are syncing; not joined yet\n");
        synced.done();
        assert_eq!(
            get(addr, "/readyz").await,
            (503, "not ready: not joined yet\n".into())
        );
        assert!(!readiness.is_ready());
        joined.done();
        joined.done();
        assert!(readiness.is_ready());
        assert_eq!(get(addr, "/readyz").await, (200, "ok\n".into()));
        assert_eq!(get(addr, "/livez").await.0, 200);
    }

    #[tokio::test]
    async fn metrics_are_served_in_the_prometheus_text_format() {
        let (addr, _stop) = start(endpoint()).await;
        let answer = exchange(
            addr,
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
            "{answer}"
        );
        assert!(
            answer.contains("# TYPE test_events_total counter"),
            "{answer}"
        );
        assert!(answer.contains("\ntest_events_total 3\n"), "{answer}");
        // The OpenMetrics terminator is not part of the Prometheus format.
        assert!(!answer.contains("# EOF"), "{answer}");
    }

    #[tokio::test]
    async fn other_paths_and_methods_are_refused() {
        let (addr, _stop) = start(endpoint()).await;
        for path in ["/", "/metrics/x", "/healthz", "/readyz/x", "/../livez"] {
            assert_eq!(get(addr, path).await.0, 404, "{path}");
        }
        let answer = exchange(
            addr,
            b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
        assert!(answer.contains("allow: GET, HEAD"), "{answer}");
    }

    #[tokio::test]
    async fn oversize_requests_are_refused() {
        let (addr, _stop) = start(endpoint()).await;
        let body = format!(
            "GET /livez HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            MAX_BODY_BYTES + 1
        );
        let answer = exchange(addr, body.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        let chunked = exchange(
            addr,
            b"GET /livez HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        )
        .await;
        assert!(chunked.starts_with("HTTP/1.1 413"), "{chunked}");
        let head = format!(
            "GET /livez HTTP/1.1\r\nHost: x\r\nX-Filler: {}\r\n\r\n",
            "a".repeat(MAX_HEAD_BYTES * 2)
        );
        let answer = exchange(addr, head.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
        // The endpoint still serves.
        assert_eq!(get(addr, "/livez").await.0, 200);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_sends_no_headers_is_cut_off() {
        let (addr, _stop) = start(endpoint()).await;
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(b"GET /livez HTTP/1.1\r\n").await.unwrap();
        let mut answer = Vec::new();
        let read = tokio::time::timeout(
            HEADER_READ_TIMEOUT + Duration::from_secs(5),
            stream.read_to_end(&mut answer),
        )
        .await;
        assert!(read.is_ok(), "the connection stayed open");
    }

    #[test]
    fn addresses_parse_from_ips_and_names() {
        assert_eq!(
            parse_addr("127.0.0.1:8081").unwrap(),
            "127.0.0.1:8081".parse::<SocketAddr>().unwrap()
        );
        assert!(parse_addr("localhost:8081").unwrap().ip().is_loopback());
        for bad in ["", "8081", "127.0.0.1", "127.0.0.1:99999", "not an address"] {
            assert!(parse_addr(bad).is_err(), "{bad:?}");
        }
    }
}
