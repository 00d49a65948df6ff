//! Tests of [`super`].

use super::*;
use crate::console::Console;
use crate::store::manifest::RunStatus;
use gpubench_record::failure::FailureKind;
use gpubench_record::measurement::{Flag, Throughput};
use gpubench_record::record::RawRecord;
use gpubench_record::testing::{memory, sample, RecordBuilder};

/// Three processes at 1.611, 1.621 and 1.601 ms of device time per call.
fn passed_record() -> RawRecord {
    let mut r = one_process_record();
    for shift in [0.1e6, -0.1e6] {
        let mut later = one_process_record();
        for s in &mut later.processes[0].measurement.as_mut().unwrap().samples {
            s.device_ns = s.device_ns.map(|d| d + shift);
            s.wall_ns += shift;
        }
        r.append_processes(later).unwrap();
    }
    r
}

fn one_process_record() -> RawRecord {
    let samples = (0..20).map(|i| {
        let wall = 16.2e6 + i as f64 * 1e3;
        sample(10, wall, 4.9e6, Some(16.1e6 + i as f64 * 1e3))
    });
    RecordBuilder::passed("matmul/4096")
        .cuda("NVIDIA H200")
        .timestamp("t")
        .sync_cost(1e4)
        .cold("first call", 132e6, 1e6, None)
        .samples(samples)
        .throughput(Throughput::Flops(2.0 * 4096f64.powi(3) / 10.0))
        .memory(memory(3 << 29, 2 << 30, 0, 0))
        .flags(&[Flag::DeviceBound])
        .device_timer(true)
        .build()
}

fn entry(record: &RawRecord, status: BenchStatus) -> SummaryEntry {
    SummaryEntry {
        name: format!("suite/{}", record.id),
        target: "suite".into(),
        id: record.id.clone(),
        status,
        record: Some(format!("{}.json", record.id)),
        summary: Some(BenchmarkSummary::from_record(record)),
        comparison: None,
    }
}

fn failed_record() -> RawRecord {
    let mut r = RecordBuilder::from(passed_record())
        .failed(
            FailureKind::Crash,
            "killed by signal 6 (SIGABRT)\nstderr ends with:\nabort() called",
        )
        .build();
    r.id = "boom".into();
    r
}

/// `now` judged against the baseline `main` of `base`, failing on a regression.
fn judged_against_main(
    now: &[RawRecord],
    base: &[gpubench_analysis::BaselineEntry],
) -> RunComparison {
    use crate::compare::VerdictSettings;
    use crate::store::{Source, SourceKind};
    use gpubench_analysis::{CompareConfig, FailOn};
    RunComparison::judge(
        now,
        base,
        Source {
            kind: SourceKind::Baseline,
            name: "main".into(),
            path: "b".into(),
            default: false,
            device: None,
        },
        VerdictSettings {
            config: CompareConfig::default(),
            fail_on: FailOn::Regressed,
            allow_device_mismatch: false,
            gate: gpubench_analysis::baseline::Gate::default(),
            allow_settings_mismatch: false,
            allow_missing: Default::default(),
        },
    )
    .unwrap()
}

