//! helm 3 and helm 4 against `atoll apiserver`: install, upgrade with a changed value, list,
//! status, rollback and uninstall of a chart with a ConfigMap, a Secret, a Deployment, a Service
//! and a CRD with a custom resource (`testdata/charts/demo`), and an install of a chart whose
//! manifest the server must reject (`testdata/charts/invalid`). Each step checks what helm printed
//! and what the server then holds. Then cert-manager's own chart (`testdata/charts/cert-manager`,
//! upstream's, Apache-2.0), installed and uninstalled with each helm: RBAC names with `:`, webhook
//! configurations, CRDs in templates, NetworkPolicies, PodDisruptionBudgets and a post-install
//! hook Job.

use std::path::PathBuf;

use atoll_tests::{Cluster, Steps, Tool};
use serde_json::{Value, json};

fn chart(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/charts")
        .join(name)
        .to_str()
        .unwrap()
        .to_owned()
}

/// `kubectl get ARGS -n shop -o json`, parsed.
fn get(k: &Tool, args: &[&str]) -> Value {
    let mut all = vec!["get", "-n", "shop"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    k.run(&all).success().json()
}

/// The helm release records (Secrets) in `shop`, as `name status`.
fn releases(k: &Tool) -> Vec<String> {
    let list = get(k, &["secrets", "-l", "owner=helm,name=demo"]);
    let mut out: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["type"], "helm.sh/release.v1", "{s}");
            format!(
                "{} {}",
                s["metadata"]["name"].as_str().unwrap(),
                s["metadata"]["labels"]["status"].as_str().unwrap()
            )
        })
        .collect();
    out.sort();
    out
}

