//! What an applied object's own status says about it: whether it is `Available`, still
//! `Progressing` towards what the manifest asks, or `Degraded` (it does not match what was asked
//! and is not getting there), as the Work API's manifest conditions report it.
//!
//! Workloads are read the way `kubectl rollout status` reads them; Jobs and Pods by their
//! conditions, phase and container states; any other kind by `status.observedGeneration` and the
//! conventional `Reconciling`/`Progressing`, `Degraded`/`Failed`/`Stalled` conditions. An object
//! no controller reports on (no `status.observedGeneration`, no conditions) is available once it
//! exists and neither progressing nor degraded, as in a cluster that runs no controllers; an
//! object with no status at all reports only `Available`. Jobs and Pods also say whether they ran
//! to an end (`Complete`, OCM's well-known completions).

use serde_json::Value;

/// One condition's verdict: whether it holds, why (a CamelCase reason) and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the condition holds.
    pub ok: bool,
    /// CamelCase reason.
    pub reason: String,
    /// What a user reads.
    pub message: String,
}

impl Verdict {
    fn new(ok: bool, reason: &str, message: impl Into<String>) -> Self {
        Verdict {
            ok,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }
}

/// The verdicts on one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// Whether the object has a status to read (a controller reports on it). Without one it can
    /// neither progress nor degrade, and only `Available` is reported for it.
    pub observed: bool,
    /// `Available`.
    pub available: Verdict,
    /// `Progressing`.
    pub progressing: Verdict,
    /// `Degraded`.
    pub degraded: Verdict,
}

/// The three verdicts, before it is known whether the object is observed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    /// `Available`.
    pub available: Verdict,
    /// `Progressing`.
    pub progressing: Verdict,
    /// `Degraded`.
    pub degraded: Verdict,
}

/// Pod container states that do not get better by waiting.
const BAD_WAITING_REASONS: &[&str] = &[
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
];

fn int(object: &Value, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Value::as_i64)
}

fn text<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

/// The status condition of `type_`, if the object has one.
fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

fn condition_is<'a>(object: &'a Value, type_: &str, status: &str) -> Option<&'a Value> {
    condition(object, type_).filter(|c| c.get("status").and_then(Value::as_str) == Some(status))
}

/// `reason: message` of a condition, or what is there of it.
fn says(c: &Value, fallback: &str) -> (String, String) {
    let reason = c
        .get("reason")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .unwrap_or(fallback)
        .to_owned();
    let message = c
        .get("message")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map_or_else(|| reason.clone(), str::to_owned);
    (reason, message)
}

/// A read-only manifest's object that is not there.
pub fn missing(described: &str) -> Health {
    Health {
        observed: false,
        available: Verdict::new(
            false,
            "ResourceNotFound",
            format!("{described} does not exist"),
        ),
        progressing: not_progressing(),
        degraded: not_degraded(),
    }
}

/// Whether a Job or Pod ran to an end (succeeded or failed, as OCM's well-known completions);
/// `None` for the kinds that do not end.
pub fn completion(kind: &str, object: &Value) -> Option<Verdict> {
    match kind {
        "Job" => Some(
            match ["Complete", "Failed"]
                .iter()
                .find(|t| condition_is(object, t, "True").is_some())
            {
                Some(&"Complete") => Verdict::new(true, "JobComplete", "the Job completed"),
                Some(_) => Verdict::new(true, "JobFailed", "the Job failed"),
                None => Verdict::new(false, "JobNotFinished", "the Job has not finished"),
            },
        ),
        "Pod" => Some(match text(object, "/status/phase") {
            Some("Succeeded") => Verdict::new(true, "PodSucceeded", "the pod succeeded"),
            Some("Failed") => Verdict::new(true, "PodFailed", "the pod failed"),
            _ => Verdict::new(false, "PodNotFinished", "the pod has not finished"),
        }),
        _ => None,
    }
}

fn available() -> Verdict {
    Verdict::new(true, "ResourceAvailable", "the resource exists")
}

fn not_progressing() -> Verdict {
    Verdict::new(false, "Completed", "the resource matches what was applied")
}

