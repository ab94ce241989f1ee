//! Clients that hold connections without using them, or use them too slowly: thousands of idle
//! connections, TLS connections that send nothing, a slowloris trickling its headers, and a cap
//! on open connections. Each checks that the server answers other clients meanwhile, closes the
//! abusive connections on its timeouts, and changed nothing stored; and that a watch keeps its
//! connection open however long it is quiet.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

use super::http2::{connect, request, try_connect, watch_until};
use super::{TestServer, config_map, within};
use crate::StorageKind;
use crate::serve::Timeouts;

/// Short timeouts, so that the server's closing of idle and slow clients shows in seconds.
const SHORT: Timeouts = Timeouts {
    handshake: Duration::from_secs(1),
    header_read: Duration::from_secs(1),
    idle: Duration::from_secs(2),
};

/// How long after its timeout a connection must have been closed.
const SLACK: Duration = Duration::from_secs(5);

/// Resolves once the peer has closed `stream` (end of stream or an error), reading and
/// dropping whatever it sends.
async fn closed(mut stream: impl AsyncRead + Unpin) {
    let mut buf = [0u8; 1024];
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            return;
        }
    }
}

/// `GET /api/v1/namespaces` over a fresh HTTP/2 connection: the status.
async fn list_namespaces(server: &TestServer) -> StatusCode {
    let stream = connect(server, &[b"h2"]).await;
    let (mut client, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("HTTP/2 handshake");
    tokio::spawn(connection);
    client
        .send_request(request(server, Method::GET, "/api/v1/namespaces", None))
        .await
        .expect("list namespaces")
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_slow_clients_are_closed_while_others_are_served() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |config| {
            config.timeouts = SHORT;
        })
        .await;
        let revision = server.server.backend().current_revision();
        let started = Instant::now();

        // 2,000 TCP connections that never start TLS.
        let mut silent = Vec::new();
        for _ in 0..2_000 {
            silent.push(
                tokio::net::TcpStream::connect(server.server.addr())
                    .await
                    .expect("connect"),
            );
        }
        // 100 TLS connections that send no request.
        let mut quiet = Vec::new();
        for _ in 0..100 {
            quiet.push(connect(&server, &[b"http/1.1"]).await);
        }
        // 20 HTTP/2 connections, set up and then left alone.
        let mut idle_h2 = Vec::new();
        for _ in 0..20 {
            let stream = connect(&server, &[b"h2"]).await;
            let (client, connection) = hyper::client::conn::http2::handshake::<
                _,
                _,
                http_body_util::Full<bytes::Bytes>,
            >(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("HTTP/2 handshake");
            idle_h2.push((client, tokio::spawn(connection)));
        }
        // A slowloris: a request's headers, one byte every 200 ms, never finished.
        let mut slow = connect(&server, &[b"http/1.1"]).await;
        slow.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await
            .expect("write the first headers");
        let (slow_reader, mut slow_writer) = tokio::io::split(slow);
        let trickle = tokio::spawn(async move {
            let mut sent = 0;
            while sent < 200 && slow_writer.write_all(b"a").await.is_ok() {
                let _ = slow_writer.flush().await;
                sent += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            sent
        });

        // Meanwhile the server answers everyone else.
        assert_eq!(list_namespaces(&server).await, StatusCode::OK);

        // It closes the TCP connections at the handshake timeout, the slowloris at the header
        // timeout, and the quiet ones at the idle timeout.
        let deadline = SHORT.handshake.max(SHORT.idle) + SLACK;
        let all_closed = async {
            futures::future::join_all(silent.into_iter().map(closed)).await;
            futures::future::join_all(quiet.into_iter().map(closed)).await;
            closed(slow_reader).await;
            for (_, connection) in idle_h2 {
                let _ = connection.await;
            }
        };
        tokio::time::timeout(deadline, all_closed)
            .await
            .expect("the server closes idle and slow connections on its timeouts");
        let trickled = trickle.await.unwrap();
        assert!(
            trickled < 200,
            "the slowloris was cut off before it finished ({trickled} bytes trickled)"
        );
        assert!(started.elapsed() < Duration::from_secs(30));

        assert_eq!(list_namespaces(&server).await, StatusCode::OK);
        assert_eq!(
            server.server.backend().current_revision(),
            revision,
            "nothing stored changed"
        );
        server.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_watch_keeps_its_connection_past_the_idle_timeout() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |config| {
            config.timeouts = SHORT;
        })
        .await;
        let stream = connect(&server, &[b"h2"]).await;
        let (mut client, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .expect("HTTP/2 handshake");
        let connection = tokio::spawn(connection);
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
        let mut watch = watch.into_body();

        tokio::time::sleep(SHORT.idle * 2).await;
        assert!(!connection.is_finished(), "the watch's connection is open");
        // Still open for new requests too (an idle close would have sent GOAWAY).
        let version = client
            .send_request(request(&server, Method::GET, "/version", None))
            .await
            .expect("a request on the watch's connection");
        assert_eq!(version.status(), StatusCode::OK);
        let made = server
            .send(
                Method::POST,
                "/api/v1/namespaces/default/configmaps",
                Some(config_map("after-quiet", json!({}))),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        assert!(
            watch_until(&mut watch, r#""name":"after-quiet""#).await,
            "the watch still streams"
        );

        // Once the watch is gone the connection is idle, and closed.
        drop(watch);
        tokio::time::timeout(SHORT.idle + SLACK, connection)
            .await
            .expect("the idle connection is closed")
            .unwrap()
            .expect("closed cleanly");
        server.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_closed_until_one_ends() {
    within(async {
        const CAP: u32 = 20;
        let server = TestServer::start(StorageKind::Memory, |config| {
            config.limits.connections = Some(CAP);
        })
        .await;
        let mut open = Vec::new();
        for _ in 0..CAP {
            open.push(connect(&server, &[b"h2"]).await);
        }
        let refused = try_connect(&server, &[b"h2"]).await;
        assert!(
            refused.is_err(),
            "a connection past the cap is closed before TLS"
        );

        // One ends: its slot is the next client's.
        drop(open.pop());
        let start = Instant::now();
        loop {
            if let Ok(stream) = try_connect(&server, &[b"h2"]).await {
                let (mut client, connection) = hyper::client::conn::http2::handshake(
                    TokioExecutor::new(),
                    TokioIo::new(stream),
                )
                .await
                .expect("HTTP/2 handshake");
                tokio::spawn(connection);
                let answer = client
                    .send_request(request(&server, Method::GET, "/version", None))
                    .await
                    .expect("GET /version");
                assert_eq!(answer.status(), StatusCode::OK);
                break;
            }
            assert!(
                start.elapsed() < SLACK,
                "a slot frees once a connection ends"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        drop(open);
        server.server.shutdown().await;
    })
    .await;
}
