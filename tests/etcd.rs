//! The real `atoll apiserver` on a real 3-member etcd cluster (`--storage etcd`): every
//! acknowledged write survives `kill -9` of the API server; kubectl creates, gets and watches
//! through it; two API servers on one prefix serve one cluster (a write through one shows in a
//! watch on the other), and go on doing so when an etcd member is killed; an API server on
//! another prefix of the same etcd sees none of it.

use std::path::Path;
use std::time::{Duration, Instant};

use atoll_tests::crash_writers::{CrashWriters, assert_kept};
use atoll_tests::etcd_cluster::EtcdCluster;
use atoll_tests::{Process, Tool, atoll_binary, client_binary, client_from, free_addr, kubectl_at};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use serde_json::json;

const WRITERS: usize = 8;
/// How long a change may take to show through the other API server.
const SEEN: Duration = Duration::from_secs(20);

/// `atoll apiserver --storage etcd` with its own data directory (CA, tokens, kubeconfig).
fn apiserver(data: &Path, etcd: &EtcdCluster, prefix: &str) -> Process {
    let endpoints = etcd.endpoints();
    Process::start_with(
        &atoll_binary().unwrap(),
        "apiserver",
        data,
        free_addr().unwrap(),
        &[
            "--storage",
            "etcd",
            "--etcd-endpoints",
            &endpoints,
            "--etcd-prefix",
            prefix,
        ],
    )
    .unwrap()
}

/// `kubectl get configmaps --watch -o name` against `kubeconfig`.
fn kubectl_watch(kubeconfig: &Path, home: &Path) -> atoll_tests::Running {
    Tool::new(client_binary("kubectl").unwrap())
        .env("HOME", home)
        .spawn(&[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "get",
            "configmaps",
            "--watch",
            "-o",
            "name",
        ])
}

