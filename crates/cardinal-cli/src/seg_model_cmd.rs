//! `cardinal eval` and `cardinal predict` on a multi-target (Section 6) model directory, which
//! `model_cmd` and `predict_cmd` hand over to when the directory's `meta.json` says
//! `"labels": "multi_target"`. The data is a multi-target ARFF file (as `cardinal data
//! synth-seg` writes them).

use std::path::Path;

use anyhow::{bail, Context};
use cardinal::checkpoint::write_atomic;
use cardinal::engine::Engine;

use crate::model_cmd::EvalArgs;
use crate::predict_cmd::{Format, PredictArgs};

/// Whether `dir` holds a multi-target model (an unreadable `meta.json` is left to the binary
/// loader, whose error names it).
pub fn is_multi_target(engine: &Engine, dir: &Path) -> bool {
    engine
        .label_structure(dir)
        .is_ok_and(|s| s.is_multi_target())
}

/// `cardinal eval --model DIR --data FILE` on a multi-target model: its metrics on every row
/// of FILE.
pub fn eval(engine: &Engine, args: &EvalArgs) -> anyhow::Result<()> {
    let Some(data) = &args.data else {
        bail!(
            "{} holds a multi-target model: pass --data FILE (a multi-target ARFF file)",
            args.model.display()
        );
    };
    if args.dev_threshold {
        bail!("--dev-threshold applies to binary multi-label models only");
    }
    let (model, _, meta) = engine.load_segmentation(&args.model)?;
    let test = engine.read_multi_target(Path::new(data))?;
    meta.check_data(&test)?;
    let metrics = engine.evaluate_segmentation(&model, &test)?;
    let json = serde_json::to_string_pretty(&metrics)?;
    match &args.json {
        Some(p) if p.as_os_str() == "-" => {
            outln!("{json}");
            return Ok(());
        }
        Some(p) => write_atomic(p, json.as_bytes())?,
        None => {}
    }
    outln!(
        "{} ({} rows, {} positions, {} classes, mode {})",
        test.name,
        test.n_rows(),
        meta.positions,
        meta.classes,
        model.mode.name()
    );
    outln!(
        "  pixel accuracy {:.2}%, per-class IoU {:?}",
        100.0 * metrics.pixel_accuracy,
        metrics
            .class_iou
            .iter()
            .map(|v| (1e4 * v).round() / 1e2)
            .collect::<Vec<_>>()
    );
    outln!("MEAN_IOU {:.2}", 100.0 * metrics.mean_iou);
    Ok(())
}

/// `cardinal predict --model DIR --data FILE` on a multi-target model: one JSON line per row,
/// `{"row", "classes" (one per position), "z" (class sizes; null for the unary model)}`.
pub fn predict(engine: &Engine, args: &PredictArgs) -> anyhow::Result<()> {
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
    let data = engine.read_multi_target(Path::new(&args.data))?;
    meta.check_data(&data)?;
    let rows = engine.predict_segmentation(&model, &data)?;
    let mut text = String::new();
    for r in &rows {
        text.push_str(&serde_json::to_string(r)?);
        text.push('\n');
    }
    match &args.out {
        Some(p) => {
            write_atomic(p, text.as_bytes()).with_context(|| format!("writing {}", p.display()))?
        }
        None => crate::output::bytes(text.as_bytes()),
    }
    Ok(())
}
