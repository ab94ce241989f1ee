//! The object semantics every resource shares, over the storage backend: what kube-apiserver's
//! generic registry store does. Server-assigned metadata (`uid`, `creationTimestamp`,
//! `generation`, `resourceVersion`, `managedFields`), optimistic concurrency, `generateName`,
//! finalizers and `deletionTimestamp`, the status and scale subresources, schema validation of
//! custom resources, patches and server-side apply, and no write at all when nothing changed.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use super::actor::{ActingWrite, Actor, Asked, Outcome};
use super::parked::{self, Parked};
use super::selector::{FieldSelector, LabelSelector};
use super::{Registry, ResourceType, crd};
use crate::apply::{self, ListType, ListTypes, same_except, same_object_fields};
use crate::error::{Error, Result, Target};
use crate::storage::{self, Backend, KeyValue, Revision, Usage, WritesUnderWay};
use crate::watch::WatchCache;
use crate::{Limits, patch, validation};

/// How many times a patch or an unconditional update is retried when another writer got in
/// between its read and its write.
const MAX_RETRIES: usize = 16;

const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// What to do with fields a schema does not know (`fieldValidation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    Strict,
    #[default]
    Warn,
    Ignore,
}

impl FieldValidation {
    pub fn parse(value: Option<&str>) -> Result<Self> {
        match value {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(Error::BadRequest(format!(
                "fieldValidation: Unsupported value: {other:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
            ))),
        }
    }
}

/// Options of create, update and patch.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    /// The field manager; when absent, derived from the client's User-Agent.
    pub field_manager: String,
    pub field_validation: FieldValidation,
    /// For server-side apply: take ownership of conflicting fields.
    pub force: bool,
    /// What the caller's write must also pass once the object is valid (RBAC's escalation
    /// check, for one): the object as it would be stored, and what it replaces.
    pub admission: Option<Arc<dyn Admission>>,
    /// Where a refused write leaves what its checks warned of before one refused it.
    pub warnings: Arc<Warnings>,
    /// The server's own controller making the write: it passes the admission policies and is
    /// audited as that controller's user, as an HTTP write passes them as its caller.
    pub actor: Option<Actor>,
    /// The client asked for the written object's metadata only (`as=PartialObjectMetadata`, as
    /// controllers that learn the object from a watch do): the write's answer need not hold the
    /// field it left as stored ([`parked`]).
    pub metadata_only: bool,
}

/// The warnings of one request, as kube-apiserver records them on the request rather than on
/// its outcome: a write refused after some check warned (an unknown field under
/// `fieldValidation=Warn`, a ratcheted CRD rule, a policy binding's Warn action) still answers
/// those warnings, beside its error. Each warning is kept once.
#[derive(Debug, Default)]
pub struct Warnings(std::sync::Mutex<Vec<String>>);

impl Warnings {
    pub fn record(&self, warnings: impl IntoIterator<Item = String>) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for warning in warnings {
            if !kept.contains(&warning) {
                kept.push(warning);
            }
        }
    }

    /// What was recorded, emptied.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The warnings one write collects: handed to its answer when it succeeds ([`Collected::finish`]),
/// left in its options' [`Warnings`] when it fails.
struct Collected<'a> {
    list: Vec<String>,
    refused: &'a Warnings,
}

impl<'a> Collected<'a> {
    fn new(options: &'a WriteOptions) -> Collected<'a> {
        Collected {
            list: Vec::new(),
            refused: &options.warnings,
        }
    }

    fn finish(mut self) -> Vec<String> {
        std::mem::take(&mut self.list)
    }
}

impl Drop for Collected<'_> {
    fn drop(&mut self) {
        if !self.list.is_empty() {
            self.refused.record(std::mem::take(&mut self.list));
        }
    }
}

/// A check of a write's outcome that depends on who writes, run after validation and before
/// anything is stored.
pub trait Admission: Send + Sync {
    /// `warnings` takes what the check warns of (for the `Warning` header).
    fn admit(
        &self,
        rt: &ResourceType,
        object: &Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<()>;

    /// The check of a delete of `old`, the stored object (none by default).
    fn admit_delete(&self, _rt: &ResourceType, _old: &Value) -> Result<()> {
        Ok(())
    }
}

impl std::fmt::Debug for dyn Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission")
    }
}

/// The result of a write.
#[derive(Debug)]
pub struct Written {
    pub object: Value,
    /// True when the write created the object (server-side apply answers 201 then).
    pub created: bool,
    /// Warnings for the `Warning` header (unknown fields under `fieldValidation=Warn`).
    pub warnings: Vec<String>,
}

/// The patch formats the server understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
}

/// Parameters of a list.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
}

/// One page of a list.
#[derive(Debug)]
pub struct ObjectList {
    pub items: Vec<Value>,
    pub revision: Revision,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

/// Options of a delete.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    /// What happens to the object's dependents; `None`: the resource's default.
    pub propagation: Option<Propagation>,
    /// What the caller's delete must also pass (admission policies), given the stored object.
    pub admission: Option<Arc<dyn Admission>>,
    /// The server's own controller deleting (see [`WriteOptions::actor`]).
    pub actor: Option<Actor>,
}

/// `DeleteOptions.propagationPolicy`: what the garbage collector does with an object's
/// dependents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// The object goes at once; the collector deletes its dependents afterwards.
    Background,
    /// The object waits (finalizer `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
    /// The object waits (finalizer `orphan`) until its dependents no longer name it.
    Orphan,
}

/// The finalizer of a foreground deletion.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// The finalizer of a deletion that orphans the dependents.
pub const ORPHAN_FINALIZER: &str = "orphan";

impl Propagation {
    /// Upstream's `propagationPolicy` values.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "Background" => Some(Propagation::Background),
            "Foreground" => Some(Propagation::Foreground),
            "Orphan" => Some(Propagation::Orphan),
            _ => None,
        }
    }

    /// The finalizer that holds the object while the collector works, if any.
    fn finalizer(self) -> Option<&'static str> {
        match self {
            Propagation::Background => None,
            Propagation::Foreground => Some(FOREGROUND_FINALIZER),
            Propagation::Orphan => Some(ORPHAN_FINALIZER),
        }
    }

    /// A resource's default: orphaning for ReplicationControllers and `batch/v1` Jobs (kept for
    /// old clients, as upstream keeps it), background for everything else.
    fn default_for(rt: &ResourceType) -> Self {
        match (rt.group.as_str(), rt.plural.as_str()) {
            ("", "replicationcontrollers") | ("batch", "jobs") => Propagation::Orphan,
            _ => Propagation::Background,
        }
    }
}

/// What a delete did.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; this was its last state.
    Gone(Value),
    /// The object has finalizers (or is a namespace being emptied) and is now terminating.
    Pending(Value),
}

/// The generic store.
pub struct Store {
    backend: Arc<dyn Backend>,
    registry: Arc<Registry>,
    /// Woken when a namespace starts terminating.
    namespace_deleted: Notify,
    /// The watch cache, once started: reads of objects it holds take its decoded copy.
    cache: OnceLock<Arc<WatchCache>>,
    /// What users' writes may store.
    limits: Limits,
    /// Room taken by writes between their check against `limits` and their commit, so that
    /// concurrent writes cannot all pass the same check and together overshoot a limit.
    reserved: Mutex<Usage>,
    /// What the server's own controllers' writes pass (admission policies, audit), once the
    /// server installed it.
    gate: OnceLock<Arc<crate::admission::Gate>>,
    /// Where the writes under way are counted, for a backend that gathers them into batches.
    under_way: Option<WritesUnderWay>,
}

impl Store {
    pub fn new(backend: Arc<dyn Backend>, registry: Arc<Registry>) -> Self {
        Store {
            under_way: backend.writes_under_way().cloned(),
            backend,
            registry,
            namespace_deleted: Notify::new(),
            cache: OnceLock::new(),
            limits: Limits::default(),
            reserved: Mutex::new(Usage::default()),
            gate: OnceLock::new(),
        }
    }

