//! Filecoin's registered update proofs (SnapDeals): one per sector size, numbered 0–4 on chain
//! (`RegisteredUpdateProof`, see [`crate::RegisteredProof`]), each the empty-sector-update
//! circuit of that size.

use std::fmt;
use std::str::FromStr;

use filecoin_proofs::{PoRepConfig, SectorUpdateConfig};

use crate::{FilecoinError, RegisteredProof, SealProof, SectorSize};

/// One registered update proof, such as `StackedDrg32GiBV1` of `RegisteredUpdateProof` (a name
/// seal proofs also use: a request says which kind it is); its number and name are
/// [`RegisteredProof`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UpdateProof {
    pub size: SectorSize,
}

impl UpdateProof {
    /// A sector size or a registered update proof's name.
    pub fn from_size_or_name(text: &str) -> Result<Self, FilecoinError> {
        text.parse::<SectorSize>()
            .map(|size| UpdateProof { size })
            .or_else(|_| text.parse())
    }

    /// The PoRep configuration the FFI updates sectors of this size with: only its sector size
    /// matters to the update's circuit, parameters and verifier.
    pub fn porep_config(self) -> Result<PoRepConfig, FilecoinError> {
        SealProof::current(self.size).porep_config()
    }

    /// Partitions, challenges and `h`, as filecoin-proofs derives them from the sector size.
    pub fn update_config(self) -> Result<SectorUpdateConfig, FilecoinError> {
        Ok(SectorUpdateConfig::from_porep_config(&self.porep_config()?))
    }
}

impl fmt::Display for UpdateProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (SnapDeals update)", self.name())
    }
}

impl FromStr for UpdateProof {
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
    fn numbers_and_names_follow_the_chain() {
        for number in 0..5 {
            assert_eq!(UpdateProof::from_number(number).unwrap().number(), number);
        }
        assert_eq!(UpdateProof::from_number(5), None);
        assert_eq!(
            UpdateProof::from_number(3).unwrap().name(),
            "StackedDrg32GiBV1"
        );
        let parsed = UpdateProof::from_size_or_name("StackedDrg8MiBV1").unwrap();
        assert_eq!(parsed.size, SectorSize::S8MiB);
        assert_eq!(UpdateProof::from_size_or_name("64GiB").unwrap().number(), 4);
        assert!(UpdateProof::from_size_or_name("StackedDrg8MiBV1_1").is_err());
    }

    #[test]
    fn partitions_are_filecoins() {
        let small = UpdateProof::from_number(0)
            .unwrap()
            .update_config()
            .unwrap();
        assert_eq!(usize::from(small.update_partitions), 1);
        let large = UpdateProof::from_number(3)
            .unwrap()
            .update_config()
            .unwrap();
        assert_eq!(usize::from(large.update_partitions), 16);
    }
}
