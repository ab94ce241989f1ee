//! Shared helpers of atoll's end-to-end and compatibility tests: start an API server (in this
//! process or as the real `atoll` binary) on a free loopback port, and connect kube-rs to it over
//! HTTPS with the admin kubeconfig it wrote.

pub mod bench;
pub mod crash_writers;
pub mod etcd_cluster;
pub mod in_process;

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

/// The `atoll` binary built beside this test (the test command builds the binaries first), or
/// the one `ATOLL_BIN` names: a benchmark can measure another build (an older commit's) with
/// the same load.
pub fn atoll_binary() -> anyhow::Result<PathBuf> {
    match std::env::var_os("ATOLL_BIN") {
        Some(path) if !path.is_empty() => {
            let path = PathBuf::from(path);
            if !path.is_file() {
                bail!("ATOLL_BIN names {}, which is not a file", path.display());
            }
            Ok(path)
        }
        _ => binary("atoll"),
    }
}

/// The `hub-controller` binary (the hub for a Kubernetes cluster) built beside this test.
pub fn hub_controller_binary() -> anyhow::Result<PathBuf> {
    binary("hub-controller")
}

/// The `work-agent` binary built beside this test.
pub fn work_agent_binary() -> anyhow::Result<PathBuf> {
    binary("work-agent")
}

fn binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .context("test executable has no parent directory")?;
    let binary = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
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
    ready_lines_before: usize,
}

impl Process {
    /// Starts `atoll apiserver` on a free loopback port and waits until it answers. A port is
    /// free when chosen but another test may bind it before the server does (`Address already in
    /// use`): then another port is tried, up to five in all.
    pub fn apiserver_on_a_free_port(data_dir: &Path) -> anyhow::Result<Self> {
        let mut tries = 0;
        loop {
            tries += 1;
            match Self::apiserver(data_dir, free_addr()?) {
                Err(err) if tries < 5 && format!("{err:#}").contains("Address already in use") => {
                    eprintln!(
                        "the port chosen for {} was taken; another",
                        data_dir.display()
                    );
                }
                outcome => return outcome,
            }
        }
    }

    /// Starts `atoll apiserver --data-dir DIR --api-addr ADDR` and waits until it answers.
    pub fn apiserver(data_dir: &Path, addr: SocketAddr) -> anyhow::Result<Self> {
        Self::start("apiserver", data_dir, addr)
    }

    /// Starts `atoll up --data-dir DIR --api-addr ADDR` (the embedded hub) and waits until it
    /// answers.
    pub fn hub(data_dir: &Path, addr: SocketAddr) -> anyhow::Result<Self> {
        Self::start("up", data_dir, addr)
    }

    /// Starts `atoll up` with more flags (`--grpc-addr`, `--auto-accept`, lease settings) and
    /// waits until it answers. Unless the flags say otherwise, it makes no hosted clusters at its
    /// first start (`--hosted-clusters 0`), so that a test's fleet is only what it makes, and
    /// serves its health and metrics on a port of its own choosing (`--metrics-addr
    /// 127.0.0.1:0`), so that hubs started side by side do not contend for the default one.
    pub fn hub_with(data_dir: &Path, addr: SocketAddr, flags: &[&str]) -> anyhow::Result<Self> {
        let mut flags = flags.to_vec();
        if !flags.contains(&"--hosted-clusters") {
            flags.extend(["--hosted-clusters", "0"]);
        }
        if !flags.contains(&"--metrics-addr") {
            flags.extend(["--metrics-addr", "127.0.0.1:0"]);
        }
        Self::start_with(&atoll_binary()?, "up", data_dir, addr, &flags)
    }

    fn start(subcommand: &str, data_dir: &Path, addr: SocketAddr) -> anyhow::Result<Self> {
        if subcommand == "up" {
            return Self::hub_with(data_dir, addr, &[]);
        }
        Self::start_with(&atoll_binary()?, subcommand, data_dir, addr, &[])
    }

