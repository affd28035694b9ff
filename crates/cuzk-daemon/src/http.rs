//! The read-only status port: `GET /metrics` (the Prometheus text `GetMetrics` returns),
//! `GET /status` (what `GetStatus` returns, as JSON, beside the fields of Curio's daemon's
//! `/status` that its monitoring UI reads) and `GET /healthz` (503 while the daemon drains, so a
//! health check stops sending it work), and the live page ([`crate::page`]: `GET /`,
//! `GET /timeline`). Nothing here changes the daemon's state.

use std::future::Future;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;
use tokio::net::TcpListener;

use crate::jobs::Daemon;
use crate::status::status_value;

/// The router: GET only.
pub fn router(daemon: Arc<Daemon>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .route("/healthz", get(health))
        .merge(crate::page::routes())
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
    Json(status_value(&daemon, daemon.status()))
}
