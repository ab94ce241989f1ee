//! Kubernetes' URL library: `url(string)`, `isURL`, and on `kubernetes.URL` values
//! `getScheme`, `getHost`, `getHostname`, `getPort`, `getEscapedPath` and `getQuery` (a map
//! of lists). A URL is what Go's `url.ParseRequestURI` accepts (an absolute URI or an
//! absolute path), read as `url.Parse` reads it; errors are Go's, as Kubernetes wraps them.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::ip::go_quote;
use super::strings::go_quote_bytes;
use super::{error, finish, no_such_overload, string_traversal_cost};
use crate::{Budget, EvalError, Key, Map, Opaque, Value};

/// `kubernetes.URL`: Go's `url.URL` fields that the accessors read.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Url {
    pub scheme: String,
    pub opaque: String,
    pub host: String,
    pub path: String,
    pub raw_path: String,
    pub raw_query: String,
    pub fragment: String,
    pub user: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone) && b"!$&'()*+,;=:[]<>\"".contains(&c) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return c == b'?',
            Mode::UserPassword => return c == b'@' || c == b'/' || c == b'?' || c == b':',
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            _ => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && b"!()*".contains(&c) {
        return false;
    }
    true
}

fn unhex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Go's `unescape`: percent-decoding, with its checks for hosts and zones.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let escape = || {
                    let end = (i + 3).min(bytes.len());
                    format!("invalid URL escape {}", go_quote_bytes(&bytes[i..end]))
                };
                let (Some(hi), Some(lo)) = (
                    bytes.get(i + 1).and_then(|c| unhex(*c)),
                    bytes.get(i + 2).and_then(|c| unhex(*c)),
                ) else {
                    return Err(escape());
                };
                if mode == Mode::Host && hi < 8 && &s[i..i + 3] != "%25" {
                    return Err(escape());
                }
                if mode == Mode::Zone {
                    let v = hi << 4 | lo;
                    if &s[i..i + 3] != "%25" && v != b' ' && should_escape(v, Mode::Host) {
                        return Err(escape());
                    }
                }
                out.push(hi << 4 | lo);
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        go_quote(&s[i..i + 1])
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `escape` for paths.
fn escape_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, Mode::Path) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

