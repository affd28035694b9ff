//! What the live page ([`crate::page`]) follows: the engine's TIMELINE records it draws, kept in
//! a bounded ring, each tagged with its job's proof kind; the last proofs and the last failures,
//! with their timings and messages; and this daemon's boot id, so that a page left open across a
//! restart starts over instead of mixing two daemons' cursors. Its writers sit above it and know
//! nothing of the page: the records come as they pass ([`crate::sink`], as to the metrics), and
//! jobs' starts and ends from the daemon's core.

pub mod ring;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use cuzk_pipeline::timeline::{Event, EventName, Record};
use cuzk_pipeline::Priority;
use rand::RngCore;
use serde::Serialize;

use self::ring::{Ring, Since};
use crate::kinds::{priority_name, Kind};
use crate::outcome::{Ended, Status, Timings};

/// TIMELINE records the ring keeps by default (`daemon.page_records`). A partition leaves about
/// four the page draws (its synthesis and its device region, start and end of each), so this is
/// the last ~2,500 partitions: an hour of 32 GiB PoRep on one GPU (a 1.4 s device region each), a
/// minute or two of 2 KiB proofs at their fastest; a few MB however long the daemon runs.
pub const EVENTS_KEPT: usize = 10_000;

/// Completed proofs the page lists, and failed or cancelled ones: each list its own, so a
/// failure hours ago stays listed however many proofs came after it.
pub const ENDS_KEPT: usize = 20;

/// A request id is the client's and of any length, and every record carries one: the page's
/// copy is cut to this many characters. Failure messages likewise.
const ID_CHARS: usize = 128;
const MESSAGE_CHARS: usize = 2_000;

/// The events the page draws: synthesis and device regions, device faults, jobs' ends. The
/// others (GPU_QUEUE, GPU_PICKUP, FINALIZE_END, PARTITION_STATS) would take room in the ring
/// and draw nothing.
const DRAWN: [Event; 7] = [
    Event::SynthStart,
    Event::SynthEnd,
    Event::GpuStart,
    Event::GpuEnd,
    Event::DeviceFault,
    Event::DeviceOut,
    Event::JobDone,
];

/// One TIMELINE record as the page gets it: the record's own fields, and its job's kind when
/// the daemon knows it.
#[derive(Debug, Serialize)]
pub struct Mark {
    /// Milliseconds since the engine started (the record's own).
    ms: f64,
    event: &'static str,
    job: Arc<str>,
    kind: Option<&'static str>,
    /// The record's `k=v` pairs, values as written.
    #[serde(serialize_with = "as_map")]
    detail: Vec<(String, String)>,
}

fn as_map<S: serde::Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

/// A job's end as the page lists it.
#[derive(Debug, Serialize)]
pub struct Finished {
    job: Arc<str>,
    kind: &'static str,
    priority: &'static str,
    attempt: u32,
    status: &'static str,
    error: String,
    ended_unix_ms: u64,
    #[serde(flatten)]
    timings: Timings,
}

/// What a poll gets from the feed.
#[derive(Debug)]
pub struct View {
    pub boot: String,
    /// Now, on the engine's clock (the records' `ms`).
    pub now_ms: f64,
    pub events: Since<Arc<Mark>>,
    /// Newest first.
    pub proofs: Vec<Arc<Finished>>,
    pub failures: Vec<Arc<Finished>>,
}

/// A job as the feed tags its records and lists its end: which attempt at which request id. The
/// daemon's core hands its jobs over by this name, so the feed needs nothing of [`crate::jobs`].
#[derive(Clone, Copy, Debug)]
pub struct JobName<'a> {
    pub id: &'a str,
    pub kind: Kind,
    pub priority: Priority,
    pub attempt: u32,
}

/// A job registered and not yet ended.
struct Tag {
    id: Arc<str>,
    kind: Kind,
    attempt: u32,
}

struct Inner {
    events: Ring<Arc<Mark>>,
    proofs: Ring<Arc<Finished>>,
    failures: Ring<Arc<Finished>>,
    /// By full request id.
    jobs: HashMap<String, Tag>,
    /// The engine clock's start on this feed's clock: the least (arrival − record time) seen,
    /// as a record is never stamped later than it arrives.
    offset_ms: Option<f64>,
}

/// The page's feed, one per daemon.
pub struct Feed {
    boot: String,
    started: Instant,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed").field("boot", &self.boot).finish()
    }
}

