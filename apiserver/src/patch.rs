//! JSON merge patch (RFC 7386) and JSON patch (RFC 6902) over `serde_json::Value`.
//!
//! Pure functions, no I/O. JSON patch follows the behaviour kube-apiserver inherits from
//! evanphx/json-patch (v4), including the quirks clients depend on:
//!
//! * `test` with `"value": null` succeeds when the key is absent, as long as its parent exists
//!   (kube-runtime's finalizer helper relies on it);
//! * `replace` of a missing key in an existing object sets it, as kube-apiserver does.
//!
//! Error messages use evanphx's wording; kube-apiserver answers 422 for a failed operation and
//! 400 for a body that is not a list of operations (see [`PatchError::is_malformed`]).

#[rustfmt::skip]
mod merge_keys;
pub mod strategic;

use serde_json::{Map, Value};

/// The generic message kube-apiserver puts in a 422 `Status` when a JSON patch fails to apply;
/// the specific [`PatchError`] text goes into the status causes.
pub const JSON_PATCH_FAILED_MESSAGE: &str =
    "the server rejected our request due to an error in our request";

/// Why a JSON patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The body is not a JSON array of operation objects (a bad request, 400).
    #[error("{0}")]
    Malformed(String),
    /// The operation at `index` has an `op` that is none of the six RFC 6902 operations.
    #[error("Unexpected kind: {op}")]
    UnknownOperation {
        /// Position of the operation in the patch.
        index: usize,
        /// The `op` as sent (`unknown` when absent or not a string).
        op: String,
    },
    /// The operation at `index` lacks a member it needs (`path`, `from` or `value`).
    #[error("{op} operation, missing {member} field")]
    MissingMember {
        /// Position of the operation in the patch.
        index: usize,
        /// The operation name.
        op: String,
        /// The missing member.
        member: &'static str,
    },
    /// A `path` or `from` is not a valid JSON pointer (RFC 6901).
    #[error("{op} operation, invalid JSON pointer: \"{pointer}\"")]
    InvalidPointer {
        /// Position of the operation in the patch.
        index: usize,
        /// The operation name.
        op: String,
        /// The pointer as sent.
        pointer: String,
    },
    /// The container the pointer leads into does not exist.
    #[error("{op} operation does not apply: doc is missing path: \"{path}\": missing value")]
    MissingPath {
        /// Position of the operation in the patch.
        index: usize,
        /// The operation name.
        op: String,
        /// The pointer that could not be followed.
        path: String,
    },
    /// `remove` (or the source of `move`/`copy`) names a key that is not there.
    #[error(
        "error in {op} for path: '{path}': Unable to remove nonexistent key: {key}: missing value"
    )]
    MissingKey {
        /// Position of the operation in the patch.
        index: usize,
        /// The operation name.
        op: String,
        /// The pointer as sent.
        path: String,
        /// The last, missing, reference token.
        key: String,
    },
    /// An array index is out of range or not a number.
    #[error(
        "error in {op} for path: '{path}': Unable to access invalid index: {token}: invalid index referenced"
    )]
    InvalidIndex {
        /// Position of the operation in the patch.
        index: usize,
        /// The operation name.
        op: String,
        /// The pointer as sent.
        path: String,
        /// The offending reference token.
        token: String,
    },
    /// A `test` operation found a different value.
    #[error("testing value {path} failed: test failed")]
    TestFailed {
        /// Position of the operation in the patch.
        index: usize,
        /// The pointer tested.
        path: String,
    },
    /// A `move` whose `from` is a proper prefix of its `path`.
    #[error("move operation does not apply: from \"{from}\" is a prefix of path \"{path}\"")]
    MoveIntoItself {
        /// Position of the operation in the patch.
        index: usize,
        /// The source pointer.
        from: String,
        /// The destination pointer.
        path: String,
    },
    /// More operations than a patch may hold (CVE-2019-1002100: a small body of many `copy`
    /// operations grew to gigabytes). Answered 413, as kube-apiserver does.
    #[error(
        "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {0}"
    )]
    TooManyOperations(usize),
    /// `copy` operations together copied more than [`MAX_COPIED_BYTES`].
    #[error(
        "Unable to complete the copy, the accumulated size increase of copy is {0}, exceeding the limit {MAX_COPIED_BYTES}"
    )]
    CopiedTooMuch(usize),
    /// An operation addresses the whole document in a way that cannot apply (removing it).
    #[error("{op} operation does not apply: cannot {op} the whole document")]
    WholeDocument {
        /// Position of the operation in the patch.
        index: usize,
        /// The operation name.
        op: String,
    },
}

