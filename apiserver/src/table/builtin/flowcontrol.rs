//! Printers of `flowcontrol.apiserver.k8s.io`: FlowSchemas and PriorityLevelConfigurations.
//!
//! Upstream lists FlowSchemas in matching order (precedence, then name); rows here come in the
//! order of the list they print.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{age_cell, age_col, col, condition, int_at, int_or, name, name_cell, str_at};
use crate::table::Column;

pub(super) fn flow_schema_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "PriorityLevel",
            "string",
            "`name` is the name of the priority level configuration being referenced Required.",
        ),
        col(
            "MatchingPrecedence",
            "string",
            "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.",
        ),
        col(
            "DistinguisherMethod",
            "string",
            "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.",
        ),
        age_col(),
        col(
            "MissingPL",
            "string",
            "references a broken or non-existent PriorityLevelConfiguration",
        ),
    ]
}

/// A FlowSchema; MissingPL is the status of its `Dangling` condition, `?` before one is set.
pub(super) fn flow_schema(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let precedence = match int_at(&spec["matchingPrecedence"]) {
        0 => 1000,
        precedence => precedence,
    };
    let distinguisher = match &spec["distinguisherMethod"] {
        Value::Null => "<none>",
        method => str_at(&method["type"]),
    };
    let missing =
        condition(&o["status"]["conditions"], "Dangling").map_or("?", |c| str_at(&c["status"]));
    vec![
        name_cell(o),
        json!(str_at(&spec["priorityLevelConfiguration"]["name"])),
        json!(precedence),
        json!(distinguisher),
        age_cell(o, now),
        json!(missing),
    ]
}

pub(super) fn priority_level_configuration_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Type",
            "string",
            "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.",
        ),
        col(
            "NominalConcurrencyShares",
            "string",
            "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)",
        ),
        col(
            "Queues",
            "string",
            "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.",
        ),
        col(
            "HandSize",
            "string",
            "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.",
        ),
        col(
            "QueueLengthLimit",
            "string",
            "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.",
        ),
        age_col(),
    ]
}

/// A priority level; an `Exempt` one, or one that does not queue, prints `<none>` for what it
/// lacks. Numbers are kube-apiserver's defaults where unset (30 shares, 64 queues, hands of
/// 8, 50 requests a queue).
pub(super) fn priority_level_configuration(o: &Value, now: Timestamp) -> Vec<Value> {
    let spec = &o["spec"];
    let limited = &spec["limited"];
    let none = json!("<none>");
    let (mut shares, mut queues, mut hand_size, mut queue_length) =
        (none.clone(), none.clone(), none.clone(), none);
    if limited.is_object() {
        shares = json!(int_or(&limited["nominalConcurrencyShares"], 30));
        let queuing = &limited["limitResponse"]["queuing"];
        if queuing.is_object() {
            let or_default = |field: &str, default: i64| match int_at(&queuing[field]) {
                0 => default,
                n => n,
            };
            queues = json!(or_default("queues", 64));
            hand_size = json!(or_default("handSize", 8));
            queue_length = json!(or_default("queueLengthLimit", 50));
        }
    }
    vec![
        name_cell(o),
        json!(str_at(&spec["type"])),
        shares,
        queues,
        hand_size,
        queue_length,
        age_cell(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::Printer;
    use super::super::tests::{cells, headers, meta};
    use serde_json::json;

    #[test]
    fn flow_schemas() {
        let schema = json!({"metadata": meta("service-accounts"), "spec": {
                "priorityLevelConfiguration": {"name": "workload-low"},
                "matchingPrecedence": 9000, "distinguisherMethod": {"type": "ByUser"}},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        assert_eq!(
            headers(Printer::FlowSchema),
            [
                "NAME",
                "PRIORITYLEVEL",
                "MATCHINGPRECEDENCE",
                "DISTINGUISHERMETHOD",
                "AGE",
                "MISSINGPL"
            ]
        );
        assert_eq!(
            cells(Printer::FlowSchema, schema),
            [
                json!("service-accounts"),
                json!("workload-low"),
                json!(9000),
                json!("ByUser"),
                json!("5m"),
                json!("False")
            ]
        );
        let new = json!({"metadata": meta("new"), "spec": {
            "priorityLevelConfiguration": {"name": "global-default"}}});
        assert_eq!(
            cells(Printer::FlowSchema, new)[2..],
            [json!(1000), json!("<none>"), json!("5m"), json!("?")]
        );
    }

    #[test]
    fn priority_levels() {
        let limited = json!({"metadata": meta("workload-low"), "spec": {"type": "Limited",
            "limited": {"nominalConcurrencyShares": 100, "lendablePercent": 90,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6,
                    "queueLengthLimit": 50}}}}});
        assert_eq!(
            headers(Printer::PriorityLevelConfiguration),
            [
                "NAME",
                "TYPE",
                "NOMINALCONCURRENCYSHARES",
                "QUEUES",
                "HANDSIZE",
                "QUEUELENGTHLIMIT",
                "AGE"
            ]
        );
        assert_eq!(
            cells(Printer::PriorityLevelConfiguration, limited),
            [
                json!("workload-low"),
                json!("Limited"),
                json!(100),
                json!(128),
                json!(6),
                json!(50),
                json!("5m")
            ]
        );
        let exempt = json!({"metadata": meta("exempt"), "spec": {"type": "Exempt",
            "exempt": {"nominalConcurrencyShares": 0}}});
        assert_eq!(
            cells(Printer::PriorityLevelConfiguration, exempt)[1..6],
            [
                json!("Exempt"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let rejecting = json!({"metadata": meta("catch-all"), "spec": {"type": "Limited",
            "limited": {"limitResponse": {"type": "Reject"}}}});
        assert_eq!(
            cells(Printer::PriorityLevelConfiguration, rejecting)[2..4],
            [json!(30), json!("<none>")]
        );
        let defaulted = json!({"metadata": meta("d"), "spec": {"type": "Limited",
            "limited": {"nominalConcurrencyShares": 0,
                "limitResponse": {"type": "Queue", "queuing": {}}}}});
        assert_eq!(
            cells(Printer::PriorityLevelConfiguration, defaulted)[2..6],
            [json!(0), json!(64), json!(8), json!(50)]
        );
    }
}
