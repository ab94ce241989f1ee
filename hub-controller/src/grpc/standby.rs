//! The agents' service as a hub replica that does not lead answers it: every call is refused
//! with UNAVAILABLE, saying that this replica does not lead, before anything is read from the API
//! server. Agents retry UNAVAILABLE with backoff, and one given several hub addresses moves on to
//! the next; on Kubernetes the Service routes only to the ready replica, the leader.

use atoll_proto::v1::hub_server::Hub;
use atoll_proto::v1::{
    HeartbeatRequest, HeartbeatResponse, JoinRequest, JoinResponse, RenewCredentialRequest,
    RenewCredentialResponse, SyncEvent, SyncRequest, WorkStatusAck, WorkStatusReport,
};
use tonic::{Request, Response, Status};

/// The message every call to a replica that does not lead gets.
pub const NOT_LEADING: &str = "this hub replica is not leading; another replica serves agents (retry, or try another address)";

/// The service of a replica that does not lead.
#[derive(Debug, Default, Clone, Copy)]
pub struct Standby;

fn refuse<T>() -> Result<T, Status> {
    Err(Status::unavailable(NOT_LEADING))
}

#[tonic::async_trait]
impl Hub for Standby {
    async fn join(&self, _: Request<JoinRequest>) -> Result<Response<JoinResponse>, Status> {
        refuse()
    }

    async fn heartbeat(
        &self,
        _: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        refuse()
    }

    type SyncStream = futures::stream::Empty<Result<SyncEvent, Status>>;

    async fn sync(&self, _: Request<SyncRequest>) -> Result<Response<Self::SyncStream>, Status> {
        refuse()
    }

    async fn report_work_status(
        &self,
        _: Request<WorkStatusReport>,
    ) -> Result<Response<WorkStatusAck>, Status> {
        refuse()
    }

    async fn renew_credential(
        &self,
        _: Request<RenewCredentialRequest>,
    ) -> Result<Response<RenewCredentialResponse>, Status> {
        refuse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_call_is_refused_as_unavailable_saying_it_does_not_lead() {
        let standby = Standby;
        let statuses = [
            standby
                .join(Request::new(JoinRequest::default()))
                .await
                .err(),
            standby
                .heartbeat(Request::new(HeartbeatRequest::default()))
                .await
                .err(),
            standby
                .sync(Request::new(SyncRequest::default()))
                .await
                .err(),
            standby
                .report_work_status(Request::new(WorkStatusReport::default()))
                .await
                .err(),
            standby
                .renew_credential(Request::new(RenewCredentialRequest::default()))
                .await
                .err(),
        ];
        for status in statuses {
            let status = status.expect("refused");
            assert_eq!(status.code(), tonic::Code::Unavailable);
            assert!(status.message().contains("not leading"), "{status:?}");
        }
    }
}
