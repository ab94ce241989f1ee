//! Lists served from the watch cache answer as storage answers: a list right after a write sees
//! it, and every form of list (plain, selected, paged, as a table or metadata, at another
//! version, after a restart) is byte for byte the list storage gives at the same revision.

use http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};

use super::{Answer, TestServer, answer, config_map, within};
use crate::StorageKind;

const CONFIG_MAPS: &str = "/api/v1/namespaces/team-a/configmaps";

/// `GET path` as the admin with an `Accept` header.
async fn get(server: &TestServer, path: &str, accept: &str) -> Answer {
    let request = Request::builder()
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
        .header(header::ACCEPT, accept)
        .body(axum::body::Body::empty())
        .unwrap();
    answer(&server.router(), request).await
}

/// The list at `path` from the cache, and from storage at the revision the first answered at.
async fn both(server: &TestServer, path: &str, accept: &str) -> (Answer, Answer) {
    let cached = get(server, path, accept).await;
    assert_eq!(cached.status, StatusCode::OK, "{path}: {}", cached.text());
    let revision = match cached.json()["metadata"]["resourceVersion"].as_str() {
        Some(revision) => revision.to_owned(),
        None => server.server.backend().current_revision().to_string(),
    };
    let separator = if path.contains('?') { '&' } else { '?' };
    let stored = get(
        server,
        &format!("{path}{separator}resourceVersion={revision}&resourceVersionMatch=Exact"),
        accept,
    )
    .await;
    assert_eq!(stored.status, StatusCode::OK, "{path}: {}", stored.text());
    (cached, stored)
}

/// Creates HorizontalPodAutoscaler `web` in `team-a` through `autoscaling/v2`, with one metric:
/// 50% use of `resource` (`autoscaling/v1` shows it as an annotation).
async fn create_web_autoscaler(server: &TestServer, resource: &str) {
    let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 3,
                 "metrics": [{"type": "Resource", "resource": {"name": resource, "target": {"type": "Utilization", "averageUtilization": 50}}}]}});
    let made = server
        .send(
            Method::POST,
            "/apis/autoscaling/v2/namespaces/team-a/horizontalpodautoscalers",
            Some(hpa),
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.text());
}

/// The list at `path` from the cache, checked against storage's (the same bytes in JSON).
async fn check(server: &TestServer, path: &str, accept: &str) -> Value {
    let (cached, stored) = both(server, path, accept).await;
    assert_eq!(
        without_times(cached.json()),
        without_times(stored.json()),
        "{path} as {accept}"
    );
    if accept == "application/json" {
        assert_eq!(cached.body, stored.body, "{path}: the same bytes");
    }
    cached.json()
}

