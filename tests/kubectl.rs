//! kubectl 1.35 against `atoll apiserver`: discovery, explain, get in every output form, apply
//! (client-side and server-side), the `create` generators, edit, patch, label, annotate, scale,
//! set image, wait, delete, diff, auth can-i, and the messages of bad input. Each step checks what
//! kubectl printed and what the server then holds. Each test starts its own server and runs
//! kubectl with a fresh HOME, so discovery caches are not shared.
//!
//! Fixtures that a step does not itself exercise are created with `kubectl create --raw` (a plain
//! JSON POST), so that a step fails only for what it tests.

use std::time::Duration;

use atoll_tests::{Cluster, Steps, Tool};
use serde_json::{Value, json};

/// The Widget CRD the helm chart installs too.
const WIDGET_CRD: &str = include_str!("testdata/charts/demo/crds/widgets.yaml");
const CRD_NAME: &str = "widgets.demo.example.com";
const WAIT: Duration = Duration::from_secs(20);

/// Creates an object with a raw JSON POST to `path` (no client-side logic involved).
fn create_raw(c: &Cluster, path: &str, object: Value) {
    let name = object["metadata"]["name"].as_str().unwrap_or("object");
    let file = c.file(&format!("raw-{name}.json"), &object.to_string());
    c.kubectl()
        .run(&["create", "--raw", path, "-f", file.to_str().unwrap()])
        .success();
}

fn configmap(name: &str, labels: Value, data: Value) -> Value {
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name}, "data": data});
    if labels.as_object().is_some_and(|l| !l.is_empty()) {
        cm["metadata"]["labels"] = labels;
    }
    cm
}

fn create_configmap(c: &Cluster, ns: &str, name: &str, labels: Value, data: Value) {
    create_raw(
        c,
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        configmap(name, labels, data),
    );
}

fn create_namespace(c: &Cluster, name: &str) {
    create_raw(
        c,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    );
}

/// A Deployment `name` with the containers `app` (nginx) and `sidecar` (busybox).
fn deployment(name: &str, replicas: i64, app_image: &str, sidecar_image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [
                    {"name": "app", "image": app_image, "ports": [{"containerPort": 80}]},
                    {"name": "sidecar", "image": sidecar_image, "args": ["sleep", "infinity"]}]}}}})
}

fn create_deployment(c: &Cluster, name: &str) {
    create_raw(
        c,
        "/apis/apps/v1/namespaces/default/deployments",
        deployment(name, 1, "nginx:1.27", "busybox:1.36"),
    );
}

/// Creates the Widget CRD and waits (bounded) until the server reports it Established.
fn create_widget_crd(c: &Cluster) {
    let crd: Value = serde_yaml_ng::from_str(WIDGET_CRD).unwrap();
    create_raw(
        c,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd,
    );
    for _ in 0..100 {
        let established = c
            .kubectl()
            .run(&[
                "get",
                "crd",
                CRD_NAME,
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
            ])
            .success()
            .stdout;
        if established.trim() == "True" {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("CRD {CRD_NAME} did not become Established");
}

fn create_widget(c: &Cluster, name: &str, spec: Value) {
    create_raw(
        c,
        "/apis/demo.example.com/v1/namespaces/default/widgets",
        json!({"apiVersion": "demo.example.com/v1", "kind": "Widget",
               "metadata": {"name": name}, "spec": spec}),
    );
}

/// `kubectl get ARGS -o json`, parsed.
fn get_json(k: &Tool, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    k.run(&all).success().json()
}

/// The images of a Deployment's containers, as `name=image` in order.
fn containers(k: &Tool, name: &str) -> Vec<String> {
    let deploy = get_json(k, &["deployment", name]);
    deploy["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| {
            format!(
                "{}={}",
                c["name"].as_str().unwrap(),
                c["image"].as_str().unwrap()
            )
        })
        .collect()
}

/// The row of a table whose first (or, with `-A`, second) column is `name`.
fn row<'a>(rows: &'a [Vec<String>], column: usize, name: &str) -> &'a [String] {
    rows.iter()
        .find(|r| r.get(column).is_some_and(|c| c == name))
        .unwrap_or_else(|| panic!("no row {name} in {rows:?}"))
}

/// kubectl's AGE column (`0s`, `59s`, `2m5s`, `3h`…), not `<invalid>` or `<unknown>`.
fn is_age(cell: &str) -> bool {
    cell.starts_with(|c: char| c.is_ascii_digit())
        && cell
            .chars()
            .all(|c| c.is_ascii_digit() || "smhdy".contains(c))
}

