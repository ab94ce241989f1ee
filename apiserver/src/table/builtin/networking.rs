//! Printers of `networking.k8s.io`: Ingresses and their classes, NetworkPolicies, and the
//! Service CIDRs and IP addresses ClusterIPs come from.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::labels::format_label_selector;
use super::{age_cell, age_col, col, items, load_balancer_addresses, name, name_cell, str_at};
use crate::table::Column;

pub(super) fn ingress_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Class",
            "string",
            "The name of the IngressClass resource that should be used for additional configuration",
        ),
        col(
            "Hosts",
            "string",
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
        col(
            "Address",
            "string",
            "Address is a list containing ingress points for the load-balancer",
        ),
        col("Ports", "string", "Ports of TLS configurations that open"),
        age_col(),
    ]
}

pub(super) fn ingress(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let ports = if items(&spec["tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name_cell(o),
        json!(spec["ingressClassName"].as_str().unwrap_or("<none>")),
        json!(hosts(items(&spec["rules"]))),
        json!(load_balancer_addresses(&o["status"]["loadBalancer"]).join(",")),
        json!(ports),
        age_cell(o, now),
    ]
}

/// The hosts of the first three rules that name one (`*` if none does), then how many rules
/// more there are.
fn hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        let host = str_at(&rule["host"]);
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".to_owned();
    }
    let text = list.join(",");
    if more {
        format!("{text} + {} more...", rules.len() - MAX)
    } else {
        text
    }
}

pub(super) fn ingress_class_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Controller",
            "string",
            "Controller that is responsible for handling this class",
        ),
        col(
            "Parameters",
            "string",
            "A reference to a resource with additional parameters",
        ),
        age_col(),
    ]
}

pub(super) fn ingress_class(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let parameters = &spec["parameters"];
    let parameters = if parameters.is_object() {
        let kind = str_at(&parameters["kind"]);
        let kind = match parameters["apiGroup"].as_str() {
            Some(group) => format!("{kind}.{group}"),
            None => kind.to_owned(),
        };
        format!("{kind}/{}", str_at(&parameters["name"]))
    } else {
        "<none>".to_owned()
    };
    vec![
        name_cell(o),
        json!(str_at(&spec["controller"])),
        json!(parameters),
        age_cell(o, now),
    ]
}

pub(super) fn ip_address_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "ParentRef",
            "string",
            "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.",
        ),
    ]
}

/// The object the address is allocated to, as `services/default/kubernetes`. Upstream's row
/// carries an Age cell its columns have no header for; kubectl shows NAME and PARENTREF.
pub(super) fn ip_address(o: &Value, now: Timestamp) -> Vec<Value> {
    let parent = &o["spec"]["parentRef"];
    let parent = if parent.is_object() {
        let resource = str_at(&parent["resource"]);
        let mut text = match str_at(&parent["group"]) {
            "" => resource.to_lowercase(),
            group => format!("{resource}.{group}").to_lowercase(),
        };
        let namespace = str_at(&parent["namespace"]);
        if !namespace.is_empty() {
            text = format!("{text}/{namespace}");
        }
        format!("{text}/{}", str_at(&parent["name"]))
    } else {
        "<none>".to_owned()
    };
    vec![name_cell(o), json!(parent), age_cell(o, now)]
}

pub(super) fn network_policy_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Pod-Selector",
            "string",
            "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods.  In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace.",
        ),
        age_col(),
    ]
}

pub(super) fn network_policy(o: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name_cell(o),
        json!(format_label_selector(&o["spec"]["podSelector"])),
        age_cell(o, now),
    ]
}

pub(super) fn service_cidr_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "CIDRs",
            "string",
            "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.",
        ),
        age_col(),
    ]
}