impl PatchError {
    /// True when the patch body itself is malformed (answer 400 BadRequest); false when a
    /// well-formed operation failed to apply (answer 422 Invalid).
    pub fn is_malformed(&self) -> bool {
        matches!(self, PatchError::Malformed(_))
    }

    /// The position of the failing operation in the patch, when one failed.
    pub fn operation_index(&self) -> Option<usize> {
        match self {
            PatchError::Malformed(_)
            | PatchError::TooManyOperations(_)
            | PatchError::CopiedTooMuch(_) => None,
            PatchError::UnknownOperation { index, .. }
            | PatchError::MissingMember { index, .. }
            | PatchError::InvalidPointer { index, .. }
            | PatchError::MissingPath { index, .. }
            | PatchError::MissingKey { index, .. }
            | PatchError::InvalidIndex { index, .. }
            | PatchError::TestFailed { index, .. }
            | PatchError::MoveIntoItself { index, .. }
            | PatchError::WholeDocument { index, .. } => Some(*index),
        }
    }
}

/// Decodes the body of an apply patch. It is YAML, of which JSON is a subset; JSON, what most
/// clients send, is parsed directly (a YAML parser takes several times as long), and anything
/// else goes to the YAML parser.
pub fn decode_apply(body: &[u8]) -> Result<Value, String> {
    let trimmed = body.trim_ascii_start();
    if trimmed.first() == Some(&b'{')
        && let Ok(value) = serde_json::from_slice(trimmed)
    {
        return Ok(value);
    }
    crate::yaml::decode(body)
}

/// Applies an RFC 7386 JSON merge patch: objects merge recursively, `null` deletes a key, and
/// anything else (arrays included) replaces the target wholesale. See [`merged`].
pub fn merge_patch(target: &mut Value, patch: Value) {
    *target = merged(target, patch);
}

/// `target` with an RFC 7386 merge patch applied, built apart from `target`: only what the
/// patch leaves of it is copied, and the patch's values move in (a status patch brings the whole
/// status, so the stored status it replaces is never copied).
pub fn merged(target: &Value, patch: Value) -> Value {
    let Value::Object(patch_fields) = patch else {
        return patch;
    };
    let target_fields = target.as_object();
    let mut out: Map<String, Value> = target_fields
        .into_iter()
        .flatten()
        .filter(|(key, _)| !patch_fields.contains_key(key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    for (key, value) in patch_fields {
        if value.is_null() {
            continue;
        }
        let kept = target_fields.and_then(|fields| fields.get(&key));
        let value = merged(kept.unwrap_or(&Value::Null), value);
        out.insert(key, value);
    }
    Value::Object(out)
}

/// Applies an RFC 6902 JSON patch. `ops` must be a JSON array of operation objects.
///
/// The patch is atomic: when any operation fails, `target` is left unchanged.
pub fn json_patch(target: &mut Value, ops: &Value) -> Result<(), PatchError> {
    let Value::Array(operations) = ops else {
        return Err(PatchError::Malformed(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
            json_kind(ops)
        )));
    };
    if operations.len() > MAX_OPERATIONS {
        return Err(PatchError::TooManyOperations(operations.len()));
    }
    let mut parsed = Vec::with_capacity(operations.len());
    for operation in operations {
        let Value::Object(members) = operation else {
            return Err(PatchError::Malformed(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                json_kind(operation)
            )));
        };
        parsed.push(members);
    }
    let mut doc = target.clone();
    let mut copied = 0;
    for (index, members) in parsed.into_iter().enumerate() {
        Operation::parse(index, members)?.apply(&mut doc, &mut copied)?;
    }
    *target = doc;
    Ok(())
}

