//! The HTTP layer: authentication, routing of Kubernetes URLs, content negotiation, and the one
//! place where errors become `kind: Status` responses.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::auth::{Authenticator, User};
use crate::authz::{Attributes, Authorizer};
use crate::discovery;
use crate::error::{Error, Result};
use crate::registry::ResourceType;
use crate::registry::selector::{FieldSelector, LabelSelector, supported_fields};
use crate::registry::store::{
    DeleteOptions, Deleted, FieldValidation, ListOptions, PatchType, Propagation, Store, Warnings,
    WriteOptions,
};
use crate::watch::WatchCache;

mod backup;
mod in_flight;
mod list;
mod openapi;
mod path;
mod pods;
mod representation;
mod review;
pub(crate) mod scale;
mod watch_stream;

pub use backup::{RestoreState, restore_router};
pub use in_flight::{InFlight, WatchCounts, hold_while_sent};
use path::{ApiPath, ResourcePath};
pub use pods::SUBRESOURCES as POD_SUBRESOURCES;
use representation::Representation;

/// The largest request body the server reads, as kube-apiserver's limit.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

const AGGREGATED_DISCOVERY: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// What every request handler shares.
pub struct ApiState {
    pub store: Arc<Store>,
    pub cache: Arc<WatchCache>,
    pub auth: Authenticator,
    /// Decides what each caller may do.
    pub authz: Arc<Authorizer>,
    /// What checks writes against the ValidatingAdmissionPolicies in force.
    pub admission: Arc<crate::admission::Gate>,
    pub shutdown: watch::Receiver<bool>,
    /// `host:port` clients reach the server at (for legacy `/api`).
    pub server_address: String,
    /// One permit per request served at once, when their number is limited.
    pub in_flight: InFlight,
    /// What `GET /atoll/v1/backup` reads.
    pub(crate) backup: Arc<crate::backup::Source>,
    /// Where requests are counted, when the server has metrics.
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Where requests are recorded, when the server keeps an audit log.
    pub audit: Option<Arc<crate::audit::AuditLog>>,
}

/// The router of the whole API.
pub fn router(state: Arc<ApiState>) -> Router {
    Router::new().fallback(handle).with_state(state)
}

async fn handle(State(state): State<Arc<ApiState>>, request: Request) -> Response {
    let audit = state
        .audit
        .clone()
        .map(|log| (log, Arc::new(crate::audit::Record::new(&request))));
    let record = audit.as_ref().map(|(_, record)| record.clone());
    let Some(metrics) = state.metrics.clone() else {
        let response = respond(state, request, record).await;
        return audited(audit, response).await;
    };
    let started = std::time::Instant::now();
    let labels = request_labels(&state, &request);
    let response = respond(state, request, record).await;
    metrics.observe(labels, response.status().as_u16(), started.elapsed());
    audited(audit, response).await
}

/// The response, once its audit event is written (when the server keeps an audit log).
async fn audited(
    audit: Option<(Arc<crate::audit::AuditLog>, Arc<crate::audit::Record>)>,
    response: Response,
) -> Response {
    match audit {
        Some((log, record)) => crate::audit::finish(&log, &record, response).await,
        None => response,
    }
}

/// How a request is labelled in the metrics: kube-apiserver's verb (`LIST` and `WATCH` told
/// from `GET`, `APPLY` from `PATCH`), and the resource and subresource only when the server
/// serves them (`other` otherwise, so that no path a client makes up becomes a label).
fn request_labels(state: &ApiState, request: &Request) -> crate::metrics::RequestLabels {
    use crate::metrics::{OTHER, RequestLabels};
    let method = request.method();
    let Some(ApiPath::Resource(r)) = path::parse(request.uri().path()) else {
        let verb = match *method {
            Method::GET => "GET",
            Method::HEAD => "HEAD",
            Method::POST => "POST",
            Method::PUT => "PUT",
            Method::PATCH => "PATCH",
            Method::DELETE => "DELETE",
            Method::OPTIONS => "OPTIONS",
            _ => OTHER,
        };
        return RequestLabels::other(verb);
    };
    let query = Query::parse(request.uri().query().unwrap_or_default());
    let named = r.name.is_some();
    let applying = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/apply-patch"));
    let verb = match *method {
        Method::GET | Method::HEAD if query.flag("watch") => "WATCH",
        Method::GET | Method::HEAD if named => "GET",
        Method::GET | Method::HEAD => "LIST",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH if applying => "APPLY",
        Method::PATCH => "PATCH",
        Method::DELETE if named => "DELETE",
        Method::DELETE => "DELETECOLLECTION",
        _ => OTHER,
    };
    let catalog = state.store.registry().catalog();
    let Some(rt) = catalog.lookup(&r.group, &r.version, &r.resource) else {
        return RequestLabels::other(verb);
    };
    let subresource = match r.subresource.as_deref() {
        None => String::new(),
        Some(sub) if serves_subresource(&rt, sub) => sub.to_owned(),
        Some(_) => OTHER.to_owned(),
    };
    RequestLabels {
        verb,
        group: rt.group.clone(),
        resource: rt.plural.clone(),
        subresource,
    }
}

