//! This cluster's Works: applied as the hub sends them, recorded in AppliedWorks (which also tell
//! the hub, after a reconnect, which version of each Work the agent has), cleaned up when the hub
//! deletes them, and their status reported back.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use tokio::sync::{mpsc, watch};

use atoll_api::names::{
    CONDITION_APPLIED, CONDITION_AVAILABLE, CONDITION_COMPLETE, CONDITION_DEGRADED,
    CONDITION_PROGRESSING,
};
use atoll_api::work::{
    AppliedResourceMeta, AppliedWork, AppliedWorkSpec, AppliedWorkStatus, DeletePropagationPolicy,
    ManifestCondition, ResourceIdentifier, ResourceRef, Work, WorkStatus,
};
use atoll_proto::v1::{WorkDelete, WorkStatusReport, WorkUpsert, WorkVersion};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams};

use crate::apply::{Applier, LABEL_APPLIED_BY, Outcome, Previous, describe};
use crate::queue::Queue;
use crate::{Error, FIELD_MANAGER, hub};

/// The largest Work status the agent reports; larger ones are trimmed, with a condition saying so.
pub const STATUS_MAX_BYTES: usize = 256 * 1024;
/// Work condition: the status was trimmed to fit.
pub const CONDITION_STATUS_TRIMMED: &str = "StatusTrimmed";

/// Annotation on an AppliedWork: the UID of its Work on the hub.
const ANNOTATION_WORK_UID: &str = "atoll.dev/work-uid";
/// Annotation on an AppliedWork: the Work generation last applied.
const ANNOTATION_WORK_GENERATION: &str = "atoll.dev/work-generation";
/// Annotation on an AppliedWork: what to do with its resources when the Work goes.
const ANNOTATION_DELETE_POLICY: &str = "atoll.dev/delete-propagation-policy";
/// Annotation on an AppliedWork: the `SelectivelyOrphan` rules, as JSON.
const ANNOTATION_ORPHANING_RULES: &str = "atoll.dev/orphaning-rules";
/// Annotation on an AppliedWork: the Work's values of `OnSpokeChange` ignored fields at the last
/// apply, as JSON by manifest ordinal and path.
const ANNOTATION_IGNORED_FIELDS: &str = "atoll.dev/ignored-fields";
/// Annotation on an AppliedWork: the UIDs of the objects that were in the cluster before the Work
/// first applied them (or that it only reads), as JSON; they stay when the Work lets them go.
const ANNOTATION_FOUND_OBJECTS: &str = "atoll.dev/found-objects";

/// Ignored-field values by manifest ordinal and path.
type IgnoredValues = HashMap<i32, BTreeMap<String, serde_json::Value>>;

/// Which resources stay in the cluster when their Work is deleted or no longer holds them (OCM's
/// delete propagation): none (`Foreground`), all (`Orphan`), or those the rules name
/// (`SelectivelyOrphan`, by group, resource, namespace and name); and, whatever the policy, the
/// objects the Work found in the cluster rather than created (by UID).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Orphaning {
    policy: DeletePropagationPolicy,
    rules: Vec<ResourceRef>,
    found: BTreeSet<String>,
}

impl Orphaning {
    /// What a Work's `deleteOption` says.
    pub fn of(work: &Work) -> Self {
        let option = work.spec.delete_option.clone().unwrap_or_default();
        Orphaning {
            policy: option.propagation_policy,
            rules: option
                .selectively_orphans
                .map(|s| s.orphaning_rules)
                .unwrap_or_default(),
            found: BTreeSet::new(),
        }
    }

    /// The same, knowing the objects the Work found in the cluster.
    fn with_found(mut self, found: BTreeSet<String>) -> Self {
        self.found = found;
        self
    }

    /// What an AppliedWork recorded.
    fn recorded(annotations: &BTreeMap<String, String>) -> Self {
        let policy = match annotations
            .get(ANNOTATION_DELETE_POLICY)
            .map(String::as_str)
        {
            Some("Orphan") => DeletePropagationPolicy::Orphan,
            Some("SelectivelyOrphan") => DeletePropagationPolicy::SelectivelyOrphan,
            _ => DeletePropagationPolicy::Foreground,
        };
        let rules = annotations
            .get(ANNOTATION_ORPHANING_RULES)
            .and_then(|r| serde_json::from_str(r).ok())
            .unwrap_or_default();
        Orphaning {
            policy,
            rules,
            found: found_objects(annotations),
        }
    }

    fn annotations(&self) -> [(String, String); 3] {
        let policy = match self.policy {
            DeletePropagationPolicy::Orphan => "Orphan",
            DeletePropagationPolicy::SelectivelyOrphan => "SelectivelyOrphan",
            DeletePropagationPolicy::Foreground => "Foreground",
        };
        [
            (ANNOTATION_DELETE_POLICY.to_owned(), policy.to_owned()),
            (
                ANNOTATION_ORPHANING_RULES.to_owned(),
                serde_json::to_string(&self.rules).unwrap_or_default(),
            ),
            (
                ANNOTATION_FOUND_OBJECTS.to_owned(),
                serde_json::to_string(&self.found).unwrap_or_default(),
            ),
        ]
    }

    /// Whether the resource stays when its Work lets it go.
    pub fn keeps(&self, id: &ResourceIdentifier) -> bool {
        match self.policy {
            DeletePropagationPolicy::Foreground => false,
            DeletePropagationPolicy::Orphan => true,
            DeletePropagationPolicy::SelectivelyOrphan => self.rules.iter().any(|r| {
                r.group == id.group
                    && r.resource == id.resource
                    && r.namespace == id.namespace
                    && r.name == id.name
            }),
        }
    }

    /// Splits resources into those to delete and those left in the cluster.
    fn split(&self, resources: Vec<AppliedResourceMeta>) -> (Vec<AppliedResourceMeta>, usize) {
        let before = resources.len();
        let delete: Vec<AppliedResourceMeta> = resources
            .into_iter()
            .filter(|r| {
                if self.found.contains(&r.uid) {
                    tracing::info!(resource = %describe(&r.identifier), "it was in the cluster before the Work applied it: it stays");
                    return false;
                }
                let keep = self.keeps(&r.identifier);
                if keep {
                    tracing::info!(resource = %describe(&r.identifier), "orphaned: it stays in the cluster");
                }
                !keep
            })
            .collect();
        let kept = before - delete.len();
        (delete, kept)
    }
}

