//! Leader election between hub replicas, on the `coordination.k8s.io/v1` Lease
//! `atoll-system/atoll-hub`, as client-go's `leaderelection` package does it:
//!
//! - a candidate takes the Lease when there is none, when it names no holder, or when the holder
//!   has not renewed it within its lease duration, judged by this candidate's own clock from the
//!   moment it last saw the Lease change (client-go's observed time: the holder's clock is never
//!   trusted, only whether the record moves);
//! - the leader renews it every retry period, and gives up leadership when it could not renew it
//!   within the renew deadline (shorter than the lease duration, so it stops before anyone else
//!   may start), or at once when the Lease names another holder;
//! - every write carries the Lease's `resourceVersion`, so of two candidates writing at once one
//!   gets a conflict and stays a candidate;
//! - a leader that stops cleanly releases the Lease (no holder, one-second duration), so that the
//!   next replica takes over at its next retry rather than after a lease duration.
//!
//! The decision is [`decide`], a pure function of the observed Lease and the clock; [`Elector`]
//! does the reads and writes around it.

use std::time::Duration;

use atoll_api::names::SYSTEM_NAMESPACE;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use rand::Rng as _;
use tokio::time::Instant;

/// The Lease hub replicas elect their leader with, in [`SYSTEM_NAMESPACE`].
pub const LEASE_NAME: &str = "atoll-hub";

/// Why the election's settings are refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TimingError {
    #[error("--{0} must be more than zero")]
    Zero(&'static str),
    #[error(
        "--leader-renew-deadline ({renew:?}) must be shorter than --leader-lease-duration ({lease:?}): a leader must give up before another replica may take over"
    )]
    RenewNotBeforeExpiry { renew: Duration, lease: Duration },
    #[error(
        "--leader-retry-period ({retry:?}) must be shorter than --leader-renew-deadline ({renew:?}): a leader must be able to try to renew before it gives up"
    )]
    RetryNotBeforeDeadline { retry: Duration, renew: Duration },
    #[error("--leader-lease-duration ({0:?}) is longer than a Lease holds (i32 seconds)")]
    TooLong(Duration),
}

/// How long a Lease lasts, how long a leader tries to renew it before giving up, and how often
/// candidates and the leader try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl Default for Timing {
    /// client-go's defaults: 15 s, 10 s, 2 s.
    fn default() -> Self {
        Timing {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl Timing {
    /// Settings, checked: each more than zero, retry < renew deadline < lease duration.
    pub fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Result<Self, TimingError> {
        for (flag, value) in [
            ("leader-lease-duration", lease_duration),
            ("leader-renew-deadline", renew_deadline),
            ("leader-retry-period", retry_period),
        ] {
            if value.is_zero() {
                return Err(TimingError::Zero(flag));
            }
        }
        if renew_deadline >= lease_duration {
            return Err(TimingError::RenewNotBeforeExpiry {
                renew: renew_deadline,
                lease: lease_duration,
            });
        }
        if retry_period >= renew_deadline {
            return Err(TimingError::RetryNotBeforeDeadline {
                retry: retry_period,
                renew: renew_deadline,
            });
        }
        if i32::try_from(lease_duration.as_secs()).is_err() {
            return Err(TimingError::TooLong(lease_duration));
        }
        Ok(Timing {
            lease_duration,
            renew_deadline,
            retry_period,
        })
    }

    /// The Lease's `leaseDurationSeconds` (at least one).
    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }
}

/// What a Lease says, as the election reads it (its `spec`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// Who holds it; empty when nobody does.
    pub holder: String,
    /// How long it lasts after its last renewal, in seconds, as its holder set it.
    pub lease_duration_seconds: i32,
    pub acquire_time: Option<Timestamp>,
    pub renew_time: Option<Timestamp>,
    /// How many times it changed hands.
    pub transitions: i32,
}

impl Record {
    /// The record of `lease`.
    pub fn of(lease: &Lease) -> Record {
        let spec = lease.spec.clone().unwrap_or_default();
        Record {
            holder: spec.holder_identity.unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquire_time: spec.acquire_time.map(|t| t.0),
            renew_time: spec.renew_time.map(|t| t.0),
            transitions: spec.lease_transitions.unwrap_or(0),
        }
    }

    fn spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: (!self.holder.is_empty()).then(|| self.holder.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.map(MicroTime),
            renew_time: self.renew_time.map(MicroTime),
            lease_transitions: Some(self.transitions),
            ..LeaseSpec::default()
        }
    }
}

