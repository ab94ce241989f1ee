//! Real etcd clusters for end-to-end tests: members on free loopback ports, each with a data
//! directory of its own, SIGKILLed when the cluster is dropped (and by a watchdog if the test
//! process dies first). They use the `etcd` on the PATH (Debian's `etcd-server`, which
//! `scripts/install-clients` installs).

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// How long a cluster may take to serve.
const START: Duration = Duration::from_secs(60);

/// A running etcd cluster.
pub struct EtcdCluster {
    members: Vec<Member>,
}

struct Member {
    child: Option<Child>,
    /// `sh` reading a pipe from this process, to SIGKILL the member when the pipe closes.
    watchdog: Option<Child>,
    client_url: String,
    log: PathBuf,
}

impl EtcdCluster {
    /// Starts `size` members with their data under `dir` and waits until each serves clients.
    pub fn start(dir: &Path, size: usize) -> anyhow::Result<Self> {
        let binary = which("etcd")
            .context("etcd is not installed: run scripts/install-clients (Debian's etcd-server)")?;
        std::fs::create_dir_all(dir)?;
        // All ports are held until every one is chosen, so that no two are the same.
        let listeners = (0..2 * size)
            .map(|_| TcpListener::bind("127.0.0.1:0"))
            .collect::<Result<Vec<_>, _>>()?;
        let addrs = listeners
            .iter()
            .map(TcpListener::local_addr)
            .collect::<Result<Vec<SocketAddr>, _>>()?;
        drop(listeners);
        let peer = |i: usize| format!("http://{}", addrs[2 * i + 1]);
        let initial = (0..size)
            .map(|i| format!("m{i}={}", peer(i)))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = EtcdCluster {
            members: Vec::with_capacity(size),
        };
        for i in 0..size {
            let client_url = format!("http://{}", addrs[2 * i]);
            let log = dir.join(format!("etcd-m{i}.log"));
            let mut command = Command::new(&binary);
            for (key, _) in std::env::vars_os() {
                if key.to_string_lossy().starts_with("ETCD_") {
                    command.env_remove(key);
                }
            }
            let child = command
                .args(["--name", &format!("m{i}")])
                .arg("--data-dir")
                .arg(dir.join(format!("etcd-m{i}")))
                .args(["--listen-client-urls", &client_url])
                .args(["--advertise-client-urls", &client_url])
                .args(["--listen-peer-urls", &peer(i)])
                .args(["--initial-advertise-peer-urls", &peer(i)])
                .args(["--initial-cluster", &initial])
                .args(["--initial-cluster-state", "new"])
                .args(["--initial-cluster-token", "atoll-test"])
                .args(["--logger", "zap", "--log-outputs", "stderr"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log)?)
                .spawn()
                .context("starting etcd")?;
            let watchdog = Command::new("sh")
                .args(["-c", &format!("read _ignored; kill -9 {}", child.id())])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("starting the etcd watchdog")?;
            cluster.members.push(Member {
                child: Some(child),
                watchdog: Some(watchdog),
                client_url,
                log,
            });
        }
        cluster.wait_serving()?;
        Ok(cluster)
    }

    fn wait_serving(&mut self) -> anyhow::Result<()> {
        let give_up = Instant::now() + START;
        for member in &mut self.members {
            loop {
                let log = std::fs::read_to_string(&member.log).unwrap_or_default();
                if let Some(child) = member.child.as_mut()
                    && let Some(status) = child.try_wait()?
                {
                    bail!("etcd exited with {status}:\n{log}");
                }
                // etcd 3.4 says this once its client listener is up.
                if log.contains("serving client traffic")
                    || log.contains("ready to serve client requests")
                {
                    break;
                }
                if Instant::now() > give_up {
                    bail!("etcd did not serve within {START:?}:\n{log}");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }

    /// The members' client URLs, separated by commas (for `--etcd-endpoints`).
    pub fn endpoints(&self) -> String {
        self.members
            .iter()
            .map(|m| m.client_url.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Kills member `index` with SIGKILL.
    pub fn kill(&mut self, index: usize) {
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

/// The executable `name` in a directory of the PATH.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
