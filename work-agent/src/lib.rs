//! atoll-agent: joins a hub over gRPC, pulls its Work, applies it with server-side apply, and
//! reports status, health and ClusterProperties.
//!
//! May depend on `atoll-api` and `atoll-proto`, never on hub internals. The agent arrives with the
//! inventory issue.
