//! `cardinal seg`: train the paper's Section 6 model on a multi-target ARFF benchmark
//! (DIR/train.arff, DIR/test.arff) and print its test metrics as one JSON line; with `--out`,
//! also save it as a model directory that `cardinal eval` and `cardinal predict` read.

use anyhow::Result;
use cardinal::engine::Engine;
use cardinal::proj::matrix::{AnyMatrixProjector, MatrixMethod};
use cardinal::segment::{Mode, SegConfig};
use std::path::PathBuf;

/// Arguments of `cardinal seg`.
#[derive(Debug, clap::Args)]
pub struct SegArgs {
    /// Folder with train.arff and test.arff (as `cardinal data synth-seg` writes them).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// unary (per-position softmax) | pnc (predicted counts) | oracle (gold counts).
    #[arg(long, default_value = "pnc", value_parser = parse_mode)]
    pub mode: Mode,
    /// Projection of the unroll: exact | dykstra (the paper's) | sinkhorn.
    #[arg(long, default_value = "exact", value_parser = parse_method)]
    pub method: MatrixMethod,
    /// Dykstra rounds R, 1..=1000.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Sinkhorn's temperature (> 0).
    #[arg(long, default_value_t = 0.1)]
    pub eps: f64,
    /// Unrolled steps T, 1..=100.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub steps: u32,
    /// Step size η (> 0).
    #[arg(long, default_value_t = 1.0)]
    pub eta: f64,
    /// Weight λ of the count loss (>= 0).
    #[arg(long, default_value_t = 1.0)]
    pub count_weight: f64,
    /// Terms K of the global energy over Y (0: none).
    #[arg(long, default_value_t = 0)]
    pub energy: usize,
    /// Epochs, 1..=1000.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub epochs: u32,
    /// Images per Adam step, 1..=100000.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch: u32,
    /// Adam's learning rate (> 0).
    #[arg(long, default_value_t = 0.05)]
    pub lr: f64,
    /// Seed of the initialisation and the shuffles.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also save the trained model as this model directory (weights, config.json, meta.json),
    /// for `cardinal eval --model DIR` and `cardinal predict --model DIR`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    cardinal::segment::settings::parse_mode(s).map_err(|e| e.to_string())
}

fn parse_method(s: &str) -> Result<MatrixMethod, String> {
    s.parse()
        .map_err(|e: cardinal::proj::ProjError| e.to_string())
}

/// `value` if finite and positive (or non-negative with `zero_ok`), else an error naming `flag`.
fn positive(flag: &str, value: f64, zero_ok: bool) -> Result<f64> {
    if value.is_finite() && (value > 0.0 || (zero_ok && value == 0.0)) {
        Ok(value)
    } else {
        let want = if zero_ok { ">= 0" } else { "> 0" };
        anyhow::bail!("{flag} {value} is out of range: expected a finite number {want}")
    }
}

/// Runs the command.
pub fn run(engine: &Engine, a: &SegArgs) -> Result<()> {
    let cfg = SegConfig {
        mode: a.mode,
        proj: AnyMatrixProjector::new(a.method, a.rounds as usize)
            .with_eps(positive("--eps", a.eps, false)?),
        steps: a.steps as usize,
        eta: positive("--eta", a.eta, false)?,
        count_weight: positive("--count-weight", a.count_weight, true)?,
        energy: a.energy,
        epochs: a.epochs as usize,
        batch: a.batch as usize,
        lr: positive("--lr", a.lr, false)?,
        seed: a.seed,
    };
    let train = engine.read_multi_target(&a.data.join("train.arff"))?;
    let test = engine.read_multi_target(&a.data.join("test.arff"))?;
    let start = std::time::Instant::now();
    let model = engine.fit_segmentation(&train, &cfg)?;
    let train_seconds = start.elapsed().as_secs_f64();
    let metrics = engine.evaluate_segmentation(&model, &test)?;
    if let Some(dir) = &a.out {
        engine.save_segmentation(&model, &cfg, dir, &train)?;
        crate::log::note(&format!("model written to {}", dir.display()));
    }
    let line = serde_json::json!({
        "mode": a.mode.name(),
        "method": a.method.name(),
        "rounds": a.rounds,
        "steps": a.steps,
        "energy": a.energy,
        "seed": a.seed,
        "train_seconds": train_seconds,
        "test": metrics,
    });
    outln!("{line}");
    Ok(())
}
