//! Filecoin's registered seal proofs: the names the FFI writes into a C1 output, and the PoRep
//! configuration each stands for.
//!
//! A registered proof fixes the sector size, the API version and the features; its number (the
//! on-chain `RegisteredSealProof` value, see [`crate::RegisteredProof`]) is also its
//! `porep_id`, which the replica id and the circuit's parameter identifier depend on.

use std::fmt;
use std::str::FromStr;

use filecoin_proofs::PoRepConfig;
use storage_proofs_core::api_version::{ApiFeature, ApiVersion};

use crate::{FilecoinError, RegisteredProof};

/// The sector sizes filecoin-proofs supports for PoRep, smallest first.
pub const SECTOR_SIZES: [SectorSize; 5] = [
    SectorSize::S2KiB,
    SectorSize::S8MiB,
    SectorSize::S512MiB,
    SectorSize::S32GiB,
    SectorSize::S64GiB,
];

/// A PoRep sector size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SectorSize {
    S2KiB,
    S8MiB,
    S512MiB,
    S32GiB,
    S64GiB,
}

impl SectorSize {
    pub fn bytes(self) -> u64 {
        match self {
            SectorSize::S2KiB => 2 << 10,
            SectorSize::S8MiB => 8 << 20,
            SectorSize::S512MiB => 512 << 20,
            SectorSize::S32GiB => 32 << 30,
            SectorSize::S64GiB => 64 << 30,
        }
    }

    /// The name as registered proofs spell it: `2KiB`, `32GiB` ….
    pub fn name(self) -> &'static str {
        match self {
            SectorSize::S2KiB => "2KiB",
            SectorSize::S8MiB => "8MiB",
            SectorSize::S512MiB => "512MiB",
            SectorSize::S32GiB => "32GiB",
            SectorSize::S64GiB => "64GiB",
        }
    }

    /// The variant that wraps this size's vanilla proofs in the FFI's C1 output
    /// (`{"StackedDrg2KiBV1": [[…]]}`), whatever the proof's version.
    pub fn vanilla_variant(self) -> String {
        format!("StackedDrg{}V1", self.name())
    }
}

impl fmt::Display for SectorSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SectorSize {
    type Err = FilecoinError;

    /// Accepts `2KiB`, `2kib`, `2K` and the byte count `2048`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let lower = text.to_ascii_lowercase();
        SECTOR_SIZES
            .into_iter()
            .find(|size| {
                let name = size.name().to_ascii_lowercase();
                lower == name
                    || lower == name.trim_end_matches("ib")
                    || lower == size.bytes().to_string()
            })
            .ok_or_else(|| FilecoinError::UnknownSectorSize(text.to_owned()))
    }
}

/// The generations of the PoRep protocol, in the order their registered numbers were given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Revision {
    /// `V1`: the original challenge derivation (API 1.0).
    V1,
    /// `V1_1`: the current interactive PoRep (API 1.1).
    V1_1,
    /// `V1_1_Feat_SyntheticPoRep` (API 1.2).
    Synthetic,
    /// `V1_2_Feat_NonInteractivePoRep` (API 1.2): its proof is a SnarkPack aggregate.
    NonInteractive,
}

/// One registered seal proof, such as `StackedDrg2KiBV1_1`: its number and name are
/// [`RegisteredProof`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SealProof {
    pub size: SectorSize,
    pub revision: Revision,
}

impl SealProof {
    /// The interactive PoRep of today for `size`.
    pub fn current(size: SectorSize) -> Self {
        SealProof {
            size,
            revision: Revision::V1_1,
        }
    }

    /// A sector size (its current interactive proof) or a registered proof's name.
    pub fn from_size_or_name(text: &str) -> Result<Self, FilecoinError> {
        text.parse::<SectorSize>()
            .map(Self::current)
            .or_else(|_| text.parse::<SealProof>())
            .map_err(|_| FilecoinError::UnknownSealProof(text.to_owned()))
    }

    /// The `porep_id`: the registered number little-endian, then a zero nonce.
    pub fn porep_id(self) -> [u8; 32] {
        let mut id = [0u8; 32];
        id[..8].copy_from_slice(&self.number().to_le_bytes());
        id
    }

    /// filecoin-proofs' configuration for this proof.
    pub fn porep_config(self) -> Result<PoRepConfig, FilecoinError> {
        let (version, features) = match self.revision {
            Revision::V1 => (ApiVersion::V1_0_0, vec![]),
            Revision::V1_1 => (ApiVersion::V1_1_0, vec![]),
            Revision::Synthetic => (ApiVersion::V1_2_0, vec![ApiFeature::SyntheticPoRep]),
            Revision::NonInteractive => (ApiVersion::V1_2_0, vec![ApiFeature::NonInteractivePoRep]),
        };
        PoRepConfig::new_groth16_with_features(
            self.size.bytes(),
            self.porep_id(),
            version,
            features,
        )
        .map_err(|e| FilecoinError::Filecoin {
            what: format!("the PoRep configuration of {}", self.name()),
            reason: format!("{e:#}"),
        })
    }
}

impl fmt::Display for SealProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SealProof {
    type Err = FilecoinError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::from_name(text)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn names_numbers_and_sizes_round_trip() {
        let proof: SealProof = "StackedDrg32GiBV1_1".parse().unwrap();
        assert_eq!(proof.size, SectorSize::S32GiB);
        assert_eq!(proof.number(), 8);
        let ni: SealProof = "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep"
            .parse()
            .unwrap();
        assert_eq!(ni.number(), 15);
        assert_eq!("StackedDrg2KiBV1".parse::<SealProof>().unwrap().number(), 0);
        for text in ["2KiB", "2k", "2048", "2kib"] {
            assert_eq!(text.parse::<SectorSize>().unwrap(), SectorSize::S2KiB);
        }
        assert!("3KiB".parse::<SectorSize>().is_err());
        assert!("StackedDrg2KiBV9".parse::<SealProof>().is_err());
        for number in 0..20 {
            assert_eq!(SealProof::from_number(number).unwrap().number(), number);
        }
        assert_eq!(SealProof::from_number(8), Some(proof));
        assert_eq!(SealProof::from_number(20), None);
        assert_eq!(SealProof::from_number(u64::MAX), None);
    }

    #[test]
    fn configs_follow_the_revision() {
        let config = SealProof::current(SectorSize::S2KiB)
            .porep_config()
            .unwrap();
        assert_eq!(u64::from(config.sector_size), 2048);
        assert_eq!(usize::from(config.partitions), 1);
        assert_eq!(config.porep_id[0], 5);
        let ni = SealProof {
            size: SectorSize::S2KiB,
            revision: Revision::NonInteractive,
        };
        assert!(ni
            .porep_config()
            .unwrap()
            .feature_enabled(ApiFeature::NonInteractivePoRep));
    }
}