    /// Counts a write as under way until the guard drops: a backend that batches may wait for
    /// it to commit it with others.
    fn under_way(&self) -> Option<storage::WriteUnderWay<'_>> {
        self.under_way.as_ref().map(WritesUnderWay::start)
    }

    /// Makes the writes of the server's own controllers (those with an [`Actor`]) pass
    /// `gate`'s admission policies and audit log, as writes over HTTP do.
    pub fn guard(&self, gate: Arc<crate::admission::Gate>) {
        let _ = self.gate.set(gate);
    }

    /// The gate a controller's write passes, and the controller, when both are there.
    fn acting(&self, actor: Option<Actor>) -> Option<(&crate::admission::Gate, Actor)> {
        Some((self.gate.get()?, actor?))
    }

    /// Refuses users' creates, updates and patches past `limits` (never deletes, nor the writes
    /// that deleting makes).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Lets reads take objects the watch cache has decoded already (the read before a write
    /// usually finds the object's last write there).
    pub fn read_through(&self, cache: Arc<WatchCache>) {
        let _ = self.cache.set(cache);
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The served `v1` resource `plural` of `group` (`""`: the core group), as the server's own
    /// controllers look their kinds up.
    pub fn v1_resource(&self, group: &str, plural: &str) -> Result<Arc<ResourceType>> {
        self.registry
            .catalog()
            .lookup(group, "v1", plural)
            .ok_or(Error::UnknownPath)
    }

    /// Waits until a namespace starts terminating.
    pub async fn namespace_deleted(&self) {
        self.namespace_deleted.notified().await
    }

    /// A receiver that changes at every committed write, once the watch cache runs.
    pub fn changes(&self) -> Option<tokio::sync::watch::Receiver<Revision>> {
        self.cache.get().map(|cache| cache.subscribe())
    }

    /// Reads every stored CRD and rebuilds the catalog from them.
    pub async fn reload_crds(&self) -> Result<()> {
        let catalog = self.registry.catalog();
        let Some(rt) = catalog.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        else {
            return Ok(());
        };
        let page = self
            .backend
            .list(storage::ListOptions {
                prefix: &rt.key_prefix(),
                ..Default::default()
            })
            .await?;
        let crds: Vec<Value> = page.items.iter().filter_map(|kv| decode(kv).ok()).collect();
        self.registry.set_crds(&crds);
        Ok(())
    }

    /// Seeds the namespaces every cluster has.
    pub async fn seed(&self) -> Result<()> {
        let rt = self.namespaces();
        for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            if self.backend.get(&rt.key(None, name)).await?.is_some() {
                continue;
            }
            let object =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            let options = WriteOptions {
                field_manager: "atoll-apiserver".into(),
                actor: Some(Actor::ApiServer),
                ..Default::default()
            };
            // The server's own namespaces are made whatever the limits.
            match self
                .create_as(&rt, None, object, &options, Admit::Always)
                .await
            {
                Ok(_) | Err(Error::AlreadyExists(_)) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    fn namespaces(&self) -> Arc<ResourceType> {
        self.registry
            .catalog()
            .lookup("", "v1", "namespaces")
            .expect("the namespaces resource is built in")
    }

    // ---- reads -------------------------------------------------------------------------------

    /// One object, at the version of `rt`.
    pub async fn get(&self, rt: &ResourceType, ns: Option<&str>, name: &str) -> Result<Value> {
        let (object, _) = self.read(rt, ns, name).await?;
        Ok(Arc::unwrap_or_clone(object))
    }

    async fn read(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
    ) -> Result<(Arc<Value>, KeyValue)> {
        let (object, kv, _) = self.read_parking(rt, ns, name, None).await?;
        Ok((object, kv))
    }

    /// Reads an object for a write that leaves its top-level field `park` as stored: decoded
    /// but for that field, which comes back as its stored bytes when [`parks`] allows it (and
    /// the object needs no conversion); otherwise the whole object, as [`Store::read`].
    async fn read_parking(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        park: Option<&'static str>,
    ) -> Result<(Arc<Value>, KeyValue, Option<Parked>)> {
        let kv = self
            .backend
            .get(&rt.key(ns, name))
            .await?
            .ok_or_else(|| Error::NotFound(rt.target(name)))?;
        let cached = self
            .cache
            .get()
            .and_then(|cache| cache.object(&kv.key, kv.mod_revision));
        let (mut object, parked) = match (cached, park) {
            (Some(object), _) => (object, None),
            (None, Some(key)) => {
                let (mut object, parked) = parked::decode(&kv.value, key).map_err(|e| {
                    Error::Internal(format!("stored object {} is corrupt: {e}", kv.key))
                })?;
                set_resource_version(&mut object, kv.mod_revision);
                (Arc::new(object), parked)
            }
            (None, None) => (Arc::new(decode(&kv)?), None),
        };
        let parked = match parked {
            Some(p) if !is_converted(&object, rt) => {
                // Converting reads the whole object: the field goes back in first.
                unpark(Arc::make_mut(&mut object), &p)?;
                None
            }
            other => other,
        };
        if !is_converted(&object, rt) {
            convert(Arc::make_mut(&mut object), rt);
        }
        Ok((object, kv, parked))
    }

    /// A page of objects matching the selectors.
    pub async fn list(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        options: &ListOptions,
    ) -> Result<ObjectList> {
        let prefix = rt.namespace_prefix(ns);
        let (mut revision, mut start_after) = match &options.continue_token {
            Some(token) => {
                let (rev, key) = decode_continue(token, &prefix)?;
                (Some(rev), Some(key))
            }
            None => (
                self.list_revision(
                    options.resource_version.as_deref(),
                    options.resource_version_match.as_deref(),
                )?,
                None,
            ),
        };
        let limit = options.limit.filter(|l| *l > 0);
        let filtered = !options.labels.is_empty() || !options.fields.is_empty();
        let mut items = Vec::new();
        let mut remaining;
        let mut last_key;
        loop {
            let want = limit.map(|l| l - items.len());
            let page = self
                .backend
                .list(storage::ListOptions {
                    prefix: &prefix,
                    revision,
                    start_after: start_after.as_deref(),
                    limit: want.map(|w| if filtered { w.max(64) } else { w }),
                })
                .await
                .map_err(|err| match (err, &options.continue_token) {
                    (storage::Error::Compacted { .. }, Some(_)) => {
                        Error::Expired(EXPIRED_CONTINUE.into())
                    }
                    (err, _) => err.into(),
                })?;
            revision = Some(page.revision);
            remaining = page.remaining;
            last_key = page.items.last().map(|kv| kv.key.clone());
            let mut taken_all = true;
            for (index, kv) in page.items.iter().enumerate() {
                if limit.is_some_and(|l| items.len() >= l) {
                    remaining += page.items.len() - index;
                    last_key = Some(page.items[index - 1].key.clone());
                    taken_all = false;
                    break;
                }
                let mut object = decode(kv)?;
                if matches(&object, &options.labels, &options.fields) {
                    convert(&mut object, rt);
                    items.push(object);
                }
            }
            let full = limit.is_some_and(|l| items.len() >= l);
            if remaining == 0 || full || !taken_all || last_key.is_none() {
                break;
            }
            start_after = last_key.clone();
        }
        let revision = revision.unwrap_or_else(|| self.backend.current_revision());
        let continue_token = (remaining > 0)
            .then(|| last_key.map(|k| encode_continue(revision, &k)))
            .flatten();
        Ok(ObjectList {
            items,
            revision,
            continue_token,
            remaining: (!filtered && remaining > 0).then_some(remaining),
        })
    }

    /// The revision a list's answer must be current at least at, when an answer from the latest
    /// state will do: `None` for a continuation or a list at an exact revision, which read
    /// storage. The list's `resourceVersion` options are checked as [`Store::list`] checks them.
    pub fn list_at_least(&self, options: &ListOptions) -> Result<Option<Revision>> {
        if options.continue_token.is_some() {
            return Ok(None);
        }
        let rv = options.resource_version.as_deref();
        if self
            .list_revision(rv, options.resource_version_match.as_deref())?
            .is_some()
        {
            return Ok(None);
        }
        Ok(Some(match rv {
            None | Some("") => self.backend.current_revision(),
            Some(v) => parse_resource_version(v)?,
        }))
    }

    /// The revision a list reads at, from `resourceVersion` and `resourceVersionMatch`.
    fn list_revision(&self, rv: Option<&str>, rv_match: Option<&str>) -> Result<Option<Revision>> {
        let parsed = match rv {
            None | Some("") => None,
            Some(v) => Some(parse_resource_version(v)?),
        };
        match (parsed, rv_match) {
            (None, Some(m)) if !m.is_empty() => Err(list_invalid(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            )),
            (Some(rv), Some("Exact")) if rv > 0 => Ok(Some(rv)),
            (Some(0), Some("Exact")) => Err(list_invalid(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            )),
            (Some(rv), _) if rv > self.backend.current_revision() => Err(Error::Timeout(format!(
                "Too large resource version: {rv}, current: {}",
                self.backend.current_revision()
            ))),
            (_, None | Some("") | Some("NotOlderThan")) => Ok(None),
            (_, Some(other)) => Err(list_invalid(
                "resourceVersionMatch",
                &format!(
                    "Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
                ),
            )),
        }
    }

    // ---- create ------------------------------------------------------------------------------

    /// Creates an object from a request body.
    pub async fn create(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        object: Value,
        options: &WriteOptions,
    ) -> Result<Written> {
        let _under_way = self.under_way();
        let Some((gate, actor)) = self.acting(options.actor) else {
            return self
                .create_as(rt, ns, object, options, Admit::WithinLimits)
                .await;
        };
        let name = object["metadata"]["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_owned);
        let asked = Asked {
            verb: "create",
            rt,
            namespace: ns,
            name: name.as_deref(),
            subresource: None,
            body: Some(&object),
        };
        let write = ActingWrite::begin(gate, actor, asked).await;
        let options = write.write_options(options);
        let created = self
            .create_as(rt, ns, object, &options, Admit::WithinLimits)
            .await;
        write.finish(Outcome::of_write(&created)).await;
        created
    }

    async fn create_as(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        mut object: Value,
        options: &WriteOptions,
        admit: Admit,
    ) -> Result<Written> {
        check_type_meta(&mut object, rt)?;
        set_namespace(&mut object, rt, ns)?;
        if let Some(rv) = object["metadata"].get("resourceVersion")
            && !rv.is_null()
            && rv != ""
        {
            return Err(Error::BadRequest(
                "resourceVersion should not be set on objects to be created".into(),
            ));
        }
        generate_name(&mut object);
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let meta = meta_mut(&mut object);
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(field);
        }
        if rt.status
            && let Some(o) = object.as_object_mut()
        {
            o.remove("status");
        }
        self.create_prepared(rt, ns, &name, object, options, None, admit)
            .await
    }

    /// Creates an object whose type meta, namespace and name are settled. `applied` carries the
    /// managed fields computed by server-side apply, if this create comes from an apply.
    #[allow(clippy::too_many_arguments)]
    async fn create_prepared(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        mut object: Value,
        options: &WriteOptions,
        applied: Option<()>,
        admit: Admit,
    ) -> Result<Written> {
        let now = now();
        let mut warnings = Collected::new(options);
        let meta = meta_mut(&mut object);
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(now));
        if rt.tracks_generation() {
            meta.insert("generation".into(), json!(1));
        }
        self.validate(rt, &mut object, None, None, options, &mut warnings.list)?;
        self.prepare_kind(rt, &mut object, None, &now)?;
        if let Some(ns) = ns.filter(|_| rt.namespaced) {
            self.check_namespace_accepts(ns).await?;
        }
        let taken_ip = if is_service(rt) {
            let ns = ns.unwrap_or_default();
            super::service_ip::allocate(self, rt, ns, name, &mut object, options.dry_run).await?
        } else {
            None
        };
        if applied.is_none() {
            let api_version = rt.api_version();
            apply::record_update(
                None,
                &mut object,
                &manager(&api_version, options, None, &now),
                &lists(rt),
            );
        }
        if options.dry_run {
            if admit == Admit::WithinLimits {
                let size = to_storage(&mut object, rt, None)?.len();
                within_object_limit(rt, name, size)?;
                self.admit(rt, name, None, size)?;
            }
            convert(&mut object, rt);
            return Ok(Written {
                object,
                created: true,
                warnings: warnings.finish(),
            });
        }
        let created = self.write_created(rt, ns, name, &mut object, admit).await;
        if created.is_err() && taken_ip.is_some() {
            // The Service was not stored: its address goes back to the range.
            super::service_ip::release(self, &object).await?;
        }
        let revision = created?;
        set_resource_version(&mut object, revision);
        convert(&mut object, rt);
        self.after_write(rt).await?;
        Ok(Written {
            object,
            created: true,
            warnings: warnings.finish(),
        })
    }

    // ---- update ------------------------------------------------------------------------------

    /// Replaces an object (PUT), on the main resource or a subresource.
    pub async fn update(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        object: Value,
        options: &WriteOptions,
    ) -> Result<Written> {
        let _under_way = self.under_way();
        let Some((gate, actor)) = self.acting(options.actor) else {
            return self
                .replace(rt, ns, name, subresource, object, options)
                .await;
        };
        let asked = Asked {
            verb: "update",
            rt,
            namespace: ns,
            name: Some(name),
            subresource,
            body: Some(&object),
        };
        let write = ActingWrite::begin(gate, actor, asked).await;
        let options = write.write_options(options);
        let updated = self
            .replace(rt, ns, name, subresource, object, &options)
            .await;
        write.finish(Outcome::of_write(&updated)).await;
        updated
    }

    async fn replace(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        mut object: Value,
        options: &WriteOptions,
    ) -> Result<Written> {
        check_type_meta(&mut object, rt)?;
        set_namespace(&mut object, rt, ns)?;
        settle_name(&mut object, name)?;
        let precondition = precondition(&object)?;
        if precondition.is_none() && !rt.builtin && subresource.is_none() {
            return Err(Error::invalid(
                &rt.qualified_kind(),
                rt.target(name),
                vec![validation::FieldError {
                    cause: validation::CauseType::Invalid,
                    field: "metadata.resourceVersion".into(),
                    message: "must be specified for an update".into(),
                    value: Some(json!("0x0")),
                }],
            ));
        }
        let park = parks(rt, subresource, options);
        for _ in 0..MAX_RETRIES {
            let (current, kv, parked) = self.read_parking(rt, ns, name, park).await?;
            if let Some(rv) = precondition
                && rv != kv.mod_revision
            {
                return Err(conflict(rt, name));
            }
            match self
                .commit_update(
                    rt,
                    ns,
                    name,
                    subresource,
                    Read::of(&current, &kv, parked.as_ref()),
                    object.clone(),
                    options,
                    false,
                )
                .await
            {
                Err(Error::Conflict { .. }) if precondition.is_none() => continue,
                other => return other,
            }
        }
        Err(conflict(rt, name))
    }

    /// Patches an object; server-side apply creates it when it is missing.
    #[allow(clippy::too_many_arguments)]
    pub async fn patch(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        patch_type: PatchType,
        body: &[u8],
        options: &WriteOptions,
    ) -> Result<Written> {
        let _under_way = self.under_way();
        let Some((gate, actor)) = self.acting(options.actor) else {
            return self
                .patch_as(rt, ns, name, subresource, patch_type, body, options)
                .await;
        };
        let patch: Option<Value> = serde_json::from_slice(body).ok();
        let asked = Asked {
            verb: "patch",
            rt,
            namespace: ns,
            name: Some(name),
            subresource,
            body: patch.as_ref(),
        };
        let write = ActingWrite::begin(gate, actor, asked).await;
        let options = write.write_options(options);
        let patched = self
            .patch_as(rt, ns, name, subresource, patch_type, body, &options)
            .await;
        write.finish(Outcome::of_write(&patched)).await;
        patched
    }

    #[allow(clippy::too_many_arguments)]
    async fn patch_as(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        patch_type: PatchType,
        body: &[u8],
        options: &WriteOptions,
    ) -> Result<Written> {
        if patch_type == PatchType::Strategic && !rt.builtin {
            return Err(Error::UnsupportedMediaType(
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml".into(),
            ));
        }
        let decode_patch = || -> Result<Value> {
            match patch_type {
                PatchType::Apply => crate::patch::decode_apply(body)
                    .map_err(|e| Error::BadRequest(format!("error decoding YAML: {e}"))),
                _ => serde_json::from_slice(body)
                    .map_err(|e| Error::BadRequest(format!("error decoding patch: {e}"))),
            }
        };
        let patch_doc = decode_patch()?;
        if patch_type == PatchType::Apply {
            if options.field_manager.is_empty() {
                return Err(Error::invalid(
                    "PatchOptions.meta.k8s.io",
                    Target::default(),
                    vec![validation::FieldError {
                        cause: validation::CauseType::Required,
                        field: "fieldManager".into(),
                        message: "is required for apply patch".into(),
                        value: None,
                    }],
                ));
            }
            return self
                .apply(rt, ns, name, subresource, patch_doc, options)
                .await;
        }
        // A merge patch moves the document's values into the object; a retry decodes it again.
        let mut first = Some(patch_doc);
        // A merge patch cannot read the field it leaves (a JSON patch's `test`, `copy` and
        // `move` can).
        let park = match patch_type {
            PatchType::Merge => parks(rt, subresource, options),
            _ => None,
        };
        for _ in 0..MAX_RETRIES {
            let patch_doc = match first.take() {
                Some(doc) => doc,
                None => decode_patch()?,
            };
            let (current, kv, parked) = self.read_parking(rt, ns, name, park).await?;
            let mut patched = patched(rt, name, &current, patch_type, patch_doc)?;
            let precondition = precondition(&patched)?;
            if let Some(rv) = precondition
                && rv != kv.mod_revision
            {
                return Err(conflict(rt, name));
            }
            settle_name(&mut patched, name)?;
            match self
                .commit_update(
                    rt,
                    ns,
                    name,
                    subresource,
                    Read::of(&current, &kv, parked.as_ref()),
                    patched,
                    options,
                    false,
                )
                .await
            {
                Err(Error::Conflict { .. }) => continue,
                other => return other,
            }
        }
        Err(conflict(rt, name))
    }

    async fn apply(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        mut config: Value,
        options: &WriteOptions,
    ) -> Result<Written> {
        if !config.is_object() {
            return Err(Error::BadRequest(
                "the applied configuration must be an object".into(),
            ));
        }
        check_type_meta(&mut config, rt)?;
        set_namespace(&mut config, rt, ns)?;
        settle_name(&mut config, name)?;
        if let Some(o) = config.as_object_mut() {
            match subresource {
                Some("status") => o.retain(|k, _| {
                    matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status")
                }),
                _ if rt.status => {
                    o.remove("status");
                }
                _ => {}
            }
        }
        let precondition = precondition(&config)?;
        if let Some(m) = config["metadata"].as_object_mut() {
            m.remove("resourceVersion");
        }
        if rt.builtin {
            super::defaults::apply_key_defaults(&rt.group, &rt.kind, &mut config);
        }
        let lists = lists(rt);
        let park = parks(rt, subresource, options);
        for _ in 0..MAX_RETRIES {
            let now = now();
            let api_version = rt.api_version();
            let manager = manager(&api_version, options, subresource, &now);
            let current = match self.read_parking(rt, ns, name, park).await {
                Ok(found) => Some(found),
                Err(Error::NotFound(_)) if subresource.is_none() => None,
                Err(err) => return Err(err),
            };
            let Some((current, kv, parked)) = current else {
                if precondition.is_some() {
                    return Err(Error::NotFound(rt.target(name)));
                }
                let object = apply::apply(None, &config, &manager, options.force, &lists)
                    .map_err(|err| apply_error(rt, name, err))?;
                match self
                    .create_prepared(rt, ns, name, object, options, Some(()), Admit::WithinLimits)
                    .await
                {
                    Err(Error::AlreadyExists(_)) => continue,
                    other => return other,
                }
            };
            if let Some(rv) = precondition
                && rv != kv.mod_revision
            {
                return Err(conflict(rt, name));
            }
            let merged = apply::apply(Some(&current), &config, &manager, options.force, &lists)
                .map_err(|err| apply_error(rt, name, err))?;
            match self
                .commit_update(
                    rt,
                    ns,
                    name,
                    subresource,
                    Read::of(&current, &kv, parked.as_ref()),
                    merged,
                    options,
                    true,
                )
                .await
            {
                Err(Error::Conflict { .. }) => continue,
                other => return other,
            }
        }
        Err(conflict(rt, name))
    }

    /// Writes `new` over the object `read`, with every rule of an update.
    #[allow(clippy::too_many_arguments)]
    async fn commit_update(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        read: Read<'_>,
        new: Value,
        options: &WriteOptions,
        applied: bool,
    ) -> Result<Written> {
        let mut written = self
            .commit_update_parked(rt, ns, name, subresource, &read, new, options, applied)
            .await?;
        // The answer shows the whole object unless the client asked for its metadata only.
        if let Some(parked) = read.parked
            && !options.metadata_only
        {
            unpark(&mut written.object, parked)?;
        }
        Ok(written)
    }

    /// [`Store::commit_update`] but for putting the field `read` left parked back into the
    /// answer (the stored bytes always have it).
    #[allow(clippy::too_many_arguments)]
    async fn commit_update_parked(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        read: &Read<'_>,
        new: Value,
        options: &WriteOptions,
        applied: bool,
    ) -> Result<Written> {
        let Read {
            object: current,
            kv,
            parked,
        } = *read;
        let mut warnings = Collected::new(options);
        let mut new = self.updated(
            rt,
            name,
            subresource,
            (current, parked),
            new,
            options,
            applied,
            &mut warnings.list,
        )?;
        if same_except(current, &new, &[], &["resourceVersion"]) {
            return Ok(Written {
                object: current.clone(),
                created: false,
                warnings: warnings.finish(),
            });
        }
        let terminating = new["metadata"].get("deletionTimestamp").is_some();
        if terminating && finalizers(&new).next().is_none() && !self.is_waiting_namespace(rt, &new)
        {
            let warnings = warnings.finish();
            // What is deleted is answered, and told to the collectors, whole.
            if let Some(parked) = parked {
                unpark(&mut new, parked)?;
            }
            return self
                .delete_finalized(rt, ns, name, kv, new, options.dry_run, warnings)
                .await;
        }
        // Writes that take a terminating object towards its end are what deleting makes.
        let admit = if terminating && removes_finalizers(current, &new) {
            Admit::Always
        } else {
            Admit::WithinLimits
        };
        if options.dry_run {
            if admit == Admit::WithinLimits {
                let size = to_storage(&mut new, rt, parked)?.len();
                within_object_limit(rt, name, size)?;
                self.admit(rt, name, Some(kv.value.len()), size)?;
            }
            set_resource_version(&mut new, kv.mod_revision);
            convert(&mut new, rt);
            return Ok(Written {
                object: new,
                created: false,
                warnings: warnings.finish(),
            });
        }
        let stored = to_storage(&mut new, rt, parked)?;
        if admit == Admit::WithinLimits {
            // The server's own writes (marking a deletion, say) always go through.
            within_object_limit(rt, name, stored.len())?;
        }
        let _room = match admit {
            Admit::WithinLimits => self.admit(rt, name, Some(kv.value.len()), stored.len())?,
            Admit::Always => None,
        };
        match self
            .backend
            .update(&rt.key(ns, name), stored, kv.mod_revision)
            .await
        {
            Ok(revision) => {
                set_resource_version(&mut new, revision);
                convert(&mut new, rt);
                self.after_write(rt).await?;
                Ok(Written {
                    object: new,
                    created: false,
                    warnings: warnings.finish(),
                })
            }
            Err(storage::Error::Conflict { .. }) => Err(conflict(rt, name)),
            Err(storage::Error::NotFound(_)) => Err(Error::NotFound(rt.target(name))),
            Err(err) => Err(err.into()),
        }
    }

    /// `new` as an update over `current` would store it: what the subresource may change of it,
    /// the server's metadata kept, validated and defaulted, its generation and managed fields.
    /// `parked` is the field `current` was read without, if the stored object has it.
    #[allow(clippy::too_many_arguments)]
    fn updated(
        &self,
        rt: &ResourceType,
        name: &str,
        subresource: Option<&str>,
        (current, parked): (&Value, Option<&Parked>),
        mut new: Value,
        options: &WriteOptions,
        applied: bool,
        warnings: &mut Vec<String>,
    ) -> Result<Value> {
        let now = now();
        check_type_meta(&mut new, rt)?;
        let mut new = subresource_view(rt, name, subresource, current, new, applied)?;
        keep_server_metadata(current, &mut new);
        check_no_new_finalizers(rt, name, current, &new)?;
        let parked = parked.map(|p| p.key);
        self.validate(rt, &mut new, Some(current), parked, options, warnings)?;
        self.prepare_kind(rt, &mut new, Some(current), &now)?;
        if rt.tracks_generation() && spec_changed(current, &new, rt.status) {
            let generation = current["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            new["metadata"]["generation"] = json!(generation);
        }
        if !applied {
            let api_version = rt.api_version();
            apply::record_update(
                Some(current),
                &mut new,
                &manager(&api_version, options, subresource, &now),
                &lists(rt),
            );
        }
        Ok(new)
    }

    /// Deletes an object being deleted whose last finalizer an update removed.
    #[allow(clippy::too_many_arguments)]
    async fn delete_finalized(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        kv: &KeyValue,
        mut new: Value,
        dry_run: bool,
        warnings: Vec<String>,
    ) -> Result<Written> {
        if dry_run {
            return Ok(Written {
                object: new,
                created: false,
                warnings,
            });
        }
        let key = rt.key(ns, name);
        match self.backend.delete(&key, Some(kv.mod_revision)).await {
            Ok((revision, _)) => {
                set_resource_version(&mut new, revision);
                convert(&mut new, rt);
                self.after_delete(rt, &new).await?;
                Ok(Written {
                    object: new,
                    created: false,
                    warnings,
                })
            }
            Err(storage::Error::Conflict { .. }) => Err(conflict(rt, name)),
            Err(storage::Error::NotFound(_)) => Err(Error::NotFound(rt.target(name))),
            Err(err) => Err(err.into()),
        }
    }

    // ---- delete ------------------------------------------------------------------------------

    /// Deletes an object, or marks it terminating while finalizers remain.
    pub async fn delete(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deleted> {
        let _under_way = self.under_way();
        let Some((gate, actor)) = self.acting(options.actor) else {
            return self.delete_as(rt, ns, name, options).await;
        };
        let body = super::actor::delete_body(options);
        let asked = Asked {
            verb: "delete",
            rt,
            namespace: ns,
            name: Some(name),
            subresource: None,
            body: Some(&body),
        };
        let write = ActingWrite::begin(gate, actor, asked).await;
        let options = write.delete_options(options);
        let deleted = self.delete_as(rt, ns, name, &options).await;
        write.finish(Outcome::of_delete(&deleted)).await;
        deleted
    }

    async fn delete_as(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deleted> {
        for _ in 0..MAX_RETRIES {
            let (current, kv) = self.read(rt, ns, name).await?;
            check_delete_preconditions(rt, name, &current, kv.mod_revision, options)?;
            if let Some(admission) = &options.admission {
                admission.admit_delete(rt, &current)?;
            }
            let propagation = options
                .propagation
                .unwrap_or_else(|| Propagation::default_for(rt));
            let collector = propagation
                .finalizer()
                .filter(|_| !(rt.group.is_empty() && rt.plural == "namespaces"));
            let graceful = finalizers(&current).next().is_some()
                || collector.is_some()
                || (rt.group.is_empty() && rt.plural == "namespaces");
            if graceful {
                if current["metadata"].get("deletionTimestamp").is_some() {
                    return Ok(Deleted::Pending(Arc::unwrap_or_clone(current)));
                }
                let mut marked = marked_for_deletion(rt, &current, collector);
                if options.dry_run {
                    return Ok(Deleted::Pending(marked));
                }
                let stored = to_storage(&mut marked, rt, None)?;
                match self
                    .backend
                    .update(&rt.key(ns, name), stored, kv.mod_revision)
                    .await
                {
                    Ok(revision) => {
                        set_resource_version(&mut marked, revision);
                        convert(&mut marked, rt);
                        if rt.group.is_empty() && rt.plural == "namespaces" {
                            self.namespace_deleted.notify_waiters();
                            self.namespace_deleted.notify_one();
                        }
                        return Ok(Deleted::Pending(marked));
                    }
                    Err(storage::Error::Conflict { .. }) => continue,
                    Err(err) => return Err(err.into()),
                }
            }
            if options.dry_run {
                return Ok(Deleted::Gone(Arc::unwrap_or_clone(current)));
            }
            if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
                self.delete_custom_objects(&current).await?;
            }
            match self
                .backend
                .delete(&rt.key(ns, name), Some(kv.mod_revision))
                .await
            {
                Ok((revision, _)) => {
                    let mut gone = Arc::unwrap_or_clone(current);
                    set_resource_version(&mut gone, revision);
                    self.after_delete(rt, &gone).await?;
                    return Ok(Deleted::Gone(gone));
                }
                Err(storage::Error::Conflict { .. }) => continue,
                Err(storage::Error::NotFound(_)) => return Err(Error::NotFound(rt.target(name))),
                Err(err) => return Err(err.into()),
            }
        }
        Err(conflict(rt, name))
    }

    /// Deletes every object a list selects; answers the objects deleted or marked terminating.
    pub async fn delete_collection(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        list: &ListOptions,
        options: &DeleteOptions,
    ) -> Result<ObjectList> {
        let mut page = self.list(rt, ns, list).await?;
        let mut deleted = Vec::with_capacity(page.items.len());
        for item in &page.items {
            let name = item["metadata"]["name"].as_str().unwrap_or_default();
            let item_ns = item["metadata"]["namespace"].as_str();
            match self.delete(rt, item_ns.or(ns), name, options).await {
                Ok(Deleted::Gone(o) | Deleted::Pending(o)) => deleted.push(o),
                Err(Error::NotFound(_)) => {}
                Err(err) => return Err(err),
            }
        }
        page.items = deleted;
        page.revision = self.backend.current_revision();
        Ok(page)
    }

    async fn delete_custom_objects(&self, crd: &Value) -> Result<()> {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        if group.is_empty() || plural.is_empty() {
            return Ok(());
        }
        let prefix = format!("/registry/{group}/{plural}/");
        loop {
            let page = self
                .backend
                .list(storage::ListOptions {
                    prefix: &prefix,
                    limit: Some(500),
                    ..Default::default()
                })
                .await?;
            if page.items.is_empty() {
                return Ok(());
            }
            for kv in page.items {
                match self.backend.delete(&kv.key, None).await {
                    Ok(_) | Err(storage::Error::NotFound(_)) => {}
                    Err(err) => return Err(err.into()),
                }
            }
        }
    }

    /// Checks a user's write against the limits and reserves the room it takes until it is
    /// committed (the returned guard). `old` is the stored size of the object it replaces (None
    /// for a create), `new` the size it stores. A write that adds no object and does not grow
    /// the data is always admitted.
    fn admit(
        &self,
        rt: &ResourceType,
        name: &str,
        old: Option<usize>,
        new: usize,
    ) -> Result<Option<Reservation<'_>>> {
        if !self.limits.bounds_storage() {
            return Ok(None);
        }
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let wanted = Usage {
            objects: u64::from(old.is_none()),
            bytes: as_u64(new).saturating_sub(old.map_or(0, as_u64)),
        };
        if wanted == Usage::default() {
            return Ok(None);
        }
        let mut reserved = self.reserved.lock().unwrap_or_else(PoisonError::into_inner);
        let stored = self.backend.usage();
        let held = Usage {
            objects: stored.objects.saturating_add(reserved.objects),
            bytes: stored.bytes.saturating_add(reserved.bytes),
        };
        let refused = |reason: String| {
            Error::Forbidden(format!(
                "{} {name:?} is forbidden: {reason}; reads and deletes still work",
                rt.qualified_resource()
            ))
        };
        if let Some(limit) = self.limits.objects
            && wanted.objects > 0
            && held.objects.saturating_add(wanted.objects) > limit
        {
            let holds = if held.objects == limit {
                format!("the cluster holds {limit} objects, its limit")
            } else {
                format!(
                    "the cluster holds {} objects, its limit is {limit}",
                    held.objects
                )
            };
            return Err(refused(format!(
                "{holds} (objects in {})",
                self.limits.source()
            )));
        }
        if let Some(limit) = self.limits.storage_bytes
            && wanted.bytes > 0
            && held.bytes.saturating_add(wanted.bytes) > limit
        {
            let adds = match old {
                None => format!("this write adds {}", wanted.bytes),
                Some(_) => format!(
                    "this write grows the object by {} bytes to {new}",
                    wanted.bytes
                ),
            };
            return Err(refused(format!(
                "the cluster stores {} bytes and {adds}, past its limit of {limit} bytes (storageBytes in {})",
                held.bytes,
                self.limits.source()
            )));
        }
        reserved.objects += wanted.objects;
        reserved.bytes += wanted.bytes;
        Ok(Some(Reservation {
            reserved: &self.reserved,
            usage: wanted,
        }))
    }

    async fn after_write(&self, rt: &ResourceType) -> Result<()> {
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            self.reload_crds().await?;
        }
        Ok(())
    }

    /// Stores a new object; its revision.
    async fn write_created(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        object: &mut Value,
        admit: Admit,
    ) -> Result<Revision> {
        let stored = to_storage(object, rt, None)?;
        within_object_limit(rt, name, stored.len())?;
        let _room = match admit {
            Admit::WithinLimits => self.admit(rt, name, None, stored.len())?,
            Admit::Always => None,
        };
        match self.backend.create(&rt.key(ns, name), stored).await {
            Ok(revision) => Ok(revision),
            Err(storage::Error::AlreadyExists(_)) => Err(Error::AlreadyExists(rt.target(name))),
            Err(err) => Err(err.into()),
        }
    }

    async fn after_delete(&self, rt: &ResourceType, object: &Value) -> Result<()> {
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            self.delete_custom_objects(object).await?;
        }
        if is_service(rt) {
            super::service_ip::release(self, object).await?;
        }
        self.after_write(rt).await
    }

    /// A namespace keeps existing while its `spec.finalizers` still holds `kubernetes`.
    fn is_waiting_namespace(&self, rt: &ResourceType, object: &Value) -> bool {
        rt.group.is_empty()
            && rt.plural == "namespaces"
            && object["spec"]["finalizers"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
    }

    async fn check_namespace_accepts(&self, ns: &str) -> Result<()> {
        let rt = self.namespaces();
        let Some(kv) = self.backend.get(&rt.key(None, ns)).await? else {
            return Err(Error::NotFound(Target::new("", "namespaces", ns)));
        };
        let object = decode(&kv)?;
        if object["metadata"].get("deletionTimestamp").is_some() {
            return Err(Error::Forbidden(format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            )));
        }
        Ok(())
    }

    /// Metadata validation, and for custom resources pruning, defaulting and schema validation.
    ///
    /// `parked` names a top-level field the write left as stored ([`parked`]) that the stored
    /// object has: neither `object` nor `old` holds it, yet it is there, unchanged, so the
    /// schema's `required` does not miss it (an unchanged field is not validated again).
    #[allow(clippy::too_many_arguments)]
    fn validate(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        old: Option<&Value>,
        parked: Option<&str>,
        options: &WriteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<()> {
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut errors = Vec::new();
        let schema = schema_of(rt);
        if let Some(schema) = &schema {
            let compiled = validation::schema::compiled_for(schema);
            let unchanged = validation::unchanged_fields(object, old);
            let unknown = validation::prune(object, &compiled, &unchanged);
            if !unknown.is_empty() {
                match options.field_validation {
                    FieldValidation::Strict => {
                        let message = validation::strict_decoding_message(&unknown)
                            .unwrap_or_else(|| "strict decoding error".into());
                        return Err(Error::BadRequest(message));
                    }
                    FieldValidation::Warn => warnings
                        .extend(unknown.iter().map(|f| validation::unknown_field_message(f))),
                    FieldValidation::Ignore => {}
                }
            }
            if rt.builtin {
                // Defaults first, as kube-apiserver fills them when it decodes (a binding's
                // `roleRef.apiGroup` is required, and defaulted).
                super::defaults::apply(&rt.group, &rt.kind, object, old);
                // Built-in kinds are typed: a value of the wrong type fails decoding (400), as
                // kube-apiserver's JSON decoder does; the rest is validation (422).
                let found = compiled.validate(object, None);
                if let Some(bad) = found.iter().find(|e| is_type_error(e)) {
                    return Err(Error::BadRequest(format!(
                        "{kind} in version {version:?} cannot be handled as a {kind}: {bad}",
                        kind = rt.kind,
                        version = rt.version,
                    )));
                }
                errors.extend(found);
                errors.extend(validation::builtin::validate(&rt.group, &rt.kind, object));
            } else {
                validation::apply_defaults(object, &compiled, &unchanged);
                // Custom resources ratchet: unchanged fields are not validated again.
                errors.extend(compiled.validate(object, old).into_iter().filter(|e| {
                    !(e.cause == validation::CauseType::Required
                        && Some(e.field.as_str()) == parked)
                }));
                if let Some(rules) =
                    validation::cel::validator_for(&rt.qualified_resource(), &rt.version, schema)
                {
                    errors.extend(validation::cel::validate(
                        &rules, object, old, &errors, warnings,
                    ));
                }
                errors.extend(validation::multicluster::validate(
                    &rt.group, &rt.kind, object, old,
                ));
            }
        }
        let name_rule = rt.name_rule;
        if let Some(meta) = object.get("metadata") {
            let mut meta_errors = validation::validate_object_meta(meta, rt.namespaced, name_rule);
            if old.is_some() {
                // generateName no longer matters once the object exists.
                meta_errors.retain(|e| e.field != "metadata.generateName");
            }
            errors.splice(0..0, meta_errors);
        } else {
            errors.push(validation::FieldError {
                cause: validation::CauseType::Required,
                field: "metadata".into(),
                message: String::new(),
                value: None,
            });
        }
        if rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions" {
            validation::crd_defaults(object);
            errors.extend(validation::validate_crd(object));
        }
        if !errors.is_empty() {
            return Err(Error::invalid(
                &rt.qualified_kind(),
                rt.target(&name),
                errors,
            ));
        }
        match &options.admission {
            Some(admission) => admission.admit(rt, object, old, warnings),
            None => Ok(()),
        }
    }

    /// What the server fills in for particular kinds.
    fn prepare_kind(
        &self,
        rt: &ResourceType,
        object: &mut Value,
        old: Option<&Value>,
        now: &str,
    ) -> Result<()> {
        if !rt.builtin || schema_of(rt).is_none() {
            // Built-ins with a schema were defaulted before validation.
            super::defaults::apply(&rt.group, &rt.kind, object, old);
        }
        super::defaults::strip_empty_metadata(object);
        match (rt.group.as_str(), rt.plural.as_str()) {
            ("", "namespaces") => {
                let name = object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                meta_mut(object)
                    .entry("labels")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
                    .map(|l| l.insert("kubernetes.io/metadata.name".into(), json!(name)));
                if old.is_none() {
                    object["spec"] = json!({"finalizers": ["kubernetes"]});
                    object["status"] = json!({"phase": "Active"});
                }
            }
            ("", "secrets") => {
                if let Some(string_data) =
                    object.as_object_mut().and_then(|o| o.remove("stringData"))
                    && let Some(entries) = string_data.as_object()
                {
                    let data = object
                        .as_object_mut()
                        .map(|o| o.entry("data").or_insert_with(|| json!({})));
                    if let Some(Value::Object(data)) = data {
                        for (k, v) in entries {
                            let text = v.as_str().unwrap_or_default();
                            data.insert(
                                k.clone(),
                                json!(base64::engine::general_purpose::STANDARD.encode(text)),
                            );
                        }
                    }
                }
                if object.get("type").is_none_or(Value::is_null) {
                    object["type"] = json!("Opaque");
                }
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                if let Some(old) = old
                    && let Some(status) = old.get("status")
                {
                    object["status"] = status.clone();
                }
                let catalog = self.registry.catalog();
                crd::set_status(object, &catalog, now);
            }
            _ => {}
        }
        Ok(())
    }
}

