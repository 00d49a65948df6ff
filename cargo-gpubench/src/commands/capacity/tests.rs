//! The capacity command's listing, results files, report and JSON document.

use std::path::{Path, PathBuf};

use gpubench_analysis::capacity::{self, CapacityProbe, CapacityResult, SearchEnd, SearchOptions};

use super::baseline::{capacity_baselines_dir, read_result, write_json};
use super::report::{chart_svg, html_page, json_document, markdown};
use super::search::parse_list;

fn result() -> CapacityResult {
    let probes = vec![
        CapacityProbe {
            size: 64,
            fits: true,
            peak_allocated_bytes: Some(100 << 20),
            peak_reserved_bytes: Some(102 << 20),
            seconds: 1.0,
            failure: None,
        },
        CapacityProbe {
            size: 128,
            fits: true,
            peak_allocated_bytes: Some(164 << 20),
            peak_reserved_bytes: Some(166 << 20),
            seconds: 1.0,
            failure: None,
        },
        CapacityProbe {
            size: 256,
            fits: false,
            peak_allocated_bytes: None,
            peak_reserved_bytes: None,
            seconds: 1.0,
            failure: None,
        },
    ];
    let o = SearchOptions {
        start: 64,
        max_probes: 10,
        resolution: 0.01,
        limit_bytes: Some(200 << 20),
        repeats: 1,
    };
    CapacityResult::new(
        "mlp",
        "batch",
        "cuda:0 H200",
        &o,
        Some(0.05),
        probes,
        SearchEnd::OutOfProbes,
    )
}

/// [`result`]'s search with a crashed probe at 192 and batch 128 flaky, stopped by
/// Ctrl-C.
fn faulty_result() -> CapacityResult {
    let mut probes = result().probes;
    probes.push(CapacityProbe::failed(
        192,
        0.5,
        Some("crashed: SIGABRT".into()),
    ));
    probes.push(probes[1].clone());
    probes.push(CapacityProbe::failed(128, 0.5, None));
    // Once the limit is flaky, a size fits only on three probes.
    probes.extend([probes[0].clone(), probes[0].clone()]);
    let o = SearchOptions {
        start: 64,
        max_probes: 10,
        resolution: 0.01,
        limit_bytes: Some(200 << 20),
        repeats: 3,
    };
    CapacityResult::new(
        "mlp",
        "batch",
        "cuda:0 H200",
        &o,
        None,
        probes,
        SearchEnd::Interrupted,
    )
}

#[test]
fn the_listing_parses_and_skips_other_lines() {
    let l = parse_list("mlp batch 256\nnoise\nlm tokens x\n", Path::new("/x"));
    assert_eq!(l.len(), 1);
    assert_eq!(
        (l[0].name.as_str(), l[0].unit.as_str(), l[0].start),
        ("mlp", "batch", 256)
    );
}

#[test]
fn chart_page_and_markdown_show_the_probes_fit_and_limit() {
    let r = result();
    let svg = chart_svg(&r);
    assert_eq!(svg.matches("<circle").count(), 2);
    assert!(svg.contains("out of memory") && svg.contains("limit 200.00 MiB"));
    let md = markdown(std::slice::from_ref(&r), &[], &["x: missing".into()]);
    assert!(
        md.contains("| `mlp` | batch 128 | 256 | 1.00 MiB |"),
        "{md}"
    );
    assert!(md.contains("missing: x"));
    let page = html_page(&[r], &[svg], &[], &[]);
    assert!(page.contains("largest batch that fits: 128"));
    // What the table has no column for is said under it.
    let faults = faulty_result();
    let md = markdown(std::slice::from_ref(&faults), &[], &[]);
    assert!(
        md.contains(
            "`mlp`:\n* the search was interrupted\n\
             * the probe at batch 192 failed, counted as not fitting: crashed: SIGABRT\n"
        ),
        "{md}"
    );
    let svg = chart_svg(&faults);
    assert!(svg.contains("batch 192: crashed: SIGABRT"), "{svg}");
    let page = html_page(&[faults], &[svg], &[], &[]);
    assert!(
        page.contains("interrupted before the search ended; so far largest batch that fits: 64 (fitted on all 3 probes); batch 128 flaky: fitted on 2 of 3 probes, ran out of memory on 1 of 3 probes"),
        "{page}"
    );
}

/// A saved result and the `--format json` document, as the command writes them,
/// against `docs/schema/capacity.schema.json`.
#[test]
fn saved_results_and_the_json_document_match_the_schema() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema/capacity.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let schema = jsonschema::validator_for(&schema).expect("a schema");
    let check = |doc: &serde_json::Value| {
        let errors: Vec<String> = schema
            .iter_errors(doc)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{doc}:\n{}", errors.join("\n"));
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mlp.json");
    let r = result();
    assert!(r.fit.is_some() && r.first_failing.is_some());
    write_json(&file, &r).unwrap();
    check(&serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap());
    let smaller = CapacityResult {
        max_size: 64,
        ..r.clone()
    };
    let finding = capacity::compare(&r, &smaller);
    let doc = json_document(
        std::slice::from_ref(&r),
        &[finding],
        &["x: the capacity baseline `main` has no x.json".into()],
        &[("y".into(), "failed to build".into())],
    );
    check(&doc);
    let faults = faulty_result();
    assert_eq!(
        (
            faults.flaky_sizes.as_slice(),
            faults.first_failing,
            faults.max_size
        ),
        (&[128][..], Some(128), 64)
    );
    write_json(&file, &faults).unwrap();
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    check(&saved);
    assert_eq!(saved["probes"][3]["failure"], "crashed: SIGABRT");
    assert_eq!(saved["end"], "interrupted");
    // The schema holds: a result of another version, or a probe without its size,
    // does not pass.
    let mut bad = serde_json::to_value(&r).unwrap();
    bad["version"] = 2.into();
    assert!(!schema.is_valid(&bad));
    let mut bad = serde_json::to_value(&r).unwrap();
    bad["probes"][0].as_object_mut().unwrap().remove("size");
    assert!(!schema.is_valid(&bad));
    let mut bad = saved.clone();
    bad["flaky_sizes"][0] = "128".into();
    assert!(!schema.is_valid(&bad));
    let mut bad = saved;
    bad["end"] = "stopped".into();
    assert!(!schema.is_valid(&bad));
}

#[test]
fn saved_results_round_trip_and_newer_formats_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mlp.json");
    assert!(read_result(&path).unwrap().is_none());
    let r = result();
    write_json(&path, &r).unwrap();
    assert_eq!(read_result(&path).unwrap().unwrap(), r);
    let newer = CapacityResult { version: 99, ..r };
    write_json(&path, &newer).unwrap();
    assert!(read_result(&path)
        .unwrap_err()
        .to_string()
        .contains("upgrade"));
    assert_eq!(
        capacity_baselines_dir(None, Path::new("/w")),
        PathBuf::from("/w/gpubench/capacity")
    );
}
