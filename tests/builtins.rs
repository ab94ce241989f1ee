//! The built-in APIs of Kubernetes 1.35 on `atoll apiserver`, driven with kubectl 1.35: every
//! resource kube-apiserver serves by default, each with its own name rule, the defaults users
//! notice, versions that differ in shape (HorizontalPodAutoscaler `v2` and `v1`), what every
//! namespace holds (ServiceAccount `default`, ConfigMap `kube-root-ca.crt`), the Pod
//! subresources a node-less cluster answers, and the reviews.

use std::time::{Duration, Instant};

use atoll_tests::{Cluster, Steps, Tool};
use base64::Engine as _;
use serde_json::{Value, json};

/// Runs `check` until it holds, for at most 20 seconds.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The names `kubectl get ARGS -o name` prints, sorted.
fn names(k: &Tool, args: &[&str]) -> Vec<String> {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "name"]);
    let mut out: Vec<String> = k
        .run(&all)
        .success()
        .stdout
        .lines()
        .map(str::to_owned)
        .collect();
    out.sort();
    out
}

#[test]
fn every_default_resource_is_served_as_kube_apiserver_serves_it() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let rows = k.run(&["api-resources", "-o", "wide"]).success().rows();
    // The header, then kube-apiserver 1.35's 65 resources.
    assert_eq!(rows.len(), 66, "{rows:?}");
    let row = |name: &str, version: &str| -> Vec<String> {
        rows.iter()
            .find(|r| r[0] == name && r.iter().any(|c| c == version))
            .unwrap_or_else(|| panic!("no {name} at {version}: {rows:?}"))
            .clone()
    };
    let all_verbs = "create,delete,deletecollection,get,list,patch,update,watch";
    assert_eq!(
        row("cronjobs", "batch/v1"),
        [
            "cronjobs", "cj", "batch/v1", "true", "CronJob", all_verbs, "all"
        ]
    );
    assert_eq!(
        row(
            "validatingwebhookconfigurations",
            "admissionregistration.k8s.io/v1"
        ),
        [
            "validatingwebhookconfigurations",
            "admissionregistration.k8s.io/v1",
            "false",
            "ValidatingWebhookConfiguration",
            all_verbs,
            "api-extensions"
        ]
    );
    assert_eq!(
        row("subjectaccessreviews", "authorization.k8s.io/v1"),
        [
            "subjectaccessreviews",
            "authorization.k8s.io/v1",
            "false",
            "SubjectAccessReview",
            "create"
        ]
    );
    assert_eq!(
        row("componentstatuses", "v1"),
        [
            "componentstatuses",
            "cs",
            "v1",
            "false",
            "ComponentStatus",
            "get,list"
        ]
    );
    assert_eq!(
        row("namespaces", "v1"),
        [
            "namespaces",
            "ns",
            "v1",
            "false",
            "Namespace",
            "create,delete,get,list,patch,update,watch"
        ]
    );
    let versions = k.run(&["api-versions"]).success().stdout;
    for version in [
        "autoscaling/v1",
        "autoscaling/v2",
        "batch/v1",
        "resource.k8s.io/v1",
        "flowcontrol.apiserver.k8s.io/v1",
        "apiregistration.k8s.io/v1",
    ] {
        assert!(
            versions.lines().any(|l| l == version),
            "{version}: {versions}"
        );
    }
    // `kubectl explain` reads each kind's schema from OpenAPI.
    k.run(&["explain", "cronjob.spec.schedule"])
        .success()
        .stdout_has("FIELD: schedule <string>");
}

