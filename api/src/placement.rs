//! WorkPlacement (`atoll.dev/v1alpha1`): manifests fanned out to the member clusters a selector
//! picks, one Work per cluster, rolled out all at once or progressively.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::work::Manifest;

pub mod overrides;
pub mod policy;
pub mod resources;
pub mod work_override;

pub use overrides::{
    ImageOverride, JsonPatchOperation, ManifestSelector, Override, OverrideClusters,
};
pub use policy::{
    AffinityTerm, ClusterDecision, Failover, Policy, PolicyType, Preference, PropertyExpression,
    PropertySort, SortOrder, TopologySpread,
};
pub use resources::ResourceSelector;
pub use work_override::{PlacementSelector, WorkOverride, WorkOverrideSpec, WorkOverrideStatus};

/// The desired state of a WorkPlacement.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "atoll.dev",
    version = "v1alpha1",
    kind = "WorkPlacement",
    namespaced,
    status = "WorkPlacementStatus",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "Manifests placed on the member clusters a selector picks.",
    printcolumn = r#"{"name":"Selected","type":"integer","jsonPath":".status.selected"}"#,
    printcolumn = r#"{"name":"Available","type":"integer","jsonPath":".status.available"}"#,
    printcolumn = r#"{"name":"Degraded","type":"integer","jsonPath":".status.degraded"}"#,
    printcolumn = r#"{"name":"Progressing","type":"string","jsonPath":".status.conditions[?(@.type==\"Progressing\")].status"}"#,
    printcolumn = r#"{"name":"Policy","type":"string","priority":1,"jsonPath":".spec.policy.type"}"#,
    printcolumn = r#"{"name":"Scheduled","type":"string","priority":1,"jsonPath":".status.conditions[?(@.type==\"Scheduled\")].message"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkPlacementSpec {
    /// The manifests each selected cluster receives.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<Manifest>,
    /// Resources stored on the hub each selected cluster receives after the manifests, their
    /// status and the fields the hub generated stripped; at most 100 selectors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub resource_selectors: Vec<ResourceSelector>,
    /// Which member clusters receive them.
    #[serde(default)]
    pub cluster_selector: ClusterSelector,
    /// How the hub chooses among the clusters the selector picks (left out: all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// How fast the manifests reach the clusters.
    #[serde(default)]
    pub rollout_strategy: RolloutStrategy,
    /// Per-cluster changes to the manifests, applied in order (a later rule wins where two
    /// change the same field); at most 100 rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100))]
    pub overrides: Vec<Override>,
}

/// Which member clusters a WorkPlacement selects; the criteria are ANDed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSelector {
    /// Only members of this ClusterSet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_set: Option<String>,
    /// Only clusters whose ClusterProfile labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Only these clusters, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::string_set")]
    pub cluster_names: Vec<String>,
}

/// How a WorkPlacement rolls out.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStrategy {
    /// `All` at once (the default) or `Progressive`.
    #[serde(rename = "type", default)]
    pub type_: RolloutType,
    /// Clusters updated at once under `Progressive`: a number or a percentage (default 25%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::count_or_percent")]
    pub max_concurrency: Option<IntOrString>,
    /// Failed clusters tolerated before the rollout stops: a number or a percentage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::count_or_percent")]
    pub max_failures: Option<IntOrString>,
    /// How long a cluster must stay available before the next ones start, e.g. `1m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub min_success_time: Option<String>,
    /// How long a cluster may take to become available before it counts as failed, e.g. `10m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub progress_deadline: Option<String>,
}

/// A rollout strategy's values, checked, for a placement that selects `total` clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RolloutSettings {
    /// Clusters updated at once (at least 1).
    pub concurrency: usize,
    /// Failed clusters tolerated.
    pub max_failures: usize,
    /// How long a cluster stays available before it counts as done.
    pub min_success: Duration,
    /// How long a cluster may take before it counts as failed.
    pub deadline: Option<Duration>,
}

/// A field of a spec that holds a value it may not, said as kube-apiserver says it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: Invalid value: {value}: {why}")]
pub struct InvalidField {
    /// The field's path, e.g. `spec.rolloutStrategy.minSuccessTime`.
    pub field: String,
    /// The value as written, quoted as JSON.
    pub value: String,
    /// What a valid value looks like.
    pub why: String,
}