#[test]
fn kernel_columns_verdicts_and_gpu_changes_in_the_terminal() {
    use gpubench_analysis::synthetic::SyntheticKernels;
    use gpubench_analysis::BaselineEntry;
    use rand::SeedableRng;

    let gemm = SyntheticKernels::one("sm90_gemm", 1.2e6);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let mut was = passed_record();
    gemm.attach(&mut was, &mut rng);
    let mut now = passed_record();
    gemm.with_kernel("copy_kernel", 1e4)
        .attach(&mut now, &mut rng);
    let base = BaselineEntry::from_record(&was).unwrap();
    let c = judged_against_main(std::slice::from_ref(&now), std::slice::from_ref(&base));
    let entries = vec![entry(&now, BenchStatus::Passed)];
    let text = render_table(&SummaryView::build(&entries, Some(&c)), Console::default());
    let lines: Vec<&str> = text.lines().collect();
    for column in [
        "kernel change",
        "counters",
        "kernel/iter",
        "kernels",
        "launch",
    ] {
        assert!(lines[0].contains(column), "{column}: {text}");
    }
    // Two kernels per call, 1.21 ms of kernel time against 1.61 ms of device time.
    let cells: Vec<&str> = lines[1]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let at = cells
        .iter()
        .position(|c| c.starts_with("1.2") && c.ends_with(" ms"));
    let at = at.unwrap_or_else(|| panic!("no kernel time: {text}"));
    assert_eq!(&cells[at + 1..at + 3], ["2", "25%"], "{text}");
    assert!(cells.contains(&"+1 kernel per call"), "{text}");
    assert!(
        text.contains("what the GPU did differently from baseline `main`:\n  suite/matmul/4096: +1 kernel per call; new kernel `copy_kernel`"),
        "{text}"
    );
    let closing = render_comparison(
        &SummaryView::build(&entries, Some(&c)),
        Exit::RegressionFound,
        Console::default(),
    );
    assert!(
        closing
            .contains("  on the GPU's own work: kernel time: 1 no change; counters: 1 regressed"),
        "{closing}"
    );
    assert!(
        closing.contains("regression found (--fail-on regressed --gate-on time,kernel,counters,memory,energy): suite/matmul/4096 (counters: +1 kernel per call) (exit code 4)"),
        "{closing}"
    );

    // A run without kernel figures has no kernel columns and says why once.
    let mut cpu = passed_record();
    for m in cpu
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        m.kernel_unavailable = Some("no kernel timing on cpu".into());
    }
    let text = render_table(
        &SummaryView::build(&[entry(&cpu, BenchStatus::Passed)], None),
        Console::default(),
    );
    assert!(!text.lines().next().unwrap().contains("kernel"), "{text}");
    assert!(
        text.contains("\nkernel time: not measured (no kernel timing on cpu)\n"),
        "{text}"
    );
}

#[test]
fn table_shows_figures_and_failures() {
    let entries = vec![
        entry(&passed_record(), BenchStatus::Passed),
        entry(&failed_record(), BenchStatus::Failed),
        SummaryEntry {
            name: "suite/later".into(),
            target: "suite".into(),
            id: "later".into(),
            status: BenchStatus::Pending,
            record: None,
            summary: None,
            comparison: None,
        },
    ];
    let s = RunSummary::new(
        "r1".into(),
        "/t/runs/r1".into(),
        RunStatus::Interrupted,
        2.5,
        entries,
    );
    assert_eq!((s.passed, s.failed, s.not_run), (1, 1, 1));
    let text = s.render_human(Console::default());
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("benchmark") && lines[0].contains("time [95% interval]"),
        "{text}"
    );
    let matmul = lines[1];
    // Device time is primary: ~1.61 ms per iteration, with its interval over the
    // three processes and their spread (0.62%).
    assert!(matmul.contains("1.611 ms [1.576, 1.646]"), "{matmul}");
    assert!(matmul.contains("  3 ±0.6%  "), "{matmul}");
    assert!(matmul.contains("490.0 µs"), "host/iter: {matmul}");
    assert!(matmul.contains("132.0 ms"), "cold call: {matmul}");
    assert!(matmul.contains("TFLOP/s"), "{matmul}");
    assert!(matmul.contains("1.50 GiB"), "{matmul}");
    assert!(matmul.ends_with("passed (device-bound)"), "{matmul}");
    assert!(
        lines[2].ends_with("crash: killed by signal 6 (SIGABRT)"),
        "{text}"
    );
    assert!(lines[3].ends_with("not run"), "{text}");
    assert!(
        text.contains("\n  suite/boom (crash)\n    killed by signal 6"),
        "{text}"
    );
    assert!(text.contains("    abort() called"), "{text}");
    assert!(
        text.contains("3 benchmarks: 1 passed, 1 failed, 1 not run (interrupted) in 2.500 s; records in /t/runs/r1"),
        "{text}"
    );
    // Columns line up: every row's status starts where the header's does.
    let col = lines[0].find("status").unwrap();
    assert_eq!(
        lines[1].char_indices().nth(col).map(|(_, c)| c),
        Some('p'),
        "{text}"
    );
}

