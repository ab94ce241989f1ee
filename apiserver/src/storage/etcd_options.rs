//! How to reach etcd, and the checks of those settings: what the flags parse into, compiled
//! whether or not this build has the etcd backend (the `etcd` feature).

use std::path::PathBuf;
use std::time::Duration;

use super::Error;

/// The longest prefix accepted.
pub const MAX_PREFIX_LEN: usize = 256;
/// The most endpoints accepted.
pub const MAX_ENDPOINTS: usize = 16;

/// How to reach etcd.
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// Client URLs (`http://host:port` or `https://host:port`).
    pub endpoints: Vec<String>,
    /// Where this API server's keys live (see [`check_prefix`]).
    pub prefix: String,
    /// The CA that signed etcd's serving certificates (PEM); needs `https` endpoints.
    pub ca_file: Option<PathBuf>,
    /// A client certificate and its key (PEM), for an etcd that authenticates clients.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// How long any one call to etcd may take, and how long a connection may take.
    pub timeout: Duration,
}

impl EtcdOptions {
    pub fn new(endpoints: Vec<String>, prefix: impl Into<String>) -> Self {
        EtcdOptions {
            endpoints,
            prefix: prefix.into(),
            ca_file: None,
            cert_file: None,
            key_file: None,
            timeout: Duration::from_secs(10),
        }
    }
}

/// A setting of the etcd backend that is not valid.
#[derive(Debug, thiserror::Error)]
pub enum OptionError {
    #[error("etcd endpoint {endpoint:?} is not an http:// or https:// URL with a host")]
    Endpoint { endpoint: String },
    #[error("no etcd endpoints given (at most {MAX_ENDPOINTS})")]
    Endpoints,
    #[error(
        "etcd prefix {prefix:?} must start with '/', not end with '/', hold no whitespace and be at most {MAX_PREFIX_LEN} bytes"
    )]
    Prefix { prefix: String },
}

impl From<OptionError> for Error {
    fn from(error: OptionError) -> Self {
        Error::Backend(Box::new(error))
    }
}

/// Checks one endpoint: an `http://` or `https://` URL with a host (and usually a port).
pub fn check_endpoint(endpoint: &str) -> Result<(), OptionError> {
    let bad = || OptionError::Endpoint {
        endpoint: endpoint.to_owned(),
    };
    let rest = endpoint
        .strip_prefix("http://")
        .or_else(|| endpoint.strip_prefix("https://"))
        .ok_or_else(bad)?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty()
        || authority.contains(['/', '?', '#', '@'])
        || authority.chars().any(char::is_whitespace)
    {
        return Err(bad());
    }
    let authority = authority
        .parse::<http::uri::Authority>()
        .map_err(|_| bad())?;
    // A port, when there is one, is a number (the URI grammar alone accepts `host:port`).
    let after_host = authority
        .as_str()
        .rsplit_once(']')
        .map_or(authority.as_str(), |(_, rest)| rest);
    if let Some((_, port)) = after_host.rsplit_once(':')
        && port.parse::<u16>().is_err()
    {
        return Err(bad());
    }
    Ok(())
}

/// Checks a prefix: starts with `/`, does not end with `/` (keys bring their own), no
/// whitespace or control characters, at most [`MAX_PREFIX_LEN`] bytes.
pub fn check_prefix(prefix: &str) -> Result<(), OptionError> {
    if !prefix.starts_with('/')
        || prefix.ends_with('/')
        || prefix.len() > MAX_PREFIX_LEN
        || prefix.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(OptionError::Prefix {
            prefix: prefix.to_owned(),
        });
    }
    Ok(())
}
