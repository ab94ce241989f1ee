//! A per-object work queue with delays, for the hub's controllers that are not driven by a watch
//! of their own (kube-runtime's `Controller` needs a store of the whole objects; these read the
//! hub's own indexes instead). The same ideas as kube-runtime's scheduler and applier: a key
//! waits at most once, at its earliest due time; one worker at a time has a key, and a key added
//! while a worker has it waits again until that worker is done; a failed reconcile is tried
//! again after a per-key backoff ([`atoll_runtime::backoff`]); a reconcile may ask to be run again after
//! a delay; at most `concurrency` reconciles run at once, each in a span named after its key.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt::Display;
use std::future::Future;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tracing::Instrument as _;

pub struct Queue<K> {
    state: Mutex<State<K>>,
    changed: Notify,
}

struct State<K> {
    /// Keys by due time; an entry whose time is not the key's in `waiting` is stale.
    due: BinaryHeap<Reverse<(Instant, K)>>,
    waiting: HashMap<K, Instant>,
    /// Keys a worker has; `Some` when added again meanwhile, with the earliest time asked.
    busy: HashMap<K, Option<Instant>>,
}

impl<K> Default for Queue<K> {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                due: BinaryHeap::new(),
                waiting: HashMap::new(),
                busy: HashMap::new(),
            }),
            changed: Notify::new(),
        }
    }
}

impl<K: Clone + Eq + Hash + Ord> Queue<K> {
    /// Runs `key` as soon as a worker is free.
    pub fn add(&self, key: K) {
        self.add_at(key, Instant::now());
    }

    /// Runs `key` once `delay` has passed, or sooner if it is added sooner.
    pub fn add_after(&self, key: K, delay: Duration) {
        self.add_at(key, Instant::now() + delay);
    }

    fn add_at(&self, key: K, at: Instant) {
        let mut state = lock(&self.state);
        if let Some(again) = state.busy.get_mut(&key) {
            *again = Some(again.map_or(at, |t| t.min(at)));
            return;
        }
        if state.waiting.get(&key).is_some_and(|t| *t <= at) {
            return;
        }
        state.waiting.insert(key.clone(), at);
        state.due.push(Reverse((at, key)));
        drop(state);
        self.changed.notify_waiters();
    }

