//! The daemon's status as the API and the status port show it: [`status_reply`] puts a
//! [`StatusReport`] in `GetStatus`'s message, [`status_json`] writes that message as JSON, and
//! [`status_value`] adds the fields of Curio's daemon's `/status`. The gRPC service, `GET /status`,
//! the live page and `cuzk client status` all shape it here, so they never disagree.

use serde_json::{json, Value};

use crate::jobs::{ActivityReport, Daemon, GpuReport, StatusReport};
use crate::kinds::Kind;
use crate::proto;
use crate::srs::{SetStatus, Tier};

/// One GPU in the API's message.
pub fn gpu_status(gpu: GpuReport) -> proto::GpuStatus {
    let (job, kind) = gpu
        .job
        .map(|(id, kind)| (id, kind.queue_name().to_owned()))
        .unwrap_or_default();
    proto::GpuStatus {
        ordinal: gpu.ordinal,
        name: gpu.name,
        vram_total_bytes: gpu.total_bytes,
        vram_free_bytes: gpu.free_bytes,
        current_job_id: job,
        current_proof_kind: kind,
        out_of_service: gpu.out_of_service.is_some(),
        out_of_service_reason: gpu.out_of_service.unwrap_or_default(),
        device_faults: gpu.faults,
        partitions_proven: gpu.partitions,
        memory_budget_bytes: gpu.budget_bytes,
        memory_peak_bytes: gpu.peak_bytes,
    }
}

/// The status in the API's messages.
pub fn status_reply(report: StatusReport) -> proto::GetStatusResponse {
    proto::GetStatusResponse {
        gpus: report.gpus.into_iter().map(gpu_status).collect(),
        loaded_srs: report
            .sets
            .into_iter()
            .map(|set| proto::SrsStatus {
                circuit_id: set.circuit,
                tier: match set.tier {
                    Tier::Hot => proto::srs_status::Tier::Hot,
                    Tier::Warm => proto::srs_status::Tier::Warm,
                    Tier::Cold => proto::srs_status::Tier::Cold,
                }
                .into(),
                size_bytes: set.bytes,
                ref_count: u32::try_from(set.users).unwrap_or(u32::MAX),
                device_plans: set.plans,
                r1cs: set.r1cs.unwrap_or_default(),
                waiting: set.waiting.unwrap_or_default(),
                host_copy_released: set.settled,
            })
            .collect(),
        queues: report
            .queues
            .into_iter()
            .map(|queue| proto::QueueStatus {
                proof_kind: queue.kind.queue_name().to_owned(),
                pending: queue.pending,
                in_progress: queue.in_progress,
            })
            .collect(),
        total_proofs_completed: report.completed,
        total_proofs_failed: report.failed,
        uptime_seconds: report.uptime_seconds,
        pinned_memory_bytes: report.pinned_bytes,
        pinned_memory_limit_bytes: report.pinned_limit_bytes,
    }
}

/// One GPU of the status reply as JSON.
pub fn gpu_json(gpu: &proto::GpuStatus) -> Value {
    json!({
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
        "memory_budget_bytes": gpu.memory_budget_bytes,
        "memory_peak_bytes": gpu.memory_peak_bytes,
    })
}

