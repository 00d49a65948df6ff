//! Tests of [`super`].

use std::time::Duration;

use gpubench_analysis::baseline::{Gate, Metric};
use gpubench_analysis::{CompareConfig, FailOn};
use gpubench_record::measurement::ProcessPolicy;

use super::*;

/// The options of a run: the `run` subcommand's, else the top level's.
fn run_args(cli: &Cli) -> &RunArgs {
    match &cli.command {
        Some(Command::Run(args)) => args,
        _ => &cli.run,
    }
}

fn compare_args(cli: &Cli) -> Option<&CompareArgs> {
    match &cli.command {
        Some(Command::Compare(args)) => Some(args),
        _ => None,
    }
}

fn report_args(cli: &Cli) -> Option<&ReportArgs> {
    match &cli.command {
        Some(Command::Report(args)) => Some(args),
        _ => None,
    }
}

fn ab_args(cli: &Cli) -> Option<&AbArgs> {
    match &cli.command {
        Some(Command::Ab(args)) => Some(args),
        _ => None,
    }
}

#[test]
fn definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn cargo_passes_the_subcommand_name_first() {
    let cli = Cli::parse_from_cargo(["cargo-gpubench", "gpubench", "--quick", "matmul"]).unwrap();
    let args = run_args(&cli);
    assert!(args.measure.quick);
    assert_eq!(args.select.filters, ["matmul"]);
    let direct = Cli::parse_from_cargo(["cargo-gpubench", "--list"]).unwrap();
    assert!(run_args(&direct).list);
}

#[test]
fn console_flags_go_before_or_after_the_subcommand() {
    use crate::console::{ColorWhen, Verbosity};
    let parse = |argv: &[&str]| {
        let cli = Cli::parse_from_cargo(["cargo-gpubench", "gpubench"].iter().chain(argv).copied())
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        let compare = compare_args(&cli).map(|c| c.baseline.clone());
        (cli.console.clone(), compare)
    };
    let (c, compared) = parse(&["-q", "--color", "never", "compare", "main", "latest"]);
    assert!(c.quiet && c.color == Some(ColorWhen::Never));
    assert_eq!(compared.as_deref(), Some("main"));
    let (c, compared) = parse(&["compare", "main", "latest", "-v", "--color=always"]);
    assert!(c.verbose && c.color == Some(ColorWhen::Always));
    assert_eq!(compared.as_deref(), Some("main"));
    assert_eq!(c.console().verbosity, Verbosity::Verbose);
    // Before a run's own options they stay a run's.
    let (c, compared) = parse(&["-q", "--quick", "compare"]);
    assert!(c.quiet && compared.is_none());
    let cli = Cli::parse_from_cargo(["cargo-gpubench", "-q", "--quick", "compare"]).unwrap();
    assert_eq!(run_args(&cli).select.filters, ["compare"]);
    let err = Cli::parse_from_cargo(["cargo-gpubench", "merge", "a", "-q", "-v"]).unwrap_err();
    assert!(err.to_string().contains("cannot be used with"), "{err}");
}

#[test]
fn skip_is_repeatable() {
    let cli = Cli::parse_from_cargo([
        "cargo-gpubench",
        "--skip",
        "huge",
        "--skip=conv,3x3",
        "matmul",
    ])
    .unwrap();
    let args = run_args(&cli);
    // Not split at commas: a FILTER is one name, as libtest's is.
    assert_eq!(args.select.skip, ["huge", "conv,3x3"]);
    assert_eq!(args.select.filters, ["matmul"]);
}

#[test]
fn run_subcommand_takes_executables() {
    let cli = Cli::parse_from_cargo([
        "cargo-gpubench",
        "run",
        "--exe",
        "a",
        "--exe",
        "b",
        "--timeout",
        "2.5",
        "conv",
    ])
    .unwrap();
    let args = run_args(&cli);
    assert_eq!(args.prebuilt.exes, [PathBuf::from("a"), PathBuf::from("b")]);
    assert_eq!(args.process.timeout, Duration::from_millis(2500));
    assert_eq!(args.select.filters, ["conv"]);
}

