//! `cargo gpubench doctor`: checks the machine before benchmarks run on it (libtorch,
//! CUDA, the NVIDIA driver, each GPU's clocks, modes and other processes, the host's
//! CPU governor and load) and says, for each problem, why it makes results
//! unreliable and what to do.
//!
//! What is read ([`Facts::gather`], [`facts`]) is apart from what is judged
//! ([`findings()`], in [`mod@findings`]), so the judgement is tested on made-up
//! machines.

use std::fmt::Write as _;

use anyhow::Result;

use crate::cli::DoctorArgs;
use crate::exit_code::Exit;

pub(crate) mod facts;
pub(crate) mod findings;

pub(crate) use facts::Facts;
pub(crate) use findings::{findings, Finding, Severity, Wanted};

/// The diagnosis in words, one finding a line, advice indented under problems.
pub(crate) fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let mark = match f.severity {
            Severity::Ok => "ok     ",
            Severity::Problem => "PROBLEM",
        };
        let _ = writeln!(out, "{mark} {:<9} {}", f.subject, f.found);
        if let Some(a) = &f.advice {
            let _ = writeln!(out, "        {:<9} why and what to do: {a}", "");
        }
    }
    let problems = findings
        .iter()
        .filter(|f| f.severity == Severity::Problem)
        .count();
    if problems == 0 {
        out.push_str("\nnothing found that would make results unreliable\n");
    } else {
        let _ = writeln!(
            out,
            "\n{problems} problem(s) that would make results unreliable"
        );
    }
    out
}

/// The exit of a diagnosis: success when no finding is a problem.
pub(crate) fn exit_of(findings: &[Finding]) -> Exit {
    if findings.iter().any(|f| f.severity == Severity::Problem) {
        Exit::Setup
    } else {
        Exit::Success
    }
}

/// Runs `cargo gpubench doctor`.
pub(crate) fn run(args: &DoctorArgs) -> Result<Exit> {
    let here = std::env::current_dir()?;
    let found = findings(
        &Facts::gather(&here),
        Wanted::from_device(args.device.as_deref()),
    );
    print!("{}", render(&found));
    Ok(exit_of(&found))
}

#[cfg(test)]
mod tests;
