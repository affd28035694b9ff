//! The witness of bellpepper's SHA-256 gadget (`bellpepper::gadgets::sha256::sha256`), computed
//! with 32-bit words instead of one `Boolean` and one linear combination per bit.
//!
//! What the gadget allocates depends on which of its bits are constants (the IV, the round
//! constants, the padding, bits shifted in) and, for the value written, on which are negated
//! views of a variable (`Boolean::Not`). A [`Word`] keeps exactly that per bit: its value, a
//! mask of variable bits and a mask of negated ones. Every operation writes the values the
//! gadget's code would allocate, bit 0 first, and counts its rows; where a word has constant
//! bits, the gadget's case analysis is followed bit by bit ([`Bit`]).

use bellpepper::gadgets::boolean::{AllocatedBit, Boolean};
use bellpepper_core::SynthesisError;
use cuzk_math::Scalar;
use ff::{Field, PrimeField};

use super::Adopt;
use crate::Witness;

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// `sha256(input)` as the gadget computes it in `w`: every value it would allocate appended to
/// the aux values, its rows counted, and its output bits (big-endian, as the gadget returns
/// them) naming the variables that hold them.
pub(super) fn witness(w: &mut Witness, input: &[Boolean]) -> Result<Vec<Boolean>, SynthesisError> {
    if !input.len().is_multiple_of(8) {
        return Err(SynthesisError::Unsatisfiable);
    }
    let mut bits = input.iter().map(Bit::of).collect::<Result<Vec<_>, _>>()?;
    let length = bits.len() as u64;
    bits.push(Bit::constant(true));
    while !(bits.len() + 64).is_multiple_of(512) {
        bits.push(Bit::constant(false));
    }
    bits.extend((0..64).rev().map(|i| Bit::constant((length >> i) & 1 == 1)));

    let mut writer = Writer {
        aux: &mut w.aux,
        rows: 0,
        multieq_bits: 0,
    };
    let mut state = IV.map(|v| (Word::constant(v), None));
    for block in bits.chunks_exact(512) {
        let words = std::array::from_fn(|i| Word::from_bits_be(&block[32 * i..32 * (i + 1)]));
        state = writer.compress(&words, &state.map(|(word, _)| word));
    }
    w.rows += writer.rows;

    let mut out = Vec::with_capacity(256);
    for (word, first) in state {
        for i in (0..32).rev() {
            let value = (word.value >> i) & 1 == 1;
            out.push(match first {
                Some(first) => Boolean::Is(AllocatedBit::alloc(Adopt(first + i), Some(value))?),
                None => Boolean::constant(value),
            });
        }
    }
    Ok(out)
}

/// One bit as the gadget sees it: a constant, or a variable read straight or negated.
#[derive(Clone, Copy, Debug)]
struct Bit {
    variable: bool,
    value: bool,
    negated: bool,
}

impl Bit {
    fn constant(value: bool) -> Self {
        Bit {
            variable: false,
            value,
            negated: false,
        }
    }

    fn of(bit: &Boolean) -> Result<Self, SynthesisError> {
        let value = bit.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        Ok(match bit {
            Boolean::Constant(_) => Bit::constant(value),
            Boolean::Is(_) => Bit {
                variable: true,
                value,
                negated: false,
            },
            Boolean::Not(_) => Bit {
                variable: true,
                value,
                negated: true,
            },
        })
    }

    fn is(self, value: bool) -> bool {
        !self.variable && self.value == value
    }

    fn not(self) -> Self {
        Bit {
            value: !self.value,
            negated: self.variable && !self.negated,
            ..self
        }
    }
}

/// 32 bits, bit 0 the least significant: values, which are variables, which of those negated
/// (zero where constant).
#[derive(Clone, Copy, Debug)]
struct Word {
    value: u32,
    variables: u32,
    negated: u32,
}

impl Word {
    fn constant(value: u32) -> Self {
        Word {
            value,
            variables: 0,
            negated: 0,
        }
    }

    /// A fresh variable in every bit.
    fn allocated(value: u32) -> Self {
        Word {
            value,
            variables: u32::MAX,
            negated: 0,
        }
    }

    fn from_bits_be(bits: &[Bit]) -> Self {
        bits.iter().fold(Word::constant(0), |word, bit| Word {
            value: word.value << 1 | u32::from(bit.value),
            variables: word.variables << 1 | u32::from(bit.variable),
            negated: word.negated << 1 | u32::from(bit.negated),
        })
    }