#[test]
fn one_exe_takes_several_paths_and_filters_follow_a_double_dash() {
    let parse = |argv: &[&str]| {
        let cli =
            Cli::parse_from_cargo(["cargo-gpubench", "run"].iter().chain(argv).copied()).unwrap();
        let args = run_args(&cli).clone();
        let exes: Vec<String> = args
            .prebuilt
            .exes
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        (exes, args.select.filters)
    };
    let (a, b, c) = ("a".to_string(), "b".to_string(), "c".to_string());
    assert_eq!(
        parse(&["--exe", "a", "b", "c"]),
        (vec![a.clone(), b.clone(), c.clone()], vec![])
    );
    assert_eq!(
        parse(&["--exe", "a", "b", "--", "mm", "conv"]),
        (vec![a.clone(), b.clone()], vec!["mm".into(), "conv".into()])
    );
    assert_eq!(
        parse(&["mm", "--exe", "a", "b", "--quick"]),
        (vec![a.clone(), b.clone()], vec!["mm".into()])
    );
    assert_eq!(
        parse(&["--exe", "a", "--exe", "b,c"]),
        (vec![a.clone(), b.clone(), c.clone()], vec![])
    );
    assert_eq!(parse(&["--exe=a", "mm"]), (vec![a], vec!["mm".into()]));
    let help = Cli::command()
        .find_subcommand_mut("run")
        .unwrap()
        .render_long_help()
        .to_string();
    assert!(
        help.contains("FILTERs go before it or after `--`"),
        "{help}"
    );
}

#[test]
fn processes_take_a_number_or_a_range() {
    let policy = |argv: &[&str]| {
        Cli::parse_from_cargo(std::iter::once("cargo-gpubench").chain(argv.iter().copied()))
            .map(|c| run_args(&c).measure.process_policy(ProcessDefaults::run()))
    };
    assert_eq!(policy(&[]).unwrap(), ProcessPolicy::standard());
    assert_eq!(policy(&["--quick"]).unwrap(), ProcessPolicy::fixed(3));
    assert_eq!(
        policy(&["--processes", "5"]).unwrap(),
        ProcessPolicy::fixed(5)
    );
    let p = policy(&["--processes", "2..8"]).unwrap();
    assert_eq!((p.min, p.max), (2, 8));
    assert_eq!(p.target_rel_ci, ProcessPolicy::standard().target_rel_ci);
    for (bad, why) in [
        ("0", "between 1 and 100"),
        ("many", "is not N or MIN..MAX"),
        ("5..3", "MIN is above MAX"),
        ("1..101", "between 1 and 100"),
    ] {
        let err = policy(&["--processes", bad]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains(why), "{bad}: {err}");
    }
}

#[test]
fn report_takes_a_run_reference_defaulting_to_latest() {
    let cli = Cli::parse_from_cargo(["cargo-gpubench", "gpubench", "report"]).unwrap();
    let r = report_args(&cli).unwrap();
    assert_eq!((r.run.as_str(), r.open), ("latest", false));
    let cli = Cli::parse_from_cargo(["cargo-gpubench", "report", "run:2026", "--open"]).unwrap();
    let r = report_args(&cli).unwrap();
    assert_eq!((r.run.as_str(), r.open), ("run:2026", true));
    assert!(run_args(&Cli::parse_from_cargo(["cargo-gpubench", "--no-report"]).unwrap()).no_report);
}

#[test]
fn bad_values_are_usage_errors() {
    for bad in [
        &["cargo-gpubench", "--device", "tpu"][..],
        &["cargo-gpubench", "--timeout", "0"],
        &["cargo-gpubench", "--timeout", "soon"],
        &["cargo-gpubench", "--format", "xml"],
        &["cargo-gpubench", "--ignored", "--include-ignored"],
        &["cargo-gpubench", "--exe", "a", "-p", "x"],
    ] {
        let err = Cli::parse_from_cargo(bad.iter().copied()).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{bad:?}: {err}");
    }
    assert!(Cli::parse_from_cargo(["cargo-gpubench", "--device", "cuda:1"]).is_ok());
}

