//! `cuzk doctor`: what an operator runs before `cuzk serve`, or when something is wrong. Each
//! check is one line with a verdict and, for a failure, what to do; the checks ask the same
//! code the daemon runs (its configuration loader, backend selection, memory budgets, parameter
//! files), so the answer is the daemon's. Exit 0 when the configured work can run, 2 otherwise.
//!
//! - [`system`]: GPUs and their kernels, host memory and its limit, the page-lock limit.
//! - [`params`]: each configured circuit's parameter files and its memory plan.
//! - [`socket`]: where the daemon listens.

mod params;
mod socket;
mod system;

use std::fmt;
use std::path::Path;

use anyhow::{bail, Result};
use cuzk_daemon::memory::HostBudgets;
use serde::Serialize;

use super::serve::{Source, DEFAULT_CONFIG};
use crate::args::{DoctorArgs, GlobalArgs};
use crate::Outcome;

/// A check's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    /// Worth knowing, but the configured work can run.
    Warn,
    /// The configured work cannot run (or not as configured).
    Fail,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
        })
    }
}

/// One line of the report (one element of `--json`'s array).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked: "gpu", "memlock", "params porep-32g" ….
    pub check: String,
    pub verdict: Verdict,
    pub detail: String,
    /// What to do about it; for every failure, and for warnings that have a remedy.
    pub fix: Option<String>,
}

impl Check {
    pub fn ok(check: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(check, Verdict::Ok, detail, None)
    }

    pub fn warn(check: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(check, Verdict::Warn, detail, None)
    }

    pub fn fail(
        check: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self::new(check, Verdict::Fail, detail, Some(fix.into()))
    }

    fn new(
        check: impl Into<String>,
        verdict: Verdict,
        detail: impl Into<String>,
        fix: Option<String>,
    ) -> Self {
        Check {
            check: check.into(),
            verdict,
            detail: detail.into(),
            fix,
        }
    }

    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

pub fn run(global: &GlobalArgs, args: DoctorArgs) -> Result<Outcome> {
    let checks = checks(&args);
    if global.json {
        outln!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        crate::output::write(format_args!("{}", render(&checks)));
    }
    let failed: Vec<&str> = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .map(|c| c.check.as_str())
        .collect();
    if !failed.is_empty() {
        bail!("{} check(s) failed: {}", failed.len(), failed.join(", "));
    }
    Ok(Outcome::Success)
}

/// Every check, in the order an operator would fix them.
fn checks(args: &DoctorArgs) -> Vec<Check> {
    let source = Source::pick(args.config.as_deref(), Path::new(DEFAULT_CONFIG));
    let config = match source.read() {
        Ok(config) => config,
        // Everything else depends on it.
        Err(e) => {
            return vec![Check::fail(
                "config",
                format!("{e:#}"),
                "correct the keys named (`cuzk serve --print-sample-config` lists every key)",
            )]
        }
    };
    let mut checks = vec![Check::ok("config", source.to_string())];
    checks.extend(config.warnings.iter().map(|w| Check::warn("config", w)));
    let gpus = system::gpus(&config);
    let uses_gpu = !gpus.backends.is_empty();
    checks.extend(gpus.checks);
    let budgets = HostBudgets::from_config(&config);
    checks.push(system::host_memory(&budgets));
    let budgets = budgets.ok();
    checks.push(system::memlock(budgets.as_ref(), uses_gpu));
    checks.push(system::huge_pages());
    checks.extend(params::circuits(
        &config,
        args,
        budgets.as_ref(),
        &gpus.backends,
    ));
    checks.push(socket::listen(&config));
    checks
}

/// The report as text: a line per check, its fix indented under it.
fn render(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.check.len()).max().unwrap_or(0);
    let mut out = String::new();
    for check in checks {
        out += &format!(
            "{:<4}  {:<width$}  {}\n",
            check.verdict.to_string(),
            check.check,
            check.detail
        );
        if let Some(fix) = &check.fix {
            out += &format!("{:<4}  {:<width$}  fix: {fix}\n", "", "");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_aligns_its_columns_and_puts_each_fix_under_its_check() {
        let text = render(&[
            Check::ok("gpu", "skipped"),
            Check::fail("params porep-2k", "missing x.params", "fetch it"),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "ok    gpu              skipped",
                "FAIL  params porep-2k  missing x.params",
                "                       fix: fetch it",
            ]
        );
    }
}
