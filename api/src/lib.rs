//! atoll-api: the resource types of atoll (ClusterProfile, ClusterProperty, Work, AppliedWork,
//! ClusterSet, WorkPlacement, HostedCluster), their well-known names and validation, and CRD
//! generation.
//!
//! Types only: this crate must not depend on a Kubernetes client, networking, or any other atoll
//! crate. The types arrive with the inventory issue; today the crate holds the names every part
//! already agrees on.

/// The inventory namespace on the hub, where ClusterProfiles live.
pub const INVENTORY_NAMESPACE: &str = "fleet-system";

/// The namespace on the hub for atoll's own internals (CA, hashed credentials, bootstrap tokens).
pub const SYSTEM_NAMESPACE: &str = "atoll-system";
