//! The scheduling policy of a WorkPlacement: which of the clusters its selector picks receive the
//! Work (`PickAll`, `PickFixed`, `PickN`), under required affinity and weighted preferences over
//! ClusterProfile labels and properties, and the decisions the hub reports.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::InvalidField;

/// How a placement chooses among the clusters its selector picks.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.type) || self.type != 'PickN' || (has(self.numberOfClusters) && self.numberOfClusters > 0)", "message": "PickN needs numberOfClusters, at least 1", "fieldPath": ".numberOfClusters"},
    {"rule": "!has(self.type) || self.type != 'PickFixed' || (has(self.clusterNames) && size(self.clusterNames) > 0)", "message": "PickFixed needs clusterNames", "fieldPath": ".clusterNames"},
]))]
pub struct Policy {
    /// `PickAll` (the default: every cluster that matches), `PickFixed` (the clusters named in
    /// `clusterNames`) or `PickN` (the best `numberOfClusters`).
    #[serde(rename = "type", default)]
    pub type_: PolicyType,
    /// The clusters of `PickFixed`, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::string_set")]
    pub cluster_names: Vec<String>,
    /// How many clusters `PickN` chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub number_of_clusters: Option<i32>,
    /// Required affinity: a cluster must match at least one term (terms ORed); none: every
    /// cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10))]
    pub affinity: Vec<AffinityTerm>,
    /// Preferences that score the clusters `PickN` chooses among: the highest total wins, ties
    /// by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub preferences: Vec<Preference>,
    /// `PickN`: spread the clusters over the values of a label, one per value before a second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_spread: Option<TopologySpread>,
    /// `PickN`: replace a chosen cluster that has not been ready for a while (a cluster that
    /// leaves the inventory is replaced in any case). Left out: a chosen cluster keeps the Work
    /// whatever its health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<Failover>,
}

/// How a `PickN` placement spreads over a label: the best cluster of each value of the label
/// first, then a second of each, and so on; clusters without the label last.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpread {
    /// The ClusterProfile label whose values are the domains, e.g. `region`.
    #[schemars(length(min = 1, max = 317))]
    pub topology_key: String,
}

/// When a `PickN` placement moves off a cluster that is not ready.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Failover {
    /// How long a chosen cluster may be Unknown or not ready before the next best ready cluster
    /// replaces it (default 300); counted from its last heartbeat, so one late heartbeat moves
    /// nothing. A cluster is moved off only when a ready one can replace it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub after_seconds: Option<i32>,
    /// Whether the Work of a cluster moved off is removed (default true: the cluster deletes its
    /// resources when it comes back), or stays there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_on_return: Option<bool>,
}

/// The default of `failover.afterSeconds`.
pub const FAILOVER_AFTER_SECONDS: i32 = 300;

impl Failover {
    /// `afterSeconds`, or its default.
    pub fn after(&self) -> std::time::Duration {
        let seconds = self.after_seconds.unwrap_or(FAILOVER_AFTER_SECONDS).max(1);
        std::time::Duration::from_secs(u64::from(seconds.unsigned_abs()))
    }

    /// `purgeOnReturn`, or its default.
    pub fn purge_on_return(&self) -> bool {
        self.purge_on_return.unwrap_or(true)
    }
}

/// How a placement chooses clusters.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum PolicyType {
    /// Every cluster the selector and the affinity pick.
    #[default]
    PickAll,
    /// The clusters named in `clusterNames`.
    PickFixed,
    /// The best `numberOfClusters` of them, by preference score.
    PickN,
}

impl std::fmt::Display for PolicyType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::PickAll => "PickAll",
            Self::PickFixed => "PickFixed",
            Self::PickN => "PickN",
        })
    }
}

/// A term of required affinity or of a preference: the criteria are ANDed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffinityTerm {
    /// The cluster's ClusterProfile labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// The cluster's ClusterProfile properties match every expression.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub properties: Vec<PropertyExpression>,
}

