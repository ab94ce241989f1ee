//! The checker through source text, as Kubernetes compiles rules: the result types and the
//! messages (with cel-go's location and snippet) a user sees.

use super::*;
use crate::Program;

/// The result type of `source`, as the type displays.
fn compiles(source: &str) -> String {
    match Program::compile(&env(), source) {
        Ok(program) => program.result_type().to_string(),
        Err(err) => panic!("{source} did not compile:\n{err}"),
    }
}

/// What compiling `source` reports.
fn fails(source: &str) -> String {
    match Program::compile(&env(), source) {
        Ok(program) => panic!("{source} compiled as {}", program.result_type()),
        Err(err) => err.to_string(),
    }
}

#[test]
fn kubernetes_rules_type_as_bool() {
    for rule in [
        "quantity(self.spec.size).compareTo(quantity('1Gi')) > 0",
        "self.spec.items.map(i, i.name).exists(n, n == 'web')",
        "self.spec.labels.all(k, v, k.startsWith(v))",
        "[1, 2].exists_one(x, x > 1)",
        "self.?spec.?replicas.orValue(1) > 0",
        "format.dns1123Label().validate(self.spec.name).hasValue()",
        "cidr('10.0.0.0/8').containsIP(ip('10.1.1.1'))",
        "sets.contains(self.spec.tags, ['a'])",
        "type(self.spec.replicas) == int",
        "type(self.spec.replicas) == string",
        "type(ip('::1')) == net.IP && type(cidr('::/0')) == net.CIDR",
        "self.spec.items[0].name.matches('^[a-z]+$')",
        "self.spec.replicas in [1, 2, 3]",
        "self.spec.ratio < 1 && self.spec.replicas > 1u",
        "self.spec.tags[?0].orValue('') == ''",
        "x.y.z.exists(q, q)",
        "isSemver('1.0.0', true) && semver('1.0.0').major() == 1",
        "self.spec.created + self.spec.ttl < timestamp('2030-01-01T00:00:00Z')",
    ] {
        assert_eq!(compiles(rule), "bool", "{rule}");
    }
}

#[test]
fn macros_and_extensions_type_their_results() {
    assert_eq!(
        compiles("self.spec.tags.transformList(i, v, v + string(i))"),
        "list(string)"
    );
    assert_eq!(
        compiles("self.spec.byName.transformMap(k, v, v.port)"),
        "map(string, int)"
    );
    assert_eq!(
        compiles("self.spec.byName.transformMapEntry(k, v, {k: v.port})"),
        "map(string, int)"
    );
    assert_eq!(
        compiles("self.spec.items.sortBy(i, i.name)"),
        "list(self.items.@idx)"
    );
    assert_eq!(
        compiles("self.spec.?name.optMap(n, n.size())"),
        "optional_type(int)"
    );
    assert_eq!(
        compiles("self.spec.items.filter(i, i.port > 80).map(i, i.name)"),
        "list(string)"
    );
    assert_eq!(
        compiles("self.spec.items.map(i, i.port > 1, i.name)"),
        "list(string)"
    );
    assert_eq!(
        compiles("self.spec.tags.map(t, [t]).flatten()"),
        "list(string)"
    );
    assert_eq!(compiles("url('https://x').getQuery()['a'][0]"), "string");
    assert_eq!(
        compiles("self.spec.counts.sum() + self.spec.counts.max()"),
        "int"
    );
    assert_eq!(compiles("lists.range(3).reverse()"), "list(int)");
    assert_eq!(compiles("'%s %d'.format(['a', 1])"), "string");
    assert_eq!(
        compiles("timestamp('2024-01-01T00:00:00Z') + duration('1h')"),
        "google.protobuf.Timestamp"
    );
    assert_eq!(compiles("self.spec.created.getDayOfWeek('UTC')"), "int");
    assert_eq!(compiles("[[1], []]"), "list(list(int))");
    assert_eq!(
        compiles("has(self.spec.labels.app) ? self.spec.labels.app : 'none'"),
        "string"
    );
    assert_eq!(compiles("optional.of(1).value() + 1"), "int");
}

