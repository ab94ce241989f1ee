//! The v2 document in gnostic's protobuf encoding (`openapi.v2.Document` of
//! github.com/google/gnostic-models `openapiv2/OpenAPIv2.proto`), which kubectl and client-go
//! ask for (`application/com.github.proto-openapi.spec.v2.v1.0+protobuf`).
//!
//! kube-openapi makes it by parsing the JSON document with gnostic and marshalling the result;
//! this encodes the same messages straight from the JSON, for what a Kubernetes document holds:
//! info, paths with their operations, parameters and responses, definitions, the security
//! definitions, and vendor extensions, which (like `default`, `example` and `enum` values) are
//! an `Any` holding the value as YAML text. Fields are written in field-number order, proto3
//! defaults (empty strings, `false`, zero) left out, as Go's marshaller does.

use serde_json::{Map, Value};

use crate::protobuf::wire::Writer;

/// Why the document could not be encoded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The cached JSON document did not parse back.
    #[error("the OpenAPI v2 document is not valid JSON")]
    Json(#[source] std::sync::Arc<serde_json::Error>),
    /// A value of a vendor extension, default, example or enum has no YAML form.
    #[error("the value of {what} has no YAML form")]
    Yaml {
        what: String,
        #[source]
        source: std::sync::Arc<serde_yaml_ng::Error>,
    },
}

impl Error {
    pub(super) fn json(source: serde_json::Error) -> Error {
        Error::Json(std::sync::Arc::new(source))
    }
}

type Result<T, E = Error> = std::result::Result<T, E>;

/// Encodes a v2 document (as [`super::build`] makes it).
pub fn encode(document: &Value) -> Result<Vec<u8>> {
    Ok(message(document, encode_document)?.finish())
}

/// The fields of one JSON object, written into one message.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    out: Writer,
}

/// How one message is encoded from the fields of a JSON object.
type Encode = fn(&mut Fields<'_>) -> Result<()>;

/// Encodes one JSON value as a message; anything but an object is an empty message.
fn message(value: &Value, encode: Encode) -> Result<Writer> {
    let empty = Map::new();
    object_message(value.as_object().unwrap_or(&empty), encode)
}

fn object_message(map: &Map<String, Value>, encode: Encode) -> Result<Writer> {
    let mut fields = Fields {
        map,
        out: Writer::new(),
    };
    encode(&mut fields)?;
    Ok(fields.out)
}

impl Fields<'_> {
    fn put(&mut self, write: impl FnOnce(Writer) -> Writer) {
        self.out = write(std::mem::take(&mut self.out));
    }

    fn string(&mut self, key: &str, number: u32) {
        if let Some(text) = self.map.get(key).and_then(Value::as_str)
            && !text.is_empty()
        {
            self.put(|w| w.string(number, text));
        }
    }

    fn bool(&mut self, key: &str, number: u32) {
        if self.map.get(key) == Some(&Value::Bool(true)) {
            self.put(|w| w.varint(number, 1));
        }
    }

    fn int(&mut self, key: &str, number: u32) {
        let value = match self.map.get(key) {
            Some(Value::Number(n)) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
            _ => None,
        };
        if let Some(value) = value.filter(|v| *v != 0) {
            self.put(|w| w.varint(number, value));
        }
    }

    fn double(&mut self, key: &str, number: u32) {
        if let Some(value) = self.map.get(key).and_then(Value::as_f64)
            && value != 0.0
        {
            self.put(|w| w.double(number, value));
        }
    }

    fn strings(&mut self, key: &str, number: u32) {
        if let Some(Value::Array(items)) = self.map.get(key) {
            for text in items.iter().filter_map(Value::as_str) {
                self.put(|w| w.string(number, text));
            }
        }
    }

    fn any(&mut self, key: &str, number: u32) -> Result<()> {
        if let Some(value) = self.map.get(key) {
            let any = any(key, value)?;
            self.put(|w| w.message(number, any));
        }
        Ok(())
    }

    fn anys(&mut self, key: &str, number: u32) -> Result<()> {
        if let Some(Value::Array(items)) = self.map.get(key) {
            for item in items {
                let any = any(key, item)?;
                self.put(|w| w.message(number, any));
            }
        }
        Ok(())
    }

    /// A message field, written when the key is present.
    fn message(&mut self, key: &str, number: u32, encode: Encode) -> Result<()> {
        if let Some(value) = self.map.get(key) {
            let inner = message(value, encode)?;
            self.put(|w| w.message(number, inner));
        }
        Ok(())
    }

    /// A repeated message field from a JSON array.
    fn messages(&mut self, key: &str, number: u32, encode: Encode) -> Result<()> {
        if let Some(Value::Array(items)) = self.map.get(key) {
            for item in items {
                let inner = message(item, encode)?;
                self.put(|w| w.message(number, inner));
            }
        }
        Ok(())
    }

    /// A JSON object as a message holding one repeated `Named…` field (number 1): each entry's
    /// name (1) and value (2).
    fn named_map(&mut self, key: &str, number: u32, encode: Encode) -> Result<()> {
        if let Some(value) = self.map.get(key) {
            let empty = Map::new();
            let entries = named(value.as_object().unwrap_or(&empty), |_| true, encode)?;
            let inner = entries
                .into_iter()
                .fold(Writer::new(), |w, entry| w.message(1, entry));
            self.put(|w| w.message(number, inner));
        }
        Ok(())
    }

    /// Every `x-` key, as repeated `NamedAny`.
    fn extensions(&mut self, number: u32) -> Result<()> {
        for (key, value) in self.map {
            if key.starts_with("x-") {
                let entry = Writer::new().string(1, key).message(2, any(key, value)?);
                self.put(|w| w.message(number, entry));
            }
        }
        Ok(())
    }
}

