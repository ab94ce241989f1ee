//! The printer of `discovery.k8s.io` EndpointSlices.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, col, int_at, items, list_with_more, name, name_cell, str_at};
use crate::table::Column;

/// At most this many ports, and addresses, show.
const MAX: usize = 3;

pub(super) fn endpoint_slice_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "AddressType",
            "string",
            "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name.",
        ),
        col(
            "Ports",
            "string",
            "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. When ports is empty, it indicates that there are no defined ports. When a port is defined with a nil port value, it indicates \"all ports\". Each slice may include a maximum of 100 ports.",
        ),
        col(
            "Endpoints",
            "string",
            "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.",
        ),
        age_col(),
    ]
}

pub(super) fn endpoint_slice(o: &Value, now: Timestamp) -> Vec<Value> {
    let ports = items(&o["ports"]);
    let port_list: Vec<String> = ports
        .iter()
        .take(MAX)
        .map(|port| match (&port["port"], &port["name"]) {
            (Value::Null, Value::Null) => "*".to_owned(),
            (Value::Null, name) => str_at(name).to_owned(),
            (number, _) => int_at(number).to_string(),
        })
        .collect();
    let addresses: Vec<&Value> = items(&o["endpoints"])
        .iter()
        .flat_map(|endpoint| items(&endpoint["addresses"]))
        .collect();
    let address_list: Vec<String> = addresses
        .iter()
        .take(MAX)
        .map(|a| str_at(a).to_owned())
        .collect();
    vec![
        name_cell(o),
        json!(str_at(&o["addressType"])),
        json!(list_with_more(&port_list, ports.len(), MAX)),
        json!(list_with_more(&address_list, addresses.len(), MAX)),
        age_cell(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

    #[test]
    fn endpoint_slices() {
        let slice = json!({"metadata": meta("web-abc12"), "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "admin"},
                {"port": 9090}, {"port": 9091}],
            "endpoints": [{"addresses": ["10.1.0.4"]}, {"addresses": ["10.1.0.5", "10.1.0.6"]},
                {"addresses": ["10.1.0.7"]}]});
        assert_eq!(
            headers(Printer::EndpointSlice),
            ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
        );
        assert_eq!(
            cells(Printer::EndpointSlice, slice),
            [
                json!("web-abc12"),
                json!("IPv4"),
                json!("80,admin,9090 + 1 more..."),
                json!("10.1.0.4,10.1.0.5,10.1.0.6 + 1 more..."),
                json!("5m")
            ]
        );
        let empty = json!({"metadata": meta("e"), "addressType": "IPv6",
            "ports": [{}], "endpoints": []});
        assert_eq!(
            cells(Printer::EndpointSlice, empty)[2..4],
            [json!("*"), json!("<unset>")]
        );
    }
}