    /// Starts `BINARY SUBCOMMAND --data-dir DIR --api-addr ADDR FLAGS...` and waits until its log
    /// says it is ready; the log is `DIR.log`.
    pub fn start_with(
        binary: &Path,
        subcommand: &str,
        data_dir: &Path,
        addr: SocketAddr,
        flags: &[&str],
    ) -> anyhow::Result<Self> {
        let ready_lines_before = std::fs::read_to_string(data_dir.with_extension("log"))
            .unwrap_or_default()
            .matches("is ready")
            .count();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data_dir.with_extension("log"))?;
        let child = Command::new(binary)
            .arg(subcommand)
            .args(flags)
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
            ready_lines_before,
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
            // The log is appended to across restarts: only this start's lines count.
            if log.matches("is ready").count() > self.ready_lines_before {
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

/// `GET path` over plain HTTP (a health or metrics endpoint): the status code and the body, or
/// `None` when nothing answers within a few seconds.
pub fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let code = answer.get(9..12)?.parse().ok()?;
    let (_, body) = answer.split_once("\r\n\r\n")?;
    Some((code, body.to_owned()))
}

/// `kubectl` against the cluster of `kubeconfig`, with a HOME of its own (its discovery cache
/// stays out of the source tree).
pub fn kubectl_at(kubeconfig: &Path, args: &[&str]) -> Ran {
    let mut all = vec!["--kubeconfig", kubeconfig.to_str().unwrap_or_default()];
    all.extend_from_slice(args);
    let home = std::env::temp_dir().join("atoll-tests-kubectl-home");
    let kubectl = client_binary("kubectl").unwrap_or_else(|e| panic!("{e:#}"));
    Tool::new(kubectl).env("HOME", home).run(&all)
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

/// The real clients that `scripts/install-clients` puts in `$ATOLL_CLIENTS` (by default
/// `target/clients` of the workspace): `bin/kubectl`, `bin/helm` (helm 4), `bin/helm3` and the
/// Python virtualenv `venv/`.
pub fn clients_dir() -> PathBuf {
    match std::env::var_os("ATOLL_CLIENTS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/clients"),
    }
}

/// The path of an installed client binary, or an error that says how to install it.
pub fn client_binary(name: &str) -> anyhow::Result<PathBuf> {
    let path = clients_dir().join("bin").join(name);
    if !path.is_file() {
        bail!(
            "{} is missing: run scripts/install-clients (or set ATOLL_CLIENTS)",
            path.display()
        );
    }
    Ok(path)
}

/// A real `atoll apiserver` for one test, with a scratch directory for the files the test
/// writes and a fresh HOME, so that kubectl's discovery cache and helm's state start empty and are
/// not shared with other tests.
pub struct Cluster {
    pub process: Process,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Starts `atoll apiserver` on a free port with its own data directory.
    pub fn start() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("home"))?;
        std::fs::create_dir_all(dir.path().join("files"))?;
        std::fs::create_dir_all(dir.path().join("tmp"))?;
        let process = Process::apiserver_on_a_free_port(&dir.path().join("server"))?;
        Ok(Cluster { process, dir })
    }

    /// The TMPDIR the clients run with (kubectl edit and diff write files there).
    fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// The HOME the clients run with.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Writes `contents` to `files/NAME` in the scratch directory and returns its path.
    pub fn file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join("files").join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the test file's directory");
        }
        std::fs::write(&path, contents).expect("write the test file");
        path
    }

    /// kubectl 1.35, talking to this server.
    pub fn kubectl(&self) -> Tool {
        self.tool("kubectl")
    }

    /// helm 4, talking to this server.
    pub fn helm(&self) -> Tool {
        self.tool("helm")
    }

    /// helm 3, talking to this server.
    pub fn helm3(&self) -> Tool {
        self.tool("helm3")
    }

    fn tool(&self, name: &str) -> Tool {
        let binary = client_binary(name).unwrap_or_else(|e| panic!("{e:#}"));
        Tool {
            binary,
            envs: vec![
                ("HOME".into(), self.home().into()),
                ("KUBECONFIG".into(), self.process.kubeconfig().into()),
                ("TMPDIR".into(), self.tmp().into()),
                ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ],
            timeout: Duration::from_secs(60),
        }
    }
}

/// A client binary with the environment of one [`Cluster`]: nothing else of the caller's
/// environment reaches it (no KUBECONFIG, no XDG directories), so its caches live in the
/// cluster's HOME.
#[derive(Clone)]
pub struct Tool {
    binary: PathBuf,
    envs: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    timeout: Duration,
}

