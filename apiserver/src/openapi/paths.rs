//! The path items of one resource: collection and item paths (namespaced or cluster-scoped),
//! `/status` and `/scale`, with the operations, parameters and extensions kubectl reads.

use serde_json::{Map, Value, json};

use super::builtin::{DELETE_OPTIONS, PATCH, REF_PREFIX, SCALE, STATUS};
use crate::registry::ResourceType;

/// Patch media types every resource accepts.
const PATCH_TYPES: [&str; 3] = [
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
];
/// Accepted only by built-in kinds; advertising it for a custom resource makes kubectl send a
/// patch the server must refuse.
const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// The definition names one resource's operations refer to.
pub struct Schemas<'a> {
    pub kind: &'a str,
    pub list: &'a str,
}

/// Adds the paths of `resource` to `paths`.
pub fn add(paths: &mut Map<String, Value>, resource: &ResourceType, schemas: &Schemas<'_>) {
    let prefix = if resource.group.is_empty() {
        format!("/api/{}", resource.version)
    } else {
        format!("/apis/{}/{}", resource.group, resource.version)
    };
    let op = Ops::new(resource, schemas);
    let scope = if resource.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    let collection = format!("{prefix}{scope}/{}", resource.plural);
    let item = format!("{collection}/{{name}}");

    if resource.virtual_only {
        if resource.verbs.contains(&"create") {
            paths.insert(
                collection,
                path_item(resource.namespaced, false, [("post", op.create())]),
            );
        } else {
            paths.insert(
                collection,
                path_item(resource.namespaced, false, [("get", op.list(false))]),
            );
            paths.insert(
                item,
                path_item(resource.namespaced, true, [("get", op.read(""))]),
            );
        }
        return;
    }
    if resource.namespaced {
        paths.insert(
            format!("{prefix}/{}", resource.plural),
            path_item(false, false, [("get", op.list(true))]),
        );
    }
    paths.insert(
        collection,
        path_item(
            resource.namespaced,
            false,
            [
                ("get", op.list(false)),
                ("post", op.create()),
                ("delete", op.delete_collection()),
            ],
        ),
    );
    paths.insert(
        item.clone(),
        path_item(
            resource.namespaced,
            true,
            [
                ("get", op.read("")),
                ("put", op.replace("")),
                ("patch", op.patch("")),
                ("delete", op.delete()),
            ],
        ),
    );
    if resource.status {
        paths.insert(
            format!("{item}/status"),
            path_item(
                resource.namespaced,
                true,
                [
                    ("get", op.read("Status")),
                    ("put", op.replace("Status")),
                    ("patch", op.patch("Status")),
                ],
            ),
        );
    }
    if resource.scale.is_some() {
        paths.insert(
            format!("{item}/scale"),
            path_item(
                resource.namespaced,
                true,
                [
                    ("get", op.read("Scale")),
                    ("put", op.replace("Scale")),
                    ("patch", op.patch("Scale")),
                ],
            ),
        );
    }
}

/// A path item: its operations plus the path-level parameters (`name`, `namespace`, `pretty`).
fn path_item<const N: usize>(
    namespaced: bool,
    named: bool,
    operations: [(&str, Value); N],
) -> Value {
    let mut item = Map::new();
    for (method, operation) in operations {
        item.insert(method.to_owned(), operation);
    }
    let mut parameters = Vec::new();
    if named {
        parameters.push(path_parameter("name", "name of the object"));
    }
    if namespaced {
        parameters.push(path_parameter(
            "namespace",
            "object name and auth scope, such as for teams and projects",
        ));
    }
    parameters.push(query(
        "pretty",
        "string",
        "If 'true', then the output is pretty printed.",
    ));
    item.insert("parameters".into(), Value::Array(parameters));
    Value::Object(item)
}

fn path_parameter(name: &str, description: &str) -> Value {
    json!({
        "name": name,
        "in": "path",
        "required": true,
        "description": description,
        "schema": {"type": "string", "uniqueItems": true}
    })
}

fn query(name: &str, type_: &str, description: &str) -> Value {
    json!({
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": type_, "uniqueItems": true}
    })
}

fn dry_run() -> Value {
    query(
        "dryRun",
        "string",
        "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed",
    )
}

fn field_manager() -> Value {
    query(
        "fieldManager",
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes.",
    )
}