/// The Works of one cluster.
pub struct Works {
    applier: Applier,
    member: kube::Client,
    cluster: String,
    /// The Works as the hub last sent them, for drift correction.
    sent: Mutex<HashMap<String, WorkUpsert>>,
    /// Works the hub deleted whose resources are still to go, by name.
    deleting: Mutex<HashMap<String, WorkDelete>>,
    /// The names of Works to apply or delete. One worker at a time has a name, so a Work's
    /// applies, re-applies and deletion run one at a time and a re-apply of the version before
    /// never lands after (or records over) the new one; other Works go on meanwhile.
    queue: Queue,
    /// Each Work's resourceVersions after its last apply, by manifest ordinal.
    versions: Mutex<HashMap<String, HashMap<i32, String>>>,
    /// What each Work's last report said: its fingerprint (timestamps left out) and the status.
    reported: Mutex<HashMap<String, (String, WorkStatus)>>,
    /// Which Work applied each object, and the object's resourceVersion after that apply.
    owners: Arc<Mutex<HashMap<ObjectKey, (String, String)>>>,
    /// The kinds watched for drift.
    watched: Mutex<HashSet<(String, String, String)>>,
    /// Works whose objects changed in the cluster, from the watches.
    changed: (
        mpsc::UnboundedSender<String>,
        tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
    ),
    /// Where applies are counted.
    metrics: Arc<crate::metrics::Metrics>,
    /// Ends the watches when the Works go.
    _stop: watch::Sender<()>,
    stopped: watch::Receiver<()>,
}

/// An applied object: group, kind, namespace, name.
type ObjectKey = (String, String, String, String);

impl Works {
    /// The Works of cluster `cluster` (its name on the hub), applied through `member`.
    pub fn new(member: kube::Client, cluster: &str, deny: crate::deny::Deny) -> Self {
        let (stop, stopped) = watch::channel(());
        Self {
            applier: Applier::new(member.clone(), deny),
            member,
            cluster: cluster.to_owned(),
            sent: Mutex::default(),
            deleting: Mutex::default(),
            queue: Queue::default(),
            versions: Mutex::default(),
            reported: Mutex::default(),
            owners: Arc::default(),
            watched: Mutex::default(),
            changed: {
                let (tx, rx) = mpsc::unbounded_channel();
                (tx, tokio::sync::Mutex::new(rx))
            },
            metrics: Arc::default(),
            _stop: stop,
            stopped,
        }
    }

    /// The same, counting into `metrics`.
    pub fn with_metrics(self, metrics: Arc<crate::metrics::Metrics>) -> Self {
        Self { metrics, ..self }
    }

    fn applied_works(&self) -> Api<AppliedWork> {
        Api::all(self.member.clone())
    }

    /// The Works this cluster has, as the hub should know them on (re)connect.
    pub async fn known(&self) -> Result<Vec<WorkVersion>, Error> {
        let list = self
            .applied_works()
            .list(&ListParams::default())
            .await
            .map_err(Error::member("AppliedWorks"))?;
        Ok(list
            .into_iter()
            .filter(|a| a.spec.work_namespace == self.cluster)
            .map(|a| {
                let annotations = a.metadata.annotations.clone().unwrap_or_default();
                WorkVersion {
                    name: a.spec.work_name.clone(),
                    uid: annotations
                        .get(ANNOTATION_WORK_UID)
                        .cloned()
                        .unwrap_or_default(),
                    generation: annotations
                        .get(ANNOTATION_WORK_GENERATION)
                        .and_then(|g| g.parse().ok())
                        .unwrap_or(0),
                }
            })
            .collect())
    }

    /// Takes a Work the hub sent: it is applied, unless this version already is, by a worker.
    pub fn upsert(&self, upsert: WorkUpsert) {
        let name = upsert.name.clone();
        let held = {
            let mut sent = lock(&self.sent);
            sent.insert(name.clone(), upsert);
            sent.len()
        };
        self.metrics.works_held(held);
        self.queue.add(&name, false);
    }

    /// Takes the deletion of a Work: a worker removes what it applied and tells the hub. A
    /// version sent since, of a Work made again under the same name, is applied after that.
    pub fn delete(&self, delete: WorkDelete) {
        let name = delete.name.clone();
        {
            let mut sent = lock(&self.sent);
            if sent.get(&name).is_none_or(|s| s.uid == delete.uid) {
                sent.remove(&name);
            }
            self.metrics.works_held(sent.len());
        }
        lock(&self.deleting).insert(name.clone(), delete);
        self.queue.add(&name, false);
    }

    /// Asks for Work `name` to be applied again (its objects changed in the cluster).
    pub fn reapply(&self, name: &str) {
        self.queue.add(name, true);
    }

    /// Asks for every Work the hub sent to be applied again, correcting drift (the Works that
    /// drifted are reported), and for deletions that failed to be tried again.
    pub fn resync(&self) {
        let names: Vec<String> = lock(&self.sent)
            .keys()
            .chain(lock(&self.deleting).keys())
            .cloned()
            .collect();
        for name in names {
            self.queue.add(&name, true);
        }
    }

    /// Applies and deletes Works as they are queued, `CONCURRENCY` at a time, until dropped.
    pub async fn work(&self, client: &hub::Client) {
        let worker = || async {
            let mut client = client.clone();
            loop {
                let taken = self.queue.next().await;
                if let Err(error) = self.reconcile(&mut client, &taken.name, taken.again).await {
                    tracing::warn!(work = %taken.name, %error, "cannot carry out what the hub sent");
                }
                taken.finish();
            }
        };
        futures::future::join_all((0..crate::queue::CONCURRENCY).map(|_| worker())).await;
    }

    /// Brings Work `name` to what the hub last said: deletes it if the hub deleted it, then
    /// applies the version the hub holds, if any. Its worker is the only one with the name.
    async fn reconcile(
        &self,
        client: &mut hub::Client,
        name: &str,
        again: bool,
    ) -> Result<(), Error> {
        let deleting = lock(&self.deleting).remove(name);
        if let Some(delete) = deleting
            && let Err(error) = self.remove(client, &delete).await
        {
            // Tried again at the next resync, unless a later deletion replaced it.
            lock(&self.deleting)
                .entry(name.to_owned())
                .or_insert(delete);
            return Err(error);
        }
        let Some(upsert) = lock(&self.sent).get(name).cloned() else {
            return Ok(());
        };
        self.apply(client, &upsert, again).await
    }

