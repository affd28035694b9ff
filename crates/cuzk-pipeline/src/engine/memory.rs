//! Host memory: how much the process may really use, and the plan a run is checked against
//! before anything loads, so that a run too big for its host stops with an error naming what it
//! needs instead of being killed by the kernel.
//!
//! - [`machine_memory`]: the least of `MemTotal` and the process's cgroup limit. Under systemd's
//!   `MemoryMax` or a container the kernel's killer acts at the cgroup's limit, not at `MemTotal`.
//! - [`auto_memory_budget`]: that, less a margin for everything else.
//! - [`HostPlan`]: what a run holds beside its partitions (parameters, compiled R1CS, GPU
//!   staging) and the one partition in flight it needs at least; refused with a [`MemoryError`]
//!   that lists each part when it does not fit.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cuzk_groth16::params_file::ParamsHeader;
use cuzk_groth16::{Parameters, ProverBackend};
use cuzk_synth::CompiledR1cs;

use super::config::ConfigError;
use super::job::PartitionMemory;

/// Memory left to the rest of the machine by [`auto_memory_budget`]: a tenth of it, at least
/// 4 GiB, but never more than a quarter (a 3 GiB cgroup keeps 2.25 GiB to prove with).
const MARGIN_FRACTION: u64 = 10;
const MIN_MARGIN: u64 = 4 << 30;
const MAX_MARGIN_FRACTION: u64 = 4;

/// cgroup v1 says "no limit" with the largest page-aligned signed 64-bit count (2^63 − 4096);
/// anything from 2^62 bytes up is no limit either.
const NO_LIMIT: u64 = 1 << 62;

/// A byte count and where it comes from, for messages that let an operator check it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostMemory {
    pub bytes: u64,
    /// "MemTotal", "cgroup memory.max of /sys/fs/cgroup/…", "--memory-budget" ….
    pub source: String,
}

impl HostMemory {
    pub fn new(bytes: u64, source: impl Into<String>) -> Self {
        HostMemory {
            bytes,
            source: source.into(),
        }
    }
}

impl fmt::Display for HostMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", gib(self.bytes), self.source)
    }
}

/// Bytes as GiB with two decimals ("1.50 GiB"), as the messages of this module print them.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// The memory this process may use: `MemTotal`, or its cgroup's limit when that is lower (v2
/// `memory.max`, v1 `memory.limit_in_bytes`, of its cgroup and every ancestor).
pub fn machine_memory() -> Result<HostMemory, ConfigError> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .map_err(|e| ConfigError::MachineMemory(format!("/proc/meminfo: {e}")))?;
    let total = mem_total(&meminfo)
        .ok_or_else(|| ConfigError::MachineMemory("/proc/meminfo has no MemTotal line".into()))?;
    let total = HostMemory::new(total, "MemTotal");
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    Ok(match cgroup_limit(&read) {
        Some(limit) if limit.bytes < total.bytes => limit,
        _ => total,
    })
}

/// [`machine_memory`] less a margin for everything else (a tenth, at least 4 GiB, at most a
/// quarter); its source says both.
pub fn auto_memory_budget() -> Result<HostMemory, ConfigError> {
    let machine = machine_memory()?;
    let margin = auto_margin(machine.bytes);
    match machine.bytes.checked_sub(margin) {
        Some(budget) if budget > 0 => Ok(HostMemory::new(
            budget,
            format!("{machine} less a margin of {}", gib(margin)),
        )),
        _ => Err(ConfigError::MachineMemory(format!(
            "{machine} leaves nothing after a margin of {}",
            gib(margin)
        ))),
    }
}

fn auto_margin(total: u64) -> u64 {
    (total / MARGIN_FRACTION)
        .max(MIN_MARGIN)
        .min(total / MAX_MARGIN_FRACTION)
}

/// `MemTotal` of /proc/meminfo's text, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let kib = line.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?;
        kib.trim().parse::<u64>().ok()?.checked_mul(1024)
    })
}

/// A memory limit file's value: `None` for "max" (v2) or a count too large to be one (v1).
fn parse_limit(text: &str) -> Option<u64> {
    let text = text.trim();
    if text == "max" {
        return None;
    }
    text.parse::<u64>().ok().filter(|&bytes| bytes < NO_LIMIT)
}

