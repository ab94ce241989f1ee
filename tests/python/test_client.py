"""The Python `kubernetes` client against `atoll apiserver`: typed CRUD, watch streams, patches,
custom objects, the DynamicClient and the errors of bad input.

The server binary is $ATOLL_BIN, or target/debug/atoll of the workspace. Each test works in a
namespace of its own on one server per module.
"""

import json
import os
import pathlib
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ConflictError, DynamicApiError, NotFoundError

ROOT = pathlib.Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "tests/testdata/charts/demo/crds/widgets.yaml"
GROUP, VERSION, PLURAL = "demo.example.com", "v1", "widgets"
TIMEOUT = 15  # seconds, for every request and wait


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def api():
    """An `atoll apiserver` on a free port, and an ApiClient from the kubeconfig it wrote."""
    binary = os.environ.get("ATOLL_BIN", str(ROOT / "target/debug/atoll"))
    if not os.path.isfile(binary):
        pytest.fail(f"{binary} is missing: build it with `cargo build -p atoll` or set ATOLL_BIN")
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = pathlib.Path(tmp) / "server"
        log_path = pathlib.Path(tmp) / "server.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [binary, "apiserver", "--data-dir", str(data_dir),
                 "--api-addr", f"127.0.0.1:{free_port()}"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + 30
            while "is ready" not in log_path.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("atoll apiserver did not start:\n" + log_path.read_text())
                time.sleep(0.05)
            api_client = config.new_client_from_config(
                config_file=str(data_dir / "admin.kubeconfig"))
            # Where tests that make other users find the server's binary and admin kubeconfig.
            api_client.atoll = {"binary": binary, "kubeconfig": data_dir / "admin.kubeconfig",
                                "tmp": pathlib.Path(tmp)}
            yield api_client
            api_client.close()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def ns(api):
    """A fresh namespace for one test, once it holds what every namespace holds (the cluster's
    CA in `kube-root-ca.crt`, which the server writes just after the namespace is created)."""
    name = "py-" + uuid.uuid4().hex[:8]
    core = client.CoreV1Api(api)
    core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name)), _request_timeout=TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while not any(c.metadata.name == "kube-root-ca.crt" for c in core.list_namespaced_config_map(
            name, _request_timeout=TIMEOUT).items):
        assert time.monotonic() < deadline, f"namespace {name} never got its kube-root-ca.crt"
        time.sleep(0.05)
    return name


