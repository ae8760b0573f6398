//! The HTML page: one self-contained file (styles inline, figures as inline `<svg>`, no
//! script, nothing fetched), with a comparison section when there are several runs.

use std::fmt::Write;

use cardinal::eval::EvalReport;
use cardinal::metrics::MetricReport;

use crate::figures;
use crate::gather::{best_epoch, RunView};
use crate::Result;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:960px;color:#222}\
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:2em}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}\
td.n{text-align:right;font-variant-numeric:tabular-nums}figure{margin:1em 0}\
figcaption{font-size:.9em;color:#555;max-width:900px}\
.row{display:flex;flex-wrap:wrap;gap:0 20px}.row figure{width:460px}.note{color:#844}code{font-size:.95em}";

/// Escapes text for HTML element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One row of the metrics table: its name and how to read it from a report (as shown).
type MetricRow = (&'static str, fn(&EvalReport) -> Option<String>);

fn pct(x: f64) -> Option<String> {
    Some(format!("{:.2}", 100.0 * x))
}

fn f1(m: &MetricReport) -> Option<String> {
    pct(m.example_f1)
}

fn metric_rows() -> Vec<MetricRow> {
    vec![
        ("example-F1 at the threshold (%)", |r| f1(&r.at_threshold)),
        ("threshold on y_T", |r| Some(format!("{}", r.threshold))),
        ("example-F1, top round(z) (%)", |r| f1(&r.at_top_round_z)),
        ("example-F1, dev-tuned threshold (%)", |r| {
            r.at_dev_threshold.as_ref().and_then(f1)
        }),
        ("example-F1 with z = gold count (%)", |r| {
            r.at_gold_count.as_ref().and_then(f1)
        }),
        ("macro-F1 (%)", |r| pct(r.at_threshold.macro_f1)),
        ("micro-F1 (%)", |r| pct(r.at_threshold.micro_f1)),
        ("example precision (%)", |r| {
            pct(r.at_threshold.example_precision)
        }),
        ("example recall (%)", |r| pct(r.at_threshold.example_recall)),
        ("subset accuracy (%)", |r| {
            pct(r.at_threshold.subset_accuracy)
        }),
        ("Hamming loss", |r| {
            Some(format!("{:.5}", r.at_threshold.hamming_loss))
        }),
        ("precision@1 (%)", |r| precision_at(r, 1)),
        ("precision@3 (%)", |r| precision_at(r, 3)),
        ("precision@5 (%)", |r| precision_at(r, 5)),
        ("labels per example, predicted / gold", |r| {
            Some(format!(
                "{:.2} / {:.2}",
                r.at_threshold.mean_pred_cardinality, r.at_threshold.mean_gold_cardinality
            ))
        }),
        ("count MAE (train-mean constant)", |r| {
            Some(format!(
                "{:.3} ({:.3})",
                r.cardinality.mae, r.cardinality.baseline_mae
            ))
        }),
        ("rows with |Σy − z| ≤ 0.01 (%)", |r| {
            pct(r.constraint.frac_sum_within_001)
        }),
        ("rows with y in [0, 1] (%)", |r| {
            pct(r.constraint.frac_in_box)
        }),
        ("test examples", |r| {
            Some(r.at_threshold.n_examples.to_string())
        }),
    ]
}

fn precision_at(r: &EvalReport, k: usize) -> Option<String> {
    r.precision_at_k
        .iter()
        .find(|p| p.k == k)
        .and_then(|p| pct(p.value))
}

/// The metrics table, one column per run.
fn metrics_table(runs: &[&RunView]) -> String {
    let mut t = String::from("<table><tr><th>metric (test)</th>");
    for r in runs {
        let _ = write!(t, "<th>{}</th>", escape(&r.name));
    }
    t.push_str("</tr>");
    for (name, get) in metric_rows() {
        let _ = write!(t, "<tr><td>{}</td>", escape(name));
        for r in runs {
            let v = r
                .metrics
                .as_ref()
                .and_then(get)
                .unwrap_or_else(|| "–".into());
            let _ = write!(t, "<td class=\"n\">{}</td>", escape(&v));
        }
        t.push_str("</tr>");
    }
    t.push_str("<tr><td>best dev epoch (dev example-F1 %)</td>");
    for r in runs {
        let v = best_epoch(&r.history).map_or("–".into(), |b| {
            format!(
                "{} ({:.2})",
                b + 1,
                r.history[b].dev_example_f1.unwrap_or(f64::NAN)
            )
        });
        let _ = write!(t, "<td class=\"n\">{}</td>", escape(&v));
    }
    t.push_str("</tr><tr><td>epochs run</td>");
    for r in runs {
        let _ = write!(t, "<td class=\"n\">{}</td>", r.history.len());
    }
    t.push_str("</tr></table>");
    t
}

fn figure(out: &mut String, svg: &str, caption: &str) {
    let _ = write!(
        out,
        "<figure>{svg}<figcaption>{}</figcaption></figure>",
        escape(caption)
    );
}

/// `history` cut into its trainings: a new one starts where the epoch count starts again
/// (an epoch of phase 1 numbered no higher than the one before it).
fn trainings(history: &[cardinal::engine::EpochRecord]) -> Vec<&[cardinal::engine::EpochRecord]> {
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..history.len() {
        let (before, now) = (&history[i - 1], &history[i]);
        if now.phase <= 1 && (now.epoch <= before.epoch || now.phase < before.phase) {
            parts.push(&history[start..i]);
            start = i;
        }
    }
    parts.push(&history[start..]);
    parts
}

/// Every label occurring in test, by name, worst F1 first: the figure's points, readable.
fn label_table(labels: &[crate::gather::LabelPoint]) -> String {
    let mut sorted: Vec<&crate::gather::LabelPoint> = labels.iter().collect();
    sorted.sort_by(|a, b| a.f1.total_cmp(&b.f1).then(b.test_count.cmp(&a.test_count)));
    let mut t = format!(
        "<details><summary>per-label F1 on test ({} labels, worst first)</summary><table>\
         <tr><th>label</th><th>F1 (%)</th><th>test rows</th><th>training rows</th></tr>",
        sorted.len()
    );
    for p in sorted {
        let _ = write!(
            t,
            "<tr><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
            escape(&p.name),
            p.f1,
            p.test_count,
            p.train_count
        );
    }
    t.push_str("</table></details>");
    t
}

/// The sections of one run: what it is, its table and every figure it has data for.
fn run_section(out: &mut String, r: &RunView) -> Result<()> {
    let _ = write!(
        out,
        "<h2>{}</h2><p>directory <code>{}</code>; system <code>{}</code>, dataset <code>{}</code></p>",
        escape(&r.name),
        escape(&r.dir.display().to_string()),
        escape(&r.system),
        escape(&r.dataset)
    );
    for line in &r.identity {
        let _ = write!(out, "<p>{}</p>", escape(line));
    }
    for note in &r.notes {
        let _ = write!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    if let Some(config) = &r.config {
        let _ = write!(
            out,
            "<details><summary>configuration (config.json)</summary><pre>{}</pre></details>",
            escape(config)
        );
    }
    out.push_str(&metrics_table(&[r]));
    if !r.history.is_empty() {
        // One line per training: a system that trains several (the tuned MLP's grid) logs
        // them one after another, each from epoch 1.
        let parts = trainings(&r.history);
        let names: Vec<String> = match parts.len() {
            1 => vec![r.name.clone()],
            n => (1..=n).map(|k| format!("training {k} of {n}")).collect(),
        };
        let runs: Vec<(&str, &[cardinal::engine::EpochRecord])> =
            names.iter().map(String::as_str).zip(parts).collect();
        let svg = figures::training_curves(&runs)?;
        figure(
            out,
            &svg,
            "Mean training loss per batch and dev example-F1 at the model's threshold, per \
             epoch (epochs of the second phase, on all of train, continue the numbering and \
             have no dev score). The ring marks the best dev epoch, whose weights early \
             stopping keeps.",
        );
    }
    out.push_str("<div class=\"row\">");
    if let Some(m) = &r.counts {
        figure(
            out,
            &figures::count_matrix(m)?,
            "Test rows by gold label count (rows) and predicted count round(z) (columns); the \
             diagonal is an exact count. The last row and column pool the larger counts.",
        );
    }
    if !r.labels.is_empty() {
        figure(
            out,
            &figures::label_f1(&r.labels)?,
            "Each label occurring in test: its F1 on test at the model's threshold against how \
             many training rows carry it. Rare labels on the left are where F1 is lost.",
        );
    }
    if !r.labels.is_empty() {
        out.push_str(&label_table(&r.labels));
    }
    if !r.reliability.is_empty() {
        figure(
            out,
            &figures::reliability(&r.reliability)?,
            "Every entry of y_T on test, in ten bins of its value: the fraction of the entries \
             that are gold labels against their mean value (the diagonal is perfect \
             calibration); each point is labelled with its share of all entries.",
        );
    }
    if let Some(c) = &r.thresholds {
        figure(
            out,
            &figures::thresholds(&[(r.name.as_str(), c)])?,
            "Example-F1 when y_T is binarised at each threshold, on the dev split the \
             configuration held out and on test; the vertical line is the model's threshold. \
             When the configuration trains epochs on all of train after early stopping \
             (train.full_epochs), the saved model has seen the dev rows: the dev curve is then \
             optimistic, and its shape, not its level, is what to read.",
        );
    }
    out.push_str("</div>");
    Ok(())
}

/// The whole page for `runs` (in order); with several runs, a comparison comes first.
pub fn render(runs: &[RunView]) -> Result<String> {
    let mut out = String::from("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    let title = match runs {
        [one] => format!("cardinal report: {}", one.name),
        _ => format!("cardinal report: {} runs", runs.len()),
    };
    let _ = write!(
        out,
        "<title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1>",
        escape(&title),
        escape(&title)
    );
    out.push_str(
        "<p>Every F1, precision, recall and accuracy is in percent. Generated by \
         <code>cardinal report</code>; the figures are recomputed from each model on the data \
         its run recorded.</p>",
    );
    if runs.len() > 1 {
        out.push_str("<h2>comparison</h2>");
        let refs: Vec<&RunView> = runs.iter().collect();
        out.push_str(&metrics_table(&refs));
        let curves: Vec<figures::Run> = runs
            .iter()
            .filter(|r| !r.history.is_empty())
            .map(|r| (r.name.as_str(), r.history.as_slice()))
            .collect();
        if !curves.is_empty() {
            figure(
                &mut out,
                &figures::training_curves(&curves)?,
                "Training loss and dev example-F1 per epoch of every run; rings mark each \
                 run's best dev epoch.",
            );
        }
        let thresholds: Vec<(&str, &_)> = runs
            .iter()
            .filter_map(|r| r.thresholds.as_ref().map(|c| (r.name.as_str(), c)))
            .collect();
        if !thresholds.is_empty() {
            figure(
                &mut out,
                &figures::thresholds(&thresholds)?,
                "Dev example-F1 against the threshold for every run (test where a run has no \
                 dev split), with each run's threshold marked.",
            );
        }
    }
    for r in runs {
        run_section(&mut out, r)?;
    }
    out.push_str("</body></html>\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cardinal::engine::EpochRecord;

    fn rec(phase: u8, epoch: usize) -> EpochRecord {
        EpochRecord {
            phase,
            epoch,
            loss: 1.0,
            dev_example_f1: None,
            dev_mean_z: None,
            seconds: 0.0,
        }
    }

    /// A grid's trainings, each from epoch 1, are told apart; a second phase continuing the
    /// numbering stays with its training.
    #[test]
    fn trainings_start_where_the_epochs_start_again() {
        let h = [
            rec(1, 1),
            rec(1, 2),
            rec(2, 3),
            rec(1, 1),
            rec(1, 2),
            rec(1, 1),
        ];
        let parts = trainings(&h);
        assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!(trainings(&h[..3]).len(), 1);
    }
}
