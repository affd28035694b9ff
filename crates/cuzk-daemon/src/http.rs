//! The read-only status port: `GET /metrics` (the Prometheus text `GetMetrics` returns),
//! `GET /status` (what `GetStatus` returns, as JSON) and `GET /healthz` (503 while the daemon
//! drains, so a health check stops sending it work). Nothing here changes the daemon's state.

use std::future::Future;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::jobs::Daemon;
use crate::proto;
use crate::service::status_reply;

/// The router: GET only.
pub fn router(daemon: Arc<Daemon>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .route("/healthz", get(health))
        .with_state(daemon)
}

/// Serves the status port until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    daemon: Arc<Daemon>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(daemon))
        .with_graceful_shutdown(shutdown)
        .await
}

async fn metrics(State(daemon): State<Arc<Daemon>>) -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        daemon.metrics_text(),
    )
}

async fn health(State(daemon): State<Arc<Daemon>>) -> impl IntoResponse {
    if daemon.draining() {
        (StatusCode::SERVICE_UNAVAILABLE, "draining\n")
    } else {
        (StatusCode::OK, "ok\n")
    }
}

async fn status(State(daemon): State<Arc<Daemon>>) -> Json<Value> {
    Json(status_json(&status_reply(daemon.status())))
}

/// The status reply as JSON, in the API's field names (tiers by name).
pub fn status_json(status: &proto::GetStatusResponse) -> Value {
    json!({
        "gpus": status.gpus.iter().map(|gpu| json!({
            "ordinal": gpu.ordinal,
            "name": gpu.name,
            "vram_total_bytes": gpu.vram_total_bytes,
            "vram_free_bytes": gpu.vram_free_bytes,
            "current_job_id": gpu.current_job_id,
            "current_proof_kind": gpu.current_proof_kind,
            "out_of_service": gpu.out_of_service,
            "out_of_service_reason": gpu.out_of_service_reason,
            "device_faults": gpu.device_faults,
            "partitions_proven": gpu.partitions_proven,
        })).collect::<Vec<_>>(),
        "loaded_srs": status.loaded_srs.iter().map(|set| json!({
            "circuit_id": set.circuit_id,
            "tier": set.tier().as_str_name(),
            "size_bytes": set.size_bytes,
            "ref_count": set.ref_count,
        })).collect::<Vec<_>>(),
        "queues": status.queues.iter().map(|queue| json!({
            "proof_kind": queue.proof_kind,
            "pending": queue.pending,
            "in_progress": queue.in_progress,
        })).collect::<Vec<_>>(),
        "total_proofs_completed": status.total_proofs_completed,
        "total_proofs_failed": status.total_proofs_failed,
        "uptime_seconds": status.uptime_seconds,
        "pinned_memory_bytes": status.pinned_memory_bytes,
        "pinned_memory_limit_bytes": status.pinned_memory_limit_bytes,
    })
}