impl RolloutStrategy {
    /// The strategy's values for a placement selecting `total` clusters, or the first field that
    /// is not valid (an invalid value is never read as a default).
    pub fn settings(&self, total: usize) -> Result<RolloutSettings, InvalidField> {
        let field = |name: &str| format!("spec.rolloutStrategy.{name}");
        let count = |name: &str, value: &IntOrString| {
            scaled(value, total).map_err(|why| InvalidField {
                field: field(name),
                value: quoted(value),
                why,
            })
        };
        let time = |name: &str, text: &str| {
            parse_duration(text).map_err(|why| InvalidField {
                field: field(name),
                value: serde_json::Value::from(text).to_string(),
                why,
            })
        };
        let concurrency = match &self.max_concurrency {
            Some(value) => count("maxConcurrency", value)?,
            None => total.div_ceil(4),
        };
        Ok(RolloutSettings {
            concurrency: concurrency.max(1),
            max_failures: match &self.max_failures {
                Some(value) => count("maxFailures", value)?,
                None => 0,
            },
            min_success: match &self.min_success_time {
                Some(text) => time("minSuccessTime", text)?,
                None => Duration::ZERO,
            },
            deadline: match &self.progress_deadline {
                Some(text) => Some(time("progressDeadline", text)?),
                None => None,
            },
        })
    }
}

fn quoted(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(s) => serde_json::Value::from(s.as_str()).to_string(),
    }
}

/// The pattern of a duration: whole hours, minutes and seconds, in any order and summed.
pub const DURATION_PATTERN: &str = "^([0-9]+[hms])+$";

/// Parses a duration such as `90s`, `5m` or `1h30m` (the units `h`, `m` and `s`, summed).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    const WHAT: &str = "a duration is whole hours, minutes and seconds, such as 90s, 5m or 1h30m";
    let mut total: u64 = 0;
    let mut number: Option<u64> = None;
    for c in text.chars() {
        if let Some(digit) = c.to_digit(10) {
            let n = number
                .unwrap_or(0)
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(digit)))
                .ok_or_else(|| format!("{WHAT}, at most 100 years"))?;
            number = Some(n);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(WHAT.to_owned()),
        };
        let n = number.take().ok_or_else(|| WHAT.to_owned())?;
        total = n
            .checked_mul(unit)
            .and_then(|s| total.checked_add(s))
            .filter(|s| *s <= 100 * 366 * 86_400)
            .ok_or_else(|| format!("{WHAT}, at most 100 years"))?;
    }
    if number.is_some() || text.is_empty() {
        return Err(WHAT.to_owned());
    }
    Ok(Duration::from_secs(total))
}

/// The pattern of a percentage of clusters.
pub const PERCENT_PATTERN: &str = "^[0-9]+%$";

/// A count, or a percentage of `total` rounded up.
pub fn scaled(value: &IntOrString, total: usize) -> Result<usize, String> {
    const WHAT: &str = "must be a number of clusters or a percentage such as 25%";
    match value {
        IntOrString::Int(n) => usize::try_from(*n).map_err(|_| format!("{WHAT}, not negative")),
        IntOrString::String(s) => {
            let percent: usize = s
                .strip_suffix('%')
                .filter(|p| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| WHAT.to_owned())?;
            Ok(total.saturating_mul(percent).div_ceil(100))
        }
    }
}

/// The rollout type of a WorkPlacement.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum RolloutType {
    /// Every selected cluster at once.
    #[default]
    All,
    /// A few clusters at a time, bounded by `maxConcurrency`.
    Progressive,
}

/// The observed state of a WorkPlacement.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkPlacementStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Clusters the selector picks.
    #[serde(default)]
    pub selected: i32,
    /// Clusters whose Work is applied.
    #[serde(default)]
    pub applied: i32,
    /// Clusters whose Work is available.
    #[serde(default)]
    pub available: i32,
    /// Clusters whose Work is degraded.
    #[serde(default)]
    pub degraded: i32,
    /// Clusters not reached yet.
    #[serde(default)]
    pub pending: i32,
    /// Clusters where the rollout failed, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "failed_clusters_schema")]
    pub failed_clusters: Vec<FailedCluster>,
    /// The clusters whose Work one or more override rules changed, and which.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "overridden_clusters_schema")]
    pub overridden_clusters: Vec<OverriddenCluster>,
    /// The hub resources the resource selectors picked (at most 1,000 listed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub selected_resources: Vec<SelectedResource>,
    /// The indexes in `spec.overrides` of the rules that changed no manifest on any selected
    /// cluster (a cluster or manifest selector that matches nothing, or a patch that changes
    /// nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unused_overrides: Vec<i32>,
    /// What the policy decided (with a policy only): the chosen clusters with their scores
    /// (at most 1,000, first), those failover keeps or replaced and every name of `PickFixed`,
    /// and, under `PickAll` or `PickN`, with why not, the first 20 by name of the others the
    /// selector picks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "decisions_schema")]
    pub decisions: Vec<ClusterDecision>,
    /// `Progressing`, `Available`, `Degraded`, and `Scheduled` with a policy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

