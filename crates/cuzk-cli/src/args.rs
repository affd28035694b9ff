//! Command-line arguments as typed by the user; no I/O happens here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "cuzk",
    version,
    about = "Groth16 over BLS12-381: setup, prove, verify, and the proving daemon Curio talks to",
    after_help = "With no command, `cuzk [--config FILE] [--listen ADDR] [--log-level LEVEL]` runs \
                  the daemon as `cuzk serve` does (Curio's invocation of its own daemon); plain \
                  `cuzk` does so only when /data/zk/cuzk.toml exists, and prints this help \
                  otherwise."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// The daemon's flags, for `cuzk` with no command.
    #[command(flatten)]
    pub daemon: DaemonArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Worker threads for CPU work (default: all cores).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// Print one JSON object on stdout instead of human-readable text; no progress bars.
    #[arg(long, global = true)]
    pub json: bool,
    /// Device memory cuzk may hold on each GPU, everything included (parameters, tables,
    /// matrices, working buffers, its context): a size such as 16GiB or 512M, or `auto`
    /// (what the device has free at start, less 256 MiB). What stays on the device and what
    /// streams from host memory follows it.
    #[arg(long, global = true, value_name = "SIZE", default_value = "auto", value_parser = parse_memory)]
    pub gpu_memory: MemoryArg,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set up, prove and verify a built-in circuit in a temporary directory.
    Demo(DemoArgs),
    /// Generate random test parameters for a circuit or a PoRep sector size (NOT a trusted setup).
    Setup(SetupArgs),
    /// Prove a circuit with existing parameters, or a sector's PoRep C2 (`prove porep`).
    Prove(ProveCommand),
    /// Verify a proof (exit 0 valid, 1 invalid, 2 unusable input); `verify porep` asks filecoin-proofs.
    Verify(VerifyCommand),
    /// Seal a sector of random data with filecoin-proofs and write its C1 output (tests, benches).
    SealTestSector(TestSectorArgs),
    /// Write a committed-capacity sector's C1 output, its PoSt requests and its update with zero
    /// data without sealing it (any size, in seconds: sparse trees; interactive PoRep revisions
    /// only).
    SampleSector(TestSectorArgs),
    /// Read a TIMELINE log (ours or the public engine's): GPU idle windows, busy fraction, throughput.
    Analyze(AnalyzeArgs),
    /// Time the GPU kernels (MSM in G1 and G2, NTT) on the first device and print a table.
    BenchKernels(BenchKernelsArgs),
    /// Time one backend's prove_start on a built-in circuit (synthesis apart), stage by stage.
    BenchProver(BenchProverArgs),
    /// Run jobs of a built-in circuit through the engine: steady-state seconds per proof, GPU busy
    /// fraction, synthesis and GPU time per partition, peak memory.
    Bench(BenchArgs),
    /// Run the proving daemon: gRPC cuzk.v1 for Curio, parameter sets kept hot, metrics.
    Serve(ServeArgs),
    /// Call a running daemon: prove a C1 output as Curio does, status, metrics, preload, evict,
    /// cancel.
    Client(ClientArgs),
    /// Check this host before `cuzk serve`: GPUs and kernels, host memory and its limits, the
    /// page-lock limit, parameter files, the socket. Exit 0 when the configured work can run.
    Doctor(DoctorArgs),
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The daemon's configuration, as `cuzk serve --config` reads it; without it,
    /// /data/zk/cuzk.toml when it exists, else the defaults.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// A circuit to check beside `[srs] preload` (porep-32g, winning-32g, wpost-32g, snap-32g
    /// …); may be repeated. With neither, the circuits whose files are on disk are checked.
    #[arg(long = "circuit", value_name = "ID")]
    pub circuits: Vec<String>,
    /// Compare every `.params` file's digest with the manifest (minutes for 32 GiB sectors'); by
    /// default only files up to 1 GiB are.
    #[arg(long)]
    pub digests: bool,
    /// filecoin-proofs' parameters.json to compare digests with, instead of the built-in v28
    /// one.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ClientArgs {
    /// The daemon's address: unix:///PATH or HOST:PORT.
    #[arg(long, default_value = "unix:///run/curio/cuzk.sock")]
    pub address: String,
    /// A file holding the bearer token (for a daemon on TCP with `token_file`).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    #[command(subcommand)]
    pub call: ClientCall,
}

