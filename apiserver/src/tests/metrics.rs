//! The API server's metrics as a scraper reads them: requests counted by kube-apiserver's verb,
//! the served resource and the code; paths a client makes up counted as `other`; stored objects
//! by resource.

use http::{Method, StatusCode};
use prometheus_client::registry::Registry;

use super::{TestServer, within};
use crate::StorageKind;

/// The registry in the text format.
fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, registry).expect("encode");
    text
}

/// The value of the series `name{labels}` (labels in the order they are encoded).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_stored_objects_are_counted_with_bounded_labels() {
    within(async {
        let mut registry = Registry::default();
        let metrics = crate::metrics::Metrics::register(&mut registry);
        let server = TestServer::start(StorageKind::Memory, |config| {
            config.metrics = Some(metrics.clone())
        })
        .await;
        server.create_config_maps("metrics", &["a", "b"]).await;
        let listed = server
            .send(Method::GET, "/api/v1/namespaces/metrics/configmaps", None)
            .await;
        assert_eq!(listed.status, StatusCode::OK);
        let missing = server
            .send(Method::GET, "/api/v1/namespaces/metrics/configmaps/nope", None)
            .await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        for made_up in ["/apis/made.up/v1/things", "/random/path/1", "/random/path/2"] {
            server.send(Method::GET, made_up, None).await;
        }
        server.send(Method::GET, "/api/v1/namespaces/metrics/configmaps/a/nosuch", None).await;

        let text = scrape(&registry);
        let requests = |verb: &str, resource: &str, subresource: &str, code: u16| {
            value(
                &text,
                &format!(
                    "apiserver_request_total{{verb=\"{verb}\",group=\"\",resource=\"{resource}\",subresource=\"{subresource}\",code=\"{code}\"}}"
                ),
            )
        };
        assert_eq!(requests("POST", "configmaps", "", 201), Some(2.0), "{text}");
        assert_eq!(requests("LIST", "configmaps", "", 200), Some(1.0), "{text}");
        assert_eq!(requests("GET", "configmaps", "", 404), Some(1.0), "{text}");
        assert_eq!(requests("GET", "other", "", 404), Some(2.0), "{text}");
        // A path of the shape of a collection lists, whatever it names.
        assert_eq!(requests("LIST", "other", "", 404), Some(1.0), "{text}");
        assert_eq!(requests("GET", "configmaps", "other", 404), Some(1.0), "{text}");
        assert!(!text.contains("made.up") && !text.contains("random"), "{text}");
        assert_eq!(
            value(
                &text,
                "apiserver_request_duration_seconds_count{verb=\"LIST\",group=\"\",resource=\"configmaps\",subresource=\"\"}"
            ),
            Some(1.0),
            "{text}"
        );
        // Each namespace has its kube-root-ca.crt too, made by the namespace controller at its
        // own pace: the gauge follows the watch cache, so it may trail the storage briefly.
        let stored = || async {
            server
                .server
                .backend()
                .list(crate::storage::ListOptions {
                    prefix: "/registry/core/configmaps/",
                    ..Default::default()
                })
                .await
                .map(|page| page.items.len() as f64)
                .ok()
        };
        let gauge = |text: &str| value(text, "apiserver_storage_objects{resource=\"configmaps\"}");
        let mut text = text;
        let mut seen = (gauge(&text), stored().await);
        for _ in 0..100 {
            if seen.0 == seen.1 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            text = scrape(&registry);
            seen = (gauge(&text), stored().await);
        }
        assert_eq!(seen.0, seen.1, "{text}");
        assert!(seen.0.is_some(), "{text}");
        assert!(
            value(&text, "apiserver_storage_objects{resource=\"namespaces\"}").unwrap_or(0.0) >= 5.0,
            "{text}"
        );
    })
    .await
}
