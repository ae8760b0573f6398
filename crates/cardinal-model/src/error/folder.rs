//! What a folder that replacing a run would delete is, when it is not a run
//! ([`Error::NotARun`](super::Error::NotARun)).

/// A folder that is not a cardinal run, and so is never replaced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotARun {
    /// A filesystem root.
    #[error("is a filesystem root")]
    FilesystemRoot,
    /// The home folder.
    #[error("is the home folder")]
    Home,
    /// A folder without a run's or a model's records, and what it holds.
    #[error(
        "is not a cardinal run (no {run_file} or {meta_file} written by cardinal); it holds {}{}",
        entries.join(", "),
        if *more > 0 { format!(" and {more} more") } else { String::new() }
    )]
    Foreign {
        /// The record a run writes (`run.json`).
        run_file: &'static str,
        /// The record a model folder holds (`meta.json`).
        meta_file: &'static str,
        /// The first of its entries, by name (folders with a trailing `/`).
        entries: Vec<String>,
        /// How many more entries it holds.
        more: usize,
    },
}
