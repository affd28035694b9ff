//! `cargo xtask sweep`: `cuzk bench` over a grid of partition workers × GPU workers × concurrency,
//! collected into one CSV table and one SVG chart.
//!
//! ```text
//! cargo xtask sweep [--partition-workers 1,2,4] [--gpu-workers 1,2] [--concurrency 1,2]
//!                   [--out DIR] [-- BENCH ARGS]
//! ```
//! The bench arguments after `--` replace the default ones (a small CPU run).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde_json::Value;

const DEFAULT_BENCH: [&str; 10] = [
    "--backend",
    "cpu",
    "--constraints",
    "4000",
    "-j",
    "4",
    "--partitions",
    "4",
    "--memory-budget",
    "1G",
];

/// The CSV columns after the three grid columns, each a summary value by its JSON pointer.
const COLUMNS: [(&str, &str); 9] = [
    ("steady_state_s_per_proof", "/steady_state_s_per_proof"),
    ("wall_s", "/wall_s"),
    ("gpu_busy_fraction", "/gpu_busy_fraction"),
    ("gpu_ms_median", "/per_partition/gpu_ms/median"),
    (
        "prove_start_ms_median",
        "/per_partition/prove_start_ms/median",
    ),
    ("max_synth_in_flight", "/max_synth_in_flight"),
    ("gpu_idle_windows", "/gpu_idle_windows"),
    ("peak_memory_bytes", "/peak_memory_bytes"),
    ("backend", "/backend"),
];

struct Grid {
    partition_workers: Vec<usize>,
    gpu_workers: Vec<usize>,
    concurrency: Vec<usize>,
    out: PathBuf,
    bench: Vec<String>,
}

/// One grid point and what `cuzk bench` said about it.
struct Point {
    partition_workers: usize,
    gpu_workers: usize,
    concurrency: usize,
    summary: Value,
}

impl Point {
    fn label(&self) -> String {
        format!(
            "pw{} gw{} c{}",
            self.partition_workers, self.gpu_workers, self.concurrency
        )
    }
}

