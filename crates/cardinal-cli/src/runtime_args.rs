//! The runtime flags, offered by the subcommands they apply to: `--threads` wherever work
//! runs, `--wait` only where models train. Both are `global`: a command with subcommands of
//! its own (`reproduce table1`, `data stats`) takes them after those too.

/// `--threads`, for the commands that run a model.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Threads {
    /// Worker threads (default: all cores). Results are identical for any thread count.
    #[arg(long, value_name = "N", global = true)]
    pub threads: Option<usize>,
}

/// `--threads` and `--wait`, for the commands that train.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct TrainingRuntime {
    #[command(flatten)]
    pub threads: Threads,
    /// While training, idle worker threads poll for work (`active`, the default, like
    /// OpenMP's OMP_WAIT_POLICY=ACTIVE: faster on two or more threads) or sleep (`passive`:
    /// leaves the cores to other programs). Results are identical either way.
    #[arg(long, value_name = "POLICY", global = true)]
    pub wait: Option<Wait>,
}

/// The wait policy of idle worker threads while training.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Wait {
    /// Poll for work.
    Active,
    /// Sleep until work comes.
    Passive,
}
