//! `cargo gpubench capacity --exe` against a stand-in bench executable whose
//! capacity benchmarks run out of memory by a rule each test sets: above a size, on
//! every other probe of a flaky range (a file counter, so every run is
//! deterministic), or they crash, hang, or wait for the test at one size. Pins the
//! search under faults: a flaky limit gives one answer, nothing fitting fails, a
//! crashed or hung probe keeps the sizes that fitted, a second search is refused,
//! and Ctrl-C saves what finished.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gpubench_analysis::capacity::{CapacityResult, SearchEnd};
use gpubench_record::failure::FailureKind;
use gpubench_record::id::file_stem_for_id;
use gpubench_record::testing::{memory, RecordBuilder};

use crate::support::{assert_valid, cargo_gpubench, exe_arg, run, stand_in, Ran, STAND_IN_EXE};

/// The stand-in: `--list-capacity` prints `bin/capacity`; a probe of NAME at SIZE
/// reads `bin/NAME.rule` (`fit`, `flaky`, `crash`, `hang`, `wait`, `vanish`) and writes the
/// record a harness would (from the templates, with the size and its memory filled
/// in) under the file name of `bin/NAME.stems`' line SIZE.
const CAPACITY_HARNESS: &str = r#"#!/bin/sh
here=$(dirname "$0")
# As the real harness does when it leads its process group.
trap 'kill -KILL 0' TERM
case " $* " in
*" --list-capacity "*) cat "$here/capacity"; exit 0 ;;
*" --list "*) exit 0 ;;
esac
[ "$1 $3 $4" = "--exact --include-ignored --capacity-probe" ] || { echo "unexpected arguments: $*" >&2; exit 64; }
name=$2 size=$5
fit=0 flaky=0 crash=0 hang=0 wait=0 vanish=0
. "$here/$name.rule"
echo "$size" >> "$here/$name.probes"
# The executable is deleted under the search: the next probe cannot start.
[ "$size" = "$vanish" ] && rm "$0"
[ "$size" = "$crash" ] && { echo "fake: segfault in the allocator" >&2; kill -ABRT $$; }
if [ "$size" = "$hang" ]; then sleep 60 & wait; fi
# Only the first probe at that size waits.
if [ "$size" = "$wait" ] && mkdir "$here/$name.waited" 2>/dev/null; then
    echo $$ > "$here/$name.waiting"
    while [ ! -f "$here/go" ]; do sleep 0.05; done
fi
fits=no
if [ "$size" -le "$fit" ]; then
    fits=yes
elif [ "$size" -le "$flaky" ]; then
    n=$(cat "$here/$name.count" 2>/dev/null || echo 0)
    n=$((n + 1))
    echo "$n" > "$here/$name.count"
    [ $((n % 2)) = 0 ] && fits=yes
fi
out="$GPUBENCH_RECORD_DIR/$(sed -n "${size}p" "$here/$name.stems").json"
if [ $fits = yes ]; then
    sed -e "s/987654321/$size/g" -e "s/111111111111/$((size * 1048576 + 67108864))/" \
        -e "s/222222222222/$((size * 1048576 + 69206016))/" "$here/$name.fits.json" > "$out"
    exit 0
fi
sed -e "s/987654321/$size/g" "$here/$name.oom.json" > "$out"
echo "CUDA out of memory" >&2
exit 101
"#;

/// The largest size a test's search may probe.
const MAX_SIZE: u64 = 1024;

/// A stand-in with capacity benchmarks `(name, rule)`, each from batch 16; the rule is
/// shell: `fit=100 flaky=120 crash=128 hang=128 wait=32` (sizes up to `fit` fit, up
/// to `flaky` fit on every other probe; the first probe at `wait` waits for `bin/go`).
struct Stand {
    dir: tempfile::TempDir,
}