/// The Lease as this candidate last saw it, and when (by its own monotonic clock) it last saw it
/// change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    pub record: Record,
    pub at: Instant,
}

impl Observed {
    /// Takes in `record`, read at `now`: the observation time moves only when the record changed.
    pub fn see(previous: Option<Observed>, record: Record, now: Instant) -> Observed {
        match previous {
            Some(seen) if seen.record == record => seen,
            _ => Observed { record, at: now },
        }
    }

    /// When the holder's lease runs out, by this candidate's clock.
    pub fn expires(&self) -> Instant {
        let seconds = u64::try_from(self.record.lease_duration_seconds).unwrap_or(0);
        self.at + Duration::from_secs(seconds)
    }
}

/// What a candidate does with the Lease it read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Take it: nobody holds it, or its holder let it run out.
    Acquire,
    /// It is this candidate's: renew it.
    Renew,
    /// Another replica holds it and it has not run out.
    Wait { holder: String },
}

/// Whether `identity` may take or renew the Lease as observed (`None`: there is none), at `now`.
pub fn decide(identity: &str, observed: Option<&Observed>, now: Instant) -> Decision {
    let Some(observed) = observed else {
        return Decision::Acquire;
    };
    let holder = &observed.record.holder;
    if holder == identity {
        Decision::Renew
    } else if holder.is_empty() || now >= observed.expires() {
        Decision::Acquire
    } else {
        Decision::Wait {
            holder: holder.clone(),
        }
    }
}

/// The record `identity` writes after `decision` on what it observed, at wall-clock `now`.
pub fn next_record(
    identity: &str,
    observed: Option<&Record>,
    decision: &Decision,
    timing: &Timing,
    now: Timestamp,
) -> Option<Record> {
    let transitions = observed.map_or(0, |r| r.transitions);
    match decision {
        Decision::Wait { .. } => None,
        Decision::Renew => Some(Record {
            holder: identity.to_owned(),
            lease_duration_seconds: timing.lease_seconds(),
            acquire_time: observed.and_then(|r| r.acquire_time).or(Some(now)),
            renew_time: Some(now),
            transitions,
        }),
        Decision::Acquire => Some(Record {
            holder: identity.to_owned(),
            lease_duration_seconds: timing.lease_seconds(),
            acquire_time: Some(now),
            renew_time: Some(now),
            // A first Lease starts at zero; taking one over from anyone else is a transition.
            transitions: match observed {
                None => 0,
                Some(r) if r.holder == identity => r.transitions,
                Some(r) => r.transitions.saturating_add(1),
            },
        }),
    }
}

/// Whether a leader that last renewed at `renewed` must give up at `now`.
pub fn must_give_up(renewed: Instant, now: Instant, timing: &Timing) -> bool {
    now.saturating_duration_since(renewed) >= timing.renew_deadline
}

/// A wait of `period` plus up to 1.2 times as much, as client-go jitters its retries, so that
/// candidates that started together do not keep colliding.
pub fn jittered(period: Duration) -> Duration {
    period.mul_f64(1.0 + rand::rng().random_range(0.0..1.2))
}

/// A name for this process, unique among the replicas: the host's name (a pod's name, in a
/// Deployment) and a random suffix, so that a restarted process is never taken for its
/// predecessor.
pub fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "hub".to_owned());
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    let suffix: String = (0..8)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect();
    format!("{host}_{suffix}")
}

/// Why a try at the Lease failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read or write Lease {SYSTEM_NAMESPACE}/{LEASE_NAME}")]
    Api(#[source] kube::Error),
    #[error("no answer about Lease {SYSTEM_NAMESPACE}/{LEASE_NAME} within {0:?}")]
    Timeout(Duration),
}

/// How one try at the Lease ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tried {
    /// This candidate holds it now.
    Holds,
    /// Another one does (or wrote it first).
    Held { holder: String },
}

/// Why a leader stopped leading.
#[derive(Debug)]
pub enum Lost {
    /// The Lease names another holder.
    TakenBy(String),
    /// It could not renew it within the renew deadline; the last error, if there was one.
    NotRenewed {
        deadline: Duration,
        error: Option<Error>,
    },
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lost::TakenBy(holder) => write!(f, "the Lease is now held by {holder}"),
            Lost::NotRenewed { deadline, error } => {
                write!(f, "the Lease could not be renewed within {deadline:?}")?;
                if let Some(error) = error {
                    write!(f, ": {}", atoll_apiserver::error::chain(error))?;
                }
                Ok(())
            }
        }
    }
}

