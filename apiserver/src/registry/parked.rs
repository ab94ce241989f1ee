//! One top-level field of a stored object kept as its stored bytes through a write that cannot
//! change it.
//!
//! A write through the main resource of a kind with a status subresource leaves the stored
//! status as it is, and a status write leaves the spec: the store decodes the rest of the object,
//! writes it, and puts the untouched field back into the stored bytes as they were. A Work's
//! status is most of its bytes (an agent's conditions for every manifest), so a write of its spec
//! no longer builds, copies, compares, encodes and drops that tree. The store decides when a
//! field may stay parked ([`super::store`]'s `parks`): the field must be one nothing in the write
//! reads (no root rule of the schema, no admission policy, no conversion).

use std::fmt;

use bytes::Bytes;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A top-level field of a stored object, as the stored bytes have it.
#[derive(Clone, Debug)]
pub struct Parked {
    pub key: &'static str,
    /// The field's JSON value, a slice of the stored bytes (no copy).
    pub bytes: Bytes,
}

/// Decodes the stored object `stored` but for its top-level field `key`, which it returns as
/// the bytes it is stored as (none when the object has no such field).
pub fn decode(stored: &Bytes, key: &'static str) -> serde_json::Result<(Value, Option<Parked>)> {
    let mut deserializer = serde_json::Deserializer::from_slice(stored);
    let (object, raw) = Split { key }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    let parked = raw.map(|raw| Parked {
        key,
        bytes: stored.slice_ref(raw.get().as_bytes()),
    });
    Ok((Value::Object(object), parked))
}

/// The top-level map of an object, with the value of `key` borrowed as raw JSON.
struct Split {
    key: &'static str,
}

impl<'de> Visitor<'de> for Split {
    type Value = (Map<String, Value>, Option<&'de RawValue>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut object = Map::new();
        let mut parked = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.key {
                parked = Some(map.next_value::<&'de RawValue>()?);
            } else {
                object.insert(key, map.next_value()?);
            }
        }
        Ok((object, parked))
    }
}

impl<'de> DeserializeSeed<'de> for Split {
    type Value = <Self as Visitor<'de>>::Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

/// Encodes `object` with `parked` put back in, as `serde_json::to_vec` encodes the whole object
/// (the fields in the map's order, the parked one at its place by name). An object that already
/// has the parked field, or is not an object, is the caller's bug: refused, never written twice.
pub fn encode(object: &Value, parked: Option<&Parked>) -> serde_json::Result<Vec<u8>> {
    let Some(parked) = parked else {
        return serde_json::to_vec(object);
    };
    let Some(map) = object.as_object().filter(|m| !m.contains_key(parked.key)) else {
        return Err(de::Error::custom(format!(
            "the object to store has a {:?} of its own beside the stored one",
            parked.key
        )));
    };
    let mut out = Vec::with_capacity(parked.bytes.len() + 1024);
    out.push(b'{');
    let mut pending = Some(parked);
    for (key, value) in map {
        if let Some(p) = pending.filter(|p| p.key < key.as_str()) {
            put_parked(&mut out, p)?;
            pending = None;
        }
        if out.len() > 1 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, key)?;
        out.push(b':');
        serde_json::to_writer(&mut out, value)?;
    }
    if let Some(p) = pending {
        put_parked(&mut out, p)?;
    }
    out.push(b'}');
    Ok(out)
}

fn put_parked(out: &mut Vec<u8>, parked: &Parked) -> serde_json::Result<()> {
    if out.len() > 1 {
        out.push(b',');
    }
    serde_json::to_writer(&mut *out, parked.key)?;
    out.push(b':');
    out.extend_from_slice(&parked.bytes);
    Ok(())
}

/// Puts the parked field back into `object` as a decoded value (for an answer that shows the
/// whole object).
pub fn restore(object: &mut Value, parked: &Parked) -> serde_json::Result<()> {
    let value: Value = serde_json::from_slice(&parked.bytes)?;
    if let Some(map) = object.as_object_mut() {
        map.insert(parked.key.to_owned(), value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(object: &Value) -> Bytes {
        Bytes::from(serde_json::to_vec(object).unwrap())
    }

    #[test]
    fn a_parked_field_goes_back_where_it_was_stored() {
        let object = json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1",
            "kind": "Work",
            "metadata": {"name": "app", "namespace": "east"},
            "spec": {"workload": {"manifests": [{"kind": "ConfigMap", "data": {"a": "é\"\\n"}}]}},
            "status": {"conditions": [{"type": "Applied", "status": "True"}], "z": null},
        });
        let bytes = stored(&object);
        for key in ["status", "spec", "kind", "apiVersion", "zzz", "aaa"] {
            let (rest, parked) = decode(&bytes, key).unwrap();
            assert!(
                rest.get(key).is_none(),
                "{key} is left out of the decoded object"
            );
            assert_eq!(
                parked.as_ref().map(|p| p.bytes.clone()),
                object.get(key).map(stored),
                "{key} is parked as stored"
            );
            assert_eq!(
                encode(&rest, parked.as_ref()).unwrap(),
                bytes.to_vec(),
                "with {key} parked, the object encodes to the bytes it was stored as"
            );
            let mut whole = rest;
            if let Some(parked) = &parked {
                restore(&mut whole, parked).unwrap();
            }
            assert_eq!(whole, object, "{key} restored");
        }
    }

    #[test]
    fn a_changed_object_encodes_as_serde_json_would_with_the_field_put_back() {
        let object = json!({"kind": "Work", "metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"y": [1, 2]}});
        let (mut rest, parked) = decode(&stored(&object), "status").unwrap();
        rest["spec"]["x"] = json!(2);
        rest["metadata"]["labels"] = json!({"team": "a"});
        let mut expected = object.clone();
        expected["spec"]["x"] = json!(2);
        expected["metadata"]["labels"] = json!({"team": "a"});
        assert_eq!(
            encode(&rest, parked.as_ref()).unwrap(),
            serde_json::to_vec(&expected).unwrap()
        );
    }

    #[test]
    fn the_field_is_never_written_twice_and_bad_bytes_are_errors() {
        let object = json!({"spec": {}, "status": {"a": 1}});
        let (mut rest, parked) = decode(&stored(&object), "status").unwrap();
        rest["status"] = json!({"b": 2});
        let err = encode(&rest, parked.as_ref()).unwrap_err();
        assert!(err.to_string().contains("\"status\""), "{err}");

        assert!(decode(&Bytes::from_static(b"[1]"), "status").is_err());
        assert!(decode(&Bytes::from_static(b"{\"status\": {}} x"), "status").is_err());
        assert!(decode(&Bytes::from_static(b"{\"status\": {"), "status").is_err());
    }
}
