//! What form a response takes, from the `Accept` header: the object itself, a
//! `PartialObjectMetadata` as kube-rs metadata watchers ask for it, or a `Table` for `kubectl get`.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::registry::ResourceType;
use crate::registry::store::ObjectList;
use crate::table::{self, IncludeObject, TableVersion};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Representation {
    Object,
    PartialMetadata,
    Table(TableVersion, IncludeObject),
}

impl Representation {
    /// The representation an `Accept` header (and the `includeObject` parameter) asks for.
    pub fn negotiate(accept: &str, include_object: Option<&str>) -> Result<Self> {
        if let Some(version) = table::table_version(accept) {
            let include = IncludeObject::parse(include_object).map_err(Error::BadRequest)?;
            return Ok(Representation::Table(version, include));
        }
        for media in accept.split(',') {
            let params: Vec<&str> = media.split(';').map(str::trim).collect();
            if params.contains(&"g=meta.k8s.io")
                && (params.contains(&"as=PartialObjectMetadata")
                    || params.contains(&"as=PartialObjectMetadataList"))
            {
                return Ok(Representation::PartialMetadata);
            }
        }
        Ok(Representation::Object)
    }

    /// One object in this representation.
    pub fn object(&self, rt: &ResourceType, mut object: Value) -> Value {
        match self {
            Representation::Object => object,
            Representation::PartialMetadata => partial(object["metadata"].take()),
            Representation::Table(version, include) => {
                let metadata = json!({"resourceVersion": object["metadata"]["resourceVersion"]});
                table::table_in(
                    *version,
                    rt,
                    &[object],
                    *include,
                    metadata,
                    jiff::Timestamp::now(),
                )
            }
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
            Representation::Object => {
                // Built by hand: `json!` would copy every item through serialization.
                let mut list = serde_json::Map::with_capacity(4);
                list.insert("kind".into(), json!(rt.list_kind));
                list.insert("apiVersion".into(), json!(rt.api_version()));
                list.insert("metadata".into(), metadata);
                list.insert("items".into(), Value::Array(page.items));
                Value::Object(list)
            }
            Representation::PartialMetadata => json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": metadata,
                "items": Value::Array(
                    page.items
                        .into_iter()
                        .map(|mut o| partial(o["metadata"].take()))
                        .collect()
                ),
            }),
            Representation::Table(version, include) => table::table_in(
                *version,
                rt,
                &page.items,
                *include,
                metadata,
                jiff::Timestamp::now(),
            ),
        }
    }

    /// The Content-Type of a response in this representation; `list` for list bodies.
    pub fn content_type(&self, list: bool) -> &'static str {
        match self {
            Representation::Object => "application/json",
            Representation::PartialMetadata if list => {
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
            }
            Representation::PartialMetadata => {
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
            }
            Representation::Table(version, _) => version.content_type(),
        }
    }

    pub fn response(&self, code: StatusCode, body: &Value) -> Response {
        let list = body["kind"] == "PartialObjectMetadataList";
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        (
            code,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(self.content_type(list)),
            )],
            bytes,
        )
            .into_response()
    }
}

/// The `PartialObjectMetadata` of an object, given the object's `metadata` (moved, not copied:
/// a write answered with metadata only is the hub's most frequent request).
pub fn partial(metadata: Value) -> Value {
    let mut partial = serde_json::Map::with_capacity(3);
    partial.insert("kind".into(), "PartialObjectMetadata".into());
    partial.insert("apiVersion".into(), "meta.k8s.io/v1".into());
    partial.insert("metadata".into(), metadata);
    Value::Object(partial)
}
