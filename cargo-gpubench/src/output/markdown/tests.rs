//! Tests of [`super`].

use super::*;
use gpubench_analysis::{BaselineEntry, CompareConfig, FailOn};
use gpubench_record::failure::FailureKind;
use gpubench_record::record::RawRecord;
use gpubench_record::testing::{sample, RecordBuilder};

use crate::compare::VerdictSettings;
use crate::store::{Source, SourceKind};
use gpubench_analysis::baseline::{Gate, Metric};
use gpubench_analysis::synthetic::SyntheticKernels;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// A passed record of three processes on an `NVIDIA H200` whose per-iteration
/// device times are `base_ns` times a fixed ±1% pattern, the processes 0.3% apart:
/// deterministic, so the table is too.
fn record(id: &str, base_ns: f64) -> RawRecord {
    let mut r = one_process(id, base_ns);
    r.append_processes(one_process(id, base_ns * 1.003))
        .unwrap();
    r.append_processes(one_process(id, base_ns * 0.997))
        .unwrap();
    r
}

fn one_process(id: &str, base_ns: f64) -> RawRecord {
    let pattern = [
        1.0, 1.01, 0.99, 1.005, 0.995, 1.002, 0.998, 1.0, 1.008, 0.992,
    ];
    let samples = (0..20).map(|i| {
        let device = base_ns * pattern[i % pattern.len()] * 10.0;
        sample(10, device * 1.02, device * 0.3, Some(device))
    });
    RecordBuilder::passed(id)
        .cuda("NVIDIA H200")
        .sync_cost(1e4)
        .samples(samples)
        .flags(&[gpubench_record::measurement::Flag::DeviceBound])
        .device_timer(true)
        .build()
}

fn failed(id: &str) -> RawRecord {
    RecordBuilder::from(one_process(id, 1e6))
        .failed(
            FailureKind::OutOfMemory,
            "CUDA out of memory | tried to allocate 2.00 GiB\nmore detail",
        )
        .build()
}

fn entry(r: &RawRecord) -> SummaryEntry {
    SummaryEntry {
        name: format!("matmul/{}", r.id),
        target: "matmul".into(),
        id: r.id.clone(),
        status: if r.passed() {
            BenchStatus::Passed
        } else {
            BenchStatus::Failed
        },
        record: None,
        summary: Some(BenchmarkSummary::from_record(r)),
        comparison: None,
    }
}

/// The default gate's settings with `config` and `fail_on`.
fn verdict_settings(config: CompareConfig, fail_on: FailOn) -> VerdictSettings {
    VerdictSettings {
        config,
        fail_on,
        allow_device_mismatch: false,
        gate: Gate::default(),
        allow_settings_mismatch: false,
        allow_missing: Default::default(),
    }
}

/// Baseline `main` of the workspace, the default one when `default`.
fn main_baseline(default: bool) -> Source {
    Source {
        kind: SourceKind::Baseline,
        name: "main".into(),
        path: "/ws/gpubench/baselines/main".into(),
        default,
        device: None,
    }
}

/// A baseline of four benchmarks, and a run where one regressed by 50%, one
/// improved by 20%, one is unchanged, one failed, one is new and one is gone.
fn fixture(fail_on: FailOn) -> (Vec<SummaryEntry>, RunComparison) {
    let base: Vec<BaselineEntry> = [
        record("mm_f32/4096", 2e6),
        record("mm_bf16/4096", 1e6),
        record("mm_f32/1024", 1e5),
        record("conv", 3e5),
        record("gone", 1e5),
    ]
    .iter()
    .map(|r| BaselineEntry::from_record(r).unwrap())
    .collect();
    let now = vec![
        record("mm_f32/4096", 3e6),
        record("mm_bf16/4096", 0.8e6),
        record("mm_f32/1024", 1e5),
        failed("conv"),
        record("new|one", 5e5),
    ];
    let settings = verdict_settings(CompareConfig::default(), fail_on);
    let c = RunComparison::judge(&now, &base, main_baseline(false), settings).unwrap();
    (now.iter().map(entry).collect(), c)
}

