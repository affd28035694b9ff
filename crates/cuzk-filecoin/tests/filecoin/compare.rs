//! Comparisons the circuit tests share: a re-stated circuit's witness against its reference,
//! a side-by-side R1CS recording against the blank circuit's whole one.

use std::fmt::Display;
use std::time::Instant;

use bellpepper_core::Circuit;
use cuzk_filecoin::{compiled_r1cs, CircuitId, ParamFiles, R1csOrigin};
use cuzk_math::Scalar;
use cuzk_synth::{CompiledR1cs, ProvingAssignment};

/// Two ways to a circuit's witness, each on one thread for its CPU time (printed): `ours` and
/// the `reference` it must equal, value for value.
pub fn same_witness_on_one_thread(
    what: &str,
    ours: &(dyn Fn() -> ProvingAssignment + Sync),
    reference: &(dyn Fn() -> ProvingAssignment + Sync),
) {
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let timed = |witness: &(dyn Fn() -> ProvingAssignment + Sync)| {
        let start = Instant::now();
        let assignment = one_thread.install(witness);
        (assignment, start.elapsed().as_secs_f64())
    };
    let (ours, ours_s) = timed(ours);
    let (theirs, theirs_s) = timed(reference);
    eprintln!(
        "{what} witness on one thread: re-implemented (native SHA-256 and Poseidon) {ours_s:.2} s, \
         the reference {theirs_s:.2} s"
    );
    assert!(ours == theirs, "{what}: the witnesses differ");
}

/// `proof`'s compiled R1CS as `compiled_r1cs` records it into an empty directory (side by side)
/// equals `whole`'s recording, the blank circuit's in one run.
pub fn recorded_as_whole<C: Circuit<Scalar>>(
    proof: impl Into<CircuitId> + Display + Copy,
    whole: C,
) {
    let dir = tempfile::tempdir().unwrap();
    let files = ParamFiles::new(dir.path(), proof).unwrap();
    let start = Instant::now();
    let (sectioned, origin) = compiled_r1cs(&files).unwrap();
    let sectioned_s = start.elapsed().as_secs_f64();
    assert!(matches!(origin, R1csOrigin::Recorded), "{origin:?}");
    let start = Instant::now();
    let whole = CompiledR1cs::record(whole).unwrap();
    eprintln!(
        "recording the {proof} R1CS: the blank circuit whole {:.2} s, side by side \
         {sectioned_s:.2} s (sampling included)",
        start.elapsed().as_secs_f64()
    );
    assert_eq!(*sectioned, whole, "{proof}");
}
