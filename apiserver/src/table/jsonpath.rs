//! The JSONPath subset custom resource printer columns use, evaluated as client-go's `jsonpath`
//! does with missing keys allowed: fields (`.spec.size`, `['app.kubernetes.io/name']`),
//! array indexes (`[0]`, `[-1]`), wildcards (`[*]`, `.*`), recursive descent (`..name`) and
//! filters (`[?(@.type=="Ready")]`, `[?(@.replicas>1)]`, `[?(@.ready)]`).

use serde_json::Value;

/// Why a printer column's `jsonPath` could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPathError {
    /// The path is empty or does not start with `.` or `[`.
    #[error("unrecognized column definition {path:?}: a path starts with '.' or '['")]
    Start { path: String },
    /// A `[` without its `]`, or a quote without its closing quote.
    #[error("unrecognized column definition {path:?}: unterminated {what}")]
    Unterminated { path: String, what: &'static str },
    /// Something inside brackets that is neither an index, `*`, a quoted name nor a filter.
    #[error("unrecognized column definition {path:?}: invalid {what} {text:?}")]
    Invalid {
        path: String,
        what: &'static str,
        text: String,
    },
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Recursive(String),
    Wildcard,
    Index(i64),
    Filter(Filter),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: JsonPath,
    test: Option<(Op, Value)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl JsonPath {
    /// Parses a column's `jsonPath`, such as `.status.conditions[?(@.type=="Ready")].status`.
    /// A leading `$` and surrounding `{…}` are accepted as client-go accepts them.
    pub fn parse(path: &str) -> Result<Self, JsonPathError> {
        let mut text = path.trim();
        if let Some(inner) = text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            text = inner.trim();
        }
        text = text.strip_prefix('$').unwrap_or(text);
        if !text.is_empty() && !text.starts_with(['.', '[']) {
            return Err(JsonPathError::Start {
                path: path.to_owned(),
            });
        }
        if text.is_empty() && !path.trim().starts_with('$') {
            return Err(JsonPathError::Start {
                path: path.to_owned(),
            });
        }
        Parser { path, rest: text }.steps()
    }

    /// Every value the path selects, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        let mut nodes = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for node in nodes {
                step.apply(node, &mut next);
            }
            nodes = next;
        }
        nodes
    }

    /// The first value the path selects: what a printer column shows.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.find(root).into_iter().next()
    }
}

impl Step {
    fn apply<'a>(&self, node: &'a Value, out: &mut Vec<&'a Value>) {
        match self {
            Step::Field(name) => {
                if let Some(v) = node.get(name.as_str()) {
                    out.push(v);
                }
            }
            Step::Recursive(name) => descend(node, name, out),
            Step::Wildcard => match node {
                Value::Object(map) => out.extend(map.values()),
                Value::Array(items) => out.extend(items),
                _ => {}
            },
            Step::Index(i) => {
                if let Value::Array(items) = node {
                    let len = items.len() as i64;
                    let at = if *i < 0 { len + i } else { *i };
                    if (0..len).contains(&at) {
                        out.extend(items.get(at as usize));
                    }
                }
            }
            Step::Filter(filter) => match node {
                Value::Array(items) => out.extend(items.iter().filter(|v| filter.matches(v))),
                Value::Object(map) => out.extend(map.values().filter(|v| filter.matches(v))),
                _ => {}
            },
        }
    }
}

fn descend<'a>(node: &'a Value, name: &str, out: &mut Vec<&'a Value>) {
    match node {
        Value::Object(map) => {
            if let Some(v) = map.get(name) {
                out.push(v);
            }
            for v in map.values() {
                descend(v, name, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                descend(v, name, out);
            }
        }
        _ => {}
    }
}

impl Filter {
    fn matches(&self, item: &Value) -> bool {
        let Some(left) = self.left.first(item) else {
            return false;
        };
        let Some((op, right)) = &self.test else {
            return !left.is_null();
        };
        let ordering = match (left, right) {
            (Value::String(a), Value::String(b)) => a.cmp(b),
            (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
                (Some(a), Some(b)) => match a.partial_cmp(&b) {
                    Some(o) => o,
                    None => return false,
                },
                _ => return false,
            },
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Null, Value::Null) => std::cmp::Ordering::Equal,
            _ => return *op == Op::Ne,
        };
        match op {
            Op::Eq => ordering.is_eq(),
            Op::Ne => ordering.is_ne(),
            Op::Lt => ordering.is_lt(),
            Op::Le => ordering.is_le(),
            Op::Gt => ordering.is_gt(),
            Op::Ge => ordering.is_ge(),
        }
    }
}

