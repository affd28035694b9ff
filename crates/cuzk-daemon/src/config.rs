//! The daemon's TOML configuration, in two steps: the file is read into a raw form (keys we
//! do not know become warnings, not errors), then every value is checked and resolved into a
//! [`Config`], every problem reported at once with its dotted key.
//!
//! A file written for Curio's own daemon loads as it is: its keys mean the same here where they
//! mean something (`[daemon]` listen, status_listen; `[memory]` total_budget, safety_margin,
//! eviction_min_idle; `[gpus]` devices, gpu_threads, gpu_workers_per_device; `[scheduler]`
//! sort_by_type; `[synthesis]` threads; `[pipeline]` max_parallel_synthesis; `[srs]` param_cache, preload; `[logging]` level, format), and the
//! rest ([`WITHOUT_MEANING`]) are warnings that say why. Ours are added.
//! `cuzk.example.toml` beside this crate documents every key with its default.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use cuzk_groth16::backend::BackendChoice;
use serde::Deserialize;

/// The example file, every key at its default.
pub const EXAMPLE: &str = include_str!("../cuzk.example.toml");

/// Random parameters a daemon makes at load instead of reading files (`srs.test_params`): NOT a
/// trusted setup, so its proofs verify only against them. For measuring full-size circuits on a
/// machine whose disk cannot hold their parameter files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestParams {
    /// Multiplied out on the host (small circuits, tests).
    Cpu,
    /// On the first GPU in service: kept there when its proofs would hold them wholly resident,
    /// else brought to the host.
    Gpu,
}

impl TestParams {
    pub fn name(self) -> &'static str {
        match self {
            TestParams::Cpu => "cpu",
            TestParams::Gpu => "gpu",
        }
    }
}

/// Where the gRPC server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    Unix(PathBuf),
    Tcp(String),
}

impl fmt::Display for Listen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Listen::Unix(path) => write!(f, "unix://{}", path.display()),
            Listen::Tcp(addr) => f.write_str(addr),
        }
    }
}

impl Listen {
    /// `unix:///path`, `unix:path`, or `host:port` (also as `tcp://host:port` or Go's
    /// `dns:///host:port`).
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(path) = text
            .strip_prefix("unix://")
            .or_else(|| text.strip_prefix("unix:"))
        {
            if path.is_empty() {
                return Err("a unix address needs a path (unix:///run/curio/cuzk.sock)".into());
            }
            return Ok(Listen::Unix(PathBuf::from(path)));
        }
        let host_port = text
            .strip_prefix("tcp://")
            .or_else(|| text.strip_prefix("dns:///"))
            .unwrap_or(text);
        match host_port.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Listen::Tcp(host_port.to_owned()))
            }
            _ => Err(format!("{text:?} is neither unix:///PATH nor HOST:PORT")),
        }
    }
}

/// Keys of Curio's daemon that mean nothing here, and why: a file written for it loads with a
/// warning for each.
pub const WITHOUT_MEANING: [(&str, &str); 9] = [
    (
        "scheduler.max_batch_size",
        "cross-sector batching: partitions of many sectors are pipelined already, so the GPU \
         never waits for a batch to fill",
    ),
    (
        "scheduler.max_batch_wait_ms",
        "there are no batches to wait for (partitions of many sectors are pipelined already)",
    ),
    (
        "pipeline.enabled",
        "synthesis and the GPU are always pipelined, partition by partition",
    ),
    (
        "pipeline.synthesis_lookahead",
        "how many synthesized partitions wait for the GPU is bounded by memory.total_budget",
    ),
    (
        "pipeline.synthesis_concurrency",
        "in Curio's daemon it paces how many proofs are handed to its pipeline at once; partitions \
         of many sectors are pipelined here, bounded by pipeline.max_parallel_synthesis and \
         memory.total_budget (this daemon's jobs at once: pipeline.jobs_synthesizing)",
    ),
    (
        "pipeline.slot_size",
        "partitions are scheduled one by one, memory.total_budget bounding those in flight",
    ),
    (
        "pipeline.max_gpu_queue_depth",
        "the GPU queue is bounded by memory.total_budget",
    ),
    (
        "memory.pinned_budget",
        "deprecated (as in Curio's daemon): memory.total_budget bounds all host memory, \
         page-locked staging included",
    ),
    (
        "memory.working_memory_budget",
        "deprecated (as in Curio's daemon): memory.total_budget bounds all host memory",
    ),
];

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// For people: one line per event, fields as `key=value`.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Where TIMELINE lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimelineTarget {
    Off,
    Stderr,
    File(PathBuf),
}

