//! `cardinal train | eval | predict`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use cardinal::checkpoint::{self, write_atomic};
use cardinal::data::{read_mulan, resolve_dataset, Dataset, TrainTest};
use cardinal::eval::{evaluate_outputs, predict as run_predict, EvalReport};
use cardinal::train::{run as run_train, Event, TrainState};
use cardinal::Config;
use indicatif::{ProgressBar, ProgressStyle};

/// Where the data comes from (saved as `run.json` in the model directory for `--resume`).
#[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
pub struct DataSource {
    /// Dataset name (data directory, then vendored) or path (MULAN folder, ARFF with XML beside,
    /// LIBSVM or XMC file).
    #[arg(long, default_value = "bibtex", conflicts_with = "train")]
    pub dataset: String,
    /// Training ARFF file (with --test and --labels).
    #[arg(long, requires_all = ["test", "labels"], value_name = "FILE")]
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
    #[arg(long, default_value_t = 0.8)]
    pub train_fraction: f64,
}

impl DataSource {
    pub fn load(&self) -> anyhow::Result<TrainTest> {
        if let (Some(tr), Some(te), Some(xml)) = (&self.train, &self.test, &self.labels) {
            let train = read_mulan(tr, xml).with_context(|| format!("reading {}", tr.display()))?;
            let test = read_mulan(te, xml).with_context(|| format!("reading {}", te.display()))?;
            return Ok(TrainTest { train, test });
        }
        let dir = crate::data_dir(&self.data_dir);
        let resolved = resolve_dataset(&self.dataset, dir.as_deref())
            .with_context(|| format!("loading dataset `{}`", self.dataset))?;
        Ok(resolved.into_train_test(self.train_fraction, 0)?)
    }
}

/// Which configuration to train (shared by `train` and `cv`).
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// JSON configuration (fields left out keep the preset's values).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Preset to start from: `predict` (the default: the count is learnt from the labels, and
    /// weight decay is scaled by the label count) or `paper` (the authors' released
    /// configuration). Without it, a configuration file that names its preset (as every saved
    /// `config.json` does) is read over that preset.
    #[arg(long)]
    pub preset: Option<String>,
    /// Seed of the initialisation and batch order (overrides the configuration's).
    #[arg(long)]
    pub seed: Option<u64>,
}

impl ConfigArgs {
    pub fn load(&self) -> anyhow::Result<Config> {
        config_from(self.preset.as_deref(), self.config.as_deref(), self.seed)
    }
}

