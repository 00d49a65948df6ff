//! Which error ends `cargo gpubench` with which exit code: one table of every error
//! type a stage raises on purpose, matched exhaustively, and how an error is worded
//! on stderr. The codes themselves are [`crate::exit_code`].

use gpubench_analysis::compare::CompareError;
use gpubench_analysis::BaselineError;
use gpubench_record::measurement::InvalidSetting;
use gpubench_record::record::RecordError;

use crate::archive::ArchiveError;
use crate::build::compile::CompileError;
use crate::build::discover::DiscoverError;
use crate::build::libtorch::LibtorchError;
use crate::build::revision::RevisionError;
use crate::compare::ComparisonFileError;
use crate::execute::listing::ListError;
use crate::execute::select::SelectError;
use crate::exit_code::{Exit, UsageError};
use crate::store::history::HistoryError;
use crate::store::manifest::ManifestError;
use crate::store::references::ReferenceError;
use crate::store::runs::StoreError;

/// Declares [`Known`], the error types with an exit code of their own, and how to
/// find one in an error's chain, from one list.
macro_rules! known_errors {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// An error of a type whose exit code this module decides.
        enum Known<'a> {
            $($variant(&'a $ty),)*
        }

        impl<'a> Known<'a> {
            /// `cause` as a known error, when it is one.
            fn of(cause: &'a (dyn std::error::Error + 'static)) -> Option<Self> {
                $(if let Some(e) = cause.downcast_ref::<$ty>() {
                    return Some(Known::$variant(e));
                })*
                None
            }
        }
    };
}

known_errors! {
    Usage(UsageError),
    Setting(InvalidSetting),
    Select(SelectError),
    Compare(CompareError),
    Reference(ReferenceError),
    Baseline(BaselineError),
    Record(RecordError),
    Manifest(ManifestError),
    ComparisonFile(ComparisonFileError),
    Discover(DiscoverError),
    Compile(CompileError),
    List(ListError),
    Libtorch(LibtorchError),
    Store(StoreError),
    Archive(ArchiveError),
    Revision(RevisionError),
    History(HistoryError),
}

impl Known<'_> {
    /// The table. A file that cannot be read is the machine's problem (5); one that
    /// reads but is corrupt, newer or misnamed is bad input (2).
    fn exit(&self) -> Exit {
        match self {
            Known::Usage(UsageError(_))
            | Known::Setting(
                InvalidSetting::OutOfRange { .. } | InvalidSetting::SampleBounds { .. },
            ) => Exit::Usage,
            Known::Select(
                SelectError::DuplicateId { .. } | SelectError::NothingSelected { .. },
            ) => Exit::Usage,
            Known::Compare(
                CompareError::NoSamples { .. }
                | CompareError::InvalidSample { .. }
                | CompareError::ZeroMedian { .. }
                | CompareError::InvalidConfig { .. },
            ) => Exit::Usage,
            Known::Reference(e) => match e {
                ReferenceError::Baseline(e) => baseline(e),
                ReferenceError::Record(e) => record(e),
                ReferenceError::Manifest(e) => manifest(e),
                ReferenceError::Ambiguous { .. }
                | ReferenceError::NotFound { .. }
                | ReferenceError::NoLatest { .. }
                | ReferenceError::NotARun { .. }
                | ReferenceError::NothingToCompare { .. } => Exit::Usage,
            },
            Known::Baseline(e) => baseline(e),
            Known::Record(e) => record(e),
            Known::Manifest(e) => manifest(e),
            Known::ComparisonFile(e) => match e {
                ComparisonFileError::Io { .. } => Exit::Setup,
                ComparisonFileError::Parse { .. } | ComparisonFileError::TooNew { .. } => {
                    Exit::Usage
                }
            },
            Known::Discover(e) => match e {
                DiscoverError::Metadata(_) => Exit::Setup,
                DiscoverError::UnknownPackage { .. }
                | DiscoverError::NotInWorkspace { .. }
                | DiscoverError::NoManifest { .. }
                | DiscoverError::NotAGpubenchPackage { .. }
                | DiscoverError::UnknownBench { .. }
                | DiscoverError::NoBenchTargets { .. } => Exit::Usage,
            },
            Known::Compile(e) => match e {
                CompileError::Failed { .. } | CompileError::MissingExecutable { .. } => {
                    Exit::BuildFailed
                }
                CompileError::Spawn { .. } | CompileError::Read(_) => Exit::Setup,
            },
            // A bench executable that refuses its own benchmark ids (libtest's usage
            // code) is bad input; one that cannot start is the machine's problem.
            Known::List(e) => match e {
                ListError::Failed {
                    code: Some(code), ..
                } if *code == gpubench_record::protocol::EXIT_USAGE => Exit::Usage,
                ListError::Failed { .. } | ListError::Spawn { .. } => Exit::Setup,
            },
            // A file that is not an archive (or not whole, or newer) is bad input; a
            // libtorch of another version is the machine's problem.
            Known::Archive(e) => match e {
                ArchiveError::NotAnArchive { .. }
                | ArchiveError::Damaged { .. }
                | ArchiveError::TooNew { .. }
                | ArchiveError::UnsafeEntry { .. } => Exit::Usage,
                ArchiveError::Io { .. } | ArchiveError::LibtorchMismatch { .. } => Exit::Setup,
            },
            // A revision that cannot be found is bad input; git failing is the
            // machine's problem.
            Known::Revision(e) => match e {
                RevisionError::NotARepository { .. }
                | RevisionError::UnknownRevision { .. }
                | RevisionError::NoHead
                | RevisionError::NoDefaultBranch { .. }
                | RevisionError::NoMergeBase { .. }
                | RevisionError::NoWorkspace { .. } => Exit::Usage,
                RevisionError::Spawn { .. }
                | RevisionError::Git { .. }
                | RevisionError::Io { .. } => Exit::Setup,
            },
            // Not a repository, or a revision git does not know, is bad input; git
            // failing is the machine's problem.
            Known::History(e) => match e {
                HistoryError::NotARepository { .. }
                | HistoryError::OutsideRepository { .. }
                | HistoryError::UnknownRevision { .. } => Exit::Usage,
                HistoryError::Spawn { .. }
                | HistoryError::Git { .. }
                | HistoryError::Protocol { .. } => Exit::Setup,
            },
            Known::Libtorch(
                LibtorchError::BadEnv { .. }
                | LibtorchError::BadConfig { .. }
                | LibtorchError::NotFound { .. },
            )
            | Known::Store(StoreError::Locked { .. } | StoreError::Io { .. }) => Exit::Setup,
        }
    }
}