#[test]
fn a_regression_with_a_failure_new_and_missing_benchmarks() {
    let (entries, c) = fixture(FailOn::Regressed);
    let md = MarkdownSummary {
        subject: "run `20260101T000000.000Z-1-0`",
        report: Some(ReportLink::Url(
            "https://ci.example.com/runs/7/artifacts/report (html)/index.html",
        )),
        entries: &entries,
        comparison: Some(&c),
        exit: Exit::of_verdicts(false, true, c.gate_tripped),
    }
    .render();
    insta::assert_snapshot!(md, @r"
    ### cargo gpubench: run `20260101T000000.000Z-1-0`

    Charts and every figure: [the HTML report](https://ci.example.com/runs/7/artifacts/report%20%28html%29/index.html).

    **Device:** NVIDIA H200 (`cuda:0`) · **Baseline:** `main` (NVIDIA H200) · **Gate:** `--fail-on regressed --gate-on time,kernel,counters,memory,energy`, significance 0.05, noise threshold ±2% (host-bound ±50%)

    | Benchmark | Baseline | Current | Change [90% CI] | Processes (pooled spread) | Verdict |
    | :-- | --: | --: | --: | --: | :-- |
    | `matmul/mm_f32/4096` | 2.000 ms | 3.000 ms | +50.0% [+49.2%, +50.8%] | 3 vs 3 (±0.3%) | **regressed** |
    | `matmul/mm_bf16/4096` | 1.000 ms | 800.0 µs | -20.0% [-20.4%, -19.6%] | 3 vs 3 (±0.3%) | improved |
    | `matmul/mm_f32/1024` | 100.0 µs | 100.0 µs | +0.0% [-0.5%, +0.5%] | 3 vs 3 (±0.3%) | no change |
    | `matmul/conv` | — | — | — | — | failed |
    | `matmul/new\|one` | — | 500.0 µs | — | 3 ±0.3% | new |

    **Verdicts:** 1 regressed, 1 improved, 1 no change, 1 failed, 1 new, 1 missing.

    **Failed:**

    - `matmul/conv` (out of memory): CUDA out of memory \| tried to allocate 2.00 GiB

    **New** (not in the baseline): `matmul/new|one`

    **Missing evidence** (fails the gate unless `--allow-missing not-run|gone|not-compared|metric` lets its kind pass):

    - `gone`: gone: the judged side has no \`gone\` and does not say why (not selected, or gone?); if on purpose, delete /ws/gpubench/baselines/main/gone.json from the baseline

    **Result: 1 benchmark failed** (exit code 1); a regression was also found: `matmul/mm_f32/4096` (time regressed), `gone` (gone) (`--fail-on regressed --gate-on time,kernel,counters,memory,energy`).
    ");
}

#[test]
fn a_clean_run_and_a_run_without_a_baseline() {
    let (entries, c) = fixture(FailOn::Regressed);
    let clean: Vec<SummaryEntry> = entries
        .iter()
        .filter(|e| e.id == "mm_f32/1024")
        .cloned()
        .collect();
    let only = RunComparison::judge(
        &[record("mm_f32/1024", 1e5)],
        &[BaselineEntry::from_record(&record("mm_f32/1024", 1e5)).unwrap()],
        Source {
            default: true,
            ..c.baseline.clone()
        },
        c.settings,
    )
    .unwrap();
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries: &clean,
        comparison: Some(&only),
        exit: Exit::of_verdicts(false, false, only.gate_tripped),
    }
    .render();
    insta::assert_snapshot!(md, @"
    ### cargo gpubench: run `r`

    **Device:** NVIDIA H200 (`cuda:0`) · **Baseline:** `main` (NVIDIA H200; the default) · **Gate:** `--fail-on regressed --gate-on time,kernel,counters,memory,energy`, significance 0.05, noise threshold ±2% (host-bound ±50%)

    | Benchmark | Baseline | Current | Change [90% CI] | Processes (pooled spread) | Verdict |
    | :-- | --: | --: | --: | --: | :-- |
    | `matmul/mm_f32/1024` | 100.0 µs | 100.0 µs | +0.0% [-0.5%, +0.5%] | 3 vs 3 (±0.3%) | no change |

    **Verdicts:** 1 no change.

    **Result: no regression** (exit code 0, `--fail-on regressed --gate-on time,kernel,counters,memory,energy`).
    ");
    let md = MarkdownSummary {
        subject: "run `r`",
        report: Some(ReportLink::Path("/ws/target/gpubench/report/index.html")),
        entries: &clean,
        comparison: None,
        exit: Exit::Success,
    }
    .render();
    insta::assert_snapshot!(md, @"
    ### cargo gpubench: run `r`

    The HTML report is at `/ws/target/gpubench/report/index.html` on the machine that ran this (`--report-url` links it here).

    **Device:** NVIDIA H200 (`cuda:0`) · **Baseline:** none

    | Benchmark | Time [95% interval] | Processes (spread) | Status |
    | :-- | --: | --: | :-- |
    | `matmul/mm_f32/1024` | 100.0 µs [98.95, 101.1] | 3 ±0.3% | passed |

    **Result: passed** (exit code 0).
    ");
}

#[test]
fn power_cap_peak_share_and_energy_are_listed_under_the_table() {
    let mut e = entry(&record("mm_bf16/8192", 1.6132e6));
    crate::output::view::tests::with_power_and_peak(e.summary.as_mut().unwrap());
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries: std::slice::from_ref(&e),
        comparison: None,
        exit: Exit::Success,
    }
    .render();
    insta::assert_snapshot!(md, @"
    ### cargo gpubench: run `r`

    **Device:** NVIDIA H200 (`cuda:0`) · **Baseline:** none

    | Benchmark | Time [95% interval] | Processes (spread) | Status |
    | :-- | --: | --: | :-- |
    | `matmul/mm_bf16/8192` | 1.613 ms [1.596, 1.630] | 3 ±0.3% | passed |

    **Power, energy and % of peak (the peak scaled to the clock the samples ran at):**

    - `matmul/mm_bf16/8192`: power-capped: 38% of samples at the 700 W limit; 75.0% of the dense bf16 peak at 1682 MHz (681.6 TFLOP/s of 909.2 TFLOP/s); 1.16 J per call at 705 W (idle 83 W)

    **Result: passed** (exit code 0).
    ");
}

/// `base_ns` of device time per call with the GPU work of `kernels` attached.
fn with_kernels(id: &str, base_ns: f64, kernels: &SyntheticKernels, seed: u64) -> RawRecord {
    let mut r = record(id, base_ns);
    kernels.attach(&mut r, &mut Pcg64Mcg::seed_from_u64(seed));
    r
}

#[test]
fn kernel_time_counters_and_kernel_changes_are_shown() {
    let add = SyntheticKernels::one("add_kernel", 2_290.0);
    let sdpa = SyntheticKernels::one("flash_fwd_kernel", 6_700.0);
    let base: Vec<BaselineEntry> = [
        with_kernels("add_1m", 9e3, &add, 1),
        with_kernels("sdpa", 2e4, &sdpa, 2),
    ]
    .iter()
    .map(|r| BaselineEntry::from_record(r).unwrap())
    .collect();
    let now = vec![
        with_kernels("add_1m", 9e3, &add.scaled(1.1), 3),
        with_kernels("sdpa", 2e4, &sdpa.with_kernel("fill_kernel", 1_000.0), 4),
    ];
    let (entries, c) = {
        let (_, fixture) = fixture(FailOn::Regressed);
        let c = RunComparison::judge(&now, &base, fixture.baseline, fixture.settings).unwrap();
        (now.iter().map(entry).collect::<Vec<_>>(), c)
    };
    assert!(c.gate_tripped);
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries: &entries,
        comparison: Some(&c),
        exit: Exit::of_verdicts(false, false, c.gate_tripped),
    }
    .render();
    insta::assert_snapshot!(md);
    // Gated on time alone, neither trips.
    let time_only = RunComparison::judge(
        &now,
        &base,
        c.baseline.clone(),
        VerdictSettings {
            gate: Gate::of(&[Metric::Time]),
            ..c.settings
        },
    )
    .unwrap();
    assert!(!time_only.gate_tripped);

    // Without a baseline the kernel time and kernels per call are a column.
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries: &entries,
        comparison: None,
        exit: Exit::Success,
    }
    .render();
    assert!(md.contains("| Kernel time (kernels) |"), "{md}");
    assert!(md.contains("| 2.5"), "{md}");
}

#[test]
fn a_run_without_kernel_time_says_why_once() {
    let mut r = record("mm", 1e5);
    for m in r
        .processes
        .iter_mut()
        .filter_map(|x| x.measurement.as_mut())
    {
        m.kernel_unavailable = Some("no kernel timing on cpu".into());
    }
    let entries = vec![entry(&r)];
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries: &entries,
        comparison: None,
        exit: Exit::Success,
    }
    .render();
    assert!(
        md.contains("\nKernel time: not measured (no kernel timing on cpu).\n"),
        "{md}"
    );
    assert!(!md.contains("Kernel time (kernels)"), "{md}");
}

#[test]
fn names_and_messages_cannot_break_the_markdown() {
    assert_eq!(code("a/b"), "`a/b`");
    assert_eq!(code("a`b"), "`` a`b ``");
    assert_eq!(code("x|y"), "`x|y`");
    assert_eq!(cell_code("x|y"), "`x\\|y`");
    assert_eq!(text("*bold* <b> | #1"), "\\*bold\\* \\<b\\> \\| \\#1");
    // A mention notifies nobody; a terminal's escape sequence loses its control byte.
    assert_eq!(text("ping @here"), "ping @\u{200B}here");
    assert_eq!(text("\u{1b}[31mred\u{7}"), "\\[31mred");
    assert_eq!(plain_percent(0.02), "2%");
    assert_eq!(plain_percent(0.025), "2.5%");
}

#[test]
fn a_figure_too_noisy_for_an_interval_shows_its_processes_range() {
    let mut r = one_process("launch", 1e5);
    r.append_processes(one_process("launch", 1e5 * 30.0))
        .unwrap();
    r.append_processes(one_process("launch", 1e5 * 0.02))
        .unwrap();
    let entries = vec![entry(&r)];
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries: &entries,
        comparison: None,
        exit: Exit::Success,
    }
    .render();
    assert!(
        md.contains(
            "| `matmul/launch` | 84.34 µs (too noisy for an interval; processes 2.000 µs – 3.000 ms) |"
        ),
        "{md}"
    );
}

#[test]
fn long_tables_and_lists_fold_and_what_needs_a_look_stays_in_view() {
    // Twelve benchmarks unchanged, one regressed, six new, seven in the baseline only.
    let same: Vec<String> = (0..12).map(|i| format!("same_{i:02}")).collect();
    let mut base: Vec<BaselineEntry> = same
        .iter()
        .map(|id| BaselineEntry::from_record(&record(id, 1e5)).unwrap())
        .collect();
    base.push(BaselineEntry::from_record(&record("slow", 1e5)).unwrap());
    base.extend(
        (0..7).map(|i| BaselineEntry::from_record(&record(&format!("gone_{i}"), 1e5)).unwrap()),
    );
    let mut now: Vec<RawRecord> = same.iter().map(|id| record(id, 1e5)).collect();
    now.insert(5, record("slow", 1.5e5));
    now.extend((0..6).map(|i| record(&format!("fresh_{i}"), 1e5)));
    let (_, fixture) = fixture(FailOn::Regressed);
    let c = RunComparison::judge(&now, &base, fixture.baseline, fixture.settings).unwrap();
    let entries: Vec<SummaryEntry> = now.iter().map(entry).collect();
    let md = MarkdownSummary {
        subject: "run `r`",
        report: Some(ReportLink::Url("https://example.com/report/")),
        entries: &entries,
        comparison: Some(&c),
        exit: Exit::of_verdicts(false, false, c.gate_tripped),
    }
    .render();
    insta::assert_snapshot!(md);
    // In view: the regression and the new benchmarks, in run order; folded: the
    // unchanged ones, every one of them.
    let (shown, folded) = md.split_once("<details>").unwrap();
    assert!(shown.contains("| `matmul/slow` |") && shown.contains("| `matmul/fresh_0` |"));
    assert!(!shown.contains("same_"), "{shown}");
    assert_eq!(folded.matches("| `matmul/same_").count(), 12, "{folded}");
    assert!(folded.starts_with("<summary>12 more benchmarks with no change</summary>"));

    // Without a baseline the passed ones fold the same way.
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries: &entries,
        comparison: None,
        exit: Exit::Success,
    }
    .render();
    assert!(
        md.contains("<details><summary>19 more benchmarks that passed</summary>\n\n| Benchmark |"),
        "{md}"
    );
    // Ten rows or fewer never fold.
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries: &entries[..10],
        comparison: None,
        exit: Exit::Success,
    }
    .render();
    assert!(!md.contains("<details>"), "{md}");
}