async fn respond(
    state: Arc<ApiState>,
    request: Request,
    audit: Option<Arc<crate::audit::Record>>,
) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let limit = match time_limit(&request) {
        Ok(limit) => limit,
        Err(err) => return error_response(&err),
    };
    // What the request's checks warned of, answered with an error too, as upstream does.
    let warnings = Arc::new(Warnings::default());
    // A panic serving one request fails that request with 500; the server goes on.
    let serving = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(serve(
        &state,
        request,
        &warnings,
        audit.as_ref(),
    )));
    let served = match limit {
        Some(limit) => tokio::time::timeout(limit, serving)
            .await
            .unwrap_or_else(|_| Ok(Err(Error::Timeout(TIMED_OUT.into())))),
        None => serving.await,
    }
    .unwrap_or_else(|_| {
        Err(Error::Internal(
            "the server hit a bug serving this request (it panicked); its log says where".into(),
        ))
    });
    match served {
        Ok(response) => response,
        Err(err) => {
            if err.code().is_server_error() {
                tracing::error!(%method, %path, error = %err, "request failed");
            } else {
                tracing::debug!(%method, %path, error = %err, "request refused");
            }
            let mut response = error_response(&err);
            add_warnings(&mut response, &warnings.take());
            response
        }
    }
}

/// How long a request that is not a watch may take (kube-apiserver's `--request-timeout`).
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
const TIMED_OUT: &str = "Timeout: request did not complete within the allotted timeout";

/// How long the request may take: [`REQUEST_TIMEOUT`], or its `timeout` parameter when
/// shorter; none for watches and backups, which last as long as they stream.
fn time_limit(request: &Request) -> Result<Option<std::time::Duration>> {
    let query = Query::parse(request.uri().query().unwrap_or_default());
    if query.flag("watch") || request.uri().path() == path::BACKUP {
        return Ok(None);
    }
    let asked = match query.get("timeout").filter(|t| !t.is_empty()) {
        None => REQUEST_TIMEOUT,
        Some(text) => parse_go_duration(text).ok_or_else(|| {
            Error::BadRequest(format!(
                "invalid timeout specified in the request URL: {text:?} (a duration such as 30s or 1m)"
            ))
        })?,
    };
    Ok(Some(asked.min(REQUEST_TIMEOUT)))
}

/// A Go duration of whole units (`500ms`, `30s`, `1m30s`, `2h`); `None` when it is not one or
/// overflows.
fn parse_go_duration(text: &str) -> Option<std::time::Duration> {
    let mut rest = text;
    let mut total = std::time::Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let number: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let millis = match &rest[..unit] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return None,
        };
        rest = &rest[unit..];
        total = total.checked_add(std::time::Duration::from_millis(
            number.checked_mul(millis)?,
        ))?;
    }
    Some(total)
}

/// The `Status` response of an error.
pub fn error_response(err: &Error) -> Response {
    let mut response = json_response(err.code(), &err.to_status());
    if matches!(err, Error::TooManyRequests(_)) {
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(crate::error::RETRY_AFTER_SECONDS),
        );
    }
    response
}

/// A `Status` serialized with its fields in the order kube-apiserver writes them (`kind` and
/// `apiVersion` first), which clients that sniff the start of a body rely on.
fn status_json(status: &Value) -> Vec<u8> {
    const ORDER: [&str; 8] = [
        "kind",
        "apiVersion",
        "metadata",
        "status",
        "message",
        "reason",
        "details",
        "code",
    ];
    let Some(map) = status.as_object() else {
        return serde_json::to_vec(status).unwrap_or_default();
    };
    let mut out = b"{".to_vec();
    let rest = map.keys().filter(|k| !ORDER.contains(&k.as_str()));
    for key in ORDER.iter().copied().chain(rest.map(String::as_str)) {
        let Some(value) = map.get(key) else {
            continue;
        };
        if out.len() > 1 {
            out.push(b',');
        }
        out.extend(serde_json::to_vec(key).unwrap_or_default());
        out.push(b':');
        out.extend(serde_json::to_vec(value).unwrap_or_default());
    }
    out.push(b'}');
    out
}

fn json_response(code: StatusCode, body: &Value) -> Response {
    let bytes = if body["kind"] == "Status" {
        status_json(body)
    } else {
        serde_json::to_vec(body).unwrap_or_default()
    };
    (
        code,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        bytes,
    )
        .into_response()
}

fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/version" | "/version/" | "/healthz" | "/livez" | "/readyz"
    )
}

/// Who the request is from: the client certificate's user, the bearer token's, `system:anonymous`
/// without either (a token
/// that is not valid is refused with 401), or whom the caller impersonates.
async fn caller(
    state: &ApiState,
    parts: &http::request::Parts,
    audit: Option<&Arc<crate::audit::Record>>,
) -> Result<User> {
    let headers = &parts.headers;
    let certificate = parts.extensions.get::<crate::auth::ClientCertificate>();
    let user = match headers.get(header::AUTHORIZATION) {
        // A client certificate comes first, as kube-apiserver's x509 authenticator does.
        _ if certificate.is_some() => certificate.map(|c| c.0.clone()).unwrap_or_default(),
        None => User::anonymous(),
        Some(value) => state
            .auth
            .authenticate(value.to_str().ok())
            .ok_or(Error::Unauthorized)?,
    };
    // A service account's token stops working with the account it was issued for.
    if certificate.is_none() && !review::service_account_lives(&state.store, &user).await? {
        return Err(Error::Unauthorized);
    }
    let acting = crate::authz::impersonation::resolve(&state.authz, user.clone(), headers);
    if let Some(audit) = audit {
        audit.users(&user, acting.as_ref().unwrap_or(&user));
    }
    acting
}

