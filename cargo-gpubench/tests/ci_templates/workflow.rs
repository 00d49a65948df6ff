//! A GitHub Actions workflow file as far as the checks need it: its jobs and steps,
//! the `env` of each scope, and `${{ ... }}` expressions replaced by representative
//! values, so a `run:` script reads as it would on a runner.

use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

/// What an expression of a template stands for on a runner, for those whose value
/// reaches a command: an expression missing here is an error, so a template cannot
/// grow one the checks silently read as empty.
const REPRESENTATIVE: &[(&str, &str)] = &[
    ("matrix.part", "2"),
    (
        "github.event.pull_request.base.sha",
        "5f1d2c3b4a5968778695a4b3c2d1e0f9a8b7c6d5",
    ),
    ("steps.bench.outputs.exit", "4"),
    ("steps.merge.outputs.exit", "4"),
    (
        "steps.report.outputs.artifact-url",
        "https://github.com/owner/repo/actions/runs/1/artifacts/2",
    ),
];

/// A parsed workflow.
#[derive(Debug, Clone)]
pub struct Workflow {
    /// The file's name, for messages.
    pub file: String,
    /// The workflow-level `env`.
    pub env: Vec<(String, String)>,
    /// The jobs, in file order.
    pub jobs: Vec<Job>,
    /// The whole document, for the checks of single keys.
    pub doc: Yaml,
}

/// A job.
#[derive(Debug, Clone)]
pub struct Job {
    /// Its id (the key under `jobs:`).
    pub id: String,
    /// Its `env`.
    pub env: Vec<(String, String)>,
    /// Its steps, in order.
    pub steps: Vec<Step>,
}

/// A step.
#[derive(Debug, Clone, Default)]
pub struct Step {
    /// `name:`.
    pub name: Option<String>,
    /// `id:`.
    pub id: Option<String>,
    /// `uses:`.
    pub uses: Option<String>,
    /// `run:`, as written.
    pub run: Option<String>,
    /// Its `env`, as written.
    pub env: Vec<(String, String)>,
    /// Its `with:` inputs (of a `uses:` step), as written.
    pub with: Vec<(String, String)>,
}

impl Step {
    /// How messages name the step.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .or_else(|| self.uses.clone())
            .or_else(|| self.id.clone())
            .unwrap_or_else(|| "<unnamed step>".into())
    }
}

/// The repository's `.github/workflows/`.
pub fn workflows_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .join(".github/workflows")
}

/// The templates: every workflow file of the repository.
pub fn templates() -> Vec<Workflow> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(workflows_dir())
        .expect("the repository has .github/workflows/")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no workflow files found");
    files
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            parse(&name, &std::fs::read_to_string(p).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        })
        .collect()
}

/// The template of `file` (e.g. `gpubench.yml`).
pub fn template(file: &str) -> Workflow {
    templates()
        .into_iter()
        .find(|w| w.file == file)
        .unwrap_or_else(|| panic!("no workflow {file}"))
}

/// Parses a workflow's text.
pub fn parse(file: &str, text: &str) -> Result<Workflow, String> {
    let mut docs = YamlLoader::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    if docs.len() != 1 {
        return Err(format!("{} YAML documents, not one", docs.len()));
    }
    let doc = docs.remove(0);
    let jobs = doc["jobs"]
        .as_hash()
        .ok_or("no `jobs:` mapping")?
        .iter()
        .map(|(id, job)| {
            let id = scalar(id).ok_or("a job id that is not a string")?;
            let steps = match &job["steps"] {
                Yaml::Array(steps) => steps.iter().map(step).collect(),
                Yaml::BadValue => Ok(Vec::new()),
                _ => Err(format!("job {id}: `steps:` is not a list")),
            }?;
            Ok(Job {
                env: env_of(&job["env"]).map_err(|e| format!("job {id}: {e}"))?,
                id,
                steps,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Workflow {
        file: file.to_string(),
        env: env_of(&doc["env"])?,
        jobs,
        doc,
    })
}

fn step(y: &Yaml) -> Result<Step, String> {
    let text = |key: &str| scalar(&y[key]);
    Ok(Step {
        name: text("name"),
        id: text("id"),
        uses: text("uses"),
        run: text("run"),
        env: env_of(&y["env"])?,
        with: env_of(&y["with"]).map_err(|e| e.replace("`env:`", "`with:`"))?,
    })
}

/// A YAML scalar as the text GitHub would see (`PARTS: 4` is "4").
pub fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn env_of(y: &Yaml) -> Result<Vec<(String, String)>, String> {
    match y {
        Yaml::BadValue => Ok(Vec::new()),
        Yaml::Hash(h) => h
            .iter()
            .map(|(k, v)| match (scalar(k), scalar(v)) {
                (Some(k), Some(v)) => Ok((k, v)),
                _ => Err(format!("`env:` entry {k:?} is not a name and a scalar")),
            })
            .collect(),
        _ => Err("`env:` is not a mapping".into()),
    }
}

/// The environment a step's script sees from the workflow: the workflow's, the
/// job's and the step's `env`, inner scopes winning, expressions expanded.
pub fn step_env(wf: &Workflow, job: &Job, step: &Step) -> Result<Vec<(String, String)>, String> {
    let mut env: Vec<(String, String)> = Vec::new();
    for (k, v) in wf.env.iter().chain(&job.env).chain(&step.env) {
        let v = expand_expressions(v, &env)?;
        env.retain(|(name, _)| name != k);
        env.push((k.clone(), v));
    }
    Ok(env)
}

/// `text` with each `${{ expr }}` replaced: `env.NAME` from `env`, the rest from
/// [`REPRESENTATIVE`].
pub fn expand_expressions(text: &str, env: &[(String, String)]) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 3..];
        let end = after
            .find("}}")
            .ok_or_else(|| format!("an unclosed `${{{{` in {text:?}"))?;
        let expr = after[..end].trim();
        let value = match expr.strip_prefix("env.") {
            Some(name) => env
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone()),
            None => REPRESENTATIVE
                .iter()
                .find(|(e, _)| *e == expr)
                .map(|(_, v)| v.to_string()),
        };
        out.push_str(&value.ok_or_else(|| {
            format!("no representative value for `${{{{ {expr} }}}}`: add one to REPRESENTATIVE")
        })?);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[test]
fn expressions_expand_from_env_and_the_table_and_unknown_ones_are_errors() {
    let env = vec![("PARTS".to_string(), "4".to_string())];
    assert_eq!(
        expand_expressions("part ${{ matrix.part }} of ${{env.PARTS}}", &env).unwrap(),
        "part 2 of 4"
    );
    let err = expand_expressions("${{ github.event.pull_request.title }}", &env).unwrap_err();
    assert!(err.contains("github.event.pull_request.title"), "{err}");
    assert!(expand_expressions("${{ env.NOPE }}", &env).is_err());
    assert!(expand_expressions("${{ matrix.part", &env).is_err());
}

#[test]
fn scopes_nest_with_the_inner_env_winning() {
    let wf = parse(
        "t.yml",
        "env:\n  A: 1\n  B: outer\njobs:\n  j:\n    env:\n      B: job\n    steps:\n      \
         - run: echo\n        env:\n          C: ${{ env.B }}-${{ matrix.part }}\n",
    )
    .unwrap();
    let job = &wf.jobs[0];
    let env = step_env(&wf, job, &job.steps[0]).unwrap();
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("A"), Some("1"));
    assert_eq!(get("B"), Some("job"));
    assert_eq!(get("C"), Some("job-2"));
}