impl Stand {
    fn new(benches: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = stand_in(dir.path(), CAPACITY_HARNESS);
        let listing: String = benches
            .iter()
            .map(|(name, _)| format!("{name} batch 16\n"))
            .collect();
        std::fs::write(bin.join("capacity"), listing).unwrap();
        for (name, rule) in benches {
            std::fs::write(bin.join(format!("{name}.rule")), rule).unwrap();
            let stems: String = (1..=MAX_SIZE)
                .map(|size| file_stem_for_id(&format!("{name}/{size}")) + "\n")
                .collect();
            std::fs::write(bin.join(format!("{name}.stems")), stems).unwrap();
            let id = format!("{name}/987654321");
            let fits = RecordBuilder::passed(&id)
                .cuda("NVIDIA H200")
                .memory(memory(111_111_111_111, 222_222_222_222, 0, 0))
                .build();
            let oom = RecordBuilder::passed(&id)
                .cuda("NVIDIA H200")
                .failed(
                    FailureKind::OutOfMemory,
                    "CUDA out of memory. Tried to allocate 2.00 GiB",
                )
                .build();
            std::fs::write(bin.join(format!("{name}.fits.json")), fits.to_json_pretty()).unwrap();
            std::fs::write(bin.join(format!("{name}.oom.json")), oom.to_json_pretty()).unwrap();
        }
        Stand { dir }
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// `cargo gpubench capacity --exe <stand-in>` in `work/`; arguments follow.
    fn capacity(&self) -> Command {
        let mut cmd = cargo_gpubench();
        cmd.current_dir(self.dir.path().join("work"))
            .env("LIBTORCH", self.dir.path().join("libtorch"))
            .arg("capacity")
            .arg(exe_arg(&self.bin().join(STAND_IN_EXE)));
        cmd
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("work/target/gpubench/capacity")
    }

    /// The saved result of `name`, checked against the schema.
    fn result(&self, name: &str) -> CapacityResult {
        let path = self.out().join(format!("{}.json", file_stem_for_id(name)));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("no result {}: {e}", path.display()));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_valid("capacity.schema.json", &value);
        serde_json::from_value(value).unwrap()
    }

    /// The sizes `name` was probed at, in order, over every search so far.
    fn probed(&self, name: &str) -> Vec<u64> {
        std::fs::read_to_string(self.bin().join(format!("{name}.probes")))
            .unwrap_or_default()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect()
    }
}

/// Waits up to `limit` for `cond`.
fn wait_for(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

fn both(ran: &Ran) -> String {
    format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        ran.stdout, ran.stderr
    )
}

#[test]
fn a_flaky_limit_gives_the_same_answer_on_every_search() {
    // Up to batch 100 always fits, 101 to 120 on every other probe, above never.
    let stand = Stand::new(&[("train", "fit=100 flaky=120")]);
    let mut flaky = Vec::new();
    for phase in 0..4 {
        // Each search meets the flaky range at another phase of its pattern.
        std::fs::write(stand.bin().join("train.count"), phase.to_string()).unwrap();
        let ran = run(stand.capacity().args(["--max-probes", "40"]));
        let r = stand.result("train");
        assert_eq!(ran.code, Some(0), "{}", both(&ran));
        assert_eq!(
            (r.max_size, r.first_failing, r.end),
            (100, Some(101), SearchEnd::Converged),
            "phase {phase}: {:?}\n{}",
            r.probes,
            both(&ran)
        );
        assert!(r.max_size_is_reliable() && r.repeats == 3);
        assert_eq!(
            r.probes.iter().filter(|p| p.size == 100 && p.fits).count(),
            3
        );
        assert!(
            r.flaky_sizes.iter().all(|s| (101..=120).contains(s)),
            "{:?}",
            r.flaky_sizes
        );
        assert!(
            ran.stdout
                .contains("train: largest batch that fits: 100 (fitted on all 3 probes)"),
            "{}",
            both(&ran)
        );
        flaky.extend(r.flaky_sizes);
    }
    assert!(!flaky.is_empty(), "no search met a flaky size");
    // Each one the report names is a size that fitted on some probe and failed on another.
    let ran = run(stand
        .capacity()
        .args(["--max-probes", "40", "--format", "json"]));
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_valid("capacity.schema.json", &doc);
}