fn not_degraded() -> Verdict {
    Verdict::new(false, "AsExpected", "the resource reports no failure")
}

/// Reads an object as it came back from the cluster: its `metadata.generation`, and the rest of it
/// (`spec`, `status`) as `object`.
pub fn of(kind: &str, generation: Option<i64>, object: &Value) -> Health {
    let state = state(kind, generation, object);
    Health {
        observed: object
            .get("status")
            .and_then(Value::as_object)
            .is_some_and(|s| !s.is_empty()),
        available: state.available,
        progressing: state.progressing,
        degraded: state.degraded,
    }
}

fn state(kind: &str, generation: Option<i64>, object: &Value) -> State {
    let observed = int(object, "/status/observedGeneration");
    // The controller has not seen the latest spec yet: nothing else in the status is current.
    if let (Some(generation), Some(observed)) = (generation, observed)
        && observed < generation
    {
        return State {
            available: available(),
            progressing: Verdict::new(
                true,
                "NotObserved",
                format!("the controller has observed generation {observed}, not yet {generation}"),
            ),
            degraded: not_degraded(),
        };
    }
    match kind {
        "Deployment" => deployment(object),
        "StatefulSet" | "ReplicaSet" => replicated(object),
        "DaemonSet" => daemon_set(object),
        "Job" => job(object),
        "Pod" => pod(object),
        _ => generic(object),
    }
}

fn replicas_unavailable(have: i64, want: i64) -> Verdict {
    Verdict::new(
        false,
        "ResourceNotAvailable",
        format!("{have} of {want} replicas are available"),
    )
}

fn deployment(object: &Value) -> State {
    if int(object, "/status/observedGeneration").is_none() {
        return generic(object);
    }
    let want = int(object, "/spec/replicas").unwrap_or(1);
    let replicas = int(object, "/status/replicas").unwrap_or(0);
    let updated = int(object, "/status/updatedReplicas").unwrap_or(0);
    let have = int(object, "/status/availableReplicas").unwrap_or(0);
    let available = if have < want {
        replicas_unavailable(have, want)
    } else {
        self::available()
    };
    let progress = condition(object, "Progressing");
    if let Some(c) = progress
        .filter(|c| c.get("reason").and_then(Value::as_str) == Some("ProgressDeadlineExceeded"))
    {
        let (reason, message) = says(c, "ProgressDeadlineExceeded");
        return State {
            available,
            progressing: Verdict::new(false, "Failed", message.clone()),
            degraded: Verdict::new(true, &reason, message),
        };
    }
    if let Some(c) = condition_is(object, "ReplicaFailure", "True") {
        let (reason, message) = says(c, "ReplicaFailure");
        return State {
            available,
            progressing: Verdict::new(false, "Failed", message.clone()),
            degraded: Verdict::new(true, &reason, message),
        };
    }
    let rolled_out = progress
        .and_then(|c| c.get("reason"))
        .and_then(Value::as_str)
        == Some("NewReplicaSetAvailable");
    if updated < want || replicas > updated || have < updated {
        if rolled_out && updated >= want && replicas <= updated {
            // The rollout finished earlier; replicas were lost since.
            return State {
                degraded: Verdict::new(
                    true,
                    "ReplicasUnavailable",
                    format!("{have} of {want} replicas are available after the rollout finished"),
                ),
                available,
                progressing: not_progressing(),
            };
        }
        let old = (replicas - updated).max(0);
        return State {
            available,
            progressing: Verdict::new(
                true,
                "RolloutInProgress",
                format!(
                    "{updated} of {want} replicas updated, {have} available, {old} old replicas left"
                ),
            ),
            degraded: not_degraded(),
        };
    }
    State {
        available,
        progressing: not_progressing(),
        degraded: not_degraded(),
    }
}

