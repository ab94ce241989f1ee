//! atoll-proto: the hub-agent gRPC protocol (`atoll.hub.v1`): join, heartbeat, one sync stream and
//! status reports, with generated code committed so that building needs no `protoc`.
//!
//! Must not depend on any other atoll crate. The protocol arrives with the inventory issue.
