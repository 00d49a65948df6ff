//! The generated manifests and `lib.rs` from metadata in cargo's format.

use std::path::Path;

use cargo_metadata::Metadata;
use toml::{Table, Value};

use super::*;

/// Metadata of one package `gpu` at `/ws/gpu` with a lib and a bench target
/// (edition 2024) and dependencies of every sort `ab` must carry over.
fn metadata() -> Metadata {
    let dep = |name: &str, kind: Option<&str>, extra: serde_json::Value| {
        let mut d = serde_json::json!({
            "name": name, "source": "registry+https://github.com/rust-lang/crates.io-index",
            "req": "^1", "kind": kind, "rename": null, "optional": false,
            "uses_default_features": true, "features": [], "target": null, "registry": null
        });
        for (k, v) in extra.as_object().unwrap() {
            d[k] = v.clone();
        }
        d
    };
    let deps = serde_json::json!([
        dep(
            "gpubench-core",
            None,
            serde_json::json!({"source": null, "req": "*", "path": "/ws/core"})
        ),
        dep("tch", None, serde_json::json!({"req": "=0.24.0"})),
        dep(
            "tch",
            Some("dev"),
            serde_json::json!({"req": "^0.24", "features": ["extra"]})
        ),
        dep(
            "serde",
            None,
            serde_json::json!({"optional": true, "features": ["rc"]})
        ),
        dep("rayon", None, serde_json::json!({"optional": true})),
        dep(
            "criterion",
            Some("dev"),
            serde_json::json!({"req": "^0.8", "uses_default_features": false})
        ),
        dep(
            "half",
            Some("dev"),
            serde_json::json!({"rename": "f16", "req": "^2", "features": ["std"]})
        ),
        dep(
            "libc",
            None,
            serde_json::json!({"req": "^0.2", "target": "cfg(unix)"})
        ),
        dep(
            "winapi",
            Some("dev"),
            serde_json::json!({"req": "^0.3", "target": "cfg(windows)", "features": ["x"]})
        ),
        dep("cc", Some("build"), serde_json::json!({})),
        dep(
            "mygit",
            None,
            serde_json::json!({
                "source": "git+https://github.com/x/mygit?branch=feature%2Fone", "req": "*"
            })
        ),
        dep(
            "qux",
            None,
            serde_json::json!({
                "source": "sparse+https://example.com/index/",
                "registry": "sparse+https://example.com/index/"
            })
        ),
        dep(
            "helpers",
            Some("dev"),
            serde_json::json!({
                "source": null, "req": "^0.1", "path": "/ws/helpers"
            })
        ),
    ]);
    let json = serde_json::json!({
        "packages": [{
            "name": "gpu", "version": "1.2.3-rc.1", "id": "path+file:///ws/gpu#1.2.3-rc.1",
            "license": null, "license_file": null, "description": null, "source": null,
            "dependencies": deps,
            "targets": [
                {"name": "gpu", "kind": ["lib"], "crate_types": ["lib"],
                 "src_path": "/ws/gpu/src/lib.rs", "edition": "2021",
                 "doctest": true, "test": true, "doc": true},
                {"name": "mat-mul", "kind": ["bench"], "crate_types": ["bin"],
                 "src_path": "/ws/gpu/benches/mat mul.rs", "edition": "2024",
                 "doctest": false, "test": false, "doc": false}
            ],
            "features": {
                "default": ["ser", "fast"],
                "ser": ["dep:serde", "serde/derive"],
                "fast": ["tch?/weak-one", "inner"],
                "inner": [],
                "slow": ["dep:rayon"]
            },
            "manifest_path": "/ws/gpu/Cargo.toml", "metadata": null,
            "publish": null, "authors": [], "categories": [], "keywords": [],
            "readme": null, "repository": null, "homepage": null, "documentation": null,
            "edition": "2021", "links": null, "default_run": null, "rust_version": null
        }],
        "workspace_members": ["path+file:///ws/gpu#1.2.3-rc.1"],
        "workspace_default_members": [],
        "resolve": null, "target_directory": "/ws/target", "version": 1,
        "workspace_root": "/ws", "metadata": null
    });
    serde_json::from_value(json).expect("valid metadata")
}

