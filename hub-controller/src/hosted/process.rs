//! Process mode: the cluster's API server is a child `atoll apiserver` of the hub, for failure
//! isolation over density. The child stops when its standard input closes, so it never outlives
//! the hub, even one that is killed; the hub restarts a child that dies, with backoff, and tells
//! why from its exit status and the last lines it logged.

use std::collections::VecDeque;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncBufReadExt as _;
use tokio::process::{Child, Command};

use atoll_apiserver::storage::etcd::EtcdOptions;

use super::datastore::describe;
use super::plan::Component;
use super::runtime::{Failure, KUBECONFIG_FILE, Outcome, Run, credentials, member_client};

/// `atoll apiserver`'s exit status when its data directory or datastore cannot be opened.
pub const EXIT_DATASTORE: i32 = 3;
/// `atoll apiserver`'s exit status when it cannot listen on its address.
pub const EXIT_LISTEN: i32 = 4;
/// `atoll apiserver`'s exit status after a restored backup was staged: start it again at once.
pub const EXIT_RESTART: i32 = 75;

/// How long a child may take to serve.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stopping child may take before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// How many of its last log lines the hub keeps of each child.
const TAIL_LINES: usize = 8;

/// Serves one control plane as a child process until it is stopped, dies, or must restart.
pub async fn serve(run: &mut Run<'_>) -> Outcome {
    let Some(binary) = run.shared.binary.clone() else {
        return Outcome::Failed(Failure::new(
            Component::ApiServer,
            "ModeUnavailable",
            "this hub cannot find the atoll binary to run Process-mode control planes",
        ));
    };
    let etcd = match run.etcd() {
        Ok(etcd) => etcd,
        Err(failure) => return Outcome::Failed(failure),
    };
    let place = etcd.as_ref().map(|e| describe(&e.endpoints, &e.prefix));
    let outcome = serve_child(run, &binary, etcd.as_ref()).await;
    match (outcome, place) {
        (Outcome::Failed(mut failure), Some(place))
            if failure.component == Component::Datastore =>
        {
            failure.message = format!("the datastore, {place}: {}", failure.message);
            Outcome::Failed(failure)
        }
        (outcome, _) => outcome,
    }
}

/// Runs the child until it is stopped, dies, or must restart.
async fn serve_child(
    run: &mut Run<'_>,
    binary: &std::path::Path,
    etcd: Option<&EtcdOptions>,
) -> Outcome {
    let chosen = run.port().map_or_else(|| free_port(run), Ok);
    let port = match chosen.and_then(|port| run.remember_port(port).map(|()| port)) {
        Ok(port) => port,
        Err(failure) => return Outcome::Failed(failure),
    };
    let mut child = match command(run, binary, port, etcd).spawn() {
        Ok(child) => child,
        Err(e) => {
            return Outcome::Failed(Failure::new(
                Component::ApiServer,
                "StartFailed",
                format!("cannot run {} apiserver: {e}", binary.display()),
            ));
        }
    };
    tracing::info!(pid = child.id(), port, "started atoll apiserver");
    // Held until the child must stop: closing it is what stops the child.
    let stdin = child.stdin.take();
    let mut tail = Tail::follow(&mut child);

    if let Err(outcome) = until_serving(run, &mut child, &mut tail).await {
        if matches!(outcome, Outcome::Stopped) {
            stop(child, stdin).await;
        }
        return outcome;
    }
    let credentials = match credentials(&run.dir.join(KUBECONFIG_FILE)) {
        Ok(c) => c,
        Err(message) => {
            stop(child, stdin).await;
            return Outcome::Failed(Failure::new(Component::ApiServer, "StartFailed", message));
        }
    };
    run.serving(port, credentials).await;
    let agent = run.start_agent();
    let status = tokio::select! {
        status = child.wait() => Some(status),
        _ = run.stopped() => None,
    };
    if let Some(agent) = agent {
        agent.stop().await;
    }
    match status {
        Some(status) => exited(status, &mut tail, false).await,
        None => {
            stop(child, stdin).await;
            Outcome::Stopped
        }
    }
}

