//! Message descriptors and the generic decoder from protobuf bytes to the JSON object model.
//!
//! A [`Message`] lists, for each field of a Kubernetes proto2 message, its field number, its JSON
//! name, what it holds and how Go's `encoding/json` treats it when empty ([`Presence`]). The
//! decoder reproduces what kube-apiserver's own path gives: protobuf into the Go struct, then the
//! Go struct into JSON. An absent field and a zero field are the same thing in the Go struct, so
//! what shows up in JSON depends only on the Go field: `omitempty` scalars and collections vanish
//! when empty, non-pointer structs are always written (`"resources": {}`), pointers are written
//! exactly when they were sent, and fields without `omitempty` are written even when zero.
//!
//! Unknown field numbers are skipped, as Go's generated code does.

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::wire::{Reader, WireError, WireValue};

/// Seconds since the Unix epoch of Go's zero `time.Time` (0001-01-01T00:00:00Z).
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;
/// Seconds since the Unix epoch of 0000-01-01T00:00:00Z.
const FIRST_SECOND_OF_YEAR_0: i64 = -62_167_219_200;
/// Seconds since the Unix epoch of 10000-01-01T00:00:00Z.
const FIRST_SECOND_OF_YEAR_10000: i64 = 253_402_300_800;

/// A proto2 message of the Kubernetes API, as far as decoding into JSON needs it.
#[derive(Debug)]
pub struct Message {
    /// The Go type name, used in error paths for the outermost message.
    pub name: &'static str,
    /// The fields, in Go struct order.
    pub fields: &'static [Field],
}

impl Message {
    /// A message descriptor.
    pub const fn new(name: &'static str, fields: &'static [Field]) -> Self {
        Message { name, fields }
    }
}

/// One field of a [`Message`].
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The protobuf field number.
    pub number: u32,
    /// The JSON name (empty for [`Presence::Inline`]).
    pub json: &'static str,
    /// What a single value holds.
    pub kind: Kind,
    /// One value, a list, or a map keyed by string.
    pub shape: Shape,
    /// How Go's JSON encoding treats the field when it is empty.
    pub presence: Presence,
}

/// A [`Field`] descriptor; short so that the tables read one field a line.
pub const fn f(
    number: u32,
    json: &'static str,
    kind: Kind,
    shape: Shape,
    presence: Presence,
) -> Field {
    Field {
        number,
        json,
        kind,
        shape,
        presence,
    }
}

/// What one value of a field holds, and how it appears in JSON.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// `string` (and Go string types such as `types.UID`).
    String,
    /// `bytes`: a base64 string in JSON.
    Bytes,
    /// `bool`.
    Bool,
    /// `int32` or `int64`.
    Int,
    /// `metav1.Time`: `{seconds=1, nanos=2}`, RFC 3339 at second precision in JSON, `null` when zero.
    Time,
    /// `resource.Quantity`: `{string=1}`, a string in JSON.
    Quantity,
    /// `intstr.IntOrString`: `{type=1, intVal=2, strVal=3}`, a number or a string in JSON.
    IntOrString,
    /// A Go `[]string` type wrapped in a message for protobuf (`ExtraValue`): `{items=1}`.
    StringList,
    /// `metav1.FieldsV1`: `{Raw=1}` holding JSON, written as that JSON.
    RawJson,
    /// An embedded message.
    Object(&'static Message),
}

/// How many values a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A single value.
    Single,
    /// `repeated`: a JSON array.
    List,
    /// `map<string, V>`: a JSON object.
    Map,
}

/// How Go's `encoding/json` writes a field, from its Go type and JSON tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Non-pointer with `omitempty`: left out when empty, except structs, which are always written.
    Omit,
    /// Non-pointer struct with `omitzero`: left out when zero.
    OmitZero,
    /// Non-pointer without `omitempty`: always written, zero when absent (`null` for lists and maps).
    Always,
    /// Pointer with `omitempty`: written exactly when present on the wire.
    Optional,
    /// Pointer without `omitempty`: written when present, `null` otherwise.
    Nullable,
    /// An embedded struct whose fields are written into the parent object.
    Inline,
}

/// Why a message could not be decoded; `path` names the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct FieldError {
    /// Where in the object, e.g. `Deployment.spec.template.spec.containers[0].ports`.
    pub path: String,
    /// What is wrong there.
    pub reason: Reason,
}

