//! Cargo's JSON messages from building a revision's libraries: the `cdylib` each
//! library produced, the native library directories build scripts report, and the
//! compiler's messages as cargo would show them, held rather than printed: a build
//! that fails makes `ab` build the same code again as executables, which shows the
//! same errors, so they are shown once, by whichever build says more.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::PathBuf;

use cargo_metadata::diagnostic::DiagnosticLevel;
use cargo_metadata::{Message, TargetKind};

use crate::build::compile::strip_search_kind;

/// The macro a library calls; a compiler error naming it means the revision's
/// gpubench-core has none.
pub const EXPORT_MACRO: &str = "export_paired";

/// An error the compiler reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompilerError {
    /// The library's crate name, when the error is in a generated library (its
    /// `lib.rs` or the bench source it includes); `None` in a dependency.
    pub library: Option<String>,
    /// The message's first line (`cannot find macro ...`).
    pub message: String,
    /// As the compiler renders it, with the source lines.
    pub rendered: String,
}

impl CompilerError {
    /// Whether this is a generated library failing to find `export_paired`.
    pub fn predates_pairing(&self) -> bool {
        self.library.is_some()
            && (self.message.contains(EXPORT_MACRO) || self.rendered.contains(EXPORT_MACRO))
    }
}

/// What the messages said.
#[derive(Debug, Default)]
pub struct Parsed {
    /// The `cdylib` of each library, by crate name.
    pub libraries: BTreeMap<String, PathBuf>,
    /// Native library directories from build scripts.
    pub native_paths: Vec<PathBuf>,
    /// The compiler's errors, in order.
    pub errors: Vec<CompilerError>,
    /// Whether cargo said the build finished successfully (`None`: it did not say).
    pub success: Option<bool>,
    /// Every compiler message as rendered (warnings too) and cargo's other lines,
    /// in order, as cargo would have shown them.
    pub shown: String,
}

/// Reads cargo's messages for the libraries named `crates` (crate names), holding
/// each compiler message as rendered and other lines in [`Parsed::shown`].
pub fn parse(reader: impl BufRead, crates: &[String]) -> std::io::Result<Parsed> {
    let mut out = Parsed::default();
    let mut native = BTreeSet::new();
    let ours = |name: &str| crates.iter().any(|c| c == name);
    for message in Message::parse_stream(reader) {
        match message? {
            Message::CompilerArtifact(artifact) => {
                if !artifact.target.kind.contains(&TargetKind::CDyLib)
                    || !ours(&artifact.target.name)
                {
                    continue;
                }
                let file = artifact
                    .filenames
                    .iter()
                    .find(|f| f.as_str().ends_with(std::env::consts::DLL_SUFFIX));
                if let Some(file) = file {
                    out.libraries.insert(
                        artifact.target.name.clone(),
                        file.clone().into_std_path_buf(),
                    );
                }
            }
            Message::CompilerMessage(msg) => {
                let d = &msg.message;
                match &d.rendered {
                    Some(r) => out.shown.push_str(r),
                    None => {
                        out.shown.push_str(&d.message);
                        out.shown.push('\n');
                    }
                }
                if matches!(d.level, DiagnosticLevel::Error | DiagnosticLevel::Ice) {
                    out.errors.push(CompilerError {
                        library: ours(&msg.target.name).then(|| msg.target.name.clone()),
                        message: d.message.lines().next().unwrap_or_default().to_string(),
                        rendered: d.rendered.clone().unwrap_or_else(|| d.message.clone()),
                    });
                }
            }
            Message::BuildScriptExecuted(script) => {
                for p in script.linked_paths {
                    native.insert(strip_search_kind(p.as_str()));
                }
            }
            Message::BuildFinished(finished) => out.success = Some(finished.success),
            Message::TextLine(line) => {
                out.shown.push_str(&line);
                out.shown.push('\n');
            }
            _ => {}
        }
    }
    out.native_paths = native.into_iter().collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diagnostic(target: &str, kind: &str, level: &str, message: &str) -> String {
        serde_json::json!({
            "reason": "compiler-message",
            "package_id": format!("path+file:///libs/{target}#0.0.0"),
            "manifest_path": format!("/libs/{target}/Cargo.toml"),
            "target": {
                "name": target, "kind": [kind], "crate_types": [kind],
                "src_path": format!("/libs/{target}/lib.rs"), "edition": "2021",
                "doctest": false, "test": false, "doc": false
            },
            "message": {
                "message": message, "code": null, "level": level, "spans": [],
                "children": [], "rendered": format!("{level}: {message}\n  --> lib.rs:1:1\n")
            }
        })
        .to_string()
    }

    #[test]
    fn finds_each_librarys_file_and_keeps_the_errors() {
        let artifact = serde_json::json!({
            "reason": "compiler-artifact",
            "package_id": "path+file:///libs/x#gpubench-ab-x@0.0.0",
            "manifest_path": "/libs/x/Cargo.toml",
            "target": {
                "name": "gpubench_ab_x", "kind": ["cdylib"], "crate_types": ["cdylib"],
                "src_path": "/libs/x/lib.rs", "edition": "2021",
                "doctest": false, "test": false, "doc": false
            },
            "profile": {"opt_level": "3", "debuginfo": 0, "debug_assertions": false,
                        "overflow_checks": false, "test": false},
            "features": [],
            "filenames": ["/t/release/libgpubench_ab_x.so"],
            "executable": null, "fresh": true
        })
        .to_string();
        let lines = [
            artifact,
            diagnostic("gpubench_ab_y", "cdylib", "warning", "unused variable"),
            diagnostic(
                "gpubench_ab_y",
                "cdylib",
                "error",
                "cannot find macro `export_paired` in crate `gpubench_core`",
            ),
            diagnostic("my_pkg", "lib", "error", "mismatched types"),
            r#"{"reason":"build-finished","success":false}"#.to_string(),
        ];
        let crates = ["gpubench_ab_x".to_string(), "gpubench_ab_y".to_string()];
        let parsed = parse(lines.join("\n").as_bytes(), &crates).unwrap();
        assert_eq!(parsed.success, Some(false));
        assert_eq!(
            parsed.libraries.get("gpubench_ab_x"),
            Some(&PathBuf::from("/t/release/libgpubench_ab_x.so"))
        );
        assert_eq!(parsed.errors.len(), 2, "warnings are shown, not kept");
        // Held, in order, for the caller to show once.
        let warning = parsed.shown.find("warning: unused variable").unwrap();
        let error = parsed.shown.find("error: mismatched types").unwrap();
        assert!(warning < error, "{}", parsed.shown);
        assert!(parsed.errors[0].predates_pairing());
        assert_eq!(parsed.errors[1].library, None);
        assert!(!parsed.errors[1].predates_pairing());
    }
}