/// Whether a write is checked against the limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admit {
    /// A user's write: refused past the limits.
    WithinLimits,
    /// The server's own writes, and those that deleting makes.
    Always,
}

/// Room a write took in the limits until it is committed (or fails).
struct Reservation<'a> {
    reserved: &'a Mutex<Usage>,
    usage: Usage,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut reserved = self.reserved.lock().unwrap_or_else(PoisonError::into_inner);
        reserved.objects = reserved.objects.saturating_sub(self.usage.objects);
        reserved.bytes = reserved.bytes.saturating_sub(self.usage.bytes);
    }
}

/// The stored object an update writes over: decoded (perhaps but for one field, `parked`) and
/// the key-value it was read from.
#[derive(Clone, Copy)]
struct Read<'a> {
    object: &'a Value,
    kv: &'a KeyValue,
    parked: Option<&'a Parked>,
}

impl<'a> Read<'a> {
    fn of(object: &'a Value, kv: &'a KeyValue, parked: Option<&'a Parked>) -> Self {
        Read { object, kv, parked }
    }
}

/// The top-level field a write of `subresource` cannot change and so may leave as stored
/// ([`parked`]): the status, through the main resource of a kind with a status subresource;
/// the spec, through the status subresource.
///
/// Only where nothing in the write reads that field: a custom resource stored at the version
/// written, with no admission check of the write (RBAC's or a policy's), and a schema with no
/// CEL rules, nothing at its root that weighs the object whole (property counts, combinators)
/// and no default for the field. Everything else in an update already leaves an unchanged
/// top-level field alone: it was pruned, defaulted and validated when it was written
/// (validation ratchets).
fn parks(
    rt: &ResourceType,
    subresource: Option<&str>,
    options: &WriteOptions,
) -> Option<&'static str> {
    if rt.builtin || !rt.status || rt.version != rt.storage_version || options.admission.is_some() {
        return None;
    }
    let key = match subresource {
        None => "status",
        Some("status") => "spec",
        Some(_) => return None,
    };
    let schema = schema_of(rt)?;
    let root = schema.as_object()?;
    const WHOLE: [&str; 7] = [
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "minProperties",
        "maxProperties",
        "x-kubernetes-validations",
    ];
    // A root `required` naming the field is met by the stored field ([`Store::validate`]).
    let weighs_whole = WHOLE.iter().any(|k| root.contains_key(*k))
        || schema["properties"][key].get("default").is_some();
    if weighs_whole
        || validation::cel::validator_for(&rt.qualified_resource(), &rt.version, &schema).is_some()
    {
        return None;
    }
    Some(key)
}

