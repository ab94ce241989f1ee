//! `apiextensions.k8s.io/v1` CustomResourceDefinition defaulting and create validation, with the
//! messages of apiextensions-apiserver.
//!
//! Like upstream, a v1 CRD is checked in its internal form: when every version has the same
//! schema (or subresources, or printer columns) they are checked once at the top level, so errors
//! read `spec.validation.openAPIV3Schema…`; otherwise per version
//! (`spec.versions[1].schema.openAPIV3Schema…`). CEL rules are compiled by [`super::cel`]. Not checked here:
//! that defaults validate against their schema, the completeness of value validations
//! (`anyOf` naming fields the schema lacks), webhook URLs and services, and `status`.

use serde_json::{Map, Value};

use super::meta::{dns1035_label_errors, dns1123_subdomain_errors, validate_object_meta_common};
use super::schema::compiled;
use super::{FieldError, path};

/// Fills the defaults upstream sets on decode: `spec.names.singular` (lowercase kind),
/// `spec.names.listKind` (kind + `List`), `spec.conversion.strategy: None`, and port 443 for a
/// conversion webhook service.
pub fn crd_defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if str_of(names, "singular").is_empty() {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if str_of(names, "listKind").is_empty() && !kind.is_empty() {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| Value::Object(Map::new()));
    if conversion.is_null() {
        *conversion = Value::Object(Map::new());
    }
    if let Some(conversion) = conversion.as_object_mut() {
        if conversion.is_empty() {
            conversion.insert("strategy".into(), Value::String("None".into()));
        }
        if let Some(service) = conversion
            .get_mut("webhook")
            .and_then(|w| w.get_mut("clientConfig"))
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
            && service.get("port").is_none_or(Value::is_null)
        {
            service.insert("port".into(), Value::from(443));
        }
    }
}

fn str_of<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or("")
}

fn get<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.get(key).filter(|v| !v.is_null())
}

fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool) == Some(true)
}

/// Validates a CustomResourceDefinition on create, after [`crd_defaults`].
pub fn validate_crd(crd: &Value) -> Vec<FieldError> {
    let empty = Value::Object(Map::new());
    let spec = get(crd, "spec").unwrap_or(&empty);
    let names = get(spec, "names").unwrap_or(&empty);
    let group = get(spec, "group").and_then(Value::as_str).unwrap_or("");
    let plural = names.get("plural").and_then(Value::as_str).unwrap_or("");

    let mut errs = Vec::new();
    let meta_empty = Map::new();
    let meta = crd
        .get("metadata")
        .and_then(Value::as_object)
        .unwrap_or(&meta_empty);
    let generate_name = str_of(meta, "generateName");
    if !generate_name.is_empty() {
        for msg in crd_name_errors(generate_name, plural, group) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                generate_name,
                msg,
            ));
        }
    }
    let name = str_of(meta, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in crd_name_errors(name, plural, group) {
            errs.push(FieldError::invalid("metadata.name", name, msg));
        }
    }
    errs.extend(validate_object_meta_common(meta, false));
    errs.extend(validate_spec(spec));
    errs.extend(validate_api_approval(group, meta));
    if flag(spec, "preserveUnknownFields") {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

fn crd_name_errors(name: &str, plural: &str, group: &str) -> Vec<String> {
    let mut errs = dns1123_subdomain_errors(name);
    if name != format!("{plural}.{group}") {
        errs.push(r#"must be spec.names.plural+"."+spec.group"#.to_string());
    }
    errs
}

fn validate_api_approval(group: &str, meta: &Map<String, Value>) -> Option<FieldError> {
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|domain| group == *domain || group.ends_with(&format!(".{domain}")));
    let approved = meta
        .get("annotations")
        .and_then(|a| a.get("api-approved.kubernetes.io"))
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty());
    (protected && !approved).then(|| {
        FieldError::required(
            "metadata.annotations[api-approved.kubernetes.io]",
            r#"protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#,
        )
    })
}

/// Whether every version carries the same value under `key` (absent counts as a value).
fn identical(versions: &[Value], key: &str) -> bool {
    let first = versions.first().and_then(|v| get(v, key));
    versions.iter().all(|v| get(v, key) == first)
}

fn has_status(subresources: Option<&Value>) -> bool {
    subresources.and_then(|s| get(s, "status")).is_some()
}

fn has_defaults(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| (k == "default" && !v.is_null()) || has_defaults(v)),
        Value::Array(items) => items.iter().any(has_defaults),
        _ => false,
    }
}