/// The entries of a JSON object whose keys pass `keep`, each as a `Named…` message.
fn named(
    map: &Map<String, Value>,
    keep: impl Fn(&str) -> bool,
    encode: Encode,
) -> Result<Vec<Writer>> {
    let mut out = Vec::new();
    for (name, item) in map.iter().filter(|(k, _)| keep(k)) {
        let inner = message(item, encode)?;
        out.push(Writer::new().string(1, name).message(2, inner));
    }
    Ok(out)
}

/// `Any`: the value as YAML text (2), as gnostic writes it.
fn any(what: &str, value: &Value) -> Result<Writer> {
    let yaml = serde_yaml_ng::to_string(value).map_err(|source| Error::Yaml {
        what: what.to_owned(),
        source: std::sync::Arc::new(source),
    })?;
    Ok(Writer::new().string(2, &yaml))
}

fn encode_document(f: &mut Fields<'_>) -> Result<()> {
    f.string("swagger", 1);
    f.message("info", 2, encode_info)?;
    f.string("host", 3);
    f.string("basePath", 4);
    f.strings("schemes", 5);
    f.strings("consumes", 6);
    f.strings("produces", 7);
    f.message("paths", 8, encode_paths)?;
    f.named_map("definitions", 9, encode_schema)?;
    f.messages("security", 12, encode_security_requirement)?;
    f.named_map("securityDefinitions", 13, encode_security_definitions_item)?;
    f.extensions(16)
}

fn encode_info(f: &mut Fields<'_>) -> Result<()> {
    f.string("title", 1);
    f.string("version", 2);
    f.string("description", 3);
    f.string("termsOfService", 4);
    f.extensions(7)
}

fn encode_paths(f: &mut Fields<'_>) -> Result<()> {
    f.extensions(1)?;
    let paths = named(f.map, |k| k.starts_with('/'), encode_path_item)?;
    for path in paths {
        f.put(|w| w.message(2, path));
    }
    Ok(())
}

fn encode_path_item(f: &mut Fields<'_>) -> Result<()> {
    f.string("$ref", 1);
    for (method, number) in [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ] {
        f.message(method, number, encode_operation)?;
    }
    f.messages("parameters", 9, encode_parameters_item)?;
    f.extensions(10)
}

fn encode_operation(f: &mut Fields<'_>) -> Result<()> {
    f.strings("tags", 1);
    f.string("summary", 2);
    f.string("description", 3);
    f.string("operationId", 5);
    f.strings("produces", 6);
    f.strings("consumes", 7);
    f.messages("parameters", 8, encode_parameters_item)?;
    f.message("responses", 9, encode_responses)?;
    f.strings("schemes", 10);
    f.bool("deprecated", 11);
    f.extensions(13)
}

