//! A synthesis worker: takes the oldest job's lowest unsynthesized partition, reserves its memory
//! (waiting for room), synthesizes it on a blocking thread and queues it for the GPU.

use std::sync::Arc;
use std::time::Instant;

use super::job::JobError;
use super::scheduler::{JobInfo, Ready, Scheduler};
use super::{blocking, unless_ended, Shared};
use crate::sink::{kv, ms, Event};

pub(super) async fn worker(shared: Arc<Shared>, worker: usize) {
    loop {
        let (job, partition) = shared
            .wait_for(&shared.synthesis_wake, Scheduler::next_synthesis)
            .await;
        match synthesize(&shared, &job, partition, worker).await {
            Ok(Some(ready)) => {
                shared
                    .clock
                    .emit(Event::GpuQueue, &job.id, vec![kv("partition", partition)]);
                let queued = shared.scheduler().enqueue(ready);
                if queued {
                    shared.gpu_wake.notify_waiters();
                    // The job's last synthesis frees its concurrency slot.
                    shared.synthesis_wake.notify_waiters();
                }
            }
            Ok(None) => {}
            Err(error) => shared.fail(&job, error),
        }
    }
}

/// `None` when the job ended while this partition waited for memory.
async fn synthesize(
    shared: &Shared,
    job: &Arc<JobInfo>,
    partition: usize,
    worker: usize,
) -> Result<Option<Ready>, JobError> {
    let what = format!("job {} partition {partition}", job.id);
    let reserving = shared.budget.reserve(&what, job.memory.total());
    let Some(reserved) = unless_ended(job, reserving).await else {
        return Ok(None);
    };
    let reservation = reserved.map_err(|source| JobError::OverBudget { partition, source })?;

    let detail = || vec![kv("partition", partition), kv("worker", worker)];
    shared.clock.emit(Event::SynthStart, &job.id, detail());
    let start = Instant::now();
    let circuit = Arc::clone(&job.circuit);
    let outcome = blocking(move || circuit.synthesize(partition)).await;
    let synth_ms = ms(start.elapsed());
    let mut end = detail();
    end.push(kv("synth_ms", synth_ms));
    shared.clock.emit(Event::SynthEnd, &job.id, end);

    let synthesized = outcome
        .map_err(|message| JobError::Panicked {
            partition,
            stage: "synthesis",
            message,
        })?
        .map_err(|e| JobError::Synthesis {
            partition,
            reason: e.to_string(),
        })?;
    Ok(Some(Ready {
        job: Arc::clone(job),
        partition,
        synthesized,
        reservation,
        synth_ms,
        queued: Instant::now(),
    }))
}
