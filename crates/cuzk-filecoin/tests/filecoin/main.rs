//! cuzk-filecoin's integration tests, one binary: each binary of its own compiled
//! filecoin-proofs' generic provers and verifiers again (about 50 s of two cores apiece in a
//! release build).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod compare;
mod fuzz_decoders;
mod fuzzing;
mod porep;
mod post;
mod snap;
