//! Embedded mode: the cluster's API server runs inside the hub's process, on its own port, with
//! its own data directory, CA and admin credentials. Read-only tables (built-in schemas,
//! OpenAPI, discovery) are shared by every server in the process.

use atoll_api::hosted::StorageBackend;
use atoll_apiserver::{Config, Server, StorageKind};

use super::datastore::describe;
use super::plan::Component;
use super::runtime::{Credentials, Failure, KUBECONFIG_FILE, Outcome, Run};

/// Serves one control plane until it is stopped, fails, or must restart.
pub async fn serve(run: &mut Run<'_>) -> Outcome {
    let mut config = Config::new(&run.dir, run.listen(run.port().unwrap_or(0)));
    config.storage = match run.desired.storage {
        StorageBackend::Sqlite => StorageKind::Sqlite,
        StorageBackend::Memory => StorageKind::Memory,
        StorageBackend::Etcd => StorageKind::Etcd,
    };
    config.etcd = match run.etcd() {
        Ok(etcd) => etcd,
        Err(failure) => return Outcome::Failed(failure),
    };
    let datastore = config
        .etcd
        .as_ref()
        .map(|e| describe(&e.endpoints, &e.prefix));
    config.kubeconfig_name = KUBECONFIG_FILE.to_owned();
    config.cluster_name = run.key.name.clone();
    config.extra_hosts = run.hosts();
    config.limits = run.limits();
    let server = match Server::start(config).await {
        Ok(server) => server,
        Err(error) => return Outcome::Failed(failure(&error, datastore.as_deref())),
    };
    let port = server.addr().port();
    if let Err(failure) = run.remember_port(port) {
        server.shutdown().await;
        return Outcome::Failed(failure);
    }
    let credentials = Credentials {
        ca_pem: server.ca_pem().to_owned(),
        token: server.admin_token().to_owned(),
    };
    run.serving(port, credentials).await;
    let agent = run.start_agent();
    let mut restart = server.restart_requested();
    let outcome = tokio::select! {
        _ = run.stopped() => Outcome::Stopped,
        _ = restart.wait_for(|r| *r) => Outcome::Restart,
    };
    if let Some(agent) = agent {
        agent.stop().await;
    }
    server.shutdown().await;
    outcome
}

/// What a server that could not start tells the HostedCluster's conditions; a failure of an
/// etcd datastore names it (`etcd at <endpoints> under <prefix>`).
fn failure(error: &atoll_apiserver::Error, etcd: Option<&str>) -> Failure {
    use atoll_apiserver::Error as E;
    let message = match (error, etcd) {
        (E::Storage(_), Some(place)) => format!(
            "the datastore, {place}, cannot be opened: {}",
            atoll_apiserver::error::chain(error)
        ),
        _ => atoll_apiserver::error::chain(error),
    };
    match error {
        E::DataDir { .. } => Failure::new(Component::Datastore, "DataDirectoryFailed", message),
        E::DataDirInUse { .. } => Failure::new(Component::Datastore, "DataDirectoryInUse", message),
        E::Storage(_) => Failure::new(Component::Datastore, "DatastoreFailed", message),
        E::Listen { source, .. } if source.kind() == std::io::ErrorKind::AddrInUse => {
            Failure::new(Component::ApiServer, "PortInUse", message)
        }
        E::Listen { .. } => Failure::new(Component::ApiServer, "ListenFailed", message),
        _ => Failure::new(Component::ApiServer, "StartFailed", message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_errors_name_the_component_and_the_cause() {
        let in_use = atoll_apiserver::Error::Listen {
            addr: "127.0.0.1:7001".parse().unwrap(),
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        };
        let f = failure(&in_use, None);
        assert_eq!((f.component, f.reason), (Component::ApiServer, "PortInUse"));
        assert!(f.message.contains("127.0.0.1:7001"), "{}", f.message);
        let dir = atoll_apiserver::Error::DataDir {
            path: "/nowhere/c1".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        let f = failure(&dir, None);
        assert_eq!(
            (f.component, f.reason),
            (Component::Datastore, "DataDirectoryFailed")
        );
        assert!(
            f.message.contains("/nowhere/c1") && f.message.contains("permission denied"),
            "{}",
            f.message
        );
        let unreachable = atoll_apiserver::Error::Storage(
            atoll_apiserver::storage::Error::Backend("cannot reach etcd".into()),
        );
        let f = failure(
            &unreachable,
            Some("etcd at http://127.0.0.1:1 under /atoll-hosted/clusters/c1/u1"),
        );
        assert_eq!(
            (f.component, f.reason),
            (Component::Datastore, "DatastoreFailed")
        );
        assert!(
            f.message
                .contains("etcd at http://127.0.0.1:1 under /atoll-hosted/clusters/c1/u1")
                && f.message.contains("cannot reach etcd"),
            "{}",
            f.message
        );
    }
}
