//! cuzk's PoSt request files (`winning-post.json`, `window-post.json`: what `cuzk
//! seal-test-sector` writes and `cuzk prove winning-post|window-post --request` reads): the
//! registered proof by name or number, the randomness and prover id as 0x-prefixed hex, the
//! WindowPoSt partition, and each sector's vanilla proof (the FFI's bincode bytes, as hex).
//!
//! The same format and the same PoSt configurations as cuzk-filecoin's `PostRequest::read` and
//! `PostProof::post_config`, restated here so that the anchor builds from crates.io alone and
//! keeps building while cuzk changes.

use std::fmt;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use filecoin_proofs::constants::{
    WINDOW_POST_CHALLENGE_COUNT, WINDOW_POST_SECTOR_COUNT, WINNING_POST_CHALLENGE_COUNT,
    WINNING_POST_SECTOR_COUNT,
};
use filecoin_proofs::{PoStConfig, PoStType};
use storage_proofs_core::api_version::ApiVersion;

/// Which PoSt, as the CLI names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostKind {
    Winning,
    Window,
}

impl PostKind {
    /// The CLI's name: `winning-post` or `window-post`.
    pub fn name(self) -> &'static str {
        match self {
            PostKind::Winning => "winning-post",
            PostKind::Window => "window-post",
        }
    }
}

/// The five sector sizes, in the order of the registered proofs' numbers.
const SECTOR_SIZES: [(&str, u64); 5] = [
    ("2KiB", 2 << 10),
    ("8MiB", 8 << 20),
    ("512MiB", 512 << 20),
    ("32GiB", 32 << 30),
    ("64GiB", 64 << 30),
];

/// The registered PoSt proofs' versions, in the order of their numbers (five sizes each):
/// WinningPoSt V1, WindowPoSt V1 (API 1.0) and WindowPoSt V1_1 (API 1.2, today's).
const VERSIONS: [(PostKind, &str, ApiVersion); 3] = [
    (PostKind::Winning, "V1", ApiVersion::V1_0_0),
    (PostKind::Window, "V1", ApiVersion::V1_0_0),
    (PostKind::Window, "V1_1", ApiVersion::V1_2_0),
];

/// One registered PoSt proof (`StackedDrgWinning2KiBV1`, `StackedDrgWindow32GiBV1_1` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostProof {
    /// The registered number (`RegisteredPoStProof`), 0–14.
    number: u64,
}

impl PostProof {
    fn from_number(number: u64) -> Option<Self> {
        (number < 15).then_some(PostProof { number })
    }

    fn from_name(name: &str) -> Option<Self> {
        (0..15)
            .map(|number| PostProof { number })
            .find(|proof| proof.to_string() == name)
    }

    fn version(self) -> (PostKind, &'static str, ApiVersion) {
        VERSIONS[(self.number / 5) as usize]
    }

    fn size(self) -> (&'static str, u64) {
        SECTOR_SIZES[(self.number % 5) as usize]
    }

    pub fn kind(self) -> PostKind {
        self.version().0
    }

    pub fn sector_size(self) -> u64 {
        self.size().1
    }

