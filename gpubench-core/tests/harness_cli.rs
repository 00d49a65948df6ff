//! Drives a real bench executable (the `fixture_benches` example) through the
//! libtest-compatible command line.

use std::path::PathBuf;
use std::process::{Command, Output};

use gpubench_record::failure::FailureKind;
use gpubench_record::host::ThreadSource;
use gpubench_record::id::file_stem_for_id;
use gpubench_record::measurement::Flag;
use gpubench_record::record::RawRecord;

fn fixture() -> PathBuf {
    // target/<profile>/deps/harness_cli-<hash> → target/<profile>/examples/fixture_benches
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|p| p.parent()).unwrap();
    let path = profile_dir.join("examples").join("fixture_benches");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build -p gpubench-core --examples` first (or `cargo test -p gpubench-core`, which builds it)",
        path.display()
    );
    path
}

fn run(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(fixture());
    cmd.args(args)
        .env_remove("GPUBENCH_RECORD_DIR")
        // What chooses the CPU's intra-op threads: only what a test sets.
        .env_remove("GPUBENCH_CPU_THREADS")
        .env_remove("GPUBENCH_FREE_CORES")
        .env_remove("OMP_NUM_THREADS")
        .env("GPUBENCH_DEVICE", "cpu");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("fixture runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn list_terse_is_libtests_format() {
    let out = run(&["--list", "--format", "terse"], &[]);
    assert!(out.status.success());
    insta::assert_snapshot!(stdout(&out));
}

#[test]
fn filter_exact_and_ignored_behave_like_libtest() {
    let ids = |args: &[&str]| -> Vec<String> {
        let mut a = vec!["--list", "--format", "terse"];
        a.extend_from_slice(args);
        stdout(&run(&a, &[]))
            .lines()
            .map(|l| l.trim_end_matches(": benchmark").to_string())
            .collect()
    };
    assert_eq!(ids(&["sized"]), ["sized/8", "sized/64", "sized/512"]);
    assert_eq!(ids(&["sized/6"]), ["sized/64"]);
    assert_eq!(ids(&["--exact", "sized"]), Vec::<String>::new());
    assert_eq!(ids(&["--exact", "sized/8"]), ["sized/8"]);
    // Several filters select what any of them selects, as in libtest.
    assert_eq!(ids(&["sized/8", "renamed"]), ["renamed", "sized/8"]);
    assert_eq!(
        ids(&["--exact", "sized/8", "sized/512"]),
        ["sized/8", "sized/512"]
    );
    assert_eq!(ids(&["--ignored"]), ["slow_ignored"]);
    assert_eq!(
        ids(&["--skip", "sized", "a"]),
        ["adds", "panics", "renamed"]
    );
}

#[test]
fn without_bench_every_benchmark_runs_once_and_failures_do_not_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[],
        &[("GPUBENCH_RECORD_DIR", dir.path().to_str().unwrap())],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(101), "{text}");
    for id in ["adds", "renamed", "sized/8", "sized/64", "sized/512"] {
        assert!(text.contains(&format!("test {id} ... ok")), "{id}: {text}");
    }
    assert!(text.contains("test panics ... FAILED"), "{text}");
    assert!(text.contains("test slow_ignored ... ignored"), "{text}");
    assert!(
        text.contains("test result: FAILED. 5 passed; 2 failed; 1 ignored"),
        "{text}"
    );

    let read = |id: &str| {
        RawRecord::read(&dir.path().join(format!("{}.json", file_stem_for_id(id)))).unwrap()
    };
    let panicked = read("panics");
    let failure = panicked.failure().cloned().expect("panics failed");
    assert_eq!(failure.kind, FailureKind::Panic);
    assert!(failure
        .message
        .contains("deliberate failure inside the routine"));
    // The benchmark after the panicking one still ran and passed.
    assert!(read("renamed").passed());
    let torch = read("torch_error")
        .failure()
        .cloned()
        .expect("shape mismatch is a failure");
    assert!(
        torch.message.contains("must match the size"),
        "{}",
        torch.message
    );
    assert!(torch.message.len() < 5000, "libtorch messages are capped");
    // The panic is tch's unwrap; the message names tch's file by crate, not by a path
    // into cargo's registry, and the bench function that called it.
    assert!(
        torch.message.contains("in tch-0.24.0/src/")
            && torch
                .message
                .contains("called from `fixture_benches::torch_error")
            && !torch.message.contains("registry"),
        "{}",
        torch.message
    );
    assert!(!dir
        .path()
        .join(format!("{}.json", file_stem_for_id("slow_ignored")))
        .exists());
}