#[test]
fn every_option_reads_an_environment_variable() {
    let cmd = Cli::command();
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if matches!(id, "help" | "version") {
            continue;
        }
        let env = arg
            .get_env()
            .unwrap_or_else(|| panic!("--{id} has no env var"));
        assert!(env.to_string_lossy().starts_with("GPUBENCH_"), "{id}");
    }
    let vars = option_env_vars();
    assert!(vars.contains(&"GPUBENCH_IGNORED".to_string()));
    assert!(vars.contains(&"GPUBENCH_DEVICE".to_string()));
}

#[test]
fn baseline_options_map_to_the_comparison_settings() {
    let cli = Cli::parse_from_cargo(["cargo-gpubench", "gpubench"]).unwrap();
    let v = &run_args(&cli).verdicts;
    assert_eq!(v.compare_config(), CompareConfig::default());
    assert_eq!(v.fail_on, FailOn::Regressed);
    assert_eq!(v.gate(), Gate::default());
    assert!(!v.allow_device_mismatch && v.summary_file.is_none());

    let cli = Cli::parse_from_cargo([
        "cargo-gpubench",
        "--baseline",
        "pr-1",
        "--save-baseline",
        "main",
        "--significance",
        "0.01",
        "--noise-threshold",
        "5%",
        "--fail-on",
        "ambiguous",
        "--gate-on",
        "kernel,counters",
        "--format",
        "markdown",
    ])
    .unwrap();
    let args = run_args(&cli);
    assert_eq!(
        args.verdicts.gate(),
        Gate::of(&[Metric::Kernel, Metric::Counters])
    );
    assert_eq!(args.verdicts.gate().to_string(), "kernel,counters");
    assert_eq!(args.baselines.baseline.as_deref(), Some("pr-1"));
    assert_eq!(args.baselines.save_baseline.as_deref(), Some("main"));
    assert_eq!(args.output.format, Format::Markdown);
    let config = args.verdicts.compare_config();
    assert_eq!((config.significance, config.noise_threshold), (0.01, 0.05));
    assert_eq!(args.verdicts.fail_on, FailOn::Ambiguous);

    let cli = Cli::parse_from_cargo([
        "cargo-gpubench",
        "compare",
        "main",
        "latest",
        "--fail-on",
        "never",
        "--noise-threshold",
        "0.1",
    ])
    .unwrap();
    let c = compare_args(&cli).unwrap();
    assert_eq!(
        (c.baseline.as_str(), c.current.as_str()),
        ("main", "latest")
    );
    assert_eq!(c.verdicts.fail_on, FailOn::Never);
    assert_eq!(c.verdicts.noise_threshold, 0.1);
}

#[test]
fn bad_baseline_options_are_usage_errors_with_the_reason() {
    for (bad, reason) in [
        (
            &["--save-baseline", "../up"][..],
            "a baseline name is 1 to 64",
        ),
        (&["--baseline", ".x"], "it starts with '.'"),
        (&["--baseline", "a", "--no-baseline"], "cannot be used with"),
        (&["--significance", "0"], "strictly between 0 and 1"),
        (&["--significance", "1.5"], "strictly between 0 and 1"),
        (&["--noise-threshold=-1%"], "at least 0"),
        (&["--noise-threshold", "lots"], "percentage (2%)"),
        (
            &["--fail-on", "sometimes"],
            "[possible values: regressed, ambiguous, never]",
        ),
        (
            &["--gate-on", "time,speed"],
            "[possible values: time, kernel, counters, memory, host, energy, peak]",
        ),
    ] {
        let args = std::iter::once("cargo-gpubench").chain(bad.iter().copied());
        let err = Cli::parse_from_cargo(args).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{bad:?}");
        assert!(err.to_string().contains(reason), "{bad:?}: {err}");
    }
    let err = Cli::parse_from_cargo(["cargo-gpubench", "compare", "main"]).unwrap_err();
    assert_eq!(err.exit_code(), 2);
}

#[test]
fn compare_options_read_environment_variables_too() {
    let cmd = Cli::command();
    let compare = cmd.find_subcommand("compare").unwrap();
    for arg in compare.get_arguments() {
        let id = arg.get_id().as_str();
        if arg.is_positional() || matches!(id, "help" | "version") {
            continue;
        }
        let env = arg
            .get_env()
            .unwrap_or_else(|| panic!("compare --{id} has no env var"));
        assert!(env.to_string_lossy().starts_with("GPUBENCH_"), "{id}");
    }
    let help = compare.clone().render_long_help().to_string();
    assert!(help.contains("ambiguous and refused"), "{help}");
    assert!(help.contains("4    the --fail-on gate tripped"), "{help}");
}

