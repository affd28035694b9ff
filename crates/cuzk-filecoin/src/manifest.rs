//! filecoin-proofs' parameter manifest (its `parameters.json`: each network parameter file's
//! blake2b digest by file name), and a circuit's parameter files judged against it: the
//! network's files, intact or not, or test ones (`cuzk setup`), which no manifest lists.
//!
//! The manifest lists no file sizes; a file cut short is found by its own length prefixes
//! ([`ParamsHeader::read_file`]), a changed byte by its digest.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use cuzk_groth16::params_file::ParamsHeader;
use serde::Deserialize;

use crate::error::io;
use crate::{FilecoinError, ParamFiles};

/// The v28 files of every circuit cuzk proves, as filecoin-proofs' `parameters.json` lists them
/// (file name, digest, and the sector size, which only tells a reader the row's circuit): data
/// from filecoin-project/rust-fil-proofs.
#[rustfmt::skip]
const V28: [(&str, &str, u64); 40] = [
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-61fa69f38b9cc771ba27b670124714b4ea77fbeae05e377fb859c4a43b73a30c.params", "c3ad7bb549470b82ad52ed070aebb4f4", 536870912),
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-61fa69f38b9cc771ba27b670124714b4ea77fbeae05e377fb859c4a43b73a30c.vk", "994c5b7d450ca9da348c910689f2dc7f", 536870912),
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-92180959e1918d26350b8e6cfe217bbdd0a2d8de51ebec269078b364b715ad63.params", "5aedd2cf3e5c0a15623d56a1b43110ad", 8388608),
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-92180959e1918d26350b8e6cfe217bbdd0a2d8de51ebec269078b364b715ad63.vk", "abd80269054d391a734febdac0d2e687", 8388608),
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-fb9e095bebdd77511c0269b967b4d87ba8b8a525edaa0e165de23ba454510194.params", "311f92a3e75036ced01b1c0025f1fa0c", 2048),
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-fb9e095bebdd77511c0269b967b4d87ba8b8a525edaa0e165de23ba454510194.vk", "eadad9784969890d30f2749708c79771", 2048),
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18.params", "1b3cfd761a961543f9eb273e435a06a2", 34359738368),
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18.vk", "3a6941983754737fde880d29c7094905", 34359738368),
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-8-2-102e1444a7e9a97ebf1e3d6855dcc77e66c011ea66f936d9b2c508f87f2f83a7.params", "1a392e7b759fb18e036c7559b5ece816", 68719476736),
    ("v28-empty-sector-update-merkletree-poseidon_hasher-8-8-2-102e1444a7e9a97ebf1e3d6855dcc77e66c011ea66f936d9b2c508f87f2f83a7.vk", "80e366df2f1011953c2d01c7b7c9ee8e", 68719476736),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0170db1f394b35d995252228ee359194b13199d259380541dc529fb0099096b0.params", "7610b9f82bfc88405b7a832b651ce2f6", 2048),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0170db1f394b35d995252228ee359194b13199d259380541dc529fb0099096b0.vk", "0e0958009936b9d5e515ec97b8cb792d", 2048),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0cfb4f178bbb71cf2ecfcd42accce558b27199ab4fb59cb78f2483fe21ef36d9.params", "1a7d4a9c8a502a497ed92a54366af33f", 536870912),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-0cfb4f178bbb71cf2ecfcd42accce558b27199ab4fb59cb78f2483fe21ef36d9.vk", "4dae975de4f011f101f5a2f86d1daaba", 536870912),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-3ea05428c9d11689f23529cde32fd30aabd50f7d2c93657c1d3650bca3e8ea9e.params", "82c88066be968bb550a05e30ff6c2413", 2048),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-3ea05428c9d11689f23529cde32fd30aabd50f7d2c93657c1d3650bca3e8ea9e.vk", "ffd79788d614d27919ae5bd2d94eacb6", 2048),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-50c7368dea9593ed0989e70974d28024efa9d156d585b7eea1be22b2e753f331.params", "700171ecf7334e3199437c930676af82", 8388608),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-50c7368dea9593ed0989e70974d28024efa9d156d585b7eea1be22b2e753f331.vk", "79ebb55f56fda427743e35053edad8fc", 8388608),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-5294475db5237a2e83c3e52fd6c2b03859a1831d45ed08c4f35dbf9a803165a9.params", "c49499bb76a0762884896f9683403f55", 8388608),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-5294475db5237a2e83c3e52fd6c2b03859a1831d45ed08c4f35dbf9a803165a9.vk", "34d4feeacd9abf788d69ef1bb4d8fd00", 8388608),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-7d739b8cf60f1b0709eeebee7730e297683552e4b69cab6984ec0285663c5781.params", "827359440349fe8f5a016e7598993b79", 536870912),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-7d739b8cf60f1b0709eeebee7730e297683552e4b69cab6984ec0285663c5781.vk", "bd2cd62f65c1ab84f19ca27e97b7c731", 536870912),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-0-0377ded656c6f524f1618760bffe4e0a1c51d5a70c4509eedae8a27555733edc.params", "2cf49eb26f1fee94c85781a390ddb4c8", 34359738368),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-0-0377ded656c6f524f1618760bffe4e0a1c51d5a70c4509eedae8a27555733edc.vk", "0f8ec542485568fa3468c066e9fed82b", 34359738368),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-0-559e581f022bb4e4ec6e719e563bf0e026ad6de42e56c18714a2c692b1b88d7e.params", "d84f79a16fe40e9e25a36e2107bb1ba0", 34359738368),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-0-559e581f022bb4e4ec6e719e563bf0e026ad6de42e56c18714a2c692b1b88d7e.vk", "fc02943678dd119e69e7fab8420e8819", 34359738368),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-2-2627e4006b67f99cef990c0a47d5426cb7ab0a0ad58fc1061547bf2d28b09def.params", "3810b7780ac0e299b22ae70f1f94c9bc", 68719476736),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-2-2627e4006b67f99cef990c0a47d5426cb7ab0a0ad58fc1061547bf2d28b09def.vk", "59d2bf1857adc59a4f08fcf2afaa916b", 68719476736),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-2-b62098629d07946e9028127e70295ed996fe3ed25b0f9f88eb610a0ab4385a3c.params", "2170a91ad5bae22ea61f2ea766630322", 68719476736),
    ("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-8-2-b62098629d07946e9028127e70295ed996fe3ed25b0f9f88eb610a0ab4385a3c.vk", "6d3789148fb6466d07ee1e24d6292fd6", 68719476736),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f.params", "434fb1338ecfaf0f59256f30dde4968f", 2048),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f.vk", "dc1ade9929ade1708238f155343044ac", 2048),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-6babf46ce344ae495d558e7770a585b2382d54f225af8ed0397b8be7c3fcd472.params", "6c77597eb91ab936c1cef4cf19eba1b3", 536870912),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-6babf46ce344ae495d558e7770a585b2382d54f225af8ed0397b8be7c3fcd472.vk", "065179da19fbe515507267677f02823e", 536870912),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-ecd683648512ab1765faa2a5f14bab48f676e633467f0aa8aad4b55dcb0652bb.params", "09e612e4eeb7a0eb95679a88404f960c", 8388608),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-ecd683648512ab1765faa2a5f14bab48f676e633467f0aa8aad4b55dcb0652bb.vk", "b687beb9adbd9dabe265a7e3620813e4", 8388608),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820.params", "6a388072a518cf46ebd661f5cc46900a", 34359738368),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820.vk", "0c7b4aac1c40fdb7eb82bc355b41addf", 34359738368),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-2-sha256_hasher-96f1b4a04c5c51e4759bbf224bbc2ef5a42c7100f16ec0637123f16a845ddfb2.params", "1801f8a6e1b00bceb00cc27314bb5ce3", 68719476736),
    ("v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-2-sha256_hasher-96f1b4a04c5c51e4759bbf224bbc2ef5a42c7100f16ec0637123f16a845ddfb2.vk", "a89884252c04c298d0b3c81bfd884164", 68719476736),
];

