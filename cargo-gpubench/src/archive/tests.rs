//! Tests of [`super`]: packing and unpacking, what unpacking refuses, and the
//! libtorch check.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;

use super::pack::{self, Bundle, BundledExecutable};
use super::unpack;
use super::*;
use crate::build::compile::BenchExecutable;
use crate::build::libtorch::{Libtorch, LibtorchSource};

fn write_file(path: &Path, bytes: &[u8]) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    path.to_path_buf()
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o111 != 0
}

/// A workspace-like tree: two executables, build-script library directories (one
/// holding libtorch), and a saved baseline.
fn bundle(root: &Path) -> Bundle {
    let exe = |package: &str, target: &str, body: &str| {
        let path = write_file(
            &root.join(format!("target/release/deps/{target}-0123456789abcdef")),
            body.as_bytes(),
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        BenchExecutable {
            package: Some(package.into()),
            target: target.into(),
            path,
        }
    };
    let native = root.join("target/release/build/shim-1/out");
    write_file(&native.join("libshim.so"), b"shim library");
    write_file(&native.join("libshim.a"), b"static: not loaded at run time");
    write_file(&native.join("notes.txt"), b"not a library");
    let torch = root.join("target/release/build/torch-sys-1/out/lib");
    write_file(&torch.join("libtorch_cpu.so"), b"a whole libtorch");
    let baselines = root.join("gpubench/baselines");
    write_file(
        &baselines.join("main/passes.json"),
        b"{\"id\": \"passes\"}\n",
    );
    Bundle {
        executables: vec![
            BundledExecutable {
                exe: exe("gpu", "suite", "#!/bin/sh\necho suite\n"),
                benchmarks: vec![
                    ArchivedBenchmark {
                        id: "sized/16".into(),
                        ignored: false,
                    },
                    ArchivedBenchmark {
                        id: "ignored_one".into(),
                        ignored: true,
                    },
                ],
            },
            BundledExecutable {
                exe: exe("cpu", "conv", "#!/bin/sh\necho conv\n"),
                benchmarks: vec![ArchivedBenchmark {
                    id: "conv".into(),
                    ignored: false,
                }],
            },
        ],
        native_dirs: vec![native, torch, root.join("target/not-there")],
        baselines: vec![("main".into(), baselines.join("main"))],
        git_commit: Some("0123abcd".into()),
        libtorch_version: Some("2.11.0+cu130".into()),
    }
}

#[test]
fn an_archive_round_trips_its_executables_libraries_and_baselines() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = bundle(&tmp.path().join("ws"));
    let out_dir = tmp.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let file = out_dir.join("benches.tar.gz");
    let written = pack::write(&bundle, &file).unwrap();
    assert_eq!(written.bytes, std::fs::metadata(&file).unwrap().len());
    // Only the archive is left beside it: no temporary file.
    let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        written.notes.iter().any(|n| n.contains("holds libtorch")),
        "{:?}",
        written.notes
    );

    let into = tmp.path().join("x");
    std::fs::create_dir_all(&into).unwrap();
    let got = unpack::extract(&file, &into).unwrap();
    assert_eq!(got.manifest, written.manifest);
    let m = &got.manifest;
    assert_eq!(m.kind, ARCHIVE_KIND);
    assert_eq!(m.format_version, ARCHIVE_FORMAT_VERSION);
    assert_eq!(m.profile, "bench");
    assert_eq!(m.git_commit.as_deref(), Some("0123abcd"));
    assert_eq!(m.libtorch_version.as_deref(), Some("2.11.0+cu130"));
    assert_eq!(m.gpubench_version, env!("CARGO_PKG_VERSION"));
    let exes: Vec<(&str, &str, &str)> = m
        .executables
        .iter()
        .map(|e| (e.package.as_str(), e.target.as_str(), e.file.as_str()))
        .collect();
    assert_eq!(
        exes,
        [
            ("cpu", "conv", "bin/cpu/conv-0123456789abcdef"),
            ("gpu", "suite", "bin/gpu/suite-0123456789abcdef"),
        ]
    );
    assert_eq!(
        m.executables[1].benchmarks,
        [
            ArchivedBenchmark {
                id: "ignored_one".into(),
                ignored: true
            },
            ArchivedBenchmark {
                id: "sized/16".into(),
                ignored: false
            },
        ]
    );
    assert_eq!(m.benchmark_count(), 3);
    let suite = got.path_of(&m.executables[1].file);
    assert_eq!(
        std::fs::read_to_string(&suite).unwrap(),
        "#!/bin/sh\necho suite\n"
    );
    #[cfg(unix)]
    assert!(is_executable(&suite), "executables stay executable");
    assert_eq!(m.native_libs, ["lib/libshim.so"]);
    assert_eq!(
        std::fs::read(got.lib_dir().join("libshim.so")).unwrap(),
        b"shim library"
    );
    assert!(!got.lib_dir().join("libtorch_cpu.so").exists());
    assert_eq!(m.baselines, ["main"]);
    assert_eq!(
        std::fs::read_to_string(got.baselines_root().join("main/passes.json")).unwrap(),
        "{\"id\": \"passes\"}\n"
    );
}