@pytest.fixture(scope="module")
def widget_crd(api):
    """The Widget CRD of the demo chart, created once and Established."""
    ext = client.ApiextensionsV1Api(api)
    body = yaml.safe_load(CRD_FILE.read_text())
    ext.create_custom_resource_definition(body, _request_timeout=TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while True:
        crd = ext.read_custom_resource_definition(body["metadata"]["name"], _request_timeout=TIMEOUT)
        conditions = {c.type: c.status for c in (crd.status.conditions or [])}
        if conditions.get("Established") == "True":
            return crd
        assert time.monotonic() < deadline, f"CRD not Established: {crd.status}"
        time.sleep(0.1)


def message(error):
    """The `message` of the Status an ApiException carries."""
    return json.loads(error.body)["message"]


def test_version(api):
    info = client.VersionApi(api).get_code(_request_timeout=TIMEOUT)
    assert (info.major, info.minor) == ("1", "35")
    assert info.git_version.startswith("v1.35.")


def test_configmap_crud(api, ns):
    core = client.CoreV1Api(api)
    # A body built from models carries no apiVersion or kind; the server defaults them.
    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="py-cm", labels={"app": "py"}), data={"a": "1"})
    assert body.api_version is None and body.kind is None
    created = core.create_namespaced_config_map(ns, body, _request_timeout=TIMEOUT)
    assert (created.api_version, created.kind) == ("v1", "ConfigMap")
    assert created.metadata.uid and created.metadata.resource_version
    assert created.metadata.namespace == ns
    assert created.data == {"a": "1"}

    core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="other", labels={"app": "other"})),
        _request_timeout=TIMEOUT)

    read = core.read_namespaced_config_map("py-cm", ns, _request_timeout=TIMEOUT)
    assert read.data == {"a": "1"}
    assert read.metadata.labels == {"app": "py"}

    listed = core.list_namespaced_config_map(ns, label_selector="app=py", _request_timeout=TIMEOUT)
    assert [c.metadata.name for c in listed.items] == ["py-cm"]
    assert listed.metadata.resource_version
    everything = core.list_namespaced_config_map(ns, _request_timeout=TIMEOUT)
    assert {"py-cm", "other"} <= {c.metadata.name for c in everything.items}

    read.data = {"a": "2", "b": "3"}
    replaced = core.replace_namespaced_config_map("py-cm", ns, read, _request_timeout=TIMEOUT)
    assert replaced.data == {"a": "2", "b": "3"}
    assert replaced.metadata.resource_version != read.metadata.resource_version
    # The same (now stale) resourceVersion again is a conflict.
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_config_map("py-cm", ns, read, _request_timeout=TIMEOUT)
    assert stale.value.status == 409
    assert message(stale.value) == (
        'Operation cannot be fulfilled on configmaps "py-cm": the object has been modified; '
        'please apply your changes to the latest version and try again')

    # A dict body is sent as a strategic merge patch, a list as a JSON patch.
    patched = core.patch_namespaced_config_map(
        "py-cm", ns, {"data": {"c": "4"}, "metadata": {"labels": {"extra": "yes"}}},
        _request_timeout=TIMEOUT)
    assert patched.data == {"a": "2", "b": "3", "c": "4"}
    assert patched.metadata.labels == {"app": "py", "extra": "yes"}
    patched = core.patch_namespaced_config_map(
        "py-cm", ns, [{"op": "remove", "path": "/data/b"},
                      {"op": "replace", "path": "/data/a", "value": "x"}],
        _request_timeout=TIMEOUT)
    assert patched.data == {"a": "x", "c": "4"}

    deleted = core.delete_namespaced_config_map("py-cm", ns, _request_timeout=TIMEOUT)
    assert deleted is not None
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("py-cm", ns, _request_timeout=TIMEOUT)
    assert missing.value.status == 404
    assert message(missing.value) == 'configmaps "py-cm" not found'


def test_strategic_merge_patch_on_a_deployment(api, ns):
    apps = client.AppsV1Api(api)
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels={"app": "web"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "web"}),
                spec=client.V1PodSpec(containers=[
                    client.V1Container(name="app", image="nginx:1.27"),
                    client.V1Container(name="sidecar", image="busybox:1.36"),
                ]))))
    apps.create_namespaced_deployment(ns, body, _request_timeout=TIMEOUT)
    patched = apps.patch_namespaced_deployment(
        "web", ns,
        {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}]}}}},
        _request_timeout=TIMEOUT)
    images = [(c.name, c.image) for c in patched.spec.template.spec.containers]
    assert images == [("app", "nginx:1.27"), ("sidecar", "busybox:1.37")]
    assert patched.metadata.generation == 2

    scaled = apps.patch_namespaced_deployment_scale(
        "web", ns, {"spec": {"replicas": 3}}, _request_timeout=TIMEOUT)
    assert scaled.kind == "Scale" and scaled.spec.replicas == 3
    assert apps.read_namespaced_deployment("web", ns, _request_timeout=TIMEOUT).spec.replicas == 3


def test_watch_stream(api, ns):
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="first")), _request_timeout=TIMEOUT)

    def writer():
        core.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="second"), data={"v": "1"}),
            _request_timeout=TIMEOUT)
        core.patch_namespaced_config_map("second", ns, {"data": {"v": "2"}}, _request_timeout=TIMEOUT)
        core.delete_namespaced_config_map("second", ns, _request_timeout=TIMEOUT)

    w = watch.Watch()
    events = []
    started = None
    for event in w.stream(core.list_namespaced_config_map, ns, timeout_seconds=10):
        obj = event["object"]
        assert isinstance(obj, client.V1ConfigMap)
        events.append((event["type"], obj.metadata.name, (obj.data or {}).get("v")))
        if started is None and obj.metadata.name == "first":
            # The stream is open: now make the changes it must report.
            started = threading.Thread(target=writer)
            started.start()
        if (event["type"], obj.metadata.name) == ("DELETED", "second"):
            w.stop()
    if started:
        started.join(TIMEOUT)
    assert ("ADDED", "first", None) in events, events
    ours = [e for e in events if e[1] == "second"]
    assert ours == [("ADDED", "second", "1"), ("MODIFIED", "second", "2"),
                    ("DELETED", "second", "2")], events