/// The status reply as JSON, in the API's field names (tiers by name).
pub fn status_json(status: &proto::GetStatusResponse) -> Value {
    json!({
        "gpus": status.gpus.iter().map(gpu_json).collect::<Vec<_>>(),
        "loaded_srs": status.loaded_srs.iter().map(|set| json!({
            "circuit_id": set.circuit_id,
            "tier": set.tier().as_str_name(),
            "size_bytes": set.size_bytes,
            "ref_count": set.ref_count,
            "device_plans": set.device_plans,
            "r1cs": set.r1cs,
            "waiting": set.waiting,
            "host_copy_released": set.host_copy_released,
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

/// What `GET /status` returns: `GetStatus`'s reply (`report`) beside Curio's daemon's fields.
pub fn status_value(daemon: &Daemon, report: StatusReport) -> Value {
    let sets = report.sets.clone();
    let mut json = status_json(&status_reply(report));
    if let (Value::Object(ours), Value::Object(curios)) =
        (&mut json, activity_json(&daemon.activity(), &sets))
    {
        ours.extend(curios);
    }
    json
}

/// Milliseconds as whole numbers, as Curio's daemon gives them.
fn whole_ms(ms: Option<f64>) -> Option<u64> {
    ms.map(|ms| ms.round() as u64)
}

/// The fields of Curio's daemon's `/status`, under its names (see `docs/daemon.md`).
pub fn activity_json(activity: &ActivityReport, sets: &[SetStatus]) -> Value {
    let by_kind = |pick: fn(&(Kind, u64, u64)) -> u64| {
        activity
            .by_kind
            .iter()
            .map(|entry| (entry.0.queue_name().to_owned(), json!(pick(entry))))
            .collect::<serde_json::Map<_, _>>()
    };
    let (completed, failed) = activity
        .by_kind
        .iter()
        .fold((0, 0), |(c, f), (_, done, bad)| (c + done, f + bad));
    let total = activity.partitions_bytes + activity.sets_bytes;
    let used = activity.partitions_used + activity.sets_used;
    json!({
        "uptime_secs": activity.uptime.as_secs_f64(),
        "memory": {
            "total_bytes": total,
            "used_bytes": used,
            "available_bytes": total.saturating_sub(used),
            // Ours: what holds it.
            "partitions_bytes": activity.partitions_bytes,
            "partitions_used_bytes": activity.partitions_used,
            "srs_bytes": activity.sets_bytes,
            "srs_used_bytes": activity.sets_used,
        },
        "synthesis": {
            "max_concurrent": activity.synthesis_limit,
            "active": activity.synthesizing,
        },
        "pipelines": activity.pipelines.iter().map(|job| json!({
            "job_id": job.job_id,
            "proof_kind": job.kind.queue_name(),
            "started_secs_ago": job.started_ago.as_secs_f64(),
            "total_partitions": job.partitions.len(),
            "partitions_done": job.proven,
            "partitions": job.partitions.iter().enumerate().map(|(index, p)| json!({
                "index": index,
                "state": p.stage.as_str(),
                "synth_ms": whole_ms(p.synth_ms),
                "gpu_ms": whole_ms(p.gpu_ms),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "gpu_workers": activity.workers.iter().map(|worker| {
            let proving = worker.proving.as_ref();
            json!({
                "worker_id": worker.worker,
                "gpu_ordinal": worker.device,
                "state": if proving.is_some() { "proving" } else { "idle" },
                "current_job": proving.map(|p| &p.job),
                "current_partition": proving.map(|p| p.partition),
                "busy_secs": proving.map(|p| p.busy.as_secs_f64()),
            })
        }).collect::<Vec<_>>(),
        "allocations": {
            "srs": sets.iter().filter(|set| set.idle.is_some()).map(|set| json!({
                "circuit_id": set.circuit,
                "bytes": set.bytes,
                "last_used_secs_ago": set.idle.map_or(0.0, |idle| idle.as_secs_f64()),
                "evictable": set.evictable,
            })).collect::<Vec<_>>(),
            // A circuit's compiled R1CS is part of its parameter set here (its bytes included).
            "pce": [],
        },
        "counters": {
            "total_completed": completed,
            "total_failed": failed,
            "completed_by_kind": by_kind(|entry| entry.1),
            "failed_by_kind": by_kind(|entry| entry.2),
            "queue_depth": activity.queue_depth,
        },
        "buffers": {
            "synth_in_flight": activity.synthesizing,
            "provers_in_flight": activity.on_gpu,
            "aux_in_flight": activity.synthesizing + activity.on_gpu + activity.finalizing,
            "shells_in_flight": activity.finalizing,
            "pending_handles": activity.unfinished,
        },
    })
}