#[test]
fn a_report_link_survives_any_url() {
    let md = |report| {
        MarkdownSummary {
            subject: "run `r`",
            report: Some(report),
            entries: &[],
            comparison: None,
            exit: Exit::Success,
        }
        .render()
    };
    let second = |md: String| md.lines().nth(2).unwrap().to_string();
    assert_eq!(
        second(md(ReportLink::Url("https://h/a b(1)<x>.html\n"))),
        "Charts and every figure: [the HTML report](https://h/a%20b%281%29%3Cx%3E.html)."
    );
    assert_eq!(
        second(md(ReportLink::Path("target/gpubench/report/index.html"))),
        "The HTML report is at `target/gpubench/report/index.html` on the machine that ran this (`--report-url` links it here)."
    );
}

#[test]
fn a_list_folds_past_a_handful_of_items() {
    let items = |n: usize| -> Vec<String> { (0..n).map(|i| format!("`b{i}`: boom")).collect() };
    let mut out = String::new();
    list(&mut out, "**Failed:**", "Failed", &items(5));
    assert_eq!(
        out,
        format!(
            "\n**Failed:**\n\n{}",
            "- `b0`: boom\n- `b1`: boom\n- `b2`: boom\n- `b3`: boom\n- `b4`: boom\n"
        )
    );
    let mut out = String::new();
    list(&mut out, "**Failed:**", "Failed", &items(6));
    assert!(
        out.starts_with("\n<details><summary>Failed (6)</summary>\n\n- `b0`: boom\n")
            && out.ends_with("- `b5`: boom\n\n</details>\n"),
        "{out}"
    );
    let mut out = String::new();
    list(&mut out, "**Failed:**", "Failed", &[]);
    assert_eq!(out, "");
}

