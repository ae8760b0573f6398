//! `cardinal bench`: training-epoch and inference timings with the `paper` configuration (or
//! another preset), and the epoch's time per stage, printed as one JSON line (field names are
//! relied on by scripts: keep them).

use std::time::Instant;

use anyhow::Context;
use cardinal::config::ConfigRequest;
use cardinal::data::synthetic::SyntheticShape;
use cardinal::data::{Dataset, TrainTest};
use cardinal::engine::EpochBench;

/// Fraction of Bibtex's 1836 features present in a row on average (68.4 non-zeros).
const BIBTEX_DENSITY: f64 = 0.0372;

#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Dataset name or path (as for `train --dataset`).
    #[arg(long, default_value = "bibtex")]
    pub dataset: String,
    /// Folder holding datasets by name (default: env CARDINAL_DATA).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<std::path::PathBuf>,
    /// Timed training epochs (after one warm-up epoch); the median is reported.
    #[arg(long, default_value_t = 3, value_parser = sized(1, 1000))]
    pub train_reps: usize,
    /// Timed inference passes over the test set (after one warm-up); the median is reported.
    #[arg(long, default_value_t = 5, value_parser = sized(1, 1000))]
    pub infer_reps: usize,
    /// Inference batch size.
    #[arg(long, default_value_t = 256, value_parser = sized(1, 1 << 20))]
    pub infer_batch: usize,
    /// Preset timed (`--config` is read over it).
    #[arg(long, default_value = "paper", value_name = "NAME")]
    pub preset: String,
    /// JSON configuration read over `--preset`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// Time on synthetic data with this many labels instead of `--dataset` (Bibtex's feature
    /// density, 2.5 labels per row; see `--synthetic-rows`, `--synthetic-features`).
    #[arg(long, value_name = "L", value_parser = sized(1, 1 << 20))]
    pub synthetic_labels: Option<usize>,
    /// Training rows of the synthetic data (test rows: half as many).
    #[arg(long, default_value_t = 2000, value_parser = sized(1, 10_000_000))]
    pub synthetic_rows: usize,
    /// Features of the synthetic data.
    #[arg(long, default_value_t = 2000, value_parser = sized(1, 10_000_000))]
    pub synthetic_features: usize,
    /// Unrolled steps `T` (overrides the configuration's).
    #[arg(long)]
    pub steps: Option<usize>,
}

/// A size flag's parser: `min..=max`, refused by clap (with the range) before anything is
/// allocated.
fn sized(min: u64, max: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(min..=max)
}

/// Stored entries of the synthetic data above which `bench` refuses (about 16 GiB of features).
const MAX_SYNTHETIC_ENTRIES: f64 = 2e9;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    }
}

/// Peak resident memory of this process in MiB (Linux; 0 elsewhere).
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// The data to time: the synthetic dataset asked for (refused when it would be too large), or
/// the dataset named.
fn bench_data(engine: &cardinal::engine::Engine, args: &BenchArgs) -> anyhow::Result<TrainTest> {
    if args.synthetic_labels.is_some() {
        let entries =
            1.5 * args.synthetic_rows as f64 * args.synthetic_features as f64 * BIBTEX_DENSITY;
        if entries > MAX_SYNTHETIC_ENTRIES {
            anyhow::bail!(
                "--synthetic-rows {} × --synthetic-features {} would store about {entries:.0} \
                 feature values; at most {MAX_SYNTHETIC_ENTRIES:.0} are allowed",
                args.synthetic_rows,
                args.synthetic_features
            );
        }
    }
    Ok(match args.synthetic_labels {
        Some(labels) => cardinal::data::synthetic::synthetic(&SyntheticShape {
            train_rows: args.synthetic_rows,
            test_rows: args.synthetic_rows / 2,
            features: args.synthetic_features,
            labels,
            density: BIBTEX_DENSITY,
            seed: 0,
        }),
        None => {
            let dir = crate::data_dir(engine, args.data_dir.as_deref());
            cardinal::engine::DataSpec::named_in(&args.dataset, dir.as_deref())
                .load()
                .with_context(|| format!("loading dataset `{}`", args.dataset))?
        }
    })
}

