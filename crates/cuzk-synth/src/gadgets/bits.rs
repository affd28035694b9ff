//! The witness of a number's unpacking into bits and of bits' packing into a number.

use bellpepper::gadgets::boolean::{AllocatedBit, Boolean};
use bellpepper::gadgets::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use cuzk_math::Scalar;
use ff::{Field, PrimeField, PrimeFieldBits};

use super::Adopt;
use crate::Witness;

/// `AllocatedNum::to_bits_le` in `w`: `Scalar::NUM_BITS` boolean variables (one row each), then
/// the unpacking row.
pub(super) fn unpack(
    w: &mut Witness,
    num: &AllocatedNum<Scalar>,
) -> Result<Vec<Boolean>, SynthesisError> {
    let value = num.get_value().ok_or(SynthesisError::AssignmentMissing)?;
    let first = w.aux.len();
    let bits: Vec<bool> = value
        .to_le_bits()
        .into_iter()
        .take(Scalar::NUM_BITS as usize)
        .collect();
    w.aux.extend(
        bits.iter()
            .map(|&b| if b { Scalar::ONE } else { Scalar::ZERO }),
    );
    w.rows += bits.len() + 1;
    bits.iter()
        .enumerate()
        .map(|(i, &b)| Ok(Boolean::Is(AllocatedBit::alloc(Adopt(first + i), Some(b))?)))
        .collect()
}

/// `multipack::pack_bits` in `w`: one variable, the first `Scalar::CAPACITY` bits' number, and
/// one row.
pub(super) fn pack(
    w: &mut Witness,
    bits: &[Boolean],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let mut repr = <Scalar as PrimeField>::Repr::default();
    for (i, bit) in bits.iter().take(Scalar::CAPACITY as usize).enumerate() {
        if bit.get_value().ok_or(SynthesisError::AssignmentMissing)? {
            repr.as_mut()[i / 8] |= 1 << (i % 8);
        }
    }
    // Below 2^CAPACITY, so always a field element.
    let value = Option::from(Scalar::from_repr(repr)).ok_or(SynthesisError::Unsatisfiable)?;
    let index = w.aux.len();
    w.aux.push(value);
    w.rows += 1;
    AllocatedNum::alloc(Adopt(index), || Ok(value))
}

#[cfg(test)]
mod tests {
    use bellpepper::gadgets::multipack;
    use ff::Field;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn same_bits(a: &[Boolean], b: &[Boolean]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| match (x, y) {
                (Boolean::Is(x), Boolean::Is(y)) => {
                    x.get_variable() == y.get_variable() && x.get_value() == y.get_value()
                }
                _ => false,
            })
    }

    #[test]
    fn unpacking_and_packing_write_what_the_gadgets_write() {
        let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
        let edges = [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(u64::MAX),
        ];
        let random: Vec<Scalar> = (0..20).map(|_| Scalar::random(&mut rng)).collect();
        for value in edges.into_iter().chain(random) {
            let run = |native: bool| {
                let mut w = Witness::default();
                let num = AllocatedNum::alloc(&mut w, || Ok(value)).unwrap();
                let bits = match native {
                    true => unpack(&mut w, &num).unwrap(),
                    false => num.to_bits_le(&mut w).unwrap(),
                };
                // Packing reads constants and negations too.
                let mixed: Vec<Boolean> = bits
                    .iter()
                    .enumerate()
                    .map(|(i, b)| match i % 3 {
                        0 => b.clone(),
                        1 => b.not(),
                        _ => Boolean::constant(i % 2 == 0),
                    })
                    .collect();
                let packed = match native {
                    true => pack(&mut w, &mixed).unwrap(),
                    false => multipack::pack_bits(&mut w, &mixed).unwrap(),
                };
                (w, bits, packed)
            };
            let (native, native_bits, native_packed) = run(true);
            let (gadget, gadget_bits, gadget_packed) = run(false);
            assert!(native.aux == gadget.aux, "aux values of {value:?}");
            assert_eq!(native.rows, gadget.rows);
            assert!(same_bits(&native_bits, &gadget_bits));
            assert_eq!(native_packed.get_variable(), gadget_packed.get_variable());
            assert_eq!(native_packed.get_value(), gadget_packed.get_value());
        }
    }
}