fn validate_spec(spec: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let group = get(spec, "group").and_then(Value::as_str).unwrap_or("");
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        let group_errs = dns1123_subdomain_errors(group);
        if !group_errs.is_empty() {
            errs.push(FieldError::invalid(
                "spec.group",
                group,
                group_errs.join(","),
            ));
        } else if !group.contains('.') {
            errs.push(FieldError::invalid(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
    }

    let scope = get(spec, "scope").and_then(Value::as_str).unwrap_or("");
    errs.extend(enum_string("spec.scope", scope, &["Cluster", "Namespaced"]));

    let versions: &[Value] = get(spec, "versions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    for (i, version) in versions.iter().enumerate() {
        if version
            .get("schema")
            .and_then(|s| get(s, "openAPIV3Schema"))
            .is_none()
        {
            errs.push(FieldError::required(
                format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "schemas are required",
            ));
        }
    }
    let preserve_unknown = flag(spec, "preserveUnknownFields");
    if preserve_unknown
        && versions
            .iter()
            .any(|v| get(v, "schema").is_some_and(has_defaults))
    {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "must be false in order to use defaults in the schema",
        ));
    }

    let schemas_identical = identical(versions, "schema");
    let subresources_identical = identical(versions, "subresources");
    let columns_identical = identical(versions, "additionalPrinterColumns");
    let top_subresources = if subresources_identical {
        versions.first().and_then(|v| get(v, "subresources"))
    } else {
        None
    };

    let mut storage = 0;
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, version) in versions.iter().enumerate() {
        let vpath = format!("spec.versions[{i}]");
        if flag(version, "storage") {
            storage += 1;
        }
        let vname = version.get("name").and_then(Value::as_str).unwrap_or("");
        if seen.contains(&vname) {
            unique = false;
        } else {
            seen.push(vname);
        }
        let name_errs = dns1035_label_errors(vname);
        if !name_errs.is_empty() {
            errs.push(FieldError::invalid(
                path::child(&vpath, "name"),
                vname,
                name_errs.join(","),
            ));
        }
        errs.extend(validate_deprecation_warning(version, &vpath));
        let subresources = if subresources_identical {
            top_subresources
        } else {
            get(version, "subresources")
        };
        if !schemas_identical {
            errs.extend(validate_schema(
                get(version, "schema"),
                has_status(subresources),
                &path::child(&vpath, "schema"),
            ));
        }
        if !subresources_identical {
            errs.extend(validate_subresources(
                get(version, "subresources"),
                &path::child(&vpath, "subresources"),
            ));
        }
        if !columns_identical {
            errs.extend(validate_columns(
                get(version, "additionalPrinterColumns"),
                &path::child(&vpath, "additionalPrinterColumns"),
            ));
        }
    }
    let versions_value = Value::Array(versions.to_vec());
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value.clone(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            versions_value,
            "must have exactly one version marked as storage version",
        ));
    }

    let empty = Value::Object(Map::new());
    let names = get(spec, "names").unwrap_or(&empty);
    for required in ["plural", "singular", "kind", "listKind"] {
        if names
            .get(required)
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            errs.push(FieldError::required(format!("spec.names.{required}"), ""));
        }
    }
    errs.extend(validate_names(names, "spec.names"));

    if schemas_identical {
        let any_status = has_status(top_subresources)
            || versions.iter().any(|v| has_status(get(v, "subresources")));
        errs.extend(validate_schema(
            versions.first().and_then(|v| get(v, "schema")),
            any_status,
            "spec.validation",
        ));
    }
    if subresources_identical {
        errs.extend(validate_subresources(top_subresources, "spec.subresources"));
    }
    if columns_identical {
        errs.extend(validate_columns(
            versions
                .first()
                .and_then(|v| get(v, "additionalPrinterColumns")),
            "spec.additionalPrinterColumns",
        ));
    }

    let conversion = get(spec, "conversion");
    let strategy = conversion
        .and_then(|c| c.get("strategy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if conversion.is_some() && strategy != "None" && preserve_unknown {
        errs.push(FieldError::invalid(
            "spec.conversion.strategy",
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    if let Some(conversion) = conversion {
        errs.extend(validate_conversion(conversion, strategy));
    }
    errs
}

fn enum_string(field: &str, value: &str, accepted: &[&str]) -> Option<FieldError> {
    if value.is_empty() {
        return Some(FieldError::required(field, ""));
    }
    (!accepted.contains(&value)).then(|| FieldError::not_supported(field, value, accepted))
}

fn validate_deprecation_warning(version: &Value, vpath: &str) -> Vec<FieldError> {
    let Some(warning) = version.get("deprecationWarning").and_then(Value::as_str) else {
        return Vec::new();
    };
    let field = path::child(vpath, "deprecationWarning");
    let mut msgs = Vec::new();
    if !flag(version, "deprecated") {
        msgs.push("can only be set for deprecated versions".to_string());
    } else {
        if warning.len() > 256 {
            msgs.push("must be <= 256 characters long".to_string());
        }
        if warning.is_empty() {
            msgs.push("must not be an empty string".to_string());
        }
        if let Some((i, _)) = warning.char_indices().find(|(_, c)| c.is_control()) {
            msgs.push(format!("must only contain printable UTF-8 characters; non-printable character found at index {i}"));
        }
    }
    msgs.into_iter()
        .map(|m| FieldError::invalid(field.clone(), warning, m))
        .collect()
}

fn validate_names(names: &Value, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let text = |key: &str| {
        names
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    for key in ["plural", "singular"] {
        let value = text(key);
        let msgs = dns1035_label_errors(&value);
        if !value.is_empty() && !msgs.is_empty() {
            errs.push(FieldError::invalid(
                path::child(field, key),
                value,
                msgs.join(","),
            ));
        }
    }
    for key in ["kind", "listKind"] {
        let value = text(key);
        let msgs = dns1035_label_errors(&value.to_lowercase());
        if !value.is_empty() && !msgs.is_empty() {
            errs.push(FieldError::invalid(
                path::child(field, key),
                value,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    msgs.join(",")
                ),
            ));
        }
    }
    for key in ["shortNames", "categories"] {
        for (i, item) in names
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let value = item.as_str().unwrap_or("");
            let msgs = dns1035_label_errors(value);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(
                    path::index(&path::child(field, key), i),
                    value,
                    msgs.join(","),
                ));
            }
        }
        if key == "shortNames" {
            let kind = text("kind");
            if !kind.is_empty() && kind == text("listKind") {
                errs.push(FieldError::invalid(
                    path::child(field, "listKind"),
                    kind,
                    "kind and listKind may not be the same",
                ));
            }
        }
    }
    errs
}

