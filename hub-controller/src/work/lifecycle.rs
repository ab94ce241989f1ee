//! A Work's life on the hub, one Work at a time on a work queue ([`crate::queue`]): a Work made
//! without the cleanup finalizer (by a user rather than a placement) gets it, one too large to
//! send says so in its status, a finished Work whose `ttlSecondsAfterFinished` passed is deleted,
//! and a deleting Work no agent will clean up is let go (its cluster was removed, stayed Unknown
//! longer than the grace period, or the Work carries [`super::ANNOTATION_FORCE_DELETE`]). Woken by
//! the Work index when such a Work changes, and by its own requeue when a time runs out or a
//! write failed; nothing scans every Work, and a burst of Works costs at most [`CONCURRENCY`]
//! writes at once.

use std::sync::Arc;
use std::time::Duration;

use atoll_api::work::Work;
use kube::api::Api;
use tokio::sync::watch;

use super::{Entry, WorkIndex, add_finalizer, refuse, release};
use crate::fleet::{Fleet, Health};
use crate::queue::{self, Queue};

/// Works looked at at once.
const CONCURRENCY: usize = 4;
/// How often a deleting Work whose cluster is still there is looked at again, in case the cluster
/// is removed or lost before its agent cleans up.
const RECHECK: Duration = Duration::from_secs(5);

/// A Work by cluster (its namespace) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub cluster: String,
    pub name: String,
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.cluster, self.name)
    }
}

/// What to do with a Work now.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Remove the cleanup finalizer: no agent will, for this reason.
    Release(&'static str),
    /// Delete it: it finished this long ago, past its time to live.
    Expire(Duration),
    /// Look again after this long.
    Wait(Duration),
    /// Nothing, until it changes.
    Nothing,
}

/// What to do with a Work, given its cluster's health (`None`: no longer a member), the grace a
/// lost cluster gets, and the time now.
pub fn plan(entry: &Entry, health: Option<&Health>, grace: Duration, now: jiff::Timestamp) -> Step {
    let since = |t: jiff::Timestamp| Duration::try_from(now.duration_since(t)).unwrap_or_default();
    if entry.deleting {
        if entry.force_delete {
            return Step::Release("it carries the atoll.dev/force-delete annotation");
        }
        return match health {
            None => Step::Release("its cluster is no longer a member"),
            Some(Health::Lost(last)) => {
                // Lost since its last heartbeat; a cluster that never sent one counts from the
                // deletion.
                let lost_for = last
                    .or(entry.deletion_requested)
                    .map(since)
                    .unwrap_or_default();
                if lost_for > grace {
                    Step::Release("its cluster has been Unknown for longer than the grace period")
                } else {
                    Step::Wait((grace - lost_for).max(Duration::from_millis(100)))
                }
            }
            Some(_) => Step::Wait(RECHECK),
        };
    }
    let done = entry.reported.complete == Some(true)
        && entry.reported.generation == Some(entry.generation);
    match (entry.ttl_after_finished, entry.reported.complete_since) {
        (Some(ttl), Some(completed)) if done => {
            let finished_for = since(completed);
            if finished_for >= ttl {
                Step::Expire(finished_for)
            } else {
                Step::Wait(ttl - finished_for)
            }
        }
        _ => Step::Nothing,
    }
}

pub struct Context {
    pub index: Arc<WorkIndex>,
    pub fleet: Arc<Fleet>,
    pub client: kube::Client,
    /// How long a lost cluster's deleting Works wait for it.
    pub grace: Duration,
}

/// Runs the controller until `shutdown`.
pub async fn run(ctx: Context, shutdown: watch::Receiver<bool>) {
    let mut stop = shutdown.clone();
    tokio::select! {
        _ = ctx.index.wait_loaded() => {}
        _ = stop.wait_for(|s| *s) => return,
    }
    let queue = Queue::default();
    let feed = async {
        loop {
            for (cluster, name) in ctx.index.next_lifecycle().await {
                queue.add(Key { cluster, name });
            }
        }
    };
    let work = queue::run(
        &queue,
        CONCURRENCY,
        "Work lifecycle",
        &ctx.fleet.metrics,
        |key| reconcile(key, &ctx),
        shutdown,
    );
    tokio::select! {
        () = feed => {}
        () = work => {}
    }
}