#[test]
fn names_follow_each_resources_rule_and_a_refusal_stores_nothing() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    let everything = || {
        names(
            &k,
            &[
                "services,statefulsets,cronjobs,ipaddresses,clusterroles",
                "-A",
            ],
        )
    };
    s.step("RBAC names are path segments: ':' is fine", || {
        k.run_with_stdin(
            &["create", "-f", "-"],
            r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "system:controller:widgets"}, "rules": []}"#,
        )
        .success();
        k.run_with_stdin(
            &["create", "-f", "-"],
            r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "a/b"}, "rules": []}"#,
        )
        .failure()
        .stderr_has(r#"The ClusterRole "a/b" is invalid: metadata.name: Invalid value: "a/b": may not contain '/'"#);
    });
    let before = everything();
    let refusals: [(&str, Value, &str); 4] = [
        (
            "a Service name is a DNS-1035 label",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1web", "namespace": "default"},
                "spec": {"ports": [{"port": 80}]}}),
            r#"The Service "1web" is invalid: metadata.name: Invalid value: "1web": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"#,
        ),
        (
            "a StatefulSet name is a DNS-1123 label",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "s".repeat(64), "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"a": "b"}}, "serviceName": "x",
                    "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
            "must be no more than 63 characters",
        ),
        (
            "a CronJob name has at most 52 characters",
            json!({"apiVersion": "batch/v1", "kind": "CronJob",
                "metadata": {"name": "c".repeat(53), "namespace": "default"},
                "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}}),
            "must be no more than 52 characters",
        ),
        (
            "an IPAddress is named by its address in canonical form",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
                "metadata": {"name": "2001:db8:0:0::1"},
                "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "web"}}}),
            r#"must be in canonical form ("2001:db8::1")"#,
        ),
    ];
    for (what, object, message) in refusals {
        s.step(what, || {
            k.run_with_stdin(&["create", "-f", "-"], &object.to_string())
                .failure()
                .stderr_has("is invalid: metadata.name: Invalid value:")
                .stderr_has(message);
        });
    }
    s.step("nothing refused was stored", || {
        assert_eq!(everything(), before);
    });
    s.finish();
}

#[test]
fn a_list_of_workloads_applies_with_upstreams_defaults() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "default"},
         "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
             "restartPolicy": "OnFailure", "containers": [{"name": "m", "image": "busybox:1.36"}]}}}}}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "default"},
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5,
             "metrics": [
                 {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                 {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny", "namespace": "default"},
         "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "view:alice", "namespace": "default"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "User", "name": "alice"}]},
    ]});
    let mut s = Steps::default();
    s.step("kubectl apply of a v1 List", || {
        k.run_with_stdin(&["apply", "-f", "-"], &list.to_string())
            .success()
            .stdout_has("cronjob.batch/nightly created")
            .stdout_has("horizontalpodautoscaler.autoscaling/web created")
            .stdout_has("networkpolicy.networking.k8s.io/deny created")
            .stdout_has("rolebinding.rbac.authorization.k8s.io/view:alice created");
        // A second apply changes nothing.
        k.run_with_stdin(&["apply", "-f", "-"], &list.to_string())
            .success()
            .stdout_has("cronjob.batch/nightly unchanged");
    });
    s.step("the defaults kube-apiserver fills", || {
        let cj = k
            .run(&["get", "cronjob", "nightly", "-o", "json"])
            .success()
            .json();
        assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], 3);
        assert_eq!(cj["spec"]["jobTemplate"]["spec"]["backoffLimit"], 6);
        let netpol = k
            .run(&["get", "netpol", "deny", "-o", "json"])
            .success()
            .json();
        assert_eq!(netpol["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(netpol["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        let binding = k
            .run(&["get", "rolebinding", "view:alice", "-o", "json"])
            .success()
            .json();
        assert_eq!(
            binding["subjects"][0]["apiGroup"],
            "rbac.authorization.k8s.io"
        );
    });
    s.step(
        "a strategic merge patch of a CronJob merges containers by name",
        || {
            let add = r#"{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37"}]}}}}}}"#;
            k.run(&["patch", "cronjob", "nightly", "--type", "strategic", "-p", add])
                .success();
            let bump = r#"{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"m","image":"busybox:1.37"}]}}}}}}"#;
            k.run(&["patch", "cronjob", "nightly", "-p", bump]).success();
            let containers = |k: &Tool| {
                let cj = k
                    .run(&["get", "cronjob", "nightly", "-o", "json"])
                    .success()
                    .json();
                cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| format!("{}={}", c["name"].as_str().unwrap(), c["image"].as_str().unwrap()))
                    .collect::<Vec<_>>()
            };
            // A new element goes first, as upstream's strategic merge places it.
            assert_eq!(containers(&k), ["sidecar=busybox:1.37", "m=busybox:1.37"]);
            // An element without the merge key is refused, naming it, and nothing changes.
            let keyless = r#"{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}}}"#;
            k.run(&["patch", "cronjob", "nightly", "-p", keyless])
                .failure()
                .stderr_has("does not contain declared merge key: name");
            assert_eq!(containers(&k), ["sidecar=busybox:1.37", "m=busybox:1.37"]);
        },
    );
    s.step(
        "an HPA read and written through autoscaling/v1 loses nothing",
        || {
            let path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web";
            let v1 = k.run(&["get", "--raw", path]).success().json();
            assert_eq!(v1["apiVersion"], "autoscaling/v1");
            assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
            assert_eq!(v1["spec"]["minReplicas"], 1);
            let mut changed = v1.clone();
            changed["spec"]["maxReplicas"] = json!(7);
            k.run_with_stdin(&["replace", "-f", "-"], &changed.to_string())
                .success();
            let v2 = k.run(&["get", "hpa", "web", "-o", "json"]).success().json();
            assert_eq!(v2["apiVersion"], "autoscaling/v2");
            assert_eq!(v2["spec"]["maxReplicas"], 7);
            assert_eq!(v2["spec"]["metrics"], list["items"][1]["spec"]["metrics"]);
            assert!(
                v2["metadata"]["annotations"]
                    .get("autoscaling.alpha.kubernetes.io/metrics")
                    .is_none(),
                "{v2}"
            );
        },
    );
    s.finish();
}

