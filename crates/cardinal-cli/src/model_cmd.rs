//! `cardinal train` (and the report printing `eval` shares: `crate::eval_cmd`).

use std::path::PathBuf;

use anyhow::Context;
use cardinal::config::Config;
use cardinal::config::{ConfigRequest, SavedConfigs};
use cardinal::engine::DataSpec;
use cardinal::engine::OutputKind;
use cardinal::engine::{Checkpoints, Engine};
use cardinal::eval::EvalReport;

/// Prints what the model is ([`crate::info_cmd::model_identity`]).
pub(crate) fn print_identity(
    engine: &Engine,
    model: &cardinal::engine::Fitted,
) -> anyhow::Result<()> {
    for line in crate::info_cmd::model_identity(engine, model)? {
        outln!("{line}");
    }
    Ok(())
}

/// Where the data comes from (saved as `run.json` in the model directory for `--resume`).
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub(crate) struct DataSource {
    /// Dataset name (data directory, then vendored) or path (MULAN folder, ARFF with XML beside,
    /// LIBSVM or XMC file). Multi-target data (a folder with train.arff and test.arff, or one
    /// ARFF file, whose MEKA header makes nominal targets of classes other than 0/1) trains the
    /// paper's Section 6 model, configured by a `{"multi_target": {...}}` --config file.
    #[arg(long, default_value = "bibtex", conflicts_with = "train")]
    pub dataset: String,
    /// Training ARFF file (with --test; with --labels unless the files name their labels: a
    /// MEKA `-C n` header, or a MULAN XML beside each).
    #[arg(long, requires = "test", value_name = "FILE")]
    pub train: Option<PathBuf>,
    /// Test ARFF file.
    #[arg(long, requires = "train", value_name = "FILE")]
    pub test: Option<PathBuf>,
    /// MULAN XML label file naming the label attributes.
    #[arg(long, requires = "train", value_name = "FILE")]
    pub labels: Option<PathBuf>,
    /// Folder holding datasets by name (default: env CARDINAL_DATA).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// For a single-file dataset: fraction used for training in a seeded split.
    #[arg(long, default_value_t = 0.8, value_name = "FRACTION")]
    pub train_fraction: f64,
    /// For a CSV --dataset file (a header row, one column per feature or label): which
    /// columns are labels, holding 0 or 1: their names (`a,b,c`), `last=N` or `prefix=P`.
    /// Not needed when a MULAN XML label file with the CSV file's stem is beside it.
    #[arg(long, value_name = "SPEC", conflicts_with = "train", value_parser = parse_label_columns)]
    pub label_columns: Option<String>,
}

/// Checks a `--label-columns` value (kept as written: it is recorded in `run.json`).
fn parse_label_columns(s: &str) -> Result<String, String> {
    s.parse::<cardinal::data::csv::LabelColumns>()?;
    Ok(s.to_string())
}

impl DataSource {
    /// The library's description of this data source.
    pub(crate) fn spec(&self) -> DataSpec {
        DataSpec {
            dataset: self.dataset.clone(),
            train: self.train.clone(),
            test: self.test.clone(),
            labels: self.labels.clone(),
            data_dir: self.data_dir.clone(),
            train_fraction: self.train_fraction,
            label_columns: self.label_columns.clone(),
        }
    }
}