/// Three processes on the CPU device whose per-iteration times are `base_ns` times
/// the same ±1% pattern, 0.8% apart.
fn cpu_record(id: &str, base_ns: f64) -> RawRecord {
    let process = |f: f64| {
        let pattern = [1.0, 1.01, 0.99, 1.005, 0.995];
        RecordBuilder::passed(id)
            .cpu("AMD EPYC")
            .samples((0..20).map(|i| {
                let wall = base_ns * f * pattern[i % pattern.len()] * 10.0;
                sample(10, wall, wall, None)
            }))
            .build()
    };
    let mut r = process(1.0);
    r.append_processes(process(1.008)).unwrap();
    r.append_processes(process(0.994)).unwrap();
    r
}

#[test]
fn a_cpu_run_four_percent_from_its_baseline_is_no_change_and_the_gate_line_says_why() {
    // As a CI runner measured unchanged code in two runs minutes apart: 351.8 µs
    // against 337.9 µs, each run's processes within 0.8%.
    let base = [BaselineEntry::from_record(&cpu_record("matmul_f32/256", 351.8e3)).unwrap()];
    let now = vec![cpu_record("matmul_f32/256", 337.9e3)];
    let settings = |config| verdict_settings(config, FailOn::Regressed);
    let source = main_baseline(true);
    let render = |c: &RunComparison| {
        let entries: Vec<SummaryEntry> = now.iter().map(entry).collect();
        MarkdownSummary {
            subject: "run `20260101T000000.000Z-1-0`",
            report: None,
            entries: &entries,
            comparison: Some(c),
            exit: Exit::of_verdicts(false, false, c.gate_tripped),
        }
        .render()
    };
    let c = RunComparison::judge(
        &now,
        &base,
        source.clone(),
        settings(CompareConfig::default()),
    )
    .unwrap();
    let md = render(&c);
    assert!(
        md.contains("noise threshold ±2% (host-bound ±50%, CPU ±10%)"),
        "{md}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| `matmul/matmul_f32/256` |"))
        .unwrap_or_else(|| panic!("{md}"));
    // Its interval excludes no change but lies within the CPU's ±10%: certain, and
    // still no change.
    assert!(
        row.contains("-4.0%") && row.ends_with("| no change (certain, under ±10%) |"),
        "{row}"
    );
    assert!(md.contains("**Result: no regression**"), "{md}");
    // Judged on ±2% as device-bound work is, the same runs read as an improvement:
    // what --cpu-noise-threshold 0.02 asks for.
    let strict = CompareConfig {
        cpu_noise_threshold: 0.02,
        ..CompareConfig::default()
    };
    let c = RunComparison::judge(&now, &base, source, settings(strict)).unwrap();
    let md = render(&c);
    assert!(md.contains("(host-bound ±50%, CPU ±2%)"), "{md}");
    assert!(md.contains("| improved |"), "{md}");
}

