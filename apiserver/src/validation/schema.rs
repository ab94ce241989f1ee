//! Validation of a custom resource against its CRD's `openAPIV3Schema`, with the messages of
//! kube-openapi's validator as apiextensions-apiserver converts them to field errors, followed by
//! the uniqueness checks of `x-kubernetes-list-type: set` and `map` lists.
//!
//! Paths are kube-openapi's (`spec.items[0].name`); the custom resource's `metadata` is checked
//! separately by [`super::meta`]. Like upstream, only the string formats Kubernetes supports are
//! checked (`int32`, `int64`, `float`, `double` carry no range check), and anyOf/oneOf failures
//! add the errors of the closest alternative.

use std::collections::BTreeMap;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use regex::Regex;
use serde_json::{Map, Value};

use super::FieldError;
use super::render::{float_v, go_json, go_quote};

/// Where a value is, in kube-openapi's form (`spec.items[0].name`), as a chain of borrowed
/// steps on the stack: rendered only when an error names it, never for a valid value.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    /// `parent.name`, or `name` under an empty parent.
    Field(&'a Path<'a>, &'a str),
    /// `parent.name` always (kube-openapi's form for additional properties).
    Dotted(&'a Path<'a>, &'a str),
    /// `parent[key]`.
    Key(&'a Path<'a>, &'a str),
    /// `parent[index]`.
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn is_empty(&self) -> bool {
        match self {
            Path::Root => true,
            Path::Field(parent, name) => parent.is_empty() && name.is_empty(),
            _ => false,
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Field(parent, name) if parent.is_empty() => f.write_str(name),
            Path::Field(parent, name) | Path::Dotted(parent, name) => write!(f, "{parent}.{name}"),
            Path::Key(parent, key) => write!(f, "{parent}[{key}]"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// Validates `obj` against `schema` (a CRD version's `openAPIV3Schema`). Non-nullable `null`s
/// and unknown fields should have been removed first (see [`super::structural`]).
///
/// On an update, `old` is the stored object and validation ratchets as kube-apiserver's does for
/// custom resources (KEP-4008): a property whose value is unchanged is not validated again, so
/// an object that became invalid under a newer schema can still be updated elsewhere, and a
/// status write does not pay for validating an unchanged spec.
///
/// This compiles `schema` for one use; a server validating many objects against one schema
/// takes its compiled form from [`compiled_for`] and calls [`Schema::validate`].
pub fn validate(obj: &Value, old: Option<&Value>, schema: &Value) -> Vec<FieldError> {
    Schema::compile(schema).validate(obj, old)
}

/// One node of a schema with its keywords read once: a validation walks these instead of
/// looking each keyword up in the schema's JSON at every value it checks.
#[derive(Debug, Default)]
pub struct Schema {
    /// Whether the node is a JSON object at all (anything else validates everything).
    object: bool,
    /// The declared types; `x-kubernetes-int-or-string` gives integer and string.
    types: Vec<String>,
    nullable: bool,
    /// A string format Kubernetes validates, as written and without its dashes (`date-time`,
    /// `datetime`).
    format: Option<(String, String)>,
    any_of: Vec<Schema>,
    one_of: Vec<Schema>,
    all_of: Vec<Schema>,
    not: Option<Box<Schema>>,
    max_length: Option<u64>,
    min_length: Option<u64>,
    /// The pattern as written, and its regular expression or why it does not compile.
    pattern: Option<(String, Result<Arc<Regex>, String>)>,
    multiple_of: Option<f64>,
    maximum: Option<f64>,
    exclusive_maximum: bool,
    minimum: Option<f64>,
    exclusive_minimum: bool,
    /// `items`, when it is a schema.
    items: Option<Box<Schema>>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    enum_values: Option<Vec<Value>>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    /// `properties`, by name (sorted, as errors are reported).
    properties: BTreeMap<String, Schema>,
    additional: Additional,
    required: Vec<String>,
    list_type: Option<String>,
    list_map_keys: Vec<String>,
    /// `x-kubernetes-preserve-unknown-fields`.
    preserve_unknown: bool,
    /// `x-kubernetes-embedded-resource`.
    embedded: bool,
    /// `default`, unless it is null.
    default: Option<Value>,
    /// Whether a schema below this one (through `properties`, `additionalProperties` or
    /// `items`) has a default: defaulting goes no further down where none has.
    defaults_below: bool,
    /// Whether this schema or one below it is a list of type `set` or `map`: the checks of
    /// such lists go no further down where none is.
    keyed_lists: bool,
}

/// What `additionalProperties` says of the properties `properties` does not name.
#[derive(Debug, Default)]
enum Additional {
    /// Not set (or null).
    #[default]
    Absent,
    /// `false`: forbidden.
    Forbidden,
    /// A schema they follow.
    Schema(Box<Schema>),
    /// Set to anything else (`true`): allowed, unchecked.
    Allowed,
}

impl Schema {
    /// Reads the keywords of `schema` and compiles its sub-schemas and pattern.
    pub fn compile(schema: &Value) -> Schema {
        let Some(s) = schema.as_object() else {
            return Schema::default();
        };
        let u64_of = |key: &str| s.get(key).and_then(Value::as_u64);
        let f64_of = |key: &str| s.get(key).and_then(Value::as_f64);
        let flag = |key: &str| s.get(key).and_then(Value::as_bool) == Some(true);
        let all = |key: &str| {
            s.get(key)
                .and_then(Value::as_array)
                .map_or_else(Vec::new, |subs| subs.iter().map(Schema::compile).collect())
        };
        let strings = |key: &str| {
            s.get(key)
                .and_then(Value::as_array)
                .map_or_else(Vec::new, |list| {
                    list.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
        };
        let schema = Schema {
            object: true,
            types: schema_types(s).into_iter().map(str::to_owned).collect(),
            nullable: flag("nullable"),
            format: supported_format(s).map(|f| (f.to_owned(), f.replace('-', ""))),
            any_of: all("anyOf"),
            one_of: all("oneOf"),
            all_of: all("allOf"),
            not: s.get("not").map(|not| Box::new(Schema::compile(not))),
            max_length: u64_of("maxLength"),
            min_length: u64_of("minLength"),
            pattern: s
                .get("pattern")
                .and_then(Value::as_str)
                .map(|pattern| (pattern.to_owned(), compiled(pattern))),
            multiple_of: f64_of("multipleOf"),
            maximum: f64_of("maximum"),
            exclusive_maximum: flag("exclusiveMaximum"),
            minimum: f64_of("minimum"),
            exclusive_minimum: flag("exclusiveMinimum"),
            items: s
                .get("items")
                .filter(|items| items.is_object())
                .map(|items| Box::new(Schema::compile(items))),
            min_items: u64_of("minItems"),
            max_items: u64_of("maxItems"),
            unique_items: flag("uniqueItems"),
            enum_values: s.get("enum").and_then(Value::as_array).cloned(),
            min_properties: u64_of("minProperties"),
            max_properties: u64_of("maxProperties"),
            properties: s
                .get("properties")
                .and_then(Value::as_object)
                .map(|properties| {
                    properties
                        .iter()
                        .map(|(name, sub)| (name.clone(), Schema::compile(sub)))
                        .collect()
                })
                .unwrap_or_default(),
            additional: match s.get("additionalProperties") {
                None | Some(Value::Null) => Additional::Absent,
                Some(Value::Bool(false)) => Additional::Forbidden,
                Some(sub @ Value::Object(_)) => Additional::Schema(Box::new(Schema::compile(sub))),
                Some(_) => Additional::Allowed,
            },
            required: strings("required"),
            list_type: s
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(str::to_owned),
            list_map_keys: strings("x-kubernetes-list-map-keys"),
            preserve_unknown: flag("x-kubernetes-preserve-unknown-fields"),
            embedded: flag("x-kubernetes-embedded-resource"),
            default: s.get("default").filter(|v| !v.is_null()).cloned(),
            defaults_below: false,
            keyed_lists: false,
        };
        schema.with_summaries()
    }

    /// The schema with what lies below it summed up ([`Schema::defaults_below`] and
    /// [`Schema::keyed_lists`]), from its sub-schemas' own summaries.
    fn with_summaries(mut self) -> Schema {
        let below: Vec<&Schema> = self
            .properties
            .values()
            .chain(self.additional_schema())
            .chain(self.items.as_deref())
            .collect();
        let defaults_below = below
            .iter()
            .any(|sub| sub.default.is_some() || sub.defaults_below);
        let keyed_lists = matches!(self.list_type.as_deref(), Some("set" | "map"))
            || below.iter().any(|sub| sub.keyed_lists);
        self.defaults_below = defaults_below;
        self.keyed_lists = keyed_lists;
        self
    }

    /// Whether a schema below this one has a default (see [`Schema::defaults_below`]).
    pub(crate) fn has_defaults_below(&self) -> bool {
        self.defaults_below
    }

    /// Validates `obj` (and ratchets against `old`) as [`validate`] does.
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errs = validate_node(obj, old, self, &Path::Root);
        errs.extend(list_sets_and_maps(obj, old, self, &Path::Root));
        errs
    }

    /// The schema of property `name`, when `properties` names it.
    pub(crate) fn property(&self, name: &str) -> Option<&Schema> {
        self.properties.get(name)
    }

    /// The schema for map values `properties` does not name: `Some(None)` when
    /// `additionalProperties` is set without a schema (such values are unknown to pruning).
    pub(crate) fn additional_properties(&self) -> Option<Option<&Schema>> {
        match &self.additional {
            Additional::Absent => None,
            Additional::Schema(sub) => Some(Some(sub)),
            Additional::Forbidden | Additional::Allowed => Some(None),
        }
    }

    /// The schema of array items.
    pub(crate) fn items(&self) -> Option<&Schema> {
        self.items.as_deref()
    }

    pub(crate) fn preserves_unknown_fields(&self) -> bool {
        self.preserve_unknown
    }

    pub(crate) fn is_embedded_resource(&self) -> bool {
        self.embedded
    }

    pub(crate) fn is_nullable(&self) -> bool {
        self.nullable
    }

    /// The schema's `default`, if it has a non-null one.
    pub(crate) fn default_value(&self) -> Option<&Value> {
        self.default.as_ref()
    }

    /// The properties `properties` names, with their schemas, by name.
    pub(crate) fn properties(&self) -> impl Iterator<Item = (&String, &Schema)> {
        self.properties.iter()
    }

    fn has_type(&self, name: &str) -> bool {
        self.types.iter().any(|t| t == name)
    }

    fn additional_schema(&self) -> Option<&Schema> {
        match &self.additional {
            Additional::Schema(sub) => Some(sub),
            _ => None,
        }
    }
}

/// How many compiled schemas are kept before the cache is emptied.
const SCHEMAS_CAPACITY: usize = 1024;

/// Compiled schemas by the address of the schema they were compiled from. Each entry holds a
/// weak reference to that schema, which keeps its allocation: no other schema can take that
/// address while the entry stands, so an address found is the same schema.
static SCHEMAS: LazyLock<Mutex<HashMap<usize, CompiledEntry>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The schema a compiled form was made from, and that form.
type CompiledEntry = (Weak<Value>, Arc<Schema>);

/// The compiled form of `schema` (a CRD version's or a built-in kind's), compiled on its first
/// use and kept while the schema is: a CRD update that replaces a version's schema compiles
/// the new one on its first write.
pub fn compiled_for(schema: &Arc<Value>) -> Arc<Schema> {
    let key = Arc::as_ptr(schema).addr();
    let lock = || {
        SCHEMAS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    if let Some((_, compiled)) = lock().get(&key) {
        return compiled.clone();
    }
    let compiled = Arc::new(Schema::compile(schema));
    let mut cache = lock();
    // Schemas a CRD change replaced go with the next compile (it rebuilds every CRD's).
    cache.retain(|_, (seen, _)| seen.strong_count() > 0);
    if cache.len() >= SCHEMAS_CAPACITY {
        cache.clear();
    }
    cache.insert(key, (Arc::downgrade(schema), compiled.clone()));
    compiled
}

fn old_child<'a>(old: Option<&'a Value>, name: &str) -> Option<&'a Value> {
    old.and_then(|o| o.get(name))
}

/// The field an error about the value at kube-openapi path `name` is reported on.
fn error_field(name: impl fmt::Display) -> String {
    let name = name.to_string();
    let trimmed = name.strip_prefix('.').unwrap_or(&name);
    if trimmed.is_empty() {
        "<nil>".to_string()
    } else {
        trimmed.to_string()
    }
}

/// An error that is not about one value (anyOf, oneOf, allOf, not): reported without a field.
fn composite_error(message: String) -> FieldError {
    FieldError::invalid("<nil>", "", message)
}

/// The JSON type of a value as kube-openapi names it.
fn json_type(data: &Value) -> &'static str {
    match data {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The declared types of a schema; `x-kubernetes-int-or-string` means integer or string.
fn schema_types(schema: &Map<String, Value>) -> Vec<&str> {
    if schema
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return vec!["integer", "string"];
    }
    match schema.get("type").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => vec![t],
        _ => Vec::new(),
    }
}

/// String formats Kubernetes validates; any other format is ignored, as upstream strips it.
const SUPPORTED_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

fn supported_format(schema: &Map<String, Value>) -> Option<&str> {
    let format = schema.get("format").and_then(Value::as_str)?;
    let normalized = format.replace('-', "");
    SUPPORTED_FORMATS
        .contains(&normalized.as_str())
        .then_some(format)
}

fn as_f64(data: &Value) -> Option<f64> {
    data.as_f64()
}

fn is_whole(f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0
}

fn validate_node(
    data: &Value,
    old: Option<&Value>,
    s: &Schema,
    path: &Path<'_>,
) -> Vec<FieldError> {
    if !s.object {
        return Vec::new();
    }
    let mut errs = Vec::new();

    if data.is_null() {
        if !s.types.is_empty() && !s.nullable {
            errs.push(type_error(path, &s.types.join(","), "null"));
        }
        errs.extend(check_enum(data, s, path));
        return errs;
    }

    // Type.
    let data_type = json_type(data);
    let format = s.format.as_ref();
    let format_only = format.is_some()
        && !(s.has_type("number") || s.has_type("integer"))
        && matches!(data, Value::String(_) | Value::Array(_));
    if !s.types.is_empty() && !format_only {
        let float_int =
            data_type == "number" && as_f64(data).is_some_and(is_whole) && s.has_type("integer");
        let int_float = data_type == "integer" && s.has_type("number");
        if !(s.has_type(data_type) || float_int || int_float) {
            errs.push(type_error(path, &s.types.join(","), data_type));
        }
    }

    errs.extend(check_combinators(data, s, path));

    match data {
        Value::String(text) => {
            errs.extend(check_string(text, s, path));
            if let Some((format, normalized)) = format
                && !format_valid(normalized, text)
            {
                errs.push(FieldError::type_invalid(
                    error_field(path),
                    text.as_str(),
                    format!(
                        "{path} in body must be of type {format}: {}",
                        go_quote(text)
                    ),
                ));
            }
        }
        Value::Number(_) => errs.extend(check_number(data, s, path)),
        Value::Array(items) => errs.extend(check_array(items, s, path)),
        _ => {}
    }

    errs.extend(check_enum(data, s, path));

    if let Value::Object(map) = data {
        errs.extend(check_object(map, old, s, path));
    }
    errs
}

fn type_error(path: &Path<'_>, expected: &str, actual: &str) -> FieldError {
    FieldError::type_invalid(
        error_field(path),
        actual,
        format!(
            "{path} in body must be of type {expected}: {}",
            go_quote(actual)
        ),
    )
}

fn check_combinators(data: &Value, s: &Schema, path: &Path<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if s.any_of.is_empty() && s.one_of.is_empty() && s.all_of.is_empty() && s.not.is_none() {
        return errs;
    }
    let quoted = go_quote(&path.to_string());

    if !s.any_of.is_empty() {
        let results: Vec<Vec<FieldError>> = s
            .any_of
            .iter()
            .map(|sub| validate_node(data, None, sub, path))
            .collect();
        if !results.iter().any(Vec::is_empty) {
            errs.push(composite_error(format!(
                "{quoted} must validate at least one schema (anyOf)"
            )));
            if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                errs.extend(best);
            }
        }
    }

    if !s.one_of.is_empty() {
        let results: Vec<Vec<FieldError>> = s
            .one_of
            .iter()
            .map(|sub| validate_node(data, None, sub, path))
            .collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        if valid != 1 {
            let detail = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            errs.push(composite_error(format!(
                "{quoted} must validate one and only one schema (oneOf). {detail}"
            )));
            if valid == 0
                && let Some(best) = results.into_iter().min_by_key(Vec::len)
            {
                errs.extend(best);
            }
        }
    }

    if !s.all_of.is_empty() {
        let mut valid = 0;
        for sub in &s.all_of {
            let result = validate_node(data, None, sub, path);
            if result.is_empty() {
                valid += 1;
            }
            errs.extend(result);
        }
        if valid != s.all_of.len() {
            let detail = if valid == 0 { ". None validated" } else { "" };
            errs.push(composite_error(format!(
                "{quoted} must validate all the schemas (allOf){detail}"
            )));
        }
    }

    if let Some(not) = &s.not
        && validate_node(data, None, not, path).is_empty()
    {
        errs.push(composite_error(format!(
            "{quoted} must not validate the schema (not)"
        )));
    }
    errs
}

fn check_string(text: &str, s: &Schema, path: &Path<'_>) -> Option<FieldError> {
    // Counted only when a length is limited, and then only when the bytes could break the limit
    // (a string has at most as many characters as bytes).
    let chars = || text.chars().count() as u64;
    if let Some(max) = s.max_length
        && text.len() as u64 > max
        && chars() > max
    {
        return Some(FieldError::too_long(error_field(path), max as usize));
    }
    if let Some(min) = s.min_length
        && chars() < min
    {
        return Some(FieldError::invalid(
            error_field(path),
            text,
            format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some((pattern, re)) = &s.pattern {
        match re {
            Ok(re) if re.is_match(text) => {}
            Ok(_) => {
                return Some(FieldError::invalid(
                    error_field(path),
                    text,
                    format!("{path} in body should match '{pattern}'"),
                ));
            }
            Err(err) => {
                return Some(FieldError::invalid(
                    error_field(path),
                    text,
                    format!(
                        "{path} in body should match '{pattern}, but pattern is invalid: {err}'"
                    ),
                ));
            }
        }
    }
    None
}

/// Compiled patterns, shared across requests (schemas repeat); cleared when it grows large.
/// Shared behind an `Arc`, not cloned: a cloned `Regex` gets a pool of its own, and its first
/// match builds a new search cache, which costs more than most matches.
static PATTERNS: LazyLock<Mutex<HashMap<String, Arc<Regex>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// A regular expression for a schema `pattern`, compiled once.
pub(crate) fn compiled(pattern: &str) -> Result<Arc<Regex>, String> {
    let mut cache = PATTERNS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(re) = cache.get(pattern) {
        return Ok(re.clone());
    }
    let re = Arc::new(Regex::new(pattern).map_err(|err| regex_error_summary(&err))?);
    if cache.len() >= 1024 {
        cache.clear();
    }
    cache.insert(pattern.to_string(), re.clone());
    Ok(re)
}

/// A one-line description of a pattern compile error, in the style of Go's regexp errors.
pub(crate) fn regex_error_summary(err: &regex::Error) -> String {
    let text = err.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid pattern");
    let detail = last.trim().trim_start_matches("error:").trim();
    format!("error parsing regexp: {detail}")
}

/// A bound as Go prints it: truncated to an integer when the value is an integer.
fn bound_text(bound: f64, data_is_int: bool) -> String {
    if data_is_int {
        (bound.trunc() as i64).to_string()
    } else {
        float_v(bound)
    }
}

fn check_number(data: &Value, s: &Schema, path: &Path<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(value) = as_f64(data) else {
        return errs;
    };
    let is_int = data.is_i64() || data.is_u64();

    if let Some(factor) = s.multiple_of
        && factor > 0.0
    {
        let ok = if is_int && is_whole(factor) {
            (value as i64) % (factor as i64).max(1) == 0
        } else {
            let mult = if factor < 1.0 {
                1.0 / factor * value
            } else {
                value / factor
            };
            is_whole(mult)
        };
        if !ok {
            errs.push(FieldError::invalid(
                error_field(path),
                data.clone(),
                format!(
                    "{path} in body should be a multiple of {}",
                    bound_text(factor, is_int)
                ),
            ));
        }
    }
    if let Some(max) = s.maximum {
        let exclusive = s.exclusive_maximum;
        let (v, m) = if is_int {
            (value.trunc(), max.trunc())
        } else {
            (value, max)
        };
        if (!exclusive && v > m) || (exclusive && v >= m) {
            let relation = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            errs.push(FieldError::invalid(
                error_field(path),
                data.clone(),
                format!(
                    "{path} in body should be {relation} {}",
                    bound_text(max, is_int)
                ),
            ));
        }
    }
    if let Some(min) = s.minimum {
        let exclusive = s.exclusive_minimum;
        let (v, m) = if is_int {
            (value.trunc(), min.trunc())
        } else {
            (value, min)
        };
        if (!exclusive && v < m) || (exclusive && v <= m) {
            let relation = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            errs.push(FieldError::invalid(
                error_field(path),
                data.clone(),
                format!(
                    "{path} in body should be {relation} {}",
                    bound_text(min, is_int)
                ),
            ));
        }
    }
    errs
}

fn check_array(items: &[Value], s: &Schema, path: &Path<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(item_schema) = &s.items {
        for (i, item) in items.iter().enumerate() {
            errs.extend(validate_node(
                item,
                None,
                item_schema,
                &Path::Index(path, i),
            ));
        }
    }
    let size = items.len() as u64;
    if let Some(min) = s.min_items
        && size < min
    {
        errs.push(FieldError::invalid(
            error_field(path),
            size,
            format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = s.max_items
        && size > max
    {
        errs.push(FieldError::too_many(
            error_field(path),
            Some(size),
            Some(max),
        ));
    }
    if s.unique_items {
        let mut seen = HashSet::new();
        if !items.iter().all(|item| seen.insert(go_json(item))) {
            errs.push(FieldError::invalid(
                error_field(path),
                "",
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
    }
    errs
}

fn enum_equal(data: &Value, allowed: &Value) -> bool {
    match (data, allowed) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| enum_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| enum_equal(v, w)))
        }
        _ => data == allowed,
    }
}

fn check_enum(data: &Value, s: &Schema, path: &Path<'_>) -> Option<FieldError> {
    let allowed = s.enum_values.as_ref()?;
    if allowed.is_empty() || allowed.iter().any(|a| enum_equal(data, a)) {
        return None;
    }
    let values: Vec<String> = allowed
        .iter()
        .map(|a| match a {
            Value::String(text) => text.clone(),
            other => go_json(other),
        })
        .collect();
    Some(FieldError::not_supported(
        error_field(path),
        data.clone(),
        &values,
    ))
}

fn check_object(
    map: &Map<String, Value>,
    old: Option<&Value>,
    s: &Schema,
    path: &Path<'_>,
) -> Vec<FieldError> {
    let count = map.len() as u64;
    if let Some(min) = s.min_properties
        && count < min
    {
        return vec![FieldError::invalid(
            error_field(path),
            count,
            format!("{path} in body should have at least {min} properties"),
        )];
    }
    if let Some(max) = s.max_properties
        && count > max
    {
        return vec![FieldError::too_many(
            error_field(path),
            Some(count),
            Some(max),
        )];
    }

    let mut errs = Vec::new();
    let unchanged = |key: &str, value: &Value| old_child(old, key) == Some(value);
    let unlisted = || {
        let mut keys: Vec<&String> = map
            .keys()
            .filter(|key| !s.properties.contains_key(key.as_str()))
            .collect();
        keys.sort();
        keys
    };
    match &s.additional {
        Additional::Forbidden => {
            for key in unlisted() {
                errs.push(FieldError::invalid(
                    error_field(path),
                    key.as_str(),
                    format!("{path}.{key} in body is a forbidden property"),
                ));
            }
        }
        Additional::Schema(additional) => {
            for key in unlisted() {
                let value = &map[key.as_str()];
                if !unchanged(key, value) {
                    errs.extend(validate_node(
                        value,
                        old_child(old, key),
                        additional,
                        &Path::Dotted(path, key),
                    ));
                }
            }
        }
        Additional::Absent | Additional::Allowed => {}
    }

    for (name, sub) in &s.properties {
        if let Some(value) = map.get(name.as_str())
            && !unchanged(name, value)
        {
            errs.extend(validate_node(
                value,
                old_child(old, name),
                sub,
                &Path::Field(path, name),
            ));
        }
    }

    for required in &s.required {
        if !map.contains_key(required.as_str()) {
            errs.push(FieldError::required(
                error_field(Path::Dotted(path, required)),
                "",
            ));
        }
    }
    errs
}

/// Whether `text` is a valid value of the (supported) string `format`, its dashes taken out.
fn format_valid(format: &str, text: &str) -> bool {
    match format {
        "datetime" => is_date_time(text),
        "date" => is_date(text),
        "byte" => is_base64(text),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => is_uuid(text),
        "ipv4" => text.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok(),
        "cidr" => is_cidr(text),
        _ => true,
    }
}

fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return false;
    };
    if year.len() != 4 || month.len() != 2 || day.len() != 2 {
        return false;
    }
    let (Ok(y), Ok(m), Ok(d)) = (
        year.parse::<u32>(),
        month.parse::<u32>(),
        day.parse::<u32>(),
    ) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// go-openapi's `IsDateTime`: a full date, `T`, `hh:mm:ss`, optional fraction, then `Z` or an
/// offset (case-insensitive).
fn is_date_time(text: &str) -> bool {
    let mut parts = text.split(['t', 'T']);
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    is_date(date) && is_time(time)
}

/// go-openapi's time pattern, with hours, minutes and seconds in range:
/// `^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?([zZ]|([+-][0-9]{2}:[0-9]{2}))$`
/// (its `.` is any character but a newline). Matched
/// by hand: the pattern's `.` compiles into an automaton of every UTF-8 sequence, which took a
/// few hundred KiB at every server's first write.
fn is_time(time: &str) -> bool {
    let b = time.as_bytes();
    // `hh:mm:ss` as bytes; a pair of digits is in range when it is at most the bound.
    let pair = |i: usize, max: &[u8; 2]| {
        b[i].is_ascii_digit() && b[i + 1].is_ascii_digit() && b[i..i + 2] <= max[..]
    };
    if b.len() < 9
        || b[2] != b':'
        || b[5] != b':'
        || !pair(0, b"23")
        || !pair(3, b"59")
        || !pair(6, b"59")
    {
        return false;
    }
    let zone = |z: &[u8]| {
        matches!(z, b"z" | b"Z")
            || matches!(z, [b'+' | b'-', h1, h2, b':', m1, m2]
                if [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit()))
    };
    let rest = &time[8..];
    if zone(rest.as_bytes()) {
        return true;
    }
    // A fraction: one character but a newline, then digits up to the zone (which starts with
    // no digit, so the longest run is the only one to try).
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) if c != '\n' => {
            let after = chars.as_str().as_bytes();
            let run = after.iter().take_while(|d| d.is_ascii_digit()).count();
            run > 0 && zone(&after[run..])
        }
        _ => false,
    }
}

fn is_base64(text: &str) -> bool {
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return false;
    }
    let padding = bytes.iter().rev().take_while(|&&b| b == b'=').count();
    if padding > 2 {
        return false;
    }
    bytes[..bytes.len() - padding]
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

fn is_uuid(text: &str) -> bool {
    let hex: String = text.chars().filter(|&c| c != '-').collect();
    let dashes = text.len() - hex.len();
    hex.len() == 32 && hex.chars().all(|c| c.is_ascii_hexdigit()) && (dashes == 0 || dashes == 4)
}

fn is_cidr(text: &str) -> bool {
    let Some((addr, bits)) = text.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match addr.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Upstream's `ValidateListSetsAndMaps`: items of `set` lists and keys of `map` lists are unique.
fn list_sets_and_maps(
    data: &Value,
    old: Option<&Value>,
    s: &Schema,
    path: &Path<'_>,
) -> Vec<FieldError> {
    let Some(map) = data.as_object().filter(|_| s.object && s.keyed_lists) else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    let mut keys: Vec<&String> = map
        .iter()
        .filter(|(key, value)| old_child(old, key) != Some(*value))
        .map(|(key, _)| key)
        .collect();
    keys.sort();
    if let Some(additional) = s.additional_schema() {
        for key in &keys {
            errs.extend(list_value(
                &map[key.as_str()],
                old_child(old, key),
                additional,
                &Path::Key(path, key),
            ));
        }
    }
    for key in &keys {
        if let Some(sub) = s.properties.get(key.as_str()) {
            errs.extend(list_value(
                &map[key.as_str()],
                old_child(old, key),
                sub,
                &Path::Field(path, key),
            ));
        }
    }
    errs
}

fn list_value(data: &Value, old: Option<&Value>, s: &Schema, path: &Path<'_>) -> Vec<FieldError> {
    if !s.keyed_lists {
        return Vec::new();
    }
    match data {
        Value::Array(items) => list_array(items, s, path),
        Value::Object(_) => list_sets_and_maps(data, old, s, path),
        _ => Vec::new(),
    }
}

fn list_array(items: &[Value], s: &Schema, path: &Path<'_>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match s.list_type.as_deref() {
        Some("set") => {
            for i in repeated(items.iter().map(Identity::of)) {
                errs.push(FieldError::duplicate(
                    Path::Index(path, i).to_string(),
                    items[i].clone(),
                ));
            }
        }
        Some("map") => errs.extend(list_map(items, &s.list_map_keys, path)),
        _ => {}
    }
    if let Some(item_schema) = &s.items {
        for (i, item) in items.iter().enumerate() {
            errs.extend(list_value(item, None, item_schema, &Path::Index(path, i)));
        }
    }
    errs
}

/// Identity of a set element or a map list key: a string by itself (the common case, kept
/// without copying it, as this runs on every write of a changed list); compound values by
/// their JSON and other scalars by type and value.
#[derive(PartialEq, Eq, Hash)]
enum Identity<'a> {
    Str(&'a str),
    /// A map list item without its key field.
    Unspecified,
    Other(String),
}

impl<'a> Identity<'a> {
    fn of(value: &'a Value) -> Self {
        match value {
            Value::String(s) => Identity::Str(s),
            Value::Array(_) | Value::Object(_) => Identity::Other(format!("c{}", go_json(value))),
            other => Identity::Other(format!("s{other:?}")),
        }
    }
}

/// Indices of the second occurrence of each repeated key.
fn repeated<K: Eq + std::hash::Hash>(keys: impl Iterator<Item = K>) -> Vec<usize> {
    /// Up to this many keys, comparing each with those before it is cheaper than hashing.
    const SCAN: usize = 16;
    let keys: Vec<K> = keys.collect();
    if keys.len() <= SCAN {
        return (0..keys.len())
            .filter(|&i| keys[..i].iter().filter(|k| **k == keys[i]).count() == 1)
            .collect();
    }
    let mut counts: HashMap<&K, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let count = counts.entry(key).or_insert(0);
        *count += 1;
        if *count == 2 {
            out.push(i);
        }
    }
    out
}

fn list_map(items: &[Value], key_fields: &[String], path: &Path<'_>) -> Vec<FieldError> {
    if let Some((i, item)) = items
        .iter()
        .enumerate()
        .find(|(_, item)| !item.is_null() && !item.is_object())
    {
        return vec![FieldError::invalid(
            Path::Index(path, i).to_string(),
            item.clone(),
            "must be an object for an array of list-type map",
        )];
    }
    // An item's key: its key fields that it has, in the order the schema names them.
    let key = |item: &Value| -> Map<String, Value> {
        let mut key = Map::new();
        if let Some(obj) = item.as_object() {
            for field in key_fields {
                if let Some(v) = obj.get(field.as_str()) {
                    key.insert(field.clone(), v.clone());
                }
            }
        }
        key
    };
    let identities = items.iter().map(|item| match key_fields {
        [field] => match item.get(field.as_str()) {
            Some(v) => Identity::of(v),
            None => Identity::Unspecified,
        },
        _ => Identity::Other(format!("c{}", go_json(&Value::Object(key(item))))),
    });
    repeated(identities)
        .into_iter()
        .map(|i| {
            FieldError::duplicate(
                Path::Index(path, i).to_string(),
                Value::Object(key(&items[i])),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn widget_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                        "size": {"type": "string"},
                        "mode": {"type": "string", "enum": ["a", "b"]},
                        "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
                        "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.5},
                        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "minItems": 1},
                        "port": {"x-kubernetes-int-or-string": true},
                        "when": {"type": "string", "format": "date-time"},
                        "data": {"type": "string", "format": "byte"},
                        "count32": {"type": "integer", "format": "int32"},
                        "opt": {"type": "string", "nullable": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2},
                        "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
                    }
                }
            }
        })
    }

    fn check(spec: Value) -> Vec<String> {
        let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
        messages(&validate(&obj, None, &widget_schema()))
    }

    #[test]
    fn a_schema_is_compiled_once_and_its_replacement_anew() {
        let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": "mm"}});
        let schema = Arc::new(widget_schema());
        let first = compiled_for(&schema);
        assert!(Arc::ptr_eq(&first, &compiled_for(&schema)));
        assert!(first.validate(&obj, None).is_empty());

        let mut stricter = widget_schema();
        stricter["properties"]["spec"]["properties"]["size"]["maxLength"] = json!(1);
        let replaced = Arc::new(stricter);
        let second = compiled_for(&replaced);
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(
            messages(&second.validate(&obj, None)),
            ["spec.size: Too long: may not be more than 1 byte"]
        );
        // The first schema, still held, keeps its own compiled form.
        assert!(Arc::ptr_eq(&first, &compiled_for(&schema)));
        // A schema dropped (a CRD change replaced it) leaves the cache at the next compile.
        let dropped = Arc::downgrade(&second);
        drop((second, replaced));
        compiled_for(&Arc::new(json!({"type": "object"})));
        assert_eq!(
            dropped.strong_count(),
            0,
            "the compiled form of a dropped schema is kept"
        );
    }

    #[test]
    fn valid_object_passes() {
        let errs = check(
            json!({"size": "m", "replicas": 3, "mode": "a", "name": "abc", "ratio": 1.2, "tags": ["x"],
            "port": "http", "when": "2024-01-02T03:04:05Z", "data": "aGVsbG8=", "count32": 99999999999i64, "opt": null,
            "labels": {"a": "b"}, "items": [{"name": "x"}]}),
        );
        assert!(errs.is_empty(), "{errs:?}");
    }

    #[test]
    fn type_mismatch() {
        assert_eq!(
            check(json!({"size": "m", "replicas": "three"})),
            [
                r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
            ]
        );
        let errs = validate(
            &json!({"spec": {"size": "m", "replicas": "x"}}),
            None,
            &widget_schema(),
        );
        assert_eq!(errs[0].reason(), "FieldValueTypeInvalid");
        assert_eq!(
            check(json!({"size": "m", "replicas": 2.0})),
            Vec::<String>::new()
        );
        assert_eq!(
            check(json!({"size": "m", "replicas": 2.5})),
            [
                r#"spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number""#
            ]
        );
        assert_eq!(
            check(json!({"size": null})),
            [
                r#"spec.size: Invalid value: "null": spec.size in body must be of type string: "null""#
            ]
        );
        assert_eq!(
            check(json!({"size": "m", "port": true})),
            [
                r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#
            ]
        );
    }

    #[test]
    fn required_field() {
        assert_eq!(check(json!({})), ["spec.size: Required value"]);
    }

    #[test]
    fn enum_values() {
        assert_eq!(
            check(json!({"size": "m", "mode": "x"})),
            [r#"spec.mode: Unsupported value: "x": supported values: "a", "b""#]
        );
    }

    #[test]
    fn numeric_bounds() {
        assert_eq!(
            check(json!({"size": "m", "replicas": 0})),
            [
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
            ]
        );
        assert_eq!(
            check(json!({"size": "m", "replicas": 11})),
            [
                "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
            ]
        );
        assert_eq!(
            check(json!({"size": "m", "ratio": 1.5})),
            ["spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5"]
        );
    }

    #[test]
    fn times_match_go_openapis_pattern() {
        let pattern = Regex::new(
            r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?([zZ]|([+-][0-9]{2}:[0-9]{2}))$",
        )
        .unwrap();
        let in_range = |t: &str| &t[0..2] <= "23" && &t[3..5] <= "59" && &t[6..8] <= "59";
        let mut cases = vec![
            "12:30:45Z",
            "12:30:45z",
            "23:59:59+05:30",
            "00:00:00-00:00",
            "12:30:45.123Z",
            "12:30:45,5Z",
            "12:30:45é5Z",
            "12:30:4512Z",
            "12:30:45+5+05:00",
            "12:30:45.Z",
            "12:30:45\n5Z",
            "12:30:45",
            "12:30:45ZZ",
            "24:00:00Z",
            "23:60:00Z",
            "23:59:60Z",
            "1:30:45Z",
            "12-30-45Z",
            "12:30:45+0530",
            "12:30:45+05:3",
            "12:30:45.5+05:30",
            "12:30:45 5Z",
            "",
            "12:30:45é",
            "12:30:45+é:00Z",
            "ab:cd:efZ",
            "12:30:45.5",
        ];
        // Every one-character change of a valid time.
        let base = "12:30:45.6+07:08";
        let mut changed = Vec::new();
        for i in 0..base.len() {
            for c in ['0', '9', ':', '.', 'Z', '+', '-', 'x', '\n', 'é'] {
                changed.push(format!("{}{c}{}", &base[..i], &base[i + 1..]));
                changed.push(format!("{}{c}{}", &base[..i], &base[i..]));
            }
            changed.push(format!("{}{}", &base[..i], &base[i + 1..]));
        }
        cases.extend(changed.iter().map(String::as_str));
        for time in cases {
            let expected = pattern.is_match(time) && in_range(time);
            assert_eq!(is_time(time), expected, "{time:?}");
        }
    }

    #[test]
    fn string_rules() {
        assert_eq!(
            check(json!({"size": "m", "name": "abcdef"})),
            ["spec.name: Too long: may not be more than 5 bytes"]
        );
        assert_eq!(
            check(json!({"size": "m", "name": "a"})),
            [r#"spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long"#]
        );
        assert_eq!(
            check(json!({"size": "m", "name": "AB"})),
            [r#"spec.name: Invalid value: "AB": spec.name in body should match '^[a-z]+$'"#]
        );
        assert_eq!(
            check(json!({"size": "m", "when": "yesterday"})),
            [
                r#"spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday""#
            ]
        );
        assert_eq!(
            check(json!({"size": "m", "data": "not base64!"})),
            [
                r#"spec.data: Invalid value: "not base64!": spec.data in body must be of type byte: "not base64!""#
            ]
        );
    }

    #[test]
    fn array_and_map_sizes() {
        assert_eq!(
            check(json!({"size": "m", "tags": ["a", "b", "c"]})),
            ["spec.tags: Too many: 3: must have at most 2 items"]
        );
        assert_eq!(
            check(json!({"size": "m", "tags": []})),
            ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]
        );
        assert_eq!(
            check(json!({"size": "m", "tags": ["a", 1]})),
            [
                r#"spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer""#
            ]
        );
        assert_eq!(
            check(json!({"size": "m", "labels": {"a": "1", "b": "2", "c": "3"}})),
            ["spec.labels: Too many: 3: must have at most 2 items"]
        );
        assert_eq!(
            check(json!({"size": "m", "labels": {"a": 1}})),
            [
                r#"spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer""#
            ]
        );
        assert_eq!(
            check(json!({"size": "m", "items": [{"name": 1}]})),
            [
                r#"spec.items[0].name: Invalid value: "integer": spec.items[0].name in body must be of type string: "integer""#
            ]
        );
    }

    #[test]
    fn combinators() {
        let schema = json!({"type": "object", "properties": {"v": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}});
        assert!(validate(&json!({"v": 1}), None, &schema).is_empty());
        assert_eq!(
            messages(&validate(&json!({"v": true}), None, &schema)),
            [
                r#"<nil>: Invalid value: "": "v" must validate at least one schema (anyOf)"#,
                r#"v: Invalid value: "boolean": v in body must be of type integer: "boolean""#,
            ]
        );
        let schema = json!({"type": "object", "properties": {"v": {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}});
        assert!(validate(&json!({"v": {"a": 1}}), None, &schema).is_empty());
        assert_eq!(
            messages(&validate(&json!({"v": {"a": 1, "b": 2}}), None, &schema)),
            [
                r#"<nil>: Invalid value: "": "v" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
            ]
        );
        let schema = json!({"type": "object", "properties": {"v": {"type": "string", "not": {"enum": ["x"]}}}});
        assert_eq!(
            messages(&validate(&json!({"v": "x"}), None, &schema)),
            [r#"<nil>: Invalid value: "": "v" must not validate the schema (not)"#]
        );
        let schema = json!({"type": "object", "properties": {"v": {"allOf": [{"type": "string"}, {"maxLength": 1}]}}});
        assert_eq!(
            messages(&validate(&json!({"v": "xy"}), None, &schema)),
            [
                "v: Too long: may not be more than 1 byte",
                r#"<nil>: Invalid value: "": "v" must validate all the schemas (allOf)"#
            ]
        );
    }

    #[test]
    fn list_type_set_and_map_uniqueness() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            "pairs": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}}
        }}}});
        let obj = json!({"spec": {
            "tags": ["a", "b", "a", "a"],
            "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}],
            "pairs": [{"a": "x", "b": "y"}, {"a": "x", "b": "z"}, {"a": "x", "b": "y"}]
        }});
        let errs = validate(&obj, None, &schema);
        assert_eq!(
            messages(&errs),
            [
                r#"spec.pairs[2]: Duplicate value: {"a":"x","b":"y"}"#,
                r#"spec.ports[1]: Duplicate value: {"name":"http"}"#,
                r#"spec.tags[2]: Duplicate value: "a""#,
            ]
        );
        assert!(errs.iter().all(|e| e.reason() == "FieldValueDuplicate"));
    }

    #[test]
    fn keyed_lists_deep_below_nodes_without_them_are_checked() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "name": {"type": "string"},
            "groups": {"type": "object", "additionalProperties": {"type": "array", "items": {
                "type": "object", "properties": {"ports": {
                    "type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}}
        }}}});
        let obj = json!({"spec": {"name": "n", "groups": {"g": [{"ports": [{"name": "a"}, {"name": "a"}]}]}}});
        assert_eq!(
            messages(&validate(&obj, None, &schema)),
            [r#"spec.groups[g][0].ports[1]: Duplicate value: {"name":"a"}"#]
        );
    }

    #[test]
    fn long_lists_and_items_without_their_key_are_checked_for_duplicates_too() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "values": {"type": "array", "x-kubernetes-list-type": "set",
                "items": {"x-kubernetes-int-or-string": true}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}
        }}}});
        // More values than are compared one by one: a number and its string are different
        // values; then a repeat of each.
        let mut values: Vec<Value> = (0..20).map(|i| json!(format!("v{i}"))).collect();
        values.extend([json!(7), json!("7"), json!("v3"), json!(7), json!("7")]);
        let ports = json!([{"port": 1}, {"name": "a"}, {"port": 2}, {"name": "a"}]);
        let errs = validate(
            &json!({"spec": {"values": values, "ports": ports}}),
            None,
            &schema,
        );
        assert_eq!(
            messages(&errs),
            [
                r#"spec.ports[2]: Duplicate value: {}"#,
                r#"spec.ports[3]: Duplicate value: {"name":"a"}"#,
                r#"spec.values[22]: Duplicate value: "v3""#,
                r#"spec.values[23]: Duplicate value: 7"#,
                r#"spec.values[24]: Duplicate value: "7""#,
            ]
        );
    }

    #[test]
    fn unchanged_properties_ratchet_on_update() {
        // Stored under an older schema: replicas was a string then.
        let old = json!({"spec": {"size": "m", "replicas": "three"}, "status": {"ready": 1}});
        let status_write =
            json!({"spec": {"size": "m", "replicas": "three"}, "status": {"ready": 2}});
        assert!(validate(&status_write, Some(&old), &widget_schema()).is_empty());
        // A new object, or a changed field, is validated in full.
        assert_eq!(validate(&status_write, None, &widget_schema()).len(), 1);
        let changed = json!({"spec": {"size": "m", "replicas": "four"}});
        assert_eq!(
            messages(&validate(&changed, Some(&old), &widget_schema())),
            [
                r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
            ]
        );
    }
}
