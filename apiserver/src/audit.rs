//! The audit log, as kube-apiserver writes it (`--audit-log-path`, `--audit-policy-file`): one
//! `audit.k8s.io/v1` `Event` per line for each request the [`policy`] records, at the stages it
//! records, with who asked (and whom they impersonated), from where, what, the answer's code, the
//! authorization decision, what admission policies annotated (a ValidatingAdmissionPolicy's
//! `Audit` action and `auditAnnotations`), and, at the `Request` and `RequestResponse` levels,
//! the bodies.
//!
//! A request's facts are gathered in its [`Record`] while it is served; the event is written when
//! the response is ready (for a watch, once its response starts: no `ResponseComplete` is
//! written for watches). The log is written by one thread; requests wait for room in its queue
//! (kube-apiserver's default `blocking` mode), so events are never dropped and the memory they
//! take is bounded. The file is rotated at `--audit-log-maxsize`, keeping
//! `--audit-log-maxbackup` older files.

pub mod policy;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

use crate::auth::User;
pub use policy::{Decision, Level, Policy, PolicyError, Stage};

/// Where and how the audit log is written.
#[derive(Debug, Clone)]
pub struct Options {
    /// The file (`-`: standard output).
    pub path: PathBuf,
    pub policy: Policy,
    /// The size at which the file is rotated; 0: never.
    pub max_bytes: u64,
    /// How many rotated files are kept.
    pub max_backups: u32,
}

/// Events waiting to be written, at most.
const QUEUE: usize = 1024;
/// The largest body an event holds; a larger one is left out, saying so.
const MAX_BODY_BYTES: usize = 256 * 1024;

/// The audit log of a server.
pub struct AuditLog {
    policy: Policy,
    queue: tokio::sync::mpsc::Sender<Vec<u8>>,
}

impl AuditLog {
    /// Opens the log (creating the file, mode 0600) and starts its writer thread.
    pub fn open(options: Options) -> std::io::Result<Arc<AuditLog>> {
        let mut sink = Sink::open(&options.path, options.max_bytes, options.max_backups)?;
        let (queue, mut events) = tokio::sync::mpsc::channel::<Vec<u8>>(QUEUE);
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || {
                while let Some(line) = events.blocking_recv() {
                    let mut written = sink.write(&line);
                    // Flush once nothing else waits.
                    while written.is_ok() {
                        match events.try_recv() {
                            Ok(line) => written = sink.write(&line),
                            Err(_) => break,
                        }
                    }
                    if let Err(error) = written.and_then(|()| sink.flush()) {
                        tracing::error!(path = %sink.path.display(), %error, "cannot write the audit log");
                    }
                }
                let _ = sink.flush();
            })?;
        tracing::info!(path = %options.path.display(), rules = options.policy.rules.len(), "writing the audit log");
        Ok(Arc::new(AuditLog {
            policy: options.policy,
            queue,
        }))
    }

    /// The policy that decides what is recorded.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Writes `event` (waiting while the queue is full).
    async fn write(&self, event: &Value) {
        let mut line = serde_json::to_vec(event).unwrap_or_default();
        line.push(b'\n');
        let _ = self.queue.send(line).await;
    }
}

/// The audit log's file, rotated by size (or standard output).
struct Sink {
    path: PathBuf,
    stdout: bool,
    /// The open file; `None` while it could not be opened again (the next write tries).
    out: Option<std::io::BufWriter<std::fs::File>>,
    written: u64,
    max_bytes: u64,
    max_backups: u32,
}

impl Sink {
    fn open(path: &Path, max_bytes: u64, max_backups: u32) -> std::io::Result<Sink> {
        let stdout = path == Path::new("-");
        let mut sink = Sink {
            path: path.to_owned(),
            stdout,
            out: None,
            written: 0,
            max_bytes,
            max_backups,
        };
        if !stdout {
            sink.reopen()?;
        }
        Ok(sink)
    }

