//! `cardinal info`: what a model folder holds, on one screen; and the lines that say what a
//! model is, which `train`, `eval` and `predict` print too.

use std::path::PathBuf;

use cardinal::engine::{Engine, Fitted, OutputKind};
use cardinal::search::SearchRecord;

#[derive(Debug, clap::Args)]
pub(crate) struct InfoArgs {
    /// Model directory written by `cardinal train`.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Print it as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What a model is: its system, what that system does, and why it was trained (the search's
/// choice with every candidate's score, or that no search ran).
pub(crate) fn identity_lines(
    system: &str,
    preset: &str,
    about: &str,
    search: Option<&SearchRecord>,
) -> Vec<String> {
    let mut lines = vec![
        format!("system: {system} (preset {preset})"),
        format!("  {about}"),
    ];
    match search {
        Some(s) => {
            lines.push(format!(
                "  chosen by the default's search over {} on {} training rows ({}, \
                 training rows only):",
                match s.scope {
                    cardinal::config::SearchScope::All => "every system",
                    cardinal::config::SearchScope::Pnc => "Predict and Constrain's candidates",
                },
                s.rows,
                cardinal::config::cv_words(s.folds, s.folds_run())
            ));
            // The columns as wide as the longest name.
            let width = s
                .scores
                .iter()
                .map(|c| c.preset.len())
                .max()
                .unwrap_or(0)
                .max(16);
            for c in &s.scores {
                let mark = if c.preset == s.chosen {
                    "  <- chosen"
                } else {
                    ""
                };
                lines.push(format!(
                    "    {:<width$} {:<13} CV example-F1 {:>6.2} at threshold {}{mark}",
                    c.preset,
                    if c.system.is_empty() { "-" } else { &c.system },
                    c.example_f1,
                    c.threshold
                ));
            }
        }
        None => lines.push("  trained as configured (no search ran)".into()),
    }
    lines
}

/// [`identity_lines`] of a loaded model.
pub(crate) fn model_identity(engine: &Engine, model: &Fitted) -> anyhow::Result<Vec<String>> {
    Ok(identity_lines(
        &model.config().system,
        &model.config().preset,
        engine.about(model)?,
        model.search(),
    ))
}

pub(crate) fn run(engine: &Engine, args: &InfoArgs) -> anyhow::Result<()> {
    if engine.is_multi_target_model(&args.model) {
        anyhow::bail!(
            "{} holds a multi-target (Section 6) model: `cardinal eval --model {}` describes it",
            args.model.display(),
            args.model.display()
        );
    }
    let (model, meta) = engine.load(&args.model)?;
    let kind = engine.output_kind(&model)?;
    if args.json {
        let value = serde_json::json!({
            "model": args.model,
            "system": model.config().system,
            "preset": model.config().preset,
            "about": engine.about(&model)?,
            "outputs": kind,
            "search": model.search(),
            "dataset": meta.dataset,
            "features": meta.n_features,
            "labels": meta.n_labels,
            "label_names": meta.label_names,
            "threshold": model.config().threshold,
            "counts": [meta.count_min, meta.count_max],
            "config": model.config(),
        });
        outln!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    outln!("model: {}", args.model.display());
    for line in model_identity(engine, &model)? {
        outln!("{line}");
    }
    outln!(
        "trained on: {} ({} features, {} labels; mean {:.3} labels per row)",
        meta.dataset,
        meta.n_features,
        meta.n_labels,
        meta.train_mean_cardinality
    );
    match kind {
        OutputKind::Constrained => outln!(
            "outputs: y_T on {{0 <= y <= 1, sum y = z}} with z predicted among {}..={}; \
             labels y_T >= {} (or --labels-by round-z / top-k=K)",
            meta.count_min,
            meta.count_max,
            model.config().threshold
        ),
        OutputKind::Decided => outln!(
            "outputs: a label set per row, its size z; graded scores are the labels' marginal \
             probabilities (--all-scores, predict_proba); a threshold does not apply"
        ),
        OutputKind::Scores => outln!(
            "outputs: graded label scores; labels y >= {} (z is only the scores' sum)",
            model.config().threshold
        ),
    }
    if !meta.label_names.is_empty() {
        let shown: Vec<&str> = meta
            .label_names
            .iter()
            .take(8)
            .map(String::as_str)
            .collect();
        let more = meta.label_names.len().saturating_sub(shown.len());
        outln!(
            "labels: {}{}",
            shown.join(", "),
            if more > 0 {
                format!(", ... ({more} more)")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}
