//! cuzk-daemon's integration tests, one binary: each binary of its own compiled filecoin-proofs'
//! generics again (about 50 s of two cores apiece in a release build). Every daemon here that
//! serves Filecoin's circuits reads the one parameter directory of cuzk-filecoin's tests
//! ([`filecoin::params_dir`]): filecoin-proofs reads its directory once per process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod browser;
mod common;
#[path = "../../../cuzk-filecoin/tests/filecoin/common/mod.rs"]
#[allow(dead_code)]
mod filecoin;
mod fuzz_requests;
#[path = "../../../cuzk-filecoin/tests/filecoin/fuzzing/mod.rs"]
mod fuzzing;
mod grafana;
mod live_page;
mod memory_requests;
mod porep_requests;
mod post_requests;
mod rpcs;
mod set_requests;
