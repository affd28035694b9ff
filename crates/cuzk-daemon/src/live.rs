//! Each partition and GPU worker as it is now, read from the engine's TIMELINE records as they
//! pass (like the metrics, so the engine knows nothing of it): the `pipelines` and
//! `gpu_workers` of Curio's daemon's `/status`, which its monitoring UI polls.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use cuzk_pipeline::timeline::{key, Event, EventName, Record};

/// Where a partition is, in Curio's daemon's words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stage {
    #[default]
    Pending,
    Synthesizing,
    SynthDone,
    Gpu,
    Done,
    Failed,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Pending => "pending",
            Stage::Synthesizing => "synthesizing",
            Stage::SynthDone => "synth_done",
            Stage::Gpu => "gpu",
            Stage::Done => "done",
            Stage::Failed => "failed",
        }
    }
}

/// One partition of a job in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PartitionView {
    pub stage: Stage,
    pub synth_ms: Option<f64>,
    /// Its device regions so far.
    pub gpu_ms: Option<f64>,
}

/// One GPU worker.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerView {
    pub worker: usize,
    /// The engine's index of its device.
    pub device: usize,
    /// What it proves; `None` while idle.
    pub proving: Option<Proving>,
}

/// The partition a GPU worker proves.
#[derive(Clone, Debug, PartialEq)]
pub struct Proving {
    pub job: String,
    pub partition: u32,
    /// Since its pickup.
    pub busy: Duration,
}

/// A GPU worker as the records left it.
struct Worker {
    device: usize,
    /// Job, partition, picked up when.
    proving: Option<(String, u32, Instant)>,
}

#[derive(Default)]
struct LiveJob {
    seen: Option<Instant>,
    partitions: BTreeMap<u32, PartitionView>,
}

/// Ended jobs remembered, so that the records of a failed job's partitions still in flight,
/// which arrive after its end, do not bring it back for good.
const ENDED_KEPT: usize = 4096;

#[derive(Default)]
struct Inner {
    jobs: HashMap<String, LiveJob>,
    /// The last [`ENDED_KEPT`] ends, oldest first, numbered; and each ended job's latest end.
    ended: VecDeque<(String, u64)>,
    ended_ids: HashMap<String, u64>,
    ends: u64,
    /// By worker number.
    workers: BTreeMap<usize, Worker>,
}

impl Inner {
    fn end(&mut self, job: &str) {
        self.jobs.remove(job);
        self.ends += 1;
        self.ended_ids.insert(job.to_owned(), self.ends);
        self.ended.push_back((job.to_owned(), self.ends));
        if self.ended.len() > ENDED_KEPT {
            if let Some((oldest, end)) = self.ended.pop_front() {
                // Unless the job ended again since (a retry under its id).
                if self.ended_ids.get(&oldest) == Some(&end) {
                    self.ended_ids.remove(&oldest);
                }
            }
        }
    }
}

/// The live view, fed record by record.
pub struct Live {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Live")
    }
}

