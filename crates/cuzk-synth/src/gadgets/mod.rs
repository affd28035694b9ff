//! Gadgets whose witness this crate can compute natively: called with a [`Witness`] they write
//! the values the gadget's own code would allocate, in the same order, without building a
//! single linear combination; with any other constraint system they are the gadget itself.

mod sha256;

use std::any::Any;

use bellpepper::gadgets::boolean::Boolean;
use bellpepper_core::{ConstraintSystem, SynthesisError};
use cuzk_math::Scalar;

use crate::Witness;

/// bellpepper's `sha256` gadget of `input` (padded, every block compressed; big-endian output
/// bits). Pass the root constraint system, not a namespace of it: only a [`Witness`] itself
/// takes the native path.
pub fn sha256<CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    input: &[Boolean],
) -> Result<Vec<Boolean>, SynthesisError> {
    match (cs as &mut dyn Any).downcast_mut::<Witness>() {
        Some(witness) => sha256::witness(witness, input),
        None => bellpepper::gadgets::sha256::sha256(cs, input),
    }
}