/// Whitespace collapsed to single spaces (for `explain`, whose column widths are not the point).
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn discovery_explain_and_get() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();

    s.step("version reports v1.35 without a skew warning", || {
        let out = k.run(&["version", "-o", "json"]).success();
        let v = out.json();
        assert_eq!(v["serverVersion"]["major"], "1", "{out}");
        assert_eq!(v["serverVersion"]["minor"], "35", "{out}");
        assert!(!out.stderr.contains("WARNING"), "{out}");
    });

    s.step("api-resources lists built-in kinds", || {
        let out = k.run(&["api-resources"]).success();
        let rows = out.rows();
        assert_eq!(
            rows[0],
            ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
        );
        assert_eq!(
            row(&rows, 0, "configmaps"),
            ["configmaps", "cm", "v1", "true", "ConfigMap"]
        );
        assert_eq!(
            row(&rows, 0, "namespaces"),
            ["namespaces", "ns", "v1", "false", "Namespace"]
        );
        assert_eq!(
            row(&rows, 0, "deployments"),
            ["deployments", "deploy", "apps/v1", "true", "Deployment"]
        );
        assert_eq!(
            row(&rows, 0, "customresourcedefinitions"),
            [
                "customresourcedefinitions",
                "crd,crds",
                "apiextensions.k8s.io/v1",
                "false",
                "CustomResourceDefinition"
            ]
        );
    });

    s.step("api-resources shows a new CRD", || {
        create_widget_crd(&c);
        let out = k
            .run(&["api-resources", "--api-group=demo.example.com"])
            .success();
        assert_eq!(
            out.rows()[1..],
            [["widgets", "wd", "demo.example.com/v1", "true", "Widget"]],
            "{out}"
        );
    });

    s.step("explain configmap", || {
        let out = k.run(&["explain", "configmap"]).success();
        let text = squash(&out.stdout);
        for needle in [
            "KIND: ConfigMap VERSION: v1",
            "ConfigMap holds configuration data for pods to consume.",
            "data <map[string]string>",
            "metadata <ObjectMeta>",
        ] {
            assert!(text.contains(needle), "missing {needle:?}:\n{out}");
        }
    });

    s.step("explain deployment.spec.replicas", || {
        let out = k.run(&["explain", "deployment.spec.replicas"]).success();
        let text = squash(&out.stdout);
        assert!(
            text.contains("GROUP: apps KIND: Deployment VERSION: v1 FIELD: replicas <integer>"),
            "{out}"
        );
    });

    s.step("explain widgets.spec (CRD schema)", || {
        let out = k.run(&["explain", "widgets.spec"]).success();
        let text = squash(&out.stdout);
        for needle in [
            "GROUP: demo.example.com KIND: Widget VERSION: v1",
            "FIELD: spec <Object>",
            "The widget's desired shape.",
            "color <string> The widget's paint.",
            "size <integer> How many parts the widget has.",
        ] {
            assert!(text.contains(needle), "missing {needle:?}:\n{out}");
        }
    });

    // Fixtures for the get steps.
    create_namespace(&c, "other");
    create_configmap(
        &c,
        "default",
        "alpha",
        json!({"app": "web", "tier": "front"}),
        json!({"a": "1", "b": "2"}),
    );
    create_configmap(
        &c,
        "default",
        "beta",
        json!({"app": "db"}),
        json!({"a": "1"}),
    );
    create_configmap(&c, "other", "gamma", json!({}), json!({"g": "1"}));
    create_raw(
        &c,
        "/apis/apps/v1/namespaces/default/deployments",
        deployment("web", 2, "nginx:1.27", "busybox:1.36"),
    );
    create_widget(&c, "w1", json!({"size": 2, "color": "blue"}));

    s.step("get cm (table)", || {
        let out = k.run(&["get", "cm"]).success();
        let rows = out.rows();
        assert_eq!(rows[0], ["NAME", "DATA", "AGE"], "{out}");
        let alpha = row(&rows, 0, "alpha");
        assert_eq!(alpha[..2], ["alpha", "2"], "{out}");
        assert!(is_age(&alpha[2]), "AGE {:?}: {out}", alpha[2]);
        assert_eq!(row(&rows, 0, "beta")[..2], ["beta", "1"], "{out}");
        assert!(rows.iter().all(|r| r[0] != "gamma"), "{out}");
    });

    s.step("get ns (table)", || {
        let out = k.run(&["get", "ns", "other"]).success();
        let rows = out.rows();
        assert_eq!(rows[0], ["NAME", "STATUS", "AGE"], "{out}");
        assert_eq!(rows[1][..2], ["other", "Active"], "{out}");
    });

    s.step("get widgets (CRD printer columns)", || {
        let out = k.run(&["get", "widgets"]).success();
        let rows = out.rows();
        assert_eq!(rows[0], ["NAME", "COLOR", "AGE"], "{out}");
        assert_eq!(rows[1][..2], ["w1", "blue"], "{out}");
        assert!(is_age(&rows[1][2]), "{out}");
    });

    s.step("get cm -A", || {
        let out = k.run(&["get", "cm", "-A"]).success();
        let rows = out.rows();
        assert_eq!(rows[0], ["NAMESPACE", "NAME", "DATA", "AGE"], "{out}");
        assert_eq!(
            row(&rows, 1, "alpha")[..3],
            ["default", "alpha", "2"],
            "{out}"
        );
        assert_eq!(
            row(&rows, 1, "gamma")[..3],
            ["other", "gamma", "1"],
            "{out}"
        );
    });

    s.step("get cm -o yaml", || {
        let out = k.run(&["get", "cm", "alpha", "-o", "yaml"]).success();
        let cm = out.yaml();
        assert_eq!(cm["apiVersion"], "v1", "{out}");
        assert_eq!(cm["kind"], "ConfigMap", "{out}");
        assert_eq!(cm["metadata"]["namespace"], "default", "{out}");
        assert_eq!(cm["metadata"]["labels"]["tier"], "front", "{out}");
        assert_eq!(cm["data"], json!({"a": "1", "b": "2"}), "{out}");
    });

    s.step("get cm -o json (list)", || {
        let list = get_json(&k, &["cm", "alpha", "beta"]);
        assert_eq!(list["kind"], "List");
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["alpha", "beta"]);
    });

    s.step("get deploy -o wide", || {
        let out = k.run(&["get", "deploy", "web", "-o", "wide"]).success();
        let rows = out.rows();
        assert_eq!(
            rows[0],
            [
                "NAME",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR"
            ],
            "{out}"
        );
        let web = &rows[1];
        assert_eq!(web[..4], ["web", "0/2", "0", "0"], "{out}");
        assert_eq!(
            web[5..],
            ["app,sidecar", "nginx:1.27,busybox:1.36", "app=web"],
            "{out}"
        );
    });

    s.step("get cm --show-labels", || {
        let out = k.run(&["get", "cm", "--show-labels"]).success();
        let rows = out.rows();
        assert_eq!(rows[0], ["NAME", "DATA", "AGE", "LABELS"], "{out}");
        assert_eq!(row(&rows, 0, "alpha")[3], "app=web,tier=front", "{out}");
        assert_eq!(row(&rows, 0, "beta")[3], "app=db", "{out}");
    });

    s.step("get cm -l", || {
        let out = k.run(&["get", "cm", "-l", "app=web"]).success();
        let names: Vec<String> = out.rows()[1..].iter().map(|r| r[0].clone()).collect();
        assert_eq!(names, ["alpha"], "{out}");
        let out = k.run(&[
            "get",
            "cm",
            "-l",
            "app in (web,db),tier!=front",
            "-o",
            "name",
        ]);
        out.success().stdout_is("configmap/beta");
    });

    s.step("get cm --field-selector", || {
        let out = k
            .run(&[
                "get",
                "cm",
                "-A",
                "--field-selector",
                "metadata.namespace=other",
            ])
            .success();
        let names: Vec<String> = out.rows()[1..].iter().map(|r| r[1].clone()).collect();
        assert_eq!(names, ["gamma", "kube-root-ca.crt"], "{out}");
        k.run(&[
            "get",
            "cm",
            "--field-selector",
            "metadata.name=beta",
            "-o",
            "name",
        ])
        .success()
        .stdout_is("configmap/beta");
    });

    s.step("get -o jsonpath and custom-columns", || {
        k.run(&["get", "cm", "alpha", "-o", "jsonpath={.data.b}"])
            .success()
            .stdout_is("2");
        let out = k
            .run(&[
                "get",
                "widgets",
                "-o",
                "custom-columns=NAME:.metadata.name,SIZE:.spec.size",
            ])
            .success();
        assert_eq!(out.rows(), [["NAME", "SIZE"], ["w1", "2"]], "{out}");
    });

    s.step("get -w sees additions and changes", || {
        let mut watch = k.spawn(&["get", "cm", "-w"]);
        watch.expect_line(WAIT, |l| l.starts_with("beta "));
        create_configmap(&c, "default", "delta", json!({}), json!({"x": "1"}));
        let line = watch.expect_line(WAIT, |l| l.starts_with("delta "));
        assert!(line.split_whitespace().nth(1) == Some("1"), "{line}");
        k.run(&[
            "patch",
            "cm",
            "delta",
            "--type=merge",
            "-p",
            r#"{"data":{"y":"2"}}"#,
        ])
        .success();
        let line = watch.expect_line(WAIT, |l| l.starts_with("delta "));
        assert!(line.split_whitespace().nth(1) == Some("2"), "{line}");
        watch.kill();
    });

    s.step("get -w -o json --output-watch-events", || {
        let mut watch = k.spawn(&[
            "get",
            "cm",
            "gamma",
            "-n",
            "other",
            "-w",
            "-o",
            "json",
            "--output-watch-events",
        ]);
        watch.expect_line(WAIT, |l| l.starts_with(r#"{"type":"ADDED","#));
        k.run(&["delete", "cm", "gamma", "-n", "other"]).success();
        watch.expect_line(WAIT, |l| l.starts_with(r#"{"type":"DELETED","#));
        watch.kill();
    });

    s.finish();
}

#[test]
fn apply_client_side_and_server_side() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();

    let cm_v1 = c.file(
        "cm-v1.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  a: \"1\"\n  b: \"2\"\n",
    );
    let cm_v2 = c.file(
        "cm-v2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  a: \"1\"\n  c: \"3\"\n",
    );
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();

    s.step("apply creates a ConfigMap", || {
        k.run(&["apply", "-f", &path(&cm_v1)])
            .success()
            .stdout_is("configmap/app-config created");
        let cm = get_json(&k, &["cm", "app-config"]);
        assert_eq!(cm["data"], json!({"a": "1", "b": "2"}));
        let last =
            cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .as_str()
                .expect("last-applied annotation");
        let last: Value = serde_json::from_str(last).unwrap();
        assert_eq!(last["data"], json!({"a": "1", "b": "2"}));
    });

    s.step(
        "apply with a change removes the dropped key and keeps others' labels",
        || {
            k.run(&["label", "cm", "app-config", "team=blue"])
                .success()
                .stdout_is("configmap/app-config labeled");
            k.run(&["apply", "-f", &path(&cm_v2)])
                .success()
                .stdout_is("configmap/app-config configured");
            let cm = get_json(&k, &["cm", "app-config"]);
            assert_eq!(cm["data"], json!({"a": "1", "c": "3"}));
            assert_eq!(cm["metadata"]["labels"]["team"], "blue");
        },
    );

    s.step(
        "apply of the same file is unchanged and writes nothing",
        || {
            let before = get_json(&k, &["cm", "app-config"]);
            k.run(&["apply", "-f", &path(&cm_v2)])
                .success()
                .stdout_is("configmap/app-config unchanged");
            let after = get_json(&k, &["cm", "app-config"]);
            assert_eq!(
                before["metadata"]["resourceVersion"],
                after["metadata"]["resourceVersion"]
            );
        },
    );

    s.step(
        "apply a Deployment twice: a changed image keeps the other container",
        || {
            let v1 = c.file(
                "deploy-v1.json",
                &deployment("web", 1, "nginx:1.27", "busybox:1.36").to_string(),
            );
            let v2 = c.file(
                "deploy-v2.json",
                &deployment("web", 2, "nginx:1.28", "busybox:1.36").to_string(),
            );
            k.run(&["apply", "-f", &path(&v1)])
                .success()
                .stdout_is("deployment.apps/web created");
            k.run(&["apply", "-f", &path(&v2)])
                .success()
                .stdout_is("deployment.apps/web configured");
            assert_eq!(
                containers(&k, "web"),
                ["app=nginx:1.28", "sidecar=busybox:1.36"]
            );
            let d = get_json(&k, &["deploy", "web"]);
            assert_eq!(d["spec"]["replicas"], 2);
            assert_eq!(d["metadata"]["generation"], 2);
        },
    );

    s.step("apply a CRD and a custom resource twice", || {
        let crd = c.file("crd.yaml", WIDGET_CRD);
        k.run(&["apply", "-f", &path(&crd)])
            .success()
            .stdout_is("customresourcedefinition.apiextensions.k8s.io/widgets.demo.example.com created");
        k.run(&["wait", "--for=condition=Established", &format!("crd/{CRD_NAME}"), "--timeout=20s"])
            .success();
        let w1 = c.file(
            "w1-v1.yaml",
            "apiVersion: demo.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 1\n  color: blue\n",
        );
        let w2 = c.file(
            "w1-v2.yaml",
            "apiVersion: demo.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 2\n",
        );
        k.run(&["apply", "-f", &path(&w1)])
            .success()
            .stdout_is("widget.demo.example.com/w1 created");
        k.run(&["apply", "-f", &path(&w2)])
            .success()
            .stdout_is("widget.demo.example.com/w1 configured");
        assert_eq!(get_json(&k, &["widget", "w1"])["spec"], json!({"size": 2}));
    });

    s.step("apply --server-side twice on a ConfigMap", || {
        let v1 = c.file(
            "ssa-v1.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa-config\ndata:\n  a: \"1\"\n  b: \"2\"\n",
        );
        let v2 = c.file(
            "ssa-v2.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa-config\ndata:\n  a: \"1\"\n  c: \"3\"\n",
        );
        k.run(&["apply", "--server-side", "-f", &path(&v1)])
            .success()
            .stdout_is("configmap/ssa-config serverside-applied");
        k.run(&["apply", "--server-side", "-f", &path(&v2)])
            .success()
            .stdout_is("configmap/ssa-config serverside-applied");
        let cm = get_json(&k, &["cm", "ssa-config", "--show-managed-fields"]);
        assert_eq!(cm["data"], json!({"a": "1", "c": "3"}));
        let managers: Vec<(&str, &str)> = cm["metadata"]["managedFields"]
            .as_array()
            .expect("managedFields")
            .iter()
            .map(|m| (m["manager"].as_str().unwrap(), m["operation"].as_str().unwrap()))
            .collect();
        assert_eq!(managers, [("kubectl", "Apply")]);
    });

    s.step("apply --server-side twice on a Deployment", || {
        let v1 = c.file(
            "ssa-deploy-v1.json",
            &deployment("ssa-web", 1, "nginx:1.27", "busybox:1.36").to_string(),
        );
        let v2 = c.file(
            "ssa-deploy-v2.json",
            &deployment("ssa-web", 1, "nginx:1.27", "busybox:1.37").to_string(),
        );
        k.run(&["apply", "--server-side", "-f", &path(&v1)])
            .success()
            .stdout_is("deployment.apps/ssa-web serverside-applied");
        k.run(&["apply", "--server-side", "-f", &path(&v2)])
            .success()
            .stdout_is("deployment.apps/ssa-web serverside-applied");
        assert_eq!(
            containers(&k, "ssa-web"),
            ["app=nginx:1.27", "sidecar=busybox:1.37"]
        );
    });

    s.step("apply --server-side twice on a custom resource", || {
        let v1 = c.file(
            "w2-v1.yaml",
            "apiVersion: demo.example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: 1\n  color: red\n",
        );
        let v2 = c.file(
            "w2-v2.yaml",
            "apiVersion: demo.example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: 4\n",
        );
        k.run(&["apply", "--server-side", "-f", &path(&v1)])
            .success()
            .stdout_is("widget.demo.example.com/w2 serverside-applied");
        k.run(&["apply", "--server-side", "-f", &path(&v2)])
            .success()
            .stdout_is("widget.demo.example.com/w2 serverside-applied");
        assert_eq!(get_json(&k, &["widget", "w2"])["spec"], json!({"size": 4}));
    });

    s.step(
        "apply --server-side takes over a client-side applied object",
        || {
            k.run(&["apply", "--server-side", "-f", &path(&cm_v2)])
                .success()
                .stdout_is("configmap/app-config serverside-applied");
            let cm = get_json(&k, &["cm", "app-config"]);
            assert_eq!(cm["data"], json!({"a": "1", "c": "3"}));
        },
    );

    s.step("apply --dry-run=server changes nothing", || {
        k.run(&[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-f",
            &path(&cm_v1),
        ])
        .success()
        .stdout_is("configmap/app-config serverside-applied (server dry run)");
        let cm = get_json(&k, &["cm", "app-config"]);
        assert_eq!(cm["data"], json!({"a": "1", "c": "3"}));
    });

    s.finish();
}

#[test]
fn create_generators() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    let jsonpath = |what: &[&str], path: &str| -> String {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        let template = format!("jsonpath={path}");
        args.extend_from_slice(&["-o", &template]);
        k.run(&args).success().stdout.trim().to_owned()
    };

    s.step("create namespace", || {
        k.run(&["create", "namespace", "gen"])
            .success()
            .stdout_is("namespace/gen created");
        assert_eq!(jsonpath(&["ns", "gen"], "{.status.phase}"), "Active");
    });

    s.step("create configmap", || {
        k.run(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=fast",
            "--from-literal=level=3",
        ])
        .success()
        .stdout_is("configmap/settings created");
        assert_eq!(
            get_json(&k, &["cm", "settings"])["data"],
            json!({"mode": "fast", "level": "3"})
        );
    });

    s.step("create secret generic", || {
        k.run(&[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=password=s3cret",
        ])
        .success()
        .stdout_is("secret/creds created");
        let secret = get_json(&k, &["secret", "creds"]);
        assert_eq!(secret["type"], "Opaque");
        assert_eq!(secret["data"], json!({"password": "czNjcmV0"}));
    });

    s.step("create secret docker-registry", || {
        k.run(&[
            "create",
            "secret",
            "docker-registry",
            "regcred",
            "--docker-server=registry.example.com",
            "--docker-username=u",
            "--docker-password=p",
        ])
        .success()
        .stdout_is("secret/regcred created");
        assert_eq!(
            jsonpath(&["secret", "regcred"], "{.type}"),
            "kubernetes.io/dockerconfigjson"
        );
    });

    s.step("create secret tls", || {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/tls");
        let cert = dir.join("tls.crt");
        let key = dir.join("tls.key");
        k.run(&[
            "create",
            "secret",
            "tls",
            "web-tls",
            &format!("--cert={}", cert.display()),
            &format!("--key={}", key.display()),
        ])
        .success()
        .stdout_is("secret/web-tls created");
        let secret = get_json(&k, &["secret", "web-tls"]);
        assert_eq!(secret["type"], "kubernetes.io/tls");
        let mut keys: Vec<&str> = secret["data"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        assert_eq!(keys, ["tls.crt", "tls.key"]);
    });

    s.step("create serviceaccount", || {
        k.run(&["create", "serviceaccount", "robot"])
            .success()
            .stdout_is("serviceaccount/robot created");
        assert_eq!(jsonpath(&["sa", "robot"], "{.metadata.name}"), "robot");
    });

    s.step("create deployment", || {
        k.run(&[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--replicas=2",
            "--port=80",
        ])
        .success()
        .stdout_is("deployment.apps/web created");
        let d = get_json(&k, &["deploy", "web"]);
        assert_eq!(d["spec"]["replicas"], 2);
        assert_eq!(d["spec"]["selector"]["matchLabels"], json!({"app": "web"}));
        let container = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "nginx:1.27");
        assert_eq!(container["ports"][0]["containerPort"], 80);
    });

    s.step("create service clusterip", || {
        k.run(&["create", "service", "clusterip", "web", "--tcp=80:8080"])
            .success()
            .stdout_is("service/web created");
        let svc = get_json(&k, &["svc", "web"]);
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(svc["spec"]["ports"][0]["port"], 80);
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
        assert_eq!(svc["spec"]["selector"], json!({"app": "web"}));
    });

    s.step("create service nodeport", || {
        k.run(&["create", "service", "nodeport", "np", "--tcp=80:8080"])
            .success()
            .stdout_is("service/np created");
        assert_eq!(jsonpath(&["svc", "np"], "{.spec.type}"), "NodePort");
    });

    s.step("create service loadbalancer", || {
        k.run(&["create", "service", "loadbalancer", "lb", "--tcp=443:8443"])
            .success()
            .stdout_is("service/lb created");
        assert_eq!(jsonpath(&["svc", "lb"], "{.spec.type}"), "LoadBalancer");
    });

    s.step("create service externalname", || {
        k.run(&[
            "create",
            "service",
            "externalname",
            "ext",
            "--external-name=db.example.com",
        ])
        .success()
        .stdout_is("service/ext created");
        assert_eq!(
            jsonpath(&["svc", "ext"], "{.spec.type} {.spec.externalName}"),
            "ExternalName db.example.com"
        );
    });

    s.step("create role and rolebinding", || {
        k.run(&[
            "create",
            "role",
            "reader",
            "--verb=get,list",
            "--resource=configmaps",
        ])
        .success()
        .stdout_is("role.rbac.authorization.k8s.io/reader created");
        assert_eq!(
            get_json(&k, &["role", "reader"])["rules"],
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}])
        );
        k.run(&[
            "create",
            "rolebinding",
            "reader",
            "--role=reader",
            "--serviceaccount=default:robot",
        ])
        .success()
        .stdout_is("rolebinding.rbac.authorization.k8s.io/reader created");
        let rb = get_json(&k, &["rolebinding", "reader"]);
        assert_eq!(rb["roleRef"]["name"], "reader");
        assert_eq!(
            rb["subjects"],
            json!([{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}])
        );
    });

    s.step("create clusterrole and clusterrolebinding", || {
        k.run(&[
            "create",
            "clusterrole",
            "viewer",
            "--verb=get",
            "--resource=pods",
        ])
        .success()
        .stdout_is("clusterrole.rbac.authorization.k8s.io/viewer created");
        k.run(&[
            "create",
            "clusterrolebinding",
            "viewer",
            "--clusterrole=viewer",
            "--user=alice",
        ])
        .success()
        .stdout_is("clusterrolebinding.rbac.authorization.k8s.io/viewer created");
        assert_eq!(
            jsonpath(&["clusterrolebinding", "viewer"], "{.subjects[0].name}"),
            "alice"
        );
    });

    s.step("create -f (JSON body) and a duplicate create", || {
        let file = c.file(
            "pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p1\nspec:\n  containers:\n    - name: c\n      image: busybox:1.36\n",
        );
        k.run(&["create", "-f", file.to_str().unwrap()])
            .success()
            .stdout_is("pod/p1 created");
        k.run(&["create", "-f", file.to_str().unwrap()])
            .failure()
            .stderr_has(&format!(
                "Error from server (AlreadyExists): error when creating \"{}\": pods \"p1\" already exists",
                file.display()
            ));
    });

    s.finish();
}

