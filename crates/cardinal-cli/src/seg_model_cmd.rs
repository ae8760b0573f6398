//! `cardinal train`, `cardinal eval` and `cardinal predict` on multi-target (Section 6) data
//! and models, which `model_cmd` and `predict_cmd` hand over to when the label structure says
//! so: the data's ARFF header (MEKA's `-C L` over nominal classes other than `{0, 1}`) for
//! `train`, the run's checkpoint for `train --resume`, the model directory's `meta.json`
//! (`"labels": "multi_target"`) for `eval` and `predict`.

use std::path::Path;

use anyhow::{bail, Context};
use cardinal::engine::write_output;
use cardinal::engine::Engine;
use cardinal::segment::{SegConfig, SegMetrics};

use crate::eval_cmd::EvalArgs;
use crate::model_cmd::TrainArgs;
use crate::predict_cmd::{Format, PredictArgs};

/// Whether `cardinal train` with `args` trains the Section 6 model: the run to resume is a
/// multi-target one, or the data is multi-target.
pub(crate) fn trains_multi_target(engine: &Engine, args: &TrainArgs) -> anyhow::Result<bool> {
    Ok(match &args.resume {
        Some(dir) => engine.is_multi_target_run(dir),
        None => engine.locate(&args.data.spec()).is_multi_target()?,
    })
}

/// The configuration of `cardinal train` on multi-target data: the `multi_target` document of
/// `--config` (defaults without it), `--seed` over it.
fn seg_config(args: &TrainArgs) -> anyhow::Result<SegConfig> {
    let c = &args.cfg;
    for (given, flag) in [
        (c.preset.is_some(), "--preset"),
        (c.system.is_some(), "--system"),
        (c.search, "--search"),
    ] {
        if given {
            bail!(
                "{flag} applies to binary multi-label data only; `{}` is multi-target \
                 (configure it with --config FILE holding {{\"multi_target\": {{...}}}})",
                args.data.dataset
            );
        }
    }
    let mut cfg = match &c.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            SegConfig::from_json(&text).with_context(|| format!("in {}", path.display()))?
        }
        None => SegConfig::default(),
    };
    if let Some(seed) = c.seed {
        cfg.seed = seed;
    }
    Ok(cfg)
}

/// `cardinal train` on multi-target data: a run directory as the binary model's (checkpoints,
/// `--resume`, `metrics.jsonl`, `eval.json`), the test metrics printed at the end.
pub(crate) fn train(engine: &Engine, args: &TrainArgs) -> anyhow::Result<()> {
    let run = match &args.resume {
        Some(dir) => {
            let run = engine
                .resume_segmentation_run(dir)
                .with_context(|| format!("resuming {}", dir.display()))?;
            crate::log::note(&format!(
                "resuming {} after {} epochs",
                dir.display(),
                run.state.epochs_run()
            ));
            run
        }
        None => {
            let cfg = seg_config(args)?;
            let out = args
                .out
                .as_ref()
                .expect("clap requires --out without --resume");
            engine
                .start_segmentation_run(out, &args.data.spec(), cfg, args.force)
                .with_context(|| {
                    format!("training on `{}` into {}", args.data.dataset, out.display())
                })?
        }
    };
    let cfg = run.config;
    let (train, test) = (&run.train, &run.test);
    crate::log::note(&format!(
        "{}: {} train / {} test rows, {} positions, {} classes (multi-target); mode {}, \
         projection {}, energy {}, grid energy {}, seed {}, {} threads",
        train.name,
        train.n_rows(),
        test.n_rows(),
        train.positions(),
        train.classes(),
        cfg.mode.name(),
        cfg.proj.method.name(),
        cfg.energy,
        cfg.grid_energy,
        cfg.seed,
        rayon::current_num_threads()
    ));
    let (name, test_rows, out) = (test.name.clone(), test.n_rows(), run.dir.clone());
    let quiet = args.quiet;
    let outcome = engine.finish_segmentation_run(run, args.checkpoints(), &mut |r| {
        if !quiet {
            crate::log::note(&format!(
                "epoch {}/{}: loss {:.4} ({:.2} s)",
                r.epoch, cfg.epochs, r.loss, r.seconds
            ));
        }
    })?;
    let train_seconds: f64 = outcome.history.iter().map(|r| r.seconds).sum();
    if args.json {
        let line = serde_json::json!({
            "mode": cfg.mode.name(),
            "method": cfg.proj.method.name(),
            "rounds": cfg.proj.rounds,
            "steps": cfg.steps,
            "energy": cfg.energy,
            "grid_energy": cfg.grid_energy,
            "seed": cfg.seed,
            "train_seconds": train_seconds,
            "test": outcome.metrics,
        });
        outln!("{line}");
    } else {
        print_metrics(&name, test_rows, &outcome.metrics);
        outln!("model written to {}", out.display());
    }
    Ok(())
}