/// Puts a parked field back into `object`, unless it has one already (a deleted object's
/// answer got it before).
fn unpark(object: &mut Value, parked: &Parked) -> Result<()> {
    if object.get(parked.key).is_some() {
        return Ok(());
    }
    parked::restore(object, parked)
        .map_err(|e| Error::Internal(format!("stored {} is corrupt: {e}", parked.key)))
}

/// Whether `new` holds fewer finalizers than `current` (`metadata.finalizers`, or for a
/// namespace `spec.finalizers`): a step of a deletion, admitted whatever the limits.
/// What an update through `subresource` writes: the status subresource changes the status only
/// (and, applied, its own managed fields), `approval` a CertificateSigningRequest's conditions,
/// `finalize` a Namespace's finalizers; the object itself leaves the status as stored where the
/// kind has a status subresource.
fn subresource_view(
    rt: &ResourceType,
    name: &str,
    subresource: Option<&str>,
    current: &Value,
    mut new: Value,
    applied: bool,
) -> Result<Value> {
    match subresource {
        Some("status") => {
            let status = new.as_object_mut().and_then(|o| o.remove("status"));
            let managed_fields = applied.then(|| {
                new["metadata"]
                    .as_object_mut()
                    .and_then(|m| m.remove("managedFields"))
                    .unwrap_or(Value::Null)
            });
            keep_as(&mut new, current, "status");
            if let (Some(status), Some(o)) = (status, new.as_object_mut()) {
                o.insert("status".into(), status);
            }
            if let Some(managed_fields) = managed_fields {
                new["metadata"]["managedFields"] = managed_fields;
            }
        }
        // The approval subresource changes the request's conditions only.
        Some("approval")
            if rt.group == "certificates.k8s.io" && rt.plural == "certificatesigningrequests" =>
        {
            let mut merged = current.clone();
            merged["status"]["conditions"] = new["status"]["conditions"].clone();
            new = merged;
        }
        Some("finalize") if rt.group.is_empty() && rt.plural == "namespaces" => {
            let mut merged = current.clone();
            merged["spec"]["finalizers"] = new["spec"]["finalizers"].clone();
            new = merged;
        }
        Some(other) => {
            return Err(Error::NotFound(Target::new(
                &rt.group,
                &format!("{}/{other}", rt.plural),
                name,
            )));
        }
        // An apply merges into the current object, so its status is most often there already.
        None if rt.status => match current.get("status") {
            Some(status) if new.get("status") != Some(status) => new["status"] = status.clone(),
            Some(_) => {}
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        },
        None => {}
    }
    Ok(new)
}