#[test]
fn errors_point_at_the_offending_node() {
    assert_eq!(
        fails("self.spec.foo == 1"),
        "ERROR: <input>:1:10: undefined field 'foo'\n | self.spec.foo == 1\n | .........^"
    );
    assert_eq!(
        fails("self.spec.name.size() > 'a'"),
        "ERROR: <input>:1:23: found no matching overload for '_>_' applied to '(int, string)'\n \
         | self.spec.name.size() > 'a'\n | ......................^"
    );
    assert_eq!(
        fails("self.spec.items.all(i, i.port)"),
        "ERROR: <input>:1:25: expected type 'bool' but found 'int'\n \
         | self.spec.items.all(i, i.port)\n | ........................^"
    );
    assert_eq!(
        fails("{'a': 1, 'b': 'c'}"),
        "ERROR: <input>:1:15: expected type 'int' but found 'string'\n \
         | {'a': 1, 'b': 'c'}\n | ..............^"
    );
    assert_eq!(
        fails("duration('x')"),
        "ERROR: <input>:1:10: invalid duration argument\n | duration('x')\n | .........^"
    );
    assert!(fails("s.matches('[')").contains("invalid matches argument"));
    assert!(
        fails("type(quantity('1')) == kubernetes.Quantity")
            .contains("undeclared reference to 'kubernetes' (in container '')")
    );
    // The homogeneous literal check compares type values exactly too.
    assert!(
        fails("type(x) in [int, uint]")
            .contains("expected type 'type(int)' but found 'type(uint)'")
    );
    assert!(fails("has(self.spec.nope)").contains("undefined field 'nope'"));
    assert!(
        fails("self.spec.labels.exists(k, k == 'x') || oldSelf == self")
            .contains("undeclared reference to 'oldSelf' (in container '')")
    );
}

#[test]
fn bind_is_not_in_the_kubernetes_environment() {
    let message = fails("cel.bind(y, 1, y + 1)");
    assert!(
        message.contains("undeclared reference to 'cel' (in container '')"),
        "{message}"
    );
    assert!(
        message.contains("undeclared reference to 'bind' (in container '')"),
        "{message}"
    );
}

#[test]
fn literal_format_strings_are_checked_against_their_arguments() {
    assert_eq!(
        compiles("'%s is %d'.format([self.spec.name, self.spec.replicas])"),
        "string"
    );
    assert_eq!(compiles("'%.2f%%'.format([self.spec.ratio])"), "string");
    assert_eq!(compiles("'%x'.format([x])"), "string");
    assert_eq!(compiles("'%s'.format([[1, 'mixed']])"), "string");
    assert_eq!(compiles("s.format([1])"), "string");
    assert_eq!(
        fails("'%d'.format([self.spec.name])"),
        "ERROR: <input>:1:23: error during formatting: decimal clause can only be used on \
         integers, was given string\n | '%d'.format([self.spec.name])\n | ......................^"
    );
    assert!(fails("'%s'.format([self.spec])").contains(
        "error during formatting: string clause can only be used on strings, bools, bytes, \
             ints, doubles, maps, lists, types, durations, and timestamps, was given self.spec"
    ));
    assert!(
        fails("'%s'.format([[quantity('1')]])")
            .contains("durations, and timestamps, was given kubernetes.Quantity")
    );
    assert!(fails("'%s %s'.format(['a'])").contains("index 1 out of range"));
    assert!(
        fails("'%s'.format(['a', 'b'])")
            .contains("too many arguments supplied to string.format (expected 1, got 2)")
    );
    assert!(
        fails("'%z'.format(['a'])")
            .contains("could not parse formatting clause: unrecognized formatting clause \"z\"")
    );
    assert!(fails("'%'.format(['a'])").contains("unexpected end of string"));
    assert!(fails("'%.3'.format([1.0])").contains(
        "could not parse formatting clause: error while parsing precision: could not find \
             end of precision specifier"
    ));
}

/// cel-go `checker/checker_test.go`: messages with free type variables and several issues.
#[test]
fn cel_go_checker_cases() {
    assert_eq!(
        fails("[].length"),
        "ERROR: <input>:1:3: type 'list(_var0)' does not support field selection\n \
         | [].length\n | ..^"
    );
    assert_eq!(
        fails("self.spec.all(e, 0)"),
        "ERROR: <input>:1:5: expression of type 'self.spec' cannot be range of a comprehension \
         (must be list, map, or dynamic)\n | self.spec.all(e, 0)\n | ....^\n\
         ERROR: <input>:1:18: expected type 'bool' but found 'int'\n | self.spec.all(e, 0)\n \
         | .................^"
    );
    assert_eq!(
        fails("'string'.fun()"),
        "ERROR: <input>:1:13: undeclared reference to 'fun' (in container '')\n \
         | 'string'.fun()\n | ............^"
    );
    assert_eq!(
        compiles("1 <= 1.0 && 1u <= 1.0 && 1.0 <= 1 && 1.0 <= 1u && 1 <= 1u && 1u <= 1"),
        "bool"
    );
}