/// What a request asks to do, as upstream's `RequestInfoFactory` reads it: the verb from the
/// method (a nameless GET lists, or watches with `watch=true`; a nameless DELETE deletes a
/// collection), and the resource, subresource, namespace and name from the path (a list or
/// watch with `fieldSelector=metadata.name=x` is for `x`). Paths that are no resource are
/// authorized by path and lower-cased method.
fn attributes(method: &Method, path: &str, at: Option<&ApiPath>, query: &Query) -> Attributes {
    let Some(ApiPath::Resource(r)) = at else {
        return Attributes {
            verb: method.as_str().to_ascii_lowercase(),
            request: crate::authz::Request::Path(path.to_owned()),
        };
    };
    let named = r.name.is_some();
    let verb = match *method {
        Method::GET | Method::HEAD if named => "get",
        Method::GET | Method::HEAD if query.flag("watch") => "watch",
        Method::GET | Method::HEAD => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => "",
    };
    let mut name = r.name.clone();
    if !named
        && matches!(verb, "list" | "watch")
        && let Some(selected) = query
            .get("fieldSelector")
            .and_then(|s| s.strip_prefix("metadata.name="))
            .filter(|n| !n.contains(','))
    {
        name = Some(selected.to_owned());
    }
    let namespace = match (&r.namespace, r.group.as_str(), r.resource.as_str()) {
        (None, "", "namespaces") => r.name.clone(),
        (ns, _, _) => ns.clone(),
    };
    Attributes::resource(
        verb,
        crate::authz::ResourceRequest {
            group: r.group.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone(),
            namespace,
            name,
        },
    )
}

async fn serve(
    state: &ApiState,
    request: Request,
    warnings: &Arc<Warnings>,
    audit: Option<&Arc<crate::audit::Record>>,
) -> Result<Response> {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let user = caller(state, &parts, audit).await?;
    // Held until the response is ready, or for a watch until it ends.
    let slot = in_flight::admit(state, &parts, &user)?;
    let query = Query::parse(parts.uri.query().unwrap_or_default());
    let api_path = path::parse(&path);
    let asked = attributes(&parts.method, &path, api_path.as_ref(), &query);
    if let (Some(log), Some(record)) = (&state.audit, audit) {
        record.asks(log, &asked, &path);
        if let Some(ApiPath::Resource(r)) = &api_path {
            record.api_version(&r.group, &r.version);
        }
        record.received(log).await;
    }
    let authorized = state.authz.check(&user, &asked);
    if let Some(record) = audit {
        record.authorized(authorized.is_ok());
    }
    authorized?;
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let catalog = state.store.registry().catalog();
    let api_path = api_path.ok_or(Error::UnknownPath)?;
    let resource = match api_path {
        ApiPath::Resource(resource) => resource,
        other => return serve_other(state, catalog, other, &parts, &accept, &user).await,
    };
    let rt = catalog
        .lookup(&resource.group, &resource.version, &resource.resource)
        .ok_or(Error::UnknownPath)?;
    if resource.namespace.is_some() && !rt.namespaced {
        return Err(Error::UnknownPath);
    }
    let representation = Representation::negotiate(&accept, query.get("includeObject"))?;
    let body = read_body(body).await?;
    if let Some(record) = audit.filter(|r| r.records() && !body.is_empty()) {
        // As the server reads it: an object in any of its encodings, or a patch.
        let object = decode_object(&parts.headers, &body)
            .ok()
            .or_else(|| serde_json::from_slice(&body).ok())
            .or_else(|| crate::yaml::decode(&body).ok());
        if let Some(object) = object {
            record.request_object(object);
        }
    }
    let request = ResourceRequest {
        rt: &rt,
        at: &resource,
        method: &parts.method,
        headers: &parts.headers,
        query: &query,
        user: &user,
        warnings,
        audit,
    };
    let response = serve_resource(state, &request, representation, body).await?;
    if rt.group == crate::authz::GROUP
        && parts.method != Method::GET
        && query.get("dryRun").is_none()
    {
        // The caller's next request is decided by the policy this write made.
        state.authz.catch_up(&state.store, &state.cache).await;
    }
    if rt.group == "admissionregistration.k8s.io"
        && parts.method != Method::GET
        && query.get("dryRun").is_none()
    {
        // The caller's next write passes the policies this write made.
        let now = state.store.backend().current_revision();
        state.cache.caught_up(now, ADMISSION_CATCH_UP).await;
    }
    Ok(slot.hold(response))
}

