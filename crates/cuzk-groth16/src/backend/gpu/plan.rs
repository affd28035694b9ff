//! What of a proof stays on the device and what streams, decided from sizes alone: per proof's
//! sizes and the device memory there is room for, so that a plan can be printed, reported and
//! tested without a device.
//!
//! In order of preference:
//! 1. every query resident with its window multiples (fewest additions), the five MSMs side by
//!    side with H's three vectors;
//! 2. every query resident, side by side;
//! 3. one step at a time: H from two vectors of the domain at once (a∘b, then c in b's place),
//!    then each MSM alone, reading the witness in place. The R1CS matrices stay on the
//!    device when they fit beside the largest step, else stream from host memory through two
//!    chunk buffers while the device multiplies them (a, b and c come from the host only where
//!    the witness does not fit beside H's two vectors), and the queries that fit beside that are
//!    resident, the cheapest to compute per byte first — L, A
//!    and B in G1 take mostly 0/1 scalars, so streaming their points would cost more than their
//!    sums, while H's dense scalars keep the device busy longer than its points take to arrive;
//!    the rest stream from page-locked host memory, their copies overlapping the sums.
//!
//! Anything else is refused with the bytes the smallest plan needs.

use cuzk_gpu::msm::{
    least_working_memory, multiples_working_memory, windows_of_width, working_memory, MsmAffine,
};
use cuzk_gpu::sparse::ChunkLimit;
use cuzk_math::{G1Affine, G2Affine, Scalar};

use crate::keys::QueryLengths;

/// The queries in the order plans list them.
pub const QUERIES: [&str; 5] = ["h", "l", "a", "b_g1", "b_g2"];
const H: usize = 0;
const L: usize = 1;
const A: usize = 2;
const B_G1: usize = 3;
const B_G2: usize = 4;
/// Which queries become resident first when not all can (see the module's doc).
const RESIDENT_FIRST: [usize; 5] = [L, A, B_G1, B_G2, H];

const SCALAR: usize = std::mem::size_of::<Scalar>();

/// What a plan is made for: one proof's sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProofSizes {
    pub log_n: u32,
    /// Variables: the public inputs, then aux.
    pub witness: usize,
    pub inputs: usize,
    /// Points per query (also the scalars each MSM takes).
    pub lengths: QueryLengths,
    /// The circuit's matrices when the device may compute a, b and c from the witness
    /// (synthesis left them to it); `None` when they come from the host.
    pub matrices: Option<MatrixBytes>,
}

impl ProofSizes {
    /// The sizes of a set's proofs from the set's alone (its file's header): the domain holds
    /// H's points and one more, the witness is the inputs and L's variables.
    pub fn ahead(inputs: usize, lengths: QueryLengths, matrices: Option<MatrixBytes>) -> Self {
        ProofSizes {
            log_n: (lengths.h + 1).next_power_of_two().ilog2(),
            witness: inputs + lengths.l,
            inputs,
            lengths,
            matrices,
        }
    }
}

/// Device bytes of a circuit's matrices, by where they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixBytes {
    /// All on the device.
    pub resident: usize,
    /// Streamed: the coefficient table and two chunk buffers.
    pub streamed: usize,
}

impl MatrixBytes {
    /// An estimate from the size of the compiled R1CS file, before it is read: the device keeps
    /// the matrices much as the file does (a column and a coefficient index per entry, the row
    /// starts, the coefficient table), and a streamed copy holds two chunk buffers (and the
    /// table, a few distinct coefficients).
    pub fn of_file(bytes: u64) -> Self {
        MatrixBytes {
            resident: usize::try_from(bytes).unwrap_or(usize::MAX),
            streamed: ChunkLimit::DEFAULT.buffer_bytes(),
        }
    }
}

/// Where a proof's a, b and c are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Products {
    /// On the device, from the matrices kept there.
    ResidentMatrices,
    /// On the device, the matrices streamed from host memory in chunks; the witness goes up
    /// before H and again after H's MSM, which gets its room meanwhile.
    StreamedMatrices,
    /// On the host, uploaded.
    Host,
}

/// Where one query's points are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On the device with their window multiples of this width.
    Multiples(u32),
    Resident,
    /// In host memory, copied through the MSM in chunks.
    Streamed,
}

/// The order of a proof's device work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// The five MSMs at once on lanes of their own, H's three vectors beside them.
    SideBySide,
    /// H from two vectors, then one MSM after another.
    OneAtATime,
}

