//! The pre-compiled constraint evaluator.
//!
//! Direct synthesis builds every constraint's three linear combinations and evaluates them term by
//! term; for a circuit whose shape never changes (every partition of a PoRep sector, every sector
//! of a size) that work is the same each time. [`CompiledR1cs`] records the R1CS once into
//! compressed sparse rows; [`CompiledR1cs::synthesize`] then runs the circuit only for its witness
//! (the constraint closures are never called) and computes a = A·z, b = B·z, c = C·z as parallel
//! sparse matrix–vector products. The densities are properties of the matrices, computed once.
//!
//! The result equals [`ProvingAssignment::synthesize`]'s exactly: same witness (the same
//! allocations run in the same order), same rows, same field sums.
//!
//! Bytes (for an on-disk cache) are versioned: `CUZKR1CS`, the format version, the counts, the
//! distinct coefficients, then per matrix its row starts, columns and coefficient indices.

use std::collections::HashMap;
use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_math::{Bitmap, Scalar};
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::drive::{close, drive, open, CountsInputs};
use crate::witness::{Sectioned, Witness};
use crate::ProvingAssignment;

const MAGIC: &[u8; 8] = b"CUZKR1CS";
/// Bumped whenever the byte layout changes; older files are refused, never misread.
pub const FORMAT_VERSION: u32 = 1;

/// Why a compiled R1CS could not be made, read or used.
#[derive(Debug, thiserror::Error)]
pub enum CompiledError {
    #[error(transparent)]
    Synthesis(#[from] SynthesisError),
    #[error("the circuit has {got} {what}, its recorded shape {recorded}: not the circuit it was compiled from")]
    ShapeMismatch {
        what: &'static str,
        recorded: usize,
        got: usize,
    },
    #[error(
        "section {section} does not begin with the prologue's {what}: not a sectioned circuit"
    )]
    NotSectioned { section: usize, what: &'static str },
    #[error("{what} ({count}) does not fit the 32-bit indices of the compiled form")]
    TooLarge { what: &'static str, count: usize },
    #[error("{source_name}: not a compiled R1CS: {field}: {reason}")]
    Malformed {
        source_name: String,
        field: String,
        reason: String,
    },
}

/// One matrix in compressed sparse rows: row r's entries are `starts[r]..starts[r + 1]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct SparseRows {
    starts: Vec<u32>,
    /// Flat columns: input i is i, aux j is num_inputs + j.
    columns: Vec<u32>,
    /// Indices into [`CompiledR1cs::coeffs`]; 0 is one.
    coeffs: Vec<u32>,
}

/// What a witness value is, for the products: hash circuits' witnesses are mostly bits, and
/// a bit times a coefficient needs no multiplication.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Value {
    Zero,
    One,
    Other,
}

impl Value {
    fn of(x: &Scalar) -> Self {
        if bool::from(x.is_zero()) {
            Value::Zero
        } else if *x == Scalar::ONE {
            Value::One
        } else {
            Value::Other
        }
    }
}

impl SparseRows {
    /// z·row for every row, rows in parallel, z the inputs then the aux values (read in place,
    /// never copied into one vector: at 32 GiB that copy is 4 GB); `kinds[i]` says what `z[i]` is.
    fn multiply(
        &self,
        inputs: &[Scalar],
        aux: &[Scalar],
        kinds: &[Value],
        table: &[Scalar],
    ) -> Vec<Scalar> {
        let value = |column: usize| match column.checked_sub(inputs.len()) {
            None => inputs[column],
            Some(j) => aux[j],
        };
        let rows = self.starts.len() - 1;
        // A 32 GiB partition's product is 4 GB: on huge pages where the kernel has them.
        let mut products = cuzk_hostmem::with_capacity(rows);
        let each_row = (0..rows).into_par_iter().with_min_len(1 << 12).map(|row| {
            let range = self.starts[row] as usize..self.starts[row + 1] as usize;
            let mut acc = Scalar::ZERO;
            for (&column, &coeff) in self.columns[range.clone()].iter().zip(&self.coeffs[range]) {
                let column = column as usize;
                match (kinds[column], coeff) {
                    (Value::Zero, _) => {}
                    (Value::One, _) => acc += table[coeff as usize],
                    (Value::Other, 0) => acc += value(column),
                    (Value::Other, _) => acc += value(column) * table[coeff as usize],
                }
            }
            acc
        });
        products.par_extend(each_row);
        products
    }
}

