//! After Kubernetes 1.35's `pkg/cel/library/cidr_test.go`.

use crate::Value;
use crate::library::testing::*;

fn cidr(text: &str) -> Value {
    eval("cidr", None, &[s(text)]).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn ip(text: &str) -> Value {
    eval("ip", None, &[s(text)]).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn cidr_functions() {
    let t = Value::Bool(true);
    let f = Value::Bool(false);
    let on = |c: &str, function: &str, args: &[Value]| eval(function, Some(cidr(c)), args);
    let cases: Vec<(Result<Value, String>, Value)> = vec![
        (
            on("192.168.0.0/24", "containsIP", &[ip("192.168.0.1")]),
            t.clone(),
        ),
        (
            on("192.168.0.0/24", "containsIP", &[ip("192.168.1.1")]),
            f.clone(),
        ),
        (
            on("192.168.0.0/24", "containsIP", &[s("192.168.0.1")]),
            t.clone(),
        ),
        (
            on("192.168.0.0/24", "containsIP", &[s("192.168.1.1")]),
            f.clone(),
        ),
        (on("192.168.0.0/24", "containsIP", &[ip("::1")]), f.clone()),
        (
            on("192.168.0.0/24", "containsCIDR", &[cidr("192.168.0.0/25")]),
            t.clone(),
        ),
        (
            on("192.168.0.0/24", "containsCIDR", &[cidr("192.168.0.1/32")]),
            t.clone(),
        ),
        (
            on("192.168.0.0/24", "containsCIDR", &[cidr("192.168.0.0/23")]),
            f.clone(),
        ),
        (
            on("192.168.0.0/24", "containsCIDR", &[cidr("192.169.0.1/32")]),
            f.clone(),
        ),
        (
            on("192.168.0.0/24", "containsCIDR", &[s("192.168.0.0/25")]),
            t.clone(),
        ),
        (
            on("192.168.0.0/24", "containsCIDR", &[s("192.168.0.0/23")]),
            f.clone(),
        ),
        (on("192.168.0.0/24", "prefixLength", &[]), Value::Int(24)),
        (
            on("2001:db8::/32", "containsIP", &[ip("2001:db8::1")]),
            t.clone(),
        ),
        (
            on("2001:db8::/32", "containsIP", &[ip("2001:dc8::1")]),
            f.clone(),
        ),
        (
            on("2001:db8::/32", "containsIP", &[s("2001:db8::1")]),
            t.clone(),
        ),
        (
            on("2001:db8::/32", "containsCIDR", &[cidr("2001:db8::/33")]),
            t.clone(),
        ),
        (
            on("2001:db8::/32", "containsCIDR", &[cidr("2001:db8::/31")]),
            f.clone(),
        ),
        (
            on("2001:db8::/32", "containsCIDR", &[s("2001:db8::/33")]),
            t.clone(),
        ),
        (on("2001:db8::/32", "prefixLength", &[]), Value::Int(32)),
        (on("0.0.0.0/0", "containsIP", &[ip("8.8.8.8")]), t.clone()),
        (on("::/0", "containsIP", &[ip("2001:db8::1")]), t.clone()),
        (
            eval("string", None, &[cidr("192.168.0.0/24")]),
            s("192.168.0.0/24"),
        ),
        (
            eval("string", None, &[cidr("2001:db8:1::/32")]),
            s("2001:db8:1::/32"),
        ),
        (eval("isCIDR", None, &[s("192.168.0.0/24")]), t.clone()),
        (eval("isCIDR", None, &[s("192.168.0.0/")]), f.clone()),
        (eval("isCIDR", None, &[s("192.168.0.0/33")]), f.clone()),
    ];
    for (got, want) in cases {
        assert_value(got, want);
    }
    let masked = |c: &str| eval("masked", Some(cidr(c)), &[]).unwrap();
    assert!(masked("192.168.0.1/24").equals(&cidr("192.168.0.0/24")));
    assert!(masked("2001:db8:1::/32").equals(&cidr("2001:db8::/32")));
    assert!(!cidr("192.168.0.1/24").equals(&cidr("192.168.0.0/24")));
    assert!(
        eval("ip", Some(cidr("192.168.0.0/24")), &[])
            .unwrap()
            .equals(&ip("192.168.0.0"))
    );
    assert!(
        eval("ip", Some(cidr("2001:db8::/32")), &[])
            .unwrap()
            .equals(&ip("2001:db8::"))
    );
    assert_eq!(cidr("::/0").type_name().as_str(), "net.CIDR");
}

#[test]
fn parse_errors_are_upstream_s() {
    let cases = [
        (
            "192.168.0.0/",
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0/\"): bad bits after slash: \"\"",
        ),
        (
            "2001:db8::/",
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"2001:db8::/\"): bad bits after slash: \"\"",
        ),
        (
            "192.168.0.0",
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0\"): no '/'",
        ),
        (
            "192.168.0.0/024",
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0/024\"): bad bits after slash: \"024\"",
        ),
        (
            "192.168.0.0/33",
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"192.168.0.0/33\"): prefix length out of range",
        ),
        (
            "1.2.3/8",
            "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"1.2.3/8\"): ParseAddr(\"1.2.3\"): IPv4 address too short",
        ),
        (
            "::ffff:1.2.3.4/120",
            "network address parse error during conversion from string: IPv4-mapped IPv6 address \"::ffff:1.2.3.4/120\" is not allowed",
        ),
    ];
    for (text, want) in cases {
        assert_error(eval("cidr", None, &[s(text)]), want);
    }
    // Upstream drops the address's parse error (it reports on the CIDR instead).
    assert_error(
        eval("containsIP", Some(cidr("::/0")), &[s("x")]),
        "no such overload",
    );
    assert_error(
        eval("containsCIDR", Some(cidr("::/0")), &[s("x")]),
        "network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix(\"x\"): no '/'",
    );
    assert_error(
        eval("containsIP", Some(cidr("::/0")), &[Value::Int(1)]),
        "no such overload: containsIP",
    );
}

#[test]
fn cidr_costs() {
    assert_eq!(run("cidr", None, &[s("192.168.0.0/24")]).1, 2);
    assert_eq!(run("containsIP", Some(cidr("::/0")), &[ip("::1")]).1, 1);
    assert_eq!(run("containsIP", Some(cidr("::/0")), &[s("::1")]).1, 2);
    assert_eq!(
        run("containsCIDR", Some(cidr("::/0")), &[cidr("::/1")]).1,
        3
    );
    assert_eq!(run("containsCIDR", Some(cidr("::/0")), &[s("::/1")]).1, 4);
    assert_eq!(run("ip", Some(cidr("::/0")), &[]).1, 1);
}