/// `text` cut to `chars` characters, marked when cut.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn since_epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Feed {
    /// An empty feed under a fresh boot id, its ring keeping the last `records` records.
    pub fn new(records: usize) -> Self {
        let mut bytes = [0u8; 8];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Feed {
            boot: bytes.iter().map(|b| format!("{b:02x}")).collect(),
            started: Instant::now(),
            inner: Mutex::new(Inner {
                events: Ring::new(records),
                proofs: Ring::new(ENDS_KEPT),
                failures: Ring::new(ENDS_KEPT),
                jobs: HashMap::new(),
                offset_ms: None,
            }),
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Every update leaves the ring and the map whole.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn elapsed_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1e3
    }

    /// Keeps a record the page draws.
    pub fn record(&self, record: &Record) {
        let EventName::Known(event) = record.event else {
            return;
        };
        if !DRAWN.contains(&event) {
            return;
        }
        let offset = self.elapsed_ms() - record.ms;
        let detail = record.detail.clone();
        let mut inner = self.inner();
        inner.offset_ms = Some(inner.offset_ms.map_or(offset, |o| o.min(offset)));
        let (job, kind) = match inner.jobs.get(&record.job_id) {
            Some(tag) => (Arc::clone(&tag.id), Some(tag.kind.queue_name())),
            None => (cut(&record.job_id, ID_CHARS).into(), None),
        };
        inner.events.push(Arc::new(Mark {
            ms: record.ms,
            event: event.as_str(),
            job,
            kind,
            detail,
        }));
    }

    /// A job was registered: its records are tagged with its kind until it ends.
    pub fn started(&self, job: JobName<'_>) {
        let tag = Tag {
            id: cut(job.id, ID_CHARS).into(),
            kind: job.kind,
            attempt: job.attempt,
        };
        self.inner().jobs.insert(job.id.to_owned(), tag);
    }

    /// A job ended: listed with the proofs or the failures.
    pub fn ended(&self, job: JobName<'_>, ended: &Ended) {
        let finished = Arc::new(Finished {
            job: cut(job.id, ID_CHARS).into(),
            kind: job.kind.queue_name(),
            priority: priority_name(job.priority),
            attempt: job.attempt,
            status: ended.status.as_str(),
            error: cut(&ended.error, MESSAGE_CHARS),
            ended_unix_ms: since_epoch_ms(),
            timings: ended.timings,
        });
        let mut inner = self.inner();
        // A later attempt under the id may have been registered meanwhile: its tag stays.
        if inner
            .jobs
            .get(job.id)
            .is_some_and(|t| t.attempt == job.attempt)
        {
            inner.jobs.remove(job.id);
        }
        match ended.status {
            Status::Completed => inner.proofs.push(finished),
            _ => inner.failures.push(finished),
        }
    }

    /// The records after `cursor`, and the lists; under the lock only long enough to copy
    /// pointers.
    pub fn since(&self, cursor: u64) -> View {
        let inner = self.inner();
        let now_ms = self.elapsed_ms() - inner.offset_ms.unwrap_or(0.0);
        View {
            boot: self.boot.clone(),
            now_ms,
            events: inner.events.since(cursor),
            proofs: inner.proofs.iter().rev().cloned().collect(),
            failures: inner.failures.iter().rev().cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn record(ms: f64, event: &str, job: &str) -> Record {
        format!("TIMELINE,{ms},{event},{job},partition=0,worker=1")
            .parse()
            .unwrap()
    }

    #[test]
    fn drawn_records_are_kept_and_cut_to_size() {
        let feed = Feed::new(EVENTS_KEPT);
        let long = "x".repeat(10_000);
        for event in ["SYNTH_START", "GPU_QUEUE", "PARTITION_STATS", "GPU_END"] {
            feed.record(&record(1.0, event, &long));
        }
        let view = feed.since(0);
        let events: Vec<&str> = view.events.items.iter().map(|m| m.event).collect();
        assert_eq!(events, ["SYNTH_START", "GPU_END"]);
        assert_eq!(view.events.items[0].job.chars().count(), ID_CHARS + 1);
        assert_eq!(view.events.items[0].kind, None);
        let json = serde_json::to_value(&*view.events.items[1]).unwrap();
        assert_eq!(json["detail"]["worker"], "1");
        // The engine's clock is read from the records: never behind the latest one.
        assert!(view.now_ms >= 1.0, "{}", view.now_ms);
    }
}