impl SparseRows {
    /// Σ over rows of coeff · weight(row), per column (coefficient one needs no product).
    fn weigh_columns(
        &self,
        row_weights: &[Scalar],
        table: &[Scalar],
        columns: usize,
    ) -> Vec<Scalar> {
        let mut out = vec![Scalar::ZERO; columns];
        for (row, weight) in row_weights.iter().enumerate().take(self.starts.len() - 1) {
            let range = self.starts[row] as usize..self.starts[row + 1] as usize;
            for (&column, &coeff) in self.columns[range.clone()].iter().zip(&self.coeffs[range]) {
                let term = if coeff == 0 {
                    *weight
                } else {
                    *weight * table[coeff as usize]
                };
                out[column as usize] += term;
            }
        }
        out
    }
}

/// A circuit's R1CS, compiled for witness-only synthesis.
#[derive(Clone, Debug, PartialEq)]
pub struct CompiledR1cs {
    /// First, so that it is dropped before the matrices.
    attached: Attachment,
    num_inputs: usize,
    num_aux: usize,
    num_rows: usize,
    /// The distinct non-zero coefficients, one first.
    coeffs: Vec<Scalar>,
    a: SparseRows,
    b: SparseRows,
    c: SparseRows,
    a_aux_density: Bitmap,
    b_input_density: Bitmap,
    b_aux_density: Bitmap,
}

/// What a consumer ties to a value's memory, made once and dropped with the value (declared
/// first, before that memory): the page-locks a GPU backend takes on a compiled R1CS's matrices
/// or a parameter set's queries to stream them from where they are, without the owner knowing of
/// GPUs. A clone starts without: its memory is other memory.
#[derive(Default)]
pub struct Attachment(std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>);

impl Attachment {
    /// The value attached, made by `make` on the first call; `None` if an earlier call attached
    /// a value of another type.
    pub fn get_or_make<T: std::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce() -> T,
    ) -> Option<&T> {
        self.0.get_or_init(|| Box::new(make())).downcast_ref()
    }
}

impl Clone for Attachment {
    fn clone(&self) -> Self {
        Attachment::default()
    }
}

/// Says nothing of the memory it is tied to: any two are equal.
impl PartialEq for Attachment {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Attachment {}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "attached"
        } else {
            "none"
        })
    }
}

/// Distinct coefficients by their canonical bytes, one at index 0.
struct CoeffTable {
    values: Vec<Scalar>,
    index: HashMap<[u8; 32], u32>,
}

impl CoeffTable {
    fn new() -> Self {
        CoeffTable {
            values: vec![Scalar::ONE],
            index: HashMap::from([(Scalar::ONE.to_repr(), 0)]),
        }
    }

    fn intern(&mut self, value: Scalar) -> u32 {
        // One is most coefficients of bit-heavy circuits: no canonical form, no hash.
        if value == Scalar::ONE {
            return 0;
        }
        let next = self.values.len() as u32;
        let index = *self.index.entry(value.to_repr()).or_insert(next);
        if index == next {
            self.values.push(value);
        }
        index
    }
}

/// Marks an input's column while recording, until the final input count is known (inputs may
/// be allocated between constraints).
const INPUT_TAG: u32 = 1 << 31;

/// The constraint system behind [`CompiledR1cs::record`] and, with an assignment to fill,
/// [`CompiledR1cs::synthesize_recording`].
struct Compiler {
    num_inputs: usize,
    num_aux: usize,
    table: CoeffTable,
    matrices: [SparseRows; 3],
    /// The first variable index that does not fit the 31-bit recording form, if any.
    overflow: Option<usize>,
    /// Direct synthesis in the same run: each constraint's combinations, built once, are
    /// evaluated into its row as well as recorded.
    assignment: Option<ProvingAssignment>,
}

