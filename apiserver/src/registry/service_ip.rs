//! Cluster IPs for Services, as kube-apiserver 1.35 allocates them: from the service range
//! (`10.96.0.0/12` here, as kubeadm's default), each taken by creating an `IPAddress` object
//! named after it (`networking.k8s.io/v1`, `spec.parentRef` naming the Service), so two Services
//! can never hold one address, and released when the Service goes.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::ResourceType;
use super::actor::Actor;
use super::store::{DeleteOptions, Store, WriteOptions};
use crate::error::{Error, Result};
use crate::validation::{CauseType, FieldError};

/// The service range.
pub const SERVICE_CIDR: &str = "10.96.0.0/12";
const BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const SIZE: u32 = 1 << 20;
/// How many addresses a Service's allocation tries before it reports the range full.
const PROBES: u32 = 4096;
pub(crate) const FIELD_MANAGER: &str = "atoll-ipallocator";
/// The label naming who made an `IPAddress`, and the allocator's value of it.
pub const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
pub const MANAGER: &str = "ipallocator.k8s.io";
const IP_FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";

/// Whether `ip` is an address a Service may hold: in the range, neither its network address nor
/// its last.
pub fn in_range(ip: Ipv4Addr) -> bool {
    let n = u32::from(ip);
    n > BASE && n < BASE + SIZE - 1
}

/// The address the search for a Service's IP starts at: derived from its namespace and name,
/// so that allocations spread over the range.
fn start(ns: &str, name: &str) -> u32 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{ns}/{name}").as_bytes());
    let n = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) % (SIZE - 2);
    // Skip the network address, and the first address, which the `kubernetes` Service holds.
    n.max(1) + 1
}

/// What a Service needs: `None` for an ExternalName or headless Service, else the address it
/// asks for (`Some(None)`: any).
pub fn wanted(service: &Value) -> Option<Option<String>> {
    let spec = &service["spec"];
    if spec["type"] == "ExternalName" {
        return None;
    }
    match spec["clusterIP"].as_str().filter(|ip| !ip.is_empty()) {
        Some("None") => None,
        Some(ip) => Some(Some(ip.to_owned())),
        None => Some(None),
    }
}

fn invalid(service: &ResourceType, name: &str, ip: &str, message: String) -> Error {
    Error::invalid(
        &service.qualified_kind(),
        service.target(name),
        vec![FieldError {
            cause: CauseType::Invalid,
            field: "spec.clusterIPs".into(),
            message,
            value: Some(json!([ip])),
        }],
    )
}

/// The `IPAddress` by which the Service `ns/name` holds `ip`.
pub fn address_object(ip: &str, ns: &str, name: &str) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
        "metadata": {"name": ip, "labels": {IP_FAMILY_LABEL: "IPv4", MANAGED_BY_LABEL: MANAGER}},
        "spec": {"parentRef": {"group": "", "resource": "services", "namespace": ns, "name": name}}})
}