/// `current` with a merge, strategic merge or JSON patch applied: a pure step of
/// [`Store::patch_as`] (server-side apply takes its own way).
fn patched(
    rt: &ResourceType,
    name: &str,
    current: &Value,
    patch_type: PatchType,
    patch_doc: Value,
) -> Result<Value> {
    let patched = match patch_type {
        // Built apart from `current`, copying only what the patch leaves of it.
        PatchType::Merge => patch::merged(current, patch_doc),
        PatchType::Strategic => {
            let mut patched = Value::clone(current);
            let meta =
                patch::strategic::BuiltinPatchMeta::for_kind(&rt.group, &rt.version, &rt.kind);
            patch::strategic::apply(&mut patched, &patch_doc, &meta)
                .map_err(|err| patch_failed(rt, name, err.is_bad_request(), &err))?;
            patched
        }
        PatchType::Json => {
            let mut patched = Value::clone(current);
            match patch::json_patch(&mut patched, &patch_doc) {
                Ok(()) => patched,
                Err(patch::PatchError::TooManyOperations(n)) => {
                    return Err(Error::EntityTooLarge(format!(
                        "The allowed maximum operations in a JSON patch is {}, got {n}",
                        patch::MAX_OPERATIONS
                    )));
                }
                Err(err) => return Err(patch_failed(rt, name, err.is_malformed(), &err)),
            }
        }
        PatchType::Apply => {
            return Err(Error::BadRequest(
                "an apply patch is not applied as a patch".into(),
            ));
        }
    };
    if !patched.is_object() {
        return Err(Error::BadRequest(
            "the patch did not produce an object".into(),
        ));
    }
    Ok(patched)
}

