//! The scripts `slurm run` submits, as text, apart from any scheduler: the array
//! job's (one task per part) and the merge job's. The task's body is shared with
//! the Kubernetes Job ([`super::kubernetes`]), which only says differently which part
//! a task is and which job it belongs to.

use std::fmt::Write as _;

use super::layout::{Job, Sbatch};

/// The array job's script over `parts` (1-based part numbers).
pub fn array_script(job: &Job, parts: &[u32]) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let array = match job.sbatch.max_running {
        Some(k) => format!("{}%{k}", array_spec(parts)),
        None => array_spec(parts),
    };
    let _ = writeln!(s, "#SBATCH --job-name=gpubench-parts");
    let _ = writeln!(s, "#SBATCH --array={array}");
    let _ = writeln!(s, "#SBATCH --gres={}", job.sbatch.gres);
    let _ = writeln!(
        s,
        "#SBATCH --output={}/part-%a.job-%A.out",
        job.logs().display()
    );
    shared_lines(&mut s, &job.sbatch);
    for line in &job.sbatch.extra {
        let _ = writeln!(s, "#SBATCH {line}");
    }
    let _ = writeln!(
        s,
        "# cargo gpubench slurm: task K measures part count:K/{} of the suite on the GPU \
         Slurm gives it (CUDA_VISIBLE_DEVICES).",
        job.parts
    );
    s.push_str(&task_body(
        job,
        "\"$SLURM_ARRAY_TASK_ID\"",
        "\"$SLURM_ARRAY_JOB_ID\"",
    ));
    s
}

/// The merge job's script: it runs after every task of the array ended, however.
pub fn merge_script(job: &Job) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let _ = writeln!(s, "#SBATCH --job-name=gpubench-merge");
    let _ = writeln!(
        s,
        "#SBATCH --output={}/merge.job-%j.out",
        job.logs().display()
    );
    shared_lines(&mut s, &job.sbatch);
    let _ = writeln!(
        s,
        "# cargo gpubench slurm: merges the parts' runs, names each part without a \
         completed run with its Slurm state, compares and gates."
    );
    let _ = writeln!(
        s,
        "exec {} slurm collect {}",
        quote(&job.bin.display().to_string()),
        quote(&job.dir.display().to_string())
    );
    s
}

/// The `#SBATCH` lines both jobs carry.
fn shared_lines(s: &mut String, sbatch: &Sbatch) {
    for (flag, value) in [
        ("partition", &sbatch.partition),
        ("account", &sbatch.account),
        ("time", &sbatch.time),
    ] {
        if let Some(v) = value {
            let _ = writeln!(s, "#SBATCH --{flag}={v}");
        }
    }
}

