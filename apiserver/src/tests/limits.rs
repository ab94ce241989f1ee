//! Per-server limits as a user meets them: refused writes with a message that says which limit
//! and where it comes from, while reads and deletes keep working; and 429 past the requests in
//! flight.

use axum::body::Body;
use http::{Method, Request, StatusCode, header};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{TestServer, answer, config_map, send, within};
use crate::{Limits, StorageKind};

const SOURCE: &str = "spec.limits of HostedCluster clusters/c1";
const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A server whose limits are set from what it holds once started (its seeded namespaces).
async fn limited(
    storage: StorageKind,
    limits: impl FnOnce(crate::storage::Usage) -> Limits,
) -> TestServer {
    // Start once to learn what an empty cluster holds, then again with the limits.
    let probe = TestServer::start(storage, |_| {}).await;
    let empty = probe.server.backend().usage();
    probe.server.shutdown().await;
    TestServer::start(storage, |config| config.limits = limits(empty)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_object_limit_creates_are_refused_and_reads_and_deletes_work() {
    within(async {
        let server = limited(StorageKind::Sqlite, |empty| Limits {
            objects: Some(empty.objects + 2),
            source: SOURCE.into(),
            ..Limits::default()
        })
        .await;
        let limit = server.server.backend().usage().objects + 2;
        for name in ["a", "b"] {
            let created = server
                .send(Method::POST, CONFIG_MAPS, Some(config_map(name, json!({"k": "v"}))))
                .await;
            assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
        }

        let refused = server
            .send(Method::POST, CONFIG_MAPS, Some(config_map("big", json!({}))))
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        let status = refused.json();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(status["code"], 403);
        assert_eq!(
            status["message"],
            format!(
                "configmaps \"big\" is forbidden: the cluster holds {limit} objects, its limit (objects in {SOURCE}); reads and deletes still work"
            )
        );
        // Server-side apply creating an object is a create too.
        let apply = Request::builder()
            .method(Method::PATCH)
            .uri(format!("{CONFIG_MAPS}/applied?fieldManager=test"))
            .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
            .header(header::CONTENT_TYPE, "application/apply-patch+yaml")
            .body(Body::from(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n",
            ))
            .unwrap();
        assert_eq!(
            answer(&server.router(), apply).await.status,
            StatusCode::FORBIDDEN
        );

        // Reads and writes that add nothing work.
        let got = server.send(Method::GET, &format!("{CONFIG_MAPS}/a"), None).await;
        assert_eq!(got.status, StatusCode::OK);
        let list = server.send(Method::GET, CONFIG_MAPS, None).await;
        assert_eq!(list.status, StatusCode::OK);
        let names: Vec<String> = list.json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["a", "b", "kube-root-ca.crt"]);
        let patched = server
            .send(
                Method::PATCH,
                &format!("{CONFIG_MAPS}/a"),
                Some(json!({"data": {"k": "w"}})),
            )
            .await;
        assert_eq!(patched.status, StatusCode::OK, "{}", patched.text());

        // A delete makes room.
        let deleted = server.send(Method::DELETE, &format!("{CONFIG_MAPS}/a"), None).await;
        assert_eq!(deleted.status, StatusCode::OK);
        let created = server
            .send(Method::POST, CONFIG_MAPS, Some(config_map("big", json!({}))))
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_byte_limit_growing_writes_are_refused_and_shrinking_ones_work() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let limit_source = "the server's flags";
        // Measure what the object takes, then restart with the data just fitting.
        let cm = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "grow", "finalizers": ["example.com/one", "example.com/two"]},
            "data": {"small": "x", "large": "y".repeat(200)},
        });
        let created = server.send(Method::POST, CONFIG_MAPS, Some(cm.clone())).await;
        assert_eq!(created.status, StatusCode::CREATED);
        let used = server.server.backend().usage().bytes;
        server.server.shutdown().await;
        let server = TestServer::start(StorageKind::Memory, |config| {
            config.limits = Limits {
                storage_bytes: Some(used + 50),
                source: limit_source.into(),
                ..Limits::default()
            };
        })
        .await;
        let created = server.send(Method::POST, CONFIG_MAPS, Some(cm)).await;
        assert_eq!(created.status, StatusCode::CREATED);
        let grow = format!("{CONFIG_MAPS}/grow");

        let refused = server
            .send(
                Method::PATCH,
                &grow,
                Some(json!({"data": {"more": "z".repeat(100)}})),
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        let message = refused.json()["message"].as_str().unwrap().to_owned();
        assert!(
            message.starts_with("configmaps \"grow\" is forbidden: the cluster stores "),
            "{message}"
        );
        assert!(message.contains("and this write grows the object by "), "{message}");
        assert!(
            message.ends_with(&format!(
                "past its limit of {} bytes (storageBytes in {limit_source}); reads and deletes still work",
                used + 50
            )),
            "{message}"
        );
        // A create that does not fit either.
        let refused = server
            .send(
                Method::POST,
                CONFIG_MAPS,
                Some(config_map("new", json!({"k": "v".repeat(100)}))),
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(refused.text().contains("and this write adds "));

        let shrunk = server
            .send(Method::PATCH, &grow, Some(json!({"data": {"large": null}})))
            .await;
        assert_eq!(shrunk.status, StatusCode::OK, "{}", shrunk.text());

        // Fill up to the byte, then delete: the object terminates on its finalizers.
        let room = used + 50 - server.server.backend().usage().bytes;
        let filled = server
            .send(
                Method::PATCH,
                &grow,
                Some(json!({"data": {"fill": "f".repeat(usize::try_from(room).unwrap() - 40)}})),
            )
            .await;
        assert_eq!(filled.status, StatusCode::OK, "{}", filled.text());
        let deleting = server.send(Method::DELETE, &grow, None).await;
        assert_eq!(deleting.status, StatusCode::OK, "{}", deleting.text());
        assert!(deleting.json()["metadata"]["deletionTimestamp"].is_string());
        // Growing a terminating object is still refused...
        let refused = server
            .send(
                Method::PATCH,
                &grow,
                Some(json!({"metadata": {"labels": {"l": "v".repeat(60)}}})),
            )
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        // ...but a write that removes one of its finalizers is not, even one that grows it (a
        // controller recording its cleanup as it lets go).
        let one_left = server
            .send(
                Method::PATCH,
                &format!("{grow}?fieldManager=a-finalizer-controller"),
                Some(json!({"metadata": {
                    "finalizers": ["example.com/two"],
                    "labels": {"l": "v".repeat(60)},
                }})),
            )
            .await;
        assert_eq!(one_left.status, StatusCode::OK, "{}", one_left.text());
        let gone = server
            .send(
                Method::PATCH,
                &grow,
                Some(json!({"metadata": {"finalizers": null}})),
            )
            .await;
        assert_eq!(gone.status, StatusCode::OK, "{}", gone.text());
        let after = server.send(Method::GET, &grow, None).await;
        assert_eq!(after.status, StatusCode::NOT_FOUND);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_at_the_limit_is_still_deleted() {
    within(async {
        let server = TestServer::start(StorageKind::Sqlite, |_| {}).await;
        server
            .create_config_maps("team", &["one", "two", "three"])
            .await;
        let full = server.server.backend().usage();
        let dir = server.dir;
        server.server.shutdown().await;
        // The same data, with both limits reached exactly.
        let server = crate::Server::start(super::config(dir.path(), StorageKind::Sqlite, |c| {
            c.limits = Limits {
                objects: Some(full.objects),
                storage_bytes: Some(full.bytes),
                source: SOURCE.into(),
                ..Limits::default()
            };
        }))
        .await
        .unwrap();
        let token = server.admin_token().to_owned();
        let router = server.router();
        let refused = send(
            &router,
            Method::POST,
            "/api/v1/namespaces/team/configmaps",
            &token,
            Some(config_map("four", json!({}))),
        )
        .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);

        let deleting = send(
            &router,
            Method::DELETE,
            "/api/v1/namespaces/team",
            &token,
            None,
        )
        .await;
        assert_eq!(deleting.status, StatusCode::OK, "{}", deleting.text());
        // The namespace controller empties and finalizes it.
        loop {
            let got = send(
                &router,
                Method::GET,
                "/api/v1/namespaces/team",
                &token,
                None,
            )
            .await;
            if got.status == StatusCode::NOT_FOUND {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let left = send(
            &router,
            Method::GET,
            "/api/v1/namespaces/team/configmaps",
            &token,
            None,
        )
        .await;
        assert_eq!(left.json()["items"], json!([]));
        server.shutdown().await;
        drop(dir);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_past_the_limit_in_flight_are_answered_429() {
    within(async {
        // As a hosted cluster's limits: they bind its admin too.
        let server = TestServer::start(StorageKind::Memory, |config| {
            config.limits.requests_in_flight = Some(1);
            config.limits.mutating_requests_in_flight = Some(1);
            config.limits.exempt_masters = false;
        })
        .await;
        // A create whose body arrives only when the test sends it holds the one mutating slot.
        let (chunks, body) = mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(1);
        let held = Request::builder()
            .method(Method::POST)
            .uri(CONFIG_MAPS)
            .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from_stream(ReceiverStream::new(body)))
            .unwrap();
        let router = server.router();
        let held = tokio::spawn(async move { answer(&router, held).await });
        while server.server.requests_in_flight() < 1 {
            tokio::task::yield_now().await;
        }

        let another = config_map("another", json!({}));
        let refused = server.send(Method::POST, CONFIG_MAPS, Some(another)).await;
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers[header::RETRY_AFTER], "1");
        let status = refused.json();
        assert_eq!(status["reason"], "TooManyRequests");
        assert_eq!(
            status["message"],
            "Too many requests, please try again later."
        );
        assert_eq!(status["details"]["retryAfterSeconds"], 1);

        // Reads have their own slots.
        let read = server.send(Method::GET, "/api/v1/namespaces", None).await;
        assert_eq!(read.status, StatusCode::OK);

        // Health, version and watches are not counted.
        for path in ["/livez", "/readyz", "/healthz", "/version"] {
            assert_eq!(
                server.send(Method::GET, path, None).await.status,
                StatusCode::OK
            );
        }
        let watch = Request::builder()
            .uri("/api/v1/namespaces?watch=true")
            .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
            .body(Body::empty())
            .unwrap();
        let watch = tower::ServiceExt::oneshot(server.router(), watch)
            .await
            .unwrap();
        assert_eq!(watch.status(), StatusCode::OK);
        drop(watch);

        // Once the held request is answered, the slot is free again.
        let body = serde_json::to_vec(&config_map("held", json!({}))).unwrap();
        chunks.send(Ok(body.into())).await.unwrap();
        drop(chunks);
        assert_eq!(held.await.unwrap().status, StatusCode::CREATED);
        assert_eq!(server.server.requests_in_flight(), 0);
        let served = server.send(Method::GET, "/api/v1/namespaces", None).await;
        assert_eq!(served.status, StatusCode::OK);
    })
    .await;
}

/// A JSON patch with many operations, or whose copies grow the object past what a body may
/// hold, and an object larger than etcd would take: each is refused with its reason, nothing
/// stored changes, and the server serves the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_amplification_and_oversized_objects_are_refused() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        server.create_config_maps("default", &["target"]).await;
        let target = format!("{CONFIG_MAPS}/target");
        let before = server.send(Method::GET, &target, None).await.json();
        let json_patch = |ops: serde_json::Value| {
            Request::builder()
                .method(Method::PATCH)
                .uri(&target)
                .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
                .header(header::CONTENT_TYPE, "application/json-patch+json")
                .body(Body::from(serde_json::to_vec(&ops).unwrap()))
                .unwrap()
        };
        let many: Vec<_> = (0..10_001)
            .map(|_| json!({"op": "test", "path": "/kind", "value": "ConfigMap"}))
            .collect();
        let refused = answer(&server.router(), json_patch(json!(many))).await;
        assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            refused.json()["message"],
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );

        // Each copy doubles the data: 64 KiB grows past 3 MiB in six steps.
        let mut ops = vec![json!({"op": "add", "path": "/x", "value": {"v": "x".repeat(64 * 1024)}})];
        for i in 1..40 {
            ops.push(json!({"op": "copy", "from": "/x", "path": format!("/x/c{i}")}));
        }
        let refused = answer(&server.router(), json_patch(json!(ops))).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
        assert!(
            refused.text().contains("the accumulated size increase of copy is"),
            "{}",
            refused.text()
        );
        let after = server.send(Method::GET, &target, None).await.json();
        assert_eq!(after, before, "nothing stored changed");

        // 1.6 MB in a PodTemplate (no size rule of its own): within the 3 MiB a body may
        // hold, past the 1.5 MiB an object may.
        let big = json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "big"},
            "template": {"spec": {"containers": [{"name": "a", "image": "x",
                "env": [{"name": "A", "value": "x".repeat(1_600_000)}]}]}}});
        let refused = server
            .send(Method::POST, "/api/v1/namespaces/default/podtemplates", Some(big))
            .await;
        assert_eq!(refused.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", refused.text());
        let message = refused.json()["message"].as_str().unwrap().to_owned();
        assert!(message.starts_with("Request entity too large: podtemplates \"big\" would take"), "{message}");
        let gone = server
            .send(Method::GET, "/api/v1/namespaces/default/podtemplates/big", None)
            .await;
        assert_eq!(gone.status, StatusCode::NOT_FOUND);
        assert_eq!(server.send(Method::GET, &target, None).await.status, StatusCode::OK);
    })
    .await;
}