/// The operators of a property expression.
pub const OPERATORS: [&str; 6] = ["Gt", "Lt", "Eq", "NotEq", "Exists", "DoesNotExist"];

/// An expression over one ClusterProfile property.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PropertyExpression {
    /// The property's name, e.g. `cpu.available`.
    #[schemars(length(min = 1, max = 253))]
    pub property: String,
    /// `Gt` and `Lt` compare numbers (Kubernetes quantities such as `4`, `500m`, `16Gi`); `Eq`
    /// and `NotEq` compare numbers when both sides are, text otherwise; `Exists` and
    /// `DoesNotExist` test presence.
    #[schemars(extend("enum" = ["Gt", "Lt", "Eq", "NotEq", "Exists", "DoesNotExist"]))]
    pub operator: String,
    /// One value for `Gt` and `Lt`; one or more for `Eq` (any of them) and `NotEq` (none of
    /// them); none for `Exists` and `DoesNotExist`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub values: Vec<String>,
}

/// A weighted preference: a term a cluster matches or not, or a sort on a numeric property.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preference {
    /// How much the preference counts, 1 to 100.
    #[schemars(range(min = 1, max = 100))]
    pub weight: i32,
    /// A cluster whose labels match scores `weight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// A cluster whose properties match every expression scores `weight`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub properties: Vec<PropertyExpression>,
    /// Clusters score from 0 to `weight` linearly between the lowest and highest value of the
    /// property among the candidates, the best end scoring `weight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_by: Option<PropertySort>,
}

/// A sort on a numeric property.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PropertySort {
    /// The property, e.g. `cost`.
    #[schemars(length(min = 1, max = 253))]
    pub property: String,
    /// `Ascending` (lowest is best) or `Descending` (highest is best, the default).
    #[serde(default)]
    pub order: SortOrder,
}

/// The order of a property sort.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum SortOrder {
    /// The lowest value is best.
    Ascending,
    /// The highest value is best.
    #[default]
    Descending,
}

/// What the hub decided for one cluster the selector picks.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDecision {
    /// The cluster.
    pub cluster_name: String,
    /// Whether it receives the Work.
    pub selected: bool,
    /// Its preference score (the sum of the preferences' parts).
    #[serde(default)]
    pub score: i32,
    /// Why it was chosen or not, e.g. `did not match required affinity`, `not in the top 3`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Not chosen, but its Work stays there: the placement failed over from it with
    /// `failover.purgeOnReturn: false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retained: bool,
}

/// A Kubernetes quantity (`4`, `-1.5`, `500m`, `16Gi`, `2k`, `1e3`) as a number, or `None`.
pub fn parse_quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_end);
    let unsigned = number.strip_prefix(['+', '-']).unwrap_or(number);
    let well_formed = !unsigned.is_empty()
        && unsigned != "."
        && unsigned.bytes().filter(|b| *b == b'.').count() <= 1
        && unsigned.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if !well_formed {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let multiplier = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || digits.len() > 3 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            10f64.powi(exponent.parse().ok()?)
        }
    };
    Some(value * multiplier).filter(|v| v.is_finite())
}

