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

use crate::jobs::{Daemon, StatusReport};
use crate::srs::Tier;

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
    Json(status_json(&daemon.status()))
}

/// The status as JSON, in the API's field names.
pub fn status_json(report: &StatusReport) -> Value {
    json!({
        "gpus": report.gpus.iter().map(|gpu| json!({
            "ordinal": gpu.ordinal,
            "name": gpu.name,
            "vram_total_bytes": gpu.total_bytes,
            "vram_free_bytes": gpu.free_bytes,
            "current_job_id": gpu.job.as_ref().map(|(id, _)| id.as_str()),
            "current_proof_kind": gpu.job.as_ref().map(|(_, kind)| kind.queue_name()),
        })).collect::<Vec<_>>(),
        "loaded_srs": report.sets.iter().map(|set| json!({
            "circuit_id": set.circuit,
            "tier": match set.tier { Tier::Hot => "HOT", Tier::Warm => "WARM", Tier::Cold => "COLD" },
            "size_bytes": set.bytes,
            "ref_count": set.users,
        })).collect::<Vec<_>>(),
        "queues": report.queues.iter().map(|queue| json!({
            "proof_kind": queue.kind.queue_name(),
            "pending": queue.pending,
            "in_progress": queue.in_progress,
        })).collect::<Vec<_>>(),
        "total_proofs_completed": report.completed,
        "total_proofs_failed": report.failed,
        "uptime_seconds": report.uptime_seconds,
        "pinned_memory_bytes": report.pinned_bytes,
        "pinned_memory_limit_bytes": report.pinned_limit_bytes,
    })
}
