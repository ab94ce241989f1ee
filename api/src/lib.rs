//! atoll-api: the resource types of atoll (ClusterProfile, ClusterProperty, Work, AppliedWork,
//! ClusterSet, WorkPlacement, HostedCluster), their well-known names and validation, and CRD
//! generation.
//!
//! Types only: this crate must not depend on a Kubernetes client, networking, or any other atoll
//! crate. It uses `kube-core` and `kube-derive`, never the `kube` client.

pub mod clusterset;
pub mod condition;
pub mod crd;
pub mod hosted;
pub mod inventory;
pub mod names;
pub mod placement;
mod schema;
pub mod work;

pub use names::{INVENTORY_NAMESPACE, SYSTEM_NAMESPACE};
