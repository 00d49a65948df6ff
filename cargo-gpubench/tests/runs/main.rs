//! End-to-end tests against stand-in bench executables (no libtorch build): runs,
//! baselines and the gate, the console, devices, merges, `doctor` and the HTML
//! report. One test binary, so the crate and its dependencies are linked once.

#[path = "../report-fixtures/fixtures.rs"]
mod fixtures;
#[path = "../history_fixture/mod.rs"]
mod history_fixture;
#[path = "../support/mod.rs"]
mod support;

mod baselines;
mod capacity;
mod console;
mod devices;
mod doctor;
mod history;
mod memory_verdicts;
mod merge;
mod report_browser;
mod report_cpu;
mod report_render;
mod report_run;
mod report_speed;
mod run_exe;
mod usage;
