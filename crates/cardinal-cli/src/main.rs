//! `cardinal`: the command-line interface. A thin layer over the `cardinal` library:
//! parse arguments, call the library, print.

use std::process::ExitCode;

use cardinal::engine::Engine;
use cardinal::runtime::{Runtime, WaitPolicy};
use clap::{Parser, Subcommand};

/// mimalloc keeps freed pages for reuse: with the system allocator each prediction's large
/// output buffers come back from the kernel as fresh, zero-filled pages (page faults measured
/// at up to 15 % of Bibtex inference; docs/journal).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[macro_use]
mod output;

mod bench_cmd;
mod cv_cmd;
mod data_cmd;
mod model_cmd;
mod project_cmd;
mod reproduce_cmd;
mod suite_cmd;

/// Deep structured prediction with cardinality constraints (Predict and Constrain).
#[derive(Debug, Parser)]
#[command(name = "cardinal", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Worker threads (default: all cores). Results are identical for any thread count.
    #[arg(long, global = true, value_name = "N")]
    threads: Option<usize>,
    /// While training, idle worker threads poll for work (`active`, like OpenMP's
    /// OMP_WAIT_POLICY=ACTIVE: faster on two or more threads) or sleep (`passive`: leaves the
    /// cores to other programs). Results are identical either way.
    #[arg(long, global = true, value_name = "POLICY", default_value = "active")]
    wait: Wait,
    /// More log output (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Wait {
    Active,
    Passive,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect datasets.
    Data(data_cmd::DataArgs),
    /// Train a model and evaluate it on the test split.
    Train(model_cmd::TrainArgs),
    /// Evaluate a trained model.
    Eval(model_cmd::EvalArgs),
    /// Cross-validate a configuration on the training file (k folds, no test data used).
    Cv(cv_cmd::CvArgs),
    /// Predict label sets (JSON lines).
    Predict(model_cmd::PredictArgs),
    /// Reproduce the paper's Table 1, its cardinality analysis, or the development suite.
    Reproduce(reproduce_cmd::ReproduceArgs),
    /// Time a training epoch and test-set inference; prints one JSON line.
    Bench(bench_cmd::BenchArgs),
    /// Project vectors read from stdin onto {0 <= y <= 1, sum y = z} (or another operator's set).
    Project(project_cmd::ProjectArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| level.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let engine = Engine {
        // The product's systems and the paper's Table 1 systems.
        systems: cardinal_paper::systems(),
        runtime: Runtime {
            threads: cli.threads,
            wait: match cli.wait {
                Wait::Active => WaitPolicy::Active,
                Wait::Passive => WaitPolicy::Passive,
            },
        },
    };
    // The whole command runs on a worker of the engine's pool.
    let result = engine
        .install(|| run(&engine, &cli.command))
        .map_err(anyhow::Error::from)
        .and_then(|r| r);
    let output = output::finish();
    let broken_pipe = |e: &std::io::Error| e.kind() == std::io::ErrorKind::BrokenPipe;
    match (result, output) {
        // A closed pipe (`| head`): the reader has what it wanted.
        (Err(e), _)
            if e.chain()
                .any(|c| c.downcast_ref::<std::io::Error>().is_some_and(broken_pipe)) =>
        {
            ExitCode::SUCCESS
        }
        (Ok(()), Some(e)) | (Err(_), Some(e)) if broken_pipe(&e) => ExitCode::SUCCESS,
        (Err(e), _) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
        (Ok(()), Some(e)) => {
            eprintln!("error: writing standard output: {e}");
            ExitCode::FAILURE
        }
        (Ok(()), None) => ExitCode::SUCCESS,
    }
}

/// Dispatches a parsed command to its module.
fn run(engine: &Engine, command: &Command) -> anyhow::Result<()> {
    match command {
        Command::Data(a) => data_cmd::run(a),
        Command::Train(a) => model_cmd::train(engine, a),
        Command::Eval(a) => model_cmd::eval(engine, a),
        Command::Cv(a) => cv_cmd::run(engine, a),
        Command::Predict(a) => model_cmd::predict(engine, a),
        Command::Project(a) => project_cmd::run(a),
        Command::Bench(a) => bench_cmd::run(engine, a),
        Command::Reproduce(a) => reproduce_cmd::run(engine, a),
    }
}
