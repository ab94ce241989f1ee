//! After the examples of Kubernetes 1.35's `pkg/cel/library/urls.go` and Go's `net/url`
//! parsing rules.

use crate::library::testing::*;
use crate::{Key, Map, Value};

fn url(text: &str) -> Value {
    eval("url", None, &[s(text)]).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn accessors() {
    let on = |u: &str, function: &str| eval(function, Some(url(u)), &[]);
    let cases: Vec<(Result<Value, String>, &str)> = vec![
        (on("https://example.com/", "getScheme"), "https"),
        (on("HTTPS://example.com/", "getScheme"), "https"),
        (on("https://example.com:80/", "getHost"), "example.com:80"),
        (on("https://example.com/", "getHost"), "example.com"),
        (on("https://[::1]:80/", "getHost"), "[::1]:80"),
        (on("https://[::1]/", "getHost"), "[::1]"),
        (on("/path", "getHost"), ""),
        (on("https://example.com:80/", "getHostname"), "example.com"),
        (on("https://127.0.0.1:80/", "getHostname"), "127.0.0.1"),
        (on("https://[::1]:80/", "getHostname"), "::1"),
        (on("/path", "getHostname"), ""),
        (on("https://example.com:80/", "getPort"), "80"),
        (on("https://example.com/", "getPort"), ""),
        (on("/path", "getPort"), ""),
        (on("https://example.com/path", "getEscapedPath"), "/path"),
        (
            on("https://example.com/path with spaces/", "getEscapedPath"),
            "/path%20with%20spaces/",
        ),
        (on("https://example.com/a%2Fb", "getEscapedPath"), "/a%2Fb"),
        (on("https://example.com", "getEscapedPath"), ""),
        (on("/path", "getScheme"), ""),
        (on("https://user:pw@example.com/", "getHost"), "example.com"),
        (on("https://example.com/p#frag", "getEscapedPath"), "/p"),
    ];
    for (got, want) in cases {
        assert_value(got, s(want));
    }
    let mut map = Map::default();
    map.entries
        .insert(Key::String("k".into()), strs(&["a", "b"]));
    map.entries.insert(Key::String("x".into()), strs(&["y z"]));
    assert_value(
        eval(
            "getQuery",
            Some(url("https://example.com/path?k=a&k=b&x=y+z")),
            &[],
        ),
        Value::Map(map.into()),
    );
    assert_value(
        eval("getQuery", Some(url("https://example.com/path")), &[]),
        Value::Map(Map::default().into()),
    );
    assert!(url("https://example.com/").equals(&url("https://example.com/")));
    assert!(!url("https://example.com/").equals(&url("https://example.org/")));
    assert_eq!(url("/").type_name().as_str(), "kubernetes.URL");
}

#[test]
fn what_kubernetes_accepts() {
    for (text, valid) in [
        ("https://example.com", true),
        ("https://example.com:80/path?query=val#fragment", true),
        ("/absolute-path", true),
        ("*", true),
        ("mailto:someone@example.com", true),
        ("example.com", false),
        ("../relative-path", false),
        ("", false),
        ("https://example.com:port/", false),
        ("https://a b/", false),
        ("https://[::1/", false),
        ("https://example.com/%zz", false),
        ("https://exa\tmple.com/", false),
        (":foo", false),
    ] {
        assert_value(eval("isURL", None, &[s(text)]), Value::Bool(valid));
    }
    let errors = [
        (
            "example.com",
            "URL parse error during conversion from string: parse \"example.com\": invalid URI for request",
        ),
        (
            "",
            "URL parse error during conversion from string: parse \"\": empty url",
        ),
        (
            "https://example.com:port/",
            "URL parse error during conversion from string: parse \"https://example.com:port/\": invalid port \":port\" after host",
        ),
        (
            "https://a b/",
            "URL parse error during conversion from string: parse \"https://a b/\": invalid character \" \" in host name",
        ),
        (
            "https://[::1/",
            "URL parse error during conversion from string: parse \"https://[::1/\": missing ']' in host",
        ),
        (
            "https://example.com/%zz",
            "URL parse error during conversion from string: parse \"https://example.com/%zz\": invalid URL escape \"%zz\"",
        ),
        (
            ":foo",
            "URL parse error during conversion from string: parse \":foo\": missing protocol scheme",
        ),
        (
            "https://exa\tmple.com/",
            "URL parse error during conversion from string: parse \"https://exa\\tmple.com/\": net/url: invalid control character in URL",
        ),
    ];
    for (text, want) in errors {
        assert_error(eval("url", None, &[s(text)]), want);
    }
    assert_error(
        eval("isURL", None, &[Value::Int(1)]),
        "no such overload: isURL",
    );
}

#[test]
fn url_costs() {
    assert_eq!(run("url", None, &[s("https://example.com/")]).1, 2);
    assert_eq!(run("isURL", None, &[s("https://example.com/")]).1, 1);
    assert_eq!(run("getHost", Some(url("https://example.com/")), &[]).1, 1);
}

#[test]
fn an_escape_cut_through_a_character_is_quoted_by_bytes() {
    assert_error(
        eval("url", None, &[s("/a%€")]),
        "URL parse error during conversion from string: parse \"/a%€\": invalid URL escape \"%\\xe2\\x82\"",
    );
}