fn list(flag: &str, value: Option<&String>) -> Result<Vec<usize>> {
    let value = value.with_context(|| format!("{flag} needs a comma-separated list"))?;
    let numbers = value
        .split(',')
        .map(|n| n.trim().parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{flag} {value}: not a list of numbers"))?;
    if numbers.is_empty() || numbers.contains(&0) {
        bail!("{flag} {value}: every value must be at least 1");
    }
    Ok(numbers)
}

impl Grid {
    fn parse(args: &[String], root: &Path) -> Result<Self> {
        let mut grid = Grid {
            partition_workers: vec![1, 2],
            gpu_workers: vec![1, 2],
            concurrency: vec![1, 2],
            out: root.join("target/sweep"),
            bench: DEFAULT_BENCH.iter().map(|s| (*s).to_owned()).collect(),
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            match flag.as_str() {
                "--partition-workers" => grid.partition_workers = list(flag, args.next())?,
                "--gpu-workers" => grid.gpu_workers = list(flag, args.next())?,
                "--concurrency" => grid.concurrency = list(flag, args.next())?,
                "--out" => {
                    grid.out = args.next().context("--out needs a directory")?.into();
                }
                "--" => {
                    grid.bench = args.by_ref().cloned().collect();
                }
                other => bail!("sweep: unknown argument {other:?}"),
            }
        }
        Ok(grid)
    }

    fn points(&self) -> Vec<(usize, usize, usize)> {
        let mut points = Vec::new();
        for &pw in &self.partition_workers {
            for &gw in &self.gpu_workers {
                for &c in &self.concurrency {
                    points.push((pw, gw, c));
                }
            }
        }
        points
    }
}

/// `cuzk --json bench` at one grid point.
fn bench(grid: &Grid, (pw, gw, c): (usize, usize, usize)) -> Result<Point> {
    let cargo = crate::cargo_program();
    let (pw_s, gw_s, c_s) = (pw.to_string(), gw.to_string(), c.to_string());
    let mut args = vec![
        "run",
        "--quiet",
        "--release",
        "-p",
        "cuzk-cli",
        "--",
        "--json",
        "bench",
    ];
    args.extend([
        "--partition-workers",
        &pw_s,
        "--gpu-workers",
        &gw_s,
        "--concurrency",
        &c_s,
    ]);
    args.extend(grid.bench.iter().map(String::as_str));
    let output = Command::new(&cargo)
        .args(&args)
        .output()
        .with_context(|| format!("running {cargo} {}", args.join(" ")))?;
    if !output.status.success() {
        bail!(
            "cuzk bench {}: {}",
            args[8..].join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let summary = serde_json::from_slice(&output.stdout).context("cuzk bench printed no JSON")?;
    Ok(Point {
        partition_workers: pw,
        gpu_workers: gw,
        concurrency: c,
        summary,
    })
}

fn csv(points: &[Point]) -> String {
    let mut out = format!(
        "partition_workers,gpu_workers,concurrency,{}\n",
        COLUMNS.map(|(name, _)| name).join(",")
    );
    for p in points {
        let _ = write!(
            out,
            "{},{},{}",
            p.partition_workers, p.gpu_workers, p.concurrency
        );
        for (_, pointer) in COLUMNS {
            let cell = match p.summary.pointer(pointer).unwrap_or(&Value::Null) {
                Value::Null => String::new(),
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let _ = write!(out, ",{cell}");
        }
        out.push('\n');
    }
    out
}

/// One bar per grid point: its steady-state seconds per proof, with the GPU busy percentage above.
fn svg(points: &[Point]) -> String {
    const BAR: f64 = 36.0;
    const GAP: f64 = 14.0;
    const HEIGHT: f64 = 260.0;
    const LEFT: f64 = 60.0;
    const TOP: f64 = 40.0;
    let value = |p: &Point| p.summary["steady_state_s_per_proof"].as_f64();
    let max = points
        .iter()
        .filter_map(value)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    // Room for the title, and for the last label slanting right.
    let width = (LEFT + points.len() as f64 * (BAR + GAP) + GAP + 60.0).max(420.0);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{:.0}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n\
         <text x=\"{LEFT}\" y=\"18\" font-size=\"14\">steady state, s per proof (label: GPU busy %)</text>\n\
         <line x1=\"{LEFT}\" y1=\"{}\" x2=\"{width:.0}\" y2=\"{}\" stroke=\"black\"/>\n\
         <text x=\"4\" y=\"{}\">{max:.3} s</text>\n",
        TOP + HEIGHT + 90.0,
        TOP + HEIGHT,
        TOP + HEIGHT,
        TOP + 4.0,
    );
    for (i, p) in points.iter().enumerate() {
        let x = LEFT + GAP + i as f64 * (BAR + GAP);
        let label_y = TOP + HEIGHT + 12.0;
        let _ = writeln!(
            out,
            "<text transform=\"translate({:.1},{label_y:.1}) rotate(60)\">{}</text>",
            x + 4.0,
            p.label()
        );
        let Some(seconds) = value(p) else {
            continue;
        };
        let h = seconds / max * HEIGHT;
        let busy = p.summary["gpu_busy_fraction"].as_f64().unwrap_or(0.0) * 100.0;
        let _ = writeln!(
            out,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{BAR}\" height=\"{h:.1}\" fill=\"hsl(210,60%,55%)\">\
             <title>{}: {seconds:.3} s per proof, GPU busy {busy:.1}%</title></rect>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{busy:.0}%</text>",
            TOP + HEIGHT - h,
            p.label(),
            x + BAR / 2.0,
            TOP + HEIGHT - h - 3.0,
        );
    }
    out.push_str("</svg>\n");
    out
}

pub fn run(args: &[String]) -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask is not inside the workspace")?;
    let grid = Grid::parse(args, root)?;
    let mut points = Vec::new();
    for point in grid.points() {
        let done = bench(&grid, point)?;
        eprintln!(
            "{}: {} s per proof, GPU busy {}",
            done.label(),
            done.summary["steady_state_s_per_proof"],
            done.summary["gpu_busy_fraction"]
        );
        points.push(done);
    }
    std::fs::create_dir_all(&grid.out)
        .with_context(|| format!("creating {}", grid.out.display()))?;
    for (name, text) in [("sweep.csv", csv(&points)), ("sweep.svg", svg(&points))] {
        let path = grid.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}