/// Digests of parameter files by file name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    digests: HashMap<String, String>,
    /// Where it came from, for messages: "filecoin-proofs v28" or a file.
    pub source: String,
}

/// One entry of `parameters.json` (its `cid` and `sector_size` are not needed here).
#[derive(Deserialize)]
struct Entry {
    digest: String,
}

impl Manifest {
    /// The network's v28 parameters, built in.
    pub fn v28() -> Self {
        Manifest {
            digests: V28
                .iter()
                .map(|(name, digest, _)| ((*name).to_owned(), (*digest).to_owned()))
                .collect(),
            source: "filecoin-proofs' v28 parameters.json".to_owned(),
        }
    }

    /// A manifest in `parameters.json`'s form (a newer release's, say).
    pub fn read(path: &Path) -> Result<Self, FilecoinError> {
        let text = std::fs::read(path).map_err(io(path))?;
        let entries: HashMap<String, Entry> =
            serde_json::from_slice(&text).map_err(|e| FilecoinError::Manifest {
                file: path.display().to_string(),
                reason: e.to_string(),
            })?;
        Ok(Manifest {
            digests: entries
                .into_iter()
                .map(|(name, entry)| (name, entry.digest))
                .collect(),
            source: path.display().to_string(),
        })
    }

    /// The digest the manifest lists for a file name.
    pub fn digest(&self, name: &str) -> Option<&str> {
        self.digests.get(name).map(String::as_str)
    }
}

