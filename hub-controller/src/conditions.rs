//! `metav1.Condition` bookkeeping shared by every status the hub writes: a condition keeps its
//! `lastTransitionTime` until its status changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// A condition as a controller concludes it, before timestamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Condition type.
    pub type_: &'static str,
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    /// CamelCase reason.
    pub reason: &'static str,
    /// What a person should know or do.
    pub message: String,
}

impl Verdict {
    /// A verdict.
    pub fn new(
        type_: &'static str,
        status: &'static str,
        reason: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            status,
            reason,
            message: message.into(),
        }
    }
}

/// Turns verdicts into conditions, keeping each one's transition time from `previous` when its
/// status did not change.
pub fn merge(
    previous: &[Condition],
    verdicts: Vec<Verdict>,
    observed_generation: Option<i64>,
    now: jiff::Timestamp,
) -> Vec<Condition> {
    verdicts
        .into_iter()
        .map(|v| {
            let since = previous
                .iter()
                .find(|c| c.type_ == v.type_ && c.status == v.status)
                .map_or(Time(now), |c| c.last_transition_time.clone());
            Condition {
                type_: v.type_.to_owned(),
                status: v.status.to_owned(),
                reason: v.reason.to_owned(),
                message: atoll_api::condition::fit_message(v.message),
                last_transition_time: since,
                observed_generation,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        let t0: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let t1: jiff::Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let first = merge(
            &[],
            vec![Verdict::new("Ready", "True", "Fine", "ok")],
            None,
            t0,
        );
        let same = merge(
            &first,
            vec![Verdict::new("Ready", "True", "Fine", "still ok")],
            None,
            t1,
        );
        assert_eq!(same[0].last_transition_time, Time(t0));
        assert_eq!(same[0].message, "still ok");
        let flipped = merge(
            &same,
            vec![Verdict::new("Ready", "False", "Broken", "no")],
            None,
            t1,
        );
        assert_eq!(flipped[0].last_transition_time, Time(t1));
    }
}