/// A task's shell: note what it saw, run its part, note how that ended. `part` and
/// `array_job` are shell words giving the part number (1-based) and the job's id.
pub fn task_body(job: &Job, part: &str, array_job: &str) -> String {
    let dir = quote(&job.dir.display().to_string());
    let mut run = vec![quote(&job.bin.display().to_string())];
    // The merge compares and gates: a part's run is one piece of evidence.
    match &job.ab_libraries {
        None => run.extend([
            "run".into(),
            "--archive".into(),
            "\"$dir/benches.tar.gz\"".into(),
            "--no-baseline".into(),
        ]),
        Some(libraries) => {
            let libraries = libraries.display().to_string();
            run.extend([
                "ab".into(),
                "--base-libraries".into(),
                quote(&format!("{libraries}/base")),
                "--head-libraries".into(),
                quote(&format!("{libraries}/head")),
                "--fail-on".into(),
                "never".into(),
            ]);
        }
    }
    run.extend([
        "--partition".into(),
        format!("\"count:$part/{}\"", job.parts),
        "--out-dir".into(),
        "\"$dir/parts/$part\"".into(),
        "--no-report".into(),
    ]);
    run.extend(job.run_args.iter().map(|a| quote(a)));
    format!(
        r#"set -u
dir={dir}
part={part}
array_job={array_job}
task="$dir/tasks/part-$part.job-$array_job"
mkdir -p "$dir/tasks"
{{
    echo "job=${{array_job}}_$part"
    echo "host=$(hostname)"
    echo "cuda_visible_devices=${{CUDA_VISIBLE_DEVICES-unset}}"
    echo "started_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}} > "$task.started"
{run} &
child=$!
# scancel, pre-emption and the time limit send SIGTERM: cargo-gpubench keeps its
# finished records and marks its run interrupted; this shell waits to say so.
trap 'kill -TERM "$child" 2>/dev/null' TERM
wait "$child"
code=$?
if [ "$code" -gt 128 ]; then
    wait "$child"
    code=$?
fi
{{
    echo "exit_code=$code"
    echo "finished_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}} > "$task.finished"
exit "$code"
"#,
        run = run.join(" ")
    )
}

/// `1-4`, `1,3-5`: the array's indexes, runs of consecutive parts as ranges.
pub fn array_spec(parts: &[u32]) -> String {
    let mut sorted = parts.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// `s` as one word of a POSIX shell: as it is when it holds nothing the shell reads,
/// else in single quotes.
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=,@%+-".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::slurm::layout::JOB_FORMAT_VERSION;

    fn job() -> Job {
        Job {
            format_version: JOB_FORMAT_VERSION,
            dir: "/shared/suite".into(),
            parts: 4,
            bin: "/opt/cargo-gpubench".into(),
            run_args: vec!["--quick".into(), "matmul's".into()],
            merge_args: vec![],
            ab_libraries: None,
            sbatch: Sbatch {
                partition: Some("gpu".into()),
                account: Some("perf".into()),
                time: Some("1:00:00".into()),
                max_running: Some(2),
                gres: "gpu:1".into(),
                extra: vec!["--constraint=h200".into()],
            },
            attempts: vec![],
        }
    }

    #[test]
    fn the_array_script_asks_one_gpu_per_task_and_runs_its_part_into_its_own_directory() {
        let s = array_script(&job(), &[1, 2, 3, 4]);
        let directives: Vec<&str> = s.lines().filter(|l| l.starts_with("#SBATCH")).collect();
        assert_eq!(
            directives,
            [
                "#SBATCH --job-name=gpubench-parts",
                "#SBATCH --array=1-4%2",
                "#SBATCH --gres=gpu:1",
                "#SBATCH --output=/shared/suite/logs/part-%a.job-%A.out",
                "#SBATCH --partition=gpu",
                "#SBATCH --account=perf",
                "#SBATCH --time=1:00:00",
                "#SBATCH --constraint=h200",
            ]
        );
        assert!(s.starts_with("#!/bin/bash\n"));
        // Every directive before the first command, or sbatch ignores it.
        let first_command = s.lines().position(|l| l.starts_with("set -u")).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        let last_directive = lines
            .iter()
            .rposition(|l| l.starts_with("#SBATCH"))
            .unwrap();
        assert!(last_directive < first_command);
        assert!(s.contains("dir=/shared/suite\n"));
        assert!(s.contains("part=\"$SLURM_ARRAY_TASK_ID\"\n"));
        assert!(s.contains(
            "/opt/cargo-gpubench run --archive \"$dir/benches.tar.gz\" --no-baseline \
             --partition \"count:$part/4\" --out-dir \"$dir/parts/$part\" --no-report \
             --quick 'matmul'\\''s' &\n"
        ));
        assert!(s.contains("echo \"cuda_visible_devices=${CUDA_VISIBLE_DEVICES-unset}\""));
        assert!(s.contains("echo \"exit_code=$code\""));
    }

    #[test]
    fn an_ab_task_measures_its_part_of_both_revisions_libraries_without_gating() {
        let mut j = job();
        j.ab_libraries = Some("/shared/suite/libraries".into());
        let s = array_script(&j, &[1, 2]);
        assert!(
            s.contains(
                "/opt/cargo-gpubench ab --base-libraries /shared/suite/libraries/base \
             --head-libraries /shared/suite/libraries/head --fail-on never --partition \
             \"count:$part/4\" --out-dir \"$dir/parts/$part\" --no-report --quick \
             'matmul'\\''s' &\n"
            ),
            "{s}"
        );
    }

    #[test]
    fn a_resubmission_asks_only_for_its_parts() {
        let mut j = job();
        j.sbatch.max_running = None;
        let s = array_script(&j, &[4, 1, 3]);
        assert!(s.contains("#SBATCH --array=1,3-4\n"));
        assert_eq!(array_spec(&[2]), "2");
        assert_eq!(array_spec(&[1, 2, 3, 5, 7, 8]), "1-3,5,7-8");
    }

    #[test]
    fn the_merge_script_collects_the_directory_without_a_gpu() {
        let s = merge_script(&job());
        assert!(!s.contains("--gres"));
        assert!(s.contains("#SBATCH --output=/shared/suite/logs/merge.job-%j.out\n"));
        assert!(s.contains("#SBATCH --partition=gpu\n#SBATCH --account=perf\n"));
        assert!(s.ends_with("exec /opt/cargo-gpubench slurm collect /shared/suite\n"));
    }

    #[test]
    fn words_the_shell_would_read_are_quoted() {
        assert_eq!(quote("count:1/4"), "count:1/4");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
        assert_eq!(quote(""), "''");
    }
}
