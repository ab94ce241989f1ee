//! WorkOverride status: whether a fleet administrator's rules are valid, and how many
//! WorkPlacements they apply to. The placement controller applies them; this one reports.

use std::sync::Arc;
use std::time::Duration;

use atoll_api::placement::{WorkOverride, WorkOverrideStatus, WorkPlacement};
use futures::StreamExt as _;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use tokio::sync::watch;

use crate::conditions::{Verdict, merge};
use crate::placement::selects_placement;

/// The condition that says whether a WorkOverride's rules can be applied.
pub const CONDITION_VALID: &str = "Valid";

/// How often the count of placements is brought up to date when nothing else changes.
const RECOUNT: Duration = Duration::from_secs(30);

struct Context {
    client: kube::Client,
}

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct Error(#[from] kube::Error);

/// The WorkOverride status controller: one reconcile per WorkOverride on a work queue.
pub async fn run(client: kube::Client, shutdown: watch::Receiver<bool>) {
    let ctx = Arc::new(Context {
        client: client.clone(),
    });
    let mut stop = shutdown.clone();
    Controller::new(Api::<WorkOverride>::all(client), watcher::Config::default())
        .graceful_shutdown_on(async move {
            let _ = stop.wait_for(|s| *s).await;
        })
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// The status of a WorkOverride, given the placements on the hub.
pub fn status_of(work_override: &WorkOverride, placements: &[WorkPlacement]) -> WorkOverrideStatus {
    let generation = work_override.metadata.generation;
    let valid = match atoll_api::placement::overrides::validate(&work_override.spec.overrides) {
        Ok(()) => Verdict::new(
            CONDITION_VALID,
            "True",
            "Valid",
            "the rules apply to the placements selected",
        ),
        Err(invalid) => Verdict::new(
            CONDITION_VALID,
            "False",
            "InvalidSpec",
            format!("{invalid}; the placements selected hold their rollouts until it is fixed"),
        ),
    };
    let previous = work_override
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    WorkOverrideStatus {
        observed_generation: generation,
        rules: work_override.spec.overrides.len() as i32,
        placements: placements
            .iter()
            .filter(|p| selects_placement(&work_override.spec.placements, p))
            .count() as i32,
        conditions: merge(previous, vec![valid], generation, jiff::Timestamp::now()),
    }
}

#[tracing::instrument(skip_all, fields(work_override = work_override.metadata.name.as_deref().unwrap_or_default()))]
async fn reconcile(work_override: Arc<WorkOverride>, ctx: Arc<Context>) -> Result<Action, Error> {
    let placements = Api::<WorkPlacement>::all(ctx.client.clone())
        .list(&ListParams::default())
        .await?;
    let status = status_of(&work_override, &placements.items);
    if work_override.status.as_ref() != Some(&status) {
        Api::<WorkOverride>::all(ctx.client.clone())
            .patch_status(
                work_override.metadata.name.as_deref().unwrap_or_default(),
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({ "status": status })),
            )
            .await?;
    }
    Ok(Action::requeue(RECOUNT))
}

fn error_policy(work_override: Arc<WorkOverride>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(work_override = work_override.metadata.name.as_deref().unwrap_or_default(), %error, "cannot write a WorkOverride's status; retrying");
    Action::requeue(Duration::from_secs(5))
}