/// Which configuration to train (shared by `train` and `cv`).
#[derive(Debug, clap::Args)]
pub(crate) struct ConfigArgs {
    /// JSON configuration (fields left out keep the preset's values).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Preset to start from: `predict` (the default: the count is learnt from the labels, and
    /// weight decay is scaled by the label count), `paper` (the authors' released
    /// configuration) or `paper-printed` (`paper` with the printed paper where the released
    /// code departs from it: docs/departures.md). Without it, a configuration file that names its preset (as every saved
    /// `config.json` does) is read over that preset.
    #[arg(long)]
    pub preset: Option<String>,
    /// Seed of the initialisation and batch order (overrides the configuration's).
    #[arg(long, value_name = "SEED")]
    pub seed: Option<u64>,
    /// The system to train (overrides the configuration's `system`): `pnc` (Predict and
    /// Constrain only: on small files the default's search then chooses among its Predict and
    /// Constrain candidates alone, never a forest), `forest` or `forest-blend` (the search's
    /// forests, trained directly; not Predict and Constrain), `mlp` (the tuned MLP baseline),
    /// `br-logistic`, or a Table 1 system. Without it, the default's search may choose a
    /// forest; the model records the system it is.
    #[arg(long)]
    pub system: Option<String>,
    /// Turn the default's search on even with a configuration file or another preset: on a
    /// training file of at most 2000 rows, train whichever of the configuration, `paper`, a
    /// wider `paper` (both projected onto their own count), a forest and the forest blended
    /// with the configuration's count and unary networks (the forests are not Predict and
    /// Constrain; `--system pnc` leaves them out) cross-validates best on that file (5 folds;
    /// docs/RESULTS.md §4). The `predict` preset has it on unless a
    /// configuration file sets hyper-parameters.
    #[arg(long, conflicts_with = "no_search")]
    pub search: bool,
    /// Train the configuration as it is: no search among candidates on small training files.
    #[arg(long)]
    pub no_search: bool,
}

impl ConfigArgs {
    /// The configuration these options ask for, by the library's one rule
    /// ([`ConfigRequest`]).
    pub(crate) fn load(&self, names: &SavedConfigs) -> anyhow::Result<Config> {
        let text = match &self.config {
            Some(path) => Some(cardinal::config::read_config_file(path)?),
            None => None,
        };
        let request = ConfigRequest {
            preset: self.preset.as_deref(),
            file: text.as_deref(),
            system: self.system.as_deref(),
            search: match (self.search, self.no_search) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            seed: self.seed,
            saved: Some(names),
            ..ConfigRequest::default()
        };
        request.resolve().with_context(|| {
            self.config
                .as_ref()
                .map_or_else(String::new, |p| format!("in {}", p.display()))
        })
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct TrainArgs {
    #[command(flatten)]
    pub data: DataSource,
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// Model directory to write (weights, config, metrics.jsonl, eval.json, checkpoints/).
    #[arg(long, value_name = "DIR", required_unless_present = "resume")]
    pub out: Option<PathBuf>,
    /// Continue the interrupted run in DIR from its latest checkpoint (same data, same
    /// configuration); the result is bit-identical to an uninterrupted run. Flags that would
    /// change the run (data, configuration, preset, system, seed) are refused with it.
    #[arg(long, value_name = "DIR", conflicts_with_all = [
        "out", "config", "seed", "preset", "dataset", "train", "test", "labels", "data_dir",
        "train_fraction", "label_columns", "system", "search", "no_search",
    ])]
    pub resume: Option<PathBuf>,
    /// Replace the run in an existing --out directory (the new run is written beside it and
    /// swapped in whole when finished; a failed run leaves the old one as it was); without it
    /// an existing run is refused.
    #[arg(long, conflicts_with = "resume")]
    pub force: bool,
    /// Do not write resumable checkpoints (an interrupted run then starts over).
    #[arg(long, conflicts_with = "checkpoint_every")]
    pub no_checkpoints: bool,
    /// Write a resumable checkpoint after an epoch only when at least SECS seconds have passed
    /// since the last one (0: after every epoch). A checkpoint holds the latest state and the
    /// best weights so far.
    #[arg(long, value_name = "SECS", default_value_t = 30.0,
          value_parser = parse_seconds)]
    pub checkpoint_every: f64,
    /// No progress output (neither the bar nor the per-epoch lines); warnings still show.
    #[arg(long)]
    pub quiet: bool,
    /// Print the final evaluation as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A non-negative, finite number of seconds (at most a day).
fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}`: expected seconds between 0 and 86400")),
    }
}

impl TrainArgs {
    /// When to write resumable checkpoints.
    pub(crate) fn checkpoints(&self) -> Checkpoints {
        if self.no_checkpoints {
            Checkpoints::Never
        } else if self.checkpoint_every == 0.0 {
            Checkpoints::EveryEpoch
        } else {
            Checkpoints::AtMostEvery(std::time::Duration::from_secs_f64(self.checkpoint_every))
        }
    }
}

/// `cardinal train` of a binary multi-label model (`main` dispatches multi-target data to
/// the Section 6 model).
pub(crate) fn train(engine: &Engine, args: &TrainArgs) -> anyhow::Result<()> {
    let run = match &args.resume {
        Some(dir) => {
            let run = engine
                .resume_run(dir)
                .with_context(|| format!("resuming {}", dir.display()))?;
            crate::log::note(&format!(
                "resuming {} after {} epochs",
                dir.display(),
                run.epochs_run()
            ));
            run
        }
        None => {
            let cfg = args.cfg.load(engine.systems.saved_configs())?;
            let out = args
                .out
                .as_ref()
                .expect("clap requires --out without --resume");
            engine
                .start_run(out, &args.data.spec(), cfg, args.force)
                .with_context(|| {
                    format!("training on `{}` into {}", args.data.dataset, out.display())
                })?
        }
    };
    for note in &run.notes {
        crate::log::note(&format!("note: {note}"));
    }
    let cfg = run.config().clone();
    let (train, test) = (&run.data.train, &run.data.test);
    let name = train.name.clone();
    let searches = matches!(run.start, cardinal::system::Start::Fresh(_))
        && cfg.search.applies(train.n_rows());
    // Where the search runs, the configuration is where it starts: what trains is its choice.
    let what = match searches {
        true => format!(
            "configuration system {}, preset {} (a candidate of the search below; the model \
             is whichever it chooses)",
            cfg.system, cfg.preset
        ),
        false => format!("system {}, preset {}", cfg.system, cfg.preset),
    };
    crate::log::note(&format!(
        "{name}: {} train / {} test examples, {} features, {} labels; {what}, seed {}, {} threads",
        train.n_rows(),
        test.n_rows(),
        train.n_features(),
        train.n_labels(),
        cfg.seed,
        rayon::current_num_threads()
    ));
    if matches!(run.start, cardinal::system::Start::Fresh(_)) {
        crate::log::note(&cfg.search.plan(train.n_rows()));
    }
    let out = run.dir.clone();
    let checkpoints = args.checkpoints();
    let mut progress = crate::progress::TrainProgress::new(&cfg, args.quiet);
    if let cardinal::system::Start::Resume(state) = &run.start {
        progress.resume(&state.progress);
    }
    let outcome = engine.finish_run(run, checkpoints, &mut |ev| progress.on_event(ev))?;
    progress.finish();
    let secs: Vec<f64> = outcome.history.iter().map(|r| r.seconds).collect();
    let mean_epoch = secs.iter().sum::<f64>() / secs.len().max(1) as f64;
    let report = &outcome.report;
    if args.json {
        outln!("{}", serde_json::to_string(report)?);
    } else {
        for line in crate::info_cmd::model_identity(engine, &outcome.model)? {
            outln!("{line}");
        }
        print_report(&name, "test", report);
        if secs.is_empty() {
            // A forest (`model.forest`) is grown, not trained by epochs.
            outln!("training time: no gradient epochs (a forest)");
        } else {
            outln!(
                "training time: {mean_epoch:.3} s/epoch (mean of {} epochs)",
                secs.len()
            );
        }
        outln!(
            "model written to {}: system {} (preset {})",
            out.display(),
            outcome.model.config().system,
            outcome.model.config().preset
        );
    }
    Ok(())
}

pub(crate) fn print_report(name: &str, split: &str, r: &EvalReport) {
    let t = &r.at_threshold;
    let z = &r.at_top_round_z;
    // What applies to the model's outputs: a decided set has no `y_T` and no threshold, graded
    // scores without a count have no count or constraint (older reports: P&C's lines).
    let kind = r.outputs.unwrap_or(OutputKind::Constrained);
    outln!("{name} {split}: {} examples", t.n_examples);
    outln!(
        "  {:<26} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "binarisation",
        "example-F1",
        "(empty=1)",
        "macro-F1",
        "micro-F1",
        "Hamming",
        "labels/ex"
    );
    let row = |label: String, m: &cardinal::metrics::MetricReport| {
        outln!(
            "  {:<26} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.5} {:>10.2}",
            label,
            100.0 * m.example_f1,
            100.0 * m.example_f1_other_empty,
            100.0 * m.macro_f1,
            100.0 * m.micro_f1,
            m.hamming_loss,
            m.mean_pred_cardinality
        )
    };
    match kind {
        OutputKind::Constrained => {
            row(format!("y_T >= {}", r.threshold), t);
            row("top round(z) of y_T".into(), z);
        }
        OutputKind::Decided => row("the decided set".into(), t),
        OutputKind::Scores => {
            row(format!("y >= {}", r.threshold), t);
            row("top round(sum y) of y".into(), z);
        }
    }
    if let (Some(thr), Some(m)) = (r.dev_threshold, &r.at_dev_threshold) {
        let scores = if kind == OutputKind::Constrained {
            "y_T"
        } else {
            "y"
        };
        row(format!("{scores} >= {thr} (dev-tuned)"), m);
    }
    if let Some(m) = &r.at_gold_count {
        match kind {
            OutputKind::Constrained => row(format!("y_T >= {}, z = gold count", r.threshold), m),
            OutputKind::Decided => row("the decided set, gold size".into(), m),
            OutputKind::Scores => {}
        }
    }
    if !r.precision_at_k.is_empty() {
        let ps: Vec<String> = r
            .precision_at_k
            .iter()
            .map(|p| format!("P@{} {:.2}", p.k, 100.0 * p.value))
            .collect();
        outln!("  ranking scores: {}", ps.join("  "));
    }
    if let Some(k) = &r.ranking {
        let pct = |a: Option<f64>| a.map_or("n/a".into(), |a| format!("{:.2}", 100.0 * a));
        outln!(
            "  ranking: LRAP {:.2}  ranking loss {:.4}  coverage {:.2}  AUC micro {} / macro {} ({} labels)",
            100.0 * k.lrap,
            k.ranking_loss,
            k.coverage,
            pct(k.micro_auc),
            pct(k.macro_auc),
            k.auc_labels
        );
    }
    if kind.predicts_count() {
        let c = &r.cardinality;
        let what = if kind == OutputKind::Decided {
            "count (the set's size)"
        } else {
            "count"
        };
        outln!(
            "  {what}: mean z {:.3} vs gold {:.3}; MAE {:.3} (train-mean constant {:.3}); corr {}",
            c.mean_z,
            c.mean_gold,
            c.mae,
            c.baseline_mae,
            c.pearson
                .map(|p| format!("{p:.3}"))
                .unwrap_or_else(|| "n/a (constant)".into())
        );
    }
    if kind == OutputKind::Constrained {
        let k = &r.constraint;
        outln!(
            "  constraint: |sum y - z| <= 0.01 on {:.1}% of rows (mean gap {:.4}); y in [0,1] on {:.1}% (range {:.3}..{:.3})",
            100.0 * k.frac_sum_within_001,
            k.mean_abs_sum_gap,
            100.0 * k.frac_in_box,
            k.min_y,
            k.max_y
        );
    }
    outln!(
        "  empty sets: {} of {} rows predicted empty, {} gold empty, {} both (example-F1 scores \
         them 0; the (empty=1) column scores them 1)",
        t.n_empty_pred,
        t.n_examples,
        t.n_empty_gold,
        t.n_both_empty
    );
    outln!("EXAMPLE_F1 {:.2}", 100.0 * t.example_f1);
    outln!(
        "EXAMPLE_F1_EMPTY_ONE {:.2}",
        100.0 * t.example_f1_other_empty
    );
}
