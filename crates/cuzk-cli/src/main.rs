//! `cuzk`: set up, prove and verify Groth16 circuits. Glue only: the work lives in the library crates.
#![forbid(unsafe_code)]

/// `println!` for output a reader may stop reading (`cuzk analyze … | head`): when stdout's pipe
/// is closed the process ends as a pipe writer would by SIGPIPE (status 141), where `println!`
/// would panic; Rust leaves SIGPIPE ignored, and this crate keeps no `unsafe` to change that.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}

mod args;
mod backend;
mod circuit;
mod commands;
mod inputs;
mod output;
mod progress;
mod report;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use args::{Cli, Command, ServeArgs};

/// How a command ended, as the exit status says it.
#[derive(Debug)]
pub enum Outcome {
    /// Done (for `verify`: the proof is valid).
    Success,
    /// The command ran and the answer is "no" (for `verify`: the proof is invalid).
    Rejected,
}

/// Exit status for unusable input (bad arguments, unreadable or malformed files).
const EXIT_UNUSABLE: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(threads) = cli.global.threads {
        if let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global()
        {
            eprintln!("cuzk: --threads {threads}: {e}");
            return ExitCode::from(EXIT_UNUSABLE);
        }
    }
    if cli.command.is_some() && cli.daemon.any() {
        eprintln!(
            "cuzk: --config, --listen and --log-level before a command run the daemon: give them \
             alone (`cuzk --config F`) or after `serve`"
        );
        return ExitCode::from(EXIT_UNUSABLE);
    }
    let Some(command) = cli.command else {
        // Curio runs its daemon as `cuzk --config FILE`, or bare with /data/zk/cuzk.toml.
        if cli.daemon.any() || std::path::Path::new(commands::serve::DEFAULT_CONFIG).is_file() {
            return exit(commands::serve::run(
                &cli.global,
                ServeArgs::from(cli.daemon),
            ));
        }
        // Clap's own answer to a missing command: the help on stderr, exit 2.
        let _ = Cli::command().write_long_help(&mut std::io::stderr());
        return ExitCode::from(EXIT_UNUSABLE);
    };
    exit(match command {
        Command::Demo(args) => commands::demo::run(&cli.global, args),
        Command::Setup(args) => commands::setup::run(&cli.global, args),
        Command::Prove(args) => commands::prove::run(&cli.global, args),
        Command::Verify(args) => commands::verify::run(&cli.global, args),
        Command::Analyze(args) => commands::analyze::run(&cli.global, args),
        Command::BenchKernels(args) => commands::bench_kernels::run(&cli.global, args),
        Command::BenchProver(args) => commands::bench_prover::run(&cli.global, args),
        Command::Bench(args) => commands::bench::run(&cli.global, args),
        Command::SealTestSector(args) => commands::porep::seal_test_sector(&cli.global, args),
        Command::SampleSector(args) => commands::porep::sample_sector(&cli.global, args),
        Command::Serve(args) => commands::serve::run(&cli.global, args),
        Command::Client(args) => commands::client::run(&cli.global, args),
        Command::Doctor(args) => commands::doctor::run(&cli.global, args),
    })
}

/// The exit status of a command's result, its error printed first.
fn exit(result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Rejected) => ExitCode::from(1),
        Err(e) => {
            eprintln!("cuzk: {e:#}");
            ExitCode::from(EXIT_UNUSABLE)
        }
    }
}
