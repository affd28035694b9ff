//! TIMELINE lines, the public engine's format, so one analyzer reads both engines' logs:
//!
//! ```text
//! TIMELINE,<ms since engine start>,<EVENT>,<job_id>,<k=v,k=v,...>
//! ```

use std::fmt;
use std::str::FromStr;

/// One TIMELINE record.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Milliseconds since the engine started.
    pub ms: f64,
    /// `SYNTH_START`, `SYNTH_END`, `GPU_QUEUE`, `GPU_PICKUP`, `GPU_START`, `GPU_END`,
    /// `FINALIZE_END`, `JOB_DONE`, or another name (kept as written).
    pub event: String,
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
        self.get("partition")?.parse().ok()
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
            event: event.to_owned(),
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
        assert_eq!(record.event, "GPU_END");
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