#[test]
fn every_namespace_holds_its_service_account_and_the_clusters_ca() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let kubeconfig = k
        .run(&["config", "view", "--raw", "-o", "json"])
        .success()
        .json();
    let ca = base64::engine::general_purpose::STANDARD
        .decode(
            kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    let ca = String::from_utf8(ca).unwrap();
    let holds = |ns: &str| {
        names(&k, &["serviceaccounts,configmaps", "-n", ns])
            == [
                "configmap/kube-root-ca.crt".to_owned(),
                "serviceaccount/default".to_owned(),
            ]
    };
    let mut s = Steps::default();
    s.step("the namespaces of a new cluster", || {
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            assert!(holds(ns), "{ns}");
        }
        let cm = k
            .run(&[
                "get",
                "cm",
                "kube-root-ca.crt",
                "-n",
                "default",
                "-o",
                "json",
            ])
            .success()
            .json();
        assert_eq!(cm["data"]["ca.crt"].as_str().unwrap().trim(), ca.trim());
    });
    s.step(
        "a new namespace, and what is deleted or edited comes back",
        || {
            k.run(&["create", "namespace", "team-a"]).success();
            eventually("team-a holds its service account and CA", || {
                holds("team-a")
            });
            k.run(&["delete", "serviceaccount", "default", "-n", "team-a"])
                .success();
            k.run(&["delete", "configmap", "kube-root-ca.crt", "-n", "team-a"])
                .success();
            eventually("they come back", || holds("team-a"));
            k.run(&[
                "patch",
                "configmap",
                "kube-root-ca.crt",
                "-n",
                "team-a",
                "--type=merge",
                "-p",
                r#"{"data":{"ca.crt":"forged"}}"#,
            ])
            .success();
            eventually("the CA is put back", || {
                let cm = k
                    .run(&[
                        "get",
                        "cm",
                        "kube-root-ca.crt",
                        "-n",
                        "team-a",
                        "-o",
                        "json",
                    ])
                    .success()
                    .json();
                cm["data"]["ca.crt"].as_str() == Some(ca.as_str())
            });
            // A token for the default service account, as `kubectl create token` asks.
            k.run(&["create", "token", "default", "-n", "team-a"])
                .success()
                .stdout_has("eyJ");
        },
    );
    s.finish();
}

