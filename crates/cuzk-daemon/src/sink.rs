//! Where the engine's TIMELINE records go: each, as it passes, to the daemon's readers of them
//! (the metrics, the live view of partitions and workers, the live page's feed) and on to the
//! log, if any. The engine knows only a [`TimelineSink`]; the readers know nothing of each other.

use std::sync::Arc;

use cuzk_pipeline::sink::TimelineSink;
use cuzk_pipeline::timeline::Record;

use crate::feed::Feed;
use crate::live::Live;
use crate::metrics::Metrics;

/// Passes the engine's records on to the TIMELINE log (if any), into the metrics, into the
/// live view of partitions and workers and into the live page's feed.
pub struct RecordSink {
    pub metrics: Arc<Metrics>,
    pub live: Arc<Live>,
    pub feed: Arc<Feed>,
    pub log: Option<Arc<dyn TimelineSink>>,
}

impl std::fmt::Debug for RecordSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordSink")
            .field("log", &self.log.is_some())
            .finish()
    }
}

impl TimelineSink for RecordSink {
    fn emit(&self, record: &Record) {
        self.metrics.record(record);
        self.live.record(record);
        self.feed.record(record);
        if let Some(log) = &self.log {
            log.emit(record);
        }
    }
}