impl Default for Compiler {
    fn default() -> Self {
        let empty = || SparseRows {
            starts: vec![0],
            ..SparseRows::default()
        };
        Compiler {
            num_inputs: 0,
            num_aux: 0,
            table: CoeffTable::new(),
            matrices: [empty(), empty(), empty()],
            overflow: None,
            assignment: None,
        }
    }
}

impl Compiler {
    fn push_row(&mut self, m: usize, lc: &LinearCombination<Scalar>) {
        for (variable, coeff) in lc.iter() {
            if bool::from(coeff.is_zero()) {
                continue;
            }
            let (index, tag) = match variable.get_unchecked() {
                Index::Input(i) => (i, INPUT_TAG),
                Index::Aux(j) => (j, 0),
            };
            if index >= INPUT_TAG as usize {
                self.overflow.get_or_insert(index);
            }
            let coeff = self.table.intern(*coeff);
            let matrix = &mut self.matrices[m];
            matrix.columns.push(index as u32 | tag);
            matrix.coeffs.push(coeff);
        }
        let matrix = &mut self.matrices[m];
        let end = matrix.columns.len();
        if u32::try_from(end).is_err() {
            self.overflow.get_or_insert(end);
        }
        matrix.starts.push(end as u32);
    }

    /// Rows and entries so far: (rows, entries of A, B and C).
    fn extent(&self) -> (usize, [usize; 3]) {
        (
            self.matrices[0].starts.len() - 1,
            self.matrices.each_ref().map(|m| m.columns.len()),
        )
    }

    /// Appends what `part` recorded after `prologue` (this compiler's own first extent, which
    /// `part` must begin with): its rows, their new variables renumbered after this compiler's
    /// and their coefficients interned in its table. `section` names `part` in errors.
    fn append(
        &mut self,
        part: Compiler,
        prologue: &Prologue,
        section: usize,
    ) -> Result<(), CompiledError> {
        let not_sectioned = |what| CompiledError::NotSectioned { section, what };
        if part.num_inputs < prologue.inputs || part.num_aux < prologue.aux {
            return Err(not_sectioned("variables"));
        }
        for (m, matrix) in part.matrices.iter().enumerate() {
            let end = prologue.entries[m];
            let mine = &self.matrices[m];
            let same = matrix.starts.get(..=prologue.rows) == mine.starts.get(..=prologue.rows)
                && matrix.columns.get(..end) == mine.columns.get(..end)
                && matrix.coeffs.get(..end) == mine.coeffs.get(..end);
            if !same {
                return Err(not_sectioned("rows"));
            }
        }
        let coeffs: Vec<u32> = part
            .table
            .values
            .iter()
            .map(|&value| self.table.intern(value))
            .collect();
        let (input_shift, aux_shift) = (
            self.num_inputs - prologue.inputs,
            self.num_aux - prologue.aux,
        );
        let renumber = |column: u32| {
            let (index, tag) = (column & !INPUT_TAG, column & INPUT_TAG);
            let (own, shift) = if tag != 0 {
                (index as usize >= prologue.inputs, input_shift)
            } else {
                (index as usize >= prologue.aux, aux_shift)
            };
            let index = if own {
                index as usize + shift
            } else {
                index as usize
            };
            (index, tag)
        };
        for (m, matrix) in part.matrices.into_iter().enumerate() {
            let start = prologue.entries[m];
            let base = self.matrices[m].columns.len() - start;
            for (&column, &coeff) in matrix.columns[start..].iter().zip(&matrix.coeffs[start..]) {
                let (index, tag) = renumber(column);
                if index >= INPUT_TAG as usize {
                    self.overflow.get_or_insert(index);
                }
                let mine = &mut self.matrices[m];
                mine.columns.push(index as u32 | tag);
                mine.coeffs.push(coeffs[coeff as usize]);
            }
            for &row_end in &matrix.starts[prologue.rows + 1..] {
                let end = base + row_end as usize;
                if u32::try_from(end).is_err() {
                    self.overflow.get_or_insert(end);
                }
                self.matrices[m].starts.push(end as u32);
            }
        }
        self.num_inputs += part.num_inputs - prologue.inputs;
        self.num_aux += part.num_aux - prologue.aux;
        if let Some(index) = part.overflow {
            self.overflow.get_or_insert(index);
        }
        Ok(())
    }

