//! The proving assignment and the recorded shape describe the same R1CS, and the synthetic circuit
//! is satisfiable, deterministic and as boolean as asked.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test or bench should stop loudly

use cuzk_math::Scalar;
use cuzk_synth::circuits::SyntheticCircuit;
use cuzk_synth::{Column, ProvingAssignment, R1csShape, Term};
use ff::Field;

fn circuit(constraints: usize, boolean_fraction: f64, seed: u64) -> SyntheticCircuit {
    SyntheticCircuit {
        constraints,
        boolean_fraction,
        public_inputs: 4,
        seed,
    }
}

/// M·z per row, from the recorded matrix.
fn multiply(terms: &[Term], rows: usize, assignment: &ProvingAssignment) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; rows];
    for term in terms {
        let value = match term.column {
            Column::Input(i) => assignment.input_assignment[i as usize],
            Column::Aux(i) => assignment.aux_assignment[i as usize],
        };
        out[term.row as usize] += term.coeff * value;
    }
    out
}

#[test]
fn assignment_and_shape_agree_and_the_circuit_is_satisfied() {
    let seed = cuzk_testkit::seed("assignment_and_shape_agree");
    for fraction in [0.0, 0.5, 0.9, 1.0] {
        let c = circuit(2000, fraction, seed);
        let assignment = ProvingAssignment::synthesize(c.clone()).expect("synthesis");
        let shape = R1csShape::record(c.clone()).expect("shape");

        assert_eq!(shape.num_inputs, assignment.input_assignment.len());
        assert_eq!(shape.num_aux, assignment.aux_assignment.len());
        assert_eq!(shape.num_rows, assignment.num_rows());
        assert_eq!(
            shape.num_rows,
            2000 + 5,
            "constraints plus one row per input"
        );
        assert_eq!(assignment.input_assignment[0], Scalar::ONE);
        assert_eq!(
            &assignment.input_assignment[1..],
            &c.public_input_values()[..]
        );

        assert_eq!(
            multiply(&shape.a, shape.num_rows, &assignment),
            assignment.a
        );
        assert_eq!(
            multiply(&shape.b, shape.num_rows, &assignment),
            assignment.b
        );
        assert_eq!(
            multiply(&shape.c, shape.num_rows, &assignment),
            assignment.c
        );
        for row in 0..assignment.num_rows() {
            assert_eq!(
                assignment.a[row] * assignment.b[row],
                assignment.c[row],
                "row {row}"
            );
        }

        // Densities: exactly the columns with a non-zero coefficient.
        let mut a_aux = vec![false; shape.num_aux];
        let (mut b_inputs, mut b_aux) = (vec![false; shape.num_inputs], vec![false; shape.num_aux]);
        for term in shape.a.iter().filter(|t| !bool::from(t.coeff.is_zero())) {
            if let Column::Aux(i) = term.column {
                a_aux[i as usize] = true;
            }
        }
        for term in shape.b.iter().filter(|t| !bool::from(t.coeff.is_zero())) {
            match term.column {
                Column::Input(i) => b_inputs[i as usize] = true,
                Column::Aux(i) => b_aux[i as usize] = true,
            }
        }
        let bits = |b: &cuzk_math::Bitmap| (0..b.len()).map(|i| b.get(i)).collect::<Vec<_>>();
        assert_eq!(bits(&assignment.a_aux_density), a_aux);
        assert_eq!(bits(&assignment.b_input_density), b_inputs);
        assert_eq!(bits(&assignment.b_aux_density), b_aux);

        let booleans = assignment
            .aux_assignment
            .iter()
            .filter(|x| **x == Scalar::ZERO || **x == Scalar::ONE)
            .count() as f64
            / assignment.aux_assignment.len() as f64;
        assert!(
            (booleans - fraction).abs() < 0.05,
            "fraction {fraction}: {booleans} boolean"
        );
    }
}

#[test]
fn synthetic_circuits_are_deterministic_in_their_seed() {
    let seed = cuzk_testkit::seed("deterministic");
    let a = ProvingAssignment::synthesize(circuit(500, 0.5, seed)).expect("synthesis");
    let b = ProvingAssignment::synthesize(circuit(500, 0.5, seed)).expect("synthesis");
    let c =
        ProvingAssignment::synthesize(circuit(500, 0.5, seed.wrapping_add(1))).expect("synthesis");
    assert_eq!(a, b);
    assert_ne!(a.aux_assignment, c.aux_assignment);
}

#[test]
fn a_circuit_with_no_constraints_still_has_its_input_rows() {
    let assignment = ProvingAssignment::synthesize(SyntheticCircuit {
        constraints: 0,
        boolean_fraction: 0.0,
        public_inputs: 0,
        seed: 0,
    })
    .expect("synthesis");
    assert_eq!(assignment.input_assignment, vec![Scalar::ONE]);
    assert_eq!(assignment.a, vec![Scalar::ONE]);
    assert_eq!(assignment.b, vec![Scalar::ZERO]);
}