/// A path that names no resource: version, OpenAPI, health, discovery, backup and restore.
async fn serve_other(
    state: &ApiState,
    catalog: Arc<crate::registry::Catalog>,
    api_path: ApiPath,
    parts: &http::request::Parts,
    accept: &str,
    user: &User,
) -> Result<Response> {
    let found = |doc: Option<Value>| -> Result<Response> {
        Ok(json_response(
            StatusCode::OK,
            &doc.ok_or(Error::UnknownPath)?,
        ))
    };
    match api_path {
        ApiPath::Version => Ok(json_response(StatusCode::OK, &discovery::version())),
        ApiPath::OpenApiIndex => Ok(json_response(
            StatusCode::OK,
            &crate::openapi::index(&catalog),
        )),
        ApiPath::OpenApiV2 => openapi::serve_v2(catalog, &parts.method, &parts.headers).await,
        ApiPath::OpenApiDocument(gv) => {
            let doc = crate::openapi::document(&catalog, &gv).ok_or(Error::UnknownPath)?;
            Ok(json_response(StatusCode::OK, &doc))
        }
        ApiPath::Health => {
            Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], "ok").into_response())
        }
        ApiPath::CoreRoot | ApiPath::GroupsRoot => {
            let core = matches!(api_path, ApiPath::CoreRoot);
            if wants_aggregated(accept) {
                let body =
                    serde_json::to_vec(&discovery::aggregated(&catalog, core)).unwrap_or_default();
                return Ok((
                    StatusCode::OK,
                    [
                        (header::CONTENT_TYPE, AGGREGATED_DISCOVERY),
                        (header::VARY, "Accept"),
                    ],
                    body,
                )
                    .into_response());
            }
            let doc = if core {
                discovery::core_versions(&state.server_address)
            } else {
                discovery::group_list(&catalog)
            };
            Ok(json_response(StatusCode::OK, &doc))
        }
        ApiPath::Group(group) => found(discovery::group(&catalog, &group)),
        ApiPath::GroupVersion(group, version) => {
            found(discovery::resource_list(&catalog, &group, &version))
        }
        ApiPath::Backup | ApiPath::Restore => backup::serve(state, &api_path, &parts.method, user),
        ApiPath::Resource(_) => Err(Error::UnknownPath),
    }
}

/// How long a write of a policy or binding waits for the policies to take it in.
const ADMISSION_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(5);

/// The options of a write, with RBAC's escalation check when it writes an RBAC object, and the
/// ValidatingAdmissionPolicies' check when any binding is in force.
fn writing(state: &ApiState, request: &ResourceRequest<'_>) -> Result<WriteOptions> {
    let mut options = write_options(request.headers, request.query)?;
    options.warnings = request.warnings.clone();
    if request.rt.group == crate::authz::GROUP {
        options.admission = Some(Arc::new(crate::authz::escalation::Escalation {
            authorizer: state.authz.clone(),
            user: request.user.clone(),
        }));
    }
    if let Some(policies) = policy_admission(state, request, options.dry_run) {
        options.admission = Some(Arc::new(crate::admission::PolicyAdmission {
            inner: options.admission.take(),
            ..policies
        }));
    }
    Ok(options)
}

/// The ValidatingAdmissionPolicies' check of a request, when any binding is in force.
fn policy_admission(
    state: &ApiState,
    request: &ResourceRequest<'_>,
    dry_run: bool,
) -> Option<crate::admission::PolicyAdmission> {
    state.admission.admission(
        request.user,
        request.at.subresource.as_deref().unwrap_or_default(),
        dry_run,
        request.audit.cloned(),
    )
}

/// A delete's options, with the policies' check when any binding is in force (given the
/// stored object as `oldObject`, for each object of a deletecollection too).
fn deleting(
    state: &ApiState,
    request: &ResourceRequest<'_>,
    body: &[u8],
) -> Result<(
    DeleteOptions,
    Option<Arc<crate::admission::PolicyAdmission>>,
)> {
    let mut options = delete_options(request.headers, request.query, body)?;
    let policies = policy_admission(state, request, options.dry_run).map(Arc::new);
    if let Some(policies) = &policies {
        options.admission = Some(policies.clone());
    }
    Ok((options, policies))
}

/// A delete's outcome, the warnings of the policies' checks left for the error when refused.
fn refused_with_warnings<T>(
    outcome: Result<T>,
    request: &ResourceRequest<'_>,
    policies: Option<&crate::admission::PolicyAdmission>,
) -> Result<T> {
    if outcome.is_err()
        && let Some(policies) = policies
    {
        request.warnings.record(policies.take_delete_warnings());
    }
    outcome
}

/// Approving or denying a certificate signing request needs `approve` on its signer (upstream's
/// CertificateApproval admission): on `signers` named as the signer, or `<domain>/*`.
async fn may_approve(state: &ApiState, request: &ResourceRequest<'_>) -> Result<()> {
    let Some(name) = request.at.name.as_deref() else {
        return Ok(());
    };
    let csr = state.store.get(request.rt, None, name).await?;
    let signer = csr["spec"]["signerName"].as_str().unwrap_or_default();
    let approve = |name: String| {
        Attributes::resource(
            "approve",
            crate::authz::ResourceRequest {
                group: "certificates.k8s.io".into(),
                resource: "signers".into(),
                name: Some(name),
                ..Default::default()
            },
        )
    };
    let exact = approve(signer.to_owned());
    let domain = signer.split('/').next().unwrap_or_default();
    if state.authz.authorize(request.user, &exact).allowed()
        || state
            .authz
            .authorize(request.user, &approve(format!("{domain}/*")))
            .allowed()
    {
        return Ok(());
    }
    Err(Error::Denied {
        target: Some(crate::error::Target::new(
            &request.rt.group,
            &request.rt.plural,
            name,
        )),
        message: format!(
            "certificatesigningrequests.certificates.k8s.io {name:?} is forbidden: user not permitted to approve requests with signerName {signer:?}"
        ),
    })
}

