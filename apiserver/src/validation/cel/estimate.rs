//! The sizes a CRD's schema allows, as Kubernetes estimates them for CEL's static cost: how
//! long a string, how many items or properties a node may hold (its `maxLength`, `maxItems`,
//! `maxProperties`, or else as many of its smallest serialization as fit in a 3 MiB request),
//! and how many times a rule on a node may run in one object (its cardinality); and the
//! messages of a rule or a schema over its cost budget.

use serde_json::Value;

use super::declare;

/// The largest request kube-apiserver accepts, which bounds unbounded sizes.
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;
/// The estimated cost one rule may have, times its cardinality (`StaticEstimatedCostLimit`).
pub(crate) const RULE_COST_LIMIT: u64 = 10_000_000;
/// The estimated cost of all of a schema's rules together (`StaticEstimatedCRDCostLimit`).
pub(crate) const SCHEMA_COST_LIMIT: u64 = 100_000_000;

// The smallest JSON of each kind of value (apiserver's `cel/limits.go`).
const MIN_STRING_SIZE: u64 = 2;
const MIN_BOOL_SIZE: u64 = 4;
const MIN_NUMBER_SIZE: u64 = 1;
const MIN_DURATION_SIZE: u64 = 4;
const DATE_SIZE: u64 = 12;
const MIN_DATETIME_SIZE: u64 = 22;
const MAX_DATETIME_SIZE: u64 = 37;
const MAX_DURATION_SIZE: u64 = 32;

fn type_of(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

fn format_of(schema: &Value) -> &str {
    schema.get("format").and_then(Value::as_str).unwrap_or("")
}

fn number(schema: &Value, key: &str) -> Option<u64> {
    schema
        .get(key)
        .and_then(Value::as_i64)
        .map(|n| n.max(0) as u64)
}

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

/// The smallest serialization of a value of `schema`.
pub(crate) fn min_size(schema: &Value) -> u64 {
    if flag(schema, "x-kubernetes-int-or-string") {
        return 1;
    }
    match (type_of(schema), format_of(schema)) {
        ("string", "duration") => MIN_DURATION_SIZE,
        ("string", "date") => DATE_SIZE,
        ("string", "date-time") => MIN_DATETIME_SIZE,
        ("string", _) => MIN_STRING_SIZE,
        ("boolean", _) => MIN_BOOL_SIZE,
        ("integer" | "number", _) => MIN_NUMBER_SIZE,
        ("object", _)
            if schema
                .get("additionalProperties")
                .is_some_and(Value::is_object) =>
        {
            2
        }
        ("object", _) => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut size = 2u64;
            for (name, prop) in schema
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if required.contains(&name.as_str()) && prop.get("default").is_none() {
                    size = size.saturating_add(name.len() as u64 + min_size(prop) + 4);
                }
            }
            size
        }
        _ => 2,
    }
}

/// The most elements a value of `schema` may have: characters of a string (bytes for byte
/// strings), items of a list, entries of a map; `None` for other kinds.
pub(crate) fn max_elements(schema: &Value) -> Option<u64> {
    let unbounded_string = || match format_of(schema) {
        "duration" => MAX_DURATION_SIZE,
        "date" => DATE_SIZE,
        "date-time" => MAX_DATETIME_SIZE,
        _ => MAX_REQUEST_BYTES - 2,
    };
    if flag(schema, "x-kubernetes-int-or-string") {
        return Some(number(schema, "maxLength").map_or(MAX_REQUEST_BYTES - 2, |n| n * 4));
    }
    match type_of(schema) {
        "string" => Some(match format_of(schema) {
            "byte" => number(schema, "maxLength").unwrap_or(MAX_REQUEST_BYTES - 2),
            "duration" | "date" | "date-time" => unbounded_string(),
            _ => match number(schema, "maxLength") {
                Some(n) => n.saturating_mul(4),
                None => match schema.get("enum").and_then(Value::as_array) {
                    Some(values) if !values.is_empty() => values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|s| s.len() as u64)
                        .max()
                        .unwrap_or(0),
                    _ => unbounded_string(),
                },
            },
        }),
        "array" => {
            let items = schema.get("items")?;
            Some(
                number(schema, "maxItems")
                    .unwrap_or_else(|| (MAX_REQUEST_BYTES - 2) / (min_size(items) + 1)),
            )
        }
        "object" => {
            let values = schema
                .get("additionalProperties")
                .filter(|a| a.is_object())?;
            Some(
                number(schema, "maxProperties")
                    .unwrap_or_else(|| (MAX_REQUEST_BYTES - 2) / (min_size(values) + 6)),
            )
        }
        _ => None,
    }
}