#[test]
fn json_carries_the_figures() {
    let s = RunSummary::new(
        "r1".into(),
        "/d".into(),
        RunStatus::Completed,
        1.0,
        vec![entry(&passed_record(), BenchStatus::Passed)],
    );
    let v: serde_json::Value = serde_json::from_str(&s.to_json_pretty()).unwrap();
    assert_eq!(v["passed"], 1);
    assert_eq!(v["benchmarks"][0]["status"], "passed");
    assert_eq!(v["benchmarks"][0]["summary"]["primary_kind"], "device");
    let device = &v["benchmarks"][0]["summary"]["device"];
    assert!(device["estimate"]["point"].as_f64().unwrap() > 1e6);
    assert_eq!(device["basis"], "processes");
    assert_eq!(device["processes"]["count"], 3);
    assert_eq!(device["processes"]["medians"].as_array().unwrap().len(), 3);
}

#[test]
fn intervals_share_the_points_unit() {
    use crate::format::interval;
    assert_eq!(
        interval(16.12e6, 16.05e6, 16.2e6),
        "16.12 ms [16.05, 16.20]"
    );
    assert_eq!(
        interval(1.001e6, 999.0e3, 1.01e6),
        "1.001 ms [999.0 µs, 1.010 ms]"
    );
}

/// Three processes at `factors` times the passed record's 1.61 ms per call.
fn scattered_record(factors: [f64; 3]) -> RawRecord {
    let scaled = |f: f64| {
        let mut r = one_process_record();
        for s in &mut r.processes[0].measurement.as_mut().unwrap().samples {
            s.device_ns = s.device_ns.map(|d| d * f);
            s.wall_ns *= f;
            s.host_ns *= f;
        }
        r
    };
    let mut r = scaled(factors[0]);
    for f in &factors[1..] {
        r.append_processes(scaled(*f)).unwrap();
    }
    r
}

#[test]
fn processes_that_disagree_wildly_show_their_range_not_an_interval() {
    let e = entry(&scattered_record([0.05, 1.0, 12.0]), BenchStatus::Passed);
    let text = render_table(
        &SummaryView::build(std::slice::from_ref(&e), None),
        Console::default(),
    );
    let row = text.lines().nth(1).unwrap();
    assert!(
        row.contains("(too noisy for an interval; processes 80.55 µs – 19.33 ms)"),
        "{text}"
    );
    assert!(!row.contains(" s]") && !row.contains('['), "{row}");
    // Columns still line up behind the longer cell.
    let header = text.lines().next().unwrap();
    let col = header.find("processes").unwrap();
    assert_eq!(
        &row[row.char_indices().nth(col).unwrap().0..][..1],
        "3",
        "{text}"
    );
}

#[test]
fn long_messages_are_excerpted() {
    let msg: String = (0..40).map(|i| format!("line {i}\n")).collect();
    let e = excerpt(&msg, 12);
    assert_eq!(e.len(), 12);
    assert_eq!(e[0], "line 0");
    assert_eq!(e.last().unwrap(), "line 39");
    assert!(e[2].contains("29 lines"), "{e:?}");
}

#[test]
fn kernel_time_at_another_clock_than_the_samples_is_named_under_the_table() {
    use gpubench_analysis::summary::KernelClock;
    let with_clocks = |replays_mhz: f64| {
        let mut e = entry(&passed_record(), BenchStatus::Passed);
        let s = e.summary.as_mut().unwrap();
        s.conditions.sm_clock_mhz = Some(1980.0);
        s.conditions.kernel_clock = Some(KernelClock {
            reads: 408,
            sm_clock_mhz: replays_mhz,
            power_capped_share: 0.5,
        });
        render_table(
            &SummaryView::build(std::slice::from_ref(&e), None),
            Console::default(),
        )
    };
    // The H200's flushed 8192² matmul: replays back to back drew the power limit.
    let apart = with_clocks(1702.0);
    assert!(
        apart.contains(
            "suite/matmul/4096: kernel time ran at 1702 MHz (50% power-capped), the samples \
             at 1980 MHz\n"
        ),
        "{apart}"
    );
    // Within 5% of each other: one regime, nothing to say.
    let together = with_clocks(1960.0);
    assert!(!together.contains("kernel time ran"), "{together}");
}