/// Whether resources of `rt` have the subresource `sub`.
fn serves_subresource(rt: &ResourceType, sub: &str) -> bool {
    match sub {
        "status" => rt.status,
        "scale" => rt.scale.is_some(),
        "finalize" => rt.group.is_empty() && rt.plural == "namespaces",
        "approval" => {
            rt.group == "certificates.k8s.io" && rt.plural == "certificatesigningrequests"
        }
        "token" => rt.group.is_empty() && rt.plural == "serviceaccounts",
        _ => pods::serves(rt, sub),
    }
}

/// PUT of an object or subresource.
async fn replace(
    state: &ApiState,
    request: &ResourceRequest<'_>,
    representation: Representation,
    name: &str,
    body: Bytes,
) -> Result<Response> {
    let (rt, ns, sub) = (
        request.rt,
        request.at.namespace.as_deref(),
        request.at.subresource.as_deref(),
    );
    let object = decode_object(request.headers, &body)?;
    let options = writing(state, request)?;
    may_write(state, request, true).await?;
    if sub == Some("scale") {
        let (scale, warnings) = scale::update(&state.store, rt, ns, name, object, &options).await?;
        return Ok(written_response(
            StatusCode::OK,
            &Representation::Object,
            rt,
            scale,
            &warnings,
        ));
    }
    let written = state
        .store
        .update(rt, ns, name, sub, object, &options)
        .await?;
    Ok(written_response(
        StatusCode::OK,
        &representation,
        rt,
        written.object,
        &written.warnings,
    ))
}

/// PATCH of an object or subresource, in any of the four patch types.
async fn patch(
    state: &ApiState,
    request: &ResourceRequest<'_>,
    representation: Representation,
    name: &str,
    body: Bytes,
) -> Result<Response> {
    let (rt, ns, sub) = (
        request.rt,
        request.at.namespace.as_deref(),
        request.at.subresource.as_deref(),
    );
    let patch_type = patch_type(request.headers)?;
    let mut options = writing(state, request)?;
    options.metadata_only = matches!(representation, Representation::PartialMetadata);
    may_write(state, request, patch_type == PatchType::Apply).await?;
    if sub == Some("scale") {
        let (scale, warnings) =
            scale::patch(&state.store, rt, ns, name, patch_type, &body, &options).await?;
        return Ok(written_response(
            StatusCode::OK,
            &Representation::Object,
            rt,
            scale,
            &warnings,
        ));
    }
    let written = state
        .store
        .patch(rt, ns, name, sub, patch_type, &body, &options)
        .await?;
    let code = if written.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(written_response(
        code,
        &representation,
        rt,
        written.object,
        &written.warnings,
    ))
}

/// What a write of an existing name needs besides its verb: `create` when it may create the
/// object (a PUT, or an apply), and `approve` on the signer for a certificate request's
/// approval.
async fn may_write(state: &ApiState, request: &ResourceRequest<'_>, creates: bool) -> Result<()> {
    if creates {
        may_create(state, request).await?;
    }
    if request.at.subresource.as_deref() == Some("approval") {
        may_approve(state, request).await?;
    }
    Ok(())
}

/// An update or apply that would create the object needs `create` too, as upstream's
/// handlers ask for it.
async fn may_create(state: &ApiState, request: &ResourceRequest<'_>) -> Result<()> {
    let (Some(name), None) = (request.at.name.as_deref(), &request.at.subresource) else {
        return Ok(());
    };
    let create = Attributes::resource(
        "create",
        crate::authz::ResourceRequest {
            group: request.rt.group.clone(),
            resource: request.rt.plural.clone(),
            subresource: None,
            namespace: request.at.namespace.clone(),
            name: Some(name.to_owned()),
        },
    );
    if state.authz.authorize(request.user, &create).allowed() {
        return Ok(());
    }
    match state
        .store
        .get(request.rt, request.at.namespace.as_deref(), name)
        .await
    {
        Err(Error::NotFound(_)) => Err(create.forbidden(request.user, "")),
        _ => Ok(()),
    }
}

/// One request for a resource, parsed.
struct ResourceRequest<'a> {
    rt: &'a Arc<ResourceType>,
    at: &'a ResourcePath,
    method: &'a Method,
    headers: &'a HeaderMap,
    query: &'a Query,
    user: &'a crate::auth::User,
    /// Where a refused write leaves its warnings.
    warnings: &'a Arc<Warnings>,
    /// What the audit log records of the request, when the server keeps one.
    audit: Option<&'a Arc<crate::audit::Record>>,
}