fn replicated(object: &Value) -> State {
    if int(object, "/status/observedGeneration").is_none() {
        return generic(object);
    }
    let want = int(object, "/spec/replicas").unwrap_or(1);
    let ready = int(object, "/status/readyReplicas").unwrap_or(0);
    let have = int(object, "/status/availableReplicas").unwrap_or(ready);
    let updated = int(object, "/status/updatedReplicas");
    let revisions = (
        text(object, "/status/currentRevision"),
        text(object, "/status/updateRevision"),
    );
    let behind = updated.is_some_and(|u| u < want)
        || matches!(revisions, (Some(current), Some(update)) if current != update);
    let progressing = if behind || ready < want {
        Verdict::new(
            true,
            "RolloutInProgress",
            format!(
                "{} of {want} replicas updated, {ready} ready",
                updated.unwrap_or(ready)
            ),
        )
    } else {
        not_progressing()
    };
    let degraded = match condition_is(object, "ReplicaFailure", "True") {
        Some(c) => {
            let (reason, message) = says(c, "ReplicaFailure");
            Verdict::new(true, &reason, message)
        }
        None => not_degraded(),
    };
    State {
        available: if have < want {
            replicas_unavailable(have, want)
        } else {
            available()
        },
        progressing,
        degraded,
    }
}

fn daemon_set(object: &Value) -> State {
    if int(object, "/status/observedGeneration").is_none() {
        return generic(object);
    }
    let want = int(object, "/status/desiredNumberScheduled").unwrap_or(0);
    let updated = int(object, "/status/updatedNumberScheduled").unwrap_or(want);
    let have = int(object, "/status/numberAvailable").unwrap_or(0);
    State {
        available: if have < want {
            Verdict::new(
                false,
                "ResourceNotAvailable",
                format!("{have} of {want} scheduled pods are available"),
            )
        } else {
            available()
        },
        progressing: if updated < want || have < want {
            Verdict::new(
                true,
                "RolloutInProgress",
                format!("{updated} of {want} pods updated, {have} available"),
            )
        } else {
            not_progressing()
        },
        degraded: not_degraded(),
    }
}

fn job(object: &Value) -> State {
    if let Some(c) = condition_is(object, "Failed", "True") {
        let (reason, message) = says(c, "JobFailed");
        return State {
            available: available(),
            progressing: Verdict::new(false, "Failed", message.clone()),
            degraded: Verdict::new(true, &reason, message),
        };
    }
    if condition_is(object, "Complete", "True").is_some() {
        return State {
            available: available(),
            progressing: Verdict::new(false, "Completed", "the Job completed"),
            degraded: not_degraded(),
        };
    }
    if object.pointer("/status/startTime").is_some() {
        let active = int(object, "/status/active").unwrap_or(0);
        let succeeded = int(object, "/status/succeeded").unwrap_or(0);
        return State {
            available: available(),
            progressing: Verdict::new(
                true,
                "JobRunning",
                format!("{active} pods active, {succeeded} succeeded"),
            ),
            degraded: not_degraded(),
        };
    }
    generic(object)
}

fn pod(object: &Value) -> State {
    let Some(phase) = text(object, "/status/phase") else {
        return generic(object);
    };
    let statuses = ["/status/initContainerStatuses", "/status/containerStatuses"]
        .iter()
        .filter_map(|p| object.pointer(p).and_then(Value::as_array))
        .flatten();
    for status in statuses {
        let waiting = status
            .pointer("/state/waiting/reason")
            .and_then(Value::as_str);
        if let Some(reason) = waiting.filter(|r| BAD_WAITING_REASONS.contains(r)) {
            let container = status.get("name").and_then(Value::as_str).unwrap_or("?");
            let detail = text(status, "/state/waiting/message").unwrap_or_default();
            let message = format!("container {container:?} is waiting: {reason} {detail}")
                .trim_end()
                .to_owned();
            return State {
                available: Verdict::new(false, "ResourceNotAvailable", message.clone()),
                progressing: Verdict::new(false, "Failed", message.clone()),
                degraded: Verdict::new(true, reason, message),
            };
        }
    }
    match phase {
        "Failed" => {
            let reason = text(object, "/status/reason").unwrap_or("PodFailed");
            let message = text(object, "/status/message").unwrap_or("the pod failed");
            State {
                available: Verdict::new(false, "ResourceNotAvailable", message),
                progressing: Verdict::new(false, "Failed", message),
                degraded: Verdict::new(true, reason, message),
            }
        }
        "Succeeded" => State {
            available: available(),
            progressing: Verdict::new(false, "Completed", "the pod succeeded"),
            degraded: not_degraded(),
        },
        _ if condition_is(object, "Ready", "True").is_some() => State {
            available: available(),
            progressing: not_progressing(),
            degraded: not_degraded(),
        },
        _ => State {
            available: Verdict::new(
                false,
                "ResourceNotAvailable",
                format!("the pod is {phase} and not ready"),
            ),
            progressing: Verdict::new(true, "PodStarting", format!("the pod is {phase}")),
            degraded: not_degraded(),
        },
    }
}

