//! Field and curve arithmetic for cuzk: re-exports the BLS12-381 scalar and
//! curve types from `blstrs`, and owns evaluation domains with their CPU NTTs,
//! CPU multi-scalar multiplication, and fixed-base tables for parameter
//! generation. It knows nothing about Groth16, touches no GPU, and does no
//! I/O; those belong to the crates built on top of it.

#![forbid(unsafe_code)]

pub use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Prepared, G2Projective, Gt, Scalar};

pub mod bitmap;
pub use bitmap::Bitmap;

pub mod domain;
pub use domain::{DomainError, EvaluationDomain};

pub mod msm;
pub use msm::{bitmap_sum, msm};

pub mod fixed_base;
pub use fixed_base::FixedBaseTable;

mod digits;
