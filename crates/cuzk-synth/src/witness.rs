//! Witness-only synthesis: the values of a circuit's variables and the count of its rows, never a
//! linear combination. A circuit that splits into independent sections ([`Sectioned`]) has its
//! sections run side by side.

use std::ops::Range;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_math::Scalar;
use rayon::prelude::*;

use crate::drive::{close, drive, open, CountsInputs};
use crate::{pause, CompiledError};

/// A circuit made of a short prologue and sections that read only what the prologue allocated,
/// so that each section can be synthesized apart: a PoRep partition is its commitments, then one
/// section per challenge.
///
/// The contract: running the prologue and then sections `range` allocates and constrains exactly
/// what the whole circuit does for them, in the same order, whatever the range; the whole circuit
/// is the prologue then every section in order.
pub trait Sectioned: Sync {
    fn sections(&self) -> usize;

    /// The prologue, then sections `range` only (the prologue alone for an empty range). `cs` is
    /// a root constraint system (never a namespace), so that the native gadgets of
    /// [`crate::gadgets`] can see a [`Witness`] in it.
    fn synthesize_sections<CS: ConstraintSystem<Scalar> + 'static>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError>;

    /// [`Sectioned::synthesize_sections`] for its witness alone: a circuit may override it with
    /// a faster way to the same values (native hashes in place of their gadgets' code), which
    /// must allocate exactly what the circuit does, in the same order.
    fn witness_sections(&self, w: &mut Witness, range: Range<usize>) -> Result<(), SynthesisError> {
        self.synthesize_sections(w, range)
    }
}

/// A sectioned circuit whose witness comes from its gadgets' code only, never a faster path:
/// the reference that a [`Sectioned::witness_sections`] override is measured and tested against.
#[derive(Debug)]
pub struct ThroughGadgets<'a, S>(pub &'a S);

impl<S: Sectioned> Sectioned for ThroughGadgets<'_, S> {
    fn sections(&self) -> usize {
        self.0.sections()
    }

    fn synthesize_sections<CS: ConstraintSystem<Scalar> + 'static>(
        &self,
        cs: &mut CS,
        range: Range<usize>,
    ) -> Result<(), SynthesisError> {
        self.0.synthesize_sections(cs, range)
    }

    /// On a witness no native gadget recognizes: circuits whose sections call
    /// [`crate::gadgets`] themselves take the gadgets' code too.
    fn witness_sections(&self, w: &mut Witness, range: Range<usize>) -> Result<(), SynthesisError> {
        let mut shadow = GadgetsOnly(std::mem::take(w));
        let done = self.0.synthesize_sections(&mut shadow, range);
        *w = shadow.0;
        done
    }
}

/// A [`Witness`] under another type, so that [`crate::gadgets`] take their gadgets' own code on it.
struct GadgetsOnly(Witness);

impl ConstraintSystem<Scalar> for GadgetsOnly {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc(annotation, f)
    }

    fn alloc_input<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc_input(annotation, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.0.enforce(annotation, a, b, c)
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.0.push_namespace(name)
    }

    fn pop_namespace(&mut self) {
        self.0.pop_namespace()
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// The constraint system of witness-only synthesis: keeps the values, counts the rows.
#[derive(Debug, Default)]
pub struct Witness {
    pub(crate) inputs: Vec<Scalar>,
    pub(crate) aux: Vec<Scalar>,
    pub(crate) rows: usize,
}

impl Witness {
    /// Empty, with room for `capacity` (inputs, aux values).
    fn with_capacity(capacity: (usize, usize)) -> Self {
        Witness {
            inputs: cuzk_hostmem::with_capacity(capacity.0),
            aux: cuzk_hostmem::with_capacity(capacity.1),
            rows: 0,
        }
    }

    /// `circuit`'s witness, driven as every circuit is, in vectors sized for `totals` (the
    /// expected inputs and aux values: a doubling vector could hold twice what it needs).
    pub(crate) fn of<C: Circuit<Scalar>>(
        circuit: C,
        totals: (usize, usize),
    ) -> Result<Self, SynthesisError> {
        let mut witness = Witness::with_capacity(totals);
        drive(circuit, &mut witness)?;
        Ok(witness)
    }

    /// `circuit`'s witness with its sections synthesized on the rayon pool, in groups of
    /// consecutive sections, each group after its own run of the prologue; the prologue's values,
    /// identical in every run, are kept once. The same values in the same order as
    /// [`Witness::of`] the whole circuit. `totals` (the expected inputs and aux values) size each
    /// group's vectors for an even share, so that sections of one size (a PoRep partition's)
    /// never grow theirs past it; the first group's have room for the whole witness, which the
    /// others are appended to, each freed once copied (the witness is never held twice).
    pub(crate) fn sectioned<S: Sectioned>(
        circuit: &S,
        totals: (usize, usize),
    ) -> Result<Self, CompiledError> {
        let run = |range: Range<usize>, capacity: (usize, usize)| {
            let mut witness = Witness::with_capacity(capacity);
            open(&mut witness)?;
            circuit.witness_sections(&mut witness, range)?;
            Ok::<_, SynthesisError>(witness)
        };
        let prologue = run(0..0, (0, 0))?;
        let sections = circuit.sections();
        let per_group = sections
            .div_ceil(GROUPS_PER_THREAD * rayon::current_num_threads())
            .max(1);
        let share = |total: usize, prologue: usize| {
            prologue + total.saturating_sub(prologue).div_ceil(sections.max(1)) * per_group
        };
        let capacity = (
            share(totals.0, prologue.inputs.len()),
            share(totals.1, prologue.aux.len()),
        );
        let whole_capacity = (totals.0.max(capacity.0), totals.1.max(capacity.1));
        let firsts: Vec<usize> = (0..sections).step_by(per_group).collect();
        let mut parts = firsts
            .par_iter()
            .map(|&first| {
                let room = if first == 0 { whole_capacity } else { capacity };
                run(first..sections.min(first + per_group), room)
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (&section, part) in firsts.iter().zip(&parts) {
            let what = if !part.inputs.starts_with(&prologue.inputs) {
                "inputs"
            } else if !part.aux.starts_with(&prologue.aux) {
                "aux values"
            } else if part.rows < prologue.rows {
                "rows"
            } else {
                continue;
            };
            return Err(CompiledError::NotSectioned { section, what });
        }
        let rest = parts.split_off(parts.len().min(1));
        let skip = (prologue.inputs.len(), prologue.aux.len(), prologue.rows);
        let mut whole = parts.pop().unwrap_or(prologue);
        whole.rows += rest.iter().map(|part| part.rows - skip.2).sum::<usize>();
        let (inputs, aux): (Vec<_>, Vec<_>) =
            rest.into_iter().map(|part| (part.inputs, part.aux)).unzip();
        cuzk_hostmem::append_freeing(&mut whole.inputs, inputs, skip.0);
        cuzk_hostmem::append_freeing(&mut whole.aux, aux, skip.1);
        close(&mut whole);
        Ok(whole)
    }
}

/// Sections run in groups of consecutive ones, this many groups per thread of the pool: enough
/// to keep the threads evenly busy, few enough that a group's vectors are megabytes, on huge
/// pages (a 32 GiB WindowPoSt sector's alone is 1.7 MB, below what `cuzk_hostmem` advises).
const GROUPS_PER_THREAD: usize = 8;

impl CountsInputs for Witness {
    fn num_inputs(&self) -> usize {
        self.inputs.len()
    }
}

impl ConstraintSystem<Scalar> for Witness {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.rows += 1;
        if self.rows.is_multiple_of(pause::CHECK_EVERY) {
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