/// Which cgroups /proc/self/cgroup puts the process in, for memory.
#[derive(Debug, Default, PartialEq, Eq)]
struct Memberships {
    /// The v2 path (the `0::/path` line).
    unified: Option<String>,
    /// The v1 memory controller's path.
    memory: Option<String>,
}

fn memberships(cgroup: &str) -> Memberships {
    let mut found = Memberships::default();
    for line in cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            found.unified = Some(path.to_owned());
        } else if controllers.split(',').any(|c| c == "memory") {
            found.memory = Some(path.to_owned());
        }
    }
    found
}

/// Where a cgroup hierarchy is mounted: the mount point, and which cgroup it shows as its root
/// (`/` but in a container that mounts its own cgroup).
#[derive(Debug, PartialEq, Eq)]
struct Mount {
    point: PathBuf,
    root: String,
}

/// The v2 hierarchy's mount (`unified`) or the v1 memory controller's, from /proc/self/mountinfo:
/// `ID PARENT DEV ROOT POINT OPTIONS… - FSTYPE SOURCE SUPER_OPTIONS`.
fn mount(mountinfo: &str, unified: bool) -> Option<Mount> {
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let mut after = after.split(' ');
        let fstype = after.next()?;
        let options = after.nth(1).unwrap_or("");
        let wanted = match unified {
            true => fstype == "cgroup2",
            false => fstype == "cgroup" && options.split(',').any(|o| o == "memory"),
        };
        (wanted && fields.len() >= 5).then(|| Mount {
            root: fields[3].to_owned(),
            point: PathBuf::from(fields[4]),
        })
    })
}

/// A memory cgroup the process is in, as this machine mounts it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnCgroup {
    /// Its directory.
    pub dir: PathBuf,
    /// The file there that holds its limit (`memory.max` in v2, `memory.limit_in_bytes` in v1).
    pub limit_file: &'static str,
    /// The hierarchy's mount point: the farthest ancestor the process can see.
    mount: PathBuf,
}

/// The process's memory cgroups, v2 then v1 (where a cgroup of its own can be made for a run).
pub fn own_memory_cgroups() -> Vec<OwnCgroup> {
    own_cgroups(&|path: &Path| std::fs::read_to_string(path).ok())
}

/// [`own_memory_cgroups`] with `read` giving a file's text (a seam for tests).
fn own_cgroups(read: &dyn Fn(&Path) -> Option<String>) -> Vec<OwnCgroup> {
    let Some(cgroup) = read(Path::new("/proc/self/cgroup")) else {
        return Vec::new();
    };
    let mountinfo = read(Path::new("/proc/self/mountinfo")).unwrap_or_default();
    let found = memberships(&cgroup);
    let hierarchies = [
        (found.unified, true, "/sys/fs/cgroup", "memory.max"),
        (
            found.memory,
            false,
            "/sys/fs/cgroup/memory",
            "memory.limit_in_bytes",
        ),
    ];
    let mut own = Vec::new();
    for (path, unified, default_point, limit_file) in hierarchies {
        let Some(path) = path else { continue };
        let mount = mount(&mountinfo, unified).unwrap_or_else(|| Mount {
            point: PathBuf::from(default_point),
            root: "/".into(),
        });
        // The process's cgroup as the mount shows it; one outside the mount's root cannot be
        // seen, and the mount's own root is the nearest that can.
        let relative = path
            .strip_prefix(mount.root.as_str())
            .unwrap_or("")
            .trim_start_matches('/');
        own.push(OwnCgroup {
            dir: mount.point.join(relative),
            limit_file,
            mount: mount.point,
        });
    }
    own
}

/// The least limit set on the process's cgroup or one of its ancestors, v2 and v1 alike, with
/// the file that sets it; `read` gives a file's text (a seam for tests).
fn cgroup_limit(read: &dyn Fn(&Path) -> Option<String>) -> Option<HostMemory> {
    let mut least: Option<HostMemory> = None;
    for OwnCgroup {
        mut dir,
        limit_file,
        mount,
    } in own_cgroups(read)
    {
        loop {
            let limit = read(&dir.join(limit_file)).and_then(|text| parse_limit(&text));
            if let Some(bytes) = limit.filter(|&b| least.as_ref().is_none_or(|l| b < l.bytes)) {
                let source = format!("cgroup {limit_file} of {}", dir.display());
                least = Some(HostMemory::new(bytes, source));
            }
            if dir == mount || !dir.pop() {
                break;
            }
        }
    }
    least
}

