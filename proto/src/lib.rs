//! atoll-proto: the hub-agent gRPC protocol (`atoll.hub.v1`): join, heartbeat, one sync stream and
//! status reports. The protocol is `proto/proto/atoll/hub/v1/hub.proto`; the Rust code generated from it
//! is committed in `src/generated/`, so building needs no `protoc`. `tests/generated.rs` fails when
//! the two drift apart and says how to regenerate.
//!
//! Must not depend on any other atoll crate.

pub mod codec;

/// `atoll.hub.v1`: messages, the `Hub` client and the `Hub` server trait.
pub mod v1 {
    #![allow(clippy::all, clippy::pedantic, missing_docs, rust_2018_idioms)]
    include!("generated/atoll.hub.v1.rs");
}

/// The metadata key every call carries its token in, as `Bearer <token>`.
pub const AUTHORIZATION: &str = "authorization";

/// The largest Join and Heartbeat messages the hub reads, in bytes (they carry the cluster's
/// properties); agents keep what they send well under it.
pub const JOIN_MAX_BYTES: usize = 512 * 1024;
/// See [`JOIN_MAX_BYTES`].
pub const HEARTBEAT_MAX_BYTES: usize = 512 * 1024;
/// The largest Sync request the hub reads, in bytes (it lists the Works an agent has).
pub const SYNC_MAX_BYTES: usize = 8 * 1024 * 1024;
