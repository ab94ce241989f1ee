//! The protobuf wire format: a reader over the fields of one encoded message, and a writer that
//! builds one.
//!
//! Only what the messages served or read here use: varints, length-delimited fields and the
//! two fixed widths (skipped by the decoder, but read so that unknown fields can be passed over;
//! written for `double` fields of the OpenAPI v2 document). Groups (wire types 3 and 4) are
//! rejected.

/// Why the bytes of a message are not valid protobuf.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The message ends in the middle of a field.
    #[error("unexpected end of message")]
    Truncated,
    /// A varint runs over ten bytes.
    #[error("varint overflows 64 bits")]
    VarintOverflow,
    /// A field key carries a wire type that proto2 messages of the Kubernetes API never use.
    #[error("unsupported wire type {0}")]
    WireType(u8),
    /// A field key names field number 0.
    #[error("field number 0 is illegal")]
    FieldNumberZero,
}

/// The value of one field as it appears on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireValue<'a> {
    /// Wire type 0: int32, int64, bool (and enums, unused by Kubernetes).
    Varint(u64),
    /// Wire type 1: fixed64, sfixed64, double.
    Fixed64(u64),
    /// Wire type 2: string, bytes, embedded messages, packed repeated scalars.
    Bytes(&'a [u8]),
    /// Wire type 5: fixed32, sfixed32, float.
    Fixed32(u32),
}

impl WireValue<'_> {
    /// The name of the wire type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            WireValue::Varint(_) => "varint",
            WireValue::Fixed64(_) => "fixed64",
            WireValue::Bytes(_) => "length-delimited",
            WireValue::Fixed32(_) => "fixed32",
        }
    }
}

/// Iterates over the fields of one encoded message, in wire order.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over the encoded message `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Reads one varint (used for packed repeated scalars as well as field keys).
    pub fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for (index, byte) in self.buf.iter().enumerate() {
            if index == 10 {
                return Err(WireError::VarintOverflow);
            }
            let low = u64::from(byte & 0x7f);
            if index == 9 && low > 1 {
                return Err(WireError::VarintOverflow);
            }
            value |= low << (7 * index);
            if byte & 0x80 == 0 {
                self.buf = &self.buf[index + 1..];
                return Ok(value);
            }
        }
        Err(WireError::Truncated)
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], WireError> {
        if self.buf.len() < len {
            return Err(WireError::Truncated);
        }
        let (head, tail) = self.buf.split_at(len);
        self.buf = tail;
        Ok(head)
    }

    /// Reads the next field: its number and its value, or `None` at the end of the message.
    pub fn field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, WireError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| WireError::VarintOverflow)?;
        if number == 0 {
            return Err(WireError::FieldNumberZero);
        }
        let value = match key & 7 {
            0 => WireValue::Varint(self.varint()?),
            1 => {
                let bytes = self.take(8)?;
                let mut word = [0u8; 8];
                word.copy_from_slice(bytes);
                WireValue::Fixed64(u64::from_le_bytes(word))
            }
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| WireError::Truncated)?;
                WireValue::Bytes(self.take(len)?)
            }
            5 => {
                let bytes = self.take(4)?;
                let mut word = [0u8; 4];
                word.copy_from_slice(bytes);
                WireValue::Fixed32(u32::from_le_bytes(word))
            }
            other => return Err(WireError::WireType(other as u8)),
        };
        Ok(Some((number, value)))
    }
}

/// Builds an encoded message field by field, in the order the fields are appended.
#[derive(Debug, Clone, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty message.
    pub fn new() -> Self {
        Writer::default()
    }

    fn raw_varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.buf.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.buf.push(value as u8);
    }

    /// Appends a varint field (int32, int64 or bool); negative numbers take ten bytes, as in Go.
    pub fn varint(mut self, number: u32, value: i64) -> Self {
        self.raw_varint(u64::from(number) << 3);
        self.raw_varint(value as u64);
        self
    }

    /// Appends a length-delimited field.
    pub fn bytes(mut self, number: u32, value: &[u8]) -> Self {
        self.raw_varint((u64::from(number) << 3) | 2);
        self.raw_varint(value.len() as u64);
        self.buf.extend_from_slice(value);
        self
    }

    /// Appends a string field.
    pub fn string(self, number: u32, value: &str) -> Self {
        self.bytes(number, value.as_bytes())
    }

    /// Appends an embedded message field.
    pub fn message(self, number: u32, value: Writer) -> Self {
        self.bytes(number, &value.buf)
    }

    /// Appends a fixed64 field (`double` as its IEEE 754 bits, `fixed64`, `sfixed64`).
    pub fn fixed64(mut self, number: u32, value: u64) -> Self {
        self.raw_varint((u64::from(number) << 3) | 1);
        self.buf.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// Appends a `double` field.
    pub fn double(self, number: u32, value: f64) -> Self {
        self.fixed64(number, value.to_bits())
    }

    /// Appends one entry of a `map<string, string>` field.
    #[cfg(test)]
    pub fn string_entry(self, number: u32, key: &str, value: &str) -> Self {
        self.message(number, Writer::new().string(1, key).string(2, value))
    }

    /// Appends one entry of a `map<string, bytes>` field.
    #[cfg(test)]
    pub fn bytes_entry(self, number: u32, key: &str, value: &[u8]) -> Self {
        self.message(number, Writer::new().string(1, key).bytes(2, value))
    }

    /// Appends a fixed32 field (never used by Kubernetes; tests that unknown fields are skipped).
    #[cfg(test)]
    pub fn fixed32(mut self, number: u32, value: u32) -> Self {
        self.raw_varint((u64::from(number) << 3) | 5);
        self.buf.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// The encoded message.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_in_wire_order() {
        let buf = Writer::new()
            .varint(1, 300)
            .string(2, "hi")
            .fixed32(3, 7)
            .varint(4, -1)
            .finish();
        let mut reader = Reader::new(&buf);
        assert_eq!(reader.field(), Ok(Some((1, WireValue::Varint(300)))));
        assert_eq!(reader.field(), Ok(Some((2, WireValue::Bytes(b"hi")))));
        assert_eq!(reader.field(), Ok(Some((3, WireValue::Fixed32(7)))));
        assert_eq!(reader.field(), Ok(Some((4, WireValue::Varint(u64::MAX)))));
        assert_eq!(reader.field(), Ok(None));
    }

    #[test]
    fn truncated_length_delimited_field_is_an_error() {
        let mut buf = Writer::new().string(2, "hello").finish();
        buf.truncate(4);
        assert_eq!(Reader::new(&buf).field(), Err(WireError::Truncated));
    }

    #[test]
    fn truncated_varint_is_an_error() {
        assert_eq!(
            Reader::new(&[0x08, 0x80]).field(),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn overlong_varint_is_an_error() {
        let buf = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ];
        assert_eq!(Reader::new(&buf).field(), Err(WireError::VarintOverflow));
    }

    #[test]
    fn groups_and_field_zero_are_rejected() {
        assert_eq!(Reader::new(&[0x0b]).field(), Err(WireError::WireType(3)));
        assert_eq!(
            Reader::new(&[0x00, 0x01]).field(),
            Err(WireError::FieldNumberZero)
        );
    }
}