/// What the demo chart's objects hold: (greeting, password, web image, widget color).
fn chart_state(k: &Tool) -> (String, String, String, String) {
    let cm = get(k, &["configmap", "demo-settings"]);
    let secret = get(k, &["secret", "demo-credentials"]);
    let deploy = get(k, &["deployment", "demo-web"]);
    let widget = get(k, &["widget", "demo-widget"]);
    let containers = deploy["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 2, "{deploy}");
    assert_eq!(containers[1]["image"], "busybox:1.36", "{deploy}");
    (
        cm["data"]["greeting"].as_str().unwrap().to_owned(),
        secret["data"]["password"].as_str().unwrap().to_owned(),
        containers[0]["image"].as_str().unwrap().to_owned(),
        widget["spec"]["color"].as_str().unwrap().to_owned(),
    )
}

fn state(greeting: &str, image: &str, color: &str) -> (String, String, String, String) {
    (
        greeting.into(),
        "czNjcmV0".into(), // base64("s3cret")
        image.into(),
        color.into(),
    )
}

/// The release lifecycle with one helm binary against a fresh server. `status_args` are what
/// `helm status` needs to list the release's resources (helm 3: `--show-resources`; helm 4 lists
/// them by default, reading each object as a Table).
fn lifecycle(c: &Cluster, helm: Tool, status_args: &[&str]) {
    let k = c.kubectl();
    let demo = chart("demo");
    let mut s = Steps::default();

    s.step("install", || {
        let out = helm
            .run(&["install", "demo", &demo, "-n", "shop", "--create-namespace"])
            .success()
            .stdout_has("NAME: demo")
            .stdout_has("NAMESPACE: shop")
            .stdout_has("STATUS: deployed")
            .stdout_has("REVISION: 1");
        assert!(!out.stderr.contains("Error"), "{out}");
        assert_eq!(chart_state(&k), state("hello", "nginx:1.27", "blue"));
        let port = &get(&k, &["service", "demo-web"])["spec"]["ports"][0];
        assert_eq!(
            (&port["name"], &port["port"], &port["targetPort"]),
            (&json!("http"), &json!(80), &json!(80))
        );
        let deploy = get(&k, &["deployment", "demo-web"]);
        assert_eq!(
            deploy["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "Helm"
        );
        assert_eq!(
            deploy["metadata"]["annotations"]["meta.helm.sh/release-name"],
            "demo"
        );
        let crd = k
            .run(&["get", "crd", "widgets.demo.example.com", "-o", "name"])
            .success();
        assert_eq!(
            crd.stdout.trim(),
            "customresourcedefinition.apiextensions.k8s.io/widgets.demo.example.com"
        );
        assert_eq!(releases(&k), ["sh.helm.release.v1.demo.v1 deployed"]);
    });

    s.step("upgrade with changed values", || {
        helm.run(&[
            "upgrade",
            "demo",
            &demo,
            "-n",
            "shop",
            "--set",
            "greeting=bye",
            "--set",
            "color=red",
            "--set",
            "image.tag=1.28",
        ])
        .success()
        .stdout_has("Release \"demo\" has been upgraded. Happy Helming!")
        .stdout_has("STATUS: deployed")
        .stdout_has("REVISION: 2");
        assert_eq!(chart_state(&k), state("bye", "nginx:1.28", "red"));
        let env = &get(&k, &["deployment", "demo-web"])["spec"]["template"]["spec"]["containers"]
            [0]["env"];
        assert_eq!(*env, json!([{"name": "GREETING", "value": "bye"}]));
        assert_eq!(
            releases(&k),
            [
                "sh.helm.release.v1.demo.v1 superseded",
                "sh.helm.release.v1.demo.v2 deployed"
            ]
        );
    });

    s.step("list", || {
        let out = helm.run(&["list", "-n", "shop"]).success();
        let rows = out.rows();
        assert_eq!(
            rows[0],
            [
                "NAME",
                "NAMESPACE",
                "REVISION",
                "UPDATED",
                "STATUS",
                "CHART",
                "APP",
                "VERSION"
            ],
            "{out}"
        );
        assert_eq!(rows.len(), 2, "{out}");
        assert_eq!(rows[1][..3], ["demo", "shop", "2"], "{out}");
        assert!(
            rows[1].ends_with(&["deployed".into(), "demo-0.1.0".into(), "1.0.0".into()]),
            "{out}"
        );
        let json = helm
            .run(&["list", "-n", "shop", "-o", "json"])
            .success()
            .json();
        assert_eq!(json[0]["name"], "demo");
        assert_eq!(json[0]["revision"], "2");
        assert_eq!(json[0]["status"], "deployed");
        assert_eq!(json[0]["chart"], "demo-0.1.0");
    });

    s.step("status", || {
        let mut args = vec!["status", "demo", "-n", "shop"];
        args.extend_from_slice(status_args);
        let out = helm
            .run(&args)
            .success()
            .stdout_has("NAME: demo")
            .stdout_has("STATUS: deployed")
            .stdout_has("REVISION: 2");
        for name in [
            "demo-settings",
            "demo-credentials",
            "demo-web",
            "demo-widget",
        ] {
            assert!(out.stdout.contains(name), "missing {name}:\n{out}");
        }
    });

    s.step("rollback", || {
        helm.run(&["rollback", "demo", "1", "-n", "shop"])
            .success()
            .stdout_has("Rollback was a success! Happy Helming!");
        assert_eq!(chart_state(&k), state("hello", "nginx:1.27", "blue"));
        let history = helm
            .run(&["history", "demo", "-n", "shop", "-o", "json"])
            .success()
            .json();
        let statuses: Vec<(&str, &str)> = history
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["status"].as_str().unwrap(),
                    h["description"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            statuses,
            [
                ("superseded", "Install complete"),
                ("superseded", "Upgrade complete"),
                ("deployed", "Rollback to 1"),
            ]
        );
    });

    s.step("uninstall", || {
        helm.run(&["uninstall", "demo", "-n", "shop"])
            .success()
            .stdout_has("release \"demo\" uninstalled");
        for object in [
            "configmap/demo-settings",
            "secret/demo-credentials",
            "deployment/demo-web",
            "service/demo-web",
            "widget/demo-widget",
        ] {
            k.run(&[
                "get",
                "-n",
                "shop",
                object,
                "--ignore-not-found",
                "-o",
                "name",
            ])
            .success()
            .stdout_is("");
        }
        assert!(releases(&k).is_empty());
        // helm leaves the CRDs of crds/ in place.
        k.run(&["get", "crd", "widgets.demo.example.com", "-o", "name"])
            .success()
            .stdout_is("customresourcedefinition.apiextensions.k8s.io/widgets.demo.example.com");
        helm.run(&["list", "-n", "shop", "-q"])
            .success()
            .stdout_is("");
    });

    s.finish();
}

#[test]
fn helm3_release_lifecycle() {
    let c = Cluster::start().unwrap();
    lifecycle(&c, c.helm3(), &["--show-resources"]);
}

#[test]
fn helm4_release_lifecycle() {
    let c = Cluster::start().unwrap();
    lifecycle(&c, c.helm(), &[]);
}

#[test]
fn helm_rejects_an_invalid_chart() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let invalid = chart("invalid");
    let mut s = Steps::default();
    let configmaps = || {
        let list = k
            .run(&["get", "--raw", "/api/v1/configmaps"])
            .success()
            .json();
        let mut out: Vec<String> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                format!(
                    "{}/{}@{}",
                    i["metadata"]["namespace"].as_str().unwrap(),
                    i["metadata"]["name"].as_str().unwrap(),
                    i["metadata"]["resourceVersion"].as_str().unwrap()
                )
            })
            .collect();
        out.sort();
        out
    };

    for (name, helm) in [("helm 3", c.helm3()), ("helm 4", c.helm())] {
        s.step(&format!("{name} install of an invalid manifest"), || {
            let before = configmaps();
            helm.run(&["install", "bad", &invalid, "-n", "default"])
                .failure()
                .stderr_has("Error: INSTALLATION FAILED:")
                .stderr_has("ConfigMap \"Bad_Settings\" is invalid: metadata.name: Invalid value: \"Bad_Settings\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character");
            assert_eq!(configmaps(), before, "stored ConfigMaps changed");
            // helm records the failed release, as it does against kube-apiserver.
            let list = helm
                .run(&["list", "--failed", "-n", "default", "-o", "json"])
                .success()
                .json();
            assert_eq!(list[0]["name"], "bad", "{list}");
            assert_eq!(list[0]["status"], "failed", "{list}");
            helm.run(&["uninstall", "bad", "-n", "default"])
                .success()
                .stdout_has("release \"bad\" uninstalled");
        });
    }

    s.finish();
}