#[test]
fn ab_shows_the_paired_threshold_certain_changes_and_what_it_could_detect() {
    use crate::compare::paired_fixture::{ab_comparison, MATMUL, MLP};
    let (head, c) = ab_comparison(CompareConfig::default());
    let entries: Vec<SummaryEntry> = head.iter().map(entry).collect();
    let md = MarkdownSummary {
        subject: "`ab`: working tree against base `abc1234`",
        report: None,
        entries: &entries,
        comparison: Some(&c),
        exit: Exit::of_verdicts(false, false, c.gate_tripped),
    }
    .render();
    // The gate line names the paired threshold, not the run's ±2%.
    assert!(
        md.contains("significance 0.05, the paired noise threshold ±1%\n"),
        "{md}"
    );
    assert!(
        md.contains("| Change [90% CI] | Could detect | Processes (pooled spread) |"),
        "{md}"
    );
    let row = |id: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| `matmul/{id}` |")))
            .unwrap_or_else(|| panic!("{md}"))
            .to_string()
    };
    assert!(row(MLP).contains("| ±1.02% |") && row(MLP).ends_with("| **regressed** |"));
    assert!(
        row(MATMUL).ends_with("| no change (certain, under ±1%) |"),
        "{md}"
    );
    assert!(
        md.contains("**Could detect:** each verdict's threshold (the paired noise threshold ±1%"),
        "{md}"
    );
    insta::assert_snapshot!(md);
}