    /// Resolves the input tags into flat columns now that the input count is final.
    fn finish(mut self) -> Result<CompiledR1cs, CompiledError> {
        let columns = self.num_inputs + self.num_aux;
        let too_many_columns = (columns >= INPUT_TAG as usize).then_some(columns);
        if let Some(count) = self.overflow.or(too_many_columns) {
            return Err(CompiledError::TooLarge {
                what: "variables or entries of one matrix",
                count,
            });
        }
        let num_inputs = self.num_inputs as u32;
        for matrix in &mut self.matrices {
            for column in &mut matrix.columns {
                *column = if *column & INPUT_TAG != 0 {
                    *column & !INPUT_TAG
                } else {
                    *column + num_inputs
                };
            }
        }
        Ok(CompiledR1cs::assemble(
            self.num_inputs,
            self.num_aux,
            self.table.values,
            self.matrices,
        ))
    }
}

impl CountsInputs for Compiler {
    fn num_inputs(&self) -> usize {
        self.num_inputs
    }
}

impl ConstraintSystem<Scalar> for Compiler {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if let Some(assignment) = &mut self.assignment {
            assignment.alloc(name, f)?;
        }
        self.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, name: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if let Some(assignment) = &mut self.assignment {
            assignment.alloc_input(name, f)?;
        }
        self.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let lcs = [
            &a(LinearCombination::zero()),
            &b(LinearCombination::zero()),
            &c(LinearCombination::zero()),
        ];
        if let Some(assignment) = &mut self.assignment {
            assignment.push_row(lcs);
        }
        for (m, lc) in lcs.into_iter().enumerate() {
            self.push_row(m, lc);
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

/// What a sectioned circuit's prologue recorded: its variables, rows and entries.
struct Prologue {
    inputs: usize,
    aux: usize,
    rows: usize,
    entries: [usize; 3],
}

/// A circuit synthesized directly, with the R1CS recorded on the way.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    pub assignment: ProvingAssignment,
    pub compiled: CompiledR1cs,
}

impl CompiledR1cs {
    /// Records `circuit`'s shape (no witness is computed) straight into sparse rows; entries
    /// whose coefficient is zero are dropped, as direct synthesis skips them.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Self, CompiledError> {
        let mut compiler = Compiler::default();
        drive(circuit, &mut compiler)?;
        compiler.finish()
    }

    /// [`CompiledR1cs::record`] for a circuit of independent sections, recorded side by side
    /// (after its own run of the prologue each) and joined in order: the same matrices.
    pub fn record_sectioned<S: Sectioned>(circuit: &S) -> Result<Self, CompiledError> {
        let run = |range: Range<usize>| {
            let mut compiler = Compiler::default();
            open(&mut compiler)?;
            circuit.synthesize_sections(&mut compiler, range)?;
            Ok::<_, SynthesisError>(compiler)
        };
        let mut whole = run(0..0)?;
        let parts = (0..circuit.sections())
            .into_par_iter()
            .map(|i| run(i..i + 1))
            .collect::<Result<Vec<_>, _>>()?;
        let (rows, entries) = whole.extent();
        let prologue = Prologue {
            inputs: whole.num_inputs,
            aux: whole.num_aux,
            rows,
            entries,
        };
        for (section, part) in parts.into_iter().enumerate() {
            whole.append(part, &prologue, section)?;
        }
        close(&mut whole);
        whole.finish()
    }

    /// Synthesizes `circuit` directly and records its R1CS in the same run (one run of the
    /// circuit, not two): for the first partition of a shape, so that the next ones can be
    /// synthesized by witness only.
    pub fn synthesize_recording<C: Circuit<Scalar>>(circuit: C) -> Result<Recorded, CompiledError> {
        let mut compiler = Compiler {
            assignment: Some(ProvingAssignment::default()),
            ..Compiler::default()
        };
        drive(circuit, &mut compiler)?;
        let assignment = compiler.assignment.take().unwrap_or_default();
        Ok(Recorded {
            assignment,
            compiled: compiler.finish()?,
        })
    }