/// `ParametersItem`: a parameter (1) or a reference to one (2).
fn encode_parameters_item(f: &mut Fields<'_>) -> Result<()> {
    if f.map.contains_key("$ref") {
        let reference = object_message(f.map, encode_json_reference)?;
        f.put(|w| w.message(2, reference));
        return Ok(());
    }
    let parameter = object_message(f.map, encode_parameter)?;
    f.put(|w| w.message(1, parameter));
    Ok(())
}

fn encode_json_reference(f: &mut Fields<'_>) -> Result<()> {
    f.string("$ref", 1);
    f.string("description", 2);
    Ok(())
}

/// `Parameter`: a body parameter (1), or one of the others (2), each kind its own message.
fn encode_parameter(f: &mut Fields<'_>) -> Result<()> {
    let location = f.map.get("in").and_then(Value::as_str).unwrap_or_default();
    if location == "body" {
        let body = object_message(f.map, encode_body_parameter)?;
        f.put(|w| w.message(1, body));
        return Ok(());
    }
    let (number, encode): (u32, Encode) = match location {
        "header" => (1, encode_header_parameter),
        "formData" => (2, encode_form_data_parameter),
        "path" => (4, encode_path_parameter),
        _ => (3, encode_query_parameter),
    };
    let sub = object_message(f.map, encode)?;
    let non_body = Writer::new().message(number, sub);
    f.put(|w| w.message(2, non_body));
    Ok(())
}

fn encode_body_parameter(f: &mut Fields<'_>) -> Result<()> {
    f.string("description", 1);
    f.string("name", 2);
    f.string("in", 3);
    f.bool("required", 4);
    f.message("schema", 5, encode_schema)?;
    f.extensions(6)
}

/// The value constraints every non-body parameter shares, from field `first` on (`type`,
/// `format`, `items`, …, `multipleOf`), then the vendor extensions.
fn encode_parameter_value(f: &mut Fields<'_>, first: u32) -> Result<()> {
    f.string("type", first);
    f.string("format", first + 1);
    f.message("items", first + 2, encode_primitives_items)?;
    f.string("collectionFormat", first + 3);
    f.any("default", first + 4)?;
    f.double("maximum", first + 5);
    f.bool("exclusiveMaximum", first + 6);
    f.double("minimum", first + 7);
    f.bool("exclusiveMinimum", first + 8);
    f.int("maxLength", first + 9);
    f.int("minLength", first + 10);
    f.string("pattern", first + 11);
    f.int("maxItems", first + 12);
    f.int("minItems", first + 13);
    f.bool("uniqueItems", first + 14);
    f.anys("enum", first + 15)?;
    f.double("multipleOf", first + 16);
    f.extensions(first + 17)
}

/// `HeaderParameterSubSchema` and `PathParameterSubSchema`: required, in, description, name,
/// then the value from 5.
fn encode_header_parameter(f: &mut Fields<'_>) -> Result<()> {
    f.bool("required", 1);
    f.string("in", 2);
    f.string("description", 3);
    f.string("name", 4);
    encode_parameter_value(f, 5)
}

fn encode_path_parameter(f: &mut Fields<'_>) -> Result<()> {
    encode_header_parameter(f)
}

/// `QueryParameterSubSchema` and `FormDataParameterSubSchema`: required, in, description,
/// name, allowEmptyValue, then the value from 6.
fn encode_query_parameter(f: &mut Fields<'_>) -> Result<()> {
    f.bool("required", 1);
    f.string("in", 2);
    f.string("description", 3);
    f.string("name", 4);
    f.bool("allowEmptyValue", 5);
    encode_parameter_value(f, 6)
}

fn encode_form_data_parameter(f: &mut Fields<'_>) -> Result<()> {
    encode_query_parameter(f)
}

/// `PrimitivesItems`: the value constraints from field 1.
fn encode_primitives_items(f: &mut Fields<'_>) -> Result<()> {
    encode_parameter_value(f, 1)
}

/// `Responses`: each status code (1) as `NamedResponseValue`, then extensions (2).
fn encode_responses(f: &mut Fields<'_>) -> Result<()> {
    let codes = named(
        f.map,
        |k| k == "default" || (k.len() == 3 && k.bytes().all(|b| b.is_ascii_digit())),
        encode_response_value,
    )?;
    for code in codes {
        f.put(|w| w.message(1, code));
    }
    f.extensions(2)
}

