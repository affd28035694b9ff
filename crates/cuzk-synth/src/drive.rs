//! The one way every circuit is run, for proving and for setup alike.

use bellpepper_core::{Circuit, ConstraintSystem, Index, SynthesisError, Variable};
use cuzk_math::Scalar;
use ff::Field;

/// A constraint system that can tell how many public inputs it has seen.
pub(crate) trait CountsInputs: ConstraintSystem<Scalar> {
    fn num_inputs(&self) -> usize;
}

/// Runs `circuit` as Groth16 needs it: the constant-one input first ([`open`]), then the circuit,
/// then the input rows ([`close`]).
pub(crate) fn drive<C, CS>(circuit: C, cs: &mut CS) -> Result<(), SynthesisError>
where
    C: Circuit<Scalar>,
    CS: CountsInputs,
{
    open(cs)?;
    circuit.synthesize(cs)?;
    close(cs);
    Ok(())
}

/// The constant-one input, input 0 of every circuit.
pub(crate) fn open<CS: ConstraintSystem<Scalar>>(cs: &mut CS) -> Result<(), SynthesisError> {
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    Ok(())
}

/// One row `input_i · 0 = 0` per public input so that every input is in the A query (this is what
/// bellperson does, so the rows and the parameters stay interchangeable with it).
pub(crate) fn close<CS: CountsInputs>(cs: &mut CS) {
    for i in 0..cs.num_inputs() {
        cs.enforce(
            || "input row",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
}