    /// Waits for a due key no worker has, and takes it until [`Queue::done`].
    pub async fn next(&self) -> K {
        loop {
            let changed = self.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            let wake = {
                let mut state = lock(&self.state);
                let now = Instant::now();
                loop {
                    let Some(Reverse((at, key))) = state.due.peek().cloned() else {
                        break None;
                    };
                    if state.waiting.get(&key) != Some(&at) {
                        state.due.pop();
                        continue;
                    }
                    if at > now {
                        break Some(at);
                    }
                    state.due.pop();
                    state.waiting.remove(&key);
                    state.busy.insert(key.clone(), None);
                    return key;
                }
            };
            match wake {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    /// The worker is done with `key`: it waits again if it was added meanwhile.
    pub fn done(&self, key: &K) {
        let again = lock(&self.state).busy.remove(key).flatten();
        if let Some(at) = again {
            self.add_at(key.clone(), at);
        }
    }
}

/// Runs `reconcile` on the keys of `queue`, `concurrency` at a time, until `stop` turns true. A
/// reconcile answers how long until its key is to be looked at again (`None`: when it is next
/// added); a failure is logged and tried again after the key's backoff. Each reconcile is
/// counted and timed in `metrics`, under the controller name `what`.
pub async fn run<K, F, Fut, E>(
    queue: &Queue<K>,
    concurrency: usize,
    what: &'static str,
    metrics: &crate::metrics::Metrics,
    reconcile: F,
    mut stop: watch::Receiver<bool>,
) where
    K: Clone + Eq + Hash + Ord + Display,
    F: Fn(K) -> Fut,
    Fut: Future<Output = Result<Option<Duration>, E>>,
    E: Display,
{
    let failures: Mutex<HashMap<K, u32>> = Mutex::default();
    let worker = || async {
        loop {
            let key = queue.next().await;
            let span = tracing::info_span!("reconcile", kind = what, key = %key);
            let started = std::time::Instant::now();
            let outcome = reconcile(key.clone()).instrument(span).await;
            metrics.reconciled(what, outcome.is_ok(), started.elapsed());
            queue.done(&key);
            match outcome {
                Ok(again) => {
                    lock(&failures).remove(&key);
                    if let Some(delay) = again {
                        queue.add_after(key, delay);
                    }
                }
                Err(error) => {
                    let (attempts, delay) =
                        atoll_runtime::backoff::after_failure(&mut lock(&failures), &key);
                    tracing::warn!(kind = what, key = %key, %error, attempts, ?delay, "cannot reconcile; retrying");
                    queue.add_after(key, delay);
                }
            }
        }
    };
    let workers = futures::future::join_all((0..concurrency).map(|_| worker()));
    tokio::select! {
        _ = workers => {}
        _ = stop.wait_for(|s| *s) => {}
    }
}

/// Locks `mutex`, taking over a lock a panicking holder left.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn keys_come_due_in_order_and_once() {
        let queue = Queue::default();
        queue.add_after("late", Duration::from_secs(10));
        queue.add_after("soon", Duration::from_secs(1));
        queue.add_after("soon", Duration::from_secs(5));
        let started = Instant::now();
        assert_eq!(queue.next().await, "soon");
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        queue.done(&"soon");
        assert_eq!(queue.next().await, "late");
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_time_wins_and_wakes_the_waiting() {
        let queue = std::sync::Arc::new(Queue::default());
        queue.add_after("k", Duration::from_secs(60));
        let waiting = tokio::spawn({
            let queue = queue.clone();
            async move { queue.next().await }
        });
        tokio::task::yield_now().await;
        let started = Instant::now();
        queue.add_after("k", Duration::from_secs(2));
        assert_eq!(waiting.await.unwrap(), "k");
        assert_eq!(started.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_added_while_busy_waits_for_its_worker() {
        let queue = Queue::default();
        queue.add("k");
        assert_eq!(queue.next().await, "k");
        queue.add("k");
        let other = tokio::time::timeout(Duration::from_secs(1), queue.next()).await;
        assert!(other.is_err(), "handed to a second worker while busy");
        queue.done(&"k");
        assert_eq!(queue.next().await, "k");
    }

    #[tokio::test(start_paused = true)]
    async fn run_requeues_on_request_and_backs_off_on_failure() {
        let queue = Queue::default();
        let calls: Mutex<Vec<(&str, Instant)>> = Mutex::default();
        let (stop, stopped) = watch::channel(false);
        let started = Instant::now();
        queue.add("again");
        queue.add("failing");
        let reconcile = |key: &'static str| {
            lock(&calls).push((key, Instant::now()));
            let n = lock(&calls).iter().filter(|(k, _)| *k == key).count();
            async move {
                match key {
                    "again" if n < 3 => Ok(Some(Duration::from_secs(10))),
                    "again" => Ok(None),
                    _ if n < 3 => Err("no"),
                    _ => Ok(None),
                }
            }
        };
        let metrics = crate::metrics::Metrics::default();
        let ran = run(&queue, 2, "test", &metrics, reconcile, stopped);
        let stopper = async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            stop.send(true).unwrap();
        };
        tokio::join!(ran, stopper);
        let at = |key: &str| -> Vec<u64> {
            lock(&calls)
                .iter()
                .filter(|(k, _)| *k == key)
                .map(|(_, t)| t.duration_since(started).as_millis() as u64)
                .collect()
        };
        assert_eq!(at("again"), [0, 10_000, 20_000]);
        // Backoff: 500 ms after the first failure, then 1 s.
        assert_eq!(at("failing"), [0, 500, 1_500]);
    }
}
