//! Schema pieces the derive cannot express: Kubernetes list semantics, embedded resources and
//! int-or-string fields.

use schemars::{Schema, SchemaGenerator, json_schema};

/// `[]metav1.Condition` as a map list keyed by `type`, each with the validation controller-gen
/// writes for `metav1.Condition` (the fields required, `type` a qualified name of at most 316
/// characters, `status` one of three, `reason` CamelCase, `message` at most 32 KiB), as upstream
/// CRDs of the SIG-MC APIs carry it.
pub(crate) fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "description": "Condition contains details for one aspect of the current state of this API Resource.",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time",
                    "description": "lastTransitionTime is the last time the condition transitioned from one status to another. This should be when the underlying condition changed.  If that is not known, then using the time when the API field changed is acceptable."},
                "message": {"type": "string", "maxLength": crate::condition::MESSAGE_MAX_CHARS,
                    "description": "message is a human readable message indicating details about the transition. This may be an empty string."},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0,
                    "description": "observedGeneration represents the .metadata.generation that the condition was set based upon. For instance, if .metadata.generation is currently 12, but the .status.conditions[x].observedGeneration is 9, the condition is out of date with respect to the current state of the instance."},
                "reason": {"type": "string", "minLength": 1, "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                    "description": "reason contains a programmatic identifier indicating the reason for the condition's last transition. Producers of specific condition types may define expected values and meanings for this field, and whether the values are considered a guaranteed API. The value should be a CamelCase string. This field may not be empty."},
                "status": {"type": "string", "enum": ["True", "False", "Unknown"],
                    "description": "status of the condition, one of True, False, Unknown."},
                "type": {"type": "string", "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                    "description": "type of condition in CamelCase or in foo.example.com/CamelCase."},
            },
        },
    })
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

/// Any JSON value (`apiextensionsv1.JSON`), kept as written.
pub(crate) fn any_value(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
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