def test_custom_objects(api, ns, widget_crd):
    crd = widget_crd
    assert crd.status.accepted_names.kind == "Widget"
    assert crd.status.accepted_names.plural == "widgets"
    custom = client.CustomObjectsApi(api)
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget",
            "metadata": {"name": "w1", "labels": {"tier": "gold"}},
            "spec": {"size": 1, "color": "blue"}}
    created = custom.create_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, body, _request_timeout=TIMEOUT)
    assert created["metadata"]["uid"]
    assert created["spec"] == {"size": 1, "color": "blue"}

    got = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "w1", _request_timeout=TIMEOUT)
    assert got["metadata"]["generation"] == 1
    listed = custom.list_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, label_selector="tier=gold", _request_timeout=TIMEOUT)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w1"]

    # CustomObjectsApi patches are merge patches.
    patched = custom.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "w1", {"spec": {"size": 5}}, _request_timeout=TIMEOUT)
    assert patched["spec"] == {"size": 5, "color": "blue"}
    assert patched["metadata"]["generation"] == 2

    status = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "w1",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "spec": {"size": 99}},
        _request_timeout=TIMEOUT)
    assert status["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert status["spec"]["size"] == 5, "a status write must not change spec"
    assert status["metadata"]["generation"] == 2

    got = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "w1", _request_timeout=TIMEOUT)
    got["spec"]["color"] = "green"
    replaced = custom.replace_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "w1", got, _request_timeout=TIMEOUT)
    assert replaced["spec"] == {"size": 5, "color": "green"}
    assert replaced["status"]["conditions"][0]["type"] == "Ready"

    custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "w1", _request_timeout=TIMEOUT)
    with pytest.raises(ApiException) as missing:
        custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "w1", _request_timeout=TIMEOUT)
    assert missing.value.status == 404


def test_dynamic_client(api, ns, widget_crd):
    dyn = DynamicClient(api)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    assert (cms.name, cms.namespaced) == ("configmaps", True)

    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "dyn", "labels": {"via": "dynamic"}}, "data": {"a": "1"}}
    created = cms.create(body=body, namespace=ns)
    assert created.metadata.name == "dyn" and created.data.a == "1"
    got = cms.get(name="dyn", namespace=ns)
    assert got.metadata.uid == created.metadata.uid
    listed = cms.get(namespace=ns, label_selector="via=dynamic")
    assert [i.metadata.name for i in listed.items] == ["dyn"]

    # An object that server-side apply creates, then changes.
    def apply(manager, data, **kwargs):
        return cms.server_side_apply(
            body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn-applied"},
                  "data": data},
            namespace=ns, field_manager=manager, **kwargs)

    assert apply("py-apply", {"a": "1", "b": "2"}).data.to_dict() == {"a": "1", "b": "2"}
    applied = apply("py-apply", {"a": "2"})
    assert applied.data.to_dict() == {"a": "2"}, "a field the manager stopped applying is removed"
    managers = [(m.manager, m.operation) for m in applied.metadata.managedFields]
    assert managers == [("py-apply", "Apply")]

    # Another manager setting the same field differently conflicts, and changes nothing.
    with pytest.raises(ConflictError) as conflict:
        apply("someone-else", {"a": "3"})
    assert message(conflict.value) == 'Apply failed with 1 conflict: conflict with "py-apply": .data.a'
    assert cms.get(name="dyn-applied", namespace=ns).data.a == "2"
    assert apply("someone-else", {"a": "3"}, force_conflicts=True).data.a == "3"

    # An Update manager's fields conflict too: `cms.create` above wrote dyn's data.
    with pytest.raises(ConflictError):
        cms.server_side_apply(
            body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"},
                  "data": {"a": "9"}},
            namespace=ns, field_manager="py-apply")

    widgets = dyn.resources.get(api_version=f"{GROUP}/{VERSION}", kind="Widget")
    widget = widgets.server_side_apply(
        body={"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "metadata": {"name": "dw"},
              "spec": {"size": 2}},
        namespace=ns, field_manager="py-apply")
    assert widget.spec.size == 2
    assert widgets.get(name="dw", namespace=ns).spec.size == 2
    widgets.delete(name="dw", namespace=ns)

    cms.delete(name="dyn", namespace=ns)
    with pytest.raises(NotFoundError):
        cms.get(name="dyn", namespace=ns)


