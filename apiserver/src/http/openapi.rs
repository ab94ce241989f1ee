//! `GET /openapi/v2`, negotiated as kube-openapi's handler does: the `Accept` clauses in order of
//! preference (quality, then specificity), each tried against JSON, then the deprecated and the
//! current protobuf media types; `*/*` (or no `Accept`) is JSON; nothing acceptable is a bare
//! 406. Both encodings carry the ETag of the JSON, and a matching `If-None-Match` is a 304.

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};

use crate::error::{Error, Result};
use crate::openapi::v2;
use crate::registry::Catalog;

/// The protobuf media type kube-openapi answers with.
pub const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// The older spelling client-go still asks for; answered with [`PROTOBUF`].
pub const PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// An encoding of the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Json,
    Protobuf,
}

/// What the server offers, in the order each `Accept` clause is tried against it.
const OFFERED: [(&str, Encoding); 3] = [
    ("application/json", Encoding::Json),
    (PROTOBUF_DEPRECATED, Encoding::Protobuf),
    (PROTOBUF, Encoding::Protobuf),
];

/// One clause of an `Accept` header.
struct Clause<'a> {
    kind: &'a str,
    subtype: &'a str,
    quality: f32,
}

/// The clauses of an `Accept` header, most preferred first: by quality, then those without a
/// wildcard type, then those without a wildcard subtype (goautoneg's order). Clauses that are
/// not `type/subtype` (or `*`) are skipped.
fn clauses(accept: &str) -> Vec<Clause<'_>> {
    let mut out: Vec<Clause<'_>> = accept
        .split(',')
        .filter_map(|part| {
            let mut params = part.split(';');
            let range = params.next()?.trim();
            let (kind, subtype) = match range.split_once('/') {
                Some((kind, subtype)) if !subtype.contains('/') => (kind.trim(), subtype.trim()),
                None if range == "*" => ("*", "*"),
                _ => return None,
            };
            let quality = params
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| k.trim() == "q")
                .map_or(1.0, |(_, q)| q.trim().parse().unwrap_or(0.0));
            Some(Clause {
                kind,
                subtype,
                quality,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.quality
            .total_cmp(&a.quality)
            .then((a.kind == "*").cmp(&(b.kind == "*")))
            .then((a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    out
}

/// The encoding `accept` asks for, or `None` when the server offers nothing acceptable.
fn negotiate(accept: &str) -> Option<Encoding> {
    let accept = if accept.trim().is_empty() {
        "*/*"
    } else {
        accept
    };
    clauses(accept).iter().find_map(|clause| {
        OFFERED.iter().find_map(|(media, encoding)| {
            let (kind, subtype) = media.split_once('/')?;
            let matches = (clause.kind == "*" || clause.kind == kind)
                && (clause.subtype == "*" || clause.subtype == subtype);
            matches.then_some(*encoding)
        })
    })
}

/// Answers `GET /openapi/v2` for `catalog`.
pub async fn serve_v2(
    catalog: Arc<Catalog>,
    method: &Method,
    headers: &HeaderMap,
) -> Result<Response> {
    if method != Method::GET && method != Method::HEAD {
        return Err(Error::MethodNotAllowed);
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let vary = (header::VARY, HeaderValue::from_static("Accept"));
    let Some(encoding) = negotiate(accept) else {
        return Ok((StatusCode::NOT_ACCEPTABLE, [vary]).into_response());
    };
    // Building the document (once per catalog) takes a while: not on a request thread.
    let document = tokio::task::spawn_blocking(move || {
        let document = v2::document(&catalog);
        let protobuf = match encoding {
            Encoding::Protobuf => Some(document.protobuf()),
            Encoding::Json => None,
        };
        (document, protobuf)
    })
    .await
    .map_err(|e| Error::Internal(format!("building the OpenAPI v2 document: {e}")))?;
    let (document, protobuf) = document;
    let etag = HeaderValue::from_str(&format!("\"{}\"", document.etag()))
        .map_err(|e| Error::Internal(format!("ETag: {e}")))?;
    let unchanged = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag.to_str().unwrap_or_default());
    if unchanged {
        return Ok((StatusCode::NOT_MODIFIED, [vary, (header::ETAG, etag)]).into_response());
    }
    let (content_type, body) = match protobuf {
        Some(encoded) => {
            let bytes = encoded.map_err(|e| {
                Error::ServiceUnavailable(format!("the OpenAPI v2 document cannot be encoded: {e}"))
            })?;
            (PROTOBUF, bytes)
        }
        None => ("application/json", document.json().clone()),
    };
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::ETAG, etag),
            vary,
        ],
        Body::from(body),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_is_negotiated_as_kube_openapi_does() {
        assert_eq!(negotiate(""), Some(Encoding::Json));
        assert_eq!(negotiate("*/*"), Some(Encoding::Json));
        assert_eq!(negotiate("application/*"), Some(Encoding::Json));
        assert_eq!(negotiate("application/json"), Some(Encoding::Json));
        assert_eq!(negotiate(PROTOBUF), Some(Encoding::Protobuf));
        assert_eq!(negotiate(PROTOBUF_DEPRECATED), Some(Encoding::Protobuf));
        // client-go's discovery client: protobuf preferred, JSON as the fallback.
        assert_eq!(
            negotiate(&format!("{PROTOBUF_DEPRECATED}, application/json;q=0.9")),
            Some(Encoding::Protobuf)
        );
        assert_eq!(
            negotiate(&format!("*/*;q=0.1, {PROTOBUF}")),
            Some(Encoding::Protobuf)
        );
        assert_eq!(
            negotiate(&format!("{PROTOBUF};q=0.5, application/json")),
            Some(Encoding::Json)
        );
        assert_eq!(negotiate("text/html, application/xml"), None);
        assert_eq!(negotiate("application/yaml"), None);
        assert_eq!(negotiate("garbage"), None);
    }
}
