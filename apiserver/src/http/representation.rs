//! What form a response takes, from the `Accept` header: the object itself, or
//! `PartialObjectMetadata` as kube-rs metadata watchers ask for it.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::registry::ResourceType;
use crate::registry::store::ObjectList;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Representation {
    Object,
    PartialMetadata,
}

impl Representation {
    pub fn from_accept(accept: &str) -> Self {
        for media in accept.split(',') {
            let params: Vec<&str> = media.split(';').map(str::trim).collect();
            if params.contains(&"g=meta.k8s.io")
                && (params.contains(&"as=PartialObjectMetadata")
                    || params.contains(&"as=PartialObjectMetadataList"))
            {
                return Representation::PartialMetadata;
            }
        }
        Representation::Object
    }

    /// One object in this representation.
    pub fn object(&self, _rt: &ResourceType, object: Value) -> Value {
        match self {
            Representation::Object => object,
            Representation::PartialMetadata => partial(&object),
        }
    }

    /// A list in this representation.
    pub fn list(&self, rt: &ResourceType, page: ObjectList) -> Value {
        let mut metadata = json!({"resourceVersion": page.revision.to_string()});
        if let Some(token) = page.continue_token {
            metadata["continue"] = json!(token);
        }
        if let Some(remaining) = page.remaining {
            metadata["remainingItemCount"] = json!(remaining);
        }
        match self {
            Representation::Object => json!({
                "kind": rt.list_kind,
                "apiVersion": rt.api_version(),
                "metadata": metadata,
                "items": page.items,
            }),
            Representation::PartialMetadata => json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": metadata,
                "items": page.items.iter().map(partial).collect::<Vec<_>>(),
            }),
        }
    }

    pub fn response(&self, code: StatusCode, body: &Value) -> Response {
        let content_type = match self {
            Representation::Object => "application/json",
            Representation::PartialMetadata => {
                if body["kind"] == "PartialObjectMetadataList" {
                    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
                } else {
                    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
                }
            }
        };
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        (
            code,
            [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
            bytes,
        )
            .into_response()
    }
}

/// The `PartialObjectMetadata` of an object.
pub fn partial(object: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": object["metadata"],
    })
}