/// A `generateName` whose 58th byte falls inside a character panicked the server's request
/// task before: it is a validation error now.
#[tokio::test]
async fn a_generate_name_cut_inside_a_character_is_refused_not_a_crash() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let prefix = format!("{}é-", "a".repeat(57));
        let object =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": prefix}});
        let answer = server.send(Method::POST, CONFIG_MAPS, Some(object)).await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{}",
            answer.text()
        );
        assert_eq!(
            server.send(Method::GET, CONFIG_MAPS, None).await.status,
            StatusCode::OK
        );
    })
    .await;
}

/// A watch request as `token`, optionally impersonating `as_user` (in `system:masters`, so that
/// RBAC lets it watch): the response, whose body holds the watch open while it lives.
async fn open_watch(server: &TestServer, as_user: Option<&str>) -> axum::response::Response {
    let mut watch = Request::builder()
        .uri("/api/v1/namespaces/default/configmaps?watch=true")
        .header(header::AUTHORIZATION, format!("Bearer {}", server.token()));
    if let Some(user) = as_user {
        watch = watch
            .header("Impersonate-User", user)
            .header("Impersonate-Group", "system:masters");
    }
    tower::ServiceExt::oneshot(server.router(), watch.body(Body::empty()).unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_past_a_users_bound_are_answered_429_and_others_are_not_held_back() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |config| {
            config.limits.watches_per_user = Some(3);
            config.limits.exempt_masters = false;
            config.limits.source = SOURCE.into();
        })
        .await;
        let mut open = Vec::new();
        for _ in 0..3 {
            let watch = open_watch(&server, None).await;
            assert_eq!(watch.status(), StatusCode::OK);
            open.push(watch);
        }
        let refused = open_watch(&server, None).await;
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
        let body = http_body_util::BodyExt::collect(refused.into_body())
            .await
            .unwrap()
            .to_bytes();
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["reason"], "TooManyRequests");
        assert_eq!(
            status["message"],
            format!(
                "too many watches: user \"atoll-admin\" has 3 open, the most {SOURCE} allows; \
                 close some or retry later"
            )
        );

        // Another user has watches of their own; other requests are not held back.
        let theirs = open_watch(&server, Some("someone-else")).await;
        assert_eq!(theirs.status(), StatusCode::OK);
        let read = server.send(Method::GET, CONFIG_MAPS, None).await;
        assert_eq!(read.status, StatusCode::OK);

        // A watch that ends gives its slot back.
        drop(open.pop());
        let again = open_watch(&server, None).await;
        assert_eq!(again.status(), StatusCode::OK);
        drop((open, again, theirs));
        server.server.shutdown().await;
    })
    .await;
}