fn baseline(e: &BaselineError) -> Exit {
    match e {
        BaselineError::Io { .. } => Exit::Setup,
        BaselineError::InvalidName { .. }
        | BaselineError::Blocked(_)
        | BaselineError::NotFound { .. }
        | BaselineError::Parse { .. }
        | BaselineError::TooNew { .. }
        | BaselineError::Invalid { .. }
        | BaselineError::DuplicateId { .. }
        | BaselineError::DuplicateRecord { .. }
        | BaselineError::FileClash { .. }
        | BaselineError::DeviceMismatch { .. }
        | BaselineError::Compare { .. } => Exit::Usage,
    }
}

fn record(e: &RecordError) -> Exit {
    match e {
        RecordError::Io { .. } => Exit::Setup,
        RecordError::Parse { .. }
        | RecordError::TooNew { .. }
        | RecordError::OtherBenchmark { .. } => Exit::Usage,
    }
}

fn manifest(e: &ManifestError) -> Exit {
    match e {
        ManifestError::Io { .. } => Exit::Setup,
        ManifestError::Parse { .. }
        | ManifestError::TooNew { .. }
        | ManifestError::RepeatedBenchmark { .. }
        | ManifestError::RecordOutside { .. } => Exit::Usage,
    }
}

/// The exit code `err` ends the invocation with: the first cause in its chain of a
/// type in the table decides; any other error (an I/O failure given only context, a
/// child that could not be spawned) is the machine's or the environment's: setup (5).
pub(crate) fn exit_for(err: &anyhow::Error) -> Exit {
    err.chain()
        .find_map(Known::of)
        .map_or(Exit::Setup, |known| known.exit())
}

/// `err` and its causes on one line, a cause left out when the line already says it.
pub(crate) fn message(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) || out.contains(&format!(": {text}")) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_read_as_a_chain_without_repeats() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let store = StoreError::Io {
            action: "write",
            path: "/t/x.json".into(),
            source: io,
        };
        let err = anyhow::Error::new(store).context("failed to store the run");
        assert_eq!(
            message(&err),
            "failed to store the run: failed to write /t/x.json: no such file"
        );
    }

    #[test]
    fn errors_map_to_their_codes_through_context() {
        let build = anyhow::Error::new(CompileError::Failed {
            status: "exit status: 101".into(),
        })
        .context("failed to build bench targets");
        assert_eq!(exit_for(&build), Exit::BuildFailed);
        let usage =
            anyhow::Error::new(UsageError("no such file".into())).context("failed to start");
        assert_eq!(exit_for(&usage), Exit::Usage);
        let other = anyhow::anyhow!("something else");
        assert_eq!(exit_for(&other), Exit::Setup);
        let name = anyhow::Error::new(BaselineError::NotFound {
            name: "main".into(),
            path: "/ws/gpubench/baselines/main".into(),
        })
        .context("failed to load the baseline");
        assert_eq!(exit_for(&name), Exit::Usage);
        let io = anyhow::Error::new(BaselineError::Io {
            action: "write baseline file",
            path: "/ro/x.json".into(),
            source: std::io::ErrorKind::PermissionDenied.into(),
        });
        assert_eq!(exit_for(&io), Exit::Setup);
        let ambiguous = anyhow::Error::new(ReferenceError::Ambiguous {
            reference: "r".into(),
            candidates: "two runs".into(),
            how: "say more".into(),
        })
        .context("failed to resolve BASELINE `r`");
        assert_eq!(exit_for(&ambiguous), Exit::Usage);
        let unreadable = anyhow::Error::new(ReferenceError::Manifest(ManifestError::Io {
            path: "/runs/r/manifest.json".into(),
            source: std::io::ErrorKind::PermissionDenied.into(),
        }));
        assert_eq!(exit_for(&unreadable), Exit::Setup);
        // A bench executable that refuses its own benchmark ids (exit 2) is bad input;
        // one that cannot start is the machine's problem.
        let listing = |code| {
            anyhow::Error::new(ListError::Failed {
                exe: "/t/bench".into(),
                how: format!("exit code {code}"),
                stderr: String::new(),
                code: Some(code),
            })
        };
        assert_eq!(exit_for(&listing(2)), Exit::Usage);
        assert_eq!(exit_for(&listing(127)), Exit::Setup);
    }
}