/// The length of `value` as JSON, counted without writing it anywhere.
fn encoded_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The most operations a JSON patch may hold (kube-apiserver's limit).
pub const MAX_OPERATIONS: usize = 10_000;
/// The most bytes a JSON patch's `copy` operations may copy in all (`JSONPatchMaxCopyBytes`).
pub const MAX_COPIED_BYTES: usize = 3 * 1024 * 1024;

/// The Go-style name of a JSON value's kind, for decode errors.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The kind of one JSON patch operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Remove,
    Replace,
    Move,
    Copy,
    Test,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Remove => "remove",
            Op::Replace => "replace",
            Op::Move => "move",
            Op::Copy => "copy",
            Op::Test => "test",
        }
    }
}

/// One decoded operation.
struct Operation<'a> {
    index: usize,
    op: Op,
    path: String,
    tokens: Vec<String>,
    from: Option<(String, Vec<String>)>,
    value: Option<&'a Value>,
}

impl<'a> Operation<'a> {
    fn parse(index: usize, members: &'a Map<String, Value>) -> Result<Self, PatchError> {
        let op = match members.get("op").and_then(Value::as_str) {
            Some("add") => Op::Add,
            Some("remove") => Op::Remove,
            Some("replace") => Op::Replace,
            Some("move") => Op::Move,
            Some("copy") => Op::Copy,
            Some("test") => Op::Test,
            other => {
                return Err(PatchError::UnknownOperation {
                    index,
                    op: other.unwrap_or("unknown").to_string(),
                });
            }
        };
        let pointer = |member: &'static str| -> Result<(String, Vec<String>), PatchError> {
            let Some(raw) = members.get(member).and_then(Value::as_str) else {
                return Err(PatchError::MissingMember {
                    index,
                    op: op.name().to_string(),
                    member,
                });
            };
            let tokens = parse_pointer(raw).ok_or_else(|| PatchError::InvalidPointer {
                index,
                op: op.name().to_string(),
                pointer: raw.to_string(),
            })?;
            Ok((raw.to_string(), tokens))
        };
        let (path, tokens) = pointer("path")?;
        let from = match op {
            Op::Move | Op::Copy => Some(pointer("from")?),
            _ => None,
        };
        let value = members.get("value");
        if value.is_none() && matches!(op, Op::Add | Op::Replace | Op::Test) {
            return Err(PatchError::MissingMember {
                index,
                op: op.name().to_string(),
                member: "value",
            });
        }
        Ok(Operation {
            index,
            op,
            path,
            tokens,
            from,
            value,
        })
    }

    /// Applies the operation; `copied` counts the bytes `copy` operations copied so far.
    fn apply(&self, doc: &mut Value, copied: &mut usize) -> Result<(), PatchError> {
        match self.op {
            Op::Add => self.add(doc, &self.path, &self.tokens, self.value_or_null()),
            Op::Remove => self.remove(doc, &self.path, &self.tokens).map(drop),
            Op::Replace => self.replace(doc),
            Op::Test => self.test(doc),
            Op::Move => {
                let (from, from_tokens) = self.source_pointer();
                if from_tokens.len() < self.tokens.len() && self.tokens.starts_with(from_tokens) {
                    return Err(PatchError::MoveIntoItself {
                        index: self.index,
                        from: from.to_string(),
                        path: self.path.clone(),
                    });
                }
                let moved = self.remove(doc, from, from_tokens)?;
                self.add(doc, &self.path, &self.tokens, moved)
            }
            Op::Copy => {
                let (from, from_tokens) = self.source_pointer();
                let value = self.get(doc, from, from_tokens)?;
                *copied += encoded_len(value);
                if *copied > MAX_COPIED_BYTES {
                    return Err(PatchError::CopiedTooMuch(*copied));
                }
                let value = value.clone();
                self.add(doc, &self.path, &self.tokens, value)
            }
        }
    }

    fn value_or_null(&self) -> Value {
        self.value.cloned().unwrap_or(Value::Null)
    }

    fn source_pointer(&self) -> (&str, &[String]) {
        match &self.from {
            Some((raw, tokens)) => (raw.as_str(), tokens.as_slice()),
            None => ("", &[]),
        }
    }

    fn missing_path(&self, path: &str) -> PatchError {
        PatchError::MissingPath {
            index: self.index,
            op: self.op.name().to_string(),
            path: path.to_string(),
        }
    }

    fn invalid_index(&self, path: &str, token: &str) -> PatchError {
        PatchError::InvalidIndex {
            index: self.index,
            op: self.op.name().to_string(),
            path: path.to_string(),
            token: token.to_string(),
        }
    }

    /// The container holding the value `tokens` points at, and the last token.
    fn parent<'d>(
        &self,
        doc: &'d mut Value,
        path: &str,
        tokens: &'d [String],
    ) -> Result<(&'d mut Value, &'d str), PatchError> {
        let Some((last, ancestors)) = tokens.split_last() else {
            return Err(PatchError::WholeDocument {
                index: self.index,
                op: self.op.name().to_string(),
            });
        };
        let mut node = doc;
        for token in ancestors {
            node = match node {
                Value::Object(fields) => fields.get_mut(token),
                Value::Array(items) => parse_index(token).and_then(|i| items.get_mut(i)),
                _ => None,
            }
            .ok_or_else(|| self.missing_path(path))?;
        }
        if !(node.is_object() || node.is_array()) {
            return Err(self.missing_path(path));
        }
        Ok((node, last.as_str()))
    }

    fn get<'d>(
        &self,
        doc: &'d mut Value,
        path: &str,
        tokens: &'d [String],
    ) -> Result<&'d Value, PatchError> {
        if tokens.is_empty() {
            return Ok(doc);
        }
        let (parent, key) = self.parent(doc, path, tokens)?;
        match parent {
            Value::Object(fields) => fields.get(key).ok_or_else(|| PatchError::MissingKey {
                index: self.index,
                op: self.op.name().to_string(),
                path: path.to_string(),
                key: key.to_string(),
            }),
            Value::Array(items) => parse_index(key)
                .and_then(|i| items.get(i))
                .ok_or_else(|| self.invalid_index(path, key)),
            _ => Err(self.missing_path(path)),
        }
    }

    fn add(
        &self,
        doc: &mut Value,
        path: &str,
        tokens: &[String],
        value: Value,
    ) -> Result<(), PatchError> {
        if tokens.is_empty() {
            *doc = value;
            return Ok(());
        }
        let (parent, key) = self.parent(doc, path, tokens)?;
        match parent {
            Value::Object(fields) => {
                fields.insert(key.to_string(), value);
                Ok(())
            }
            Value::Array(items) => {
                if key == "-" {
                    items.push(value);
                    return Ok(());
                }
                match parse_index(key) {
                    Some(i) if i <= items.len() => {
                        items.insert(i, value);
                        Ok(())
                    }
                    _ => Err(self.invalid_index(path, key)),
                }
            }
            _ => Err(self.missing_path(path)),
        }
    }

    fn remove(&self, doc: &mut Value, path: &str, tokens: &[String]) -> Result<Value, PatchError> {
        let (parent, key) = self.parent(doc, path, tokens)?;
        match parent {
            Value::Object(fields) => fields.remove(key).ok_or_else(|| PatchError::MissingKey {
                index: self.index,
                op: self.op.name().to_string(),
                path: path.to_string(),
                key: key.to_string(),
            }),
            Value::Array(items) => match parse_index(key) {
                Some(i) if i < items.len() => Ok(items.remove(i)),
                _ => Err(self.invalid_index(path, key)),
            },
            _ => Err(self.missing_path(path)),
        }
    }

    fn replace(&self, doc: &mut Value) -> Result<(), PatchError> {
        let value = self.value_or_null();
        if self.tokens.is_empty() {
            *doc = value;
            return Ok(());
        }
        let (parent, key) = self.parent(doc, &self.path, &self.tokens)?;
        match parent {
            // kube-apiserver (evanphx v4) sets a missing key instead of failing.
            Value::Object(fields) => {
                fields.insert(key.to_string(), value);
                Ok(())
            }
            Value::Array(items) => match parse_index(key).and_then(|i| items.get_mut(i)) {
                Some(slot) => {
                    *slot = value;
                    Ok(())
                }
                None => Err(self.invalid_index(&self.path, key)),
            },
            _ => Err(self.missing_path(&self.path)),
        }
    }

    fn test(&self, doc: &mut Value) -> Result<(), PatchError> {
        let expected = self.value_or_null();
        let failed = || PatchError::TestFailed {
            index: self.index,
            path: self.path.clone(),
        };
        if self.tokens.is_empty() {
            return if *doc == expected {
                Ok(())
            } else {
                Err(failed())
            };
        }
        let (parent, key) = self.parent(doc, &self.path, &self.tokens)?;
        let actual = match parent {
            Value::Object(fields) => fields.get(key),
            Value::Array(items) => Some(
                parse_index(key)
                    .and_then(|i| items.get(i))
                    .ok_or_else(|| self.invalid_index(&self.path, key))?,
            ),
            _ => return Err(self.missing_path(&self.path)),
        };
        match actual {
            // The evanphx quirk: an absent key tests equal to null.
            None if expected.is_null() => Ok(()),
            Some(actual) if *actual == expected => Ok(()),
            _ => Err(failed()),
        }
    }
}