/// A proof's use of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// By [`QUERIES`].
    pub queries: [Placement; 5],
    pub program: Program,
    pub products: Products,
    /// Device bytes of the resident points, window multiples included.
    pub resident_bytes: usize,
    /// Device bytes of the matrices as `products` keeps them: all of them, the streamed ones'
    /// table and chunk buffers, or none.
    pub matrix_bytes: usize,
    /// Device bytes of a proof's own buffers at its largest step.
    pub working_bytes: usize,
    /// Device bytes at the plan's peak: the resident points, the matrices if there, the gathers'
    /// positions, and the largest step's buffers.
    pub peak_bytes: usize,
}

/// No plan fits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "a proof of this circuit needs {needed} bytes of device memory at least (every query streamed \
     from host memory, one step at a time), {room} are there"
)]
pub struct Refused {
    pub needed: usize,
    pub room: usize,
}

impl Plan {
    /// The most preferred plan whose peak fits in `room` bytes and whose resident points and
    /// matrices take at most `resident_cap`; `multiples`: the window width to store multiples with, if the set
    /// may have them.
    pub fn new(
        sizes: &ProofSizes,
        room: usize,
        multiples: Option<u32>,
        resident_cap: usize,
    ) -> Result<Plan, Refused> {
        let fits = |plan: &Plan| plan.peak_bytes <= room && plan.kept_bytes() <= resident_cap;
        let all = |placement| [placement; 5];
        // In order of preference: matrices streamed cost a copy per product, the host's products
        // a third of synthesis and 12.9 GB more staged per 32 GiB partition.
        let products: &[Products] = match sizes.matrices {
            Some(_) => &[
                Products::ResidentMatrices,
                Products::StreamedMatrices,
                Products::Host,
            ],
            None => &[Products::Host],
        };
        let side_by_side = multiples
            .map(|bits| all(Placement::Multiples(bits)))
            .into_iter()
            .chain([all(Placement::Resident)])
            .map(|queries| Plan::of(sizes, queries, Program::SideBySide, products[0]));
        if let Some(plan) = side_by_side.into_iter().find(fits) {
            return Ok(plan);
        }
        let one_at_a_time = products.iter().find_map(|&products| {
            let mut plan = Plan::of(
                sizes,
                all(Placement::Streamed),
                Program::OneAtATime,
                products,
            );
            if !fits(&plan) {
                return None;
            }
            for q in RESIDENT_FIRST {
                let mut queries = plan.queries;
                queries[q] = Placement::Resident;
                let candidate = Plan::of(sizes, queries, Program::OneAtATime, products);
                if fits(&candidate) {
                    plan = candidate;
                }
            }
            Some(plan)
        });
        one_at_a_time.ok_or(Refused {
            needed: Plan::of(
                sizes,
                all(Placement::Streamed),
                Program::OneAtATime,
                Products::Host,
            )
            .peak_bytes,
            room,
        })
    }

    /// The plan of queries placed so, run as `program`, a, b and c made as `products` (from the
    /// host where the sizes have no matrices).
    pub fn of(
        sizes: &ProofSizes,
        queries: [Placement; 5],
        program: Program,
        products: Products,
    ) -> Plan {
        let products = match sizes.matrices {
            Some(_) => products,
            None => Products::Host,
        };
        let lengths = sizes.lengths;
        let points = [lengths.h, lengths.l, lengths.a, lengths.b_g1, lengths.b_g2];
        let resident_bytes = (0..5)
            .map(|q| stored_points(q, points[q], queries[q]))
            .sum();
        // Side by side, each MSM takes the passes it would alone, at once; one at a time, each
        // sizes its passes to what is free then, and needs only its least.
        let working = |q: usize| msm_working(q, points[q], queries[q], program);
        let n = 1usize << sizes.log_n;
        let matrices = match (products, sizes.matrices) {
            (Products::ResidentMatrices, Some(bytes)) => bytes.resident,
            (Products::StreamedMatrices, Some(bytes)) => bytes.streamed,
            _ => 0,
        };
        // The witness, which the MSMs read in place (A and B through their positions).
        let (w, a, b) = (sizes.witness, lengths.a, lengths.b_g1);
        let steps = match program {
            Program::SideBySide => SCALAR * (3 * n + w) + (0..5).map(working).sum::<usize>(),
            Program::OneAtATime => {
                // The products read the witness and the matrices; from the host, a, b, c arrive
                // one after another into two vectors. For the products the witness goes up
                // first, and stays through H's MSM with the matrices resident.
                let (witness_first, witness_kept) = match products {
                    Products::ResidentMatrices => (w, w),
                    Products::StreamedMatrices => (w, 0),
                    Products::Host => (0, 0),
                };
                let h_vectors = SCALAR * (2 * n + witness_first);
                let h_msm = SCALAR * (n + witness_kept) + working(H);
                let a_msm = SCALAR * w + working(A);
                let b_msm = SCALAR * w + working(B_G1).max(working(B_G2));
                let l_msm = SCALAR * w + working(L);
                h_vectors.max(h_msm).max(a_msm).max(b_msm).max(l_msm)
            }
        };
        // The positions A's and B's gathers read stay on the device with the circuit.
        let index = std::mem::size_of::<u32>() * (a + b);
        Plan {
            queries,
            program,
            products,
            resident_bytes,
            matrix_bytes: matrices,
            working_bytes: steps,
            peak_bytes: resident_bytes + matrices + index + steps,
        }
    }

