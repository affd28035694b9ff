//! GPU workers.
//!
//! A GPU worker takes the queued partition of the most urgent (then oldest) job, runs the
//! backend's `prove_start` on a blocking thread with a [`DeviceLock`] that the workers of
//! one device share (the dual-worker interlock: the backend holds it only around its device
//! region, so one worker's host-side work overlaps the other's kernels), gives back the
//! partition's host memory once the backend has staged it, hands the rest to a finalizer task
//! (`finalize.rs`) and loops at once.
//!
//! Latency-critical work ([`urgent`](super::urgent)) has a lane of its own on each device: one
//! more worker that takes only CRITICAL partitions, so that a WinningPoSt never waits for a worker
//! to come free behind partitions already picked. If a region is still in progress, its backend may run it beside
//! that region, on streams of its own that the device schedules first (`acquire_beside`: when
//! all it reads is on the device and its buffers fit, GPU_START says `beside=1`).
//!
//! A device fault (a CUDA error, device memory exhausted: [`ProveError::device_fault`]) fails
//! only the partition's attempt: the partition is synthesized again (its witness went to the
//! backend) and proven on another device in service, or on the same one when it is the only one;
//! a second fault fails its job.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use cuzk_groth16::{DeviceGuard, DeviceLock, ProveError};

use super::device::{Busy, Device, RegionGuard};
use super::finalize::{finalize, Held, Timings};
use super::job::{JobError, Priority, Synthesized};
use super::scheduler::{JobInfo, Ready, Scheduler};
use super::shared::{blocking, Shared};
use crate::budget::Reservation;
use crate::sink::{kv, ms};
use crate::timeline::{key, Event};

/// The device lock as one worker holds it for one partition: logs GPU_START when the backend
/// takes it and GPU_END (with gpu_ms) when it lets go, so the TIMELINE's GPU intervals are the
/// device regions and never overlap on one device.
struct Region {
    shared: Arc<Shared>,
    device: Arc<Device>,
    job_id: String,
    partition: usize,
    worker: usize,
    /// A CRITICAL job's partition, which takes the lock first.
    critical: bool,
    held: Mutex<Held>,
    /// The partition's host memory, as reserved for its synthesis; given back down to what
    /// the backend still holds once it says its vectors are staged ([`DeviceLock::staged`]).
    reservation: Mutex<Reservation>,
}

/// One hold: the region's guard (none beside it), released after `drop` has logged GPU_END.
struct Hold<'a> {
    region: &'a Region,
    since: Instant,
    guard: Option<RegionGuard<'a>>,
}

impl Region {
    fn detail(&self) -> Vec<(String, String)> {
        vec![
            kv(key::PARTITION, self.partition),
            kv(key::WORKER, self.worker),
            kv(key::DEVICE, self.device.index()),
        ]
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs `start..now` as the device region of a backend that never took the lock, so that
    /// every partition has a GPU interval.
    fn finish(&self, start: Instant) -> Held {
        let held = *self.held();
        if held.count > 0 {
            return held;
        }
        let clock = &self.shared.clock;
        clock.emit_at(start, Event::GpuStart, &self.job_id, self.detail());
        let gpu_ms = ms(start.elapsed());
        let mut end = self.detail();
        end.push(kv(key::GPU_MS, gpu_ms));
        clock.emit(Event::GpuEnd, &self.job_id, end);
        Held {
            count: 1,
            wait_ms: 0.0,
            gpu_ms,
        }
    }
}

impl Region {
    fn hold<'a>(&'a self, guard: Option<RegionGuard<'a>>) -> DeviceGuard<'a> {
        let since = Instant::now();
        let mut detail = self.detail();
        match guard {
            Some(_) => self.device.activity_mut().holder = Some(self.job_id.clone()),
            None => detail.push(kv(key::BESIDE, 1)),
        }
        self.shared
            .clock
            .emit_at(since, Event::GpuStart, &self.job_id, detail);
        DeviceGuard::new(Hold {
            region: self,
            since,
            guard,
        })
    }
}

impl DeviceLock for Region {
    fn acquire(&self) -> DeviceGuard<'_> {
        let asked = Instant::now();
        let guard = self.device.lock.acquire(self.critical);
        self.held().wait_ms += ms(asked.elapsed());
        self.hold(Some(guard))
    }

    /// For CRITICAL partitions only, and only while another partition's region is in progress:
    /// a WinningPoSt runs beside a 32 GiB PoRep region (1.4 s) instead of waiting for its end.
    /// A free device is taken as usual: beside a region, both slow down (a 2 KiB WinningPoSt's
    /// region took 62 ms beside PoRep regions, 19 alone).
    fn acquire_beside(&self) -> Option<DeviceGuard<'_>> {
        self.may_go_beside().then(|| self.hold(None))
    }

    fn may_go_beside(&self) -> bool {
        self.critical && self.device.lock.state().held
    }

    /// Nothing of the partition is left in host memory but its public inputs: its whole
    /// reservation goes back, and the next synthesis may start beside this region (at 32 GiB
    /// with 16 GiB of device memory, one partition fitted the host plan: each synthesis waited
    /// for the region before it, 9.3 s a partition instead of ~6).
    fn staged(&self) {
        self.reservation
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keep(0);
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        if self.guard.is_some() {
            // Still inside the lock: the next holder cannot have set its own name yet.
            self.region.device.activity_mut().holder = None;
        }
        let gpu_ms = ms(self.since.elapsed());
        let mut end = self.region.detail();
        end.push(kv(key::GPU_MS, gpu_ms));
        self.region
            .shared
            .clock
            .emit(Event::GpuEnd, &self.region.job_id, end);
        let mut held = self.region.held();
        held.count += 1;
        held.gpu_ms += gpu_ms;
    }
}

