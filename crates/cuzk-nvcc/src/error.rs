//! What can go wrong finding, provisioning or running nvcc.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Output};

/// A failure, carrying what a person needs to fix it: the command line and its stderr, or the
/// path that could not be used.
#[derive(Debug)]
pub enum Error {
    /// A command could not be started at all (usually: not installed).
    Spawn { command: String, source: io::Error },
    /// A command ran and exited unsuccessfully.
    Failed {
        command: String,
        status: ExitStatus,
        stderr: String,
    },
    /// A file or directory could not be read or written.
    Io { path: PathBuf, source: io::Error },
    /// An architecture list (`CUZK_CUDA_ARCHS`, `--archs`) that is not like `80,90`.
    Archs { value: String, reason: String },
    /// There is no entry translation unit to compile.
    NoEntry { path: PathBuf },
    /// pip succeeded but the venv holds no nvcc where the wheels put it.
    NoNvccInVenv { venv: PathBuf },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Spawn { command, source } => write!(f, "could not run `{command}`: {source}"),
            Error::Failed {
                command,
                status,
                stderr,
            } => write!(f, "`{command}` failed ({status}):\n{}", stderr.trim_end()),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Archs { value, reason } => write!(
                f,
                "CUDA architectures {value:?}: {reason} (expected compute capabilities like 80,90)"
            ),
            Error::NoEntry { path } => write!(f, "no kernel entry file {}", path.display()),
            Error::NoNvccInVenv { venv } => write!(
                f,
                "pip installed the CUDA wheels but no nvcc matches {}/lib/python3*/site-packages/nvidia/cu13/bin/nvcc",
                venv.display()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn { source, .. } | Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Runs `cmd` with its output captured; a failure carries the command line and its stderr.
pub(crate) fn run(cmd: &mut Command) -> Result<Output, Error> {
    let command = describe(cmd);
    let output = cmd.output().map_err(|source| Error::Spawn {
        command: command.clone(),
        source,
    })?;
    if !output.status.success() {
        return Err(Error::Failed {
            command,
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(output)
}

/// The command line as a person would type it (arguments are not quoted).
fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Wraps an I/O error with the path it concerns.
pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