/// Which circuits the daemon serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CircuitSet {
    Filecoin,
    /// Synthetic circuits, for tests and benchmarks of the daemon itself.
    Synthetic,
}

/// A size in bytes, or "auto".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    Auto,
    Bytes(u64),
}

/// The checked configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub listen: Listen,
    pub status_listen: Option<SocketAddr>,
    /// The bearer token TCP clients must send (read from `daemon.token_file`).
    pub token: Option<String>,
    pub tls: Option<TlsFiles>,
    pub allow_insecure_tcp: bool,
    pub socket_mode: u32,
    /// HTTP/2 pings on a connection idle this long (`None`: never), so NATs and load balancers
    /// keep a long `Prove` call's connection open.
    pub keepalive_interval: Option<Duration>,
    /// A connection whose ping is not answered within this is closed.
    pub keepalive_timeout: Duration,
    pub drain_timeout: Duration,
    pub result_retention: Duration,
    /// TIMELINE records the live page's ring keeps (a few hundred bytes each).
    pub page_records: usize,
    pub total_budget: Budget,
    pub safety_margin: u64,
    pub srs_budget: Budget,
    pub eviction_min_idle: Duration,
    pub pinned_limit: u64,
    pub devices: Option<Vec<usize>>,
    pub gpu_workers_per_device: usize,
    pub backend: BackendChoice,
    /// Threads of each GPU backend's host-side staging copies (`gpus.gpu_threads`; `None`: the
    /// backend's default).
    pub staging_threads: Option<usize>,
    /// Bytes cuzk may hold on each GPU (`gpus.memory_limit`; `None`: what the device has free
    /// at start, less a margin).
    pub gpu_memory_limit: Option<u64>,
    /// NORMAL jobs of the circuit already in flight go before older ones of other circuits
    /// (`scheduler.sort_by_type`), so a small GPU switches parameter sets less often.
    pub group_by_circuit: bool,
    pub threads: Option<usize>,
    /// Partitions synthesizing at once (`synthesis.partition_workers`, or Curio's
    /// `pipeline.max_parallel_synthesis`); `None`: one per core.
    pub partition_workers: Option<usize>,
    pub compiled_synthesis: bool,
    /// Added to the synthesis threads' nice value ([`cuzk_pipeline::EngineConfig::synthesis_nice`]).
    pub synthesis_nice: i32,
    /// Jobs synthesizing at once (a higher-priority one may start beyond it); `None`: no bound
    /// of its own (the partition workers and the memory budget bound them).
    pub jobs_synthesizing: Option<usize>,
    pub param_cache: Option<PathBuf>,
    pub preload: Vec<String>,
    /// Random parameters made at load instead of read from `param_cache` (`srs.test_params`).
    pub test_params: Option<TestParams>,
    pub log_level: String,
    pub log_format: LogFormat,
    pub timeline: TimelineTarget,
    pub circuits: CircuitSet,
    /// Keys the file has that this daemon does not use, and settings to think twice about, as
    /// warnings to print at start.
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Why a configuration was refused: every problem, each naming its key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {}", problems.join("; "))]
pub struct ConfigError {
    pub file: String,
    pub problems: Vec<String>,
}

