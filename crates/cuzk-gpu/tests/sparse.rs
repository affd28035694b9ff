//! Sparse products on the device equal the same sums on the host, on fresh random matrices with
//! the shapes R1CS rows have (empty rows, single terms, long packing rows, mostly-bit vectors),
//! with the matrices on the device and streamed from host memory in chunks (rows longer than a
//! chunk included), and bad matrices are refused by name.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed test should stop loudly

mod common;

use blstrs::Scalar;
use cuzk_gpu::sparse::{lock_in_host, ChunkLimit, DeviceSparse, SparseRows, StreamedSparse};
use cuzk_gpu::{DeviceScalars, GpuError};
use ff::Field;
use rand_core::RngCore;

/// A matrix of `rows` rows over `columns` columns and `table` coefficients, in compressed rows.
#[derive(Clone)]
struct Matrix {
    starts: Vec<u32>,
    columns: Vec<u32>,
    coeffs: Vec<u32>,
}

impl Matrix {
    fn random(rng: &mut impl RngCore, rows: usize, columns: usize, table: usize) -> Self {
        let mut m = Matrix {
            starts: vec![0],
            columns: Vec::new(),
            coeffs: Vec::new(),
        };
        for _ in 0..rows {
            let len = match rng.next_u32() % 16 {
                0..=2 => 0,
                3..=8 => 1,
                9..=13 => 2 + rng.next_u32() as usize % 3,
                14 => 30 + rng.next_u32() as usize % 30,
                _ => 255 + rng.next_u32() as usize % 3,
            };
            for _ in 0..len {
                m.columns.push(rng.next_u32() % columns as u32);
                // Half the entries with coefficient one, as in bit-heavy circuits.
                let coeff = if rng.next_u32().is_multiple_of(2) {
                    0
                } else {
                    rng.next_u32() % table as u32
                };
                m.coeffs.push(coeff);
            }
            m.starts.push(m.columns.len() as u32);
        }
        m
    }

    fn rows(&self) -> SparseRows<'_> {
        SparseRows {
            starts: &self.starts,
            columns: &self.columns,
            coeffs: &self.coeffs,
        }
    }

    fn times(&self, table: &[Scalar], z: &[Scalar]) -> Vec<Scalar> {
        self.starts
            .windows(2)
            .map(|w| {
                (w[0] as usize..w[1] as usize)
                    .map(|e| table[self.coeffs[e] as usize] * z[self.columns[e] as usize])
                    .sum()
            })
            .collect()
    }
}

/// Mostly zeros and ones, as a hash circuit's witness is, and some field elements.
fn witness(rng: &mut impl RngCore, len: usize) -> Vec<Scalar> {
    (0..len)
        .map(|_| match rng.next_u32() % 8 {
            0..=2 => Scalar::ZERO,
            3..=5 => Scalar::ONE,
            _ => Scalar::random(&mut *rng),
        })
        .collect()
}

