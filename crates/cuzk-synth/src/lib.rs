//! Constraint systems over `bellpepper_core` 0.2: what turns a circuit into the numbers a prover
//! needs. [`ProvingAssignment`] runs a circuit with its witness and keeps the witness, the per-row
//! evaluations a = A·z, b = B·z, c = C·z and the A/B density bitmaps; [`ShapeRecorder`] runs it
//! without a witness and keeps the R1CS matrices for setup; [`CompiledR1cs`] keeps them as sparse
//! rows and synthesizes by witness only (a [`Sectioned`] circuit's sections side by side) plus
//! sparse matrix–vector products; [`circuits`] holds the built-in circuits.
//!
//! This crate knows R1CS and nothing of keys, proofs or devices: it must not touch Groth16 parameters
//! or the GPU.
#![forbid(unsafe_code)]

mod assignment;
pub mod circuits;
mod compiled;
mod drive;
pub mod gadgets;
mod pause;
mod shape;
mod witness;

pub use assignment::ProvingAssignment;
pub use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
pub use compiled::{Attachment, CompiledError, CompiledR1cs, Recorded, FORMAT_VERSION};
pub use pause::install_pause_hook;
pub use shape::{Column, R1csShape, ShapeRecorder, Term};
pub use witness::{Sectioned, ThroughGadgets, Witness};
