//! CEL rules in CRDs (`x-kubernetes-validations`) enforced by `atoll apiserver` as kube-apiserver
//! 1.35 enforces them, driven with kubectl 1.35: Gateway API's own CRDs (v1.6.1, test material
//! under `testdata/gateway-api` with its license) with their rules on create, every patch type,
//! server-side apply and updates (transition rules); CRDs whose rules do not compile refused;
//! rules on the status subresource; and ratcheting of values that were stored before a rule.
//! ValidatingAdmissionPolicies enforced, their expressions type-checked into their status, and
//! the warnings of a refused request shown with its error; policies that check the requester's
//! authorization (`authorizer`), for the admin and for a user made with `atoll user create`.

use std::path::PathBuf;

use atoll_tests::{Cluster, Steps, Tool, atoll_binary, client_binary};

fn gateway_api(file: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/gateway-api")
        .join(file)
        .to_string_lossy()
        .into_owned()
}

fn established(k: &Tool, crd: &str) {
    k.run(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        &format!("crd/{crd}"),
    ])
    .success();
}

const GATEWAY_CLASS: &str = "
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: example}
spec: {controllerName: example.com/gateway-controller}
";

const GATEWAY: &str = "
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: default}
spec:
  gatewayClassName: example
  listeners:
  - {name: http, protocol: HTTP, port: 80}
  - {name: db, protocol: TCP, port: 5432}
";

