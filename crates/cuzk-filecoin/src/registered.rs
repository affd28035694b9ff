//! Every registered proof cuzk knows, in one table: what it proves, its number (on chain and in
//! the cuzk.v1 `registered_proof` field) and its name (a C1 output's `registered_proof`, request
//! files). Seal, PoSt and update proofs are numbered each from 0, and seal and update proofs share
//! names, so every lookup is within one kind ([`RegisteredProof`]). Adding a proof is adding its
//! row.

use crate::{
    CircuitId, FilecoinError, PostKind, PostProof, Revision, SealProof, SectorSize, UpdateProof,
};
use PostKind::{Window, WindowV1, Winning};
use Revision::{NonInteractive, Synthetic, V1, V1_1};
use SectorSize::{S2KiB, S32GiB, S512MiB, S64GiB, S8MiB};

/// One row of [`REGISTERED`].
#[derive(Debug)]
struct Registration {
    proof: CircuitId,
    number: u64,
    name: &'static str,
}

const fn seal(
    revision: Revision,
    size: SectorSize,
    number: u64,
    name: &'static str,
) -> Registration {
    Registration {
        proof: CircuitId::Seal(SealProof { size, revision }),
        number,
        name,
    }
}

const fn post(kind: PostKind, size: SectorSize, number: u64, name: &'static str) -> Registration {
    Registration {
        proof: CircuitId::Post(PostProof { kind, size }),
        number,
        name,
    }
}

const fn update(size: SectorSize, number: u64, name: &'static str) -> Registration {
    Registration {
        proof: CircuitId::Update(UpdateProof { size }),
        number,
        name,
    }
}

/// filecoin-proofs-api's `RegisteredSealProof`, `RegisteredPoStProof` and `RegisteredUpdateProof`
/// (one row a line, unwrapped by rustfmt, so that the table reads as one).
#[rustfmt::skip]
static REGISTERED: [Registration; 40] = [
    seal(V1, S2KiB, 0, "StackedDrg2KiBV1"),
    seal(V1, S8MiB, 1, "StackedDrg8MiBV1"),
    seal(V1, S512MiB, 2, "StackedDrg512MiBV1"),
    seal(V1, S32GiB, 3, "StackedDrg32GiBV1"),
    seal(V1, S64GiB, 4, "StackedDrg64GiBV1"),
    seal(V1_1, S2KiB, 5, "StackedDrg2KiBV1_1"),
    seal(V1_1, S8MiB, 6, "StackedDrg8MiBV1_1"),
    seal(V1_1, S512MiB, 7, "StackedDrg512MiBV1_1"),
    seal(V1_1, S32GiB, 8, "StackedDrg32GiBV1_1"),
    seal(V1_1, S64GiB, 9, "StackedDrg64GiBV1_1"),
    seal(Synthetic, S2KiB, 10, "StackedDrg2KiBV1_1_Feat_SyntheticPoRep"),
    seal(Synthetic, S8MiB, 11, "StackedDrg8MiBV1_1_Feat_SyntheticPoRep"),
    seal(Synthetic, S512MiB, 12, "StackedDrg512MiBV1_1_Feat_SyntheticPoRep"),
    seal(Synthetic, S32GiB, 13, "StackedDrg32GiBV1_1_Feat_SyntheticPoRep"),
    seal(Synthetic, S64GiB, 14, "StackedDrg64GiBV1_1_Feat_SyntheticPoRep"),
    seal(NonInteractive, S2KiB, 15, "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep"),
    seal(NonInteractive, S8MiB, 16, "StackedDrg8MiBV1_2_Feat_NonInteractivePoRep"),
    seal(NonInteractive, S512MiB, 17, "StackedDrg512MiBV1_2_Feat_NonInteractivePoRep"),
    seal(NonInteractive, S32GiB, 18, "StackedDrg32GiBV1_2_Feat_NonInteractivePoRep"),
    seal(NonInteractive, S64GiB, 19, "StackedDrg64GiBV1_2_Feat_NonInteractivePoRep"),
    post(Winning, S2KiB, 0, "StackedDrgWinning2KiBV1"),
    post(Winning, S8MiB, 1, "StackedDrgWinning8MiBV1"),
    post(Winning, S512MiB, 2, "StackedDrgWinning512MiBV1"),
    post(Winning, S32GiB, 3, "StackedDrgWinning32GiBV1"),
    post(Winning, S64GiB, 4, "StackedDrgWinning64GiBV1"),
    post(WindowV1, S2KiB, 5, "StackedDrgWindow2KiBV1"),
    post(WindowV1, S8MiB, 6, "StackedDrgWindow8MiBV1"),
    post(WindowV1, S512MiB, 7, "StackedDrgWindow512MiBV1"),
    post(WindowV1, S32GiB, 8, "StackedDrgWindow32GiBV1"),
    post(WindowV1, S64GiB, 9, "StackedDrgWindow64GiBV1"),
    post(Window, S2KiB, 10, "StackedDrgWindow2KiBV1_1"),
    post(Window, S8MiB, 11, "StackedDrgWindow8MiBV1_1"),
    post(Window, S512MiB, 12, "StackedDrgWindow512MiBV1_1"),
    post(Window, S32GiB, 13, "StackedDrgWindow32GiBV1_1"),
    post(Window, S64GiB, 14, "StackedDrgWindow64GiBV1_1"),
    update(S2KiB, 0, "StackedDrg2KiBV1"),
    update(S8MiB, 1, "StackedDrg8MiBV1"),
    update(S512MiB, 2, "StackedDrg512MiBV1"),
    update(S32GiB, 3, "StackedDrg32GiBV1"),
    update(S64GiB, 4, "StackedDrg64GiBV1"),
];