/// A file's digest as filecoin-proofs computes it: blake2b-512, the first 32 hex digits.
pub fn file_digest(path: &Path) -> Result<String, FilecoinError> {
    let mut file = std::fs::File::open(path).map_err(io(path))?;
    let mut state = blake2b_simd::State::new();
    std::io::copy(&mut file, &mut state).map_err(io(path))?;
    let hex = state.finalize().to_hex();
    Ok(hex.get(..32).unwrap_or(&hex).to_owned())
}

/// Whose parameters a circuit's files hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The network's: the verifying key has the manifest's digest.
    Network,
    /// Another setup's (`cuzk setup`'s test parameters): the verifying key is the parameters'
    /// own but not the network's, so proofs verify only against it.
    Test,
}

/// What is wrong with one of a circuit's parameter files.
#[derive(Debug, thiserror::Error)]
pub enum FileFault {
    #[error("missing {}", file.display())]
    Missing { file: PathBuf },
    /// Unreadable, or its length prefixes do not add up to its size (a file cut short).
    #[error("{0}")]
    Unreadable(String),
    #[error(
        "{}: digest {found}, {manifest} lists {expected}: the file is corrupted",
        file.display()
    )]
    Digest {
        file: PathBuf,
        found: String,
        expected: String,
        manifest: String,
    },
    #[error(
        "{}: neither the network's verifying key nor that of {}: the pair is mixed up",
        vk.display(),
        params.display()
    )]
    ForeignVk { vk: PathBuf, params: PathBuf },
}

/// Which `.params` files to digest (the verifying keys, a few KiB, always are).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digests {
    All,
    /// Those up to this many bytes: a 32 GiB sector's 47 GB take minutes.
    UpTo(u64),
}

/// A circuit's parameter files, judged.
#[derive(Debug)]
pub struct Inspection {
    /// `None` when the files could not tell (see the faults).
    pub origin: Option<Origin>,
    /// The proving parameters' lengths, when their file reads.
    pub header: Option<ParamsHeader>,
    /// Whether the `.params` file's digest was compared with the manifest's.
    pub params_digested: bool,
    pub faults: Vec<FileFault>,
}

