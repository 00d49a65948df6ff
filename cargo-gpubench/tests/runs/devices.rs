//! `--devices` against a stand-in bench executable that sees three fake GPUs and
//! logs when each of its processes starts and ends on which device: the run never
//! puts two processes on one device at once, does run devices side by side, keeps
//! each benchmark on one device, and refuses devices it cannot use.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::support::{
    latest_run, manifest, prepare_record, run, run_stand_in, stand_in, synthetic_record,
};

/// Six benchmarks of 0.3 s each; `--list-devices` shows three GPUs of one model,
/// `--check-device` knows a fourth of another model.
const STAND_IN: &str = r#"#!/bin/sh
here=$(dirname "$0")
trap 'kill -KILL 0' TERM
[ -n "$GPUBENCH_HANDSHAKE" ] && echo "gpubench-harness protocol 1"
case " $* " in
*" --list "*)
    case " $* " in
    *" --ignored "*) ;;
    *) for id in a b c d e f; do echo "$id: benchmark"; done ;;
    esac
    exit 0 ;;
esac
if [ "$1" = "--list-devices" ]; then
    for i in 0 1 2; do echo "cuda:$i Fake GPU"; done
    exit 0
fi
if [ "$1" = "--check-device" ]; then
    echo "check $3" >> "$here/calls.log"
    case "$3" in
    cuda:[012]) echo "$3 Fake GPU"; exit 0 ;;
    cuda:3) echo "$3 Other GPU"; exit 0 ;;
    esac
    echo "error: CUDA device ${3#cuda:} is not available" >&2
    exit 2
fi
id=$3
dev=default
prev=
for a in "$@"; do
    [ "$prev" = "--device" ] && dev=$a
    prev=$a
done
echo "start $dev $id $(date +%s%N)" >> "$here/times.log"
sleep 0.3
echo "end $dev $id $(date +%s%N)" >> "$here/times.log"
cp "$here/records/$id/"*.json "$GPUBENCH_RECORD_DIR/"
exit 0
"#;

const IDS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

struct StandIn {
    dir: tempfile::TempDir,
}

impl StandIn {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = stand_in(dir.path(), STAND_IN);
        for (i, id) in IDS.iter().enumerate() {
            prepare_record(&bin, &synthetic_record(id, "cuda", 1.0, i as u64), false);
        }
        StandIn { dir }
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn run(&self, extra: &[&str]) -> crate::support::Ran {
        run(run_stand_in(self.dir.path())
            .args(["--quick", "--processes", "2", "--no-report"])
            .args(extra))
    }

    /// Each process: (device, benchmark, start ns, end ns).
    fn processes(&self) -> Vec<(String, String, u128, u128)> {
        processes(&self.bin())
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.bin().join("calls.log")).unwrap_or_default()
    }
}

fn processes(bin: &Path) -> Vec<(String, String, u128, u128)> {
    let log = std::fs::read_to_string(bin.join("times.log")).unwrap_or_default();
    let mut starts = BTreeMap::new();
    let mut spans = Vec::new();
    for line in log.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let (what, dev, id, t) = (f[0], f[1], f[2], f[3].parse::<u128>().unwrap());
        let key = (dev.to_string(), id.to_string());
        if what == "start" {
            assert!(
                starts.insert(key, t).is_none(),
                "{id} started twice on {dev} at once"
            );
        } else {
            let start = starts.remove(&key).expect("ends after its start");
            spans.push((key.0, key.1, start, t));
        }
    }
    assert!(starts.is_empty(), "processes that never ended: {starts:?}");
    spans
}

#[test]
fn devices_run_side_by_side_never_two_processes_on_one() {
    let s = StandIn::new();
    s.run(&["--devices", "cuda:0,cuda:1"]).expect_code(0);
    let spans = s.processes();
    assert_eq!(spans.len(), IDS.len() * 2, "two processes per benchmark");
    // Never two processes on one device at once.
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            let overlap = a.2 < b.3 && b.2 < a.3;
            assert!(
                !(overlap && a.0 == b.0),
                "two processes on {} at once: {a:?} and {b:?}",
                a.0
            );
        }
    }
    // The devices did run at once.
    let side_by_side = spans
        .iter()
        .any(|a| spans.iter().any(|b| a.0 != b.0 && a.2 < b.3 && b.2 < a.3));
    assert!(side_by_side, "no two devices ever ran at once: {spans:?}");
    // Both devices took work, and each benchmark stayed on one device, the one its
    // manifest entry names.
    let m = manifest(&latest_run(&s.dir.path().join("work/target/gpubench")));
    assert_eq!(m.device, "cuda:0,cuda:1");
    for id in IDS {
        let devices: Vec<&str> = spans
            .iter()
            .filter(|p| p.1 == id)
            .map(|p| p.0.as_str())
            .collect();
        assert!(
            devices.windows(2).all(|w| w[0] == w[1]),
            "{id}: {devices:?}"
        );
        let entry = m.benchmarks.iter().find(|b| b.id == id).unwrap();
        assert_eq!(entry.device.as_deref(), Some(devices[0]), "{id}");
        assert_eq!(entry.processes, 2, "{id}");
    }
    for dev in ["cuda:0", "cuda:1"] {
        assert!(spans.iter().any(|p| p.0 == dev), "{dev} ran nothing");
    }
}

#[test]
fn all_is_every_device_the_harness_sees() {
    let s = StandIn::new();
    let ran = s.run(&["--devices", "all"]).expect_code(0);
    assert!(
        ran.stderr
            .contains("measuring on 3 devices at once: cuda:0 (Fake GPU), cuda:1 (Fake GPU), cuda:2 (Fake GPU)"),
        "{}",
        ran.stderr
    );
    let used: std::collections::BTreeSet<String> = s.processes().into_iter().map(|p| p.0).collect();
    assert_eq!(
        used.into_iter().collect::<Vec<_>>(),
        ["cuda:0", "cuda:1", "cuda:2"]
    );
}

#[test]
fn devices_it_cannot_use_stop_the_run_before_anything_runs() {
    let s = StandIn::new();
    // Another model: never pooled in one run.
    let ran = s.run(&["--devices", "cuda:0,cuda:3"]).expect_code(2);
    assert!(
        ran.stderr
            .contains("the devices are of different models (cuda:0 Fake GPU, cuda:3 Other GPU)"),
        "{}",
        ran.stderr
    );
    // Not there.
    let ran = s.run(&["--devices", "cuda:0,cuda:7"]).expect_code(2);
    assert!(
        ran.stderr
            .contains("cuda:7 (of --devices cuda:0,cuda:7) is not available here: CUDA device 7 is not available"),
        "{}",
        ran.stderr
    );
    // Named twice, or with --device.
    let ran = s.run(&["--devices", "cuda:1,cuda:1"]).expect_code(2);
    assert!(
        ran.stderr.contains("`cuda:1` is listed twice"),
        "{}",
        ran.stderr
    );
    s.run(&["--devices", "all", "--device", "cuda:0"])
        .expect_code(2);
    assert!(s.processes().is_empty(), "nothing ran");
    assert_eq!(
        s.calls(),
        "check cuda:0\ncheck cuda:3\ncheck cuda:0\ncheck cuda:7\n"
    );
}