    fn reopen(&mut self) -> std::io::Result<()> {
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let mut open = std::fs::OpenOptions::new();
        open.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            open.mode(0o600);
        }
        let file = open.open(&self.path)?;
        self.written = file.metadata()?.len();
        self.out = Some(std::io::BufWriter::new(file));
        Ok(())
    }

    fn write(&mut self, line: &[u8]) -> std::io::Result<()> {
        if self.stdout {
            return std::io::stdout().lock().write_all(line);
        }
        let full = self.max_bytes > 0
            && self.written > 0
            && self.written + line.len() as u64 > self.max_bytes;
        if full {
            if let Some(out) = self.out.as_mut() {
                out.flush()?;
            }
            self.rotate()?;
        }
        if self.out.is_none() {
            self.reopen()?;
        }
        let Some(out) = self.out.as_mut() else {
            return Err(std::io::Error::other("the audit log is not open"));
        };
        out.write_all(line)?;
        self.written += line.len() as u64;
        Ok(())
    }

    /// `path` becomes `path.1`, `path.1` becomes `path.2`, and so on; the oldest beyond
    /// `max_backups` goes.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.out = None;
        let numbered = |n: u32| {
            let mut name = self.path.clone().into_os_string();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        };
        if self.max_backups == 0 {
            std::fs::remove_file(&self.path)?;
        } else {
            let _ = std::fs::remove_file(numbered(self.max_backups));
            for n in (1..self.max_backups).rev() {
                let _ = std::fs::rename(numbered(n), numbered(n + 1));
            }
            std::fs::rename(&self.path, numbered(1))?;
        }
        self.reopen()
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.out.as_mut() {
            _ if self.stdout => std::io::stdout().lock().flush(),
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}

/// The connection's peer, which the server puts on each request.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// What is known of one request as it is served.
pub struct Record {
    id: String,
    received: jiff::Timestamp,
    method: String,
    uri: String,
    user_agent: Option<String>,
    source_ips: Vec<String>,
    facts: Mutex<Facts>,
}

#[derive(Default)]
struct Facts {
    /// Who authenticated, and whom they act as when that differs.
    user: Option<User>,
    impersonated: Option<User>,
    /// The authorization verb and what it is for.
    verb: Option<String>,
    object: Option<crate::authz::ResourceRequest>,
    api_version: Option<String>,
    decision: Option<Decision>,
    authorized: Option<bool>,
    request_object: Option<Value>,
    annotations: Vec<(String, String)>,
}

