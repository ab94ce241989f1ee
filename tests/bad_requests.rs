//! Bad input against a running atoll API server: each request gets the status code and `Status`
//! reason kube-apiserver gives, and leaves what is stored untouched.

use std::time::Duration;

use atoll_apiserver::StorageKind;
use atoll_tests::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Sends a raw request; answers (code, reason, message) of the `Status`, or (200, "", body).
async fn send(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, String, String) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", content_type)
        .body(body)
        .unwrap();
    match client.request_text(request).await {
        Ok(text) => (200, String::new(), text),
        Err(kube::Error::Api(status)) => (status.code, status.reason, status.message),
        Err(other) => panic!("{method} {path}: {other:?}"),
    }
}

struct Fixture {
    _server: TestServer,
    client: Client,
    cms: Api<ConfigMap>,
    /// resourceVersion of the stored object `keep`, which no bad request may change.
    keep_rv: String,
}

impl Fixture {
    async fn new() -> Self {
        let server = TestServer::start(StorageKind::Sqlite).await.unwrap();
        let client = server.client().await.unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let keep: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "keep"}, "data": {"k": "v"}}))
                .unwrap();
        let keep = cms.create(&PostParams::default(), &keep).await.unwrap();
        Fixture {
            _server: server,
            client,
            cms,
            keep_rv: keep.resource_version().unwrap(),
        }
    }

    /// Nothing stored changed: `keep` is as it was and it is the only ConfigMap beside the
    /// cluster's CA, which every namespace holds.
    async fn untouched(&self) {
        let list = self.cms.list(&ListParams::default()).await.unwrap();
        let names: Vec<String> = list.items.iter().map(|c| c.name_any()).collect();
        assert_eq!(names, ["keep", "kube-root-ca.crt"]);
        assert_eq!(list.items[0].resource_version().unwrap(), self.keep_rv);
        assert_eq!(list.items[0].data.as_ref().unwrap()["k"], "v");
    }
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn malformed_bodies_are_bad_requests() {
    tokio::time::timeout(TIMEOUT, async {
        let f = Fixture::new().await;
        let (code, reason, message) = send(
            &f.client,
            "POST",
            CMS,
            "application/json",
            b"{\"metadata\": {".to_vec(),
        )
        .await;
        assert_eq!((code, reason.as_str()), (400, "BadRequest"), "{message}");
        assert!(message.contains("json parse error"), "{message}");
        let (code, reason, _) = send(
            &f.client,
            "POST",
            CMS,
            "application/yaml",
            b"metadata: [unclosed".to_vec(),
        )
        .await;
        assert_eq!((code, reason.as_str()), (400, "BadRequest"));
        let (code, reason, _) = send(
            &f.client,
            "PUT",
            &format!("{CMS}/keep"),
            "application/json",
            b"[1,2]".to_vec(),
        )
        .await;
        assert_eq!((code, reason.as_str()), (400, "BadRequest"));
        f.untouched().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_body_over_three_mebibytes_is_too_large() {
    tokio::time::timeout(TIMEOUT, async {
        let f = Fixture::new().await;
        let big = "x".repeat(3 * 1024 * 1024 + 1);
        let body = serde_json::to_vec(&json!({"metadata": {"name": "big"}, "data": {"big": big}}))
            .unwrap();
        let (code, reason, message) = send(&f.client, "POST", CMS, "application/json", body).await;
        assert_eq!(
            (code, reason.as_str()),
            (413, "RequestEntityTooLarge"),
            "{message}"
        );
        f.untouched().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn invalid_names_and_missing_namespaces() {
    tokio::time::timeout(TIMEOUT, async {
        let f = Fixture::new().await;
        let body = serde_json::to_vec(&json!({"metadata": {"name": "Bad_Name"}})).unwrap();
        let (code, reason, message) = send(&f.client, "POST", CMS, "application/json", body).await;
        assert_eq!((code, reason.as_str()), (422, "Invalid"));
        assert!(
            message.starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
            "{message}"
        );
        let body = serde_json::to_vec(&json!({"metadata": {"name": "fine"}})).unwrap();
        let (code, reason, message) =
            send(&f.client, "POST", "/api/v1/namespaces/nope/configmaps", "application/json", body).await;
        assert_eq!((code, reason.as_str(), message.as_str()), (404, "NotFound", "namespaces \"nope\" not found"));
        let body = serde_json::to_vec(&json!({"metadata": {"name": "fine", "namespace": "other"}})).unwrap();
        let (code, reason, _) = send(&f.client, "POST", CMS, "application/json", body).await;
        assert_eq!((code, reason.as_str()), (400, "BadRequest"), "namespace in the body differs from the URL");
        f.untouched().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn patches_that_do_not_apply() {
    tokio::time::timeout(TIMEOUT, async {
        let f = Fixture::new().await;
        let keep = format!("{CMS}/keep");
        let test_fails = serde_json::to_vec(&json!([
            {"op": "test", "path": "/data/k", "value": "other"},
            {"op": "replace", "path": "/data/k", "value": "changed"}
        ]))
        .unwrap();
        let (code, reason, message) = send(
            &f.client,
            "PATCH",
            &keep,
            "application/json-patch+json",
            test_fails,
        )
        .await;
        assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
        let missing =
            serde_json::to_vec(&json!([{"op": "remove", "path": "/data/missing"}])).unwrap();
        let (code, _, _) = send(
            &f.client,
            "PATCH",
            &keep,
            "application/json-patch+json",
            missing,
        )
        .await;
        assert_eq!(code, 422);
        let (code, reason, _) = send(
            &f.client,
            "PATCH",
            &keep,
            "application/json-patch+json",
            b"{\"op\":1}".to_vec(),
        )
        .await;
        assert_eq!((code, reason.as_str()), (400, "BadRequest"));
        let (code, reason, _) = send(
            &f.client,
            "PATCH",
            &keep,
            "application/merge-patch+json",
            b"{not json".to_vec(),
        )
        .await;
        assert_eq!((code, reason.as_str()), (400, "BadRequest"));
        let (code, reason, _) = send(&f.client, "PATCH", &keep, "text/plain", b"{}".to_vec()).await;
        assert_eq!((code, reason.as_str()), (415, "UnsupportedMediaType"));
        let stale = serde_json::to_vec(
            &json!({"metadata": {"resourceVersion": "1"}, "data": {"k": "stale"}}),
        )
        .unwrap();
        let (code, reason, _) = send(
            &f.client,
            "PATCH",
            &keep,
            "application/merge-patch+json",
            stale,
        )
        .await;
        assert_eq!((code, reason.as_str()), (409, "Conflict"));
        let (code, reason, message) = send(
            &f.client,
            "PATCH",
            &keep,
            "application/apply-patch+yaml",
            b"data: {k: v2}".to_vec(),
        )
        .await;
        assert_eq!(
            (code, reason.as_str()),
            (422, "Invalid"),
            "apply needs a fieldManager: {message}"
        );
        assert!(
            message.contains("fieldManager: Required value"),
            "{message}"
        );
        f.untouched().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn unknown_resources_and_methods() {
    tokio::time::timeout(TIMEOUT, async {
        let f = Fixture::new().await;
        for path in [
            "/api/v1/namespaces/default/widgets",
            "/apis/example.com/v1/widgets",
            "/apis/nope",
            "/apis/apps/v9",
            "/nothing/here",
        ] {
            let (code, reason, message) =
                send(&f.client, "GET", path, "application/json", Vec::new()).await;
            assert_eq!((code, reason.as_str()), (404, "NotFound"), "{path}");
            assert_eq!(
                message, "the server could not find the requested resource",
                "{path}"
            );
        }
        let (code, reason, _) = send(
            &f.client,
            "POST",
            &format!("{CMS}/keep"),
            "application/json",
            b"{}".to_vec(),
        )
        .await;
        assert_eq!((code, reason.as_str()), (405, "MethodNotAllowed"));
        let (code, reason, message) = send(
            &f.client,
            "GET",
            &format!("{CMS}/nope"),
            "application/json",
            Vec::new(),
        )
        .await;
        assert_eq!(
            (code, reason.as_str(), message.as_str()),
            (404, "NotFound", "configmaps \"nope\" not found")
        );
        let (code, reason, message) = send(
            &f.client,
            "GET",
            &format!("{CMS}?labelSelector=a%20in%20b"),
            "application/json",
            Vec::new(),
        )
        .await;
        assert_eq!((code, reason.as_str()), (400, "BadRequest"), "{message}");
        let (code, reason, message) = send(
            &f.client,
            "GET",
            &format!("{CMS}?fieldSelector=spec.x%3D1"),
            "application/json",
            Vec::new(),
        )
        .await;
        assert_eq!(
            (code, reason.as_str(), message.as_str()),
            (400, "BadRequest", "field label not supported: spec.x")
        );
        f.untouched().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_watch_from_a_compacted_revision_gets_an_in_band_410() {
    tokio::time::timeout(TIMEOUT, async {
        let f = Fixture::new().await;
        let old = f.keep_rv.parse::<i64>().unwrap() - 1;
        f.cms
            .patch(
                "keep",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
            )
            .await
            .unwrap();
        f._server.server.compact().await.unwrap();
        let (code, _, body) = send(
            &f.client,
            "GET",
            &format!("{CMS}?watch=true&resourceVersion={old}&timeoutSeconds=5"),
            "application/json",
            Vec::new(),
        )
        .await;
        assert_eq!(
            code, 200,
            "the expiry is reported inside the stream, not as the HTTP status"
        );
        let event: serde_json::Value = serde_json::from_str(body.lines().next().unwrap()).unwrap();
        assert_eq!(event["type"], "ERROR");
        assert_eq!(event["object"]["code"], 410);
        assert_eq!(event["object"]["reason"], "Expired");
        assert!(
            event["object"]["message"]
                .as_str()
                .unwrap()
                .starts_with("too old resource version")
        );
        // A list at a compacted revision is refused too.
        let (code, reason, _) = send(
            &f.client,
            "GET",
            &format!("{CMS}?resourceVersion={old}&resourceVersionMatch=Exact"),
            "application/json",
            Vec::new(),
        )
        .await;
        assert_eq!((code, reason.as_str()), (410, "Expired"));
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn requests_without_a_valid_token_are_unauthorized() {
    tokio::time::timeout(TIMEOUT, async {
        let f = Fixture::new().await;
        let kubeconfig = Kubeconfig::read_from(f._server.server.kubeconfig_path()).unwrap();
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .unwrap();
        for token in [None, Some("wrong")] {
            config.auth_info.token = token.map(|t| t.to_string().into());
            let anonymous = Client::try_from(config.clone()).unwrap();
            let (code, reason, message) =
                send(&anonymous, "GET", CMS, "application/json", Vec::new()).await;
            assert_eq!(
                (code, reason.as_str(), message.as_str()),
                (401, "Unauthorized", "Unauthorized")
            );
            let body = serde_json::to_vec(&json!({"metadata": {"name": "sneaky"}})).unwrap();
            let (code, _, _) = send(&anonymous, "POST", CMS, "application/json", body).await;
            assert_eq!(code, 401);
            // /version stays public without credentials, as on kube-apiserver; a token that is
            // not valid is refused everywhere.
            assert_eq!(anonymous.apiserver_version().await.is_ok(), token.is_none());
        }
        f.untouched().await;
    })
    .await
    .unwrap();
}