/// Bounds on the sizes of what a rule on `node` reads, found by walking the schema along the
/// path cel-go asks about (`self`, field names, `@items`, `@keys`, `@values`), as
/// apiextensions' size estimator walks its declared types.
pub(crate) struct SchemaSizes<'a> {
    pub node: &'a Value,
    pub resource_root: bool,
}

impl atoll_cel::SizeEstimator for SchemaSizes<'_> {
    fn size(&self, path: &[&str]) -> Option<(u64, u64)> {
        let (first, rest) = path.split_first()?;
        if *first != "self" && *first != "oldSelf" {
            return None;
        }
        let mut node = self.node;
        let mut root = self.resource_root;
        for step in rest {
            node = match *step {
                "@items" => node.get("items")?,
                "@values" => node.get("additionalProperties").filter(|a| a.is_object())?,
                // Map keys are plain strings, whose declared type bounds no size: upstream
                // sizes them 0.
                "@keys" => return Some((0, 0)),
                "@indices" => return None,
                name => {
                    if root && matches!(name, "apiVersion" | "kind" | "metadata") {
                        // name and generateName: strings of any length.
                        return Some((0, MAX_REQUEST_BYTES - 2));
                    }
                    node.get("properties")?
                        .as_object()?
                        .iter()
                        .find(|(prop, _)| declare::escape(prop).is_some_and(|e| e == name))
                        .map(|(_, schema)| schema)?
                }
            };
            root = declare::is_embedded(node);
        }
        // Kinds without elements (numbers, objects) size 0, as upstream's `MaxElements`.
        Some((0, max_elements(node).unwrap_or(0)))
    }
}

/// How many times a child node's rules may run per parent: a list's or map's element count;
/// 1 for a property.
pub(crate) fn child_cardinality(schema: &Value) -> u64 {
    max_elements(schema).unwrap_or(1)
}

/// Upstream's message for an estimate over its limit: `<what> exceeds budget by factor of
/// 2.5x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where
/// arrays, maps, and strings are declared)`.
pub(crate) fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

#[cfg(test)]
mod tests {
    use atoll_cel::SizeEstimator as _;
    use serde_json::json;

    use super::*;

    #[test]
    fn sizes_come_from_limits_or_the_request_size() {
        assert_eq!(
            max_elements(&json!({"type": "string", "maxLength": 10})),
            Some(40)
        );
        assert_eq!(
            max_elements(&json!({"type": "string", "enum": ["a", "bcd"]})),
            Some(3)
        );
        assert_eq!(
            max_elements(&json!({"type": "array", "maxItems": 5, "items": {"type": "string"}})),
            Some(5)
        );
        // Unbounded: as many empty strings ("" and a comma) as fit in 3 MiB.
        assert_eq!(
            max_elements(&json!({"type": "array", "items": {"type": "string"}})),
            Some((3 * 1024 * 1024 - 2) / 3)
        );
        let sizes = SchemaSizes {
            node: &json!({"type": "object", "properties": {
                "ports": {"type": "array", "maxItems": 8, "items": {"type": "object",
                    "properties": {"name": {"type": "string", "maxLength": 15}}}}}}),
            resource_root: false,
        };
        assert_eq!(sizes.size(&["self", "ports"]), Some((0, 8)));
        assert_eq!(
            sizes.size(&["self", "ports", "@items", "name"]),
            Some((0, 60))
        );
        assert_eq!(sizes.size(&["self", "missing"]), None);
    }

    #[test]
    fn over_budget_messages_read_as_upstream() {
        assert_eq!(
            over_budget("estimated rule cost", 25_000_000, RULE_COST_LIMIT),
            "estimated rule cost exceeds budget by factor of 2.5x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert!(over_budget("x", 12_000_000, RULE_COST_LIMIT).contains("factor of 1.200000x"));
        assert!(over_budget("x", u64::MAX, RULE_COST_LIMIT).contains("factor of more than 100x"));
    }
}