/// Gives `new` the metadata the server owns as `current` has it.
fn keep_server_metadata(current: &Value, new: &mut Value) {
    let old_meta = &current["metadata"];
    let meta = meta_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "name",
        "namespace",
        "selfLink",
    ] {
        match old_meta.get(field) {
            Some(v) => {
                meta.insert(field.into(), v.clone());
            }
            None => {
                meta.remove(field);
            }
        }
    }
    meta.remove("resourceVersion");
}

/// Refuses finalizers added to an object being deleted, as kube-apiserver does.
fn check_no_new_finalizers(
    rt: &ResourceType,
    name: &str,
    current: &Value,
    new: &Value,
) -> Result<()> {
    if current["metadata"].get("deletionTimestamp").is_none() {
        return Ok(());
    }
    let old: Vec<&Value> = finalizers(current).collect();
    let added: Vec<String> = finalizers(new)
        .filter(|f| !old.contains(f))
        .filter_map(|f| f.as_str().map(|s| format!("{s:?}")))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    Err(Error::invalid(
        &rt.qualified_kind(),
        rt.target(name),
        vec![validation::FieldError {
            cause: validation::CauseType::Forbidden,
            field: "metadata.finalizers".into(),
            message: format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                added.join(", ")
            ),
            value: None,
        }],
    ))
}

fn removes_finalizers(current: &Value, new: &Value) -> bool {
    let count = |list: &Value| list.as_array().map_or(0, Vec::len);
    count(&new["metadata"]["finalizers"]) < count(&current["metadata"]["finalizers"])
        || count(&new["spec"]["finalizers"]) < count(&current["spec"]["finalizers"])
}

/// Whether a schema error is about a value's type (a decoding error for typed kinds).
fn is_type_error(error: &validation::FieldError) -> bool {
    matches!(error.cause, validation::CauseType::TypeInvalid)
        || error.message.contains("must be of type")
}

const EXPIRED_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn conflict(rt: &ResourceType, name: &str) -> Error {
    Error::Conflict {
        target: rt.target(name),
        reason: MODIFIED.into(),
    }
}

/// Refuses a delete whose preconditions (uid, resourceVersion) the stored object does not meet.
fn check_delete_preconditions(
    rt: &ResourceType,
    name: &str,
    current: &Value,
    revision: Revision,
    options: &DeleteOptions,
) -> Result<()> {
    if let Some(uid) = &options.precondition_uid
        && current["metadata"]["uid"].as_str() != Some(uid.as_str())
    {
        return Err(Error::Conflict {
            target: rt.target(name),
            reason: format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                current["metadata"]["uid"].as_str().unwrap_or_default()
            ),
        });
    }
    if let Some(rv) = &options.precondition_resource_version
        && parse_resource_version(rv)? != revision
    {
        return Err(Error::Conflict {
            target: rt.target(name),
            reason: format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {revision}"
            ),
        });
    }
    Ok(())
}

/// `current` marked terminating: its deletion time set, the garbage collector's `collector`
/// finalizer added when the propagation asks for one, a namespace's phase `Terminating`.
fn marked_for_deletion(rt: &ResourceType, current: &Value, collector: Option<&str>) -> Value {
    let mut marked = current.clone();
    if let Some(finalizer) = collector {
        add_finalizer(&mut marked, finalizer);
    }
    marked["metadata"]["deletionTimestamp"] = json!(now());
    marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    if let Some(g) = marked["metadata"]["generation"].as_i64()
        && g > 0
    {
        marked["metadata"]["generation"] = json!(g + 1);
    }
    if rt.group.is_empty() && rt.plural == "namespaces" {
        marked["status"] = json!({"phase": "Terminating"});
    }
    if let Some(m) = marked["metadata"].as_object_mut() {
        m.remove("resourceVersion");
    }
    marked
}