#[test]
fn pods_are_bound_and_evicted_and_say_no_kubelet_runs_them() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    s.step("a new Pod is Pending, with admission's defaults", || {
        k.run(&["run", "web", "--image=nginx:1.27"]).success();
        let pod = k.run(&["get", "pod", "web", "-o", "json"]).success().json();
        assert_eq!(pod["status"]["phase"], "Pending");
        assert_eq!(pod["status"]["qosClass"], "BestEffort");
        assert_eq!(pod["spec"]["serviceAccountName"], "default");
        assert_eq!(pod["spec"]["enableServiceLinks"], true);
        assert_eq!(
            pod["spec"]["tolerations"][0]["key"],
            "node.kubernetes.io/not-ready"
        );
        k.run(&["logs", "web"])
            .failure()
            .stderr_has("pod web does not have a host assigned");
    });
    s.step("binding assigns a node once", || {
        let binding = c.file(
            "binding.json",
            r#"{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}"#,
        );
        let binding = binding.to_str().unwrap();
        k.run(&[
            "create",
            "--raw",
            "/api/v1/namespaces/default/pods/web/binding",
            "-f",
            binding,
        ])
        .success();
        let pod = k.run(&["get", "pod", "web", "-o", "json"]).success().json();
        assert_eq!(pod["spec"]["nodeName"], "node-1");
        k.run(&[
            "create",
            "--raw",
            "/api/v1/namespaces/default/bindings",
            "-f",
            binding,
        ])
        .failure()
        .stderr_has("already assigned to node");
        k.run(&["logs", "web"])
            .failure()
            .stderr_has("runs no kubelet");
    });
    s.step("eviction deletes the Pod", || {
        let eviction = c.file(
            "eviction.json",
            r#"{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web", "namespace": "default"}}"#,
        );
        k.run(&[
            "create", "--raw", "/api/v1/namespaces/default/pods/web/eviction", "-f",
            eviction.to_str().unwrap(),
        ])
        .success();
        assert_eq!(names(&k, &["pods"]), Vec::<String>::new());
    });
    s.finish();
}

#[test]
fn reviews_and_component_statuses_answer() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    s.step("SubjectAccessReview", || {
        let review = k
            .run_with_stdin(
                &["create", "-o", "json", "-f", "-"],
                r#"{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}}"#,
            )
            .success()
            .json();
        // The truth: alice is bound to nothing, and a member of system:masters may.
        assert_eq!(review["status"]["allowed"], false, "{review}");
        let review = k
            .run_with_stdin(
                &["create", "-o", "json", "-f", "-"],
                r#"{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "spec": {"user": "alice", "groups": ["system:masters"], "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}}"#,
            )
            .success()
            .json();
        assert_eq!(review["status"]["allowed"], true, "{review}");
        k.run_with_stdin(
            &["create", "-f", "-"],
            r#"{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}"#,
        )
        .failure()
        .stderr_has("spec.user: Invalid value: \"\": at least one of user or group must be specified");
    });
    s.step("TokenReview", || {
        let token = k
            .run(&[
                "config",
                "view",
                "--raw",
                "-o",
                "jsonpath={.users[0].user.token}",
            ])
            .success()
            .stdout;
        let review = |token: &str| {
            k.run_with_stdin(
                &["create", "-o", "json", "-f", "-"],
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                    "spec": {"token": token}})
                .to_string(),
            )
            .success()
            .json()
        };
        let known = review(&token);
        assert_eq!(known["status"]["authenticated"], true, "{known}");
        assert!(
            known["status"]["user"]["groups"]
                .as_array()
                .unwrap()
                .contains(&json!("system:masters"))
        );
        let unknown = review("not-a-token");
        assert!(
            unknown["status"]
                .get("authenticated")
                .is_none_or(|a| a == false),
            "{unknown}"
        );

        // A token for another audience is valid there only: a review for that audience says
        // so, the API refuses it.
        k.run(&["create", "serviceaccount", "vault-auth"]).success();
        let vault = k
            .run(&["create", "token", "vault-auth", "--audience", "vault"])
            .success()
            .stdout;
        let vault = vault.trim();
        let for_vault = k
            .run_with_stdin(
                &["create", "-o", "json", "-f", "-"],
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                    "spec": {"token": vault, "audiences": ["other", "vault"]}})
                .to_string(),
            )
            .success()
            .json();
        assert_eq!(for_vault["status"]["authenticated"], true, "{for_vault}");
        assert_eq!(for_vault["status"]["audiences"], json!(["vault"]), "{for_vault}");
        assert_eq!(
            for_vault["status"]["user"]["username"],
            "system:serviceaccount:default:vault-auth"
        );
        let for_api = review(vault);
        assert_eq!(
            for_api["status"]["error"],
            r#"token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc"]"#,
            "{for_api}"
        );
        k.run(&["--token", vault, "get", "configmaps"])
            .failure()
            .stderr_has("Unauthorized");
        // kubectl checks the type itself; without its check, the server does.
        k.run_with_stdin(
            &["create", "--validate=false", "-f", "-"],
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": {"token": vault, "audiences": "vault"}})
            .to_string(),
        )
        .failure()
        .stderr_has("spec.audiences: Invalid value: \"vault\": must be a list of strings");
    });
    s.step(
        "component statuses: none, with upstream's deprecation warning",
        || {
            k.run(&["get", "componentstatuses"])
                .success()
                .stderr_has("Warning: v1 ComponentStatus is deprecated in v1.19+");
        },
    );
    s.finish();
}