/// The metrics as `eval` and `train` print them.
fn print_metrics(name: &str, rows: usize, metrics: &SegMetrics) {
    outln!("{name}: {rows} rows");
    outln!(
        "  pixel accuracy {:.2}%, per-class IoU {:?}",
        100.0 * metrics.pixel_accuracy,
        metrics
            .class_iou
            .iter()
            .map(|v| (1e4 * v).round() / 1e2)
            .collect::<Vec<_>>()
    );
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    if metrics.z_error.is_empty() {
        outln!("  count error {:.2} px/class", mean(&metrics.count_error));
    } else {
        outln!(
            "  count error {:.2} px/class (of z: {:.2})",
            mean(&metrics.count_error),
            mean(&metrics.z_error)
        );
    }
    outln!("MEAN_IOU {:.2}", 100.0 * metrics.mean_iou);
}

/// `cardinal eval --model DIR --data FILE` on a multi-target model: its metrics on every row
/// of FILE.
pub(crate) fn eval(engine: &Engine, args: &EvalArgs) -> anyhow::Result<()> {
    if args.dev_threshold {
        bail!("--dev-threshold applies to binary multi-label models only");
    }
    let (model, _, meta, record) = engine.load_segmentation_run(&args.model)?;
    let test = match &args.data {
        Some(data) => engine.multi_target_inputs(Path::new(data), &model, &meta, true)?,
        // The run's own data, split as its training split it.
        None => {
            let Some(record) = record else {
                bail!(
                    "{} holds a multi-target model that records no data source: pass --data \
                     FILE (a multi-target ARFF file)",
                    args.model.display()
                );
            };
            let (train, test) = engine.segmentation_recorded_data(&record)?;
            let split = match args.split.as_str() {
                "train" => train,
                "test" => test,
                other => bail!(
                    "--split {other} applies to binary multi-label models only (a multi-target \
                     run holds out no dev rows)"
                ),
            };
            meta.align(split)?.0
        }
    };
    let metrics = engine.evaluate_segmentation(&model, &test)?;
    let json = serde_json::to_string_pretty(&metrics)?;
    match &args.json {
        Some(p) if p.as_os_str() == "-" => {
            outln!("{json}");
            return Ok(());
        }
        Some(p) => write_output(p, json.as_bytes())?,
        None => {}
    }
    outln!(
        "{} positions, {} classes, mode {}",
        meta.positions,
        meta.classes,
        model.mode.name()
    );
    print_metrics(&test.name, test.n_rows(), &metrics);
    Ok(())
}

/// `cardinal predict --model DIR --data FILE` on a multi-target model: one JSON line per row,
/// `{"row", "classes" (one per position), "z" (class sizes; null for the unary model)}`.
pub(crate) fn predict(engine: &Engine, args: &PredictArgs) -> anyhow::Result<()> {
    if args.format != Format::Jsonl
        || args.labels_by.is_some()
        || args.all_scores
        || args.ranking_scores
    {
        bail!(
            "{} holds a multi-target model: only --format jsonl applies (no --labels-by, \
             --all-scores or --ranking-scores)",
            args.model.display()
        );
    }
    let (model, _, meta) = engine.load_segmentation(&args.model)?;
    let data = engine.multi_target_inputs(Path::new(&args.data), &model, &meta, false)?;
    let rows = engine.predict_segmentation(&model, &data)?;
    let mut text = String::new();
    for r in &rows {
        text.push_str(&serde_json::to_string(r)?);
        text.push('\n');
    }
    match args.out.as_ref().filter(|p| p.as_os_str() != "-") {
        Some(p) => {
            write_output(p, text.as_bytes()).with_context(|| format!("writing {}", p.display()))?
        }
        None => crate::output::bytes(text.as_bytes()),
    }
    Ok(())
}
