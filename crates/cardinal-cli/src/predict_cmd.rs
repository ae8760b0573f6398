//! `cardinal predict`: label sets, scores and counts for every row of a file, as JSON lines,
//! CSV or NumPy arrays.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use cardinal::data::Labels;
use cardinal::engine::{check_labels, Engine};
use cardinal::engine::{write_atomic, write_output};
use cardinal::metrics::{binarize, Binarize};
use npyz::WriterBuilder;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// One JSON object per row: row, z, labels, scores.
    Jsonl,
    /// A header and one line per row: row, z, labels (space-separated; a name holding a
    /// space, quote or backslash is written as a JSON string, `"big truck"`), then with
    /// --all-scores one score column per label.
    Csv,
    /// NumPy arrays in the --out folder: labels.npy (uint8, rows × labels), scores.npy (float32,
    /// y_T), z.npy (float32), ranking.npy with --ranking-scores, label_names.txt.
    Npy,
}

#[derive(Debug, clap::Args)]
pub(crate) struct PredictArgs {
    /// Model directory written by `cardinal train`.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Data to predict (dataset name or path): every row of a single file, in file order and
    /// numbered from 0 as in the file, labels optional (ARFF without the label attributes or
    /// with `?`, LIBSVM lines without labels); the test file of a dataset that ships with a
    /// split. Features are matched to the model's by name where the format has names.
    #[arg(long, value_name = "NAME_OR_PATH")]
    pub data: String,
    /// Folder holding datasets by name (default: env CARDINAL_DATA).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    /// Where to write: a file for jsonl and csv (default, or `-`: standard output), a folder for npy
    /// (required).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// How labels are chosen from the scores: `threshold=T` (labels with y_T >= T; default:
    /// the model's threshold; refused for the forests, which decide their sets for the
    /// expected F1 and are read as decided by default), `round-z` (the round(z) best-ranked
    /// labels, so the count is exactly the predicted one) or `top-k=K`.
    #[arg(long, value_name = "RULE")]
    pub labels_by: Option<Binarize>,
    /// Include every label's graded score (else only the predicted labels'; jsonl and csv):
    /// y_T for Predict and Constrain, the marginal probability for a forest.
    #[arg(long)]
    pub all_scores: bool,
    /// Also write every label's ranking score: the last ascent step's point before its
    /// projection, which orders the labels as y_T does without the ties where y_T meets 0 or
    /// 1 (for precision@k and other ranking metrics); y_T itself for the baseline systems,
    /// which keep no such point.
    #[arg(long)]
    pub ranking_scores: bool,
}

/// What was predicted, row-major `rows × labels`.
struct Predicted<'a> {
    label_names: Vec<String>,
    y: &'a [f32],
    ranking: &'a [f32],
    z: &'a [f32],
    chosen: cardinal::data::LabelSets,
}

/// `cardinal predict` with a binary multi-label model (`main` dispatches a multi-target one,
/// and refuses an `--out` path inside the model folder, first).
pub(crate) fn predict(engine: &Engine, args: &PredictArgs) -> anyhow::Result<()> {
    let (model, meta) = engine.load(&args.model)?;
    let inputs = engine.read_inputs(&meta, &args.data, args.data_dir.as_deref(), Labels::Ignore)?;
    for note in &inputs.notes {
        crate::log::note(&format!("note: {note}"));
    }
    if let Some(labels) = &inputs.labels {
        let named = cardinal::data::Dataset {
            name: inputs.name.clone(),
            labels: labels.clone(),
            label_names: meta.label_names.clone(),
            ..Default::default()
        };
        if labels.n_labels != model.n_labels() {
            bail!(
                "`{}` has {} labels where the model in {} has {}",
                args.data,
                labels.n_labels,
                args.model.display(),
                model.n_labels()
            );
        }
        check_labels(&meta, &named, &args.model)?;
    }
    let kind = engine.output_kind(&model)?;
    if let (Some(Binarize::Threshold(t)), false) = (&args.labels_by, kind.accepts_threshold()) {
        bail!(
            "--labels-by threshold={t} does not apply to the model in {}: it is system `{}`, \
             which decides each row's label set for the expected F1 (a threshold on that set \
             gives the same labels at every value). Leave --labels-by out for the decided sets, \
             or use top-k=K or round-z (ranked by the labels' marginal probabilities' F1 \
             scores); --all-scores prints the marginal probabilities",
            args.model.display(),
            model.config().system
        );
    }
    crate::log::note(&format!(
        "note: predicting with the model in {}: system {} (preset {})",
        args.model.display(),
        model.config().system,
        model.config().preset
    ));
    let out = engine.predict(&model, &inputs.features)?;
    let l = model.n_labels();
    let ranking = out.ranking_scores();
    let rule = args
        .labels_by
        .unwrap_or(Binarize::Threshold(model.config().threshold as f32));
    // A threshold applies to y_T; a ranking rule ranks by the tie-free ranking scores.
    let scores_for_rule = match rule {
        Binarize::Threshold(_) => &out.y[..],
        _ => ranking,
    };
    let chosen = binarize(scores_for_rule, l, &rule, Some(&out.z))?;
    let p = Predicted {
        label_names: (0..l)
            .map(|i| {
                meta.label_names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| i.to_string())
            })
            .collect(),
        // The graded scores: y_T for Predict and Constrain, the marginal probabilities for a
        // decided set.
        y: kind.graded(&out),
        ranking,
        z: &out.z,
        chosen,
    };
    match args.format {
        Format::Jsonl => emit(args.out.as_deref(), &jsonl(&p, args)?),
        Format::Csv => emit(args.out.as_deref(), &csv_text(&p, args)?),
        Format::Npy => {
            let dir = args
                .out
                .as_deref()
                .filter(|d| d.as_os_str() != "-")
                .context("--format npy writes a folder of arrays: pass --out DIR")?;
            npy(dir, &p, args.ranking_scores)
        }
    }
}