fn field_validation() -> Value {
    query(
        "fieldValidation",
        "string",
        "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
    )
}

/// The list and watch parameters (also the selection of a delete collection).
fn selection(watch: bool) -> Vec<Value> {
    let mut params = vec![
        query(
            "continue",
            "string",
            "The continue option should be set when retrieving more results from the server.",
        ),
        query(
            "fieldSelector",
            "string",
            "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
        ),
        query(
            "labelSelector",
            "string",
            "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
        ),
        query(
            "limit",
            "integer",
            "limit is a maximum number of responses to return for a list call.",
        ),
        query(
            "resourceVersion",
            "string",
            "resourceVersion sets a constraint on what resource versions a request may be served from.",
        ),
        query(
            "resourceVersionMatch",
            "string",
            "resourceVersionMatch determines how resourceVersion is applied to list calls.",
        ),
        query(
            "sendInitialEvents",
            "boolean",
            "`sendInitialEvents=true` may be set together with `watch=true`: the stream begins with synthetic events for the current objects.",
        ),
        query(
            "timeoutSeconds",
            "integer",
            "Timeout for the list/watch call.",
        ),
    ];
    if watch {
        params.push(query(
            "allowWatchBookmarks",
            "boolean",
            "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
        ));
        params.push(query(
            "watch",
            "boolean",
            "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
        ));
    }
    params
}

fn delete_parameters() -> Vec<Value> {
    vec![
        dry_run(),
        query(
            "gracePeriodSeconds",
            "integer",
            "The duration in seconds before the object should be deleted.",
        ),
        query(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "boolean",
            "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error.",
        ),
        query(
            "orphanDependents",
            "boolean",
            "Deprecated: please use the PropagationPolicy.",
        ),
        query(
            "propagationPolicy",
            "string",
            "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'.",
        ),
    ]
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("{REF_PREFIX}{name}")})
}

/// What differs between one resource's operations.
struct Operation<'a> {
    /// `x-kubernetes-action`: get, list, post, put, patch, delete, deletecollection.
    action: &'static str,
    id: String,
    description: String,
    parameters: Vec<Value>,
    request: Option<Value>,
    responses: Value,
    /// `Status`, `Scale` or empty.
    subresource: &'a str,
}

/// Builds the operations of one resource.
struct Ops<'a> {
    resource: &'a ResourceType,
    schemas: &'a Schemas<'a>,
    /// `AppsV1`, `CoreV1`, `RbacAuthorizationV1`, `ExampleComV1`.
    id_group: String,
    /// `apps_v1`, `core_v1`, `rbacAuthorization_v1`.
    tag: String,
    /// `Namespaced` or empty.
    scope: &'static str,
}

impl<'a> Ops<'a> {
    fn new(resource: &'a ResourceType, schemas: &'a Schemas<'a>) -> Self {
        Ops {
            resource,
            schemas,
            id_group: format!(
                "{}{}",
                operation_group(&resource.group),
                capitalize(&resource.version)
            ),
            tag: format!("{}_{}", tag(&resource.group), resource.version),
            scope: if resource.namespaced {
                "Namespaced"
            } else {
                ""
            },
        }
    }

    fn gvk(&self, subresource: &str) -> Value {
        if subresource == "Scale" {
            json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
        } else {
            json!({
                "group": self.resource.group,
                "version": self.resource.version,
                "kind": self.resource.kind,
            })
        }
    }

    fn body_schema(&self, subresource: &str) -> &str {
        if subresource == "Scale" {
            SCALE
        } else {
            self.schemas.kind
        }
    }

    /// Response media types: custom resources have no protobuf encoding.
    fn content(&self, definition: &str, watch: bool) -> Value {
        let schema = reference(definition);
        let mut types = vec!["application/json", "application/yaml"];
        if self.resource.builtin {
            types.push("application/vnd.kubernetes.protobuf");
        }
        if watch {
            types.push("application/json;stream=watch");
            if self.resource.builtin {
                types.push("application/vnd.kubernetes.protobuf;stream=watch");
            }
        }
        Value::Object(
            types
                .into_iter()
                .map(|t| (t.to_owned(), json!({"schema": schema})))
                .collect(),
        )
    }

    fn responses(&self, definition: &str, codes: &[(&str, &str)]) -> Value {
        Value::Object(
            codes
                .iter()
                .map(|(code, description)| {
                    (
                        (*code).to_owned(),
                        json!({"description": description, "content": self.content(definition, false)}),
                    )
                })
                .collect(),
        )
    }

