//! Backups and restores of whole servers: what a restored cluster holds and whom it lets in,
//! how a server waiting for a restore answers, and the consistency of a backup taken while
//! writes continue.

use http::{Method, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;

use super::{TestServer, answer, config_map, https_status, send, within};
use crate::storage::{KeyValue, ListOptions};
use crate::{Server, StorageKind, backup};

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A server holding a few objects of several kinds, one of them updated after its creation, and
/// a service-account token issued by it.
async fn populated(storage: StorageKind) -> (TestServer, String) {
    let server = TestServer::start(storage, |config| config.cluster_name = "c1".into()).await;
    server.create_config_maps("apps", &[]).await;
    server
        .create_config_maps("default", &["one", "two", "three"])
        .await;
    let updated = server
        .send(
            Method::PATCH,
            &format!("{CONFIG_MAPS}/two"),
            Some(json!({"data": {"changed": "yes"}})),
        )
        .await;
    assert_eq!(updated.status, StatusCode::OK);
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    });
    let created = server
        .send(
            Method::POST,
            "/apis/apps/v1/namespaces/apps/deployments",
            Some(deployment),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let account =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}});
    let created = server
        .send(
            Method::POST,
            "/api/v1/namespaces/default/serviceaccounts",
            Some(account),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let issued = server
        .send(
            Method::POST,
            "/api/v1/namespaces/default/serviceaccounts/builder/token",
            Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})),
        )
        .await;
    assert_eq!(issued.status, StatusCode::CREATED, "{}", issued.text());
    let token = issued.json()["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // What the server's controllers add to the new namespace (its ServiceAccount and CA) is
    // part of the state the backup must carry: wait for it, so that the state compared is the
    // state backed up (under load the controller can still be writing it).
    for path in [
        "/api/v1/namespaces/apps/serviceaccounts/default",
        "/api/v1/namespaces/apps/configmaps/kube-root-ca.crt",
    ] {
        let mut present = false;
        for _ in 0..200 {
            if server.send(Method::GET, path, None).await.status == StatusCode::OK {
                present = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        assert!(present, "{path} was never made");
    }
    (server, token)
}

/// Every object the admin can list, as the server answers them (with their resourceVersions,
/// uids and timestamps).
async fn everything(router: &axum::Router, token: &str) -> Vec<Value> {
    let mut all = Vec::new();
    for path in [
        "/api/v1/namespaces",
        "/api/v1/configmaps",
        "/api/v1/serviceaccounts",
        "/apis/apps/v1/deployments",
    ] {
        let list = send(router, Method::GET, path, token, None).await;
        assert_eq!(list.status, StatusCode::OK, "{path}: {}", list.text());
        all.extend(list.json()["items"].as_array().unwrap().iter().cloned());
    }
    all
}

async fn backup_then_restore_gives_the_same_cluster(storage: StorageKind) {
    let (original, service_account_token) = populated(storage).await;
    let before = everything(&original.router(), &original.token()).await;
    let mut archive = Vec::new();
    let header = original.server.backup(&mut archive).await.unwrap();
    assert_eq!(header.cluster_name, "c1");
    assert_eq!(header.server, original.server.url());
    assert_eq!(
        header.revision,
        original.server.backend().current_revision()
    );
    assert_eq!(header.objects, original.server.backend().usage().objects);
    assert!(header.hosts.contains(&"127.0.0.1".to_owned()));
    assert_eq!(backup::verify(archive.as_slice()).unwrap(), header);

    // The HTTP download is the same backup (but for its time), for admins only.
    let download = send(
        &original.router(),
        Method::GET,
        "/atoll/v1/backup",
        &original.token(),
        None,
    )
    .await;
    assert_eq!(download.status, StatusCode::OK);
    assert_eq!(download.headers["content-type"], "application/octet-stream");
    let downloaded = backup::verify(download.body.as_ref()).unwrap();
    assert_eq!(
        (downloaded.revision, downloaded.objects),
        (header.revision, header.objects)
    );
    let refused = send(
        &original.router(),
        Method::GET,
        "/atoll/v1/backup",
        &service_account_token,
        None,
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(refused.json()["reason"], "Forbidden");

    // A new cluster waits for the backup.
    let dir = tempfile::tempdir().unwrap();
    backup::mark_restore_pending(dir.path()).unwrap();
    let config = super::config(dir.path(), storage, |config| {
        config.cluster_name = "c1".into()
    });
    let waiting = Server::start(config.clone()).await.unwrap();
    assert!(waiting.waits_for_restore());
    let restart = waiting.restart_requested();
    let fresh_token = waiting.admin_token().to_owned();
    let router = waiting.router();
    let ready = send(&router, Method::GET, "/readyz", "", None).await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(ready.text().contains("waits for a backup"));
    assert_eq!(
        send(&router, Method::GET, "/livez", "", None).await.status,
        StatusCode::OK
    );
    let elsewhere = send(
        &router,
        Method::GET,
        "/api/v1/namespaces",
        &fresh_token,
        None,
    )
    .await;
    assert_eq!(elsewhere.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(elsewhere.json()["reason"], "ServiceUnavailable");
    assert_eq!(
        elsewhere.json()["message"],
        "this cluster waits for a backup to be restored into it (atoll hosted create c1 --restore FILE)"
    );

    // A bad upload is refused with what is wrong, and the server keeps waiting.
    let truncated = upload(&router, &fresh_token, archive[..archive.len() / 2].to_vec()).await;
    assert_eq!(truncated.status, StatusCode::BAD_REQUEST);
    assert_eq!(truncated.json()["reason"], "BadRequest");
    assert_eq!(truncated.json()["message"], "the backup is truncated");
    let foreign = upload(
        &router,
        &fresh_token,
        b"apiVersion: v1\nkind: Config\n".to_vec(),
    )
    .await;
    assert_eq!(foreign.json()["message"], "the file is not an atoll backup");
    assert!(!*restart.borrow());
    assert_eq!(
        send(&router, Method::GET, "/readyz", "", None).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    // Only admins restore.
    assert_eq!(
        upload(&router, &service_account_token, archive.clone())
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );

    let staged = upload(&router, &fresh_token, archive.clone()).await;
    assert_eq!(staged.status, StatusCode::OK, "{}", staged.text());
    assert_eq!(staged.json()["status"], "Success");
    assert!(*restart.borrow());
    waiting.shutdown().await;

    // Started again, it installs the backup and serves it.
    let restored = Server::start(config).await.unwrap();
    assert!(!restored.waits_for_restore());
    assert!(!dir.path().join(backup::restore::RESTORE_PENDING).exists());
    let router = restored.router();
    let old_token = original.token();
    assert_eq!(restored.admin_token(), old_token);
    assert_eq!(everything(&router, &old_token).await, before);
    assert_eq!(
        send(
            &router,
            Method::GET,
            "/api/v1/namespaces",
            &fresh_token,
            None
        )
        .await
        .status,
        StatusCode::UNAUTHORIZED,
        "the waiting server's own token is gone"
    );
    // Discovery is open to every authenticated caller: the token authenticates.
    let as_account = send(&router, Method::GET, "/api", &service_account_token, None).await;
    assert_eq!(
        as_account.status,
        StatusCode::OK,
        "old service-account tokens work"
    );
    // An old kubeconfig's CA verifies the restored server's certificate, and its token works.
    assert_eq!(
        https_status(
            &restored.url(),
            original.server.ca_pem(),
            &old_token,
            "/api/v1/namespaces/default"
        )
        .await,
        200
    );
    let kubeconfig = std::fs::read_to_string(restored.kubeconfig_path()).unwrap();
    assert!(kubeconfig.contains(&old_token));

    // Lists at the backup's revision work, and watches from it see what follows.
    let exact = send(
        &router,
        Method::GET,
        &format!(
            "{CONFIG_MAPS}?resourceVersion={}&resourceVersionMatch=Exact",
            header.revision
        ),
        &old_token,
        None,
    )
    .await;
    assert_eq!(exact.status, StatusCode::OK, "{}", exact.text());
    let watch = http::Request::builder()
        .uri(format!(
            "{CONFIG_MAPS}?watch=true&resourceVersion={}",
            header.revision
        ))
        .header(http::header::AUTHORIZATION, format!("Bearer {old_token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let mut events = tower::ServiceExt::oneshot(router.clone(), watch)
        .await
        .unwrap()
        .into_body();
    let created = send(
        &router,
        Method::POST,
        CONFIG_MAPS,
        &old_token,
        Some(config_map("after", json!({}))),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let frame = events.frame().await.unwrap().unwrap().into_data().unwrap();
    let event: Value = serde_json::from_slice(&frame).unwrap();
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "after");
    // Revisions continue after the backup's (the restored server may first have written its
    // own address into the `kubernetes` Service and its endpoints).
    let revision: i64 = event["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        revision > header.revision && revision <= header.revision + 4,
        "revisions continue after the backup's {}: {revision}",
        header.revision
    );
    restored.shutdown().await;
}

async fn upload(router: &axum::Router, token: &str, bytes: Vec<u8>) -> super::Answer {
    let request = http::Request::builder()
        .method(Method::PUT)
        .uri("/atoll/v1/restore")
        .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
        .header(http::header::CONTENT_TYPE, "application/octet-stream")
        .body(axum::body::Body::from(bytes))
        .unwrap();
    answer(router, request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_cluster_restores_whole() {
    within(backup_then_restore_gives_the_same_cluster(
        StorageKind::Sqlite,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_cluster_restores_whole() {
    within(backup_then_restore_gives_the_same_cluster(
        StorageKind::Memory,
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_larger_than_allowed_is_refused() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        backup::mark_restore_pending(dir.path()).unwrap();
        let waiting = Server::start(super::config(dir.path(), StorageKind::Memory, |config| {
            config.max_restore_bytes = 1000;
        }))
        .await
        .unwrap();
        let answer = upload(&waiting.router(), waiting.admin_token(), vec![0; 1001]).await;
        assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(!*waiting.restart_requested().borrow());
        assert!(!dir.path().join("restore.staged").exists());
        waiting.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incomplete_staged_restore_is_discarded_and_the_server_keeps_waiting() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        backup::mark_restore_pending(dir.path()).unwrap();
        // What a crash in the middle of an upload leaves.
        std::fs::create_dir(dir.path().join("restore.staged")).unwrap();
        std::fs::write(dir.path().join("restore.staged/backup"), b"ATOLLBAK\0\0").unwrap();
        let waiting = Server::start(super::config(dir.path(), StorageKind::Sqlite, |_| {}))
            .await
            .unwrap();
        assert!(waiting.waits_for_restore());
        assert!(!dir.path().join("restore.staged").exists());
        assert!(!dir.path().join("state.db").exists());
        // A serving server refuses restores.
        let serving = TestServer::start(StorageKind::Memory, |_| {}).await;
        let refused = upload(&serving.router(), &serving.token(), Vec::new()).await;
        assert_eq!(refused.status, StatusCode::CONFLICT);
        waiting.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_during_writes_is_the_state_at_its_revision() {
    within(async {
        let server = TestServer::start(StorageKind::Sqlite, |_| {}).await;
        let backend = server.server.backend().clone();
        // Large enough that the backup cannot gather everything before it first writes out.
        let value =
            |i: usize| bytes::Bytes::from(format!("{{\"v\":{i},\"pad\":\"{}\"}}", "p".repeat(400)));
        for i in 0..600 {
            backend
                .create(
                    &format!("/registry/core/configmaps/default/c{i:04}"),
                    value(i),
                )
                .await
                .unwrap();
        }
        // The backup streams into a small pipe that the test drains slowly, writing between
        // reads: the store moves on while the backup is still reading its pages.
        let (mut writer, mut reader) = tokio::io::duplex(4096);
        let source = server.server.backup.clone();
        let backup = tokio::spawn(async move { source.write(&mut writer).await });
        let mut archive = Vec::new();
        let mut chunk = vec![0u8; 4096];
        let mut writes = 0;
        loop {
            let n = reader.read(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            archive.extend_from_slice(&chunk[..n]);
            let key = format!(
                "/registry/core/configmaps/default/c{:04}",
                599 - writes % 600
            );
            let current = backend.get(&key).await.unwrap().unwrap();
            backend
                .update(
                    &key,
                    bytes::Bytes::from(format!("{{\"v\":\"changed {writes}\"}}")),
                    current.mod_revision,
                )
                .await
                .unwrap();
            backend
                .create(
                    &format!("/registry/core/configmaps/default/new{writes:04}"),
                    bytes::Bytes::from("{}"),
                )
                .await
                .unwrap();
            writes += 1;
        }
        let header = backup.await.unwrap().unwrap();
        assert!(writes > 2, "the store changed while the backup was read");
        assert!(backend.current_revision() > header.revision);
        assert_eq!(backup::verify(archive.as_slice()).unwrap(), header);

        // Exactly the store at the header's revision: nothing later, nothing half-written.
        let mut records = Vec::new();
        let mut reader = backup::Reader::open(archive.as_slice()).unwrap();
        while let Some(kv) = reader.next_record().unwrap() {
            assert!(kv.mod_revision <= header.revision);
            serde_json::from_slice::<Value>(&kv.value).expect("whole objects");
            records.push(kv);
        }
        let at_revision: Vec<KeyValue> = backend
            .list(ListOptions {
                prefix: "",
                revision: Some(header.revision),
                ..ListOptions::default()
            })
            .await
            .unwrap()
            .items;
        assert_eq!(records, at_revision);
        assert_eq!(u64::try_from(records.len()).unwrap(), header.objects);
        let last = records
            .iter()
            .find(|kv| kv.key.ends_with("/c0599"))
            .unwrap();
        assert_eq!(
            last.value,
            value(599),
            "the update after the revision is not in it"
        );
    })
    .await;
}