impl Live {
    /// Workers `0..devices × per_device` idle, numbered across devices as the engine numbers
    /// them (its CRITICAL lanes appear when they first prove).
    pub fn new(devices: usize, per_device: usize) -> Self {
        let workers = (0..devices * per_device)
            .map(|w| {
                let device = w / per_device.max(1);
                (
                    w,
                    Worker {
                        device,
                        proving: None,
                    },
                )
            })
            .collect();
        Live {
            inner: Mutex::new(Inner {
                workers,
                ..Inner::default()
            }),
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Every update leaves the maps whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves a partition or worker on by one record.
    pub fn record(&self, record: &Record) {
        let mut inner = self.inner();
        if record.event == Event::JobDone {
            inner.end(&record.job_id);
            return;
        }
        let Some(partition) = record.partition() else {
            return;
        };
        let event = &record.event;
        let index = |n: Option<u32>| n.map(|n| n as usize);
        let worker = index(record.worker());
        if *event == Event::GpuPickup {
            if let (Some(worker), Some(device)) = (worker, index(record.device())) {
                let proving = Some((record.job_id.clone(), partition, Instant::now()));
                inner.workers.insert(worker, Worker { device, proving });
            }
        } else if *event == Event::FinalizeEnd || *event == Event::DeviceFault {
            // The worker that proved it is free once the partition is done with the device.
            for worker in inner.workers.values_mut() {
                let this =
                    |(job, p, _): &(String, u32, Instant)| *job == record.job_id && *p == partition;
                if worker.proving.as_ref().is_some_and(this) {
                    worker.proving = None;
                }
            }
        }
        if inner.ended_ids.contains_key(&record.job_id) {
            return;
        }
        let job = inner.jobs.entry(record.job_id.clone()).or_default();
        job.seen.get_or_insert_with(Instant::now);
        let view = job.partitions.entry(partition).or_default();
        match event {
            EventName::Known(Event::SynthStart) => view.stage = Stage::Synthesizing,
            EventName::Known(Event::SynthEnd) => {
                view.stage = Stage::SynthDone;
                view.synth_ms = record.number(key::SYNTH_MS);
            }
            EventName::Known(Event::GpuPickup) => view.stage = Stage::Gpu,
            EventName::Known(Event::GpuEnd) => {
                *view.gpu_ms.get_or_insert(0.0) += record.number(key::GPU_MS).unwrap_or(0.0);
            }
            EventName::Known(Event::FinalizeEnd) => view.stage = Stage::Done,
            // Retried on another device (synthesized again), or failed with its job.
            EventName::Known(Event::DeviceFault) => {
                view.stage = match record.get(key::RETRY) {
                    Some("1") => Stage::Pending,
                    _ => Stage::Failed,
                };
                view.gpu_ms = None;
            }
            _ => {}
        }
    }

    /// A new attempt under `job`'s id enters the engine: its records count again.
    pub fn entering(&self, job: &str) {
        self.inner().ended_ids.remove(job);
    }

    /// A job's partitions seen so far (the rest are pending) and how long ago it was first seen.
    pub fn job(&self, id: &str) -> Option<(BTreeMap<u32, PartitionView>, Duration)> {
        let inner = self.inner();
        let job = inner.jobs.get(id)?;
        let ago = job.seen.map_or(Duration::ZERO, |at| at.elapsed());
        Some((job.partitions.clone(), ago))
    }

    /// Every GPU worker, by number.
    pub fn workers(&self) -> Vec<WorkerView> {
        self.inner()
            .workers
            .iter()
            .map(|(&number, worker)| WorkerView {
                worker: number,
                device: worker.device,
                proving: worker
                    .proving
                    .as_ref()
                    .map(|(job, partition, since)| Proving {
                        job: job.clone(),
                        partition: *partition,
                        busy: since.elapsed(),
                    }),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn record(event: Event, job: &str, detail: &[(&str, &str)]) -> Record {
        Record {
            ms: 0.0,
            event: event.into(),
            job_id: job.to_owned(),
            detail: detail
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn partitions_and_workers_follow_the_records() {
        let live = Live::new(1, 2);
        let p = |n: &'static str| [(key::PARTITION, n), (key::WORKER, "1"), (key::DEVICE, "0")];
        live.record(&record(Event::SynthStart, "j", &p("0")));
        live.record(&record(Event::SynthStart, "j", &p("1")));
        live.record(&record(
            Event::SynthEnd,
            "j",
            &[(key::PARTITION, "0"), (key::SYNTH_MS, "12.5")],
        ));
        live.record(&record(Event::GpuPickup, "j", &p("0")));
        live.record(&record(
            Event::GpuEnd,
            "j",
            &[(key::PARTITION, "0"), (key::GPU_MS, "3")],
        ));
        let (partitions, _) = live.job("j").unwrap();
        assert_eq!(partitions[&0].stage, Stage::Gpu);
        assert_eq!(partitions[&0].synth_ms, Some(12.5));
        assert_eq!(partitions[&0].gpu_ms, Some(3.0));
        assert_eq!(partitions[&1].stage, Stage::Synthesizing);
        let workers = live.workers();
        assert_eq!(workers.len(), 2);
        assert_eq!(workers[0].proving, None);
        assert_eq!(workers[1].proving.as_ref().map(|w| w.partition), Some(0));

        live.record(&record(Event::FinalizeEnd, "j", &p("0")));
        assert_eq!(live.job("j").unwrap().0[&0].stage, Stage::Done);
        assert!(live.workers().iter().all(|w| w.proving.is_none()));
        live.record(&record(Event::JobDone, "j", &[(key::STATUS, "proven")]));
        assert!(live.job("j").is_none());
    }

    #[test]
    fn records_after_a_jobs_end_do_not_bring_it_back() {
        let live = Live::new(1, 1);
        let p = |n: &'static str| [(key::PARTITION, n), (key::WORKER, "0"), (key::DEVICE, "0")];
        live.record(&record(Event::SynthStart, "failed", &p("0")));
        live.record(&record(Event::SynthStart, "failed", &p("1")));
        live.record(&record(
            Event::JobDone,
            "failed",
            &[(key::STATUS, "failed")],
        ));
        // Its other partition finishes its synthesis and device work after the job failed.
        live.record(&record(Event::SynthEnd, "failed", &p("1")));
        live.record(&record(Event::GpuPickup, "failed", &p("1")));
        assert!(live.job("failed").is_none());
        live.record(&record(Event::FinalizeEnd, "failed", &p("1")));
        assert!(live.workers().iter().all(|w| w.proving.is_none()));

        // What it remembers of ended jobs is bounded: the oldest are forgotten first.
        for n in 0..ENDED_KEPT + 10 {
            live.record(&record(Event::JobDone, &format!("j{n}"), &[]));
        }
        let inner = live.inner();
        assert_eq!(inner.ended.len(), ENDED_KEPT);
        assert_eq!(inner.ended_ids.len(), ENDED_KEPT);
        assert!(!inner.ended_ids.contains_key("failed") && inner.ended_ids.contains_key("j10"));
        drop(inner);

        // A retry under an ended id is followed again, and its own end counts.
        live.entering("j10");
        live.record(&record(Event::SynthStart, "j10", &p("0")));
        assert_eq!(live.job("j10").unwrap().0[&0].stage, Stage::Synthesizing);
        live.record(&record(Event::JobDone, "j10", &[]));
        for n in 0..20 {
            live.record(&record(Event::JobDone, &format!("k{n}"), &[]));
        }
        // Its first end left the window; its second still keeps late records out.
        live.record(&record(Event::SynthEnd, "j10", &p("0")));
        assert!(live.job("j10").is_none());
    }
}
