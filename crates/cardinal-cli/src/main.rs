//! `cardinal`: the command-line interface. A thin layer over the `cardinal` library:
//! parse arguments, call the library, print.

// Every line to standard error goes through `errln!`, which cannot panic.
#![deny(clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cardinal::engine::Engine;
use cardinal::runtime::{Environment, WaitPolicy};
use clap::{Parser, Subcommand};

/// mimalloc keeps freed pages for reuse: with the system allocator each prediction's large
/// output buffers come back from the kernel as fresh, zero-filled pages (measured in
/// docs/journal).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[macro_use]
mod output;
// `train`, `eval` and `predict` on multi-target data and models.
mod seg_model_cmd;

mod ablation_cmd;
mod bench_cmd;
mod cv_cmd;
mod data_cmd;
mod docs_cmd;
mod eval_cmd;
mod log;
mod model_cmd;
mod out_path;
mod predict_cmd;
mod progress;
mod project_cmd;
mod report_cmd;
mod reproduce_cmd;
mod runtime_args;

use runtime_args::{Threads, TrainingRuntime, Wait};
mod info_cmd;
mod suite_cmd;

/// Deep structured prediction with cardinality constraints (Predict and Constrain).
#[derive(Debug, Parser)]
#[command(name = "cardinal", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Worker threads (default: all cores), for the commands that compute; also accepted after
    /// them (`cardinal train --threads 2`). Results are identical for any thread count.
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// For the commands that train (train, cv, reproduce, bench): whether idle worker threads
    /// poll for work (`active`, the default) or sleep (`passive`); also accepted after them.
    #[arg(long, value_name = "POLICY")]
    wait: Option<Wait>,
    /// More log output on standard error: -v the library's steps (data loaded, phases, early
    /// stopping, checkpoints, evaluation), -vv also every new best epoch and per-stage timings.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Form of the log on standard error: `text`, or `json` (one JSON object per event,
    /// training progress included).
    #[arg(long, global = true, value_name = "FORMAT", default_value = "text")]
    log_format: log::LogFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect datasets.
    Data {
        #[command(flatten)]
        args: data_cmd::DataArgs,
        #[command(flatten)]
        threads: Threads,
    },
    /// Train a model and evaluate it on the test split (the paper's Section 6 model when the
    /// data is multi-target).
    Train {
        #[command(flatten)]
        args: model_cmd::TrainArgs,
        #[command(flatten)]
        runtime: TrainingRuntime,
    },
    /// Evaluate a trained model.
    Eval {
        #[command(flatten)]
        args: eval_cmd::EvalArgs,
        #[command(flatten)]
        threads: Threads,
    },
    /// Cross-validate a configuration on the training file (k folds, no test data used).
    #[command(mut_arg("dataset", |a| a.help(
        "Dataset name (data directory, then vendored) or path (MULAN folder, ARFF with XML \
         beside, LIBSVM or XMC file) of binary labels; `cv` does not cross-validate \
         multi-target (Section 6) data"
    )))]
    Cv {
        #[command(flatten)]
        args: cv_cmd::CvArgs,
        #[command(flatten)]
        runtime: TrainingRuntime,
    },
    /// Say what a model folder holds: its system (Predict and Constrain or another), why it
    /// was chosen, its data and outputs.
    Info(info_cmd::InfoArgs),
    /// Predict label sets (JSON lines).
    Predict {
        #[command(flatten)]
        args: predict_cmd::PredictArgs,
        #[command(flatten)]
        threads: Threads,
    },
    /// Write an HTML report of trained models: training curves, counts, per-label F1,
    /// calibration, F1 against the threshold, metrics (one self-contained file).
    Report {
        #[command(flatten)]
        args: report_cmd::ReportArgs,
        #[command(flatten)]
        threads: Threads,
    },
    /// Reproduce the paper's Table 1, its cardinality analysis, the development suite or the
    /// ablation.
    Reproduce {
        #[command(flatten)]
        args: reproduce_cmd::ReproduceArgs,
        #[command(flatten)]
        runtime: TrainingRuntime,
    },
    /// Time a training epoch and test-set inference; prints one JSON line.
    Bench {
        #[command(flatten)]
        args: bench_cmd::BenchArgs,
        #[command(flatten)]
        runtime: TrainingRuntime,
    },
    /// Project vectors read from stdin onto {0 <= y <= 1, sum y = z} (or another operator's set).
    Project {
        #[command(flatten)]
        args: project_cmd::ProjectArgs,
        #[command(flatten)]
        threads: Threads,
    },
    /// Print a shell completion script (e.g. `cardinal completions bash > /etc/bash_completion.d/cardinal`).
    Completions(docs_cmd::CompletionsArgs),
    /// Print the manual page (roff), e.g. `cardinal man | man -l -` or `cardinal man train`.
    Man(docs_cmd::ManArgs),
}