#[test]
fn a_failed_archive_leaves_no_file_under_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bundle = bundle(&tmp.path().join("ws"));
    bundle.executables[0].exe.path = tmp.path().join("ws/gone");
    let out_dir = tmp.path().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let file = out_dir.join("benches.tar.gz");
    std::fs::write(&file, b"the previous archive").unwrap();
    let err = pack::write(&bundle, &file).unwrap_err().to_string();
    assert!(
        err.contains("failed to read") && err.contains("gone"),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"the previous archive");
    let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
    assert_eq!(left.len(), 1, "the temporary file is removed: {left:?}");
}

#[test]
fn an_archive_into_a_directory_not_made_yet_makes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = bundle(&tmp.path().join("ws"));
    let file = tmp.path().join("dist/nightly/benches.tar.gz");
    let written = pack::write(&bundle, &file).unwrap();
    assert!(written.bytes > 0);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), written.bytes);
}

/// A gzipped tar of `entries` (name, bytes), names written as given, even unsafe ones.
fn raw_archive(path: &Path, entries: &[(&str, &[u8])]) {
    let mut tar = tar::Builder::new(GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        Compression::default(),
    ));
    for (name, data) in entries {
        let mut header = tar::Header::new_old();
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        tar.append(&header, *data).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

fn manifest_json(format_version: u32) -> Vec<u8> {
    let m = ArchiveManifest {
        kind: ARCHIVE_KIND.into(),
        format_version,
        created_at: "2026-01-01T00:00:00Z".into(),
        gpubench_version: "9.9.9".into(),
        profile: BENCH_PROFILE.into(),
        git_commit: None,
        libtorch_version: None,
        executables: vec![],
        native_libs: vec![],
        baselines: vec![],
    };
    m.to_json_pretty().into_bytes()
}

fn extract_err(file: &Path) -> (ArchiveError, PathBuf) {
    let into = file.with_extension("x");
    std::fs::create_dir_all(&into).unwrap();
    (unpack::extract(file, &into).unwrap_err(), into)
}

#[test]
fn a_file_that_is_not_an_archive_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let text = tmp.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    let (err, _) = extract_err(&text);
    assert!(matches!(err, ArchiveError::NotAnArchive { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("notes.txt is not a gpubench archive")
            && msg.contains("cargo gpubench archive -o FILE"),
        "{msg}"
    );

    // Some other tarball: its first entry is not the manifest.
    let other = tmp.path().join("other.tar.gz");
    raw_archive(&other, &[("README", b"hi")]);
    let (err, _) = extract_err(&other);
    assert!(
        err.to_string().contains("its first entry is `README`"),
        "{err}"
    );

    // A manifest of something else.
    let foreign = tmp.path().join("foreign.tar.gz");
    raw_archive(&foreign, &[(MANIFEST_ENTRY, b"{\"kind\": \"nextest\"}")]);
    let (err, _) = extract_err(&foreign);
    assert!(matches!(err, ArchiveError::NotAnArchive { .. }), "{err:?}");
}

#[test]
fn a_newer_format_is_refused_before_extracting() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("new.tar.gz");
    raw_archive(
        &file,
        &[
            (MANIFEST_ENTRY, &manifest_json(ARCHIVE_FORMAT_VERSION + 1)),
            ("bin/x", b"x"),
        ],
    );
    let (err, into) = extract_err(&file);
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("format_version {}", ARCHIVE_FORMAT_VERSION + 1))
            && msg.contains("upgrade cargo-gpubench")
            && msg.contains("9.9.9"),
        "{msg}"
    );
    assert!(!into.join("bin").exists());
}

