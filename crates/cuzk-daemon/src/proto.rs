//! The messages, server and client generated from `proto/cuzk/v1/proving.proto`, and the size
//! of message both ends of a connection allow.
#![allow(missing_debug_implementations, clippy::all)]

tonic::include_proto!("cuzk.v1");

/// Messages up to this size both ways: a 32 GiB C1 output is ~50 MB of JSON, and Curio's client
/// allows 256 MiB.
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;