impl Tool {
    /// A tool at `binary`, run with an empty environment and a one-minute timeout.
    pub fn new(binary: PathBuf) -> Self {
        Tool {
            binary,
            envs: Vec::new(),
            timeout: Duration::from_secs(60),
        }
    }

    /// Adds an environment variable (e.g. `KUBE_EDITOR`).
    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Self {
        self.envs.push((key.into(), value.as_ref().to_owned()));
        self
    }

    /// Runs the tool to completion (killed after the timeout) and returns what it printed.
    pub fn run(&self, args: &[&str]) -> Ran {
        self.run_with_stdin(args, "")
    }

    /// Runs the tool with `stdin` as its standard input.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Ran {
        let mut child = self.spawn(args);
        if let Some(mut input) = child.child.stdin.take() {
            use std::io::Write as _;
            // A tool that exits without reading its input closes the pipe; that is not an error.
            let _ = input.write_all(stdin.as_bytes());
        }
        child.finish(self.timeout)
    }

    /// Starts the tool in the background (for `get -w`, `wait`); its output is read by threads.
    pub fn spawn(&self, args: &[&str]) -> Running {
        let mut command = Command::new(&self.binary);
        command
            .args(args)
            .env_clear()
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.binary.display()));
        let stdout = read_lines(child.stdout.take().expect("stdout is piped"));
        let stderr = read_lines(child.stderr.take().expect("stderr is piped"));
        let name = self
            .binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Running {
            command: format!("{name} {}", args.join(" ")),
            child,
            stdout,
            stderr,
        }
    }
}

/// Forwards each line a pipe yields into a channel, from a thread.
fn read_lines(pipe: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead as _;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A client process started by [`Tool::spawn`].
pub struct Running {
    pub command: String,
    child: Child,
    stdout: std::sync::mpsc::Receiver<String>,
    stderr: std::sync::mpsc::Receiver<String>,
}

impl Running {
    /// Waits up to `timeout` for a line of standard output that satisfies `matches`, and returns
    /// it; lines before it are skipped. Panics, with what was printed, if none comes in time.
    pub fn expect_line(&mut self, timeout: Duration, matches: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(line) if matches(&line) => return line,
                Ok(line) => seen.push(line),
                Err(_) => {
                    let _ = self.child.kill();
                    let stderr: Vec<String> = self.stderr.try_iter().collect();
                    panic!(
                        "`{}`: the expected line did not come within {timeout:?}\nstdout:\n{}\nstderr:\n{}",
                        self.command,
                        seen.join("\n"),
                        stderr.join("\n")
                    );
                }
            }
        }
    }

    /// Waits for the process to exit (killing it after `timeout`) and collects its output.
    pub fn finish(mut self, timeout: Duration) -> Ran {
        let deadline = Instant::now() + timeout;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        // The reader threads end when the pipes close, which the exit (or kill) brings about.
        let collect = |rx: &std::sync::mpsc::Receiver<String>| {
            let mut out = String::new();
            while let Ok(line) = rx.recv_timeout(Duration::from_secs(5)) {
                out.push_str(&line);
                out.push('\n');
            }
            out
        };
        Ran {
            stdout: collect(&self.stdout),
            stderr: collect(&self.stderr),
            command: self.command.clone(),
            status,
        }
    }

    /// Kills the process (used to end `get -w`).
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a client printed, and how it exited (`None`: killed at the timeout). Every line of the
/// output ends with a newline, even when the tool printed none after the last one.
#[derive(Debug)]
pub struct Ran {
    pub command: String,
    pub status: Option<std::process::ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Panics, showing the command and its output, unless it exited 0. Returns `self` for
    /// further assertions.
    #[track_caller]
    pub fn success(self) -> Self {
        if !self.status.is_some_and(|s| s.success()) {
            panic!("`{}` failed:\n{self}", self.command);
        }
        self
    }

    /// Panics unless the command exited non-zero (not killed); returns `self`.
    #[track_caller]
    pub fn failure(self) -> Self {
        if self.status.is_none_or(|s| s.success()) {
            panic!("`{}` should have failed:\n{self}", self.command);
        }
        self
    }