#[test]
fn bench_mode_measures_and_writes_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &["--bench", "--exact", "sized/64"],
        &[
            ("GPUBENCH_RECORD_DIR", dir.path().to_str().unwrap()),
            ("GPUBENCH_QUICK", "1"),
            ("GPUBENCH_MEASUREMENT_TIME", "0.3"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("per iteration on cpu"));
    let record = RawRecord::read(
        &dir.path()
            .join(format!("{}.json", file_stem_for_id("sized/64"))),
    )
    .unwrap();
    assert_eq!(record.arg.as_deref(), Some("64"));
    assert_eq!(record.name, "sized");
    assert_eq!(record.fingerprint.device.kind, "cpu");
    assert!(record.fingerprint.libtorch_version.starts_with("2.11"));
    assert_eq!(record.processes.len(), 1);
    assert_eq!(record.processes[0].process, 1);
    let m = record.first_measurement().unwrap();
    assert!(m.samples.len() >= 5);
    assert!(m.memory.is_none());
    assert_eq!(m.cold.len(), 1);
    // The CPU has no kernel timing and says so rather than inventing figures.
    assert!(m.kernel.is_none());
    assert_eq!(
        m.kernel_unavailable.as_deref(),
        Some("no kernel timing on cpu")
    );
    assert!(
        stdout(&out).contains("no kernel timing on cpu"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "only the selected benchmark ran"
    );
    // No GPU to read: the record says why in one field, the output says nothing.
    assert_eq!(
        record.processes[0].telemetry_unavailable.as_deref(),
        Some("no GPU telemetry on cpu")
    );
    assert!(record.processes[0].telemetry.is_none() && record.fingerprint.gpu.is_none());
    assert!(m.samples.iter().all(|s| s.clock.is_none()));
    let printed = format!("{}{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    for quiet in ["telemetry", "NVML", "nvml", "gpu:", "throttled"] {
        assert!(
            !printed.contains(quiet),
            "a CPU run mentions {quiet}: {printed}"
        );
    }
    // The host is read: half the CPUs the process may use are the intra-op threads,
    // whatever the load, in the record and its settings, and printed; contended
    // exactly when the readings say the host could not serve them (this test cannot
    // choose the host's load).
    let host = record.processes[0]
        .host
        .as_ref()
        .expect("the host was read");
    assert_eq!(host.threads_from, ThreadSource::HalfCpus);
    assert_eq!(
        host.intra_op_threads,
        gpubench_record::host::default_cpu_threads(host.cpus.available)
    );
    assert_eq!(host.working_threads, host.intra_op_threads);
    assert_eq!(record.config.cpu_threads, Some(host.intra_op_threads));
    assert!(
        printed.contains(&format!("    host: {}", host.threads_text())),
        "{printed}"
    );
    assert_eq!(
        printed.contains("contended"),
        host.contended(),
        "{host:?}: {printed}"
    );
    assert_eq!(m.flags.contains(&Flag::Contended), host.contended());
}

#[test]
fn the_cpu_threads_are_the_option_omp_num_threads_the_baselines_or_half_the_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let available = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let host_of = |envs: &[(&str, &str)]| {
        let mut envs = envs.to_vec();
        envs.extend([
            ("GPUBENCH_RECORD_DIR", dir.path().to_str().unwrap()),
            ("GPUBENCH_QUICK", "1"),
            ("GPUBENCH_MEASUREMENT_TIME", "0.1"),
        ]);
        let out = run(&["--bench", "--exact", "sized/8"], &envs);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let record = RawRecord::read(
            &dir.path()
                .join(format!("{}.json", file_stem_for_id("sized/8"))),
        )
        .unwrap();
        let host = record.processes[0].host.clone().expect("the host was read");
        assert_eq!(record.config.cpu_threads, Some(host.intra_op_threads));
        (host.intra_op_threads, host.threads_from)
    };
    let all = available.to_string();
    assert_eq!(
        host_of(&[
            ("GPUBENCH_CPU_THREADS", &all),
            ("OMP_NUM_THREADS", "1"),
            ("GPUBENCH_BASELINE_CPU_THREADS", "1")
        ]),
        (available, ThreadSource::Option)
    );
    assert_eq!(
        host_of(&[
            ("OMP_NUM_THREADS", "1"),
            ("GPUBENCH_BASELINE_CPU_THREADS", &all)
        ]),
        (1, ThreadSource::OmpNumThreads)
    );
    assert_eq!(
        host_of(&[("GPUBENCH_BASELINE_CPU_THREADS", &all)]),
        (available, ThreadSource::Baseline)
    );
    assert_eq!(
        host_of(&[]),
        (
            gpubench_record::host::default_cpu_threads(available),
            ThreadSource::HalfCpus
        )
    );
    // A count that is no count is refused, naming the option.
    let out = run(
        &["--bench", "--exact", "sized/8"],
        &[("GPUBENCH_CPU_THREADS", "0")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--cpu-threads"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // So is one beyond the CPUs, at once, where it used to start that many threads
    // and hang each process to its timeout.
    let started = std::time::Instant::now();
    let out = run(
        &["--bench", "--exact", "sized/8"],
        &[("GPUBENCH_CPU_THREADS", "99999")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("GPUBENCH_CPU_THREADS=99999")
            && err.contains(&format!("set it to at most {available}")),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}

#[test]
fn a_later_process_is_numbered_and_leaves_out_the_first_processes_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let record_of = |process: &str| {
        let out = run(
            &["--bench", "--exact", "sized/64"],
            &[
                ("GPUBENCH_RECORD_DIR", dir.path().to_str().unwrap()),
                ("GPUBENCH_QUICK", "1"),
                ("GPUBENCH_MEASUREMENT_TIME", "0.2"),
                ("GPUBENCH_ROUND", process),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        RawRecord::read(
            &dir.path()
                .join(format!("{}.json", file_stem_for_id("sized/64"))),
        )
        .unwrap()
    };
    let first = record_of("1");
    assert!(!first.first_measurement().unwrap().naive.is_empty());
    let later = record_of("3");
    assert_eq!(later.processes[0].process, 3);
    let m = later.first_measurement().unwrap();
    assert!(m.naive.is_empty(), "{:?}", m.naive);
    assert!(!m.samples.is_empty() && !m.cold.is_empty());
}

#[test]
fn bad_options_are_usage_errors_that_name_the_flag() {
    let out = run(&["--bench"], &[("GPUBENCH_DEVICE", "tpu:0")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tpu:0") && err.contains("--device"), "{err}");
    let out = run(&["--bench", "--measurement-time", "-1"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--measurement-time"));
    // The rules cargo gpubench checks before it starts a process, in the same words.
    for (args, said) in [
        (
            &["--bench", "--min-samples", "50", "--max-samples", "10"][..],
            "error: --max-samples (10) is below --min-samples (50): raise --max-samples or lower --min-samples",
        ),
        (
            &["--bench", "--min-samples", "1"],
            "error: --min-samples (GPUBENCH_MIN_SAMPLES) must be at least 2",
        ),
    ] {
        let out = run(args, &[]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "{args:?}: {err}");
    }
}

#[test]
fn libtest_flags_cargo_passes_are_accepted() {
    let out = run(
        &[
            "--nocapture",
            "--test-threads",
            "1",
            "-q",
            "--exact",
            "adds",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains("test adds ... ok"));
}

#[test]
#[cfg(unix)]
fn sigterm_takes_down_a_harness_that_leads_its_process_group() {
    use std::os::unix::process::CommandExt;
    use std::time::{Duration, Instant};
    // As cargo gpubench starts it: a process group of its own. A minute of samples
    // that never satisfy the minimum keeps it busy until the signal.
    let mut child = Command::new(fixture())
        .args(["--bench", "--exact", "adds"])
        .env("GPUBENCH_DEVICE", "cpu")
        .env("GPUBENCH_MEASUREMENT_TIME", "60")
        .env("GPUBENCH_MIN_SAMPLES", "100000")
        .env("GPUBENCH_MAX_SAMPLES", "100000")
        .env_remove("GPUBENCH_RECORD_DIR")
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Instant::now();
    // SAFETY: a signal to the child we spawned and have not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = child.wait().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(5),
        "{:?}",
        sent.elapsed()
    );
    use std::os::unix::process::ExitStatusExt;
    // The handler kills the whole group, the harness with it.
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
}

#[test]
fn check_device_answers_once_whether_the_device_is_there() {
    let out = run(&["--check-device", "--device", "cpu"], &[]);
    assert!(out.status.success());
    assert!(stdout(&out).starts_with("cpu "), "{}", stdout(&out));
    // The test machines have no GPU with 8 devices.
    let out = run(&["--check-device", "--device", "cuda:7"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cuda:7") || err.contains("CUDA"), "{err}");
}

#[test]
fn memory_history_on_the_cpu_measures_without_it_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &["--bench", "--exact", "adds", "--memory-history"],
        &[
            ("GPUBENCH_RECORD_DIR", dir.path().to_str().unwrap()),
            ("GPUBENCH_QUICK", "1"),
            ("GPUBENCH_MEASUREMENT_TIME", "0.2"),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("note: no allocation history (--memory-history / GPUBENCH_MEMORY_HISTORY)")
            && stderr.contains("run without it"),
        "{stderr}"
    );
    let record = RawRecord::read(
        &dir.path()
            .join(format!("{}.json", file_stem_for_id("adds"))),
    )
    .unwrap();
    assert!(record.passed(), "{:?}", record.failure());
}

#[test]
fn an_option_of_cargo_gpubench_given_to_cargo_bench_names_the_command_that_takes_it() {
    let out = run(&["--bench", "--save-baseline", "main"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("run `cargo gpubench --save-baseline main`"),
        "{stderr}"
    );
}