/// One thing a run holds in host memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanPart {
    pub what: String,
    pub bytes: u64,
}

/// What a run holds in host memory for its whole life (its `held` parts) and the least its
/// partitions in flight need (one partition: the engine's reservation for it). Made from the
/// files before anything is read, so a run that cannot fit stops before it loads; made again
/// once the parameters are loaded ([`HostPlan::loaded`]), when the backends can tell whether
/// they compute a, b and c for the set and what their GPU workers stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPlan {
    pub held: Vec<PlanPart>,
    /// Host bytes of one partition in flight.
    pub partition: u64,
}

/// What one partition in flight holds, as [`HostPlan`] and its errors name it.
const ONE_PARTITION: &str = "one partition in flight";

impl HostPlan {
    /// Proving with one parameter set, from its files: its points (the file's bytes), its
    /// compiled R1CS (`r1cs_bytes`, when synthesis uses one) and one partition in flight as the
    /// engine reserves it (witness only when `products_deferred` leaves a, b and c to the
    /// devices; before a set loads nobody can tell, and `false` is the safe side).
    pub fn for_set(
        header: &ParamsHeader,
        r1cs_bytes: Option<u64>,
        products_deferred: bool,
    ) -> Self {
        HostPlan {
            held: Vec::new(),
            partition: PartitionMemory::of_header(header).reserved(products_deferred),
        }
        .hold("parameters", header.file_bytes)
        .hold("compiled R1CS", r1cs_bytes.unwrap_or(0))
    }

    /// Proving with `params`, loaded, on `backends`: the set and its `compiled` R1CS, one
    /// partition in flight (witness only where every backend computes a, b and c for the set),
    /// and what each backend stages in host memory per GPU worker (page-locked a, b, c and
    /// witness, or the witness alone), times its workers.
    pub fn loaded(
        params: &Parameters,
        compiled: Option<&Arc<CompiledR1cs>>,
        backends: &[Arc<dyn ProverBackend>],
        gpu_workers_per_device: usize,
    ) -> Self {
        let defers = |b: &Arc<dyn ProverBackend>| {
            compiled.is_some_and(|compiled| b.computes_products(params, compiled))
        };
        let header = ParamsHeader::of(params);
        let r1cs_bytes = compiled.map(|c| c.heap_bytes());
        let plan = Self::for_set(&header, r1cs_bytes, backends.iter().all(defers));
        let workers = backends.len() * gpu_workers_per_device;
        let staging: u64 = backends
            .iter()
            .map(|b| b.host_bytes_per_proof(params, defers(b)) * gpu_workers_per_device as u64)
            .sum();
        plan.hold(format!("staging of {workers} GPU worker(s)"), staging)
    }

    /// Adds a part (parts of 0 bytes are left out of the plan and its messages).
    pub fn hold(mut self, what: impl Into<String>, bytes: u64) -> Self {
        if bytes > 0 {
            self.held.push(PlanPart {
                what: what.into(),
                bytes,
            });
        }
        self
    }

    /// Another plan's parts held beside this one's (a second parameter set).
    pub fn beside(mut self, other: &HostPlan, whose: &str) -> Self {
        for part in &other.held {
            self = self.hold(format!("{whose} {}", part.what), part.bytes);
        }
        self
    }

    /// Bytes of the parts held for the whole run.
    pub fn held_bytes(&self) -> u64 {
        self.held.iter().map(|p| p.bytes).sum()
    }

    /// Everything the plan needs at least: the held parts and one partition.
    pub fn needed(&self) -> u64 {
        self.held_bytes() + self.partition
    }

    /// What `available` leaves for partitions in flight once the held parts are taken: the
    /// engine's memory budget. Refused when not even one partition fits beside them.
    pub fn partitions_budget(&self, available: &HostMemory) -> Result<u64, MemoryError> {
        match available.bytes.checked_sub(self.held_bytes()) {
            Some(left) if left >= self.partition => Ok(left),
            _ => Err(self.refused(available)),
        }
    }