fn valid_encoded_path(s: &str) -> bool {
    s.bytes()
        .all(|c| b"!$&'()*+,;=:@[]%".contains(&c) || !should_escape(c, Mode::Path))
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `getScheme`.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_string()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".to_string());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
        if let Some(zone) = host[..i].find("%25") {
            let h1 = unescape(&host[..zone], Mode::Host)?;
            let h2 = unescape(&host[zone..i], Mode::Zone)?;
            let h3 = unescape(&host[i..], Mode::Host)?;
            return Ok(h1 + &h2 + &h3);
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_userinfo(s: &str) -> bool {
    s.bytes()
        .all(|c| c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c))
}

impl Url {
    /// Go's `url.parse(raw, viaRequest)`.
    fn parse_inner(raw: &str, via_request: bool) -> Result<Url, String> {
        if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
            return Err("net/url: invalid control character in URL".to_string());
        }
        if raw.is_empty() && via_request {
            return Err("empty url".to_string());
        }
        let mut url = Url::default();
        if raw == "*" {
            url.path = "*".to_string();
            return Ok(url);
        }
        let (scheme, mut rest) = split_scheme(raw)?;
        url.scheme = scheme.to_ascii_lowercase();
        if rest.ends_with('?') && rest.matches('?').count() == 1 {
            rest = &rest[..rest.len() - 1];
        } else if let Some((before, query)) = rest.split_once('?') {
            url.raw_query = query.to_string();
            rest = before;
        }
        if !rest.starts_with('/') {
            if !url.scheme.is_empty() {
                url.opaque = rest.to_string();
                return Ok(url);
            }
            if via_request {
                return Err("invalid URI for request".to_string());
            }
            if rest.split('/').next().is_some_and(|seg| seg.contains(':')) {
                return Err("first path segment in URL cannot contain colon".to_string());
            }
        }
        if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
            && rest.starts_with("//")
        {
            let mut authority = &rest[2..];
            rest = "";
            if let Some(i) = authority.find('/') {
                rest = &authority[i..];
                authority = &authority[..i];
            }
            match authority.rfind('@') {
                None => url.host = parse_host(authority)?,
                Some(i) => {
                    url.host = parse_host(&authority[i + 1..])?;
                    let userinfo = &authority[..i];
                    if !valid_userinfo(userinfo) {
                        return Err("net/url: invalid userinfo".to_string());
                    }
                    let user = match userinfo.split_once(':') {
                        Some((u, p)) => {
                            unescape(u, Mode::UserPassword)?;
                            unescape(p, Mode::UserPassword)?;
                            userinfo
                        }
                        None => {
                            unescape(userinfo, Mode::UserPassword)?;
                            userinfo
                        }
                    };
                    url.user = Some(user.to_string());
                }
            }
        }
        url.path = unescape(rest, Mode::Path)?;
        if escape_path(&url.path) != rest {
            url.raw_path = rest.to_string();
        }
        Ok(url)
    }

    /// Go's `url.ParseRequestURI` accepting `raw`, or its error as Go prints it
    /// (`parse "x": invalid URI for request`).
    pub fn parse_request_uri(raw: &str) -> Result<(), String> {
        Url::parse_inner(raw, true)
            .map(|_| ())
            .map_err(|e| format!("parse {}: {e}", go_quote(raw)))
    }

    /// Kubernetes' `url()`: `url.ParseRequestURI` must accept it, then `url.Parse` reads it.
    pub fn parse_kubernetes(raw: &str) -> Result<Url, String> {
        let wrap = |input: &str, err: String| {
            format!(
                "URL parse error during conversion from string: parse {}: {err}",
                go_quote(input)
            )
        };
        Url::parse_inner(raw, true).map_err(|e| wrap(raw, e))?;
        let (before, fragment) = raw.split_once('#').unwrap_or((raw, ""));
        let mut url = Url::parse_inner(before, false).map_err(|e| wrap(before, e))?;
        if !fragment.is_empty() {
            url.fragment = unescape(fragment, Mode::Fragment).map_err(|e| wrap(raw, e))?;
        }
        Ok(url)
    }

    /// Go's `URL.EscapedPath`.
    pub fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded_path(&self.raw_path)
            && unescape(&self.raw_path, Mode::Path).ok().as_ref() == Some(&self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".to_string();
        }
        escape_path(&self.path)
    }

    /// Go's `splitHostPort` of the host: (hostname without brackets, port).
    fn host_port(&self) -> (&str, &str) {
        let mut host = self.host.as_str();
        let mut port = "";
        if let Some(colon) = host.rfind(':')
            && valid_optional_port(&host[colon..])
        {
            port = &host[colon + 1..];
            host = &host[..colon];
        }
        if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
            host = &host[1..host.len() - 1];
        }
        (host, port)
    }

    /// Go's `url.ParseQuery`, keeping what parses: a map of each key's values in order.
    pub fn query(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(key), Ok(value)) = (
                unescape(key, Mode::QueryComponent),
                unescape(value, Mode::QueryComponent),
            ) else {
                continue;
            };
            out.entry(key).or_default().push(value);
        }
        out
    }
}

impl Opaque for Url {
    fn type_name(&self) -> &'static str {
        "kubernetes.URL"
    }

    fn equals(&self, other: &dyn Opaque) -> bool {
        other.as_any().downcast_ref::<Url>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn as_url(value: &Value) -> Option<&Url> {
    match value {
        Value::Opaque(o) => o.as_any().downcast_ref::<Url>(),
        _ => None,
    }
}

/// The URL functions; `None` for other names and receivers.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    match (function, receiver, args) {
        ("url", None, [text @ Value::String(s)]) => {
            let result = Url::parse_kubernetes(s)
                .map(|u| Value::Opaque(Arc::new(u)))
                .map_err(error);
            return finish(budget, string_traversal_cost(text), result);
        }
        ("isURL", None, [Value::String(s)]) => {
            let valid = Url::parse_inner(s, true).is_ok();
            return finish(budget, 1, Ok(Value::Bool(valid)));
        }
        ("url" | "isURL", _, _) => return Some(Err(no_such_overload(function))),
        _ => {}
    }
    let url = as_url(receiver?)?;
    let result = match (function, args) {
        ("getScheme", []) => Value::string(&url.scheme),
        ("getHost", []) => Value::string(&url.host),
        ("getHostname", []) => Value::string(url.host_port().0),
        ("getPort", []) => Value::string(url.host_port().1),
        ("getEscapedPath", []) => Value::string(&url.escaped_path()),
        ("getQuery", []) => {
            let mut map = Map::default();
            for (key, values) in url.query() {
                let values = values.iter().map(|v| Value::string(v)).collect();
                map.entries
                    .insert(Key::String(key.into()), Value::list(values));
            }
            Value::Map(Arc::new(map))
        }
        (
            "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" | "getQuery",
            _,
        ) => return Some(Err(no_such_overload(function))),
        _ => return None,
    };
    finish(budget, 1, Ok(result))
}

#[cfg(test)]
mod tests;
