//! Unusable parameters and proofs give errors that name what is wrong, never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test or bench should stop loudly

mod common;

use common::{rng, synthetic, CubicCircuit};
use cuzk_groth16::backend::CpuBackend;
use cuzk_groth16::params_file::{ParamsHeader, PointCheck};
use cuzk_groth16::setup::generate_random_parameters;
use cuzk_groth16::{
    prove, verify_proof, Parameters, ParamsError, PreparedVerifyingKey, Proof, ProofError,
    ProveError, VerifyError, VerifyingKey,
};
use cuzk_math::Scalar;
use ff::Field;

fn small_params(rng: &mut impl rand_core::RngCore) -> Parameters {
    generate_random_parameters(CubicCircuit { x: Scalar::ONE }, rng).expect("setup")
}

#[test]
fn every_truncation_of_a_params_file_is_an_error_naming_the_field() {
    let mut rng = rng("truncation");
    let bytes = small_params(&mut rng).to_bytes();
    for len in 0..bytes.len() {
        match Parameters::from_bytes(&bytes[..len], PointCheck::Unchecked, "p.params") {
            Err(ParamsError::Truncated { file, field, .. }) => {
                assert_eq!(file, "p.params");
                assert!(!field.is_empty());
            }
            other => panic!("truncated at {len}: expected Truncated, got {other:?}"),
        }
    }
    let message = Parameters::from_bytes(&bytes[..500], PointCheck::Checked, "p.params")
        .expect_err("truncated")
        .to_string();
    assert!(
        message.contains("p.params") && message.contains("vk.gamma_g2"),
        "{message}"
    );
}

#[test]
fn corrupted_points_are_rejected_when_checked() {
    let mut rng = rng("corruption");
    let params = small_params(&mut rng);
    let bytes = params.to_bytes();
    let vk_len = 3 * 96 + 3 * 192 + 4 + 96 * params.vk.ic.len();
    // Flip a coordinate bit of h[0]: almost surely off the curve.
    let mut corrupt = bytes.clone();
    corrupt[vk_len + 4 + 50] ^= 0x01;
    let err =
        Parameters::from_bytes(&corrupt, PointCheck::Checked, "c.params").expect_err("corrupt");
    match &err {
        ParamsError::InvalidPoint { field, group, .. } => {
            assert_eq!(field, "h[0]");
            assert_eq!(*group, "G1");
        }
        other => panic!("expected InvalidPoint, got {other:?}"),
    }
    assert!(err.to_string().contains("c.params"));

    // The point at infinity (infinity flag set, rest zero) is refused in any mode, as in bellperson.
    let mut infinity = bytes.clone();
    infinity[vk_len + 4..vk_len + 4 + 96].fill(0);
    infinity[vk_len + 4] = 0x40;
    for check in [PointCheck::Checked, PointCheck::Unchecked] {
        let err = Parameters::from_bytes(&infinity, check, "i.params").expect_err("identity");
        assert!(err.to_string().contains("point at infinity"), "{err}");
    }

    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(matches!(
        Parameters::from_bytes(&trailing, PointCheck::Checked, "t.params"),
        Err(ParamsError::TrailingBytes { extra: 1, .. })
    ));
}

#[test]
fn files_are_read_through_mmap_and_missing_files_are_named() {
    let mut rng = rng("mmap");
    let params = small_params(&mut rng);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cubic.params");
    params.write_file(&path).expect("write");
    assert_eq!(
        Parameters::read_file(&path, PointCheck::Checked).expect("read"),
        params
    );
    assert_eq!(
        Parameters::read(
            std::fs::File::open(&path).expect("open"),
            PointCheck::Unchecked,
            "stream"
        )
        .expect("read"),
        params
    );
    assert_eq!(
        VerifyingKey::read_params_file(&path).expect("vk"),
        params.vk
    );
    // The header alone says what the points will take, and refuses what the full read refuses.
    let header = ParamsHeader::read_file(&path).expect("header");
    assert_eq!(header, ParamsHeader::of(&params));
    assert_eq!(
        header.file_bytes,
        std::fs::metadata(&path).expect("size").len()
    );
    let mut bytes = params.to_bytes();
    bytes.push(0);
    let longer = dir.path().join("longer.params");
    std::fs::write(&longer, &bytes).expect("write");
    assert!(matches!(
        ParamsHeader::read_file(&longer),
        Err(ParamsError::TrailingBytes { extra: 1, .. })
    ));
    bytes.truncate(bytes.len() - 97);
    std::fs::write(&longer, &bytes).expect("write");
    assert!(matches!(
        ParamsHeader::read_file(&longer),
        Err(ParamsError::Truncated { .. })
    ));
    std::fs::remove_file(&longer).expect("remove");
    let only_file: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert_eq!(only_file.len(), 1, "no temporary file left behind");

    let missing = dir.path().join("missing.params");
    let err = Parameters::read_file(&missing, PointCheck::Checked).expect_err("missing");
    assert!(err.to_string().contains("missing.params"), "{err}");
}

#[test]
fn malformed_proofs_are_rejected() {
    assert_eq!(
        Proof::from_bytes(&[0u8; 191]),
        Err(ProofError::Length {
            expected: 192,
            got: 191
        })
    );
    assert!(matches!(
        Proof::from_bytes(&[0u8; 192]),
        Err(ProofError::InvalidPoint { field: "a", .. })
    ));
    assert!(Proof::many_from_bytes(&[]).is_err());
    assert!(Proof::many_from_bytes(&[0u8; 200]).is_err());
}

#[test]
fn params_of_another_circuit_are_refused_before_proving() {
    let mut rng = rng("mismatch");
    let params = generate_random_parameters(synthetic(100, 0.5, 1), &mut rng).expect("setup");
    for other in [synthetic(101, 0.5, 1), synthetic(5000, 0.5, 1)] {
        match prove(&CpuBackend, &params, other, &mut rng) {
            Err(ProveError::ParamsMismatch { .. }) => {}
            other => panic!("expected ParamsMismatch, got {other:?}"),
        }
    }
    let pvk = PreparedVerifyingKey::new(&params.vk);
    let proof = prove(&CpuBackend, &params, synthetic(100, 0.5, 1), &mut rng).expect("prove");
    assert_eq!(
        verify_proof(&pvk, &proof, &[Scalar::ONE]),
        Err(VerifyError::InputCount {
            expected: 3,
            got: 1
        })
    );
}