/// Writes `bytes` to the file `out` ([`write_output`]) or to standard output (no `out`, or
/// `-`).
fn emit(out: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    match out.filter(|p| p.as_os_str() != "-") {
        Some(p) => write_output(p, bytes).with_context(|| format!("writing {}", p.display())),
        None => {
            crate::output::bytes(bytes);
            Ok(())
        }
    }
}

fn jsonl(p: &Predicted, args: &PredictArgs) -> anyhow::Result<Vec<u8>> {
    let l = p.label_names.len();
    let mut text = Vec::new();
    for (r, row) in p.y.chunks_exact(l).enumerate() {
        let chosen = p.chosen.row(r);
        let labels: Vec<&str> = chosen
            .iter()
            .map(|&i| p.label_names[i as usize].as_str())
            .collect();
        let scores: serde_json::Map<String, serde_json::Value> = (0..l)
            .filter(|&i| args.all_scores || chosen.contains(&(i as u32)))
            .map(|i| (p.label_names[i].clone(), serde_json::json!(row[i])))
            .collect();
        let mut line =
            serde_json::json!({"row": r, "z": p.z[r], "labels": labels, "scores": scores});
        if args.ranking_scores {
            let rank: serde_json::Map<String, serde_json::Value> = p.ranking[r * l..(r + 1) * l]
                .iter()
                .enumerate()
                .map(|(i, &v)| (p.label_names[i].clone(), serde_json::json!(v)))
                .collect();
            line["ranking"] = serde_json::Value::Object(rank);
        }
        serde_json::to_writer(&mut text, &line)?;
        text.push(b'\n');
    }
    Ok(text)
}

fn csv_text(p: &Predicted, args: &PredictArgs) -> anyhow::Result<Vec<u8>> {
    let l = p.label_names.len();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["row".to_string(), "z".into(), "labels".into()];
    if args.all_scores {
        header.extend(p.label_names.iter().map(|n| format!("score:{n}")));
    }
    if args.ranking_scores {
        header.extend(p.label_names.iter().map(|n| format!("ranking:{n}")));
    }
    w.write_record(&header)?;
    let mut rec = Vec::with_capacity(header.len());
    for r in 0..p.z.len() {
        rec.clear();
        rec.push(r.to_string());
        rec.push(p.z[r].to_string());
        let names: Vec<String> = p
            .chosen
            .row(r)
            .iter()
            .map(|&i| csv_label(&p.label_names[i as usize]))
            .collect();
        rec.push(names.join(" "));
        if args.all_scores {
            rec.extend(p.y[r * l..(r + 1) * l].iter().map(f32::to_string));
        }
        if args.ranking_scores {
            rec.extend(p.ranking[r * l..(r + 1) * l].iter().map(f32::to_string));
        }
        w.write_record(&rec)?;
    }
    w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
}

/// A label name in the space-separated `labels` column: as it is, or as a JSON string when
/// it holds whitespace, a quote or a backslash (or is empty), so the column splits
/// unambiguously.
fn csv_label(name: &str) -> String {
    let plain =
        !name.is_empty() && !name.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\');
    if plain {
        name.to_string()
    } else {
        serde_json::to_string(name).expect("a string serialises")
    }
}

/// One `.npy` file's bytes.
fn npy_bytes<T: npyz::AutoSerialize>(shape: &[u64], data: &[T]) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut buf)
        .begin_nd()?;
    w.extend(data.iter())?;
    w.finish()?;
    Ok(buf)
}

fn npy(dir: &Path, p: &Predicted, ranking: bool) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (n, l) = (p.z.len(), p.label_names.len());
    let mut labels = vec![0u8; n * l];
    for r in 0..n {
        for &i in p.chosen.row(r) {
            labels[r * l + i as usize] = 1;
        }
    }
    let shape = [n as u64, l as u64];
    let mut files = vec![
        ("labels.npy", npy_bytes(&shape, &labels)?),
        ("scores.npy", npy_bytes(&shape, p.y)?),
        ("z.npy", npy_bytes(&[n as u64], p.z)?),
        (
            "label_names.txt",
            (p.label_names.join("\n") + "\n").into_bytes(),
        ),
    ];
    if ranking {
        files.push(("ranking.npy", npy_bytes(&shape, p.ranking)?));
    }
    for (name, bytes) in files {
        let path = dir.join(name);
        write_atomic(&path, &bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Label names with spaces cannot be confused with two labels in the CSV `labels` column.
    #[test]
    fn csv_label_names_split_unambiguously() {
        assert_eq!(super::csv_label("car"), "car");
        assert_eq!(super::csv_label("big truck"), "\"big truck\"");
        assert_eq!(super::csv_label("a\"b"), "\"a\\\"b\"");
        assert_eq!(super::csv_label(""), "\"\"");
    }
}
