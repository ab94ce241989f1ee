//! Labels and label selectors as the printers write them (`labels.FormatLabels`,
//! `LabelSelectorAsSelector(…).String()`, `metav1.FormatLabelSelector`).

use serde_json::Value;

/// `a=1,b=2` with keys sorted; `<none>` for no labels (`labels.FormatLabels`).
pub fn format_labels(map: &Value) -> String {
    let text = label_set(map);
    if text.is_empty() {
        "<none>".to_owned()
    } else {
        text
    }
}

fn label_set(map: &Value) -> String {
    let Some(map) = map.as_object() else {
        return String::new();
    };
    let mut pairs: Vec<(&String, String)> = map
        .iter()
        .map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A `LabelSelector` as a selector string (`app=web,tier in (a,b),!legacy`); empty for a
/// missing or empty selector; `None` when the selector is invalid.
pub fn selector_string(selector: &Value) -> Option<String> {
    if selector.is_null() {
        return Some(String::new());
    }
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (key, value) in labels {
            let value = value.as_str()?;
            requirements.push((key.clone(), format!("{key}={value}")));
        }
    }
    if let Some(expressions) = selector["matchExpressions"].as_array() {
        for expression in expressions {
            let key = expression["key"].as_str()?;
            let mut values: Vec<&str> = match &expression["values"] {
                Value::Null => Vec::new(),
                Value::Array(items) => items.iter().map(Value::as_str).collect::<Option<_>>()?,
                _ => return None,
            };
            values.sort_unstable();
            values.dedup();
            let text = match expression["operator"].as_str()? {
                "In" if !values.is_empty() => format!("{key} in ({})", values.join(",")),
                "NotIn" if !values.is_empty() => format!("{key} notin ({})", values.join(",")),
                "Exists" if values.is_empty() => key.to_owned(),
                "DoesNotExist" if values.is_empty() => format!("!{key}"),
                _ => return None,
            };
            requirements.push((key.to_owned(), text));
        }
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    Some(
        requirements
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// `metav1.FormatLabelSelector`: the selector string, `<none>` when it selects everything,
/// `<error>` when it is invalid.
pub fn format_label_selector(selector: &Value) -> String {
    match selector_string(selector) {
        Some(text) if text.is_empty() => "<none>".to_owned(),
        Some(text) => text,
        None => "<error>".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_sorted_or_none() {
        assert_eq!(format_labels(&json!({"b": "2", "a": "1"})), "a=1,b=2");
        assert_eq!(format_labels(&json!({})), "<none>");
        assert_eq!(format_labels(&Value::Null), "<none>");
    }

    #[test]
    fn selectors() {
        let selector = json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "legacy", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "Exists"}
            ]
        });
        assert_eq!(
            selector_string(&selector).as_deref(),
            Some("app=web,!legacy,tier in (a,b),zone")
        );
        assert_eq!(format_label_selector(&json!({})), "<none>");
        assert_eq!(
            format_label_selector(
                &json!({"matchExpressions": [{"key": "k", "operator": "In", "values": []}]})
            ),
            "<error>"
        );
    }
}