const ROUTE: &str = "
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: default}
spec:
  parentRefs: [{name: web}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    backendRefs: [{name: api, port: 8080}]
";

const WIDGETS: &str = "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              name: {type: string}
              size: {type: integer}
          status:
            type: object
            properties:
              ready: {type: integer}
              total: {type: integer}
            x-kubernetes-validations:
            - {rule: self.ready <= self.total, messageExpression: \"'ready %d is more than total %d'.format([self.ready, self.total])\"}
";

#[test]
fn crd_rules_are_enforced_on_every_write_path() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();

    s.step(
        "Gateway API's CRDs are accepted with their 212 rules",
        || {
            for crd in ["gatewayclasses", "gateways", "httproutes"] {
                let file = gateway_api(&format!("gateway.networking.k8s.io_{crd}.yaml"));
                k.run(&["apply", "--server-side", "-f", &file]).success();
                established(&k, &format!("{crd}.gateway.networking.k8s.io"));
            }
        },
    );

    s.step("valid objects are created", || {
        for (name, yaml) in [
            ("class", GATEWAY_CLASS),
            ("gateway", GATEWAY),
            ("route", ROUTE),
        ] {
            k.run(&[
                "create",
                "-f",
                &c.file(&format!("{name}.yaml"), yaml).to_string_lossy(),
            ])
            .success();
        }
    });

    s.step("a Gateway breaking a list rule is refused with its message", || {
        let bad = GATEWAY
            .replace("name: web", "name: tcp-tls")
            .replace(
                "{name: db, protocol: TCP, port: 5432}",
                "{name: db, protocol: TCP, port: 5432, tls: {mode: Terminate, certificateRefs: [{name: cert}]}}",
            );
        k.run(&["create", "-f", &c.file("tcp-tls.yaml", &bad).to_string_lossy()])
            .failure()
            .stderr_has(
                r#"The Gateway "tcp-tls" is invalid: spec.listeners: Invalid value: "array": tls must not be specified for protocols ['HTTP', 'TCP', 'UDP']"#,
            );
    });

    s.step("an HTTPRoute breaking a nested rule is refused at the item's path", || {
        let bad = ROUTE.replace("name: api,", "name: relative,").replace("value: /api", "value: api");
        let bad = bad.replace("{name: api, namespace", "{name: relative, namespace");
        k.run(&["create", "-f", &c.file("relative.yaml", &bad).to_string_lossy()])
            .failure()
            .stderr_has(
                r#"spec.rules[0].matches[0].path: Invalid value: "object": value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"#,
            );
    });

    s.step("a transition rule keeps a field immutable through every patch type and apply", || {
        let immutable = r#"The GatewayClass "example" is invalid: spec.controllerName: Invalid value: "string": Value is immutable"#;
        k.run(&[
            "patch", "gatewayclass", "example", "--type=merge",
            "-p", r#"{"spec":{"controllerName":"example.com/other"}}"#,
        ])
        .failure()
        .stderr_has(immutable);
        k.run(&[
            "patch", "gatewayclass", "example", "--type=json",
            "-p", r#"[{"op":"replace","path":"/spec/controllerName","value":"example.com/other"}]"#,
        ])
        .failure()
        .stderr_has(immutable);
        let changed = GATEWAY_CLASS.replace("gateway-controller", "other");
        let changed = c.file("class-changed.yaml", &changed);
        k.run(&["apply", "--server-side", "--force-conflicts", "-f", &changed.to_string_lossy()])
            .failure()
            .stderr_has(immutable);
        k.run(&["replace", "-f", &changed.to_string_lossy()])
            .failure()
            .stderr_has(immutable);
        // An update that leaves the field alone passes.
        k.run(&[
            "patch", "gatewayclass", "example", "--type=merge",
            "-p", r#"{"spec":{"description":"the example class"}}"#,
        ])
        .success();
        k.run(&["get", "gatewayclass", "example", "-o", "jsonpath={.spec.controllerName}"])
            .success()
            .stdout_is("example.com/gateway-controller");
    });

    s.step("a CRD whose rule does not compile is refused naming the rule", || {
        let bad = WIDGETS
            .replace("widgets.example.com", "gadgets.example.com")
            .replace("plural: widgets, singular: widget, kind: Widget", "plural: gadgets, singular: gadget, kind: Gadget")
            .replace("self.ready <= self.total", "self.readyy <= self.total");
        k.run(&["create", "-f", &c.file("gadgets.yaml", &bad).to_string_lossy()])
            .failure()
            .stderr_has("spec.validation.openAPIV3Schema.properties[status].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.readyy <= self.total\"")
            .stderr_has("compilation failed: ERROR: <input>:1:5: undefined field 'readyy'");
        k.run(&["get", "crd", "gadgets.example.com"]).failure();
    });

    s.step("a rule over its estimated cost is refused as kube-apiserver refuses it", || {
        // Concatenating string(int) has no bounded size: kube-apiserver refuses it too.
        let costly = WIDGETS
            .replace("widgets.example.com", "gizmos.example.com")
            .replace("plural: widgets, singular: widget, kind: Widget", "plural: gizmos, singular: gizmo, kind: Gizmo")
            .replace(
                "'ready %d is more than total %d'.format([self.ready, self.total])",
                "'ready ' + string(self.ready)",
            );
        k.run(&["create", "-f", &c.file("gizmos.yaml", &costly).to_string_lossy()])
            .failure()
            .stderr_has("spec.validation.openAPIV3Schema.properties[status].x-kubernetes-validations[0].messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
            .stderr_has("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x");
        // An unbounded list walked twice over is refused until it has maxItems.
        let quadratic = WIDGETS
            .replace("widgets.example.com", "doodads.example.com")
            .replace("plural: widgets, singular: widget, kind: Widget", "plural: doodads, singular: doodad, kind: Doodad")
            .replace(
                "size: {type: integer}",
                "size: {type: integer}\n              tags: {type: array, items: {type: string, maxLength: 16}, x-kubernetes-validations: [{rule: 'self.all(a, self.exists_one(b, a == b))'}]}",
            );
        k.run(&["create", "-f", &c.file("doodads.yaml", &quadratic).to_string_lossy()])
            .failure()
            .stderr_has("spec.validation.openAPIV3Schema.properties[spec].properties[tags].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x");
        let bounded = quadratic.replace("tags: {type: array,", "tags: {type: array, maxItems: 64,");
        k.run(&["create", "-f", &c.file("doodads-bounded.yaml", &bounded).to_string_lossy()])
            .success();
    });

    s.step("rules on the status subresource run on status writes", || {
        k.run(&["create", "-f", &c.file("widgets.yaml", WIDGETS).to_string_lossy()])
            .success();
        established(&k, "widgets.example.com");
        let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {name: lower, size: 1}\n";
        k.run(&["create", "-f", &c.file("w.yaml", widget).to_string_lossy()])
            .success();
        k.run(&[
            "patch", "widget", "w", "--subresource=status", "--type=merge",
            "-p", r#"{"status":{"ready":3,"total":2}}"#,
        ])
        .failure()
        .stderr_has(r#"The Widget "w" is invalid: status: Invalid value: "object": ready 3 is more than total 2"#);
        k.run(&[
            "patch", "widget", "w", "--subresource=status", "--type=merge",
            "-p", r#"{"status":{"ready":2,"total":2}}"#,
        ])
        .success();
    });

    s.step("a value stored before its rule ratchets: other updates pass with a warning", || {
        let upper = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: upper, namespace: default}\nspec: {name: UPPER, size: 1}\n";
        k.run(&["create", "-f", &c.file("upper.yaml", upper).to_string_lossy()])
            .success();
        let ruled = WIDGETS.replace(
            "name: {type: string}",
            "name: {type: string, x-kubernetes-validations: [{rule: self.lowerAscii() == self, message: must be lowercase}]}",
        );
        k.run(&["apply", "--server-side", "--force-conflicts", "-f", &c.file("widgets-ruled.yaml", &ruled).to_string_lossy()])
            .success();
        k.run(&["patch", "widget", "upper", "--type=merge", "-p", r#"{"spec":{"size":2}}"#])
            .success()
            .stderr_has(r#"Warning: spec.name: Invalid value: "string": must be lowercase"#);
        k.run(&["patch", "widget", "upper", "--type=merge", "-p", r#"{"spec":{"name":"STILL"}}"#])
            .failure()
            .stderr_has(r#"spec.name: Invalid value: "string": must be lowercase"#);
    });

    s.finish();
}

const REPLICA_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: "demo-policy.example.com"}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "object.spec.replicas <= 5"
"#;

const REPLICA_BINDING: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: "demo-binding-test.example.com"}
spec:
  policyName: "demo-policy.example.com"
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: test
"#;

const PARAM_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: "replica-limit.example.com"}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
      messageExpression: "'replicas must be no greater than ' + params.data.maxReplicas"
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: "replica-limit-binding.example.com"}
spec:
  policyName: "replica-limit.example.com"
  validationActions: [Deny]
  paramRef:
    name: replica-limits
    parameterNotFoundAction: Deny
"#;

const CONFIG_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: "config-check.example.com"}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   [""]
      apiVersions: ["v1"]
      operations:  ["CREATE"]
      resources:   ["configmaps"]
  validations:
    - expression: "object.data.mode == 'strict'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: "no-delete.example.com"}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups:   [""]
      apiVersions: ["v1"]
      operations:  ["DELETE"]
      resources:   ["configmaps"]
  validations:
    - expression: "oldObject.metadata.name != 'keep-me'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: "config-check-binding.example.com"}
spec:
  policyName: "config-check.example.com"
  validationActions: [Deny]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: "no-delete-binding.example.com"}
spec:
  policyName: "no-delete.example.com"
  validationActions: [Deny]
"#;

const GATEWAY_GROUP_CRD: &str = "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.gateway.networking.k8s.io
  annotations:
    api-approved.kubernetes.io: https://github.com/kubernetes-sigs/gateway-api/pull/891
spec:
  group: gateway.networking.k8s.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

#[test]
fn validating_admission_policies_are_enforced() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    let apply = |name: &str, yaml: &str| {
        k.run(&["apply", "-f", &c.file(name, yaml).to_string_lossy()])
            .success();
    };

    s.step("the documentation's policy denies a Deployment with 6 replicas", || {
        k.run(&["create", "namespace", "test"]).success();
        k.run(&["label", "namespace", "test", "environment=test"]).success();
        apply("policy.yaml", REPLICA_POLICY);
        apply("binding.yaml", REPLICA_BINDING);
        k.run(&["create", "deployment", "nginx", "--image=nginx", "--replicas=6", "-n", "test"])
            .failure()
            .stderr_has(
                "error: failed to create deployment: deployments.apps \"nginx\" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5",
            );
        // Namespaces the binding's selector leaves out are not checked.
        k.run(&["create", "deployment", "nginx", "--image=nginx", "--replicas=6", "-n", "default"])
            .success();
        // Updates are checked too, whatever the patch type.
        k.run(&["create", "deployment", "nginx", "--image=nginx", "--replicas=2", "-n", "test"])
            .success();
        k.run(&["patch", "deployment", "nginx", "-n", "test", "-p", r#"{"spec":{"replicas":7}}"#])
            .failure()
            .stderr_has("denied request: failed expression: object.spec.replicas <= 5");
        k.run(&[
            "patch", "deployment", "nginx", "-n", "test", "--type=json",
            "-p", r#"[{"op":"replace","path":"/spec/replicas","value":8}]"#,
        ])
        .failure()
        .stderr_has("denied request: failed expression: object.spec.replicas <= 5");
    });

    s.step("with the Warn action the Deployment is created with kubectl's warning", || {
        apply("binding-warn.yaml", &REPLICA_BINDING.replace("[Deny]", "[Warn]"));
        k.run(&["create", "deployment", "warned", "--image=nginx", "--replicas=6", "-n", "test"])
            .success()
            .stderr_has(
                "Warning: Validation failed for ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com': failed expression: object.spec.replicas <= 5",
            );
        k.run(&["get", "deployment", "warned", "-n", "test", "-o", "jsonpath={.spec.replicas}"])
            .success()
            .stdout_is("6");
    });

    s.step("a policy on deployments/scale warns on kubectl scale", || {
        let scale = REPLICA_POLICY
            .replace("demo-policy.example.com", "scale-limit.example.com")
            .replace("[\"deployments\"]", "[\"deployments/scale\"]")
            .replace("<= 5", "<= 3")
            .replace(
                "  validations:\n",
                "  validations:\n    - expression: \"request.kind.kind == 'Scale' && object.apiVersion == 'autoscaling/v1'\"\n      message: not a Scale\n",
            );
        apply("scale-policy.yaml", &scale);
        let binding = REPLICA_BINDING
            .replace("demo-binding-test.example.com", "scale-limit-binding.example.com")
            .replace("demo-policy.example.com", "scale-limit.example.com")
            .replace("[Deny]", "[Warn]");
        apply("scale-binding.yaml", &binding);
        let scaled = k
            .run(&["scale", "deployment", "nginx", "-n", "test", "--replicas=4"])
            .success();
        // What the policy sees is the Scale (autoscaling/v1), as upstream's.
        assert!(!scaled.stderr.contains("not a Scale"), "{}", scaled.stderr);
        scaled.stderr_has(
                "Warning: Validation failed for ValidatingAdmissionPolicy 'scale-limit.example.com' with binding 'scale-limit-binding.example.com': failed expression: object.spec.replicas <= 3",
            );
    });

    s.step("a missing param denies under parameterNotFoundAction Deny; a present one is used", || {
        apply("params.yaml", PARAM_POLICY);
        k.run(&["create", "deployment", "limited", "--image=nginx", "--replicas=1", "-n", "test"])
            .failure()
            .stderr_has(
                "deployments.apps \"limited\" is forbidden: ValidatingAdmissionPolicy 'replica-limit.example.com' with binding 'replica-limit-binding.example.com' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
            );
        k.run(&["create", "configmap", "replica-limits", "-n", "test", "--from-literal=maxReplicas=2"])
            .success();
        // The validation's reason, Forbidden, is the status's (and kubectl shows it).
        let three = k
            .run(&[
                "create", "deployment", "limited", "--image=nginx", "--replicas=3", "-n", "test",
                "--dry-run=client", "-o", "yaml",
            ])
            .success()
            .stdout;
        k.run(&["create", "-f", &c.file("limited.yaml", &three).to_string_lossy()])
            .failure()
            .stderr_has(
                "Error from server (Forbidden): error when creating",
            )
            .stderr_has("deployments.apps \"limited\" is forbidden: ValidatingAdmissionPolicy 'replica-limit.example.com' with binding 'replica-limit-binding.example.com' denied request: replicas must be no greater than 2");
        k.run(&["create", "deployment", "limited", "--image=nginx", "--replicas=2", "-n", "test"])
            .success();
        k.run(&["delete", "-f", &c.file("params.yaml", PARAM_POLICY).to_string_lossy()])
            .success();
    });

    s.step("an expression that errors fails the request, or not with failurePolicy Ignore", || {
        apply("config.yaml", CONFIG_POLICY);
        k.run(&["create", "configmap", "loose", "--from-literal=other=x"])
            .failure()
            .stderr_has(
                "configmaps \"loose\" is forbidden: ValidatingAdmissionPolicy 'config-check.example.com' with binding 'config-check-binding.example.com' denied request: expression 'object.data.mode == 'strict'' resulted in error: no such key: mode",
            );
        apply("config-ignore.yaml", &CONFIG_POLICY.replacen("failurePolicy: Fail", "failurePolicy: Ignore", 1));
        k.run(&["create", "configmap", "loose", "--from-literal=other=x"])
            .success();
        k.run(&["create", "configmap", "wrong", "--from-literal=mode=lax"])
            .failure()
            .stderr_has("denied request: failed expression: object.data.mode == 'strict'");
    });

    s.step("a DELETE sees the stored object as oldObject", || {
        k.run(&["create", "configmap", "keep-me", "--from-literal=mode=strict"])
            .success();
        k.run(&["delete", "configmap", "keep-me"])
            .failure()
            .stderr_has(
                // kubectl shows a 422 by its causes: the one cause has no field.
                "The configmaps \"keep-me\" is invalid: : ValidatingAdmissionPolicy 'no-delete.example.com' with binding 'no-delete-binding.example.com' denied request: failed expression: oldObject.metadata.name != 'keep-me'",
            );
        k.run(&["delete", "configmap", "loose"]).success();
    });

    s.step("a policy whose expression does not compile is refused", || {
        let broken = REPLICA_POLICY
            .replace("demo-policy.example.com", "broken.example.com")
            .replace("object.spec.replicas <= 5", "object.spec.replicas <=");
        k.run(&["apply", "-f", &c.file("broken.yaml", &broken).to_string_lossy()])
            .failure()
            .stderr_has(
                "The ValidatingAdmissionPolicy \"broken.example.com\" is invalid: spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed: ERROR: <input>:1:",
            );
    });

    s.step("Gateway API's safe-upgrades policy refuses a CRD without its bundle version", || {
        let file = gateway_api("gateway.networking.k8s.io_vap_safeupgrades.yaml");
        k.run(&["apply", "-f", &file]).success();
        k.run(&["create", "-f", &c.file("gw-widgets.yaml", GATEWAY_GROUP_CRD).to_string_lossy()])
            .failure()
            .stderr_has(
                "The customresourcedefinitions \"widgets.gateway.networking.k8s.io\" is invalid: : ValidatingAdmissionPolicy 'safe-upgrades.gateway.networking.k8s.io' with binding 'safe-upgrades.gateway.networking.k8s.io' denied request: Installing CRDs with version before v1.5.0 is prohibited by default. Uninstall ValidatingAdmissionPolicy safe-upgrades.gateway.networking.k8s.io to install older versions.",
            );
        k.run(&["get", "crd", "widgets.gateway.networking.k8s.io"]).failure();
        // Gateway API's own CRDs carry it and pass.
        let classes = gateway_api("gateway.networking.k8s.io_gatewayclasses.yaml");
        k.run(&["apply", "--server-side", "-f", &classes]).success();
        established(&k, "gatewayclasses.gateway.networking.k8s.io");
    });

    s.finish();
}

/// Writers of Deployments must be able to update the ConfigMaps of the Deployment's namespace
/// (the authz library's documented example) and to delete what they create
/// (`authorizer.requestResource`).
const AUTHZ_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: "deployment-writers.example.com"}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "authorizer.group('').resource('configmaps').namespace(object.metadata.namespace).check('update').allowed()"
      message: "only users who may update configmaps in the namespace may write deployments"
      reason: Forbidden
    - expression: "authorizer.requestResource.check('delete').allowed()"
      messageExpression: "'user ' + request.userInfo.username + ' could not delete ' + object.metadata.name"
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: "deployment-writers-binding.example.com"}
spec:
  policyName: "deployment-writers.example.com"
  validationActions: [Deny]
"#;

#[test]
fn policies_check_the_requesters_authorization() {
    let c = Cluster::start().unwrap();
    let admin = c.kubectl();
    let mut s = Steps::default();
    // A user with a client certificate, `atoll user create`'s.
    let bob_config = c.file("bob.kubeconfig", "");
    let admin_config = c.process.kubeconfig();
    Tool::new(atoll_binary().unwrap())
        .run(&[
            "--kubeconfig",
            admin_config.to_str().unwrap(),
            "user",
            "create",
            "bob",
            "-o",
            bob_config.to_str().unwrap(),
        ])
        .success();
    let bob = Tool::new(client_binary("kubectl").unwrap())
        .env("HOME", c.home())
        .env("KUBECONFIG", &bob_config)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    let create = |k: &Tool, name: &str| {
        k.run(&[
            "create",
            "deployment",
            name,
            "--image=nginx",
            "-n",
            "team-a",
        ])
    };

    s.step("the policy is accepted and the admin passes it", || {
        admin.run(&["create", "namespace", "team-a"]).success();
        admin
            .run(&[
                "apply",
                "-f",
                &c.file("authz.yaml", AUTHZ_POLICY).to_string_lossy(),
            ])
            .success();
        create(&admin, "by-admin").success();
    });

    s.step("a user who may create deployments but not update configmaps is denied", || {
        admin
            .run(&["create", "role", "deployer", "--verb=create,get,list", "--resource=deployments.apps", "-n", "team-a"])
            .success();
        admin
            .run(&["create", "rolebinding", "bob-deployer", "--role=deployer", "--user=bob", "-n", "team-a"])
            .success();
        create(&bob, "by-bob").failure().stderr_has(
            "error: failed to create deployment: deployments.apps \"by-bob\" is forbidden: ValidatingAdmissionPolicy 'deployment-writers.example.com' with binding 'deployment-writers-binding.example.com' denied request: only users who may update configmaps in the namespace may write deployments",
        );
    });

    s.step("authorizer.requestResource checks the request's own deployment", || {
        admin
            .run(&["create", "role", "configmap-writer", "--verb=update", "--resource=configmaps", "-n", "team-a"])
            .success();
        admin
            .run(&["create", "rolebinding", "bob-configmaps", "--role=configmap-writer", "--user=bob", "-n", "team-a"])
            .success();
        create(&bob, "by-bob").failure().stderr_has(
            "deployments.apps \"by-bob\" is forbidden: ValidatingAdmissionPolicy 'deployment-writers.example.com' with binding 'deployment-writers-binding.example.com' denied request: user bob could not delete by-bob",
        );
        // A name the user may delete passes.
        admin
            .run(&["create", "role", "deleter", "--verb=delete", "--resource=deployments.apps", "--resource-name=by-bob", "-n", "team-a"])
            .success();
        admin
            .run(&["create", "rolebinding", "bob-deleter", "--role=deleter", "--user=bob", "-n", "team-a"])
            .success();
        create(&bob, "by-bob").success();
        create(&bob, "other").failure().stderr_has("user bob could not delete other");
    });

    s.step("a policy whose authorizer call has the wrong argument type is refused", || {
        let policy = AUTHZ_POLICY.split("---").next().unwrap_or_default();
        let broken = policy
            .replace("deployment-writers.example.com", "broken-authz.example.com")
            .replace("check('delete')", "check(1)");
        admin
            .run(&["apply", "-f", &c.file("broken-authz.yaml", &broken).to_string_lossy()])
            .failure()
            .stderr_has(
                "spec.validations[1].expression: Invalid value: \"authorizer.requestResource.check(1).allowed()\": compilation failed: ERROR: <input>:1:33: found no matching overload for 'check' applied to 'kubernetes.authorization.ResourceCheck.(int)'",
            );
    });
    s.finish();
}

const GAUGES: &str = "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gauges.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gauges, singular: gauge, kind: Gauge}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
";

const GAUGE_POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: "gauge-size.example.com"}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups:   ["example.com"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["gauges"]
  validations:
    - expression: "object.spec.sise <= 10 && object.metadata.labels.size() < 5"
"#;

const CONFIG_WARN_AND_DENY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: "labelled.example.com"}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups:   [""]
      apiVersions: ["v1"]
      operations:  ["CREATE"]
      resources:   ["configmaps"]
  validations:
    - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
      message: configmaps should name their team
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: "labelled-binding.example.com"}
spec:
  policyName: "labelled.example.com"
  validationActions: [Warn]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: "no-secrets.example.com"}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups:   [""]
      apiVersions: ["v1"]
      operations:  ["CREATE"]
      resources:   ["configmaps"]
  validations:
    - expression: "!has(object.data) || !('password' in object.data)"
      message: passwords belong in Secrets
      reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: "no-secrets-binding.example.com"}
