//! atoll-hub: the hub controllers (kube-runtime), the gRPC server for agents and the hosted
//! control plane manager.
//!
//! Talks to every API server only through kube-rs over HTTPS; may depend on `atoll-api`,
//! `atoll-proto`, and `atoll-apiserver` only to run hosted control planes. The controllers arrive
//! with the inventory issue.