impl ParamFiles {
    /// Judges these files against `manifest`: present, whole (their own length prefixes), whose
    /// (the verifying key's digest), and for the network's, the `.params` digest when `digests`
    /// allows.
    pub fn inspect(&self, manifest: &Manifest, digests: Digests) -> Inspection {
        let mut inspection = Inspection {
            origin: None,
            header: None,
            params_digested: false,
            faults: Vec::new(),
        };
        let faults = &mut inspection.faults;
        for file in [&self.params, &self.vk] {
            if !file.is_file() {
                faults.push(FileFault::Missing { file: file.clone() });
            }
        }
        if !faults.is_empty() {
            return inspection;
        }
        match ParamsHeader::read_file(&self.params) {
            Ok(header) => inspection.header = Some(header),
            Err(e) => faults.push(FileFault::Unreadable(e.to_string())),
        }
        match self.origin(manifest) {
            Ok(origin) => inspection.origin = Some(origin),
            Err(fault) => faults.push(fault),
        }
        let wanted = match (digests, &inspection.header) {
            // A file whose lengths do not add up has failed already.
            (_, None) => false,
            (Digests::All, Some(_)) => true,
            (Digests::UpTo(most), Some(header)) => header.file_bytes <= most,
        };
        let expected = manifest.digest(&file_name(&self.params));
        if let (Some(Origin::Network), Some(expected), true) = (inspection.origin, expected, wanted)
        {
            inspection.params_digested = true;
            match file_digest(&self.params) {
                Ok(found) if found == expected => {}
                Ok(found) => faults.push(FileFault::Digest {
                    file: self.params.clone(),
                    found,
                    expected: expected.to_owned(),
                    manifest: manifest.source.clone(),
                }),
                Err(e) => faults.push(FileFault::Unreadable(e.to_string())),
            }
        }
        inspection
    }

    /// The network's when the verifying key has the manifest's digest; a test set's when it is
    /// the `.params` file's own (bellperson's layout begins with the verifying key).
    fn origin(&self, manifest: &Manifest) -> Result<Origin, FileFault> {
        let unreadable = |e: FilecoinError| FileFault::Unreadable(e.to_string());
        let vk_digest = file_digest(&self.vk).map_err(unreadable)?;
        if manifest.digest(&file_name(&self.vk)) == Some(vk_digest.as_str()) {
            return Ok(Origin::Network);
        }
        let vk = std::fs::read(&self.vk).map_err(|e| unreadable(io(&self.vk)(e)))?;
        let mut prefix = Vec::with_capacity(vk.len());
        std::fs::File::open(&self.params)
            .and_then(|file| file.take(vk.len() as u64).read_to_end(&mut prefix))
            .map_err(|e| unreadable(io(&self.params)(e)))?;
        match prefix == vk {
            true => Ok(Origin::Test),
            false => Err(FileFault::ForeignVk {
                vk: self.vk.clone(),
                params: self.params.clone(),
            }),
        }
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{PostKind, PostProof, SealProof, UpdateProof, SECTOR_SIZES};

    /// Every circuit cuzk proves names its files as the manifest does: the names are
    /// filecoin-proofs' hashes of each circuit's identifier, so this checks both tables.
    #[test]
    fn every_served_circuit_has_its_files_in_the_manifest() {
        let manifest = Manifest::v28();
        for size in SECTOR_SIZES {
            let circuits: [crate::CircuitId; 4] = [
                SealProof::current(size).into(),
                PostProof {
                    kind: PostKind::Winning,
                    size,
                }
                .into(),
                PostProof {
                    kind: PostKind::Window,
                    size,
                }
                .into(),
                UpdateProof { size }.into(),
            ];
            for circuit in circuits {
                let files = ParamFiles::new(Path::new("/p"), circuit).unwrap();
                for file in [&files.params, &files.vk] {
                    let name = file_name(file);
                    assert!(manifest.digest(&name).is_some(), "{circuit}: {name}");
                }
            }
        }
    }

    #[test]
    fn digests_are_blake2b_512_cut_to_32_hex_digits() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        // BLAKE2b-512("abc"), RFC 7693 appendix A.
        assert_eq!(
            file_digest(&file).unwrap(),
            "ba80a53f981c4d0d6a2797b69f12f6e9"
        );
    }

    #[test]
    fn a_manifest_reads_from_parameters_json() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("parameters.json");
        std::fs::write(
            &file,
            r#"{"a.params": {"cid": "Qm", "digest": "00ff", "sector_size": 2048}}"#,
        )
        .unwrap();
        let manifest = Manifest::read(&file).unwrap();
        assert_eq!(manifest.digest("a.params"), Some("00ff"));
        assert_eq!(manifest.digest("b.params"), None);
        std::fs::write(&file, "[]").unwrap();
        assert!(Manifest::read(&file).is_err());
    }
}