#[derive(Debug, clap::Args)]
pub struct TrainArgs {
    #[command(flatten)]
    pub data: DataSource,
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// Model directory to write (weights, config, metrics.jsonl, eval.json, checkpoints/).
    #[arg(long, value_name = "DIR", required_unless_present = "resume")]
    pub out: Option<PathBuf>,
    /// Continue the interrupted run in DIR from its latest checkpoint (same data, same
    /// configuration); the result is bit-identical to an uninterrupted run.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "config", "seed"])]
    pub resume: Option<PathBuf>,
    /// Do not write a resumable checkpoint after every epoch.
    #[arg(long)]
    pub no_checkpoints: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Print the final evaluation as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The configuration file `config` read over a preset, `seed` set, validated. The preset is
/// `preset` when given; otherwise the one the file names (a saved `config.json` names its own,
/// so that it trains again as it did even after new fields were added to the presets; the
/// `table1-*` rows and the cardinality analysis derive from `paper`); otherwise `predict`.
fn config_from(
    preset: Option<&str>,
    config: Option<&Path>,
    seed: Option<u64>,
) -> anyhow::Result<Config> {
    let text = match config {
        Some(path) => Some(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ),
        None => None,
    };
    let named = text
        .as_deref()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .and_then(|v| v.get("preset").and_then(|p| p.as_str()).map(str::to_owned));
    let base = match (preset, named.as_deref()) {
        (Some(p), _) => Config::preset(p)?,
        (None, Some(n)) if Config::PRESETS.contains(&n) => Config::preset(n)?,
        (None, Some(n)) if n.starts_with("table1-") || n == "cardinality-only" => Config::paper(),
        _ => Config::predict(),
    };
    let mut cfg = match (config, text) {
        (Some(path), Some(text)) => Config::from_json_over(&base, &text)
            .with_context(|| format!("in {}", path.display()))?,
        _ => base,
    };
    if let Some(seed) = seed {
        cfg.seed = seed;
    }
    cfg.validate()?;
    Ok(cfg)
}

pub fn train(args: &TrainArgs) -> anyhow::Result<()> {
    let (state, data, out) = match &args.resume {
        Some(dir) => {
            let run_path = dir.join("run.json");
            let source: DataSource = serde_json::from_slice(
                &std::fs::read(&run_path)
                    .with_context(|| format!("reading {}", run_path.display()))?,
            )
            .with_context(|| format!("in {}", run_path.display()))?;
            let data = source.load()?;
            let (state, meta) = checkpoint::load_state(dir)?;
            cardinal::pipeline::check_dims(
                &state.model,
                data.train.n_features(),
                data.train.n_labels(),
                "the training data",
            )?;
            check_labels(&meta, &data.train, dir)?;
            eprintln!(
                "resuming {} after {} epochs",
                dir.display(),
                state.epochs_run()
            );
            (state, data, dir.clone())
        }
        None => {
            let cfg = args.cfg.load()?;
            let data = args.data.load()?;
            let out = args
                .out
                .clone()
                .expect("clap requires --out without --resume");
            std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
            write_atomic(
                &out.join("run.json"),
                serde_json::to_string_pretty(&args.data)?.as_bytes(),
            )?;
            // Pre-trains the unaries first when the configuration asks for it (E2E-SPEN).
            (
                cardinal::baselines::initial_state(&data.train, &cfg)?,
                data,
                out,
            )
        }
    };
    let cfg = state.model.config.clone();
    let name = data.train.name.clone();
    eprintln!(
        "{name}: {} train / {} test examples, {} features, {} labels; preset {}, seed {}, {} threads",
        data.train.n_rows(),
        data.test.n_rows(),
        data.train.n_features(),
        data.train.n_labels(),
        cfg.preset,
        cfg.seed,
        rayon::current_num_threads()
    );
    let metrics_path = out.join("metrics.jsonl");
    let mut metrics_lines: String = state
        .progress
        .history
        .iter()
        .map(|r| serde_json::to_string(r).expect("serialisable") + "\n")
        .collect();
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(0)
    };
    bar.set_style(
        ProgressStyle::with_template("phase {prefix} {bar:30} {pos}/{len} batches  {msg}")
            .expect("valid template"),
    );
    let mut io_error = None;
    let mut on_event = |ev: Event| match ev {
        Event::Start {
            phase,
            epochs,
            batches_per_epoch,
        } => {
            bar.set_prefix(phase.to_string());
            bar.set_length((epochs * batches_per_epoch) as u64);
            bar.set_position(0);
        }
        Event::Batch { epoch, loss, .. } => {
            bar.inc(1);
            bar.set_message(format!("epoch {epoch} loss {loss:.4}"));
        }
        Event::Epoch(rec) => {
            let dev = rec
                .dev_example_f1
                .map(|f| format!(" dev F1 {f:.2}"))
                .unwrap_or_default();
            bar.println(format!(
                "phase {} epoch {:>3}: loss {:.4}{dev}  ({:.2} s/epoch)",
                rec.phase, rec.epoch, rec.loss, rec.seconds
            ));
            metrics_lines.push_str(&serde_json::to_string(rec).expect("serialisable"));
            metrics_lines.push('\n');
            if let Err(e) = write_atomic(&metrics_path, metrics_lines.as_bytes()) {
                io_error.get_or_insert(e);
            }
        }
    };
    let labels = data.train.label_names.clone();
    let mut after_epoch = |st: &TrainState| -> cardinal::Result<()> {
        if !args.no_checkpoints {
            checkpoint::save_state(&out, st, &name, &labels)?;
        }
        Ok(())
    };
    let trained = if cfg.system == cardinal::config::System::Pnc {
        run_train(&data.train, state, &mut after_epoch, &mut on_event)?
    } else {
        // The baselines train in one go (no per-epoch checkpoints, no --resume).
        cardinal::baselines::train_system(&data.train, &cfg, &mut on_event)?
    };
    bar.finish_and_clear();
    if let Some(e) = io_error {
        return Err(e.into());
    }
    let secs: Vec<f64> = trained.history.iter().map(|r| r.seconds).collect();
    let mean_epoch = secs.iter().sum::<f64>() / secs.len().max(1) as f64;
    checkpoint::save(&trained.model, &out, &name, &data.train.label_names)?;
    let (report, _) = evaluate(&trained.model, &data.test)?;
    write_atomic(
        &out.join("eval.json"),
        serde_json::to_string_pretty(&report)?.as_bytes(),
    )?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_report(&name, "test", &report);
        println!(
            "training time: {mean_epoch:.3} s/epoch (mean of {} epochs)",
            secs.len()
        );
        println!("model written to {}", out.display());
    }
    Ok(())
}