    /// For memory split in shares (a daemon's: parameter sets apart from partitions): refused
    /// when one partition does not fit the partitions' `share`.
    pub fn partition_fits(&self, share: &HostMemory) -> Result<(), MemoryError> {
        match self.partition <= share.bytes {
            true => Ok(()),
            false => Err(self.refused(share)),
        }
    }

    fn refused(&self, available: &HostMemory) -> MemoryError {
        let partition = PlanPart {
            what: ONE_PARTITION.into(),
            bytes: self.partition,
        };
        MemoryError {
            needed: self.needed(),
            parts: self.held.iter().cloned().chain([partition]).collect(),
            available: available.clone(),
        }
    }
}

/// A run that does not fit the host memory it may use, refused before it loads anything.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "not enough host memory: {} needed ({}), {available} available",
    gib(*needed),
    parts.iter().map(|p| format!("{} {}", p.what, gib(p.bytes))).collect::<Vec<_>>().join(", ")
)]
pub struct MemoryError {
    pub needed: u64,
    pub parts: Vec<PlanPart>,
    pub available: HostMemory,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashMap;

    use cuzk_groth16::keys::QueryLengths;

    use super::*;

    const GIB: u64 = 1 << 30;

    /// A read over fabricated files.
    fn files(entries: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let map: HashMap<PathBuf, String> = entries
            .iter()
            .map(|(p, t)| (PathBuf::from(p), (*t).to_owned()))
            .collect();
        move |path: &Path| map.get(path).cloned()
    }

    const V2_MOUNT: &str = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";

    #[test]
    fn mem_total_and_limits_parse() {
        let meminfo = "MemFree: 10 kB\nMemTotal:       24683792 kB\n";
        assert_eq!(mem_total(meminfo), Some(24683792 * 1024));
        assert_eq!(mem_total("MemFree: 10 kB\n"), None);
        assert_eq!(parse_limit("1572864000\n"), Some(1572864000));
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712"), None, "v1's no limit");
        assert_eq!(parse_limit("lots"), None);
    }

    #[test]
    fn memberships_name_the_unified_and_the_memory_cgroup() {
        let v1 = "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpu,cpuacct:/x\n0::/\n";
        assert_eq!(
            memberships(v1),
            Memberships {
                unified: Some("/".into()),
                memory: Some("/process_api/abc".into()),
            }
        );
        assert_eq!(
            memberships("0::/system.slice/cuzk.service\n"),
            Memberships {
                unified: Some("/system.slice/cuzk.service".into()),
                memory: None,
            }
        );
    }

    #[test]
    fn a_v2_limit_is_found_on_the_cgroup_or_an_ancestor() {
        let dir = "/sys/fs/cgroup/system.slice/cuzk.service";
        let read = files(&[
            ("/proc/self/cgroup", "0::/system.slice/cuzk.service\n"),
            ("/proc/self/mountinfo", V2_MOUNT),
            (&format!("{dir}/memory.max"), "max\n"),
            ("/sys/fs/cgroup/system.slice/memory.max", "1610612736\n"),
        ]);
        let limit = cgroup_limit(&read).unwrap();
        assert_eq!(limit.bytes, 1610612736);
        assert_eq!(
            limit.to_string(),
            "1.50 GiB (cgroup memory.max of /sys/fs/cgroup/system.slice)"
        );
        // The least of several wins; "max" everywhere is no limit.
        let read = files(&[
            ("/proc/self/cgroup", "0::/a/b\n"),
            ("/proc/self/mountinfo", V2_MOUNT),
            ("/sys/fs/cgroup/a/b/memory.max", "1073741824\n"),
            ("/sys/fs/cgroup/a/memory.max", "2147483648\n"),
        ]);
        assert_eq!(cgroup_limit(&read).unwrap().bytes, GIB);
        let read = files(&[
            ("/proc/self/cgroup", "0::/a\n"),
            ("/proc/self/mountinfo", V2_MOUNT),
            ("/sys/fs/cgroup/a/memory.max", "max\n"),
        ]);
        assert_eq!(cgroup_limit(&read), None);
    }

