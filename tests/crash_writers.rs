//! Writers that create ConfigMaps until the server under them is killed, and the check that every
//! write they saw acknowledged is still there after a restart: the crash tests of each backend.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use tokio::task::JoinHandle;

/// The (name, resourceVersion) of each create the server answered with success.
pub type Acknowledged = BTreeSet<(String, String)>;

/// `count` writers creating ConfigMaps `w<writer>-<seq>` through `cms`, each stopping at its first
/// failure (the kill) or after 100,000 writes.
pub struct CrashWriters {
    acknowledged: Arc<Mutex<Acknowledged>>,
    writers: Vec<JoinHandle<()>>,
}

impl CrashWriters {
    pub fn start(cms: &Api<ConfigMap>, count: usize) -> Self {
        let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
        let writers = (0..count)
            .map(|w| {
                let cms = cms.clone();
                let acknowledged = acknowledged.clone();
                tokio::spawn(async move {
                    for i in 0..100_000 {
                        let cm: ConfigMap = serde_json::from_value(json!({
                            "metadata": {"name": format!("w{w}-{i}")},
                            "data": {"writer": w.to_string(), "seq": i.to_string()},
                        }))
                        .unwrap();
                        match cms.create(&PostParams::default(), &cm).await {
                            Ok(created) => {
                                acknowledged.lock().unwrap().insert((
                                    created.name_any(),
                                    created.resource_version().unwrap(),
                                ));
                            }
                            Err(_) => return,
                        }
                    }
                })
            })
            .collect();
        Self {
            acknowledged,
            writers,
        }
    }

    /// Lets the writers run until `writes` are acknowledged or `limit` has passed.
    pub async fn run_until(&self, writes: usize, limit: Duration) {
        let start = Instant::now();
        while self.acknowledged.lock().unwrap().len() < writes && start.elapsed() < limit {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for every writer to stop (call it once the server is killed) and returns what was
    /// acknowledged, having checked that the writers got going.
    pub async fn stopped(self) -> Acknowledged {
        for writer in self.writers {
            writer.await.unwrap();
        }
        let acknowledged = self.acknowledged.lock().unwrap().clone();
        assert!(
            acknowledged.len() >= 100,
            "the writers got going: {}",
            acknowledged.len()
        );
        acknowledged
    }
}

/// Checks, on the restarted server, that every acknowledged write is stored at the version it was
/// acknowledged with, and that a new write gets a higher resourceVersion than any of them.
pub async fn assert_kept(cms: &Api<ConfigMap>, acknowledged: &Acknowledged) {
    let stored: Acknowledged = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| (c.name_any(), c.resource_version().unwrap()))
        .collect();
    let lost: Vec<_> = acknowledged.difference(&stored).take(10).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost, e.g. {lost:?}",
        acknowledged.difference(&stored).count()
    );

    // Revisions continue after the restart.
    let highest = acknowledged
        .iter()
        .map(|(_, rv)| rv.parse::<i64>().unwrap())
        .max()
        .unwrap();
    let after: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "after-restart"}})).unwrap();
    let after = cms.create(&PostParams::default(), &after).await.unwrap();
    assert!(after.resource_version().unwrap().parse::<i64>().unwrap() > highest);
}
