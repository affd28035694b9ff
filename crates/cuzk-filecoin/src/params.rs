//! Groth16 parameter files of Filecoin's circuits (PoRep, PoSt, SnapDeals), under filecoin-proofs'
//! own names (`v28-stacked-proof-of-replication-…-<hash>.params`,
//! `v28-proof-of-spacetime-fallback-…`, `v28-empty-sector-update-…` and their `.vk`) in a parameter directory, and test parameters made by cuzk's fast setup.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellperson::groth16::aggregate::setup_fake_srs;
use blstrs::Bls12;
use cuzk_groth16::params_file::{write_atomically, ParamsHeader, PointCheck};
use cuzk_groth16::setup::{parameters_for_compiled, Multiplier, ToxicWaste};
use cuzk_groth16::Parameters;
use cuzk_synth::{CompiledR1cs, FORMAT_VERSION};
use filecoin_proofs::{with_shape, MerkleTreeTrait, TreeRHasher};
use rand::RngCore;
use storage_proofs_core::parameter_cache::{
    parameter_id, verifying_key_id, CacheableParameters, SRS_KEY_EXT, SRS_SHARED_KEY_NAME, VERSION,
};
use storage_proofs_core::settings::SETTINGS;
use storage_proofs_update::{
    EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams as UpdateParams,
};

use crate::error::{filecoin, io};
use crate::{
    compiled_r1cs, FilecoinError, PostKind, PostProof, R1csOrigin, Revision, SealProof, SectorSize,
    UpdateProof,
};

/// The environment variable filecoin-proofs reads its parameter directory from.
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// A circuit with parameter files: a registered seal, PoSt or update proof's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CircuitId {
    Seal(SealProof),
    Post(PostProof),
    Update(UpdateProof),
}

impl From<UpdateProof> for CircuitId {
    fn from(proof: UpdateProof) -> Self {
        CircuitId::Update(proof)
    }
}

impl From<SealProof> for CircuitId {
    fn from(proof: SealProof) -> Self {
        CircuitId::Seal(proof)
    }
}

impl From<PostProof> for CircuitId {
    fn from(proof: PostProof) -> Self {
        CircuitId::Post(proof)
    }
}

impl CircuitId {
    pub fn size(self) -> SectorSize {
        match self {
            CircuitId::Seal(proof) => proof.size,
            CircuitId::Post(proof) => proof.size,
            CircuitId::Update(proof) => proof.size,
        }
    }

    /// The command that writes test parameters for it.
    pub fn setup_command(self) -> String {
        let flag = match self {
            CircuitId::Seal(_) => "--porep",
            CircuitId::Post(PostProof {
                kind: PostKind::Winning,
                ..
            }) => "--winning-post",
            CircuitId::Post(_) => "--window-post",
            CircuitId::Update(_) => "--snap",
        };
        format!("cuzk setup {flag} {}", self.size())
    }
}

/// filecoin-proofs' identifier of `circuit`'s parameters, which their file names hash.
fn identifier<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: CircuitId,
) -> Result<String, FilecoinError> {
    match circuit {
        CircuitId::Seal(proof) => proof.porep_config()?.get_cache_identifier::<Tree>(),
        CircuitId::Post(proof) => proof.post_config()?.get_cache_identifier::<Tree>(),
        CircuitId::Update(proof) => Ok(<EmptySectorUpdateCompound<Tree> as CacheableParameters<
            EmptySectorUpdateCircuit<Tree>,
            _,
        >>::cache_identifier(
            &UpdateParams::from_sector_size(proof.size.bytes())
        )),
    }
    .map_err(filecoin(format!("the parameter identifier of {circuit}")))
}

impl fmt::Display for CircuitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CircuitId::Seal(proof) => proof.fmt(f),
            CircuitId::Post(proof) => proof.fmt(f),
            CircuitId::Update(proof) => proof.fmt(f),
        }
    }
}

/// A circuit's parameter set, loaded for proving.
#[derive(Debug)]
pub struct LoadedSet {
    pub params: Arc<Parameters>,
    /// For synthesis by witness only; `None` when partitions run the circuit's constraint code.
    pub compiled: Option<LoadedR1cs>,
}

/// A compiled R1CS as it loaded: where it came from and how long that took (recording one takes
/// minutes, which is worth saying).
#[derive(Debug)]
pub struct LoadedR1cs {
    pub r1cs: Arc<CompiledR1cs>,
    pub origin: R1csOrigin,
    pub took: Duration,
}