/// A value that may be an integer or a string with a unit.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum Quantity {
    Number(u64),
    Text(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawConfig {
    daemon: RawDaemon,
    memory: RawMemory,
    gpus: RawGpus,
    synthesis: RawSynthesis,
    pipeline: RawPipeline,
    srs: RawSrs,
    logging: RawLogging,
    scheduler: RawScheduler,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawDaemon {
    listen: Option<String>,
    status_listen: Option<String>,
    token_file: Option<PathBuf>,
    tls_cert_file: Option<PathBuf>,
    tls_key_file: Option<PathBuf>,
    allow_insecure_tcp: Option<bool>,
    socket_mode: Option<String>,
    drain_timeout: Option<Quantity>,
    result_retention: Option<Quantity>,
    page_records: Option<usize>,
    keepalive_interval: Option<Quantity>,
    keepalive_timeout: Option<Quantity>,
    circuits: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawMemory {
    total_budget: Option<Quantity>,
    safety_margin: Option<Quantity>,
    srs_budget: Option<Quantity>,
    eviction_min_idle: Option<Quantity>,
    pinned_limit: Option<Quantity>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawGpus {
    devices: Option<Vec<usize>>,
    gpu_workers_per_device: Option<usize>,
    gpu_threads: Option<usize>,
    memory_limit: Option<Quantity>,
    backend: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawScheduler {
    sort_by_type: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawSynthesis {
    threads: Option<usize>,
    partition_workers: Option<usize>,
    compiled: Option<bool>,
    nice: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawPipeline {
    jobs_synthesizing: Option<usize>,
    /// Curio's name for `synthesis.partition_workers`.
    max_parallel_synthesis: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawSrs {
    param_cache: Option<PathBuf>,
    preload: Option<Vec<String>>,
    test_params: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawLogging {
    level: Option<String>,
    format: Option<String>,
    timeline: Option<String>,
}

/// Splits `"64GiB"` into 64 and `"GiB"`; `example` says what was expected.
fn number_and_unit<'a>(text: &'a str, example: &str) -> Result<(f64, &'a str), String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number = number
        .parse()
        .map_err(|_| format!("{text:?} is not {example}"))?;
    Ok((number, unit.trim()))
}

/// Parses `2048`, `"64GiB"`, `"512MiB"`, `"4G"`, `"1.5TiB"` (binary units either way).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let (number, unit) = number_and_unit(text, "a size (such as 64GiB or 512MiB)")?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "{other:?} is not a size unit (B, KiB, MiB, GiB, TiB)"
            ))
        }
    };
    Ok((number * (1u64 << shift) as f64) as u64)
}

/// Parses `30` (seconds), `"500ms"`, `"30s"`, `"5m"`, `"1h"`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = number_and_unit(text, "a duration (such as 30s, 5m or 1h)")?;
    let seconds = match unit {
        "ms" => number / 1e3,
        "" | "s" => number,
        "m" | "min" => number * 60.0,
        "h" => number * 3600.0,
        other => return Err(format!("{other:?} is not a duration unit (ms, s, m, h)")),
    };
    Ok(Duration::from_secs_f64(seconds))
}

/// Collects problems, each under its dotted key.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn check<T>(&mut self, key: &str, value: Result<T, String>) -> Option<T> {
        match value {
            Ok(value) => Some(value),
            Err(reason) => {
                self.0.push(format!("{key}: {reason}"));
                None
            }
        }
    }
}

fn bytes(q: &Quantity) -> Result<u64, String> {
    match q {
        Quantity::Number(n) => Ok(*n),
        Quantity::Text(t) => parse_bytes(t),
    }
}

fn budget(q: &Quantity) -> Result<Budget, String> {
    match q {
        Quantity::Text(t) if t == "auto" => Ok(Budget::Auto),
        other => bytes(other).map(Budget::Bytes),
    }
}

fn duration(q: &Quantity) -> Result<Duration, String> {
    match q {
        Quantity::Number(n) => Ok(Duration::from_secs(*n)),
        Quantity::Text(t) => parse_duration(t),
    }
}

fn at_least_one(n: usize) -> Result<usize, String> {
    if n == 0 {
        Err("must be at least 1".into())
    } else {
        Ok(n)
    }
}

impl Default for Config {
    fn default() -> Self {
        // The empty file parses, and its result is the defaults.
        Config::from_toml("", "defaults").unwrap_or_else(|e| unreachable!("defaults: {e}"))
    }
}

