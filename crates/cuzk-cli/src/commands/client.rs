//! `cuzk client`: calls a running daemon. `prove` forms the request as Curio does (a PoRep C2
//! from a C1 output, a WinningPoSt or WindowPoSt from a request file; or a synthetic one) and,
//! with `--count`, runs a load of them at a given concurrency and reports the throughput.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_daemon::client::{
    connect, porep_request, post_request, snap_request, synthetic_request, Client,
};
use cuzk_daemon::proto::{self, await_proof_response::Status};
use cuzk_daemon::status::status_json;
use cuzk_filecoin::{prover_id_of_miner, PostKind, PostRequest, SnapRequest};
use serde_json::json;

use crate::args::{ClientArgs, ClientCall, ClientProveArgs, GlobalArgs};
use crate::Outcome;

pub fn run(global: &GlobalArgs, args: ClientArgs) -> Result<Outcome> {
    let token = match &args.token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let mut client = connect(&args.address, token.as_deref()).await?;
        match args.call {
            ClientCall::Status => {
                let status = client.get_status(proto::GetStatusRequest {}).await?.into_inner();
                outln!("{}", serde_json::to_string_pretty(&status_json(&status))?);
            }
            ClientCall::Metrics => {
                let text = client.get_metrics(proto::GetMetricsRequest {}).await?.into_inner();
                crate::output::write(format_args!("{}", text.prometheus_text));
            }
            ClientCall::Preload { circuit } => {
                let done = client
                    .preload_srs(proto::PreloadSrsRequest { circuit_id: circuit })
                    .await?
                    .into_inner();
                outln!(
                    "{}",
                    json!({"already_loaded": done.already_loaded, "load_time_ms": done.load_time_ms})
                );
            }
            ClientCall::Evict { circuit } => {
                let done = client
                    .evict_srs(proto::EvictSrsRequest { circuit_id: circuit })
                    .await?
                    .into_inner();
                outln!(
                    "{}",
                    json!({"was_loaded": done.was_loaded, "freed_bytes": done.freed_bytes})
                );
            }
            ClientCall::Cancel { job_id } => {
                let done = client
                    .cancel_proof(proto::CancelProofRequest { job_id })
                    .await?
                    .into_inner();
                outln!("{}", json!({"was_running": done.was_running}));
            }
            ClientCall::Prove(prove) => return prove_load(global, &args.address, token, client, prove).await,
        }
        Ok(Outcome::Success)
    })
}

/// Forms the request of a given id.
type MakeRequest = Box<dyn Fn(&str) -> Result<proto::SubmitProofRequest>>;