/// Splits an RFC 6901 JSON pointer into unescaped reference tokens; `None` when malformed.
fn parse_pointer(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/').map(unescape_token).collect()
}

/// Undoes `~1` → `/` and `~0` → `~`; any other `~` sequence is invalid.
fn unescape_token(token: &str) -> Option<String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// An array index token: decimal digits without a leading zero (except `0` itself).
fn parse_index(token: &str) -> Option<usize> {
    if token.is_empty()
        || !token.bytes().all(|b| b.is_ascii_digit())
        || (token.len() > 1 && token.starts_with('0'))
    {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(doc: Value, ops: Value) -> Result<Value, PatchError> {
        let mut doc = doc;
        json_patch(&mut doc, &ops)?;
        Ok(doc)
    }

    #[test]
    fn merge_patch_merges_objects_deletes_nulls_and_replaces_arrays() {
        let mut doc = json!({
            "metadata": {"labels": {"app": "web", "tier": "front"}},
            "spec": {"ports": [1, 2], "replicas": 1}
        });
        merge_patch(
            &mut doc,
            json!({
                "metadata": {"labels": {"tier": null, "extra": "yes"}},
                "spec": {"ports": [3]},
                "status": {"ready": true}
            }),
        );
        assert_eq!(
            doc,
            json!({
                "metadata": {"labels": {"app": "web", "extra": "yes"}},
                "spec": {"ports": [3], "replicas": 1},
                "status": {"ready": true}
            })
        );
    }

    #[test]
    fn a_merged_copy_is_what_rfc_7386_makes() {
        let target = json!({
            "metadata": {"labels": {"app": "web", "tier": "front"}, "name": "a"},
            "spec": {"ports": [1, 2], "replicas": 1},
            "status": {"conditions": [{"type": "Ready"}], "phase": "Running"}
        });
        for patch in [
            json!({"status": {"conditions": [], "observed": 2}}),
            json!({"metadata": {"labels": {"tier": null}}, "spec": null}),
            json!({"spec": "text", "status": {"phase": {"deep": null, "x": 1}}}),
            json!({}),
            json!(["x"]),
            json!(null),
        ] {
            // The `json-patch` crate's merge, as a reference.
            let mut reference = target.clone();
            json_patch::merge(&mut reference, &patch);
            assert_eq!(merged(&target, patch.clone()), reference, "patch {patch}");
        }
        assert_eq!(
            merged(&json!("text"), json!({"a": {"b": null}})),
            json!({"a": {}})
        );
    }

    #[test]
    fn merge_patch_with_non_object_replaces_target() {
        let mut doc = json!({"a": 1});
        merge_patch(&mut doc, json!(["x"]));
        assert_eq!(doc, json!(["x"]));
        let mut doc = json!({"a": "text"});
        merge_patch(&mut doc, json!({"a": {"b": null, "c": 1}}));
        assert_eq!(doc, json!({"a": {"c": 1}}));
    }

    #[test]
    fn add_sets_keys_inserts_and_appends() {
        let doc = json!({"metadata": {"finalizers": ["a"]}});
        let out = patched(
            doc,
            json!([
                {"op": "add", "path": "/metadata/finalizers/-", "value": "c"},
                {"op": "add", "path": "/metadata/finalizers/1", "value": "b"},
                {"op": "add", "path": "/metadata/labels", "value": {"x": "1"}}
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["a", "b", "c"], "labels": {"x": "1"}}})
        );
    }

    #[test]
    fn add_past_the_end_or_into_missing_parent_fails() {
        let err = patched(
            json!({"a": [1]}),
            json!([{"op": "add", "path": "/a/3", "value": 2}]),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "error in add for path: '/a/3': Unable to access invalid index: 3: invalid index referenced"
        );
        let err = patched(
            json!({}),
            json!([{"op": "add", "path": "/metadata/labels/x", "value": "1"}]),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "add operation does not apply: doc is missing path: \"/metadata/labels/x\": missing value"
        );
        assert!(!err.is_malformed());
    }

    #[test]
    fn remove_deletes_keys_and_elements() {
        let out = patched(
            json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1"}}}),
            json!([
                {"op": "test", "path": "/metadata/finalizers/0", "value": "a"},
                {"op": "remove", "path": "/metadata/finalizers/0"},
                {"op": "remove", "path": "/metadata/labels/x"}
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["b"], "labels": {}}})
        );
    }

    #[test]
    fn remove_of_missing_key_fails() {
        let err = patched(
            json!({"metadata": {}}),
            json!([{"op": "remove", "path": "/metadata/labels"}]),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "error in remove for path: '/metadata/labels': Unable to remove nonexistent key: labels: missing value"
        );
        assert_eq!(err.operation_index(), Some(0));
    }

    #[test]
    fn replace_sets_existing_values_and_missing_keys_like_kube() {
        let out = patched(
            json!({"spec": {"replicas": 1, "args": ["a", "b"]}}),
            json!([
                {"op": "replace", "path": "/spec/replicas", "value": 3},
                {"op": "replace", "path": "/spec/args/1", "value": "c"},
                {"op": "replace", "path": "/spec/paused", "value": true}
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"replicas": 3, "args": ["a", "c"], "paused": true}})
        );
        let err = patched(
            json!({"spec": {"args": []}}),
            json!([{"op": "replace", "path": "/spec/args/0", "value": "x"}]),
        )
        .unwrap_err();
        assert!(matches!(err, PatchError::InvalidIndex { .. }));
    }

    #[test]
    fn move_and_copy() {
        let out = patched(
            json!({"a": {"b": 1}, "list": [1, 2]}),
            json!([
                {"op": "copy", "from": "/a/b", "path": "/c"},
                {"op": "move", "from": "/a", "path": "/d"},
                {"op": "move", "from": "/list/0", "path": "/list/-"}
            ]),
        )
        .unwrap();
        assert_eq!(out, json!({"c": 1, "d": {"b": 1}, "list": [2, 1]}));
        let err = patched(
            json!({"a": {"b": 1}}),
            json!([{"op": "move", "from": "/a", "path": "/a/b/c"}]),
        )
        .unwrap_err();
        assert!(matches!(err, PatchError::MoveIntoItself { .. }));
        let err = patched(
            json!({}),
            json!([{"op": "copy", "from": "/x", "path": "/y"}]),
        )
        .unwrap_err();
        assert!(matches!(err, PatchError::MissingKey { .. }));
    }

    #[test]
    fn test_compares_values() {
        let doc = json!({"metadata": {"finalizers": ["a"]}, "n": 1});
        patched(
            doc.clone(),
            json!([{"op": "test", "path": "/metadata/finalizers", "value": ["a"]}]),
        )
        .unwrap();
        let err = patched(doc, json!([{"op": "test", "path": "/n", "value": 2}])).unwrap_err();
        assert_eq!(err.to_string(), "testing value /n failed: test failed");
    }

    #[test]
    fn test_null_on_absent_key_succeeds_like_evanphx() {
        // The kube-runtime finalizer helper's first patch.
        let out = patched(
            json!({"metadata": {"name": "x"}}),
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["probe.example.com/cleanup"]}
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "x", "finalizers": ["probe.example.com/cleanup"]}})
        );
    }

    #[test]
    fn test_on_absent_key_with_a_value_or_absent_parent_fails() {
        let err = patched(
            json!({"metadata": {}}),
            json!([{"op": "test", "path": "/metadata/finalizers", "value": ["a"]}]),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "testing value /metadata/finalizers failed: test failed"
        );
        let err = patched(
            json!({}),
            json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]),
        )
        .unwrap_err();
        assert!(matches!(err, PatchError::MissingPath { .. }));
        let err = patched(
            json!({"metadata": {"finalizers": ["a"]}}),
            json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]),
        )
        .unwrap_err();
        assert!(matches!(err, PatchError::TestFailed { .. }));
    }

    #[test]
    fn pointer_escapes_are_decoded() {
        let out = patched(
            json!({"metadata": {"annotations": {"example.com/a~b": "1"}}}),
            json!([
                {"op": "test", "path": "/metadata/annotations/example.com~1a~0b", "value": "1"},
                {"op": "replace", "path": "/metadata/annotations/example.com~1a~0b", "value": "2"},
                {"op": "add", "path": "/metadata/annotations/x~1y", "value": "3"}
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"annotations": {"example.com/a~b": "2", "x/y": "3"}}})
        );
        let err = patched(
            json!({}),
            json!([{"op": "add", "path": "/a~2", "value": 1}]),
        )
        .unwrap_err();
        assert!(matches!(err, PatchError::InvalidPointer { .. }));
        let err = patched(json!({}), json!([{"op": "add", "path": "a", "value": 1}])).unwrap_err();
        assert!(matches!(err, PatchError::InvalidPointer { .. }));
    }

    #[test]
    fn failed_patch_leaves_target_unchanged() {
        let original = json!({"metadata": {"labels": {"a": "1"}}});
        let mut doc = original.clone();
        let err = json_patch(
            &mut doc,
            &json!([
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "test", "path": "/metadata/labels/b", "value": "3"}
            ]),
        )
        .unwrap_err();
        assert_eq!(err.operation_index(), Some(2));
        assert_eq!(doc, original);
    }

    #[test]
    fn malformed_bodies_are_told_apart_from_failed_operations() {
        let mut doc = json!({});
        let err = json_patch(&mut doc, &json!({"op": "add"})).unwrap_err();
        assert!(err.is_malformed());
        let err = json_patch(&mut doc, &json!(["add"])).unwrap_err();
        assert!(err.is_malformed());
        let err = json_patch(&mut doc, &json!([{"op": "frobnicate", "path": "/a"}])).unwrap_err();
        assert!(!err.is_malformed());
        assert_eq!(err.to_string(), "Unexpected kind: frobnicate");
        let err = json_patch(&mut doc, &json!([{"op": "add", "path": "/a"}])).unwrap_err();
        assert!(matches!(
            err,
            PatchError::MissingMember {
                member: "value",
                ..
            }
        ));
    }

    #[test]
    fn whole_document_pointer() {
        let out = patched(
            json!({"a": 1}),
            json!([
                {"op": "test", "path": "", "value": {"a": 1}},
                {"op": "replace", "path": "", "value": {"b": 2}}
            ]),
        )
        .unwrap();
        assert_eq!(out, json!({"b": 2}));
        let err = patched(json!({"a": 1}), json!([{"op": "remove", "path": ""}])).unwrap_err();
        assert!(matches!(err, PatchError::WholeDocument { .. }));
    }
}