/// `ResponseValue`: a response (1) or a reference to one (2).
fn encode_response_value(f: &mut Fields<'_>) -> Result<()> {
    if f.map.contains_key("$ref") {
        let reference = object_message(f.map, encode_json_reference)?;
        f.put(|w| w.message(2, reference));
    } else {
        let response = object_message(f.map, encode_response)?;
        f.put(|w| w.message(1, response));
    }
    Ok(())
}

fn encode_response(f: &mut Fields<'_>) -> Result<()> {
    f.string("description", 1);
    if let Some(schema) = f.map.get("schema") {
        // `SchemaItem`: a schema (1).
        let item = Writer::new().message(1, message(schema, encode_schema)?);
        f.put(|w| w.message(2, item));
    }
    f.extensions(5)
}

fn encode_schema(f: &mut Fields<'_>) -> Result<()> {
    f.string("$ref", 1);
    f.string("format", 2);
    f.string("title", 3);
    f.string("description", 4);
    f.any("default", 5)?;
    f.double("multipleOf", 6);
    f.double("maximum", 7);
    f.bool("exclusiveMaximum", 8);
    f.double("minimum", 9);
    f.bool("exclusiveMinimum", 10);
    f.int("maxLength", 11);
    f.int("minLength", 12);
    f.string("pattern", 13);
    f.int("maxItems", 14);
    f.int("minItems", 15);
    f.bool("uniqueItems", 16);
    f.int("maxProperties", 17);
    f.int("minProperties", 18);
    f.strings("required", 19);
    f.anys("enum", 20)?;
    match f.map.get("additionalProperties") {
        // `AdditionalPropertiesItem`: a schema (1) or a boolean (2, written even when false:
        // it is one of a oneof).
        Some(Value::Bool(allowed)) => {
            let item = Writer::new().varint(2, i64::from(*allowed));
            f.put(|w| w.message(21, item));
        }
        Some(schema @ Value::Object(_)) => {
            let item = Writer::new().message(1, message(schema, encode_schema)?);
            f.put(|w| w.message(21, item));
        }
        _ => {}
    }
    match f.map.get("type") {
        // `TypeItem`: the type names (1).
        Some(Value::String(name)) => {
            let item = Writer::new().string(1, name);
            f.put(|w| w.message(22, item));
        }
        Some(Value::Array(names)) => {
            let item = names
                .iter()
                .filter_map(Value::as_str)
                .fold(Writer::new(), |w, name| w.string(1, name));
            f.put(|w| w.message(22, item));
        }
        _ => {}
    }
    if let Some(items @ Value::Object(_)) = f.map.get("items") {
        // `ItemsItem`: its schemas (1).
        let item = Writer::new().message(1, message(items, encode_schema)?);
        f.put(|w| w.message(23, item));
    }
    f.messages("allOf", 24, encode_schema)?;
    f.named_map("properties", 25, encode_schema)?;
    f.string("discriminator", 26);
    f.bool("readOnly", 27);
    f.message("externalDocs", 29, encode_external_docs)?;
    f.any("example", 30)?;
    f.extensions(31)
}

fn encode_external_docs(f: &mut Fields<'_>) -> Result<()> {
    f.string("description", 1);
    f.string("url", 2);
    f.extensions(3)
}

/// `SecurityRequirement`: each scheme's name (1) with its scopes (2: `StringArray`).
fn encode_security_requirement(f: &mut Fields<'_>) -> Result<()> {
    for (name, scopes) in f.map {
        let scopes = scopes
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .fold(Writer::new(), |w, scope| w.string(1, scope));
        let entry = Writer::new().string(1, name).message(2, scopes);
        f.put(|w| w.message(1, entry));
    }
    Ok(())
}

/// `SecurityDefinitionsItem`: Kubernetes declares only API keys (2).
fn encode_security_definitions_item(f: &mut Fields<'_>) -> Result<()> {
    if f.map.get("type").and_then(Value::as_str) == Some("apiKey") {
        let key = object_message(f.map, encode_api_key_security)?;
        f.put(|w| w.message(2, key));
    }
    Ok(())
}

fn encode_api_key_security(f: &mut Fields<'_>) -> Result<()> {
    f.string("type", 1);
    f.string("name", 2);
    f.string("in", 3);
    f.string("description", 4);
    f.extensions(5)
}

#[cfg(test)]
mod tests;