#[test]
fn nothing_fitting_fails_the_search_and_is_not_saved_as_a_baseline() {
    let stand = Stand::new(&[("huge", "fit=0")]);
    let ran = run(stand.capacity().args(["--save-baseline", "main"]));
    assert_eq!(ran.code, Some(1), "{}", both(&ran));
    assert!(
        ran.stderr.contains(
            "capacity search of huge failed: no batch fits, not even 1: the benchmark needs more memory than the device gives it"
        ),
        "{}",
        both(&ran)
    );
    assert!(
        ran.stdout.contains(
            "huge: no batch fits, not even 1 (batch 1 ran out of memory on all 3 probes)"
        ),
        "{}",
        both(&ran)
    );
    let r = stand.result("huge");
    assert_eq!((r.end, r.max_size), (SearchEnd::NothingFits, 0));
    assert!(
        ran.stderr
            .contains("huge not saved in the capacity baseline `main`: nothing fits"),
        "{}",
        both(&ran)
    );
    assert!(
        ran.stderr.contains(
            "capacity baseline `main` not saved: no search finished with a size that fits"
        ),
        "{}",
        both(&ran)
    );
    assert!(!stand
        .dir
        .path()
        .join("work/gpubench/capacity/main")
        .exists());
    // Nothing of the probes is left behind.
    assert!(!stand.out().join("probes").exists());
}

#[test]
fn a_crashed_and_a_hung_probe_fail_their_size_and_keep_the_sizes_that_fitted() {
    // Batch 128 (the doubling's fourth probe) crashes in one, hangs in the other;
    // above 100 the rest run out of memory.
    let stand = Stand::new(&[
        ("crashes", "fit=100 crash=128"),
        ("hangs", "fit=100 hang=128"),
    ]);
    let ran = run(stand
        .capacity()
        .args(["--timeout", "2", "--save-baseline", "main"]));
    assert_eq!(ran.code, Some(1), "{}", both(&ran));
    for (name, why) in [
        (
            "crashes",
            "killed by signal 6 (SIGABRT) without writing a record",
        ),
        ("hangs", "timed out after 2 s and was killed"),
    ] {
        let r = stand.result(name);
        assert_eq!(
            (r.max_size, r.first_failing, r.end),
            (100, Some(101), SearchEnd::Converged),
            "{name}: {:?}",
            r.probes
        );
        let failed: Vec<_> = r.probes.iter().filter(|p| p.failure.is_some()).collect();
        assert_eq!(failed.len(), 1, "{name}: {:?}", r.probes);
        assert_eq!(failed[0].size, 128);
        let failure = failed[0].failure.as_deref().unwrap();
        assert!(failure.starts_with(why), "{name}: {failure}");
        assert!(
            ran.stdout.contains(&format!(
                "the probe at batch 128 failed, counted as not fitting: {why}"
            )),
            "{}",
            both(&ran)
        );
        // Not probed again: a second hang would cost another timeout.
        assert_eq!(stand.probed(name).iter().filter(|&&s| s == 128).count(), 1);
        // The fitted sizes are in the baseline too.
        let saved = stand.dir.path().join(format!(
            "work/gpubench/capacity/main/{}.json",
            file_stem_for_id(name)
        ));
        assert!(saved.is_file(), "{} was not saved", saved.display());
    }
    assert!(ran.stderr.contains("(2 of 2 searches)"), "{}", both(&ran));
    // What the crashed probe said is kept with its failure.
    let crashed = stand.result("crashes");
    let failure = crashed
        .probes
        .iter()
        .find_map(|p| p.failure.as_deref())
        .unwrap();
    assert!(
        failure.ends_with("stderr ends with:\nfake: segfault in the allocator"),
        "{failure}"
    );
}

#[test]
fn a_probe_that_cannot_start_stops_the_search_and_keeps_the_probes_before_it() {
    let stand = Stand::new(&[("vanishes", "fit=100 vanish=64")]);
    let ran = run(stand
        .capacity()
        .args(["--save-baseline", "main", "--format", "json"]));
    assert_eq!(ran.code, Some(1), "{}", both(&ran));
    assert!(
        ran.stderr
            .contains("capacity search of vanishes failed: failed to start the probe at 128: ")
            && ran.stderr.contains("(the 3 probes before it are saved)"),
        "{}",
        both(&ran)
    );
    let r = stand.result("vanishes");
    assert_eq!(r.end, SearchEnd::Failed);
    let sizes: Vec<(u64, bool)> = r.probes.iter().map(|p| (p.size, p.fits)).collect();
    assert_eq!(sizes, [(16, true), (32, true), (64, true)]);
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_valid("capacity.schema.json", &doc);
    assert_eq!(doc["failed"][0]["name"], "vanishes");
    assert_eq!(doc["results"][0]["end"], "failed");
    // A search cut short is no baseline.
    assert!(!stand
        .dir
        .path()
        .join("work/gpubench/capacity/main/vanishes.json")
        .exists());
}

