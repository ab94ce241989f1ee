//! Validation of API objects with kube-apiserver's exact error wording.
//!
//! A pure module over [`serde_json::Value`]: no I/O, no HTTP. It provides
//!
//! * [`FieldError`], the field-level error shared by the whole server, which renders exactly like
//!   upstream's `field.Error` (`metadata.name: Invalid value: "X": a lowercase RFC 1123 …`), and
//!   [`invalid_message`], the `Status.message` of a 422 `Invalid` response;
//! * [`meta`]: object metadata rules (names, labels, annotations, finalizers, owner references);
//! * [`schema`]: validation of custom resources against a CRD's `openAPIV3Schema`, including the
//!   uniqueness of `x-kubernetes-list-type: set|map` lists;
//! * [`structural`]: pruning of unknown fields, defaulting, and list types for server-side apply;
//! * [`crd`]: validation and defaulting of `CustomResourceDefinition` objects;
//! * [`builtin`]: the rules of built-in kinds users hit most (Services, pod specs, selectors);
//! * [`multicluster`]: the SIG-Multicluster kinds' rules on metadata, which their CRDs cannot state.
//!
//! Field paths are written the way upstream prints them: `spec.versions[0].name`,
//! `spec.validation.openAPIV3Schema.properties[spec].type`, `metadata.labels`.

use std::fmt;

use serde_json::Value;

pub mod builtin;
pub mod cel;
pub mod crd;
pub mod meta;
pub mod multicluster;
mod render;
pub mod schema;
pub mod structural;

pub use crd::{crd_defaults, validate_crd};
pub use meta::{NameRule, is_dns1123_label, is_dns1123_subdomain, validate_object_meta};
pub use schema::validate;
pub use structural::{
    ListKind, apply_defaults, list_type, prune, strict_decoding_message, unchanged_fields,
    unknown_field_message,
};

/// Why a field failed validation; one-to-one with upstream's `field.ErrorType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CauseType {
    /// A referenced value was not found (`FieldValueNotFound`).
    NotFound,
    /// A required value is missing (`FieldValueRequired`).
    Required,
    /// A value that must be unique is repeated (`FieldValueDuplicate`).
    Duplicate,
    /// A malformed value (`FieldValueInvalid`).
    Invalid,
    /// A value outside an enumeration (`FieldValueNotSupported`).
    NotSupported,
    /// A value that is not allowed under the current conditions (`FieldValueForbidden`).
    Forbidden,
    /// A value that is too long; the value itself is not shown (`FieldValueTooLong`).
    TooLong,
    /// A value that is too short; the value itself is not shown (`FieldValueTooShort`).
    TooShort,
    /// A list or map with too many items (`FieldValueTooMany`).
    TooMany,
    /// A failure unrelated to the input (`InternalError`).
    Internal,
    /// A value of the wrong type for its schema (`FieldValueTypeInvalid`).
    TypeInvalid,
}

impl CauseType {
    /// The machine-readable reason, as in `Status.details.causes[].reason`.
    pub fn reason(self) -> &'static str {
        match self {
            CauseType::NotFound => "FieldValueNotFound",
            CauseType::Required => "FieldValueRequired",
            CauseType::Duplicate => "FieldValueDuplicate",
            CauseType::Invalid => "FieldValueInvalid",
            CauseType::NotSupported => "FieldValueNotSupported",
            CauseType::Forbidden => "FieldValueForbidden",
            CauseType::TooLong => "FieldValueTooLong",
            CauseType::TooShort => "FieldValueTooShort",
            CauseType::TooMany => "FieldValueTooMany",
            CauseType::Internal => "InternalError",
            CauseType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human-readable label that starts every message of this type.
    pub fn label(self) -> &'static str {
        match self {
            CauseType::NotFound => "Not found",
            CauseType::Required => "Required value",
            CauseType::Duplicate => "Duplicate value",
            CauseType::Invalid | CauseType::TypeInvalid => "Invalid value",
            CauseType::NotSupported => "Unsupported value",
            CauseType::Forbidden => "Forbidden",
            CauseType::TooLong => "Too long",
            CauseType::TooShort => "Too short",
            CauseType::TooMany => "Too many",
            CauseType::Internal => "Internal error",
        }
    }

