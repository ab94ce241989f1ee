//! Server-side printing: the `meta.k8s.io/v1` `Table` kube-apiserver answers when a client such
//! as `kubectl get` asks for `as=Table`, for a list, a single object, or one watch event.
//!
//! Built-in kinds use printers after kube-apiserver's own (`builtin`); custom resources show
//! Name, their CRD version's `additionalPrinterColumns` and, when it declares none, Age
//! (`custom`). Every row carries its object as the request's `includeObject` asks: kubectl
//! needs the `PartialObjectMetadata` of the default for the NAMESPACE column of `get -A` and for
//! `--show-labels`.
//!
//! Pure functions over stored JSON objects: no I/O, no HTTP.

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::registry::ResourceType;

mod age;
mod builtin;
mod custom;
pub(crate) mod jsonpath;
mod labels;

pub use age::human_duration;
pub use jsonpath::{JsonPath, JsonPathError};

/// What each row's `object` holds (the `includeObject` query parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// The object's `PartialObjectMetadata`, with its full metadata (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses `includeObject`: `None`, `Metadata` or `Object`; absent or empty means `Metadata`.
    /// The error is kube-apiserver's BadRequest message.
    pub fn parse(value: Option<&str>) -> Result<Self, String> {
        match value.unwrap_or_default() {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            "None" => Ok(IncludeObject::None),
            other => Err(format!("unrecognized includeObject value: {other:?}")),
        }
    }
}

/// The `meta.k8s.io` version of Table a client asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TableVersion {
    /// `meta.k8s.io/v1`.
    #[default]
    V1,
    /// `meta.k8s.io/v1beta1`, which older clients ask for.
    V1beta1,
}

impl TableVersion {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub fn api_version(self) -> &'static str {
        match self {
            TableVersion::V1 => "meta.k8s.io/v1",
            TableVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }

    /// The response `Content-Type` of a Table in this version.
    pub fn content_type(self) -> &'static str {
        match self {
            TableVersion::V1 => "application/json;as=Table;v=v1;g=meta.k8s.io",
            TableVersion::V1beta1 => "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        }
    }
}

/// The Table version an `Accept` header asks for, if the first media range this server can
/// serve (in order of preference: `q`, then position) is a JSON Table. Ranges it cannot serve,
/// such as protobuf, are skipped; plain JSON, `*/*` or another `as=` form mean no Table.
pub fn table_version(accept: &str) -> Option<TableVersion> {
    let mut ranges: Vec<(f32, MediaRange<'_>)> = accept
        .split(',')
        .filter_map(|range| MediaRange::parse(range.trim()))
        .map(|range| (range.q, range))
        .filter(|(q, _)| *q > 0.0)
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, range) in ranges {
        match range.essence.to_ascii_lowercase().as_str() {
            "application/json" => {}
            "*/*" | "application/*" => return None,
            _ => continue,
        }
        if range.param("as")? != "Table" {
            return None;
        }
        if range.param("g") != Some("meta.k8s.io") {
            continue;
        }
        match range.param("v") {
            Some("v1") => return Some(TableVersion::V1),
            Some("v1beta1") => return Some(TableVersion::V1beta1),
            _ => continue,
        }
    }
    None
}

/// Whether an `Accept` header asks for a Table (`as=Table;g=meta.k8s.io;v=v1` or `v1beta1`);
/// [`table_version`] tells which.
pub fn wants_table(accept: &str) -> bool {
    table_version(accept).is_some()
}

/// A `meta.k8s.io/v1` Table of `objects`: a list, one object for a GET, or one event object in
/// a watch (DELETED ones included). `list_metadata` becomes the Table's metadata
/// (`resourceVersion`, `continue`, `remainingItemCount`); for a single object upstream puts the
/// object's `resourceVersion` there. Ages are computed as of `now`.
pub fn table(
    rt: &ResourceType,
    objects: &[Value],
    include: IncludeObject,
    list_metadata: Value,
    now: Timestamp,
) -> Value {
    table_in(TableVersion::V1, rt, objects, include, list_metadata, now)
}

