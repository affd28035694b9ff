//! The shape of a circuit: its R1CS matrices, recorded without a witness (for setup).

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_math::Scalar;

use crate::drive::{drive, CountsInputs};

/// A column of the R1CS matrices: a public input or an aux variable.
///
/// Kept apart because inputs may be allocated between constraints, so the final input count
/// (and with it a flat column numbering) is only known once the circuit has finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    Input(u32),
    Aux(u32),
}

/// One non-zero entry (as the circuit wrote it) of a matrix.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    pub row: u32,
    pub column: Column,
    pub coeff: Scalar,
}

/// The R1CS of a circuit, rows as [`crate::ProvingAssignment`] numbers them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct R1csShape {
    /// Public inputs, the constant one included.
    pub num_inputs: usize,
    pub num_aux: usize,
    /// Rows: constraints plus one per public input.
    pub num_rows: usize,
    pub a: Vec<Term>,
    pub b: Vec<Term>,
    pub c: Vec<Term>,
}

impl R1csShape {
    /// Records the shape of `circuit`; witness closures are never called.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Self, SynthesisError> {
        let mut recorder = ShapeRecorder::default();
        drive(circuit, &mut recorder)?;
        Ok(recorder.shape)
    }
}

/// The constraint system behind [`R1csShape::record`].
#[derive(Debug, Default)]
pub struct ShapeRecorder {
    shape: R1csShape,
}

fn record(lc: LinearCombination<Scalar>, row: u32, terms: &mut Vec<Term>) {
    terms.extend(lc.iter().map(|(variable, &coeff)| Term {
        row,
        column: match variable.get_unchecked() {
            Index::Input(i) => Column::Input(i as u32),
            Index::Aux(i) => Column::Aux(i as u32),
        },
        coeff,
    }));
}

impl CountsInputs for ShapeRecorder {
    fn num_inputs(&self) -> usize {
        self.shape.num_inputs
    }
}

impl ConstraintSystem<Scalar> for ShapeRecorder {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.shape.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.shape.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.shape.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(
            self.shape.num_inputs - 1,
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
        let row = self.shape.num_rows as u32;
        record(a(LinearCombination::zero()), row, &mut self.shape.a);
        record(b(LinearCombination::zero()), row, &mut self.shape.b);
        record(c(LinearCombination::zero()), row, &mut self.shape.c);
        self.shape.num_rows += 1;
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
