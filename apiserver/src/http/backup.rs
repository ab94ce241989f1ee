//! Backups and restores over HTTP: `GET /atoll/v1/backup` streams a backup of a serving
//! cluster; a server in restore mode answers only health checks and `PUT /atoll/v1/restore`,
//! and `503 ServiceUnavailable` to everything else. Both are for the cluster's administrators
//! (group `system:masters`).

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bytes::BytesMut;
use http::{Method, StatusCode, header};
use serde_json::json;
use tokio::io::AsyncReadExt as _;
use tokio::sync::{oneshot, watch};

use super::{error_response, json_response, path};
use crate::auth::{Authenticator, User};
use crate::backup::restore::{StageError, stage};
use crate::error::{Error, Result};

/// The group whose members may take and restore backups.
const MASTERS: &str = "system:masters";
/// How many bytes of a backup are in flight between its writer and the response at most.
const STREAM_CHUNK: usize = 64 * 1024;

/// Refuses callers outside `system:masters`, as kube-apiserver words a refusal on a path.
pub(crate) fn require_masters(user: &User, verb: &str, path: &str) -> Result<()> {
    if user.groups.iter().any(|group| group == MASTERS) {
        return Ok(());
    }
    Err(Error::Forbidden(format!(
        "forbidden: User {:?} cannot {verb} path {path:?}: only members of group {MASTERS} may",
        user.name
    )))
}

/// The response of `GET /atoll/v1/backup`: the backup, streamed as it is read. A failure once
/// the response has started ends the stream abruptly, so the client sees an error (and a file
/// cut short fails verification as truncated) rather than a backup that looks whole.
pub(crate) fn stream(source: Arc<crate::backup::Source>) -> Response {
    let (mut writer, reader) = tokio::io::duplex(STREAM_CHUNK);
    let (done, outcome) = oneshot::channel();
    tokio::spawn(async move {
        let result = source.write(&mut writer).await;
        match &result {
            Ok(header) => tracing::info!(
                revision = header.revision,
                objects = header.objects,
                "backup sent"
            ),
            Err(error) => tracing::warn!(%error, "backup failed"),
        }
        let _ = done.send(result.map(|_| ()).map_err(|error| error.to_string()));
    });
    let chunks = futures::stream::unfold(Some((reader, outcome)), |state| async move {
        let (mut reader, outcome) = state?;
        let mut chunk = BytesMut::with_capacity(STREAM_CHUNK);
        match reader.read_buf(&mut chunk).await {
            Ok(0) => match outcome.await {
                Ok(Ok(())) => None,
                Ok(Err(message)) => Some((Err(std::io::Error::other(message)), None)),
                Err(_) => Some((
                    Err(std::io::Error::other("the backup stopped before its end")),
                    None,
                )),
            },
            Ok(_) => Some((Ok(chunk.freeze()), Some((reader, outcome)))),
            Err(error) => Some((Err(error), None)),
        }
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/octet-stream")],
        Body::from_stream(chunks),
    )
        .into_response()
}

/// What a server in restore mode shares between requests.
pub struct RestoreState {
    pub auth: Authenticator,
    pub data_dir: PathBuf,
    pub cluster_name: String,
    pub max_restore_bytes: u64,
    /// Turned true once a backup is staged: the server must be restarted to install it.
    pub restart: watch::Sender<bool>,
    /// Why the last staged backup could not be installed, if it could not.
    pub failure: Option<String>,
    /// Held by the one upload in progress.
    pub uploading: tokio::sync::Mutex<()>,
}

impl RestoreState {
    fn waiting_message(&self) -> String {
        let mut message = format!(
            "this cluster waits for a backup to be restored into it (atoll hosted create {} --restore FILE)",
            self.cluster_name
        );
        if let Some(failure) = &self.failure {
            message.push_str(&format!(
                "; the last backup uploaded could not be installed: {failure}"
            ));
        }
        message
    }
}

/// The router of a server in restore mode.
pub fn restore_router(state: Arc<RestoreState>) -> Router {
    Router::new().fallback(handle_waiting).with_state(state)
}

async fn handle_waiting(State(state): State<Arc<RestoreState>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    match serve_waiting(&state, request).await {
        Ok(response) => response,
        Err(err) => {
            if err.code().is_server_error() && err.code() != StatusCode::SERVICE_UNAVAILABLE {
                tracing::error!(%method, %path, error = %err, "request failed");
            } else {
                tracing::debug!(%method, %path, error = %err, "request refused");
            }
            error_response(&err)
        }
    }
}

async fn serve_waiting(state: &RestoreState, request: Request) -> Result<Response> {
    match request.uri().path() {
        "/livez" | "/healthz" => {
            Ok((StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], "ok").into_response())
        }
        "/readyz" => Ok((
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, "text/plain")],
            "this cluster waits for a backup to be restored into it\n",
        )
            .into_response()),
        "/version" | "/version/" => Ok(json_response(StatusCode::OK, &crate::discovery::version())),
        path::RESTORE => restore(state, request).await,
        _ => Err(Error::ServiceUnavailable(state.waiting_message())),
    }
}

/// `PUT /atoll/v1/restore`: stages the uploaded backup and asks for a restart.
async fn restore(state: &RestoreState, request: Request) -> Result<Response> {
    let authorization = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let user = state
        .auth
        .authenticate(authorization)
        .ok_or(Error::Unauthorized)?;
    require_masters(&user, "update", path::RESTORE)?;
    if request.method() != Method::PUT {
        return Err(Error::MethodNotAllowed);
    }
    let too_large = Error::TooLarge(usize::try_from(state.max_restore_bytes).unwrap_or(usize::MAX));
    let announced = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|length| length > state.max_restore_bytes) {
        return Err(too_large);
    }
    let Ok(_uploading) = state.uploading.try_lock() else {
        return Err(Error::Busy(
            "another backup is being uploaded into this cluster; try again once it is done".into(),
        ));
    };
    let body = request.into_body().into_data_stream();
    let header = match stage(&state.data_dir, body, state.max_restore_bytes).await {
        Ok(header) => header,
        Err(StageError::TooLarge(_)) => return Err(too_large),
        Err(StageError::Backup(error)) => return Err(Error::BadRequest(error.to_string())),
        Err(error @ StageError::Upload(_)) => {
            return Err(Error::BadRequest(crate::error::chain(&error)));
        }
        Err(error @ StageError::Io { .. }) => {
            return Err(Error::Internal(crate::error::chain(&error)));
        }
    };
    tracing::info!(
        revision = header.revision,
        objects = header.objects,
        from = %header.server,
        "backup staged; the server restarts to install it"
    );
    state.restart.send_replace(true);
    let message = format!(
        "the backup of cluster {} at revision {} ({} objects, taken {}) is staged; the server restarts to install it",
        header.cluster_name, header.revision, header.objects, header.created_at
    );
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 200,
            "message": message,
        }),
    ))
}

/// `GET /atoll/v1/backup` of a serving server (for `system:masters`); `PUT /atoll/v1/restore`
/// is for a server that waits for a restore, which this one does not.
pub(super) fn serve(
    state: &super::ApiState,
    path: &super::ApiPath,
    method: &Method,
    user: &User,
) -> Result<Response> {
    if matches!(path, super::ApiPath::Restore) {
        require_masters(user, "update", super::path::RESTORE)?;
        return Err(Error::NotWaitingForRestore);
    }
    require_masters(user, "get", super::path::BACKUP)?;
    if method != Method::GET {
        return Err(Error::MethodNotAllowed);
    }
    Ok(stream(state.backup.clone()))
}
