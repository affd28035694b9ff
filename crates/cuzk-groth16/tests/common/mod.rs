//! Circuits and helpers shared by the integration tests.
#![allow(dead_code)]

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_math::Scalar;
use cuzk_synth::circuits::SyntheticCircuit;
use ff::Field;

#[allow(unused_imports)] // not every test binary draws random values
pub use cuzk_testkit::rng;

/// The first device, or `None` after printing why the test is skipped (straight to stderr, past
/// libtest's capture, so CI logs show the skip).
pub fn gpu(test: &str) -> Option<std::sync::Arc<cuzk_gpu::Lane>> {
    use std::io::Write;
    match cuzk_gpu::Lane::first() {
        Ok(gpu) => Some(gpu),
        Err(why) => {
            let _ = writeln!(std::io::stderr(), "{test}: SKIPPED (no GPU: {why})");
            None
        }
    }
}

pub fn synthetic(constraints: usize, boolean_fraction: f64, seed: u64) -> SyntheticCircuit {
    SyntheticCircuit {
        constraints,
        boolean_fraction,
        public_inputs: 3,
        seed,
    }
}

/// A hand-written circuit with the awkward corners: inputs allocated between constraints, an input
/// that occurs in B, zero coefficients, a variable only in C, and a repeated variable.
/// Proves knowledge of x with x³ + x + 5 = out, and y = x·out with y public.
#[derive(Clone, Debug)]
pub struct CubicCircuit {
    pub x: Scalar,
}

impl CubicCircuit {
    pub fn out(&self) -> Scalar {
        self.x.square() * self.x + self.x + Scalar::from(5u64)
    }

    pub fn public_inputs(&self) -> Vec<Scalar> {
        let out = self.out();
        vec![out, self.x * out]
    }
}

impl Circuit<Scalar> for CubicCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x_val = self.x;
        let x = cs.alloc(|| "x", || Ok(x_val))?;
        let x2 = cs.alloc(|| "x2", || Ok(x_val.square()))?;
        cs.enforce(|| "x2", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        let x3 = cs.alloc(|| "x3", || Ok(x_val.square() * x_val))?;
        // A zero coefficient must not count towards the A density.
        cs.enforce(
            || "x3",
            |lc| lc + x2 + (Scalar::ZERO, x3),
            |lc| lc + x,
            |lc| lc + x3,
        );
        let out = cs.alloc_input(|| "out", || Ok(self.out()))?;
        cs.enforce(
            || "out",
            |lc| lc + x3 + x + (Scalar::from(5u64), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc + out,
        );
        let y_val = x_val * self.out();
        let y_aux = cs.alloc(|| "y aux", || Ok(y_val))?;
        // An input in B.
        cs.enforce(|| "y aux", |lc| lc + x, |lc| lc + out, |lc| lc + y_aux);
        let y = cs.alloc_input(|| "y", || Ok(y_val))?;
        cs.enforce(
            || "y",
            |lc| lc + y_aux + y_aux - y_aux,
            |lc| lc + CS::one(),
            |lc| lc + y,
        );
        Ok(())
    }
}
