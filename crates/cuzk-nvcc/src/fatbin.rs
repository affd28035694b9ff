//! The nvcc command line that turns `cuda/` into one fatbin.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::UNIX_EPOCH;

use crate::error::{io, run, Error};
use crate::Toolchain;

/// The translation unit nvcc compiles; it includes everything else under the CUDA directory.
pub const ENTRY: &str = "cuzk.cu";

/// Overrides the default architectures (e.g. `90` or `80,90`): one architecture compiles several times
/// faster, for development.
pub const ARCHS_ENV: &str = "CUZK_CUDA_ARCHS";

/// The GPUs we ship SASS for: A100 (80), RTX 30xx/A10/A40 (86), L4/L40/RTX 40xx (89), H100/H200 (90).
/// Newer GPUs JIT the PTX of the highest one.
const DEFAULT_ARCHS: [u32; 4] = [80, 86, 89, 90];

/// The compute capabilities to compile SASS for, sorted and without duplicates; the highest one
/// also gets PTX.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archs(Vec<u32>);

impl Default for Archs {
    fn default() -> Self {
        Archs(DEFAULT_ARCHS.to_vec())
    }
}

impl Archs {
    /// Parses a comma-separated list of compute capabilities such as `80,90`.
    pub fn parse(list: &str) -> Result<Self, Error> {
        let bad = |reason: String| Error::Archs {
            value: list.to_owned(),
            reason,
        };
        let mut archs = list
            .split(',')
            .map(|item| {
                let item = item.trim();
                match item.parse::<u32>() {
                    Ok(arch) if (10..1000).contains(&arch) => Ok(arch),
                    _ => Err(bad(format!("{item:?} is not a compute capability"))),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        archs.sort_unstable();
        archs.dedup();
        Ok(Archs(archs))
    }

    /// `$CUZK_CUDA_ARCHS` when set, else 80, 86, 89 and 90.
    pub fn from_env() -> Result<Self, Error> {
        match std::env::var(ARCHS_ENV) {
            Ok(list) => Self::parse(&list),
            Err(std::env::VarError::NotPresent) => Ok(Self::default()),
            Err(std::env::VarError::NotUnicode(value)) => Err(Error::Archs {
                value: value.to_string_lossy().into_owned(),
                reason: "not UTF-8".into(),
            }),
        }
    }

    /// One `-gencode` per architecture; the last (highest) also embeds its PTX.
    fn gencode(&self) -> Vec<String> {
        let last = self.0.len() - 1;
        self.0
            .iter()
            .enumerate()
            .flat_map(|(i, arch)| {
                let code = if i == last {
                    format!("[sm_{arch},compute_{arch}]")
                } else {
                    format!("sm_{arch}")
                };
                [
                    "-gencode".to_owned(),
                    format!("arch=compute_{arch},code={code}"),
                ]
            })
            .collect()
    }
}

impl fmt::Display for Archs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for arch in &self.0 {
            write!(f, "sm_{arch} ")?;
        }
        match self.0.last() {
            Some(arch) => write!(f, "+ compute_{arch} PTX"),
            None => Ok(()),
        }
    }
}

/// Compiles `<cuda_dir>/cuzk.cu` into one fatbin at `out`, holding SASS for each of `archs` and
/// PTX for the highest. `ptxas_verbose` adds ptxas's per-kernel register and spill report.
///
/// Writes a temporary file next to `out` and renames it, so `out` is never half a fatbin, then
/// records next to it what it was built from, for [`is_fresh`]. Returns nvcc's diagnostics (its
/// warnings, and the ptxas report when asked for).
pub fn compile_fatbin(
    toolchain: &Toolchain,
    cuda_dir: &Path,
    out: &Path,
    archs: &Archs,
    ptxas_verbose: bool,
) -> Result<String, Error> {
    // Taken before nvcc reads the sources, so an edit made during the compile makes it stale.
    let inputs = inputs(toolchain, cuda_dir, archs)?;
    let stamp = stamp_path(out);
    match fs::remove_file(&stamp) {
        Err(e) if e.kind() != ErrorKind::NotFound => return Err(io(stamp)(e)),
        _ => {}
    }
    let dir = out.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io(dir))?;
    let tmp = sibling(out, &format!(".{}.tmp", std::process::id()));