    /// Whether messages of this type leave the bad value out.
    fn omits_value(self) -> bool {
        matches!(
            self,
            CauseType::Required
                | CauseType::Forbidden
                | CauseType::TooLong
                | CauseType::TooShort
                | CauseType::Internal
        )
    }
}

/// One field-level validation error, as upstream's `field.Error`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{field}: {}", self.cause_message())]
pub struct FieldError {
    /// What kind of failure this is.
    pub cause: CauseType,
    /// The field path as upstream prints it, e.g. `spec.replicas` or `metadata.labels`.
    pub field: String,
    /// The detail text after the value, e.g. `must be no more than 63 characters`.
    pub message: String,
    /// The offending value; `None` leaves it out of the message.
    pub value: Option<Value>,
}

impl FieldError {
    /// A required value is missing (`Required value: <detail>`).
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(CauseType::Required, field, None, detail)
    }

    /// A malformed value (`Invalid value: <value>: <detail>`).
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(CauseType::Invalid, field, Some(value.into()), detail)
    }

    /// A value of the wrong type (`Invalid value: <value>: <detail>`, reason `FieldValueTypeInvalid`).
    pub fn type_invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(CauseType::TypeInvalid, field, Some(value.into()), detail)
    }

    /// A value outside an enumeration (`Unsupported value: "x": supported values: "a", "b"`).
    pub fn not_supported<S: AsRef<str>>(
        field: impl Into<String>,
        value: impl Into<Value>,
        supported: &[S],
    ) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported
                .iter()
                .map(|s| render::go_quote(s.as_ref()))
                .collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(CauseType::NotSupported, field, Some(value.into()), detail)
    }

    /// A value not allowed here (`Forbidden: <detail>`).
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(CauseType::Forbidden, field, None, detail)
    }

    /// A repeated value (`Duplicate value: <value>`).
    pub fn duplicate(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(CauseType::Duplicate, field, Some(value.into()), "")
    }

    /// A value longer than `max` bytes (`Too long: may not be more than <max> bytes`).
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            CauseType::TooLong,
            field,
            None,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// A list or map with `actual` items where at most `max` are allowed
    /// (`Too many: <actual>: must have at most <max> items`).
    pub fn too_many(field: impl Into<String>, actual: Option<u64>, max: Option<u64>) -> Self {
        let detail = match max {
            Some(1) => "must have at most 1 item".to_string(),
            Some(max) => format!("must have at most {max} items"),
            None => "too many items".to_string(),
        };
        Self::new(CauseType::TooMany, field, actual.map(Value::from), detail)
    }

    /// An internal failure (`Internal error: <detail>`).
    pub fn internal(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(CauseType::Internal, field, None, detail)
    }

    fn new(
        cause: CauseType,
        field: impl Into<String>,
        value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            cause,
            field: field.into(),
            message: detail.into(),
            value,
        }
    }

    /// The machine-readable reason, e.g. `FieldValueRequired`.
    pub fn reason(&self) -> &'static str {
        self.cause.reason()
    }

    /// The message without the field, as in `Status.details.causes[].message`, e.g.
    /// `Invalid value: "x": must be …` or `Required value: name or generateName is required`.
    pub fn cause_message(&self) -> String {
        let mut out = self.cause.label().to_string();
        if !self.cause.omits_value()
            && let Some(value) = &self.value
        {
            out.push_str(": ");
            out.push_str(&render::bad_value(value));
        }
        if !self.message.is_empty() {
            out.push_str(": ");
            out.push_str(&self.message);
        }
        out
    }
}

