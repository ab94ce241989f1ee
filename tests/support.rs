//! Shared helpers of atoll's end-to-end and compatibility tests: start an API server (in this
//! process or as the real `atoll` binary) on a free loopback port, and connect kube-rs to it over
//! HTTPS with the admin kubeconfig it wrote.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use atoll_apiserver::{Config, Server, StorageKind};
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// An in-process API server with its own data directory.
pub struct TestServer {
    pub server: Server,
    pub dir: tempfile::TempDir,
}

impl TestServer {
    /// Starts a server on `127.0.0.1:0` with the given backend.
    pub async fn start(storage: StorageKind) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let mut config = Config::new(dir.path(), "127.0.0.1:0".parse()?);
        config.storage = storage;
        let server = Server::start(config).await?;
        Ok(TestServer { server, dir })
    }

    /// A kube-rs client using the admin kubeconfig the server wrote.
    pub async fn client(&self) -> anyhow::Result<Client> {
        client_from(self.server.kubeconfig_path()).await
    }
}

/// A kube-rs client from a kubeconfig file.
pub async fn client_from(path: &Path) -> anyhow::Result<Client> {
    let kubeconfig = Kubeconfig::read_from(path)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// A free port on 127.0.0.1 (bound, then released).
pub fn free_addr() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}

/// The `atoll` binary built beside this test (the test command builds the binaries first).
pub fn atoll_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .context("test executable has no parent directory")?;
    let binary = dir.join(format!("atoll{}", std::env::consts::EXE_SUFFIX));
    if !binary.exists() {
        bail!(
            "{} is missing: build it first with `cargo build --bins`",
            binary.display()
        );
    }
    Ok(binary)
}

/// A running `atoll apiserver` process, killed when dropped.
pub struct Process {
    pub child: Child,
    pub addr: SocketAddr,
    pub data_dir: PathBuf,
}

impl Process {
    /// Starts `atoll apiserver --data-dir DIR --api-addr ADDR` and waits until it answers.
    pub fn apiserver(data_dir: &Path, addr: SocketAddr) -> anyhow::Result<Self> {
        let log = std::fs::File::create(data_dir.with_extension("log"))?;
        let child = Command::new(atoll_binary()?)
            .arg("apiserver")
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--api-addr")
            .arg(addr.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        let mut process = Process {
            child,
            addr,
            data_dir: data_dir.to_owned(),
        };
        process.wait_ready(Duration::from_secs(30))?;
        Ok(process)
    }

    fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                let log = std::fs::read_to_string(self.data_dir.with_extension("log"))
                    .unwrap_or_default();
                bail!("atoll apiserver exited with {status}:\n{log}");
            }
            let log =
                std::fs::read_to_string(self.data_dir.with_extension("log")).unwrap_or_default();
            if log.contains("is ready") {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("atoll apiserver did not become ready:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.data_dir.join("admin.kubeconfig")
    }

    /// Sends SIGKILL and waits for the process to go.
    pub fn kill9(&mut self) -> anyhow::Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }

    /// Sends SIGTERM and waits for a clean exit.
    pub fn terminate(&mut self) -> anyhow::Result<std::process::ExitStatus> {
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()?;
        if !status.success() {
            bail!("kill -TERM failed");
        }
        Ok(self.child.wait()?)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `check` is true or the timeout passes.
pub async fn eventually<F, Fut>(timeout: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