/// [`table`] in the Table version the client asked for.
pub fn table_in(
    version: TableVersion,
    rt: &ResourceType,
    objects: &[Value],
    include: IncludeObject,
    list_metadata: Value,
    now: Timestamp,
) -> Value {
    let printer = Printer::of(rt);
    let columns: Vec<Value> = printer.columns().iter().map(Column::to_json).collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|object| {
            let row = printer.row(object, now);
            let mut out = Map::new();
            out.insert("cells".into(), Value::Array(row.cells));
            if !row.conditions.is_empty() {
                out.insert("conditions".into(), Value::Array(row.conditions));
            }
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    out.insert("object".into(), partial_metadata(version, object));
                }
                IncludeObject::Object => {
                    out.insert("object".into(), object.clone());
                }
            }
            Value::Object(out)
        })
        .collect();
    let metadata = if list_metadata.is_object() {
        list_metadata
    } else {
        json!({})
    };
    json!({
        "kind": "Table",
        "apiVersion": version.api_version(),
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// Drops a Table's column definitions, as kube-apiserver does for every watch event after the
/// first (`columnDefinitions: null`); kubectl keeps printing with the columns it already has.
pub fn omit_column_definitions(table: &mut Value) {
    if let Some(fields) = table.as_object_mut() {
        fields.insert("columnDefinitions".into(), Value::Null);
    }
}

/// `PartialObjectMetadata` of an object: its whole metadata (labels, namespace, managed fields).
fn partial_metadata(version: TableVersion, object: &Value) -> Value {
    let metadata = match &object["metadata"] {
        Value::Null => json!({}),
        m => m.clone(),
    };
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": version.api_version(),
        "metadata": metadata,
    })
}

/// One column of a Table (`TableColumnDefinition`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The header, such as `Name` or `Up-to-date` (kubectl upper-cases it).
    pub name: String,
    /// The OpenAPI type of the cells: `string`, `integer`, `number`, `boolean` or `date`.
    pub ty: String,
    /// `name` for the column holding the object name; otherwise a format hint or empty.
    pub format: String,
    /// What the column shows.
    pub description: String,
    /// 0 for the default view, higher for `-o wide` only.
    pub priority: i64,
}

impl Column {
    fn new(name: &str, ty: &str, format: &str, description: &str, priority: i64) -> Self {
        Column {
            name: name.to_owned(),
            ty: ty.to_owned(),
            format: format.to_owned(),
            description: description.to_owned(),
            priority,
        }
    }

    /// The column's wire form.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.ty,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// One object's cells, and the row conditions of objects that have them (finished pods).
struct Row {
    cells: Vec<Value>,
    conditions: Vec<Value>,
}

/// The printer of one resource type.
enum Printer {
    Builtin(builtin::Printer),
    Custom(custom::CustomPrinter),
}

impl Printer {
    fn of(rt: &ResourceType) -> Self {
        if rt.builtin {
            Printer::Builtin(builtin::Printer::for_kind(&rt.group, &rt.kind))
        } else {
            Printer::Custom(custom::CustomPrinter::new(&rt.printer_columns))
        }
    }

    fn columns(&self) -> Vec<Column> {
        match self {
            Printer::Builtin(p) => p.columns(),
            Printer::Custom(p) => p.columns(),
        }
    }

    fn row(&self, object: &Value, now: Timestamp) -> Row {
        match self {
            Printer::Builtin(p) => p.row(object, now),
            Printer::Custom(p) => p.row(object, now),
        }
    }
}

/// One media range of an `Accept` header: `application/json;as=Table;v=v1;g=meta.k8s.io`.
struct MediaRange<'a> {
    essence: &'a str,
    params: Vec<(&'a str, &'a str)>,
    q: f32,
}

