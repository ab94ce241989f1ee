//! Object metadata: names, namespaces, labels, annotations, finalizers and owner references, with
//! the messages of upstream's `ValidateObjectMetaAccessor` and `k8s.io/apimachinery/pkg/util/validation`.

use serde_json::{Map, Value};

use super::FieldError;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Total size of all annotation keys and values (upstream's `TotalAnnotationSizeLimitB`).
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Which rule an object's `metadata.name` must follow (each resource has its own, as upstream's
/// `ValidateNameFunc`s).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NameRule {
    /// A lowercase RFC 1123 subdomain (most kinds, custom resources).
    #[default]
    Dns1123Subdomain,
    /// A subdomain of at most this many characters (CronJobs: 52, CSIDrivers: 63).
    Dns1123SubdomainMax(usize),
    /// A lowercase RFC 1123 label (Namespaces, StatefulSets).
    Dns1123Label,
    /// A DNS-1035 label: a label that starts with a letter (Services).
    Dns1035Label,
    /// Anything usable as one URL path segment (RBAC roles and bindings, among others).
    PathSegmentName,
    /// An IP address in canonical form (IPAddresses).
    IpAddress,
}

impl NameRule {
    /// Upstream's `ValidateNameFunc`: the messages for `name`; with `prefix` the value is a
    /// `generateName` that random characters will be appended to.
    pub fn check(self, name: &str, prefix: bool) -> Vec<String> {
        match self {
            NameRule::Dns1123Subdomain => {
                dns1123_subdomain_errors(&mask_trailing_dash(name, prefix))
            }
            NameRule::Dns1123SubdomainMax(max) => {
                let mut errs = dns1123_subdomain_errors(&mask_trailing_dash(name, prefix));
                if !prefix && name.len() > max {
                    errs.push(max_len_error(max));
                }
                errs
            }
            NameRule::Dns1123Label => dns1123_label_errors(&mask_trailing_dash(name, prefix)),
            NameRule::Dns1035Label => dns1035_label_errors(&mask_trailing_dash(name, prefix)),
            NameRule::PathSegmentName => path_segment_errors(name, prefix),
            NameRule::IpAddress => ip_address_errors(name),
        }
    }
}

/// Upstream's `ValidateIPAddressName`: an IPv4 or IPv6 address, written as Go prints it.
fn ip_address_errors(name: &str) -> Vec<String> {
    match name.parse::<std::net::IpAddr>() {
        Err(_) => vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into()],
        Ok(ip) if ip.to_string() != name => {
            vec![format!("must be in canonical form ({:?})", ip.to_string())]
        }
        Ok(_) => Vec::new(),
    }
}

/// A generated name gets characters appended, so a trailing dash is fine in a prefix.
fn mask_trailing_dash(name: &str, prefix: bool) -> String {
    if prefix && name.len() > 1 && name.ends_with('-') {
        // Upstream replaces the last two bytes with "a"; all of them are ASCII when it matters.
        let cut = name.len().saturating_sub(2);
        if name.is_char_boundary(cut) {
            return format!("{}a", &name[..cut]);
        }
    }
    name.to_string()
}

/// Whether `s` is a lowercase RFC 1123 subdomain of at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    dns1123_subdomain_errors(s).is_empty()
}

/// Whether `s` is a lowercase RFC 1123 label of at most 63 characters.
pub fn is_dns1123_label(s: &str) -> bool {
    dns1123_label_errors(s).is_empty()
}

/// Upstream's `MaxLenError`.
fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

/// Upstream's `RegexError`, including its quirk of a double space before " or " examples.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

fn matches_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            is_lower_alnum(first)
                && is_lower_alnum(last)
                && bytes.iter().all(|&b| is_lower_alnum(b) || b == b'-')
        }
        _ => false,
    }
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(matches_dns1123_label)
}

fn matches_dns1035_label(s: &str) -> bool {
    matches_dns1123_label(s) && s.as_bytes().first().is_some_and(|b| b.is_ascii_lowercase())
}