pub(super) fn service_cidr(o: &Value, now: Timestamp) -> Vec<Value> {
    let cidrs: Vec<&str> = items(&o["spec"]["cidrs"]).iter().map(str_at).collect();
    vec![name_cell(o), json!(cidrs.join(",")), age_cell(o, now)]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta, now};
    use serde_json::json;

    #[test]
    fn ingresses() {
        let ing = json!({"metadata": meta("shop"), "spec": {"ingressClassName": "nginx",
                "tls": [{"hosts": ["shop.example.com"], "secretName": "shop-tls"}],
                "rules": [{"host": "shop.example.com"}, {"host": "api.example.com"},
                    {"http": {"paths": []}}, {"host": "admin.example.com"},
                    {"host": "cdn.example.com"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.9"},
                {"hostname": "lb.example.net"}, {"ip": "203.0.113.9"}]}}});
        assert_eq!(
            headers(Printer::Ingress),
            ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
        );
        assert_eq!(
            cells(Printer::Ingress, ing),
            [
                json!("shop"),
                json!("nginx"),
                json!("shop.example.com,api.example.com,admin.example.com + 2 more..."),
                json!("203.0.113.9,lb.example.net"),
                json!("80, 443"),
                json!("5m")
            ]
        );
        let catch_all = json!({"metadata": meta("all"), "spec": {"defaultBackend": {}}});
        assert_eq!(
            cells(Printer::Ingress, catch_all)[1..5],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );
    }

    #[test]
    fn ingress_classes() {
        let class = json!({"metadata": meta("external-lb"), "spec": {
            "controller": "example.com/ingress-controller",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters",
                "name": "external-lb", "scope": "Cluster"}}});
        assert_eq!(
            headers(Printer::IngressClass),
            ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]
        );
        assert_eq!(
            cells(Printer::IngressClass, class),
            [
                json!("external-lb"),
                json!("example.com/ingress-controller"),
                json!("IngressParameters.k8s.example.com/external-lb"),
                json!("5m")
            ]
        );
        let core = json!({"metadata": meta("c"), "spec": {"controller": "c",
            "parameters": {"kind": "ConfigMap", "name": "params"}}});
        assert_eq!(
            cells(Printer::IngressClass, core)[2],
            json!("ConfigMap/params")
        );
        let plain = json!({"metadata": meta("p"), "spec": {"controller": "c"}});
        assert_eq!(cells(Printer::IngressClass, plain)[2], json!("<none>"));
    }

    #[test]
    fn network_policies() {
        let deny = json!({"metadata": meta("default-deny"), "spec": {"podSelector": {},
            "policyTypes": ["Ingress"]}});
        assert_eq!(
            headers(Printer::NetworkPolicy),
            ["NAME", "POD-SELECTOR", "AGE"]
        );
        assert_eq!(
            cells(Printer::NetworkPolicy, deny),
            [json!("default-deny"), json!("<none>"), json!("5m")]
        );
        let db = json!({"metadata": meta("db"), "spec": {"podSelector": {
            "matchLabels": {"app": "db"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["backend"]}]}}});
        assert_eq!(
            cells(Printer::NetworkPolicy, db)[1],
            json!("app=db,tier in (backend)")
        );
    }

    #[test]
    fn service_cidrs_and_ip_addresses() {
        let cidr = json!({"metadata": {"name": "kubernetes",
                "creationTimestamp": "2025-02-01T12:00:00Z"},
            "spec": {"cidrs": ["10.96.0.0/16", "fd00:10:96::/112"]}});
        assert_eq!(headers(Printer::ServiceCidr), ["NAME", "CIDRS", "AGE"]);
        assert_eq!(
            cells(Printer::ServiceCidr, cidr),
            [
                json!("kubernetes"),
                json!("10.96.0.0/16,fd00:10:96::/112"),
                json!("28d")
            ]
        );

        assert_eq!(headers(Printer::IpAddress), ["NAME", "PARENTREF"]);
        let ip = json!({"metadata": meta("10.96.0.1"), "spec": {"parentRef": {"group": "",
            "resource": "services", "namespace": "default", "name": "kubernetes"}}});
        let row = Printer::IpAddress.row(&ip, now());
        assert_eq!(
            row.cells,
            [
                json!("10.96.0.1"),
                json!("services/default/kubernetes"),
                json!("5m")
            ]
        );
        let gateway = json!({"metadata": meta("10.0.0.9"), "spec": {"parentRef": {
            "group": "gateway.networking.k8s.io", "resource": "Gateways", "name": "gw"}}});
        assert_eq!(
            Printer::IpAddress.row(&gateway, now()).cells[1],
            json!("gateways.gateway.networking.k8s.io/gw")
        );
        let orphan = json!({"metadata": meta("10.0.0.10"), "spec": {}});
        assert_eq!(
            Printer::IpAddress.row(&orphan, now()).cells[1],
            json!("<none>")
        );
    }
}