/// One candidate in the election.
pub struct Elector {
    api: Api<Lease>,
    identity: String,
    timing: Timing,
    observed: Option<Observed>,
}

impl Elector {
    /// A candidate named `identity` for the Lease on `client`'s API server.
    pub fn new(client: kube::Client, identity: String, timing: Timing) -> Self {
        Elector {
            api: Api::namespaced(client, SYSTEM_NAMESPACE),
            identity,
            timing,
            observed: None,
        }
    }

    /// How this candidate takes and renews the Lease.
    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// This candidate's name, as the Lease holds it.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Reads the Lease and takes or renews it if [`decide`] says so, within `within`.
    pub async fn try_once(&mut self, within: Duration) -> Result<Tried, Error> {
        match tokio::time::timeout(within, self.try_acquire_or_renew()).await {
            Ok(tried) => tried,
            Err(_) => Err(Error::Timeout(within)),
        }
    }

    async fn try_acquire_or_renew(&mut self) -> Result<Tried, Error> {
        let current = self.api.get_opt(LEASE_NAME).await.map_err(Error::Api)?;
        let now = Instant::now();
        let (version, observed_record) = match &current {
            Some(lease) => {
                let record = Record::of(lease);
                self.observed = Some(Observed::see(self.observed.take(), record.clone(), now));
                (lease.metadata.resource_version.clone(), Some(record))
            }
            None => {
                self.observed = None;
                (None, None)
            }
        };
        let decision = decide(&self.identity, self.observed.as_ref(), now);
        if let Decision::Wait { holder } = decision {
            return Ok(Tried::Held { holder });
        }
        let Some(record) = next_record(
            &self.identity,
            observed_record.as_ref(),
            &decision,
            &self.timing,
            Timestamp::now(),
        ) else {
            return Ok(Tried::Held {
                holder: String::new(),
            });
        };
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(LEASE_NAME.to_owned()),
                namespace: Some(SYSTEM_NAMESPACE.to_owned()),
                resource_version: version.clone(),
                ..ObjectMeta::default()
            },
            spec: Some(record.spec()),
        };
        let written = match version {
            None => self.api.create(&PostParams::default(), &lease).await,
            Some(_) => {
                self.api
                    .replace(LEASE_NAME, &PostParams::default(), &lease)
                    .await
            }
        };
        match written {
            Ok(_) => {
                self.observed = Some(Observed { record, at: now });
                Ok(Tried::Holds)
            }
            // Another candidate wrote first (a create or a resourceVersion that moved on).
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(Tried::Held {
                holder: observed_record.map(|r| r.holder).unwrap_or_default(),
            }),
            Err(error) => Err(Error::Api(error)),
        }
    }

    /// Tries every (jittered) retry period until this candidate holds the Lease.
    pub async fn acquire(&mut self) {
        let mut announced = None::<String>;
        loop {
            match self.try_once(self.timing.renew_deadline).await {
                Ok(Tried::Holds) => return,
                Ok(Tried::Held { holder }) => {
                    if announced.as_deref() != Some(holder.as_str()) {
                        tracing::info!(identity = %self.identity, %holder, lease = %format!("{SYSTEM_NAMESPACE}/{LEASE_NAME}"), "another replica leads; waiting to take over");
                        announced = Some(holder);
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %atoll_apiserver::error::chain(&error), "cannot try to take the leader Lease; retrying");
                }
            }
            tokio::time::sleep(jittered(self.timing.retry_period)).await;
        }
    }

    /// Renews the Lease every retry period; returns when leadership is lost.
    pub async fn hold(&mut self) -> Lost {
        let mut renewed = Instant::now();
        let mut last_error = None;
        loop {
            tokio::time::sleep(self.timing.retry_period).await;
            let left = self.timing.renew_deadline.saturating_sub(renewed.elapsed());
            if left.is_zero() {
                return Lost::NotRenewed {
                    deadline: self.timing.renew_deadline,
                    error: last_error,
                };
            }
            match self.try_once(left).await {
                Ok(Tried::Holds) => {
                    renewed = Instant::now();
                    last_error = None;
                }
                Ok(Tried::Held { holder }) if !holder.is_empty() && holder != self.identity => {
                    return Lost::TakenBy(holder);
                }
                Ok(Tried::Held { .. }) => {}
                Err(error) => {
                    tracing::warn!(error = %atoll_apiserver::error::chain(&error), "cannot renew the leader Lease; retrying");
                    last_error = Some(error);
                }
            }
            if must_give_up(renewed, Instant::now(), &self.timing) {
                return Lost::NotRenewed {
                    deadline: self.timing.renew_deadline,
                    error: last_error,
                };
            }
        }
    }

    /// Lets go of the Lease if this candidate holds it, so that another replica takes over at
    /// its next try (client-go's ReleaseOnCancel).
    pub async fn release(&mut self) -> Result<(), Error> {
        let within = self.timing.renew_deadline;
        let release = async {
            let Some(lease) = self.api.get_opt(LEASE_NAME).await.map_err(Error::Api)? else {
                return Ok(());
            };
            let record = Record::of(&lease);
            if record.holder != self.identity {
                return Ok(());
            }
            let now = Timestamp::now();
            let released = Record {
                holder: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(now),
                renew_time: Some(now),
                transitions: record.transitions,
            };
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(LEASE_NAME.to_owned()),
                    namespace: Some(SYSTEM_NAMESPACE.to_owned()),
                    resource_version: lease.metadata.resource_version.clone(),
                    ..ObjectMeta::default()
                },
                spec: Some(released.spec()),
            };
            self.api
                .replace(LEASE_NAME, &PostParams::default(), &lease)
                .await
                .map_err(Error::Api)?;
            Ok(())
        };
        match tokio::time::timeout(within, release).await {
            Ok(released) => released,
            Err(_) => Err(Error::Timeout(within)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "hub-a_1234abcd";
    const OTHER: &str = "hub-b_5678efgh";

    fn held_by(holder: &str, seconds: i32, transitions: i32) -> Record {
        Record {
            holder: holder.to_owned(),
            lease_duration_seconds: seconds,
            acquire_time: Some(Timestamp::UNIX_EPOCH),
            renew_time: Some(Timestamp::UNIX_EPOCH),
            transitions,
        }
    }

    #[test]
    fn timing_is_checked() {
        let s = Duration::from_secs;
        assert_eq!(Timing::new(s(15), s(10), s(2)).unwrap(), Timing::default());
        assert_eq!(
            Timing::new(s(10), s(10), s(2)),
            Err(TimingError::RenewNotBeforeExpiry {
                renew: s(10),
                lease: s(10)
            })
        );
        assert!(
            Timing::new(s(10), s(15), s(2))
                .unwrap_err()
                .to_string()
                .contains("--leader-renew-deadline (15s) must be shorter than --leader-lease-duration (10s)")
        );
        assert_eq!(
            Timing::new(s(15), s(2), s(2)),
            Err(TimingError::RetryNotBeforeDeadline {
                retry: s(2),
                renew: s(2)
            })
        );
        assert_eq!(
            Timing::new(s(15), s(10), s(0)),
            Err(TimingError::Zero("leader-retry-period"))
        );
        assert_eq!(
            Timing::new(s(0), s(10), s(2)),
            Err(TimingError::Zero("leader-lease-duration"))
        );
    }

    #[test]
    fn a_missing_or_released_lease_is_taken() {
        let now = Instant::now();
        assert_eq!(decide(ME, None, now), Decision::Acquire);
        let released = Observed {
            record: held_by("", 1, 3),
            at: now,
        };
        assert_eq!(decide(ME, Some(&released), now), Decision::Acquire);
    }

    #[test]
    fn anothers_lease_is_waited_for_until_it_runs_out_by_this_candidates_clock() {
        let seen = Instant::now();
        let observed = Observed {
            record: held_by(OTHER, 15, 0),
            at: seen,
        };
        let wait = Decision::Wait {
            holder: OTHER.to_owned(),
        };
        assert_eq!(decide(ME, Some(&observed), seen), wait);
        assert_eq!(
            decide(ME, Some(&observed), seen + Duration::from_millis(14_999)),
            wait
        );
        assert_eq!(
            decide(ME, Some(&observed), seen + Duration::from_secs(15)),
            Decision::Acquire
        );
        // The holder's renewTime (here 1970) is not trusted: only when the record was seen.
        assert_eq!(observed.record.renew_time, Some(Timestamp::UNIX_EPOCH));
    }

    #[test]
    fn a_renewal_seen_restarts_the_clock_and_an_unchanged_record_does_not() {
        let t0 = Instant::now();
        let first = Observed::see(None, held_by(OTHER, 15, 0), t0);
        let same = Observed::see(
            Some(first.clone()),
            held_by(OTHER, 15, 0),
            t0 + Duration::from_secs(10),
        );
        assert_eq!(
            same.at, t0,
            "an unchanged record keeps its observation time"
        );
        assert_eq!(
            decide(ME, Some(&same), t0 + Duration::from_secs(16)),
            Decision::Acquire
        );
        let mut renewed = held_by(OTHER, 15, 0);
        renewed.renew_time = Some(Timestamp::from_second(10).unwrap());
        let moved = Observed::see(Some(same), renewed, t0 + Duration::from_secs(10));
        assert_eq!(moved.at, t0 + Duration::from_secs(10));
        assert_eq!(
            decide(ME, Some(&moved), t0 + Duration::from_secs(16)),
            Decision::Wait {
                holder: OTHER.to_owned()
            }
        );
    }

    #[test]
    fn a_lease_without_a_duration_has_run_out() {
        let now = Instant::now();
        let observed = Observed {
            record: held_by(OTHER, 0, 0),
            at: now,
        };
        assert_eq!(decide(ME, Some(&observed), now), Decision::Acquire);
    }

    #[test]
    fn the_holder_renews_keeping_its_acquire_time_and_a_takeover_counts_a_transition() {
        let timing = Timing::default();
        let now = Timestamp::from_second(1_000).unwrap();
        let mine = held_by(ME, 15, 4);
        let observed = Observed {
            record: mine.clone(),
            at: Instant::now(),
        };
        assert_eq!(decide(ME, Some(&observed), Instant::now()), Decision::Renew);
        let renewed = next_record(ME, Some(&mine), &Decision::Renew, &timing, now).unwrap();
        assert_eq!(renewed.acquire_time, Some(Timestamp::UNIX_EPOCH));
        assert_eq!(renewed.renew_time, Some(now));
        assert_eq!(renewed.transitions, 4);
        assert_eq!(renewed.lease_duration_seconds, 15);

        let theirs = held_by(OTHER, 15, 4);
        let taken = next_record(ME, Some(&theirs), &Decision::Acquire, &timing, now).unwrap();
        assert_eq!(taken.holder, ME);
        assert_eq!(taken.acquire_time, Some(now));
        assert_eq!(taken.transitions, 5);

        let first = next_record(ME, None, &Decision::Acquire, &timing, now).unwrap();
        assert_eq!(first.transitions, 0);
        let wait = Decision::Wait {
            holder: OTHER.to_owned(),
        };
        assert_eq!(next_record(ME, Some(&theirs), &wait, &timing, now), None);
    }

    #[test]
    fn a_leader_gives_up_once_it_has_not_renewed_within_the_deadline() {
        let timing = Timing::default();
        let renewed = Instant::now();
        assert!(!must_give_up(renewed, renewed, &timing));
        assert!(!must_give_up(
            renewed,
            renewed + Duration::from_millis(9_999),
            &timing
        ));
        assert!(must_give_up(
            renewed,
            renewed + Duration::from_secs(10),
            &timing
        ));
        // It gives up before another candidate may take over (the lease duration).
        assert!(timing.renew_deadline < timing.lease_duration);
    }

    #[test]
    fn a_lease_round_trips_through_its_spec() {
        let record = held_by(ME, 15, 2);
        let lease = Lease {
            metadata: ObjectMeta::default(),
            spec: Some(record.spec()),
        };
        assert_eq!(Record::of(&lease), record);
        let nobody = Record {
            holder: String::new(),
            ..record
        };
        let spec = nobody.spec();
        assert_eq!(spec.holder_identity, None);
    }

    #[test]
    fn identities_are_unique_per_process() {
        let (a, b) = (identity(), identity());
        assert_ne!(a, b);
        let (host, suffix) = a.rsplit_once('_').unwrap();
        assert!(!host.is_empty());
        assert_eq!(suffix.len(), 8);
    }

    #[test]
    fn retries_are_jittered_within_client_gos_bounds() {
        let period = Duration::from_secs(2);
        for _ in 0..100 {
            let wait = jittered(period);
            assert!(wait >= period && wait < period.mul_f64(2.2), "{wait:?}");
        }
    }
}