/// Table rows carry the time they were made; the rest must match.
fn without_times(mut value: Value) -> Value {
    if let Some(rows) = value["rows"].as_array_mut() {
        for row in rows {
            row["cells"][2] = Value::Null;
        }
    }
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_right_after_a_write_sees_it() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        server.create_config_maps("team-a", &[]).await;
        for i in 0..200 {
            let name = format!("cm-{i:03}");
            let made = server
                .send(Method::POST, CONFIG_MAPS, Some(config_map(&name, json!({"i": i.to_string()}))))
                .await;
            assert_eq!(made.status, StatusCode::CREATED);
            let listed = server.send(Method::GET, CONFIG_MAPS, None).await.json();
            let mine: Vec<&Value> = listed["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|item| item["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("cm-")))
                .collect();
            assert_eq!(mine.len(), i + 1, "the list after create {i}");
            let created = mine.iter().find(|item| item["metadata"]["name"] == name.as_str());
            assert_eq!(
                created.map(|item| &item["metadata"]["resourceVersion"]),
                Some(&made.json()["metadata"]["resourceVersion"]),
                "the list after create {i} holds it"
            );
            if i % 2 == 1 {
                let gone = server
                    .send(Method::DELETE, &format!("{CONFIG_MAPS}/cm-{:03}", i - 1), None)
                    .await;
                assert_eq!(gone.status, StatusCode::OK);
                let listed = server.send(Method::GET, CONFIG_MAPS, None).await.json();
                assert!(
                    listed["items"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .all(|item| item["metadata"]["name"] != format!("cm-{:03}", i - 1).as_str()),
                    "the list after a delete"
                );
                // Put it back, so that the counts above hold.
                let again = server
                    .send(
                        Method::POST,
                        CONFIG_MAPS,
                        Some(config_map(&format!("cm-{:03}", i - 1), json!({}))),
                    )
                    .await;
                assert_eq!(again.status, StatusCode::CREATED);
            }
        }
        server.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_form_of_list_from_the_cache_is_what_storage_gives() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let config = |dir: &std::path::Path| super::config(dir, StorageKind::Sqlite, |_| {});
        let server = TestServer {
            server: crate::Server::start(config(dir.path())).await.unwrap(),
            dir: tempfile::tempdir().unwrap(),
        };
        server
            .create_config_maps("team-a", &["a", "b", "c", "d", "e"])
            .await;
        server.create_config_maps("team-b", &["f"]).await;
        let labelled = json!({"metadata": {"labels": {"tier": "web"}}});
        for name in ["b", "d"] {
            let patched = server
                .send(
                    Method::PATCH,
                    &format!("{CONFIG_MAPS}/{name}"),
                    Some(labelled.clone()),
                )
                .await;
            assert_eq!(patched.status, StatusCode::OK);
        }
        create_web_autoscaler(&server, "cpu").await;

        let json = "application/json";
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
        let metadata = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
        let all = check(&server, CONFIG_MAPS, json).await;
        assert_eq!(
            all["items"].as_array().unwrap().len(),
            6,
            "five and the CA's"
        );
        check(&server, "/api/v1/configmaps", json).await;
        let web = check(
            &server,
            "/api/v1/namespaces/team-a/configmaps?labelSelector=tier%3Dweb",
            json,
        )
        .await;
        assert_eq!(web["items"].as_array().unwrap().len(), 2);
        check(
            &server,
            "/api/v1/configmaps?fieldSelector=metadata.namespace%3Dteam-b",
            json,
        )
        .await;
        check(&server, CONFIG_MAPS, table).await;
        check(&server, CONFIG_MAPS, metadata).await;
        check(
            &server,
            "/apis/autoscaling/v1/namespaces/team-a/horizontalpodautoscalers",
            json,
        )
        .await;
        check(
            &server,
            "/apis/autoscaling/v2/namespaces/team-a/horizontalpodautoscalers",
            json,
        )
        .await;

        // Pages: the first from the cache, the rest from storage at its revision, together the
        // whole list.
        let first = check(
            &server,
            "/api/v1/namespaces/team-a/configmaps?limit=2",
            json,
        )
        .await;
        assert_eq!(first["metadata"]["remainingItemCount"], 4);
        let mut names: Vec<Value> = first["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].clone())
            .collect();
        let mut token = first["metadata"]["continue"].as_str().unwrap().to_owned();
        // A write meanwhile is not in the pages that follow.
        let later = server
            .send(
                Method::POST,
                CONFIG_MAPS,
                Some(config_map("later", json!({}))),
            )
            .await;
        assert_eq!(later.status, StatusCode::CREATED);
        loop {
            let page = get(
                &server,
                &format!("{CONFIG_MAPS}?limit=2&continue={token}"),
                json,
            )
            .await
            .json();
            names.extend(
                page["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i["metadata"]["name"].clone()),
            );
            match page["metadata"]["continue"].as_str() {
                Some(next) => token = next.to_owned(),
                None => break,
            }
        }
        let whole: Vec<Value> = all["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].clone())
            .collect();
        assert_eq!(names, whole);

        // After a restart the cache starts from what storage holds.
        server.server.shutdown().await;
        let server = TestServer {
            server: crate::Server::start(config(dir.path())).await.unwrap(),
            dir: tempfile::tempdir().unwrap(),
        };
        let again = check(&server, CONFIG_MAPS, json).await;
        assert_eq!(
            again["items"].as_array().unwrap().len(),
            7,
            "the six and the later one"
        );
        check(
            &server,
            "/apis/autoscaling/v1/namespaces/team-a/horizontalpodautoscalers",
            table,
        )
        .await;
        server.server.shutdown().await;
    })
    .await;
}

/// A metadata-only answer is the metadata of the object at the version asked for, which
/// converting can change: an `autoscaling/v1` HorizontalPodAutoscaler carries its v2 fields as
/// annotations, in a metadata-only GET, list and watch as in the whole object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_answers_carry_what_converting_puts_in_the_metadata() {
    use http_body_util::BodyExt as _;
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        server.create_config_maps("team-a", &["a"]).await;
        let v1 = "/apis/autoscaling/v1/namespaces/team-a/horizontalpodautoscalers";
        let metadata = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        let watch = Request::builder()
            .uri(format!("{v1}?watch=true"))
            .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
            .header(header::ACCEPT, metadata)
            .body(axum::body::Body::empty())
            .unwrap();
        let mut events = tower::ServiceExt::oneshot(server.router(), watch)
            .await
            .unwrap()
            .into_body();
        create_web_autoscaler(&server, "memory").await;
        let metrics = |metadata: &Value| {
            metadata["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
                .as_str()
                .is_some_and(|m| m.contains("memory"))
        };

        let event = loop {
            let frame = events.frame().await.unwrap().unwrap().into_data().unwrap();
            let event: Value = serde_json::from_slice(&frame).unwrap();
            if event["type"] == "ADDED" {
                break event;
            }
        };
        assert_eq!(event["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(event["object"]["metadata"]["name"], "web");
        assert!(metrics(&event["object"]["metadata"]), "watch: {event}");

        let one = get(&server, &format!("{v1}/web"), metadata).await;
        assert_eq!(one.status, StatusCode::OK, "{}", one.text());
        assert_eq!(one.json()["kind"], "PartialObjectMetadata");
        assert!(metrics(&one.json()["metadata"]), "get: {}", one.text());

        let list = check(
            &server,
            v1,
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .await;
        assert_eq!(list["kind"], "PartialObjectMetadataList");
        assert!(metrics(&list["items"][0]["metadata"]), "list: {list}");
        // The v2 object has no such annotations.
        let v2 = get(
            &server,
            "/apis/autoscaling/v2/namespaces/team-a/horizontalpodautoscalers/web",
            metadata,
        )
        .await;
        assert!(
            v2.json()["metadata"].get("annotations").is_none(),
            "v2: {}",
            v2.text()
        );
    })
    .await;
}
