//! Who may do what on atoll's API server, as real clients see it: `atoll user create` writes a
//! kubeconfig with a client certificate; kubectl `auth whoami`, `auth can-i` (with `--list` and
//! `--as`) and refusals worded as kube-apiserver words them; a ServiceAccount token; helm
//! installing as a namespace's `edit` user and refused outside it; escalation refused.

use std::path::{Path, PathBuf};

use atoll_tests::{Cluster, Ran, Steps, Tool, atoll_binary, client_binary};

/// `atoll user create NAME ARGS` against the cluster, as its admin.
fn create_user(c: &Cluster, name: &str, args: &[&str]) -> (Ran, PathBuf) {
    let output = c.file(&format!("{name}.kubeconfig"), "");
    let admin = c.process.kubeconfig();
    let mut all = vec![
        "--kubeconfig",
        admin.to_str().unwrap(),
        "user",
        "create",
        name,
        "-o",
        output.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let ran = Tool::new(atoll_binary().unwrap())
        .env("RUST_BACKTRACE", "0")
        .run(&all);
    (ran, output)
}

/// A client binary (kubectl, helm) of the cluster's HOME, as the user of `kubeconfig`.
fn as_user(c: &Cluster, binary: &str, kubeconfig: &Path) -> Tool {
    Tool::new(client_binary(binary).unwrap())
        .env("HOME", c.home())
        .env("KUBECONFIG", kubeconfig)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
}

const SIMPLE_CHART: &str = "apiVersion: v2\nname: simple\nversion: 0.1.0\n";
const SIMPLE_TEMPLATE: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  greeting: hello
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
";

#[test]
fn users_service_accounts_and_helm_get_what_they_are_bound_to() {
    let c = Cluster::start().unwrap();
    let admin = c.kubectl();
    let mut s = Steps::default();

    s.step("the admin may do everything", || {
        admin
            .run(&["auth", "can-i", "*", "*"])
            .success()
            .stdout_is("yes");
        admin
            .run(&["auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"])
            .success()
            .stdout_has("system:masters");
        admin.run(&["create", "namespace", "team-a"]).success();
        admin.run(&["create", "namespace", "team-b"]).success();
        admin
            .run(&["create", "configmap", "settings", "-n", "team-a"])
            .success();
    });

    let (made, alice_config) = create_user(&c, "alice", &["--group", "devs", "--ttl", "1h"]);
    let alice = as_user(&c, "kubectl", &alice_config);
    s.step(
        "atoll user create writes a kubeconfig with a client certificate",
        || {
            made.success()
                .stdout_has("kubeconfig for user \"alice\" (groups devs)");
            let written = std::fs::read_to_string(&alice_config).unwrap();
            assert!(written.contains("client-certificate-data"), "{written}");
            assert!(!written.contains("token:"), "no token: {written}");
            let whoami = alice
                .run(&["auth", "whoami", "-o", "json"])
                .success()
                .json();
            assert_eq!(whoami["status"]["userInfo"]["username"], "alice");
            assert_eq!(
                whoami["status"]["userInfo"]["groups"],
                serde_json::json!(["devs", "system:authenticated"])
            );
        },
    );

    s.step("a user bound to nothing is refused, in kube-apiserver's words", || {
        alice.run(&["get", "configmaps", "-n", "team-a"]).failure().stderr_has(
            r#"Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "team-a""#,
        );
        alice
            .run(&["auth", "can-i", "list", "configmaps", "-n", "team-a"])
            .failure()
            .stdout_is("no");
        // Discovery and the reviews stay open to every authenticated user.
        alice.run(&["api-resources", "--api-group=apps"]).success().stdout_has("deployments");
    });

    s.step("a RoleBinding to view opens one namespace's reads", || {
        admin
            .run(&["create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice", "-n", "team-a"])
            .success();
        alice.run(&["get", "configmap", "settings", "-n", "team-a"]).success();
        alice
            .run(&["auth", "can-i", "list", "configmaps", "-n", "team-a"])
            .success()
            .stdout_is("yes");
        alice
            .run(&["auth", "can-i", "create", "configmaps", "-n", "team-a"])
            .failure()
            .stdout_is("no");
        alice
            .run(&["auth", "can-i", "get", "secrets", "-n", "team-a"])
            .failure()
            .stdout_is("no");
        alice.run(&["get", "configmaps", "-n", "team-b"]).failure().stderr_has("Forbidden");
        alice
            .run(&["delete", "configmap", "settings", "-n", "team-a"])
            .failure()
            .stderr_has(r#"configmaps "settings" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "team-a""#);
        let list = alice.run(&["auth", "can-i", "--list", "-n", "team-a"]).success();
        let configmaps = list
            .stdout
            .lines()
            .find(|line| line.starts_with("configmaps "))
            .unwrap_or_else(|| panic!("configmaps are listed: {list}"));
        assert!(configmaps.contains("[get list watch]"), "{configmaps}");
        assert!(
            !list.stdout.lines().any(|l| l.starts_with("secrets ") && l.contains("get")),
            "view reads no Secrets: {list}"
        );
    });

    s.step("--as is checked with the impersonate verb", || {
        admin
            .run(&["auth", "can-i", "list", "configmaps", "-n", "team-a", "--as", "alice"])
            .success()
            .stdout_is("yes");
        admin
            .run(&["auth", "can-i", "list", "configmaps", "-n", "team-b", "--as", "alice"])
            .failure()
            .stdout_is("no");
        admin
            .run(&["get", "configmaps", "-n", "team-b", "--as", "alice"])
            .failure()
            .stderr_has(r#"User "alice" cannot list resource "configmaps""#);
        alice
            .run(&["get", "configmaps", "-n", "team-a", "--as", "bob"])
            .failure()
            .stderr_has(r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#);
    });

    s.step("a ServiceAccount token gets its bindings only", || {
        admin
            .run(&["create", "serviceaccount", "builder", "-n", "team-a"])
            .success();
        let token = admin
            .run(&["create", "token", "builder", "-n", "team-a"])
            .success()
            .stdout
            .trim()
            .to_owned();
        admin
            .run(&[
                "auth",
                "whoami",
                "--token",
                &token,
                "-o",
                "jsonpath={.status.userInfo.username}",
            ])
            .success()
            .stdout_is("system:serviceaccount:team-a:builder");
        admin
            .run(&["get", "configmaps", "-n", "team-a", "--token", &token])
            .failure()
            .stderr_has(
                r#"User "system:serviceaccount:team-a:builder" cannot list resource "configmaps""#,
            );
        admin
            .run(&[
                "create",
                "rolebinding",
                "builder-edit",
                "--clusterrole=edit",
                "--serviceaccount=team-a:builder",
                "-n",
                "team-a",
            ])
            .success();
        admin
            .run(&[
                "create",
                "configmap",
                "built",
                "-n",
                "team-a",
                "--token",
                &token,
            ])
            .success();
    });

    let (made, bob_config) = create_user(&c, "bob", &[]);
    s.step(
        "helm installs as a namespace's edit user, and is refused elsewhere",
        || {
            made.success();
            admin
                .run(&[
                    "create",
                    "rolebinding",
                    "bob-edit",
                    "--clusterrole=edit",
                    "--user=bob",
                    "-n",
                    "team-b",
                ])
                .success();
            c.file("charts/simple/Chart.yaml", SIMPLE_CHART);
            let chart = c.file("charts/simple/templates/all.yaml", SIMPLE_TEMPLATE);
            let chart = chart
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let helm = as_user(&c, "helm", &bob_config);
            helm.run(&["install", "web", &chart, "-n", "team-b", "--wait=false"])
                .success()
                .stdout_has("STATUS: deployed");
            admin
                .run(&["get", "deployment", "web-web", "-n", "team-b"])
                .success();
            helm.run(&["install", "web", &chart, "-n", "team-a"])
                .failure()
                .stderr_has("forbidden");
            helm.run(&["uninstall", "web", "-n", "team-b"]).success();
        },
    );

    s.step("a namespace admin cannot grant more than it holds", || {
        admin
            .run(&["create", "rolebinding", "bob-admin", "--clusterrole=admin", "--user=bob", "-n", "team-b"])
            .success();
        let bob = as_user(&c, "kubectl", &bob_config);
        bob.run(&["create", "rolebinding", "bob-viewer", "--clusterrole=view", "--user=carol", "-n", "team-b"])
            .success();
        bob.run(&["create", "rolebinding", "bob-root", "--clusterrole=cluster-admin", "--user=bob", "-n", "team-b"])
            .failure()
            .stderr_has(r#"rolebindings.rbac.authorization.k8s.io "bob-root" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#);
        bob.run(&["create", "role", "nodes", "--verb=get", "--resource=nodes", "-n", "team-b"])
            .failure()
            .stderr_has("is attempting to grant RBAC permissions not currently held");
        bob.run(&["get", "rolebindings", "-n", "team-b", "-o", "name"])
            .success()
            .stdout_has("bob-viewer");
    });

    s.finish();
}

#[test]
fn bad_user_requests_are_refused_naming_what_is_wrong() {
    let c = Cluster::start().unwrap();
    let (short, _) = create_user(&c, "alice", &["--ttl", "1m"]);
    short
        .failure()
        .stderr_has("a certificate lives at least 10m");
    let (bad, _) = create_user(&c, "alice", &["--ttl", "ten minutes"]);
    bad.failure().stderr_has("--ttl");
    let (empty_group, _) = create_user(&c, "alice", &["--group", ""]);
    empty_group
        .failure()
        .stderr_has("a group must not be empty");
}

/// The audit policy of the audit log test: nothing of health and discovery, configmaps with
/// their bodies, the rest as metadata; no event as requests arrive.
const AUDIT_POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version", "/openapi*", "/api", "/api/*", "/apis", "/apis/*"]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
- level: Metadata
"#;

/// A policy whose one validation fails for a ConfigMap labelled `audited: "yes"`, bound with
/// the Audit action only: the write goes through, the failure goes to the audit log.
const AUDIT_ONLY_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: "no-audited-label.example.com"}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.metadata.labels) || !('audited' in object.metadata.labels)"
    message: "audited ConfigMaps are noted"
  auditAnnotations:
  - key: "name"
    valueExpression: "object.metadata.name"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: "no-audited-label-binding.example.com"}
spec:
  policyName: "no-audited-label.example.com"
  validationActions: [Audit]
"#;

/// `atoll apiserver --audit-log-path --audit-policy-file`: kube-apiserver's audit events, as its
/// policy says, with who asked (and whom they impersonated), the answer's code, the
/// authorization decision, the bodies at `RequestResponse`, and what an admission policy's Audit
/// action and audit annotations add; bad audit flags and policies are refused naming them.
#[test]
fn the_audit_log_records_who_did_what_as_its_policy_says() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("audit-policy.yaml");
    std::fs::write(&policy, AUDIT_POLICY).unwrap();
    let log = dir.path().join("audit").join("audit.log");
    let server = atoll_tests::Process::start_with(
        &atoll_binary().unwrap(),
        "apiserver",
        &dir.path().join("server"),
        atoll_tests::free_addr().unwrap(),
        &[
            "--audit-log-path",
            log.to_str().unwrap(),
            "--audit-policy-file",
            policy.to_str().unwrap(),
        ],
    )
    .unwrap();
    let admin = server.kubeconfig();
    let kubectl = |args: &[&str]| atoll_tests::kubectl_at(&admin, args);
    kubectl(&["create", "configmap", "plain", "--from-literal=k=v"]).success();
    kubectl(&["get", "namespaces"]).success();
    kubectl(&["get", "secrets", "--as", "bob"])
        .failure()
        .stderr_has("forbidden");
    let policies = dir.path().join("policy.yaml");
    std::fs::write(&policies, AUDIT_ONLY_POLICY).unwrap();
    kubectl(&["apply", "-f", policies.to_str().unwrap()]).success();
    let labelled = dir.path().join("labelled.yaml");
    std::fs::write(
        &labelled,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: labelled, namespace: default, labels: {audited: \"yes\"}}\n",
    )
    .unwrap();
    // The policy takes a moment to be in force; until it is, the create leaves no failure.
    let mut events: Vec<serde_json::Value>;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut attempt = 0;
    loop {
        let name = format!("labelled-{attempt}");
        let text = std::fs::read_to_string(&labelled)
            .unwrap()
            .replace("name: labelled,", &format!("name: {name},"));
        std::fs::write(dir.path().join("this.yaml"), text).unwrap();
        kubectl(&[
            "create",
            "-f",
            dir.path().join("this.yaml").to_str().unwrap(),
        ])
        .success();
        std::thread::sleep(std::time::Duration::from_millis(300));
        events = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect();
        let noted = events.iter().any(|e| {
            e["annotations"]["validation.policy.admission.k8s.io/validation_failure"]
                .as_str()
                .is_some_and(|v| v.contains("no-audited-label.example.com"))
                && e["annotations"]["no-audited-label.example.com/name"] == name
        });
        if noted {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no audit event carries the policy's failure: {events:#?}"
        );
        attempt += 1;
    }

    // Every line is an audit.k8s.io/v1 Event, none at RequestReceived, none for health or
    // discovery.
    for event in &events {
        assert_eq!(event["apiVersion"], "audit.k8s.io/v1", "{event}");
        assert_eq!(event["kind"], "Event", "{event}");
        assert_ne!(event["stage"], "RequestReceived", "{event}");
        let uri = event["requestURI"].as_str().unwrap();
        assert!(
            !uri.starts_with("/version")
                && !uri.starts_with("/healthz")
                && !uri.starts_with("/openapi"),
            "{event}"
        );
        assert!(
            event["auditID"].as_str().is_some_and(|id| id.len() == 36),
            "{event}"
        );
    }
    let find = |what: &dyn Fn(&serde_json::Value) -> bool| {
        events
            .iter()
            .find(|e| what(e))
            .cloned()
            .unwrap_or_else(|| panic!("no such event in {events:#?}"))
    };
    // The create, with both bodies.
    let created = find(&|e| e["verb"] == "create" && e["objectRef"]["name"] == "plain");
    assert_eq!(created["level"], "RequestResponse");
    assert_eq!(created["stage"], "ResponseComplete");
    assert_eq!(created["responseStatus"]["code"], 201);
    assert_eq!(
        created["objectRef"],
        serde_json::json!({"resource": "configmaps", "namespace": "default", "name": "plain", "apiGroup": "", "apiVersion": "v1"})
    );
    assert_eq!(created["requestObject"]["data"]["k"], "v");
    assert!(
        created["responseObject"]["metadata"]["uid"].is_string(),
        "{created:#}"
    );
    assert!(
        created["user"]["groups"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("system:masters")),
        "{created:#}"
    );
    assert_eq!(
        created["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert!(created["sourceIPs"][0] == "127.0.0.1", "{created:#}");
    assert!(
        created["userAgent"]
            .as_str()
            .unwrap()
            .starts_with("kubectl"),
        "{created:#}"
    );
    // A list of namespaces: metadata only.
    let listed = find(&|e| e["verb"] == "list" && e["objectRef"]["resource"] == "namespaces");
    assert_eq!(listed["level"], "Metadata");
    assert!(listed.get("requestObject").is_none() && listed.get("responseObject").is_none());
    // The admin impersonating bob, refused.
    let refused = find(&|e| e["objectRef"]["resource"] == "secrets");
    assert_eq!(refused["impersonatedUser"]["username"], "bob");
    assert_eq!(refused["responseStatus"]["code"], 403);
    assert_eq!(
        refused["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    drop(server);

    // Bad flags and policies, refused naming them.
    let run = |args: &[&str]| {
        let data = dir.path().join("refused");
        let mut all = vec![
            "apiserver",
            "--data-dir",
            data.to_str().unwrap(),
            "--api-addr",
            "127.0.0.1:0",
        ];
        all.extend_from_slice(args);
        Tool::new(atoll_binary().unwrap()).run(&all)
    };
    let log_path = log.to_str().unwrap();
    run(&["--audit-log-path", log_path])
        .failure()
        .stderr_has("--audit-log-path needs --audit-policy-file");
    run(&["--audit-policy-file", policy.to_str().unwrap()])
        .failure()
        .stderr_has("--audit-policy-file applies only with --audit-log-path");
    let bad = dir.path().join("bad-policy.yaml");
    std::fs::write(
        &bad,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n",
    )
    .unwrap();
    run(&[
        "--audit-log-path",
        log_path,
        "--audit-policy-file",
        bad.to_str().unwrap(),
    ])
    .failure()
    .stderr_has("bad-policy.yaml")
    .stderr_has("Loud");
}