impl Record {
    /// A record of `request`, received now.
    pub fn new<B>(request: &http::Request<B>) -> Record {
        let headers = request.headers();
        let text = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        // As upstream: X-Forwarded-For's addresses, then X-Real-Ip, then the peer.
        let mut source_ips: Vec<String> = text("x-forwarded-for")
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| s.parse::<std::net::IpAddr>().is_ok())
                    .take(16)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(real) = text("x-real-ip").filter(|s| s.parse::<std::net::IpAddr>().is_ok()) {
            source_ips.push(real);
        }
        if let Some(Peer(peer)) = request.extensions().get::<Peer>() {
            let peer = peer.ip().to_string();
            if !source_ips.contains(&peer) {
                source_ips.push(peer);
            }
        }
        Record {
            id: uuid::Uuid::new_v4().to_string(),
            received: jiff::Timestamp::now(),
            method: request.method().as_str().to_owned(),
            // The path and query, as upstream's requestURI (an HTTP/2 request's URI is absolute).
            uri: request
                .uri()
                .path_and_query()
                .map_or_else(|| request.uri().path().to_owned(), ToString::to_string),
            user_agent: text("user-agent"),
            source_ips,
            facts: Mutex::default(),
        }
    }

    /// A record of a write the server's own controller makes (`method` to `uri`, the REST path
    /// a client would have used), received now: no HTTP request, so no source address nor
    /// user agent.
    pub fn internal(method: &str, uri: String) -> Record {
        Record {
            id: uuid::Uuid::new_v4().to_string(),
            received: jiff::Timestamp::now(),
            method: method.to_owned(),
            uri,
            user_agent: None,
            source_ips: Vec::new(),
            facts: Mutex::default(),
        }
    }

    fn facts(&self) -> std::sync::MutexGuard<'_, Facts> {
        self.facts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Who authenticated, and whom they act as (the same user when they impersonate no one).
    pub fn users(&self, authenticated: &User, acting: &User) {
        let mut facts = self.facts();
        facts.user = Some(authenticated.clone());
        facts.impersonated = (authenticated != acting).then(|| acting.clone());
    }

    /// What the request asks, and so what the policy decides for it.
    pub fn asks(&self, log: &AuditLog, attributes: &crate::authz::Attributes, path: &str) {
        let mut facts = self.facts();
        let user = facts.impersonated.as_ref().or(facts.user.as_ref());
        let (name, groups) = user.map_or(("", &[][..]), |u| (u.name.as_str(), &u.groups[..]));
        let resource = match &attributes.request {
            crate::authz::Request::Resource(r) => Some(policy::ResourceAttributes {
                group: &r.group,
                resource: &r.resource,
                subresource: r.subresource.as_deref().unwrap_or_default(),
                namespace: r.namespace.as_deref().unwrap_or_default(),
                name: r.name.as_deref().unwrap_or_default(),
            }),
            crate::authz::Request::Path(_) => None,
        };
        let decision = log.policy.decide(&policy::Attributes {
            user: name,
            groups,
            verb: &attributes.verb,
            resource,
            path,
        });
        facts.decision = Some(decision);
        facts.verb = Some(attributes.verb.clone());
        if let crate::authz::Request::Resource(r) = &attributes.request {
            facts.object = Some(r.clone());
        }
    }

    /// The version of the resource asked for (`v1`, `apps/v1`).
    pub fn api_version(&self, group: &str, version: &str) {
        self.facts().api_version = Some(if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        });
    }

    /// Whether authorization allowed the request.
    pub fn authorized(&self, allowed: bool) {
        self.facts().authorized = Some(allowed);
    }

    /// Whether the policy records the request (after [`Record::asks`]).
    pub fn records(&self) -> bool {
        self.facts()
            .decision
            .as_ref()
            .is_some_and(|d| d.level > Level::None)
    }

    /// The request's body, decoded (JSON, YAML or protobuf): kept when the level records it; a
    /// create's object names what the event is about (its path names none), as upstream fills
    /// `objectRef`.
    pub fn request_object(&self, object: Value) {
        let mut facts = self.facts();
        let level = facts.decision.as_ref().map_or(Level::None, |d| d.level);
        if let Some(asked) = facts.object.as_mut().filter(|o| o.name.is_none())
            && let Some(name) = object["metadata"]["name"].as_str()
        {
            asked.name = Some(name.to_owned());
        }
        if level >= Level::Request && object.is_object() {
            facts.request_object = Some(object);
        }
    }

    /// An annotation (an admission policy's).
    pub fn annotate(&self, key: String, value: String) {
        let mut facts = self.facts();
        if facts.annotations.len() < 64 {
            facts.annotations.push((key, value));
        }
    }

    /// Writes the `RequestReceived` event, when the policy records it (once what the request
    /// asks is known).
    pub async fn received(&self, log: &AuditLog) {
        self.write(log, Stage::RequestReceived, 0, None).await;
    }

    /// Writes the `ResponseComplete` event of a request served without HTTP (a controller's
    /// write), when the policy records it: its code and, at `RequestResponse`, `response` (the
    /// object written, or the error's `Status`).
    pub async fn responded(&self, log: &AuditLog, code: u16, response: Option<&Value>) {
        let level = self.facts().decision.as_ref().map(|d| d.level);
        let body = match response {
            Some(response) if level == Some(Level::RequestResponse) => {
                serde_json::to_vec(response).ok()
            }
            _ => None,
        };
        self.write(log, Stage::ResponseComplete, code, body.as_deref())
            .await;
    }

    /// Writes the event of `stage` when the policy records it: the response's code and, at
    /// `RequestResponse`, its body (`None` when not read, as a watch's).
    async fn write(&self, log: &AuditLog, stage: Stage, code: u16, response_body: Option<&[u8]>) {
        let event = {
            let facts = self.facts();
            let decision = facts.decision.clone().unwrap_or(Decision {
                // A request refused before it was understood (no credentials that work): its
                // level is the one for what little is known.
                level: log
                    .policy
                    .decide(&policy::Attributes {
                        user: "",
                        groups: &[],
                        verb: &self.method.to_ascii_lowercase(),
                        resource: None,
                        path: self.uri.split('?').next().unwrap_or_default(),
                    })
                    .level,
                omit_stages: log.policy.omit_stages.clone(),
                omit_managed_fields: log.policy.omit_managed_fields,
            });
            if !decision.records(stage) {
                return;
            }
            self.event(&facts, &decision, stage, code, response_body)
        };
        log.write(&event).await;
    }

    fn event(
        &self,
        facts: &Facts,
        decision: &Decision,
        stage: Stage,
        code: u16,
        response_body: Option<&[u8]>,
    ) -> Value {
        let now = jiff::Timestamp::now();
        let mut event = json!({
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": decision.level.as_str(),
            "auditID": self.id,
            "stage": stage.as_str(),
            "requestURI": self.uri,
            "verb": facts.verb.clone().unwrap_or_else(|| self.method.to_ascii_lowercase()),
            "user": user_info(facts.user.as_ref()),
            "requestReceivedTimestamp": micros(self.received),
            "stageTimestamp": micros(now),
        });
        let map = event.as_object_mut().expect("an object");
        if !self.source_ips.is_empty() {
            map.insert("sourceIPs".into(), json!(self.source_ips));
        }
        if let Some(user) = &facts.impersonated {
            map.insert("impersonatedUser".into(), user_info(Some(user)));
        }
        if let Some(agent) = &self.user_agent {
            map.insert("userAgent".into(), json!(agent));
        }
        if let Some(r) = &facts.object {
            let mut object = Map::new();
            object.insert("resource".into(), json!(r.resource));
            if let Some(ns) = &r.namespace {
                object.insert("namespace".into(), json!(ns));
            }
            if let Some(name) = &r.name {
                object.insert("name".into(), json!(name));
            }
            object.insert("apiGroup".into(), json!(r.group));
            if let Some(version) = facts.api_version.as_deref() {
                let version = version.rsplit('/').next().unwrap_or(version);
                object.insert("apiVersion".into(), json!(version));
            }
            if let Some(sub) = &r.subresource {
                object.insert("subresource".into(), json!(sub));
            }
            map.insert("objectRef".into(), Value::Object(object));
        }
        if stage != Stage::RequestReceived {
            map.insert(
                "responseStatus".into(),
                json!({"metadata": {}, "code": code}),
            );
        }
        if decision.level >= Level::Request
            && let Some(object) = &facts.request_object
        {
            let mut object = object.clone();
            if decision.omit_managed_fields {
                omit_managed_fields(&mut object);
            }
            map.insert("requestObject".into(), object);
        }
        if decision.level >= Level::RequestResponse
            && let Some(object) =
                response_body.and_then(|b| body_object(b, decision.omit_managed_fields))
        {
            map.insert("responseObject".into(), object);
        }
        let mut annotations = Map::new();
        if let Some(allowed) = facts.authorized {
            annotations.insert(
                "authorization.k8s.io/decision".into(),
                json!(if allowed { "allow" } else { "forbid" }),
            );
        }
        for (key, value) in &facts.annotations {
            annotations.insert(key.clone(), json!(value));
        }
        if !annotations.is_empty() {
            map.insert("annotations".into(), Value::Object(annotations));
        }
        event
    }
}