fn matches_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Upstream's `IsDNS1123Subdomain`.
pub fn dns1123_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(max_len_error(253));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Upstream's `IsDNS1123Label`.
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Upstream's `IsDNS1035Label`.
pub fn dns1035_label_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Upstream's `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name of at most
/// 63 characters.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Upstream's `IsValidLabelValue`: empty, or a qualified name part of at most 63 characters.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Upstream's `IsValidPathSegmentName` (or `…Prefix` for a `generateName`).
fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for illegal in [".", ".."] {
            if name == illegal {
                return vec![format!("may not be '{illegal}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|illegal| name.contains(*illegal))
        .map(|illegal| format!("may not contain '{illegal}'"))
        .collect()
}

fn str_field<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or("")
}

fn sorted_entries(value: Option<&Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = value
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Upstream's `ValidateObjectMetaAccessor` for a create (name generation already done):
/// `generateName` and `name` against `name_rule`, `namespace` required for namespaced kinds and
/// forbidden otherwise, `generation`, labels, annotations (keys and total size), owner references
/// and finalizers. A missing `metadata` is treated as empty. Label and annotation values that
/// are not strings are left to the decoder.
pub fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    name_rule: NameRule,
) -> Vec<FieldError> {
    let empty = Map::new();
    let meta = meta.as_object().unwrap_or(&empty);
    let mut errs = Vec::new();

    let generate_name = str_field(meta, "generateName");
    if !generate_name.is_empty() {
        for msg in name_rule.check(generate_name, true) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                generate_name,
                msg,
            ));
        }
    }
    let name = str_field(meta, "name");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in name_rule.check(name, false) {
            errs.push(FieldError::invalid("metadata.name", name, msg));
        }
    }
    errs.extend(validate_object_meta_common(meta, namespaced));
    errs
}

/// The checks shared by every create path after the name: namespace, generation, labels,
/// annotations, owner references, finalizers.
pub(crate) fn validate_object_meta_common(
    meta: &Map<String, Value>,
    namespaced: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let namespace = str_field(meta, "namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        } else {
            for msg in NameRule::Dns1123Label.check(namespace, false) {
                errs.push(FieldError::invalid("metadata.namespace", namespace, msg));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }

    if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation < 0
    {
        errs.push(FieldError::invalid(
            "metadata.generation",
            generation,
            "must be greater than or equal to 0",
        ));
    }

    errs.extend(validate_labels(meta.get("labels"), "metadata.labels"));
    errs.extend(validate_annotations(
        meta.get("annotations"),
        "metadata.annotations",
    ));
    errs.extend(validate_owner_references(
        meta.get("ownerReferences"),
        "metadata.ownerReferences",
    ));
    errs.extend(validate_finalizers(
        meta.get("finalizers"),
        "metadata.finalizers",
    ));
    errs
}

/// Upstream's `ValidateLabels`: qualified-name keys and label-rule values, reported on the map.
pub fn validate_labels(labels: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, value) in sorted_entries(labels) {
        for msg in qualified_name_errors(key) {
            errs.push(FieldError::invalid(field, key.as_str(), msg));
        }
        if let Some(value) = value.as_str() {
            for msg in label_value_errors(value) {
                errs.push(FieldError::invalid(field, value, msg));
            }
        }
    }
    errs
}

