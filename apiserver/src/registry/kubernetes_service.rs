//! The Service `default/kubernetes`, as kube-apiserver keeps it: the first address of the
//! service range, port 443 (`https`) to the server's own port, with the Endpoints and
//! EndpointSlice `kubernetes` naming the server's address. Written at start, and again when the
//! server came back on another address.

use std::net::IpAddr;

use serde_json::{Value, json};

use super::ResourceType;
use super::actor::Actor;
use super::store::{Store, WriteOptions};
use crate::error::{Error, Result};

/// The Service's address: the first of the range.
pub const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";
const FIELD_MANAGER: &str = "atoll-kubernetes-service";

/// The objects to keep, for a server reached at `host:port`: (group, plural, object).
fn wanted(host: IpAddr, port: u16) -> Vec<(&'static str, &'static str, Value)> {
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let family = if host.is_ipv4() { "IPv4" } else { "IPv6" };
    vec![
        (
            "",
            "services",
            json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "namespace": "default", "labels": labels},
                "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP,
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}}),
        ),
        (
            "",
            "endpoints",
            json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
                "subsets": [{"addresses": [{"ip": host.to_string()}],
                    "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}),
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "kubernetes", "namespace": "default",
                    "labels": {"kubernetes.io/service-name": "kubernetes"}},
                "addressType": family,
                "endpoints": [{"addresses": [host.to_string()], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}),
        ),
    ]
}

/// Writes the Service and its endpoints for a server reached at `address` (`host:port`); a
/// host that is not an address (a DNS name) gets the Service only.
pub async fn ensure(store: &Store, address: &str) -> Result<()> {
    let Some((host, port)) = address.rsplit_once(':') else {
        return Ok(());
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let (Ok(host), Ok(port)) = (host.parse::<IpAddr>(), port.parse::<u16>()) else {
        return Ok(());
    };
    let catalog = store.registry().catalog();
    for (group, plural, object) in wanted(host, port) {
        let Some(rt) = catalog.lookup(group, "v1", plural) else {
            continue;
        };
        keep(store, &rt, object).await?;
    }
    Ok(())
}

/// Creates `object` in `default`, or puts back what differs from it.
async fn keep(store: &Store, rt: &ResourceType, object: Value) -> Result<()> {
    let options = WriteOptions {
        field_manager: FIELD_MANAGER.into(),
        actor: Some(Actor::ApiServer),
        ..Default::default()
    };
    match store.get(rt, Some("default"), "kubernetes").await {
        Err(Error::NotFound(_)) => {
            match store.create(rt, Some("default"), object, &options).await {
                Ok(_) | Err(Error::AlreadyExists(_)) => Ok(()),
                // Another server on the same storage (a replica on one etcd) made it meanwhile:
                // the Service's cluster IP, allocated first, is refused before its name is.
                Err(error) => match store.get(rt, Some("default"), "kubernetes").await {
                    Ok(_) => Ok(()),
                    Err(_) => Err(error),
                },
            }
        }
        Ok(mut stored) => {
            let mut changed = false;
            for field in ["spec", "subsets", "endpoints", "ports"] {
                let Some(want) = object.get(field) else {
                    continue;
                };
                let differs = match field {
                    // The stored spec carries defaults; compare what this module sets.
                    "spec" => stored["spec"]["ports"] != want["ports"],
                    _ => stored[field] != *want,
                };
                if differs {
                    if field == "spec" {
                        stored["spec"]["ports"] = want["ports"].clone();
                    } else {
                        stored[field] = want.clone();
                    }
                    changed = true;
                }
            }
            if !changed {
                return Ok(());
            }
            match store
                .update(rt, Some("default"), "kubernetes", None, stored, &options)
                .await
            {
                Ok(_) | Err(Error::Conflict { .. }) => Ok(()),
                Err(error) => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}
