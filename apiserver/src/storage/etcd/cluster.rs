//! Real etcd clusters for tests: members on free loopback ports, each with a data directory of
//! its own, killed (SIGKILL) when the cluster is dropped. They use the `etcd` on the PATH
//! (Debian's `etcd-server`, which `scripts/install-clients` installs).

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{EtcdBackend, EtcdOptions};

/// How long a cluster may take to serve.
const START: Duration = Duration::from_secs(60);

pub(crate) struct EtcdCluster {
    members: Vec<Member>,
    /// Holds the members' data directories and logs.
    _dir: tempfile::TempDir,
}

struct Member {
    child: Option<Child>,
    /// `sh` waiting on a pipe from this process to SIGKILL the member: when the test process
    /// dies without dropping the cluster, the pipe closes and no member outlives it.
    watchdog: Option<Child>,
    client_url: String,
    log: PathBuf,
}

impl EtcdCluster {
    /// Starts a cluster of `size` members and waits until each serves clients.
    pub(crate) async fn start(size: usize) -> EtcdCluster {
        tokio::task::spawn_blocking(move || Self::start_blocking(size))
            .await
            .expect("start etcd")
    }

    fn start_blocking(size: usize) -> EtcdCluster {
        let binary = which("etcd")
            .expect("etcd is not installed: run scripts/install-clients (Debian's etcd-server)");
        let dir = tempfile::tempdir().expect("tempdir");
        // All ports are held until every one is chosen, so that no two are the same.
        let listeners: Vec<TcpListener> = (0..2 * size)
            .map(|_| TcpListener::bind("127.0.0.1:0").expect("free port"))
            .collect();
        let addrs: Vec<SocketAddr> = listeners
            .iter()
            .map(|l| l.local_addr().expect("address"))
            .collect();
        drop(listeners);
        let peer = |i: usize| format!("http://{}", addrs[2 * i + 1]);
        let initial: Vec<String> = (0..size).map(|i| format!("m{i}={}", peer(i))).collect();
        let initial = initial.join(",");
        let mut members = Vec::with_capacity(size);
        for i in 0..size {
            let client_url = format!("http://{}", addrs[2 * i]);
            let log = dir.path().join(format!("m{i}.log"));
            let mut command = Command::new(&binary);
            for (key, _) in std::env::vars_os() {
                if key.to_string_lossy().starts_with("ETCD_") {
                    command.env_remove(key);
                }
            }
            let child = command
                .args(["--name", &format!("m{i}")])
                .arg("--data-dir")
                .arg(dir.path().join(format!("m{i}")))
                .args(["--listen-client-urls", &client_url])
                .args(["--advertise-client-urls", &client_url])
                .args(["--listen-peer-urls", &peer(i)])
                .args(["--initial-advertise-peer-urls", &peer(i)])
                .args(["--initial-cluster", &initial])
                .args(["--initial-cluster-state", "new"])
                .args(["--initial-cluster-token", "atoll-test"])
                .args(["--heartbeat-interval", "100", "--election-timeout", "1000"])
                .args(["--logger", "zap", "--log-outputs", "stderr"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).expect("log file"))
                .spawn()
                .expect("start etcd");
            let watchdog = Command::new("sh")
                .args(["-c", &format!("read _ignored; kill -9 {}", child.id())])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start the etcd watchdog");
            members.push(Member {
                child: Some(child),
                watchdog: Some(watchdog),
                client_url,
                log,
            });
        }
        let mut cluster = EtcdCluster { members, _dir: dir };
        cluster.wait_serving();
        cluster
    }

    fn wait_serving(&mut self) {
        let give_up = Instant::now() + START;
        for member in &mut self.members {
            loop {
                let log = std::fs::read_to_string(&member.log).unwrap_or_default();
                if let Some(child) = member.child.as_mut()
                    && let Ok(Some(status)) = child.try_wait()
                {
                    panic!("etcd exited with {status}:\n{log}");
                }
                // etcd 3.4 says this once its client listener is up.
                if log.contains("serving client traffic")
                    || log.contains("ready to serve client requests")
                {
                    break;
                }
                assert!(
                    Instant::now() < give_up,
                    "etcd did not serve within {START:?}:\n{log}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// The client URLs of the members.
    pub(crate) fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// A backend on every member, under `prefix`.
    pub(crate) async fn backend(&self, prefix: &str) -> EtcdBackend {
        EtcdBackend::connect(&EtcdOptions::new(self.endpoints(), prefix))
            .await
            .expect("connect to etcd")
    }

    /// Kills member `index` with SIGKILL.
    pub(crate) fn kill(&mut self, index: usize) {
        let member = &mut self.members[index];
        if let Some(mut watchdog) = member.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        if let Some(mut child) = member.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for index in 0..self.members.len() {
            self.kill(index);
        }
    }
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