/// The seconds of `reps` (at least 1) training epochs after an untimed one, and the median
/// seconds of each stage over them (the parts of a stage are thread-seconds).
fn time_epochs(
    bench: &mut EpochBench,
    train: &Dataset,
    reps: usize,
) -> anyhow::Result<(Vec<f64>, serde_json::Map<String, serde_json::Value>)> {
    let mut epochs = Vec::new();
    // Per stage, its name and its seconds in every timed epoch.
    let mut stages: Vec<(&str, Vec<f64>)> = bench
        .take_stage_seconds()
        .into_iter()
        .map(|(name, _)| (name, Vec::new()))
        .collect();
    for rep in 0..=reps.max(1) {
        let t = Instant::now();
        bench.epoch(train)?;
        let elapsed = t.elapsed().as_secs_f64();
        // Taken after every epoch, the warm-up's too, so each holds one epoch's stages.
        let per_stage = bench.take_stage_seconds();
        if rep > 0 {
            epochs.push(elapsed);
            for ((_, s), (_, seconds)) in stages.iter_mut().zip(per_stage) {
                s.push(seconds);
            }
        }
    }
    let stages_s = stages
        .into_iter()
        .map(|(name, s)| (name.to_string(), median(s).into()))
        .collect();
    Ok((epochs, stages_s))
}

pub(crate) fn run(engine: &cardinal::engine::Engine, args: &BenchArgs) -> anyhow::Result<()> {
    let data = bench_data(engine, args)?;
    let file = match &args.config {
        Some(p) => {
            Some(std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?)
        }
        None => None,
    };
    // `--steps`, as data read over the file: the library's one configuration path.
    let steps = args
        .steps
        .map(|t| serde_json::json!({ "inference": { "steps": t } }).to_string());
    let cfg = ConfigRequest {
        preset: Some(&args.preset),
        file: file.as_deref(),
        overrides: steps.as_deref(),
        saved: Some(engine.systems.saved_configs()),
        ..ConfigRequest::default()
    }
    .resolve()?;
    let mut bench = engine.epoch_bench(&data.train, &cfg)?;
    let (epochs, stages_s) = time_epochs(&mut bench, &data.train, args.train_reps)?;
    let mut infers = Vec::new();
    for rep in 0..=args.infer_reps.max(1) {
        let t = Instant::now();
        let out = bench.predict(&data.test.features, args.infer_batch)?;
        std::hint::black_box(&out);
        if rep > 0 {
            infers.push(t.elapsed().as_secs_f64());
        }
    }
    let line = serde_json::json!({
        "dataset": data.train.name,
        "threads": rayon::current_num_threads(),
        "train_epoch_s": median(epochs.clone()),
        "train_epoch_s_all": epochs,
        "stages_s": stages_s,
        "preset": cfg.preset,
        "hidden": cfg.model.hidden,
        "infer_s": median(infers.clone()),
        "infer_s_all": infers,
        "infer_batch": args.infer_batch,
        "n_train": data.train.n_rows(),
        "n_test": data.test.n_rows(),
        "n_labels": data.train.n_labels(),
        "n_features": data.train.n_features(),
        "steps": cfg.inference.steps,
        "train_nnz": data.train.features.nnz(),
        "train_label_entries": (0..data.train.n_rows())
            .map(|r| data.train.labels.count(r))
            .sum::<usize>(),
        "n_counts": bench.n_counts(),
        "energy_hidden": cfg.model.energy_hidden,
        "card_hidden": cfg.model.card_hidden,
        "batch_size": cfg.train.batch_size,
        "rounds": cfg.inference.proj.rounds,
        "dropout": cfg.model.dropout,
        "average": cfg.train.average_epochs.is_some(),
        "final_projection": cfg.inference.final_projection.map(|m| m.to_string()),
        "train_projection": cfg.inference.train_projection.to_string(),
        "peak_rss_mib": peak_rss_mib(),
        "cardinal": env!("CARGO_PKG_VERSION"),
    });
    outln!("{line}");
    Ok(())
}
