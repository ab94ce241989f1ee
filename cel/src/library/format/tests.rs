//! After Kubernetes 1.35's `pkg/cel/library/format_test.go`.

use super::FORMATS;
use crate::Value;
use crate::library::testing::*;

fn validate(format: &str, text: &str) -> Value {
    let f = eval(&format!("format.{format}"), None, &[]).unwrap_or_else(|e| panic!("{e}"));
    eval("validate", Some(f), &[s(text)]).unwrap_or_else(|e| panic!("{e}"))
}

fn errors(messages: &[&str]) -> Value {
    Value::Optional(Some(std::sync::Arc::new(strs(messages))))
}

#[test]
fn validations() {
    let long = "a".repeat(64);
    let none = Value::Optional(None);
    let cases: Vec<(&str, &str, Value)> = vec![
        ("dns1123Label", "my-label-name", none.clone()),
        ("dns1123Subdomain", "apiextensions.k8s.io", none.clone()),
        (
            "qualifiedName",
            "apiextensions.k8s.io/v1beta1",
            none.clone(),
        ),
        ("dns1123LabelPrefix", "my-label-prefix-", none.clone()),
        (
            "dns1123SubdomainPrefix",
            "mysubdomain.prefix.-",
            none.clone(),
        ),
        ("dns1035LabelPrefix", "my-label-prefix-", none.clone()),
        ("uri", "http://example.com", none.clone()),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", none.clone()),
        ("byte", "aGVsbG8=", none.clone()),
        ("date", "2021-01-01", none.clone()),
        ("datetime", "2021-01-01T00:00:00Z", none.clone()),
        (
            "dns1123Label",
            "contains a space",
            errors(&[
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ]),
        ),
        (
            "dns1123Subdomain",
            "contains a space",
            errors(&[
                r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]),
        ),
        (
            "dns1035Label",
            "contains a space",
            errors(&[
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ]),
        ),
        (
            "qualifiedName",
            "contains a space",
            errors(&[
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ]),
        ),
        (
            "dns1123LabelPrefix",
            "contains a space-",
            errors(&[
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ]),
        ),
        (
            "dns1035LabelPrefix",
            "contains a space-",
            errors(&[
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ]),
        ),
        (
            "dns1123Label",
            "my.name",
            errors(&["must not contain dots"]),
        ),
        (
            "dns1123Label",
            &long,
            errors(&["must be no more than 63 characters"]),
        ),
        ("dns1123Subdomain", "example.com", none.clone()),
        ("dns1035Label", "my-label-name", none.clone()),
        ("qualifiedName", "my.name", none.clone()),
        (
            "qualifiedName",
            "/name",
            errors(&["prefix part must be non-empty"]),
        ),
        (
            "qualifiedName",
            "a/b/c",
            errors(&[
                "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ]),
        ),
        ("byte", "aGVsbG8", errors(&["invalid base64"])),
        ("date", "2020-01-01", none.clone()),
        ("date", "2020-01-32", errors(&["invalid date"])),
        ("date", "2021-02-29", errors(&["invalid date"])),
        ("date", "2020-02-29", none.clone()),
        ("datetime", "2020-01-01T00:00:00Z", none.clone()),
        ("datetime", "2020-01-01t23:59:59.5+01:00", none.clone()),
        (
            "datetime",
            "2020-01-32T00:00:00Z",
            errors(&["invalid datetime"]),
        ),
        (
            "datetime",
            "2020-01-01T24:00:00Z",
            errors(&["invalid datetime"]),
        ),
        ("uuid", "123e4567e89b12d3a456426614174000", none.clone()),
        (
            "uuid",
            "not-a-uuid",
            errors(&["does not match the UUID format"]),
        ),
        (
            "uri",
            "example.com",
            errors(&["parse \"example.com\": invalid URI for request"]),
        ),
        ("labelValue", "my-cool-label-Value", none.clone()),
        ("labelValue", "", none.clone()),
        (
            "labelValue",
            "my-cool-label-Value!!\n\n!!!",
            errors(&[
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ]),
        ),
    ];
    for (format, text, want) in cases {
        let got = validate(format, text);
        assert!(
            got.equals(&want),
            "{format}({text:?}): got {got:?}, want {want:?}"
        );
    }
}

#[test]
fn named_formats() {
    assert!(matches!(
        eval("format.named", None, &[s("unknown")]),
        Ok(Value::Optional(None))
    ));
    for f in FORMATS {
        let named = eval("format.named", None, &[s(f.key)]).unwrap();
        let direct = eval(&format!("format.{}", f.key), None, &[]).unwrap();
        let Value::Optional(Some(inner)) = named else {
            panic!("{} is not named", f.key)
        };
        assert!(inner.equals(&direct));
        assert_eq!(direct.type_name().as_str(), "kubernetes.NamedFormat");
        for g in FORMATS {
            if g.key != f.key {
                let other = eval(&format!("format.{}", g.key), None, &[]).unwrap();
                assert!(!direct.equals(&other));
            }
        }
    }
    let mut budget = crate::Budget::new(10);
    assert!(crate::library::call("format.unknown", None, &[], &mut budget).is_none());
    assert_error(
        eval("validate", Some(Value::Int(1)), &[s("x")]),
        "no such overload: validate",
    );
}

#[test]
fn validate_costs_a_long_regex() {
    // ceil((1 + 13) × 0.1) = 2; ceil(30 × 0.25) = 8
    let f = eval("format.dns1123Label", None, &[]).unwrap();
    assert_eq!(run("validate", Some(f), &[s("my-label-name")]).1, 16);
    assert_eq!(run("format.named", None, &[s("uri")]).1, 1);
}

#[test]
fn prefixes_ending_in_a_wide_character_do_not_panic() {
    let got = validate("dns1123LabelPrefix", "é-");
    assert!(matches!(got, Value::Optional(Some(_))), "{got:?}");
}
