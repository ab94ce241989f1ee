//! The repair of cluster IP allocations, as kube-apiserver's `repairip` controller keeps them:
//! every Service's cluster IP has its `IPAddress` (an address without one, from data written
//! before allocation took IPAddresses or restored from a backup, is taken for it, so that no
//! other Service can be given it), and every `IPAddress` the allocator made belongs to a Service
//! that holds it (one left by a Service that was never stored or is gone is deleted once it is
//! older than a minute, the time a Service's creation may take; one naming a Service that holds
//! another address is deleted at once). What cannot be repaired (two Services holding one
//! address, an address outside the range) is reported as a Warning Event on the Service.
//!
//! It looks at every Service and address at start, when an `IPAddress` is deleted or changed or
//! made by hand, when a leaked address's grace ends, and every three minutes. Decisions are pure ([`plan`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::ResourceType;
use super::actor::Actor;
use super::service_ip::{self, MANAGED_BY_LABEL, MANAGER};
use super::store::{DeleteOptions, ListOptions, Store, WriteOptions};
use crate::error::{Error, Result};
use crate::storage::EventKind;
use crate::watch::{CachedEvent, Feed, RETRY, next_pass_within};

/// How old an allocator's address without its Service must be before it is taken back (upstream's
/// grace: kube-apiserver's request timeout).
pub const LEAK_GRACE: Duration = Duration::from_secs(60);
/// How often everything is looked at with nothing to wake the controller.
const INTERVAL: Duration = Duration::from_secs(180);
/// How long the controller waits after a wake-up, so that a burst of deletions costs one pass.
const SETTLE: Duration = Duration::from_millis(500);
const FIELD_MANAGER: &str = "atoll-ipallocator-repair";
const COMPONENT: &str = "ipallocator-repair-controller";