/// Durations past what a clock holds: a watch's `timeoutSeconds` and a token's
/// `expirationSeconds` are answered (a year at most, or 400 with the field), never a crash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overflowing_durations_are_answered_not_a_crash() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let huge = u64::MAX.to_string();
        let watch = Request::builder()
            .uri(format!("{CONFIG_MAPS}?watch=true&timeoutSeconds={huge}"))
            .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
            .body(Body::empty())
            .unwrap();
        let watch = tower::ServiceExt::oneshot(server.router(), watch)
            .await
            .unwrap();
        assert_eq!(watch.status(), StatusCode::OK);
        drop(watch);
        for bad in ["-1", "1e9", "soon", "99999999999999999999999"] {
            let answer = server
                .send(
                    Method::GET,
                    &format!("{CONFIG_MAPS}?watch=true&timeoutSeconds={bad}"),
                    None,
                )
                .await;
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{bad}");
            assert!(
                answer.text().contains("timeoutSeconds"),
                "{}",
                answer.text()
            );
        }
        for bad in ["timeout=9999999999999999999h", "timeout=-1s", "timeout=1x"] {
            let answer = server
                .send(Method::GET, &format!("{CONFIG_MAPS}?{bad}"), None)
                .await;
            assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{bad}");
            assert!(
                answer.text().contains("invalid timeout"),
                "{}",
                answer.text()
            );
        }

        let account =
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
        let made = server
            .send(
                Method::POST,
                "/api/v1/namespaces/default/serviceaccounts",
                Some(account),
            )
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        let token_request = |seconds: serde_json::Value| {
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": seconds}})
        };
        const TOKEN: &str = "/api/v1/namespaces/default/serviceaccounts/robot/token";
        for (seconds, message) in [
            (
                json!(u64::MAX),
                "must be a whole number of seconds (a 64-bit integer)",
            ),
            (
                json!(i64::MAX),
                "may not specify a duration larger than 2^32 seconds",
            ),
            (json!(-5), "may not specify a duration less than 10 minutes"),
            (
                json!(3600.5),
                "must be a whole number of seconds (a 64-bit integer)",
            ),
            (json!("3600"), "must be a whole number of seconds"),
        ] {
            let answer = server
                .send(Method::POST, TOKEN, Some(token_request(seconds.clone())))
                .await;
            assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{seconds}");
            let status = answer.json();
            assert_eq!(
                status["details"]["causes"][0]["field"],
                "spec.expirationSeconds"
            );
            assert!(
                status["message"].as_str().unwrap().contains(message),
                "{seconds}: {status}"
            );
        }
        let longest = server
            .send(Method::POST, TOKEN, Some(token_request(json!(1u64 << 32))))
            .await;
        assert_eq!(longest.status, StatusCode::CREATED, "{}", longest.text());
        assert!(longest.json()["status"]["token"].is_string());
        // The server goes on.
        assert_eq!(
            server.send(Method::GET, CONFIG_MAPS, None).await.status,
            StatusCode::OK
        );
        server.server.shutdown().await;
    })
    .await;
}

