//! The gRPC adapter: each rpc takes its request apart, calls one [`Daemon`] method and builds
//! the reply. Checks and decisions live in the daemon; errors become statuses in one place
//! (`From<DaemonError> for Status`).

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use crate::error::DaemonError;
use crate::jobs::{Awaited, Daemon};
use crate::outcome::{self, Ended};
use crate::proto::{self, await_proof_response, proving_engine_server::ProvingEngine};
use crate::status::status_reply;

/// `cuzk.v1.ProvingEngine` over a [`Daemon`].
#[derive(Clone, Debug)]
pub struct Service {
    daemon: Arc<Daemon>,
}

impl Service {
    pub fn new(daemon: Arc<Daemon>) -> Self {
        Service { daemon }
    }

    /// The server, with Curio's message limits both ways.
    pub fn server(self) -> proto::proving_engine_server::ProvingEngineServer<Self> {
        proto::proving_engine_server::ProvingEngineServer::new(self)
            .max_decoding_message_size(proto::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(proto::MAX_MESSAGE_BYTES)
    }

    async fn await_reply(
        &self,
        job_id: String,
        timeout_ms: u64,
    ) -> Result<proto::AwaitProofResponse, DaemonError> {
        let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms));
        Ok(match self.daemon.await_job(&job_id, timeout).await? {
            Awaited::Ended(ended) => ended_reply(job_id, &ended),
            Awaited::TimedOut => proto::AwaitProofResponse {
                job_id,
                status: await_proof_response::Status::Timeout.into(),
                ..Default::default()
            },
        })
    }
}

fn ended_reply(job_id: String, ended: &Ended) -> proto::AwaitProofResponse {
    let status = match ended.status {
        outcome::Status::Completed => await_proof_response::Status::Completed,
        outcome::Status::Failed => await_proof_response::Status::Failed,
        outcome::Status::Cancelled => await_proof_response::Status::Cancelled,
    };
    let t = ended.timings;
    proto::AwaitProofResponse {
        job_id,
        status: status.into(),
        proof: ended.proof.clone(),
        error_message: ended.error.clone(),
        queue_wait_ms: t.queue_wait_ms,
        srs_load_ms: t.srs_load_ms,
        synthesis_ms: t.synthesis_ms,
        gpu_compute_ms: t.gpu_compute_ms,
        total_ms: t.total_ms,
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(
        &self,
        request: Request<proto::SubmitProofRequest>,
    ) -> Result<Response<proto::SubmitProofResponse>, Status> {
        let submitted = self.daemon.submit(request.into_inner()).await?;
        Ok(Response::new(proto::SubmitProofResponse {
            job_id: submitted.job_id,
            queue_position: submitted.queue_position,
            assigned_gpu: submitted.assigned_gpu,
        }))
    }

    async fn await_proof(
        &self,
        request: Request<proto::AwaitProofRequest>,
    ) -> Result<Response<proto::AwaitProofResponse>, Status> {
        let request = request.into_inner();
        let reply = self.await_reply(request.job_id, request.timeout_ms).await?;
        Ok(Response::new(reply))
    }

    async fn prove(
        &self,
        request: Request<proto::ProveRequest>,
    ) -> Result<Response<proto::ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| DaemonError::invalid("submit", "missing"))?;
        // The job runs in its own task: if this call is dropped (the client went away), the
        // proof still finishes and waits for an AwaitProof or a retry under the same id.
        let (job_id, ended) = self.daemon.prove(submit).await?;
        Ok(Response::new(proto::ProveResponse {
            result: Some(ended_reply(job_id, &ended)),
        }))
    }

    async fn cancel_proof(
        &self,
        request: Request<proto::CancelProofRequest>,
    ) -> Result<Response<proto::CancelProofResponse>, Status> {
        let id = request.into_inner().job_id;
        let was_running = self.daemon.cancel(&id, "cancelled by CancelProof")?;
        Ok(Response::new(proto::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _: Request<proto::GetStatusRequest>,
    ) -> Result<Response<proto::GetStatusResponse>, Status> {
        Ok(Response::new(status_reply(self.daemon.status())))
    }

    async fn get_metrics(
        &self,
        _: Request<proto::GetMetricsRequest>,
    ) -> Result<Response<proto::GetMetricsResponse>, Status> {
        Ok(Response::new(proto::GetMetricsResponse {
            prometheus_text: self.daemon.metrics_text(),
        }))
    }

    async fn preload_srs(
        &self,
        request: Request<proto::PreloadSrsRequest>,
    ) -> Result<Response<proto::PreloadSrsResponse>, Status> {
        let circuit = request.into_inner().circuit_id;
        let preloaded = self.daemon.srs().preload(&circuit).await?;
        Ok(Response::new(proto::PreloadSrsResponse {
            already_loaded: preloaded.already_loaded,
            load_time_ms: preloaded.load_ms,
        }))
    }

    async fn evict_srs(
        &self,
        request: Request<proto::EvictSrsRequest>,
    ) -> Result<Response<proto::EvictSrsResponse>, Status> {
        let circuit = request.into_inner().circuit_id;
        let evicted = self.daemon.srs().evict(&circuit)?;
        Ok(Response::new(proto::EvictSrsResponse {
            was_loaded: evicted.was_loaded,
            freed_bytes: evicted.freed_bytes,
        }))
    }
}