/// The report on `data`, and the outputs it was computed from.
fn evaluate(
    model: &cardinal::pipeline::Model<f32>,
    data: &Dataset,
) -> anyhow::Result<(EvalReport, cardinal::pipeline::Outputs<f32>)> {
    cardinal::pipeline::check_dims(
        model,
        data.n_features(),
        data.n_labels(),
        "the evaluation data",
    )?;
    let out = run_predict(model, &data.features, 256)?;
    let mut report = evaluate_outputs(model, &out, &data.labels);
    // What a perfect count predictor would give (a second inference pass).
    cardinal::eval::add_gold_count(model, &mut report, &data.features, &data.labels, 256)?;
    Ok((report, out))
}

pub fn print_report(name: &str, split: &str, r: &EvalReport) {
    let t = &r.at_threshold;
    let z = &r.at_top_round_z;
    println!("{name} {split}: {} examples", t.n_examples);
    println!(
        "  {:<26} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "binarisation", "example-F1", "macro-F1", "micro-F1", "Hamming", "labels/ex"
    );
    let row = |label: String, m: &cardinal::metrics::MetricReport| {
        println!(
            "  {:<26} {:>10.2} {:>10.2} {:>10.2} {:>10.5} {:>10.2}",
            label,
            100.0 * m.example_f1,
            100.0 * m.macro_f1,
            100.0 * m.micro_f1,
            m.hamming_loss,
            m.mean_pred_cardinality
        )
    };
    row(format!("y_T >= {}", r.threshold), t);
    row("top round(z) of y_T".into(), z);
    if let (Some(thr), Some(m)) = (r.dev_threshold, &r.at_dev_threshold) {
        row(format!("y_T >= {thr} (dev-tuned)"), m);
    }
    if let Some(m) = &r.at_gold_count {
        row(format!("y_T >= {}, z = gold count", r.threshold), m);
    }
    if !r.precision_at_k.is_empty() {
        let ps: Vec<String> = r
            .precision_at_k
            .iter()
            .map(|p| format!("P@{} {:.2}", p.k, 100.0 * p.value))
            .collect();
        println!("  ranking scores: {}", ps.join("  "));
    }
    let c = &r.cardinality;
    println!(
        "  count: mean z {:.3} vs gold {:.3}; MAE {:.3} (train-mean constant {:.3}); corr {}",
        c.mean_z,
        c.mean_gold,
        c.mae,
        c.baseline_mae,
        c.pearson
            .map(|p| format!("{p:.3}"))
            .unwrap_or_else(|| "n/a (constant)".into())
    );
    let k = &r.constraint;
    println!(
        "  constraint: |sum y - z| <= 0.01 on {:.1}% of rows (mean gap {:.4}); y in [0,1] on {:.1}% (range {:.3}..{:.3})",
        100.0 * k.frac_sum_within_001,
        k.mean_abs_sum_gap,
        100.0 * k.frac_in_box,
        k.min_y,
        k.max_y
    );
    println!("EXAMPLE_F1 {:.2}", 100.0 * t.example_f1);
}

#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// Model directory written by `cardinal train`.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Which split of the model's dataset to evaluate on; `dev` is the part of train that the
    /// model's configuration held out (`train.dev_fraction`, `train.split_seed`). With
    /// `train.full_epochs` > 0 (both presets: 2) the saved model has also trained on those rows
    /// afterwards, so its dev score is optimistic.
    #[arg(long, default_value = "test", value_parser = ["train", "dev", "test"])]
    pub split: String,
    /// Evaluate on this data instead (a dataset name or path, as for `train --dataset`).
    #[arg(long, value_name = "NAME_OR_PATH")]
    pub data: Option<String>,
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Write the full report as JSON to this file ('-' for stdout).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also report the threshold of the grid 0.05..0.95 that is best on the model's dev split
    /// (SPEN's protocol, chosen on dev, never on the evaluated data).
    #[arg(long)]
    pub dev_threshold: bool,
}

fn load_split(spec: &str, data_dir: &Option<PathBuf>, split: &str) -> anyhow::Result<Dataset> {
    let dir = crate::data_dir(data_dir);
    let tt = resolve_dataset(spec, dir.as_deref())?.into_train_test(0.8, 0)?;
    Ok(if split == "train" { tt.train } else { tt.test })
}