async fn serve_resource(
    state: &ApiState,
    request: &ResourceRequest<'_>,
    representation: Representation,
    body: Bytes,
) -> Result<Response> {
    let ResourceRequest {
        rt,
        at,
        method,
        headers,
        query,
        ..
    } = *request;
    let store = &state.store;
    let ns = at.namespace.as_deref();
    let sub = at.subresource.as_deref();
    if sub.is_some_and(|sub| !serves_subresource(rt, sub)) {
        return Err(Error::UnknownPath);
    }
    if let (Some(sub), Some(name), Some(ns)) = (sub, at.name.as_deref(), ns)
        && pods::serves(rt, sub)
    {
        return pod_subresource(state, request, (ns, name, sub), &body).await;
    }
    if rt.virtual_only {
        return serve_virtual(state, request, body).await;
    }
    if sub == Some("token") {
        let (Some(ns), Some(name), &Method::POST) = (ns, at.name.as_deref(), method) else {
            return Err(Error::MethodNotAllowed);
        };
        let token = review::token(
            store,
            &state.auth,
            rt,
            ns,
            name,
            decode_object(headers, &body)?,
        )
        .await?;
        return Ok(json_response(StatusCode::CREATED, &token));
    }
    match (method, at.name.as_deref()) {
        (&Method::GET, None) => list_or_watch(state, request, representation).await,
        (&Method::GET, Some(name)) => {
            let object = store.get(rt, ns, name).await?;
            if sub == Some("scale") {
                let scale = scale::from_object(rt, &object)?;
                return Ok(json_response(StatusCode::OK, &scale));
            }
            Ok(representation.response(StatusCode::OK, &representation.object(rt, object)))
        }
        (&Method::POST, None) => {
            let object = decode_object(headers, &body)?;
            let options = writing(state, request)?;
            let written = store.create(rt, ns, object, &options).await?;
            Ok(written_response(
                StatusCode::CREATED,
                &representation,
                rt,
                written.object,
                &written.warnings,
            ))
        }
        (&Method::PUT, Some(name)) => replace(state, request, representation, name, body).await,
        (&Method::PATCH, Some(name)) => patch(state, request, representation, name, body).await,
        (&Method::DELETE, Some(name)) => delete(state, request, representation, name, body).await,
        (&Method::DELETE, None) => {
            let list = list_options(rt, query)?;
            let (options, policies) = deleting(state, request, &body)?;
            let page = store.delete_collection(rt, ns, &list, &options).await;
            let page = refused_with_warnings(page, request, policies.as_deref())?;
            let mut response =
                representation.response(StatusCode::OK, &representation.list(rt, page));
            if let Some(policies) = policies {
                add_warnings(&mut response, &policies.take_delete_warnings());
            }
            Ok(response)
        }
        _ => Err(Error::MethodNotAllowed),
    }
}

/// A GET of a collection: a list, or a watch (`watch=1`).
async fn list_or_watch(
    state: &ApiState,
    request: &ResourceRequest<'_>,
    representation: Representation,
) -> Result<Response> {
    let (rt, query, ns) = (request.rt, request.query, request.at.namespace.as_deref());
    let list = list_options(rt, query)?;
    if query.flag("watch") {
        return watch_stream::serve(state, rt.clone(), ns, query, list, representation).await;
    }
    if query.flag("sendInitialEvents") {
        return Err(Error::invalid(
            "ListOptions.meta.k8s.io",
            Default::default(),
            vec![crate::validation::FieldError {
                cause: crate::validation::CauseType::Forbidden,
                field: "sendInitialEvents".into(),
                message: "sendInitialEvents is forbidden for list".into(),
                value: None,
            }],
        ));
    }
    list::serve(state, rt, ns, &list, representation).await
}