impl CircuitId {
    /// Its registered number within its kind (`RegisteredSealProof` …).
    pub fn number(self) -> u64 {
        self.registration().number
    }

    /// Its registered name (`StackedDrg32GiBV1_1`, `StackedDrgWindow32GiBV1_1` …).
    pub fn name(self) -> &'static str {
        self.registration().name
    }

    /// Its row. Every seal, PoSt and update proof has one (`every_proof_has_one_row` enumerates
    /// them), so the miss cannot happen.
    fn registration(self) -> &'static Registration {
        REGISTERED
            .iter()
            .find(|row| row.proof == self)
            .unwrap_or_else(|| unreachable!("{self:?} has no row in REGISTERED"))
    }
}

/// A kind of registered proof ([`SealProof`], [`PostProof`], [`UpdateProof`]): its numbers and
/// names, looked up in the one table of registered proofs.
pub trait RegisteredProof: Copy + Into<CircuitId> {
    /// The kind, as errors name it: "seal", "PoSt", "update".
    const KIND: &'static str;
    /// The error for text that names no proof of this kind (it quotes the text).
    const UNKNOWN: fn(String) -> FilecoinError;

    /// `circuit`, if it is a proof of this kind.
    fn of_kind(circuit: CircuitId) -> Option<Self>;

    /// The proof of this kind with this number, if there is one.
    fn from_number(number: u64) -> Option<Self> {
        of_kind::<Self>().find_map(|(proof, row)| (row.number == number).then_some(proof))
    }

    /// The proof of this kind with this name.
    fn from_name(name: &str) -> Result<Self, FilecoinError> {
        of_kind::<Self>()
            .find_map(|(proof, row)| (row.name == name).then_some(proof))
            .ok_or_else(|| Self::UNKNOWN(name.to_owned()))
    }

    /// Its number on chain and in cuzk.v1 requests.
    fn number(self) -> u64 {
        self.into().number()
    }

    /// Its name on chain.
    fn name(self) -> &'static str {
        self.into().name()
    }

    /// The numbers of this kind's proofs that `keep`, as "first–last" (what errors list).
    fn numbers(keep: impl Fn(Self) -> bool) -> String {
        let numbers = || {
            of_kind::<Self>()
                .filter(|(proof, _)| keep(*proof))
                .map(|(_, row)| row.number)
        };
        match (numbers().min(), numbers().max()) {
            (Some(first), Some(last)) => format!("{first}–{last}"),
            _ => "none".to_owned(),
        }
    }
}

