//! Kubernetes' JSON Patch library: `jsonpatch.escapeKey(string)`, which escapes a key for a
//! JSON Pointer (`~` as `~0`, `/` as `~1`). Kubernetes declares it only for
//! MutatingAdmissionPolicy's patch expressions, not in the base environment.

use super::{finish, no_such_overload, string_traversal_cost};
use crate::{Budget, EvalError, Value};

/// `jsonpatch.escapeKey`; `None` for other names.
pub fn call(
    function: &str,
    receiver: Option<&Value>,
    args: &[Value],
    budget: &mut Budget,
) -> Option<Result<Value, EvalError>> {
    if function != "jsonpatch.escapeKey" {
        return None;
    }
    let (None, [key @ Value::String(s)]) = (receiver, args) else {
        return Some(Err(no_such_overload(function)));
    };
    let escaped = s.replace('~', "~0").replace('/', "~1");
    finish(
        budget,
        string_traversal_cost(key),
        Ok(Value::string(&escaped)),
    )
}

#[cfg(test)]
mod tests {
    use crate::Value;
    use crate::library::testing::*;

    #[test]
    fn escape_key() {
        for (key, want) in [
            ("simple", "simple"),
            ("a/b", "a~1b"),
            ("a~b", "a~0b"),
            ("~/", "~0~1"),
            ("k8s.io/~1", "k8s.io~1~01"),
        ] {
            assert_value(eval("jsonpatch.escapeKey", None, &[s(key)]), s(want));
        }
        assert_error(
            eval("jsonpatch.escapeKey", None, &[Value::Int(1)]),
            "no such overload: jsonpatch.escapeKey",
        );
        assert_eq!(run("jsonpatch.escapeKey", None, &[s("a/b")]).1, 1);
    }
}