#[derive(Debug, Subcommand)]
pub enum ClientCall {
    /// GetStatus, as JSON.
    Status,
    /// GetMetrics: the Prometheus text.
    Metrics,
    /// Prove a PoRep C1 output or a WinningPoSt / WindowPoSt request, formed as Curio forms
    /// it (`Prove`), or a synthetic proof.
    Prove(ClientProveArgs),
    /// Load a circuit's parameters into the hot tier (porep-2k … porep-64g).
    Preload { circuit: String },
    /// Drop a circuit's parameters from the GPUs and host memory.
    Evict { circuit: String },
    /// Cancel a job.
    Cancel { job_id: String },
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("request").required(true).args(["c1", "post", "snap", "synthetic"])))]
pub struct ClientProveArgs {
    /// The C1 output in the FFI's JSON form (as `cuzk seal-test-sector` writes it): a PoRep C2.
    #[arg(long)]
    pub c1: Option<PathBuf>,
    /// A WinningPoSt or WindowPoSt request file (`winning-post.json`, `window-post.json` as
    /// `cuzk seal-test-sector` writes them; the kind from its registered proof), sent as Curio
    /// sends it; its prover must be --miner-id's.
    #[arg(long)]
    pub post: Option<PathBuf>,
    /// A SnapDeals update request file (`snap.json`, as `cuzk seal-test-sector` and
    /// `sample-sector` write it), sent as Curio sends it.
    #[arg(long)]
    pub snap: Option<PathBuf>,
    /// A synthetic proof of this many constraints per partition, for a daemon serving
    /// `[daemon] circuits = "synthetic"` (tests and soaks of the daemon itself).
    #[arg(long)]
    pub synthetic: Option<usize>,
    /// The synthetic proof's partitions.
    #[arg(long, default_value_t = 1, requires = "synthetic")]
    pub partitions: usize,
    /// The miner (f0<ID>) whose sector it is (with --c1, --post and --snap).
    #[arg(long, required_unless_present = "synthetic")]
    pub miner_id: Option<u64>,
    /// The sector number (with --c1).
    #[arg(long, required_unless_present_any = ["post", "snap", "synthetic"])]
    pub sector_id: Option<u64>,
    /// Where to write the proof (default: the C1 or request file's name with `.proof`,
    /// `synthetic-<constraints>.proof`); with --count, the first proof's.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Prove it this many times, as that many requests (ids `<id>-<i>`): a load test; prints
    /// the throughput.
    #[arg(long, default_value_t = 1)]
    pub count: usize,
    /// Requests in flight at once, each on its own connection.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// The request id (with --count, ids `<id>-<i>`) instead of `porep-<miner>-<sector>`,
    /// `winning-<miner>`, `wdpost-<miner>-<partition>` or `synthetic-<constraints>`. A request
    /// with the id and content of a completed job joins it (no new proof), so repeated load
    /// runs against one daemon need ids of their own.
    #[arg(long)]
    pub id: Option<String>,
}

/// How the daemon is started, as Curio starts its own.
#[derive(Debug, Clone, Default, Args)]
pub struct DaemonArgs {
    /// The TOML configuration (every key documented in crates/cuzk-daemon/cuzk.example.toml);
    /// without it, /data/zk/cuzk.toml when it exists, else the defaults.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Listen here instead of `[daemon] listen`: unix:///PATH or HOST:PORT.
    #[arg(long, short = 'l')]
    pub listen: Option<String>,
    /// Log level instead of `[logging] level` and RUST_LOG: error, warn, info, debug, trace (or
    /// a RUST_LOG-style filter).
    #[arg(long)]
    pub log_level: Option<String>,
}