#[test]
fn power_cap_peak_share_and_energy_have_a_line_under_the_table() {
    let plain = entry(&passed_record(), BenchStatus::Passed);
    let mut e = plain.clone();
    crate::output::view::tests::with_power_and_peak(e.summary.as_mut().unwrap());
    let out = render_table(
        &SummaryView::build(std::slice::from_ref(&e), None),
        Console::default(),
    );
    assert!(
        out.contains(
            "\npower, energy and % of peak (the peak scaled to the clock the samples ran at):\n  \
             suite/matmul/4096: power-capped: 38% of samples at the 700 W limit; 75.0% of the \
             dense bf16 peak at 1682 MHz (681.6 TFLOP/s of 909.2 TFLOP/s); 1.16 J per call at \
             705 W (idle 83 W)\n"
        ),
        "{out}"
    );
    // Without these figures the table is as it was.
    let before = render_table(
        &SummaryView::build(std::slice::from_ref(&plain), None),
        Console::default(),
    );
    assert!(!before.contains("power"), "{before}");
    assert!(out.starts_with(before.trim_end()), "{out}");
}

#[test]
fn eager_versus_compiled_has_a_line_under_the_table() {
    use gpubench_record::eager_compiled::{EagerCompiledSummary, VariantKind};
    use gpubench_record::estimate::Estimate;
    let mut e = entry(&passed_record(), BenchStatus::Passed);
    e.summary.as_mut().unwrap().eager_compiled = Some(EagerCompiledSummary {
        eager: "eager".into(),
        compiled: "traced".into(),
        compiled_kind: VariantKind::TorchscriptTrace,
        compiled_failure: None,
        speedup: Some(Estimate {
            point: 1.32,
            lower: 1.30,
            upper: 1.35,
            confidence: 0.95,
        }),
        eager_ns_per_call: Some(2.1e6),
        compiled_ns_per_call: Some(1.59e6),
        agrees: true,
        shapes_disagreeing: 0,
        shapes: 3,
        break_even_calls: Some(1200),
        flags: vec![],
        flag_words: vec![],
    });
    let out = render_table(
        &SummaryView::build(std::slice::from_ref(&e), None),
        Console::default(),
    );
    assert!(
        out.contains("eager versus compiled:\n  suite/matmul/4096: traced 1.32× faster [1.30×, 1.35×] (2.100 ms vs 1.590 ms per call); outputs agree at 3 shape(s); pays off after 1200 calls"),
        "{out}"
    );
}

/// A run judged against a baseline of three benchmarks: `suite/slow` regressed by
/// 50%, `suite/fast` improved by 20%, `suite/same` unchanged; `suite/boom` (failed)
/// and `suite/fresh` are new.
fn judged() -> RunSummary {
    use gpubench_analysis::BaselineEntry;
    let named = |id: &str, f: f64| {
        let mut r = scattered_record([f, f * 1.003, f * 0.997]);
        r.id = id.into();
        r
    };
    let base: Vec<BaselineEntry> = [named("slow", 1.0), named("fast", 1.0), named("same", 1.0)]
        .iter()
        .map(|r| BaselineEntry::from_record(r).unwrap())
        .collect();
    let mut boom = failed_record();
    boom.id = "boom".into();
    let now = vec![
        named("slow", 1.5),
        named("fast", 0.8),
        named("same", 1.0),
        boom,
        named("fresh", 1.0),
    ];
    let c = judged_against_main(&now, &base);
    let entries = now
        .iter()
        .map(|r| {
            let status = if r.passed() {
                BenchStatus::Passed
            } else {
                BenchStatus::Failed
            };
            entry(r, status)
        })
        .collect();
    RunSummary::new(
        "r1".into(),
        "/t/runs/r1".into(),
        RunStatus::Completed,
        2.5,
        entries,
    )
    .with_comparison(c)
}