/// The parameter files of one circuit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamFiles {
    pub circuit: CircuitId,
    /// The proving parameters (bellperson's layout).
    pub params: PathBuf,
    /// The verifying key alone, which is all `verify_seal` reads.
    pub vk: PathBuf,
    /// cuzk's compiled R1CS of the circuit (see [`crate::compiled_r1cs`]).
    pub r1cs: PathBuf,
    /// The SnarkPack SRS that non-interactive PoRep proofs are aggregated with (one file for
    /// every circuit).
    pub srs: PathBuf,
}

impl ParamFiles {
    /// The files of `circuit` (a seal or PoSt proof's) in `dir`, named as filecoin-proofs names
    /// them.
    pub fn new(dir: &Path, circuit: impl Into<CircuitId>) -> Result<Self, FilecoinError> {
        let circuit = circuit.into();
        let identifier = with_shape!(circuit.size().bytes(), identifier, circuit,)?;
        Ok(ParamFiles {
            circuit,
            params: dir.join(parameter_id(&identifier)),
            vk: dir.join(verifying_key_id(&identifier)),
            srs: dir.join(format!("v{VERSION}-{SRS_SHARED_KEY_NAME}.{SRS_KEY_EXT}")),
            r1cs: dir.join(format!(
                "{}.cuzk-r1cs-v{FORMAT_VERSION}",
                parameter_id(&identifier)
                    .strip_suffix(".params")
                    .unwrap_or(&identifier)
            )),
        })
    }

    /// Memory-maps and decodes the proving parameters; a missing file says what to do.
    pub fn load(&self, check: PointCheck) -> Result<Parameters, FilecoinError> {
        self.require(&self.params)?;
        Ok(Parameters::read_file(&self.params, check)?)
    }

    /// Loads the set the CLI and the daemon prove with: the parameters, their points checked or
    /// not, and when `with_compiled_r1cs` the circuit's compiled R1CS (read from its cache, or
    /// recorded and cached).
    pub fn load_set(
        &self,
        check: PointCheck,
        with_compiled_r1cs: bool,
    ) -> Result<LoadedSet, FilecoinError> {
        let params = Arc::new(self.load(check)?);
        let compiled = if with_compiled_r1cs {
            let start = Instant::now();
            let (r1cs, origin) = compiled_r1cs(self)?;
            Some(LoadedR1cs {
                r1cs,
                origin,
                took: start.elapsed(),
            })
        } else {
            None
        };
        Ok(LoadedSet { params, compiled })
    }

    /// The proving parameters' lengths and size, from the file's length prefixes alone: what a
    /// memory plan needs before the points are read. A missing file says what to do.
    pub fn header(&self) -> Result<ParamsHeader, FilecoinError> {
        self.require(&self.params)?;
        Ok(ParamsHeader::read_file(&self.params)?)
    }

    /// The size of the cached compiled R1CS, `None` while there is none (it is recorded at its
    /// first use); the matrices take about as many bytes in memory.
    pub fn r1cs_file_bytes(&self) -> Option<u64> {
        std::fs::metadata(&self.r1cs).ok().map(|m| m.len())
    }

    /// For a non-interactive PoRep: the SRS must be there, and filecoin-proofs (which reads it)
    /// must look in this directory.
    pub(crate) fn require_srs(&self) -> Result<(), FilecoinError> {
        if let Some(dir) = self.srs.parent() {
            check_parameter_dir(dir)?;
        }
        self.require(&self.srs)
    }

    /// Writes a random SnarkPack SRS (a test one: **not** the network's `fil-inner-product-v1`)
    /// unless the directory already has an SRS, for aggregating non-interactive PoRep proofs.
    pub fn generate_srs(&self, rng: &mut impl RngCore) -> Result<(), FilecoinError> {
        /// Enough for the 2^k-padded aggregates of up to 64 partition proofs.
        const SRS_SIZE: usize = 128;
        if self.srs.is_file() {
            return Ok(());
        }
        let srs = setup_fake_srs::<Bls12, _>(rng, SRS_SIZE);
        write_atomically(&self.srs, |out| srs.write(out)).map_err(io(&self.srs))
    }