/// `now` judged against `base` as the main baseline, failing on regressions of
/// the metrics of `gate`.
fn judged_under(now: &[RawRecord], base: &[BaselineEntry], gate: Gate) -> RunComparison {
    let settings = VerdictSettings {
        gate,
        ..verdict_settings(CompareConfig::default(), FailOn::Regressed)
    };
    RunComparison::judge(now, base, main_baseline(false), settings).unwrap()
}

/// The Markdown summary of `entries` judged as `c`, and its terminal table.
fn rendered(entries: &[SummaryEntry], c: &RunComparison) -> (String, String) {
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries,
        comparison: Some(c),
        exit: Exit::of_verdicts(false, false, c.gate_tripped),
    }
    .render();
    let table = crate::output::terminal::render_table(
        &crate::output::view::SummaryView::build(entries, Some(c)),
        crate::console::Console::default(),
    );
    (md, table)
}

#[test]
fn host_time_gets_a_column_and_a_verdict_only_under_a_gate_that_names_it() {
    // Five processes a side (host-bound time needs them); the head's calls return
    // to the host 3x later, the device's time unchanged.
    let five = |id: &str, host: f64| {
        let mut r = one_process(id, 1e6);
        for f in [1.003, 0.997, 1.001, 0.999] {
            r.append_processes(one_process(id, 1e6 * f)).unwrap();
        }
        for m in r
            .processes
            .iter_mut()
            .filter_map(|x| x.measurement.as_mut())
        {
            for s in &mut m.samples {
                s.host_ns *= host;
            }
        }
        r
    };
    let base = [BaselineEntry::from_record(&five("mm", 1.0)).unwrap()];
    let now = [five("mm", 3.0)];
    let entries: Vec<SummaryEntry> = now.iter().map(entry).collect();
    let judged = |gate: Gate| judged_under(&now, &base, gate);
    let render = |c: &RunComparison| rendered(&entries, c);

    // The default gate neither judges nor shows it: the outputs are as before.
    let c = judged(Gate::default());
    assert!(!c.gate_tripped);
    let (md, table) = render(&c);
    assert!(
        !md.contains("Host time") && !table.contains("host change"),
        "{md}\n{table}"
    );

    let c = judged(Gate::of(&[Metric::Time, Metric::Host]));
    assert!(c.gate_tripped);
    assert_eq!(
        crate::output::view::words::tripping_reasons(&c),
        [("mm", "host time regressed".to_string())]
    );
    let (md, table) = render(&c);
    assert!(md.contains("| Host time [90% CI] |"), "{md}");
    assert!(md.contains("+200.0%"), "{md}");
    assert!(
        table.lines().next().unwrap().contains("host change"),
        "{table}"
    );
    assert!(table.contains("regressed"), "{table}");
}

