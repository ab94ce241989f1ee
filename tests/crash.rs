//! The real `atoll apiserver` binary: every acknowledged write survives `kill -9`, a second start
//! on the same data directory serves the same data (and the first kubeconfig still works), and
//! SIGTERM stops it cleanly.

use std::time::Duration;

use atoll_tests::crash_writers::{CrashWriters, assert_kept};
use atoll_tests::{Process, client_from, free_addr};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const WRITERS: usize = 16;

#[tokio::test]
async fn acknowledged_writes_survive_kill_9() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("member");
        let addr = free_addr().unwrap();
        let mut process = Process::apiserver(&data, addr).unwrap();
        let kubeconfig = process.kubeconfig();
        let client = client_from(&kubeconfig).await.unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

        let writers = CrashWriters::start(&cms, WRITERS);
        // Let the writers run, then kill the server under load.
        writers.run_until(2_000, Duration::from_secs(20)).await;
        process.kill9().unwrap();
        let acknowledged = writers.stopped().await;

        // Same data directory, same address, the kubeconfig written by the first start.
        let _restarted = Process::apiserver(&data, addr).unwrap();
        let client = client_from(&kubeconfig).await.unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        assert_kept(&cms, &acknowledged).await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn sigterm_stops_the_server_cleanly() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("member");
        let mut process = Process::apiserver_on_a_free_port(&data).unwrap();
        let client = client_from(&process.kubeconfig()).await.unwrap();
        client.apiserver_version().await.unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(process.kubeconfig())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "the admin kubeconfig is private");
        }
        let status = process.terminate().unwrap();
        assert!(status.success(), "exit status {status}");
        let log = std::fs::read_to_string(data.with_extension("log")).unwrap();
        assert!(log.contains("stopped"), "{log}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn up_writes_the_hub_kubeconfig_and_reuses_its_ca() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("hub");
        let addr = free_addr().unwrap();
        let kubeconfig = data.join("hub.kubeconfig");
        let ca_before;
        {
            let mut hub = Process::hub(&data, addr).unwrap();
            assert!(kubeconfig.exists(), "atoll up writes DIR/hub.kubeconfig");
            let log = std::fs::read_to_string(data.with_extension("log")).unwrap();
            assert_eq!(log.matches("is ready").count(), 1, "one ready line: {log}");
            let client = client_from(&kubeconfig).await.unwrap();
            let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
            let names: Vec<String> = namespaces
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .iter()
                .map(|n| n.name_any())
                .collect();
            for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
                assert!(
                    names.contains(&ns.to_string()),
                    "{ns} missing from {names:?}"
                );
            }
            ca_before = std::fs::read(data.join("ca.crt")).unwrap();
            assert!(hub.terminate().unwrap().success());
        }
        let _hub = Process::hub(&data, addr).unwrap();
        assert_eq!(
            std::fs::read(data.join("ca.crt")).unwrap(),
            ca_before,
            "the CA is reused"
        );
        let client = client_from(&kubeconfig).await.unwrap();
        client.apiserver_version().await.unwrap();
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_second_server_on_the_same_data_directory_is_refused() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("member");
        let _first = Process::apiserver_on_a_free_port(&data).unwrap();
        let second = Process::apiserver_on_a_free_port(&data);
        let err = second
            .err()
            .expect("the second start must fail")
            .to_string();
        assert!(err.contains("is in use by another atoll process"), "{err}");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_older_data_directory_is_migrated_and_a_newer_one_refused() {
    tokio::time::timeout(Duration::from_secs(60), async {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("member");
        let first = Process::apiserver_on_a_free_port(&data).unwrap();
        let configmaps: Api<ConfigMap> =
            Api::namespaced(client_from(&first.kubeconfig()).await.unwrap(), "default");
        let kept: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "kept"}, "data": {"a": "1"}}))
                .unwrap();
        configmaps
            .create(&PostParams::default(), &kept)
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(data.join("format")).unwrap(),
            "atoll-data-format 1\n"
        );
        drop(first);

        // A directory as atoll wrote it before formats were recorded: migrated at start, its
        // data served.
        std::fs::remove_file(data.join("format")).unwrap();
        let second = Process::apiserver_on_a_free_port(&data).unwrap();
        let configmaps: Api<ConfigMap> =
            Api::namespaced(client_from(&second.kubeconfig()).await.unwrap(), "default");
        assert_eq!(
            configmaps.get("kept").await.unwrap().data.unwrap()["a"],
            "1"
        );
        assert_eq!(
            std::fs::read_to_string(data.join("format")).unwrap(),
            "atoll-data-format 1\n"
        );
        let log = std::fs::read_to_string(data.with_extension("log")).unwrap();
        assert!(
            log.contains("migrating the data directory to the current format"),
            "{log}"
        );
        drop(second);

        // One a newer atoll wrote is refused, saying so, and left as it is.
        std::fs::write(data.join("format"), "atoll-data-format 2\n").unwrap();
        let error = Process::apiserver_on_a_free_port(&data)
            .err()
            .expect("a newer data directory was opened")
            .to_string();
        assert!(
            error.contains(
                "was written by a newer atoll (data format 2; this atoll reads formats up to 1)"
            ),
            "{error}"
        );
        assert_eq!(
            std::fs::read_to_string(data.join("format")).unwrap(),
            "atoll-data-format 2\n"
        );
    })
    .await
    .unwrap();
}

