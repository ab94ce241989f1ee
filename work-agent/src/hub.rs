//! The agent's channel to the hub: gRPC over TLS with the hub's CA pinned, every call carrying a
//! bearer token.

use atoll_proto::AUTHORIZATION;
use atoll_proto::v1::hub_client::HubClient;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::Error;

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
pub type Client = HubClient<InterceptedService<Channel, Bearer>>;

/// A lazily connecting channel to the hub at `url`, trusting only `ca_pem`.
pub fn channel(url: &str, ca_pem: &str) -> Result<Channel, Error> {
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
    Ok(endpoint.connect_lazy())
}

/// A client on `channel` that presents `token`.
pub fn client(channel: Channel, token: &str) -> Result<Client, Error> {
    let value = MetadataValue::try_from(format!("Bearer {token}")).map_err(|_| {
        Error::Hub("the token holds characters that cannot travel in metadata".to_owned())
    })?;
    Ok(HubClient::with_interceptor(channel, Bearer(value)))
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
    }
}
