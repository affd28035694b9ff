//! A benchmark circuit of any size whose witness is as boolean as you ask.

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use cuzk_math::Scalar;
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// `constraints` constraints, each allocating one aux variable: with probability
/// `boolean_fraction` a bit `b` with `b·(1 − b) = 0`, otherwise a product
/// `z = (x + k·y)·w` of earlier variables (x, w non-boolean, y any, k a random constant).
///
/// Hash-heavy circuits such as Filecoin's PoRep are mostly 0/1 witnesses; the fraction lets a
/// benchmark have that shape. Everything (shape, constants, witness, public inputs) is a function
/// of `seed`, so setup and prove agree on the circuit without sharing anything but the numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticCircuit {
    pub constraints: usize,
    pub boolean_fraction: f64,
    pub public_inputs: usize,
    pub seed: u64,
}

/// A variable and its value.
#[derive(Clone, Copy)]
struct Wire {
    var: Variable,
    value: Scalar,
}

impl SyntheticCircuit {
    /// The public input values the circuit allocates (without the constant one).
    pub fn public_input_values(&self) -> Vec<Scalar> {
        let mut rng = self.rng();
        (0..self.public_inputs)
            .map(|_| Scalar::random(&mut rng))
            .collect()
    }

    /// A key naming the circuit's R1CS structure, for an engine's compiled-R1CS cache: it takes
    /// every field, because the seed and the boolean fraction choose each constraint's kind,
    /// operands and constants, not only the witness.
    pub fn shape_key(&self) -> String {
        format!(
            "synthetic/constraints={}/boolean={:#018x}/inputs={}/seed={}",
            self.constraints,
            self.boolean_fraction.to_bits(),
            self.public_inputs,
            self.seed
        )
    }

    fn rng(&self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed)
    }
}

/// A uniform choice in `0..len` (`len > 0`).
fn pick(rng: &mut impl RngCore, len: usize) -> usize {
    (rng.next_u64() % len as u64) as usize
}

/// A uniform draw in [0, 1).
fn unit(rng: &mut impl RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

impl Circuit<Scalar> for SyntheticCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = self.rng();
        let one = Wire {
            var: CS::one(),
            value: Scalar::ONE,
        };
        // Non-boolean wires; the constant one stands in until there is another.
        let mut fields = Vec::with_capacity(self.public_inputs + self.constraints);
        let mut all = Vec::with_capacity(self.public_inputs + self.constraints + 1);
        all.push(one);
        for i in 0..self.public_inputs {
            let value = Scalar::random(&mut rng);
            let var = cs.alloc_input(|| format!("input {i}"), || Ok(value))?;
            fields.push(Wire { var, value });
            all.push(Wire { var, value });
        }
        for i in 0..self.constraints {
            if unit(&mut rng) < self.boolean_fraction {
                let value = if rng.next_u32() & 1 == 1 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                };
                let var = cs.alloc(|| format!("bit {i}"), || Ok(value))?;
                cs.enforce(
                    || format!("bit {i} is boolean"),
                    |lc| lc + var,
                    |lc| lc + CS::one() - var,
                    |lc| lc,
                );
                all.push(Wire { var, value });
            } else {
                let field = |rng: &mut ChaCha8Rng| {
                    if fields.is_empty() {
                        one
                    } else {
                        fields[pick(rng, fields.len())]
                    }
                };
                let (x, w) = (field(&mut rng), field(&mut rng));
                let y = all[pick(&mut rng, all.len())];
                let k = Scalar::random(&mut rng);
                let value = (x.value + k * y.value) * w.value;
                let var = cs.alloc(|| format!("product {i}"), || Ok(value))?;
                cs.enforce(
                    || format!("product {i}"),
                    |lc: LinearCombination<Scalar>| lc + x.var + (k, y.var),
                    |lc| lc + w.var,
                    |lc| lc + var,
                );
                fields.push(Wire { var, value });
                all.push(Wire { var, value });
            }
        }
        Ok(())
    }
}