    fn bit(self, i: u32) -> Bit {
        Bit {
            variable: (self.variables >> i) & 1 == 1,
            value: (self.value >> i) & 1 == 1,
            negated: (self.negated >> i) & 1 == 1,
        }
    }

    fn with_bit(self, i: u32, bit: Bit) -> Self {
        let set = |word: u32, on: bool| word & !(1 << i) | u32::from(on) << i;
        Word {
            value: set(self.value, bit.value),
            variables: set(self.variables, bit.variable),
            negated: set(self.negated, bit.negated),
        }
    }

    fn rotr(self, by: u32) -> Self {
        Word {
            value: self.value.rotate_right(by),
            variables: self.variables.rotate_right(by),
            negated: self.negated.rotate_right(by),
        }
    }

    /// Shifted right; the bits shifted in are constant zeros.
    fn shr(self, by: u32) -> Self {
        Word {
            value: self.value >> by,
            variables: self.variables >> by,
            negated: self.negated >> by,
        }
    }

    /// The values of the variables behind the bits (a negated bit's variable holds its
    /// complement).
    fn underlying(self) -> u32 {
        self.value ^ self.negated
    }
}

/// `e` and `a` of the compression rounds: a word, or the operands of a sum not yet taken (the
/// gadget folds one round's additions into the next round's, or into the final state's).
enum Maybe {
    Concrete(Word),
    Deferred(Vec<Word>),
}

/// Appends the values of one SHA-256 computation to a witness and counts its rows.
struct Writer<'a> {
    aux: &'a mut Vec<Scalar>,
    rows: usize,
    /// Bits gathered by the gadget's `MultiEq` since its last row.
    multieq_bits: usize,
}