spec:
  policyName: "no-secrets.example.com"
  validationActions: [Deny]
"#;

#[test]
fn policies_are_type_checked_and_refusals_keep_their_warnings() {
    let c = Cluster::start().unwrap();
    let k = c.kubectl();
    let mut s = Steps::default();
    let apply = |name: &str, yaml: &str| {
        k.run(&["apply", "-f", &c.file(name, yaml).to_string_lossy()])
            .success();
    };
    let observed = |policy: &str, generation: u32| {
        k.run(&[
            "wait",
            "--timeout=30s",
            &format!("--for=jsonpath={{.status.observedGeneration}}={generation}"),
            &format!("validatingadmissionpolicy/{policy}"),
        ])
        .success();
    };
    let misspelt = REPLICA_POLICY.replace("object.spec.replicas", "object.spec.replicsa");

    s.step("a misspelt field of a Deployment is a warning in the policy's status", || {
        apply("misspelt.yaml", &misspelt);
        observed("demo-policy.example.com", 1);
        k.run(&["get", "validatingadmissionpolicy", "demo-policy.example.com", "-o", "yaml"])
            .success()
            .stdout_has("observedGeneration: 1")
            .stdout_has("- fieldRef: spec.validations[0].expression")
            .stdout_has("apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicsa'");
        k.run(&[
            "get", "validatingadmissionpolicy", "demo-policy.example.com",
            "-o", "jsonpath={.status.typeChecking.expressionWarnings[0].warning}",
        ])
        .success()
        .stdout_is("apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicsa'\n | object.spec.replicsa <= 5\n | ...........^\n");
        // Type checking only warns: the policy is enforced (the field is missing at run time).
        apply("binding.yaml", &REPLICA_BINDING.replace("matchResources:\n    namespaceSelector:\n      matchLabels:\n        environment: test\n", ""));
        k.run(&["create", "deployment", "typo", "--image=nginx", "--replicas=2"])
            .failure()
            .stderr_has("denied request: expression 'object.spec.replicsa <= 5' resulted in error: no such key: replicsa");
    });

    s.step("the fixed policy's next generation has no warning", || {
        apply("fixed.yaml", REPLICA_POLICY);
        observed("demo-policy.example.com", 2);
        k.run(&[
            "get",
            "validatingadmissionpolicy",
            "demo-policy.example.com",
            "-o",
            "jsonpath={.metadata.generation} {.status.typeChecking}",
        ])
        .success()
        .stdout_is("2 {}");
        k.run(&[
            "create",
            "deployment",
            "typo",
            "--image=nginx",
            "--replicas=2",
        ])
        .success();
        k.run(&[
            "delete",
            "validatingadmissionpolicybinding",
            "demo-binding-test.example.com",
        ])
        .success();
    });

    s.step("a policy on a custom resource is checked against the CRD's schema", || {
        k.run(&["create", "-f", &c.file("gauges.yaml", GAUGES).to_string_lossy()])
            .success();
        established(&k, "gauges.example.com");
        apply("gauge-policy.yaml", GAUGE_POLICY);
        observed("gauge-size.example.com", 1);
        let warning = k
            .run(&[
                "get", "validatingadmissionpolicy", "gauge-size.example.com",
                "-o", "jsonpath={.status.typeChecking.expressionWarnings[*].warning}",
            ])
            .success()
            .stdout;
        // Only the misspelt field: the metadata of a custom resource is all of ObjectMeta.
        assert_eq!(
            warning,
            "example.com/v1, Kind=Gauge: ERROR: <input>:1:12: undefined field 'sise'\n | object.spec.sise <= 10 && object.metadata.labels.size() < 5\n | ...........^\n"
        );
    });

    s.step("a request one binding warns on and another denies shows both", || {
        apply("config-policies.yaml", CONFIG_WARN_AND_DENY);
        k.run(&["create", "configmap", "db", "--from-literal=password=hunter2"])
            .failure()
            .stderr_has("Warning: Validation failed for ValidatingAdmissionPolicy 'labelled.example.com' with binding 'labelled-binding.example.com': configmaps should name their team")
            .stderr_has("configmaps \"db\" is forbidden: ValidatingAdmissionPolicy 'no-secrets.example.com' with binding 'no-secrets-binding.example.com' denied request: passwords belong in Secrets");
        k.run(&["get", "configmap", "db"]).failure();
    });

    s.finish();
}
