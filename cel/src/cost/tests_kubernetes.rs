//! The estimated ranges of Kubernetes' library cost tests (`apiserver/pkg/cel/library/
//! cost_test.go` at v0.35.0, Apache-2.0; its size estimator gives strings and bytes up to 12)
//! and of cel-go's `ext` lists and sets cost tests (`ext/lists_test.go`, `ext/sets_test.go`
//! at v0.26.0, sizes by path hints). JSON patch functions, which CRD rules cannot use, are
//! left out, as are cases the homogeneous-literal check Kubernetes enables refuses; the
//! authorization cases, which need the admission variables, are in `library/authz/tests.rs`.

use super::tests::{estimate_in, hints};
use crate::{Env, SizeEstimator, Type};

/// Kubernetes' test estimator: strings and bytes have at most 12 elements.
struct ByType;

impl SizeEstimator for ByType {
    fn size(&self, _: &[&str]) -> Option<(u64, u64)> {
        None
    }

    fn size_of_type(&self, ty: &Type) -> Option<(u64, u64)> {
        matches!(ty, Type::String | Type::Bytes).then_some((0, 12))
    }
}

fn check(cases: &[(&str, (u64, u64))]) {
    let env = Env::new();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(source, wanted)| {
            let got = estimate_in(&env, source, &ByType);
            (got != *wanted).then(|| format!("{source}: got {got:?}, wanted {wanted:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

const INTS: &str = "[1, 2, 3, 4, 5]";
const UINTS: &str = "[uint(1), uint(2), uint(3), uint(4), uint(5)]";
const DOUBLES: &str = "[1.0, 2.0, 3.0, 4.0, 5.0]";
const BOOLS: &str = "[false, true, false, true, false]";
const STRINGS: &str =
    "['012345678901', '012345678901', '012345678901', '012345678901', '012345678901']";
const BYTES: &str = "[bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), \
                     bytes('012345678901'), bytes('012345678901')]";
const DURATIONS: &str =
    "[duration('1s'), duration('2s'), duration('3s'), duration('4s'), duration('5s')]";
const TIMESTAMPS: &str = "[timestamp('2011-01-01T00:00:00.000+01:00'), \
     timestamp('2011-01-02T00:00:00.000+01:00'), timestamp('2011-01-03T00:00:00.000+01:00'), \
     timestamp('2011-01-04T00:00:00.000+01:00'), timestamp('2011-01-05T00:00:00.000+01:00')]";
const STRING: &str = "'01234567890123456789012345678901234567890123456789'";

#[test]
fn lists_library() {
    let mut cases: Vec<(String, (u64, u64))> = Vec::new();
    for (list, cost) in [
        (INTS, (15, 15)),
        (UINTS, (20, 20)),
        (DOUBLES, (15, 15)),
        (DURATIONS, (20, 20)),
    ] {
        cases.push((format!("{list}.sum()"), cost));
    }
    for op in [".isSorted()", ".max()", ".min()"] {
        for (list, cost) in [
            (INTS, (15, 15)),
            (UINTS, (20, 20)),
            (DOUBLES, (15, 15)),
            (BOOLS, (15, 15)),
            (STRINGS, (15, 25)),
            (BYTES, (25, 35)),
            (DURATIONS, (20, 20)),
            (TIMESTAMPS, (20, 20)),
        ] {
            cases.push((format!("{list}{op}"), cost));
        }
    }
    for op in ["indexOf", "lastIndexOf"] {
        for (list, param, cost) in [
            (INTS, "3", (15, 15)),
            (UINTS, "uint(3)", (21, 21)),
            (DOUBLES, "3.0", (15, 15)),
            (BOOLS, "true", (15, 15)),
            (STRINGS, "'x'", (15, 25)),
            (BYTES, "bytes('x')", (26, 36)),
            (DURATIONS, "duration('3s')", (21, 21)),
            (
                TIMESTAMPS,
                "timestamp('2011-01-03T00:00:00.000+01:00')",
                (21, 21),
            ),
            (STRING, "'123'", (5, 5)),
        ] {
            cases.push((format!("{list}.{op}({param})"), cost));
        }
    }
    let cases: Vec<(&str, (u64, u64))> = cases.iter().map(|(s, c)| (s.as_str(), *c)).collect();
    check(&cases);
}

#[test]
fn urls_library() {
    let url = "url('https:://kubernetes.io/')";
    let mut cases = Vec::new();
    for op in [
        ".getScheme()",
        ".getHostname()",
        ".getHost()",
        ".getPort()",
        ".getEscapedPath()",
        ".getQuery()",
    ] {
        cases.push((format!("{url}{op}"), (4, 4)));
    }
    cases.push((format!("{url} == url('https:://kubernetes.io/')"), (7, 9)));
    cases.push((format!("{url} == url('http://x.b')"), (5, 5)));
    let cases: Vec<(&str, (u64, u64))> = cases.iter().map(|(s, c)| (s.as_str(), *c)).collect();
    check(&cases);
}

#[test]
fn ip_and_cidr_libraries() {
    let mut cases = Vec::new();
    for (ip, base) in [
        ("ip('192.168.0.1')", 2),
        ("ip('2001:db8:3333:4444:5555:6666:7777:8888')", 4),
    ] {
        cases.push((ip.to_string(), (base, base)));
        for op in [
            ".family()",
            ".isUnspecified()",
            ".isLoopback()",
            ".isLinkLocalMulticast()",
            ".isLinkLocalUnicast()",
            ".isGlobalUnicast()",
        ] {
            cases.push((format!("{ip}{op}"), (base + 1, base + 1)));
        }
        cases.push((format!("{ip} == ip('192.168.0.1')"), (base + 3, base + 3)));
    }
    for (source, cost) in [
        ("ip.isCanonical('192.168.0.1')", 3),
        (
            "ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')",
            8,
        ),
        ("ip.isCanonical('2001:db8::abcd')", 3),
    ] {
        cases.push((source.to_string(), (cost, cost)));
    }
    let common = [
        ("", (0, 0)),
        (".ip()", (1, 1)),
        (".prefixLength()", (1, 1)),
        (".masked()", (1, 1)),
        (" == cidr('2001:db8::/32')", (3, 3)),
    ];
    let v4 = [
        (".containsCIDR(cidr('192.0.0.0/30'))", (5, 9)),
        (".containsCIDR(cidr('192.168.0.0/16'))", (5, 9)),
        (".containsCIDR('192.0.0.0/30')", (5, 9)),
        (".containsCIDR('192.168.0.0/16')", (5, 9)),
        (".containsIP(ip('192.0.0.1'))", (2, 5)),
        (".containsIP(ip('192.169.0.1'))", (3, 6)),
        (".containsIP(ip('192.169.169.250'))", (3, 6)),
        (".containsIP('192.0.0.1')", (2, 5)),
        (".containsIP('192.169.0.1')", (3, 6)),
    ];
    let v6 = [
        (".containsCIDR(cidr('2001:db8::/126'))", (5, 9)),
        (".containsCIDR(cidr('2001:db8::/32'))", (5, 9)),
        (".containsCIDR('2001:db8::/126')", (5, 9)),
        (".containsCIDR('2001:db8::/32')", (5, 9)),
        (
            ".containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))",
            (5, 8),
        ),
        (".containsIP(ip('2001:db8::1'))", (3, 6)),
        (
            ".containsIP('2001:db8:3333:4444:5555:6666:7777:8888')",
            (5, 8),
        ),
        (".containsIP('2001:db8::1')", (3, 6)),
    ];
    for (cidr, ops) in [
        ("cidr('192.168.0.0/16')", common.iter().chain(&v4)),
        ("cidr('2001:db8::/32')", common.iter().chain(&v6)),
    ] {
        for (op, (min, max)) in ops {
            // Both CIDRs cost 2 to parse.
            cases.push((format!("{cidr}{op}"), (2 + min, 2 + max)));
        }
    }
    let cases: Vec<(&str, (u64, u64))> = cases.iter().map(|(s, c)| (s.as_str(), *c)).collect();
    check(&cases);
}

#[test]
fn strings_and_regex_libraries() {
    check(&[
        ("'ABCDEFGHIJ abcdefghij'.lowerAscii()", (3, 3)),
        (
            "'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()",
            (7, 9),
        ),
        ("'ABCDEFGHIJ abcdefghij'.upperAscii()", (3, 3)),
        (
            "'ABCDEFGHIJ abcdefghij'.upperAscii() == 'abcdefghij ABCDEFGHIJ'.upperAscii()",
            (7, 9),
        ),
        ("strings.quote('ABCDEFGHIJ abcdefghij')", (3, 3)),
        (
            "strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')",
            (7, 11),
        ),
        ("'abc 123 def 123'.replace('123', '456')", (3, 3)),
        ("'abc 123 def 123'.replace('', 'x')", (3, 3)),
        ("'abc 123 def 123'.replace('123', '')", (3, 3)),
        ("'abc 123 def 123'.replace('123', '456', 1)", (3, 3)),
        ("'abc 123 def 123'.split(' ')", (3, 3)),
        ("'abc 123 def 123'.split(' ', 1)", (3, 3)),
        ("'abc 123 def 123'.substring(5)", (2, 2)),
        ("'abc 123 def 123'.substring(5, 8)", (2, 2)),
        ("'  abc 123 def 123  '.trim()", (2, 2)),
        (
            "['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ')",
            (11, 23),
        ),
        (
            "['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join()",
            (10, 22),
        ),
        ("'abc 123 def 123'.find('123')", (2, 2)),
        ("'abc 123 def 123'.findAll('123')", (2, 2)),
        ("'abc 123 def 123'.findAll('123', 1)", (2, 2)),
    ]);
}

#[test]
fn quantity_format_and_semver_libraries() {
    check(&[
        (r#"quantity("12Mi")"#, (1, 1)),
        (r#"isQuantity("20")"#, (1, 1)),
        (r#"isQuantity("20M")"#, (1, 1)),
        (r#"quantity("200M") == quantity("200M")"#, (3, 3)),
        (
            r#"quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")"#,
            (3, 6),
        ),
        (
            r#"quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")"#,
            (3, 9),
        ),
        (r#"quantity("50M").isLessThan(quantity("50Mi"))"#, (3, 3)),
        (r#"quantity("50Mi").isGreaterThan(quantity("50M"))"#, (3, 3)),
        (
            r#"quantity("200M").compareTo(quantity("0.2G")) > 0"#,
            (4, 4),
        ),
        (
            r#"quantity("50k").add(quantity("20")) == quantity("50.02k")"#,
            (5, 5),
        ),
        (
            r#"quantity("50k").sub(quantity("20")) == quantity("49.98k")"#,
            (5, 5),
        ),
        (r#"quantity("50k").sub(20) == quantity("49980")"#, (4, 4)),
        (
            r#"quantity("50k").add(20).sub(quantity("100k")).asInteger() > 0"#,
            (6, 6),
        ),
        (
            r#"quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() > 0"#,
            (7, 7),
        ),
        (r#"quantity("50k").asInteger() > 0"#, (3, 3)),
        (r#"quantity("50").isInteger()"#, (2, 2)),
        (r#"quantity("50.703k").asApproximateFloat() > 0.0"#, (3, 3)),
        (r#"format.named("dns1123subdomain")"#, (1, 1)),
        (
            r#"format.named("dns1123Subdomain").value().validate("my-name")"#,
            (34, 34),
        ),
        (
            r#"format.named("dns1123Label").value().validate("my-name")"#,
            (34, 34),
        ),
        (
            r#"format.named("dns1123Label").value() == format.named("dns1123Label").value()"#,
            (5, 11),
        ),
        (r#"semver("1.0.0")"#, (1, 1)),
        (r#"semver("1234.56789012345.67890123456789")"#, (4, 4)),
        (r#"isSemver("1.0.0")"#, (1, 1)),
        (r#"isSemver("1234.56789012345.67890123456789")"#, (4, 4)),
        (r#"semver("1.2.3").major()"#, (2, 2)),
        (r#"semver("1.2.3").minor()"#, (2, 2)),
        (r#"semver("1.2.3").patch()"#, (2, 2)),
        (r#"semver("1.0.0").isLessThan(semver("1.1.0"))"#, (3, 3)),
        (r#"semver("1.1.0").isGreaterThan(semver("1.0.0"))"#, (3, 3)),
        (r#"semver("1.0.0").compareTo(semver("1.2.3"))"#, (3, 3)),
    ]);
}

#[test]
fn sets_library() {
    check(&[
        ("sets.contains([], [])", (21, 21)),
        ("sets.contains([1], [])", (21, 21)),
        ("sets.contains([1], [1])", (22, 22)),
        ("sets.contains([1], [1, 1])", (23, 23)),
        ("sets.contains([1, 1], [1])", (23, 23)),
        ("sets.contains([2, 1], [1])", (23, 23)),
        ("sets.contains([1, 2, 3, 4], [2, 3])", (29, 29)),
        ("sets.contains([[1], [2, 3]], [[2, 3]])", (53, 53)),
        ("!sets.contains([1], [2])", (23, 23)),
        ("!sets.contains([1], [1, 2])", (24, 24)),
        ("sets.equivalent([], [])", (21, 21)),
        ("sets.equivalent([1], [1])", (23, 23)),
        ("sets.equivalent([1], [1, 1])", (25, 25)),
        ("sets.equivalent([1, 1], [1])", (25, 25)),
        ("!sets.equivalent([2, 1], [1])", (26, 26)),
        ("!sets.equivalent([1], [1, 2])", (26, 26)),
        ("sets.intersects([1], [1])", (22, 22)),
        ("sets.intersects([1], [1, 1])", (23, 23)),
        ("sets.intersects([1, 1], [1])", (23, 23)),
        ("sets.intersects([2, 1], [1])", (23, 23)),
        ("sets.intersects([1], [1, 2])", (23, 23)),
        ("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3]])", (65, 65)),
        ("!sets.intersects([], [])", (22, 22)),
        ("!sets.intersects([1], [])", (22, 22)),
        ("!sets.intersects([1], [2])", (23, 23)),
    ]);
}

#[test]
fn two_variable_comprehensions() {
    check(&[
        ("{'a': 1, 'b': 2}.all(k, v, v > 0)", (37, 41)),
        ("{'a': 1, 'b': 2}.exists(k, v, v > 0)", (39, 43)),
        ("{'a': 1, 'b': 2}.existsOne(k, v, v > 0)", (38, 40)),
        ("{'a': 1, 'b': 2}.transformMap(k, v, v + 1)", (71, 71)),
        (
            "{'a': 1, 'b': 2}.transformMap(k, v, v < 5, v + 1)",
            (67, 75),
        ),
        (
            "{'a': 1, 'b': 2}.transformMapEntry(k, v, {k: v + 1})",
            (131, 131),
        ),
        (
            "{'a': 1, 'b': 2}.transformMapEntry(k, v, v < 5, {k: v + 1})",
            (67, 135),
        ),
        ("[1, 2].all(i, v, v > 0)", (17, 21)),
        ("[1, 2].exists(i, v, v > 0)", (19, 23)),
        ("[1, 2].existsOne(i, v, v > 0)", (18, 20)),
        ("[1, 2].transformList(i, v, v + 1)", (49, 49)),
        ("[1, 2].transformList(i, v, v < 5, v + 1)", (27, 53)),
    ]);
}

/// cel-go's `ext` lists (version 3) cost cases, sized by path hints.
#[test]
fn ext_lists_library() {
    let int_list = || Type::List(Box::new(Type::Int));
    let string_list = || Type::List(Box::new(Type::String));
    let dyn_list = || Type::List(Box::new(Type::Dyn));
    let string_maps = || {
        Type::List(Box::new(Type::Map(
            Box::new(Type::String),
            Box::new(Type::String),
        )))
    };
    let max = u64::MAX;
    type Case = (
        &'static str,
        Vec<(&'static str, Type)>,
        Vec<(&'static str, u64)>,
        (u64, u64),
    );
    let cases: Vec<Case> = vec![
        ("lists.range(4) == [0, 1, 2, 3]", vec![], vec![], (26, 26)),
        ("lists.range(4 / 2) == [0, 1]", vec![], vec![], (max, max)),
        (
            "lists.range(x) == [0, 1, 2, 3, 4]",
            vec![("x", Type::Int)],
            vec![("x", 10)],
            (max, max),
        ),
        (
            "x.flatten() == [1, 2, 3]",
            vec![("x", dyn_list())],
            vec![("x", 3)],
            (23, 26),
        ),
        (
            "[1, 2, 3].distinct() == [1, 2, 3]",
            vec![],
            vec![],
            (50, 50),
        ),
        ("[1, 1, 1].distinct() == [1]", vec![], vec![], (50, 50)),
        (
            "x.distinct() == ['hello']",
            vec![("x", string_list())],
            vec![("x", 3)],
            (23, 41),
        ),
        (
            "[1, 2, 3, 4, 5].slice(x, y) == [2, 3]",
            vec![("x", Type::Int), ("y", Type::Int)],
            vec![],
            (39, 39),
        ),
        (
            "z.slice(1, 3) == [2, 3]",
            vec![("z", int_list())],
            vec![("z", 10)],
            (25, 25),
        ),
        (
            "z.slice(x, y) == [2, 3]",
            vec![("x", Type::Int), ("y", Type::Int), ("z", int_list())],
            vec![("z", 10)],
            (35, 35),
        ),
        ("[1, 2, 3].slice(1, 3) == [2, 3]", vec![], vec![], (34, 34)),
        ("[3, 2, 1].reverse() == [1, 2, 3]", vec![], vec![], (35, 35)),
        (
            "x.reverse() == [1, 2, 3]",
            vec![("x", int_list())],
            vec![("x", 5)],
            (23, 28),
        ),
        ("[2, 3, 1].sort() == [1, 2, 3]", vec![], vec![], (50, 50)),
        (
            "x.sort() == [1, 2, 3]",
            vec![("x", int_list())],
            vec![("x", 5)],
            (23, 73),
        ),
        (
            r#"x.sort() == ["a", "a", "b", "b", "c", "c"]"#,
            vec![("x", string_list())],
            vec![("x", 10)],
            (23, 233),
        ),
        (
            "x.sort() == []",
            vec![("x", int_list())],
            vec![("x", 10)],
            (22, 222),
        ),
        (
            "[{'x':4}, {'x':3}].sortBy(m, m['x']) == [{'x':3}, {'x':4}]",
            vec![],
            vec![],
            (211, 211),
        ),
        // cel-go's case has 226, in an environment without optional types; with them, as in
        // Kubernetes, `m['x']` over `dyn` is `dyn` (`index_map` and the optional index both
        // match), so every `@sortByAssociatedKeys` overload matches, and the string and
        // bytes ones cost 2.1 a comparison: ceil(25 * 2.1) = 53, not 50.
        (
            "x.sortBy(m, m['x']) == [{'x':3}, {'x':4}]",
            vec![("x", dyn_list())],
            vec![("x", 5)],
            (106, 229),
        ),
        (
            "x.sortBy(m, m['x']) == [{'x': 'a'}, {'x': 'b'}, {'x': 'c'}]",
            vec![("x", string_maps())],
            vec![("x", 3)],
            (136, 197),
        ),
        // sets, from cel-go's ext/sets_test.go
        (
            "sets.contains(x, [1, 2, 3])",
            vec![("x", int_list())],
            vec![("x", 10)],
            (12, 42),
        ),
        (
            "sets.contains(x, [1, 1, 1, 1, 1])",
            vec![("x", int_list())],
            vec![],
            (12, max),
        ),
    ];
    let mut failures = Vec::new();
    for (source, vars, sizes, wanted) in cases {
        let env = vars
            .into_iter()
            .fold(Env::new(), |env, (name, ty)| env.variable(name, ty));
        let got = estimate_in(&env, source, &hints(&sizes));
        if got != wanted {
            failures.push(format!("{source}: got {got:?}, wanted {wanted:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