#[test]
fn help_documents_exit_codes() {
    let help = Cli::command().render_long_help().to_string();
    assert!(help.contains("Exit codes:"), "{help}");
    assert!(help.contains("3    the bench targets failed to build"));
    assert!(help.contains("4    regression found"), "{help}");
    assert!(help.contains("[default: 0.05]") && help.contains("[default: 0.02]"));
    assert!(help.contains("[default: regressed]"), "{help}");
}

/// The long help of the run's option `--{name}`, as one line.
fn option_help(name: &str) -> String {
    let cmd = Cli::command();
    let arg = cmd
        .get_arguments()
        .find(|a| a.get_long() == Some(name))
        .unwrap_or_else(|| panic!("no option --{name}"));
    let help = arg.get_long_help().or(arg.get_help()).unwrap().to_string();
    help.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn significance_help_names_the_test_the_verdict_uses() {
    let help = option_help("significance");
    assert!(help.contains("Welch's t-test"), "{help}");
    assert!(help.contains("paired t-test"), "{help}");
    // The p-value comes from Welch's t on the processes' medians, not a bootstrap:
    // two sides three processes each, computed here by hand.
    let (was, now) = ([100.0, 101.0, 102.0], [103.0, 104.5, 105.0]);
    let groups = |m: &[f64]| m.iter().map(|&x| vec![x; 5]).collect::<Vec<_>>();
    let c = gpubench_analysis::compare_processes(
        &groups(&was),
        &groups(&now),
        gpubench_analysis::processes::Bound::Device,
        &CompareConfig::default(),
    )
    .unwrap();
    let logs = |m: &[f64]| m.iter().map(|x: &f64| x.ln()).collect::<Vec<_>>();
    let (yb, yc) = (logs(&was), logs(&now));
    let mean = |y: &[f64]| y.iter().sum::<f64>() / y.len() as f64;
    let var = |y: &[f64]| {
        let m = mean(y);
        y.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (y.len() - 1) as f64
    };
    let (vb, vc) = (var(&yb) / 3.0, var(&yc) / 3.0);
    let df = (vb + vc).powi(2) / (vb * vb / 2.0 + vc * vc / 2.0);
    let t = (mean(&yc) - mean(&yb)) / (vb + vc).sqrt();
    let p = 1.0 - gpubench_analysis::processes::t_cdf(t, df);
    assert!((c.p_value - p).abs() < 1e-9, "{} against {p}", c.p_value);
    assert!(!help.contains("bootstrap"), "{help}");
}

#[test]
fn settings_mismatch_help_names_every_setting_a_comparison_checks() {
    let help = option_help("allow-settings-mismatch");
    let base = gpubench_record::measurement::MeasurementConfig::standard();
    let changed = [
        (
            "sample time",
            gpubench_record::measurement::MeasurementConfig {
                sample_target_s: 0.02,
                ..base.clone()
            },
        ),
        (
            "warm-up",
            gpubench_record::measurement::MeasurementConfig {
                warmup_time_s: 2.0,
                ..base.clone()
            },
        ),
        (
            "--throttle-threshold",
            gpubench_record::measurement::MeasurementConfig {
                throttle_threshold: 0.5,
                ..base.clone()
            },
        ),
        (
            "--flush-l2",
            gpubench_record::measurement::MeasurementConfig {
                flush_l2: true,
                ..base.clone()
            },
        ),
    ];
    for (words, config) in changed {
        assert!(
            !config.differences_that_move_figures(&base).is_empty(),
            "{words} is not checked"
        );
        assert!(help.contains(words), "{words} missing from: {help}");
    }
}

#[test]
fn ab_has_a_paired_noise_threshold_of_its_own() {
    use gpubench_analysis::compare::DEFAULT_PAIRED_NOISE_THRESHOLD;
    let parse = |argv: &[&str]| {
        let cli =
            Cli::parse_from_cargo(["cargo-gpubench", "ab"].iter().chain(argv).copied()).unwrap();
        ab_args(&cli).unwrap().settings()
    };
    let settings = parse(&[]);
    assert_eq!(
        settings.config.paired_noise_threshold,
        DEFAULT_PAIRED_NOISE_THRESHOLD
    );
    assert_eq!(settings.config, CompareConfig::default());
    // A percentage or a fraction; the run's thresholds stay as they are.
    let settings = parse(&[
        "--paired-noise-threshold",
        "0.5%",
        "--noise-threshold",
        "3%",
    ]);
    assert_eq!(settings.config.paired_noise_threshold, 0.005);
    assert_eq!(settings.config.noise_threshold, 0.03);
    let settings = parse(&["--paired-noise-threshold=0.02"]);
    assert_eq!(settings.config.paired_noise_threshold, 0.02);
    // Only `ab` pairs, so only `ab` has it.
    let err =
        Cli::parse_from_cargo(["cargo-gpubench", "--paired-noise-threshold", "1%"]).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    let err = Cli::parse_from_cargo(["cargo-gpubench", "ab", "--paired-noise-threshold=-1%"])
        .unwrap_err();
    assert!(err.to_string().contains("at least 0"), "{err}");
    // It reads GPUBENCH_PAIRED_NOISE_THRESHOLD.
    let ab = Cli::command();
    let ab = ab.find_subcommand("ab").unwrap();
    let arg = ab
        .get_arguments()
        .find(|a| a.get_id() == "paired_noise_threshold")
        .unwrap();
    assert_eq!(
        arg.get_env().unwrap().to_string_lossy(),
        "GPUBENCH_PAIRED_NOISE_THRESHOLD"
    );
}

#[test]
fn the_options_a_harness_names_as_cargo_gpubenchs_are_options_of_a_run() {
    let cmd = Cli::command();
    let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    for option in gpubench_record::protocol::SUBCOMMAND_OPTIONS {
        let name = option.trim_start_matches("--");
        assert!(
            longs.contains(&name),
            "{option} is not an option of `cargo gpubench`: {longs:?}"
        );
    }
}

/// A subcommand's `--help` and `-h`, each as one line.
fn helps(subcommand: &str) -> [String; 2] {
    let mut cmd = Cli::command();
    let sub = cmd
        .find_subcommand_mut(subcommand)
        .expect("the subcommand exists")
        .clone();
    let one_line = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
    [
        one_line(sub.clone().render_long_help().to_string()),
        one_line(sub.clone().render_help().to_string()),
    ]
}

/// The number right after `before` in `text`, up to `after`: `3..6` or `5`.
fn stated<'a>(text: &'a str, before: &str, after: &str) -> &'a str {
    let from = text
        .find(before)
        .unwrap_or_else(|| panic!("`{before}` not in: {text}"))
        + before.len();
    let len = text[from..]
        .find(after)
        .unwrap_or_else(|| panic!("`{after}` not after `{before}` in: {text}"));
    &text[from..from + len]
}