    /// The compiled form with its densities derived from the matrices.
    fn assemble(
        num_inputs: usize,
        num_aux: usize,
        coeffs: Vec<Scalar>,
        [a, b, c]: [SparseRows; 3],
    ) -> Self {
        let mut a_aux_density = Bitmap::with_len(num_aux);
        let mut b_input_density = Bitmap::with_len(num_inputs);
        let mut b_aux_density = Bitmap::with_len(num_aux);
        for &column in &a.columns {
            if let Some(j) = (column as usize).checked_sub(num_inputs) {
                a_aux_density.set(j);
            }
        }
        for &column in &b.columns {
            match (column as usize).checked_sub(num_inputs) {
                Some(j) => b_aux_density.set(j),
                None => b_input_density.set(column as usize),
            }
        }
        CompiledR1cs {
            attached: Attachment::default(),
            num_inputs,
            num_aux,
            num_rows: a.starts.len() - 1,
            coeffs,
            a,
            b,
            c,
            a_aux_density,
            b_input_density,
            b_aux_density,
        }
    }

    /// Rows: constraints plus one per public input.
    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// Aux (private) variables.
    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Public inputs, the constant one included.
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    /// Each matrix's columns weighed by `row_weights` (one per row): `Aᵀ·w`, `Bᵀ·w`, `Cᵀ·w`,
    /// columns numbered inputs then aux. With the Lagrange basis at τ as weights these are the
    /// QAP's polynomials at τ, which setup needs; the matrices in parallel, each in one pass.
    pub fn weigh_columns(&self, row_weights: &[Scalar]) -> [Vec<Scalar>; 3] {
        let columns = self.num_inputs + self.num_aux;
        let weigh = |m: &SparseRows| m.weigh_columns(row_weights, &self.coeffs, columns);
        let (a, (b, c)) = rayon::join(
            || weigh(&self.a),
            || rayon::join(|| weigh(&self.b), || weigh(&self.c)),
        );
        [a, b, c]
    }

    /// Host bytes the matrices hold (7.3 GB for a 32 GiB PoRep partition), for memory budgets.
    pub fn heap_bytes(&self) -> u64 {
        let entries: usize = [&self.a, &self.b, &self.c]
            .iter()
            .map(|m| m.starts.len() + 2 * m.columns.len())
            .sum();
        let bitmaps = self.num_inputs + 2 * self.num_aux;
        (entries * 4 + self.coeffs.len() * 32 + bitmaps / 8) as u64
    }

    /// A, B and C as compressed rows (row starts, flat columns: inputs then aux, coefficient
    /// indices into [`CompiledR1cs::coeffs`]), for products computed elsewhere (on a GPU).
    pub fn matrices(&self) -> [(&[u32], &[u32], &[u32]); 3] {
        [&self.a, &self.b, &self.c].map(|m| (&m.starts[..], &m.columns[..], &m.coeffs[..]))
    }

    /// The value tied to the matrices' memory (dropped before it), made by `make` on the first
    /// call; `None` if an earlier call attached a value of another type.
    pub fn attachment<T: std::any::Any + Send + Sync>(
        &self,
        make: impl FnOnce() -> T,
    ) -> Option<&T> {
        self.attached.get_or_make(make)
    }

    /// The distinct coefficients the matrices index, one first.
    pub fn coeffs(&self) -> &[Scalar] {
        &self.coeffs
    }

    /// Non-zero entries of A, B and C.
    pub fn nnz(&self) -> [usize; 3] {
        [&self.a, &self.b, &self.c].map(|m| m.columns.len())
    }

    /// Synthesizes `circuit` (which must have the recorded shape) by computing only its witness
    /// and multiplying the matrices by it.
    pub fn synthesize<C: Circuit<Scalar>>(
        &self,
        circuit: C,
    ) -> Result<ProvingAssignment, CompiledError> {
        let witness = self.checked(Witness::of(circuit, self.totals())?)?;
        Ok(self.completed(witness))
    }

    /// [`CompiledR1cs::synthesize`] for a circuit of independent sections, which are synthesized
    /// side by side: the same result in a fraction of the time, for one partition's latency.
    pub fn synthesize_sectioned<S: Sectioned>(
        &self,
        circuit: &S,
    ) -> Result<ProvingAssignment, CompiledError> {
        let witness = self.checked(Witness::sectioned(circuit, self.totals())?)?;
        Ok(self.completed(witness))
    }

