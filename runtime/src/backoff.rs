//! Per-object error backoff shared by atoll's controllers (the hub's and those inside the API
//! server): 500 ms after the first failure in a row, doubling up to 256 s (and never past five
//! minutes), as kube's controllers back off per work-queue item instead of retrying on a timer.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::time::{Duration, Instant};

/// The longest wait before an object whose reconciles keep failing is tried again.
pub const MAX_DELAY: Duration = Duration::from_secs(300);

/// The wait after the `n`th failure in a row.
fn delay(n: u32) -> Duration {
    Duration::from_millis(250)
        .saturating_mul(1 << n.min(10))
        .min(MAX_DELAY)
}

/// Counts one more failure of `key` in a row; returns how many there were and how long to wait.
pub fn after_failure<K: Hash + Eq + Clone>(
    failures: &mut HashMap<K, u32>,
    key: &K,
) -> (u32, Duration) {
    let n = failures.entry(key.clone()).or_default();
    *n = n.saturating_add(1);
    (*n, delay(*n))
}

/// The keys whose last reconcile failed, each due again after its backoff: for a controller
/// that runs passes over what changed, where a failed key must neither wait for an event about
/// it nor be tried again at every pass (each try of a write a policy refuses is logged and
/// audited).
#[derive(Debug)]
pub struct Retries<K> {
    failing: BTreeMap<K, Failing>,
}

#[derive(Debug, Clone, Copy)]
struct Failing {
    /// Failures in a row.
    failures: u32,
    due: Instant,
}

impl<K> Default for Retries<K> {
    fn default() -> Self {
        Retries {
            failing: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Clone> Retries<K> {
    /// Records that `key` failed at `now`: it is due again after its backoff. Returns how many
    /// failures in a row it has had and that wait.
    pub fn failed(&mut self, key: K, now: Instant) -> (u32, Duration) {
        let failures = self
            .failing
            .get(&key)
            .map_or(1, |f| f.failures.saturating_add(1));
        let wait = delay(failures);
        self.failing.insert(
            key,
            Failing {
                failures,
                due: now + wait,
            },
        );
        (failures, wait)
    }

    /// Forgets `key`: its reconcile succeeded, or it is gone.
    pub fn succeeded(&mut self, key: &K) {
        self.failing.remove(key);
    }

    /// The failing keys due at `now`. They stay counted until they succeed or fail again.
    pub fn due(&self, now: Instant) -> Vec<K> {
        self.failing
            .iter()
            .filter(|(_, f)| f.due <= now)
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// How long after `now` the next failing key is due (zero when one is due already); `None`
    /// when nothing is failing.
    pub fn next_in(&self, now: Instant) -> Option<Duration> {
        self.failing
            .values()
            .map(|f| f.due.saturating_duration_since(now))
            .min()
    }

    /// Every failing key, due or not.
    pub fn failing(&self) -> impl Iterator<Item = &K> {
        self.failing.keys()
    }

    pub fn is_empty(&self) -> bool {
        self.failing.is_empty()
    }

    pub fn len(&self) -> usize {
        self.failing.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_its_cap() {
        let mut failures = HashMap::new();
        assert_eq!(
            after_failure(&mut failures, &"a"),
            (1, Duration::from_millis(500))
        );
        assert_eq!(
            after_failure(&mut failures, &"a"),
            (2, Duration::from_secs(1))
        );
        for _ in 0..20 {
            after_failure(&mut failures, &"a");
        }
        assert_eq!(
            after_failure(&mut failures, &"a").1,
            Duration::from_secs(256)
        );
        assert_eq!(after_failure(&mut failures, &"b").0, 1);
    }

    #[test]
    fn a_failing_key_is_due_after_its_backoff_and_forgotten_when_it_succeeds() {
        let start = Instant::now();
        let mut retries = Retries::default();
        assert_eq!(retries.next_in(start), None);
        assert_eq!(
            retries.failed("ns-a", start),
            (1, Duration::from_millis(500))
        );
        assert!(retries.due(start).is_empty(), "not due before its wait");
        assert_eq!(retries.next_in(start), Some(Duration::from_millis(500)));
        let later = start + Duration::from_millis(500);
        assert_eq!(retries.due(later), vec!["ns-a"]);
        assert_eq!(retries.next_in(later), Some(Duration::ZERO));

        // Failing again doubles the wait, counted from the new failure.
        assert_eq!(retries.failed("ns-a", later), (2, Duration::from_secs(1)));
        assert!(retries.due(later + Duration::from_millis(999)).is_empty());
        assert_eq!(retries.due(later + Duration::from_secs(1)), vec!["ns-a"]);

        // Another key has a backoff of its own; the soonest decides the wait.
        retries.failed("ns-b", later);
        assert_eq!(retries.next_in(later), Some(Duration::from_millis(500)));
        assert_eq!(retries.len(), 2);

        retries.succeeded(&"ns-a");
        retries.succeeded(&"ns-b");
        assert!(retries.is_empty());
        assert_eq!(retries.next_in(later), None);
        // A key that failed, succeeded and fails again starts from the first wait.
        assert_eq!(retries.failed("ns-a", later).0, 1);
    }

    #[test]
    fn a_key_that_keeps_failing_waits_at_most_the_cap() {
        let mut now = Instant::now();
        let mut retries = Retries::default();
        let mut waits = Vec::new();
        for _ in 0..40 {
            let (_, wait) = retries.failed("csr", now);
            waits.push(wait);
            now += wait;
        }
        assert!(waits.windows(2).all(|w| w[0] <= w[1]), "{waits:?}");
        assert_eq!(*waits.last().unwrap(), Duration::from_secs(256));
        assert!(waits.iter().all(|w| *w <= MAX_DELAY));
    }
}
