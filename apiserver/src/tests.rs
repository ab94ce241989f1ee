//! In-process tests of whole servers: requests through the router a server serves (as a client
//! sees them, minus TLS), and over HTTPS where what matters is the certificate a client pins.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::Value;
use tower::ServiceExt as _;

use crate::{Config, Server, StorageKind};

mod admission;
mod backup;
mod connections;
mod controllers;
mod fuzz;
mod http2;
mod limits;
mod lists;
mod metrics;
mod openapi;
mod rbac;

/// How long any one test may take.
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs a test body with [`TEST_TIMEOUT`].
async fn within<T>(test: impl Future<Output = T>) -> T {
    tokio::time::timeout(TEST_TIMEOUT, test)
        .await
        .expect("the test timed out")
}

/// A server on `127.0.0.1:0` in its own data directory.
struct TestServer {
    server: Server,
    dir: tempfile::TempDir,
}

impl TestServer {
    async fn start(storage: StorageKind, configure: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = Server::start(config(dir.path(), storage, configure))
            .await
            .expect("start the server");
        TestServer { server, dir }
    }

    fn router(&self) -> Router {
        self.server.router()
    }

    fn token(&self) -> String {
        self.server.admin_token().to_owned()
    }

    /// A request as the admin.
    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> Answer {
        send(&self.router(), method, path, &self.token(), body).await
    }

    /// Creates namespace `namespace` and a ConfigMap in it for each name (`{k: v}` as data).
    async fn create_config_maps(&self, namespace: &str, names: &[&str]) {
        let ns = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        let made = self
            .send(Method::POST, "/api/v1/namespaces", Some(ns))
            .await;
        assert!(
            made.status == StatusCode::CREATED || made.status == StatusCode::CONFLICT,
            "namespace {namespace}: {}",
            made.text()
        );
        for name in names {
            let path = format!("/api/v1/namespaces/{namespace}/configmaps");
            let data = serde_json::json!({ "k": "v", "name": name });
            let created = self
                .send(Method::POST, &path, Some(config_map(name, data)))
                .await;
            assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
        }
    }
}

fn config(
    dir: &std::path::Path,
    storage: StorageKind,
    configure: impl FnOnce(&mut Config),
) -> Config {
    let mut config = Config::new(dir, "127.0.0.1:0".parse().expect("address"));
    config.storage = storage;
    configure(&mut config);
    config
}

/// A response, read whole.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "not JSON ({error}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A request with a JSON body (or none) and a bearer token.
async fn send(
    router: &Router,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Answer {
    let content_type = if method == Method::PATCH {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let body = match body {
        Some(body) => Body::from(serde_json::to_vec(&body).expect("encode")),
        None => Body::empty(),
    };
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, content_type)
        .body(body)
        .expect("request");
    answer(router, request).await
}

/// Sends a request and reads its whole answer.
async fn answer(router: &Router, request: Request<Body>) -> Answer {
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("read the body")
        .to_bytes();
    Answer {
        status,
        headers,
        body,
    }
}

/// A ConfigMap.
fn config_map(name: &str, data: Value) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": data,
    })
}

/// `GET path` over HTTPS, trusting only `ca_pem`, with a bearer token: the status code.
async fn https_status(url: &str, ca_pem: &str, token: &str, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let address = url.trim_start_matches("https://");
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots
            .add(cert.expect("CA certificate"))
            .expect("trust the CA");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
    let host = address.rsplit_once(':').expect("host:port").0;
    let name = rustls::pki_types::ServerName::try_from(host.to_owned()).expect("server name");
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let mut stream = connector
        .connect(name, tcp)
        .await
        .expect("TLS handshake with the pinned CA");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    let text = String::from_utf8_lossy(&response);
    text.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text}"))
}
