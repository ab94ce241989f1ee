//! Label and field selectors, with the grammar of apimachinery's `labels.Parse` and
//! `fields.ParseSelector`, and upstream's error wording.

use serde_json::Value;

use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    GreaterThan(i64),
    LessThan(i64),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    pub fn parse(input: &str) -> Result<Self> {
        let mut requirements = Vec::new();
        for part in split_top_level(input) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(LabelSelector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, labels: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels.get(&r.key).and_then(Value::as_str);
            match (&r.op, value) {
                (Op::Equals(v), Some(l)) => l == v,
                (Op::Equals(_), None) => false,
                (Op::NotEquals(v), l) => l != Some(v.as_str()),
                (Op::In(vs), Some(l)) => vs.iter().any(|v| v == l),
                (Op::In(_), None) => false,
                (Op::NotIn(vs), l) => l.is_none_or(|l| !vs.iter().any(|v| v == l)),
                (Op::Exists, l) => l.is_some(),
                (Op::DoesNotExist, l) => l.is_none(),
                (Op::GreaterThan(n), Some(l)) => l.parse::<i64>().is_ok_and(|l| l > *n),
                (Op::LessThan(n), Some(l)) => l.parse::<i64>().is_ok_and(|l| l < *n),
                (Op::GreaterThan(_) | Op::LessThan(_), None) => false,
            }
        })
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(input: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&input[start..]);
    parts
}

fn bad(input: &str, why: &str) -> Error {
    Error::BadRequest(format!(
        "unable to parse requirement: {why} (in selector {input:?})"
    ))
}

fn parse_requirement(part: &str) -> Result<Requirement> {
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        check_key(part, key)?;
        return Ok(Requirement {
            key: key.into(),
            op: Op::DoesNotExist,
        });
    }
    let set_op = |word: &str| -> Option<(String, String)> {
        let idx = part
            .find(&format!(" {word} "))
            .or_else(|| part.find(&format!(" {word}(")))?;
        let key = part[..idx].trim().to_owned();
        let rest = part[idx + 1 + word.len()..].trim().to_owned();
        Some((key, rest))
    };
    for (word, is_in) in [("notin", false), ("in", true)] {
        if let Some((key, rest)) = set_op(word) {
            check_key(part, &key)?;
            let inner = rest
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(|| bad(part, "found '', expected: '('"))?;
            let values: Vec<String> = inner
                .split(',')
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .collect();
            for v in &values {
                check_value(part, v)?;
            }
            let op = if is_in {
                Op::In(values)
            } else {
                Op::NotIn(values)
            };
            return Ok(Requirement { key, op });
        }
    }
    for (token, kind) in [("!=", 0), ("==", 1), ("=", 1), (">", 2), ("<", 3)] {
        if let Some(idx) = part.find(token) {
            let key = part[..idx].trim();
            let value = part[idx + token.len()..].trim();
            check_key(part, key)?;
            let op = match kind {
                0 => Op::NotEquals(value.into()),
                1 => Op::Equals(value.into()),
                _ => {
                    let n = value.parse::<i64>().map_err(|_| {
                        bad(
                            part,
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        )
                    })?;
                    if kind == 2 {
                        Op::GreaterThan(n)
                    } else {
                        Op::LessThan(n)
                    }
                }
            };
            if let Op::Equals(v) | Op::NotEquals(v) = &op {
                check_value(part, v)?;
            }
            return Ok(Requirement {
                key: key.into(),
                op,
            });
        }
    }
    check_key(part, part)?;
    Ok(Requirement {
        key: part.into(),
        op: Op::Exists,
    })
}

fn check_key(input: &str, key: &str) -> Result<()> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    });
    if name_ok && prefix_ok {
        Ok(())
    } else {
        Err(bad(input, &format!("invalid label key {key:?}")))
    }
}

fn check_value(input: &str, value: &str) -> Result<()> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if ok {
        Ok(())
    } else {
        Err(bad(input, &format!("invalid label value: {value:?}")))
    }
}

/// A parsed field selector over the fields a resource supports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// (field path, wanted value, equal?)
    terms: Vec<(String, String, bool)>,
}