/// A patch that could not be applied: 400 when the patch itself is malformed, otherwise 422.
fn patch_failed(
    rt: &ResourceType,
    name: &str,
    malformed: bool,
    err: &dyn std::fmt::Display,
) -> Error {
    if malformed {
        return Error::BadRequest(err.to_string());
    }
    Error::invalid(
        &rt.qualified_kind(),
        rt.target(name),
        vec![validation::FieldError {
            cause: validation::CauseType::Invalid,
            field: String::new(),
            message: err.to_string(),
            value: None,
        }],
    )
}

fn apply_error(rt: &ResourceType, name: &str, err: apply::ApplyError) -> Error {
    match err {
        apply::ApplyError::Conflicts(conflicts) => {
            let message = apply::ApplyError::Conflicts(conflicts.clone()).message();
            Error::ApplyConflict {
                target: rt.target(name),
                message,
                conflicts: conflicts
                    .into_iter()
                    .map(|c| (c.manager, c.field))
                    .collect(),
            }
        }
        apply::ApplyError::Invalid(message) => Error::BadRequest(message),
    }
}

fn list_invalid(field: &str, message: &str) -> Error {
    Error::invalid(
        "ListOptions.meta.k8s.io",
        Target::default(),
        vec![validation::FieldError {
            cause: validation::CauseType::Forbidden,
            field: field.into(),
            message: message.into(),
            value: None,
        }],
    )
}

/// The field manager of a write, and the operation time.
fn manager<'a>(
    api_version: &'a str,
    options: &'a WriteOptions,
    subresource: Option<&'a str>,
    now: &'a str,
) -> apply::Manager<'a> {
    apply::Manager {
        name: &options.field_manager,
        api_version,
        subresource,
        time: now,
    }
}

/// List semantics for server-side apply: built-in kinds use the Kubernetes types' merge keys,
/// custom resources their schema's `x-kubernetes-list-type`.
fn lists(rt: &ResourceType) -> SchemaLists<'_> {
    SchemaLists {
        schema: rt.schema.as_deref(),
    }
}

struct SchemaLists<'a> {
    schema: Option<&'a Value>,
}

impl ListTypes for SchemaLists<'_> {
    fn list_type(&self, path: &[&str]) -> ListType {
        if let Some(schema) = self.schema {
            return match validation::list_type(schema, path) {
                Some(validation::ListKind::Set) => ListType::Set,
                Some(validation::ListKind::Map(keys)) => ListType::Map(keys),
                _ => ListType::Atomic,
            };
        }
        builtin_list_type(path)
    }
}

/// The merge keys of the built-in Kubernetes types (`x-kubernetes-list-map-keys`).
fn builtin_list_type(path: &[&str]) -> ListType {
    let last = path.last().copied().unwrap_or_default();
    let parent = path
        .len()
        .checked_sub(2)
        .map(|i| path[i])
        .unwrap_or_default();
    let map = |keys: &[&str]| ListType::Map(keys.iter().map(|k| k.to_string()).collect());
    match (parent, last) {
        ("metadata", "finalizers") => ListType::Set,
        ("metadata", "ownerReferences") => map(&["uid"]),
        (_, "containers" | "initContainers" | "ephemeralContainers") => map(&["name"]),
        (_, "volumes" | "imagePullSecrets" | "env" | "hostAliases") if last != "hostAliases" => {
            map(&["name"])
        }
        (_, "hostAliases") => map(&["ip"]),
        (_, "volumeMounts") => map(&["mountPath"]),
        (_, "volumeDevices") => map(&["devicePath"]),
        ("spec", "ports") if path.len() == 2 => map(&["port", "protocol"]),
        (_, "ports") => map(&["containerPort", "protocol"]),
        (_, "conditions") => map(&["type"]),
        (_, "tolerations" | "args" | "command") => ListType::Atomic,
        _ => ListType::Atomic,
    }
}

// ---- object helpers ------------------------------------------------------------------------

/// The current time as Kubernetes writes timestamps (RFC 3339, seconds, UTC).
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Decodes a stored value and fills in its `resourceVersion`.
pub fn decode(kv: &KeyValue) -> Result<Value> {
    let mut object: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| Error::Internal(format!("stored object {} is corrupt: {e}", kv.key)))?;
    set_resource_version(&mut object, kv.mod_revision);
    Ok(object)
}

/// Makes `object`'s top-level fields but `except` equal to `current`'s, cloning only those that
/// differ (a status write keeps everything but the status as stored, and most of it is
/// unchanged); `except` is left as it is.
fn keep_as(object: &mut Value, current: &Value, except: &str) {
    let (Some(object), Some(current)) = (object.as_object_mut(), current.as_object()) else {
        return;
    };
    object.retain(|key, _| key == except || current.contains_key(key));
    for (key, value) in current {
        if key != except && object.get(key) != Some(value) {
            object.insert(key.clone(), value.clone());
        }
    }
}

/// The bytes stored for an object: without `resourceVersion` (storage assigns it), at the storage
/// version. Serializes in place rather than cloning the object.
/// The largest object a write may store: what etcd takes in one request by default
/// (`--max-request-bytes`, 1.5 MiB), so that a cluster moved to etcd holds what SQLite held.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// Refuses a write whose object would be larger than [`MAX_OBJECT_BYTES`] stored. kube-apiserver
/// passes etcd's refusal on as a 500 (`etcdserver: request is too large`); atoll answers 413,
/// naming the object, since the client's request is at fault.
fn within_object_limit(rt: &ResourceType, name: &str, stored: usize) -> Result<()> {
    if stored <= MAX_OBJECT_BYTES {
        return Ok(());
    }
    let target = rt.target(name);
    Err(Error::EntityTooLarge(format!(
        "{} {name:?} would take {stored} bytes stored, more than the {MAX_OBJECT_BYTES} an object may",
        if target.group.is_empty() {
            target.resource.clone()
        } else {
            format!("{}.{}", target.resource, target.group)
        }
    )))
}

/// `parked`, when the write read the object without one of its fields, is that field as it was
/// stored, put back into the bytes.
fn to_storage(object: &mut Value, rt: &ResourceType, parked: Option<&Parked>) -> Result<Bytes> {
    if rt.builtin && rt.version != rt.storage_version {
        // Versions of a built-in differ in shape: store a converted copy.
        let mut stored = object.clone();
        super::conversion::convert_body(
            &mut stored,
            &rt.group,
            &rt.plural,
            &rt.version,
            &rt.storage_version,
        );
        let storage_rt = ResourceType {
            version: rt.storage_version.clone(),
            ..rt.clone()
        };
        return to_storage(&mut stored, &storage_rt, parked);
    }
    let resource_version = object["metadata"]
        .as_object_mut()
        .and_then(|m| m.remove("resourceVersion"));
    let storage_version = super::api_version(&rt.group, &rt.storage_version);
    let served = object
        .as_object_mut()
        .and_then(|o| o.insert("apiVersion".into(), json!(storage_version)));
    let bytes = parked::encode(object, parked);
    if let Some(o) = object.as_object_mut() {
        match served {
            Some(v) => o.insert("apiVersion".into(), v),
            None => o.remove("apiVersion"),
        };
    }
    if let (Some(rv), Some(m)) = (resource_version, object["metadata"].as_object_mut()) {
        m.insert("resourceVersion".into(), rv);
    }
    bytes
        .map(exact)
        .map_err(|e| Error::Internal(format!("cannot encode object: {e}")))
}

/// The stored bytes in a buffer of their own size: the storage keeps them as the key's latest
/// value for as long as the object lives, and a serialized buffer grown by doubling leaves up
/// to half of itself unused (an allocator keeps a shrunk block whole while it is at least half
/// used, so shrinking in place frees nothing).
fn exact(bytes: Vec<u8>) -> Bytes {
    if bytes.capacity() - bytes.len() > bytes.len() / 16 {
        Bytes::copy_from_slice(&bytes)
    } else {
        Bytes::from(bytes)
    }
}

/// Presents a stored object at the version of `rt` (CRD versions share one schema shape here:
/// conversion strategy `None` rewrites only `apiVersion`, as upstream does).
fn is_service(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "services"
}

/// The schema objects of `rt` are validated against: a CRD version's, or a built-in kind's.
fn schema_of(rt: &ResourceType) -> Option<std::sync::Arc<Value>> {
    match &rt.schema {
        Some(schema) => Some(schema.clone()),
        None if rt.builtin => crate::openapi::builtin_schema(&rt.group, &rt.version, &rt.kind),
        None => None,
    }
}

/// `v1` of `apps/v1` or `v1`.
fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or(api_version)
}

/// Whether `object` is at the version of `rt` already.
fn is_converted(object: &Value, rt: &ResourceType) -> bool {
    object["kind"].as_str() == Some(rt.kind.as_str())
        && object["apiVersion"].as_str() == Some(rt.api_version().as_str())
}

/// Converts `object` to the version of `rt`: a built-in's body where versions differ in shape;
/// a custom resource's by relabelling (its CRD's conversion `None`), then pruned to what the
/// version's schema knows, as kube-apiserver prunes after converting (a field only another
/// version has is not shown).
pub fn convert(object: &mut Value, rt: &ResourceType) {
    if rt.builtin
        && let Some(from) = object["apiVersion"]
            .as_str()
            .map(|v| version_of(v).to_owned())
    {
        super::conversion::convert_body(object, &rt.group, &rt.plural, &from, &rt.version);
    } else if let Some(schema) = &rt.schema
        && object["apiVersion"].as_str() != Some(rt.api_version().as_str())
    {
        validation::prune(object, &validation::schema::compiled_for(schema), &[]);
    }
    if let Some(o) = object.as_object_mut() {
        o.insert("apiVersion".into(), json!(rt.api_version()));
        o.insert("kind".into(), json!(rt.kind));
    }
}

pub fn set_resource_version(object: &mut Value, revision: Revision) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), json!(revision.to_string()));
    }
}