fn decisions_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = crate::schema::map_list::<ClusterDecision>(generator, "clusterName");
    schema.insert("maxItems".into(), DECISIONS_MAX.into());
    schema
}

/// The most decisions a placement's status lists.
pub const DECISIONS_MAX: usize = 1000;

fn overridden_clusters_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::schema::map_list::<OverriddenCluster>(generator, "name")
}

/// A cluster whose Work override rules changed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverriddenCluster {
    /// Cluster name.
    pub name: String,
    /// The indexes in `spec.overrides` of the rules that changed its manifests, in order.
    #[serde(default)]
    pub applied_overrides: Vec<i32>,
    /// The WorkOverride rules that changed its manifests, as `NAME[INDEX]`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied_work_overrides: Vec<String>,
}

/// The most hub resources a placement's status lists.
pub const SELECTED_RESOURCES_MAX: usize = 1000;

/// A hub resource a placement sends.
#[derive(
    Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct SelectedResource {
    /// API group (`""` for the core group).
    #[serde(default)]
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Namespace (namespaced kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

fn failed_clusters_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::schema::map_list::<FailedCluster>(generator, "name")
}

/// A cluster where a rollout failed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct FailedCluster {
    /// Cluster name.
    pub name: String,
    /// Machine-readable reason, in CamelCase.
    #[serde(default)]
    pub reason: String,
    /// What went wrong, for people.
    #[serde(default)]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_invalid_ones_are_errors() {
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in [
            "",
            "10",
            "5x",
            "m",
            "1.5h",
            "-1s",
            " 5m",
            "99999999999999999999999h",
            "5000000000h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} parsed");
        }
        // The CRD's pattern and the parser agree.
        let pattern = regex::Regex::new(DURATION_PATTERN).unwrap();
        for text in [
            "1m30s", "2h", "0s", "1h1h", "", "10", "5x", "1.5h", " 5m", "m",
        ] {
            assert_eq!(
                pattern.is_match(text),
                parse_duration(text).is_ok(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn counts_and_percentages_scale_and_invalid_ones_are_errors() {
        assert_eq!(scaled(&IntOrString::Int(3), 10), Ok(3));
        assert_eq!(scaled(&IntOrString::String("25%".into()), 10), Ok(3));
        assert_eq!(scaled(&IntOrString::String("0%".into()), 10), Ok(0));
        assert_eq!(scaled(&IntOrString::String("150%".into()), 10), Ok(15));
        let pattern = regex::Regex::new(PERCENT_PATTERN).unwrap();
        for bad in ["", "%", "abc%", "25", "-5%", "2.5%", "9999999999%"] {
            assert!(
                scaled(&IntOrString::String(bad.into()), 10).is_err(),
                "{bad:?}"
            );
            // The schema's maxLength refuses the long one.
            assert!(!pattern.is_match(bad) || bad.len() > 8, "{bad:?}");
        }
        assert!(scaled(&IntOrString::Int(-1), 10).is_err());
    }

    #[test]
    fn settings_name_the_field_at_fault() {
        let strategy = RolloutStrategy {
            min_success_time: Some("5 minutes".into()),
            ..RolloutStrategy::default()
        };
        let error = strategy.settings(4).unwrap_err();
        assert_eq!(
            error.to_string(),
            "spec.rolloutStrategy.minSuccessTime: Invalid value: \"5 minutes\": a duration is whole hours, minutes and seconds, such as 90s, 5m or 1h30m"
        );
        let strategy = RolloutStrategy {
            max_failures: Some(IntOrString::String("lots".into())),
            ..RolloutStrategy::default()
        };
        assert_eq!(
            strategy.settings(4).unwrap_err().field,
            "spec.rolloutStrategy.maxFailures"
        );
        let defaults = RolloutStrategy::default().settings(10).unwrap();
        assert_eq!(
            defaults,
            RolloutSettings {
                concurrency: 3,
                max_failures: 0,
                min_success: Duration::ZERO,
                deadline: None
            }
        );
        assert_eq!(
            RolloutStrategy::default().settings(0).unwrap().concurrency,
            1
        );
    }
}