impl DaemonArgs {
    /// Whether any was given.
    pub fn any(&self) -> bool {
        self.config.is_some() || self.listen.is_some() || self.log_level.is_some()
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub daemon: DaemonArgs,
    /// Check the configuration, print its warnings, and exit (0 when it is usable).
    #[arg(long)]
    pub check_config: bool,
    /// Print the example configuration (every key at its default) and exit.
    #[arg(long)]
    pub print_sample_config: bool,
}

impl From<DaemonArgs> for ServeArgs {
    /// `cuzk` with no command: `cuzk serve` with the same flags.
    fn from(daemon: DaemonArgs) -> Self {
        ServeArgs {
            daemon,
            check_config: false,
            print_sample_config: false,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum CircuitKind {
    /// Product and boolean constraints, deterministic from --seed.
    Synthetic,
}

#[derive(Debug, Clone, Args)]
pub struct CircuitArgs {
    /// Which built-in circuit.
    #[arg(long, value_enum, default_value_t = CircuitKind::Synthetic)]
    pub circuit: CircuitKind,
    /// Number of constraints (the prover adds one row per public input).
    #[arg(long)]
    pub constraints: usize,
    /// Seed of the circuit's shape and witness.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Fraction of constraints whose witness is a bit (0..=1).
    #[arg(long, default_value_t = 0.5)]
    pub boolean_fraction: f64,
    /// Number of public inputs.
    #[arg(long, default_value_t = 2)]
    pub public_inputs: usize,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPU when one is usable, the CPU otherwise.
    Auto,
    Cpu,
    Gpu,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Number of constraints of the synthetic circuit.
    #[arg(long, default_value_t = 1 << 14)]
    pub constraints: usize,
    #[arg(long, default_value_t = 0.5)]
    pub boolean_fraction: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
}

#[derive(Debug, Args)]
#[command(mut_arg("constraints", |arg| {
    arg.required(false)
        .required_unless_present_any(["porep", "winning_post", "window_post", "snap"])
}))]
pub struct SetupArgs {
    #[command(flatten)]
    pub circuit: Option<CircuitArgs>,
    /// Filecoin's PoRep circuit for this sector size (2KiB … 64GiB) or registered proof
    /// (StackedDrg2KiBV1_1 …) instead of a built-in circuit; --out is then a directory.
    #[arg(long, value_name = "SIZE", conflicts_with_all = ["CircuitArgs", "winning_post", "window_post", "snap"])]
    pub porep: Option<String>,
    /// Filecoin's WinningPoSt circuit for this sector size (or StackedDrgWinning2KiBV1 …).
    #[arg(long, value_name = "SIZE", conflicts_with_all = ["CircuitArgs", "window_post", "snap"])]
    pub winning_post: Option<String>,
    /// Filecoin's WindowPoSt circuit for this sector size (or StackedDrgWindow2KiBV1_1 …).
    #[arg(long, value_name = "SIZE", conflicts_with_all = ["CircuitArgs", "snap"])]
    pub window_post: Option<String>,
    /// Filecoin's SnapDeals (empty-sector-update) circuit for this sector size (or the
    /// registered update proof's name, StackedDrg2KiBV1 …).
    #[arg(long, value_name = "SIZE", conflicts_with = "CircuitArgs")]
    pub snap: Option<String>,
    /// Where to write the parameters (bellperson's layout): a file, or for a Filecoin circuit a
    /// directory that gets the .params and .vk files under filecoin-proofs' names.
    #[arg(long)]
    pub out: PathBuf,
    /// Where the query points are multiplied out (the same points either way).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Draw the toxic waste from this seed instead of the OS: the same seed gives the same files
    /// (to compare setups); anyone who knows it can forge proofs.
    #[arg(long)]
    pub toxic_seed: Option<u64>,
}

/// `prove` of a built-in circuit, or `prove porep`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct ProveCommand {
    #[command(subcommand)]
    pub target: Option<ProveTarget>,
    // Two flattened groups, not one nesting the other: clap leaves an `Option` of a group that
    // nests another group at `None` even when its arguments are given.
    #[command(flatten)]
    pub args: Option<ProveArgs>,
    #[command(flatten)]
    pub circuit: Option<CircuitArgs>,
}

