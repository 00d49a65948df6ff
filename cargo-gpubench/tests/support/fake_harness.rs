//! The stand-in bench executable of the `--exe` tests: a shell script that speaks the
//! harness protocol and behaves per benchmark id, with a fake libtorch beside it.

use std::path::PathBuf;

use gpubench_record::failure::FailureKind;
use gpubench_record::measurement::MeasurementConfig;
use gpubench_record::record::RawRecord;
use gpubench_record::testing::{sample, RecordBuilder};

use super::{prepare_record, run_stand_in, stand_in, STAND_IN_EXE};

/// The stand-in harness. `--list` prints the ids; `--bench --exact <id>` does what the
/// id says. Records to hand back are prepared by the test in `records/<id with / as _>/`.
pub const FAKE_HARNESS: &str = r#"#!/bin/sh
here=$(dirname "$0")
# As the real harness does when it leads its process group: SIGTERM (sent when
# cargo gpubench dies) takes the whole group down.
trap 'kill -KILL 0' TERM
# The handshake of a gpubench harness, when cargo gpubench lists.
[ -n "$GPUBENCH_HANDSHAKE" ] && echo "gpubench-harness protocol 1"
case " $* " in
*" --list "*)
    case " $* " in
    *" --ignored "*) echo "slow_ignored: benchmark" ;;
    *) for id in passes matmul/64 panics aborts sleeps exits_2 no_record slow_ignored; do
           echo "$id: benchmark"
       done ;;
    esac
    exit 0 ;;
esac
if [ "$1" = "--check-device" ]; then
    echo "--check-device $3" >> "$here/calls.log"
    [ "$3" = "cuda:7" ] && { echo "error: CUDA device 7 is not available: this machine has 0 CUDA devices" >&2; exit 2; }
    echo "cpu AMD EPYC"; exit 0
fi
[ "$1 $2" = "--bench --exact" ] || { echo "unexpected arguments: $*" >&2; exit 64; }
id=$3
echo "$id args=[$*] quick_env=${GPUBENCH_QUICK-unset} ignored_env=${GPUBENCH_IGNORED-unset} baseline_threads=${GPUBENCH_BASELINE_CPU_THREADS-unset} process=${GPUBENCH_ROUND-unset}" >> "$here/calls.log"
case ":$LD_LIBRARY_PATH:" in
*":$FAKE_EXPECT_LIB:"*) ;;
*) echo "libtorch is not on LD_LIBRARY_PATH: $LD_LIBRARY_PATH" >&2; exit 127 ;;
esac
copy_record() { cp "$here/records/$(echo "$1" | tr / _)/"*.json "$GPUBENCH_RECORD_DIR/"; }
case "$id" in
passes|matmul/64) copy_record "$id"; echo "measured $id"; exit 0 ;;
panics) echo "panicked at benches/suite.rs:3: boom" >&2; copy_record panics; exit 101 ;;
aborts) echo "fake: about to abort" >&2; kill -ABRT $$ ;;
sleeps) sleep 30 & echo $! > "$here/sleeps.pid"; echo $$ > "$here/harness.pid"; wait; exit 0 ;;
exits_2) echo "error: unexpected argument '--frobnicate'" >&2; exit 2 ;;
no_record) exit 0 ;;
slow_ignored)
    case " $* " in
    *" --ignored "*) copy_record slow_ignored; exit 0 ;;
    *) exit 0 ;;
    esac ;;
esac
echo "unknown benchmark $id" >&2
exit 3
"#;

/// A temporary directory with the stand-in executable and a fake libtorch.
pub struct Fake {
    pub dir: tempfile::TempDir,
}

impl Fake {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = stand_in(dir.path(), FAKE_HARNESS);
        for id in ["passes", "matmul/64", "slow_ignored"] {
            prepare_record(&bin, &passed_record(id), false);
        }
        let panicked = RecordBuilder::from(passed_record("panics"))
            .failed(FailureKind::Panic, "panicked at benches/suite.rs:3: boom")
            .build();
        prepare_record(&bin, &panicked, false);
        Fake { dir }
    }

    pub fn exe(&self) -> PathBuf {
        self.dir.path().join("bin").join(STAND_IN_EXE)
    }

    /// Where runs go by default with `--exe`: `./target/gpubench` of the working dir.
    pub fn out_dir(&self) -> PathBuf {
        self.dir.path().join("work/target/gpubench")
    }

    pub fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("bin/calls.log")).unwrap_or_default()
    }

    /// `cargo-gpubench run --exe <fake>` in `work/`, with the fake libtorch.
    pub fn command(&self) -> std::process::Command {
        let mut cmd = run_stand_in(self.dir.path());
        cmd.env("FAKE_EXPECT_LIB", self.dir.path().join("libtorch/lib"));
        cmd
    }
}

/// A passed record of `id` (one process of ten samples, on an unknown CPU).
pub fn passed_record(id: &str) -> RawRecord {
    RecordBuilder::passed(id)
        .config(MeasurementConfig::quick())
        .sync_cost(50.0)
        .cold("first call", 2.5e6, 2.5e6, None)
        .samples((0..10).map(|i| sample(100, 1.0e6 + f64::from(i) * 1e3, 1.0e6, None)))
        .build()
}