#[test]
fn edit_patch_label_annotate_scale_set_image() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    // The edit steps, the patch steps and set image each work on objects of their own.
    create_configmap(&c, "default", "edited", json!({}), json!({"a": "1"}));
    create_configmap(&c, "default", "tune", json!({}), json!({"a": "1"}));
    create_deployment(&c, "edited-web");
    create_deployment(&c, "web");
    create_deployment(&c, "img");
    create_widget_crd(&c);
    create_widget(&c, "edited-w", json!({"size": 1}));
    create_widget(&c, "w1", json!({"size": 1}));

    // An editor that runs `sed` on the file kubectl hands it.
    let editor = |name: &str, script: &str| {
        let path = c.file(name, &format!("#!/bin/sh\nsed -i -e '{script}' \"$1\"\n"));
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
        path
    };

    s.step("edit a ConfigMap", || {
        let ed = editor("edit-cm.sh", r#"s/a: "1"/a: "edited"/"#);
        k.clone()
            .env("KUBE_EDITOR", &ed)
            .run(&["edit", "cm", "edited"])
            .success()
            .stdout_is("configmap/edited edited");
        assert_eq!(
            get_json(&k, &["cm", "edited"])["data"],
            json!({"a": "edited"})
        );
    });

    s.step(
        "edit a Deployment's second container keeps the first",
        || {
            let ed = editor("edit-deploy.sh", "s/busybox:1.36/busybox:1.37/");
            k.clone()
                .env("KUBE_EDITOR", &ed)
                .run(&["edit", "deploy", "edited-web"])
                .success()
                .stdout_is("deployment.apps/edited-web edited");
            assert_eq!(
                containers(&k, "edited-web"),
                ["app=nginx:1.27", "sidecar=busybox:1.37"]
            );
        },
    );

    s.step("edit a custom resource", || {
        let ed = editor("edit-widget.sh", "s/size: 1/size: 5/");
        k.clone()
            .env("KUBE_EDITOR", &ed)
            .run(&["edit", "widget", "edited-w"])
            .success()
            .stdout_is("widget.demo.example.com/edited-w edited");
        assert_eq!(
            get_json(&k, &["widget", "edited-w"])["spec"],
            json!({"size": 5})
        );
    });

    s.step("edit without a change is cancelled", || {
        let before = get_json(&k, &["cm", "edited"]);
        k.clone()
            .env("KUBE_EDITOR", "true")
            .run(&["edit", "cm", "edited"])
            .success()
            .stderr_has("Edit cancelled, no changes made.");
        let after = get_json(&k, &["cm", "edited"]);
        assert_eq!(
            before["metadata"]["resourceVersion"],
            after["metadata"]["resourceVersion"]
        );
    });

    s.step("patch --type=merge", || {
        k.run(&[
            "patch",
            "cm",
            "tune",
            "--type=merge",
            "-p",
            r#"{"data":{"b":"2"}}"#,
        ])
        .success()
        .stdout_is("configmap/tune patched");
        assert_eq!(
            get_json(&k, &["cm", "tune"])["data"],
            json!({"a": "1", "b": "2"})
        );
    });

    s.step("patch --type=json", || {
        k.run(&[
            "patch",
            "cm",
            "tune",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/data/b"},{"op":"add","path":"/data/c","value":"3"}]"#,
        ])
        .success()
        .stdout_is("configmap/tune patched");
        assert_eq!(
            get_json(&k, &["cm", "tune"])["data"],
            json!({"a": "1", "c": "3"})
        );
    });

    s.step("patch (strategic) merges containers by name", || {
        let patch = r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.38"}]}}}}"#;
        k.run(&["patch", "deploy", "web", "-p", patch])
            .success()
            .stdout_is("deployment.apps/web patched");
        assert_eq!(
            containers(&k, "web"),
            ["app=nginx:1.27", "sidecar=busybox:1.38"]
        );
        k.run(&["patch", "deploy", "web", "-p", patch])
            .success()
            .stdout_is("deployment.apps/web patched (no change)");
    });

    s.step("patch --type=merge on a custom resource's status", || {
        k.run(&[
            "patch",
            "widget",
            "w1",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Ready","status":"False"}]}}"#,
        ])
        .success()
        .stdout_is("widget.demo.example.com/w1 patched");
        let w = get_json(&k, &["widget", "w1"]);
        assert_eq!(w["status"]["conditions"][0]["type"], "Ready");
        assert_eq!(w["spec"], json!({"size": 1}));
    });

    s.step("label, relabel and unlabel", || {
        k.run(&["label", "cm", "tune", "env=prod"])
            .success()
            .stdout_is("configmap/tune labeled");
        k.run(&["label", "cm", "tune", "env=dev"])
            .failure()
            .stderr_has("'env' already has a value (prod), and --overwrite is false");
        k.run(&["label", "cm", "tune", "env=dev", "--overwrite"])
            .success()
            .stdout_is("configmap/tune labeled");
        assert_eq!(
            get_json(&k, &["cm", "tune"])["metadata"]["labels"],
            json!({"env": "dev"})
        );
        k.run(&["label", "cm", "tune", "env-"])
            .success()
            .stdout_is("configmap/tune unlabeled");
        let labels = &get_json(&k, &["cm", "tune"])["metadata"]["labels"];
        assert!(labels.get("env").is_none(), "{labels}");
    });

    s.step("label a custom resource", || {
        k.run(&["label", "widget", "w1", "tier=gold"])
            .success()
            .stdout_is("widget.demo.example.com/w1 labeled");
        k.run(&["get", "widgets", "-l", "tier=gold", "-o", "name"])
            .success()
            .stdout_is("widget.demo.example.com/w1");
    });

    s.step("annotate", || {
        k.run(&["annotate", "cm", "tune", "note=hello world"])
            .success()
            .stdout_is("configmap/tune annotated");
        assert_eq!(
            get_json(&k, &["cm", "tune"])["metadata"]["annotations"]["note"],
            "hello world"
        );
    });

    s.step("scale a Deployment", || {
        k.run(&["scale", "deploy", "web", "--replicas=3"])
            .success()
            .stdout_is("deployment.apps/web scaled");
        assert_eq!(get_json(&k, &["deploy", "web"])["spec"]["replicas"], 3);
        k.run(&[
            "scale",
            "deploy",
            "web",
            "--current-replicas=2",
            "--replicas=4",
        ])
        .failure()
        .stderr_has("Expected replicas to be 2, was 3");
        assert_eq!(get_json(&k, &["deploy", "web"])["spec"]["replicas"], 3);
    });

    s.step("set image keeps the other container", || {
        k.run(&["set", "image", "deploy/img", "app=nginx:1.28"])
            .success()
            .stdout_is("deployment.apps/img image updated");
        assert_eq!(
            containers(&k, "img"),
            ["app=nginx:1.28", "sidecar=busybox:1.36"]
        );
    });

    s.finish();
}

