//! The authorization library through the whole pipeline (parse, check, estimate, evaluate)
//! with a fake authorizer, after Kubernetes 1.35's `pkg/cel/library/authz_test.go` and the
//! authz cases of `cost_test.go`.

use std::sync::{Arc, Mutex};

use super::*;
use crate::{Activation, Env, Program, Type};

/// Records what it is asked; allows `get` and `list` on anything and the path `/healthz`,
/// fails on verb `fail`, and says no to everything else.
#[derive(Debug, Default)]
struct Fake {
    asked: Mutex<Vec<String>>,
}

impl Authorizer for Fake {
    fn authorize(&self, a: &Attributes<'_>) -> Decision {
        let who = a
            .service_account
            .map_or("requester".to_owned(), |sa| sa.username());
        let what = match a.target {
            Target::Path(path) => format!("path {path}"),
            Target::Resource(r) => format!(
                "{}/{}/{}/{}/{}/{}/{}",
                r.group,
                r.resource,
                r.subresource,
                r.namespace,
                r.name,
                r.field_selector,
                r.label_selector
            ),
        };
        self.asked
            .lock()
            .unwrap()
            .push(format!("{who} {} {what}", a.verb));
        match (a.verb, a.target) {
            ("fail", _) => Decision::error("webhook unreachable"),
            (_, Target::Path("/healthz")) | ("get" | "list", Target::Resource(_)) => {
                Decision::allow("allowed by test")
            }
            _ => Decision::deny("denied by test"),
        }
    }
}

fn env() -> Env {
    Env::new()
        .variable("authorizer", Type::Opaque(AUTHORIZER_TYPE))
        .variable(
            "authorizer.requestResource",
            Type::Opaque(RESOURCE_CHECK_TYPE),
        )
}

fn activation(fake: &Arc<Fake>) -> Activation {
    let shared: Arc<dyn Authorizer> = fake.clone();
    Activation::new()
        .bind("authorizer", authorizer(shared.clone()))
        .bind(
            "authorizer.requestResource",
            request_resource(
                shared,
                ResourceAttributes {
                    group: "apps",
                    resource: "deployments",
                    subresource: "scale",
                    namespace: "team-a",
                    name: "web",
                    ..Default::default()
                },
            ),
        )
}

/// The value of `source`, the cost it charged, and what the authorizer was asked.
fn run(source: &str) -> (Result<Value, EvalError>, u64, Vec<String>) {
    let program = Program::compile(&env(), source).unwrap_or_else(|e| panic!("{source}: {e}"));
    let fake = Arc::new(Fake::default());
    let mut budget = Budget::new(10_000_000);
    let result = program.eval(&activation(&fake), &mut budget);
    let asked = fake.asked.lock().unwrap().clone();
    (result, 10_000_000 - budget.remaining, asked)
}

fn value(source: &str) -> Value {
    run(source).0.unwrap_or_else(|e| panic!("{source}: {e:?}"))
}

