//! The agent's work queue of Work names, as kube-runtime's scheduler keeps one for a controller:
//! a name waits at most once however often it is added, one worker at a time has it, and a name
//! added while a worker has it waits again until that worker is done. Workers read the latest
//! version of a Work when they take it, so the queue carries names, never versions: what the hub
//! sends is applied in the end whatever order the workers run in.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::works::lock;

/// How many Works the agent applies at once.
pub const CONCURRENCY: usize = 8;

#[derive(Default)]
pub struct Queue {
    state: Mutex<State>,
    ready: Notify,
}

#[derive(Default)]
struct State {
    /// Names waiting, oldest first; each is in `waiting` too.
    order: VecDeque<String>,
    /// Whether each waiting name is to be applied again even at the version already applied.
    waiting: HashMap<String, bool>,
    /// Names a worker has; `Some` when added again meanwhile (with its `again` flag).
    busy: HashMap<String, Option<bool>>,
}

impl Queue {
    /// Adds `name`; `again` asks for an apply even when its version is already applied (drift
    /// correction and resyncs). A name already waiting keeps its place and gains `again`.
    pub fn add(&self, name: &str, again: bool) {
        let mut state = lock(&self.state);
        if let Some(busy) = state.busy.get_mut(name) {
            *busy = Some(busy.unwrap_or(false) || again);
            return;
        }
        match state.waiting.get_mut(name) {
            Some(waiting) => *waiting |= again,
            None => {
                state.waiting.insert(name.to_owned(), again);
                state.order.push_back(name.to_owned());
                drop(state);
                self.ready.notify_one();
            }
        }
    }

    /// Waits for a name no worker has, and takes it until the returned guard drops.
    pub async fn next(&self) -> Taken<'_> {
        loop {
            {
                let mut state = lock(&self.state);
                if let Some(name) = state.order.pop_front() {
                    let again = state.waiting.remove(&name).unwrap_or(false);
                    state.busy.insert(name.clone(), None);
                    return Taken {
                        queue: self,
                        name,
                        again,
                        finished: false,
                    };
                }
            }
            self.ready.notified().await;
        }
    }

    /// How many names wait.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        lock(&self.state).order.len()
    }

    /// Gives `name` back: it waits again when it was added meanwhile, or when its worker did not
    /// finish (a session that ended mid-apply).
    fn release(&self, name: &str, finished: bool, again: bool) {
        let mut state = lock(&self.state);
        let added = state.busy.remove(name).flatten();
        let requeue = match (added, finished) {
            (Some(added), _) => Some(added),
            (None, false) => Some(again),
            (None, true) => None,
        };
        if let Some(again) = requeue {
            state.waiting.insert(name.to_owned(), again);
            state.order.push_back(name.to_owned());
            drop(state);
            self.ready.notify_one();
        }
    }
}

/// A name a worker has.
pub struct Taken<'a> {
    queue: &'a Queue,
    pub name: String,
    /// Apply even when the version is already applied.
    pub again: bool,
    finished: bool,
}

impl Taken<'_> {
    /// The worker is done with the name (whatever the outcome: a failure waits for the next
    /// resync, as it did before the queue).
    pub fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.queue.release(&self.name, self.finished, self.again);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_name_waits_once_and_gains_again() {
        let queue = Queue::default();
        queue.add("a", false);
        queue.add("b", false);
        queue.add("a", true);
        assert_eq!(queue.waiting(), 2);
        let a = queue.next().await;
        assert_eq!((a.name.as_str(), a.again), ("a", true));
        a.finish();
        let b = queue.next().await;
        assert_eq!((b.name.as_str(), b.again), ("b", false));
        b.finish();
        assert_eq!(queue.waiting(), 0);
    }

    #[tokio::test]
    async fn a_name_added_while_taken_waits_until_its_worker_is_done() {
        let queue = Queue::default();
        queue.add("a", false);
        let a = queue.next().await;
        queue.add("a", false);
        queue.add("a", true);
        // Not handed to a second worker while the first has it.
        assert_eq!(queue.waiting(), 0);
        a.finish();
        let again = queue.next().await;
        assert_eq!((again.name.as_str(), again.again), ("a", true));
        again.finish();
        assert_eq!(queue.waiting(), 0);
    }

    #[tokio::test]
    async fn a_name_whose_worker_stopped_midway_waits_again() {
        let queue = Queue::default();
        queue.add("a", true);
        drop(queue.next().await);
        let retried = queue.next().await;
        assert_eq!((retried.name.as_str(), retried.again), ("a", true));
        retried.finish();
    }

    #[tokio::test]
    async fn a_waiting_worker_wakes_when_a_name_arrives() {
        let queue = std::sync::Arc::new(Queue::default());
        let worker = tokio::spawn({
            let queue = queue.clone();
            async move {
                let taken = queue.next().await;
                let name = taken.name.clone();
                taken.finish();
                name
            }
        });
        tokio::task::yield_now().await;
        queue.add("late", false);
        assert_eq!(worker.await.unwrap(), "late");
    }
}