    /// Applies a Work (unless this generation is already applied and `resync` is off), deletes
    /// what it no longer holds, records it, and reports its status. The caller has its name
    /// from the queue.
    async fn apply(
        &self,
        client: &mut hub::Client,
        upsert: &WorkUpsert,
        resync: bool,
    ) -> Result<(), Error> {
        let work: Work = serde_json::from_slice(&upsert.work).map_err(|e| {
            Error::Hub(format!(
                "the hub sent Work {:?} that does not decode: {e}",
                upsert.name
            ))
        })?;
        let previous = self
            .applied_works()
            .get_opt(&upsert.name)
            .await
            .map_err(Error::member("AppliedWork"))?;
        let annotations = previous
            .as_ref()
            .and_then(|p| p.metadata.annotations.clone())
            .unwrap_or_default();
        // A version whose last report did not reach the hub (it restarted, say) is reported again.
        let unreported = lock(&self.reported)
            .get(&upsert.name)
            .is_some_and(|(fingerprint, _)| fingerprint.is_empty());
        if already_applied(&annotations, upsert) && !resync && !unreported {
            tracing::debug!(work = %upsert.name, generation = upsert.generation, "already applied");
            return Ok(());
        }
        let before = previous
            .and_then(|p| p.status)
            .map(|s| s.applied_resources)
            .unwrap_or_default();
        let outcomes = self
            .apply_manifests(&work, &upsert.name, resync, &annotations, &before)
            .await;
        let Holdings {
            orphaning,
            removed,
            mut applied,
        } = holdings(&work, before, &outcomes, found_objects(&annotations));
        let left = self.applier.delete(&removed).await;
        // Resources that could not be deleted stay on record, to be tried again.
        applied.extend(left.into_iter().map(|(r, error)| {
            tracing::warn!(resource = %describe(&r.identifier), %error, "cannot delete a resource the Work no longer holds");
            r
        }));
        self.record(
            &upsert.name,
            &upsert.uid,
            upsert.generation,
            (&orphaning, &ignored_of(&outcomes)),
            applied,
        )
        .await?;
        self.report_status(client, upsert, &work, &outcomes, resync)
            .await
    }

    /// Applies the manifests of Work `name`, whose AppliedWork has `annotations` and records
    /// `before` as applied; remembers the objects' resourceVersions (for the next resync, which
    /// `resync` says this is) and watches them.
    async fn apply_manifests(
        &self,
        work: &Work,
        name: &str,
        resync: bool,
        annotations: &BTreeMap<String, String>,
        before: &[AppliedResourceMeta],
    ) -> Vec<Outcome> {
        let last = if resync {
            lock(&self.versions).get(name).cloned().unwrap_or_default()
        } else {
            HashMap::new()
        };
        let ignored_before = ignored_values(annotations);
        let started = std::time::Instant::now();
        let outcomes = self
            .applier
            .apply(
                work,
                &Previous {
                    versions: &last,
                    ignored: &ignored_before,
                    applied: before,
                },
            )
            .await;
        self.metrics.applied(
            started.elapsed(),
            outcomes.iter().filter(|o| o.applied.is_err()).count(),
            outcomes.iter().filter(|o| o.drift_corrected).count(),
        );
        lock(&self.versions).insert(name.to_owned(), versions_of(&outcomes));
        self.watch_applied(name, &outcomes);
        outcomes
    }

    /// Reports the status of `work` after an apply, unless this is a resync and the hub already
    /// has the same status; keeps conditions' transition times from the last report.
    async fn report_status(
        &self,
        client: &mut hub::Client,
        upsert: &WorkUpsert,
        work: &Work,
        outcomes: &[Outcome],
        resync: bool,
    ) -> Result<(), Error> {
        let mut status = status_of(outcomes, work.metadata.generation);
        trim(&mut status, STATUS_MAX_BYTES);
        let fingerprint = fingerprint(&status);
        {
            let mut reported = lock(&self.reported);
            if let Some((last, before)) = reported.get(&upsert.name) {
                if resync && *last == fingerprint {
                    // Nothing drifted and no feedback moved: the status the hub has still holds.
                    return Ok(());
                }
                keep_transition_times(&mut status, before);
            }
            // Until the hub has it, the fingerprint is empty: the next sync or resync reports.
            reported.insert(upsert.name.clone(), (String::new(), status.clone()));
        }
        self.report(
            client,
            &upsert.name,
            &upsert.uid,
            upsert.generation,
            &status,
        )
        .await?;
        if let Some(entry) = lock(&self.reported).get_mut(&upsert.name) {
            entry.0 = fingerprint;
        }
        Ok(())
    }

    /// Records which Work applied each object and watches their kinds, so that a change made in
    /// the cluster brings the Work back at once rather than at the next resync.
    fn watch_applied(&self, work: &str, outcomes: &[Outcome]) {
        for o in outcomes.iter().filter(|o| o.applied.is_ok()) {
            let id = &o.identifier;
            let key = (
                id.group.clone(),
                id.kind.clone(),
                id.namespace.clone(),
                id.name.clone(),
            );
            let version = o.resource_version.clone().unwrap_or_default();
            lock(&self.owners).insert(key, (work.to_owned(), version));
            let kind = (id.group.clone(), id.version.clone(), id.kind.clone());
            if id.resource.is_empty() || !lock(&self.watched).insert(kind) {
                continue;
            }
            let gvk = GroupVersionKind::gvk(&id.group, &id.version, &id.kind);
            let resource = ApiResource::from_gvk_with_plural(&gvk, &id.resource);
            let api: Api<DynamicObject> = Api::all_with(self.member.clone(), &resource);
            let config =
                watcher::Config::default().labels(&format!("{LABEL_APPLIED_BY}={FIELD_MANAGER}"));
            let (owners, changed, mut stopped) = (
                self.owners.clone(),
                self.changed.0.clone(),
                self.stopped.clone(),
            );
            let (group, kind) = (id.group.clone(), id.kind.clone());
            tokio::spawn(async move {
                let mut events = std::pin::pin!(watcher::watcher(api, config));
                loop {
                    let event = tokio::select! {
                        event = events.next() => event,
                        _ = stopped.changed() => return,
                    };
                    let object = match event {
                        Some(Ok(watcher::Event::Apply(o))) => o,
                        Some(Ok(_)) => continue,
                        Some(Err(error)) => {
                            tracing::debug!(%error, %kind, "watch of applied objects failed; retrying");
                            tokio::time::sleep(Duration::from_secs(5)).await;
                            continue;
                        }
                        None => return,
                    };
                    let key = (
                        group.clone(),
                        kind.clone(),
                        object.metadata.namespace.clone().unwrap_or_default(),
                        object.metadata.name.clone().unwrap_or_default(),
                    );
                    let owner = lock(&owners).get(&key).cloned();
                    if let Some((work, version)) = owner
                        && object.metadata.resource_version.as_deref() != Some(version.as_str())
                        && changed.send(work).is_err()
                    {
                        return;
                    }
                }
            });
        }
    }