#[test]
fn device_products_equal_host_sums() {
    let Some(gpu) = common::gpu("device_products_equal_host_sums") else {
        return;
    };
    let mut rng = common::rng("sparse products");
    let max_rows = 1usize << common::max_log().min(20);
    for (rows, columns, table_len) in [
        (1, 1, 1),
        (7, 3, 2),
        (1000, 600, 9),
        (max_rows, max_rows, 40),
    ] {
        let mut table: Vec<Scalar> = (0..table_len).map(|_| Scalar::random(&mut rng)).collect();
        table[0] = Scalar::ONE;
        let matrices: Vec<Matrix> = (0..3)
            .map(|_| Matrix::random(&mut rng, rows, columns, table_len))
            .collect();
        let views: Vec<SparseRows<'_>> = matrices.iter().map(Matrix::rows).collect();
        let sparse = DeviceSparse::upload(&gpu, &table, &views, columns).unwrap();
        // Streamed in chunks of a few rows (the long rows alone), and of the default size; from
        // page-locked memory where the driver locks it (small vectors may share pages, which it
        // refuses to lock twice), the products the same either way.
        let _locked = lock_in_host(&gpu, &views);
        let small = ChunkLimit {
            entries: 64,
            rows: 16,
        };
        let streamed = [small, ChunkLimit::DEFAULT]
            .map(|limit| StreamedSparse::new(&gpu, &table, &views, columns, limit).unwrap());
        let z = witness(&mut rng, columns);
        let device_z = DeviceScalars::upload(&gpu, &z).unwrap();
        for (m, matrix) in matrices.iter().enumerate() {
            let mut want = matrix.times(&table, &z);
            want.resize(rows + 5, Scalar::ZERO);
            // Room past the rows stays zero, as the NTT's padding needs.
            let mut out = DeviceScalars::zeros(&gpu, rows + 5).unwrap();
            sparse.multiply(&gpu, m, &device_z, &mut out).unwrap();
            assert!(
                out.to_vec(&gpu).unwrap() == want,
                "{rows} rows, matrix {m}: products differ"
            );
            for (s, limit) in streamed.iter().zip([small, ChunkLimit::DEFAULT]) {
                let mut out = DeviceScalars::zeros(&gpu, rows + 5).unwrap();
                s.multiply(&gpu, m, views[m], &device_z, &mut out).unwrap();
                assert!(
                    out.to_vec(&gpu).unwrap() == want,
                    "{rows} rows, matrix {m}, streamed in chunks of {limit:?}: products differ"
                );
            }
        }
        // A streamed product reads only the memory that was checked.
        let other = matrices[1].clone();
        let mut out = DeviceScalars::zeros(&gpu, rows).unwrap();
        let refused = streamed[0].multiply(&gpu, 0, other.rows(), &device_z, &mut out);
        assert!(
            matches!(refused, Err(GpuError::InvalidInput { ref reason, .. }) if reason.contains("not the memory")),
            "{refused:?}"
        );
    }
}

#[test]
fn bad_matrices_and_vectors_are_refused_by_name() {
    let Some(gpu) = common::gpu("bad_matrices_and_vectors_are_refused_by_name") else {
        return;
    };
    let table = [Scalar::ONE, Scalar::from(5)];
    let good = Matrix {
        starts: vec![0, 1, 3],
        columns: vec![0, 1, 2],
        coeffs: vec![0, 1, 1],
    };
    let reason = |result: Result<DeviceSparse, GpuError>| match result {
        Err(GpuError::InvalidInput { reason, .. }) => reason,
        other => panic!("not refused: {other:?}"),
    };
    let wide = Matrix {
        columns: vec![0, 1, 3],
        ..good.clone()
    };
    assert!(reason(DeviceSparse::upload(&gpu, &table, &[wide.rows()], 3)).contains("column 3"));
    let far = Matrix {
        coeffs: vec![0, 2, 1],
        ..good.clone()
    };
    assert!(reason(DeviceSparse::upload(&gpu, &table, &[far.rows()], 3)).contains("coefficient 2"));
    let unordered = Matrix {
        starts: vec![0, 3, 2],
        ..good.clone()
    };
    assert!(
        reason(DeviceSparse::upload(&gpu, &table, &[unordered.rows()], 3))
            .contains("running count")
    );
    let no_one = [Scalar::from(5)];
    assert!(reason(DeviceSparse::upload(&gpu, &no_one, &[good.rows()], 3)).contains("one"));

    let sparse = DeviceSparse::upload(&gpu, &table, &[good.rows()], 3).unwrap();
    let short_z = DeviceScalars::zeros(&gpu, 2).unwrap();
    let mut out = DeviceScalars::zeros(&gpu, 2).unwrap();
    assert!(matches!(
        sparse.multiply(&gpu, 0, &short_z, &mut out),
        Err(GpuError::InvalidInput { .. })
    ));
    let z = DeviceScalars::zeros(&gpu, 3).unwrap();
    let mut short_out = DeviceScalars::zeros(&gpu, 1).unwrap();
    assert!(matches!(
        sparse.multiply(&gpu, 0, &z, &mut short_out),
        Err(GpuError::InvalidInput { .. })
    ));
    assert!(matches!(
        sparse.multiply(&gpu, 1, &z, &mut out),
        Err(GpuError::InvalidInput { .. })
    ));
}