/// `kubectl create` of a ConfigMap `name` in `ns`, owned by the objects `owners` names
/// (`(kind, name, uid)`, blocking their deletion) and holding `finalizers`; its UID.
fn configmap(
    k: &Tool,
    ns: &str,
    name: &str,
    owners: &[(&str, &str, &str)],
    finalizers: &[&str],
) -> String {
    let references: Vec<Value> = owners
        .iter()
        .map(|(kind, owner, uid)| {
            json!({"apiVersion": "v1", "kind": kind, "name": owner, "uid": uid, "blockOwnerDeletion": true})
        })
        .collect();
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "ownerReferences": references, "finalizers": finalizers}});
    let created = k
        .run_with_stdin(&["create", "-o", "json", "-f", "-"], &object.to_string())
        .success()
        .json();
    created["metadata"]["uid"].as_str().unwrap().to_owned()
}

fn exists(k: &Tool, ns: &str, name: &str) -> bool {
    !k.run(&[
        "get",
        "cm",
        name,
        "-n",
        ns,
        "--ignore-not-found",
        "-o",
        "name",
    ])
    .success()
    .stdout
    .trim()
    .is_empty()
}

#[test]
fn owners_take_their_dependents_with_each_propagation_policy() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    s.step("background: the owner goes, then its dependents", || {
        let owner = configmap(&k, "default", "bg-owner", &[], &[]);
        configmap(
            &k,
            "default",
            "bg-dep",
            &[("ConfigMap", "bg-owner", &owner)],
            &[],
        );
        k.run(&["delete", "cm", "bg-owner", "--cascade=background"])
            .success();
        eventually("the dependent goes", || !exists(&k, "default", "bg-dep"));
    });
    s.step(
        "foreground: the owner waits for its blocking dependents",
        || {
            let owner = configmap(&k, "default", "fg-owner", &[], &[]);
            configmap(
                &k,
                "default",
                "fg-dep",
                &[("ConfigMap", "fg-owner", &owner)],
                &["example.com/hold"],
            );
            k.run(&[
                "delete",
                "cm",
                "fg-owner",
                "--cascade=foreground",
                "--wait=false",
            ])
            .success();
            eventually("the dependent is being deleted", || {
                let dep = k
                    .run(&["get", "cm", "fg-dep", "-o", "json"])
                    .success()
                    .json();
                dep["metadata"].get("deletionTimestamp").is_some()
            });
            let held = k
                .run(&["get", "cm", "fg-owner", "-o", "json"])
                .success()
                .json();
            assert_eq!(
                held["metadata"]["finalizers"],
                json!(["foregroundDeletion"]),
                "{held}"
            );
            assert!(held["metadata"].get("deletionTimestamp").is_some());
            k.run(&[
                "patch",
                "cm",
                "fg-dep",
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ])
            .success();
            eventually("the owner goes once its dependent has", || {
                !exists(&k, "default", "fg-dep") && !exists(&k, "default", "fg-owner")
            });
        },
    );
    s.step("orphan: the dependents stay, without the reference", || {
        let owner = configmap(&k, "default", "or-owner", &[], &[]);
        let other = configmap(&k, "default", "or-other", &[], &[]);
        configmap(
            &k,
            "default",
            "or-dep",
            &[
                ("ConfigMap", "or-owner", &owner),
                ("ConfigMap", "or-other", &other),
            ],
            &[],
        );
        k.run(&["delete", "cm", "or-owner", "--cascade=orphan"])
            .success();
        eventually("the owner goes", || !exists(&k, "default", "or-owner"));
        let dep = k
            .run(&["get", "cm", "or-dep", "-o", "json"])
            .success()
            .json();
        let names: Vec<&str> = dep["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["or-other"]);
    });
    s.step(
        "an owner that does not exist, or lives in another namespace",
        || {
            k.run(&["create", "namespace", "elsewhere"]).success();
            let foreign = configmap(&k, "elsewhere", "far-owner", &[], &[]);
            configmap(
                &k,
                "default",
                "orphaned",
                &[("ConfigMap", "never-was", "no-such-uid")],
                &[],
            );
            configmap(
                &k,
                "default",
                "misplaced",
                &[("ConfigMap", "far-owner", &foreign)],
                &[],
            );
            eventually("both are collected", || {
                !exists(&k, "default", "orphaned") && !exists(&k, "default", "misplaced")
            });
            assert!(exists(&k, "elsewhere", "far-owner"));
        },
    );
    s.step("a cycle of owners goes with either", || {
        let a = configmap(&k, "default", "cycle-a", &[], &[]);
        let b = configmap(&k, "default", "cycle-b", &[("ConfigMap", "cycle-a", &a)], &[]);
        let patch = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "cycle-b", "uid": b, "blockOwnerDeletion": true}]}});
        k.run(&["patch", "cm", "cycle-a", "--type=merge", "-p", &patch.to_string()])
            .success();
        k.run(&["delete", "cm", "cycle-a", "--cascade=foreground", "--wait=false"])
            .success();
        eventually("both go", || {
            !exists(&k, "default", "cycle-a") && !exists(&k, "default", "cycle-b")
        });
    });
    s.step("a policy that does not exist is refused", || {
        configmap(&k, "default", "kept", &[], &[]);
        k.run(&[
            "delete", "--raw", "/api/v1/namespaces/default/configmaps/kept?propagationPolicy=Sideways",
        ])
        .failure()
        .stderr_has(r#"propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan""#);
        assert!(exists(&k, "default", "kept"));
    });
    s.finish();
}

