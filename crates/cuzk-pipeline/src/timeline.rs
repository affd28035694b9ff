//! TIMELINE lines, the public engine's format, so one analyzer reads both engines' logs:
//!
//! ```text
//! TIMELINE,<ms since engine start>,<EVENT>,<job_id>,<k=v,k=v,...>
//! ```
//!
//! [`Record`]'s `Display` and `FromStr` are the one text form: the engine writes through the
//! first, every reader (analysis, the daemon's metrics and live view, the CLI) goes through the
//! second, and events and detail keys are named here once ([`Event`], [`key`]).

use std::fmt;
use std::str::FromStr;

/// Declares [`Event`] from one table of variants and their TIMELINE names, so writing
/// ([`Event::as_str`]) and reading (`FromStr`) can never disagree on a name.
macro_rules! events {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// The events the engine writes, named as the public engine's TIMELINE lines name them
        /// (listed in docs/architecture.md, "TIMELINE").
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Event {
            $($(#[$doc])* $variant,)*
        }

        impl Event {
            /// Every event, in the table's order.
            pub const ALL: &'static [Event] = &[$(Event::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Event::$variant => $name,)*
                }
            }
        }

        impl FromStr for Event {
            type Err = UnknownEvent;

            fn from_str(name: &str) -> Result<Self, Self::Err> {
                match name {
                    $($name => Ok(Event::$variant),)*
                    _ => Err(UnknownEvent(name.to_owned())),
                }
            }
        }
    };
}

events! {
    SynthStart = "SYNTH_START",
    SynthEnd = "SYNTH_END",
    GpuQueue = "GPU_QUEUE",
    GpuPickup = "GPU_PICKUP",
    GpuStart = "GPU_START",
    GpuEnd = "GPU_END",
    FinalizeEnd = "FINALIZE_END",
    JobDone = "JOB_DONE",
    /// One per finished partition: every stage timing the engine and the backend measured.
    PartitionStats = "PARTITION_STATS",
    /// A partition's attempt failed by a fault of its device (`retry=1`: it will be retried).
    DeviceFault = "DEVICE_FAULT",
    /// A device was taken out of service.
    DeviceOut = "DEVICE_OUT",
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is none of the engine's [`Event`]s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an event the engine writes")]
pub struct UnknownEvent(pub String);

/// A record's event: one of the engine's, or another name kept as written (a log may come from
/// the public engine or a later version), so every line reads back to the same text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventName {
    Known(Event),
    Other(String),
}

impl EventName {
    pub fn as_str(&self) -> &str {
        match self {
            EventName::Known(event) => event.as_str(),
            EventName::Other(name) => name,
        }
    }
}

impl From<Event> for EventName {
    fn from(event: Event) -> Self {
        EventName::Known(event)
    }
}

impl PartialEq<Event> for EventName {
    fn eq(&self, event: &Event) -> bool {
        *self == EventName::Known(*event)
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Detail keys, named once for the engine that writes them and every reader.
pub mod key {
    /// The partition's index in its job.
    pub const PARTITION: &str = "partition";
    /// The worker (synthesis or GPU) that handled it.
    pub const WORKER: &str = "worker";
    /// The device's index in the engine's backend list; absent (device 0) in the public engine's
    /// logs.
    pub const DEVICE: &str = "device";
    /// SYNTH_END, PARTITION_STATS: the partition's synthesis.
    pub const SYNTH_MS: &str = "synth_ms";
    /// PARTITION_STATS: how it was synthesized (direct, recorded, compiled).
    pub const SYNTHESIS: &str = "synthesis";
    /// PARTITION_STATS: in the GPU queue.
    pub const QUEUE_MS: &str = "queue_ms";
    /// PARTITION_STATS: host preparation, device wait and device region.
    pub const PROVE_START_MS: &str = "prove_start_ms";
    /// PARTITION_STATS: waiting for the device lock.
    pub const DEVICE_WAIT_MS: &str = "device_wait_ms";
    /// GPU_END (that interval), PARTITION_STATS (the whole device region).
    pub const GPU_MS: &str = "gpu_ms";
    /// PARTITION_STATS: finalization.
    pub const FINALIZE_MS: &str = "finalize_ms";
    /// A backend stage (the GPU backend's): the host copy of a, b, c and the witness into
    /// page-locked memory before the device region.
    pub const PREP_COPY_MS: &str = "prep_copy_ms";
    /// A stage of logs before `prep_copy_ms` took it out of the region: the copy of a, b, c
    /// inside it.
    pub const STAGE_ABC_MS: &str = "stage_abc_ms";
    /// A backend stage (the GPU backend's): placing the parameter set on the device, inside the
    /// region.
    pub const SRS_PLACE_MS: &str = "srs_place_ms";
    /// GPU_START: `1` for a device region taken beside the lock.
    pub const BESIDE: &str = "beside";
    /// DEVICE_FAULT: `1` when the partition will be retried.
    pub const RETRY: &str = "retry";
    /// DEVICE_FAULT: the fault's kind.
    pub const FAULT: &str = "fault";
    /// JOB_DONE: the job's partition count.
    pub const PARTITIONS: &str = "partitions";
    /// JOB_DONE: ok, failed or cancelled.
    pub const STATUS: &str = "status";
}

/// One TIMELINE record.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Milliseconds since the engine started.
    pub ms: f64,
    pub event: EventName,
    pub job_id: String,
    /// `k=v` pairs in the order written (`partition=N`, `worker=W`, `synth_ms=…`, …).
    pub detail: Vec<(String, String)>,
}

impl Record {
    /// The value of detail key `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.detail
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `partition=N` as a number.
    pub fn partition(&self) -> Option<u32> {
        self.get(key::PARTITION)?.parse().ok()
    }