#[test]
fn ab_help_states_the_processes_ab_runs() {
    for help in helps("ab") {
        ab_help_states(&help);
    }
}

fn ab_help_states(help: &str) {
    // What `ab` runs, by the one builder its command uses.
    let runs = |argv: &[&str]| {
        let cli =
            Cli::parse_from_cargo(["cargo-gpubench", "ab"].iter().chain(argv).copied()).unwrap();
        let args = ab_args(&cli).unwrap();
        args.measure
            .run_options(&args.process, ProcessDefaults::ab())
            .unwrap()
            .processes
    };
    let default = runs(&[]);
    let quick = runs(&["--quick"]);
    let range = |p: ProcessPolicy| {
        if p.is_fixed() {
            p.min.to_string()
        } else {
            format!("{}..{}", p.min, p.max)
        }
    };
    // --processes: "[default: 5..10, going past 5 while ... ±1%; 5 with --quick]".
    assert_eq!(
        stated(help, "`ab` decide [default: ", ", going past"),
        range(default)
    );
    assert_eq!(stated(help, ", going past ", " "), default.min.to_string());
    assert_eq!(
        stated(help, "interval is wider than ±", "%"),
        format!("{}", default.target_rel_ci * 100.0)
    );
    assert_eq!(stated(help, "±1%; ", " with --quick"), range(quick));
    // --quick: "... bounds and 5 processes per benchmark".
    assert_eq!(
        stated(help, "measurement bounds and ", " processes per benchmark"),
        range(quick)
    );
    // A run's numbers are not ab's.
    assert_ne!(default, ProcessDefaults::run().standard);
    assert!(
        !help.contains("3..6"),
        "a run's default in ab's help: {help}"
    );
}