impl Writer<'_> {
    /// One boolean variable per set bit of `mask` (lowest first), each with one row.
    fn allocate(&mut self, values: u64, mask: u64) {
        let mut left = mask;
        while left != 0 {
            let i = left.trailing_zeros();
            self.aux.push(bit_scalar(values, i));
            left &= left - 1;
        }
        self.rows += mask.count_ones() as usize;
    }

    fn allocate_bit(&mut self, value: bool) -> Bit {
        self.allocate(u64::from(value), 1);
        Bit {
            variable: true,
            value,
            negated: false,
        }
    }

    /// `Boolean::xor` bit by bit: a variable per pair of variables, holding the XOR of the
    /// variables behind them; a negation survives as `Not`.
    fn xor(&mut self, a: Word, b: Word) -> Word {
        let both = a.variables & b.variables;
        self.allocate(u64::from(a.underlying() ^ b.underlying()), u64::from(both));
        let variables = a.variables | b.variables;
        let negated = (a.negated ^ b.negated)
            ^ (a.variables & !b.variables & b.value)
            ^ (b.variables & !a.variables & a.value);
        Word {
            value: a.value ^ b.value,
            variables,
            negated: negated & variables,
        }
    }

    /// `Boolean::and`.
    fn and(&mut self, x: Bit, y: Bit) -> Bit {
        if x.is(false) || y.is(false) {
            Bit::constant(false)
        } else if x.is(true) {
            y
        } else if y.is(true) {
            x
        } else {
            self.allocate_bit(x.value & y.value)
        }
    }

    /// `UInt32::sha256_ch`: (e and f) xor ((not e) and g).
    fn ch(&mut self, e: Word, f: Word, g: Word) -> Word {
        let value = (e.value & f.value) ^ (!e.value & g.value);
        if e.variables & f.variables & g.variables == u32::MAX {
            self.allocate(u64::from(value), u64::from(u32::MAX));
            return Word::allocated(value);
        }
        (0..32).fold(Word::constant(0), |word, i| {
            let (a, b, c) = (e.bit(i), f.bit(i), g.bit(i));
            let bit = if !a.variable && !b.variable && !c.variable {
                Bit::constant((value >> i) & 1 == 1)
            } else if a.is(false) {
                c
            } else if b.is(false) {
                self.and(a.not(), c)
            } else if c.is(false) {
                self.and(a, b)
            } else if c.is(true) {
                self.and(a, b.not()).not()
            } else if b.is(true) {
                self.and(a.not(), c.not()).not()
            } else {
                self.allocate_bit((value >> i) & 1 == 1)
            };
            word.with_bit(i, bit)
        })
    }

    /// `UInt32::sha256_maj`: (a and b) xor (a and c) xor (b and c); in the general case the
    /// majority, then b and c, per bit.
    fn maj(&mut self, x: Word, y: Word, z: Word) -> Word {
        let value = (x.value & y.value) ^ (x.value & z.value) ^ (y.value & z.value);
        let both = y.value & z.value;
        if x.variables & y.variables & z.variables == u32::MAX {
            for i in 0..32 {
                self.aux.push(bit_scalar(u64::from(value), i));
                self.aux.push(bit_scalar(u64::from(both), i));
            }
            self.rows += 64;
            return Word::allocated(value);
        }
        (0..32).fold(Word::constant(0), |word, i| {
            let (a, b, c) = (x.bit(i), y.bit(i), z.bit(i));
            let bit = if !a.variable && !b.variable && !c.variable {
                Bit::constant((value >> i) & 1 == 1)
            } else if a.is(false) {
                self.and(b, c)
            } else if b.is(false) {
                self.and(a, c)
            } else if c.is(false) {
                self.and(a, b)
            } else if c.is(true) {
                self.and(a.not(), b.not()).not()
            } else if b.is(true) {
                self.and(a.not(), c.not()).not()
            } else if a.is(true) {
                self.and(b.not(), c.not()).not()
            } else {
                let majority = self.allocate_bit((value >> i) & 1 == 1);
                self.and(b, c);
                self.rows += 1;
                majority
            };
            word.with_bit(i, bit)
        })
    }

    /// `UInt32::addmany`: a constant if every operand bit is, else every bit of the sum up to
    /// the largest possible one allocated (carries too) and one `MultiEq` equation. Returns the
    /// sum and the index of its first bit's variable.
    fn addmany(&mut self, operands: &[Word]) -> (Word, Option<usize>) {
        let sum: u64 = operands.iter().map(|w| u64::from(w.value)).sum();
        if operands.iter().all(|w| w.variables == 0) {
            return (Word::constant(sum as u32), None);
        }
        let largest = operands.len() as u64 * u64::from(u32::MAX);
        let bits = (u64::BITS - largest.leading_zeros()) as usize;
        let first = self.aux.len();
        self.allocate(sum, (1 << bits) - 1);
        if Scalar::CAPACITY as usize <= self.multieq_bits + bits {
            self.rows += 1;
            self.multieq_bits = 0;
        }
        self.multieq_bits += bits;
        (Word::allocated(sum as u32), Some(first))
    }

    fn compute(&mut self, maybe: Maybe, others: &[Word]) -> (Word, Option<usize>) {
        match maybe {
            Maybe::Concrete(word) => (word, None),
            Maybe::Deferred(mut operands) => {
                operands.extend_from_slice(others);
                self.addmany(&operands)
            }
        }
    }

    /// `sha256_compression_function`: the next state, each word with its first variable's
    /// index when it was allocated.
    fn compress(&mut self, block: &[Word; 16], current: &[Word; 8]) -> [(Word, Option<usize>); 8] {
        let mut w = Vec::with_capacity(64);
        w.extend_from_slice(block);
        for i in 16..64 {
            let x = w[i - 15];
            let s0 = self.xor(x.rotr(7), x.rotr(18));
            let s0 = self.xor(s0, x.shr(3));
            let y = w[i - 2];
            let s1 = self.xor(y.rotr(17), y.rotr(19));
            let s1 = self.xor(s1, y.shr(10));
            let (next, _) = self.addmany(&[w[i - 16], s0, w[i - 7], s1]);
            w.push(next);
        }

        let mut a = Maybe::Concrete(current[0]);
        let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *current;
        let mut e = Maybe::Concrete(current[4]);
        for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
            let (new_e, _) = self.compute(e, &[]);
            let s1 = self.xor(new_e.rotr(6), new_e.rotr(11));
            let s1 = self.xor(s1, new_e.rotr(25));
            let ch = self.ch(new_e, f, g);
            let temp1 = [h, s1, ch, Word::constant(k), w[i]];

            let (new_a, _) = self.compute(a, &[]);
            let s0 = self.xor(new_a.rotr(2), new_a.rotr(13));
            let s0 = self.xor(s0, new_a.rotr(22));
            let maj = self.maj(new_a, b, c);

            h = g;
            g = f;
            f = new_e;
            e = Maybe::Deferred([&temp1[..], &[d]].concat());
            d = c;
            c = b;
            b = new_a;
            a = Maybe::Deferred([&temp1[..], &[s0, maj]].concat());
        }

        let next = [
            self.compute(a, &[current[0]]),
            self.addmany(&[current[1], b]),
            self.addmany(&[current[2], c]),
            self.addmany(&[current[3], d]),
            self.compute(e, &[current[4]]),
            self.addmany(&[current[5], f]),
            self.addmany(&[current[6], g]),
            self.addmany(&[current[7], h]),
        ];
        if self.multieq_bits > 0 {
            self.rows += 1;
            self.multieq_bits = 0;
        }
        next
    }
}

