//! `cardinal eval`: a model's metrics on its run's held-out rows or on other data, never on
//! rows it trained on unknowingly.

use std::path::PathBuf;

use anyhow::{bail, Context};
use cardinal::config::Config;
use cardinal::data::{Dataset, Labels, TrainTest};
use cardinal::engine::Meta;
use cardinal::engine::{check_labels, DataSpec, Engine, RunRecord};

use crate::model_cmd::{print_identity, print_report};

#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {
    /// Model directory written by `cardinal train`.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Which split of the model's dataset to evaluate on; `dev` is the part of train that the
    /// model's configuration held out (`train.dev_fraction`, `train.split_seed`). With
    /// `train.full_epochs` > 0 (both presets: 2) the saved model has also trained on those rows
    /// afterwards, so its dev score is optimistic.
    #[arg(long, default_value = "test", value_parser = ["train", "dev", "test"])]
    pub split: String,
    /// Evaluate on this data instead: every row of a single file (no split), the test file
    /// of a dataset that ships with a split; labels are read by the model's label names and
    /// features matched to the model's by name.
    #[arg(long, value_name = "NAME_OR_PATH", conflicts_with = "split")]
    pub data: Option<String>,
    /// Folder holding datasets by name, for --data and for the data the run recorded (default:
    /// the folder the run recorded, else env CARDINAL_DATA): where the data is when it has
    /// moved since the run, or the run came from another machine.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Score `--data` even where some of its rows are rows the model trained on (refused
    /// otherwise: their scores overstate the model).
    #[arg(long, requires = "data")]
    pub include_training_rows: bool,
    /// Write the full report as JSON to this file ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also report the threshold of the grid 0.05..0.95 that is best on the model's dev split
    /// (SPEN's protocol, chosen on dev, never on the evaluated data).
    #[arg(long)]
    pub dev_threshold: bool,
}

/// A dataset named or found at `spec`, with single files split as `train` splits them by
/// default.
fn load_named(spec: &str, dir: Option<PathBuf>) -> anyhow::Result<TrainTest> {
    Ok(DataSpec::named_in(spec, dir.as_deref()).load()?)
}

/// The model's own data: what its run directory recorded (`run.json`), split exactly as its
/// training split it; else (model directories without `run.json`) the dataset `meta.json`
/// names, when that is a plain name (a model directory is untrusted: a path it names is not
/// followed).
fn own_data(
    engine: &Engine,
    args: &EvalArgs,
    meta: &Meta,
    record: Option<&RunRecord>,
) -> anyhow::Result<TrainTest> {
    if let Some(record) = record {
        return Ok(engine.recorded_data_in(record, args.data_dir.as_deref())?);
    }
    let name = &meta.dataset;
    let plain = !name.is_empty()
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && !std::path::Path::new(name).is_absolute();
    if !plain {
        bail!(
            "the model in {} records no data source it may follow; pass --data",
            args.model.display()
        );
    }
    load_named(name, crate::data_dir(engine, args.data_dir.as_deref()))
}

/// The dev rows of the model's training data (its configuration's split).
fn dev_of(train: &Dataset, cfg: &Config) -> anyhow::Result<Dataset> {
    let tc = &cfg.train;
    let Some(dev) = cardinal::engine::dev_split(train, cfg) else {
        bail!("the model's configuration holds out no dev data (train.dev_fraction = 0)");
    };
    if cfg.model.forest.is_some() {
        crate::log::note(
            "note: the model's forest was grown on all of train, dev rows included: dev metrics \
             are optimistic",
        );
    } else if tc.full_epochs > 0 {
        crate::log::note(&format!(
            "note: the model's last {} epochs trained on all of train, dev rows included: \
             dev metrics are optimistic",
            tc.full_epochs
        ));
    }
    Ok(dev)
}