#[test]
fn energy_gets_a_column_in_joules_a_verdict_and_the_power_cap_between_sides() {
    use gpubench_analysis::synthetic::{GpuLikeSamples, ProcessShift, SyntheticEnergy};
    use gpubench_record::measurement::SampleClock;
    // The H200 matmul's energy (processes 0.6% apart, windows 3%), five processes a
    // side at one clock; the baseline ran power-capped, this run did not and spent
    // 10% more energy per call, its time unchanged.
    let five = |energy: f64, power_capped: bool, seed: u64| {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut r = GpuLikeSamples::default()
            .with_shift(ProcessShift::LogNormal { sigma: 0.005 })
            .record_processes("mm", "NVIDIA H200", 5, 30, &mut rng);
        SyntheticEnergy::h200_matmul()
            .scaled(energy)
            .plant(&mut r, &mut rng);
        for m in r
            .processes
            .iter_mut()
            .filter_map(|p| p.measurement.as_mut())
        {
            for s in &mut m.samples {
                s.clock = Some(SampleClock {
                    sm_mhz: 1707,
                    temperature_c: None,
                    throttled: false,
                    power_capped,
                    power_w: None,
                });
            }
        }
        r
    };
    let base = [BaselineEntry::from_record(&five(1.0, true, 1)).unwrap()];
    let now = [five(1.1, false, 2)];
    let entries: Vec<SummaryEntry> = now.iter().map(entry).collect();
    let settings = verdict_settings(CompareConfig::default(), FailOn::Regressed);
    let c = RunComparison::judge(&now, &base, main_baseline(false), settings).unwrap();
    assert!(c.gate_tripped);
    assert_eq!(
        crate::output::view::words::tripping_reasons(&c),
        [("mm", "energy regressed".to_string())]
    );
    let md = MarkdownSummary {
        subject: "run `r`",
        report: None,
        entries: &entries,
        comparison: Some(&c),
        exit: Exit::of_verdicts(false, false, c.gate_tripped),
    }
    .render();
    assert!(md.contains("| Energy [90% CI] |"), "{md}");
    assert!(md.contains(" J, +"), "{md}");
    assert!(md.contains("energy ±3%"), "{md}");
    assert!(
        md.contains("power-capped in 0% of samples here, 100% in the baseline: a change may be the power limit's or the clock's"),
        "{md}"
    );
    let table = crate::output::terminal::render_table(
        &crate::output::view::SummaryView::build(&entries, Some(&c)),
        crate::console::Console::default(),
    );
    assert!(
        table.lines().next().unwrap().contains("energy change"),
        "{table}"
    );
    assert!(table.contains(" J, +"), "{table}");

    // The JSON summary carries the verdict and the power cap, as docs/schema says.
    let summary = crate::compare::summary::RunSummary::new(
        "r".into(),
        "/t/runs/r".into(),
        crate::store::manifest::RunStatus::Completed,
        1.0,
        entries.clone(),
    )
    .with_comparison(c);
    let v: serde_json::Value = serde_json::from_str(&summary.to_json_pretty()).unwrap();
    let outcome = &v["benchmarks"][0]["comparison"];
    assert_eq!(outcome["energy"]["verdict"], "regressed", "{outcome}");
    let other = &v["comparison"]["set"]["other_clocks"][0];
    assert_eq!(other["power_capped"]["baseline_share"], 1.0, "{v}");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/schema/run-summary.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = schema.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let mut wrong = v.clone();
    wrong["benchmarks"][0]["comparison"]["energy"]["verdict"] = "hotter".into();
    assert!(!schema.is_valid(&wrong));
    let mut wrong = v;
    wrong["comparison"]["set"]["other_clocks"][0]["power_capped"]["current_share"] = 2.into();
    assert!(!schema.is_valid(&wrong));
}

