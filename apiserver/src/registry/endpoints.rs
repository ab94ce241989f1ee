//! Endpoints of Services with a selector, as kube-controller-manager's endpointslice and
//! endpoints controllers keep them: an EndpointSlice (`<service>-<suffix>`, labels
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`) and a v1 Endpoints
//! of the Service's name, listing the selected Pods that report an address, ready or not as
//! their `Ready` condition says. Both are owned by the Service, so the garbage collector removes
//! them with it. In a cluster without nodes no Pod reports an address, so they list none until
//! something (a test, a virtual kubelet) writes Pod status.
//!
//! The controller follows a feed of the watch cache: a Service or Pod change wakes it for the
//! Services of that namespace, and nothing else wakes it. Decisions are pure ([`desired`]);
//! writes happen only when something differs.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use atoll_runtime::backoff::Retries;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::actor::Actor;
use super::selector::LabelSelector;
use super::store::{ListOptions, Store, WriteOptions};
use crate::error::{Error, Result};
use crate::watch::{CachedEvent, Feed, Taken, next_pass};

const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const CONTROLLER: &str = "endpointslice-controller.k8s.io";
const SERVICE_NAME: &str = "kubernetes.io/service-name";
const FIELD_MANAGER: &str = "atoll-endpoints-controller";

/// The events the controller follows: a Service's or Pod's.
pub fn wants(event: &CachedEvent) -> bool {
    namespace_of(event).is_some()
}

/// The namespace of a Service's or Pod's event.
fn namespace_of(event: &CachedEvent) -> Option<&str> {
    let rest = event.key.strip_prefix("/registry/core/")?;
    let (plural, rest) = rest.split_once('/')?;
    let (ns, _) = rest.split_once('/')?;
    matches!(plural, "services" | "pods").then_some(ns)
}

/// Runs until `shutdown` turns true, following `feed` (made with [`wants`]).
pub async fn run(store: Arc<Store>, feed: Arc<Feed>, mut shutdown: watch::Receiver<bool>) {
    // At start, and when behind: every namespace with a Service.
    let mut everything = true;
    // Namespaces whose last pass failed (a write refused by an admission policy, say): looked
    // at again after each one's backoff, or at once when an event concerns it.
    let mut retries = Retries::default();
    loop {
        let mut namespaces: BTreeSet<String> = match (everything, feed.take()) {
            (false, Taken::Events(events)) => events
                .iter()
                .filter_map(|e| namespace_of(e).map(str::to_owned))
                .collect(),
            _ => match all_namespaces(&store).await {
                Ok(all) => {
                    everything = false;
                    all
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot list Services; retrying");
                    everything = true;
                    BTreeSet::new()
                }
            },
        };
        namespaces.extend(retries.due(Instant::now()));
        for ns in namespaces {
            match reconcile_namespace(&store, &ns).await {
                Ok(()) => retries.succeeded(&ns),
                Err(error) => {
                    let (failures, wait) = retries.failed(ns.clone(), Instant::now());
                    tracing::warn!(namespace = %ns, %error, failures, retry_in = ?wait, "cannot update the endpoints of its Services; retrying");
                }
            }
        }
        if !next_pass(&feed, everything, &retries, &mut shutdown).await {
            return;
        }
    }
}

async fn all_namespaces(store: &Store) -> Result<BTreeSet<String>> {
    let services = store.v1_resource("", "services")?;
    let list = store.list(&services, None, &ListOptions::default()).await?;
    Ok(list
        .items
        .iter()
        .filter_map(|s| s["metadata"]["namespace"].as_str().map(str::to_owned))
        .collect())
}

/// What the endpoints of `service` should hold, given the Pods of its namespace: the
/// EndpointSlice's `endpoints` and `ports`, and the v1 Endpoints' `subsets`. `None` for a
/// Service without a selector (its endpoints are someone else's).
pub fn desired(service: &Value, pods: &[Value]) -> Option<(Value, Value, Value)> {
    let selector = service["spec"]["selector"].as_object()?;
    if selector.is_empty() || service["spec"]["type"] == "ExternalName" {
        return None;
    }
    let selected: Vec<&Value> = pods
        .iter()
        .filter(|p| {
            let labels = &p["metadata"]["labels"];
            selector.iter().all(|(k, v)| labels.get(k) == Some(v))
                && p["metadata"].get("deletionTimestamp").is_none()
                && p["status"]["podIP"]
                    .as_str()
                    .is_some_and(|ip| !ip.is_empty())
        })
        .collect();
    let ready = |p: &Value| {
        p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    };
    let mut endpoints = Vec::new();
    let mut ready_addresses = Vec::new();
    let mut unready_addresses = Vec::new();
    for pod in &selected {
        let ip = pod["status"]["podIP"].clone();
        let target = json!({"kind": "Pod", "namespace": pod["metadata"]["namespace"],
            "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]});
        let mut endpoint = json!({"addresses": [ip],
            "conditions": {"ready": ready(pod), "serving": ready(pod), "terminating": false},
            "targetRef": target});
        if let Some(node) = pod["spec"]["nodeName"].as_str() {
            endpoint["nodeName"] = json!(node);
        }
        endpoints.push(endpoint);
        let address = json!({"ip": ip, "targetRef": target});
        if ready(pod) {
            ready_addresses.push(address);
        } else {
            unready_addresses.push(address);
        }
    }
    let ports: Vec<Value> = service["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|port| {
            let number = target_port(port, &selected);
            let mut out =
                json!({"port": number, "protocol": port["protocol"].as_str().unwrap_or("TCP")});
            if let Some(name) = port["name"].as_str().filter(|n| !n.is_empty()) {
                out["name"] = json!(name);
            }
            out
        })
        .collect();
    let mut subsets = Vec::new();
    if !selected.is_empty() {
        let mut subset = json!({"ports": ports});
        if !ready_addresses.is_empty() {
            subset["addresses"] = Value::Array(ready_addresses);
        }
        if !unready_addresses.is_empty() {
            subset["notReadyAddresses"] = Value::Array(unready_addresses);
        }
        subsets.push(subset);
    }
    Some((
        Value::Array(endpoints),
        Value::Array(ports),
        Value::Array(subsets),
    ))
}

/// A Service port's target as a number: itself, or the selected Pods' container port of that
/// name (upstream resolves it per Pod; here the first Pod that has it).
fn target_port(port: &Value, pods: &[&Value]) -> Value {
    match &port["targetPort"] {
        Value::String(name) => pods
            .iter()
            .flat_map(|p| p["spec"]["containers"].as_array().into_iter().flatten())
            .flat_map(|c| c["ports"].as_array().into_iter().flatten())
            .find(|p| p["name"] == name.as_str())
            .map_or(Value::Null, |p| p["containerPort"].clone()),
        Value::Null => port["port"].clone(),
        number => number.clone(),
    }
}

async fn reconcile_namespace(store: &Store, ns: &str) -> Result<()> {
    let services_rt = store.v1_resource("", "services")?;
    let pods_rt = store.v1_resource("", "pods")?;
    let services = store
        .list(&services_rt, Some(ns), &ListOptions::default())
        .await?
        .items;
    if services.is_empty() {
        return Ok(());
    }
    let pods = store
        .list(&pods_rt, Some(ns), &ListOptions::default())
        .await?
        .items;
    for service in &services {
        if let Some((endpoints, ports, subsets)) = desired(service, &pods) {
            write_slice(store, ns, service, endpoints, ports).await?;
            write_endpoints(store, ns, service, subsets).await?;
        }
    }
    Ok(())
}

fn owner(service: &Value) -> Value {
    json!([{"apiVersion": "v1", "kind": "Service", "name": service["metadata"]["name"],
        "uid": service["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}])
}

fn options(actor: Actor) -> WriteOptions {
    WriteOptions {
        field_manager: FIELD_MANAGER.into(),
        actor: Some(actor),
        ..Default::default()
    }
}

async fn write_slice(
    store: &Store,
    ns: &str,
    service: &Value,
    endpoints: Value,
    ports: Value,
) -> Result<()> {
    let rt = store.v1_resource("discovery.k8s.io", "endpointslices")?;
    let name = service["metadata"]["name"].as_str().unwrap_or_default();
    let list = ListOptions {
        labels: LabelSelector::parse(&format!("{SERVICE_NAME}={name},{MANAGED_BY}={CONTROLLER}"))?,
        ..Default::default()
    };
    let existing = store.list(&rt, Some(ns), &list).await?.items;
    match existing.into_iter().next() {
        Some(mut slice) => {
            if slice["endpoints"] == endpoints && slice["ports"] == ports {
                return Ok(());
            }
            slice["endpoints"] = endpoints;
            slice["ports"] = ports;
            let slice_name = slice["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            match store
                .update(
                    &rt,
                    Some(ns),
                    &slice_name,
                    None,
                    slice,
                    &options(Actor::EndpointSliceController),
                )
                .await
            {
                Ok(_) | Err(Error::Conflict { .. } | Error::NotFound(_)) => Ok(()),
                Err(error) => Err(error),
            }
        }
        None => {
            let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"generateName": format!("{name}-"), "namespace": ns,
                    "labels": {SERVICE_NAME: name, MANAGED_BY: CONTROLLER},
                    "ownerReferences": owner(service)},
                "addressType": "IPv4", "endpoints": endpoints, "ports": ports});
            match store
                .create(
                    &rt,
                    Some(ns),
                    slice,
                    &options(Actor::EndpointSliceController),
                )
                .await
            {
                Ok(_) | Err(Error::Forbidden(_)) => Ok(()),
                Err(error) => Err(error),
            }
        }
    }
}

async fn write_endpoints(store: &Store, ns: &str, service: &Value, subsets: Value) -> Result<()> {
    let rt = store.v1_resource("", "endpoints")?;
    let name = service["metadata"]["name"].as_str().unwrap_or_default();
    match store.get(&rt, Some(ns), name).await {
        Ok(mut current) => {
            let held = current.get("subsets").cloned().unwrap_or(json!([]));
            if held == subsets {
                return Ok(());
            }
            current["subsets"] = subsets;
            match store
                .update(
                    &rt,
                    Some(ns),
                    name,
                    None,
                    current,
                    &options(Actor::EndpointController),
                )
                .await
            {
                Ok(_) | Err(Error::Conflict { .. } | Error::NotFound(_)) => Ok(()),
                Err(error) => Err(error),
            }
        }
        Err(Error::NotFound(_)) => {
            let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": name, "namespace": ns, "labels": service["metadata"]["labels"],
                    "ownerReferences": owner(service)},
                "subsets": subsets});
            match store
                .create(
                    &rt,
                    Some(ns),
                    endpoints,
                    &options(Actor::EndpointController),
                )
                .await
            {
                Ok(_) | Err(Error::AlreadyExists(_) | Error::Forbidden(_)) => Ok(()),
                Err(error) => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, app: &str, ip: Option<&str>, ready: bool) -> Value {
        let mut pod = json!({"metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
            "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
        if let Some(ip) = ip {
            pod["status"]["podIP"] = json!(ip);
        }
        pod
    }

    #[test]
    fn the_selected_pods_with_an_address_are_the_endpoints() {
        let service = json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]}});
        let pods = [
            pod("a", "web", Some("10.0.0.1"), true),
            pod("b", "web", Some("10.0.0.2"), false),
            pod("c", "web", None, true),
            pod("d", "api", Some("10.0.0.4"), true),
        ];
        let (endpoints, ports, subsets) = desired(&service, &pods).unwrap();
        assert_eq!(endpoints.as_array().unwrap().len(), 2);
        assert_eq!(endpoints[0]["addresses"], json!(["10.0.0.1"]));
        assert_eq!(endpoints[0]["conditions"]["ready"], true);
        assert_eq!(endpoints[1]["conditions"]["ready"], false);
        assert_eq!(
            ports,
            json!([{"name": "http", "port": 8080, "protocol": "TCP"}])
        );
        assert_eq!(subsets[0]["addresses"][0]["ip"], "10.0.0.1");
        assert_eq!(subsets[0]["notReadyAddresses"][0]["ip"], "10.0.0.2");
        // No Pod with an address: an empty slice, and Endpoints without subsets.
        let (endpoints, _, subsets) = desired(&service, &pods[2..3]).unwrap();
        assert_eq!((endpoints, subsets), (json!([]), json!([])));
        // Without a selector, the endpoints are not the controller's.
        assert!(desired(&json!({"spec": {"ports": []}}), &pods).is_none());
    }
}