@pytest.fixture
def untouched(api, ns):
    """A stored ConfigMap `keep`; after the test, the namespace's ConfigMaps must be as before."""
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="keep"), data={"k": "v"}),
        _request_timeout=TIMEOUT)

    def stored():
        return sorted((c.metadata.name, c.metadata.resource_version, str(c.data))
                      for c in core.list_namespaced_config_map(ns, _request_timeout=TIMEOUT).items)

    before = stored()
    yield
    assert stored() == before, "a rejected request changed what is stored"


def test_unknown_field_is_rejected_under_strict(api, ns, untouched):
    # The typed API refuses unknown fields itself; the dynamic client sends them.
    cms = DynamicClient(api).resources.get(api_version="v1", kind="ConfigMap")
    with pytest.raises(DynamicApiError) as unknown:
        cms.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typo"},
                         "datax": {"a": "1"}},
                   namespace=ns, query_params=[("fieldValidation", "Strict")])
    assert unknown.value.status == 400
    assert message(unknown.value) == 'strict decoding error: unknown field "datax"'


def test_wrong_type_in_a_custom_resource_is_rejected(api, ns, widget_crd, untouched):
    custom = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as wrong_type:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL,
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget", "metadata": {"name": "bad"},
             "spec": {"size": "big"}}, _request_timeout=TIMEOUT)
    assert wrong_type.value.status == 422
    assert message(wrong_type.value) == (
        'Widget.demo.example.com "bad" is invalid: spec.size: Invalid value: "string": '
        'spec.size in body must be of type integer: "string"')
    with pytest.raises(ApiException) as missing:
        custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "bad", _request_timeout=TIMEOUT)
    assert missing.value.status == 404


def test_invalid_name_is_rejected(api, ns, untouched):
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as bad_name:
        core.create_namespaced_config_map(
            ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Bad_Name")),
            _request_timeout=TIMEOUT)
    assert bad_name.value.status == 422
    assert message(bad_name.value).startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
        'a lowercase RFC 1123 subdomain must consist of')


def test_typed_deletes_of_pods_services_and_service_accounts(api, ns):
    # kube-apiserver answers these deletes with the object, and the typed client decodes it as
    # one: a Status there makes client 37 raise.
    core = client.CoreV1Api(api)
    pod = core.create_namespaced_pod(ns, client.V1Pod(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="web", image="nginx:1.27")])),
        _request_timeout=TIMEOUT)
    assert pod.status.phase == "Pending"
    assert pod.status.qos_class == "BestEffort"
    assert pod.spec.service_account_name == "default"
    svc = core.create_namespaced_service(ns, client.V1Service(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1ServiceSpec(selector={"app": "web"}, ports=[client.V1ServicePort(port=80)])),
        _request_timeout=TIMEOUT)
    assert svc.spec.cluster_ip and svc.spec.session_affinity == "None"
    assert svc.status.load_balancer is not None
    core.create_namespaced_service_account(
        ns, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="robot")), _request_timeout=TIMEOUT)

    deleted_pod = core.delete_namespaced_pod("web", ns, _request_timeout=TIMEOUT)
    assert isinstance(deleted_pod, client.V1Pod)
    assert (deleted_pod.kind, deleted_pod.metadata.name) == ("Pod", "web")
    deleted_svc = core.delete_namespaced_service("web", ns, _request_timeout=TIMEOUT)
    assert isinstance(deleted_svc, client.V1Service)
    assert deleted_svc.spec.cluster_ip == svc.spec.cluster_ip
    deleted_sa = core.delete_namespaced_service_account("robot", ns, _request_timeout=TIMEOUT)
    assert isinstance(deleted_sa, client.V1ServiceAccount)
    # A ConfigMap's delete answers a Status, as upstream (the client hands it over as a dict).
    core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="plain")), _request_timeout=TIMEOUT)
    status = core.delete_namespaced_config_map("plain", ns, _request_timeout=TIMEOUT)
    assert (status["kind"], status["status"]) == ("Status", "Success")


