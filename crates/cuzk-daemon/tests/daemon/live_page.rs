//! The live page (`GET /`) and its feed (`GET /timeline`) on a daemon that proved something and
//! failed a request: over a real socket, then rendered by headless Chromium, across a restart of
//! the daemon under the open page.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cuzk_daemon::circuits::synthetic::SyntheticRequest;
use cuzk_daemon::proto::await_proof_response::Status;
use cuzk_daemon::proto::{self, AwaitProofResponse};
use cuzk_groth16::backend::{Faults, FaultyBackend};
use cuzk_groth16::ProverBackend;
use serde_json::Value;

use crate::browser;
use crate::rpcs::{http, prove, prove_all, synthetic, Running, SaysGpu};

/// `GET /timeline?<query>` as JSON.
async fn timeline(status: SocketAddr, query: &str) -> Value {
    let (code, body) = http(status, "GET", &format!("/timeline?{query}")).await;
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// The events of `json` for `job`, as `EVENT:partition` (JOB_DONE: `JOB_DONE:status`).
fn events_of(json: &Value, job: &str) -> Vec<String> {
    json["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["job"] == job)
        .map(|e| {
            let detail = &e["detail"];
            let which = detail.get("partition").or(detail.get("status")).unwrap();
            format!(
                "{}:{}",
                e["event"].as_str().unwrap(),
                which.as_str().unwrap()
            )
        })
        .collect()
}

async fn prove_one(running: &Running, id: &str, spec: &SyntheticRequest) -> AwaitProofResponse {
    let mut client = running.client().await;
    prove(&mut client, synthetic(id, spec)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_timeline_serves_the_feed_after_a_cursor_and_the_page_is_one_file() {
    let daemon = Running::start("", None).await;
    let status = daemon.bound.status.unwrap();
    let two = SyntheticRequest {
        partitions: 2,
        ..SyntheticRequest::new(128)
    };
    let good = prove_one(&daemon, "good", &two).await;
    assert_eq!(good.status(), Status::Completed, "{}", good.error_message);
    let wrong = SyntheticRequest {
        wrong_inputs: true,
        ..SyntheticRequest::new(128)
    };
    let bad = prove_one(&daemon, "bad", &wrong).await;
    assert_eq!(bad.status(), Status::Failed);

    // The page: one file, its script and style inline, nothing fetched but /timeline.
    let (code, page) = http(status, "GET", "/").await;
    assert_eq!(code, 200);
    assert!(page.starts_with("<!doctype html>"), "{page:.200}");
    assert!(page.contains("timeline?since="));
    for elsewhere in ["<script src", "<link", "@import", "url(http", "fetch('http"] {
        assert!(!page.contains(elsewhere), "the page loads {elsewhere}");
    }

    let all = timeline(status, "").await;
    assert_eq!(all["boot"].as_str().unwrap().len(), 16, "{all}");
    assert_eq!(all["missed"], 0);
    assert_eq!(all["reset"], false);
    let events = all["events"].as_array().unwrap();
    assert_eq!(all["next"], events.len(), "nothing dropped yet");
    assert!(all["now_ms"].as_f64().unwrap() >= events[events.len() - 1]["ms"].as_f64().unwrap());
    let good_events = events_of(&all, "good");
    for expected in [
        "SYNTH_START:0",
        "SYNTH_END:0",
        "GPU_START:1",
        "GPU_END:1",
        "JOB_DONE:ok",
    ] {
        assert!(good_events.iter().any(|e| e == expected), "{good_events:?}");
    }
    assert!(events_of(&all, "bad").contains(&"JOB_DONE:failed".to_owned()));
    // Only the records the page draws, each with its job's kind.
    for event in events {
        assert!(
            !["GPU_QUEUE", "GPU_PICKUP", "FINALIZE_END", "PARTITION_STATS"]
                .contains(&event["event"].as_str().unwrap()),
            "{event}"
        );
        assert_eq!(event["kind"], "porep-c2", "{event}");
    }
    let proof = &all["proofs"][0];
    assert_eq!(proof["job"], "good");
    assert_eq!(proof["status"], "completed");
    assert_eq!(proof["kind"], "porep-c2");
    assert_eq!(proof["priority"], "NORMAL");
    assert_eq!(proof["total_ms"], good.total_ms);
    assert_eq!(proof["synthesis_ms"], good.synthesis_ms);
    assert_eq!(proof["gpu_compute_ms"], good.gpu_compute_ms);
    let failure = &all["failures"][0];
    assert_eq!(failure["job"], "bad");
    assert_eq!(failure["status"], "failed");
    assert_eq!(failure["error"], bad.error_message);
    assert_eq!(
        all["devices"],
        serde_json::json!([{"index": 0, "name": "cpu", "gpu": null}])
    );
    assert_eq!(all["queues"], serde_json::json!([]));
    assert_eq!(all["status"]["total_proofs_completed"], 1);
    assert!(
        all["status"]["memory"]["partitions_bytes"]
            .as_u64()
            .unwrap()
            > 0
    );

    // After the cursor: nothing, then only what came later.
    let next = all["next"].as_u64().unwrap();
    let caught_up = timeline(status, &format!("since={next}")).await;
    assert_eq!(caught_up["events"], serde_json::json!([]));
    assert_eq!(caught_up["next"], all["next"]);
    assert_eq!(caught_up["boot"], all["boot"]);
    let later = prove_one(&daemon, "later", &SyntheticRequest::new(128)).await;
    assert_eq!(later.status(), Status::Completed);
    let after = timeline(status, &format!("since={next}")).await;
    let jobs: Vec<&str> = after["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["job"].as_str().unwrap())
        .collect();
    assert!(
        !jobs.is_empty() && jobs.iter().all(|job| *job == "later"),
        "{jobs:?}"
    );
    assert_eq!(after["proofs"][0]["job"], "later");
    // A cursor this daemon never handed out (another instance's) starts over.
    let other = timeline(status, &format!("since={}", next + 1_000)).await;
    assert_eq!(other["reset"], true);
    assert_eq!(
        other["events"].as_array().unwrap().len() as u64,
        after["next"].as_u64().unwrap()
    );

    // Bad queries are refused, saying why; nothing but GET is served.
    for (query, says) in [
        ("since=abc", "since: \"abc\" is not a cursor"),
        ("since=-3", "since: \"-3\" is not a cursor"),
        ("since=1&since=2", "since: given twice"),
        ("cursor=4", "\"cursor\": not a parameter of /timeline"),
    ] {
        let (code, body) = http(status, "GET", &format!("/timeline?{query}")).await;
        assert_eq!(code, 400, "{query}: {body}");
        assert!(body.contains(says), "{query}: {body}");
    }
    for path in ["/", "/timeline"] {
        assert_eq!(http(status, "POST", path).await.0, 405, "POST {path}");
    }
    daemon.stop().await.unwrap();
}

/// Where a person finds a screenshot: the target directory (`target/live-page.png`).
fn screenshot_path(name: &str) -> std::path::PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).join(name)
}

/// Jobs left in flight while the page is looked at: one synthesizing for [`SLOW_MS`], three
/// waiting behind it (one of them HIGH).
const IN_FLIGHT: [&str; 4] = ["slow-0", "waiting-1", "waiting-2", "urgent-3"];

/// Long enough for the page to be read and photographed on a loaded CI machine while the queue
/// stands still. The cancelled synthesis still sleeps it out: the test ends no sooner.
const SLOW_MS: u64 = 20_000;

/// A daemon with two devices, the second failing its first proof (a transient fault: that
/// partition is retried on the first), that proved sealed ones, failed one, and has
/// [`IN_FLIGHT`] running and queued.
async fn busy_daemon() -> (Running, AwaitProofResponse) {
    let flaky = FaultyBackend::new(Arc::new(SaysGpu(1, "cuda:1 (test)")), Faults::Only(0));
    let backends: Vec<Arc<dyn ProverBackend>> =
        vec![Arc::new(SaysGpu(0, "cuda:0 (test)")), Arc::new(flaky)];
    let daemon = Running::start("", Some(backends)).await;
    let status = daemon.bound.status.unwrap();
    let spec = SyntheticRequest {
        partitions: 2,
        synthesis_delay_ms: 150,
        ..SyntheticRequest::new(256)
    };
    // Batches of six at once, until the second device took a partition (and so failed one).
    let client = daemon.client().await;
    for batch in 0..6 {
        let requests = (0..6)
            .map(|n| synthetic(&format!("sealed-{batch}-{n}"), &spec))
            .collect();
        for reply in prove_all(&client, requests) {
            let done = reply.await.unwrap();
            assert_eq!(done.status(), Status::Completed, "{}", done.error_message);
        }
        let feed = timeline(status, "").await;
        let mut events = feed["events"].as_array().unwrap().iter();
        if events.any(|e| e["event"] == "DEVICE_FAULT") {
            break;
        }
    }
    let wrong = SyntheticRequest {
        wrong_inputs: true,
        ..SyntheticRequest::new(256)
    };
    let bad = prove_one(&daemon, "bad-inputs", &wrong).await;
    assert_eq!(bad.status(), Status::Failed);

    let mut client = daemon.client().await;
    for (n, id) in IN_FLIGHT.into_iter().enumerate() {
        let spec = SyntheticRequest {
            synthesis_delay_ms: if n == 0 { SLOW_MS } else { 0 },
            ..SyntheticRequest::new(256)
        };
        let mut request = synthetic(id, &spec);
        if id.starts_with("urgent") {
            request.priority = proto::Priority::High.into();
        }
        client.submit_proof(request).await.unwrap();
        if n == 0 {
            eventually(
                |feed| events_of(feed, id).contains(&"SYNTH_START:0".to_owned()),
                status,
            )
            .await;
        }
    }
    let queued = |feed: &Value| {
        feed["queues"]
            == serde_json::json!([
                {"proof_kind": "porep-c2", "priority": "HIGH", "pending": 1, "in_progress": 0},
                {"proof_kind": "porep-c2", "priority": "NORMAL", "pending": 2, "in_progress": 1},
            ])
    };
    eventually(queued, status).await;
    (daemon, bad)
}

/// Polls `/timeline` until `check` holds of it, for at most 30 s.
async fn eventually(check: impl Fn(&Value) -> bool, status: SocketAddr) {
    for _ in 0..300 {
        if check(&timeline(status, "").await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not within 30 s: {}", timeline(status, "").await);
}

/// The page as Chromium renders it: the devices' GPU-worker lanes, the proofs, the failed one
/// with its message, the retried partition's fault; a screenshot for people; and one page
/// session across a restart of the daemon on the same port, which then shows only the new
/// daemon's records. Skipped, saying so, without a Chromium (`.ci/run` installs Debian's).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chromium_renders_the_page_and_follows_a_daemon_restart() {
    let Some(chromium) = browser::find() else {
        eprintln!(
            "skipped: no chromium binary (chromium, chromium-browser, google-chrome on PATH, or \
             $CUZK_CHROMIUM); `apt-get install chromium` gives one"
        );
        return;
    };
    let (daemon, bad) = busy_daemon().await;
    let status = daemon.bound.status.unwrap();
    // The Gantt over the last 10 s: the test's work took a few.
    let url = format!("http://{status}/#window=10");

    let dom = {
        let (chromium, url) = (chromium.clone(), url.clone());
        tokio::task::spawn_blocking(move || browser::dump_dom(&chromium, &url, 8_000))
            .await
            .unwrap()
    };
    // What the page drew: its body before the script.
    let body = dom.split("<body>").nth(1).unwrap_or_default();
    let drawn = body.split("<script>").next().unwrap_or_default();
    let escaped = bad
        .error_message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    for shown in [
        "cuda:0 (test)",
        "cuda:1 (test)",
        "GPU worker 0",
        "GPU worker 2",
        "synthesis slot 0",
        "sealed-0-0",
        "bad-inputs",
        escaped.as_str(),
        "retried on another device",
        "synthetic-256",
        "slow-0 · partition 0 · porep-c2\nsynthesis",
        "1 / 2",
        "0 / 1",
    ] {
        assert!(drawn.contains(shown), "the page lacks {shown:?}:\n{drawn}");
    }
    // Bars in PoRep's colour, the faulted attempt's hatched, and the failed job's outlined.
    assert!(drawn.contains("fill=\"var(--porep)\""), "{drawn}");
    assert!(drawn.contains("fill=\"url(#hatch)\""), "{drawn}");
    assert!(drawn.contains("stroke=\"var(--bad)\""), "{drawn}");

    let png = screenshot_path("live-page.png");
    {
        let (chromium, url, png) = (chromium.clone(), url.clone(), png.clone());
        tokio::task::spawn_blocking(move || {
            browser::screenshot(&chromium, &url, 8_000, (1400, 1000), &png)
        })
        .await
        .unwrap();
    }
    eprintln!("the live page: {}", png.display());
    let mut client = daemon.client().await;
    for id in IN_FLIGHT {
        let request = proto::CancelProofRequest {
            job_id: id.to_owned(),
        };
        client.cancel_proof(request).await.unwrap();
    }

    // One page session across a restart on the same port.
    let old_boot = timeline(status, "").await["boot"]
        .as_str()
        .unwrap()
        .to_owned();
    let session = {
        let (chromium, url) = (chromium.clone(), url.clone());
        tokio::task::spawn_blocking(move || browser::Session::open(&chromium, &url))
            .await
            .unwrap()
    };
    let limit = Duration::from_secs(30);
    let (mut session, _) = tokio::task::spawn_blocking(move || {
        let mut session = session;
        let text = session.until(limit, "the first daemon's proofs", |t| {
            t.contains("sealed-0-0") && t.contains("bad-inputs")
        });
        (session, text)
    })
    .await
    .unwrap();
    daemon.stop().await.unwrap();
    session = tokio::task::spawn_blocking(move || {
        session.until(limit, "that the daemon is gone", |t| {
            t.contains("has not answered since")
        });
        session
    })
    .await
    .unwrap();
    let again = Running::start(&format!("status_listen = \"{status}\""), None).await;
    assert_eq!(again.bound.status, Some(status));
    let fresh = prove_one(&again, "after-restart", &SyntheticRequest::new(128)).await;
    assert_eq!(fresh.status(), Status::Completed);
    let new_boot = timeline(status, "").await["boot"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(new_boot, old_boot);
    let restarted = screenshot_path("live-page-restarted.png");
    let text = tokio::task::spawn_blocking(move || {
        let text = session.until(limit, "the new daemon's proof", |t| {
            t.contains("after-restart") && t.contains(&format!("→ {new_boot}"))
        });
        session.screenshot(&restarted);
        eprintln!("after the restart: {}", restarted.display());
        text
    })
    .await
    .unwrap();
    for gone in ["sealed-", "bad-inputs", "cuda:1 (test)"] {
        assert!(
            !text.contains(gone),
            "the old daemon's {gone} is still shown:\n{text}"
        );
    }
    again.stop().await.unwrap();
}