impl<'a> MediaRange<'a> {
    fn parse(text: &'a str) -> Option<Self> {
        let mut parts = text.split(';');
        let essence = parts.next()?.trim();
        if essence.is_empty() {
            return None;
        }
        let mut params = Vec::new();
        let mut q = 1.0;
        for param in parts {
            let Some((key, value)) = param.split_once('=') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim().trim_matches('"'));
            if key.eq_ignore_ascii_case("q") {
                q = value.parse().unwrap_or(1.0);
            } else {
                params.push((key, value));
            }
        }
        Some(MediaRange { essence, params, q })
    }

    fn param(&self, key: &str) -> Option<&'a str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| *v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    fn now() -> Timestamp {
        "2025-06-01T12:00:00Z".parse().unwrap()
    }

    fn builtin(group: &str, kind: &str) -> ResourceType {
        resource(group, kind, Vec::new(), true)
    }

    fn resource(
        group: &str,
        kind: &str,
        printer_columns: Vec<Value>,
        builtin: bool,
    ) -> ResourceType {
        ResourceType {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            plural: format!("{}s", kind.to_lowercase()),
            singular: kind.to_lowercase(),
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced: true,
            status: false,
            scale: None,
            storage_version: "v1".into(),
            schema: None,
            printer_columns,
            builtin,
            virtual_only: false,
            verbs: crate::registry::VERBS,
            name_rule: Default::default(),
            delete_returns_object: false,
        }
    }

    fn headers(table: &Value) -> Vec<String> {
        table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// What kubectl shows without `-o wide`: the priority 0 cells.
    fn default_view(table: &Value, row: usize) -> Vec<Value> {
        let columns = table["columnDefinitions"].as_array().unwrap();
        let cells = table["rows"][row]["cells"].as_array().unwrap();
        assert_eq!(columns.len(), cells.len(), "one cell per column");
        columns
            .iter()
            .zip(cells)
            .filter(|(c, _)| c["priority"] == 0)
            .map(|(_, cell)| cell.clone())
            .collect()
    }

    #[test]
    fn accept_headers() {
        assert_eq!(table_version(KUBECTL_ACCEPT), Some(TableVersion::V1));
        assert!(wants_table(KUBECTL_ACCEPT));
        assert_eq!(
            table_version("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
            Some(TableVersion::V1beta1)
        );
        assert_eq!(
            table_version(
                "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io"
            ),
            Some(TableVersion::V1)
        );
        assert_eq!(
            table_version(
                "application/json;as=Table;v=v2;g=meta.k8s.io, application/json;g=meta.k8s.io;v=v1;as=Table"
            ),
            Some(TableVersion::V1)
        );
        assert!(!wants_table("application/json"));
        assert!(!wants_table(""));
        assert!(!wants_table("application/json, */*"));
        assert!(!wants_table(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
        ));
        assert!(!wants_table(
            "application/json,application/json;as=Table;v=v1;g=meta.k8s.io"
        ));
        assert!(wants_table(
            "application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io"
        ));
        assert!(!wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io;q=0"
        ));
    }

    #[test]
    fn include_object_values() {
        assert_eq!(IncludeObject::parse(None), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::parse(Some("")), Ok(IncludeObject::Metadata));
        assert_eq!(
            IncludeObject::parse(Some("Object")),
            Ok(IncludeObject::Object)
        );
        assert_eq!(IncludeObject::parse(Some("None")), Ok(IncludeObject::None));
        assert_eq!(
            IncludeObject::parse(Some("All")),
            Err("unrecognized includeObject value: \"All\"".to_owned())
        );
    }

    #[test]
    fn config_map_table() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "demo-cm", "namespace": "team-a", "resourceVersion": "104",
                "labels": {"app": "demo"}, "creationTimestamp": "2025-06-01T11:55:00Z"},
            "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        let t = table(
            &builtin("", "ConfigMap"),
            &[cm],
            IncludeObject::default(),
            json!({"resourceVersion": "105", "continue": "abc"}),
            now(),
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(
            t["metadata"],
            json!({"resourceVersion": "105", "continue": "abc"})
        );
        assert_eq!(headers(&t), ["Name", "Data", "Age"]);
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        assert_eq!(t["columnDefinitions"][0]["type"], "string");
        assert_eq!(t["columnDefinitions"][1]["format"], "");
        assert_eq!(t["rows"][0]["cells"], json!(["demo-cm", 3, "5m"]));
        let object = &t["rows"][0]["object"];
        assert_eq!(object["kind"], "PartialObjectMetadata");
        assert_eq!(object["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(object["metadata"]["namespace"], "team-a");
        assert_eq!(object["metadata"]["labels"]["app"], "demo");
        assert!(object.get("data").is_none());
    }

    #[test]
    fn include_object_shapes_rows() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "creationTimestamp": "2025-06-01T11:59:00Z"}, "data": {}});
        let rt = builtin("", "ConfigMap");
        let none = table(
            &rt,
            std::slice::from_ref(&cm),
            IncludeObject::None,
            json!({}),
            now(),
        );
        assert!(none["rows"][0].get("object").is_none());
        assert_eq!(none["rows"][0]["cells"], json!(["x", 0, "60s"]));
        let full = table(
            &rt,
            std::slice::from_ref(&cm),
            IncludeObject::Object,
            json!({}),
            now(),
        );
        assert_eq!(full["rows"][0]["object"], cm);
        let beta = table_in(
            TableVersion::V1beta1,
            &rt,
            &[cm],
            IncludeObject::Metadata,
            Value::Null,
            now(),
        );
        assert_eq!(beta["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(
            beta["rows"][0]["object"]["apiVersion"],
            "meta.k8s.io/v1beta1"
        );
        assert_eq!(beta["metadata"], json!({}));
    }

    #[test]
    fn empty_list_has_columns_and_no_rows() {
        let t = table(
            &builtin("", "Secret"),
            &[],
            IncludeObject::Metadata,
            json!({"resourceVersion": "9"}),
            now(),
        );
        assert_eq!(headers(&t), ["Name", "Type", "Data", "Age"]);
        assert_eq!(t["rows"], json!([]));
    }

    #[test]
    fn secret_table() {
        let secret = json!({"metadata": {"name": "sh.helm.release.v1.demo.v1",
                "creationTimestamp": "2025-05-30T12:00:00Z"},
            "type": "helm.sh/release.v1", "data": {"release": "H4sI"}});
        let t = table(
            &builtin("", "Secret"),
            &[secret],
            IncludeObject::Metadata,
            json!({}),
            now(),
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["sh.helm.release.v1.demo.v1", "helm.sh/release.v1", 1, "2d"])
        );
    }

    #[test]
    fn namespace_status() {
        let active = json!({"metadata": {"name": "default", "creationTimestamp": "2025-04-17T12:00:00Z"},
            "status": {"phase": "Active"}});
        let going = json!({"metadata": {"name": "old", "creationTimestamp": "2025-06-01T09:00:00Z",
                "deletionTimestamp": "2025-06-01T11:00:00Z"},
            "status": {"phase": "Terminating"}});
        let t = table(
            &builtin("", "Namespace"),
            &[active, going],
            IncludeObject::Metadata,
            json!({}),
            now(),
        );
        assert_eq!(headers(&t), ["Name", "Status", "Age"]);
        assert_eq!(t["rows"][0]["cells"], json!(["default", "Active", "45d"]));
        assert_eq!(t["rows"][1]["cells"], json!(["old", "Terminating", "3h"]));
    }

    #[test]
    fn deployment_ready_and_wide_columns() {
        let deploy = json!({"metadata": {"name": "web", "creationTimestamp": "2025-06-01T11:57:50Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}},
            "status": {"readyReplicas": 1, "updatedReplicas": 3, "availableReplicas": 1}});
        let t = table(
            &builtin("apps", "Deployment"),
            &[deploy],
            IncludeObject::Metadata,
            json!({}),
            now(),
        );
        assert_eq!(
            headers(&t),
            [
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        assert_eq!(
            default_view(&t, 0),
            [
                json!("web"),
                json!("1/3"),
                json!(3),
                json!(1),
                json!("2m10s")
            ]
        );
        let priorities: Vec<i64> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["priority"].as_i64().unwrap())
            .collect();
        assert_eq!(priorities, [0, 0, 0, 0, 0, 1, 1, 1]);
        assert_eq!(
            t["rows"][0]["cells"].as_array().unwrap()[5..],
            [json!("nginx"), json!("nginx:1.27"), json!("app=web")]
        );
    }

    #[test]
    fn wide_columns_have_priority_one() {
        let wide_only: &[(&str, &str, &[&str])] = &[
            (
                "",
                "Pod",
                &["IP", "Node", "Nominated Node", "Readiness Gates"],
            ),
            ("", "Service", &["Selector"]),
            ("apps", "ReplicaSet", &["Containers", "Images", "Selector"]),
            ("apps", "StatefulSet", &["Containers", "Images"]),
            ("apps", "DaemonSet", &["Containers", "Images", "Selector"]),
            (
                "rbac.authorization.k8s.io",
                "RoleBinding",
                &["Users", "Groups", "ServiceAccounts"],
            ),
            (
                "",
                "Event",
                &["Subobject", "Source", "First Seen", "Count", "Name"],
            ),
        ];
        for (group, kind, wide) in wide_only {
            let t = table(
                &builtin(group, kind),
                &[],
                IncludeObject::Metadata,
                json!({}),
                now(),
            );
            for column in t["columnDefinitions"].as_array().unwrap() {
                let name = column["name"].as_str().unwrap();
                let want = if wide.contains(&name) { 1 } else { 0 };
                assert_eq!(column["priority"], want, "{kind} {name}");
            }
        }
        let events = table(
            &builtin("", "Event"),
            &[],
            IncludeObject::Metadata,
            json!({}),
            now(),
        );
        let shown: Vec<&str> = events["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["priority"] == 0)
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(shown, ["Last Seen", "Type", "Reason", "Object", "Message"]);
    }

    #[test]
    fn default_printer_for_roles_and_crds() {
        let role =
            json!({"metadata": {"name": "reader", "creationTimestamp": "2025-06-01T10:00:00Z"}});
        for (group, kind) in [
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ] {
            let t = table(
                &builtin(group, kind),
                std::slice::from_ref(&role),
                IncludeObject::Metadata,
                json!({}),
                now(),
            );
            assert_eq!(headers(&t), ["Name", "Created At"], "{kind}");
            assert_eq!(
                t["rows"][0]["cells"],
                json!(["reader", "2025-06-01T10:00:00Z"])
            );
        }
    }

    #[test]
    fn custom_resource_printer_columns() {
        let columns = vec![
            json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size"}),
            json!({"name": "Ready", "type": "string", "description": "Whether it is ready",
                "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}),
            json!({"name": "App", "type": "string", "priority": 1, "jsonPath": ".metadata.labels.app"}),
            json!({"name": "First Port", "type": "integer", "format": "int32", "jsonPath": ".spec.ports[0]"}),
            json!({"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"}),
            json!({"name": "Started", "type": "date", "jsonPath": ".status.startedAt"}),
            json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
        ];
        let rt = resource("example.com", "Widget", columns, false);
        let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default", "labels": {"app": "shop"},
                "creationTimestamp": "2025-05-29T12:00:00Z"},
            "spec": {"size": 3, "ports": [8080, 9090]},
            "status": {"startedAt": "2025-06-01T11:00:00Z", "conditions": [
                {"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False"}]}});
        let t = table(
            &rt,
            &[widget],
            IncludeObject::Metadata,
            json!({"resourceVersion": "7"}),
            now(),
        );
        assert_eq!(
            headers(&t),
            [
                "Name",
                "Size",
                "Ready",
                "App",
                "First Port",
                "Paused",
                "Started",
                "Age"
            ]
        );
        let defs = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(
            defs[1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.size"
        );
        assert_eq!(defs[2]["description"], "Whether it is ready");
        assert_eq!(defs[3]["priority"], 1);
        assert_eq!(defs[4]["format"], "int32");
        assert_eq!(defs[6]["type"], "date");
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["w1", 3, "False", "shop", 8080, null, "60m", "3d"])
        );
        assert_eq!(t["rows"][0]["object"]["metadata"]["namespace"], "default");
    }

    #[test]
    fn custom_resource_without_columns_shows_name_and_age() {
        let rt = resource("example.com", "Gadget", Vec::new(), false);
        let gadget = json!({"metadata": {"name": "g"}});
        let t = table(&rt, &[gadget], IncludeObject::Metadata, json!({}), now());
        assert_eq!(headers(&t), ["Name", "Age"]);
        assert_eq!(t["columnDefinitions"][1]["type"], "date");
        // Upstream evaluates `.metadata.creationTimestamp` like any column: absent, it is null.
        assert_eq!(t["rows"][0]["cells"], json!(["g", null]));
        let dated = json!({"metadata": {"name": "h", "creationTimestamp": "2025-06-01T11:58:00Z"}});
        let t = table(&rt, &[dated], IncludeObject::Metadata, json!({}), now());
        assert_eq!(t["rows"][0]["cells"], json!(["h", "2m"]));
    }

    #[test]
    fn watch_event_is_a_one_row_table() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "resourceVersion": "12",
                "creationTimestamp": "2025-06-01T11:00:00Z"},
            "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}});
        let t = table(
            &builtin("", "Pod"),
            &[pod],
            IncludeObject::Metadata,
            json!({"resourceVersion": "12"}),
            now(),
        );
        assert_eq!(t["rows"].as_array().unwrap().len(), 1);
        assert_eq!(
            default_view(&t, 0),
            [
                json!("p"),
                json!("0/1"),
                json!("Pending"),
                json!("0"),
                json!("60m")
            ]
        );
        assert_eq!(t["rows"][0]["object"]["metadata"]["resourceVersion"], "12");
        let mut next = t.clone();
        omit_column_definitions(&mut next);
        assert_eq!(next["columnDefinitions"], Value::Null);
        assert_eq!(next["rows"], t["rows"]);
    }
}