/// The rows of proofs of kind `P`.
fn of_kind<P: RegisteredProof>() -> impl Iterator<Item = (P, &'static Registration)> {
    REGISTERED
        .iter()
        .filter_map(|row| Some((P::of_kind(row.proof)?, row)))
}

impl RegisteredProof for SealProof {
    const KIND: &'static str = "seal";
    const UNKNOWN: fn(String) -> FilecoinError = FilecoinError::UnknownSealProof;

    fn of_kind(circuit: CircuitId) -> Option<Self> {
        match circuit {
            CircuitId::Seal(proof) => Some(proof),
            _ => None,
        }
    }
}

impl RegisteredProof for PostProof {
    const KIND: &'static str = "PoSt";
    const UNKNOWN: fn(String) -> FilecoinError = FilecoinError::UnknownPostProof;

    fn of_kind(circuit: CircuitId) -> Option<Self> {
        match circuit {
            CircuitId::Post(proof) => Some(proof),
            _ => None,
        }
    }
}

impl RegisteredProof for UpdateProof {
    const KIND: &'static str = "update";
    const UNKNOWN: fn(String) -> FilecoinError = FilecoinError::UnknownUpdateProof;

    fn of_kind(circuit: CircuitId) -> Option<Self> {
        match circuit {
            CircuitId::Update(proof) => Some(proof),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::HashSet;

    use super::*;
    use crate::SECTOR_SIZES;

    /// Every seal, PoSt and update proof the types can express.
    fn every_proof() -> Vec<CircuitId> {
        SECTOR_SIZES
            .into_iter()
            .flat_map(|size| {
                let seals = [V1, V1_1, Synthetic, NonInteractive]
                    .map(|revision| CircuitId::Seal(SealProof { size, revision }));
                let posts = [Winning, WindowV1, Window]
                    .map(|kind| CircuitId::Post(PostProof { kind, size }));
                seals
                    .into_iter()
                    .chain(posts)
                    .chain([CircuitId::Update(UpdateProof { size })])
            })
            .collect()
    }

    /// What errors list: every kind numbered from 0 without gaps, PoSt's two kinds apart.
    #[test]
    fn number_ranges_are_read_from_the_table() {
        assert_eq!(SealProof::numbers(|_| true), "0–19");
        assert_eq!(UpdateProof::numbers(|_| true), "0–4");
        assert_eq!(PostProof::numbers(|p| p.kind == Winning), "0–4");
        assert_eq!(PostProof::numbers(|p| p.kind != Winning), "5–14");
        assert_eq!(SealProof::numbers(|_| false), "none");
    }

    #[test]
    fn every_proof_has_one_row() {
        let proofs = every_proof();
        assert_eq!(proofs.len(), REGISTERED.len());
        for proof in proofs {
            let rows = REGISTERED.iter().filter(|row| row.proof == proof).count();
            assert_eq!(rows, 1, "{proof:?}");
        }
    }

    #[test]
    fn numbers_and_names_are_unique_within_a_kind() {
        fn check<P: RegisteredProof>() {
            let rows: Vec<_> = of_kind::<P>().map(|(_, row)| row).collect();
            let numbers: HashSet<_> = rows.iter().map(|row| row.number).collect();
            let names: HashSet<_> = rows.iter().map(|row| row.name).collect();
            assert_eq!(numbers.len(), rows.len(), "{}", P::KIND);
            assert_eq!(names.len(), rows.len(), "{}", P::KIND);
            for row in rows {
                let proof = P::from_number(row.number).unwrap();
                assert_eq!(P::from_name(row.name).unwrap().number(), row.number);
                assert_eq!(proof.name(), row.name);
            }
        }
        check::<SealProof>();
        check::<PostProof>();
        check::<UpdateProof>();
    }

    #[test]
    fn unknown_names_are_quoted_in_the_error() {
        let error = PostProof::from_name("StackedDrgWinning64GiBV1_1").unwrap_err();
        assert!(error.to_string().contains("\"StackedDrgWinning64GiBV1_1\""));
        assert!(UpdateProof::from_name("StackedDrg2KiBV1_1").is_err());
    }
}