/// `atoll apiserver` for the control plane of `run`, on `port`, with its limits and, for a
/// cluster on etcd, its etcd; standard input piped (its end stops the child), standard error
/// kept for the conditions.
fn command(
    run: &Run<'_>,
    binary: &std::path::Path,
    port: u16,
    etcd: Option<&EtcdOptions>,
) -> Command {
    let mut command = Command::new(binary);
    command
        .arg("apiserver")
        .arg("--data-dir")
        .arg(&run.dir)
        .arg("--api-addr")
        .arg(run.listen(port).to_string())
        .arg("--storage")
        .arg(run.desired.storage.as_str())
        .arg("--exit-on-stdin-close")
        .arg("--log-format")
        .arg("plain");
    if let Some(etcd) = etcd {
        command
            .arg("--etcd-endpoints")
            .arg(etcd.endpoints.join(","))
            .arg("--etcd-prefix")
            .arg(&etcd.prefix)
            .arg("--etcd-timeout")
            .arg(format!("{}s", etcd.timeout.as_secs().max(1)));
        for (flag, file) in [
            ("--etcd-cafile", &etcd.ca_file),
            ("--etcd-certfile", &etcd.cert_file),
            ("--etcd-keyfile", &etcd.key_file),
        ] {
            if let Some(file) = file {
                command.arg(flag).arg(file);
            }
        }
    }
    for host in run.hosts() {
        command.arg("--tls-san").arg(host);
    }
    let limits = &run.desired.limits;
    if let Some(n) = limits.objects {
        command.arg("--max-objects").arg(n.to_string());
    }
    if let Some(n) = limits.storage_bytes {
        command.arg("--max-storage-bytes").arg(n.to_string());
    }
    if let Some(n) = limits.requests_in_flight {
        command.arg("--max-requests-inflight").arg(n.to_string());
        command
            .arg("--max-mutating-requests-inflight")
            .arg(n.to_string());
    }
    command.arg("--limit-masters");
    if limits != &Default::default() {
        command.arg("--limits-source").arg(run.limits().source);
    }
    // What the hub's own environment says of API servers is not the child's to take.
    for variable in [
        "ATOLL_DATA_DIR",
        "ATOLL_API_ADDR",
        "ATOLL_STORAGE",
        "ATOLL_TLS_SANS",
        "ATOLL_MAX_OBJECTS",
        "ATOLL_MAX_STORAGE_BYTES",
        "ATOLL_MAX_REQUESTS_INFLIGHT",
        "ATOLL_KUBECONFIG",
        "ATOLL_ETCD_ENDPOINTS",
        "ATOLL_ETCD_PREFIX",
        "ATOLL_ETCD_CAFILE",
        "ATOLL_ETCD_CERTFILE",
        "ATOLL_ETCD_KEYFILE",
        "ATOLL_ETCD_TIMEOUT",
    ] {
        command.env_remove(variable);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Waits until a started child serves. `Err` ends the run: the child exited or did not serve in
/// time (it is killed), or the supervisor was asked to stop (`Outcome::Stopped`: the caller
/// stops the child).
async fn until_serving(run: &Run<'_>, child: &mut Child, tail: &mut Tail) -> Result<(), Outcome> {
    let started = Instant::now();
    loop {
        tokio::select! {
            status = child.wait() => return Err(exited(status, tail, true).await),
            _ = run.stopped() => return Err(Outcome::Stopped),
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
        if probe(run).await {
            return Ok(());
        }
        if started.elapsed() > START_TIMEOUT {
            let _ = child.kill().await;
            return Err(Outcome::Failed(Failure::new(
                Component::ApiServer,
                "StartTimedOut",
                format!(
                    "atoll apiserver did not serve within {}s: {}",
                    START_TIMEOUT.as_secs(),
                    tail.text()
                ),
            )));
        }
    }
}

/// Whether the child serves: `/readyz` answers (or `/livez`, while it waits for a restore).
async fn probe(run: &Run<'_>) -> bool {
    let Ok(client) = member_client(&run.dir.join(KUBECONFIG_FILE)).await else {
        return false;
    };
    let path = if run.awaiting_restore() {
        "/livez"
    } else {
        "/readyz"
    };
    let Ok(request) = http::Request::get(path).body(Vec::new()) else {
        return false;
    };
    client.request_text(request).await.is_ok()
}

/// Asks the child to stop by closing its standard input, and kills it if it takes too long.
async fn stop(mut child: Child, stdin: Option<tokio::process::ChildStdin>) {
    drop(stdin);
    if tokio::time::timeout(STOP_TIMEOUT, child.wait())
        .await
        .is_err()
    {
        tracing::warn!("atoll apiserver did not stop in time; killing it");
        let _ = child.kill().await;
    }
}

/// How a child's exit ends this run.
async fn exited(status: std::io::Result<ExitStatus>, tail: &mut Tail, starting: bool) -> Outcome {
    tail.finished().await;
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            return Outcome::Failed(Failure::new(
                Component::ApiServer,
                "ProcessExited",
                format!("cannot wait for atoll apiserver: {e}"),
            ));
        }
    };
    if status.code() == Some(EXIT_RESTART) {
        return Outcome::Restart;
    }
    let when = if starting { "while starting" } else { "" };
    let message =
        format!("atoll apiserver exited {when} ({status}): {}", tail.text()).replace("  ", " ");
    Outcome::Failed(match status.code() {
        Some(EXIT_DATASTORE) => Failure::new(Component::Datastore, "DatastoreFailed", message),
        Some(EXIT_LISTEN) if tail.text().contains("in use") => {
            Failure::new(Component::ApiServer, "PortInUse", message)
        }
        Some(EXIT_LISTEN) => Failure::new(Component::ApiServer, "ListenFailed", message),
        _ => Failure::new(Component::ApiServer, "ProcessExited", message),
    })
}

/// Picks a port no one listens on, for a child that has none yet.
fn free_port(run: &Run<'_>) -> Result<u16, Failure> {
    std::net::TcpListener::bind(run.listen(0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| {
            Failure::new(
                Component::ApiServer,
                "ListenFailed",
                format!("cannot find a free port on {}: {e}", run.shared.listen_ip),
            )
        })
}

/// The last lines a child wrote to its standard error, also passed on to the hub's log.
struct Tail {
    lines: Arc<Mutex<VecDeque<String>>>,
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl Tail {
    fn follow(child: &mut Child) -> Self {
        let lines: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let reader = child.stderr.take().map(|stderr| {
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut reader = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    tracing::debug!(target: "atoll_hub::hosted::child", "{line}");
                    let mut kept = lines.lock().unwrap_or_else(|e| e.into_inner());
                    if kept.len() == TAIL_LINES {
                        kept.pop_front();
                    }
                    kept.push_back(line);
                }
            })
        });
        Self { lines, reader }
    }

    /// Waits (briefly) until the child's last lines are read.
    async fn finished(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
        }
    }

    /// The last error line the child logged, else its last line.
    fn text(&self) -> String {
        let kept = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let last_error = kept
            .iter()
            .rev()
            .find(|l| l.contains("ERROR") || l.contains("Error:"));
        match last_error.or(kept.back()) {
            Some(line) => line.trim().to_owned(),
            None => "it wrote nothing".to_owned(),
        }
    }
}
