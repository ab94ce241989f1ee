//! Per-object error backoff shared by the hub's controllers: 500 ms after the first failure in a
//! row, doubling up to 256 s (and never past five minutes).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

/// The longest wait before an object whose reconciles keep failing is tried again.
pub const MAX_DELAY: Duration = Duration::from_secs(300);

/// Counts one more failure of `key` in a row; returns how many there were and how long to wait.
pub fn after_failure<K: Hash + Eq + Clone>(
    failures: &mut HashMap<K, u32>,
    key: &K,
) -> (u32, Duration) {
    let n = failures.entry(key.clone()).or_default();
    *n = n.saturating_add(1);
    let delay = Duration::from_millis(250)
        .saturating_mul(1 << (*n).min(10))
        .min(MAX_DELAY);
    (*n, delay)
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
}
