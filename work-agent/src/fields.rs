//! Simple JSON paths, as feedback rules and ignored fields name them: `.status.replicas`,
//! `.spec.template.spec.containers[0].image`, with or without kubectl's braces and the leading dot.

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The steps of `path`, or why it is not a path this agent reads.
fn steps(path: &str) -> Result<Vec<Step>, String> {
    let trimmed = path.trim().trim_start_matches('{').trim_end_matches('}');
    let rest = trimmed.strip_prefix('.').unwrap_or(trimmed);
    let mut out = Vec::new();
    for segment in rest.split('.') {
        let (name, mut indices) = match segment.split_once('[') {
            Some((name, indices)) => (name, Some(indices)),
            None => (segment, None),
        };
        if name.is_empty() && indices.is_none() {
            return Err(format!("{path:?} has an empty field name"));
        }
        if !name.is_empty() {
            out.push(Step::Key(name.to_owned()));
        }
        while let Some(text) = indices {
            let (index, after) = text
                .split_once(']')
                .ok_or_else(|| format!("{path:?} has an unclosed '['"))?;
            let index = index
                .parse::<usize>()
                .map_err(|_| format!("{path:?}: [{index}] is not a list index"))?;
            out.push(Step::Index(index));
            indices = match after {
                "" => None,
                more => Some(
                    more.strip_prefix('[')
                        .ok_or_else(|| format!("{path:?}: unexpected {more:?}"))?,
                ),
            };
        }
    }
    Ok(out)
}

/// Checks that `path` is one this agent reads, saying why not.
pub fn check(path: &str) -> Result<(), String> {
    steps(path).map(|_| ())
}

/// The value at `path`, when there is one.
pub fn lookup<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = object;
    for step in steps(path).ok()? {
        current = match step {
            Step::Key(key) => current.get(key)?,
            Step::Index(i) => current.get(i)?,
        };
    }
    Some(current)
}

/// Sets the value at `path` to `value`, or removes it when `value` is `None`. Missing parents
/// are created as objects when setting; a list index must exist.
pub fn replace(object: &mut Value, path: &str, value: Option<Value>) -> Result<(), String> {
    let steps = steps(path)?;
    let Some((last, parents)) = steps.split_last() else {
        return Err(format!("{path:?} names no field"));
    };
    let mut current = object;
    for step in parents {
        current = match step {
            Step::Key(key) => {
                let Some(map) = current.as_object_mut() else {
                    return Ok(());
                };
                if value.is_none() && !map.contains_key(key) {
                    return Ok(());
                }
                map.entry(key.clone())
                    .or_insert_with(|| Value::Object(Default::default()))
            }
            Step::Index(i) => match current.get_mut(*i) {
                Some(item) => item,
                None => return Ok(()),
            },
        };
    }
    match (last, value) {
        (Step::Key(key), Some(v)) => {
            if let Some(map) = current.as_object_mut() {
                map.insert(key.clone(), v);
            }
        }
        (Step::Key(key), None) => {
            if let Some(map) = current.as_object_mut() {
                map.remove(key);
            }
        }
        (Step::Index(i), Some(v)) => {
            if let Some(item) = current.get_mut(*i) {
                *item = v;
            }
        }
        (Step::Index(i), None) => {
            if let Some(list) = current.as_array_mut()
                && *i < list.len()
            {
                list.remove(*i);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_read_set_and_remove() {
        let mut object = json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"image": "a"}]}}}});
        assert_eq!(lookup(&object, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(
            lookup(&object, "{.spec.template.spec.containers[0].image}"),
            Some(&json!("a"))
        );
        assert_eq!(lookup(&object, ".spec.missing"), None);
        replace(
            &mut object,
            ".spec.template.spec.containers[0].image",
            Some(json!("b")),
        )
        .unwrap();
        assert_eq!(
            object["spec"]["template"]["spec"]["containers"][0]["image"],
            "b"
        );
        replace(&mut object, ".spec.replicas", None).unwrap();
        assert!(object["spec"].get("replicas").is_none());
        replace(&mut object, ".metadata.labels.app", Some(json!("web"))).unwrap();
        assert_eq!(object["metadata"]["labels"]["app"], "web");
        // Removing what is not there changes nothing.
        let before = object.clone();
        replace(&mut object, ".status.ready", None).unwrap();
        assert_eq!(object, before);
    }

    #[test]
    fn malformed_paths_say_why() {
        assert!(
            check("spec.replicas").is_ok(),
            "the leading dot may be left out"
        );
        assert!(check("").is_err());
        assert_eq!(
            check(".spec.containers[x]").unwrap_err(),
            r#"".spec.containers[x]": [x] is not a list index"#
        );
        assert!(check(".spec..replicas").is_err());
        assert!(check(".spec.containers[0").is_err());
    }
}