/// A pod's subresources: `binding` and `eviction` (POST), and what a kubelet would answer.
async fn pod_subresource(
    state: &ApiState,
    request: &ResourceRequest<'_>,
    (ns, name, sub): (&str, &str, &str),
    body: &Bytes,
) -> Result<Response> {
    let (store, rt, method) = (&state.store, request.rt, request.method);
    let answer = match (sub, method) {
        ("binding", &Method::POST) => {
            pods::bind(
                store,
                rt,
                ns,
                Some(name),
                &decode_object(request.headers, body)?,
            )
            .await?
        }
        ("eviction", &Method::POST) => pods::evict(store, rt, ns, name).await?,
        ("binding" | "eviction", _) => return Err(Error::MethodNotAllowed),
        _ => pods::kubelet(store, rt, ns, name, sub).await?,
    };
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// Deletes one object: answered with the object while finalizers hold it (or when the kind
/// answers a delete with it), else with a `Status`.
async fn delete(
    state: &ApiState,
    request: &ResourceRequest<'_>,
    representation: Representation,
    name: &str,
    body: Bytes,
) -> Result<Response> {
    let (store, rt, ns) = (&state.store, request.rt, request.at.namespace.as_deref());
    let (options, policies) = deleting(state, request, &body)?;
    let deleted = store.delete(rt, ns, name, &options).await;
    let deleted = refused_with_warnings(deleted, request, policies.as_deref())?;
    let mut response = match deleted {
        Deleted::Pending(object) => {
            representation.response(StatusCode::OK, &representation.object(rt, object))
        }
        Deleted::Gone(object) if rt.delete_returns_object => {
            representation.response(StatusCode::OK, &representation.object(rt, object))
        }
        Deleted::Gone(object) => {
            let mut details =
                json!({"name": name, "kind": rt.plural, "uid": object["metadata"]["uid"]});
            if !rt.group.is_empty() {
                details["group"] = json!(rt.group);
            }
            json_response(
                StatusCode::OK,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
            )
        }
    };
    if let Some(policies) = policies {
        add_warnings(&mut response, &policies.take_delete_warnings());
    }
    Ok(response)
}

/// A resource nothing is stored for: reviews and bindings (created and answered), component
/// statuses (read, and there are none: atoll runs no separate scheduler, controller manager or
/// etcd to report on).
async fn serve_virtual(
    state: &ApiState,
    request: &ResourceRequest<'_>,
    body: Bytes,
) -> Result<Response> {
    let ResourceRequest {
        rt,
        at,
        method,
        headers,
        user,
        ..
    } = *request;
    let ns = at.namespace.as_deref();
    match (rt.plural.as_str(), method, at.name.as_deref()) {
        ("componentstatuses", &Method::GET, None) => {
            let mut response = json_response(
                StatusCode::OK,
                &json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": []}),
            );
            response.headers_mut().insert(
                header::WARNING,
                HeaderValue::from_static("299 - \"v1 ComponentStatus is deprecated in v1.19+\""),
            );
            Ok(response)
        }
        ("componentstatuses", &Method::GET, Some(name)) => Err(Error::NotFound(rt.target(name))),
        ("bindings", &Method::POST, None) => {
            let pods = state
                .store
                .registry()
                .catalog()
                .lookup("", "v1", "pods")
                .ok_or(Error::UnknownPath)?;
            let binding = decode_object(headers, &body)?;
            let answer =
                pods::bind(&state.store, &pods, ns.unwrap_or_default(), None, &binding).await?;
            Ok(json_response(StatusCode::CREATED, &answer))
        }
        (_, &Method::POST, None) if rt.verbs == ["create"] => {
            let object = decode_object(headers, &body)?;
            let review = review::answer(
                rt,
                user,
                &state.store,
                &state.auth,
                &state.authz,
                ns,
                object,
            )
            .await?;
            Ok(json_response(StatusCode::CREATED, &review))
        }
        _ => Err(Error::MethodNotAllowed),
    }
}

fn written_response(
    code: StatusCode,
    representation: &Representation,
    rt: &ResourceType,
    object: Value,
    warnings: &[String],
) -> Response {
    let mut response = representation.response(code, &representation.object(rt, object));
    add_warnings(&mut response, warnings);
    response
}

/// `Warning` headers (`299 - "..."`), one a warning.
fn add_warnings(response: &mut Response, warnings: &[String]) {
    for warning in warnings {
        let escaped = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
}

fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        params.contains(&"g=apidiscovery.k8s.io")
            && params.contains(&"v=v2")
            && params.contains(&"as=APIGroupDiscoveryList")
    })
}

async fn read_body(body: Body) -> Result<Bytes> {
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| Error::TooLarge(MAX_BODY_BYTES))
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// Decodes a create or replace body: JSON, YAML, or Kubernetes protobuf.
fn decode_object(headers: &HeaderMap, body: &[u8]) -> Result<Value> {
    let value: Value = match content_type(headers).as_str() {
        "" | "application/json" | "*/*" => serde_json::from_slice(body).map_err(|e| {
            Error::BadRequest(format!("couldn't get version/kind; json parse error: {e}"))
        })?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => crate::yaml::decode(body)
            .map_err(|e| Error::BadRequest(format!("error converting YAML to JSON: {e}")))?,
        crate::protobuf::CONTENT_TYPE => crate::protobuf::decode(body)
            .map_err(|e| Error::BadRequest(format!("error decoding protobuf: {e}")))?,
        _ => {
            return Err(Error::UnsupportedMediaType(
                "application/json, application/yaml, application/vnd.kubernetes.protobuf".into(),
            ));
        }
    };
    if !value.is_object() {
        return Err(Error::BadRequest(
            "couldn't get version/kind; json parse error: the body is not a JSON object".into(),
        ));
    }
    Ok(value)
}

fn patch_type(headers: &HeaderMap) -> Result<PatchType> {
    match content_type(headers).as_str() {
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => Ok(PatchType::Apply),
        _ => Err(Error::UnsupportedMediaType(
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json".into(),
        )),
    }
}

fn write_options(headers: &HeaderMap, query: &Query) -> Result<WriteOptions> {
    let dry_run = match query.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(Error::BadRequest(format!(
                "dryRun: Unsupported value: {other:?}: supported values: \"All\""
            )));
        }
    };
    let field_manager = match query.get("fieldManager") {
        Some(m) if !m.is_empty() => {
            if m.len() > 128 {
                return Err(Error::BadRequest(
                    "fieldManager: Too long: may not be more than 128 bytes".to_string(),
                ));
            }
            m.to_owned()
        }
        _ => headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|ua| ua.split('/').next().unwrap_or(ua).to_owned())
            .filter(|ua| !ua.is_empty())
            .unwrap_or_else(|| "unknown".into()),
    };
    let apply_without_manager = query.get("fieldManager").is_none_or(str::is_empty)
        && content_type(headers) == "application/apply-patch+yaml";
    Ok(WriteOptions {
        dry_run,
        field_manager: if apply_without_manager {
            String::new()
        } else {
            field_manager
        },
        field_validation: FieldValidation::parse(query.get("fieldValidation"))?,
        force: query.flag("force"),
        admission: None,
        warnings: Default::default(),
        actor: None,
        metadata_only: false,
    })
}