    /// Waits for a Work whose applied objects changed in the cluster.
    pub async fn next_changed(&self) -> Option<String> {
        self.changed.1.lock().await.recv().await
    }

    /// Removes what a deleted Work applied (unless its delete option orphans it), forgets the
    /// Work, and tells the hub it may let the Work go.
    async fn remove(&self, client: &mut hub::Client, delete: &WorkDelete) -> Result<(), Error> {
        lock(&self.versions).remove(&delete.name);
        lock(&self.reported).remove(&delete.name);
        let api = self.applied_works();
        if let Some(applied) = api
            .get_opt(&delete.name)
            .await
            .map_err(Error::member("AppliedWork"))?
        {
            let annotations = applied.metadata.annotations.clone().unwrap_or_default();
            let resources = applied
                .status
                .map(|s| s.applied_resources)
                .unwrap_or_default();
            let (resources, orphaned) = Orphaning::recorded(&annotations).split(resources);
            let left = self.applier.delete(&resources).await;
            if let Some((r, error)) = left.first() {
                return Err(Error::Hub(format!(
                    "cannot delete {} of deleted Work {:?}: {error}",
                    describe(&r.identifier),
                    delete.name
                )));
            }
            match api.delete(&delete.name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(Error::member("AppliedWork")(e)),
            }
            tracing::info!(work = %delete.name, deleted = resources.len(), orphaned, "Work deleted, and its resources with it but for those orphaned");
        }
        let report = WorkStatusReport {
            cluster_name: self.cluster.clone(),
            work_name: delete.name.clone(),
            work_uid: delete.uid.clone(),
            observed_generation: 0,
            status: b"{}".to_vec(),
            deleted: true,
        };
        client.report_work_status(report).await.map_err(|s| {
            Error::Hub(format!(
                "cannot report the deletion of Work {:?}: {}",
                delete.name,
                s.message()
            ))
        })?;
        Ok(())
    }

    async fn record(
        &self,
        name: &str,
        uid: &str,
        generation: i64,
        (orphaning, ignored): (&Orphaning, &IgnoredValues),
        applied: Vec<AppliedResourceMeta>,
    ) -> Result<(), Error> {
        let mut annotations = BTreeMap::from([
            (ANNOTATION_WORK_UID.to_owned(), uid.to_owned()),
            (
                ANNOTATION_WORK_GENERATION.to_owned(),
                generation.to_string(),
            ),
        ]);
        annotations.extend(orphaning.annotations());
        if !ignored.is_empty() {
            annotations.insert(
                ANNOTATION_IGNORED_FIELDS.to_owned(),
                serde_json::to_string(ignored).unwrap_or_default(),
            );
        }
        let record = AppliedWork {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                annotations: Some(annotations),
                ..ObjectMeta::default()
            },
            spec: AppliedWorkSpec {
                work_name: name.to_owned(),
                work_namespace: self.cluster.clone(),
            },
            status: None,
        };
        let api = self.applied_works();
        let params = PatchParams::apply(FIELD_MANAGER).force();
        api.patch(name, &params, &Patch::Apply(&record))
            .await
            .map_err(Error::member("AppliedWork"))?;
        let status =
            serde_json::json!({"status": AppliedWorkStatus { applied_resources: applied }});
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        api.patch_status(name, &params, &Patch::Merge(&status))
            .await
            .map_err(Error::member("AppliedWork status"))?;
        Ok(())
    }

    async fn report(
        &self,
        client: &mut hub::Client,
        name: &str,
        uid: &str,
        generation: i64,
        status: &WorkStatus,
    ) -> Result<(), Error> {
        let report = WorkStatusReport {
            cluster_name: self.cluster.clone(),
            work_name: name.to_owned(),
            work_uid: uid.to_owned(),
            observed_generation: generation,
            status: serde_json::to_vec(status).unwrap_or_default(),
            deleted: false,
        };
        client.report_work_status(report).await.map_err(|s| {
            Error::Hub(format!(
                "cannot report the status of Work {name:?}: {}",
                s.message()
            ))
        })?;
        Ok(())
    }
}

fn condition(
    type_: &str,
    ok: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
    now: &Time,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if ok { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: atoll_api::condition::fit_message(message),
        last_transition_time: now.clone(),
        observed_generation: generation,
    }
}

/// The Work's status: one entry per manifest, and the summary conditions. `Applied`, `Available`
/// and `Degraded` summarise as "the worst wins", `Progressing` is True while any manifest is.
pub fn status_of(outcomes: &[Outcome], generation: Option<i64>) -> WorkStatus {
    let now = Time(jiff::Timestamp::now());
    let mut tally = Tally::default();
    let manifest_conditions = outcomes
        .iter()
        .map(|o| {
            tally.count(o);
            ManifestCondition {
                identifier: o.identifier.clone(),
                conditions: manifest_conditions(o, &now),
                status_feedback: o.feedback.clone(),
            }
        })
        .collect();
    let summary = Summary {
        total: outcomes.len(),
        generation,
        now: &now,
    };
    WorkStatus {
        conditions: summary.conditions(tally),
        manifest_conditions,
    }
}