#[test]
fn a_second_search_on_the_same_output_directory_is_refused_and_removes_nothing() {
    let stand = Stand::new(&[("train", "fit=100 wait=32")]);
    let first = stand
        .capacity()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = stand.bin().join("train.waiting");
    assert!(
        wait_for(Duration::from_secs(30), || waiting.exists()),
        "the first search did not reach its probe at 32"
    );
    let ran = run(&mut stand.capacity());
    let lock = stand.out().join("lock");
    assert_eq!(ran.code, Some(5), "{}", both(&ran));
    assert!(
        ran.stderr.contains(&format!(
            "failed to start the capacity search: another cargo gpubench run (pid {}) is writing to {}: it holds the lock {}; wait for it to finish (or stop it) and try again",
            first.id(),
            stand.out().display(),
            lock.display()
        )),
        "{}",
        both(&ran)
    );
    // The refused search probed nothing: the first one's probe at 32 is still waiting
    // and its record will be read where it writes it.
    assert_eq!(stand.probed("train"), [16, 32]);
    std::fs::write(stand.bin().join("go"), "").unwrap();
    let out = first.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r = stand.result("train");
    assert_eq!(
        (r.max_size, r.end),
        (100, SearchEnd::Converged),
        "{:?}",
        r.probes
    );
    assert!(
        r.probes.iter().all(|p| p.failure.is_none()),
        "{:?}",
        r.probes
    );
    // The lock is released with the search: the next one runs.
    std::fs::write(stand.bin().join("train.rule"), "fit=100").unwrap();
    run(&mut stand.capacity()).expect_code(0);
}

#[test]
#[cfg(target_os = "linux")]
fn ctrl_c_saves_the_searches_that_finished_and_the_probes_of_the_one_it_stopped() {
    let stand = Stand::new(&[("first", "fit=100"), ("second", "fit=100 wait=64")]);
    let child = stand
        .capacity()
        .args(["--save-baseline", "main"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = stand.bin().join("second.waiting");
    assert!(
        wait_for(Duration::from_secs(60), || waiting.exists()),
        "the search of `second` did not reach its probe at 64"
    );
    // SAFETY: sends SIGINT to the child this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let ran = Ran::of(out);
    assert_eq!(ran.code, Some(130), "{}", both(&ran));
    let first = stand.result("first");
    assert_eq!((first.max_size, first.end), (100, SearchEnd::Converged));
    let second = stand.result("second");
    assert_eq!(second.end, SearchEnd::Interrupted);
    let sizes: Vec<(u64, bool)> = second.probes.iter().map(|p| (p.size, p.fits)).collect();
    assert_eq!(sizes, [(16, true), (32, true)]);
    assert!(
        ran.stdout.contains(
            "second: interrupted before the search ended; so far largest batch that fitted: 32"
        ),
        "{}",
        both(&ran)
    );
    assert!(
        ran.stderr
            .contains("capacity baseline `main` not saved: the search was interrupted"),
        "{}",
        both(&ran)
    );
    assert!(!stand
        .dir
        .path()
        .join("work/gpubench/capacity/main")
        .exists());
    let page = std::fs::read_to_string(stand.out().join("index.html")).unwrap();
    assert!(page.contains("first") && page.contains("second"), "{page}");
    // The probe killed by Ctrl-C is gone with its process group.
    let pid: i32 = std::fs::read_to_string(&waiting)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || !Path::new(&format!(
            "/proc/{pid}"
        ))
        .exists()),
        "the stopped probe (pid {pid}) outlived the search"
    );
}