    /// Checks that `params` (read from these files) fit a circuit with `inputs` public inputs
    /// and, when known, the compiled R1CS `compiled`, before any synthesis.
    pub(crate) fn check_fit(
        &self,
        params: &Parameters,
        inputs: usize,
        compiled: Option<&CompiledR1cs>,
    ) -> Result<(), FilecoinError> {
        let wrong = |reason: String| FilecoinError::WrongParams {
            file: self.params.display().to_string(),
            proof: self.circuit.to_string(),
            reason,
        };
        if params.vk.ic.len() != inputs + 1 {
            return Err(wrong(format!(
                "the verifying key takes {} public inputs, the circuit has {inputs}",
                params.vk.ic.len().saturating_sub(1),
            )));
        }
        if let Some(r1cs) = compiled {
            let lengths = params.lengths();
            let rows = lengths.h + 1;
            if lengths.l != r1cs.num_aux() || r1cs.num_rows() > rows || 2 * r1cs.num_rows() <= rows
            {
                return Err(wrong(format!(
                    "they hold {} aux variables and a domain of {rows} rows, the circuit has {} \
                     aux variables and {} rows",
                    lengths.l,
                    r1cs.num_aux(),
                    r1cs.num_rows()
                )));
            }
        }
        Ok(())
    }

    /// Fails with [`FilecoinError::ParamsMissing`] when `file` does not exist.
    pub(crate) fn require(&self, file: &Path) -> Result<(), FilecoinError> {
        if file.is_file() {
            return Ok(());
        }
        Err(FilecoinError::ParamsMissing {
            file: file.display().to_string(),
            name: file
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            circuit: self.circuit.to_string(),
            setup: self.circuit.setup_command(),
        })
    }

    /// Generates random parameters for the circuit with cuzk's setup and writes both files
    /// (each atomically), and for a non-interactive PoRep a test SRS when the directory has none.
    /// Setup reads the circuit's compiled R1CS (the prover's cache beside the parameters: read,
    /// or recorded and written there, so proving does not record it again).
    /// **Not the network's parameters**: proofs made with them verify only against this `.vk`,
    /// and whoever saw the setup's randomness can forge them.
    pub fn generate(
        dir: &Path,
        circuit: impl Into<CircuitId>,
        rng: &mut impl RngCore,
        multiplier: &Multiplier,
    ) -> Result<(Self, Parameters), FilecoinError> {
        let files = Self::new(dir, circuit)?;
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let (compiled, _) = compiled_r1cs(&files)?;
        let params = files.generate_for(&compiled, rng, multiplier)?;
        Ok((files, params))
    }

    /// [`Self::generate`] from the circuit's compiled R1CS, already at hand, into these files'
    /// directory (which must exist).
    pub fn generate_for(
        &self,
        compiled: &CompiledR1cs,
        rng: &mut impl RngCore,
        multiplier: &Multiplier,
    ) -> Result<Parameters, FilecoinError> {
        let params = parameters_for_compiled(compiled, &ToxicWaste::random(rng), multiplier)?;
        params.write_file(&self.params)?;
        write_atomically(&self.vk, |out| params.vk.write(out)).map_err(io(&self.vk))?;
        if matches!(self.circuit, CircuitId::Seal(proof) if proof.revision == Revision::NonInteractive)
        {
            self.generate_srs(rng)?;
        }
        Ok(params)
    }
}

/// The parameter directory for this process: `dir` when given (and filecoin-proofs pointed at
/// it, see [`use_parameter_dir`]), else where filecoin-proofs looks (`FIL_PROOFS_PARAMETER_CACHE`,
/// its config file, or its default).
pub fn parameter_dir(dir: Option<&Path>) -> Result<PathBuf, FilecoinError> {
    match dir {
        Some(dir) => {
            use_parameter_dir(dir)?;
            Ok(dir.to_path_buf())
        }
        None => Ok(PathBuf::from(&SETTINGS.parameter_cache)),
    }
}

/// Points filecoin-proofs at `dir` for the rest of the process. It reads its settings once, so
/// this must run before any other Filecoin call and while no other thread reads the
/// environment; afterwards it checks that the settings took it.
pub fn use_parameter_dir(dir: &Path) -> Result<(), FilecoinError> {
    std::env::set_var(PARAMETER_CACHE_ENV, dir);
    check_parameter_dir(dir)
}

/// Fails unless filecoin-proofs reads its parameters from `dir`.
pub fn check_parameter_dir(dir: &Path) -> Result<(), FilecoinError> {
    let settings = Path::new(&SETTINGS.parameter_cache);
    if settings == dir {
        return Ok(());
    }
    Err(FilecoinError::ParameterCacheElsewhere {
        settings: settings.display().to_string(),
        wanted: dir.display().to_string(),
    })
}