fn generated() -> Table {
    let m = metadata();
    let p = &m.packages[0];
    member_manifest(p, &p.targets[1], "gpubench-ab-working-tree-gpu-mat-mul")
}

fn at<'a>(table: &'a Table, path: &[&str]) -> &'a Value {
    let mut v = table
        .get(path[0])
        .unwrap_or_else(|| panic!("no {}", path[0]));
    for key in &path[1..] {
        v = v
            .get(key)
            .unwrap_or_else(|| panic!("no {key} in {path:?}: {v}"));
    }
    v
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

#[test]
fn the_library_is_a_cdylib_of_the_bench_targets_edition() {
    let t = generated();
    assert_eq!(
        at(&t, &["package", "name"]).as_str(),
        Some("gpubench-ab-working-tree-gpu-mat-mul")
    );
    assert_eq!(at(&t, &["package", "edition"]).as_str(), Some("2024"));
    assert_eq!(strings(at(&t, &["lib", "crate-type"])), ["cdylib"]);
    assert_eq!(at(&t, &["lib", "path"]).as_str(), Some("lib.rs"));
}

#[test]
fn dependencies_are_the_packages_normal_and_dev_ones_with_their_sources() {
    let t = generated();
    let deps = at(&t, &["dependencies"]).as_table().unwrap();
    let names: Vec<&str> = deps.keys().map(String::as_str).collect();
    // No build-dependency (cc), no optional one the defaults leave off (rayon).
    assert_eq!(
        names,
        [
            "criterion",
            "f16",
            "gpu",
            "gpubench-core",
            "helpers",
            "mygit",
            "qux",
            "serde",
            "tch"
        ]
    );
    // Path dependencies by absolute path, without the `*` requirement.
    assert_eq!(
        at(&t, &["dependencies", "gpubench-core", "path"]).as_str(),
        Some("/ws/core")
    );
    assert!(deps["gpubench-core"].get("version").is_none());
    assert_eq!(
        at(&t, &["dependencies", "helpers", "path"]).as_str(),
        Some("/ws/helpers")
    );
    assert_eq!(
        at(&t, &["dependencies", "helpers", "version"]).as_str(),
        Some("^0.1")
    );
    // The package itself, for `use gpu::...` in the bench.
    assert_eq!(
        at(&t, &["dependencies", "gpu", "path"]).as_str(),
        Some("/ws/gpu")
    );
    // Normal and dev entries of one crate unify: the normal requirement, both
    // features.
    assert_eq!(
        at(&t, &["dependencies", "tch", "version"]).as_str(),
        Some("=0.24.0")
    );
    assert_eq!(
        strings(at(&t, &["dependencies", "tch", "features"])),
        ["extra", "weak-one"]
    );
    // A rename keeps its package; default-features stays off where it was.
    assert_eq!(
        at(&t, &["dependencies", "f16", "package"]).as_str(),
        Some("half")
    );
    assert_eq!(
        strings(at(&t, &["dependencies", "f16", "features"])),
        ["std"]
    );
    assert_eq!(
        at(&t, &["dependencies", "criterion", "default-features"]).as_bool(),
        Some(false)
    );
    // An optional dependency the defaults turn on is an ordinary one, with the
    // features they ask of it.
    assert!(deps["serde"].get("optional").is_none());
    assert_eq!(
        strings(at(&t, &["dependencies", "serde", "features"])),
        ["derive", "rc"]
    );
    // git with its branch; another registry by its index.
    assert_eq!(
        at(&t, &["dependencies", "mygit", "git"]).as_str(),
        Some("https://github.com/x/mygit")
    );
    assert_eq!(
        at(&t, &["dependencies", "mygit", "branch"]).as_str(),
        Some("feature/one")
    );
    assert_eq!(
        at(&t, &["dependencies", "qux", "registry-index"]).as_str(),
        Some("sparse+https://example.com/index/")
    );
    assert_eq!(
        at(&t, &["dependencies", "qux", "version"]).as_str(),
        Some("^1")
    );
}

