//! WorkOverride (`atoll.dev/v1alpha1`, cluster-scoped): a fleet administrator's override rules,
//! applied to every WorkPlacement it selects before the placement's own rules (so a
//! placement's rules win where both change the same field; WorkOverrides apply in name order).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Override;

/// The desired state of a WorkOverride.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "atoll.dev",
    version = "v1alpha1",
    kind = "WorkOverride",
    status = "WorkOverrideStatus",
    derive = "PartialEq",
    derive = "Default",
    crates(kube_core = "::kube_core"),
    doc = "Override rules a fleet administrator applies to every WorkPlacement it selects.",
    printcolumn = r#"{"name":"Rules","type":"integer","jsonPath":".status.rules"}"#,
    printcolumn = r#"{"name":"Placements","type":"integer","jsonPath":".status.placements"}"#,
    printcolumn = r#"{"name":"Valid","type":"string","jsonPath":".status.conditions[?(@.type==\"Valid\")].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct WorkOverrideSpec {
    /// The placements the rules apply to (criteria ANDed); left out: every placement.
    #[serde(default, skip_serializing_if = "PlacementSelector::is_empty")]
    pub placements: PlacementSelector,
    /// The rules, in order, as a placement's `spec.overrides`; at most 100.
    #[schemars(length(min = 1, max = 100))]
    pub overrides: Vec<Override>,
}

/// Which WorkPlacements a WorkOverride applies to; the criteria are ANDed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementSelector {
    /// Only placements in these namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::string_set")]
    pub namespaces: Vec<String>,
    /// Only placements of these names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::string_set")]
    pub names: Vec<String>,
    /// Only placements whose labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

impl PlacementSelector {
    /// Whether no criterion is set (every placement).
    pub fn is_empty(&self) -> bool {
        self.namespaces.is_empty() && self.names.is_empty() && self.label_selector.is_none()
    }
}

/// The observed state of a WorkOverride.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkOverrideStatus {
    /// The generation this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Rules in the spec.
    #[serde(default)]
    pub rules: i32,
    /// Placements the WorkOverride selects.
    #[serde(default)]
    pub placements: i32,
    /// `Valid`: whether the rules can be applied (an invalid WorkOverride holds the rollouts of
    /// the placements it selects).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}
