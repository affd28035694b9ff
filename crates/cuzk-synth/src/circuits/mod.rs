//! Built-in circuits, for benchmarks, tests and the CLI.

mod synthetic;

pub use synthetic::SyntheticCircuit;
