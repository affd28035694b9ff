//! Where the engine's TIMELINE records go: stderr, any writer (a file), or memory (tests and
//! `cuzk bench`, which analyse them), behind one small trait so the engine does not care.

use std::fmt::Display;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::timeline::{Event, Record, Timeline};

/// Receives every record as it happens.
pub trait TimelineSink: Send + Sync {
    fn emit(&self, record: &Record);
}

/// One line per record on stderr, the public engine's habit (its logs mix them with other lines).
#[derive(Clone, Copy, Debug, Default)]
pub struct StderrSink;

impl TimelineSink for StderrSink {
    fn emit(&self, record: &Record) {
        eprintln!("{record}");
    }
}

/// One line per record into a writer, flushed per line so a crash keeps what happened before it.
/// A failed write never disturbs the proofs: the first error is kept for [`WriterSink::finish`].
#[derive(Debug)]
pub struct WriterSink<W> {
    state: Mutex<(W, Option<io::Error>)>,
}

impl<W: Write + Send> WriterSink<W> {
    pub fn new(writer: W) -> Self {
        WriterSink {
            state: Mutex::new((writer, None)),
        }
    }

    /// Flushes the writer; the first write error since the last call, if any.
    pub fn flush(&self) -> io::Result<()> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (writer, error) = &mut *state;
        match error.take() {
            Some(e) => Err(e),
            None => writer.flush(),
        }
    }

    /// Flushes and gives back the writer, or the first write error.
    pub fn finish(self) -> io::Result<W> {
        let (mut writer, error) = self
            .state
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        match error {
            Some(e) => Err(e),
            None => writer.flush().map(|()| writer),
        }
    }
}

impl<W: Write + Send> TimelineSink for WriterSink<W> {
    fn emit(&self, record: &Record) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (writer, error) = &mut *state;
        if error.is_none() {
            if let Err(e) = writeln!(writer, "{record}").and_then(|()| writer.flush()) {
                *error = Some(e);
            }
        }
    }
}

/// Keeps every record, for analysis in the same process.
#[derive(Debug, Default)]
pub struct MemorySink {
    records: Mutex<Vec<Record>>,
}

impl MemorySink {
    /// The records so far, in time order, as a parsed log would hold them.
    pub fn timeline(&self) -> Timeline {
        let mut records = self
            .records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        records.sort_by(|a, b| a.ms.total_cmp(&b.ms));
        Timeline {
            records,
            malformed: 0,
        }
    }
}

impl TimelineSink for MemorySink {
    fn emit(&self, record: &Record) {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(record.clone());
    }
}

/// Every record to each of these sinks in turn: `cuzk bench` keeps them for its figures and
/// writes them to its `--timeline` file as they happen, so that a run killed before its end still
/// leaves its log.
pub struct Tee(pub Vec<Arc<dyn TimelineSink>>);

impl std::fmt::Debug for Tee {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tee({} sinks)", self.0.len())
    }
}

impl TimelineSink for Tee {
    fn emit(&self, record: &Record) {
        for sink in &self.0 {
            sink.emit(record);
        }
    }
}

/// A `k=v` detail item.
pub fn kv(key: &str, value: impl Display) -> (String, String) {
    (key.to_owned(), value.to_string())
}

/// Milliseconds, to the microsecond (enough for any stage, short in the log).
pub fn ms(duration: std::time::Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e3
}

/// Stamps records with the time since the engine started and hands them to the sink.
pub(crate) struct Clock {
    start: Instant,
    sink: std::sync::Arc<dyn TimelineSink>,
}

impl Clock {
    pub(crate) fn new(sink: std::sync::Arc<dyn TimelineSink>) -> Self {
        Clock {
            start: Instant::now(),
            sink,
        }
    }

    /// Emits `event` stamped now.
    pub(crate) fn emit(&self, event: Event, job_id: &str, detail: Vec<(String, String)>) {
        self.emit_at(Instant::now(), event, job_id, detail);
    }

    /// Emits `event` stamped at `at` (for an event known only after the fact).
    pub(crate) fn emit_at(
        &self,
        at: Instant,
        event: Event,
        job_id: &str,
        detail: Vec<(String, String)>,
    ) {
        self.sink.emit(&Record {
            ms: ms(at.saturating_duration_since(self.start)),
            event: event.into(),
            job_id: job_id.to_owned(),
            detail,
        });
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock").field("start", &self.start).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::key;

    fn record() -> Record {
        Record {
            ms: 1.5,
            event: Event::GpuEnd.into(),
            job_id: "j".into(),
            detail: vec![kv(key::PARTITION, 0), kv(key::GPU_MS, 0.25)],
        }
    }

    #[test]
    fn writer_sink_writes_one_line_per_record() {
        let sink = WriterSink::new(Vec::new());
        let record = record();
        sink.emit(&record);
        sink.emit(&record);
        let text = sink.finish().map(String::from_utf8);
        assert_eq!(
            text.ok().and_then(Result::ok).as_deref(),
            Some(
                "TIMELINE,1.5,GPU_END,j,partition=0,gpu_ms=0.25\n\
                 TIMELINE,1.5,GPU_END,j,partition=0,gpu_ms=0.25\n"
            )
        );
    }

    /// A tee's sinks each get every record as it comes: the file of a run stopped early holds
    /// what happened until then.
    #[test]
    fn a_tee_gives_every_record_to_each_sink_at_once() {
        let memory = Arc::new(MemorySink::default());
        let file = Arc::new(WriterSink::new(Vec::new()));
        let tee = Tee(vec![memory.clone(), file.clone()]);
        tee.emit(&record());
        assert_eq!(memory.timeline().records, vec![record()]);
        assert!(file.flush().is_ok());
        drop(tee);
        let file = Arc::try_unwrap(file).map(WriterSink::finish);
        let text = match file {
            Ok(Ok(bytes)) => String::from_utf8(bytes).ok(),
            _ => None,
        };
        assert_eq!(
            text.as_deref(),
            Some("TIMELINE,1.5,GPU_END,j,partition=0,gpu_ms=0.25\n")
        );
    }
}