/// Any kind: the conventions most controllers follow (kstatus's, and OpenShift's operators').
fn generic(object: &Value) -> State {
    let degraded = ["Degraded", "Failed", "Stalled"]
        .iter()
        .find_map(|t| condition_is(object, t, "True").map(|c| says(c, t)));
    let progressing = ["Reconciling", "Progressing"]
        .iter()
        .find_map(|t| condition_is(object, t, "True").map(|c| says(c, t)));
    State {
        available: available(),
        progressing: match progressing {
            Some((_, message)) if degraded.is_none() => {
                Verdict::new(true, "ResourceProgressing", message)
            }
            _ => not_progressing(),
        },
        degraded: match degraded {
            Some((reason, message)) => Verdict::new(true, &reason, message),
            None => not_degraded(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Health of a whole object, as the agent reads what the cluster returned.
    fn of(kind: &str, object: &Value) -> Health {
        super::of(kind, int(object, "/metadata/generation"), object)
    }

    fn deployment_with(status: Value) -> Value {
        json!({"metadata": {"generation": 2}, "spec": {"replicas": 3}, "status": status})
    }

    #[test]
    fn a_deployment_rolling_out_is_progressing_then_done() {
        let rolling = deployment_with(json!({
            "observedGeneration": 2, "replicas": 4, "updatedReplicas": 2, "availableReplicas": 3,
            "conditions": [{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"}]
        }));
        let h = of("Deployment", &rolling);
        assert!(h.progressing.ok, "{h:?}");
        assert_eq!(
            h.progressing.message,
            "2 of 3 replicas updated, 3 available, 2 old replicas left"
        );
        assert!(!h.degraded.ok);
        assert!(h.available.ok);

        let done = deployment_with(json!({
            "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3,
            "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]
        }));
        let h = of("Deployment", &done);
        assert!(
            !h.progressing.ok && !h.degraded.ok && h.available.ok,
            "{h:?}"
        );
    }

    #[test]
    fn a_deployment_not_yet_observed_is_progressing() {
        let stale = deployment_with(json!({"observedGeneration": 1, "replicas": 3,
            "updatedReplicas": 3, "availableReplicas": 3}));
        let h = of("Deployment", &stale);
        assert!(h.progressing.ok);
        assert_eq!(h.progressing.reason, "NotObserved");
    }

    #[test]
    fn a_deployment_past_its_deadline_or_losing_replicas_is_degraded() {
        let stuck = deployment_with(json!({
            "observedGeneration": 2, "replicas": 3, "updatedReplicas": 1, "availableReplicas": 2,
            "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
                "message": "ReplicaSet \"web-5d\" has timed out progressing."}]
        }));
        let h = of("Deployment", &stuck);
        assert!(
            h.degraded.ok && !h.progressing.ok && !h.available.ok,
            "{h:?}"
        );
        assert_eq!(h.degraded.reason, "ProgressDeadlineExceeded");
        assert_eq!(
            h.degraded.message,
            "ReplicaSet \"web-5d\" has timed out progressing."
        );

        let quota = deployment_with(json!({
            "observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
            "conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                "message": "pods \"web\" is forbidden: exceeded quota"}]
        }));
        assert_eq!(of("Deployment", &quota).degraded.reason, "FailedCreate");

        let lost = deployment_with(json!({
            "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 1,
            "conditions": [{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]
        }));
        let h = of("Deployment", &lost);
        assert!(
            h.degraded.ok && !h.progressing.ok && !h.available.ok,
            "{h:?}"
        );
        assert_eq!(
            h.degraded.message,
            "1 of 3 replicas are available after the rollout finished"
        );
    }

    #[test]
    fn objects_without_a_reporting_controller_are_settled_once_they_exist() {
        for kind in [
            "Deployment",
            "ConfigMap",
            "Widget",
            "Job",
            "Pod",
            "DaemonSet",
        ] {
            let h = of(
                kind,
                &json!({"metadata": {"generation": 1}, "spec": {"replicas": 2}}),
            );
            assert!(
                h.available.ok && !h.progressing.ok && !h.degraded.ok,
                "{kind}: {h:?}"
            );
        }
    }

    #[test]
    fn jobs_and_pods_read_their_conditions_and_states() {
        let failed = json!({"status": {"startTime": "2026-01-01T00:00:00Z", "conditions": [
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
             "message": "Job has reached the specified backoff limit"}]}});
        let h = of("Job", &failed);
        assert!(h.degraded.ok && !h.progressing.ok);
        assert_eq!(h.degraded.reason, "BackoffLimitExceeded");
        let running = json!({"status": {"startTime": "2026-01-01T00:00:00Z", "active": 1}});
        assert!(of("Job", &running).progressing.ok);
        let complete = json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}});
        assert!(!of("Job", &complete).progressing.ok);

        let crashing = json!({"status": {"phase": "Running", "containerStatuses": [
            {"name": "app", "state": {"waiting": {"reason": "CrashLoopBackOff",
             "message": "back-off 5m0s restarting failed container"}}}]}});
        let h = of("Pod", &crashing);
        assert!(h.degraded.ok && !h.available.ok);
        assert_eq!(h.degraded.reason, "CrashLoopBackOff");
        assert_eq!(
            h.degraded.message,
            "container \"app\" is waiting: CrashLoopBackOff back-off 5m0s restarting failed container"
        );
        let pending = json!({"status": {"phase": "Pending"}});
        assert!(of("Pod", &pending).progressing.ok);
        let ready = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(!of("Pod", &ready).progressing.ok);
    }

    #[test]
    fn other_kinds_follow_the_common_conditions() {
        let stalled = json!({"status": {"observedGeneration": 1, "conditions": [
            {"type": "Stalled", "status": "True", "reason": "InvalidSpec", "message": "bad port"}]},
            "metadata": {"generation": 1}});
        let h = of("Widget", &stalled);
        assert!(h.degraded.ok && !h.progressing.ok);
        assert_eq!(
            (h.degraded.reason.as_str(), h.degraded.message.as_str()),
            ("InvalidSpec", "bad port")
        );
        let reconciling = json!({"status": {"conditions": [
            {"type": "Reconciling", "status": "True", "message": "creating the volume"}]}});
        let h = of("Widget", &reconciling);
        assert!(h.progressing.ok && !h.degraded.ok);
        assert_eq!(h.progressing.message, "creating the volume");
        let statefulset = json!({"metadata": {"generation": 3}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 3, "readyReplicas": 2, "availableReplicas": 2,
                "updatedReplicas": 1, "currentRevision": "a", "updateRevision": "b"}});
        assert!(of("StatefulSet", &statefulset).progressing.ok);
    }

    #[test]
    fn jobs_and_pods_complete_when_they_end_either_way() {
        let done = |kind: &str, v: Value| completion(kind, &v).map(|c| (c.ok, c.reason));
        let job = |t: &str| json!({"status": {"conditions": [{"type": t, "status": "True"}]}});
        assert_eq!(
            done("Job", job("Complete")),
            Some((true, "JobComplete".into()))
        );
        assert_eq!(done("Job", job("Failed")), Some((true, "JobFailed".into())));
        assert_eq!(
            done("Job", json!({})),
            Some((false, "JobNotFinished".into()))
        );
        assert_eq!(
            done("Pod", json!({"status": {"phase": "Succeeded"}})),
            Some((true, "PodSucceeded".into()))
        );
        assert_eq!(
            done("Pod", json!({"status": {"phase": "Running"}})),
            Some((false, "PodNotFinished".into()))
        );
        assert_eq!(done("ConfigMap", json!({})), None);
    }
}
