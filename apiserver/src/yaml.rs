//! YAML request bodies, decoded without letting one request hold a core.
//!
//! libyaml (behind `serde_yaml_ng`) checks every open flow collection on every token, so its time
//! grows with the square of flow nesting: 40,000 nested `[` (80 KB) take 6.5 s of CPU, and a
//! 3 MiB body hours, before the decoder's own recursion limit is reached. kube-apiserver met the
//! same class of input as CVE-2019-11253. A linear pass of `yaml-rust2`'s event parser first
//! refuses documents nested deeper than [`MAX_DEPTH`] levels (its scanner stops at 256 flow
//! levels by itself), then `serde_yaml_ng` decodes what passed, with its limit on alias
//! expansion.

use serde_json::Value;
use yaml_rust2::Event;
use yaml_rust2::parser::Parser;

/// How deep collections may nest (serde's recursion limit, which both decoders apply to JSON
/// and YAML alike).
pub const MAX_DEPTH: usize = 128;

/// Decodes a YAML (or JSON) document, with the reason when it is not one or nests too deep.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("the document is not UTF-8: {e}"))?;
    check_depth(text)?;
    serde_yaml_ng::from_str(text).map_err(|e| e.to_string())
}

/// Walks the document's events in linear time: an error when it is no YAML or nests deeper
/// than [`MAX_DEPTH`].
fn check_depth(text: &str) -> Result<(), String> {
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    loop {
        let (event, mark) = parser.next_token().map_err(|e| e.to_string())?;
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!(
                        "the document nests deeper than {MAX_DEPTH} levels (at line {}, column {})",
                        mark.line(),
                        mark.col() + 1
                    ));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            Event::StreamEnd => return Ok(()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn documents_decode_as_before() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, labels: {a: b}}\ndata:\n  k: v\n  list: |\n    [[[ not structure\n";
        assert_eq!(
            decode(text.as_bytes()).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "x", "labels": {"a": "b"}},
                   "data": {"k": "v", "list": "[[[ not structure\n"}})
        );
        assert_eq!(decode(br#"{"a": [1, 2]}"#).unwrap(), json!({"a": [1, 2]}));
    }

    #[test]
    fn deep_documents_are_refused_in_linear_time() {
        for deep in [
            format!("x: {}{}", "[".repeat(1_000_000), "]".repeat(1_000_000)),
            format!("x: {}{}", "{a: ".repeat(200_000), "}".repeat(200_000)),
            format!("x:\n{}1\n", "- ".repeat(200_000)),
        ] {
            let started = std::time::Instant::now();
            let err = decode(deep.as_bytes()).unwrap_err();
            assert!(
                err.contains("deeper than 128 levels") || err.contains("recursion limit"),
                "{err}"
            );
            // Not a timing assertion of speed, a guard against the quadratic path: it took
            // hours before.
            assert!(started.elapsed() < std::time::Duration::from_secs(30));
        }
        let at_the_limit = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(decode(at_the_limit.as_bytes()).is_ok());
    }

    #[test]
    fn what_is_no_yaml_is_refused_with_the_reason() {
        assert!(decode(b"a: [1, 2").unwrap_err().contains("line"));
        assert!(decode(b"\xff\xfe").unwrap_err().contains("UTF-8"));
    }
}