fn check_labels(meta: &checkpoint::Meta, data: &Dataset, model_dir: &Path) -> anyhow::Result<()> {
    if !meta.label_names.is_empty()
        && !data.label_names.is_empty()
        && meta.label_names != data.label_names
    {
        bail!(
            "the data's labels differ from those of the model in {} (trained on `{}`)",
            model_dir.display(),
            meta.dataset
        );
    }
    Ok(())
}

pub fn eval(args: &EvalArgs) -> anyhow::Result<()> {
    let (model, meta) = checkpoint::load(&args.model)?;
    let spec = args.data.clone().unwrap_or_else(|| meta.dataset.clone());
    let dev_of_train = || -> anyhow::Result<Dataset> {
        let train = load_split(&spec, &args.data_dir, "train")?;
        let tc = &model.config.train;
        let (_, dev_rows) = tc.dev_split(train.n_rows());
        if dev_rows.is_empty() {
            bail!("the model's configuration holds out no dev data (train.dev_fraction = 0)");
        }
        if tc.full_epochs > 0 {
            eprintln!(
                "note: the model's last {} epochs trained on all of train, dev rows included: \
                 dev metrics are optimistic",
                tc.full_epochs
            );
        }
        Ok(train.select_rows(&dev_rows))
    };
    let data = if args.split == "dev" {
        dev_of_train()?
    } else {
        load_split(&spec, &args.data_dir, &args.split)?
    };
    check_labels(&meta, &data, &args.model)?;
    let (mut report, out) = evaluate(&model, &data)?;
    if args.dev_threshold {
        let dev = dev_of_train()?;
        let dev_out = run_predict(&model, &dev.features, 256)?;
        cardinal::eval::add_dev_threshold(
            &model,
            &mut report,
            &dev_out,
            &dev.labels,
            &out,
            &data.labels,
        )?;
    }
    match &args.json {
        Some(p) if p.as_os_str() == "-" => println!("{}", serde_json::to_string_pretty(&report)?),
        Some(p) => {
            write_atomic(p, serde_json::to_string_pretty(&report)?.as_bytes())?;
            print_report(&data.name, &args.split, &report);
        }
        None => print_report(&data.name, &args.split, &report),
    }
    Ok(())
}

#[derive(Debug, clap::Args)]
pub struct PredictArgs {
    /// Model directory written by `cardinal train`.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Data to predict (dataset name or path); its test split for a dataset with a split.
    #[arg(long, value_name = "NAME_OR_PATH")]
    pub data: String,
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Include every label's score y_T (else only the predicted labels').
    #[arg(long)]
    pub all_scores: bool,
    /// Also print every label's ranking score under "ranking": the last ascent step's point
    /// before its projection, which orders the labels as y_T does without the ties where y_T
    /// meets 0 or 1 (for precision@k and other ranking metrics); y_T itself for the baseline
    /// systems, which keep no such point.
    #[arg(long)]
    pub ranking_scores: bool,
}

pub fn predict(args: &PredictArgs) -> anyhow::Result<()> {
    let (model, meta) = checkpoint::load(&args.model)?;
    let data = load_split(&args.data, &args.data_dir, "test")?;
    cardinal::pipeline::check_dims(&model, data.n_features(), data.n_labels(), "the data")?;
    check_labels(&meta, &data, &args.model)?;
    let out = run_predict(&model, &data.features, 256)?;
    let l = model.n_labels();
    let thr = model.config.threshold as f32;
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let ranking = out.ranking_scores();
    for (r, row) in out.y.chunks_exact(l).enumerate() {
        // Label names where the data has them, else the label index.
        let name = |i: usize| {
            meta.label_names
                .get(i)
                .cloned()
                .unwrap_or_else(|| i.to_string())
        };
        let labels: Vec<String> = (0..l).filter(|&i| row[i] >= thr).map(name).collect();
        let scores: serde_json::Map<String, serde_json::Value> = (0..l)
            .filter(|&i| args.all_scores || row[i] >= thr)
            .map(|i| (name(i), serde_json::json!(row[i])))
            .collect();
        let mut line =
            serde_json::json!({"row": r, "z": out.z[r], "labels": labels, "scores": scores});
        if args.ranking_scores {
            let rank: serde_json::Map<String, serde_json::Value> = ranking[r * l..(r + 1) * l]
                .iter()
                .enumerate()
                .map(|(i, &v)| (name(i), serde_json::json!(v)))
                .collect();
            line["ranking"] = serde_json::Value::Object(rank);
        }
        writeln!(w, "{line}")?;
    }
    w.flush()?;
    Ok(())
}