struct Parser<'p> {
    /// The whole path, for error messages.
    path: &'p str,
    rest: &'p str,
}

impl<'p> Parser<'p> {
    fn steps(mut self) -> Result<JsonPath, JsonPathError> {
        let mut steps = Vec::new();
        while !self.rest.is_empty() {
            if let Some(rest) = self.rest.strip_prefix("..") {
                self.rest = rest;
                let name = self.name();
                if name.is_empty() {
                    return Err(self.invalid("recursive descent", ".."));
                }
                steps.push(Step::Recursive(name));
            } else if let Some(rest) = self.rest.strip_prefix('.') {
                self.rest = rest;
                if let Some(rest) = self.rest.strip_prefix('*') {
                    self.rest = rest;
                    steps.push(Step::Wildcard);
                } else {
                    let name = self.name();
                    // A trailing or doubled dot selects the current node, as in `{.}`.
                    if !name.is_empty() {
                        steps.push(Step::Field(name));
                    }
                }
            } else if self.rest.starts_with('[') {
                steps.push(self.bracket()?);
            } else {
                let text = self.rest.to_owned();
                return Err(self.invalid("path segment", &text));
            }
        }
        Ok(JsonPath { steps })
    }

    /// A field name up to the next `.` or `[`; `\.` escapes a dot.
    fn name(&mut self) -> String {
        let mut name = String::new();
        let mut chars = self.rest.char_indices().peekable();
        let mut end = self.rest.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' if matches!(chars.peek(), Some((_, '.'))) => {
                    name.push('.');
                    chars.next();
                }
                '.' | '[' => {
                    end = i;
                    break;
                }
                c => name.push(c),
            }
        }
        self.rest = &self.rest[end..];
        name.trim().to_owned()
    }

    fn bracket(&mut self) -> Result<Step, JsonPathError> {
        // Past the '['.
        let body = &self.rest[1..];
        if let Some(after) = body.strip_prefix("?(") {
            let close = matching_paren(after).ok_or_else(|| self.unterminated("filter"))?;
            let inner = &after[..close];
            let rest = after[close + 1..]
                .trim_start()
                .strip_prefix(']')
                .ok_or_else(|| self.unterminated("filter"))?;
            self.rest = rest;
            return Ok(Step::Filter(self.filter(inner)?));
        }
        let trimmed = body.trim_start();
        if let Some(quote) = trimmed.chars().next().filter(|c| *c == '\'' || *c == '"') {
            let quoted = &trimmed[1..];
            let close = quoted
                .find(quote)
                .ok_or_else(|| self.unterminated("quoted name"))?;
            let name = quoted[..close].to_owned();
            self.rest = quoted[close + 1..]
                .trim_start()
                .strip_prefix(']')
                .ok_or_else(|| self.unterminated("bracket"))?;
            return Ok(Step::Field(name));
        }
        let close = body.find(']').ok_or_else(|| self.unterminated("bracket"))?;
        let inner = body[..close].trim();
        self.rest = &body[close + 1..];
        if inner == "*" {
            return Ok(Step::Wildcard);
        }
        inner
            .parse::<i64>()
            .map(Step::Index)
            .map_err(|_| self.invalid("array index", inner))
    }

    fn filter(&self, text: &str) -> Result<Filter, JsonPathError> {
        const OPS: &[(&str, Op)] = &[
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ];
        let found = OPS
            .iter()
            .filter_map(|(token, op)| text.find(token).map(|at| (at, *token, *op)))
            .min_by_key(|(at, token, _)| (*at, std::cmp::Reverse(token.len())));
        let (left, test) = match found {
            Some((at, token, op)) => {
                let right = literal(text[at + token.len()..].trim())
                    .ok_or_else(|| self.invalid("filter value", text))?;
                (&text[..at], Some((op, right)))
            }
            None => (text, None),
        };
        let left = left.trim();
        let relative = left
            .strip_prefix('@')
            .ok_or_else(|| self.invalid("filter", text))?;
        let left = if relative.is_empty() {
            JsonPath { steps: Vec::new() }
        } else {
            Parser {
                path: self.path,
                rest: relative,
            }
            .steps()?
        };
        Ok(Filter { left, test })
    }

    fn unterminated(&self, what: &'static str) -> JsonPathError {
        JsonPathError::Unterminated {
            path: self.path.to_owned(),
            what,
        }
    }

    fn invalid(&self, what: &'static str, text: &str) -> JsonPathError {
        JsonPathError::Invalid {
            path: self.path.to_owned(),
            what,
            text: text.to_owned(),
        }
    }
}

