//! Schema pieces the derive cannot express: Kubernetes list semantics, embedded resources and
//! int-or-string fields.

use schemars::{Schema, SchemaGenerator, json_schema};

/// `[]metav1.Condition` as a map list keyed by `type`, as upstream Kubernetes types declare it.
pub(crate) fn conditions(generator: &mut SchemaGenerator) -> Schema {
    map_list::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>(generator, "type")
}

/// A list of `T` with `x-kubernetes-list-type: map` keyed by `key`.
pub(crate) fn map_list<T: schemars::JsonSchema>(
    generator: &mut SchemaGenerator,
    key: &str,
) -> Schema {
    let mut schema = generator.subschema_for::<Vec<T>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert(
        "x-kubernetes-list-map-keys".into(),
        serde_json::json!([key]),
    );
    schema
}

/// A list of strings that behaves as a set.
pub(crate) fn string_set(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-list-type": "set",
    })
}

/// A complete Kubernetes object kept as it was written (`runtime.RawExtension` with
/// `EmbeddedResource` and `PreserveUnknownFields`).
pub(crate) fn embedded_resource(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Free-form JSON kept as written.
pub(crate) fn preserve_unknown(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A `resource.Quantity`: an integer or a string such as `256Mi`.
pub(crate) fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
    })
}

/// A duration such as `90s`, `5m` or `1h30m` (see `placement::parse_duration`).
pub(crate) fn duration(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "maxLength": 32,
        "pattern": crate::placement::DURATION_PATTERN,
    })
}

/// A number of clusters, or a percentage of them such as `25%`.
pub(crate) fn count_or_percent(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "minimum": 0,
        "maxLength": 8,
        "pattern": crate::placement::PERCENT_PATTERN,
    })
}