/// Brings one Work's end of life along; answers when to look again.
async fn reconcile(key: Key, ctx: &Context) -> kube::Result<Option<Duration>> {
    let Some(entry) = ctx.index.get(&key.cluster, &key.name) else {
        return Ok(None);
    };
    if entry.needs_finalizer {
        add_finalizer(ctx.client.clone(), &key.cluster, &key.name).await?;
    }
    if let Some(why) = &entry.refused {
        refuse(ctx.client.clone(), &key.cluster, &key.name, why).await?;
    }
    let health = ctx.fleet.get(&key.cluster).map(|m| m.health);
    match plan(&entry, health.as_ref(), ctx.grace, jiff::Timestamp::now()) {
        Step::Release(why) => {
            tracing::info!(work = %key.name, cluster = %key.cluster, "letting a deleting Work go: {why}");
            release(ctx.client.clone(), &key.cluster, &key.name).await?;
            Ok(None)
        }
        Step::Expire(finished_for) => {
            let api: Api<Work> = Api::namespaced(ctx.client.clone(), &key.cluster);
            match api.delete(&key.name, &Default::default()).await {
                Ok(_) => {
                    tracing::info!(work = %key.name, cluster = %key.cluster, finished_seconds_ago = finished_for.as_secs(), "deleted a finished Work: its ttlSecondsAfterFinished passed");
                    Ok(None)
                }
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
                Err(error) => Err(error),
            }
        }
        Step::Wait(after) => Ok(Some(after)),
        Step::Nothing => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::work::Reported;

    fn entry() -> Entry {
        Entry {
            uid: "u".into(),
            generation: 2,
            ..Entry::default()
        }
    }

    const GRACE: Duration = Duration::from_secs(300);

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    #[test]
    fn a_deleting_work_is_let_go_only_when_no_agent_will_clean_up() {
        let deleting = Entry {
            deleting: true,
            deletion_requested: Some(at(0)),
            ..entry()
        };
        let now = at(100);
        assert_eq!(
            plan(&deleting, Some(&Health::Ready), GRACE, now),
            Step::Wait(RECHECK)
        );
        assert_eq!(
            plan(&deleting, None, GRACE, now),
            Step::Release("its cluster is no longer a member")
        );
        let forced = Entry {
            force_delete: true,
            ..deleting.clone()
        };
        assert!(matches!(
            plan(&forced, Some(&Health::Ready), GRACE, now),
            Step::Release(_)
        ));
        // Lost 60 s ago: waits out the rest of the grace, then lets go.
        let lost = Health::Lost(Some(at(40)));
        assert_eq!(
            plan(&deleting, Some(&lost), GRACE, now),
            Step::Wait(Duration::from_secs(240))
        );
        assert!(matches!(
            plan(&deleting, Some(&lost), GRACE, at(341)),
            Step::Release(_)
        ));
        // Never heard from: the grace counts from the deletion.
        assert_eq!(
            plan(&deleting, Some(&Health::Lost(None)), GRACE, now),
            Step::Wait(Duration::from_secs(200))
        );
    }

    #[test]
    fn a_finished_work_expires_its_time_to_live_after_it_completed() {
        let finished = Entry {
            ttl_after_finished: Some(Duration::from_secs(60)),
            reported: Reported {
                generation: Some(2),
                complete: Some(true),
                complete_since: Some(at(0)),
                ..Reported::default()
            },
            ..entry()
        };
        assert_eq!(
            plan(&finished, Some(&Health::Ready), GRACE, at(45)),
            Step::Wait(Duration::from_secs(15))
        );
        assert_eq!(
            plan(&finished, Some(&Health::Ready), GRACE, at(61)),
            Step::Expire(Duration::from_secs(61))
        );
        // Complete for an older generation, or not complete: nothing to do.
        let older = Entry {
            generation: 3,
            ..finished.clone()
        };
        assert_eq!(plan(&older, None, GRACE, at(61)), Step::Nothing);
        let running = Entry {
            reported: Reported {
                complete: Some(false),
                ..finished.reported.clone()
            },
            ..finished.clone()
        };
        assert_eq!(plan(&running, None, GRACE, at(61)), Step::Nothing);
        // No time to live: stays.
        let kept = Entry {
            ttl_after_finished: None,
            ..finished
        };
        assert_eq!(plan(&kept, None, GRACE, at(6_000)), Step::Nothing);
    }
}
