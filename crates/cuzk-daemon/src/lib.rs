//! `cuzk serve`: the proving daemon Curio talks to over gRPC (`cuzk.v1.ProvingEngine`), wire
//! compatible with the public engine's, with its parameter sets kept in tiers.
//!
//! - [`proto`]: the generated messages, server and client of `proto/cuzk/v1/proving.proto`.
//! - [`config`]: the TOML configuration, parsed raw, then checked key by key.
//! - [`kinds`]: proof kinds, priorities and circuit ids as the API names them.
//! - [`circuits`]: what a request proves: Filecoin's circuits, or [`circuits::synthetic`] ones
//!   for tests and benches of the daemon itself.
//! - [`srs`]: parameter sets in tiers (cold file, warm host memory, hot on the GPUs);
//!   [`memory`]: the host memory they and partitions share, checked before a set loads.
//! - [`ids`]: what a request asks for (its content digest), and whether it joins, retries or
//!   supersedes the attempt under its id.
//! - [`jobs`]: the daemon's core: attempts, job lifecycle, await, cancel, status.
//! - [`metrics`]: the Prometheus registry, fed by the engine's TIMELINE records; [`live`]: each
//!   partition and GPU worker now, fed by the same records.
//! - [`service`]: the thin gRPC adapter; [`http`]: the read-only status port; [`page`]: the live
//!   pipeline page it serves at `/`, fed by the same records.
//! - [`transport`]: unix and TCP listeners, bearer tokens, TLS; [`server`]: assembly, drain, exit.
//! - [`client`]: connecting as Curio does and forming its requests (`cuzk client`, tests).
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
