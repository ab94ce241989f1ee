//! The API server's metrics, named as kube-apiserver names them, so that the dashboards and
//! alerts written for it read atoll's too:
//!
//! - `apiserver_request_total{verb, group, resource, subresource, code}`: requests answered;
//! - `apiserver_request_duration_seconds{verb, group, resource, subresource}`: how long they
//!   took (watches aside, which last as long as their client stays);
//! - `apiserver_storage_objects{resource}`: objects stored, by resource (`pods`,
//!   `deployments.apps`), counted as they are written rather than by a scan.
//!
//! Labels hold only what the server serves: a resource the catalog does not have, or a path
//! that is no resource, is `other` (a client cannot grow the label sets by asking for paths),
//! and a verb is one of kube-apiserver's.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric as _};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::watch::WatchCache;

/// The label of anything that is not a served resource.
pub const OTHER: &str = "other";

/// kube-apiserver's request duration buckets, thinned out (seconds).
const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
];

/// What a request was, as the metrics label it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub verb: &'static str,
    pub group: String,
    pub resource: String,
    pub subresource: String,
}

impl RequestLabels {
    /// A request to no served resource.
    pub fn other(verb: &'static str) -> Self {
        RequestLabels {
            verb,
            group: String::new(),
            resource: OTHER.to_owned(),
            subresource: String::new(),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Answered {
    verb: &'static str,
    group: String,
    resource: String,
    subresource: String,
    code: u16,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// One API server's metrics (the hub's; hosted clusters' servers run without).
#[derive(Debug)]
pub struct Metrics {
    requests: Family<Answered, Counter>,
    durations: Histograms<RequestLabels>,
    /// The serving server's watch cache, which knows the stored objects.
    cache: Mutex<Weak<WatchCache>>,
}

impl Metrics {
    /// Metrics registered in `registry`.
    pub fn register(registry: &mut Registry) -> Arc<Self> {
        let metrics = Arc::new(Metrics {
            requests: Family::default(),
            durations: Family::new_with_constructor(|| Histogram::new(DURATION_BUCKETS)),
            cache: Mutex::new(Weak::new()),
        });
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, group, resource, subresource and HTTP response code",
            metrics.requests.clone(),
        );
        registry.register_with_unit(
            "apiserver_request_duration",
            "Response latency distribution for each verb, group, resource and subresource (watches aside)",
            Unit::Seconds,
            metrics.durations.clone(),
        );
        registry.register_collector(Box::new(StorageObjects(metrics.clone())));
        metrics
    }

    /// Records a request answered with `code` after `elapsed`.
    pub fn observe(&self, labels: RequestLabels, code: u16, elapsed: Duration) {
        if labels.verb != "WATCH" {
            self.durations
                .get_or_create(&labels)
                .observe(elapsed.as_secs_f64());
        }
        let RequestLabels {
            verb,
            group,
            resource,
            subresource,
        } = labels;
        self.requests
            .get_or_create(&Answered {
                verb,
                group,
                resource,
                subresource,
                code,
            })
            .inc();
    }

    /// The watch cache of the server now serving.
    pub(crate) fn serving(&self, cache: &Arc<WatchCache>) {
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = Arc::downgrade(cache);
    }
}

/// `apiserver_storage_objects`, read from the watch cache at each scrape.
#[derive(Debug)]
struct StorageObjects(Arc<Metrics>);

impl Collector for StorageObjects {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let cache = self
            .0
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .upgrade();
        let family: Family<[(&'static str, String); 1], Gauge> = Family::default();
        for (resource, count) in cache.map(|c| c.object_counts()).unwrap_or_default() {
            family
                .get_or_create(&[("resource", resource)])
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        let metric = encoder.encode_descriptor(
            "apiserver_storage_objects",
            "Number of stored objects at the time of last check split by kind",
            None,
            family.metric_type(),
        )?;
        family.encode(metric)
    }
}

/// The resource a storage key belongs to, as `apiserver_storage_objects` names it: the plural
/// for the core group (`/registry/core/pods/...`), `plural.group` for the others.
pub(crate) fn resource_of_key(key: &str) -> Option<(&str, &str)> {
    let mut parts = key.strip_prefix("/registry/")?.splitn(3, '/');
    let group = parts.next()?;
    let plural = parts.next()?;
    parts.next()?;
    Some((group, plural))
}

/// `pods` or `deployments.apps`.
pub(crate) fn storage_resource(group: &str, plural: &str) -> String {
    if group == "core" {
        plural.to_owned()
    } else {
        format!("{plural}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_resource_as_kube_apiserver_does() {
        let of = |key| resource_of_key(key).map(|(g, p)| storage_resource(g, p));
        assert_eq!(of("/registry/core/pods/default/p"), Some("pods".into()));
        assert_eq!(
            of("/registry/apps/deployments/default/d"),
            Some("deployments.apps".into())
        );
        assert_eq!(
            of("/registry/core/namespaces/default"),
            Some("namespaces".into())
        );
        assert_eq!(of("/registry/core/pods"), None);
        assert_eq!(of("/other/x/y/z"), None);
    }
}