fn compile_error(source: &str) -> String {
    match Program::compile(&env(), source) {
        Ok(_) => panic!("{source} compiled"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn checks_type_as_upstream_declares_them() {
    let cases = [
        ("authorizer", AUTHORIZER_TYPE),
        ("authorizer.path('/healthz')", PATH_CHECK_TYPE),
        ("authorizer.group('apps')", GROUP_CHECK_TYPE),
        ("authorizer.serviceAccount('ns', 'sa')", AUTHORIZER_TYPE),
        ("authorizer.group('').resource('pods')", RESOURCE_CHECK_TYPE),
        ("authorizer.requestResource", RESOURCE_CHECK_TYPE),
        (
            "authorizer.requestResource.subresource('').namespace('n').name('x')",
            RESOURCE_CHECK_TYPE,
        ),
        (
            "authorizer.group('').resource('pods').fieldSelector('a=b').labelSelector('c')",
            RESOURCE_CHECK_TYPE,
        ),
        ("authorizer.path('/x').check('get')", DECISION_TYPE),
        ("authorizer.requestResource.check('get')", DECISION_TYPE),
    ];
    for (source, want) in cases {
        let program = Program::compile(&env(), source).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(program.result_type(), &Type::Opaque(want), "{source}");
    }
    for (source, want) in [
        ("authorizer.path('/x').check('get').allowed()", Type::Bool),
        ("authorizer.path('/x').check('get').errored()", Type::Bool),
        ("authorizer.path('/x').check('get').reason()", Type::String),
        ("authorizer.path('/x').check('get').error()", Type::String),
    ] {
        let program = Program::compile(&env(), source).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(program.result_type(), &want, "{source}");
    }
}

#[test]
fn wrong_types_are_checker_errors() {
    assert_eq!(
        compile_error("authorizer.group('').resource('pods').check(1)"),
        "ERROR: <input>:1:44: found no matching overload for 'check' applied to \
         'kubernetes.authorization.ResourceCheck.(int)'\n \
         | authorizer.group('').resource('pods').check(1)\n \
         | ...........................................^"
    );
    assert!(
        compile_error("authorizer.path(1)")
            .contains("found no matching overload for 'path' applied to 'kubernetes.authorization.Authorizer.(int)'")
    );
    // A GroupCheck has no name; a Decision is no bool.
    assert!(compile_error("authorizer.group('').name('x')").contains(
        "found no matching overload for 'name' applied to 'kubernetes.authorization.GroupCheck.(string)'"
    ));
    assert!(
        compile_error("authorizer.path('/x').check('get') || true")
            .contains("expected type 'bool' but found 'kubernetes.authorization.Decision'")
    );
    assert!(
        compile_error("authorizer.serviceAccount('ns')").contains(
            "found no matching overload for 'serviceAccount' applied to 'kubernetes.authorization.Authorizer.(string)'"
        )
    );
    // Without the variables (a CRD rule), `authorizer` is undeclared.
    let err = Program::compile(&Env::new(), "authorizer.path('/x').check('get').allowed()")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("undeclared reference to 'authorizer'"),
        "{err}"
    );
}

#[test]
fn resource_checks_ask_with_every_attribute() {
    let (result, _, asked) = run(
        "authorizer.group('apps').resource('deployments').subresource('scale')\
         .namespace('team-a').name('web').check('update').allowed()",
    );
    assert!(matches!(result, Ok(Value::Bool(false))));
    assert_eq!(
        asked,
        ["requester update apps/deployments/scale/team-a/web//"]
    );
    let (result, _, asked) = run(
        "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=n1')\
         .labelSelector('app=web').check('list')",
    );
    let decision = result.unwrap();
    assert_eq!(decision.type_name().as_str(), DECISION_TYPE);
    assert_eq!(asked, ["requester list /pods////spec.nodeName=n1/app=web"]);
    // An empty subresource or name is unset again.
    let (_, _, asked) =
        run("authorizer.requestResource.subresource('').name('').check('get').allowed()");
    assert_eq!(asked, ["requester get apps/deployments//team-a///"]);
}

#[test]
fn request_resource_is_prefilled_from_the_request() {
    let (result, _, asked) = run("authorizer.requestResource.check('get').allowed()");
    assert!(matches!(result, Ok(Value::Bool(true))));
    assert_eq!(asked, ["requester get apps/deployments/scale/team-a/web//"]);
}

#[test]
fn decisions_read_as_upstream() {
    assert!(matches!(
        value("authorizer.path('/healthz').check('get').allowed()"),
        Value::Bool(true)
    ));
    assert!(matches!(
        value("authorizer.path('/metrics').check('get').allowed()"),
        Value::Bool(false)
    ));
    assert!(
        matches!(value("authorizer.path('/metrics').check('get').reason()"), Value::String(s) if &*s == "denied by test")
    );
    assert!(
        matches!(value("authorizer.group('').resource('pods').check('get').reason()"), Value::String(s) if &*s == "allowed by test")
    );
    assert!(matches!(
        value("authorizer.group('').resource('pods').check('get').errored()"),
        Value::Bool(false)
    ));
    assert!(
        matches!(value("authorizer.group('').resource('pods').check('get').error()"), Value::String(s) if s.is_empty())
    );
}

#[test]
fn an_authorizer_error_is_errored_not_allowed() {
    let check = "authorizer.group('').resource('pods').check('fail')";
    assert!(matches!(
        value(&format!("{check}.errored()")),
        Value::Bool(true)
    ));
    assert!(matches!(
        value(&format!("{check}.allowed()")),
        Value::Bool(false)
    ));
    assert!(
        matches!(value(&format!("{check}.error()")), Value::String(s) if &*s == "webhook unreachable")
    );
}

#[test]
fn service_accounts_are_checked_as_themselves() {
    let (result, _, asked) = run(
        "authorizer.serviceAccount('default', 'builder').group('').resource('secrets')\
         .namespace('default').check('create').allowed()",
    );
    assert!(matches!(result, Ok(Value::Bool(false))));
    assert_eq!(
        asked,
        ["system:serviceaccount:default:builder create /secrets//default///"]
    );
    let sa = ServiceAccount {
        namespace: "default",
        name: "builder",
    };
    assert_eq!(
        sa.groups(),
        ["system:serviceaccounts", "system:serviceaccounts:default"]
    );
}

#[test]
fn bad_arguments_are_upstreams_errors() {
    let errors = [
        ("authorizer.path('')", "path must not be empty"),
        ("authorizer.path('  ')", "path must not be empty"),
        (
            "authorizer.group('apps').resource('')",
            "resource must not be empty",
        ),
        (
            "authorizer.group('apps').resource('  ')",
            "resource must not be empty",
        ),
        (
            "authorizer.serviceAccount('not@a#valid!namespace', 'validname')",
            "Invalid service account namespace",
        ),
        (
            "authorizer.serviceAccount('valid.example.com', 'validname')",
            "Invalid service account namespace",
        ),
        (
            "authorizer.serviceAccount('default', 'invalid@*name')",
            "Invalid service account name",
        ),
        (
            "authorizer.serviceAccount('-bad', 'invalid@*name')",
            "Invalid service account name",
        ),
    ];
    for (source, want) in errors {
        match run(source).0 {
            Err(EvalError::Runtime(got)) => assert_eq!(got, want, "{source}"),
            other => panic!("{source}: {other:?}"),
        }
    }
    assert!(matches!(
        value(
            "authorizer.serviceAccount('kube-system', 'a.b-c').group('').resource('pods').check('get').allowed()"
        ),
        Value::Bool(true)
    ));
    // Through `dyn`, a wrong receiver is no such overload.
    match run("dyn(authorizer).resource('pods')").0 {
        Err(EvalError::Runtime(got)) => assert_eq!(got, "no such overload: resource"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn runtime_costs_are_kubernetes_call_costs() {
    // Variable 1, group 1, resource 1, check 350,000, allowed 1.
    let (_, cost, _) = run("authorizer.group('').resource('pods').check('get').allowed()");
    assert_eq!(cost, 350_004);
    let (_, cost, _) = run("authorizer.requestResource.check('get').allowed()");
    assert_eq!(cost, 350_002);
    // 20 characters: 10 + ceil(2.0) + ceil(10.0) * 50.
    let (_, cost, _) = run("authorizer.requestResource.fieldSelector('spec.nodeName=mynode')");
    assert_eq!(cost, 1 + 512);
    assert_eq!(selector_cost(0), 10);
    assert_eq!(selector_cost(3), 10 + 1 + 2 * 50);
    // Three checks exceed the per-call limit of 1,000,000.
    let program = Program::compile(
        &env(),
        "authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed() || authorizer.path('/c').check('get').allowed()",
    )
    .unwrap();
    let fake = Arc::new(Fake::default());
    let mut budget = Budget::new(1_000_000);
    assert!(matches!(
        program.eval(&activation(&fake), &mut budget),
        Err(EvalError::CostExceeded)
    ));
}

/// `cost_test.go`'s `TestAuthzLibrary`: (expression, estimate, runtime cost).
const UPSTREAM_COSTS: &[(&str, u64, u64)] = &[
    ("authorizer.path('/healthz')", 2, 2),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend')",
        6,
        6,
    ),
    (
        "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=example-node-name.fully.qualified.domain.name.example.com')",
        1821,
        1821,
    ),
    (
        "authorizer.group('').resource('pods').labelSelector('spec.nodeName=example-node-name.fully.qualified.domain.name.example.com')",
        1821,
        1821,
    ),
    (
        "authorizer.path('/healthz').check('get').allowed()",
        350_003,
        350_003,
    ),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend').check('create').allowed()",
        350_007,
        350_007,
    ),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend').check('create').errored()",
        350_007,
        350_007,
    ),
    (
        "authorizer.group('apps').resource('deployments').subresource('status').namespace('test').name('backend').check('create').error()",
        350_007,
        350_007,
    ),
    // Not upstream's table: the request's ResourceCheck is one variable, a service account
    // one call more, equality 1.
    (
        "authorizer.requestResource.check('get').allowed()",
        350_002,
        350_002,
    ),
    (
        "authorizer.serviceAccount('ns', 'sa').path('/x').check('get').reason()",
        350_004,
        350_004,
    ),
    (
        "authorizer.requestResource == authorizer.requestResource",
        3,
        3,
    ),
];

#[test]
fn estimates_and_runtime_costs_are_kubernetes() {
    let unknown = |_: &[&str]| None;
    for (source, estimate, runtime) in UPSTREAM_COSTS {
        let program = Program::compile(&env(), source).unwrap_or_else(|e| panic!("{e}"));
        let c = program.estimate_cost(&unknown);
        assert_eq!(
            (c.min, c.max),
            (*estimate, *estimate),
            "estimate of {source}"
        );
        let (result, cost, _) = run(source);
        assert!(result.is_ok(), "{source}: {result:?}");
        assert_eq!(cost, *runtime, "runtime cost of {source}");
    }
}