/// One manifest's conditions: `Applied`; `Available`, and `Progressing` and `Degraded` when its
/// object has a status; `Complete` for the kinds that run to an end.
fn manifest_conditions(o: &Outcome, now: &Time) -> Vec<Condition> {
    let described = describe(&o.identifier);
    let mut conditions = vec![match &o.applied {
        Ok(object_generation) if o.drift_corrected => condition(
            CONDITION_APPLIED,
            true,
            "DriftCorrected",
            format!("{described} was changed in the cluster and has been applied again"),
            *object_generation,
            now,
        ),
        Ok(object_generation) => condition(
            CONDITION_APPLIED,
            true,
            "AppliedManifestComplete",
            "applied".to_owned(),
            *object_generation,
            now,
        ),
        Err(f) => condition(
            CONDITION_APPLIED,
            false,
            f.reason,
            f.message.clone(),
            None,
            now,
        ),
    }];
    let object_generation = o.applied.as_ref().ok().copied().flatten();
    if let Some(health) = &o.health {
        let mut verdicts = vec![(CONDITION_AVAILABLE, &health.available)];
        // An object without a status (a ConfigMap) neither progresses nor degrades.
        if health.observed {
            verdicts.push((CONDITION_PROGRESSING, &health.progressing));
            verdicts.push((CONDITION_DEGRADED, &health.degraded));
        }
        for (type_, verdict) in verdicts {
            conditions.push(condition(
                type_,
                verdict.ok,
                &verdict.reason,
                verdict.message.clone(),
                object_generation,
                now,
            ));
        }
    }
    if let Some(complete) = &o.complete {
        conditions.push(condition(
            CONDITION_COMPLETE,
            complete.ok,
            &complete.reason,
            complete.message.clone(),
            object_generation,
            now,
        ));
    }
    conditions
}

/// The manifests each summary condition names, a line each, in manifest order.
#[derive(Debug, Default)]
struct Tally {
    failed: Vec<String>,
    unavailable: Vec<String>,
    progressing: Vec<String>,
    degraded: Vec<String>,
    /// How many manifests can finish (Jobs, Pods).
    finishing: usize,
    /// Those of them that have not.
    unfinished: Vec<String>,
}

impl Tally {
    /// Adds what one manifest's outcome says.
    fn count(&mut self, o: &Outcome) {
        let described = describe(&o.identifier);
        if let Err(f) = &o.applied {
            self.failed.push(f.message.clone());
        }
        match &o.health {
            Some(health) => {
                let line = |v: &crate::health::Verdict| format!("{described}: {}", v.message);
                if !health.available.ok {
                    self.unavailable.push(line(&health.available));
                }
                if health.progressing.ok {
                    self.progressing.push(line(&health.progressing));
                }
                if health.degraded.ok {
                    self.degraded.push(line(&health.degraded));
                }
            }
            None => self.unavailable.push(format!("{described}: not applied")),
        }
        if let Some(complete) = &o.complete {
            self.finishing += 1;
            if !complete.ok {
                self.unfinished
                    .push(format!("{described}: {}", complete.message));
            }
        }
    }
}

/// What the Work's summary conditions are written with.
struct Summary<'a> {
    /// How many manifests the Work has.
    total: usize,
    /// The Work's generation.
    generation: Option<i64>,
    now: &'a Time,
}

impl Summary<'_> {
    /// The Work's conditions: `Applied`, `Progressing`, `Available`, `Degraded`, and `Complete`
    /// only for Works with manifests that finish (Jobs, Pods).
    fn conditions(&self, tally: Tally) -> Vec<Condition> {
        let total = self.total;
        let applied = self.summarise(
            CONDITION_APPLIED,
            &tally.failed,
            ("AppliedWorkFailed", "failed"),
            (
                "AppliedWorkComplete",
                format!("all {total} manifests applied"),
            ),
        );
        let available = self.summarise(
            CONDITION_AVAILABLE,
            &tally.unavailable,
            ("ResourcesNotAvailable", "not available"),
            (
                "ResourcesAvailable",
                format!("all {total} resources are available"),
            ),
        );
        let progressing = if tally.progressing.is_empty()
            && !(tally.failed.is_empty() && tally.degraded.is_empty())
        {
            self.condition(
                CONDITION_PROGRESSING,
                false,
                "Failed",
                "nothing is progressing, and some manifests failed or are degraded".to_owned(),
            )
        } else {
            self.summarise(
                CONDITION_PROGRESSING,
                &tally.progressing,
                ("Applying", "progressing"),
                (
                    "Completed",
                    format!("all {total} resources match what was applied"),
                ),
            )
        };
        let degraded = self.summarise(
            CONDITION_DEGRADED,
            &tally.degraded,
            ("ResourcesDegraded", "degraded"),
            (
                "AsExpected",
                "no resource reports a degraded state".to_owned(),
            ),
        );
        let mut conditions = vec![applied, progressing, available, degraded];
        if tally.finishing > 0 {
            conditions.push(self.complete(tally));
        }
        conditions
    }

    /// `Complete`: whether every manifest that runs to an end has finished.
    fn complete(&self, tally: Tally) -> Condition {
        let Tally {
            failed,
            finishing,
            mut unfinished,
            ..
        } = tally;
        if unfinished.is_empty() && failed.is_empty() {
            self.condition(
                CONDITION_COMPLETE,
                true,
                "ManifestsComplete",
                format!("all {finishing} resources that run to an end have finished"),
            )
        } else {
            unfinished.extend(failed);
            self.condition(
                CONDITION_COMPLETE,
                false,
                "ManifestsNotComplete",
                self.text(&unfinished, "not finished"),
            )
        }
    }

    /// A summary condition of `type_`: `good` when `list` names no manifest, `bad` and the list
    /// otherwise. `Applied` and `Available` hold when the list is empty, `Progressing` and
    /// `Degraded` when it is not.
    fn summarise(
        &self,
        type_: &str,
        list: &[String],
        bad: (&str, &str),
        good: (&str, String),
    ) -> Condition {
        let holds_when_empty = type_ != CONDITION_PROGRESSING && type_ != CONDITION_DEGRADED;
        if list.is_empty() {
            self.condition(type_, holds_when_empty, good.0, good.1)
        } else {
            self.condition(type_, !holds_when_empty, bad.0, self.text(list, bad.1))
        }
    }

    /// `2 of 7 manifests failed: first; second`, naming at most five.
    fn text(&self, list: &[String], what: &str) -> String {
        let shown: Vec<&str> = list.iter().map(String::as_str).take(5).collect();
        let more = list.len().saturating_sub(shown.len());
        let mut text = format!(
            "{} of {} manifests {what}: {}",
            list.len(),
            self.total,
            shown.join("; ")
        );
        if more > 0 {
            text.push_str(&format!("; and {more} more"));
        }
        text
    }

    fn condition(&self, type_: &str, ok: bool, reason: &str, message: String) -> Condition {
        condition(type_, ok, reason, message, self.generation, self.now)
    }
}