#[test]
fn wait_delete_diff_auth() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    create_widget_crd(&c);

    s.step("wait for a CRD's Established condition", || {
        k.run(&[
            "wait",
            "--for=condition=Established",
            &format!("crd/{CRD_NAME}"),
            "--timeout=20s",
        ])
        .success()
        .stdout_is(&format!(
            "customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} condition met"
        ));
    });

    s.step("wait for a condition that a later status patch sets", || {
        create_widget(&c, "w1", json!({"size": 1}));
        let wait = k.spawn(&["wait", "--for=condition=Ready", "widget/w1", "--timeout=20s"]);
        std::thread::sleep(Duration::from_millis(700));
        k.run(&[
            "patch",
            "widget",
            "w1",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Done","message":"ready","lastTransitionTime":"2025-01-01T00:00:00Z"}]}}"#,
        ])
        .success();
        wait.finish(WAIT)
            .success()
            .stdout_is("widget.demo.example.com/w1 condition met");
    });

    s.step("wait --for=jsonpath", || {
        k.run(&[
            "wait",
            "--for=jsonpath={.spec.size}=1",
            "widget/w1",
            "--timeout=20s",
        ])
        .success()
        .stdout_is("widget.demo.example.com/w1 condition met");
    });

    s.step("wait --for=delete while another kubectl deletes", || {
        create_configmap(&c, "default", "doomed", json!({}), json!({"a": "1"}));
        let wait = k.spawn(&["wait", "--for=delete", "cm/doomed", "--timeout=20s"]);
        std::thread::sleep(Duration::from_millis(700));
        k.run(&["delete", "cm", "doomed"])
            .success()
            .stdout_has("configmap \"doomed\" deleted");
        wait.finish(WAIT)
            .success()
            .stdout_is("configmap/doomed condition met");
        k.run(&["get", "cm", "doomed"])
            .failure()
            .stderr_has("Error from server (NotFound): configmaps \"doomed\" not found");
    });

    s.step("delete by label selector", || {
        create_configmap(&c, "default", "tmp1", json!({"tier": "tmp"}), json!({}));
        create_configmap(&c, "default", "tmp2", json!({"tier": "tmp"}), json!({}));
        create_configmap(&c, "default", "kept", json!({"tier": "keep"}), json!({}));
        let out = k.run(&["delete", "cm", "-l", "tier=tmp"]).success();
        assert!(out.stdout.contains("configmap \"tmp1\" deleted"), "{out}");
        assert!(out.stdout.contains("configmap \"tmp2\" deleted"), "{out}");
        k.run(&["get", "cm", "-l", "tier", "-o", "name"])
            .success()
            .stdout_is("configmap/kept");
    });

    s.step("delete a namespace with objects in it", || {
        create_namespace(&c, "trash");
        create_configmap(&c, "trash", "junk", json!({}), json!({"a": "1"}));
        k.run(&["delete", "ns", "trash", "--timeout=20s"])
            .success()
            .stdout_has("namespace \"trash\" deleted");
        k.run(&["get", "ns", "trash"])
            .failure()
            .stderr_has("Error from server (NotFound): namespaces \"trash\" not found");
        k.run(&["get", "cm", "-n", "trash"])
            .success()
            .stderr_has("No resources found in trash namespace.");
    });

    s.step("delete a CRD removes its kind and its objects", || {
        k.run(&["delete", "crd", CRD_NAME])
            .success()
            .stdout_has(&format!(
                "customresourcedefinition.apiextensions.k8s.io \"{CRD_NAME}\" deleted"
            ));
        let out = k
            .run(&["api-resources", "--api-group=demo.example.com"])
            .success();
        assert_eq!(out.rows().len(), 1, "only the header is left:\n{out}");
        k.run(&[
            "get",
            "--raw",
            "/apis/demo.example.com/v1/namespaces/default/widgets",
        ])
        .failure()
        .stderr_has("NotFound");
        create_widget_crd(&c);
        k.run(&["get", "widgets", "-A"])
            .success()
            .stderr_has("No resources found");
    });

    s.step("diff shows a change and writes nothing", || {
        create_configmap(&c, "default", "live", json!({}), json!({"a": "1"}));
        let before = get_json(&k, &["cm", "live"]);
        let changed = c.file(
            "live-changed.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: live\ndata:\n  a: \"2\"\n",
        );
        let out = k.run(&["diff", "-f", changed.to_str().unwrap()]);
        assert_eq!(out.status.and_then(|s| s.code()), Some(1), "{out}");
        assert!(out.stdout.contains("-  a: \"1\""), "{out}");
        assert!(out.stdout.contains("+  a: \"2\""), "{out}");
        let diff_lines: Vec<&str> = out
            .stdout
            .lines()
            .filter(|l| {
                (l.starts_with('-') || l.starts_with('+'))
                    && !l.starts_with("---")
                    && !l.starts_with("+++")
            })
            .collect();
        assert_eq!(diff_lines, ["-  a: \"1\"", "+  a: \"2\""], "{out}");
        let after = get_json(&k, &["cm", "live"]);
        assert_eq!(before, after);
    });

    s.step("diff of the live state is empty", || {
        let same = c.file(
            "live-same.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: live\ndata:\n  a: \"1\"\n",
        );
        k.run(&["diff", "-f", same.to_str().unwrap()])
            .success()
            .stdout_is("");
    });

    s.step("auth can-i", || {
        k.run(&["auth", "can-i", "get", "pods"])
            .success()
            .stdout_is("yes");
        k.run(&["auth", "can-i", "create", "configmaps", "-n", "kube-system"])
            .success()
            .stdout_is("yes");
        k.run(&["auth", "can-i", "*", "*"])
            .success()
            .stdout_is("yes");
    });

    s.step("create token and auth whoami", || {
        k.run(&["create", "serviceaccount", "builder"])
            .success()
            .stdout_is("serviceaccount/builder created");
        let token = k
            .run(&["create", "token", "builder", "--duration=15m"])
            .success()
            .stdout
            .trim()
            .to_owned();
        assert_eq!(
            token.split('.').count(),
            3,
            "a service-account token is a JWT: {token}"
        );
        k.run(&[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
        .success()
        .stdout_is("atoll-admin");
        k.run(&[
            "auth",
            "whoami",
            "--token",
            &token,
            "-o",
            "jsonpath={.status.userInfo.username}",
        ])
        .success()
        .stdout_is("system:serviceaccount:default:builder");
        k.run(&["create", "token", "nobody"])
            .failure()
            .stderr_has("serviceaccounts \"nobody\" not found");
    });

    s.finish();
}

/// Names and resourceVersions of everything the bad-input steps could touch.
fn stored(k: &Tool) -> Vec<String> {
    let mut out = Vec::new();
    for path in [
        "/api/v1/namespaces/default/configmaps",
        "/apis/apps/v1/namespaces/default/deployments",
        "/apis/demo.example.com/v1/namespaces/default/widgets",
    ] {
        let list = k.run(&["get", "--raw", path]).success().json();
        for item in list["items"].as_array().unwrap() {
            out.push(format!(
                "{} {}@{}",
                item["kind"].as_str().unwrap_or(path),
                item["metadata"]["name"].as_str().unwrap(),
                item["metadata"]["resourceVersion"].as_str().unwrap()
            ));
        }
        out.push(format!(
            "{path} {}",
            list["items"].as_array().unwrap().len()
        ));
    }
    out
}

#[test]
fn bad_input_gets_kube_apiserver_messages() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    create_widget_crd(&c);
    create_configmap(&c, "default", "keep", json!({}), json!({"k": "v"}));
    create_deployment(&c, "web");
    create_widget(&c, "w1", json!({"size": 1}));

    // Runs a bad command and checks that nothing stored changed.
    let unchanged = |step: &dyn Fn()| {
        let before = stored(&k);
        step();
        assert_eq!(stored(&k), before, "stored objects changed");
    };

    s.step("unknown field in a ConfigMap (apply, Strict)", || {
        unchanged(&|| {
            let file = c.file(
                "typo.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: typo\ndatax:\n  a: \"1\"\n",
            );
            k.run(&["apply", "-f", file.to_str().unwrap()])
                .failure()
                .stderr_has(&format!(
                    "Error from server (BadRequest): error when creating \"{}\": strict decoding error: unknown field \"datax\"",
                    file.display()
                ));
        });
    });

    s.step("unknown field in a Deployment (create, Strict)", || {
        unchanged(&|| {
            let mut d = deployment("typo", 1, "nginx:1.27", "busybox:1.36");
            d["spec"]["template"]["spec"]["containers"][0]["imagex"] = json!("nginx");
            let file = c.file("typo-deploy.json", &d.to_string());
            k.run(&["create", "-f", file.to_str().unwrap()])
                .failure()
                .stderr_has(&format!(
                    "Error from server (BadRequest): error when creating \"{}\": strict decoding error: unknown field \"spec.template.spec.containers[0].imagex\"",
                    file.display()
                ));
        });
    });

    s.step("unknown field in a custom resource (apply --server-side, Strict)", || {
        unchanged(&|| {
            let file = c.file(
                "typo-widget.yaml",
                "apiVersion: demo.example.com/v1\nkind: Widget\nmetadata:\n  name: typo\nspec:\n  size: 1\n  shape: round\n",
            );
            k.run(&["apply", "--server-side", "-f", file.to_str().unwrap()])
                .failure()
                .stderr_has("Error from server (BadRequest)")
                .stderr_has("strict decoding error: unknown field \"spec.shape\"");
        });
    });

    s.step("wrong type in a Deployment", || {
        unchanged(&|| {
            let mut d = deployment("wrong", 1, "nginx:1.27", "busybox:1.36");
            d["spec"]["replicas"] = json!("three");
            let file = c.file("wrong-deploy.json", &d.to_string());
            k.run(&["apply", "-f", file.to_str().unwrap()])
                .failure()
                // kube-apiserver's Go decoder words the cause in Go terms; atoll names the
                // field and the expected type in its schema validator's words.
                .stderr_has(&format!(
                    "Error from server (BadRequest): error when creating \"{}\": Deployment in version \"v1\" cannot be handled as a Deployment: spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer",
                    file.display()
                ));
        });
    });

    s.step("wrong type in a custom resource", || {
        unchanged(&|| {
            let file = c.file(
                "wrong-widget.yaml",
                "apiVersion: demo.example.com/v1\nkind: Widget\nmetadata:\n  name: wrong\nspec:\n  size: big\n",
            );
            k.run(&["apply", "-f", file.to_str().unwrap()])
                .failure()
                .stderr_has("The Widget \"wrong\" is invalid: spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"");
        });
    });

    s.step("wrong type in an update of a custom resource", || {
        unchanged(&|| {
            k.run(&["patch", "widget", "w1", "--type=merge", "-p", r#"{"spec":{"size":"big"}}"#])
                .failure()
                .stderr_has("The Widget \"w1\" is invalid: spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"");
        });
    });

    s.step(
        "server-side apply conflicting with another field manager",
        || {
            let mine = c.file(
                "shared-a.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  k: \"1\"\n",
            );
            let theirs = c.file(
                "shared-b.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\ndata:\n  k: \"2\"\n",
            );
            k.run(&[
                "apply",
                "--server-side",
                "--field-manager=alice",
                "-f",
                mine.to_str().unwrap(),
            ])
            .success()
            .stdout_is("configmap/shared serverside-applied");
            unchanged(&|| {
                k.run(&[
                    "apply",
                    "--server-side",
                    "--field-manager=bob",
                    "-f",
                    theirs.to_str().unwrap(),
                ])
                .failure()
                .stderr_has("Apply failed with 1 conflict: conflict with \"alice\": .data.k")
                .stderr_has("--force-conflicts");
            });
            assert_eq!(get_json(&k, &["cm", "shared"])["data"], json!({"k": "1"}));
            k.run(&[
                "apply",
                "--server-side",
                "--field-manager=bob",
                "--force-conflicts",
                "-f",
                theirs.to_str().unwrap(),
            ])
            .success()
            .stdout_is("configmap/shared serverside-applied");
            assert_eq!(get_json(&k, &["cm", "shared"])["data"], json!({"k": "2"}));
        },
    );

    s.step("strategic merge patch on a custom resource", || {
        unchanged(&|| {
            k.run(&["patch", "widget", "w1", "-p", r#"{"spec":{"size":7}}"#])
                .failure()
                // kubectl rewords the server's 415 UnsupportedMediaType.
                .stderr_has("error: application/strategic-merge-patch+json is not supported by demo.example.com/v1, Kind=Widget: the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
        });
    });

    s.step("invalid name", || {
        unchanged(&|| {
            let file = c.file(
                "bad-name.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\ndata:\n  a: \"1\"\n",
            );
            k.run(&["create", "-f", file.to_str().unwrap()])
                .failure()
                .stderr_has("The ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character");
        });
    });

    s.finish();
}