/// The index of the `)` closing a filter, skipping quoted strings and nested parentheses.
fn matching_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => return Some(i),
            (None, ')') => depth -= 1,
            _ => {}
        }
    }
    None
}

/// A filter's right-hand side: a quoted string, a number, `true`, `false` or `null`.
fn literal(text: &str) -> Option<Value> {
    for quote in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return Some(Value::String(inner.to_owned()));
        }
    }
    match text {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        "null" => Some(Value::Null),
        _ => serde_json::from_str::<serde_json::Number>(text)
            .ok()
            .map(Value::Number),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object() -> Value {
        json!({
            "metadata": {"name": "w", "labels": {"app": "web", "app.kubernetes.io/name": "shop"}},
            "spec": {"size": 3, "ports": [{"port": 80}, {"port": 443}]},
            "status": {"conditions": [
                {"type": "Synced", "status": "False", "observed": 1},
                {"type": "Ready", "status": "True", "observed": 2}
            ]}
        })
    }

    fn first(path: &str) -> Option<Value> {
        JsonPath::parse(path).unwrap().first(&object()).cloned()
    }

    #[test]
    fn fields_indexes_and_quoted_names() {
        assert_eq!(first(".spec.size"), Some(json!(3)));
        assert_eq!(first(".metadata.labels.app"), Some(json!("web")));
        assert_eq!(
            first(".metadata.labels['app.kubernetes.io/name']"),
            Some(json!("shop"))
        );
        assert_eq!(
            first(r".metadata.labels.app\.kubernetes\.io/name"),
            Some(json!("shop"))
        );
        assert_eq!(first(".spec.ports[1].port"), Some(json!(443)));
        assert_eq!(first(".spec.ports[-1].port"), Some(json!(443)));
        assert_eq!(first(".spec.ports[*].port"), Some(json!(80)));
        assert_eq!(first("$.spec.size"), Some(json!(3)));
        assert_eq!(first("..port"), Some(json!(80)));
    }

    #[test]
    fn missing_keys_select_nothing() {
        assert_eq!(first(".spec.missing.deeper"), None);
        assert_eq!(first(".spec.ports[5].port"), None);
        assert_eq!(first(".spec.size.port"), None);
    }

    #[test]
    fn filters() {
        assert_eq!(
            first(r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(json!("True"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type == 'Synced')].status"),
            Some(json!("False"))
        );
        assert_eq!(
            first(r#".status.conditions[?(@.type!="Synced")].type"#),
            Some(json!("Ready"))
        );
        assert_eq!(
            first(".status.conditions[?(@.observed>1)].type"),
            Some(json!("Ready"))
        );
        assert_eq!(
            first(".status.conditions[?(@.observed)].type"),
            Some(json!("Synced"))
        );
        assert_eq!(
            first(r#".status.conditions[?(@.type=="Gone")].status"#),
            None
        );
    }

    #[test]
    fn malformed_paths_are_errors() {
        assert!(matches!(
            JsonPath::parse("spec.size"),
            Err(JsonPathError::Start { .. })
        ));
        assert!(matches!(
            JsonPath::parse(".spec.ports[0"),
            Err(JsonPathError::Unterminated { .. })
        ));
        assert!(matches!(
            JsonPath::parse(".spec.ports[x]"),
            Err(JsonPathError::Invalid { .. })
        ));
        assert!(matches!(
            JsonPath::parse(r#".status.conditions[?(@.type=="Ready"]"#),
            Err(JsonPathError::Unterminated { .. })
        ));
        let message = JsonPath::parse("spec").unwrap_err().to_string();
        assert!(message.contains("\"spec\""), "{message}");
    }
}