/// What is wrong with a field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Reason {
    /// The bytes are not valid protobuf.
    #[error(transparent)]
    Wire(#[from] WireError),
    /// The field arrived with a wire type its declared type cannot have.
    #[error("expected a {expected} field, got {found}")]
    WireType {
        /// The wire type of the declared type.
        expected: &'static str,
        /// The wire type received.
        found: &'static str,
    },
    /// A time outside the years 0000 to 9999.
    #[error("time {seconds}s since the epoch is out of range")]
    TimeOutOfRange {
        /// Seconds since the Unix epoch, as sent.
        seconds: i64,
    },
    /// `FieldsV1` bytes that are not JSON.
    #[error("fieldsV1 is not JSON")]
    RawJson,
}

/// Decodes the encoded message `bytes` described by `message` into a JSON object.
pub fn decode(message: &'static Message, bytes: &[u8]) -> Result<Map<String, Value>, FieldError> {
    let mut path = Path(vec![Segment::Field(message.name)]);
    decode_message(message, bytes, &mut path)
}

/// Where the decoder is, kept as a stack and rendered only for errors.
struct Path(Vec<Segment>);

enum Segment {
    Field(&'static str),
    Index(usize),
}

impl Path {
    fn error(&self, reason: impl Into<Reason>) -> FieldError {
        let mut path = String::new();
        for segment in &self.0 {
            match segment {
                Segment::Field(name) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(name);
                }
                Segment::Index(index) => path.push_str(&format!("[{index}]")),
            }
        }
        FieldError {
            path,
            reason: reason.into(),
        }
    }

    fn within<T>(
        &mut self,
        segment: Segment,
        run: impl FnOnce(&mut Self) -> Result<T, FieldError>,
    ) -> Result<T, FieldError> {
        self.0.push(segment);
        let result = run(self);
        self.0.pop();
        result
    }
}

/// What has been read for one field so far.
enum Slot<'a> {
    Absent,
    One(Value),
    /// An embedded message: every occurrence, since proto merges repeated occurrences.
    Parts(Vec<&'a [u8]>),
    Many(Vec<Value>),
    Entries(Map<String, Value>),
}

fn decode_message(
    message: &'static Message,
    bytes: &[u8],
    path: &mut Path,
) -> Result<Map<String, Value>, FieldError> {
    let mut slots: Vec<Slot<'_>> = message.fields.iter().map(|_| Slot::Absent).collect();
    let mut reader = Reader::new(bytes);
    while let Some((number, wire)) = reader.field().map_err(|e| path.error(e))? {
        let Some(index) = message
            .fields
            .iter()
            .position(|field| field.number == number)
        else {
            continue;
        };
        let field = &message.fields[index];
        let slot = &mut slots[index];
        path.within(Segment::Field(field.json), |path| {
            read_field(field, wire, slot, path)
        })?;
    }

    let mut out = Map::new();
    for (field, slot) in message.fields.iter().zip(slots) {
        let value = match slot {
            Slot::Absent => None,
            Slot::One(value) => Some(value),
            Slot::Parts(parts) => {
                let bytes = parts.concat();
                path.within(Segment::Field(field.json), |path| {
                    decode_value(field.kind, WireValue::Bytes(&bytes), path)
                })
                .map(Some)?
            }
            Slot::Many(items) => Some(Value::Array(items)),
            Slot::Entries(entries) => Some(Value::Object(entries)),
        };
        if field.presence == Presence::Inline {
            let inner = match value {
                Some(inner) => inner,
                None => zero(field, path)?,
            };
            if let Value::Object(inner) = inner {
                out.extend(inner);
            }
            continue;
        }
        if let Some(value) = present(field, value, path)? {
            out.insert(field.json.to_owned(), value);
        }
    }
    Ok(out)
}

