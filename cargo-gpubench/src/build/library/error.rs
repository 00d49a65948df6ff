//! Why a revision's bench targets could not be built as libraries.

use thiserror::Error;

use crate::build::discover::DiscoverError;

/// Why a revision's bench targets could not be built as libraries. All of them
/// leave separate processes ([`fallback`](super::fallback)) as the way to measure the revision;
/// [`LibraryError::PredatesPairing`] is the one that says so by design.
#[derive(Debug, Error)]
pub enum LibraryError {
    /// The revision's workspace could not be read or has no bench target to pair.
    #[error("failed to read the bench targets of the {revision}: {source}")]
    Discover {
        /// [`Revision::describe`].
        revision: String,
        /// The cause.
        source: DiscoverError,
    },
    /// The revision's root `Cargo.toml` could not be read as TOML.
    #[error("failed to read {path} of the {revision}: {reason}")]
    RootManifest {
        /// [`Revision::describe`].
        revision: String,
        /// The manifest.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A generated file could not be written.
    #[error("failed to write {path}: {source}; check that the target directory is writable")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// cargo could not be started.
    #[error("failed to run {cargo}: {source}")]
    Spawn {
        /// The cargo executable.
        cargo: String,
        /// The cause.
        source: std::io::Error,
    },
    /// cargo's output could not be read.
    #[error("failed to read cargo's build messages: {0}")]
    Read(#[source] std::io::Error),
    /// The revision's gpubench-core has no `export_paired`.
    #[error("failed to build bench target `{target}` of the {revision} as a library: the {role}'s gpubench-core predates pairing in one process ({message}); update gpubench-core there to pair in one process")]
    PredatesPairing {
        /// [`Revision::describe`].
        revision: String,
        /// `base` or `head`.
        role: &'static str,
        /// The bench target.
        target: String,
        /// The compiler's message.
        message: String,
    },
    /// Any other failed build.
    #[error("failed to build the bench targets of the {revision} as libraries (cargo: {status}): {summary}")]
    Failed {
        /// [`Revision::describe`].
        revision: String,
        /// cargo's exit status.
        status: String,
        /// The first error's message, and how many more there were.
        summary: String,
        /// Every error as the compiler rendered it.
        errors: Vec<String>,
        /// Everything the build said ([`messages::Parsed::shown`]), not shown yet:
        /// the caller shows it when building the same code otherwise does not.
        shown: String,
    },
    /// The build succeeded without one of the libraries.
    #[error("the library build of the {revision} reported no library for bench target `{target}` of package `{package}`")]
    MissingLibrary {
        /// [`Revision::describe`].
        revision: String,
        /// The package.
        package: String,
        /// The target.
        target: String,
    },
}

impl LibraryError {
    /// What a failed build said and has not shown, when it is a compiler failure.
    pub fn unshown(&self) -> Option<&str> {
        match self {
            LibraryError::Failed { shown, .. } => Some(shown),
            _ => None,
        }
    }

    /// Whether the revision's gpubench-core cannot pair in one process at all.
    pub fn predates_pairing(&self) -> bool {
        matches!(self, LibraryError::PredatesPairing { .. })
    }
}