    fn operation(&self, operation: Operation<'_>) -> Value {
        let Operation {
            action,
            id,
            description,
            parameters,
            request,
            responses,
            subresource,
        } = operation;
        let mut op = Map::new();
        op.insert("description".into(), description.into());
        op.insert("operationId".into(), id.into());
        op.insert("tags".into(), json!([self.tag]));
        if !parameters.is_empty() {
            op.insert("parameters".into(), Value::Array(parameters));
        }
        if let Some(request) = request {
            op.insert("requestBody".into(), request);
        }
        op.insert("responses".into(), responses);
        op.insert("x-kubernetes-action".into(), action.into());
        op.insert(
            "x-kubernetes-group-version-kind".into(),
            self.gvk(subresource),
        );
        Value::Object(op)
    }

    fn kind(&self) -> &str {
        &self.resource.kind
    }

    fn list(&self, all_namespaces: bool) -> Value {
        let id = if all_namespaces {
            format!("list{}{}ForAllNamespaces", self.id_group, self.kind())
        } else {
            format!("list{}{}{}", self.id_group, self.scope, self.kind())
        };
        let responses = json!({"200": {
            "description": "OK",
            "content": self.content(self.schemas.list, true),
        }});
        self.operation(Operation {
            action: "list",
            id,
            description: format!("list or watch objects of kind {}", self.kind()),
            parameters: selection(true),
            request: None,
            responses,
            subresource: "",
        })
    }

    fn create(&self) -> Value {
        let request = json!({
            "required": true,
            "content": {"*/*": {"schema": reference(self.schemas.kind)}},
        });
        self.operation(Operation {
            action: "post",
            id: format!("create{}{}{}", self.id_group, self.scope, self.kind()),
            description: format!("create a {}", self.kind()),
            parameters: vec![dry_run(), field_manager(), field_validation()],
            request: Some(request),
            responses: self.responses(
                self.schemas.kind,
                &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
            ),
            subresource: "",
        })
    }

    fn delete_collection(&self) -> Value {
        let mut parameters = delete_parameters();
        parameters.extend(selection(false));
        self.operation(Operation {
            action: "deletecollection",
            id: format!(
                "delete{}Collection{}{}",
                self.id_group,
                self.scope,
                self.kind()
            ),
            description: format!("delete collection of {}", self.kind()),
            parameters,
            request: Some(json!({"content": {"*/*": {"schema": reference(DELETE_OPTIONS)}}})),
            responses: self.responses(STATUS, &[("200", "OK")]),
            subresource: "",
        })
    }

    fn read(&self, subresource: &str) -> Value {
        let what = match subresource {
            "Status" => "status of ",
            "Scale" => "scale of ",
            _ => "",
        };
        self.operation(Operation {
            action: "get",
            id: format!(
                "read{}{}{}{subresource}",
                self.id_group,
                self.scope,
                self.kind()
            ),
            description: format!("read {what}the specified {}", self.kind()),
            parameters: Vec::new(),
            request: None,
            responses: self.responses(self.body_schema(subresource), &[("200", "OK")]),
            subresource,
        })
    }

    fn replace(&self, subresource: &str) -> Value {
        let body = self.body_schema(subresource);
        let request = json!({
            "required": true,
            "content": {"*/*": {"schema": reference(body)}},
        });
        self.operation(Operation {
            action: "put",
            id: format!(
                "replace{}{}{}{subresource}",
                self.id_group,
                self.scope,
                self.kind()
            ),
            description: format!("replace the specified {}", self.kind()),
            parameters: vec![dry_run(), field_manager(), field_validation()],
            request: Some(request),
            responses: self.responses(body, &[("200", "OK"), ("201", "Created")]),
            subresource,
        })
    }

    fn patch(&self, subresource: &str) -> Value {
        let mut types: Vec<&str> = PATCH_TYPES.to_vec();
        if self.resource.builtin {
            types.push(STRATEGIC_MERGE_PATCH);
        }
        let content: Map<String, Value> = types
            .into_iter()
            .map(|t| (t.to_owned(), json!({"schema": reference(PATCH)})))
            .collect();
        let request = json!({"required": true, "content": content});
        self.operation(Operation {action: "patch", id: format!(
                "patch{}{}{}{subresource}",
                self.id_group,
                self.scope,
                self.kind()
            ), description: format!("partially update the specified {}", self.kind()), parameters: vec![
                dry_run(),
                field_manager(),
                field_validation(),
                query(
                    "force",
                    "boolean",
                    "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.",
                ),
            ], request: Some(request), responses: self.responses(
                self.body_schema(subresource),
                &[("200", "OK"), ("201", "Created")],
            ), subresource})
    }