impl Config {
    /// Reads and checks a configuration file.
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: source.clone(),
            problems: vec![e.to_string()],
        })?;
        Self::from_toml(&text, &source)
    }

    /// Parses and checks configuration text; `source` names it in errors.
    pub fn from_toml(text: &str, source: &str) -> Result<Self, ConfigError> {
        let fail = |problems: Vec<String>| ConfigError {
            file: source.to_owned(),
            problems,
        };
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            fail(vec![e.to_string().trim_end().replace('\n', " ")])
        })?;
        let mut unknown = Vec::new();
        let mut note = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
        let ignoring = serde_ignored::Deserializer::new(toml::Value::Table(table), &mut note);
        let raw: RawConfig = serde_path_to_error::deserialize(ignoring)
            .map_err(|e| fail(vec![format!("{}: {}", e.path(), e.inner())]))?;
        let warnings = unknown
            .into_iter()
            .map(
                |key| match WITHOUT_MEANING.iter().find(|(k, _)| *k == key) {
                    Some((_, why)) => format!("{key}: ignored: {why}"),
                    None => format!("{key}: unknown key, ignored"),
                },
            )
            .collect();
        Self::check(raw, warnings).map_err(fail)
    }

    /// Listens at `text` instead (the command line's `--listen`), with the same checks as
    /// `daemon.listen`.
    pub fn override_listen(&mut self, text: &str) -> Result<(), ConfigError> {
        let fail = |problem: String| ConfigError {
            file: "--listen".into(),
            problems: vec![problem],
        };
        let listen = Listen::parse(text).map_err(fail)?;
        if let Listen::Tcp(addr) = &listen {
            let guard = Self::tcp_guard(
                addr,
                self.token.is_some(),
                self.tls.is_some(),
                self.allow_insecure_tcp,
            );
            self.warnings.extend(guard.map_err(fail)?);
        }
        self.listen = listen;
        Ok(())
    }

    /// TCP beyond this host is served only with a token, TLS, or the operator's explicit
    /// opt-out; on loopback (Curio on the same host, as its docs have it) without, with a
    /// warning to give.
    fn tcp_guard(
        addr: &str,
        token: bool,
        tls: bool,
        insecure: bool,
    ) -> Result<Option<String>, String> {
        if token || tls || insecure {
            return Ok(None);
        }
        let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let loopback = host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
        if loopback {
            return Ok(Some(format!(
                "daemon.listen: {addr} takes proofs without a token: any user of this host can \
                 submit them (daemon.token_file asks for one; a unix socket's socket_mode limits \
                 who may connect)"
            )));
        }
        let port = addr.rsplit_once(':').map_or("9820", |(_, port)| port);
        Err(format!(
            "{addr} is reachable from other hosts, and TCP there needs a guard: add \
             allow_insecure_tcp = true under [daemon] on a network you trust, or set token_file \
             (a bearer token) or tls_cert_file and tls_key_file; or listen on 127.0.0.1:{port} \
             for a Curio on this host"
        ))
    }

    fn check(raw: RawConfig, mut warnings: Vec<String>) -> Result<Self, Vec<String>> {
        let mut p = Problems::default();
        let d = &raw.daemon;
        let listen = p.check(
            "daemon.listen",
            Listen::parse(d.listen.as_deref().unwrap_or("unix:///run/curio/cuzk.sock")),
        );
        let status_listen = match d.status_listen.as_deref() {
            None | Some("") => None,
            Some(addr) => p.check(
                "daemon.status_listen",
                addr.parse::<SocketAddr>().map_err(|e| {
                    format!("{addr:?}: {e} (expected HOST:PORT, such as 127.0.0.1:9820)")
                }),
            ),
        };
        let token = match &d.token_file {
            None => None,
            Some(path) => p.check(
                "daemon.token_file",
                std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))
                    .and_then(|t| {
                        let t = t.trim().to_owned();
                        if t.len() < 16 {
                            Err(format!(
                                "{}: a token needs at least 16 characters",
                                path.display()
                            ))
                        } else {
                            Ok(t)
                        }
                    }),
            ),
        };
        let tls = match (&d.tls_cert_file, &d.tls_key_file) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            }),
            _ => {
                p.0.push("daemon.tls_cert_file, daemon.tls_key_file: give both or neither".into());
                None
            }
        };
        let allow_insecure_tcp = d.allow_insecure_tcp.unwrap_or(false);
        if let Some(Listen::Tcp(addr)) = &listen {
            // A token file that failed to read is reported as such, not as a missing guard.
            let guard = Self::tcp_guard(
                addr,
                d.token_file.is_some(),
                tls.is_some(),
                allow_insecure_tcp,
            );
            warnings.extend(p.check("daemon.listen", guard).flatten());
        }
        let socket_mode = p.check(
            "daemon.socket_mode",
            u32::from_str_radix(
                d.socket_mode
                    .as_deref()
                    .unwrap_or("0660")
                    .trim_start_matches("0o"),
                8,
            )
            .map_err(|e| format!("expected an octal mode such as \"0660\": {e}"))
            .and_then(|m| {
                if m > 0o777 {
                    Err(format!("{m:o} is not a file mode"))
                } else {
                    Ok(m)
                }
            }),
        );
        let q = |q: &Option<Quantity>, default: &str| {
            q.clone().unwrap_or(Quantity::Text(default.into()))
        };
        let drain_timeout = p.check(
            "daemon.drain_timeout",
            duration(&q(&d.drain_timeout, "10m")),
        );
        let result_retention = p.check(
            "daemon.result_retention",
            duration(&q(&d.result_retention, "10m")),
        );
        let page_records = p.check(
            "daemon.page_records",
            at_least_one(d.page_records.unwrap_or(crate::feed::EVENTS_KEPT)),
        );
        let keepalive_interval = p
            .check(
                "daemon.keepalive_interval",
                duration(&q(&d.keepalive_interval, "60s")),
            )
            .map(|interval| (!interval.is_zero()).then_some(interval));
        let keepalive_timeout = p.check(
            "daemon.keepalive_timeout",
            duration(&q(&d.keepalive_timeout, "20s")).and_then(|timeout| {
                if timeout.is_zero() {
                    Err("must be more than 0".into())
                } else {
                    Ok(timeout)
                }
            }),
        );
        let circuits = p.check(
            "daemon.circuits",
            match d.circuits.as_deref().unwrap_or("filecoin") {
                "filecoin" => Ok(CircuitSet::Filecoin),
                "synthetic" => Ok(CircuitSet::Synthetic),
                other => Err(format!("{other:?}: expected \"filecoin\" or \"synthetic\"")),
            },
        );

        let m = &raw.memory;
        let total_budget = p.check("memory.total_budget", budget(&q(&m.total_budget, "auto")));
        let safety_margin = p.check("memory.safety_margin", bytes(&q(&m.safety_margin, "5GiB")));
        let srs_budget = p.check("memory.srs_budget", budget(&q(&m.srs_budget, "auto")));
        let eviction_min_idle = p.check(
            "memory.eviction_min_idle",
            duration(&q(&m.eviction_min_idle, "5m")),
        );
        let pinned_limit = p.check("memory.pinned_limit", bytes(&q(&m.pinned_limit, "0")));

        let test_params = p.check(
            "srs.test_params",
            match raw.srs.test_params.as_deref().unwrap_or("off") {
                "off" => Ok(None),
                "cpu" => Ok(Some(TestParams::Cpu)),
                "gpu" => Ok(Some(TestParams::Gpu)),
                other => Err(format!("{other:?}: expected \"off\", \"cpu\" or \"gpu\"")),
            },
        );
        if let Some(Some(made)) = test_params {
            warnings.push(format!(
                "srs.test_params = {:?}: parameters are random, NOT a trusted setup; proofs \
                 verify only against them (Filecoin's verifiers are not run): for measurements only",
                made.name()
            ));
        }

        let g = &raw.gpus;
        let gpu_workers_per_device = p.check(
            "gpus.gpu_workers_per_device",
            at_least_one(g.gpu_workers_per_device.unwrap_or(2)),
        );
        let backend = p.check(
            "gpus.backend",
            match g.backend.as_deref().unwrap_or("auto") {
                "auto" => Ok(BackendChoice::Auto),
                "gpu" => Ok(BackendChoice::Gpu),
                "cpu" => Ok(BackendChoice::Cpu),
                other => Err(format!("{other:?}: expected \"auto\", \"gpu\" or \"cpu\"")),
            },
        );
        let staging_threads = g.gpu_threads.filter(|&n| n > 0);
        let gpu_memory_limit = match &g.memory_limit {
            None => Some(None),
            Some(Quantity::Text(t)) if t == "auto" => Some(None),
            Some(q) => p.check("gpus.memory_limit", bytes(q).map(|b| (b > 0).then_some(b))),
        };
        let group_by_circuit = raw.scheduler.sort_by_type.unwrap_or(true);
        let devices = match &g.devices {
            Some(list) if list.is_empty() => None,
            other => other.clone(),
        };

        let s = &raw.synthesis;
        let threads = match s.threads {
            None | Some(0) => None,
            Some(n) => Some(n),
        };
        let partition_workers = match (s.partition_workers, raw.pipeline.max_parallel_synthesis) {
            (Some(ours), Some(curios)) if ours != curios => {
                p.0.push(format!(
                    "synthesis.partition_workers ({ours}), pipeline.max_parallel_synthesis \
                     ({curios}): both set the partitions synthesizing at once; keep one"
                ));
                None
            }
            (Some(n), _) | (None, Some(n)) => Some(n).filter(|&n| n > 0),
            (None, None) => None,
        };
        // Any value when another key is wrong too: the configuration is refused then.
        let synthesis_nice = p
            .check(
                "synthesis.nice",
                match s.nice {
                    None => Ok(cuzk_pipeline::SYNTHESIS_NICE),
                    Some(n @ 0..=19) => Ok(n as i32),
                    Some(n) => Err(format!("{n}: expected 0 to 19")),
                },
            )
            .unwrap_or(cuzk_pipeline::SYNTHESIS_NICE);
        let jobs_synthesizing = raw.pipeline.jobs_synthesizing.filter(|&n| n > 0);
        let level = raw.logging.level.clone().unwrap_or_else(|| "info".into());
        if !["error", "warn", "info", "debug", "trace"].contains(&level.as_str()) {
            p.0.push(format!(
                "logging.level: {level:?}: expected error, warn, info, debug or trace"
            ));
        }
        let log_format = p.check(
            "logging.format",
            match raw.logging.format.as_deref().unwrap_or("") {
                "" | "text" => Ok(LogFormat::Text),
                "json" => Ok(LogFormat::Json),
                other => Err(format!(
                    "{other:?}: expected \"json\", or \"text\" (the default)"
                )),
            },
        );
        let timeline = match raw.logging.timeline.as_deref().unwrap_or("off") {
            "off" | "" => TimelineTarget::Off,
            "stderr" => TimelineTarget::Stderr,
            path => TimelineTarget::File(PathBuf::from(path)),
        };

        let problems = p.0;
        match (
            listen,
            socket_mode,
            drain_timeout,
            result_retention,
            circuits,
            total_budget,
            safety_margin,
            srs_budget,
            eviction_min_idle,
            pinned_limit,
            gpu_workers_per_device,
            backend,
            gpu_memory_limit,
            (
                keepalive_interval,
                keepalive_timeout,
                log_format,
                page_records,
                test_params,
            ),
        ) {
            (
                Some(listen),
                Some(socket_mode),
                Some(drain_timeout),
                Some(result_retention),
                Some(circuits),
                Some(total_budget),
                Some(safety_margin),
                Some(srs_budget),
                Some(eviction_min_idle),
                Some(pinned_limit),
                Some(gpu_workers_per_device),
                Some(backend),
                Some(gpu_memory_limit),
                (
                    Some(keepalive_interval),
                    Some(keepalive_timeout),
                    Some(log_format),
                    Some(page_records),
                    Some(test_params),
                ),
            ) if problems.is_empty() => Ok(Config {
                listen,
                status_listen,
                token,
                tls,
                allow_insecure_tcp,
                socket_mode,
                keepalive_interval,
                keepalive_timeout,
                drain_timeout,
                result_retention,
                page_records,
                total_budget,
                safety_margin,
                srs_budget,
                eviction_min_idle,
                pinned_limit,
                devices,
                gpu_workers_per_device,
                backend,
                staging_threads,
                gpu_memory_limit,
                group_by_circuit,
                threads,
                partition_workers,
                compiled_synthesis: s.compiled.unwrap_or(true),
                synthesis_nice,
                jobs_synthesizing,
                param_cache: raw.srs.param_cache.clone(),
                preload: raw.srs.preload.clone().unwrap_or_default(),
                test_params,
                log_level: level,
                log_format,
                timeline,
                circuits,
                warnings,
            }),
            _ => Err(problems),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_example_file_is_the_defaults_without_a_warning() {
        let example = Config::from_toml(EXAMPLE, "cuzk.example.toml").unwrap();
        assert_eq!(example.warnings, Vec::<String>::new());
        assert_eq!(example, Config::default());
        assert_eq!(
            example.listen,
            Listen::Unix(PathBuf::from("/run/curio/cuzk.sock"))
        );
    }

    #[test]
    fn unknown_keys_warn_and_bad_values_name_their_key() {
        let config = Config::from_toml(
            "[daemon]\nlisten = \"unix:///tmp/x.sock\"\nlisten_typo = 1\n[scheduler]\nmax_batch_size = 4\n[extra]\nx = 1\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(config.warnings.len(), 3, "{:?}", config.warnings);
        assert!(config.warnings[0].contains("daemon.listen_typo"));
        assert!(config.warnings.iter().any(|w| w.starts_with("extra")));
        // A key of Curio's daemon says why it means nothing here.
        assert!(
            config
                .warnings
                .iter()
                .any(|w| w.starts_with("scheduler.max_batch_size: ignored: cross-sector")),
            "{:?}",
            config.warnings
        );

        let error = Config::from_toml(
            "[memory]\ntotal_budget = \"lots\"\n[gpus]\ngpu_workers_per_device = 0\n",
            "t.toml",
        )
        .unwrap_err();
        assert_eq!(error.problems.len(), 2, "{error}");
        assert!(error.to_string().contains("memory.total_budget"), "{error}");
        assert!(
            error.to_string().contains("gpus.gpu_workers_per_device"),
            "{error}"
        );

        let error =
            Config::from_toml("[gpus]\ngpu_workers_per_device = \"two\"\n", "t.toml").unwrap_err();
        assert!(
            error.to_string().contains("gpus.gpu_workers_per_device"),
            "{error}"
        );
        let error = Config::from_toml("[synthesis]\nnice = 20\n", "t.toml").unwrap_err();
        assert!(error.to_string().contains("synthesis.nice: 20"), "{error}");
        let niced = Config::from_toml("[synthesis]\nnice = 5\n", "t.toml").unwrap();
        assert_eq!(niced.synthesis_nice, 5);
        let error = Config::from_toml("[daemon\n", "t.toml").unwrap_err();
        assert!(error.to_string().starts_with("t.toml: "), "{error}");
    }

    #[test]
    fn test_parameters_are_named_and_warned_of() {
        assert_eq!(Config::default().test_params, None);
        let config = Config::from_toml("[srs]\ntest_params = \"gpu\"\n", "t.toml").unwrap();
        assert_eq!(config.test_params, Some(TestParams::Gpu));
        assert!(
            config
                .warnings
                .iter()
                .any(|w| w.contains("NOT a trusted setup")),
            "{:?}",
            config.warnings
        );
        let error = Config::from_toml("[srs]\ntest_params = \"yes\"\n", "t.toml").unwrap_err();
        assert!(
            error.to_string().contains("srs.test_params: \"yes\""),
            "{error}"
        );
    }

    #[test]
    fn tcp_beyond_loopback_needs_a_token_tls_or_an_explicit_opt_out() {
        let error = Config::from_toml("[daemon]\nlisten = \"0.0.0.0:9820\"\n", "t").unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("t: daemon.listen: 0.0.0.0:9820"), "{text}");
        assert!(
            text.contains("allow_insecure_tcp = true under [daemon]"),
            "{text}"
        );
        assert!(text.contains("token_file"), "{text}");
        let open = Config::from_toml(
            "[daemon]\nlisten = \"dns:///10.0.0.2:9820\"\nallow_insecure_tcp = true\n",
            "t",
        )
        .unwrap();
        assert_eq!(open.listen, Listen::Tcp("10.0.0.2:9820".into()));
        assert_eq!(open.warnings, Vec::<String>::new());
        // Loopback, as Curio's docs point [Cuzk] Address at: served, with a warning.
        for addr in [
            "127.0.0.1:9820",
            "127.3.2.1:1",
            "[::1]:9820",
            "localhost:9820",
        ] {
            let config =
                Config::from_toml(&format!("[daemon]\nlisten = \"{addr}\"\n"), "t").unwrap();
            assert_eq!(config.listen, Listen::Tcp(addr.into()));
            assert_eq!(config.warnings.len(), 1, "{addr}: {:?}", config.warnings);
            assert!(config.warnings[0].contains("any user of this host"));
        }
        let mut config = Config::default();
        assert!(config.override_listen("[::]:9820").is_err());
        config.override_listen("127.0.0.1:0").unwrap();
        assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    }

    #[test]
    fn curio_keys_with_a_meaning_here_are_honoured() {
        let config = Config::from_toml(
            "[gpus]\ngpu_threads = 32\n[scheduler]\nsort_by_type = false\n\
             [pipeline]\nmax_parallel_synthesis = 18\nsynthesis_concurrency = 1\njobs_synthesizing = 3\n\
             [logging]\nformat = \"json\"\n[memory]\npinned_budget = \"50GiB\"\n",
            "t",
        )
        .unwrap();
        assert_eq!(config.staging_threads, Some(32));
        assert!(!config.group_by_circuit);
        assert_eq!(config.partition_workers, Some(18));
        // Curio's synthesis_concurrency paced its dispatch; ours is jobs_synthesizing.
        assert_eq!(config.jobs_synthesizing, Some(3));
        assert_eq!(config.log_format, LogFormat::Json);
        assert_eq!(config.warnings.len(), 2, "{:?}", config.warnings);
        let warned = |start: &str, says: &str| {
            config
                .warnings
                .iter()
                .any(|w| w.starts_with(start) && w.contains(says))
        };
        assert!(warned(
            "pipeline.synthesis_concurrency: ignored",
            "jobs_synthesizing"
        ));
        assert!(warned(
            "memory.pinned_budget: ignored",
            "memory.total_budget"
        ));
        let defaults = Config::default();
        assert_eq!(defaults.safety_margin, 5 << 30);
        assert_eq!(defaults.eviction_min_idle, Duration::from_secs(300));
        assert_eq!(defaults.staging_threads, None);
        assert!(defaults.group_by_circuit);
        assert_eq!(defaults.jobs_synthesizing, None);
        assert_eq!(defaults.keepalive_interval, Some(Duration::from_secs(60)));
        let both = Config::from_toml(
            "[synthesis]\npartition_workers = 4\n[pipeline]\nmax_parallel_synthesis = 8\n",
            "t",
        )
        .unwrap_err();
        assert!(both.to_string().contains("keep one"), "{both}");
        let off = Config::from_toml("[daemon]\nkeepalive_interval = 0\n", "t").unwrap();
        assert_eq!(off.keepalive_interval, None);
        let error = Config::from_toml("[logging]\nformat = \"xml\"\n", "t").unwrap_err();
        assert!(error.to_string().contains("logging.format"), "{error}");
    }

    #[test]
    fn sizes_and_durations_parse_with_units() {
        assert_eq!(parse_bytes("64GiB").unwrap(), 64 << 30);
        assert_eq!(parse_bytes("512M").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("1.5KiB").unwrap(), 1536);
        assert!(parse_bytes("12 apples").is_err());
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_duration("3 weeks").is_err());
    }

    /// `gpus.memory_limit`: a size caps what cuzk holds on each GPU; "auto", 0 or no key leave
    /// the device's free memory at start; a bad size names the key.
    #[test]
    fn gpu_memory_limit_is_a_size_or_auto() {
        let limit = |text: &str| {
            Config::from_toml(&format!("[gpus]\n{text}\n"), "t").map(|c| c.gpu_memory_limit)
        };
        assert_eq!(limit("memory_limit = \"16GiB\"").unwrap(), Some(16 << 30));
        assert_eq!(limit("memory_limit = 1048576").unwrap(), Some(1 << 20));
        assert_eq!(limit("memory_limit = \"auto\"").unwrap(), None);
        assert_eq!(limit("memory_limit = 0").unwrap(), None);
        assert_eq!(limit("").unwrap(), None);
        let error = limit("memory_limit = \"16 parsecs\"")
            .unwrap_err()
            .to_string();
        assert!(error.contains("gpus.memory_limit"), "{error}");
    }
}