async fn prove_load(
    global: &GlobalArgs,
    address: &str,
    token: Option<String>,
    first: Client,
    args: ClientProveArgs,
) -> Result<Outcome> {
    if args.count == 0 || args.concurrency == 0 {
        bail!("--count and --concurrency must be at least 1");
    }
    let (base, default_out, request): (String, PathBuf, MakeRequest) = match (
        &args.c1,
        &args.post,
        &args.snap,
        args.synthetic,
    ) {
        (Some(path), ..) => {
            let (miner, sector) = (
                required(args.miner_id, "--miner-id")?,
                required(args.sector_id, "--sector-id")?,
            );
            let c1 = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            let source = path.display().to_string();
            // Checked once here, so a bad file is named before any request.
            porep_request("check", &c1, &source, miner, sector)?;
            (
                format!("porep-{miner}-{sector}"),
                path.with_extension("proof"),
                Box::new(move |id: &str| Ok(porep_request(id, &c1, &source, miner, sector)?)),
            )
        }
        (None, Some(path), ..) => {
            let miner = required(args.miner_id, "--miner-id")?;
            let post = PostRequest::read(path)?;
            if post.prover_id != prover_id_of_miner(miner) {
                bail!(
                        "{}: its prover_id is not miner {miner}'s (the daemon derives the prover from --miner-id)",
                        path.display()
                    );
            }
            let base = match post.proof.kind {
                PostKind::Winning => format!("winning-{miner}"),
                _ => format!("wdpost-{miner}-{}", post.partition),
            };
            (
                base,
                path.with_extension("proof"),
                Box::new(move |id: &str| Ok(post_request(id, &post, miner))),
            )
        }
        (None, None, Some(path), _) => {
            let miner = required(args.miner_id, "--miner-id")?;
            let snap = SnapRequest::read(path)?;
            (
                format!("snap-{miner}-{}", hex::encode(&snap.comm_r_new[..4])),
                path.with_extension("proof"),
                Box::new(move |id: &str| Ok(snap_request(id, &snap, miner))),
            )
        }
        (None, None, None, Some(constraints)) => {
            let partitions = args.partitions;
            if constraints == 0 || partitions == 0 {
                bail!("--synthetic and --partitions must be at least 1");
            }
            (
                format!("synthetic-{constraints}"),
                PathBuf::from(format!("synthetic-{constraints}.proof")),
                Box::new(move |id: &str| Ok(synthetic_request(id, constraints, partitions))),
            )
        }
        (None, None, None, None) => bail!("one of --c1, --post, --snap, --synthetic is needed"),
    };
    let base = args.id.clone().unwrap_or(base);
    let requests: Vec<proto::SubmitProofRequest> = (0..args.count)
        .map(|i| {
            if args.count == 1 {
                request(&base)
            } else {
                request(&format!("{base}-{i}"))
            }
        })
        .collect::<Result<_>>()?;
    let queue = Arc::new(std::sync::Mutex::new(requests.into_iter().enumerate()));
    let start = Instant::now();
    let mut workers = Vec::new();
    for w in 0..args.concurrency.min(args.count) {
        let mut client = if w == 0 {
            first.clone()
        } else {
            connect(address, token.as_deref()).await?
        };
        let queue = Arc::clone(&queue);
        workers.push(tokio::spawn(async move {
            let mut results = Vec::new();
            loop {
                let next = queue.lock().map(|mut q| q.next()).unwrap_or(None);
                let Some((i, request)) = next else {
                    return anyhow::Ok(results);
                };
                let reply = client
                    .prove(proto::ProveRequest {
                        submit: Some(request),
                    })
                    .await?
                    .into_inner()
                    .result
                    .unwrap_or_default();
                results.push((i, reply, start.elapsed().as_secs_f64()));
            }
        }));
    }
    let mut results = Vec::new();
    for worker in workers {
        results.extend(worker.await.context("a client task")??);
    }
    let wall = start.elapsed().as_secs_f64();
    results.sort_by_key(|(i, _, _)| *i);
    let failed: Vec<String> = results
        .iter()
        .filter(|(_, r, _)| r.status() != Status::Completed || r.proof.is_empty())
        .map(|(_, r, _)| format!("{}: {:?}: {}", r.job_id, r.status(), r.error_message))
        .collect();
    let out = args.out.clone().unwrap_or(default_out);
    if let Some((_, first, _)) = results
        .iter()
        .find(|(_, r, _)| r.status() == Status::Completed)
    {
        super::write_output(&out, &first.proof)?;
    }
    let n = results.len() as f64;
    let mean = |f: &dyn Fn(&proto::AwaitProofResponse) -> u64| {
        results.iter().map(|(_, r, _)| f(r) as f64).sum::<f64>() / n
    };
    let summary = json!({
        "proofs": results.len(),
        "failed": failed.len(),
        "wall_s": wall,
        "proofs_per_s": n / wall,
        "first_srs_load_ms": results.first().map(|(_, r, _)| r.srs_load_ms),
        "mean_total_ms": mean(&|r| r.total_ms),
        "mean_queue_wait_ms": mean(&|r| r.queue_wait_ms),
        "mean_synthesis_ms": mean(&|r| r.synthesis_ms),
        "mean_gpu_compute_ms": mean(&|r| r.gpu_compute_ms),
        "proof": out,
    });
    if global.json {
        outln!("{summary}");
    } else {
        outln!(
            "{} proof(s) in {wall:.2} s ({:.3} proofs/s), {} failed; first proof's parameter wait {} ms; wrote {}",
            results.len(),
            n / wall,
            failed.len(),
            summary["first_srs_load_ms"],
            out.display()
        );
    }
    for failure in &failed {
        eprintln!("cuzk: {failure}");
    }
    Ok(if failed.is_empty() {
        Outcome::Success
    } else {
        Outcome::Rejected
    })
}

fn required<T>(value: Option<T>, flag: &str) -> Result<T> {
    value.with_context(|| format!("{flag} is needed"))
}
