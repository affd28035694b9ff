//! The witness of neptune's legacy Poseidon circuit (`neptune::circuit::poseidon_hash`, what
//! filecoin's hashers call for Merkle paths, columns and comm_r), computed natively: the
//! permutation in neptune's optimized form (compressed round constants, the pre-sparse and sparse
//! matrices), each value written where the circuit allocates it. The circuit allocates, with one
//! row each: per S-box of the first full round (not the domain tag's, a constant) (x+k)², its
//! square and the fifth power plus the next key; per S-box after it the input, x², x⁴ and the fifth
//! power (plus the next key where there is one); last the output, the state's second element.

use bellpepper::gadgets::num::AllocatedNum;
use bellpepper_core::SynthesisError;
use cuzk_math::Scalar;
use ff::Field;
use neptune::poseidon::{Arity, PoseidonConstants};

use super::Adopt;
use crate::Witness;

/// `neptune::circuit::poseidon_hash` of `preimage` in `w`. A preimage shorter or longer than the
/// arity (which filecoin never hashes, and the circuit treats apart) takes the gadget's own code.
pub(super) fn hash<A: Arity<Scalar>>(
    w: &mut Witness,
    preimage: &[AllocatedNum<Scalar>],
    constants: &PoseidonConstants<Scalar, A>,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let width = constants.width();
    if preimage.len() + 1 != width {
        return neptune::circuit::poseidon_hash(w, preimage.to_vec(), constants);
    }
    let mut state = Vec::with_capacity(width);
    state.push(constants.domain_tag);
    for num in preimage {
        state.push(num.get_value().ok_or(SynthesisError::AssignmentMissing)?);
    }
    let mut rounds = Rounds {
        w,
        constants,
        state,
        keys: 0,
        round: 0,
    };
    rounds.first_full();
    let half = constants.half_full_rounds;
    for _ in 1..half {
        rounds.full(false);
    }
    for _ in 0..constants.partial_rounds {
        rounds.partial();
    }
    for _ in 1..half {
        rounds.full(false);
    }
    rounds.full(true);
    let out = rounds.state[1];
    let index = w.aux.len();
    push(w, out);
    AllocatedNum::alloc(Adopt(index), || Ok(out))
}

/// A value the circuit allocates, with its row.
fn push(w: &mut Witness, value: Scalar) {
    w.aux.push(value);
    w.rows += 1;
}

/// The permutation under way: the state, the next round key, the rounds done.
struct Rounds<'a, A: Arity<Scalar>> {
    w: &'a mut Witness,
    constants: &'a PoseidonConstants<Scalar, A>,
    state: Vec<Scalar>,
    keys: usize,
    round: usize,
}

impl<A: Arity<Scalar>> Rounds<'_, A> {
    /// The next `count` compressed round keys.
    fn keys(&mut self, count: usize) -> &[Scalar] {
        let keys = &self.constants.compressed_round_constants[self.keys..self.keys + count];
        self.keys += count;
        keys
    }

    /// Keys added before and after every S-box; the domain tag's S-box is a constant.
    fn first_full(&mut self) {
        let width = self.state.len();
        let pre = self.keys(width).to_vec();
        let post = self.keys(width).to_vec();
        let tag = self.state[0] + pre[0];
        self.state[0] = fifth(tag) + post[0];
        for i in 1..width {
            let x = self.state[i] + pre[i];
            let x2 = x.square();
            let x4 = x2.square();
            let x5 = x4 * x + post[i];
            for value in [x2, x4, x5] {
                push(self.w, value);
            }
            self.state[i] = x5;
        }
        self.mix();
    }

    /// Keys after every S-box but in the last round.
    fn full(&mut self, last: bool) {
        let width = self.state.len();
        let post = if last {
            vec![Scalar::ZERO; width]
        } else {
            self.keys(width).to_vec()
        };
        for (i, key) in post.into_iter().enumerate() {
            self.state[i] = self.s_box(self.state[i], key);
        }
        self.mix();
    }

    fn partial(&mut self) {
        let key = self.keys(1)[0];
        self.state[0] = self.s_box(self.state[0], key);
        self.mix();
    }

    /// x⁵ + key, its input allocated first (the circuit's state holds linear combinations).
    fn s_box(&mut self, x: Scalar, key: Scalar) -> Scalar {
        let x2 = x.square();
        let x4 = x2.square();
        let x5 = x4 * x + key;
        for value in [x, x2, x4, x5] {
            push(self.w, value);
        }
        x5
    }

    /// The state times the round's matrix: the dense one through the initial full rounds but
    /// their last, the pre-sparse one there, a sparse one per partial round, the dense after.
    fn mix(&mut self) {
        let c = self.constants;
        let sparse_from = c.half_full_rounds - 1;
        let state = &self.state;
        self.state = if self.round == sparse_from {
            dense(state, &c.pre_sparse_matrix)
        } else if self.round > sparse_from && self.round < c.half_full_rounds + c.partial_rounds {
            let sparse = &c.sparse_matrixes[self.round - sparse_from - 1];
            let first: Scalar = state.iter().zip(&sparse.w_hat).map(|(s, w)| *s * w).sum();
            std::iter::once(first)
                .chain(
                    state[1..]
                        .iter()
                        .zip(&sparse.v_rest)
                        .map(|(s, v)| *s + state[0] * v),
                )
                .collect()
        } else {
            dense(state, &c.mds_matrices.m)
        };
        self.round += 1;
    }
}

