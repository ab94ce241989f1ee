//! The agent's channel to the hub: gRPC over TLS with the hub's CA pinned, every call carrying a
//! bearer token. An agent may be given several addresses of one hub (its replicas, of which one
//! leads): it uses one at a time and moves to the next when a call cannot reach it or is answered
//! UNAVAILABLE (what a replica that does not lead answers), so the retries it makes anyway go
//! around the list until they find the leader.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use atoll_proto::AUTHORIZATION;
use atoll_proto::v1::hub_client::HubClient;
use futures::future::BoxFuture;
use tonic::body::Body;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::Error;

/// Channels to each address of the hub, one in use at a time.
#[derive(Clone, Debug)]
pub struct Hubs {
    channels: Arc<[(String, Channel)]>,
    current: Arc<AtomicUsize>,
}

impl From<Channel> for Hubs {
    fn from(channel: Channel) -> Self {
        Hubs {
            channels: Arc::new([(String::new(), channel)]),
            current: Arc::default(),
        }
    }
}

impl Hubs {
    /// The address calls go to now.
    pub fn current(&self) -> &str {
        let index = self.current.load(Ordering::Relaxed) % self.channels.len();
        &self.channels[index].0
    }
}

/// The `grpc-status` of a response that ended in its headers (a refusal), if any.
fn status_in_headers(response: &http::Response<Body>) -> Option<tonic::Code> {
    let value = response.headers().get("grpc-status")?.to_str().ok()?;
    Some(tonic::Code::from_i32(value.parse().ok()?))
}

impl tower::Service<http::Request<Body>> for Hubs {
    type Response = http::Response<Body>;
    type Error = tonic::transport::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each call readies the channel it picks.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let count = self.channels.len();
        let index = self.current.load(Ordering::Relaxed) % count;
        let (address, mut channel) = self.channels[index].clone();
        let current = self.current.clone();
        Box::pin(async move {
            std::future::poll_fn(|cx| tower::Service::poll_ready(&mut channel, cx)).await?;
            let answer = tower::Service::call(&mut channel, request).await;
            let moved_on = match &answer {
                Err(_) => true,
                Ok(response) => status_in_headers(response) == Some(tonic::Code::Unavailable),
            };
            if moved_on && count > 1 {
                let next = (index + 1) % count;
                if current
                    .compare_exchange(index, next, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    tracing::info!(from = %address, "the hub address does not serve; trying the next one");
                }
            }
            answer
        })
    }
}

/// Whether two address lists name the same hub: they share an address. A credential stored for
/// `https://a:9443` stays good when the agent is given `https://a:9443,https://b:9443`.
pub fn same_hub(stored: &str, configured: &str) -> bool {
    let configured = addresses(configured);
    addresses(stored).iter().any(|a| configured.contains(a))
}

/// The addresses in a comma-separated list, in order, without blanks.
pub fn addresses(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Adds `authorization: Bearer <token>` to every call.
#[derive(Clone)]
pub struct Bearer(MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        request.metadata_mut().insert(AUTHORIZATION, self.0.clone());
        Ok(request)
    }
}

/// A hub client authenticated with one token.
pub type Client = HubClient<InterceptedService<Hubs, Bearer>>;

/// Lazily connecting channels to the hub at `urls` (one address, or several separated by commas,
/// tried in turn), trusting only `ca_pem`.
pub fn channel(urls: &str, ca_pem: &str) -> Result<Hubs, Error> {
    let list = addresses(urls);
    if list.is_empty() {
        return Err(Error::Hub(format!(
            "hub address {urls:?} names no address (https://HOST:PORT, several separated by commas)"
        )));
    }
    // Every address is checked before any channel is made.
    let endpoints = list
        .into_iter()
        .map(|url| Ok((url.clone(), endpoint(&url, ca_pem)?)))
        .collect::<Result<Vec<_>, Error>>()?;
    let channels: Vec<(String, Channel)> = endpoints
        .into_iter()
        .map(|(url, endpoint)| (url, endpoint.connect_lazy()))
        .collect();
    Ok(Hubs {
        channels: channels.into(),
        current: Arc::default(),
    })
}

