//! Each configured circuit (`--circuit`, `[srs] preload`, else those with files on disk): its
//! parameter files judged against filecoin-proofs' manifest, whether a set and one partition
//! fit the daemon's host memory, by the check the daemon makes before a set loads, and what each
//! GPU would keep and stream, as it plans when the set loads.

use std::path::Path;
use std::sync::Arc;

use cuzk_daemon::circuits::filecoin::{circuit_name, circuit_of, served};
use cuzk_daemon::circuits::SetFiles;
use cuzk_daemon::config::{CircuitSet, Config};
use cuzk_daemon::memory::HostBudgets;
use cuzk_filecoin::manifest::{Digests, FileFault, Inspection, Manifest, Origin};
use cuzk_filecoin::{parameter_dir, CircuitId, ParamFiles};
use cuzk_groth16::params_file::ParamsHeader;
use cuzk_groth16::ProverBackend;
use cuzk_pipeline::engine::memory::gib;
use cuzk_pipeline::engine::HostPlan;

use super::Check;
use crate::args::DoctorArgs;

/// `.params` files up to this size are digested without `--digests`: seconds at most.
const DIGEST_BY_DEFAULT: u64 = 1 << 30;

/// The parameter and memory-plan lines of every configured circuit, the device plans on `gpus`.
pub fn circuits(
    config: &Config,
    args: &DoctorArgs,
    budgets: Option<&HostBudgets>,
    gpus: &[Arc<dyn ProverBackend>],
) -> Vec<Check> {
    if config.circuits == CircuitSet::Synthetic {
        return vec![Check::ok(
            "params",
            "daemon.circuits = \"synthetic\": no parameter files",
        )];
    }
    let manifest = match &args.manifest {
        None => Manifest::v28(),
        Some(path) => match Manifest::read(path) {
            Ok(manifest) => manifest,
            Err(e) => {
                return vec![Check::fail(
                    "params",
                    e.to_string(),
                    "give filecoin-proofs' parameters.json, or no --manifest",
                )]
            }
        },
    };
    // Before any other Filecoin call: filecoin-proofs reads its directory once.
    let dir = match parameter_dir(config.param_cache.as_deref()) {
        Ok(dir) => dir,
        Err(e) => {
            return vec![Check::fail(
                "params",
                e.to_string(),
                "set srs.param_cache, or FIL_PROOFS_PARAMETER_CACHE, to the parameter directory",
            )]
        }
    };
    let mut checks = Vec::new();
    let named = args.circuits.iter().chain(&config.preload);
    let mut ids = Vec::new();
    for name in named {
        match circuit_of(name) {
            Some(id) if !ids.contains(&id) => ids.push(id),
            Some(_) => {}
            None => checks.push(Check::fail(
                format!("params {name}"),
                format!(
                    "unknown circuit {name:?} (known: {})",
                    served().map(circuit_name).collect::<Vec<_>>().join(", ")
                ),
                "name circuits as porep-, winning-, wpost- or snap- and a size: 2k, 8m, 512m, \
                 32g, 64g",
            )),
        }
    }
    if ids.is_empty() && checks.is_empty() {
        ids = served()
            .filter(|&id| ParamFiles::new(&dir, id).is_ok_and(|files| files.params.exists()))
            .collect();
        if ids.is_empty() {
            return vec![Check::warn(
                "params",
                format!(
                    "nothing in [srs] preload and no parameter files in {}: every request will \
                     fail until its circuit's files are there",
                    dir.display()
                ),
            )
            .with_fix(format!(
                "fetch the network's parameters for your sector size into {} \
                 (`curio fetch-params 32GiB`), or point srs.param_cache at them",
                dir.display()
            ))];
        }
    }
    let digests = match args.digests {
        true => Digests::All,
        false => Digests::UpTo(DIGEST_BY_DEFAULT),
    };
    for id in ids {
        let inspected = (&manifest, digests);
        checks.extend(circuit(config, &dir, id, inspected, budgets, gpus));
    }
    checks
}

/// One circuit's lines: its files, then its memory plans (the host's, each GPU's) when the files
/// read.
fn circuit(
    config: &Config,
    dir: &Path,
    id: CircuitId,
    (manifest, digests): (&Manifest, Digests),
    budgets: Option<&HostBudgets>,
    gpus: &[Arc<dyn ProverBackend>],
) -> Vec<Check> {
    let name = circuit_name(id);
    let files = match ParamFiles::new(dir, id) {
        Ok(files) => files,
        Err(e) => {
            return vec![Check::fail(
                format!("params {name}"),
                e.to_string(),
                "report this: cuzk cannot name this circuit's files",
            )]
        }
    };
    let inspection = files.inspect(manifest, digests);
    let mut checks = vec![files_check(&name, id, &files, &inspection, dir)];
    let Some(header) = inspection.header else {
        return checks;
    };
    let r1cs_bytes = config
        .compiled_synthesis
        .then(|| files.r1cs_file_bytes().unwrap_or(0));
    if let Some(budgets) = budgets {
        checks.push(plan_check(&name, &header, r1cs_bytes, budgets));
    }
    checks.extend(
        gpus.iter()
            .filter_map(|gpu| device_plan(&name, &header, r1cs_bytes, gpu)),
    );
    checks
}