fn list_options(rt: &ResourceType, query: &Query) -> Result<ListOptions> {
    let limit = match query.get("limit") {
        None | Some("") => None,
        Some(l) => Some(l.parse::<i64>().map_err(|_| {
            Error::BadRequest(format!("limit: Invalid value: {l:?}: must be an integer"))
        })?)
        .filter(|l| *l > 0)
        .map(|l| l as usize),
    };
    Ok(ListOptions {
        labels: LabelSelector::parse(query.get("labelSelector").unwrap_or_default())?,
        fields: FieldSelector::parse(
            query.get("fieldSelector").unwrap_or_default(),
            supported_fields(&rt.group, &rt.plural),
        )?,
        limit,
        continue_token: query
            .get("continue")
            .filter(|c| !c.is_empty())
            .map(str::to_owned),
        resource_version: query.get("resourceVersion").map(str::to_owned),
        resource_version_match: query.get("resourceVersionMatch").map(str::to_owned),
    })
}

fn delete_options(headers: &HeaderMap, query: &Query, body: &[u8]) -> Result<DeleteOptions> {
    let mut options = DeleteOptions {
        dry_run: query.get("dryRun") == Some("All"),
        ..Default::default()
    };
    let mut body_policy = None;
    let mut orphan_dependents = None;
    let trimmed = body.iter().any(|b| !b.is_ascii_whitespace());
    if trimmed {
        let value = decode_object(headers, body)?;
        if value["dryRun"]
            .as_array()
            .is_some_and(|d| d.iter().any(|v| v == "All"))
        {
            options.dry_run = true;
        }
        options.precondition_uid = value["preconditions"]["uid"].as_str().map(str::to_owned);
        options.precondition_resource_version = value["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_owned);
        body_policy = value
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_owned);
        orphan_dependents = value.get("orphanDependents").and_then(Value::as_bool);
    }
    let policy = query
        .get("propagationPolicy")
        .map(str::to_owned)
        .or(body_policy);
    if let Some(orphan) = query.get("orphanDependents") {
        orphan_dependents = Some(orphan == "true");
    }
    options.propagation = propagation(policy.as_deref(), orphan_dependents)?;
    Ok(options)
}

/// Upstream's `ValidateDeleteOptions` of `propagationPolicy` and the deprecated
/// `orphanDependents`.
fn propagation(policy: Option<&str>, orphan: Option<bool>) -> Result<Option<Propagation>> {
    let invalid = |cause, message: String, value: &str| {
        Error::invalid(
            "DeleteOptions.meta.k8s.io",
            Default::default(),
            vec![crate::validation::FieldError {
                cause,
                field: "propagationPolicy".into(),
                message,
                value: Some(json!(value)),
            }],
        )
    };
    match (policy, orphan) {
        (Some(policy), Some(_)) => Err(invalid(
            crate::validation::CauseType::Invalid,
            "orphanDependents and deletionPropagation cannot be both set".into(),
            policy,
        )),
        (Some(policy), None) => Propagation::parse(policy).map(Some).ok_or_else(|| {
            invalid(
                crate::validation::CauseType::NotSupported,
                "supported values: \"Foreground\", \"Background\", \"Orphan\"".into(),
                policy,
            )
        }),
        (None, Some(true)) => Ok(Some(Propagation::Orphan)),
        (None, Some(false)) => Ok(Some(Propagation::Background)),
        (None, None) => Ok(None),
    }
}

/// Query parameters (last value wins, like Go's `url.Values.Get` with one value).
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    fn parse(raw: &str) -> Self {
        Query(
            form_urlencoded::parse(raw.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1" | "True"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_starts_with_its_kind_and_api_version_as_upstreams_does() {
        let err = Error::NotFound(crate::error::Target::new("", "configmaps", "nope"));
        let bytes = status_json(&err.to_status());
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.starts_with(r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"nope\" not found","reason":"NotFound","details":"#),
            "{text}"
        );
        assert!(text.ends_with(r#","code":404}"#), "{text}");
        // Nothing is lost or repeated.
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, err.to_status());
    }

    #[test]
    fn request_timeouts_are_go_durations_and_never_longer_than_a_minute() {
        let secs = |t: &str| parse_go_duration(t).map(|d| d.as_millis());
        assert_eq!(secs("32s"), Some(32_000));
        assert_eq!(secs("1m30s"), Some(90_000));
        assert_eq!(secs("250ms"), Some(250));
        assert_eq!(secs("10"), None, "a unit is needed");
        assert_eq!(secs("5 minutes"), None);
        assert_eq!(secs("99999999999999999999h"), None, "overflow is an error");
        let limit = |query: &str| {
            let request = Request::builder()
                .uri(format!("/api/v1/pods?{query}"))
                .body(Body::empty())
                .unwrap();
            time_limit(&request)
        };
        assert_eq!(limit("").unwrap(), Some(REQUEST_TIMEOUT));
        assert_eq!(
            limit("timeout=5s").unwrap(),
            Some(std::time::Duration::from_secs(5))
        );
        assert_eq!(limit("timeout=2h").unwrap(), Some(REQUEST_TIMEOUT));
        assert_eq!(limit("watch=true").unwrap(), None);
        assert!(limit("timeout=soon").is_err());
    }
}