#[test]
fn a_run_help_states_the_processes_a_run_runs() {
    let [help, _] = helps("run");
    let defaults = ProcessDefaults::run();
    let standard = defaults.standard;
    assert_eq!(
        stated(&help, "the run decide [default: ", ", where only"),
        format!("{}..{}", standard.min, standard.max)
    );
    let ci = stated(&help, "their interval is wider than ±", "%");
    assert_eq!(ci, format!("{}", standard.target_rel_ci * 100.0));
    assert_eq!(
        stated(&help, &format!("than ±{ci}%; "), " with --quick]"),
        defaults.quick.min.to_string()
    );
    assert_eq!(
        stated(&help, "measurement bounds and ", " processes per benchmark"),
        defaults.quick.min.to_string()
    );
}

#[test]
fn a_subcommand_refuses_the_options_it_does_not_read() {
    // capacity reads which benchmarks, device, timeout, baselines and output; a run's
    // measurement, verdict and spreading options are usage errors, not ignored.
    for option in [
        &["--quick"][..],
        &["--processes", "5"],
        &["--min-samples", "20"],
        &["--flush-l2"],
        &["--fail-on", "any"],
        &["--devices", "all"],
        &["--partition", "count:1/2"],
        &["--no-report"],
        &["--list"],
        &["--exact"],
    ] {
        let argv = ["cargo-gpubench", "capacity"].iter().chain(option).copied();
        let err = Cli::parse_from_cargo(argv).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{option:?}");
        assert!(
            err.to_string().contains("unexpected argument"),
            "{option:?}: {err}"
        );
    }
    let cli = Cli::parse_from_cargo([
        "cargo-gpubench",
        "capacity",
        "--device",
        "cuda:1",
        "--timeout",
        "60",
        "--save-baseline",
        "main",
        "--format",
        "json",
        "--max-probes",
        "8",
        "mlp",
    ])
    .unwrap();
    let Some(Command::Capacity(args)) = &cli.command else {
        panic!("capacity parses as capacity");
    };
    assert_eq!(args.process.device.as_deref(), Some("cuda:1"));
    assert_eq!(args.process.timeout, Duration::from_secs(60));
    assert_eq!(args.baselines.save_baseline.as_deref(), Some("main"));
    assert_eq!(args.output.format, Format::Json);
    assert_eq!(
        (args.max_probes, args.filters.as_slice()),
        (8, &["mlp".to_string()][..])
    );
}

#[test]
fn the_measurement_options_help_states_their_defaults() {
    use gpubench_record::measurement::MeasurementConfig;
    let (s, q) = (MeasurementConfig::standard(), MeasurementConfig::quick());
    let stated = [
        ("warm_up_time", s.warmup_time_s, q.warmup_time_s),
        (
            "measurement_time",
            s.measurement_time_s,
            q.measurement_time_s,
        ),
        ("sample_time", s.sample_target_s, q.sample_target_s),
        (
            "min_samples",
            f64::from(s.min_samples),
            f64::from(q.min_samples),
        ),
        (
            "max_samples",
            f64::from(s.max_samples),
            f64::from(q.max_samples),
        ),
        ("target_rel_ci", s.target_rel_ci, q.target_rel_ci),
    ];
    for sub in ["run", "ab"] {
        let cmd = Cli::command();
        let sub = cmd.find_subcommand(sub).unwrap();
        let help_of = |id: &str| {
            let arg = sub.get_arguments().find(|a| a.get_id() == id).unwrap();
            arg.get_help().unwrap().to_string()
        };
        for (id, default, quick) in stated {
            let help = help_of(id);
            assert!(
                help.contains(&format!("[default: {default}; --quick: {quick}]")),
                "{id}: {help}"
            );
        }
        let help = help_of("throttle_threshold");
        assert!(
            help.contains(&format!("[default: {};", s.throttle_threshold)),
            "{help}"
        );
    }
}