#[derive(Debug, Subcommand)]
pub enum ProveTarget {
    /// Filecoin PoRep C2: prove a sector from its C1 output (one job, a partition per proof).
    Porep(PorepProveArgs),
    /// Filecoin WinningPoSt: prove a request (one sector's vanilla proof, the randomness).
    WinningPost(RequestProveArgs),
    /// Filecoin WindowPoSt: prove one partition of a request.
    WindowPost(RequestProveArgs),
    /// Filecoin SnapDeals: prove a sector update (one partition proof per partition).
    Snap(RequestProveArgs),
}

/// `verify` of a built-in circuit's proof, or `verify porep`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct VerifyCommand {
    #[command(subcommand)]
    pub target: Option<VerifyTarget>,
    #[command(flatten)]
    pub proof: Option<VerifyArgs>,
}

#[derive(Debug, Subcommand)]
pub enum VerifyTarget {
    /// Filecoin PoRep: check a C2 proof with filecoin-proofs' verify_seal.
    Porep(PorepVerifyArgs),
    /// Filecoin WinningPoSt: check a proof with filecoin-proofs' verify_winning_post.
    WinningPost(RequestVerifyArgs),
    /// Filecoin WindowPoSt: check a proof with filecoin-proofs' verify_window_post.
    WindowPost(RequestVerifyArgs),
    /// Filecoin SnapDeals: check a proof with filecoin-proofs' verify_empty_sector_update_proof.
    Snap(RequestVerifyArgs),
}