#[test]
fn services_take_addresses_from_the_range_and_bad_specs_name_the_field() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    let addresses = || names(&k, &["ipaddresses"]);
    s.step("the kubernetes Service reaches this server", || {
        let svc = k
            .run(&["get", "svc", "kubernetes", "-o", "json"])
            .success()
            .json();
        assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
        let server = k
            .run(&[
                "config",
                "view",
                "-o",
                "jsonpath={.clusters[0].cluster.server}",
            ])
            .success()
            .stdout;
        let port: u64 = server
            .trim()
            .trim_end_matches('/')
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {server:?}"));
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], port);
        let slice = k
            .run(&["get", "endpointslice", "kubernetes", "-o", "json"])
            .success()
            .json();
        assert_eq!(slice["endpoints"][0]["addresses"], json!(["127.0.0.1"]));
        assert_eq!(addresses(), ["ipaddress.networking.k8s.io/10.96.0.1"]);
    });
    s.step("a Service gets a free address, held by an IPAddress until it goes", || {
        k.run(&["create", "service", "clusterip", "web", "--tcp=80"]).success();
        let svc = k.run(&["get", "svc", "web", "-o", "json"]).success().json();
        let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
        let octets: Vec<u8> = ip.split('.').map(|o| o.parse().unwrap()).collect();
        assert!(octets[0] == 10 && (96..112).contains(&octets[1]), "{ip}");
        let held = k.run(&["get", "ipaddress", &ip, "-o", "json"]).success().json();
        assert_eq!(
            held["spec"]["parentRef"],
            json!({"group": "", "resource": "services", "namespace": "default", "name": "web"})
        );
        let before = (addresses(), names(&k, &["services"]));
        k.run(&["create", "service", "clusterip", "taken", "--tcp=80", &format!("--clusterip={ip}")])
            .failure()
            .stderr_has(&format!(
                r#"Service "taken" is invalid: spec.clusterIPs: Invalid value: ["{ip}"]: failed to allocate IP {ip}: provided IP is already allocated"#
            ));
        k.run(&["create", "service", "clusterip", "outside", "--tcp=80", "--clusterip=192.168.1.1"])
            .failure()
            .stderr_has("failed to allocate IP 192.168.1.1: the provided IP (192.168.1.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12");
        assert_eq!((addresses(), names(&k, &["services"])), before);
        k.run(&["delete", "svc", "web"]).success();
        assert_eq!(addresses(), ["ipaddress.networking.k8s.io/10.96.0.1"]);
    });
    s.step(
        "a lost IPAddress is taken again and a leaked one taken back",
        || {
            k.run(&["create", "service", "clusterip", "kept", "--tcp=80"])
                .success();
            let svc = k
                .run(&["get", "svc", "kept", "-o", "json"])
                .success()
                .json();
            let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
            // As data written before allocations took IPAddresses, or restored without them.
            k.run(&["delete", "ipaddress", &ip]).success();
            eventually("the Service's address is held again", || {
                let held = k.run(&["get", "ipaddress", &ip, "-o", "json", "--ignore-not-found"]);
                held.stdout.contains(r#""name": "kept""#)
            });
            k.run(&[
                "create",
                "service",
                "clusterip",
                "copy",
                "--tcp=80",
                &format!("--clusterip={ip}"),
            ])
            .failure()
            .stderr_has("provided IP is already allocated");
            let leaked = |name: &str, service: &str| {
                json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
                "metadata": {"name": name, "labels": {
                    "ipaddress.kubernetes.io/ip-family": "IPv4",
                    "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}},
                "spec": {"parentRef": {"group": "", "resource": "services",
                    "namespace": "default", "name": service}}})
            };
            // Naming a Service that holds another address: taken back at once. Naming no Service:
            // kept for a minute, as a Service being created may not be stored yet.
            for (name, service) in [("10.100.0.7", "kept"), ("10.100.0.8", "never-made")] {
                k.run_with_stdin(&["create", "-f", "-"], &leaked(name, service).to_string())
                    .success();
            }
            eventually("the wrong reference is taken back", || {
                !addresses().contains(&"ipaddress.networking.k8s.io/10.100.0.7".to_owned())
            });
            assert!(addresses().contains(&"ipaddress.networking.k8s.io/10.100.0.8".to_owned()));
            k.run(&["delete", "svc", "kept"]).success();
            k.run(&["delete", "ipaddress", "10.100.0.8"]).success();
            assert_eq!(addresses(), ["ipaddress.networking.k8s.io/10.96.0.1"]);
        },
    );
    s.step(
        "endpoints follow the selected Pods and go with their Service",
        || {
            k.run(&["create", "service", "clusterip", "shop", "--tcp=80:8080"])
                .success();
            let slices = || {
                names(
                    &k,
                    &["endpointslices", "-l", "kubernetes.io/service-name=shop"],
                )
            };
            eventually("an EndpointSlice for the Service", || slices().len() == 1);
            k.run(&["run", "shop-1", "--image=nginx", "--labels=app=shop"])
                .success();
            k.run(&[
            "patch", "pod", "shop-1", "--subresource=status", "--type=merge", "-p",
            r#"{"status":{"podIP":"10.244.0.5","conditions":[{"type":"Ready","status":"True"}]}}"#,
        ])
        .success();
            eventually("the Pod's address in the slice and the Endpoints", || {
                let slice = k
                    .run(&[
                        "get",
                        "endpointslices",
                        "-l",
                        "kubernetes.io/service-name=shop",
                        "-o",
                        "json",
                    ])
                    .success()
                    .json();
                let endpoints = k
                    .run(&["get", "endpoints", "shop", "-o", "json"])
                    .success()
                    .json();
                slice["items"][0]["endpoints"][0]["addresses"] == json!(["10.244.0.5"])
                    && slice["items"][0]["ports"][0]["port"] == 8080
                    && endpoints["subsets"][0]["addresses"][0]["ip"] == "10.244.0.5"
            });
            k.run(&["delete", "svc", "shop"]).success();
            eventually("the garbage collector takes them with the Service", || {
                slices().is_empty() && names(&k, &["endpoints"]) == ["endpoints/kubernetes"]
            });
        },
    );
    s.step("bad Service, Pod and Deployment specs are refused naming the field", || {
        let refusals = [
            (
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bad"},
                    "spec": {"ports": [{"port": 0}]}}),
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
                    "spec": {"containers": [{"name": "web", "image": "nginx", "imagePullPolicy": "Sometimes"}]}}),
                r#"spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never""#,
            ),
            (
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
                    "spec": {"containers": [{"name": "Web_1", "image": "nginx"}]}}),
                r#"spec.containers[0].name: Invalid value: "Web_1": a lowercase RFC 1123 label must consist of"#,
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bad"},
                    "spec": {"selector": {"matchLabels": {"app": "api"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}),
                "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`",
            ),
        ];
        for (object, message) in refusals {
            k.run_with_stdin(&["create", "-f", "-"], &object.to_string())
                .failure()
                .stderr_has(message);
        }
        assert_eq!(names(&k, &["deployments"]), Vec::<String>::new());
        assert_eq!(names(&k, &["pods"]), ["pod/shop-1"]);
    });
    s.finish();
}

