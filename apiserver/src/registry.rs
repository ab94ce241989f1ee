//! What resources exist: the built-in kinds plus every established CustomResourceDefinition, with
//! their scope, schemas, subresources and printer columns; and the object semantics every
//! resource shares ([`store`]).
//!
//! The catalog is an immutable snapshot behind an `Arc`, swapped whole when a CRD changes, so a
//! request holds one consistent view and never a lock.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use serde_json::Value;

pub mod actor;
pub mod builtin;
pub mod certificates;
pub mod conversion;
pub mod crd;
pub mod defaults;
pub mod endpoints;
pub mod garbage;
pub mod kubernetes_service;
pub mod namespace;
pub mod namespace_contents;
mod parked;
pub mod selector;
pub mod service_ip;
pub mod service_ip_repair;
pub mod store;

/// The verbs every stored resource supports.
pub const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Where the `scale` subresource finds its numbers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// JSON path of the desired replicas, such as `.spec.replicas`.
    pub spec_replicas: String,
    /// JSON path of the observed replicas, such as `.status.replicas`.
    pub status_replicas: String,
    /// JSON path of the label selector (a string or a LabelSelector), if any.
    pub label_selector: Option<String>,
}

/// One resource at one group/version.
#[derive(Clone, Debug)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    /// Whether `/status` is a subresource (and the main resource then ignores status).
    pub status: bool,
    pub scale: Option<ScalePaths>,
    /// The version objects of this resource are stored at.
    pub storage_version: String,
    /// The CRD's `openAPIV3Schema` for this version; `None` for built-in kinds.
    pub schema: Option<Arc<Value>>,
    /// The CRD's `additionalPrinterColumns` for this version.
    pub printer_columns: Vec<Value>,
    /// Built-in kinds accept strategic merge patch; custom resources do not.
    pub builtin: bool,
    /// Whether the resource is only created, never stored (such as access reviews).
    pub virtual_only: bool,
    /// The verbs discovery lists.
    pub verbs: &'static [&'static str],
    /// The rule `metadata.name` follows.
    pub name_rule: crate::validation::NameRule,
    /// Whether an immediate DELETE answers the deleted object rather than a Success Status.
    pub delete_returns_object: bool,
}

impl ResourceType {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    /// `configmaps` or `widgets.example.com`.
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The kind as upstream names it in Invalid messages: `ConfigMap` or `Widget.example.com`.
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// The storage key prefix of every object of this resource: `/registry/<group>/<plural>/`.
    pub fn key_prefix(&self) -> String {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        format!("/registry/{group}/{}/", self.plural)
    }

    /// The storage key prefix of one namespace (or of all objects for a cluster-scoped resource).
    pub fn namespace_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}{ns}/", self.key_prefix()),
            _ => self.key_prefix(),
        }
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}{name}", self.namespace_prefix(namespace))
    }

    /// Whether objects carry `metadata.generation`: custom resources, CRDs, workloads, Pods
    /// and admission configuration (webhook configurations, policies and their bindings), as
    /// upstream; ConfigMaps, Secrets, Services and the like do not.
    pub fn tracks_generation(&self) -> bool {
        !self.builtin
            || matches!(
                self.group.as_str(),
                "apps" | "apiextensions.k8s.io" | "admissionregistration.k8s.io"
            )
            || (self.group.is_empty() && self.plural == "pods")
    }

    pub fn target(&self, name: &str) -> crate::error::Target {
        crate::error::Target::new(&self.group, &self.plural, name)
    }
}

pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// One snapshot of every served resource.
#[derive(Default)]
pub struct Catalog {
    /// In discovery order: groups in priority order, the preferred version first within a group.
    pub types: Vec<Arc<ResourceType>>,
    by_path: HashMap<(String, String, String), Arc<ResourceType>>,
    /// Changes whenever the set of resources or a schema changes (for discovery and OpenAPI hashes).
    pub generation: u64,
}

impl Catalog {
    fn new(types: Vec<ResourceType>, generation: u64) -> Self {
        Self::of(types.into_iter().map(Arc::new).collect(), generation)
    }

    fn of(types: Vec<Arc<ResourceType>>, generation: u64) -> Self {
        let by_path = types
            .iter()
            .map(|t| {
                (
                    (t.group.clone(), t.version.clone(), t.plural.clone()),
                    t.clone(),
                )
            })
            .collect();
        Catalog {
            types,
            by_path,
            generation,
        }
    }

    /// The resource served at `/apis/<group>/<version>/<plural>` (or `/api/v1/<plural>`).
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.by_path
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .cloned()
    }

    /// Every served version of one group/resource (the same objects under other versions).
    pub fn versions_of<'a>(
        &'a self,
        group: &'a str,
        plural: &'a str,
    ) -> impl Iterator<Item = &'a Arc<ResourceType>> + 'a {
        self.types
            .iter()
            .filter(move |t| t.plural == plural && t.group == group)
    }

    /// Groups in discovery order, each with its versions in preference order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in &self.types {
            match groups.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) => {
                    if !versions.contains(&t.version) {
                        versions.push(t.version.clone());
                    }
                }
                None => groups.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        // A group of CRDs lists its versions by Kubernetes version priority, across its CRDs (the
        // first is the preferred version clients use), as kube-apiserver does; a built-in
        // group's order is upstream's.
        for (group, versions) in &mut groups {
            if !self.types.iter().any(|t| t.builtin && t.group == *group) {
                versions.sort_by_key(|v| std::cmp::Reverse(crd::version_priority(v)));
            }
        }
        groups
    }

    /// The resources of one group/version, in discovery order.
    pub fn resources(&self, group: &str, version: &str) -> Vec<Arc<ResourceType>> {
        self.types
            .iter()
            .filter(|t| t.group == group && t.version == version)
            .cloned()
            .collect()
    }

    /// Namespaced resources that live in storage (what a namespace deletion must empty).
    pub fn namespaced_storage_types(&self) -> Vec<Arc<ResourceType>> {
        let mut seen = std::collections::HashSet::new();
        self.types
            .iter()
            .filter(|t| t.namespaced && !t.virtual_only && t.version == t.storage_version)
            .filter(|t| seen.insert(t.key_prefix()))
            .cloned()
            .collect()
    }
}

/// The live catalog: built-ins plus established CRDs.
pub struct Registry {
    catalog: RwLock<Arc<Catalog>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

/// The catalog of the built-in kinds, which every registry in the process starts from and
/// shares (with its resource types) until CRDs change it.
static BUILTINS: LazyLock<Arc<Catalog>> =
    LazyLock::new(|| Arc::new(Catalog::new(builtin::types(), 1)));

impl Registry {
    /// A registry with the built-in kinds only.
    pub fn new() -> Self {
        Registry {
            catalog: RwLock::new(BUILTINS.clone()),
        }
    }

    /// The current snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        match self.catalog.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Rebuilds the catalog from the stored CRDs (objects as stored, any order).
    pub fn set_crds(&self, crds: &[Value]) {
        let mut types = BUILTINS.types.clone();
        let mut crds: Vec<&Value> = crds.iter().collect();
        crds.sort_by_key(|c| crd::sort_key(c));
        for object in crds {
            types.extend(crd::resource_types(object).into_iter().map(Arc::new));
        }
        let only_builtins = types.len() == BUILTINS.types.len();
        let mut guard = match self.catalog.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if only_builtins && Arc::ptr_eq(&guard, &BUILTINS) {
            // No CRDs, and none before: the shared built-in catalog stays.
            return;
        }
        let generation = guard.generation + 1;
        *guard = Arc::new(Catalog::of(types, generation));
    }
}