/// What proofs of the circuit would keep on `gpu` and stream, as it would plan them when the set
/// loads; `None` for a backend with no device.
fn device_plan(
    name: &str,
    header: &ParamsHeader,
    r1cs_bytes: Option<u64>,
    gpu: &Arc<dyn ProverBackend>,
) -> Option<Check> {
    // An R1CS not recorded yet: a, b and c from the host until it is.
    let recorded = r1cs_bytes.filter(|&bytes| bytes > 0);
    let planned = gpu.plan_ahead(header.inputs, header.lengths, recorded)?;
    let check = format!("plan {name} on {}", gpu.name());
    Some(match planned {
        Ok(plan) => Check::ok(check, plan),
        Err(why) => Check::fail(
            check,
            format!("cannot run: {why}"),
            "give cuzk more of this GPU (gpus.memory_limit, or free it from other processes), \
             or prove this circuit on a GPU with more memory",
        ),
    })
}

/// The verdict on a circuit's files.
fn files_check(
    name: &str,
    id: CircuitId,
    files: &ParamFiles,
    inspection: &Inspection,
    dir: &Path,
) -> Check {
    let check = format!("params {name}");
    let whose = id.to_string();
    if !inspection.faults.is_empty() {
        let faults: Vec<String> = inspection.faults.iter().map(|f| f.to_string()).collect();
        let missing = inspection
            .faults
            .iter()
            .all(|f| matches!(f, FileFault::Missing { .. }));
        let fetch = format!(
            "the network's {} parameters into {} (`curio fetch-params {}`)",
            id.size(),
            dir.display(),
            id.size()
        );
        let setup = format!("{} --out {}", id.setup_command(), dir.display());
        let fix = match missing {
            true => format!("fetch {fetch}, or write test ones with `{setup}`"),
            false => format!(
                "delete the files named and fetch {fetch} again (test parameters: `{setup}` again)"
            ),
        };
        let detail = match missing {
            true => format!("{whose} needs them: {}", faults.join("; ")),
            false => format!("{whose}: {}", faults.join("; ")),
        };
        return Check::fail(check, detail, fix);
    }
    let size = inspection
        .header
        .map(|h| format!("{}, whole", gib(h.file_bytes)))
        .unwrap_or_default();
    let digest = match inspection.params_digested {
        true => "digest matches",
        false => "digest not checked (--digests)",
    };
    let params = files.params.display();
    match inspection.origin {
        Some(Origin::Network) => Check::ok(
            check,
            format!("{whose}: the network's, {params} ({size}; {digest})"),
        ),
        Some(Origin::Test) => Check::warn(
            check,
            format!(
                "{whose}: test parameters, not the network's (`cuzk setup`: proofs verify only \
                 against their own .vk), {params} ({size})"
            ),
        )
        .with_fix(format!(
            "for proofs the chain accepts, fetch the network's {} parameters",
            id.size()
        )),
        None => Check::warn(
            check,
            format!("{whose}: {params}: whose they are is unknown"),
        ),
    }
}

/// Whether the set and one partition fit the daemon's host memory, as the daemon checks it before
/// a set loads.
fn plan_check(
    name: &str,
    header: &ParamsHeader,
    r1cs_bytes: Option<u64>,
    budgets: &HostBudgets,
) -> Check {
    let check = format!("plan {name}");
    let set = SetFiles {
        header: *header,
        r1cs_bytes,
    };
    if let Err(e) = budgets.check(&set) {
        return Check::fail(
            check,
            format!("cannot run: {e}"),
            "give the daemon more memory (memory.total_budget, the cgroup's MemoryMax) or a \
             smaller memory.srs_budget, or serve this circuit on a larger host",
        );
    }
    let plan = HostPlan::for_set(&set.header, set.r1cs_bytes, false);
    let parts: Vec<String> = plan
        .held
        .iter()
        .map(|p| format!("{} {}", p.what, gib(p.bytes)))
        .collect();
    let recorded = match set.r1cs_bytes {
        Some(0) => "; its compiled R1CS is recorded at first load (minutes for 32 GiB sectors)",
        _ => "",
    };
    Check::ok(
        check,
        format!(
            "fits host memory: {}, one partition in flight {} of the partitions' {}{recorded}",
            parts.join(", "),
            gib(plan.partition),
            gib(budgets.partitions)
        ),
    )
}