    /// Device bytes kept between proofs: the resident points and resident matrices.
    pub fn kept_bytes(&self) -> usize {
        match self.products {
            Products::ResidentMatrices => self.resident_bytes + self.matrix_bytes,
            _ => self.resident_bytes,
        }
    }

    /// Whether every query is on the device.
    pub fn all_resident(&self) -> bool {
        !self.queries.contains(&Placement::Streamed)
    }

    /// One line for logs and reports, e.g. `one at a time; resident l a; streamed h b_g1 b_g2;
    /// products from streamed matrices; peak 15.2 GB`.
    pub fn summary(&self) -> String {
        let named = |keep: fn(&Placement) -> bool| -> Vec<&str> {
            (0..5)
                .filter(|&q| keep(&self.queries[q]))
                .map(|q| QUERIES[q])
                .collect()
        };
        let mut parts = vec![match self.program {
            Program::SideBySide => "side by side".to_owned(),
            Program::OneAtATime => "one at a time".to_owned(),
        }];
        if let Some(Placement::Multiples(bits)) = self.queries.first() {
            parts.push(format!("resident with {bits}-bit window multiples"));
        } else {
            let resident = named(|p| *p == Placement::Resident);
            let streamed = named(|p| *p == Placement::Streamed);
            if !resident.is_empty() {
                parts.push(format!("resident {}", resident.join(" ")));
            }
            if !streamed.is_empty() {
                parts.push(format!("streamed {}", streamed.join(" ")));
            }
        }
        parts.push(
            match self.products {
                Products::ResidentMatrices => "products from resident matrices",
                Products::StreamedMatrices => "products from streamed matrices",
                Products::Host => "products on host",
            }
            .to_owned(),
        );
        parts.push(format!("peak {:.1} GB", self.peak_bytes as f64 / 1e9));
        parts.join("; ")
    }
}

/// Device bytes query `q`'s `len` points take placed so.
fn stored_points(q: usize, len: usize, placement: Placement) -> usize {
    let point = match q {
        B_G2 => std::mem::size_of::<G2Affine>(),
        _ => std::mem::size_of::<G1Affine>(),
    };
    match placement {
        Placement::Multiples(bits) => len * point * windows_of_width(bits) as usize,
        Placement::Resident => len * point,
        Placement::Streamed => 0,
    }
}