    fn delete(&self) -> Value {
        self.operation(Operation {
            action: "delete",
            id: format!("delete{}{}{}", self.id_group, self.scope, self.kind()),
            description: format!("delete a {}", self.kind()),
            parameters: delete_parameters(),
            request: Some(json!({"content": {"*/*": {"schema": reference(DELETE_OPTIONS)}}})),
            responses: self.responses(
                if self.resource.delete_returns_object {
                    self.body_schema("")
                } else {
                    STATUS
                },
                &[("200", "OK"), ("202", "Accepted")],
            ),
            subresource: "",
        })
    }
}

/// `Core`, `Apps`, `RbacAuthorization`, `ExampleCom`: a group as operation ids spell it.
pub fn operation_group(group: &str) -> String {
    group_words(group).iter().map(|w| capitalize(w)).collect()
}

/// `core`, `apps`, `rbacAuthorization`, `exampleCom`: a group as tags spell it.
pub fn tag(group: &str) -> String {
    let mut out = String::new();
    for (i, word) in group_words(group).iter().enumerate() {
        if i == 0 {
            out.push_str(word);
        } else {
            out.push_str(&capitalize(word));
        }
    }
    out
}

/// A group's words: `core` for the core group, and `.k8s.io` left out.
fn group_words(group: &str) -> Vec<&str> {
    if group.is_empty() {
        return vec!["core"];
    }
    group
        .strip_suffix(".k8s.io")
        .unwrap_or(group)
        .split(['.', '-'])
        .filter(|w| !w.is_empty())
        .collect()
}

/// `v1` → `V1`.
pub fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::builtin;

    fn paths_of(plural: &str) -> Map<String, Value> {
        let resource = builtin::types()
            .into_iter()
            .find(|t| t.plural == plural)
            .unwrap();
        let mut paths = Map::new();
        let schemas = Schemas {
            kind: "io.k8s.api.test.v1.Thing",
            list: "io.k8s.api.test.v1.ThingList",
        };
        add(&mut paths, &resource, &schemas);
        paths
    }

    #[test]
    fn namespaced_resources_have_collection_item_and_subresource_paths() {
        let paths = paths_of("deployments");
        let mut keys: Vec<&str> = paths.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "/apis/apps/v1/deployments",
                "/apis/apps/v1/namespaces/{namespace}/deployments",
                "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
                "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
                "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status",
            ]
        );
        let item = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
        assert_eq!(
            item["patch"]["operationId"],
            "patchAppsV1NamespacedDeployment"
        );
        assert_eq!(item["get"]["x-kubernetes-action"], "get");
        let scale = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"];
        assert_eq!(
            scale["patch"]["x-kubernetes-group-version-kind"]["kind"],
            "Scale"
        );
        let collection = &paths["/apis/apps/v1/namespaces/{namespace}/deployments"];
        assert_eq!(collection["get"]["x-kubernetes-action"], "list");
        assert_eq!(collection["post"]["x-kubernetes-action"], "post");
        assert_eq!(
            collection["delete"]["x-kubernetes-action"],
            "deletecollection"
        );
    }

    #[test]
    fn cluster_resources_have_no_namespace_segment() {
        let paths = paths_of("clusterroles");
        let mut keys: Vec<&str> = paths.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}",
            ]
        );
        let item = &paths["/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"];
        assert_eq!(
            item["put"]["operationId"],
            "replaceRbacAuthorizationV1ClusterRole"
        );
        assert_eq!(item["put"]["tags"], json!(["rbacAuthorization_v1"]));
        let params: Vec<&str> = item["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(params, ["name", "pretty"]);
    }

    #[test]
    fn core_paths_live_under_api() {
        let paths = paths_of("configmaps");
        let item = &paths["/api/v1/namespaces/{namespace}/configmaps/{name}"];
        assert_eq!(item["get"]["operationId"], "readCoreV1NamespacedConfigMap");
        assert!(paths.contains_key("/api/v1/configmaps"));
    }
}
