//! Kubernetes' format library: `format.named(name)` (an optional `kubernetes.NamedFormat`),
//! one `format.<name>()` per named format, and `<format>.validate(string)`, which is
//! `optional.none()` for a valid string and otherwise the list of Kubernetes' validation
//! messages, word for word.

use std::any::Any;
use std::sync::Arc;

use regex::Regex;

use super::urls::Url;
use super::{
    REGEX_STRING_LENGTH_COST_FACTOR, STRING_TRAVERSAL_COST_FACTOR, actual_size, ceil_cost, finish,
    no_such_overload,
};
use crate::{Budget, EvalError, Opaque, Value};

/// `kubernetes.NamedFormat`: one of the formats below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamedFormat {
    /// The name `format.named` takes.
    pub key: &'static str,
    /// Upstream's `Name`, which equality compares.
    pub name: &'static str,
    /// The regex size upstream assumes when costing `validate`.
    pub max_regex_size: u64,
}

const UUID_PATTERN: &str =
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$";
const DATE_TIME_PATTERN: &str =
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$";
const BASE64_PATTERN: &str =
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$";

const fn format(key: &'static str, name: &'static str, max_regex_size: u64) -> NamedFormat {
    NamedFormat {
        key,
        name,
        max_regex_size,
    }
}

/// Kubernetes 1.35's `ConstantFormats`.
pub const FORMATS: &[NamedFormat] = &[
    format("dns1123Label", "DNS1123Label", 30),
    format("dns1123Subdomain", "DNS1123Subdomain", 60),
    format("dns1035Label", "DNS1035Label", 30),
    format("qualifiedName", "QualifiedName", 60),
    format("dns1123LabelPrefix", "DNS1123LabelPrefix", 30),
    format("dns1123SubdomainPrefix", "DNS1123SubdomainPrefix", 60),
    format("dns1035LabelPrefix", "DNS1035LabelPrefix", 30),
    format("labelValue", "LabelValue", 40),
    format("uri", "URI", 1103),
    format("uuid", "uuid", UUID_PATTERN.len() as u64),
    format("byte", "byte", 84),
    format("date", "date", DATE_TIME_PATTERN.len() as u64),
    format("datetime", "datetime", DATE_TIME_PATTERN.len() as u64),
];

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

fn dns1123_subdomain_fmt() -> String {
    format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*")
}

fn label_value_fmt() -> String {
    format!("({LABEL_KEY_FMT})?")
}

/// Whether the whole of `value` matches `pattern` (anchored here).
fn full_match(pattern: &str, value: &str) -> bool {
    super::regex::compile(&format!("^(?:{pattern})$")).is_ok_and(|re| re.is_match(value))
}

/// apimachinery's `RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// apimachinery's `maskTrailingDash`, for names that are generation prefixes.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        // Go cuts bytes; a cut through a character leaves bytes no pattern accepts.
        let mut bytes = name.as_bytes()[..name.len() - 2].to_vec();
        bytes.push(b'a');
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        name.to_string()
    }
}

/// `validation.IsDNS1123Label` (lengths in characters, as that package words it).
fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !full_match(DNS1123_LABEL_FMT, value) {
        if full_match(&dns1123_subdomain_fmt(), value) {
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

/// `IsDNS1123Subdomain`; `unit` is how the package words lengths.
fn dns1123_subdomain(value: &str, unit: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push(format!("must be no more than 253 {unit}"));
    }
    if !full_match(&dns1123_subdomain_fmt(), value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            &dns1123_subdomain_fmt(),
            &["example.com"],
        ));
    }
    errs
}

fn dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !full_match(DNS1035_LABEL_FMT, value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `content.IsLabelKey` (`IsQualifiedName`).
fn qualified_name(value: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix, "bytes")
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples)
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !full_match(LABEL_KEY_FMT, name) {
        errs.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples)
        ));
    }
    errs
}