/// Upstream's `ValidateAnnotations`: keys are qualified names (any case), and keys plus values
/// take at most 256 KiB.
pub fn validate_annotations(annotations: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (key, value) in sorted_entries(annotations) {
        for msg in qualified_name_errors(&key.to_lowercase()) {
            errs.push(FieldError::invalid(field, key.as_str(), msg));
        }
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// Upstream's `ValidateFinalizers`: qualified names, and not both `orphan` and `foregroundDeletion`.
pub fn validate_finalizers(finalizers: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(list) = finalizers.and_then(Value::as_array) else {
        return errs;
    };
    let mut orphan = false;
    let mut foreground = false;
    for finalizer in list.iter().filter_map(Value::as_str) {
        for msg in qualified_name_errors(finalizer) {
            errs.push(FieldError::invalid(field, finalizer, msg));
        }
        orphan |= finalizer == "orphan";
        foreground |= finalizer == "foregroundDeletion";
    }
    if orphan && foreground {
        errs.push(FieldError::invalid(
            field,
            Value::Array(list.clone()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// Upstream's `ValidateOwnerReferences`: apiVersion has a version, kind, name and uid are set,
/// events cannot own anything, and at most one reference is the controller.
pub fn validate_owner_references(refs: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(list) = refs.and_then(Value::as_array) else {
        return errs;
    };
    let empty = Map::new();
    let mut first_controller: Option<String> = None;
    for reference in list {
        let r = reference.as_object().unwrap_or(&empty);
        let api_version = str_field(r, "apiVersion");
        let kind = str_field(r, "kind");
        let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
            [version] => ("", *version),
            [group, version] => (*group, *version),
            _ => ("", ""),
        };
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{field}.apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        if kind.is_empty() {
            errs.push(FieldError::invalid(
                format!("{field}.kind"),
                kind,
                "must not be empty",
            ));
        }
        let name = str_field(r, "name");
        if name.is_empty() {
            errs.push(FieldError::invalid(
                format!("{field}.name"),
                name,
                "must not be empty",
            ));
        }
        let uid = str_field(r, "uid");
        if uid.is_empty() {
            errs.push(FieldError::invalid(
                format!("{field}.uid"),
                uid,
                "must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid(
                field,
                reference.clone(),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    field,
                    Value::Array(list.clone()),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const SUBDOMAIN_MSG: &str = r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn dns_helpers() {
        assert!(is_dns1123_subdomain("example.com"));
        assert!(!is_dns1123_subdomain("Example.com"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(!is_dns1123_subdomain(&"a".repeat(254)));
        assert!(is_dns1123_label("my-name"));
        assert!(!is_dns1123_label("my.name"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label(""));
    }

    #[test]
    fn name_required() {
        let errs =
            validate_object_meta(&json!({"namespace": "default"}), true, NameRule::default());
        assert_eq!(
            messages(&errs),
            ["metadata.name: Required value: name or generateName is required"]
        );
        assert_eq!(errs[0].reason(), "FieldValueRequired");
    }

    #[test]
    fn name_must_be_subdomain() {
        let errs = validate_object_meta(
            &json!({"name": "Bad_Name", "namespace": "default"}),
            true,
            NameRule::default(),
        );
        assert_eq!(
            messages(&errs),
            [format!(
                r#"metadata.name: Invalid value: "Bad_Name": {SUBDOMAIN_MSG}"#
            )]
        );
    }

    #[test]
    fn namespace_names_are_labels() {
        let errs = validate_object_meta(&json!({"name": "a.b"}), false, NameRule::Dns1123Label);
        assert_eq!(
            messages(&errs),
            [r#"metadata.name: Invalid value: "a.b": must not contain dots"#]
        );
        let errs = validate_object_meta(&json!({"name": "A"}), false, NameRule::Dns1123Label);
        assert_eq!(
            messages(&errs),
            [
                r#"metadata.name: Invalid value: "A": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"#
            ]
        );
        let long = "a".repeat(64);
        let errs = validate_object_meta(&json!({"name": long}), false, NameRule::Dns1123Label);
        assert_eq!(
            messages(&errs),
            [format!(
                r#"metadata.name: Invalid value: "{long}": must be no more than 63 characters"#
            )]
        );
    }

    #[test]
    fn path_segment_names() {
        let errs = validate_object_meta(&json!({"name": ".."}), false, NameRule::PathSegmentName);
        assert_eq!(
            messages(&errs),
            [r#"metadata.name: Invalid value: "..": may not be '..'"#]
        );
        let errs =
            validate_object_meta(&json!({"name": "a/b%c"}), false, NameRule::PathSegmentName);
        assert_eq!(
            messages(&errs),
            [
                r#"metadata.name: Invalid value: "a/b%c": may not contain '/'"#,
                r#"metadata.name: Invalid value: "a/b%c": may not contain '%'"#
            ]
        );
        assert!(
            validate_object_meta(
                &json!({"name": "system:admin"}),
                false,
                NameRule::PathSegmentName
            )
            .is_empty()
        );
    }

    #[test]
    fn generate_name_may_end_with_dash() {
        let errs = validate_object_meta(
            &json!({"name": "demo-x1", "generateName": "demo-", "namespace": "ns"}),
            true,
            NameRule::default(),
        );
        assert!(errs.is_empty(), "{errs:?}");
        let errs = validate_object_meta(
            &json!({"name": "x", "generateName": "Demo-", "namespace": "ns"}),
            true,
            NameRule::default(),
        );
        assert_eq!(
            messages(&errs),
            [format!(
                r#"metadata.generateName: Invalid value: "Demo-": {SUBDOMAIN_MSG}"#
            )]
        );
    }

    #[test]
    fn namespace_rules() {
        let errs = validate_object_meta(&json!({"name": "x"}), true, NameRule::default());
        assert_eq!(messages(&errs), ["metadata.namespace: Required value"]);
        let errs = validate_object_meta(
            &json!({"name": "x", "namespace": "ns"}),
            false,
            NameRule::default(),
        );
        assert_eq!(
            messages(&errs),
            ["metadata.namespace: Forbidden: not allowed on this type"]
        );
        assert_eq!(errs[0].reason(), "FieldValueForbidden");
    }

    #[test]
    fn labels() {
        let meta = json!({"name": "x", "labels": {"example.com/app": "web", "bad key": "v", "ok": "-bad"}});
        let errs = validate_object_meta(&meta, false, NameRule::default());
        assert_eq!(
            messages(&errs),
            [
                r#"metadata.labels: Invalid value: "bad key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"#,
                r#"metadata.labels: Invalid value: "-bad": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#,
            ]
        );
        let long = "v".repeat(64);
        let errs = validate_object_meta(
            &json!({"name": "x", "labels": {"k": long}}),
            false,
            NameRule::default(),
        );
        assert_eq!(
            messages(&errs),
            [format!(
                r#"metadata.labels: Invalid value: "{long}": must be no more than 63 characters"#
            )]
        );
        let errs = validate_object_meta(
            &json!({"name": "x", "labels": {"a/b/c": ""}}),
            false,
            NameRule::default(),
        );
        assert_eq!(
            messages(&errs),
            [
                r#"metadata.labels: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#
            ]
        );
        let errs = validate_object_meta(
            &json!({"name": "x", "labels": {"/a": ""}}),
            false,
            NameRule::default(),
        );
        assert_eq!(
            messages(&errs),
            [r#"metadata.labels: Invalid value: "/a": prefix part must be non-empty"#]
        );
    }

    #[test]
    fn annotations() {
        let meta = json!({"name": "x", "annotations": {"Example.COM/Key": "v", "kubectl.kubernetes.io/last-applied-configuration": "{}"}});
        assert!(validate_object_meta(&meta, false, NameRule::default()).is_empty());
        let meta =
            json!({"name": "x", "annotations": {"big": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)}});
        let errs = validate_object_meta(&meta, false, NameRule::default());
        assert_eq!(
            messages(&errs),
            ["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        assert_eq!(errs[0].reason(), "FieldValueTooLong");
    }

    #[test]
    fn finalizers() {
        let meta = json!({"name": "x", "finalizers": ["example.com/cleanup", "orphan", "foregroundDeletion", "bad finalizer"]});
        let errs = validate_object_meta(&meta, false, NameRule::default());
        assert_eq!(errs.len(), 2);
        assert!(errs[0].to_string().starts_with(
            r#"metadata.finalizers: Invalid value: "bad finalizer": name part must consist"#
        ));
        assert_eq!(
            errs[1].to_string(),
            r#"metadata.finalizers: Invalid value: ["example.com/cleanup","orphan","foregroundDeletion","bad finalizer"]: finalizer orphan and foregroundDeletion cannot be both set"#
        );
    }

    #[test]
    fn owner_references() {
        let meta = json!({"name": "x", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "1", "controller": true},
            {"apiVersion": "", "kind": "", "name": "", "uid": ""},
        ]});
        let errs = validate_object_meta(&meta, false, NameRule::default());
        assert_eq!(
            messages(&errs),
            [
                r#"metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty"#,
                r#"metadata.ownerReferences.kind: Invalid value: "": must not be empty"#,
                r#"metadata.ownerReferences.name: Invalid value: "": must not be empty"#,
                r#"metadata.ownerReferences.uid: Invalid value: "": must not be empty"#,
            ]
        );
        let meta = json!({"name": "x", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"},
            {"apiVersion": "apps/v1", "kind": "A", "name": "a", "uid": "2", "controller": true},
            {"apiVersion": "apps/v1", "kind": "B", "name": "b", "uid": "3", "controller": true},
        ]});
        let errs = validate_object_meta(&meta, false, NameRule::default());
        assert_eq!(errs.len(), 2);
        assert!(
            errs[0]
                .to_string()
                .ends_with("/v1, Kind=Event is disallowed from being an owner")
        );
        assert!(errs[1].to_string().ends_with(r#"Only one reference can have Controller set to true. Found "true" in references for A/a and B/b"#));
    }

    #[test]
    fn negative_generation() {
        let errs = validate_object_meta(
            &json!({"name": "x", "generation": -1}),
            false,
            NameRule::default(),
        );
        assert_eq!(
            messages(&errs),
            ["metadata.generation: Invalid value: -1: must be greater than or equal to 0"]
        );
    }

    #[test]
    fn dns1035_messages() {
        assert_eq!(
            dns1035_label_errors("1abc"),
            [
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }
}