/// The controller's events: an `IPAddress` deleted, changed, or made by someone other than the
/// allocator and this controller (which keep Services and addresses in step).
pub fn wants(event: &CachedEvent) -> bool {
    if !event
        .key
        .starts_with("/registry/networking.k8s.io/ipaddresses/")
    {
        return false;
    }
    event.kind != EventKind::Create
        || !event.object()["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["manager"] == service_ip::FIELD_MANAGER || m["manager"] == FIELD_MANAGER)
}

/// A Service as the plan sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// A Warning to record on a Service.
#[derive(Debug, PartialEq)]
pub struct Report {
    pub service: ServiceRef,
    pub reason: &'static str,
    pub message: String,
}

/// What one pass does.
#[derive(Debug, Default, PartialEq)]
pub struct Repair {
    /// Addresses to take for the Service holding them.
    pub create: Vec<(String, ServiceRef)>,
    /// Addresses to delete: (address, its object's uid, why).
    pub delete: Vec<(String, String, String)>,
    pub reports: Vec<Report>,
    /// When a leaked address still in its grace is to be looked at again.
    pub recheck: Option<Duration>,
}

fn service_ref(service: &Value) -> ServiceRef {
    let meta = &service["metadata"];
    let text = |field: &str| meta[field].as_str().unwrap_or_default().to_owned();
    ServiceRef {
        namespace: text("namespace"),
        name: text("name"),
        uid: text("uid"),
    }
}

/// The addresses a Service holds, as written in `spec.clusterIPs` (or `clusterIP`).
fn held(service: &Value) -> Vec<String> {
    if service_ip::wanted(service).is_none() {
        return Vec::new();
    }
    let spec = &service["spec"];
    let mut ips: Vec<String> = spec["clusterIPs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|ip| ip.as_str().map(str::to_owned))
        .collect();
    if ips.is_empty() {
        ips.extend(spec["clusterIP"].as_str().map(str::to_owned));
    }
    ips.retain(|ip| !ip.is_empty() && ip != "None");
    ips
}

/// The repair of the Services and `IPAddress` objects listed together, at `now`.
pub fn plan(services: &[Value], addresses: &[Value], now: jiff::Timestamp) -> Repair {
    let mut repair = Repair::default();
    let by_name: BTreeMap<&str, &Value> = addresses
        .iter()
        .filter_map(|a| Some((a["metadata"]["name"].as_str()?, a)))
        .collect();
    // Which Service holds each address, by namespace/name.
    let mut holders: BTreeMap<(&str, &str), BTreeSet<String>> = BTreeMap::new();
    for service in services {
        let svc = service_ref(service);
        for ip in held(service) {
            holders
                .entry((
                    service["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default(),
                    service["metadata"]["name"].as_str().unwrap_or_default(),
                ))
                .or_default()
                .insert(ip.clone());
            plan_service_ip(&mut repair, &svc, &ip, by_name.get(ip.as_str()).copied());
        }
    }
    for address in addresses {
        plan_address(&mut repair, address, &holders, now);
    }
    repair
}

/// One address a Service holds: its `IPAddress` must exist and name it.
fn plan_service_ip(repair: &mut Repair, svc: &ServiceRef, ip: &str, address: Option<&Value>) {
    let report = |reason, message| Report {
        service: svc.clone(),
        reason,
        message,
    };
    let in_range = ip.parse::<Ipv4Addr>().is_ok_and(service_ip::in_range);
    if !in_range {
        repair.reports.push(report(
            "ClusterIPOutOfRange",
            format!(
                "Cluster IP [IPv4]: {ip} is not within the configured Service CIDR {}; please recreate service",
                service_ip::SERVICE_CIDR
            ),
        ));
        return;
    }
    let Some(address) = address else {
        repair.create.push((ip.to_owned(), svc.clone()));
        return;
    };
    let parent = &address["spec"]["parentRef"];
    let names_it = parent["group"].as_str().unwrap_or_default().is_empty()
        && parent["resource"] == "services"
        && parent["namespace"] == svc.namespace.as_str()
        && parent["name"] == svc.name.as_str();
    if !names_it {
        repair.reports.push(report(
            "ClusterIPAlreadyAllocated",
            format!(
                "Cluster IP [IPv4]:{ip} was assigned to multiple services. Please recreate service"
            ),
        ));
    }
}

/// One `IPAddress`: if the allocator made it, a Service must hold it.
fn plan_address(
    repair: &mut Repair,
    address: &Value,
    holders: &BTreeMap<(&str, &str), BTreeSet<String>>,
    now: jiff::Timestamp,
) {
    let meta = &address["metadata"];
    if meta["labels"][MANAGED_BY_LABEL] != MANAGER {
        return;
    }
    let (Some(ip), Some(uid)) = (meta["name"].as_str(), meta["uid"].as_str()) else {
        return;
    };
    let mut delete = |why: String| {
        repair
            .delete
            .push((ip.to_owned(), uid.to_owned(), why.clone()))
    };
    let parent = &address["spec"]["parentRef"];
    let (ns, name) = (
        parent["namespace"].as_str().unwrap_or_default(),
        parent["name"].as_str().unwrap_or_default(),
    );
    if !parent["group"].as_str().unwrap_or_default().is_empty() || parent["resource"] != "services"
    {
        delete(format!(
            "IPAddress {ip} appears to have been modified, not referencing a Service: cleaning up"
        ));
        return;
    }
    match holders.get(&(ns, name)) {
        Some(ips) if ips.contains(ip) => {}
        Some(_) => delete(format!(
            "the IPAddress {ip} for Service {ns}/{name} has a wrong reference: cleaning up"
        )),
        None => {
            let created = meta["creationTimestamp"]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok());
            // An address whose age cannot be read is as old as can be.
            let age = created
                .map(|c| now.duration_since(c))
                .and_then(|age| Duration::try_from(age).ok())
                .unwrap_or(LEAK_GRACE);
            if age >= LEAK_GRACE {
                delete(format!(
                    "IPAddress {ip} for Service {ns}/{name} appears to have leaked: cleaning up"
                ));
            } else {
                let left = LEAK_GRACE - age;
                repair.recheck = Some(repair.recheck.map_or(left, |r| r.min(left)));
            }
        }
    }
}

/// Runs until `shutdown` turns true, following `feed` (made with [`wants`]).
pub async fn run(store: Arc<Store>, feed: Arc<Feed>, mut shutdown: watch::Receiver<bool>) {
    loop {
        feed.take();
        let wait = match pass(&store).await {
            Ok(recheck) => recheck.map_or(INTERVAL, |r| r.min(INTERVAL)),
            Err(error) => {
                tracing::warn!(%error, "cannot repair the cluster IP allocations; retrying");
                RETRY
            }
        };
        if !next_pass_within(&feed, Some(wait), &mut shutdown).await {
            return;
        }
        tokio::time::sleep(SETTLE).await;
    }
}

/// One pass over every Service and address; when to look again. Addresses are read before
/// Services: a Service is stored after its address and its address released after it, so what a
/// pass can see out of step is a Service whose address it did not read (taking it again finds it
/// taken), an address whose Service is gone (which should go) or not stored yet (which the grace
/// keeps).
pub async fn pass(store: &Store) -> Result<Option<Duration>> {
    let services_rt = store.v1_resource("", "services")?;
    let addresses_rt = store.v1_resource("networking.k8s.io", "ipaddresses")?;
    let addresses = store
        .list(&addresses_rt, None, &ListOptions::default())
        .await?;
    let services = store
        .list(&services_rt, None, &ListOptions::default())
        .await?;
    let repair = plan(&services.items, &addresses.items, jiff::Timestamp::now());
    apply(store, &addresses_rt, repair).await
}

/// Carries out a repair; the first failure is returned after the rest was tried.
async fn apply(
    store: &Store,
    addresses: &ResourceType,
    repair: Repair,
) -> Result<Option<Duration>> {
    let mut failed = None;
    let options = WriteOptions {
        field_manager: FIELD_MANAGER.into(),
        actor: Some(Actor::ApiServer),
        ..Default::default()
    };
    for (ip, svc) in repair.create {
        tracing::info!(%ip, service = %format!("{}/{}", svc.namespace, svc.name),
            "cluster IP has no IPAddress; taking it for its Service");
        let object = service_ip::address_object(&ip, &svc.namespace, &svc.name);
        match store.create(addresses, None, object, &options).await {
            // Taken meanwhile (by this Service's allocation or another's): the next pass says.
            Ok(_) | Err(Error::AlreadyExists(_)) => {}
            Err(error) => failed = failed.or(Some(error)),
        }
    }
    for (ip, uid, why) in repair.delete {
        tracing::warn!(%ip, "{why}");
        let options = DeleteOptions {
            precondition_uid: Some(uid),
            actor: Some(Actor::ApiServer),
            ..Default::default()
        };
        match store.delete(addresses, None, &ip, &options).await {
            Ok(_) | Err(Error::NotFound(_) | Error::Conflict { .. }) => {}
            Err(error) => failed = failed.or(Some(error)),
        }
    }
    for report in repair.reports {
        tracing::warn!(service = %format!("{}/{}", report.service.namespace, report.service.name),
            reason = report.reason, "{}", report.message);
        if let Err(error) = record(store, &report).await {
            tracing::debug!(%error, "cannot record the Event");
        }
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(repair.recheck),
    }
}

/// Records a Warning Event on the Service, once per Service, reason and message (a later pass
/// finding the same finds the Event there).
async fn record(store: &Store, report: &Report) -> Result<()> {
    use sha2::{Digest, Sha256};
    let events = store.v1_resource("", "events")?;
    let svc = &report.service;
    let digest = Sha256::digest(format!(
        "{}\n{}\n{}",
        svc.uid, report.reason, report.message
    ));
    let suffix: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let now = super::store::now();
    let event = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{}.{suffix}", svc.name), "namespace": svc.namespace},
        "involvedObject": {"apiVersion": "v1", "kind": "Service", "namespace": svc.namespace,
            "name": svc.name, "uid": svc.uid},
        "type": "Warning", "reason": report.reason, "message": report.message,
        "action": "ClusterIPAllocation",
        "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
        "firstTimestamp": now, "lastTimestamp": now, "count": 1});
    let options = WriteOptions {
        field_manager: FIELD_MANAGER.into(),
        actor: Some(Actor::ApiServer),
        ..Default::default()
    };
    match store
        .create(&events, Some(&svc.namespace), event, &options)
        .await
    {
        Ok(_) | Err(Error::AlreadyExists(_)) => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(ns: &str, name: &str, ip: &str) -> Value {
        json!({"metadata": {"namespace": ns, "name": name, "uid": format!("uid-{name}")},
            "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip]}})
    }

    fn address(ip: &str, ns: &str, name: &str, created: &str) -> Value {
        let mut object = service_ip::address_object(ip, ns, name);
        object["metadata"]["uid"] = json!(format!("a-{ip}"));
        object["metadata"]["creationTimestamp"] = json!(created);
        object
    }

    fn at(time: &str) -> jiff::Timestamp {
        time.parse().unwrap()
    }

    const T0: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn a_service_without_its_address_gets_it() {
        let services = [
            service("shop", "web", "10.96.4.5"),
            service("shop", "db", "None"),
        ];
        let repair = plan(&services, &[], at(T0));
        assert_eq!(repair.create.len(), 1);
        assert_eq!(repair.create[0].0, "10.96.4.5");
        assert_eq!(repair.create[0].1.name, "web");
        assert!(repair.delete.is_empty() && repair.reports.is_empty());
    }

    #[test]
    fn consistent_allocations_need_nothing() {
        let services = [service("shop", "web", "10.96.4.5")];
        let addresses = [address("10.96.4.5", "shop", "web", T0)];
        assert_eq!(plan(&services, &addresses, at(T0)), Repair::default());
    }

    #[test]
    fn a_leaked_address_goes_after_its_grace() {
        let addresses = [address("10.96.4.5", "shop", "gone", T0)];
        let young = plan(&[], &addresses, at("2026-01-01T00:00:20Z"));
        assert!(young.delete.is_empty());
        assert_eq!(young.recheck, Some(Duration::from_secs(40)));
        let old = plan(&[], &addresses, at("2026-01-01T00:01:00Z"));
        assert_eq!(old.delete.len(), 1);
        assert_eq!(old.delete[0].1, "a-10.96.4.5");
        assert!(old.delete[0].2.contains("shop/gone appears to have leaked"));
        // Unreadable age: as old as can be.
        let mut unknown = addresses[0].clone();
        unknown["metadata"]["creationTimestamp"] = json!("yesterday");
        assert_eq!(plan(&[], &[unknown], at(T0)).delete.len(), 1);
    }

    #[test]
    fn an_address_naming_a_service_that_holds_another_goes_at_once() {
        let services = [service("shop", "web", "10.96.4.6")];
        let addresses = [
            address("10.96.4.5", "shop", "web", T0),
            address("10.96.4.6", "shop", "web", T0),
        ];
        let repair = plan(&services, &addresses, at(T0));
        assert_eq!(repair.delete.len(), 1);
        assert_eq!(repair.delete[0].0, "10.96.4.5");
        assert!(repair.delete[0].2.contains("wrong reference"));
    }

    #[test]
    fn addresses_of_others_are_left_alone_and_modified_ones_go() {
        let mut foreign = address("10.96.4.7", "shop", "gone", T0);
        foreign["metadata"]["labels"][MANAGED_BY_LABEL] = json!("someone-else");
        let mut modified = address("10.96.4.8", "shop", "web", T0);
        modified["spec"]["parentRef"]["resource"] = json!("gateways");
        let repair = plan(&[], &[foreign, modified], at("2026-01-02T00:00:00Z"));
        assert_eq!(repair.delete.len(), 1);
        assert_eq!(repair.delete[0].0, "10.96.4.8");
        assert!(repair.delete[0].2.contains("not referencing a Service"));
    }

    #[test]
    fn what_cannot_be_repaired_is_reported_on_the_service() {
        let services = [
            service("shop", "web", "10.96.4.5"),
            service("shop", "copy", "10.96.4.5"),
            service("shop", "far", "192.168.1.1"),
        ];
        let addresses = [address("10.96.4.5", "shop", "web", T0)];
        let repair = plan(&services, &addresses, at(T0));
        assert!(repair.create.is_empty() && repair.delete.is_empty());
        let reasons: Vec<(&str, &str)> = repair
            .reports
            .iter()
            .map(|r| (r.service.name.as_str(), r.reason))
            .collect();
        assert_eq!(
            reasons,
            [
                ("copy", "ClusterIPAlreadyAllocated"),
                ("far", "ClusterIPOutOfRange")
            ]
        );
    }
}