/// A GPU worker of `device`, taking queued partitions of priority `at_least` or above until the
/// device is taken out of service.
pub(super) async fn worker(
    shared: Arc<Shared>,
    device: Arc<Device>,
    worker: usize,
    at_least: Priority,
) {
    loop {
        let take = |scheduler: &mut Scheduler| match device.in_service() {
            true => {
                let elsewhere = shared.in_service_besides(&device);
                scheduler
                    .next_gpu(at_least, device.index(), elsewhere)
                    .map(Some)
            }
            false => Some(None),
        };
        let Some(ready) = shared.wait_for(&shared.gpu_wake, take).await else {
            return;
        };
        prove_start(&shared, &device, ready, worker).await;
    }
}

async fn prove_start(shared: &Arc<Shared>, device: &Arc<Device>, ready: Ready, worker: usize) {
    let Ready {
        job,
        partition,
        synthesized: Synthesized {
            assignment,
            public_inputs,
        },
        reservation,
        synth_ms,
        synthesis,
        queued,
        coming,
        failed_on,
    } = ready;
    let pickup = Instant::now();
    let region = Region {
        shared: Arc::clone(shared),
        device: Arc::clone(device),
        job_id: job.id.clone(),
        partition,
        worker,
        critical: job.priority == Priority::Critical,
        held: Mutex::default(),
        reservation: Mutex::new(reservation),
    };
    shared
        .clock
        .emit_at(pickup, Event::GpuPickup, &job.id, region.detail());
    let busy = Busy::new(device, worker, &job.id);
    let params = Arc::clone(&job.params);
    let outcome = blocking(move || {
        let started = region
            .device
            .backend()
            .prove_start(&params, assignment, &region);
        drop(coming);
        let held = region.finish(pickup);
        let reservation = region.reservation.into_inner();
        (
            started,
            held,
            reservation.unwrap_or_else(PoisonError::into_inner),
        )
    })
    .await;
    drop(busy);
    let prove_start_ms = ms(pickup.elapsed());
    // The device's health counts whatever became of the job.
    let fault = match &outcome {
        Ok((Ok(_), _, _)) => {
            device.proved();
            None
        }
        Ok((Err(e), _, _)) => e.device_fault(),
        Err(_) => None,
    };
    match (outcome, fault) {
        (Ok((Err(e), _, _)), Some(kind)) => {
            let fault = Fault {
                partition,
                worker,
                failed_on,
                kind,
            };
            device_fault(shared, device, &job, fault, &e);
        }
        // Ended (cancelled, another partition failed) while this one was proven: moot.
        _ if job.finished() => {}
        (Ok((Ok(started), held, mut reservation)), _) => {
            // a, b and c are on the device (or were never on the host).
            reservation.keep(job.memory.rest);
            let timings = Timings {
                worker,
                synth_ms,
                synthesis,
                queue_ms: ms(pickup - queued),
                prove_start_ms,
                held,
            };
            let gpu_wait_ms = timings.queue_ms + timings.prove_start_ms - held.gpu_ms;
            shared
                .scheduler()
                .started(job.seq, held.gpu_ms, gpu_wait_ms);
            tokio::spawn(finalize(
                Arc::clone(shared),
                job,
                partition,
                started,
                public_inputs,
                reservation,
                timings,
            ));
        }
        (Ok((Err(e), _, _)), None) => shared.fail(
            &job,
            JobError::Prove {
                partition,
                reason: e.to_string(),
            },
        ),
        (Err(message), _) => shared.fail(
            &job,
            JobError::Panicked {
                partition,
                stage: "prove_start",
                message,
            },
        ),
    }
}

/// A partition's attempt that failed by a device fault.
struct Fault {
    partition: usize,
    worker: usize,
    /// Where its previous attempt failed, if this was its retry.
    failed_on: Option<usize>,
    /// [`ProveError::device_fault`].
    kind: &'static str,
}

/// Counts the fault against `device` (taking it out of service after [`FAULTS_IN_A_ROW`], unless
/// it is the last in service) and sends the partition back to synthesis for another attempt, or
/// fails its job if this was the retry (a job that ended meanwhile stays as it ended).
fn device_fault(shared: &Shared, device: &Device, job: &JobInfo, fault: Fault, error: &ProveError) {
    let Fault {
        partition,
        worker,
        failed_on,
        kind,
    } = fault;
    let (out, retried) = {
        // Under the scheduler's lock, so that two devices failing at once cannot both go.
        let mut scheduler = shared.scheduler();
        let out = device.fault(error, shared.in_service_besides(device));
        let retried = failed_on.is_none() && scheduler.retry(job.seq, partition, device.index());
        (out, retried)
    };
    let detail = vec![
        kv(key::PARTITION, partition),
        kv(key::WORKER, worker),
        kv(key::DEVICE, device.index()),
        kv(key::RETRY, u8::from(retried)),
        kv(key::FAULT, kind),
    ];
    shared.clock.emit(Event::DeviceFault, &job.id, detail);
    if out {
        shared.out_of_service(device);
    }
    match retried {
        true => shared.synthesis_wake.notify_waiters(),
        false => {
            let earlier = failed_on.map_or(String::new(), |d| format!(", after one on device {d}"));
            let reason = format!("{error} (on device {}{earlier})", device.index());
            shared.fail(job, JobError::Prove { partition, reason });
        }
    }
}
