//! The Kubernetes libraries' and the cel-go extensions' signatures.

use super::*;

fn quantity(s: &str) -> Expr {
    call("quantity", vec![string(s)])
}

#[test]
fn quantity_compare_to_is_an_int_and_compares_as_bool() {
    // quantity(self.spec.size).compareTo(quantity('1Gi')) > 0
    let compare = method(
        call("quantity", vec![select(spec(), "size")]),
        "compareTo",
        vec![quantity("1Gi")],
    );
    assert_eq!(ok(compare.clone()), Type::Int);
    assert_eq!(ok(call("_>_", vec![compare, int(0)])), Type::Bool);
    assert_eq!(ok(quantity("1")), Type::Opaque("kubernetes.Quantity"));
    assert_eq!(
        ok(method(quantity("1"), "add", vec![int(1)])),
        Type::Opaque("kubernetes.Quantity")
    );
    assert_eq!(
        ok(method(quantity("1"), "asApproximateFloat", vec![])),
        Type::Double
    );
    assert_eq!(ok(call("isQuantity", vec![ident("s")])), Type::Bool);
    assert_eq!(ok(call("sign", vec![quantity("-1")])), Type::Int);
    assert_eq!(
        error(method(quantity("-1"), "sign", vec![])),
        "found no matching overload for 'sign' applied to 'kubernetes.Quantity.()'"
    );
    assert_eq!(
        error(method(quantity("1"), "compareTo", vec![string("1Gi")])),
        "found no matching overload for 'compareTo' applied to \
         'kubernetes.Quantity.(string)'"
    );
    assert_eq!(
        error(call("_<_", vec![quantity("1"), quantity("2")])),
        "found no matching overload for '_<_' applied to \
         '(kubernetes.Quantity, kubernetes.Quantity)'"
    );
    assert_eq!(
        ok(call("_==_", vec![quantity("1"), quantity("2")])),
        Type::Bool
    );
}

#[test]
fn kubernetes_list_functions() {
    let counts = || select(spec(), "counts");
    assert_eq!(ok(method(counts(), "isSorted", vec![])), Type::Bool);
    assert_eq!(ok(method(counts(), "sum", vec![])), Type::Int);
    assert_eq!(ok(method(counts(), "max", vec![])), Type::Int);
    assert_eq!(
        ok(method(select(spec(), "tags"), "min", vec![])),
        Type::String
    );
    assert_eq!(ok(method(counts(), "indexOf", vec![int(3)])), Type::Int);
    assert_eq!(ok(method(counts(), "lastIndexOf", vec![int(3)])), Type::Int);
    assert_eq!(
        error(method(select(spec(), "tags"), "sum", vec![])),
        "found no matching overload for 'sum' applied to 'list(string).()'"
    );
    assert_eq!(
        error(method(counts(), "indexOf", vec![string("a")])),
        "found no matching overload for 'indexOf' applied to 'list(int).(string)'"
    );
    assert_eq!(
        error(method(select(spec(), "items"), "isSorted", vec![])),
        "found no matching overload for 'isSorted' applied to 'list(self.items.@idx).()'"
    );
}

#[test]
fn regex_and_url_functions() {
    assert_eq!(
        ok(method(ident("s"), "find", vec![string("[0-9]+")])),
        Type::String
    );
    assert_eq!(
        ok(method(
            ident("s"),
            "findAll",
            vec![string("[0-9]+"), int(2)]
        )),
        list_of(Type::String)
    );
    let url = || call("url", vec![string("https://example.com")]);
    assert_eq!(ok(url()), Type::Opaque("kubernetes.URL"));
    assert_eq!(ok(method(url(), "getHost", vec![])), Type::String);
    assert_eq!(
        ok(method(url(), "getQuery", vec![])),
        map_of(Type::String, list_of(Type::String))
    );
    assert_eq!(ok(call("isURL", vec![ident("s")])), Type::Bool);
}

#[test]
fn ip_and_cidr_functions() {
    let ip = || call("ip", vec![string("10.0.0.1")]);
    let cidr = || call("cidr", vec![string("10.0.0.0/8")]);
    assert_eq!(ok(ip()), Type::Opaque("net.IP"));
    assert_eq!(ok(method(ip(), "family", vec![])), Type::Int);
    assert_eq!(ok(method(ip(), "isLoopback", vec![])), Type::Bool);
    assert_eq!(ok(call("string", vec![ip()])), Type::String);
    assert_eq!(
        ok(method(ident("ip"), "isCanonical", vec![ident("s")])),
        Type::Bool
    );
    assert_eq!(ok(method(cidr(), "containsIP", vec![ip()])), Type::Bool);
    assert_eq!(
        ok(method(cidr(), "containsIP", vec![string("10.1.1.1")])),
        Type::Bool
    );
    assert_eq!(ok(method(cidr(), "containsCIDR", vec![cidr()])), Type::Bool);
    assert_eq!(ok(method(cidr(), "ip", vec![])), Type::Opaque("net.IP"));
    assert_eq!(
        ok(method(cidr(), "masked", vec![])),
        Type::Opaque("net.CIDR")
    );
    assert_eq!(ok(method(cidr(), "prefixLength", vec![])), Type::Int);
    assert_eq!(
        error(method(ip(), "containsIP", vec![ip()])),
        "found no matching overload for 'containsIP' applied to 'net.IP.(net.IP)'"
    );
}