/// The `Status.message` of a 422 response, as upstream's `errors.NewInvalid`:
/// `ConfigMap "x" is invalid: metadata.name: Invalid value: …` for one error and
/// `… is invalid: [a: …, b: …]` for several (repeated messages are shown once).
///
/// `kind` is the qualified kind: `ConfigMap` for the core group, `Widget.example.com` otherwise.
pub fn invalid_message(kind: &str, name: &str, errors: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for error in errors {
        let text = error.to_string();
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    let head = format!("{kind} {} is invalid", render::go_quote(name));
    match seen.len() {
        0 => head,
        1 => format!("{head}: {}", seen[0]),
        _ => format!("{head}: [{}]", seen.join(", ")),
    }
}

/// Upstream's `field.Path` rendering helpers.
pub(crate) mod path {
    /// `parent.name`, or `name` at the root.
    pub fn child(parent: &str, name: &str) -> String {
        if parent.is_empty() {
            name.to_string()
        } else {
            format!("{parent}.{name}")
        }
    }

    /// `parent[key]`.
    pub fn key(parent: &str, key: &str) -> String {
        format!("{parent}[{key}]")
    }

    /// `parent[index]`.
    pub fn index(parent: &str, index: usize) -> String {
        format!("{parent}[{index}]")
    }
}

impl fmt::Display for CauseType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn required_shows_no_value() {
        let e = FieldError::required("metadata.name", "name or generateName is required");
        assert_eq!(
            e.to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        assert_eq!(e.reason(), "FieldValueRequired");
        assert_eq!(
            FieldError::required("spec.size", "").to_string(),
            "spec.size: Required value"
        );
    }

    #[test]
    fn invalid_renders_values_like_go() {
        assert_eq!(
            FieldError::invalid("a", "x\"y", "bad").cause_message(),
            r#"Invalid value: "x\"y": bad"#
        );
        assert_eq!(
            FieldError::invalid("a", 5, "bad").cause_message(),
            "Invalid value: 5: bad"
        );
        assert_eq!(
            FieldError::invalid("a", 1.5, "bad").cause_message(),
            "Invalid value: 1.5: bad"
        );
        assert_eq!(
            FieldError::invalid("a", 1e6, "bad").cause_message(),
            "Invalid value: 1e+06: bad"
        );
        assert_eq!(
            FieldError::invalid("a", true, "bad").cause_message(),
            "Invalid value: true: bad"
        );
        assert_eq!(
            FieldError::invalid("a", Value::Null, "bad").cause_message(),
            "Invalid value: null: bad"
        );
        assert_eq!(
            FieldError::invalid("a", json!({"b": "<x>", "a": [1, 2.5]}), "bad").cause_message(),
            r#"Invalid value: {"a":[1,2.5],"b":"\u003cx\u003e"}: bad"#
        );
    }

    #[test]
    fn not_supported_lists_quoted_values() {
        let e = FieldError::not_supported("spec.mode", "x", &["a", "b"]);
        assert_eq!(
            e.to_string(),
            r#"spec.mode: Unsupported value: "x": supported values: "a", "b""#
        );
        assert_eq!(e.reason(), "FieldValueNotSupported");
    }

    #[test]
    fn too_long_and_too_many() {
        assert_eq!(
            FieldError::too_long("metadata.annotations", 262144).to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        assert_eq!(
            FieldError::too_many("spec.items", Some(4), Some(3)).to_string(),
            "spec.items: Too many: 4: must have at most 3 items"
        );
        assert_eq!(
            FieldError::too_many("x", None, Some(1)).to_string(),
            "x: Too many: must have at most 1 item"
        );
    }

    #[test]
    fn forbidden_and_duplicate() {
        assert_eq!(
            FieldError::forbidden("metadata.namespace", "not allowed on this type").to_string(),
            "metadata.namespace: Forbidden: not allowed on this type"
        );
        assert_eq!(
            FieldError::duplicate("spec.items[1]", "a").to_string(),
            r#"spec.items[1]: Duplicate value: "a""#
        );
    }

    #[test]
    fn invalid_message_single_and_many() {
        let one = [FieldError::required(
            "metadata.name",
            "name or generateName is required",
        )];
        assert_eq!(
            invalid_message("ConfigMap", "x", &one),
            r#"ConfigMap "x" is invalid: metadata.name: Required value: name or generateName is required"#
        );
        let many = [
            FieldError::required("spec.size", ""),
            FieldError::required("spec.size", ""),
            FieldError::invalid("spec.replicas", 0, "must be positive"),
        ];
        assert_eq!(
            invalid_message("Widget.example.com", "w", &many),
            r#"Widget.example.com "w" is invalid: [spec.size: Required value, spec.replicas: Invalid value: 0: must be positive]"#
        );
        assert_eq!(
            invalid_message("ConfigMap", "x", &[]),
            r#"ConfigMap "x" is invalid"#
        );
    }
}
