//! The live pipeline page on the status port. `GET /` is one self-contained HTML file (script
//! and style inline: no build step, nothing fetched from elsewhere) that polls
//! `GET /timeline?since=N`: the engine's records after cursor N from the daemon's feed, a bounded
//! ring ([`crate::feed::EVENTS_KEPT`]), the last proofs and failures, the devices, the queues by
//! kind and priority, and what `/status` says, under this daemon's boot id. The JSON's shape is in
//! docs/daemon.md, "The live page".

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::jobs::Daemon;
use crate::kinds::priority_name;
use crate::status::{gpu_json, gpu_status, status_value};

const INDEX: &str = include_str!("index.html");

/// The page may run its own script and style and read this port, nothing else.
const POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
                      style-src 'unsafe-inline'; connect-src 'self'";

/// `/` and `/timeline`, GET only.
pub fn routes() -> Router<Arc<Daemon>> {
    Router::new()
        .route("/", get(index))
        .route("/timeline", get(timeline))
}

async fn index() -> impl IntoResponse {
    (
        [
            (CONTENT_TYPE, "text/html; charset=utf-8"),
            (CACHE_CONTROL, "no-cache"),
            (CONTENT_SECURITY_POLICY, POLICY),
        ],
        INDEX,
    )
}

async fn timeline(State(daemon): State<Arc<Daemon>>, RawQuery(query): RawQuery) -> Response {
    match cursor(query.as_deref().unwrap_or("")) {
        Ok(since) => Json(snapshot(&daemon, since)).into_response(),
        Err(message) => (StatusCode::BAD_REQUEST, message + "\n").into_response(),
    }
}

/// The `since` of a query string (0 when absent); anything else is refused, saying why.
fn cursor(query: &str) -> Result<u64, String> {
    let mut since = None;
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let shown: String = value.chars().take(40).collect();
        match name {
            "since" if since.is_some() => return Err("since: given twice".to_owned()),
            "since" => {
                since = Some(value.parse::<u64>().map_err(|_| {
                    format!(
                        "since: {shown:?} is not a cursor: a whole number from 0, the `next` of \
                         the last response"
                    )
                })?);
            }
            _ => {
                let name: String = name.chars().take(40).collect();
                return Err(format!(
                    "{name:?}: not a parameter of /timeline (it takes `since` only)"
                ));
            }
        }
    }
    Ok(since.unwrap_or(0))
}

/// One poll's answer: the feed after `since`, and the daemon as it is now.
fn snapshot(daemon: &Daemon, since: u64) -> Value {
    let view = daemon.feed().since(since);
    let reports = daemon.devices();
    let status = status_value(daemon, daemon.status_with(reports.clone()));
    let devices: Vec<Value> = reports
        .into_iter()
        .map(|device| {
            json!({
                "index": device.index,
                "name": device.name,
                "gpu": device.gpu.map(|gpu| gpu_json(&gpu_status(gpu))),
            })
        })
        .collect();
    let queues: Vec<Value> = daemon
        .queues_by_priority()
        .into_iter()
        .map(|(priority, queue)| {
            json!({
                "proof_kind": queue.kind.queue_name(),
                "priority": priority_name(priority),
                "pending": queue.pending,
                "in_progress": queue.in_progress,
            })
        })
        .collect();
    json!({
        "boot": view.boot,
        "now_ms": view.now_ms,
        "next": view.events.next,
        "missed": view.events.missed,
        "reset": view.events.reset,
        "events": view.events.items,
        "proofs": view.proofs,
        "failures": view.failures,
        "devices": devices,
        "queues": queues,
        "status": status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_names_a_cursor_or_is_refused() {
        assert_eq!(cursor(""), Ok(0));
        assert_eq!(cursor("since=42"), Ok(42));
        assert_eq!(cursor("since=0&"), Ok(0));
        for (query, says) in [
            ("since=-1", "since: \"-1\" is not a cursor"),
            ("since=", "since: \"\" is not a cursor"),
            ("since=99999999999999999999999", "is not a cursor"),
            ("since=1&since=2", "given twice"),
            ("from=3", "\"from\": not a parameter of /timeline"),
        ] {
            match cursor(query) {
                Err(message) => assert!(message.contains(says), "{query}: {message}"),
                Ok(n) => panic!("{query} gave {n}"),
            }
        }
    }
}