/// How to reach the hub at `url`, trusting only `ca_pem`.
fn endpoint(url: &str, ca_pem: &str) -> Result<Endpoint, Error> {
    let endpoint = Endpoint::from_shared(url.to_owned())
        .map_err(|e| Error::Hub(format!("hub address {url:?} is not a URL: {e}")))?;
    if endpoint.uri().scheme_str() != Some("https") {
        return Err(Error::Hub(format!(
            "hub address {url:?} is not https://: the agent sends its token and credential only over TLS"
        )));
    }
    let host = endpoint
        .uri()
        .host()
        .unwrap_or("localhost")
        .trim_matches(['[', ']'])
        .to_owned();
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca_pem))
        .domain_name(host);
    let endpoint = endpoint
        .tls_config(tls)
        .map_err(|e| Error::Hub(format!("cannot configure TLS for {url}: {e}")))?
        .connect_timeout(std::time::Duration::from_secs(10))
        .http2_keep_alive_interval(std::time::Duration::from_secs(30))
        .keep_alive_while_idle(true);
    Ok(endpoint)
}

/// A client on `channel` that presents `token`.
pub fn client(channel: impl Into<Hubs>, token: &str) -> Result<Client, Error> {
    let value = MetadataValue::try_from(format!("Bearer {token}")).map_err(|_| {
        Error::Hub("the token holds characters that cannot travel in metadata".to_owned())
    })?;
    Ok(HubClient::with_interceptor(channel.into(), Bearer(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_hub_addresses_are_taken() {
        for url in [
            "http://hub.example:9443",
            "hub.example:9443",
            "grpc://hub:1",
        ] {
            let error = channel(url, "")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                error.contains("is not https://") || error.contains("is not a URL"),
                "{url}: {error}"
            );
        }
        // One bad address among several is refused too.
        let error = channel("https://hub-a:9443,http://hub-b:9443", "")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("\"http://hub-b:9443\" is not https://"),
            "{error}"
        );
        let error = channel(" , ", "").err().map(|e| e.to_string());
        assert!(error.unwrap_or_default().contains("names no address"));
    }

    #[test]
    fn several_addresses_are_taken_in_order() {
        assert_eq!(
            addresses("https://a:1, https://b:2,,https://c:3 "),
            ["https://a:1", "https://b:2", "https://c:3"]
        );
        assert_eq!(addresses("https://a:1"), ["https://a:1"]);
    }

    #[test]
    fn a_credential_stays_with_a_hub_that_gained_or_reordered_addresses() {
        assert!(same_hub("https://a:1", "https://a:1"));
        assert!(same_hub("https://a:1", "https://b:2,https://a:1"));
        assert!(same_hub("https://a:1,https://b:2", "https://b:2"));
        assert!(!same_hub("https://a:1", "https://c:3,https://b:2"));
        assert!(!same_hub("", "https://a:1"));
    }

    #[tokio::test]
    async fn a_call_that_cannot_reach_an_address_moves_to_the_next() {
        // Two addresses nobody listens on (ports just released): each failed call moves on.
        let free = || {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let (a, b) = (free(), free());
        let urls = format!("https://127.0.0.1:{a},https://127.0.0.1:{b}");
        let hubs = channel(&urls, "").unwrap();
        assert_eq!(hubs.current(), format!("https://127.0.0.1:{a}"));
        let mut hub = client(hubs.clone(), "token").unwrap();
        let request = atoll_proto::v1::RenewCredentialRequest::default();
        let status = hub.renew_credential(request.clone()).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
        assert_eq!(hubs.current(), format!("https://127.0.0.1:{b}"));
        hub.renew_credential(request).await.unwrap_err();
        assert_eq!(hubs.current(), format!("https://127.0.0.1:{a}"));
    }
}