#[test]
fn format_and_semver_functions() {
    let label = method(ident("format"), "dns1123Label", vec![]);
    assert_eq!(ok(label.clone()), Type::Opaque("kubernetes.NamedFormat"));
    assert_eq!(
        ok(method(label, "validate", vec![ident("s")])),
        Type::Optional(Box::new(list_of(Type::String)))
    );
    assert_eq!(
        ok(method(ident("format"), "named", vec![string("uri")])),
        Type::Optional(Box::new(Type::Opaque("kubernetes.NamedFormat")))
    );
    let semver = || call("semver", vec![string("1.2.3")]);
    assert_eq!(
        ok(call("semver", vec![string("v1.2"), boolean(true)])),
        Type::Opaque("kubernetes.Semver")
    );
    assert_eq!(ok(method(semver(), "major", vec![])), Type::Int);
    assert_eq!(
        ok(method(semver(), "isLessThan", vec![semver()])),
        Type::Bool
    );
    assert_eq!(
        ok(call("isSemver", vec![ident("s"), boolean(true)])),
        Type::Bool
    );
    assert_eq!(
        errors(method(ident("format"), "nope", vec![])),
        vec![
            "undeclared reference to 'format' (in container '')",
            "undeclared reference to 'nope' (in container '')"
        ]
    );
}

#[test]
fn strings_extension_version_2() {
    assert_eq!(ok(method(ident("s"), "charAt", vec![int(0)])), Type::String);
    assert_eq!(
        ok(method(ident("s"), "indexOf", vec![string("a")])),
        Type::Int
    );
    assert_eq!(ok(method(ident("s"), "lowerAscii", vec![])), Type::String);
    assert_eq!(
        ok(method(
            ident("s"),
            "replace",
            vec![string("a"), string("b"), int(1)]
        )),
        Type::String
    );
    assert_eq!(
        ok(method(ident("s"), "split", vec![string(",")])),
        list_of(Type::String)
    );
    assert_eq!(
        ok(method(ident("s"), "substring", vec![int(1), int(2)])),
        Type::String
    );
    assert_eq!(
        ok(method(select(spec(), "tags"), "join", vec![string(",")])),
        Type::String
    );
    assert_eq!(
        ok(method(
            string("%s-%d"),
            "format",
            vec![list(vec![ident("s"), ident("n")])]
        )),
        Type::String
    );
    assert_eq!(
        ok(method(ident("strings"), "quote", vec![ident("s")])),
        Type::String
    );
    // `reverse` on strings arrived in version 3.
    assert_eq!(
        error(method(ident("s"), "reverse", vec![])),
        "found no matching overload for 'reverse' applied to 'string.()'"
    );
    assert_eq!(
        error(method(select(spec(), "counts"), "join", vec![])),
        "found no matching overload for 'join' applied to 'list(int).()'"
    );
}

#[test]
fn sets_and_lists_extensions() {
    let tags = || select(spec(), "tags");
    assert_eq!(
        ok(method(
            ident("sets"),
            "contains",
            vec![tags(), list(vec![string("a")])]
        )),
        Type::Bool
    );
    assert_eq!(
        error(method(
            ident("sets"),
            "intersects",
            vec![tags(), list(vec![int(1)])]
        )),
        "found no matching overload for 'sets.intersects' applied to \
         '(list(string), list(int))'"
    );
    assert_eq!(
        ok(method(tags(), "slice", vec![int(0), int(1)])),
        list_of(Type::String)
    );
    assert_eq!(ok(method(tags(), "sort", vec![])), list_of(Type::String));
    assert_eq!(
        ok(method(tags(), "distinct", vec![])),
        list_of(Type::String)
    );
    assert_eq!(ok(method(tags(), "reverse", vec![])), list_of(Type::String));
    assert_eq!(
        ok(method(list(vec![tags(), tags()]), "flatten", vec![])),
        list_of(Type::String)
    );
    assert_eq!(
        ok(method(ident("lists"), "range", vec![int(3)])),
        list_of(Type::Int)
    );
    assert_eq!(
        ok(method(tags(), "first", vec![])),
        Type::Optional(Box::new(Type::String))
    );
    assert_eq!(
        error(method(select(spec(), "items"), "sort", vec![])),
        "found no matching overload for 'sort' applied to 'list(self.items.@idx).()'"
    );
}

#[test]
fn the_table_has_stable_unique_ids_and_its_types() {
    use crate::check::decls;
    let mut seen = std::collections::HashSet::new();
    for overload in decls::overloads() {
        // `not_strictly_false` serves both spellings of the operator, as in cel-go.
        if overload.function != "__not_strictly_false__" {
            assert!(seen.insert(overload.id), "duplicate id {}", overload.id);
        }
        if overload.receiver {
            assert!(!overload.args.is_empty(), "{}", overload.id);
        }
    }
    let add = decls::overload("add_int64").unwrap();
    assert_eq!(add.function, "_+_");
    assert_eq!(add.result.to_type(), Type::Int);
    let index = decls::overload("list_a_index_of_int").unwrap();
    assert_eq!(index.args[0].to_type(), list_of(Type::Param("A")));
    assert!(decls::overload("list_google.protobuf.Timestamp_sort").is_some());
    assert!(decls::overload("list_timestamp_is_sorted_bool").is_some());
    assert!(decls::overload("quantity_compare_to").is_some());
    assert!(decls::function("authorizer").is_none());
}
