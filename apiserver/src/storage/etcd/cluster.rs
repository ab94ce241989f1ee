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
    binary: PathBuf,
    args: Vec<std::ffi::OsString>,
    /// How many times it was started: its log says it serves once per start.
    starts: usize,
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
        tokio::task::spawn_blocking(move || Self::start_blocking(size, None))
            .await
            .expect("start etcd")
    }

    /// Starts a cluster whose members serve clients over TLS with `tls`'s certificate and
    /// accept only clients with a certificate its CA signed.
    pub(crate) async fn start_tls(size: usize, tls: &TlsFiles) -> EtcdCluster {
        let tls = tls.clone();
        tokio::task::spawn_blocking(move || Self::start_blocking(size, Some(tls)))
            .await
            .expect("start etcd")
    }

    fn start_blocking(size: usize, tls: Option<TlsFiles>) -> EtcdCluster {
        let scheme = if tls.is_some() { "https" } else { "http" };
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
            let client_url = format!("{scheme}://{}", addrs[2 * i]);
            let mut args: Vec<std::ffi::OsString> = Vec::new();
            if let Some(tls) = &tls {
                args.extend([
                    "--cert-file".into(),
                    tls.server_cert.clone().into(),
                    "--key-file".into(),
                    tls.server_key.clone().into(),
                    "--trusted-ca-file".into(),
                    tls.ca.clone().into(),
                    "--client-cert-auth".into(),
                ]);
            }
            let data = dir.path().join(format!("m{i}"));
            args.extend(["--data-dir".into(), data.into_os_string()]);
            for arg in [
                "--name",
                &format!("m{i}"),
                "--listen-client-urls",
                &client_url,
                "--advertise-client-urls",
                &client_url,
                "--listen-peer-urls",
                &peer(i),
                "--initial-advertise-peer-urls",
                &peer(i),
                "--initial-cluster",
                &initial,
                "--initial-cluster-state",
                "new",
                "--initial-cluster-token",
                "atoll-test",
                "--heartbeat-interval",
                "100",
                "--election-timeout",
                "1000",
                // Often, so that tests see watches' progress notifications.
                "--experimental-watch-progress-notify-interval",
                "500ms",
                "--logger",
                "zap",
                "--log-outputs",
                "stderr",
            ] {
                args.push(arg.into());
            }
            let mut member = Member {
                binary: binary.clone(),
                args,
                child: None,
                watchdog: None,
                client_url,
                log: dir.path().join(format!("m{i}.log")),
                starts: 0,
            };
            member.spawn();
            members.push(member);
        }
        let mut cluster = EtcdCluster { members, _dir: dir };
        wait_serving(&mut cluster.members);
        cluster
    }

    /// Starts member `index` again (after [`EtcdCluster::kill`]) on its data directory, and
    /// waits until it serves.
    pub(crate) async fn restart(&mut self, index: usize) {
        self.members[index].spawn();
        let mut members = std::mem::take(&mut self.members);
        self.members = tokio::task::spawn_blocking(move || {
            wait_serving(&mut members);
            members
        })
        .await
        .expect("restart etcd");
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

/// A CA, a serving certificate for 127.0.0.1 and a client certificate, as PEM files.
#[derive(Clone)]
pub(crate) struct TlsFiles {
    pub(crate) ca: PathBuf,
    pub(crate) server_cert: PathBuf,
    pub(crate) server_key: PathBuf,
    pub(crate) client_cert: PathBuf,
    pub(crate) client_key: PathBuf,
}

impl TlsFiles {
    /// Makes a fresh CA and certificates in `dir`.
    pub(crate) fn generate(dir: &std::path::Path) -> TlsFiles {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair, SanType,
        };
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.distinguished_name
            .push(DnType::CommonName, "etcd test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, &ca_key);
        let leaf = |name: &str, usage: ExtendedKeyUsagePurpose| {
            let key = KeyPair::generate().expect("key");
            let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
            params.distinguished_name.push(DnType::CommonName, name);
            params
                .subject_alt_names
                .push(SanType::IpAddress([127, 0, 0, 1].into()));
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &issuer).expect("certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf("127.0.0.1", ExtendedKeyUsagePurpose::ServerAuth);
        let (client_cert, client_key) = leaf("atoll", ExtendedKeyUsagePurpose::ClientAuth);
        let write = |name: &str, pem: &str| {
            let path = dir.join(name);
            std::fs::write(&path, pem).expect("write a PEM file");
            path
        };
        TlsFiles {
            ca: write("ca.crt", &ca_cert.pem()),
            server_cert: write("server.crt", &server_cert),
            server_key: write("server.key", &server_key),
            client_cert: write("client.crt", &client_cert),
            client_key: write("client.key", &client_key),
        }
    }
}

/// Waits until every member says it serves clients (once more than before its last start).
fn wait_serving(members: &mut [Member]) {
    let give_up = Instant::now() + START;
    for member in members {
        loop {
            let log = std::fs::read_to_string(&member.log).unwrap_or_default();
            if let Some(child) = member.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("etcd exited with {status}:\n{log}");
            }
            // etcd 3.4 says this once its client listener is up.
            if log.matches("serving client traffic").count() >= member.starts {
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

impl Member {
    /// Starts the member, with a watchdog that kills it if this process dies first.
    fn spawn(&mut self) {
        let mut command = Command::new(&self.binary);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("ETCD_") {
                command.env_remove(key);
            }
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log file");
        let child = command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start etcd");
        let watchdog = Command::new("sh")
            .args(["-c", &format!("read _ignored; kill -9 {}", child.id())])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the etcd watchdog");
        self.child = Some(child);
        self.watchdog = Some(watchdog);
        self.starts += 1;
    }
}
