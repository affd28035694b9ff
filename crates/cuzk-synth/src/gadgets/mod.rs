//! Gadgets whose witness this crate can compute natively: called with a [`Witness`] they write
//! the values the gadget's own code would allocate, in the same order, without building a
//! single linear combination; with any other constraint system they are the gadget itself.

mod bits;
mod poseidon;
mod sha256;

use std::any::Any;

use bellpepper::gadgets::boolean::Boolean;
use bellpepper::gadgets::num::AllocatedNum;
use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use cuzk_math::Scalar;
use neptune::poseidon::{Arity, PoseidonConstants};

use crate::Witness;

/// bellpepper's `sha256` gadget of `input` (padded, every block compressed; big-endian output
/// bits). Pass the root constraint system, not a namespace of it: only a [`Witness`] itself
/// takes the native path.
pub fn sha256<CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    input: &[Boolean],
) -> Result<Vec<Boolean>, SynthesisError> {
    natively_in_a_witness(
        cs,
        |w| sha256::witness(w, input),
        |cs| bellpepper::gadgets::sha256::sha256(cs, input),
    )
}

/// `AllocatedNum::to_bits_le`: the number's 255 bits, least significant first, each a new
/// boolean variable, and the row that packs them back. Pass the root constraint system.
pub fn to_bits_le<CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    num: &AllocatedNum<Scalar>,
) -> Result<Vec<Boolean>, SynthesisError> {
    natively_in_a_witness(cs, |w| bits::unpack(w, num), |cs| num.to_bits_le(cs))
}

/// bellpepper's `multipack::pack_bits`: the first 254 of `bits` (least significant first) as a
/// new number, and the row that checks it. Pass the root constraint system.
pub fn pack_bits<CS: ConstraintSystem<Scalar> + 'static>(
    cs: &mut CS,
    bits: &[Boolean],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    natively_in_a_witness(
        cs,
        |w| bits::pack(w, bits),
        |cs| bellpepper::gadgets::multipack::pack_bits(cs, bits),
    )
}

/// neptune's legacy `circuit::poseidon_hash` of `preimage` with `constants` (filecoin's hashers'
/// gadget for Merkle paths, columns and comm_r). Pass the root constraint system.
pub fn poseidon_hash<CS: ConstraintSystem<Scalar> + 'static, A: Arity<Scalar>>(
    cs: &mut CS,
    preimage: &[AllocatedNum<Scalar>],
    constants: &PoseidonConstants<Scalar, A>,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    natively_in_a_witness(
        cs,
        |w| poseidon::hash(w, preimage, constants),
        |cs| neptune::circuit::poseidon_hash(cs, preimage.to_vec(), constants),
    )
}

/// `native` when `cs` is a [`Witness`] itself, else the gadget's own code.
fn natively_in_a_witness<CS: ConstraintSystem<Scalar> + 'static, T>(
    cs: &mut CS,
    native: impl FnOnce(&mut Witness) -> T,
    gadget: impl FnOnce(&mut CS) -> T,
) -> T {
    match (cs as &mut dyn Any).downcast_mut::<Witness>() {
        Some(witness) => native(witness),
        None => gadget(cs),
    }
}

/// A constraint system in which allocating names aux variable `.0` of the witness being written:
/// how a value written natively is handed on as the gadget's own bit or number.
struct Adopt(usize);

impl ConstraintSystem<Scalar> for Adopt {
    type Root = Self;

    /// Runs `f` all the same: a gadget may keep the value it returns (`AllocatedNum` does).
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        f()?;
        Ok(Variable::new_unchecked(Index::Aux(self.0)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Err(SynthesisError::Unsatisfiable)
    }

    /// The row was counted when the value was written.
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
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
