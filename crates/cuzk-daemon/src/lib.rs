//! `cuzk serve`: the proving daemon Curio talks to over gRPC (`cuzk.v1.ProvingEngine`), wire
//! compatible with the public engine's, with its parameter sets kept in tiers.
//!
//! Its modules form layers: each uses only those listed before it, and none uses this root.
//!
//! - [`proto`]: the generated messages, server and client of `proto/cuzk/v1/proving.proto`, and
//!   the message size both ends allow.
//! - [`config`]: the TOML configuration, parsed raw, then checked key by key.
//! - [`kinds`]: proof kinds, priorities and circuit ids as the API names them; [`ids`]: what a
//!   request asks for (its content digest), and whether it joins, retries or supersedes the
//!   attempt under its id; [`outcome`]: how a job ended, and the time each stage took.
//! - [`transport`]: unix and TCP listeners, bearer tokens, TLS; `error`: what an rpc fails with
//!   ([`DaemonError`], made a gRPC status in one place) and why the daemon could not serve
//!   ([`ServeError`]).
//! - [`live`]: each partition and GPU worker now; [`metrics`]: the Prometheus registry;
//!   [`feed`]: what the live page follows. All three read the engine's TIMELINE records, which
//!   [`sink`] hands them as they pass on to the log.
//! - [`circuits`]: what a request proves: Filecoin's circuits, or [`circuits::synthetic`] ones
//!   for tests and benches of the daemon itself.
//! - [`memory`]: the host memory parameter sets and partitions share, checked before a set loads;
//!   [`srs`]: parameter sets in tiers (cold file, warm host memory, hot on the GPUs).
//! - [`jobs`]: the daemon's core: attempts, job lifecycle, await, cancel, status.
//! - [`status`]: the status as `GetStatus`'s message and as JSON, with Curio's `/status` fields.
//! - The transports, on top of the core: [`service`], the thin gRPC adapter; [`page`], the live
//!   pipeline page; [`http`], the read-only status port that serves it at `/`.
//! - [`server`]: assembly, drain, exit.
//! - [`client`], apart: connecting as Curio does and forming its requests (`cuzk client`, tests).
//!
//! It serves and schedules requests; it must not implement proving, circuits or GPU work itself:
//! it drives `cuzk-pipeline`'s engine and `cuzk-filecoin`'s circuits.
#![forbid(unsafe_code)]

pub mod circuits;
pub mod client;
pub mod config;
mod error;
pub mod feed;
pub mod http;
pub mod ids;
pub mod jobs;
pub mod kinds;
pub mod live;
pub mod memory;
pub mod metrics;
pub mod outcome;
pub mod page;
pub mod proto;
pub mod server;
pub mod service;
pub mod sink;
pub mod srs;
pub mod status;
pub mod transport;

pub use config::{Config, ConfigError};
pub use error::{DaemonError, ServeError};
pub use jobs::Daemon;
pub use server::{serve, termination, Bound, Serving};