impl FieldSelector {
    /// Parses `a=b,c!=d`. `supported` lists the fields the resource can filter on beyond
    /// `metadata.name` and `metadata.namespace`.
    pub fn parse(input: &str, supported: &[&str]) -> Result<Self> {
        let mut terms = Vec::new();
        for part in input.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (field, value, equal) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, true)
            } else {
                return Err(Error::BadRequest(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if field != "metadata.name"
                && field != "metadata.namespace"
                && !supported.contains(&field)
            {
                return Err(Error::BadRequest(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push((field.to_owned(), value.trim().to_owned(), equal));
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether the selector reads nothing but `metadata.name` and `metadata.namespace`.
    pub fn reads_only_metadata(&self) -> bool {
        self.terms
            .iter()
            .all(|(field, _, _)| field == "metadata.name" || field == "metadata.namespace")
    }

    /// The single object name this selector pins, if it has `metadata.name=X`.
    pub fn pinned_name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|(f, _, eq)| f == "metadata.name" && *eq)
            .map(|(_, v, _)| v.as_str())
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, want, equal)| {
            let mut v = object;
            for part in field.split('.') {
                v = &v[part];
            }
            let have = match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (have == *want) == *equal
        })
    }
}

/// The extra fields upstream lets each resource be selected by.
pub fn supported_fields(group: &str, plural: &str) -> &'static [&'static str] {
    match (group, plural) {
        ("", "events") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ("", "secrets") => &["type"],
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("", "namespaces") => &["status.phase"],
        _ => &[],
    }
}

/// Whether a `metav1.LabelSelector` picks an object with `labels` (an empty selector picks
/// everything, as upstream's `LabelSelectorAsSelector`).
pub fn matches_label_selector(selector: &Value, labels: &Value) -> bool {
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    let match_labels = selector["matchLabels"].as_object().into_iter().flatten();
    for (key, value) in match_labels {
        if label(key) != value.as_str() {
            return false;
        }
    }
    let expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten();
    for expression in expressions {
        let key = expression["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let holds = match expression["operator"].as_str().unwrap_or_default() {
            "In" => label(key).is_some_and(|v| values.contains(&v)),
            "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        };
        if !holds {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap()
    }

    #[test]
    fn label_selector_grammar() {
        let labels = json!({"app": "demo", "tier": "web", "n": "7"});
        assert!(sel("").matches(&labels));
        assert!(sel("app=demo").matches(&labels));
        assert!(sel("app==demo").matches(&labels));
        assert!(!sel("app!=demo").matches(&labels));
        assert!(
            sel("missing!=x").matches(&labels),
            "!= matches objects without the key"
        );
        assert!(sel("app in (py,demo)").matches(&labels));
        assert!(!sel("app in (py,other)").matches(&labels));
        assert!(sel("tier notin (x),!missing").matches(&labels));
        assert!(sel("app=demo,tier notin (x),!missing").matches(&labels));
        assert!(sel("missing notin (x)").matches(&labels));
        assert!(sel("app").matches(&labels));
        assert!(!sel("!app").matches(&labels));
        assert!(sel("n>5").matches(&labels));
        assert!(!sel("n<5").matches(&labels));
        assert!(
            sel("name=demo3,owner=helm,status=deployed")
                .matches(&json!({"name": "demo3", "owner": "helm", "status": "deployed"}))
        );
    }

    #[test]
    fn bad_label_selectors_are_bad_requests() {
        for input in [
            "app=(x",
            "a b c",
            "=x",
            "app in x",
            "app=thisvalueiswaytoolong-thisvalueiswaytoolong-thisvalueiswaytoolong",
        ] {
            let err = LabelSelector::parse(input).unwrap_err();
            assert!(matches!(err, Error::BadRequest(_)), "{input}: {err:?}");
            assert!(
                err.to_string().starts_with("unable to parse requirement"),
                "{err}"
            );
        }
    }

    #[test]
    fn field_selectors() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns"}, "type": "Opaque"});
        let s = FieldSelector::parse("metadata.name=a,metadata.namespace!=other", &[]).unwrap();
        assert!(s.matches(&obj));
        assert_eq!(s.pinned_name(), Some("a"));
        assert!(
            !FieldSelector::parse("metadata.name==b", &[])
                .unwrap()
                .matches(&obj)
        );
        assert!(
            FieldSelector::parse("type=Opaque", &["type"])
                .unwrap()
                .matches(&obj)
        );
        let err = FieldSelector::parse("spec.foo=1", &[]).unwrap_err();
        assert_eq!(err.to_string(), "field label not supported: spec.foo");
    }

    #[test]
    fn selectors_pick_by_labels_and_expressions() {
        let labels = json!({"tier": "web", "env": "prod"});
        assert!(matches_label_selector(&json!({}), &labels));
        assert!(matches_label_selector(
            &json!({"matchLabels": {"tier": "web"}}),
            &labels
        ));
        assert!(!matches_label_selector(
            &json!({"matchLabels": {"tier": "db"}}),
            &labels
        ));
        assert!(matches_label_selector(
            &json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "qa"]}]}),
            &labels
        ));
        assert!(!matches_label_selector(
            &json!({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}),
            &labels
        ));
    }
}