fn validate_simple_json_path(value: &str, field: &str) -> Option<FieldError> {
    if value.is_empty() {
        Some(FieldError::invalid(field, value, "must not be empty"))
    } else if !value.starts_with('.') {
        Some(FieldError::invalid(
            field,
            value,
            "must be a simple json path starting with .",
        ))
    } else {
        None
    }
}

fn validate_subresources(subresources: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(scale) = subresources.and_then(|s| get(s, "scale")) else {
        return errs;
    };
    for (key, prefix, detail) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let sub = path::child(field, &format!("scale.{key}"));
        let value = scale.get(key).and_then(Value::as_str).unwrap_or("");
        if value.is_empty() {
            errs.push(FieldError::required(sub, ""));
        } else if let Some(err) = validate_simple_json_path(value, &sub) {
            errs.push(err);
        } else if !value.starts_with(prefix) {
            errs.push(FieldError::invalid(sub, value, detail));
        }
    }
    if let Some(selector) = scale
        .get("labelSelectorPath")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        let sub = path::child(field, "scale.labelSelectorPath");
        if let Some(err) = validate_simple_json_path(selector, &sub) {
            errs.push(err);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(FieldError::invalid(
                sub,
                selector,
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

fn validate_columns(columns: Option<&Value>, field: &str) -> Vec<FieldError> {
    const TYPES: &str = "boolean,date,integer,number,string";
    const FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
    let mut errs = Vec::new();
    for (i, column) in columns
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let cpath = path::index(field, i);
        let text = |key: &str| {
            column
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        if text("name").is_empty() {
            errs.push(FieldError::required(path::child(&cpath, "name"), ""));
        }
        let column_type = text("type");
        if column_type.is_empty() {
            errs.push(FieldError::required(
                path::child(&cpath, "type"),
                format!("must be one of {TYPES}"),
            ));
        } else if !TYPES.split(',').any(|t| t == column_type) {
            errs.push(FieldError::invalid(
                path::child(&cpath, "type"),
                column_type,
                format!("must be one of {TYPES}"),
            ));
        }
        let format = text("format");
        if !format.is_empty() && !FORMATS.split(',').any(|f| f == format) {
            errs.push(FieldError::invalid(
                path::child(&cpath, "format"),
                format,
                format!("must be one of {FORMATS}"),
            ));
        }
        let json_path = text("jsonPath");
        if json_path.is_empty() {
            errs.push(FieldError::required(path::child(&cpath, "JSONPath"), ""));
        } else if let Some(err) =
            validate_simple_json_path(&json_path, &path::child(&cpath, "JSONPath"))
        {
            errs.push(err);
        }
    }
    errs
}

fn validate_conversion(conversion: &Value, strategy: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    errs.extend(enum_string(
        "spec.conversion.strategy",
        strategy,
        &["None", "Webhook"],
    ));
    let webhook = get(conversion, "webhook");
    let client_config = webhook.and_then(|w| get(w, "clientConfig"));
    let review_versions: Vec<&str> = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if strategy == "Webhook" {
        match client_config {
            None => errs.push(FieldError::required(
                "spec.conversion.webhookClientConfig",
                "required when strategy is set to Webhook",
            )),
            Some(cc) if get(cc, "url").is_some() == get(cc, "service").is_some() => {
                errs.push(FieldError::required(
                    "spec.conversion.webhookClientConfig",
                    "exactly one of url or service is required",
                ))
            }
            Some(_) => {}
        }
        let field = "spec.conversion.conversionReviewVersions";
        if review_versions.is_empty() {
            errs.push(FieldError::required(field, ""));
        } else {
            let mut seen = Vec::new();
            for (i, v) in review_versions.iter().enumerate() {
                if seen.contains(v) {
                    errs.push(FieldError::invalid(
                        path::index(field, i),
                        *v,
                        "duplicate version",
                    ));
                    continue;
                }
                seen.push(*v);
                for msg in dns1035_label_errors(v) {
                    errs.push(FieldError::invalid(path::index(field, i), *v, msg));
                }
            }
            if !review_versions
                .iter()
                .any(|v| *v == "v1" || *v == "v1beta1")
            {
                let value = Value::Array(review_versions.iter().map(|v| Value::from(*v)).collect());
                errs.push(FieldError::invalid(
                    field,
                    value,
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                "spec.conversion.webhookClientConfig",
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errs.push(FieldError::forbidden(
                "spec.conversion.conversionReviewVersions",
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

/// Schema keys that may be set at the root when the status subresource is enabled.
const ALLOWED_AT_ROOT: &[&str] = &[
    "description",
    "type",
    "format",
    "title",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "required",
    "items",
    "properties",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
];

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

/// Upstream's `validateCustomResourceDefinitionValidation` for one `schema` object
/// (`{openAPIV3Schema: …}`) reported under `field` (`spec.validation` or
/// `spec.versions[i].schema`).
fn validate_schema(
    validation: Option<&Value>,
    status_enabled: bool,
    field: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(schema) = validation.and_then(|v| get(v, "openAPIV3Schema")) else {
        return errs;
    };
    let root = path::child(field, "openAPIV3Schema");
    let Some(map) = schema.as_object() else {
        errs.push(FieldError::invalid(
            root,
            schema.clone(),
            "must be an object",
        ));
        return errs;
    };
    if status_enabled {
        let schema_type = str_of(map, "type");
        if !schema_type.is_empty() && schema_type != "object" {
            errs.push(FieldError::invalid(
                path::child(&root, "type"),
                schema_type,
                r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
            ));
        } else if map
            .iter()
            .any(|(k, v)| !ALLOWED_AT_ROOT.contains(&k.as_str()) && !is_zero(v))
        {
            errs.push(FieldError::invalid(
                root.clone(),
                schema.clone(),
                "only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled",
            ));
        }
    }
    if flag(schema, "nullable") {
        errs.push(FieldError::forbidden(
            path::child(&root, "nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut structural_errs = Vec::new();
    structural_invariants(schema, Level::Root, &root, &mut structural_errs);
    structural_errs.sort_by_key(ToString::to_string);
    errs.extend(structural_errs);
    openapi_schema(schema, &root, &SchemaContext::default(), true, &mut errs);
    if errs.is_empty() {
        // Rules are compiled against the structural schema, so only once it is one.
        errs.extend(super::cel::crd_errors(schema, &root));
    }
    errs
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

fn schema_type(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

fn sorted_properties(schema: &Value) -> Vec<(&String, &Value)> {
    let mut props: Vec<(&String, &Value)> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    props.sort_by(|a, b| a.0.cmp(b.0));
    props
}

fn schema_list<'a>(schema: &'a Value, key: &str) -> &'a [Value] {
    schema
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `anyOf: [{type: integer}, {type: string}]`, the structural way to spell int-or-string.
fn is_int_or_string_any_of(schema: &Value) -> bool {
    let any_of = schema_list(schema, "anyOf");
    let only_type = |v: &Value, t: &str| {
        v.as_object()
            .is_some_and(|m| m.len() == 1 && m.get("type").and_then(Value::as_str) == Some(t))
    };
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

/// Upstream's `validateStructuralInvariants` over the raw schema.
fn structural_invariants(s: &Value, level: Level, field: &str, errs: &mut Vec<FieldError>) {
    if !s.is_object() {
        return;
    }
    let s_type = schema_type(s);
    let items = get(s, "items");
    if s_type == "array" && items.is_none() {
        errs.push(FieldError::required(
            path::child(field, "items"),
            "must be specified",
        ));
    }
    if let Some(items) = items.filter(|i| i.is_object()) {
        structural_invariants(items, Level::Item, &path::child(field, "items"), errs);
    }
    for (key, prop) in sorted_properties(s) {
        structural_invariants(
            prop,
            Level::Field,
            &path::key(&path::child(field, "properties"), key),
            errs,
        );
    }
    let additional = get(s, "additionalProperties");
    if let Some(additional) = additional {
        if level == Level::Root {
            errs.push(FieldError::forbidden(
                path::child(field, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if additional.is_object() {
            structural_invariants(
                additional,
                Level::Field,
                &path::child(field, "additionalProperties"),
                errs,
            );
        }
    }

    let int_or_string = flag(s, "x-kubernetes-int-or-string");
    let preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    if int_or_string && preserve {
        errs.push(FieldError::invalid(
            path::child(field, "x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(FieldError::invalid(
            path::child(field, "x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    let skip_any_of = is_int_or_string_any_of(s);
    let skip_first_all_of_any_of = schema_list(s, "allOf")
        .first()
        .is_some_and(is_int_or_string_any_of);
    value_validation(s, skip_any_of, skip_first_all_of_any_of, level, field, errs);

    let check_metadata = level == Level::Root || embedded;
    if embedded && s_type != "object" {
        if s_type.is_empty() {
            errs.push(FieldError::required(
                path::child(field, "type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(FieldError::invalid(
                path::child(field, "type"),
                s_type,
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if s_type.is_empty() && !int_or_string && !preserve {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(path::child(field, "type"), detail));
    }
    if embedded && additional.is_some() {
        errs.push(FieldError::forbidden(
            path::child(field, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if level == Level::Root && !s_type.is_empty() && s_type != "object" {
        errs.push(FieldError::invalid(
            path::child(field, "type"),
            s_type,
            "must be object at the root",
        ));
    }
    let props = path::child(field, "properties");
    for key in ["kind", "apiVersion"] {
        if let Some(prop) = s.get("properties").and_then(|p| p.get(key))
            && check_metadata
            && schema_type(prop) != "string"
        {
            errs.push(FieldError::invalid(
                path::child(&path::key(&props, key), "type"),
                schema_type(prop),
                "must be string",
            ));
        }
    }
    if let Some(metadata) = s.get("properties").and_then(|p| p.get("metadata")) {
        let mpath = path::key(&props, "metadata");
        if check_metadata && schema_type(metadata) != "object" {
            errs.push(FieldError::invalid(
                path::child(&mpath, "type"),
                schema_type(metadata),
                "must be object",
            ));
        }
        if level == Level::Root && metadata_specifies_more_than_names(metadata) {
            errs.push(FieldError::forbidden(
                mpath,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if embedded && !preserve && sorted_properties(s).is_empty() {
        errs.push(FieldError::required(
            path::child(field, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Whether a root `metadata` schema restricts anything besides `name` and `generateName`.
fn metadata_specifies_more_than_names(metadata: &Value) -> bool {
    let Some(map) = metadata.as_object() else {
        return false;
    };
    map.iter().any(|(key, value)| match key.as_str() {
        "type" | "default" | "example" => false,
        "properties" => value.as_object().is_some_and(|p| {
            !p.is_empty() && !p.keys().all(|k| k == "name" || k == "generateName")
        }),
        _ => !is_zero(value),
    })
}

/// Upstream's `validateValueValidation`: the logic junctors and the pattern.
fn value_validation(
    s: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    level: Level,
    field: &str,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, sub) in schema_list(s, "anyOf").iter().enumerate() {
            nested_value_validation(
                sub,
                false,
                level,
                &path::index(&path::child(field, "anyOf"), i),
                errs,
            );
        }
    }
    for (i, sub) in schema_list(s, "allOf").iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested_value_validation(
            sub,
            skip,
            level,
            &path::index(&path::child(field, "allOf"), i),
            errs,
        );
    }
    for (i, sub) in schema_list(s, "oneOf").iter().enumerate() {
        nested_value_validation(
            sub,
            false,
            level,
            &path::index(&path::child(field, "oneOf"), i),
            errs,
        );
    }
    if let Some(not) = get(s, "not") {
        nested_value_validation(not, false, level, &path::child(field, "not"), errs);
    }
    if let Some(pattern) = s
        .get("pattern")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        && let Err(err) = compiled(pattern)
    {
        errs.push(FieldError::invalid(
            path::child(field, "pattern"),
            pattern,
            format!("must be a valid regular expression, but isn't: {err}"),
        ));
    }
}

/// Upstream's `validateNestedValueValidation`: inside anyOf/allOf/oneOf/not only value
/// validations may appear, no types, defaults or Kubernetes extensions.
fn nested_value_validation(
    v: &Value,
    skip_any_of: bool,
    level: Level,
    field: &str,
    errs: &mut Vec<FieldError>,
) {
    if !v.is_object() {
        return;
    }
    let skip_first_all_of = schema_list(v, "allOf")
        .first()
        .is_some_and(is_int_or_string_any_of);
    value_validation(v, skip_any_of, skip_first_all_of, level, field, errs);
    if let Some(items) = get(v, "items").filter(|i| i.is_object()) {
        nested_value_validation(items, false, level, &path::child(field, "items"), errs);
    }
    for (key, prop) in sorted_properties(v) {
        nested_value_validation(
            prop,
            false,
            Level::Field,
            &path::key(&path::child(field, "properties"), key),
            errs,
        );
    }
    let set = |key: &str| v.get(key).is_some_and(|x| !is_zero(x));
    let forbidden: [(&str, &str); 13] = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        ("externalDocs", "must be undefined to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        ),
        (
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        ),
    ];
    for (key, detail) in forbidden {
        let present = match key {
            "additionalProperties" | "x-kubernetes-list-type" | "x-kubernetes-map-type" => {
                get(v, key).is_some()
            }
            _ => set(key),
        };
        if present {
            errs.push(FieldError::forbidden(path::child(field, key), detail));
        }
    }
    if set("x-kubernetes-validations") {
        errs.push(FieldError::forbidden(
            path::child(field, "x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if v.get("properties")
        .and_then(|p| p.get("metadata"))
        .is_some()
    {
        errs.push(FieldError::forbidden(
            path::key(&path::child(field, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// What the OpenAPI checks carry down the schema tree.
#[derive(Clone, Default)]
struct SchemaContext {
    /// Why defaults are forbidden here, if they are.
    forbid_defaults: Option<String>,
    /// Inside `apiVersion`, `kind` or `metadata` of the root or an embedded resource.
    inside_meta: bool,
}

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// Upstream's `ValidateCustomResourceDefinitionOpenAPISchema`; CEL compilation follows in [`validate_schema`].
fn openapi_schema(
    s: &Value,
    field: &str,
    ctx: &SchemaContext,
    is_root: bool,
    errs: &mut Vec<FieldError>,
) {
    let Some(map) = s.as_object() else {
        return;
    };
    let child = |key: &str| path::child(field, key);
    let s_type = str_of(map, "type");
    if !s_type.is_empty() && !OPENAPI_V3_TYPES.contains(&s_type) {
        errs.push(FieldError::not_supported(
            child("type"),
            s_type,
            &OPENAPI_V3_TYPES,
        ));
    }
    if get(s, "default").is_some()
        && let Some(reason) = &ctx.forbid_defaults
    {
        let detail = if reason.is_empty() {
            "must not be set".to_string()
        } else {
            format!("must not be set {reason}")
        };
        errs.push(FieldError::forbidden(child("default"), detail));
    }
    for (key, detail) in [
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ] {
        if map.get(key).is_some_and(|v| !is_zero(v)) {
            errs.push(FieldError::forbidden(child(key), detail));
        }
    }
    if s_type == "null" {
        errs.push(FieldError::forbidden(
            child("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if map.get("items").is_some_and(Value::is_array) {
        errs.push(FieldError::forbidden(
            child("items"),
            "items must be a schema object and not an array",
        ));
    }
    let embedded = flag(s, "x-kubernetes-embedded-resource");
    if ctx.inside_meta && embedded {
        errs.push(FieldError::forbidden(
            child("x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    if flag(s, "uniqueItems") {
        errs.push(FieldError::forbidden(
            child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }

    let properties = sorted_properties(s);
    if let Some(additional) = get(s, "additionalProperties") {
        if !properties.is_empty() && (additional == &Value::Bool(false) || additional.is_object()) {
            errs.push(FieldError::forbidden(
                child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let mut sub = ctx.clone();
        if ctx.inside_meta {
            sub.forbid_defaults =
                Some("inside additionalProperties applying to object metadata".to_string());
        }
        openapi_schema(
            additional,
            &child("additionalProperties"),
            &sub,
            false,
            errs,
        );
    }
    for (key, prop) in &properties {
        let mut sub = ctx.clone();
        if (is_root || embedded) && ["metadata", "kind", "apiVersion"].contains(&key.as_str()) {
            sub.inside_meta = true;
            if is_root {
                sub.forbid_defaults = Some(format!("in top-level {key}"));
            }
        }
        openapi_schema(
            prop,
            &path::key(&child("properties"), key),
            &sub,
            false,
            errs,
        );
    }
    if let Some(not) = get(s, "not") {
        openapi_schema(not, &child("not"), ctx, false, errs);
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, sub) in schema_list(s, key).iter().enumerate() {
            openapi_schema(sub, &path::index(&child(key), i), ctx, false, errs);
        }
    }
    match map.get("items") {
        Some(items @ Value::Object(_)) => openapi_schema(items, &child("items"), ctx, false, errs),
        Some(Value::Array(list)) => {
            for (i, items) in list.iter().enumerate() {
                openapi_schema(items, &path::index(&child("items"), i), ctx, false, errs);
            }
        }
        _ => {}
    }

    if map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(FieldError::invalid(
            child("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    list_and_map_types(s, map, field, errs);
    validation_rules(s, field, errs);
}

fn list_and_map_types(
    s: &Value,
    map: &Map<String, Value>,
    field: &str,
    errs: &mut Vec<FieldError>,
) {
    let child = |key: &str| path::child(field, key);
    let s_type = str_of(map, "type");
    if let Some(map_type) = get(s, "x-kubernetes-map-type").map(|v| v.as_str().unwrap_or("")) {
        if s_type != "object" {
            if s_type.is_empty() {
                errs.push(FieldError::required(
                    child("type"),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            } else {
                errs.push(FieldError::invalid(
                    child("type"),
                    s_type,
                    "must be object if x-kubernetes-map-type is specified",
                ));
            }
        }
        if map_type != "atomic" && map_type != "granular" {
            errs.push(FieldError::not_supported(
                child("x-kubernetes-map-type"),
                map_type,
                &["atomic", "granular"],
            ));
        }
    }

    let list_type = get(s, "x-kubernetes-list-type").map(|v| v.as_str().unwrap_or(""));
    let items = get(s, "items").filter(|i| i.is_object());
    if let Some(list_type) = list_type {
        if s_type != "array" {
            if s_type.is_empty() {
                errs.push(FieldError::required(
                    child("type"),
                    "must be array if x-kubernetes-list-type is specified",
                ));
            } else {
                errs.push(FieldError::invalid(
                    child("type"),
                    s_type,
                    "must be array if x-kubernetes-list-type is specified",
                ));
            }
        } else if list_type == "set"
            && let Some(items) = items
        {
            let item_type = schema_type(items);
            let items_path = child("items");
            if item_type == "array" {
                if let Some(inner) = get(items, "x-kubernetes-list-type").and_then(Value::as_str)
                    && inner != "atomic"
                {
                    errs.push(FieldError::invalid(
                        path::child(&items_path, "x-kubernetes-list-type"),
                        inner,
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
            } else if item_type == "object"
                && get(items, "x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic")
            {
                let value = get(items, "x-kubernetes-list-type")
                    .cloned()
                    .unwrap_or(Value::Null);
                errs.push(FieldError::invalid(
                    path::child(&items_path, "x-kubernetes-map-type"),
                    value,
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
        }
        if !["atomic", "set", "map"].contains(&list_type) {
            errs.push(FieldError::not_supported(
                child("x-kubernetes-list-type"),
                list_type,
                &["atomic", "set", "map"],
            ));
        }
    }

    let keys: Vec<&str> = schema_list(s, "x-kubernetes-list-map-keys")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if !keys.is_empty() {
        match list_type {
            None => errs.push(FieldError::required(
                child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(lt) if lt != "map" => errs.push(FieldError::invalid(
                child("x-kubernetes-list-type"),
                lt,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(_) => {}
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(FieldError::required(
                child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match get(s, "items") {
            None => errs.push(FieldError::required(
                child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(list @ Value::Array(_)) => errs.push(FieldError::invalid(
                child("items"),
                list.clone(),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(items) => {
                let item_type = schema_type(items);
                if item_type != "object" {
                    errs.push(FieldError::invalid(
                        path::child(&child("items"), "type"),
                        item_type,
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let mut seen = Vec::new();
                    let all_keys = Value::Array(keys.iter().map(|k| Value::from(*k)).collect());
                    for key in &keys {
                        match items.get("properties").and_then(|p| p.get(*key)) {
                            Some(prop) => {
                                let t = schema_type(prop);
                                if t == "array" || t == "object" {
                                    errs.push(FieldError::invalid(
                                        path::child(&path::key(&path::child(&child("items"), "properties"), key), "type"),
                                        item_type,
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => errs.push(FieldError::invalid(
                                child("x-kubernetes-list-map-keys"),
                                all_keys.clone(),
                                "entries must all be names of item properties",
                            )),
                        }
                        if seen.contains(key) {
                            errs.push(FieldError::invalid(
                                child("x-kubernetes-list-map-keys"),
                                all_keys.clone(),
                                "must not contain duplicate entries",
                            ));
                        }
                        seen.push(*key);
                    }
                }
            }
        }
    }

    // Keys and items of set and map lists.
    if let (Some(list_type @ ("set" | "map")), Some(items)) = (list_type, items) {
        if flag(items, "nullable") {
            errs.push(FieldError::forbidden(
                path::child(&child("items"), "nullable"),
                format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
            ));
        }
        if list_type == "map" {
            let required: Vec<&str> = schema_list(items, "required")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            for key in &keys {
                let Some(prop) = items.get("properties").and_then(|p| p.get(*key)) else {
                    continue;
                };
                let ppath = path::key(&path::child(&child("items"), "properties"), key);
                if !required.contains(key) && get(prop, "default").is_none() {
                    errs.push(FieldError::required(
                        path::child(&ppath, "default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if flag(prop, "nullable") {
                    errs.push(FieldError::forbidden(
                        path::child(&ppath, "nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
}

/// The shape of `x-kubernetes-validations` rules; [`super::cel::crd_errors`] compiles them.
fn validation_rules(s: &Value, field: &str, errs: &mut Vec<FieldError>) {
    let rules_path = path::child(field, "x-kubernetes-validations");
    for (i, rule) in schema_list(s, "x-kubernetes-validations")
        .iter()
        .enumerate()
    {
        let rpath = path::index(&rules_path, i);
        let text = rule.get("rule").and_then(Value::as_str).unwrap_or("");
        let message = rule.get("message").and_then(Value::as_str).unwrap_or("");
        let trimmed_rule = text.trim();
        let trimmed_message = message.trim();
        let has_newline = |t: &str| t.contains('\n') || t.contains('\r');
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(
                path::child(&rpath, "rule"),
                "rule is not specified",
            ));
        } else if !message.is_empty() && trimmed_message.is_empty() {
            errs.push(FieldError::invalid(
                path::child(&rpath, "message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if has_newline(trimmed_message) {
            errs.push(FieldError::invalid(
                path::child(&rpath, "message"),
                message,
                "message must not contain line breaks",
            ));
        } else if has_newline(trimmed_rule) && trimmed_message.is_empty() {
            errs.push(FieldError::required(
                path::child(&rpath, "message"),
                "message must be specified if rule contains line breaks",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {
                                "size": {"type": "string", "default": "m"},
                                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["name"],
                                    "items": {"type": "object", "required": ["name"], "properties": {
                                        "name": {"type": "string"}, "port": {"x-kubernetes-int-or-string": true,
                                            "anyOf": [{"type": "integer"}, {"type": "string"}]}}}}
                            }},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                        }
                    }}
                }]
            }
        })
    }

    fn push_version(crd: &mut Value, version: Value) {
        if let Some(versions) = crd["spec"]["versions"].as_array_mut() {
            versions.push(version);
        }
    }

    fn messages(crd: &Value) -> Vec<String> {
        validate_crd(crd).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn valid_crd_passes() {
        let mut crd = widget_crd();
        crd_defaults(&mut crd);
        assert_eq!(messages(&crd), Vec::<String>::new());
    }

    #[test]
    fn defaults_fill_names_and_conversion() {
        let mut crd = json!({"spec": {"names": {"plural": "widgets", "kind": "Widget"}}});
        crd_defaults(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        let mut crd = json!({"spec": {"names": {"kind": "W", "singular": "w", "listKind": "Ws"},
            "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}}});
        crd_defaults(&mut crd);
        assert_eq!(crd["spec"]["names"]["listKind"], "Ws");
        assert_eq!(
            crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
            443
        );
    }

    #[test]
    fn name_must_match_plural_and_group() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("gadgets.example.com");
        assert_eq!(
            messages(&crd),
            [
                r#"metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group"#
            ]
        );
    }

    #[test]
    fn group_needs_a_dot() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("widgets.example");
        crd["spec"]["group"] = json!("example");
        assert_eq!(
            messages(&crd),
            [r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#]
        );
    }

    #[test]
    fn scope_and_names() {
        let mut crd = widget_crd();
        crd["spec"]["scope"] = json!("Global");
        crd["spec"]["names"]["singular"] = json!("Widget");
        crd["spec"]["names"]["listKind"] = json!("Widget");
        let errs = messages(&crd);
        assert_eq!(
            errs,
            [
                r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#,
                r#"spec.names.singular: Invalid value: "Widget": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
                r#"spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same"#,
            ]
        );
    }

    #[test]
    fn missing_names_are_required() {
        let mut crd = widget_crd();
        crd["spec"]["names"] = json!({"plural": "widgets"});
        assert_eq!(
            messages(&crd),
            [
                "spec.names.singular: Required value",
                "spec.names.kind: Required value",
                "spec.names.listKind: Required value"
            ]
        );
    }

    #[test]
    fn versions_storage_and_uniqueness() {
        let mut crd = widget_crd();
        let mut second = crd["spec"]["versions"][0].clone();
        second["storage"] = json!(true);
        push_version(&mut crd, second);
        let errs = validate_crd(&crd);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0].field, "spec.versions");
        assert!(
            errs[0]
                .to_string()
                .ends_with(": must contain unique version names")
        );
        assert!(
            errs[1]
                .to_string()
                .ends_with(": must have exactly one version marked as storage version")
        );
    }

    #[test]
    fn version_names_are_dns1035_labels() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["name"] = json!("V1");
        let errs = messages(&crd);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with(
            r#"spec.versions[0].name: Invalid value: "V1": a DNS-1035 label must consist"#
        ));
    }

    #[test]
    fn schema_is_required() {
        let mut crd = widget_crd();
        if let Some(version) = crd["spec"]["versions"][0].as_object_mut() {
            version.remove("schema");
        }
        assert_eq!(
            messages(&crd),
            ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]
        );
    }

    #[test]
    fn schema_structure() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
            "type": "object",
            "properties": {"spec": {"properties": {"a": {"type": "string"}, "list": {"type": "array"}}}}
        });
        assert_eq!(
            messages(&crd),
            [
                "spec.validation.openAPIV3Schema.properties[spec].properties[list].items: Required value: must be specified",
                "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            ]
        );
    }

    #[test]
    fn root_type_must_be_object() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
            json!({"type": "array", "items": {"type": "string"}});
        assert_eq!(
            messages(&crd),
            [
                r#"spec.validation.openAPIV3Schema.type: Invalid value: "array": only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                r#"spec.validation.openAPIV3Schema.type: Invalid value: "array": must be object at the root"#,
            ]
        );
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
            json!({"properties": {"spec": {"type": "object"}}});
        assert_eq!(
            messages(&crd),
            ["spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root"]
        );
    }

    #[test]
    fn per_version_schemas_are_reported_per_version() {
        let mut crd = widget_crd();
        let mut v2 = crd["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(false);
        v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["bad"] =
            json!({"type": "object", "uniqueItems": true});
        push_version(&mut crd, v2);
        assert_eq!(
            messages(&crd),
            [
                "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[bad].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            ]
        );
    }

    #[test]
    fn openapi_rules() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "default": {}},
                "spec": {"type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": {"type": "string"}},
                "weird": {"type": "text"},
                "tags": {"type": "array", "x-kubernetes-list-type": "list", "items": {"type": "string"}},
                "m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                    "items": {"type": "object", "properties": {"k": {"type": "string"}}}}
            }
        });
        assert_eq!(
            messages(&crd),
            [
                "spec.validation.openAPIV3Schema.properties[m].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata",
                "spec.validation.openAPIV3Schema.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
                r#"spec.validation.openAPIV3Schema.properties[tags].x-kubernetes-list-type: Unsupported value: "list": supported values: "atomic", "set", "map""#,
                r#"spec.validation.openAPIV3Schema.properties[weird].type: Unsupported value: "text": supported values: "array", "boolean", "integer", "number", "object", "string""#,
            ]
        );
    }

    #[test]
    fn nested_value_validations_must_be_structural() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["oneOf"] =
            json!([{"type": "object", "required": ["size"]}, {"properties": {"metadata": {}}}]);
        assert_eq!(
            messages(&crd),
            [
                "spec.validation.openAPIV3Schema.properties[spec].oneOf[0].type: Forbidden: must be empty to be structural",
                "spec.validation.openAPIV3Schema.properties[spec].oneOf[1].properties[metadata]: Forbidden: must not be specified in a nested context",
            ]
        );
    }

    #[test]
    fn root_metadata_may_only_restrict_names() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] =
            json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}});
        assert_eq!(messages(&crd), Vec::<String>::new());
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["metadata"] =
            json!({"type": "object", "properties": {"labels": {"type": "object"}}});
        assert_eq!(
            messages(&crd),
            [
                "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            ]
        );
    }

    #[test]
    fn bad_pattern() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"]["pattern"] = json!("(");
        let errs = messages(&crd);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with(
            r#"spec.validation.openAPIV3Schema.properties[spec].properties[size].pattern: Invalid value: "(": must be a valid regular expression, but isn't: error parsing regexp: "#
        ));
    }

    #[test]
    fn protected_groups_need_approval() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("widgets.x.k8s.io");
        crd["spec"]["group"] = json!("x.k8s.io");
        assert_eq!(
            messages(&crd),
            [
                r#"metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#
            ]
        );
    }

    #[test]
    fn conversion_webhook() {
        let mut crd = widget_crd();
        crd["spec"]["conversion"] =
            json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v2"]}});
        assert_eq!(
            messages(&crd),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                r#"spec.conversion.conversionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1"#,
            ]
        );
        crd["spec"]["conversion"] = json!({"strategy": "Other"});
        assert_eq!(
            messages(&crd),
            [
                r#"spec.conversion.strategy: Unsupported value: "Other": supported values: "None", "Webhook""#
            ]
        );
    }

    #[test]
    fn preserve_unknown_fields_is_v1_forbidden() {
        let mut crd = widget_crd();
        crd["spec"]["preserveUnknownFields"] = json!(true);
        let errs = messages(&crd);
        assert!(errs.contains(&"spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema".to_string()));
        assert!(errs.contains(&"spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead".to_string()));
    }

    #[test]
    fn printer_columns_and_scale() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Size", "type": "text", "jsonPath": "spec.size"}]);
        crd["spec"]["versions"][0]["subresources"]["scale"] = json!({"specReplicasPath": ".status.replicas", "statusReplicasPath": ".status.replicas"});
        assert_eq!(
            messages(&crd),
            [
                r#"spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec"#,
                r#"spec.additionalPrinterColumns[0].type: Invalid value: "text": must be one of boolean,date,integer,number,string"#,
                r#"spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec.size": must be a simple json path starting with ."#,
            ]
        );
    }
}
