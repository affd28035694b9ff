//! The pre-compiled evaluator gives exactly what direct synthesis gives (sectioned circuits' sections
//! synthesized side by side too), and its byte form round-trips and refuses damage by name.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_math::Scalar;
use cuzk_synth::circuits::SyntheticCircuit;
use std::ops::Range;
use std::sync::Arc;

use cuzk_synth::{CompiledError, CompiledR1cs, ProvingAssignment, Sectioned};
use ff::Field;

/// Awkward shapes: inputs allocated between constraints, a variable twice in one combination,
/// terms that cancel to a zero coefficient, the constant one in B, non-unit coefficients.
#[derive(Clone)]
struct Awkward {
    x: Scalar,
}

impl Circuit<Scalar> for Awkward {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(self.x))?;
        let x2 = cs.alloc(|| "x2", || Ok(self.x.square()))?;
        cs.enforce(|| "square", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        let input = cs.alloc_input(|| "x3", || Ok(self.x.square() * self.x))?;
        let three = Scalar::from(3);
        cs.enforce(
            || "cube, with x twice and a cancelled x2",
            |lc| lc + x2 + (three, x2) - (three, x2),
            |lc| lc + x + x - x,
            |lc| lc + input,
        );
        let y = cs.alloc(|| "y", || Ok(self.x + Scalar::ONE))?;
        let second = cs.alloc_input(|| "y", || Ok(self.x + Scalar::ONE))?;
        cs.enforce(
            || "y = x + 1",
            |lc| lc + x + CS::one(),
            |lc| lc + CS::one(),
            |lc| lc + y,
        );
        cs.enforce(
            || "input y",
            |lc| lc + (three, y),
            |lc| lc + CS::one(),
            |lc| lc + (three, second),
        );
        Ok(())
    }
}

/// The evaluator (its products computed at once, or deferred then completed) and the one-run
/// recording give what direct synthesis gives, and the one-run recording records what `record`
/// records.
fn check<C: Circuit<Scalar> + Clone>(circuit: C) -> CompiledR1cs {
    let compiled = CompiledR1cs::record(circuit.clone()).unwrap();
    let direct = ProvingAssignment::synthesize(circuit.clone()).unwrap();
    let mut deferred = Arc::new(compiled.clone()).witness(circuit.clone()).unwrap();
    assert!(deferred.a.is_empty() && deferred.deferred.is_some());
    assert_eq!(deferred.num_rows(), direct.num_rows());
    deferred.complete();
    assert_eq!(deferred, direct);
    let recorded = CompiledR1cs::synthesize_recording(circuit.clone()).unwrap();
    assert_eq!(recorded.assignment, direct);
    assert_eq!(recorded.compiled, compiled);
    assert_eq!(compiled.synthesize(circuit).unwrap(), direct);
    compiled
}

#[test]
fn the_evaluator_equals_direct_synthesis() {
    let seed = cuzk_testkit::seed("the_evaluator_equals_direct_synthesis");
    // Recorded once, used for other witnesses of the same shape.
    let compiled = check(Awkward { x: Scalar::ZERO });
    for x in [Scalar::ONE, Scalar::from(seed)] {
        assert_eq!(
            compiled.synthesize(Awkward { x }).unwrap(),
            ProvingAssignment::synthesize(Awkward { x }).unwrap()
        );
    }
    for (fraction, inputs) in [(0.0, 0), (0.5, 3), (0.95, 7), (1.0, 1)] {
        let circuit = SyntheticCircuit {
            constraints: 3000,
            boolean_fraction: fraction,
            public_inputs: inputs,
            seed,
        };
        check(circuit);
    }
}

/// A prologue (an input and its square) and sections that each use the square, allocate an input
/// between constraints and run [`Awkward`]; `skewed` makes the prologue's values and rows depend
/// on the sections run, which breaks the [`Sectioned`] contract.
#[derive(Clone)]
struct Chain {
    seed: Scalar,
    sections: usize,
    skewed: bool,
}

impl Sectioned for Chain {
    fn sections(&self) -> usize {
        self.sections
    }

    fn synthesize_sections<CS: ConstraintSystem<Scalar> + 'static>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError> {
        self.run(cs, range)
    }
}