#[test]
fn target_specific_dependencies_stay_under_their_platform() {
    let t = generated();
    assert_eq!(
        at(
            &t,
            &["target", "cfg(unix)", "dependencies", "libc", "version"]
        )
        .as_str(),
        Some("^0.2")
    );
    assert_eq!(
        strings(at(
            &t,
            &[
                "target",
                "cfg(windows)",
                "dependencies",
                "winapi",
                "features"
            ]
        )),
        ["x"]
    );
    let text = t.to_string();
    assert!(
        text.contains("[target.\"cfg(unix)\".dependencies"),
        "written as cargo reads it: {text}"
    );
}

#[test]
fn the_default_features_are_on_for_cfg_feature_in_bench_code() {
    let t = generated();
    assert_eq!(
        strings(at(&t, &["features", "default"])),
        ["fast", "inner", "ser"]
    );
    assert!(at(&t, &["features"]).get("slow").is_none());
    assert_eq!(
        at(&t, &["features", "inner"]).as_array().map(Vec::len),
        Some(0)
    );
}

#[test]
fn the_written_manifest_reads_back_as_the_same_table() {
    let t = generated();
    let back: Table = t.to_string().parse().expect("valid TOML");
    assert_eq!(back, t);
}

#[test]
fn the_workspace_carries_the_revisions_patch_profile_and_resolver() {
    let root: Table = r#"
        [package]
        name = "gpu"
        edition.workspace = true

        [workspace]
        members = ["gpu"]
        [workspace.package]
        edition = "2021"

        [patch.crates-io]
        foo = { path = "vendor/foo" }
        bar = { git = "https://github.com/x/bar", rev = "abc" }
        [patch."https://github.com/x/y"]
        z = { path = "/abs/z" }

        [replace]
        "old:0.1.0" = { path = "../old" }

        [profile.bench]
        debug = true
        [profile.release.package.tch]
        opt-level = 2
    "#
    .parse()
    .unwrap();
    let w = workspace_manifest(
        &["gpu-a".into(), "gpu-b".into()],
        &root,
        Path::new("/rev/ws"),
    );
    assert_eq!(
        strings(at(&w, &["workspace", "members"])),
        ["gpu-a", "gpu-b"]
    );
    assert_eq!(at(&w, &["workspace", "resolver"]).as_str(), Some("2"));
    assert_eq!(
        at(&w, &["patch", "crates-io", "foo", "path"]).as_str(),
        Some("/rev/ws/vendor/foo")
    );
    assert_eq!(
        at(&w, &["patch", "crates-io", "bar"]),
        at(&root, &["patch", "crates-io", "bar"])
    );
    assert_eq!(
        at(&w, &["patch", "https://github.com/x/y", "z", "path"]).as_str(),
        Some("/abs/z")
    );
    assert_eq!(
        at(&w, &["replace", "old:0.1.0", "path"]).as_str(),
        Some("/rev/ws/../old")
    );
    assert_eq!(at(&w, &["profile"]), at(&root, &["profile"]));

    let virtual_root: Table = "[workspace]\nresolver = \"3\"\n".parse().unwrap();
    let w = workspace_manifest(&[], &virtual_root, Path::new("/rev"));
    assert_eq!(at(&w, &["workspace", "resolver"]).as_str(), Some("3"));
    assert!(w.get("patch").is_none() && w.get("profile").is_none());
}

#[test]
fn lib_rs_includes_the_bench_and_exports_through_gpubench_cores_name() {
    let m = metadata();
    let p = &m.packages[0];
    let src = lib_source(p, &p.targets[1], "head (working tree)", "gpubench_core");
    assert!(src.contains("#![allow(warnings)]"), "{src}");
    assert!(
        src.contains("#[path = \"/ws/gpu/benches/mat mul.rs\"]\nmod bench;"),
        "{src}"
    );
    assert!(src.ends_with("gpubench_core::export_paired!();\n"), "{src}");
    assert!(
        src.contains("(\"CARGO_MANIFEST_DIR\" $(, $message:expr)? $(,)?) => { \"/ws/gpu\" };"),
        "{src}"
    );
    assert!(src.contains("(\"CARGO_PKG_VERSION_PRE\" $(, $message:expr)? $(,)?) => { \"rc.1\" };"));
    assert!(src.contains("(\"CARGO_CRATE_NAME\" $(, $message:expr)? $(,)?) => { \"mat_mul\" };"));
    assert_eq!(core_crate_name(p).as_deref(), Some("gpubench_core"));
}
