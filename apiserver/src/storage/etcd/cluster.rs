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
            let log = dir.path().join(format!("m{i}.log"));
            let mut command = Command::new(&binary);
            for (key, _) in std::env::vars_os() {
                if key.to_string_lossy().starts_with("ETCD_") {
                    command.env_remove(key);
                }
            }
            if let Some(tls) = &tls {
                command
                    .arg("--cert-file")
                    .arg(&tls.server_cert)
                    .arg("--key-file")
                    .arg(&tls.server_key)
                    .arg("--trusted-ca-file")
                    .arg(&tls.ca)
                    .arg("--client-cert-auth");
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
