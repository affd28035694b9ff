//! The proof: A and C in G1, B in G2, 192 bytes compressed (bellperson's `Proof::write`).

use cuzk_math::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::GroupEncoding;

use crate::ProofError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    pub a: G1Affine,
    pub b: G2Affine,
    pub c: G1Affine,
}

impl Proof {
    /// Bytes of one proof.
    pub const SIZE: usize = 48 + 96 + 48;

    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..48].copy_from_slice(self.a.to_bytes().as_ref());
        out[48..144].copy_from_slice(self.b.to_bytes().as_ref());
        out[144..].copy_from_slice(self.c.to_bytes().as_ref());
        out
    }

    /// Parses one proof, with the curve and subgroup checks; identities are refused like bellperson.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ProofError> {
        if bytes.len() != Self::SIZE {
            return Err(ProofError::Length {
                expected: Self::SIZE,
                got: bytes.len(),
            });
        }
        Ok(Proof {
            a: decode(&bytes[..48], "a")?,
            b: decode(&bytes[48..144], "b")?,
            c: decode(&bytes[144..], "c")?,
        })
    }

    /// Parses concatenated proofs (a multi-partition proof).
    pub fn many_from_bytes(bytes: &[u8]) -> Result<Vec<Self>, ProofError> {
        if bytes.is_empty() || !bytes.len().is_multiple_of(Self::SIZE) {
            return Err(ProofError::NotWholeProofs { got: bytes.len() });
        }
        bytes
            .chunks_exact(Self::SIZE)
            .map(Self::from_bytes)
            .collect()
    }
}

fn decode<P: GroupEncoding + PrimeCurveAffine>(
    bytes: &[u8],
    field: &'static str,
) -> Result<P, ProofError> {
    let invalid = ProofError::InvalidPoint {
        field,
        group: if bytes.len() == 48 { "G1" } else { "G2" },
    };
    let mut repr = P::Repr::default();
    repr.as_mut().copy_from_slice(bytes);
    let point = Option::<P>::from(P::from_bytes(&repr)).ok_or_else(|| invalid.clone())?;
    if bool::from(point.is_identity()) {
        return Err(invalid);
    }
    Ok(point)
}