#[test]
fn verdicts_are_coloured_and_columns_still_line_up() {
    let s = judged();
    let plain = s.render_human(Console::default());
    let coloured = s.render_human(Console {
        color: true,
        ..Console::default()
    });
    assert_ne!(plain, coloured);
    // Without its colour codes the coloured table is the plain one, space for space.
    assert_eq!(anstream::adapter::strip_str(&coloured).to_string(), plain);
    let line = |name: &str| {
        coloured
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name}: {coloured}"))
            .to_string()
    };
    let (red, green, cyan, bold_red, reset) = (
        "\u{1b}[31m",
        "\u{1b}[32m",
        "\u{1b}[36m",
        "\u{1b}[1m\u{1b}[31m",
        "\u{1b}[0m",
    );
    assert!(
        line("suite/slow").contains(&format!("{red}+50.0% [")),
        "{coloured}"
    );
    assert!(
        line("suite/slow").contains(&format!("] regressed{reset}")),
        "{coloured}"
    );
    assert!(
        line("suite/fast").contains(&format!("{green}-20.0% [")),
        "{coloured}"
    );
    assert!(
        line("suite/fresh").contains(&format!("{cyan}new{reset}")),
        "{coloured}"
    );
    assert!(
        line("suite/boom").contains(&format!("{bold_red}crash: ")),
        "{coloured}"
    );
    assert!(
        !line("suite/same").contains('\u{1b}'),
        "no change is plain: {coloured}"
    );
    assert!(
        coloured.contains(&format!("{bold_red}regression found{reset} (--fail-on")),
        "{coloured}"
    );
    // The status column starts at the same place in every row, colour or not.
    let header = plain.lines().next().unwrap();
    let col = header.find("status").unwrap();
    for l in plain.lines().skip(1).take(5) {
        let status = l
            .chars()
            .skip(header[..col].chars().count())
            .collect::<String>();
        assert!(
            ["passed", "crash:"].iter().any(|w| status.starts_with(w)),
            "{l:?} in\n{plain}"
        );
    }
}

#[test]
fn quiet_prints_only_failures_verdicts_and_the_closing_lines() {
    let s = judged();
    let quiet = Console {
        verbosity: crate::console::Verbosity::Quiet,
        color: false,
    };
    assert_eq!(
        s.render_human(quiet),
        "suite/slow: time regressed +50.0% [+49.2%, +50.8%]
suite/fast: time improved -20.0% [-20.4%, -19.6%]
suite/boom: failed (crash: killed by signal 6 (SIGABRT))
5 benchmarks: 4 passed, 1 failed in 2.500 s; records in /t/runs/r1
compared with baseline `main`: 1 regressed, 1 improved, 1 no change, 2 new
regression found (--fail-on regressed --gate-on time,kernel,counters,memory,energy): suite/slow (time regressed) (exit code 1: a failed benchmark wins over a regression)
"
    );
}

#[test]
fn verbose_adds_each_processs_median() {
    let s = judged();
    let normal = s.render_human(Console::default());
    let verbose = s.render_human(Console {
        verbosity: crate::console::Verbosity::Verbose,
        color: false,
    });
    let section = "\nprocesses (the median of each, in the order they ran):\n";
    assert!(!normal.contains(section), "{normal}");
    let at = verbose.find(section).unwrap_or_else(|| panic!("{verbose}"));
    let lines: Vec<&str> = verbose[at + section.len()..].lines().take(2).collect();
    assert_eq!(
        lines,
        [
            "  suite/slow: 2.416 ms, 2.424 ms, 2.409 ms",
            "  suite/fast: 1.289 ms, 1.293 ms, 1.285 ms"
        ],
        "{verbose}"
    );
    // Everything the normal summary says is still there.
    assert!(verbose.starts_with(normal.lines().next().unwrap()));
    assert!(verbose.ends_with(&normal[normal.find("\n5 benchmarks").unwrap()..]));
}

/// `ab`'s summary of the paired fixture ([`crate::compare::paired_fixture`]).
fn ab_summary(config: gpubench_analysis::CompareConfig) -> RunSummary {
    let (head, c) = crate::compare::paired_fixture::ab_comparison(config);
    let entries = head.iter().map(|r| entry(r, BenchStatus::Passed)).collect();
    RunSummary::new(
        "r1".into(),
        "/t/runs/r1".into(),
        RunStatus::Completed,
        2.5,
        entries,
    )
    .with_comparison(c)
}