/// A raw body of `content_type` posted as a ConfigMap: the answer.
async fn post_raw(server: &TestServer, content_type: &str, body: Vec<u8>) -> super::Answer {
    let request = Request::builder()
        .method(Method::POST)
        .uri(CONFIG_MAPS)
        .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(body))
        .unwrap();
    answer(&server.router(), request).await
}

/// Deep documents (JSON and YAML nested 100,000 levels, in a body and in a patch), a YAML alias
/// bomb, and wide ones (a ConfigMap of 100,000 keys, an array of 500,000 numbers): each is
/// refused with 400 or 413 naming what is wrong, nothing stored changes, and the server serves
/// the next request; an unknown field, however wide, is dropped. YAML nested 100,000 deep took
/// libyaml minutes before it was checked first (`crate::yaml`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_and_wide_documents_are_refused_or_served_without_harm() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let made = server
            .send(Method::POST, CONFIG_MAPS, Some(config_map("kept", json!({"k": "v"}))))
            .await;
        assert_eq!(made.status, StatusCode::CREATED);
        let revision = server.server.backend().current_revision();

        const DEPTH: usize = 100_000;
        let deep_json = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"x":{}{}}}"#,
            "[".repeat(DEPTH),
            "]".repeat(DEPTH)
        );
        let got = post_raw(&server, "application/json", deep_json.clone().into_bytes()).await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{}", got.text());
        assert!(got.text().contains("recursion limit"), "{}", got.text());

        let deep_yaml = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\nx: {}{}\n",
            "[".repeat(DEPTH),
            "]".repeat(DEPTH)
        );
        let got = post_raw(&server, "application/yaml", deep_yaml.into_bytes()).await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{}", got.text());
        assert!(
            got.text().contains("recursion limit") || got.text().contains("deeper than 128"),
            "{}",
            got.text()
        );

        // The same depth as a patch of the kept object, each patch type.
        let deep_patch = format!(r#"{{"data":{{"k":{}{}}}}}"#, "[".repeat(DEPTH), "]".repeat(DEPTH));
        for patch_type in [
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ] {
            let patch = Request::builder()
                .method(Method::PATCH)
                .uri(format!("{CONFIG_MAPS}/kept?fieldManager=deep"))
                .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
                .header(header::CONTENT_TYPE, patch_type)
                .body(Body::from(deep_patch.clone()))
                .unwrap();
            let answered = answer(&server.router(), patch).await;
            assert_eq!(
                answered.status,
                StatusCode::BAD_REQUEST,
                "{patch_type}: {}",
                answered.text()
            );
        }

        // A billion laughs: ten aliases of ten aliases, nine levels deep.
        let mut bomb = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n");
        bomb.push_str("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
        for level in 1..9 {
            let previous = format!("*a{}", level - 1);
            let items = [previous.as_str(); 10].join(",");
            bomb.push_str(&format!("a{level}: &a{level} [{items}]\n"));
        }
        let got = post_raw(&server, "application/yaml", bomb.into_bytes()).await;
        assert_eq!(got.status, StatusCode::BAD_REQUEST, "{}", got.text());

        // Wide: 100,000 keys (2.3 MiB, past etcd's object size) and 500,000 numbers in a
        // field the schema does not know.
        let keys: serde_json::Map<String, serde_json::Value> =
            (0..100_000).map(|i| (format!("key-{i:06}"), json!("0123456"))).collect();
        let wide = serde_json::to_vec(&config_map("wide", serde_json::Value::Object(keys))).unwrap();
        assert!(wide.len() < crate::http::MAX_BODY_BYTES);
        let got = post_raw(&server, "application/json", wide).await;
        assert_eq!(got.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", got.text());
        assert_eq!(server.server.backend().current_revision(), revision, "nothing stored changed");
        // A field the schema does not know is dropped, as upstream drops it, however wide.
        let numbers = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"numbers"}},"x":[{}]}}"#,
            vec!["1"; 500_000].join(",")
        );
        let got = post_raw(&server, "application/json", numbers.into_bytes()).await;
        assert_eq!(got.status, StatusCode::CREATED, "{}", got.text());
        assert!(got.json().get("x").is_none());
        let kept = server.send(Method::GET, &format!("{CONFIG_MAPS}/kept"), None).await;
        assert_eq!(kept.status, StatusCode::OK);
        assert_eq!(kept.json()["data"], json!({"k": "v"}));
        server.server.shutdown().await;
    })
    .await;
}