    /// Panics unless standard output, trimmed, is exactly `expected`.
    #[track_caller]
    pub fn stdout_is(self, expected: &str) -> Self {
        if self.stdout.trim() != expected.trim() {
            panic!("`{}`: expected stdout\n{expected}\n{self}", self.command);
        }
        self
    }

    /// Panics unless standard output contains `needle`.
    #[track_caller]
    pub fn stdout_has(self, needle: &str) -> Self {
        if !self.stdout.contains(needle) {
            panic!(
                "`{}`: expected stdout to contain {needle:?}\n{self}",
                self.command
            );
        }
        self
    }

    /// Panics unless standard error contains `needle`.
    #[track_caller]
    pub fn stderr_has(self, needle: &str) -> Self {
        if !self.stderr.contains(needle) {
            panic!(
                "`{}`: expected stderr to contain {needle:?}\n{self}",
                self.command
            );
        }
        self
    }

    /// Standard output split into lines of whitespace-separated columns (tables).
    pub fn rows(&self) -> Vec<Vec<String>> {
        self.stdout
            .lines()
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .filter(|r: &Vec<String>| !r.is_empty())
            .collect()
    }

    /// Standard output parsed as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("`{}`: stdout is not JSON ({e}):\n{self}", self.command))
    }

    /// Standard output parsed as YAML.
    #[track_caller]
    pub fn yaml(&self) -> serde_json::Value {
        serde_yaml_ng::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("`{}`: stdout is not YAML ({e}):\n{self}", self.command))
    }
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(status) => writeln!(f, "exit: {status}")?,
            None => writeln!(f, "exit: killed at the timeout")?,
        }
        writeln!(f, "stdout:\n{}", self.stdout)?;
        write!(f, "stderr:\n{}", self.stderr)
    }
}

/// The named steps of one end-to-end test. A failing step does not stop the ones after it (they
/// may fail in turn when they depend on it); [`Steps::finish`] then fails the test with the list
/// of failed steps, so one run reports every broken step at once.
#[derive(Default)]
pub struct Steps {
    passed: Vec<String>,
    failed: Vec<(String, String)>,
}

impl Steps {
    /// Runs one step; a panic inside it marks the step as failed.
    pub fn step(&mut self, name: &str, body: impl FnOnce()) {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
            Ok(()) => self.passed.push(name.to_owned()),
            Err(payload) => {
                let message = payload
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| payload.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)")
                    .to_owned();
                self.failed.push((name.to_owned(), message));
            }
        }
    }

    /// Fails the test if any step failed, listing each with its message.
    #[track_caller]
    pub fn finish(self) {
        if self.failed.is_empty() {
            return;
        }
        let mut report = format!(
            "{} of {} steps failed:",
            self.failed.len(),
            self.failed.len() + self.passed.len()
        );
        for (name, message) in &self.failed {
            report.push_str(&format!("\n\n--- {name}\n{message}"));
        }
        panic!("{report}");
    }
}

/// What went wrong over a benchmark run; printed at its end, after every table.
#[derive(Default)]
pub struct Report {
    pub failures: Vec<String>,
}

impl Report {
    /// Records a failure.
    pub fn fail(&mut self, what: String) {
        self.failures.push(what);
    }

    /// Prints every failure and fails when there was one.
    pub fn finish(self) -> anyhow::Result<()> {
        if self.failures.is_empty() {
            return Ok(());
        }
        for failure in &self.failures {
            eprintln!("FAILED: {failure}");
        }
        bail!("{} check(s) failed", self.failures.len())
    }
}

/// utime + stime of a `/proc/.../stat` file, in clock ticks.
pub fn cpu_ticks(path: &Path) -> Option<u64> {
    let stat = std::fs::read_to_string(path).ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`), the unit of [`cpu_ticks`]. Linux
/// has counted `/proc` times in 100ths of a second on every architecture for decades (the
/// value `USER_HZ` is fixed in its ABI), so 100 stands in when `getconf` cannot be run.
pub fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Busy time of the whole machine (all but idle and iowait), in clock ticks.
pub fn machine_busy_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3)? + fields.get(4)?;
    Some(total.saturating_sub(idle))
}