/// Where a PoRep command finds its C1 output and parameters.
#[derive(Debug, Args)]
pub struct PorepInputArgs {
    /// The C1 output (SealCommitPhase1Output JSON, the FFI's form or filecoin-proofs' raw form).
    #[arg(long)]
    pub c1: PathBuf,
    /// The registered seal proof of a raw-form C1 output (the FFI's form names its own).
    #[arg(long, value_name = "NAME")]
    pub seal_proof: Option<String>,
    /// Parameter directory (files named as filecoin-proofs names them); default:
    /// $FIL_PROOFS_PARAMETER_CACHE or filecoin-proofs' default.
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PorepProveArgs {
    #[command(flatten)]
    pub input: PorepInputArgs,
    /// Where to write the proof (partition proofs concatenated); default: the C1 file's name
    /// with the extension `.proof`.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub proving: ProvingArgs,
}

/// How a Filecoin proof is proven: backend, workers, memory, checks, TIMELINE, synthesis path.
#[derive(Debug, Args)]
pub struct ProvingArgs {
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Partitions synthesized at once (default: one per partition, at most the CPU threads).
    #[arg(long)]
    pub partition_workers: Option<usize>,
    /// Host memory the run may use, everything counted (as for `bench`).
    #[arg(long, default_value = "auto", value_parser = parse_memory)]
    pub memory_budget: MemoryArg,
    /// Check every parameter point (curve and subgroup): minutes for a 1 GB file. Off by default
    /// because the engine verifies every proof before it is written, so a bad point shows up as a
    /// proof that fails, never as a wrong proof.
    #[arg(long)]
    pub check_params: bool,
    /// Write the engine's TIMELINE here.
    #[arg(long)]
    pub timeline: Option<PathBuf>,
    /// Synthesize every constraint directly instead of by witness only with the circuit's
    /// compiled R1CS (recorded once, cached beside the parameters).
    #[arg(long)]
    pub direct_synthesis: bool,
}

/// Where a PoSt or SnapDeals command finds its request and parameters.
#[derive(Debug, Args)]
pub struct RequestInputArgs {
    /// The request: Curio's fields as JSON, bytes as 0x-hex (PoSt: registered_proof, randomness,
    /// prover_id, partition, vanilla_proofs; SnapDeals: registered_proof, comm_r_old, comm_r_new,
    /// comm_d_new, vanilla_proofs), as `cuzk seal-test-sector` writes them.
    #[arg(long)]
    pub request: PathBuf,
    /// Parameter directory (files named as filecoin-proofs names them); default:
    /// $FIL_PROOFS_PARAMETER_CACHE or filecoin-proofs' default.
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RequestProveArgs {
    #[command(flatten)]
    pub input: RequestInputArgs,
    /// Where to write the proof (192 bytes per partition); default: the request file's name with
    /// the extension `.proof`.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub proving: ProvingArgs,
}

#[derive(Debug, Args)]
pub struct RequestVerifyArgs {
    #[command(flatten)]
    pub input: RequestInputArgs,
    /// The proof.
    #[arg(long)]
    pub proof: PathBuf,
}

#[derive(Debug, Args)]
pub struct PorepVerifyArgs {
    #[command(flatten)]
    pub input: PorepInputArgs,
    /// The proof (partition proofs concatenated).
    #[arg(long)]
    pub proof: PathBuf,
    /// The prover id, 0x-prefixed hex of 32 bytes.
    #[arg(long)]
    pub prover_id: String,
    /// The sector number.
    #[arg(long)]
    pub sector_id: u64,
}

#[derive(Debug, Args)]
pub struct TestSectorArgs {
    /// Sector size (2KiB … 64GiB) or registered seal proof.
    #[arg(long, default_value = "2KiB")]
    pub size: String,
    /// Directory for the C1 output (c1.json, the FFI's form), sector.json (registered proof,
    /// prover id, sector id) and, when sealing, the sector's files (sector/).
    #[arg(long)]
    pub out: PathBuf,
    /// Seal as miner f0<ID> (its prover id is the ID address payload, as Curio forms it);
    /// without it a random prover id.
    #[arg(long)]
    pub miner_id: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ProveArgs {
    /// Parameters file (bellperson's layout).
    #[arg(long)]
    pub params: PathBuf,
    /// Where to write the 192-byte proof.
    #[arg(long)]
    pub proof_out: PathBuf,
    /// Where to write the public inputs (JSON array of 0x-hex scalars).
    #[arg(long)]
    pub inputs_out: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Skip the curve and subgroup checks of the parameter points (trusted files only).
    #[arg(long)]
    pub unchecked_params: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Parameters file; only its verifying key is read.
    #[arg(long)]
    pub params: PathBuf,
    /// Proof file: one or more concatenated 192-byte proofs.
    #[arg(long)]
    pub proof: PathBuf,
    /// Public inputs (JSON array of 0x-hex scalars), shared by every proof in the file.
    #[arg(long)]
    pub inputs: PathBuf,
}

#[derive(Debug, Args)]
pub struct BenchProverArgs {
    #[command(flatten)]
    pub circuit: CircuitArgs,
    /// Timed proofs (the median is reported), after one warm-up.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Also print each timed run's prove_start and stages (to see which stage a slow run spent
    /// its time in).
    #[arg(long)]
    pub each_run: bool,
}

#[derive(Debug, Args)]
pub struct BenchKernelsArgs {
    /// Timed runs per size (the median is reported), after one warm-up.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Smallest and largest log2 size of the G1 MSM.
    #[arg(long, default_value_t = 16)]
    pub g1_min: u32,
    #[arg(long, default_value_t = 24)]
    pub g1_max: u32,
    /// Smallest and largest log2 size of the G2 MSM.
    #[arg(long, default_value_t = 16)]
    pub g2_min: u32,
    #[arg(long, default_value_t = 22)]
    pub g2_max: u32,
    /// Smallest and largest log2 size of the Fr NTT.
    #[arg(long, default_value_t = 16)]
    pub ntt_min: u32,
    #[arg(long, default_value_t = 27)]
    pub ntt_max: u32,
    /// Also time each MSM with its bases stored with their window multiples (⌈255/c⌉ times the
    /// bases' memory, made on the device at upload; windows share sets of buckets).
    #[arg(long)]
    pub window_multiples: bool,
    /// Window width c of those multiples (16..=23; default: chosen for the largest size).
    #[arg(long)]
    pub multiple_window_bits: Option<u32>,
    /// Sets of buckets the windows share over those multiples (default: chosen for each size).
    #[arg(long)]
    pub multiple_sets: Option<u32>,
    /// The MSMs' scalars: random field elements, or shaped as a PoRep witness (each 0 or 1 but
    /// one in 2^20 a random field element: one bucket holds nearly every entry).
    #[arg(long, value_enum, default_value_t = ScalarShape::Random)]
    pub scalars: ScalarShape,
}

/// What the scalars of a kernel bench look like.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ScalarShape {
    Random,
    Witness,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// A log holding TIMELINE lines (other lines are ignored).
    pub timeline: PathBuf,
    /// Also draw a Gantt chart (one lane per synthesis slot and GPU worker) into this SVG file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(mut_arg("constraints", |arg| {
    arg.required(false).required_unless_present_any(["c1", "post", "snap"])
}))]
#[command(group(clap::ArgGroup::new("request").args(["c1", "post", "snap"])))]
pub struct BenchArgs {
    #[command(flatten)]
    pub circuit: Option<CircuitArgs>,
    /// Prove this sector's PoRep C2 (its C1 output) in every job instead of a built-in circuit:
    /// the real circuit and partitions, with the parameters of --params-dir.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["CircuitArgs", "partitions"])]
    pub c1: Option<PathBuf>,
    /// Prove this WinningPoSt or WindowPoSt request (a request file, as `cuzk seal-test-sector`
    /// writes them) in every job: one partition each, with the parameters of --params-dir.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["CircuitArgs", "partitions", "c1"])]
    pub post: Option<PathBuf>,
    /// Prove this SnapDeals request (a request file, as `cuzk seal-test-sector` writes it) in
    /// every job: its partitions, with the parameters of --params-dir.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["CircuitArgs", "partitions", "c1", "post"])]
    pub snap: Option<PathBuf>,
    /// Parameter directory for --c1, --post or --snap (default: filecoin-proofs').
    #[arg(long)]
    pub params_dir: Option<PathBuf>,
    /// With --c1, --post or --snap: prove with random test parameters made in this process
    /// (their points on the GPU when --backend allows one) instead of reading the .params file:
    /// nothing is written but the compiled R1CS cache in the parameter directory. A 32 GiB PoRep
    /// set is ~47 GB of host memory, taken from an automatic memory budget.
    #[arg(long, requires = "request")]
    pub test_params: bool,
    /// With --c1, --post or --snap: random test parameters whose points are made on the first
    /// GPU and stay there, the only device that proves: never written, never in host memory (a
    /// 32 GiB PoRep set is ~47 GB), only the verifying key comes back.
    #[arg(long, requires = "request", conflicts_with = "test_params")]
    pub test_params_on_gpu: bool,
    /// Jobs (proof requests) to run in all.
    #[arg(short = 'j', long, default_value_t = 4)]
    pub jobs: usize,
    /// Jobs in flight at once: the next is submitted when one finishes.
    #[arg(short = 'c', long, default_value_t = 2)]
    pub concurrency: usize,
    /// Partitions per job (a 32 GiB PoRep sector has 10).
    #[arg(long, default_value_t = 2)]
    pub partitions: usize,
    /// Synthesis tasks (default: the CPU threads).
    #[arg(long)]
    pub partition_workers: Option<usize>,
    /// GPU workers per device, sharing its lock.
    #[arg(long, default_value_t = 2)]
    pub gpu_workers: usize,
    /// Jobs synthesizing at once.
    #[arg(long, default_value_t = 2)]
    pub synthesis_concurrency: usize,
    /// Nice value added to the synthesis threads (0 to 19), so the threads driving the GPU get a
    /// core at once; 0 (the default) runs them at the process's priority.
    #[arg(long, default_value_t = cuzk_pipeline::SYNTHESIS_NICE, value_parser = clap::value_parser!(i32).range(0..=19))]
    pub synthesis_nice: i32,
    /// Host memory the run may use, everything counted: bytes with an optional K, M, G or T
    /// suffix (powers of 1024), or `auto` (the machine's memory, or its cgroup's limit when
    /// lower, less a margin). The parameters, the compiled R1CS and the GPU workers' staging are
    /// taken from it and partitions in flight get the rest; a run where not even one partition
    /// fits stops before it reads the parameters, naming what it needs.
    #[arg(long, default_value = "auto", value_parser = parse_memory)]
    pub memory_budget: MemoryArg,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// The GPUs to prove on, by CUDA ordinal, comma-separated (default: every GPU). An ordinal
    /// may repeat: `0,0` runs two backends on one GPU, a second device to try multi-device
    /// placement and failures with.
    #[arg(
        long,
        value_name = "ORDINALS",
        value_delimiter = ',',
        conflicts_with = "test_params_on_gpu"
    )]
    pub devices: Option<Vec<usize>>,
    /// Make device D (its place in the device list, from 0) fail every proof from its Nth (from
    /// 0) on, as a device that died would: the engine retries those partitions on the other
    /// devices and takes D out of service; no job may be lost.
    #[arg(long, value_name = "D@N", value_parser = parse_fault)]
    pub inject_device_fault: Option<InjectedFault>,
    /// Jobs left out of the steady state: the first to finish, whose time holds the pipeline
    /// filling up and the SRS placement. Seconds per proof, GPU busy and the per-partition figures
    /// cover the run from the last of them to the end.
    #[arg(long, value_name = "JOBS", default_value_t = cuzk_pipeline::analysis::DEFAULT_WARMUP_JOBS)]
    pub warmup: usize,
    /// A latency probe: prove this WinningPoSt or WindowPoSt request (a request file) at CRITICAL
    /// priority, first alone, then one after another while the jobs run (after the warm-up):
    /// what a latency-critical proof waits for behind a busy engine. Its parameters come from
    /// --params-dir; the bench's figures leave its partitions out.
    #[arg(long, value_name = "FILE")]
    pub probe: Option<PathBuf>,
    /// Milliseconds between one probe's end and the next's submission.
    #[arg(long, value_name = "MS", default_value_t = 250, requires = "probe")]
    pub probe_interval_ms: u64,
    /// Write the TIMELINE here (for `cuzk analyze`), each record as it happens: a run stopped
    /// before its end keeps what happened until then.
    #[arg(long)]
    pub timeline: Option<PathBuf>,
    /// Write the JSON summary here (the global `--json` prints it on stdout instead of text).
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// Synthesize every constraint of every partition directly, with no compiled R1CS: neither
    /// the one the engine records from the circuit's first partition nor, for --c1, the one
    /// cached beside the parameters.
    #[arg(long)]
    pub direct_synthesis: bool,
}