def test_jobs_and_every_namespace_has_its_service_account(api, ns):
    batch = client.BatchV1Api(api)
    job = batch.create_namespaced_job(ns, client.V1Job(
        metadata=client.V1ObjectMeta(name="migrate"),
        spec=client.V1JobSpec(template=client.V1PodTemplateSpec(spec=client.V1PodSpec(
            restart_policy="Never", containers=[client.V1Container(name="m", image="busybox")])))),
        _request_timeout=TIMEOUT)
    assert (job.spec.backoff_limit, job.spec.completions, job.spec.parallelism) == (6, 1, 1)
    assert job.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": job.metadata.uid}
    assert job.spec.template.metadata.labels["job-name"] == "migrate"
    listed = batch.list_namespaced_job(ns, _request_timeout=TIMEOUT)
    assert [j.metadata.name for j in listed.items] == ["migrate"]
    status = batch.delete_namespaced_job("migrate", ns, propagation_policy="Background",
                                         _request_timeout=TIMEOUT)
    assert (status["kind"], status["details"]["group"]) == ("Status", "batch")

    core = client.CoreV1Api(api)
    deadline = time.monotonic() + 20
    while True:
        accounts = [a.metadata.name for a in core.list_namespaced_service_account(
            ns, _request_timeout=TIMEOUT).items]
        maps = [c.metadata.name for c in core.list_namespaced_config_map(
            ns, _request_timeout=TIMEOUT).items]
        if "default" in accounts and "kube-root-ca.crt" in maps:
            break
        assert time.monotonic() < deadline, (accounts, maps)
        time.sleep(0.1)
    ca = core.read_namespaced_config_map("kube-root-ca.crt", ns, _request_timeout=TIMEOUT)
    assert ca.data["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")


def test_a_client_certificate_user_and_a_service_account_get_what_they_are_bound_to(api, ns):
    """A user made by `atoll user create` (client certificate) and a ServiceAccount token, each
    bound to `view` in one namespace: reads there work, the rest is 403 in kube-apiserver's
    words."""
    atoll = api.atoll
    carol_config = atoll["tmp"] / f"carol-{ns}.kubeconfig"
    subprocess.run(
        [atoll["binary"], "--kubeconfig", str(atoll["kubeconfig"]), "user", "create", "carol",
         "--group", "qa", "--ttl", "1h", "-o", str(carol_config)],
        check=True, timeout=60, capture_output=True)
    rbac = client.RbacAuthorizationV1Api(api)
    core = client.CoreV1Api(api)
    core.create_namespaced_service_account(
        ns, {"metadata": {"name": "reader"}}, _request_timeout=TIMEOUT)
    rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": "readers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "carol"},
            {"kind": "ServiceAccount", "name": "reader", "namespace": ns},
        ],
    }, _request_timeout=TIMEOUT)
    token = core.create_namespaced_service_account_token(
        "reader", ns, {"spec": {}}, _request_timeout=TIMEOUT).status.token

    carol = config.new_client_from_config(config_file=str(carol_config))
    by_token = client.Configuration()
    by_token.host = api.configuration.host
    by_token.ssl_ca_cert = api.configuration.ssl_ca_cert
    by_token.api_key = {"authorization": "Bearer " + token}
    reader = client.ApiClient(by_token)
    for who, api_client in [("carol", carol), (f"system:serviceaccount:{ns}:reader", reader)]:
        as_user = client.CoreV1Api(api_client)
        names = [c.metadata.name for c in as_user.list_namespaced_config_map(
            ns, _request_timeout=TIMEOUT).items]
        assert "kube-root-ca.crt" in names
        with pytest.raises(ApiException) as refused:
            as_user.list_namespaced_secret(ns, _request_timeout=TIMEOUT)
        assert refused.value.status == 403
        assert json.loads(refused.value.body)["message"] == (
            f'secrets is forbidden: User "{who}" cannot list resource "secrets" in API group "" '
            f'in the namespace "{ns}"')
        with pytest.raises(ApiException) as refused:
            as_user.create_namespaced_config_map(
                ns, {"metadata": {"name": "nope"}}, _request_timeout=TIMEOUT)
        assert refused.value.status == 403
        api_client.close()