    /// `worker=W` as a number.
    pub fn worker(&self) -> Option<u32> {
        self.get(key::WORKER)?.parse().ok()
    }

    /// `device=D` as a number.
    pub fn device(&self) -> Option<u32> {
        self.get(key::DEVICE)?.parse().ok()
    }

    /// Detail `key` as a finite number.
    pub fn number(&self, key: &str) -> Option<f64> {
        self.get(key)?.parse::<f64>().ok().filter(|v| v.is_finite())
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TIMELINE,{},{},{},", self.ms, self.event, self.job_id)?;
        for (i, (k, v)) in self.detail.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

/// Why a line that contains `TIMELINE,` is not a record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MalformedLine {
    #[error("fewer than the four fields ms, event, job id, detail")]
    MissingFields,
    #[error("the time {0:?} is not a number of milliseconds")]
    BadTime(String),
    #[error("detail item {0:?} is not key=value")]
    BadDetail(String),
}

impl FromStr for Record {
    type Err = MalformedLine;

    /// Parses a line holding a record anywhere in it (log prefixes such as timestamps are skipped).
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let at = line.find("TIMELINE,").ok_or(MalformedLine::MissingFields)?;
        let mut fields = line[at + "TIMELINE,".len()..].trim_end().splitn(4, ',');
        let (Some(ms), Some(event), Some(job_id)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(MalformedLine::MissingFields);
        };
        let ms: f64 = ms
            .trim()
            .parse()
            .map_err(|_| MalformedLine::BadTime(ms.to_owned()))?;
        if !ms.is_finite() || event.is_empty() {
            return Err(MalformedLine::BadTime(ms.to_string()));
        }
        let detail = fields
            .next()
            .unwrap_or("")
            .split(',')
            .filter(|item| !item.is_empty())
            .map(|item| {
                item.split_once('=')
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .ok_or_else(|| MalformedLine::BadDetail(item.to_owned()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Record {
            ms,
            event: event
                .parse()
                .map_or_else(|_| EventName::Other(event.to_owned()), EventName::Known),
            job_id: job_id.to_owned(),
            detail,
        })
    }
}

/// The records of a log, in time order, and how many TIMELINE lines could not be read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    pub records: Vec<Record>,
    pub malformed: usize,
}

impl Timeline {
    /// Reads every line containing `TIMELINE,`; other lines are ignored, lines may come in any
    /// order, malformed TIMELINE lines are counted, never fatal.
    pub fn parse(log: &str) -> Self {
        let mut timeline = Timeline::default();
        for line in log.lines().filter(|l| l.contains("TIMELINE,")) {
            match line.parse::<Record>() {
                Ok(record) => timeline.records.push(record),
                Err(_) => timeline.malformed += 1,
            }
        }
        timeline.records.sort_by(|a, b| a.ms.total_cmp(&b.ms));
        timeline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_text() {
        let line = "TIMELINE,1234.5,GPU_END,job-7,partition=3,worker=1,gpu_ms=812";
        let record: Record = line.parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(record.ms, 1234.5);
        assert_eq!(record.event, Event::GpuEnd);
        assert_eq!(record.job_id, "job-7");
        assert_eq!(record.partition(), Some(3));
        assert_eq!(record.get("gpu_ms"), Some("812"));
        assert_eq!(record.to_string(), line);
        let bare: Record = "TIMELINE,5,JOB_DONE,j,"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(bare.detail.is_empty());
        assert_eq!(bare.to_string(), "TIMELINE,5,JOB_DONE,j,");
    }

    /// Every event the engine writes, and a name it does not, read back to the line written.
    #[test]
    fn every_event_round_trips_through_its_line() {
        let names = Event::ALL
            .iter()
            .map(|e| e.as_str())
            .chain(["SOME_LATER_EVENT"]);
        for name in names {
            for detail in ["", "partition=3,worker=1,device=0,gpu_ms=812.125"] {
                let line = format!("TIMELINE,1234.5,{name},job-7,{detail}");
                let record: Record = line.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
                assert_eq!(record.event.as_str(), name);
                assert_eq!(record.to_string(), line);
            }
        }
        for &event in Event::ALL {
            assert_eq!(event.as_str().parse(), Ok(event));
        }
        assert_eq!(
            "SOME_LATER_EVENT".parse::<Event>(),
            Err(UnknownEvent("SOME_LATER_EVENT".into()))
        );
    }

    #[test]
    fn logs_keep_timeline_lines_in_time_order_and_count_the_malformed() {
        let log = "starting up\n\
                   2026-11-30T10:00:00Z INFO TIMELINE,20,GPU_START,a,partition=0\n\
                   TIMELINE,10,SYNTH_END,a,partition=0,synth_ms=9\n\
                   TIMELINE,abc,GPU_END,a,partition=0\n\
                   TIMELINE,30,GPU_END,a,partition\n\
                   TIMELINE,40\n\
                   noise TIMELINE without comma\n";
        let timeline = Timeline::parse(log);
        assert_eq!(timeline.malformed, 3);
        let events: Vec<&str> = timeline.records.iter().map(|r| r.event.as_str()).collect();
        assert_eq!(events, ["SYNTH_END", "GPU_START"]);
    }
}