    /// `circuit`'s witness alone, its products deferred to the prover
    /// ([`ProvingAssignment::deferred`]).
    pub fn witness<C: Circuit<Scalar>>(
        self: &Arc<Self>,
        circuit: C,
    ) -> Result<ProvingAssignment, CompiledError> {
        let witness = self.checked(Witness::of(circuit, self.totals())?)?;
        Ok(self.deferring(witness))
    }

    /// [`CompiledR1cs::witness`] of a circuit of independent sections, side by side.
    pub fn witness_sectioned<S: Sectioned>(
        self: &Arc<Self>,
        circuit: &S,
    ) -> Result<ProvingAssignment, CompiledError> {
        let witness = self.checked(Witness::sectioned(circuit, self.totals())?)?;
        Ok(self.deferring(witness))
    }

    /// (inputs, aux variables) a witness of this shape has.
    fn totals(&self) -> (usize, usize) {
        (self.num_inputs, self.num_aux)
    }

    /// `witness`, if it has the recorded shape.
    fn checked(&self, witness: Witness) -> Result<Witness, CompiledError> {
        for (what, recorded, got) in [
            ("public inputs", self.num_inputs, witness.inputs.len()),
            ("aux variables", self.num_aux, witness.aux.len()),
            ("rows", self.num_rows, witness.rows),
        ] {
            if recorded != got {
                return Err(CompiledError::ShapeMismatch {
                    what,
                    recorded,
                    got,
                });
            }
        }
        Ok(witness)
    }

    /// a = A·z, b = B·z, c = C·z for z = inputs then aux, which must have the recorded shape.
    pub(crate) fn products(&self, inputs: &[Scalar], aux: &[Scalar]) -> [Vec<Scalar>; 3] {
        let kinds: Vec<Value> = inputs.par_iter().chain(aux).map(Value::of).collect();
        let multiply = |m: &SparseRows| m.multiply(inputs, aux, &kinds, &self.coeffs);
        let (a, (b, c)) = rayon::join(
            || multiply(&self.a),
            || rayon::join(|| multiply(&self.b), || multiply(&self.c)),
        );
        [a, b, c]
    }

    fn completed(&self, witness: Witness) -> ProvingAssignment {
        let [a, b, c] = self.products(&witness.inputs, &witness.aux);
        ProvingAssignment {
            a,
            b,
            c,
            ..self.assignment(witness)
        }
    }

    fn deferring(self: &Arc<Self>, witness: Witness) -> ProvingAssignment {
        ProvingAssignment {
            deferred: Some(Arc::clone(self)),
            ..self.assignment(witness)
        }
    }

    /// The witness and the densities; no products.
    fn assignment(&self, witness: Witness) -> ProvingAssignment {
        ProvingAssignment {
            input_assignment: witness.inputs,
            aux_assignment: witness.aux,
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
            deferred: None,
        }
    }

    /// Writes the versioned byte form (buffer the writer: it writes in small pieces).
    pub fn write<W: Write>(&self, out: &mut W) -> std::io::Result<()> {
        out.write_all(MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes())?;
        for count in [
            self.num_inputs,
            self.num_aux,
            self.num_rows,
            self.coeffs.len(),
        ] {
            out.write_all(&(count as u64).to_le_bytes())?;
        }
        for coeff in &self.coeffs {
            out.write_all(coeff.to_repr().as_ref())?;
        }
        for matrix in [&self.a, &self.b, &self.c] {
            out.write_all(&(matrix.columns.len() as u64).to_le_bytes())?;
            for values in [&matrix.starts, &matrix.columns, &matrix.coeffs] {
                for value in values {
                    out.write_all(&value.to_le_bytes())?;
                }
            }
        }
        Ok(())
    }

