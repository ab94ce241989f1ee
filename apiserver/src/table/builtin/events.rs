//! The Event printer, of `v1` Events and of `events.k8s.io/v1` ones (kube-apiserver serves both
//! from one storage, so both print alike).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::age;
use super::{NAME_DOC, col, int_at, non_empty, str_at, wide};
use crate::table::Column;

pub(super) fn columns() -> Vec<Column> {
    vec![
        col(
            "Last Seen",
            "string",
            "The time at which the most recent occurrence of this event was recorded.",
        ),
        col(
            "Type",
            "string",
            "Type of this event (Normal, Warning), new types could be added in the future",
        ),
        col(
            "Reason",
            "string",
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        ),
        col("Object", "string", "The object that this event is about."),
        wide(
            "Subobject",
            "string",
            "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
        ),
        wide(
            "Source",
            "string",
            "The component reporting this event. Should be a short machine understandable string.",
        ),
        col(
            "Message",
            "string",
            "A human-readable description of the status of this operation.",
        ),
        wide(
            "First Seen",
            "string",
            "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        ),
        wide(
            "Count",
            "string",
            "The number of times this event has occurred.",
        ),
        Column::new("Name", "string", "name", NAME_DOC, 1),
    ]
}

/// Where an Event keeps each field the printer reads, by API version.
pub(super) struct EventFields {
    involved: &'static str,
    message: &'static str,
    first: &'static str,
    last: &'static str,
    count: &'static str,
    source: &'static str,
}

pub(super) const EVENT_FIELDS: EventFields = EventFields {
    involved: "involvedObject",
    message: "message",
    first: "firstTimestamp",
    last: "lastTimestamp",
    count: "count",
    source: "source",
};

pub(super) const EVENTS_V1_FIELDS: EventFields = EventFields {
    involved: "regarding",
    message: "note",
    first: "deprecatedFirstTimestamp",
    last: "deprecatedLastTimestamp",
    count: "deprecatedCount",
    source: "deprecatedSource",
};

pub(super) fn event(o: &Value, f: &EventFields, now: Timestamp) -> Vec<Value> {
    let first = match age::parse(o[f.first].as_str()) {
        Some(_) => age::since(o[f.first].as_str(), now),
        None => age::since(o["eventTime"].as_str(), now),
    };
    let mut last = match age::parse(o[f.last].as_str()) {
        Some(_) => age::since(o[f.last].as_str(), now),
        None => first.clone(),
    };
    let mut count = int_at(&o[f.count]);
    let series = &o["series"];
    if series.is_object() {
        last = age::since(series["lastObservedTime"].as_str(), now);
        count = int_at(&series["count"]);
    } else if count == 0 {
        // Singleton events don't have a count set in the new API.
        count = 1;
    }
    let involved = &o[f.involved];
    let kind = str_at(&involved["kind"]).to_lowercase();
    let target = match str_at(&involved["name"]) {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let source = &o[f.source];
    let component = non_empty(
        str_at(&source["component"]),
        str_at(&o["reportingController"]),
    );
    let instance = non_empty(str_at(&source["host"]), str_at(&o["reportingInstance"]));
    let source = if instance.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(str_at(&o["type"])),
        json!(str_at(&o["reason"])),
        json!(target),
        json!(str_at(&involved["fieldPath"])),
        json!(source),
        json!(str_at(&o[f.message]).trim()),
        json!(first),
        json!(count),
        json!(str_at(&o["metadata"]["name"])),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, meta};
    use serde_json::json;

    #[test]
    fn events_in_both_versions() {
        let core = json!({"metadata": meta("web.1"), "type": "Warning", "reason": "BackOff",
            "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{web}"},
            "source": {"component": "kubelet", "host": "node-1"},
            "message": "Back-off restarting\n", "firstTimestamp": "2025-03-01T11:00:00Z",
            "lastTimestamp": "2025-03-01T11:58:00Z", "count": 7});
        assert_eq!(
            cells(Printer::Event, core),
            vec![
                json!("2m"),
                json!("Warning"),
                json!("BackOff"),
                json!("pod/web-0"),
                json!("spec.containers{web}"),
                json!("kubelet, node-1"),
                json!("Back-off restarting"),
                json!("60m"),
                json!(7),
                json!("web.1")
            ]
        );
        let v1 = json!({"metadata": meta("e"), "type": "Normal", "reason": "Scheduled",
            "regarding": {"kind": "Pod", "name": "p"}, "note": "assigned",
            "eventTime": "2025-03-01T11:59:50.000000Z", "reportingController": "scheduler"});
        let row = cells(Printer::EventsV1Event, v1);
        assert_eq!(
            row[..9],
            [
                json!("10s"),
                json!("Normal"),
                json!("Scheduled"),
                json!("pod/p"),
                json!(""),
                json!("scheduler"),
                json!("assigned"),
                json!("10s"),
                json!(1)
            ]
        );
    }
}