/// Refuses `data` (read from `spec`) when some of its rows are rows the model in
/// `args.model` trained on, as its run recorded them, and not also rows of its test split
/// (published splits share a few identical rows: Bibtex's test file holds 9 of its training
/// rows, and its own test split is what `eval` scores); says so where that cannot be checked.
fn refuse_training_rows(
    engine: &Engine,
    args: &EvalArgs,
    record: Option<&RunRecord>,
    spec: &str,
    data: &Dataset,
) -> anyhow::Result<()> {
    let (trained, tested) =
        match record.map(|r| engine.recorded_data_in(r, args.data_dir.as_deref())) {
            Some(Ok(tt)) => (tt.train, tt.test),
            None => {
                crate::log::note(&format!(
                    "note: {} records no training data (not a run folder), so whether `{spec}` \
                 holds rows it trained on cannot be checked",
                    args.model.display()
                ));
                return Ok(());
            }
            Some(Err(e)) => {
                crate::log::note(&format!(
                    "note: whether `{spec}` holds rows the model trained on cannot be checked: {e}"
                ));
                return Ok(());
            }
        };
    use cardinal::data::overlap::contained;
    let in_test = contained(data, &tested);
    let shared = contained(data, &trained)
        .into_iter()
        .zip(in_test)
        .filter(|&(train, test)| train && !test)
        .count();
    if shared > 0 {
        bail!(
            "{shared} of the {} rows of `{spec}` are rows the model trained on (of its {} \
             training rows), not rows of its test split: their scores would overstate it. \
             `cardinal eval --model {}` scores the test rows its run held out; \
             --include-training-rows scores these anyway",
            data.n_rows(),
            trained.n_rows(),
            args.model.display()
        );
    }
    Ok(())
}

/// `cardinal eval` of a binary multi-label model (`main` dispatches a multi-target one, and
/// refuses a `--json` path inside the model folder, first).
pub(crate) fn eval(engine: &Engine, args: &EvalArgs) -> anyhow::Result<()> {
    // The model and its run's record of its data, from one version of the folder.
    let (model, meta, record) = engine.load_run(&args.model)?;
    let (data, split) = match &args.data {
        // Every row of the given data, labels read by the model's names, features aligned.
        Some(spec) => {
            let inputs = engine.read_inputs(&meta, spec, args.data_dir.as_deref(), Labels::Read)?;
            for note in &inputs.notes {
                crate::log::note(&format!("note: {note}"));
            }
            let data = Dataset {
                name: inputs.name,
                features: inputs.features,
                labels: inputs.labels.context("no labels to evaluate against")?,
                feature_names: meta.feature_names.clone(),
                label_names: inputs.label_names,
            };
            if !args.include_training_rows {
                refuse_training_rows(engine, args, record.as_ref(), spec, &data)?;
            }
            (data, "all rows")
        }
        None => {
            let tt = own_data(engine, args, &meta, record.as_ref())?;
            match args.split.as_str() {
                "dev" => (dev_of(&tt.train, model.config())?, "dev"),
                "train" => (tt.train, "train"),
                _ => (tt.test, "test"),
            }
        }
    };
    if data.n_rows() == 0 {
        bail!("`{}` ({split}) has no rows: nothing to evaluate", data.name);
    }
    check_labels(&meta, &data, &args.model)?;
    let (mut report, out) = engine.evaluate(&model, &data)?;
    if args.dev_threshold {
        let dev = dev_of(
            &own_data(engine, args, &meta, record.as_ref())?.train,
            model.config(),
        )?;
        engine.add_dev_threshold(&model, &mut report, &dev, &out, &data.labels)?;
    }
    match &args.json {
        Some(p) if p.as_os_str() == "-" => outln!("{}", serde_json::to_string_pretty(&report)?),
        Some(p) => {
            cardinal::engine::write_output(p, serde_json::to_string_pretty(&report)?.as_bytes())?;
            print_identity(engine, &model)?;
            print_report(&data.name, split, &report);
        }
        None => {
            print_identity(engine, &model)?;
            print_report(&data.name, split, &report);
        }
    }
    Ok(())
}