impl Chain {
    /// The seed and its square, then sections `range`.
    fn run<CS: ConstraintSystem<Scalar>>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError> {
        let skew = if self.skewed { range.start } else { 0 };
        let seed = self.seed + Scalar::from(skew as u64);
        let s = cs.alloc_input(|| "seed", || Ok(seed))?;
        let square = cs.alloc(|| "square", || Ok(seed.square()))?;
        if skew % 2 == 1 {
            let two = Scalar::from(2);
            cs.enforce(
                || "square",
                |lc| lc + (two, s),
                |lc| lc + s,
                |lc| lc + (two, square),
            );
        } else {
            cs.enforce(|| "square", |lc| lc + s, |lc| lc + s, |lc| lc + square);
        }
        for i in range {
            let shift = Scalar::from(i as u64 + 1);
            let x = seed.square() + shift;
            let xi = cs.alloc(|| "x", || Ok(x))?;
            cs.enforce(
                || "x = square + i + 1",
                |lc| lc + square + (shift, CS::one()),
                |lc| lc + CS::one(),
                |lc| lc + xi,
            );
            Awkward { x }.synthesize(&mut cs.namespace(|| format!("section {i}")))?;
        }
        Ok(())
    }
}

impl Circuit<Scalar> for Chain {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.run(cs, 0..self.sections)
    }
}

#[test]
fn sections_recorded_and_synthesized_side_by_side_equal_the_whole_circuit() {
    let seed = Scalar::from(cuzk_testkit::seed("sections side by side"));
    for sections in [0, 1, 2, 17] {
        let chain = Chain {
            seed,
            sections,
            skewed: false,
        };
        let compiled = check(chain.clone());
        assert_eq!(CompiledR1cs::record_sectioned(&chain).unwrap(), compiled);
        let direct = ProvingAssignment::synthesize(chain.clone()).unwrap();
        assert_eq!(
            compiled.synthesize_sectioned(&chain).unwrap(),
            direct,
            "{sections} sections"
        );
        let mut deferred = Arc::new(compiled).witness_sectioned(&chain).unwrap();
        deferred.complete();
        assert_eq!(deferred, direct, "{sections} sections, deferred");
    }
    let skewed = Chain {
        seed,
        sections: 3,
        skewed: true,
    };
    let error = CompiledR1cs::record_sectioned(&skewed).unwrap_err();
    assert!(
        matches!(
            error,
            CompiledError::NotSectioned {
                section: 1,
                what: "rows"
            }
        ),
        "{error}"
    );
    let compiled = CompiledR1cs::record(skewed.clone()).unwrap();
    let error = compiled.synthesize_sectioned(&skewed).unwrap_err();
    assert!(
        matches!(
            error,
            CompiledError::NotSectioned {
                section: 1,
                what: "inputs"
            }
        ),
        "{error}"
    );
}

#[test]
fn a_circuit_of_another_shape_is_refused() {
    let small = SyntheticCircuit {
        constraints: 100,
        boolean_fraction: 0.5,
        public_inputs: 2,
        seed: 1,
    };
    let compiled = CompiledR1cs::record(small.clone()).unwrap();
    let larger = SyntheticCircuit {
        constraints: 101,
        ..small
    };
    let error = compiled.synthesize(larger).unwrap_err();
    assert!(
        matches!(
            error,
            CompiledError::ShapeMismatch {
                what: "aux variables",
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn the_byte_form_round_trips_and_names_damage() {
    let compiled = check(Awkward { x: Scalar::from(5) });
    let mut bytes = Vec::new();
    compiled.write(&mut bytes).unwrap();
    assert_eq!(CompiledR1cs::from_bytes(&bytes, "r1cs").unwrap(), compiled);

    let truncated = CompiledR1cs::from_bytes(&bytes[..bytes.len() - 3], "cut").unwrap_err();
    assert!(truncated.to_string().starts_with("cut: "), "{truncated}");
    assert!(truncated.to_string().contains("c.coeffs"), "{truncated}");

    let mut old = bytes.clone();
    old[8] = 0;
    let version = CompiledR1cs::from_bytes(&old, "old").unwrap_err();
    assert!(version.to_string().contains("version"), "{version}");

    let mut longer = bytes.clone();
    longer.push(0);
    assert!(CompiledR1cs::from_bytes(&longer, "long").is_err());
}