#[test]
fn ab_shows_the_paired_threshold_certain_changes_and_what_it_could_detect() {
    use crate::compare::paired_fixture::{ADD, MATMUL, MLP};
    let out = ab_summary(Default::default()).render_human(Console::default());
    let row = |id: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("suite/{id} ")))
            .unwrap_or_else(|| panic!("no {id}: {out}"))
            .to_string()
    };
    let cells_of = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    let cells = |id: &str| cells_of(&row(id));
    // The column follows the change.
    let header = cells_of(out.lines().next().unwrap());
    assert_eq!(header[2..4], ["change vs abc1234", "could detect"], "{out}");
    // +1.75% within ±0.03%: regressed under the paired ±1%; it could have seen a
    // change of 1% and its interval's half-width.
    assert_eq!(
        cells(MLP)[2..4],
        ["+1.8% [+1.7%, +1.8%] regressed", "±1.02%"],
        "{out}"
    );
    // +0.6% within ±0.05%: certain, and still no change.
    assert_eq!(
        cells(MATMUL)[2],
        "+0.6% [+0.6%, +0.6%] no change (certain, under ±1%)",
        "{out}"
    );
    // Unchanged: plain no change, and the change it would have needed.
    assert_eq!(
        cells(ADD)[2..4],
        ["+0.0% [-0.3%, +0.3%] no change", "±1.30%"],
        "{out}"
    );
    // The line under the table says what the figure is, with the paired threshold.
    assert!(
        out.contains(
            "  could detect: each verdict's threshold (the paired noise threshold ±1%, or \
             1.5 times the spread of the per-process ratios, whichever is larger) plus the \
             half-width of its change's interval: a change read beyond it is regressed or \
             improved; \"no change\" says the change lies within the threshold\n"
        ),
        "{out}"
    );
    // Under a run's ±2% the +1.75% was no change, certain: shown as such.
    let old = gpubench_analysis::CompareConfig {
        paired_noise_threshold: 0.02,
        ..Default::default()
    };
    let out = ab_summary(old).render_human(Console::default());
    let mlp = out
        .lines()
        .find(|l| l.starts_with(&format!("suite/{MLP} ")))
        .unwrap();
    assert!(
        mlp.contains("] no change (certain, under ±2%)  ±2.03%"),
        "{out}"
    );
    assert!(out.contains("the paired noise threshold ±2%"), "{out}");
}

#[test]
fn a_run_against_a_baseline_has_no_detectable_column() {
    let out = judged().render_human(Console::default());
    assert!(!out.contains("could detect"), "{out}");
}

#[test]
fn ab_json_carries_the_paired_threshold_and_what_each_verdict_could_detect() {
    use crate::compare::paired_fixture::{MATMUL, MLP};
    let s = ab_summary(Default::default());
    let v: serde_json::Value = serde_json::from_str(&s.to_json_pretty()).unwrap();
    assert_eq!(
        v["comparison"]["settings"]["config"]["paired_noise_threshold"],
        0.01
    );
    let time = |id: &str| {
        let b = v["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == id)
            .unwrap_or_else(|| panic!("{v}"));
        b["comparison"]["comparison"].clone()
    };
    let mlp = time(MLP);
    assert_eq!(
        (&mlp["verdict"], &mlp["paired"]),
        (&"regressed".into(), &true.into())
    );
    assert_eq!(mlp["noise_threshold"], 0.01);
    let detectable = mlp["detectable"].as_f64().unwrap();
    assert!(detectable > 0.01 && detectable < 0.0105, "{mlp}");
    // A flag that is false is left out; the certain change carries it.
    assert!(mlp.get("certain_under_threshold").is_none(), "{mlp}");
    let matmul = time(MATMUL);
    assert_eq!(matmul["verdict"], "no_change");
    assert_eq!(matmul["certain_under_threshold"], true);
    // docs/schema says what the fields are, and the schema can tell a wrong one.
    let schema_of = || {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../docs/schema/run-summary.schema.json");
        let text = std::fs::read_to_string(path).unwrap();
        jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap()
    };
    let schema = schema_of();
    let errors: Vec<String> = schema.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let mut wrong = v.clone();
    wrong["benchmarks"][0]["comparison"]["comparison"]["detectable"] = "1%".into();
    assert!(!schema.is_valid(&wrong));
    let mut wrong = v.clone();
    wrong["comparison"]["settings"]["config"]["paired_noise_threshold"] = (-0.01).into();
    assert!(!schema.is_valid(&wrong));
}