#[test]
fn share_of_peak_gets_a_column_and_a_verdict_only_under_a_gate_that_names_it() {
    // Three processes a side of a bf16 matmul, as fast on both sides, but the head's
    // GPU ran at 1800 MHz where the base's ran at 1500: a drop in share at its clock.
    let three = |sm_mhz: u32| {
        let id = "matmul_bf16/8192";
        let mut r = one_process(id, 1.4e6);
        for f in [1.003, 0.997] {
            r.append_processes(one_process(id, 1.4e6 * f)).unwrap();
        }
        for m in r
            .processes
            .iter_mut()
            .filter_map(|x| x.measurement.as_mut())
        {
            m.throughput = Some(gpubench_record::measurement::Throughput::Flops(
                2.0 * 8192f64.powi(3),
            ));
            for s in &mut m.samples {
                s.clock = Some(gpubench_record::measurement::SampleClock {
                    sm_mhz,
                    temperature_c: None,
                    throttled: false,
                    power_capped: false,
                    power_w: None,
                });
            }
        }
        r
    };
    let base = [BaselineEntry::from_record(&three(1500)).unwrap()];
    let now = [three(1800)];
    let entries: Vec<SummaryEntry> = now.iter().map(entry).collect();
    let judged = |gate: Gate| judged_under(&now, &base, gate);
    let render = |c: &RunComparison| rendered(&entries, c);

    // The default gate neither judges nor shows it; time sees no change.
    let c = judged(Gate::default());
    assert!(!c.gate_tripped);
    let (md, table) = render(&c);
    assert!(
        !md.contains("Share of peak") && !table.contains("peak share"),
        "{md}\n{table}"
    );

    let c = judged(Gate::of(&[Metric::Time, Metric::Peak]));
    assert!(c.gate_tripped);
    assert_eq!(
        crate::output::view::words::tripping_reasons(&c),
        [("matmul_bf16/8192", "share of peak regressed".to_string())]
    );
    let (md, table) = render(&c);
    assert!(md.contains("| Share of peak [90% CI] |"), "{md}");
    assert!(md.contains("16.7%"), "{md}");
    assert!(
        table.lines().next().unwrap().contains("peak share"),
        "{table}"
    );
    assert!(table.contains("regressed"), "{table}");

    // In JSON, a `peak` field beside time's, in shares, as docs/schema says.
    let summary = crate::compare::summary::RunSummary::new(
        "r1".into(),
        "/t/runs/r1".into(),
        crate::store::manifest::RunStatus::Completed,
        2.5,
        entries.clone(),
    )
    .with_comparison(c);
    let v: serde_json::Value = serde_json::from_str(&summary.to_json_pretty()).unwrap();
    let peak = &v["benchmarks"][0]["comparison"]["peak"];
    assert_eq!(peak["verdict"], "regressed", "{v}");
    let (was, now) = (
        peak["baseline_estimate"].as_f64().unwrap(),
        peak["current_estimate"].as_f64().unwrap(),
    );
    // 2·8192³ FLOP in 1.4 ms against 989.4 TFLOP/s × 1500 / 1830, by hand: 96.84%.
    assert!((was - 0.9684).abs() < 0.001, "{peak}");
    assert!((now / was - 1500.0 / 1800.0).abs() < 0.001, "{peak}");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/schema/run-summary.schema.json");
    let schema = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = schema.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let mut wrong = v.clone();
    wrong["benchmarks"][0]["comparison"]["peak"]["verdict"] = "dropped".into();
    assert!(!schema.is_valid(&wrong));
}
