//! Filecoin's registered PoSt proofs: WinningPoSt and WindowPoSt for each sector size, by the
//! numbers Curio sends (`RegisteredPoStProof`, see [`crate::RegisteredProof`]), and the PoSt
//! configuration each stands for.
//!
//! On chain, WinningPoSt V1 is 0–4 and WindowPoSt V1 5–9, five sizes each; WindowPoSt V1_1
//! (10–14) is the current WindowPoSt, which filecoin-proofs runs at API 1.2 (its fix of the
//! challenges' grindability). Its circuit and parameters are those of V1: only the challenges
//! differ.

use std::fmt;
use std::str::FromStr;

use filecoin_proofs::constants::{
    WINDOW_POST_CHALLENGE_COUNT, WINDOW_POST_SECTOR_COUNT, WINNING_POST_CHALLENGE_COUNT,
    WINNING_POST_SECTOR_COUNT,
};
use filecoin_proofs::{PoStConfig, PoStType};
use storage_proofs_core::api_version::ApiVersion;

use crate::{FilecoinError, RegisteredProof, SectorSize};

/// Which PoSt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PostKind {
    /// One sector, 66 challenges, proven within an epoch to win a block.
    Winning,
    /// A partition of a deadline's sectors, 10 challenges each (V1, API 1.0).
    WindowV1,
    /// WindowPoSt as the network runs it today (on chain `V1_1`, API 1.2).
    Window,
}

/// One registered PoSt proof, such as `StackedDrgWindow32GiBV1_1`: its number and name are
/// [`RegisteredProof`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PostProof {
    pub kind: PostKind,
    pub size: SectorSize,
}

impl PostProof {
    /// `kind` for a sector size, or a registered PoSt proof's name (of any kind).
    pub fn from_size_or_name(text: &str, kind: PostKind) -> Result<Self, FilecoinError> {
        match text.parse::<SectorSize>() {
            Ok(size) => Ok(PostProof { kind, size }),
            Err(_) => text.parse(),
        }
    }

    /// filecoin-proofs' configuration for this proof, as the FFI's registry makes it.
    pub fn post_config(self) -> Result<PoStConfig, FilecoinError> {
        let sector_size = filecoin_proofs::SectorSize(self.size.bytes());
        let (typ, sector_count, challenge_count, api_version) = match self.kind {
            PostKind::Winning => (
                PoStType::Winning,
                WINNING_POST_SECTOR_COUNT,
                WINNING_POST_CHALLENGE_COUNT,
                ApiVersion::V1_0_0,
            ),
            PostKind::WindowV1 | PostKind::Window => {
                let sectors = WINDOW_POST_SECTOR_COUNT
                    .read()
                    .map_err(|_| FilecoinError::Filecoin {
                        what: format!("the WindowPoSt sector count of {self}"),
                        reason: "its table's lock is poisoned".into(),
                    })?
                    .get(&self.size.bytes())
                    .copied()
                    .ok_or_else(|| FilecoinError::Filecoin {
                        what: format!("the WindowPoSt sector count of {self}"),
                        reason: "no entry for the sector size".into(),
                    })?;
                let version = match self.kind {
                    PostKind::WindowV1 => ApiVersion::V1_0_0,
                    _ => ApiVersion::V1_2_0,
                };
                (
                    PoStType::Window,
                    sectors,
                    WINDOW_POST_CHALLENGE_COUNT,
                    version,
                )
            }
        };
        Ok(PoStConfig {
            sector_size,
            challenge_count,
            sector_count,
            typ,
            priority: true,
            api_version,
        })
    }
}

impl fmt::Display for PostProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PostProof {
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
        for number in 0..15 {
            assert_eq!(PostProof::from_number(number).unwrap().number(), number);
        }
        assert_eq!(PostProof::from_number(15), None);
        assert_eq!(PostProof::from_number(u64::MAX), None);
        assert_eq!(
            PostProof::from_number(0).unwrap().name(),
            "StackedDrgWinning2KiBV1"
        );
        assert_eq!(
            PostProof::from_number(8).unwrap().name(),
            "StackedDrgWindow32GiBV1"
        );
        assert_eq!(
            PostProof::from_number(13).unwrap().name(),
            "StackedDrgWindow32GiBV1_1"
        );
        let window = PostProof::from_size_or_name("32GiB", PostKind::Window).unwrap();
        assert_eq!(window.number(), 13);
        let named = PostProof::from_size_or_name("StackedDrgWindow2KiBV1", PostKind::Winning);
        assert_eq!(named.unwrap().number(), 5);
        let parsed: PostProof = "StackedDrgWinning64GiBV1".parse().unwrap();
        assert_eq!(parsed.number(), 4);
        assert!("StackedDrgWinning64GiBV1_1".parse::<PostProof>().is_err());
    }

    #[test]
    fn both_windowpost_versions_share_their_parameter_files() {
        let dir = std::path::Path::new("/params");
        let files = |number| {
            crate::ParamFiles::new(dir, PostProof::from_number(number).unwrap())
                .unwrap()
                .params
        };
        assert_eq!(files(5), files(10));
        assert_ne!(files(0), files(10));
    }

    #[test]
    fn configs_are_the_registrys() {
        let winning = PostProof::from_number(0).unwrap().post_config().unwrap();
        assert_eq!(winning.typ, PoStType::Winning);
        assert_eq!((winning.sector_count, winning.challenge_count), (1, 66));
        assert_eq!(winning.api_version, ApiVersion::V1_0_0);
        let window = PostProof::from_number(13).unwrap().post_config().unwrap();
        assert_eq!(window.typ, PoStType::Window);
        assert_eq!((window.sector_count, window.challenge_count), (2349, 10));
        assert_eq!(u64::from(window.sector_size), 32 << 30);
        assert_eq!(window.api_version, ApiVersion::V1_2_0);
        let v1 = PostProof::from_number(5).unwrap().post_config().unwrap();
        assert_eq!((v1.sector_count, v1.api_version), (2, ApiVersion::V1_0_0));
    }
}