    /// Parses and checks the byte form; `source` names it in errors.
    pub fn from_bytes(bytes: &[u8], source: &str) -> Result<Self, CompiledError> {
        let mut reader = ByteReader {
            source,
            bytes,
            offset: 0,
        };
        if reader.take("magic", MAGIC.len())? != MAGIC {
            return Err(reader.malformed("magic", "not CUZKR1CS".into()));
        }
        let version = reader.u32s("version", 1)?[0];
        if version != FORMAT_VERSION {
            return Err(reader.malformed(
                "version",
                format!("format {version}, this build reads {FORMAT_VERSION}"),
            ));
        }
        let num_inputs = reader.count("num_inputs")?;
        let num_aux = reader.count("num_aux")?;
        let num_rows = reader.count("num_rows")?;
        let num_coeffs = reader.count("num_coeffs")?;
        let raw = reader.take("coeffs", num_coeffs.saturating_mul(32))?;
        let coeffs = raw
            .chunks_exact(32)
            .enumerate()
            .map(|(i, chunk)| {
                let mut repr = <Scalar as PrimeField>::Repr::default();
                repr.as_mut().copy_from_slice(chunk);
                Option::<Scalar>::from(Scalar::from_repr(repr)).ok_or_else(|| {
                    reader.malformed(&format!("coeffs[{i}]"), "not a canonical scalar".into())
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if coeffs.first() != Some(&Scalar::ONE) {
            return Err(reader.malformed("coeffs[0]", "must be one".into()));
        }
        let columns = num_inputs.saturating_add(num_aux);
        let mut matrix = |name: &str| -> Result<SparseRows, CompiledError> {
            let nnz = reader.count(&format!("{name}.nnz"))?;
            let rows = SparseRows {
                starts: reader.u32s(&format!("{name}.starts"), num_rows.saturating_add(1))?,
                columns: reader.u32s(&format!("{name}.columns"), nnz)?,
                coeffs: reader.u32s(&format!("{name}.coeffs"), nnz)?,
            };
            let ordered = rows.starts.first() == Some(&0)
                && rows.starts.windows(2).all(|w| w[0] <= w[1])
                && rows.starts.last().map(|&s| s as usize) == Some(nnz);
            if !ordered {
                return Err(
                    reader.malformed(&format!("{name}.starts"), "not a running count".into())
                );
            }
            if rows.columns.iter().any(|&c| c as usize >= columns) {
                return Err(reader.malformed(&format!("{name}.columns"), "out of range".into()));
            }
            if rows.coeffs.iter().any(|&c| c as usize >= coeffs.len()) {
                return Err(reader.malformed(&format!("{name}.coeffs"), "out of range".into()));
            }
            Ok(rows)
        };
        let (a, b, c) = (matrix("a")?, matrix("b")?, matrix("c")?);
        if reader.offset != bytes.len() {
            return Err(reader.malformed(
                "end",
                format!("{} bytes after the last field", bytes.len() - reader.offset),
            ));
        }
        Ok(Self::assemble(num_inputs, num_aux, coeffs, [a, b, c]))
    }
}

/// A cursor over the byte form, for errors that name the field.
struct ByteReader<'a> {
    source: &'a str,
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> ByteReader<'a> {
    fn malformed(&self, field: &str, reason: String) -> CompiledError {
        CompiledError::Malformed {
            source_name: self.source.to_owned(),
            field: field.to_owned(),
            reason,
        }
    }

    fn take(&mut self, field: &str, needed: usize) -> Result<&'a [u8], CompiledError> {
        let available = self.bytes.len() - self.offset;
        if needed > available {
            return Err(self.malformed(
                field,
                format!(
                    "truncated: needs {needed} bytes at offset {}, {available} left",
                    self.offset
                ),
            ));
        }
        let taken = &self.bytes[self.offset..self.offset + needed];
        self.offset += needed;
        Ok(taken)
    }

    fn count(&mut self, field: &str) -> Result<usize, CompiledError> {
        let raw = self.take(field, 8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(raw);
        usize::try_from(u64::from_le_bytes(word))
            .map_err(|_| self.malformed(field, "does not fit this machine".into()))
    }

    fn u32s(&mut self, field: &str, count: usize) -> Result<Vec<u32>, CompiledError> {
        let raw = self.take(field, count.saturating_mul(4))?;
        Ok(raw
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect())
    }
}