/// Checks a placement's policy, naming the first field at fault, e.g.
/// `spec.policy.affinity[0].properties[1].values[0]`.
pub fn validate(policy: &Policy) -> Result<(), InvalidField> {
    let invalid = |field: String, value: String, why: &str| InvalidField {
        field,
        value,
        why: why.to_owned(),
    };
    match policy.type_ {
        PolicyType::PickN => match policy.number_of_clusters {
            None => {
                return Err(invalid(
                    "spec.policy.numberOfClusters".into(),
                    "null".into(),
                    "PickN needs numberOfClusters, at least 1",
                ));
            }
            Some(n) if n < 1 => {
                return Err(invalid(
                    "spec.policy.numberOfClusters".into(),
                    n.to_string(),
                    "PickN needs numberOfClusters, at least 1",
                ));
            }
            Some(_) => {}
        },
        PolicyType::PickFixed if policy.cluster_names.is_empty() => {
            return Err(invalid(
                "spec.policy.clusterNames".into(),
                "[]".into(),
                "PickFixed needs clusterNames",
            ));
        }
        _ => {}
    }
    if let Some(spread) = &policy.topology_spread
        && spread.topology_key.is_empty()
    {
        return Err(invalid(
            "spec.policy.topologySpread.topologyKey".into(),
            "\"\"".into(),
            "name the label to spread over, e.g. region",
        ));
    }
    if let Some(seconds) = policy.failover.as_ref().and_then(|f| f.after_seconds)
        && seconds < 1
    {
        return Err(invalid(
            "spec.policy.failover.afterSeconds".into(),
            seconds.to_string(),
            "at least 1 second",
        ));
    }
    for (i, term) in policy.affinity.iter().enumerate() {
        check_expressions(&term.properties, &format!("spec.policy.affinity[{i}]"))?;
    }
    for (i, preference) in policy.preferences.iter().enumerate() {
        let at = format!("spec.policy.preferences[{i}]");
        if !(1..=100).contains(&preference.weight) {
            return Err(invalid(
                format!("{at}.weight"),
                preference.weight.to_string(),
                "a weight is from 1 to 100",
            ));
        }
        let is_term = preference.label_selector.is_some() || !preference.properties.is_empty();
        if is_term == preference.sort_by.is_some() {
            return Err(invalid(
                at,
                "{…}".into(),
                "a preference has either a labelSelector and properties, or a sortBy",
            ));
        }
        check_expressions(&preference.properties, &at)?;
        if let Some(sort) = &preference.sort_by
            && sort.property.is_empty()
        {
            return Err(invalid(
                format!("{at}.sortBy.property"),
                "\"\"".into(),
                "name the property to sort on",
            ));
        }
    }
    Ok(())
}