/// Takes a cluster IP for the Service `ns/name` (its object `service`, whose `spec.clusterIP`
/// and `clusterIPs` are then set); the address taken, if any. `dry_run` takes nothing.
pub async fn allocate(
    store: &Store,
    services: &ResourceType,
    ns: &str,
    name: &str,
    service: &mut Value,
    dry_run: bool,
) -> Result<Option<String>> {
    let Some(wanted) = wanted(service) else {
        return Ok(None);
    };
    let catalog = store.registry().catalog();
    let addresses = catalog
        .lookup("networking.k8s.io", "v1", "ipaddresses")
        .ok_or(Error::UnknownPath)?;
    let candidates: Vec<Ipv4Addr> = match &wanted {
        Some(ip) => {
            let Ok(parsed) = ip.parse::<Ipv4Addr>() else {
                return Err(invalid(
                    services,
                    name,
                    ip,
                    format!("failed to allocate IP {ip}: must be a valid IPv4 address"),
                ));
            };
            if !in_range(parsed) {
                return Err(invalid(
                    services,
                    name,
                    ip,
                    format!(
                        "failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {SERVICE_CIDR}"
                    ),
                ));
            }
            vec![parsed]
        }
        None => {
            let first = start(ns, name);
            (0..PROBES)
                .map(|i| Ipv4Addr::from(BASE + 2 + (first - 2 + i) % (SIZE - 3)))
                .collect()
        }
    };
    for ip in candidates {
        let text = ip.to_string();
        if !dry_run {
            let object = address_object(&text, ns, name);
            let options = WriteOptions {
                field_manager: FIELD_MANAGER.into(),
                actor: Some(Actor::ApiServer),
                ..Default::default()
            };
            // Boxed: creating a Service creates its IPAddress through the same store.
            match Box::pin(store.create(&addresses, None, object, &options)).await {
                Ok(_) => {}
                Err(Error::AlreadyExists(_)) if wanted.is_none() => continue,
                Err(Error::AlreadyExists(_)) => {
                    return Err(invalid(
                        services,
                        name,
                        &text,
                        format!("failed to allocate IP {text}: provided IP is already allocated"),
                    ));
                }
                Err(error) => return Err(error),
            }
        }
        service["spec"]["clusterIP"] = json!(text);
        service["spec"]["clusterIPs"] = json!([text]);
        return Ok(Some(text));
    }
    Err(Error::Forbidden(format!(
        "failed to allocate a cluster IP for service {ns}/{name}: the range {SERVICE_CIDR} has no free address near its start"
    )))
}

/// Releases the address a gone Service (`service`, its last state) held.
pub async fn release(store: &Store, service: &Value) -> Result<()> {
    let Some(ip) = service["spec"]["clusterIP"]
        .as_str()
        .filter(|ip| ip.parse::<Ipv4Addr>().is_ok())
    else {
        return Ok(());
    };
    let catalog = store.registry().catalog();
    let Some(addresses) = catalog.lookup("networking.k8s.io", "v1", "ipaddresses") else {
        return Ok(());
    };
    let held = match store.get(&addresses, None, ip).await {
        Ok(held) => held,
        Err(Error::NotFound(_)) => return Ok(()),
        Err(error) => return Err(error),
    };
    let parent = &held["spec"]["parentRef"];
    if parent["resource"] != "services"
        || parent["namespace"] != service["metadata"]["namespace"]
        || parent["name"] != service["metadata"]["name"]
    {
        return Ok(());
    }
    let options = DeleteOptions {
        precondition_uid: held["metadata"]["uid"].as_str().map(str::to_owned),
        actor: Some(Actor::ApiServer),
        ..Default::default()
    };
    match Box::pin(store.delete(&addresses, None, ip, &options)).await {
        Ok(_) | Err(Error::NotFound(_) | Error::Conflict { .. }) => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_and_where_searches_start() {
        assert!(in_range("10.96.0.1".parse().unwrap()));
        assert!(in_range("10.111.255.254".parse().unwrap()));
        assert!(!in_range("10.96.0.0".parse().unwrap()));
        assert!(!in_range("10.111.255.255".parse().unwrap()));
        assert!(!in_range("10.112.0.1".parse().unwrap()));
        assert!(!in_range("192.168.0.1".parse().unwrap()));
        for (ns, name) in [("default", "web"), ("a", "b"), ("kube-system", "dns")] {
            let first = Ipv4Addr::from(BASE + start(ns, name));
            assert!(in_range(first), "{first}");
            assert_ne!(first, "10.96.0.1".parse::<Ipv4Addr>().unwrap());
        }
        assert_eq!(wanted(&json!({"spec": {"type": "ExternalName"}})), None);
        assert_eq!(wanted(&json!({"spec": {"clusterIP": "None"}})), None);
        assert_eq!(wanted(&json!({"spec": {}})), Some(None));
        assert_eq!(
            wanted(&json!({"spec": {"clusterIP": "10.96.0.10"}})),
            Some(Some("10.96.0.10".into()))
        );
    }
}
