//! `cardinal data ...`: dataset inspection.

use std::path::PathBuf;

use cardinal::engine::DataSpec;

use anyhow::Context;

use crate::output;
use cardinal_data::data::{resolve_dataset_noted, DatasetStats, Resolved};

mod synth_seg;

/// Dataset commands.
#[derive(Debug, clap::Args)]
pub(crate) struct DataArgs {
    #[command(subcommand)]
    pub command: DataCommand,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum DataCommand {
    /// Print instances, features, labels, label cardinality, density and distinct label sets
    /// for train, test and all.
    Stats(StatsArgs),
    /// Write the synthetic segmentation benchmark (the paper's Section 6) as MEKA multi-target
    /// ARFF: DIR/train.arff and DIR/test.arff.
    SynthSeg(synth_seg::SynthSegArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct StatsArgs {
    /// Dataset name (looked up in the data directory, then among the vendored datasets) or path
    /// (MULAN folder, ARFF file with its XML beside it, LIBSVM or XMC file).
    pub dataset: String,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Folder holding datasets by name (default: env CARDINAL_DATA).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// For a CSV file: which columns are labels (`a,b`, `last=N` or `prefix=P`), as `train`
    /// takes them.
    #[arg(long, value_name = "SPEC", value_parser = parse_label_columns)]
    pub label_columns: Option<cardinal::data::csv::LabelColumns>,
}

fn parse_label_columns(s: &str) -> Result<cardinal::data::csv::LabelColumns, String> {
    s.parse()
}

pub(crate) fn run(engine: &cardinal::engine::Engine, args: &DataArgs) -> anyhow::Result<()> {
    match &args.command {
        DataCommand::Stats(a) => stats(a, crate::data_dir(engine, a.data_dir.as_deref())),
        DataCommand::SynthSeg(a) => synth_seg::run(a),
    }
}

/// `data stats` of `a.dataset`, looked up by name in `data_dir`.
fn stats(a: &StatsArgs, data_dir: Option<PathBuf>) -> anyhow::Result<()> {
    let found = match &a.label_columns {
        Some(columns) => {
            let path = PathBuf::from(&a.dataset);
            cardinal::data::csv::read_csv_path(
                &path,
                columns,
                cardinal::data::csv::CsvLabels::Required,
            )
            .map(|d| (Resolved::Single(d), Vec::new()))
        }
        None => resolve_dataset_noted(&a.dataset, data_dir.as_deref()),
    };
    let (resolved, notes) = match found {
        Ok(found) => found,
        Err(e) => {
            // Multi-target data is not binary data the readers failed on: say what it is.
            let mut spec = DataSpec::named(&a.dataset);
            spec.data_dir = data_dir;
            if matches!(spec.is_multi_target(), Ok(true)) {
                anyhow::bail!(
                    "`{}` is multi-target (Section 6) data: `data stats` describes binary \
                     multi-label data only; `cardinal train --dataset {}` prints its shape \
                     (rows, positions, classes)",
                    a.dataset,
                    a.dataset
                );
            }
            return Err(e).with_context(|| format!("loading dataset `{}`", a.dataset));
        }
    };
    for note in &notes {
        crate::log::note(&format!("note: {note}"));
    }
    let name = resolved.name().to_string();
    let rows: Vec<(&str, DatasetStats)> = match &resolved {
        Resolved::Split(tt) => vec![
            ("train", DatasetStats::of(&tt.train)),
            ("test", DatasetStats::of(&tt.test)),
            ("all", DatasetStats::of_all(&[&tt.train, &tt.test])),
        ],
        Resolved::Single(d) => vec![("all", DatasetStats::of(d))],
    };
    if a.json {
        let mut obj = serde_json::Map::new();
        obj.insert("dataset".into(), name.into());
        for (part, s) in &rows {
            obj.insert((*part).into(), serde_json::to_value(s)?);
        }
        outln!("{}", serde_json::Value::Object(obj));
        return Ok(());
    }
    output::bytes(table(&name, &rows).as_bytes());
    Ok(())
}

/// A plain-text table, one row per part.
fn table(name: &str, rows: &[(&str, DatasetStats)]) -> String {
    let header = [
        "split",
        "instances",
        "features",
        "labels",
        "cardinality",
        "density",
        "distinct sets",
    ];
    let body: Vec<[String; 7]> = rows
        .iter()
        .map(|(part, s)| {
            [
                part.to_string(),
                s.instances.to_string(),
                s.features.to_string(),
                s.labels.to_string(),
                format!("{:.3}", s.cardinality),
                format!("{:.5}", s.density),
                s.distinct_label_sets.to_string(),
            ]
        })
        .collect();
    let mut width = header.map(str::len);
    for r in &body {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (k, (c, w)) in cells.iter().zip(&width).enumerate() {
            if k == 0 {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("  {c:>w$}"));
            }
        }
        s.push('\n');
        s
    };
    let mut out = format!("dataset: {name}\n");
    out.push_str(&line(&header.map(String::from)));
    out.push_str(&line(&width.map(|w| "-".repeat(w))));
    for r in &body {
        out.push_str(&line(r));
    }
    out
}