/// Marks the hook Job `name` in `ns` Complete once it exists, as a Job controller would when its
/// pod succeeded (atoll runs no workload controllers: without this, helm would wait for the hook
/// until its timeout, as it would on a cluster with no nodes).
fn complete_job_when_created(
    k: Tool,
    ns: &'static str,
    name: &'static str,
) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        for _ in 0..600 {
            let found = k.run(&[
                "get",
                "job",
                name,
                "-n",
                ns,
                "--ignore-not-found",
                "-o",
                "name",
            ]);
            if found.stdout.trim() == format!("job.batch/{name}") {
                k.run(&[
                    "patch", "job", name, "-n", ns, "--subresource=status", "--type=merge", "-p",
                    r#"{"status":{"succeeded":1,"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}}"#,
                ])
                .success();
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        false
    })
}

fn install_cert_manager(helm: Tool, c: &Cluster) {
    let k = c.kubectl();
    let chart = chart("cert-manager");
    let mut s = Steps::default();
    s.step("install, with the post-install hook Job completing", || {
        let completer =
            complete_job_when_created(k.clone(), "cert-manager", "cert-manager-startupapicheck");
        helm.run(&[
            "install",
            "cert-manager",
            &chart,
            "-n",
            "cert-manager",
            "--create-namespace",
            "--set",
            "crds.enabled=true",
            "--timeout",
            "2m",
        ])
        .success()
        .stdout_has("STATUS: deployed");
        assert!(completer.join().unwrap(), "the hook Job was never created");
    });
    s.step("what the chart made is there as upstream names it", || {
        let names = |args: &[&str]| -> Vec<String> {
            let mut all = vec!["get"];
            all.extend_from_slice(args);
            all.extend_from_slice(&["-o", "name"]);
            let mut out: Vec<String> = k.run(&all).success().stdout.lines().map(str::to_owned).collect();
            out.sort();
            out
        };
        let roles = names(&["clusterroles", "-l", "app.kubernetes.io/instance=cert-manager"]);
        assert!(
            roles.contains(&"clusterrole.rbac.authorization.k8s.io/cert-manager-controller-approve:cert-manager-io".to_owned()),
            "{roles:?}"
        );
        assert!(
            names(&["roles", "-n", "kube-system"])
                .contains(&"role.rbac.authorization.k8s.io/cert-manager:leaderelection".to_owned())
        );
        assert_eq!(
            names(&["validatingwebhookconfigurations,mutatingwebhookconfigurations"]),
            [
                "mutatingwebhookconfiguration.admissionregistration.k8s.io/cert-manager-webhook",
                "validatingwebhookconfiguration.admissionregistration.k8s.io/cert-manager-webhook",
            ]
        );
        let webhook = k
            .run(&["get", "validatingwebhookconfiguration", "cert-manager-webhook", "-o", "json"])
            .success()
            .json();
        // Upstream's defaults for what the chart leaves out, filled in by the server.
        let hook = &webhook["webhooks"][0];
        assert_eq!(hook["clientConfig"]["service"]["port"], 443, "{webhook}");
        assert_eq!(hook["rules"][0]["scope"], "*", "{webhook}");
        assert_eq!(hook["objectSelector"], json!({}), "{webhook}");
        assert!(names(&["crds"]).contains(&"customresourcedefinition.apiextensions.k8s.io/certificates.cert-manager.io".to_owned()));
        assert_eq!(
            names(&["deployments", "-n", "cert-manager"]),
            [
                "deployment.apps/cert-manager",
                "deployment.apps/cert-manager-cainjector",
                "deployment.apps/cert-manager-webhook",
            ]
        );
        // The hook Job was deleted once it succeeded (hook-delete-policy: hook-succeeded).
        assert_eq!(names(&["jobs", "-n", "cert-manager"]), Vec::<String>::new());
    });
    s.step("uninstall removes it", || {
        helm.run(&["uninstall", "cert-manager", "-n", "cert-manager"])
            .success()
            .stdout_has("release \"cert-manager\" uninstalled");
        let left = k
            .run(&[
                "get",
                "clusterroles,validatingwebhookconfigurations",
                "-l",
                "app.kubernetes.io/instance=cert-manager",
                "-o",
                "name",
            ])
            .success();
        assert_eq!(left.stdout.trim(), "", "left behind");
    });
    s.finish();
}

#[test]
fn helm3_installs_cert_manager() {
    let c = Cluster::start().unwrap();
    install_cert_manager(c.helm3(), &c);
}

#[test]
fn helm4_installs_cert_manager() {
    let c = Cluster::start().unwrap();
    install_cert_manager(c.helm(), &c);
}