#[test]
fn a_real_operators_kustomize_overlay_applies_and_describes() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let overlay = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/metrics-server/manifests/overlays/release-ha-1.21+");
    let overlay = overlay.to_str().unwrap();
    let mut s = Steps::default();
    s.step("kubectl apply -k of metrics-server's release overlay", || {
        let applied = k.run(&["apply", "-k", overlay]).success();
        for line in [
            "serviceaccount/metrics-server created",
            "clusterrole.rbac.authorization.k8s.io/system:aggregated-metrics-reader created",
            "clusterrolebinding.rbac.authorization.k8s.io/metrics-server:system:auth-delegator created",
            "rolebinding.rbac.authorization.k8s.io/metrics-server-auth-reader created",
            "service/metrics-server created",
            "deployment.apps/metrics-server created",
            "poddisruptionbudget.policy/metrics-server created",
            "apiservice.apiregistration.k8s.io/v1beta1.metrics.k8s.io created",
        ] {
            assert!(applied.stdout.lines().any(|l| l == line), "{line}: {applied}");
        }
        k.run(&["apply", "-k", overlay])
            .success()
            .stdout_has("apiservice.apiregistration.k8s.io/v1beta1.metrics.k8s.io unchanged");
    });
    s.step("the new kinds read as on a real cluster", || {
        let apiservice = k
            .run(&["get", "apiservice", "v1beta1.metrics.k8s.io"])
            .success()
            .rows();
        assert_eq!(
            apiservice[0][..3],
            ["NAME", "SERVICE", "AVAILABLE"],
            "{apiservice:?}"
        );
        assert_eq!(
            apiservice[1][..2],
            ["v1beta1.metrics.k8s.io", "kube-system/metrics-server"]
        );
        let pdb = k.run(&["get", "pdb", "-n", "kube-system"]).success().rows();
        assert_eq!(pdb[0][..4], ["NAME", "MIN", "AVAILABLE", "MAX"], "{pdb:?}");
        assert_eq!(pdb[1][0], "metrics-server");
        k.run(&["describe", "apiservice", "v1beta1.metrics.k8s.io"])
            .success()
            .stdout_has("Group Priority Minimum:    100")
            // The Service port defaults to 443, as upstream's defaulting sets it.
            .stdout_has("Port:            443");
        k.run(&["describe", "pdb", "metrics-server", "-n", "kube-system"])
            .success()
            .stdout_has("Min available:");
        k.run(&["explain", "apiservice.spec.groupPriorityMinimum"])
            .success()
            .stdout_has("FIELD: groupPriorityMinimum <integer>");
    });
    s.step("kubectl delete -k takes it all away", || {
        k.run(&["delete", "-k", overlay]).success();
        assert_eq!(
            names(&k, &["apiservices,poddisruptionbudgets", "-A"]),
            Vec::<String>::new()
        );
    });
    s.finish();
}