fn read_field<'a>(
    field: &Field,
    wire: WireValue<'a>,
    slot: &mut Slot<'a>,
    path: &mut Path,
) -> Result<(), FieldError> {
    match field.shape {
        Shape::Single => match (field.kind, wire) {
            (Kind::Object(_), WireValue::Bytes(bytes)) => match slot {
                Slot::Parts(parts) => parts.push(bytes),
                _ => *slot = Slot::Parts(vec![bytes]),
            },
            _ => *slot = Slot::One(decode_value(field.kind, wire, path)?),
        },
        Shape::List => {
            let Slot::Many(items) = slot else {
                *slot = Slot::Many(Vec::new());
                return read_field(field, wire, slot, path);
            };
            match (field.kind, wire) {
                (Kind::Int | Kind::Bool, WireValue::Bytes(packed)) => {
                    let mut reader = Reader::new(packed);
                    while !reader.is_empty() {
                        let raw = reader.varint().map_err(|e| path.error(e))?;
                        items.push(scalar(field.kind, raw));
                    }
                }
                _ => {
                    let index = items.len();
                    let item = path.within(Segment::Index(index), |path| {
                        decode_value(field.kind, wire, path)
                    })?;
                    items.push(item);
                }
            }
        }
        Shape::Map => {
            let Slot::Entries(entries) = slot else {
                *slot = Slot::Entries(Map::new());
                return read_field(field, wire, slot, path);
            };
            let entry = expect_bytes(wire, path)?;
            let mut key = String::new();
            let mut value = None;
            let mut reader = Reader::new(entry);
            while let Some((number, wire)) = reader.field().map_err(|e| path.error(e))? {
                match number {
                    1 => key = lossy(expect_bytes(wire, path)?),
                    2 => value = Some(wire),
                    _ => {}
                }
            }
            let value = match value {
                Some(wire) => path.within(Segment::Field("value"), |path| {
                    decode_value(field.kind, wire, path)
                })?,
                None => zero_kind(field.kind, path)?,
            };
            entries.insert(key, value);
        }
    }
    Ok(())
}

/// The JSON for one value of `kind` received as `wire`.
fn decode_value(kind: Kind, wire: WireValue<'_>, path: &mut Path) -> Result<Value, FieldError> {
    match kind {
        Kind::Int | Kind::Bool => match wire {
            WireValue::Varint(raw) => Ok(scalar(kind, raw)),
            other => Err(path.error(Reason::WireType {
                expected: "varint",
                found: other.type_name(),
            })),
        },
        Kind::String => Ok(Value::String(lossy(expect_bytes(wire, path)?))),
        Kind::Bytes => Ok(Value::String(
            base64::engine::general_purpose::STANDARD.encode(expect_bytes(wire, path)?),
        )),
        Kind::Time => time(expect_bytes(wire, path)?, path),
        Kind::Quantity => {
            let mut text = String::new();
            for_each_field(expect_bytes(wire, path)?, path, |number, wire, path| {
                if number == 1 {
                    text = lossy(expect_bytes(wire, path)?);
                }
                Ok(())
            })?;
            if text.is_empty() {
                text.push('0');
            }
            Ok(Value::String(text))
        }
        Kind::IntOrString => {
            let (mut is_string, mut int, mut string) = (false, 0i64, String::new());
            for_each_field(expect_bytes(wire, path)?, path, |number, wire, path| {
                match number {
                    1 => is_string = expect_varint(wire, path)? == 1,
                    2 => int = i64::from(expect_varint(wire, path)? as i32),
                    3 => string = lossy(expect_bytes(wire, path)?),
                    _ => {}
                }
                Ok(())
            })?;
            Ok(if is_string {
                Value::String(string)
            } else {
                Value::Number(int.into())
            })
        }
        Kind::StringList => {
            let mut items = Vec::new();
            for_each_field(expect_bytes(wire, path)?, path, |number, wire, path| {
                if number == 1 {
                    items.push(Value::String(lossy(expect_bytes(wire, path)?)));
                }
                Ok(())
            })?;
            Ok(Value::Array(items))
        }
        Kind::RawJson => {
            let mut raw: &[u8] = &[];
            for_each_field(expect_bytes(wire, path)?, path, |number, wire, path| {
                if number == 1 {
                    raw = expect_bytes(wire, path)?;
                }
                Ok(())
            })?;
            if raw.is_empty() {
                return Ok(Value::Null);
            }
            serde_json::from_slice(raw).map_err(|_| path.error(Reason::RawJson))
        }
        Kind::Object(message) => Ok(Value::Object(decode_message(
            message,
            expect_bytes(wire, path)?,
            path,
        )?)),
    }
}

fn for_each_field<'a>(
    bytes: &'a [u8],
    path: &mut Path,
    mut visit: impl FnMut(u32, WireValue<'a>, &mut Path) -> Result<(), FieldError>,
) -> Result<(), FieldError> {
    let mut reader = Reader::new(bytes);
    while let Some((number, wire)) = reader.field().map_err(|e| path.error(e))? {
        visit(number, wire, path)?;
    }
    Ok(())
}