    #[test]
    fn a_v1_limit_is_read_where_the_memory_controller_is_mounted() {
        // A hybrid host (this machine's layout): v2 mounted apart, holding no memory limit.
        let mountinfo =
            "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                         41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let read = files(&[
            ("/proc/self/cgroup", "4:memory:/process_api/abc/t\n0::/\n"),
            ("/proc/self/mountinfo", mountinfo),
            (
                "/sys/fs/cgroup/memory/process_api/abc/t/memory.limit_in_bytes",
                "3221225472\n",
            ),
            (
                "/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        let limit = cgroup_limit(&read).unwrap();
        assert_eq!(limit.bytes, 3 * GIB);
        assert!(limit.source.contains("memory.limit_in_bytes"), "{limit}");
        // A container's own mount shows its cgroup as the root.
        let mountinfo = "1 0 0:32 /docker/xyz /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n";
        let read = files(&[
            ("/proc/self/cgroup", "4:memory:/docker/xyz\n"),
            ("/proc/self/mountinfo", mountinfo),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "2147483648\n",
            ),
        ]);
        assert_eq!(cgroup_limit(&read).unwrap().bytes, 2 * GIB);
        // No cgroup file at all: no limit known.
        assert_eq!(cgroup_limit(&files(&[])), None);
    }

    #[test]
    fn the_automatic_margin_leaves_small_hosts_something() {
        assert_eq!(auto_margin(128 * GIB), 128 * GIB / 10);
        assert_eq!(auto_margin(24 * GIB), 4 * GIB);
        assert_eq!(auto_margin(3 * GIB), 3 * GIB / 4);
    }

    /// A header of `domain` rows, `aux` aux variables and a file of `file` bytes.
    fn header(domain: usize, aux: usize, file: u64) -> ParamsHeader {
        ParamsHeader {
            inputs: 41,
            lengths: QueryLengths {
                h: domain - 1,
                l: aux,
                a: aux,
                b_g1: aux / 2,
                b_g2: aux / 2,
            },
            file_bytes: file,
        }
    }

    #[test]
    fn a_plan_that_fits_leaves_the_rest_to_partitions() {
        // 2 KiB PoRep: 2^22 rows, 2.69M aux, a 1.2 GB parameter file.
        let set = header(1 << 22, 2_685_673, 1_200_000_000);
        let plan = HostPlan::for_set(&set, Some(150_000_000), false);
        let partition = 32 * (3 << 22) + 32 * (41 + 2_685_673);
        assert_eq!(plan.partition, partition);
        assert_eq!(plan.held_bytes(), 1_350_000_000);
        let left = plan
            .partitions_budget(&HostMemory::new(3 * GIB, "test"))
            .unwrap();
        assert_eq!(left, 3 * GIB - 1_350_000_000);
        // Without an R1CS the part is left out.
        let direct = HostPlan::for_set(&set, None, false);
        assert_eq!(direct.held.len(), 1);
    }

    #[test]
    fn a_plan_that_does_not_fit_names_each_part_and_the_source() {
        // 32 GiB PoRep on a 40 GiB budget: 47.4 GB of parameters alone do not fit.
        let set = header(1 << 27, 130_000_000, 47_400_000_000);
        let plan = HostPlan::for_set(&set, Some(7_300_000_000), false)
            .hold("staging of 2 GPU worker(s)", 34_200_000_000);
        let error = plan
            .partitions_budget(&HostMemory::new(40 * GIB, "--memory-budget"))
            .unwrap_err();
        assert_eq!(error.needed, plan.needed());
        let message = error.to_string();
        for part in [
            "not enough host memory",
            "parameters 44.14 GiB",
            "compiled R1CS 6.80 GiB",
            "staging of 2 GPU worker(s) 31.85 GiB",
            "one partition in flight 15.87 GiB",
            "40.00 GiB (--memory-budget) available",
        ] {
            assert!(message.contains(part), "{part:?} in {message}");
        }
        // Exactly one partition beside the held parts fits; a byte less does not.
        let exact = HostMemory::new(plan.needed(), "exact");
        assert_eq!(plan.partitions_budget(&exact), Ok(plan.partition));
        let short = HostMemory::new(plan.needed() - 1, "short");
        assert!(plan.partitions_budget(&short).is_err());
        // A second set beside the first is named as such.
        let probe = HostPlan::for_set(&header(1 << 10, 500, 100_000), None, false);
        let both = plan.clone().beside(&probe, "--probe");
        assert_eq!(both.held_bytes(), plan.held_bytes() + 100_000);
        assert!(both.held.iter().any(|p| p.what == "--probe parameters"));
    }
}