/// A memory size as given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryArg {
    Auto,
    Bytes(u64),
}

/// `--inject-device-fault`: which device fails, from which of its proofs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedFault {
    pub device: usize,
    pub from_proof: usize,
}

fn parse_fault(text: &str) -> Result<InjectedFault, String> {
    let unusable = || format!("{text:?} is not DEVICE@PROOF such as 1@20");
    let (device, from_proof) = text.split_once('@').ok_or_else(unusable)?;
    match (device.parse(), from_proof.parse()) {
        (Ok(device), Ok(from_proof)) => Ok(InjectedFault { device, from_proof }),
        _ => Err(unusable()),
    }
}

/// `auto`, or a size in the daemon configuration's grammar (`64GiB`, `512M`, `1.5T`: one
/// grammar for every size cuzk reads), more than zero.
fn parse_memory(text: &str) -> Result<MemoryArg, String> {
    if text == "auto" {
        return Ok(MemoryArg::Auto);
    }
    match cuzk_daemon::config::parse_bytes(text)? {
        0 => Err(format!(
            "{text:?} is no memory: give a size above zero, or auto"
        )),
        bytes => Ok(MemoryArg::Bytes(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_read_as_the_daemon_reads_them() {
        assert_eq!(parse_memory("auto"), Ok(MemoryArg::Auto));
        assert_eq!(parse_memory("16GiB"), Ok(MemoryArg::Bytes(16 << 30)));
        assert_eq!(parse_memory("16G"), Ok(MemoryArg::Bytes(16 << 30)));
        assert_eq!(parse_memory("512M"), Ok(MemoryArg::Bytes(512 << 20)));
        assert_eq!(parse_memory("4096"), Ok(MemoryArg::Bytes(4096)));
        for bad in ["0", "0GiB", "lots", "16 potatoes", ""] {
            assert!(parse_memory(bad).is_err(), "{bad:?}");
        }
    }
}