impl Command {
    /// The thread count and wait policy the command asked for, if it uses them.
    fn runtime(&self) -> (Option<usize>, Option<Wait>) {
        match self {
            Command::Train { runtime, .. }
            | Command::Cv { runtime, .. }
            | Command::Reproduce { runtime, .. }
            | Command::Bench { runtime, .. } => (runtime.threads.threads, runtime.wait),
            Command::Eval { threads, .. }
            | Command::Predict { threads, .. }
            | Command::Report { threads, .. }
            | Command::Data { threads, .. }
            | Command::Project { threads, .. } => (threads.threads, None),
            Command::Info(_) | Command::Completions(_) | Command::Man(_) => (None, None),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    log::init(cli.log_format, cli.verbose);
    let (threads, wait) = cli.command.runtime();
    // The environment is read here, once: the library reads none.
    let runtime = Environment::read().runtime(
        // After the subcommand wins over before it.
        threads.or(cli.threads),
        match wait.or(cli.wait).unwrap_or(Wait::Active) {
            Wait::Active => WaitPolicy::Active,
            Wait::Passive => WaitPolicy::Passive,
        },
    );
    let result = runtime.map_err(anyhow::Error::from).and_then(|runtime| {
        let engine = Engine {
            // The product's systems and the paper's Table 1 systems.
            systems: cardinal_paper::systems(),
            runtime,
        };
        // The whole command runs on a worker of the engine's pool.
        engine
            .install(|| run(&engine, &cli.command))
            .map_err(anyhow::Error::from)
            .and_then(|r| r)
    });
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
            errln!("error: {}{}", message(&e), remedy(&e));
            ExitCode::FAILURE
        }
        (Ok(()), Some(e)) => {
            errln!("error: writing standard output: {e}");
            ExitCode::FAILURE
        }
        (Ok(()), None) => ExitCode::SUCCESS,
    }
}