/// An event's `user`.
fn user_info(user: Option<&User>) -> Value {
    let Some(user) = user else {
        return json!({});
    };
    let mut info = Map::new();
    info.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        info.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        info.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        info.insert("extra".into(), json!(user.extra));
    }
    Value::Object(info)
}

/// A timestamp as events write it (RFC 3339 with microseconds).
fn micros(at: jiff::Timestamp) -> String {
    format!("{at:.6}")
}

/// A JSON body as an event holds it: an object, without `metadata.managedFields` when asked; a
/// body that is no JSON object, or too large, is left out.
fn body_object(body: &[u8], omit: bool) -> Option<Value> {
    if body.is_empty() || body.len() > MAX_BODY_BYTES {
        return None;
    }
    let mut object: Value = serde_json::from_slice(body).ok()?;
    if !object.is_object() {
        return None;
    }
    if omit {
        omit_managed_fields(&mut object);
    }
    Some(object)
}

/// Leaves `metadata.managedFields` out of an object, and out of a list's items.
fn omit_managed_fields(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) {
        for item in items {
            if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
}

/// Writes the event of a request whose response is ready: `ResponseStarted` for a watch,
/// `ResponseComplete` for any other request, with the response's body at `RequestResponse` (read
/// and put back, when it is no stream).
pub async fn finish(
    log: &AuditLog,
    record: &Record,
    response: axum::response::Response,
) -> axum::response::Response {
    let code = response.status().as_u16();
    let (watch, level) = {
        let facts = record.facts();
        (
            facts.verb.as_deref() == Some("watch"),
            facts.decision.as_ref().map(|d| d.level),
        )
    };
    if watch {
        record.write(log, Stage::ResponseStarted, code, None).await;
        return response;
    }
    if level != Some(Level::RequestResponse) {
        record.write(log, Stage::ResponseComplete, code, None).await;
        return response;
    }
    let (parts, body) = response.into_parts();
    match axum::body::to_bytes(body, 64 * 1024 * 1024).await {
        Ok(bytes) => {
            record
                .write(log, Stage::ResponseComplete, code, Some(&bytes))
                .await;
            axum::response::Response::from_parts(parts, axum::body::Body::from(bytes))
        }
        Err(error) => {
            record.write(log, Stage::ResponseComplete, code, None).await;
            tracing::debug!(%error, "cannot read a response for the audit log");
            axum::response::Response::from_parts(parts, axum::body::Body::empty())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_rotates_at_its_size_keeping_its_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut sink = Sink::open(&path, 100, 2).unwrap();
        for i in 0..10 {
            sink.write(format!("{{\"line\":{i:040}}}\n").as_bytes())
                .unwrap();
        }
        sink.flush().unwrap();
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        let numbered = |n: u32| dir.path().join(format!("audit.log.{n}"));
        assert!(read(&path).lines().count() <= 2, "{}", read(&path));
        assert!(read(&numbered(1)).lines().count() == 2);
        assert!(read(&numbered(2)).lines().count() == 2);
        assert!(!numbered(3).exists());
        assert!(read(&path).contains("\"line\":0000000000000000000000000000000000000009"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }

    #[test]
    fn bodies_are_objects_within_bounds_without_managed_fields_when_asked() {
        let body = br#"{"metadata":{"name":"a","managedFields":[{}]},"data":{"k":"v"}}"#;
        let kept = body_object(body, false).unwrap();
        assert!(kept["metadata"]["managedFields"].is_array());
        let omitted = body_object(body, true).unwrap();
        assert!(omitted["metadata"].get("managedFields").is_none());
        assert_eq!(omitted["data"]["k"], "v");
        assert!(body_object(b"[1]", false).is_none());
        assert!(body_object(b"not json", false).is_none());
        let huge = format!("{{\"k\":\"{}\"}}", "x".repeat(MAX_BODY_BYTES));
        assert!(body_object(huge.as_bytes(), false).is_none());
    }
}