fn meta_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    object["metadata"]
        .as_object_mut()
        .expect("metadata was just made an object")
}

/// Adds `finalizer` to the object's finalizers unless it is there.
fn add_finalizer(object: &mut Value, finalizer: &str) {
    let meta = meta_mut(object);
    let list = meta.entry("finalizers").or_insert_with(|| json!([]));
    if let Some(list) = list.as_array_mut()
        && !list.iter().any(|f| f == finalizer)
    {
        list.push(json!(finalizer));
    }
}

fn finalizers(object: &Value) -> impl Iterator<Item = &Value> {
    object["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
}

/// Whether anything outside `metadata` (and `status`, when it is a subresource) changed.
fn spec_changed(old: &Value, new: &Value, status_subresource: bool) -> bool {
    let skip: &[&str] = if status_subresource {
        &["metadata", "status"]
    } else {
        &["metadata"]
    };
    !same_object_fields(old, new, skip)
}

/// Defaults `apiVersion` and `kind` from the URL (the Python client omits them) and rejects a
/// body of another kind.
fn check_type_meta(object: &mut Value, rt: &ResourceType) -> Result<()> {
    let Some(o) = object.as_object_mut() else {
        return Err(Error::BadRequest(
            "the body of the request must be a JSON object".into(),
        ));
    };
    let api_version = rt.api_version();
    match o.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            o.insert("apiVersion".into(), json!(api_version));
        }
        Some(v) if v == api_version => {}
        Some(v) => {
            // Another served version of the same resource is fine (converted on storage).
            let group = v.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
            if group != rt.group {
                return Err(Error::BadRequest(format!(
                    "the API version in the data ({v}) does not match the expected API version ({api_version})"
                )));
            }
        }
    }
    match o.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            o.insert("kind".into(), json!(rt.kind));
        }
        Some(k) if k == rt.kind => {}
        Some(k) => {
            return Err(Error::BadRequest(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                rt.kind
            )));
        }
    }
    Ok(())
}

fn set_namespace(object: &mut Value, rt: &ResourceType, ns: Option<&str>) -> Result<()> {
    let body_ns = object["metadata"]["namespace"].as_str().map(str::to_owned);
    if !rt.namespaced {
        if let Some(m) = object["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        return Ok(());
    }
    let Some(ns) = ns else {
        return Err(Error::BadRequest(
            "the namespace of the object must be given in the URL".into(),
        ));
    };
    match body_ns.as_deref() {
        None | Some("") => {
            meta_mut(object).insert("namespace".into(), json!(ns));
            Ok(())
        }
        Some(b) if b == ns => Ok(()),
        Some(_) => Err(Error::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
                .into(),
        )),
    }
}

fn generate_name(object: &mut Value) {
    let has_name = object["metadata"]["name"]
        .as_str()
        .is_some_and(|n| !n.is_empty());
    if has_name {
        return;
    }
    let Some(prefix) = object["metadata"]["generateName"]
        .as_str()
        .map(str::to_owned)
    else {
        return;
    };
    // The alphabet upstream uses: no vowels, no ambiguous characters.
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let suffix: String = (0..5)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect();
    // At most 58 bytes, cut where a character ends (a cut inside one panicked before).
    let mut end = prefix.len().min(58);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    let prefix = &prefix[..end];
    meta_mut(object).insert("name".into(), json!(format!("{prefix}{suffix}")));
}

/// The `metadata.resourceVersion` an object was sent with, as a precondition of its write.
fn precondition(object: &Value) -> Result<Option<Revision>> {
    match object["metadata"].get("resourceVersion") {
        Some(Value::String(rv)) if !rv.is_empty() => parse_resource_version(rv).map(Some),
        _ => Ok(None),
    }
}

/// Fills `metadata.name` from the URL when the body has none; rejects a body naming another object.
fn settle_name(object: &mut Value, name: &str) -> Result<()> {
    match object["metadata"]["name"].as_str() {
        Some(n) if n == name => Ok(()),
        Some("") | None => {
            meta_mut(object).insert("name".into(), json!(name));
            Ok(())
        }
        Some(other) => Err(Error::BadRequest(format!(
            "the name of the object ({other}) does not match the name on the URL ({name})"
        ))),
    }
}

fn parse_resource_version(rv: &str) -> Result<Revision> {
    rv.parse::<Revision>()
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| Error::BadRequest(format!("invalid resource version: {rv:?}")))
}

/// Whether an object matches label and field selectors.
pub fn matches(object: &Value, labels: &LabelSelector, fields: &FieldSelector) -> bool {
    (labels.is_empty() || labels.matches(&object["metadata"]["labels"]))
        && (fields.is_empty() || fields.matches(object))
}

pub(crate) fn encode_continue(revision: Revision, key: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": key});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

fn decode_continue(token: &str, prefix: &str) -> Result<(Revision, String)> {
    let invalid = || {
        Error::BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
                .to_string(),
        )
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| invalid())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    let rev = value["rv"].as_i64().ok_or_else(invalid)?;
    let key = value["start"].as_str().ok_or_else(invalid)?;
    if !key.starts_with(prefix) {
        return Err(invalid());
    }
    Ok((rev, key.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delete_marks_the_object_terminating_as_kube_apiserver_does() {
        let catalog = crate::registry::Registry::new().catalog();
        let namespaces = catalog.lookup("", "v1", "namespaces").unwrap();
        let deployments = catalog.lookup("apps", "v1", "deployments").unwrap();
        let namespace = json!({"metadata": {"name": "team", "resourceVersion": "7"},
                               "status": {"phase": "Active"}});
        let marked = marked_for_deletion(&namespaces, &namespace, None);
        assert_eq!(marked["status"]["phase"], "Terminating");
        assert!(marked["metadata"]["deletionTimestamp"].is_string());
        assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
        assert!(marked["metadata"].get("resourceVersion").is_none());

        let deployment = json!({"metadata": {"name": "web", "generation": 3,
                                             "finalizers": ["example.com/keep"]}});
        let marked = marked_for_deletion(&deployments, &deployment, Some(FOREGROUND_FINALIZER));
        assert_eq!(marked["metadata"]["generation"], 4);
        assert_eq!(
            marked["metadata"]["finalizers"],
            json!(["example.com/keep", FOREGROUND_FINALIZER])
        );
        assert!(marked.get("status").is_none());
    }

    #[test]
    fn a_delete_whose_preconditions_fail_says_which() {
        let catalog = crate::registry::Registry::new().catalog();
        let configmaps = catalog.lookup("", "v1", "configmaps").unwrap();
        let current = json!({"metadata": {"name": "c", "uid": "u-1"}});
        let options = |uid: Option<&str>, rv: Option<&str>| DeleteOptions {
            precondition_uid: uid.map(str::to_owned),
            precondition_resource_version: rv.map(str::to_owned),
            ..DeleteOptions::default()
        };
        let check =
            |o: &DeleteOptions| check_delete_preconditions(&configmaps, "c", &current, 9, o);
        assert!(check(&options(Some("u-1"), Some("9"))).is_ok());
        let uid = check(&options(Some("u-2"), None)).unwrap_err().to_string();
        assert!(
            uid.contains("UID in precondition: u-2, UID in object meta: u-1"),
            "{uid}"
        );
        let rv = check(&options(None, Some("8"))).unwrap_err().to_string();
        assert!(
            rv.contains("ResourceVersion in precondition: 8, ResourceVersion in object meta: 9"),
            "{rv}"
        );
        assert!(check(&options(None, Some("x"))).is_err());
    }

    #[test]
    fn a_write_leaves_the_field_nothing_in_it_reads() {
        let resource = |root: Value| {
            let mut schema = json!({"type": "object", "required": ["spec"], "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}});
            schema
                .as_object_mut()
                .unwrap()
                .extend(root.as_object().unwrap().clone());
            let crd = json!({"metadata": {"name": "gates.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "gates", "singular": "gate", "kind": "Gate"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "subresources": {"status": {}},
                        "schema": {"openAPIV3Schema": schema}}]},
                "status": {"conditions": [{"type": "Established", "status": "True"}]}});
            super::super::crd::resource_types(&crd).remove(0)
        };
        let options = WriteOptions::default();
        // A root `required` naming the field is met by the stored field: both writes park.
        let plain = resource(json!({}));
        assert_eq!(parks(&plain, Some("status"), &options), Some("spec"));
        assert_eq!(parks(&plain, None, &options), Some("status"));
        assert_eq!(parks(&plain, Some("scale"), &options), None);
        // Whatever weighs the whole object reads the field too.
        let rule = json!({"x-kubernetes-validations": [{"rule": "has(self.spec)"}]});
        for root in [
            rule,
            json!({"maxProperties": 4}),
            json!({"anyOf": [{"required": ["spec"]}]}),
        ] {
            let rt = resource(root.clone());
            assert_eq!(parks(&rt, Some("status"), &options), None, "{root}");
            assert_eq!(parks(&rt, None, &options), None, "{root}");
        }
        let catalog = crate::registry::Registry::new().catalog();
        let deployments = catalog.lookup("apps", "v1", "deployments").unwrap();
        assert_eq!(parks(&deployments, Some("status"), &options), None);
    }

    #[test]
    fn stored_bytes_are_kept_in_a_buffer_of_their_size() {
        let object = json!({"metadata": {"name": "x"}, "data": {"key": "v".repeat(3000)}});
        let serialized = serde_json::to_vec(&object).unwrap();
        assert!(serialized.capacity() > serialized.len() + serialized.len() / 16);
        let kept = Vec::from(exact(serialized.clone()));
        assert_eq!(kept, serialized);
        assert_eq!(kept.capacity(), kept.len());

        // A buffer already about its size is kept as it is, without a copy.
        let mut tight = serialized.clone();
        tight.shrink_to_fit();
        let pointer = tight.as_ptr();
        let kept = exact(tight);
        assert_eq!(kept.as_ptr(), pointer);
    }
}
