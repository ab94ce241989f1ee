//! `GET /openapi/v2` as kubectl and client-go fetch it: JSON or gnostic protobuf by `Accept`, an
//! ETag that changes with the document, 406 for what the server cannot give, and a CRD's kind in
//! the document once the CRD is created.

use axum::body::Body;
use http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};

use super::{Answer, TestServer, answer, within};
use crate::StorageKind;
use crate::protobuf::wire::{Reader, WireValue};

const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

async fn get_v2(server: &TestServer, headers: &[(header::HeaderName, &str)]) -> Answer {
    let mut request = Request::builder()
        .method(Method::GET)
        .uri("/openapi/v2")
        .header(header::AUTHORIZATION, format!("Bearer {}", server.token()));
    for (name, value) in headers {
        request = request.header(name, *value);
    }
    answer(&server.router(), request.body(Body::empty()).unwrap()).await
}

fn header(answer: &Answer, name: header::HeaderName) -> &str {
    answer
        .headers
        .get(&name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

/// The `swagger` field (1) and the path names (8 → 2 → 1) of an encoded `openapi.v2.Document`.
fn decode_protobuf(body: &[u8]) -> (String, Vec<String>) {
    fn fields(buf: &[u8]) -> Vec<(u32, WireValue<'_>)> {
        let mut reader = Reader::new(buf);
        std::iter::from_fn(|| reader.field().expect("valid protobuf")).collect()
    }
    fn bytes<'a>(value: &WireValue<'a>) -> &'a [u8] {
        match value {
            WireValue::Bytes(b) => b,
            _ => panic!("not length-delimited"),
        }
    }
    let mut swagger = String::new();
    let mut paths = Vec::new();
    for (n, v) in fields(body) {
        match n {
            1 => swagger = String::from_utf8(bytes(&v).to_vec()).unwrap(),
            8 => {
                for (m, path) in fields(bytes(&v)) {
                    if m == 2
                        && let Some((1, name)) = fields(bytes(&path)).first().cloned()
                    {
                        paths.push(String::from_utf8(bytes(&name).to_vec()).unwrap());
                    }
                }
            }
            _ => {}
        }
    }
    (swagger, paths)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_v2_is_json_or_protobuf_by_accept_with_one_etag() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;

        let json = get_v2(&server, &[]).await;
        assert_eq!(json.status, StatusCode::OK, "{}", json.text());
        assert_eq!(header(&json, header::CONTENT_TYPE), "application/json");
        assert_eq!(header(&json, header::VARY), "Accept");
        let etag = header(&json, header::ETAG).to_owned();
        let hex = etag
            .strip_prefix('"')
            .and_then(|e| e.strip_suffix('"'))
            .unwrap();
        assert_eq!(hex.len(), 128, "SHA-512 in hex: {etag}");
        assert!(
            hex.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        );
        let doc = json.json();
        assert_eq!(doc["swagger"], "2.0");
        assert!(
            doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["get"].is_object()
        );
        assert!(doc["definitions"]["io.k8s.api.core.v1.ConfigMap"].is_object());

        let anything = get_v2(&server, &[(header::ACCEPT, "*/*")]).await;
        assert_eq!(header(&anything, header::CONTENT_TYPE), "application/json");
        assert_eq!(anything.body, json.body);

        let protobuf = get_v2(&server, &[(header::ACCEPT, PROTOBUF)]).await;
        assert_eq!(protobuf.status, StatusCode::OK);
        assert_eq!(header(&protobuf, header::CONTENT_TYPE), PROTOBUF);
        assert_eq!(header(&protobuf, header::ETAG), etag);
        let (swagger, paths) = decode_protobuf(&protobuf.body);
        assert_eq!(swagger, "2.0");
        assert_eq!(paths.len(), doc["paths"].as_object().unwrap().len());
        assert!(
            paths.contains(&"/apis/apps/v1/namespaces/{namespace}/deployments/{name}".to_owned())
        );

        // client-go's spelling, answered with the current one.
        let deprecated = get_v2(
            &server,
            &[(
                header::ACCEPT,
                &format!("{PROTOBUF_DEPRECATED}, application/json"),
            )],
        )
        .await;
        assert_eq!(deprecated.status, StatusCode::OK);
        assert_eq!(header(&deprecated, header::CONTENT_TYPE), PROTOBUF);
        assert_eq!(deprecated.body, protobuf.body);

        let refused = get_v2(&server, &[(header::ACCEPT, "text/html")]).await;
        assert_eq!(refused.status, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(header(&refused, header::VARY), "Accept");
        assert!(refused.body.is_empty());

        let unchanged = get_v2(&server, &[(header::IF_NONE_MATCH, &etag)]).await;
        assert_eq!(unchanged.status, StatusCode::NOT_MODIFIED);
        assert!(unchanged.body.is_empty());
        let stale = get_v2(&server, &[(header::IF_NONE_MATCH, "\"0123\"")]).await;
        assert_eq!(stale.status, StatusCode::OK);

        // Like the rest of the API, it needs credentials.
        let anonymous = Request::get("/openapi/v2").body(Body::empty()).unwrap();
        assert_eq!(
            answer(&server.router(), anonymous).await.status,
            StatusCode::UNAUTHORIZED
        );
        server.server.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_crd_appears_in_openapi_v2() {
    within(async {
        let server = TestServer::start(StorageKind::Memory, |_| {}).await;
        let before = get_v2(&server, &[]).await;
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.v2.example.com"},
            "spec": {
                "group": "v2.example.com",
                "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": {"type": "object", "properties": {
                            "color": {"type": "string", "enum": ["red", "blue"]},
                        }}},
                    }},
                }],
            },
        });
        let created = server
            .send(
                Method::POST,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                Some(crd),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());

        let after = get_v2(&server, &[]).await;
        assert_ne!(
            header(&after, header::ETAG),
            header(&before, header::ETAG),
            "the document changed"
        );
        let doc: Value = after.json();
        let gadget = &doc["definitions"]["com.example.v2.v1.Gadget"];
        assert_eq!(
            gadget["properties"]["spec"]["properties"]["color"]["enum"],
            json!(["red", "blue"])
        );
        assert_eq!(
            gadget["x-kubernetes-group-version-kind"],
            json!([{"group": "v2.example.com", "version": "v1", "kind": "Gadget"}])
        );
        let item = &doc["paths"]["/apis/v2.example.com/v1/namespaces/{namespace}/gadgets/{name}"];
        assert_eq!(item["patch"]["x-kubernetes-action"], "patch");
        assert!(
            !item["patch"]["consumes"]
                .as_array()
                .unwrap()
                .contains(&json!("application/strategic-merge-patch+json")),
            "no strategic merge patch for custom resources"
        );
        let (_, paths) = decode_protobuf(
            &get_v2(&server, &[(header::ACCEPT, PROTOBUF)]).await.body,
        );
        assert!(paths.contains(&"/apis/v2.example.com/v1/namespaces/{namespace}/gadgets/{name}/status".to_owned()));
        server.server.shutdown().await;
    })
    .await;
}
