//! The proving assignment: a circuit run with its witness.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_math::{Bitmap, Scalar};
use ff::Field;

use std::sync::Arc;

use crate::drive::{drive, CountsInputs};
use crate::{pause, CompiledR1cs};

/// Everything the prover needs from one synthesized circuit (one partition).
///
/// Rows are the circuit's constraints followed by one row per public input; the densities say
/// which variables occur (with a non-zero coefficient) in A and in B, because the A and B queries
/// of the parameters only hold points for those.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProvingAssignment {
    /// Public inputs, the constant one first.
    pub input_assignment: Vec<Scalar>,
    /// Private witness.
    pub aux_assignment: Vec<Scalar>,
    /// A·z per row.
    pub a: Vec<Scalar>,
    /// B·z per row.
    pub b: Vec<Scalar>,
    /// C·z per row.
    pub c: Vec<Scalar>,
    /// Aux variables that occur in A (inputs always do, through their input rows).
    pub a_aux_density: Bitmap,
    /// Inputs that occur in B.
    pub b_input_density: Bitmap,
    /// Aux variables that occur in B.
    pub b_aux_density: Bitmap,
    /// When set, a, b and c were not computed (they are empty): they are these matrices times
    /// the witness, left to the prover, which a GPU computes on the device (so the host neither
    /// computes nor holds them). [`ProvingAssignment::complete`] computes them on the host.
    pub deferred: Option<Arc<CompiledR1cs>>,
}

impl ProvingAssignment {
    /// Synthesizes `circuit` with its witness.
    pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Self, SynthesisError> {
        let mut assignment = Self::default();
        drive(circuit, &mut assignment)?;
        Ok(assignment)
    }

    /// Number of rows: constraints plus one per public input.
    pub fn num_rows(&self) -> usize {
        self.deferred
            .as_ref()
            .map_or(self.a.len(), |compiled| compiled.num_rows())
    }

    /// Computes deferred a, b and c on the host; does nothing if they are there.
    pub fn complete(&mut self) {
        if let Some(compiled) = self.deferred.take() {
            [self.a, self.b, self.c] =
                compiled.products(&self.input_assignment, &self.aux_assignment);
        }
    }

    /// Evaluates one constraint's A, B and C combinations into a new row, marking the densities.
    pub(crate) fn push_row(&mut self, [a, b, c]: [&LinearCombination<Scalar>; 3]) {
        let (inputs, aux) = (&self.input_assignment, &self.aux_assignment);
        let a = eval(a, inputs, aux, None, Some(&mut self.a_aux_density));
        let b = eval(
            b,
            inputs,
            aux,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
        );
        let c = eval(c, inputs, aux, None, None);
        self.a.push(a);
        self.b.push(b);
        self.c.push(c);
    }
}

/// Evaluates `lc` on the assignment, marking every variable with a non-zero coefficient in the
/// given density bitmaps.
fn eval(
    lc: &LinearCombination<Scalar>,
    inputs: &[Scalar],
    aux: &[Scalar],
    mut input_density: Option<&mut Bitmap>,
    mut aux_density: Option<&mut Bitmap>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    let mut add = |value: Scalar, coeff: &Scalar| {
        if *coeff == Scalar::ONE {
            acc += value;
        } else {
            acc += value * coeff;
        }
    };
    for (&i, coeff) in lc.iter_inputs() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        add(inputs[i], coeff);
        if let Some(density) = input_density.as_deref_mut() {
            density.set(i);
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if bool::from(coeff.is_zero()) {
            continue;
        }
        add(aux[i], coeff);
        if let Some(density) = aux_density.as_deref_mut() {
            density.set(i);
        }
    }
    acc
}

impl CountsInputs for ProvingAssignment {
    fn num_inputs(&self) -> usize {
        self.input_assignment.len()
    }
}

impl ConstraintSystem<Scalar> for ProvingAssignment {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux_assignment.push(f()?);
        self.a_aux_density.push(false);
        self.b_aux_density.push(false);
        Ok(Variable::new_unchecked(Index::Aux(
            self.aux_assignment.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.push(false);
        Ok(Variable::new_unchecked(Index::Input(
            self.input_assignment.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.push_row([
            &a(LinearCombination::zero()),
            &b(LinearCombination::zero()),
            &c(LinearCombination::zero()),
        ]);
        if self.a.len().is_multiple_of(pause::CHECK_EVERY) {
            pause::pause_point();
        }
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}