fn scalar(kind: Kind, raw: u64) -> Value {
    match kind {
        Kind::Bool => Value::Bool(raw != 0),
        // int32 and int64 both arrive as two's complement in 64 bits.
        _ => Value::Number(Number::from(raw as i64)),
    }
}

fn expect_bytes<'a>(wire: WireValue<'a>, path: &Path) -> Result<&'a [u8], FieldError> {
    match wire {
        WireValue::Bytes(bytes) => Ok(bytes),
        other => Err(path.error(Reason::WireType {
            expected: "length-delimited",
            found: other.type_name(),
        })),
    }
}

fn expect_varint(wire: WireValue<'_>, path: &Path) -> Result<u64, FieldError> {
    match wire {
        WireValue::Varint(raw) => Ok(raw),
        other => Err(path.error(Reason::WireType {
            expected: "varint",
            found: other.type_name(),
        })),
    }
}

/// Go converts protobuf strings without checking them, and its JSON encoder writes invalid
/// UTF-8 as U+FFFD: the lossy conversion gives the same text.
fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `metav1.Time`: empty means Go's zero time (JSON `null`); nanoseconds are dropped, as
/// kube-apiserver does when it decodes protobuf.
fn time(bytes: &[u8], path: &mut Path) -> Result<Value, FieldError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    let mut seconds = 0i64;
    for_each_field(bytes, path, |number, wire, path| {
        if number == 1 {
            seconds = expect_varint(wire, path)? as i64;
        }
        Ok(())
    })?;
    if seconds == GO_ZERO_TIME_SECONDS {
        return Ok(Value::Null);
    }
    // Go's JSON encoding of a time fails outside the years 0000 to 9999.
    if !(FIRST_SECOND_OF_YEAR_0..FIRST_SECOND_OF_YEAR_10000).contains(&seconds) {
        return Err(path.error(Reason::TimeOutOfRange { seconds }));
    }
    let timestamp = jiff::Timestamp::from_second(seconds)
        .map_err(|_| path.error(Reason::TimeOutOfRange { seconds }))?;
    Ok(Value::String(
        timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    ))
}

/// What Go writes for `field` given what was received (`None`: nothing), or `None` to leave it out.
fn present(
    field: &Field,
    value: Option<Value>,
    path: &mut Path,
) -> Result<Option<Value>, FieldError> {
    Ok(match field.presence {
        Presence::Optional => value,
        Presence::Nullable => Some(value.unwrap_or(Value::Null)),
        Presence::Always => match value {
            Some(value) => Some(value),
            None => Some(zero(field, path)?),
        },
        Presence::OmitZero => value.filter(|value| !value.is_null()),
        Presence::Omit if is_struct(field) => match value {
            Some(value) => Some(value),
            None => Some(zero(field, path)?),
        },
        Presence::Omit => value.filter(|value| !is_empty(value)),
        Presence::Inline => None,
    })
}

/// Go's `omitempty` never leaves out a struct.
fn is_struct(field: &Field) -> bool {
    field.shape == Shape::Single
        && matches!(
            field.kind,
            Kind::Object(_) | Kind::Time | Kind::Quantity | Kind::IntOrString
        )
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(value) => !value,
        Value::Number(number) => number.as_i64() == Some(0),
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(entries) => entries.is_empty(),
    }
}

/// The JSON of the Go zero value of a field (nil for lists and maps).
fn zero(field: &Field, path: &mut Path) -> Result<Value, FieldError> {
    match field.shape {
        Shape::List | Shape::Map => Ok(Value::Null),
        Shape::Single => zero_kind(field.kind, path),
    }
}

fn zero_kind(kind: Kind, path: &mut Path) -> Result<Value, FieldError> {
    Ok(match kind {
        Kind::String => Value::String(String::new()),
        Kind::Bool => Value::Bool(false),
        Kind::Int | Kind::IntOrString => Value::Number(0.into()),
        Kind::Quantity => Value::String("0".to_owned()),
        Kind::Bytes | Kind::Time | Kind::StringList | Kind::RawJson => Value::Null,
        Kind::Object(message) => Value::Object(decode_message(message, &[], path)?),
    })
}