fn check_expressions(expressions: &[PropertyExpression], at: &str) -> Result<(), InvalidField> {
    for (j, expression) in expressions.iter().enumerate() {
        let field = |name: &str| format!("{at}.properties[{j}].{name}");
        let quote = |text: &str| serde_json::Value::from(text).to_string();
        if expression.property.is_empty() {
            return Err(InvalidField {
                field: field("property"),
                value: "\"\"".into(),
                why: "name the property".into(),
            });
        }
        let values = expression.values.len();
        let wanted = match expression.operator.as_str() {
            "Gt" | "Lt" => values == 1,
            "Eq" | "NotEq" => values >= 1,
            "Exists" | "DoesNotExist" => values == 0,
            _ => {
                return Err(InvalidField {
                    field: field("operator"),
                    value: quote(&expression.operator),
                    why: "supported values: \"Gt\", \"Lt\", \"Eq\", \"NotEq\", \"Exists\", \"DoesNotExist\""
                        .into(),
                });
            }
        };
        if !wanted {
            return Err(InvalidField {
                field: field("values"),
                value: serde_json::Value::from(expression.values.clone()).to_string(),
                why: format!(
                    "{} takes {}",
                    expression.operator,
                    match expression.operator.as_str() {
                        "Gt" | "Lt" => "exactly one value",
                        "Eq" | "NotEq" => "one or more values",
                        _ => "no values",
                    }
                ),
            });
        }
        if matches!(expression.operator.as_str(), "Gt" | "Lt")
            && parse_quantity(&expression.values[0]).is_none()
        {
            return Err(InvalidField {
                field: field("values[0]"),
                value: quote(&expression.values[0]),
                why: format!(
                    "{} compares numbers: a quantity such as 4, 500m or 16Gi",
                    expression.operator
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_like_kubernetes() {
        assert_eq!(parse_quantity("4"), Some(4.0));
        assert_eq!(parse_quantity("500m"), Some(0.5));
        assert_eq!(parse_quantity("16Gi"), Some(16.0 * 1024f64.powi(3)));
        assert_eq!(parse_quantity("2k"), Some(2000.0));
        assert_eq!(parse_quantity("-1.5"), Some(-1.5));
        assert_eq!(parse_quantity("+.5"), Some(0.5));
        assert_eq!(parse_quantity("1e3"), Some(1000.0));
        assert_eq!(parse_quantity("12E-1"), Some(1.2000000000000002));
        assert_eq!(parse_quantity(" 7 "), Some(7.0));
        for bad in [
            "", "cheap", "4 cores", "Gi", ".", "1.2.3", "--1", "1e", "1x", "NaN", "inf", "1e9999",
        ] {
            assert_eq!(parse_quantity(bad), None, "{bad:?}");
        }
    }

    fn policy(yaml: &str) -> Policy {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn validation_names_the_field_at_fault() {
        let check = |yaml: &str| validate(&policy(yaml)).map_err(|e| e.to_string());
        assert_eq!(check("{}"), Ok(()));
        assert_eq!(
            check(
                "{type: PickN, numberOfClusters: 2, affinity: [{properties: [{property: cpu.available, operator: Gt, values: ['4']}]}], preferences: [{weight: 50, sortBy: {property: cost, order: Ascending}}, {weight: 10, labelSelector: {matchLabels: {tier: gold}}}]}"
            ),
            Ok(())
        );
        assert_eq!(
            check("{type: PickN}").unwrap_err(),
            "spec.policy.numberOfClusters: Invalid value: null: PickN needs numberOfClusters, at least 1"
        );
        assert_eq!(
            check("{type: PickN, numberOfClusters: 0}").unwrap_err(),
            "spec.policy.numberOfClusters: Invalid value: 0: PickN needs numberOfClusters, at least 1"
        );
        assert_eq!(
            check("{type: PickFixed}").unwrap_err(),
            "spec.policy.clusterNames: Invalid value: []: PickFixed needs clusterNames"
        );
        assert_eq!(
            check("{affinity: [{}, {properties: [{property: cpu, operator: Ge, values: ['4']}]}]}")
                .unwrap_err(),
            "spec.policy.affinity[1].properties[0].operator: Invalid value: \"Ge\": supported values: \"Gt\", \"Lt\", \"Eq\", \"NotEq\", \"Exists\", \"DoesNotExist\""
        );
        assert_eq!(
            check("{affinity: [{properties: [{property: cpu, operator: Gt, values: [four]}]}]}")
                .unwrap_err(),
            "spec.policy.affinity[0].properties[0].values[0]: Invalid value: \"four\": Gt compares numbers: a quantity such as 4, 500m or 16Gi"
        );
        assert_eq!(
            check(
                "{affinity: [{properties: [{property: cpu, operator: Lt, values: ['1', '2']}]}]}"
            )
            .unwrap_err(),
            "spec.policy.affinity[0].properties[0].values: Invalid value: [\"1\",\"2\"]: Lt takes exactly one value"
        );
        assert!(
            check("{affinity: [{properties: [{property: gpu, operator: Exists, values: [x]}]}]}")
                .unwrap_err()
                .contains("Exists takes no values")
        );
        assert!(
            check("{preferences: [{weight: 0, sortBy: {property: cost}}]}")
                .unwrap_err()
                .starts_with("spec.policy.preferences[0].weight: Invalid value: 0")
        );
        assert_eq!(
            check("{type: PickN, numberOfClusters: 1, topologySpread: {topologyKey: ''}}")
                .unwrap_err(),
            "spec.policy.topologySpread.topologyKey: Invalid value: \"\": name the label to spread over, e.g. region"
        );
        assert_eq!(
            check("{type: PickN, numberOfClusters: 1, failover: {afterSeconds: 0}}").unwrap_err(),
            "spec.policy.failover.afterSeconds: Invalid value: 0: at least 1 second"
        );
        assert!(
            check("{preferences: [{weight: 5}]}")
                .unwrap_err()
                .starts_with("spec.policy.preferences[0]: Invalid value")
        );
        assert!(
            check("{preferences: [{weight: 5, properties: [{property: cost, operator: Gt, values: [x]}]}]}")
                .unwrap_err()
                .starts_with("spec.policy.preferences[0].properties[0].values[0]")
        );
    }
}