/// A hub's data directory written by the production issue's first commit (5c6a8e9, before
/// formats were recorded; `tests/testdata/data-dirs/README.md` says how it was made), opened by
/// this build: migrated at start, its objects served, and the admin kubeconfig written then
/// still accepted.
#[tokio::test]
async fn a_hub_data_directory_written_by_an_older_atoll_is_migrated_and_served() {
    tokio::time::timeout(Duration::from_secs(90), async {
        let dir = tempfile::tempdir().unwrap();
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/data-dirs/hub-5c6a8e9.tar.gz");
        let untar = std::process::Command::new("tar")
            .arg("-xzf")
            .arg(&fixture)
            .arg("-C")
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(untar.success(), "cannot unpack {}", fixture.display());
        let data = dir.path().join("hub");
        assert!(!data.join("format").exists());
        let old_kubeconfig = std::fs::read_to_string(data.join("hub.kubeconfig")).unwrap();

        let hub = Process::hub_with(&data, free_addr().unwrap(), &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(data.join("format")).unwrap(),
            "atoll-data-format 1\n"
        );
        let log = std::fs::read_to_string(data.with_extension("log")).unwrap();
        assert!(
            log.contains("migrating the data directory to the current format"),
            "{log}"
        );

        // The kubeconfig the old hub wrote, pointed at the new address: same CA, same token.
        let mut kubeconfig: serde_json::Value = serde_yaml_ng::from_str(&old_kubeconfig).unwrap();
        kubeconfig["clusters"][0]["cluster"]["server"] = json!(format!("https://{}", hub.addr));
        let old = dir.path().join("old.kubeconfig");
        std::fs::write(&old, serde_json::to_string(&kubeconfig).unwrap()).unwrap();
        let client = client_from(&old).await.unwrap();

        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        assert_eq!(
            configmaps.get("kept").await.unwrap().data.unwrap()["written-by"],
            "5c6a8e9"
        );
        let secrets: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(client.clone(), "old-team");
        let secret = secrets.get("old-secret").await.unwrap();
        assert_eq!(secret.data.unwrap()["password"].0, b"s3cret");
        let sets: Api<atoll_api::clusterset::ClusterSet> = Api::all(client.clone());
        assert!(sets.get("old-set").await.is_ok());
        // And it takes writes.
        let added: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "after-upgrade"}})).unwrap();
        configmaps
            .create(&PostParams::default(), &added)
            .await
            .unwrap();
    })
    .await
    .unwrap();
}
