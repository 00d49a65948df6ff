//! The parts as a Kubernetes Indexed Job, as text for `kubectl apply -f`: one pod
//! per part (`completionMode: Indexed`, the part from `JOB_COMPLETION_INDEX`), each
//! with one GPU (`nvidia.com/gpu: 1`) and the shared directory mounted from a
//! PersistentVolumeClaim at the same path; the task's shell is the Slurm task's
//! ([`super::script::task_body`]), so `slurm collect DIR` merges and gates it alike.

use std::fmt::Write as _;

use super::layout::Job;

/// What the Job needs beyond the [`Job`].
#[derive(Debug, Clone)]
pub struct Pods<'a> {
    /// The Job's name (`metadata.name`), also the task files' job id.
    pub name: &'a str,
    /// The container image (with libtorch).
    pub image: &'a str,
    /// The PersistentVolumeClaim holding the shared directory.
    pub volume_claim: &'a str,
}

/// The Indexed Job of every part of `job`.
pub fn indexed_job(job: &Job, pods: &Pods) -> String {
    let body = super::script::task_body(job, "\"$((JOB_COMPLETION_INDEX + 1))\"", pods.name);
    let mut script = String::new();
    for line in body.lines() {
        if line.is_empty() {
            script.push('\n');
        } else {
            let _ = writeln!(script, "              {line}");
        }
    }
    let parallelism = job.sbatch.max_running.unwrap_or(job.parts).min(job.parts);
    let dir = job.dir.display();
    format!(
        r#"# cargo gpubench slurm run --kubernetes: part K of {parts} of the suite in the pod of
# index K-1, on one GPU. After the Job ends: cargo-gpubench slurm collect {dir}
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  completionMode: Indexed
  completions: {parts}
  parallelism: {parallelism}
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: part
          image: "{image}"
          command: ["/bin/bash", "-c"]
          args:
            - |
{script}          resources:
            limits:
              nvidia.com/gpu: 1
          volumeMounts:
            - name: shared
              mountPath: "{dir}"
      volumes:
        - name: shared
          persistentVolumeClaim:
            claimName: "{claim}"
"#,
        parts = job.parts,
        name = pods.name,
        image = pods.image,
        claim = pods.volume_claim,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::slurm::layout::{Sbatch, JOB_FORMAT_VERSION};
    use yaml_rust2::{Yaml, YamlLoader};

    fn job() -> Job {
        Job {
            format_version: JOB_FORMAT_VERSION,
            dir: "/shared/suite".into(),
            parts: 16,
            bin: "/shared/suite/bin/cargo-gpubench".into(),
            run_args: vec!["--quick".into()],
            merge_args: vec![],
            ab_libraries: None,
            sbatch: Sbatch {
                max_running: Some(4),
                gres: "gpu:1".into(),
                ..Sbatch::default()
            },
            attempts: vec![],
        }
    }

    /// The fields the batch/v1 Job API requires of an Indexed Job with GPUs: what
    /// `kubectl apply --dry-run=server` would refuse without them.
    #[test]
    fn the_job_has_the_structure_an_indexed_job_needs() {
        let text = indexed_job(
            &job(),
            &Pods {
                name: "gpubench-parts-1",
                image: "ghcr.io/acme/bench:2.11",
                volume_claim: "bench-shared",
            },
        );
        let docs = YamlLoader::load_from_str(&text).expect("the Job is YAML");
        assert_eq!(docs.len(), 1);
        let d = &docs[0];
        assert_eq!(d["apiVersion"].as_str(), Some("batch/v1"));
        assert_eq!(d["kind"].as_str(), Some("Job"));
        assert_eq!(d["metadata"]["name"].as_str(), Some("gpubench-parts-1"));
        let spec = &d["spec"];
        assert_eq!(spec["completionMode"].as_str(), Some("Indexed"));
        assert_eq!(spec["completions"].as_i64(), Some(16));
        assert_eq!(spec["parallelism"].as_i64(), Some(4));
        let pod = &spec["template"]["spec"];
        // A Job's pods may only restart Never or OnFailure; Never keeps each attempt's
        // pod and leaves a failed part for `slurm resubmit`-like handling.
        assert_eq!(pod["restartPolicy"].as_str(), Some("Never"));
        let containers = pod["containers"].as_vec().expect("a list of containers");
        assert_eq!(containers.len(), 1);
        let c = &containers[0];
        assert_eq!(c["name"].as_str(), Some("part"));
        assert_eq!(c["image"].as_str(), Some("ghcr.io/acme/bench:2.11"));
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"].as_i64(), Some(1));
        let command: Vec<&str> = c["command"]
            .as_vec()
            .unwrap()
            .iter()
            .filter_map(Yaml::as_str)
            .collect();
        assert_eq!(command, ["/bin/bash", "-c"]);
        let script = c["args"][0].as_str().expect("the task's script");
        assert!(script.starts_with("set -u\ndir=/shared/suite\n"));
        assert!(script.contains("part=\"$((JOB_COMPLETION_INDEX + 1))\"\n"));
        assert!(script.contains("--partition \"count:$part/16\""));
        assert!(script.contains("trap 'kill -TERM \"$child\" 2>/dev/null' TERM\n"));
        assert_eq!(
            c["volumeMounts"][0]["mountPath"].as_str(),
            Some("/shared/suite")
        );
        assert_eq!(c["volumeMounts"][0]["name"].as_str(), Some("shared"));
        assert_eq!(pod["volumes"][0]["name"].as_str(), Some("shared"));
        assert_eq!(
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"].as_str(),
            Some("bench-shared")
        );
    }
}