/// `content.IsLabelValue`.
fn label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !full_match(&label_value_fmt(), value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            &label_value_fmt(),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Go's `time.Parse("2006-01-02", s)` succeeding.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// kube-openapi's `strfmt.IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Ok(re) = super::regex::compile(DATE_TIME_PATTERN) else {
        return false;
    };
    let Some(m) = re.captures(parts[1]) else {
        return false;
    };
    let field = |i: usize| m.get(i).map_or("", |g| g.as_str());
    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
}

fn matches_pattern(pattern: &str, s: &str) -> bool {
    super::regex::compile(pattern).is_ok_and(|re: Arc<Regex>| re.is_match(s))
}

impl NamedFormat {
    /// The validation messages for `s`; empty when it is valid.
    pub fn validate(&self, s: &str) -> Vec<String> {
        match self.key {
            "dns1123Label" => dns1123_label(s),
            "dns1123Subdomain" => dns1123_subdomain(s, "characters"),
            "dns1035Label" => dns1035_label(s),
            "qualifiedName" => qualified_name(s),
            "dns1123LabelPrefix" => dns1123_label(&mask_trailing_dash(s)),
            "dns1123SubdomainPrefix" => dns1123_subdomain(&mask_trailing_dash(s), "characters"),
            "dns1035LabelPrefix" => dns1035_label(&mask_trailing_dash(s)),
            "labelValue" => label_value(s),
            "uri" => match Url::parse_request_uri(s) {
                Ok(()) => Vec::new(),
                Err(e) => vec![e],
            },
            "uuid" if !matches_pattern(UUID_PATTERN, s) => {
                vec!["does not match the UUID format".to_string()]
            }
            "byte" if !matches_pattern(BASE64_PATTERN, s) => vec!["invalid base64".to_string()],
            "date" if !is_date(s) => vec!["invalid date".to_string()],
            "datetime" if !is_date_time(s) => vec!["invalid datetime".to_string()],
            _ => Vec::new(),
        }
    }
}

impl Opaque for NamedFormat {
    fn type_name(&self) -> &'static str {
        "kubernetes.NamedFormat"
    }

    fn equals(&self, other: &dyn Opaque) -> bool {
        other
            .as_any()
            .downcast_ref::<NamedFormat>()
            .is_some_and(|o| o.name == self.name)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn lookup(key: &str) -> Option<NamedFormat> {
    FORMATS.iter().find(|f| f.key == key).copied()
}

/// The format functions; `None` for other names.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    if function == "format.named" {
        let (None, [Value::String(name)]) = (receiver, args) else {
            return Some(Err(no_such_overload(function)));
        };
        let found = lookup(name).map(|f| Arc::new(Value::Opaque(Arc::new(f))));
        return finish(budget, 1, Ok(Value::Optional(found)));
    }
    if let Some(key) = function.strip_prefix("format.") {
        let found = lookup(key)?;
        if receiver.is_some() || !args.is_empty() {
            return Some(Err(no_such_overload(function)));
        }
        return finish(budget, 1, Ok(Value::Opaque(Arc::new(found))));
    }
    if function != "validate" {
        return None;
    }
    let format = match receiver? {
        Value::Opaque(o) => o.as_any().downcast_ref::<NamedFormat>()?,
        _ => return None,
    };
    let [text @ Value::String(s)] = args else {
        return Some(Err(no_such_overload(function)));
    };
    let text_cost = ((1.0 + actual_size(text) as f64) * STRING_TRAVERSAL_COST_FACTOR).ceil() as u64;
    let regex_cost = ceil_cost(format.max_regex_size, REGEX_STRING_LENGTH_COST_FACTOR);
    let errors = format.validate(s);
    let result = if errors.is_empty() {
        Value::Optional(None)
    } else {
        let list = errors.iter().map(|e| Value::string(e)).collect();
        Value::Optional(Some(Arc::new(Value::list(list))))
    };
    finish(budget, text_cost.saturating_mul(regex_cost), Ok(result))
}

#[cfg(test)]
mod tests;
