//! The codec of the hub's gRPC service: prost's, with a smaller first buffer per call.
//!
//! tonic's default buffer is 8 KiB for each call's encoding and decoding, held for as long as
//! the call lives. An agent's sync stream lives as long as its connection, so a hub of 5,000
//! agents held 40 MiB of such buffers doing nothing while the messages it sends and reads
//! (heartbeats, acknowledgements, most Works) are a few hundred bytes to a few KiB. A buffer
//! still grows to what a message needs.

use std::marker::PhantomData;

use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Each call's first encode and decode buffer, and the step it grows by.
pub const BUFFER_BYTES: usize = 1024;
/// The encoded bytes a stream gathers before it hands them on (tonic's default).
const YIELD_THRESHOLD: usize = 32 * 1024;

/// The codec the generated client and server use (`codec_path` in `tests/generated.rs`).
#[derive(Debug, Clone, Copy)]
pub struct HubCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for HubCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<T, U> Codec for HubCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(settings())
    }
}

fn settings() -> BufferSettings {
    BufferSettings::new(BUFFER_BYTES, YIELD_THRESHOLD)
}