#[test]
fn entries_that_escape_the_directory_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let manifest = manifest_json(ARCHIVE_FORMAT_VERSION);
    for evil in ["../evil", "bin/../../evil", "/tmp/gpubench-evil-absolute"] {
        let file = tmp.path().join("evil.tar.gz");
        raw_archive(&file, &[(MANIFEST_ENTRY, &manifest), (evil, b"pwned")]);
        let (err, into) = extract_err(&file);
        assert!(
            matches!(err, ArchiveError::UnsafeEntry { .. }),
            "{evil}: {err:?}"
        );
        assert!(err.to_string().contains(evil), "{err}");
        assert!(!into.parent().unwrap().join("evil").exists(), "{evil}");
        assert!(
            !tmp.path().parent().unwrap().join("evil").exists(),
            "{evil}"
        );
    }
    assert!(!Path::new("/tmp/gpubench-evil-absolute").exists());

    // A link could point anywhere.
    let file = tmp.path().join("link.tar.gz");
    let mut tar = tar::Builder::new(GzEncoder::new(
        std::fs::File::create(&file).unwrap(),
        Compression::default(),
    ));
    let mut header = tar::Header::new_gnu();
    header.set_size(manifest.len() as u64);
    header.set_mode(0o644);
    tar.append_data(&mut header, MANIFEST_ENTRY, manifest.as_slice())
        .unwrap();
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    tar.append_link(&mut link, "bin/x", "/etc").unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    let (err, _) = extract_err(&file);
    assert!(matches!(err, ArchiveError::UnsafeEntry { .. }), "{err:?}");
}

#[test]
fn a_truncated_archive_or_a_missing_executable_is_damaged() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a.tar.gz");
    pack::write(&bundle(&tmp.path().join("ws")), &file).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    // Cut in its manifest, or after it.
    for keep in [bytes.len() / 2, bytes.len() - 64] {
        let cut = tmp.path().join(format!("cut-{keep}.tar.gz"));
        std::fs::write(&cut, &bytes[..keep]).unwrap();
        let (err, _) = extract_err(&cut);
        assert!(
            matches!(err, ArchiveError::Damaged { .. }),
            "{keep}: {err:?}"
        );
    }

    // Cut in the middle of a large executable (a real archive is mostly those):
    // reading it fails while it is extracted, which is the file's fault, not the
    // directory's.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let big: Vec<u8> = (0..1 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let whole = tmp.path().join("big.tar.gz");
    raw_archive(
        &whole,
        &[(MANIFEST_ENTRY, &manifest_json(1)), ("bin/big", &big)],
    );
    let bytes = std::fs::read(&whole).unwrap();
    let cut = tmp.path().join("big-cut.tar.gz");
    std::fs::write(&cut, &bytes[..bytes.len() * 3 / 5]).unwrap();
    let (err, _) = extract_err(&cut);
    assert!(matches!(err, ArchiveError::Damaged { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("is damaged (bin/big cannot be read to its end:"),
        "{err}"
    );

    let mut m: ArchiveManifest = serde_json::from_slice(&manifest_json(1)).unwrap();
    m.executables.push(ArchivedExecutable {
        package: "gpu".into(),
        target: "suite".into(),
        file: "bin/gpu/suite".into(),
        benchmarks: vec![],
    });
    let lacking = tmp.path().join("lacking.tar.gz");
    raw_archive(&lacking, &[(MANIFEST_ENTRY, m.to_json_pretty().as_bytes())]);
    let (err, _) = extract_err(&lacking);
    assert!(err.to_string().contains("it lacks bin/gpu/suite"), "{err}");
}

#[test]
fn libtorch_must_be_the_version_the_archive_was_built_against() {
    let file = Path::new("/ci/benches.tar.gz");
    let here = Libtorch {
        lib_dir: "/venv/torch/lib".into(),
        source: LibtorchSource::Venv,
    };
    assert_eq!(
        check_libtorch(file, Some("2.11.0+cu130"), &here, Some("2.11.0+cu130")).unwrap(),
        None
    );
    let err = check_libtorch(file, Some("2.11.0+cu130"), &here, Some("2.9.1+cu128"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/ci/benches.tar.gz was built against libtorch 2.11.0+cu130")
            && err.contains("the libtorch here is 2.9.1+cu128 (/venv/torch/lib")
            && err.contains("pip install torch==2.11.0`"),
        "{err}"
    );
    // The same release built for another CUDA (or the CPU) has the same ABI: a note.
    let note = check_libtorch(file, Some("2.11.0+cu130"), &here, Some("2.11.0+cpu"))
        .unwrap()
        .unwrap();
    assert!(note.contains("running with 2.11.0+cpu"), "{note}");
    let note = check_libtorch(file, Some("2.11.0"), &here, None)
        .unwrap()
        .unwrap();
    assert!(note.contains("cannot tell the version"), "{note}");
    assert!(check_libtorch(file, None, &here, Some("2.11.0"))
        .unwrap()
        .is_some());
}
