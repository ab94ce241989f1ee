//! HTTP/2 over TLS, as Go clients (kubectl, helm, client-go controllers) negotiate it: requests
//! and watches share one connection, a watch streams its events, and a stop ends the watch and
//! the connection. Clients that offer only HTTP/1.1 keep getting it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, Version, header};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use tokio_rustls::client::TlsStream;

use super::{TestServer, config_map, within};
use crate::StorageKind;

/// A TLS connection to `server` offering `alpn`, trusting only its CA.
pub(super) async fn connect(
    server: &TestServer,
    alpn: &[&[u8]],
) -> TlsStream<tokio::net::TcpStream> {
    try_connect(server, alpn).await.expect("TLS connection")
}

/// A TLS connection to `server` offering `alpn`, or why the server did not take it.
pub(super) async fn try_connect(
    server: &TestServer,
    alpn: &[&[u8]],
) -> std::io::Result<TlsStream<tokio::net::TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut server.server.ca_pem().as_bytes()) {
        roots
            .add(cert.expect("CA certificate"))
            .expect("trust the CA");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = tokio::net::TcpStream::connect(server.server.addr()).await?;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("server name");
    tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(name, tcp)
        .await
}

pub(super) fn request(
    server: &TestServer,
    method: Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> Request<Full<Bytes>> {
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    Request::builder()
        .method(method)
        .uri(format!("{}{path}", server.server.url()))
        .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))
        .expect("request")
}

/// Reads a watch's body until a chunk mentions `needle`, or the stream ends (`false`).
pub(super) async fn watch_until(body: &mut Incoming, needle: &str) -> bool {
    let mut seen = String::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { return false };
        if let Some(data) = frame.data_ref() {
            seen.push_str(&String::from_utf8_lossy(data));
            if seen.contains(needle) {
                return true;
            }
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_watches_share_one_http2_connection() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let stream = connect(&server, &[b"h2", b"http/1.1"]).await;
        assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (mut client, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .expect("HTTP/2 handshake");
        let connection = tokio::spawn(connection);

        let version = client
            .send_request(request(&server, Method::GET, "/version", None))
            .await
            .expect("GET /version");
        assert_eq!(version.status(), StatusCode::OK);
        assert_eq!(version.version(), Version::HTTP_2);

        // Several watches and the writes they see, on the one connection.
        let mut watches = Vec::new();
        for _ in 0..3 {
            let watch = client
                .send_request(request(
                    &server,
                    Method::GET,
                    "/api/v1/namespaces/default/configmaps?watch=true",
                    None,
                ))
                .await
                .expect("watch");
            assert_eq!(watch.status(), StatusCode::OK);
            assert_eq!(watch.version(), Version::HTTP_2);
            watches.push(watch.into_body());
        }
        let created = client
            .send_request(request(
                &server,
                Method::POST,
                "/api/v1/namespaces/default/configmaps",
                Some(config_map("over-h2", json!({"k": "v"}))),
            ))
            .await
            .expect("create");
        assert_eq!(created.status(), StatusCode::CREATED);
        let created = created.into_body().collect().await.unwrap().to_bytes();
        let created: serde_json::Value = serde_json::from_slice(&created).unwrap();
        assert_eq!(created["metadata"]["name"], "over-h2");
        for watch in &mut watches {
            assert!(
                watch_until(watch, r#""name":"over-h2""#).await,
                "the watch streams the ADDED event"
            );
        }

        // A stop ends the watches and the connection, well before the drain timeout.
        let stop = tokio::spawn(server.server.shutdown());
        for watch in &mut watches {
            let ended =
                tokio::time::timeout(Duration::from_secs(5), watch_until(watch, "never")).await;
            assert_eq!(ended.ok(), Some(false), "the watch ends on shutdown");
        }
        tokio::time::timeout(Duration::from_secs(8), stop)
            .await
            .expect("the server stops without waiting for the drain timeout")
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), connection)
            .await
            .expect("the connection closes")
            .unwrap()
            .expect("closed cleanly");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_offering_only_http1_gets_http1() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let stream = connect(&server, &[b"http/1.1"]).await;
        assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        let (mut client, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("HTTP/1.1 handshake");
        let connection = tokio::spawn(connection);
        let mut get = request(&server, Method::GET, "/version", None);
        *get.uri_mut() = "/version".parse().unwrap();
        get.headers_mut().insert(
            header::HOST,
            server.server.addr().to_string().parse().unwrap(),
        );
        let answer = client.send_request(get).await.expect("GET /version");
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.version(), Version::HTTP_11);
        drop(client);
        let _ = connection.await;
        server.server.shutdown().await;
    })
    .await;
}