/// state · matrix (element j: Σ_i state[i]·matrix[i][j]).
fn dense(state: &[Scalar], matrix: &[Vec<Scalar>]) -> Vec<Scalar> {
    (0..state.len())
        .map(|j| state.iter().zip(matrix).map(|(s, row)| *s * row[j]).sum())
        .collect()
}

fn fifth(x: Scalar) -> Scalar {
    x.square().square() * x
}

#[cfg(test)]
mod tests {
    use neptune::Strength;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use typenum::{U11, U16, U2, U24, U36, U4, U8};

    use super::*;

    fn preimage(w: &mut Witness, values: &[Scalar]) -> Vec<AllocatedNum<Scalar>> {
        values
            .iter()
            .map(|&v| AllocatedNum::alloc(&mut *w, || Ok(v)).unwrap())
            .collect()
    }

    /// The native witness equals the gadget's: every aux value, the rows, the output.
    fn check<A: Arity<Scalar>>(constants: &PoseidonConstants<Scalar, A>, values: &[Scalar]) {
        let mut gadget = Witness::default();
        let nums = preimage(&mut gadget, values);
        let expected = neptune::circuit::poseidon_hash(&mut gadget, nums, constants).unwrap();
        let mut native = Witness::default();
        let nums = preimage(&mut native, values);
        let got = hash(&mut native, &nums, constants).unwrap();
        let what = format!("arity {} over {values:?}", A::to_usize());
        assert_eq!(native.aux.len(), gadget.aux.len(), "aux values of {what}");
        assert!(native.aux == gadget.aux, "aux values of {what}");
        assert_eq!(native.rows, gadget.rows, "rows of {what}");
        assert_eq!(got.get_value(), expected.get_value(), "{what}");
        assert_eq!(got.get_variable(), expected.get_variable(), "{what}");
    }

    fn every_kind_of_preimage<A: Arity<Scalar>>(strength: Strength, rng: &mut ChaCha8Rng) {
        let constants = PoseidonConstants::<Scalar, A>::new_with_strength(strength);
        let arity = A::to_usize();
        let random: Vec<Scalar> = (0..arity).map(|_| Scalar::random(&mut *rng)).collect();
        check(&constants, &random);
        check(&constants, &vec![Scalar::ZERO; arity]);
        check(&constants, &vec![-Scalar::ONE; arity]);
        // Short: the gadget's own path, the same values.
        check(&constants, &random[..arity - 1]);
    }

    #[test]
    fn the_native_witness_is_the_gadgets_for_every_arity_filecoin_uses() {
        let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
        for strength in [Strength::Standard, Strength::Strengthened] {
            every_kind_of_preimage::<U2>(strength, &mut rng);
            every_kind_of_preimage::<U4>(strength, &mut rng);
            every_kind_of_preimage::<U8>(strength, &mut rng);
            every_kind_of_preimage::<U11>(strength, &mut rng);
            every_kind_of_preimage::<U16>(strength, &mut rng);
            every_kind_of_preimage::<U24>(strength, &mut rng);
            every_kind_of_preimage::<U36>(strength, &mut rng);
        }
    }

    #[test]
    fn the_hash_is_neptunes() {
        let constants = PoseidonConstants::<Scalar, U8>::new();
        let values: Vec<Scalar> = (1..=8u64).map(Scalar::from).collect();
        let mut w = Witness::default();
        let nums = preimage(&mut w, &values);
        let got = hash(&mut w, &nums, &constants).unwrap();
        let mut reference = neptune::Poseidon::new_with_preimage(&values, &constants);
        assert_eq!(got.get_value(), Some(reference.hash()));
    }
}