#[tokio::test]
async fn acknowledged_writes_survive_kill_9_on_etcd() {
    tokio::time::timeout(Duration::from_secs(180), async {
        let dir = tempfile::tempdir().unwrap();
        let etcd = EtcdCluster::start(&dir.path().join("etcd"), 3).unwrap();
        let data = dir.path().join("member");
        let mut process = apiserver(&data, &etcd, "/atoll/crash");
        let kubeconfig = process.kubeconfig();
        let client = client_from(&kubeconfig).await.unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

        let writers = CrashWriters::start(&cms, WRITERS);
        // Let the writers run, then kill the server under load.
        writers.run_until(500, Duration::from_secs(30)).await;
        process.kill9().unwrap();
        let acknowledged = writers.stopped().await;

        // Same data directory and etcd; the kubeconfig written by the first start.
        let _restarted = apiserver(&data, &etcd, "/atoll/crash");
        let client = client_from(&kubeconfig).await.unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        assert_kept(&cms, &acknowledged).await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn two_apiservers_on_one_prefix_serve_one_cluster_through_an_etcd_member_loss() {
    tokio::time::timeout(Duration::from_secs(240), async {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut etcd = EtcdCluster::start(&dir.path().join("etcd"), 3).unwrap();
        let one = apiserver(&dir.path().join("one"), &etcd, "/atoll/hub");
        let two = apiserver(&dir.path().join("two"), &etcd, "/atoll/hub");
        let other = apiserver(&dir.path().join("other"), &etcd, "/atoll/hub2");
        let (one_kc, two_kc, other_kc) = (one.kubeconfig(), two.kubeconfig(), other.kubeconfig());

        // kubectl create and get through one server.
        kubectl_at(
            &one_kc,
            &["create", "configmap", "first", "--from-literal=k=1"],
        )
        .success();
        kubectl_at(&one_kc, &["get", "configmap", "first", "-o", "name"])
            .success()
            .stdout_is("configmap/first\n");

        // The other server sees it, and its watch sees the next write through the first.
        kubectl_at(
            &two_kc,
            &["get", "configmap", "first", "-o", "jsonpath={.data.k}"],
        )
        .success()
        .stdout_is("1\n");
        let mut watch = kubectl_watch(&two_kc, &home);
        watch.expect_line(SEEN, |line| line == "configmap/first");
        kubectl_at(
            &one_kc,
            &["create", "configmap", "second", "--from-literal=k=2"],
        )
        .success();
        watch.expect_line(SEEN, |line| line == "configmap/second");
        // And the other way round, an update.
        kubectl_at(&two_kc, &["label", "configmap", "first", "through=two"]).success();
        kubectl_at(
            &one_kc,
            &[
                "get",
                "configmap",
                "first",
                "-o",
                "jsonpath={.metadata.labels.through}",
            ],
        )
        .success()
        .stdout_is("two\n");

        // One etcd member down: both servers go on, writes still reach the other's watch.
        etcd.kill(0);
        let deadline = Instant::now() + SEEN;
        loop {
            let ran = kubectl_at(
                &one_kc,
                &["create", "configmap", "after-kill", "--from-literal=k=3"],
            );
            if ran.status.is_some_and(|s| s.success()) || ran.stderr.contains("AlreadyExists") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no write after an etcd member died: {ran}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        watch.expect_line(SEEN, |line| line == "configmap/after-kill");
        kubectl_at(&two_kc, &["delete", "configmap", "second"]).success();
        kubectl_at(&one_kc, &["get", "configmaps", "-o", "name"])
            .success()
            .stdout_has("configmap/after-kill")
            .stdout_has("configmap/first");
        let names = kubectl_at(&one_kc, &["get", "configmaps", "-o", "name"]).success();
        assert!(!names.stdout.contains("configmap/second"), "{names}");
        watch.kill();

        // The server on another prefix of the same etcd holds none of it.
        let names = kubectl_at(&other_kc, &["get", "configmaps", "-o", "name"]).success();
        assert!(!names.stdout.contains("configmap/first"), "{names}");
        kubectl_at(
            &other_kc,
            &["create", "configmap", "first", "--from-literal=k=other"],
        )
        .success();
        kubectl_at(
            &one_kc,
            &["get", "configmap", "first", "-o", "jsonpath={.data.k}"],
        )
        .success()
        .stdout_is("1\n");
    })
    .await
    .unwrap();
}

#[test]
fn bad_etcd_flags_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let run = |flags: &[&str]| {
        let mut args = vec![
            "apiserver",
            "--data-dir",
            data.to_str().unwrap(),
            "--api-addr",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(flags);
        Tool::new(atoll_binary().unwrap()).run(&args)
    };
    run(&["--storage", "etcd", "--etcd-endpoints", "127.0.0.1:2379"])
        .failure()
        .stderr_has("--etcd-endpoints")
        .stderr_has("127.0.0.1:2379");
    run(&["--storage", "etcd"])
        .failure()
        .stderr_has("--etcd-endpoints");
    run(&[
        "--storage",
        "etcd",
        "--etcd-endpoints",
        "http://127.0.0.1:2379",
        "--etcd-prefix",
        "atoll/",
    ])
    .failure()
    .stderr_has("--etcd-prefix");
    run(&["--etcd-endpoints", "http://127.0.0.1:2379"])
        .failure()
        .stderr_has("only with --storage etcd");
    run(&[
        "--storage",
        "etcd",
        "--etcd-endpoints",
        "https://127.0.0.1:2379",
    ])
    .failure()
    .stderr_has("--etcd-cafile");

    // Nothing answers there: the server says so within the timeout, and does not hang.
    let port = free_addr().unwrap().port();
    let started = Instant::now();
    run(&[
        "--storage",
        "etcd",
        "--etcd-endpoints",
        &format!("http://127.0.0.1:{port}"),
        "--etcd-timeout",
        "2s",
    ])
    .failure()
    .stderr_has("cannot reach etcd at");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

/// `atoll up --storage etcd`: the embedded hub serves its API from etcd, and a restart on the
/// same prefix finds what the first start wrote.
#[tokio::test]
async fn up_serves_the_hub_from_etcd() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let dir = tempfile::tempdir().unwrap();
        let etcd = EtcdCluster::start(&dir.path().join("etcd"), 1).unwrap();
        let endpoints = etcd.endpoints();
        let data = dir.path().join("hub");
        let grpc = free_addr().unwrap().to_string();
        let flags = [
            "--grpc-addr",
            &grpc,
            "--storage",
            "etcd",
            "--etcd-endpoints",
            &endpoints,
            "--etcd-prefix",
            "/atoll/up",
        ];
        let mut hub = Process::hub_with(&data, free_addr().unwrap(), &flags).unwrap();
        let kubeconfig = data.join("hub.kubeconfig");
        kubectl_at(&kubeconfig, &["create", "namespace", "from-first-start"]).success();
        hub.terminate().unwrap();
        let _hub = Process::hub_with(&data, free_addr().unwrap(), &flags).unwrap();
        kubectl_at(
            &kubeconfig,
            &["get", "namespace", "from-first-start", "-o", "name"],
        )
        .success()
        .stdout_is("namespace/from-first-start\n");
    })
    .await
    .unwrap();
}

/// After etcd compacted history away (as any API server sharing it may do), a watch or a list
/// from a revision before it gets 410 Expired, as on SQLite.
#[tokio::test]
async fn a_watch_or_list_before_etcds_compaction_gets_410() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let dir = tempfile::tempdir().unwrap();
        let etcd = EtcdCluster::start(&dir.path().join("etcd"), 1).unwrap();
        let data = dir.path().join("server");
        let mut first = apiserver(&data, &etcd, "/atoll/compacted");
        let kubeconfig = first.kubeconfig();
        let cms: Api<ConfigMap> = Api::namespaced(client_from(&kubeconfig).await.unwrap(), "default");
        let keep: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "keep"}})).unwrap();
        let old = cms.create(&PostParams::default(), &keep).await.unwrap();
        let old = old.resource_version().unwrap();
        cms.patch(
            "keep",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
        first.terminate().unwrap();

        // Compact etcd itself at its current revision.
        let endpoints = etcd.endpoints();
        let mut client = etcd_client::Client::connect([endpoints.as_str()], None)
            .await
            .unwrap();
        let current = client
            .get("/", None)
            .await
            .unwrap()
            .header()
            .unwrap()
            .revision();
        client.compact(current, None).await.unwrap();

        // A new start's watch cache begins after the compaction: an old watch reads storage.
        let _second = apiserver(&data, &etcd, "/atoll/compacted");
        let client = client_from(&kubeconfig).await.unwrap();
        let watch = http::Request::get(format!(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={old}&timeoutSeconds=5"
        ))
        .body(Vec::new())
        .unwrap();
        let body = client.request_text(watch).await.unwrap();
        let event: serde_json::Value = serde_json::from_str(body.lines().next().unwrap()).unwrap();
        assert_eq!(event["type"], "ERROR", "{body}");
        assert_eq!(event["object"]["code"], 410, "{body}");
        assert_eq!(event["object"]["reason"], "Expired", "{body}");

        let list = http::Request::get(format!(
            "/api/v1/namespaces/default/configmaps?resourceVersion={old}&resourceVersionMatch=Exact"
        ))
        .body(Vec::new())
        .unwrap();
        match client.request_text(list).await {
            Err(kube::Error::Api(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            }
            other => panic!("expected 410 Expired, got {other:?}"),
        }
        // The current state is all there.
        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        let kept = cms.get("keep").await.unwrap();
        assert_eq!(kept.labels().get("a").map(String::as_str), Some("b"));
    })
    .await
    .unwrap();
}