    let mut nvcc = Command::new(&toolchain.nvcc);
    nvcc.args(nvcc_args(cuda_dir, archs));
    if ptxas_verbose {
        nvcc.args(["-Xptxas", "-v"]);
    }
    nvcc.arg("-o").arg(&tmp);
    let output = run(&mut nvcc).and_then(|output| {
        fs::rename(&tmp, out).map_err(io(out))?;
        Ok(output)
    });
    if output.is_err() {
        // nvcc may leave a partial file behind; it is of no use to anyone.
        let _ = fs::remove_file(&tmp);
    }
    let output = output?;
    fs::write(&stamp, inputs).map_err(io(stamp))?;
    Ok(String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Whether `fatbin` is what [`compile_fatbin`] would build now: same nvcc, same archs, and every
/// file under `cuda_dir` unchanged (size and modification time) since. Kernels take minutes to
/// compile, so a build script should not redo what `cargo xtask kernels` just did.
pub fn is_fresh(
    toolchain: &Toolchain,
    cuda_dir: &Path,
    fatbin: &Path,
    archs: &Archs,
) -> Result<bool, Error> {
    if !fatbin.is_file() {
        return Ok(false);
    }
    let Ok(recorded) = fs::read_to_string(stamp_path(fatbin)) else {
        return Ok(false);
    };
    Ok(recorded == inputs(toolchain, cuda_dir, archs)?)
}

/// The nvcc arguments, without the output (which is a temporary name) and the ptxas report (which
/// does not change the fatbin). `--threads 0` compiles the architectures in parallel, one per CPU.
fn nvcc_args(cuda_dir: &Path, archs: &Archs) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["-O3", "-std=c++17", "--fatbin", "--threads", "0", "-I"]
        .into_iter()
        .map(OsString::from)
        .collect();
    args.push(cuda_dir.into());
    args.extend(archs.gencode().into_iter().map(OsString::from));
    args.push(cuda_dir.join(ENTRY).into());
    args
}

/// What a fatbin is built from, as text: the nvcc, its arguments, and each file under `cuda_dir`
/// with its size and modification time.
fn inputs(toolchain: &Toolchain, cuda_dir: &Path, archs: &Archs) -> Result<String, Error> {
    let entry = cuda_dir.join(ENTRY);
    if !entry.is_file() {
        return Err(Error::NoEntry { path: entry });
    }
    let mut text = format!("{}\n{}\n", toolchain.nvcc.display(), toolchain.version);
    for arg in nvcc_args(cuda_dir, archs) {
        text += &arg.to_string_lossy();
        text.push('\n');
    }
    for file in files(cuda_dir, |_| true)? {
        let meta = fs::metadata(&file).map_err(io(&file))?;
        let modified = meta.modified().map_err(io(&file))?;
        let since_epoch = modified.duration_since(UNIX_EPOCH).unwrap_or_default();
        text += &format!(
            "{} {} {}.{:09}\n",
            file.display(),
            meta.len(),
            since_epoch.as_secs(),
            since_epoch.subsec_nanos()
        );
    }
    Ok(text)
}

fn stamp_path(fatbin: &Path) -> PathBuf {
    sibling(fatbin, ".inputs")
}

/// `path` with `suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Every `.cu` and `.cuh` file under `cuda_dir`, sorted, for build scripts to watch.
pub fn sources(cuda_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    files(cuda_dir, |path| {
        path.extension()
            .is_some_and(|ext| ext == "cu" || ext == "cuh")
    })
}

/// The files under `dir`, recursively, that `keep` accepts, sorted.
fn files(dir: &Path, keep: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>, Error> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).map_err(io(&dir))? {
            let path = entry.map_err(io(&dir))?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if keep(&path) {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_archs_are_sass_for_each_plus_compute_90_ptx() {
        assert_eq!(
            Archs::default().gencode().join(" "),
            "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
             -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=[sm_90,compute_90]"
        );
        assert_eq!(
            Archs::default().to_string(),
            "sm_80 sm_86 sm_89 sm_90 + compute_90 PTX"
        );
    }

    #[test]
    fn parses_lists_sorted_without_duplicates() {
        assert_eq!(Archs::parse("90").unwrap(), Archs(vec![90]));
        assert_eq!(Archs::parse(" 90, 80,90 ").unwrap(), Archs(vec![80, 90]));
        assert_eq!(
            Archs::parse("90,80").unwrap().gencode().join(" "),
            "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]"
        );
    }

    #[test]
    fn rejects_what_is_not_a_compute_capability() {
        for bad in ["", "sm_90", "80,", "9", "80;90", "1000", "-80"] {
            let err = Archs::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains("expected compute capabilities"),
                "{bad:?}: {err}"
            );
        }
    }

    #[test]
    fn finds_cu_and_cuh_sources_recursively() {
        let dir = std::env::temp_dir().join(format!("cuzk-nvcc-sources-{}", std::process::id()));
        fs::create_dir_all(dir.join("field")).unwrap();
        for file in ["cuzk.cu", "field/mont.cuh", "README.md", "field/notes.txt"] {
            fs::write(dir.join(file), "").unwrap();
        }
        let found = sources(&dir).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, [dir.join("cuzk.cu"), dir.join("field/mont.cuh")]);
    }
}