/// Whether the AppliedWork's `annotations` record this version of the Work (its UID and
/// generation) as applied.
fn already_applied(annotations: &BTreeMap<String, String>, upsert: &WorkUpsert) -> bool {
    annotations.get(ANNOTATION_WORK_UID) == Some(&upsert.uid)
        && annotations.get(ANNOTATION_WORK_GENERATION) == Some(&upsert.generation.to_string())
}

/// The ignored-field values an AppliedWork records from the Work's last apply.
fn ignored_values(annotations: &BTreeMap<String, String>) -> IgnoredValues {
    annotations
        .get(ANNOTATION_IGNORED_FIELDS)
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

/// The ignored-field values of an apply, for the manifests that have any.
fn ignored_of(outcomes: &[Outcome]) -> IgnoredValues {
    outcomes
        .iter()
        .filter(|o| !o.ignored.is_empty())
        .map(|o| (o.identifier.ordinal, o.ignored.clone()))
        .collect()
}

/// Each manifest's resourceVersion after an apply, by ordinal.
fn versions_of(outcomes: &[Outcome]) -> HashMap<i32, String> {
    outcomes
        .iter()
        .filter_map(|o| {
            o.resource_version
                .clone()
                .map(|rv| (o.identifier.ordinal, rv))
        })
        .collect()
}

/// What a Work holds after an apply.
#[derive(Debug)]
struct Holdings {
    /// The Work's delete option, knowing the objects it found in the cluster.
    orphaning: Orphaning,
    /// What the Work held before and no longer does, and that does not stay: to delete.
    removed: Vec<AppliedResourceMeta>,
    /// What it applied now, to record.
    applied: Vec<AppliedResourceMeta>,
}

/// Plans what Work `work` holds after an apply with `outcomes`: `before` is what its AppliedWork
/// recorded as applied, and `found` the UIDs it recorded as found in the cluster.
fn holdings(
    work: &Work,
    before: Vec<AppliedResourceMeta>,
    outcomes: &[Outcome],
    mut found: BTreeSet<String>,
) -> Holdings {
    // What the Work held before and no longer does goes.
    let removed: Vec<AppliedResourceMeta> = before
        .into_iter()
        .filter(|r| {
            !outcomes.iter().any(|o| {
                let id = &o.identifier;
                id.group == r.identifier.group
                    && id.kind == r.identifier.kind
                    && id.namespace == r.identifier.namespace
                    && id.name == r.identifier.name
            })
        })
        .collect();
    // Objects found in the cluster stay found while the Work holds them (by UID: one the
    // Work deleted and made again is its own).
    found.retain(|uid| {
        removed.iter().any(|r| &r.uid == uid)
            || outcomes.iter().any(|o| o.uid.as_ref() == Some(uid))
    });
    found.extend(
        outcomes
            .iter()
            .filter(|o| o.found)
            .filter_map(|o| o.uid.clone()),
    );
    let orphaning = Orphaning::of(work).with_found(found);
    let (removed, _) = orphaning.split(removed);
    let applied = outcomes
        .iter()
        .filter(|o| o.applied.is_ok())
        .map(|o| AppliedResourceMeta {
            identifier: o.identifier.clone(),
            uid: o.uid.clone().unwrap_or_default(),
        })
        .collect();
    Holdings {
        orphaning,
        removed,
        applied,
    }
}

/// The UIDs an AppliedWork records as found in the cluster.
fn found_objects(annotations: &BTreeMap<String, String>) -> BTreeSet<String> {
    annotations
        .get(ANNOTATION_FOUND_OBJECTS)
        .and_then(|f| serde_json::from_str(f).ok())
        .unwrap_or_default()
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A status without its timestamps, to tell whether a report would say anything new.
fn fingerprint(status: &WorkStatus) -> String {
    let mut copy = status.clone();
    let epoch = Time(jiff::Timestamp::UNIX_EPOCH);
    for c in copy.conditions.iter_mut().chain(
        copy.manifest_conditions
            .iter_mut()
            .flat_map(|m| m.conditions.iter_mut()),
    ) {
        c.last_transition_time = epoch.clone();
    }
    serde_json::to_string(&copy).unwrap_or_default()
}

/// Keeps each condition's `lastTransitionTime` from the previous report while its status stays
/// the same, as a condition's transition time should (manifests matched by ordinal).
fn keep_transition_times(status: &mut WorkStatus, before: &WorkStatus) {
    let carry = |now: &mut [Condition], then: &[Condition]| {
        for c in now {
            if let Some(old) = then
                .iter()
                .find(|o| o.type_ == c.type_ && o.status == c.status)
            {
                c.last_transition_time = old.last_transition_time.clone();
            }
        }
    };
    carry(&mut status.conditions, &before.conditions);
    for m in &mut status.manifest_conditions {
        if let Some(old) = before
            .manifest_conditions
            .iter()
            .find(|o| o.identifier.ordinal == m.identifier.ordinal)
        {
            carry(&mut m.conditions, &old.conditions);
        }
    }
}

/// Makes a status fit in `limit` bytes: first shortens messages and drops status feedback, then
/// keeps only the manifests that are not fine; says so in a `StatusTrimmed` condition.
pub fn trim(status: &mut WorkStatus, limit: usize) {
    let size = |s: &WorkStatus| serde_json::to_vec(s).map_or(0, |b| b.len());
    let original = size(status);
    if original <= limit {
        return;
    }
    for m in &mut status.manifest_conditions {
        m.status_feedback = None;
        for c in &mut m.conditions {
            if c.message.chars().count() > 256 {
                c.message = c.message.chars().take(253).collect::<String>() + "...";
            }
        }
    }
    let mut dropped = 0;
    if size(status) > limit {
        let before = status.manifest_conditions.len();
        // A manifest is fine when it is applied and available, and neither progressing nor
        // degraded: those conditions hold exactly when something is not done.
        status.manifest_conditions.retain(|m| {
            m.conditions.iter().any(|c| {
                let settled = c.type_ == CONDITION_PROGRESSING || c.type_ == CONDITION_DEGRADED;
                (c.status == "True") == settled
            })
        });
        dropped = before - status.manifest_conditions.len();
        while size(status) > limit && !status.manifest_conditions.is_empty() {
            status.manifest_conditions.pop();
            dropped += 1;
        }
    }
    let now = Time(jiff::Timestamp::now());
    let message = format!(
        "the status took {original} bytes, more than the limit of {limit}: messages were shortened, status feedback left out{}",
        if dropped > 0 {
            format!(", and {dropped} manifests that are fine left out")
        } else {
            String::new()
        }
    );
    status.conditions.push(condition(
        CONDITION_STATUS_TRIMMED,
        true,
        "StatusTooLarge",
        message,
        None,
        &now,
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_times_move_only_when_a_condition_changes() {
        let then = Time("2026-01-01T00:00:00Z".parse().unwrap());
        let before = WorkStatus {
            conditions: vec![
                condition(
                    CONDITION_APPLIED,
                    true,
                    "AppliedWorkComplete",
                    String::new(),
                    Some(1),
                    &then,
                ),
                condition(
                    CONDITION_AVAILABLE,
                    false,
                    "ResourcesNotAvailable",
                    String::new(),
                    Some(1),
                    &then,
                ),
            ],
            manifest_conditions: vec![manifest(0, true, "applied")],
        };
        let mut status = before.clone();
        let now = Time(jiff::Timestamp::now());
        for c in status
            .conditions
            .iter_mut()
            .chain(status.manifest_conditions[0].conditions.iter_mut())
        {
            c.last_transition_time = now.clone();
        }
        status.conditions[1].status = "True".into();
        keep_transition_times(&mut status, &before);
        assert_eq!(
            status.conditions[0].last_transition_time, then,
            "Applied stayed True"
        );
        assert_eq!(
            status.conditions[1].last_transition_time, now,
            "Available became True"
        );
        assert_eq!(
            status.manifest_conditions[0].conditions[0].last_transition_time,
            before.manifest_conditions[0].conditions[0].last_transition_time
        );
    }

    #[test]
    fn orphaning_keeps_all_none_or_what_the_rules_name_across_a_restart() {
        let id = |name: &str| ResourceIdentifier {
            resource: "configmaps".into(),
            namespace: "default".into(),
            name: name.into(),
            ..ResourceIdentifier::default()
        };
        let work = |option: serde_json::Value| -> Work {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "w"},
                "spec": {"workload": {"manifests": []}, "deleteOption": option}
            }))
            .unwrap()
        };
        let all = Orphaning::of(&work(serde_json::json!({"propagationPolicy": "Orphan"})));
        assert!(all.keeps(&id("x")));
        let none = Orphaning::of(&work(serde_json::json!({})));
        assert!(!none.keeps(&id("x")));
        let some = Orphaning::of(&work(serde_json::json!({
            "propagationPolicy": "SelectivelyOrphan",
            "selectivelyOrphans": {"orphaningRules": [{"group": "", "resource": "configmaps", "namespace": "default", "name": "b"}]}
        })));
        assert!(some.keeps(&id("b")) && !some.keeps(&id("a")));
        // What the AppliedWork records is what the agent reads back after a restart.
        let recorded = Orphaning::recorded(&some.annotations().into_iter().collect());
        assert_eq!(recorded, some);
    }
    use atoll_api::work::ResourceIdentifier;

    fn manifest(ordinal: i32, ok: bool, message: &str) -> ManifestCondition {
        let now = Time(jiff::Timestamp::now());
        ManifestCondition {
            identifier: ResourceIdentifier {
                ordinal,
                ..ResourceIdentifier::default()
            },
            conditions: vec![condition(
                CONDITION_APPLIED,
                ok,
                "R",
                message.to_owned(),
                None,
                &now,
            )],
            status_feedback: None,
        }
    }

    #[test]
    fn a_large_status_is_trimmed_and_says_so() {
        let mut status = WorkStatus {
            conditions: Vec::new(),
            manifest_conditions: (0..200)
                .map(|i| manifest(i, i != 7, &"m".repeat(2000)))
                .collect(),
        };
        trim(&mut status, 20_000);
        assert!(serde_json::to_vec(&status).unwrap().len() <= 20_000);
        let trimmed = status
            .conditions
            .iter()
            .find(|c| c.type_ == CONDITION_STATUS_TRIMMED)
            .unwrap();
        assert!(
            trimmed
                .message
                .contains("199 manifests that are fine left out"),
            "{}",
            trimmed.message
        );
        assert_eq!(status.manifest_conditions.len(), 1);
        assert_eq!(
            status.manifest_conditions[0].identifier.ordinal, 7,
            "the failed manifest stays"
        );
    }

    #[test]
    fn a_small_status_is_left_alone() {
        let mut status = WorkStatus {
            conditions: Vec::new(),
            manifest_conditions: vec![manifest(0, true, "ok")],
        };
        let before = status.clone();
        trim(&mut status, STATUS_MAX_BYTES);
        assert_eq!(status, before);
    }

    fn verdict(ok: bool, reason: &str, message: &str) -> crate::health::Verdict {
        crate::health::Verdict {
            ok,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// A manifest's outcome: applied with `health` (and `complete`), or failed with `failed`.
    fn outcome(
        ordinal: i32,
        kind: &str,
        failed: Option<&str>,
        health: Option<crate::health::Health>,
        complete: Option<crate::health::Verdict>,
    ) -> Outcome {
        Outcome {
            identifier: ResourceIdentifier {
                ordinal,
                version: "v1".into(),
                kind: kind.into(),
                namespace: "default".into(),
                name: format!("m{ordinal}"),
                ..ResourceIdentifier::default()
            },
            applied: match failed {
                Some(message) => Err(crate::apply::Failure {
                    reason: "Forbidden",
                    message: message.into(),
                }),
                None => Ok(Some(1)),
            },
            health,
            complete,
            uid: None,
            resource_version: None,
            drift_corrected: false,
            found: false,
            feedback: None,
            ignored: BTreeMap::new(),
        }
    }

    fn find<'a>(conditions: &'a [Condition], type_: &str) -> &'a Condition {
        conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn one_failed_manifest_makes_the_work_not_applied_and_not_progressing() {
        let config_map = crate::health::of("ConfigMap", None, &serde_json::json!({}));
        let outcomes = [
            outcome(0, "ConfigMap", None, Some(config_map), None),
            outcome(1, "Secret", Some("manifest 1: forbidden"), None, None),
        ];
        let status = status_of(&outcomes, Some(4));
        let types: Vec<&str> = status.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(
            types,
            [
                CONDITION_APPLIED,
                CONDITION_PROGRESSING,
                CONDITION_AVAILABLE,
                CONDITION_DEGRADED
            ],
            "no Complete: nothing runs to an end"
        );
        let applied = find(&status.conditions, CONDITION_APPLIED);
        assert_eq!(
            (applied.status.as_str(), applied.reason.as_str()),
            ("False", "AppliedWorkFailed")
        );
        assert_eq!(
            applied.message,
            "1 of 2 manifests failed: manifest 1: forbidden"
        );
        assert_eq!(applied.observed_generation, Some(4));
        let available = find(&status.conditions, CONDITION_AVAILABLE);
        assert_eq!(available.status, "False");
        assert_eq!(
            available.message,
            "1 of 2 manifests not available: manifest 1 (Secret v1 default/m1): not applied"
        );
        let progressing = find(&status.conditions, CONDITION_PROGRESSING);
        assert_eq!(
            (progressing.status.as_str(), progressing.reason.as_str()),
            ("False", "Failed")
        );
        assert_eq!(find(&status.conditions, CONDITION_DEGRADED).status, "False");
        // The ConfigMap has no status: Applied and Available only.
        let first: Vec<(&str, &str)> = status.manifest_conditions[0]
            .conditions
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(
            first,
            [(CONDITION_APPLIED, "True"), (CONDITION_AVAILABLE, "True")]
        );
        let second = &status.manifest_conditions[1].conditions;
        assert_eq!(second.len(), 1);
        assert_eq!(
            (second[0].status.as_str(), second[0].reason.as_str()),
            ("False", "Forbidden")
        );
    }

    #[test]
    fn a_progressing_manifest_keeps_the_work_progressing_and_unfinished() {
        let rolling = crate::health::Health {
            observed: true,
            available: verdict(false, "Unavailable", "0 of 1 ready"),
            progressing: verdict(true, "Rolling", "rolling out"),
            degraded: verdict(false, "AsExpected", "fine"),
        };
        let outcomes = [outcome(
            0,
            "Job",
            None,
            Some(rolling),
            Some(verdict(false, "Running", "still running")),
        )];
        let status = status_of(&outcomes, None);
        let progressing = find(&status.conditions, CONDITION_PROGRESSING);
        assert_eq!(
            (progressing.status.as_str(), progressing.message.as_str()),
            (
                "True",
                "1 of 1 manifests progressing: manifest 0 (Job v1 default/m0): rolling out"
            )
        );
        let complete = find(&status.conditions, CONDITION_COMPLETE);
        assert_eq!(
            (complete.status.as_str(), complete.reason.as_str()),
            ("False", "ManifestsNotComplete")
        );
        let types: Vec<&str> = status.manifest_conditions[0]
            .conditions
            .iter()
            .map(|c| c.type_.as_str())
            .collect();
        assert_eq!(
            types,
            [
                CONDITION_APPLIED,
                CONDITION_AVAILABLE,
                CONDITION_PROGRESSING,
                CONDITION_DEGRADED,
                CONDITION_COMPLETE
            ]
        );
        let finished = [outcome(
            0,
            "Job",
            None,
            None,
            Some(verdict(true, "Complete", "done")),
        )];
        let complete = find(&status_of(&finished, None).conditions, CONDITION_COMPLETE).clone();
        assert_eq!(
            (complete.status.as_str(), complete.message.as_str()),
            ("True", "all 1 resources that run to an end have finished")
        );
    }

    #[test]
    fn a_summary_names_at_most_five_manifests() {
        let now = Time(jiff::Timestamp::now());
        let summary = Summary {
            total: 9,
            generation: None,
            now: &now,
        };
        let list: Vec<String> = ["a", "b", "c", "d", "e", "f", "g"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(
            summary.text(&list, "failed"),
            "7 of 9 manifests failed: a; b; c; d; e; and 2 more"
        );
        assert_eq!(
            summary.text(&list[..2], "degraded"),
            "2 of 9 manifests degraded: a; b"
        );
    }

    #[test]
    fn a_work_is_already_applied_only_at_the_same_uid_and_generation() {
        let annotations = BTreeMap::from([
            (ANNOTATION_WORK_UID.to_owned(), "uid-1".to_owned()),
            (ANNOTATION_WORK_GENERATION.to_owned(), "3".to_owned()),
        ]);
        let upsert = |uid: &str, generation: i64| WorkUpsert {
            name: "w".into(),
            uid: uid.into(),
            generation,
            ..WorkUpsert::default()
        };
        assert!(already_applied(&annotations, &upsert("uid-1", 3)));
        assert!(!already_applied(&annotations, &upsert("uid-1", 4)));
        assert!(
            !already_applied(&annotations, &upsert("uid-2", 3)),
            "a Work made again under the same name"
        );
        assert!(!already_applied(&BTreeMap::new(), &upsert("uid-1", 3)));
    }

    #[test]
    fn what_the_work_no_longer_holds_goes_unless_it_was_found_in_the_cluster() {
        let work: Work = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "w"},
            "spec": {"workload": {"manifests": []}}
        }))
        .unwrap();
        let with_uid = |mut o: Outcome, uid: &str| {
            o.uid = Some(uid.to_owned());
            o
        };
        let held = |o: &Outcome| AppliedResourceMeta {
            identifier: o.identifier.clone(),
            uid: o.uid.clone().unwrap_or_default(),
        };
        let gone = |ordinal: i32, uid: &str| {
            held(&with_uid(
                outcome(ordinal, "ConfigMap", None, None, None),
                uid,
            ))
        };
        let kept = with_uid(outcome(0, "ConfigMap", None, None, None), "u0");
        let mut found_now = with_uid(outcome(2, "ConfigMap", None, None, None), "u2");
        found_now.found = true;
        let outcomes = [
            kept.clone(),
            outcome(1, "ConfigMap", Some("forbidden"), None, None),
            found_now,
        ];
        let before = vec![held(&kept), gone(7, "u7"), gone(8, "u8")];
        let found = BTreeSet::from(["u8".to_owned(), "u-stale".to_owned()]);
        let holdings = holdings(&work, before, &outcomes, found);
        let names = |list: &[AppliedResourceMeta]| -> Vec<String> {
            list.iter().map(|r| r.identifier.name.clone()).collect()
        };
        assert_eq!(names(&holdings.removed), ["m7"], "m8 was found: it stays");
        assert_eq!(names(&holdings.applied), ["m0", "m2"], "m1 failed");
        assert_eq!(
            holdings.orphaning.found,
            BTreeSet::from(["u2".to_owned(), "u8".to_owned()]),
            "found while held, and newly found; not what the Work no longer knows"
        );
    }
}