/// Bit `i` of `bits` as a field element.
fn bit_scalar(bits: u64, i: u32) -> Scalar {
    if (bits >> i) & 1 == 1 {
        Scalar::ONE
    } else {
        Scalar::ZERO
    }
}

#[cfg(test)]
mod tests {
    use bellpepper_core::Variable;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// How a test input bit is made: 0 a constant, 1 a variable, 2 a negated variable.
    type Plan = Vec<(u8, bool)>;

    fn inputs(w: &mut Witness, plan: &Plan) -> Vec<Boolean> {
        plan.iter()
            .map(|&(kind, value)| match kind {
                0 => Boolean::constant(value),
                1 => Boolean::Is(AllocatedBit::alloc(&mut *w, Some(value)).unwrap()),
                _ => Boolean::Is(AllocatedBit::alloc(&mut *w, Some(!value)).unwrap()).not(),
            })
            .collect()
    }

    fn described(bits: &[Boolean]) -> Vec<(bool, Option<bool>, Option<Variable>)> {
        bits.iter()
            .map(|b| match b {
                Boolean::Constant(v) => (false, Some(*v), None),
                Boolean::Is(bit) => (false, bit.get_value(), Some(bit.get_variable())),
                Boolean::Not(bit) => (true, bit.get_value(), Some(bit.get_variable())),
            })
            .collect()
    }

    /// The native witness equals the gadget's: every aux value, the rows, the output bits.
    fn check(plan: &Plan) {
        let mut gadget = Witness::default();
        let bits = inputs(&mut gadget, plan);
        let expected = bellpepper::gadgets::sha256::sha256(&mut gadget, &bits).unwrap();
        let mut native = Witness::default();
        let bits = inputs(&mut native, plan);
        let got = witness(&mut native, &bits).unwrap();
        assert_eq!(native.aux.len(), gadget.aux.len(), "aux values of {plan:?}");
        assert!(native.aux == gadget.aux, "aux values of {plan:?}");
        assert_eq!(native.rows, gadget.rows, "rows of {plan:?}");
        assert_eq!(described(&got), described(&expected));
    }

    #[test]
    fn the_native_witness_is_the_gadgets_on_every_kind_of_input_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
        // One block, the length word's block on its own, several blocks, a PoRep label (1248
        // bytes).
        for bytes in [0, 1, 31, 32, 55, 56, 63, 64, 100, 1248] {
            let kinds: [fn(&mut ChaCha8Rng, usize) -> u8; 5] = [
                |_, _| 1,
                |_, _| 2,
                |_, _| 0,
                |rng, _| rng.gen_range(0..3),
                // Runs of constants between variables, as a label's zero padding.
                |_, i| {
                    if (i / 24) % 3 == 0 {
                        0
                    } else {
                        1 + (i % 2) as u8
                    }
                },
            ];
            for kind in kinds {
                let plan = (0..8 * bytes)
                    .map(|i| (kind(&mut rng, i), rng.gen()))
                    .collect();
                check(&plan);
            }
        }
    }

    #[test]
    fn an_input_not_of_whole_bytes_or_without_values_is_an_error() {
        let mut w = Witness::default();
        let seven = vec![Boolean::constant(true); 7];
        assert!(witness(&mut w, &seven).is_err());
        let mut blank = Witness::default();
        let unknown = AllocatedBit::alloc(&mut blank, None::<bool>);
        assert!(unknown.is_err(), "a witness needs values");
        // A bit of a circuit run without a witness, as for setup.
        let mut recorder = crate::ShapeRecorder::default();
        let missing = vec![Boolean::Is(AllocatedBit::alloc(&mut recorder, None).unwrap()); 8];
        assert!(matches!(
            witness(&mut w, &missing),
            Err(SynthesisError::AssignmentMissing)
        ));
    }
}