    /// The sector size as registered proofs spell it: `2KiB`, `32GiB` ….
    pub fn size_name(self) -> &'static str {
        self.size().0
    }

    /// filecoin-proofs' configuration of this proof, as the FFI's registry makes it.
    pub fn post_config(self) -> Result<PoStConfig> {
        let (kind, _, api_version) = self.version();
        let (typ, sector_count, challenge_count) = match kind {
            PostKind::Winning => (
                PoStType::Winning,
                WINNING_POST_SECTOR_COUNT,
                WINNING_POST_CHALLENGE_COUNT,
            ),
            PostKind::Window => {
                let sectors = WINDOW_POST_SECTOR_COUNT
                    .read()
                    .map_err(|_| anyhow!("filecoin-proofs' WindowPoSt sector counts: poisoned"))?
                    .get(&self.sector_size())
                    .copied()
                    .with_context(|| format!("no WindowPoSt sector count for {self}"))?;
                (PoStType::Window, sectors, WINDOW_POST_CHALLENGE_COUNT)
            }
        };
        Ok(PoStConfig {
            sector_size: filecoin_proofs::SectorSize(self.sector_size()),
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
        let (kind, version, _) = self.version();
        let kind = match kind {
            PostKind::Winning => "Winning",
            PostKind::Window => "Window",
        };
        write!(f, "StackedDrg{kind}{}{version}", self.size_name())
    }
}

/// One PoSt request, decoded from its file.
#[derive(Clone, Debug)]
pub struct PostRequest {
    pub proof: PostProof,
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    /// WindowPoSt's partition index; 0 for WinningPoSt.
    pub partition: usize,
    /// Each sector's vanilla proof, bincode bytes.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// The file as written: cuzk-filecoin's `RequestFile`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestFile {
    registered_proof: serde_json::Value,
    randomness: String,
    prover_id: String,
    #[serde(default)]
    partition: usize,
    vanilla_proofs: Vec<String>,
}

impl PostRequest {
    /// Reads `path`; errors name the file and the field.
    pub fn read(path: &Path) -> Result<Self> {
        let in_file = || format!("request file {}", path.display());
        let text = std::fs::read(path).with_context(in_file)?;
        let raw: RequestFile = serde_json::from_slice(&text).with_context(in_file)?;
        let proof = match &raw.registered_proof {
            serde_json::Value::String(name) => PostProof::from_name(name),
            serde_json::Value::Number(number) => number.as_u64().and_then(PostProof::from_number),
            _ => None,
        }
        .ok_or_else(|| {
            anyhow!(
                "registered_proof {}: not a registered PoSt proof",
                raw.registered_proof
            )
        })
        .with_context(in_file)?;
        let vanilla_proofs = raw
            .vanilla_proofs
            .iter()
            .enumerate()
            .map(|(i, text)| hex_bytes(text).with_context(|| format!("vanilla_proofs[{i}]")))
            .collect::<Result<Vec<_>>>()
            .with_context(in_file)?;
        if vanilla_proofs.is_empty() {
            return Err(anyhow!("vanilla_proofs: none given")).with_context(in_file);
        }
        Ok(PostRequest {
            proof,
            randomness: bytes32(&raw.randomness)
                .context("randomness")
                .with_context(in_file)?,
            prover_id: bytes32(&raw.prover_id)
                .context("prover_id")
                .with_context(in_file)?,
            partition: raw.partition,
            vanilla_proofs,
        })
    }
}

/// 0x-prefixed hex.
fn hex_bytes(text: &str) -> Result<Vec<u8>> {
    let shown = text.get(..text.len().min(40)).unwrap_or(text);
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| anyhow!("{shown:?}: expected 0x-prefixed hex"))?;
    hex::decode(digits).with_context(|| format!("{shown:?}: not hex"))
}

/// Exactly 32 bytes of 0x-prefixed hex.
fn bytes32(text: &str) -> Result<[u8; 32]> {
    let bytes = hex_bytes(text)?;
    match bytes.try_into() {
        Ok(array) => Ok(array),
        Err(bytes) => bail!("{} bytes, 32 expected", bytes.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_follow_the_chain() {
        let name = |n| PostProof::from_number(n).map(|p| p.to_string());
        assert_eq!(name(0).as_deref(), Some("StackedDrgWinning2KiBV1"));
        assert_eq!(name(8).as_deref(), Some("StackedDrgWindow32GiBV1"));
        assert_eq!(name(13).as_deref(), Some("StackedDrgWindow32GiBV1_1"));
        assert_eq!(name(15), None);
        assert_eq!(
            PostProof::from_name("StackedDrgWindow2KiBV1_1"),
            PostProof::from_number(10)
        );
        assert_eq!(PostProof::from_name("StackedDrgWinning64GiBV1_1"), None);
    }

    #[test]
    fn configs_are_the_registrys() -> Result<()> {
        let winning = PostProof { number: 0 }.post_config()?;
        assert_eq!((winning.sector_count, winning.challenge_count), (1, 66));
        assert_eq!(winning.api_version, ApiVersion::V1_0_0);
        let window = PostProof { number: 13 }.post_config()?;
        assert_eq!((window.sector_count, window.challenge_count), (2349, 10));
        assert_eq!(window.api_version, ApiVersion::V1_2_0);
        Ok(())
    }
}