/// A flood of 40 reads and 20 writes, each holding its slot until the test lets its body
/// arrive, against limits of 8 and 4 in flight from a user the limits bind: exactly 8 reads and 4
/// writes are served, the rest answered 429 with `Retry-After` at once; once the bodies arrive
/// no slot stays taken, and every request sent again is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_past_the_limits_gets_429s_then_everything_is_served() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |config| {
            config.limits.requests_in_flight = Some(8);
            config.limits.mutating_requests_in_flight = Some(4);
            config.limits.exempt_masters = false;
        })
        .await;
        let mut bodies = Vec::new();
        let mut answers = Vec::new();
        for i in 0..60 {
            let (chunks, body) = mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(1);
            let (method, payload) = if i < 40 {
                (Method::GET, Vec::new())
            } else {
                let object = config_map(&format!("flood-{i}"), json!({}));
                (Method::POST, serde_json::to_vec(&object).unwrap())
            };
            let request = Request::builder()
                .method(method)
                .uri(CONFIG_MAPS)
                .header(header::AUTHORIZATION, format!("Bearer {}", server.token()))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from_stream(ReceiverStream::new(body)))
                .unwrap();
            let router = server.router();
            answers.push(tokio::spawn(async move { answer(&router, request).await }));
            bodies.push((chunks, payload));
        }
        // Every request has been admitted or refused before any body arrives.
        while server.server.requests_in_flight() < 12
            || answers.iter().filter(|a| a.is_finished()).count() < 48
        {
            tokio::task::yield_now().await;
        }
        for (chunks, payload) in bodies {
            if !payload.is_empty() {
                let _ = chunks.send(Ok(payload.into())).await;
            }
        }
        let (mut read, mut written, mut refused) = (0, 0, 0);
        for answer in answers {
            let answer = answer.await.unwrap();
            match answer.status {
                StatusCode::OK => read += 1,
                StatusCode::CREATED => written += 1,
                StatusCode::TOO_MANY_REQUESTS => {
                    assert_eq!(answer.headers[header::RETRY_AFTER], "1");
                    refused += 1;
                }
                other => panic!("{other}: {}", answer.text()),
            }
        }
        assert_eq!((read, written, refused), (8, 4, 48));
        assert_eq!(server.server.requests_in_flight(), 0);
        // Recovery: everything sent again is served.
        for i in 0..20 {
            let read = server.send(Method::GET, CONFIG_MAPS, None).await;
            assert_eq!(read.status, StatusCode::OK);
            let name = format!("after-{i}");
            let write = server
                .send(
                    Method::POST,
                    CONFIG_MAPS,
                    Some(config_map(&name, json!({}))),
                )
                .await;
            assert_eq!(write.status, StatusCode::CREATED);
        }
        server.server.shutdown().await;
    })
    .await;
}
