//! `cardinal cv`: k-fold cross-validation of a configuration on the training file.

use std::path::PathBuf;

use cardinal::engine::write_output;
use cardinal::engine::Engine;

use crate::model_cmd::{ConfigArgs, DataSource};

#[derive(Debug, clap::Args)]
pub(crate) struct CvArgs {
    #[command(flatten)]
    pub data: DataSource,
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// Number of folds; the partition is seeded by the configuration's `train.split_seed`.
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Write the report (every fold, mean and sd) as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

pub(crate) fn run(engine: &Engine, args: &CvArgs) -> anyhow::Result<()> {
    let cfg = args.cfg.load(engine.systems.saved_configs())?;
    let spec = engine.locate(&args.data.spec());
    let data = match spec.load() {
        Ok(data) => data,
        // Multi-target data is not binary data the readers failed on: say what it is.
        Err(e) => match spec.is_multi_target() {
            Ok(true) => anyhow::bail!(
                "`{}` is multi-target (Section 6) data: `cv` cross-validates binary \
                 multi-label data only; train it with `cardinal train --dataset {}` and score \
                 it with `cardinal eval`",
                args.data.dataset,
                args.data.dataset
            ),
            _ => return Err(e.into()),
        },
    };
    errln!(
        "{}: {} training rows, {} folds; preset {}, seed {} (the test split is not used)",
        data.train.name,
        data.train.n_rows(),
        args.folds,
        cfg.preset,
        cfg.seed
    );
    let k = args.folds;
    let report = engine.cross_validate(&data.train, &cfg, k, &mut |_, _| {}, &mut |f| {
        outln!(
            "fold {}/{k}: {} dev rows  example-F1 {:.2} at {}, {:.2} at the fold's best threshold {}  count MAE {:.3}  P@1 {:.2}",
            f.index + 1,
            f.dev_rows,
            f.example_f1,
            cfg.threshold,
            f.example_f1_at_best,
            f.best_threshold,
            f.count_mae,
            f.precision_at_1
        );
    })?;
    outln!(
        "CV_EXAMPLE_F1 {:.2} ± {:.2} over {k} folds (at the fold's best threshold: {:.2}, optimistic; P@1 {:.2})",
        report.mean_example_f1,
        report.sd_example_f1,
        report.mean_example_f1_at_best,
        report.mean_precision_at_1
    );
    if let Some(path) = &args.json {
        write_output(path, serde_json::to_string_pretty(&report)?.as_bytes())?;
    }
    Ok(())
}