/// Device bytes query `q`'s MSM over `len` points needs beyond its points and scalars: all its
/// passes want when side by side with the others, the least it runs in when alone.
fn msm_working(q: usize, len: usize, placement: Placement, program: Program) -> usize {
    fn of<A: MsmAffine>(len: usize, placement: Placement, program: Program) -> usize {
        match (program, placement) {
            (Program::SideBySide, Placement::Multiples(bits)) => {
                multiples_working_memory::<A>(len, len, bits)
            }
            (Program::SideBySide, Placement::Resident) => working_memory::<A>(len),
            (_, placement) => least_working_memory::<A>(len, placement == Placement::Streamed),
        }
    }
    match q {
        B_G2 => of::<G2Affine>(len, placement, program),
        _ => of::<G1Affine>(len, placement, program),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: usize = 1_000_000_000;
    const GIB: usize = 1 << 30;

    /// A PoRep partition's sizes at a sector size's domain: the witness about the domain's size,
    /// A over most variables, B over half (the proportions of filecoin's PoRep circuit).
    fn porep(log_n: u32, matrices: bool) -> ProofSizes {
        let n = 1usize << log_n;
        let witness = n - n / 32;
        let inputs = 20;
        ProofSizes {
            log_n,
            witness,
            inputs,
            lengths: QueryLengths {
                h: n - 1,
                l: witness - inputs,
                a: witness * 9 / 10,
                b_g1: witness / 2,
                b_g2: witness / 2,
            },
            // ~55 bytes of matrices per row, as the 32 GiB PoRep's 7.3 GB over 2^27 rows; streamed,
            // a table of a few thousand coefficients and the default chunks.
            matrices: matrices.then_some(MatrixBytes {
                resident: n * 55,
                streamed: 5000 * 32 + ChunkLimit::DEFAULT.buffer_bytes(),
            }),
        }
    }

    #[test]
    fn sizes_read_ahead_from_a_header_plan_as_the_proof_would() {
        for log_n in [11, 22, 27] {
            let sizes = porep(log_n, true);
            let ahead = ProofSizes::ahead(sizes.inputs, sizes.lengths, None);
            assert_eq!((ahead.log_n, ahead.witness), (log_n, sizes.witness));
        }
        // The matrices estimated from the compiled R1CS file: the same plans at 16 and 24 GiB
        // (products from streamed, then from resident matrices) as from their measured bytes.
        let sizes = porep(27, true);
        let file = MatrixBytes::of_file((sizes.lengths.h as u64 + 1) * 55);
        let ahead = ProofSizes::ahead(sizes.inputs, sizes.lengths, Some(file));
        for gib in [16, 24] {
            let plan = |sizes| Plan::new(sizes, gib * GIB, Some(20), usize::MAX).unwrap();
            assert_eq!(plan(&ahead).products, plan(&sizes).products, "{gib} GiB");
            assert_eq!(plan(&ahead).queries, plan(&sizes).queries, "{gib} GiB");
        }
    }

    #[test]
    fn a_large_device_keeps_everything_resident() {
        // 2^27 (32 GiB) on 139 GB: 55 GB of points resident with the matrices; the five MSMs'
        // passes at full size want more than the device has at once, so they run one by one.
        let plan = Plan::new(&porep(27, true), 139 * GB, Some(20), usize::MAX).unwrap();
        assert_eq!(plan.program, Program::OneAtATime);
        assert_eq!(plan.queries, [Placement::Resident; 5]);
        assert_eq!(plan.products, Products::ResidentMatrices);
        assert!(plan.peak_bytes <= 139 * GB);
        // 2^20 there: side by side with window multiples.
        let plan = Plan::new(&porep(20, true), 139 * GB, Some(19), usize::MAX).unwrap();
        assert_eq!(plan.program, Program::SideBySide);
        assert_eq!(plan.queries, [Placement::Multiples(19); 5]);
        // 2 KiB: side by side with window multiples on the smallest device.
        let plan = Plan::new(&porep(10, true), 12 * GIB, Some(19), usize::MAX).unwrap();
        assert_eq!(plan.queries, [Placement::Multiples(19); 5]);
        assert_eq!(plan.program, Program::SideBySide);
    }

    #[test]
    fn small_devices_stream_what_does_not_fit_and_keep_the_cheap_queries() {
        let sizes = porep(27, true);
        let mut previous = None;
        for gib in [12, 16, 24, 32, 48] {
            let room = gib * GIB;
            let plan = Plan::new(&sizes, room, Some(20), usize::MAX).unwrap();
            assert_eq!(plan.program, Program::OneAtATime, "{gib} GiB");
            assert!(plan.peak_bytes <= room, "{gib} GiB: {}", plan.summary());
            // Resident queries only ever join as memory grows.
            if let Some(smaller) = previous {
                assert!(
                    plan.resident_bytes >= smaller,
                    "{gib} GiB: {}",
                    plan.summary()
                );
            }
            previous = Some(plan.resident_bytes);
            // H, compute-bound, is the last to become resident.
            if plan.queries[H] == Placement::Resident {
                assert!(plan.all_resident(), "{gib} GiB: {}", plan.summary());
            }
        }
        let products = |gib| {
            let plan = Plan::new(&sizes, gib * GIB, Some(20), usize::MAX).unwrap();
            (plan.products, plan)
        };
        // 12 GiB holds not even the witness beside H's two vectors, nor any query.
        let (made, plan) = products(12);
        assert_eq!(made, Products::Host, "{}", plan.summary());
        assert_eq!(plan.queries, [Placement::Streamed; 5], "{}", plan.summary());
        // 16 GiB holds the witness beside them, not the matrices: they stream.
        let (made, plan) = products(16);
        assert_eq!(made, Products::StreamedMatrices, "{}", plan.summary());
        // 24 GiB keeps the matrices.
        let (made, plan) = products(24);
        assert_eq!(made, Products::ResidentMatrices, "{}", plan.summary());
    }

    #[test]
    fn sixty_four_gib_sectors_need_two_domain_vectors() {
        // 2^28: H's two vectors alone are 17.2 GB, so 24 GiB runs it and 16 GiB is refused.
        let plan = Plan::new(&porep(28, true), 24 * GIB, Some(20), usize::MAX).unwrap();
        assert_eq!(plan.program, Program::OneAtATime);
        assert!(plan.peak_bytes <= 24 * GIB, "{}", plan.summary());
        let refused = Plan::new(&porep(28, true), 16 * GIB, Some(20), usize::MAX).unwrap_err();
        assert!(refused.needed > (2 * 32) << 28, "{refused}");
    }

    #[test]
    fn too_little_memory_is_refused_with_what_is_needed() {
        let sizes = porep(27, true);
        let refused = Plan::new(&sizes, 6 * GIB, Some(20), usize::MAX).unwrap_err();
        assert_eq!(refused.room, 6 * GIB);
        // The smallest plan: two vectors of the domain (8.6 GB) or the witness with A's gather.
        assert!(refused.needed > 8 * GB, "{refused}");
        assert!(Plan::new(&sizes, refused.needed, None, usize::MAX).is_ok());
        assert!(Plan::new(&sizes, refused.needed - 1, None, usize::MAX).is_err());
        assert!(refused.to_string().contains("device memory"));
    }

    #[test]
    fn every_sector_size_to_32_gib_has_a_plan_on_twelve_gib() {
        // 2 KiB … 32 GiB: domains 2^10 … 2^27.
        for log_n in [10, 13, 17, 20, 23, 24, 26, 27] {
            for matrices in [true, false] {
                let sizes = porep(log_n, matrices);
                let plan = Plan::new(&sizes, 12 * GIB, Some(20), usize::MAX);
                assert!(plan.is_ok(), "2^{log_n}: {plan:?}");
            }
        }
    }

    #[test]
    fn a_resident_cap_streams_the_rest() {
        let sizes = porep(20, true);
        let none = Plan::new(&sizes, 139 * GB, Some(19), 0).unwrap();
        assert_eq!(none.queries, [Placement::Streamed; 5]);
        assert_eq!(
            (none.program, none.resident_bytes),
            (Program::OneAtATime, 0)
        );
        // No matrices either: they stream.
        assert_eq!(none.products, Products::StreamedMatrices);
        // Room for the matrices and L: the matrices stay first, then L.
        let matrices = sizes.matrices.map_or(0, |bytes| bytes.resident);
        let l_bytes = sizes.lengths.l * std::mem::size_of::<G1Affine>();
        let some = Plan::new(&sizes, 139 * GB, Some(19), matrices + l_bytes).unwrap();
        assert_eq!(some.queries[L], Placement::Resident, "{}", some.summary());
        assert_eq!(some.resident_bytes, l_bytes);
        assert_eq!(some.products, Products::ResidentMatrices);
    }

    #[test]
    fn the_gathers_positions_count_towards_the_peak() {
        // 0.65 GB at 2^27 (A over most variables, B over half): kept with the circuit.
        let sizes = porep(27, false);
        let plan = Plan::of(
            &sizes,
            [Placement::Streamed; 5],
            Program::OneAtATime,
            Products::Host,
        );
        let positions = 4 * (sizes.lengths.a + sizes.lengths.b_g1);
        assert_eq!(
            plan.peak_bytes,
            plan.resident_bytes + positions + plan.working_bytes
        );
    }

    #[test]
    fn summaries_name_each_part() {
        let plan = Plan::new(&porep(27, true), 16 * GIB, Some(20), usize::MAX).unwrap();
        let summary = plan.summary();
        assert!(summary.starts_with("one at a time"), "{summary}");
        assert!(
            summary.contains("streamed") && summary.contains("peak"),
            "{summary}"
        );
        assert!(
            summary.contains("products from streamed matrices"),
            "{summary}"
        );
    }
}