/// An error and its causes on one line, `: `-separated, leaving out a cause whose text the
/// line already holds (a library error that shows its I/O error's text would otherwise
/// repeat it: "No such file or directory (os error 2): No such file or directory …").
fn message(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// What to type about `e` on this command line, where the library's error leaves the remedy
/// to the front end (a flag of this program's).
fn remedy(e: &anyhow::Error) -> String {
    let Some(e) = e.chain().find_map(|c| c.downcast_ref::<cardinal::Error>()) else {
        return String::new();
    };
    match e {
        cardinal::Error::RunExists { resumable, .. } => format!(
            "; pass --force to replace it (the old run stays until the new one is finished){}",
            if *resumable {
                ", or --resume to continue it"
            } else {
                ""
            }
        ),
        cardinal::Error::NotResumable {
            run,
            finished: true,
        } => format!(
            ". `cardinal eval --model {dir}` scores it; `cardinal train --force --out {dir}` \
             with the options it was started with trains it again",
            dir = run.display()
        ),
        cardinal::Error::NotResumable {
            finished: false, ..
        } => "; start it again with `cardinal train --force --out DIR` and the options it was \
              started with (the same options and seed give the same model)"
            .into(),
        cardinal::Error::Checkpoint { problem, .. }
            if matches!(
                **problem,
                cardinal::CheckpointProblem::RecordedDataUnreadable { .. }
            ) =>
        {
            "; give the folder that holds it now (`--data-dir`), or other rows to score \
              (`--data`, which refuses rows the model trained on)"
                .into()
        }
        _ => String::new(),
    }
}

/// The folder datasets are looked up in by name: `explicit` (a `--data-dir`), else the
/// environment's `CARDINAL_DATA`, which `main` read into the engine's runtime.
pub(crate) fn data_dir(engine: &Engine, explicit: Option<&Path>) -> Option<PathBuf> {
    explicit
        .or(engine.runtime.data_dir.as_deref())
        .map(Path::to_path_buf)
}

/// Dispatches a parsed command to its module: `train`, `eval` and `predict` to the
/// multi-target (Section 6) module when the data or the model is multi-target.
fn run(engine: &Engine, command: &Command) -> anyhow::Result<()> {
    match command {
        Command::Data { args, .. } => data_cmd::run(engine, args),
        Command::Train { args, .. } => match seg_model_cmd::trains_multi_target(engine, args)? {
            true => seg_model_cmd::train(engine, args),
            false => model_cmd::train(engine, args),
        },
        Command::Eval { args, .. } => {
            if let Some(p) = args.json.as_ref().filter(|p| p.as_os_str() != "-") {
                out_path::refuse_inside_model(p, "--json", &args.model)?;
            }
            match engine.is_multi_target_model(&args.model) {
                true => seg_model_cmd::eval(engine, args),
                false => eval_cmd::eval(engine, args),
            }
        }
        Command::Cv { args, .. } => cv_cmd::run(engine, args),
        Command::Info(a) => info_cmd::run(engine, a),
        Command::Predict { args, .. } => {
            if let Some(p) = args.out.as_ref().filter(|p| p.as_os_str() != "-") {
                out_path::refuse_inside_model(p, "--out", &args.model)?;
            }
            match engine.is_multi_target_model(&args.model) {
                true => seg_model_cmd::predict(engine, args),
                false => predict_cmd::predict(engine, args),
            }
        }
        Command::Report { args, .. } => report_cmd::run(engine, args),
        Command::Project { args, .. } => project_cmd::run(args),
        Command::Bench { args, .. } => bench_cmd::run(engine, args),
        Command::Reproduce { args, .. } => reproduce_cmd::run(engine, args),
        Command::Completions(a) => docs_cmd::completions::<Cli>(a),
        Command::Man(a) => docs_cmd::man::<Cli>(a),
    }
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::CommandFactory;

    /// An I/O error's text is shown once, not once per layer that shows it.
    #[test]
    fn an_error_line_repeats_no_cause() {
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        let lib = cardinal::Error::io("m/meta.json", io);
        let e = anyhow::Error::from(lib).context("loading m");
        let line = super::message(&e);
        assert_eq!(line.matches("not found").count(), 1, "{line}");
        assert!(line.starts_with("loading m: m/meta.json: "), "{line}");
    }

    /// Every flag and positional argument of every subcommand says what it is for.
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if ["help", "version"].contains(&id) {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} --{id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() && sub.get_name() != "help" {
                    missing.push(format!("{path} {} (no about)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "cardinal", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }

    /// `cv --help` promises nothing `cv` refuses: its data is binary-label data only.
    #[test]
    fn cv_does_not_promise_multi_target_data() {
        let cli = Cli::command();
        let cv = cli.find_subcommand("cv").unwrap();
        let help = cv
            .get_arguments()
            .find(|a| a.get_id() == "dataset")
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap();
        assert!(
            help.contains("does not cross-validate multi-target"),
            "{help}"
        );
        assert!(!help.contains("trains the paper's Section 6"), "{help}");
    }

    /// `--threads` (and, where something trains, `--wait`) is taken before the subcommand and
    /// after it, also after a subcommand's own subcommand.
    #[test]
    fn threads_are_taken_before_and_after_every_subcommand() {
        use clap::Parser;
        for args in [
            "cardinal --threads 2 reproduce table1",
            "cardinal reproduce table1 --threads 2 --wait passive",
            "cardinal reproduce --threads 2 suite",
            "cardinal data stats emotions --threads 1",
            "cardinal project --z 1 --threads 1",
            "cardinal eval --model m --threads 1",
        ] {
            let cli = Cli::try_parse_from(args.split(' '));
            let cli = cli.unwrap_or_else(|e| panic!("{args}: {e}"));
            assert!(cli.command.runtime().0.or(cli.threads).is_some(), "{args}");
        }
        assert!(Cli::try_parse_from("cardinal eval --model m --wait passive".split(' ')).is_err());
    }

    /// The training-only flag is offered where something trains, and only there.
    #[test]
    fn wait_is_offered_only_where_training_runs() {
        let cli = Cli::command();
        let has = |name: &str, flag: &str| {
            cli.find_subcommand(name)
                .unwrap()
                .get_arguments()
                .any(|a| a.get_id() == flag)
        };
        for sub in ["train", "cv", "reproduce", "bench"] {
            assert!(has(sub, "wait") && has(sub, "threads"), "{sub}");
        }
        for sub in ["eval", "predict", "report", "data", "project"] {
            assert!(!has(sub, "wait") && has(sub, "threads"), "{sub}");
        }
        for sub in ["info", "completions", "man"] {
            assert!(!has(sub, "wait") && !has(sub, "threads"), "{sub}");
        }
        Cli::command().debug_assert();
    }
}
