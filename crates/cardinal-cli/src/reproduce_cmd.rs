//! `cardinal reproduce table1 | cardinality`: the paper's Table 1 and its §5.1 analysis.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use cardinal::engine::{write_atomic, EVAL_FILE};
use cardinal::eval::EvalReport;
use cardinal_paper::cell_key::cell_key;
use cardinal_paper::reproduce::{
    cardinality_analysis, run_cell, table1_data, table1_rows, Protocol, Row, DATASETS,
};
use cardinal_paper::result_cache::{CacheCell, ResultCache};
use cardinal_paper::suite::mean_sd_text;

#[derive(Debug, clap::Args)]
pub(crate) struct ReproduceArgs {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum What {
    /// Train every implemented row of Table 1 and print a markdown table (resumable: finished
    /// cells are read back, not retrained).
    Table1 {
        /// Datasets (names or paths; names are looked up as for `train --dataset`).
        #[arg(long, value_delimiter = ',', default_value = "bibtex,delicious")]
        datasets: Vec<String>,
        /// Only the rows whose system name contains one of these (case-insensitive), e.g.
        /// `dvn,spen`; default all.
        #[arg(long, value_delimiter = ',')]
        rows: Vec<String>,
        /// Seeds per cell (0..N).
        #[arg(long, default_value_t = 3)]
        seeds: u64,
        /// Where runs and `table1.json` / `table1.md` go.
        #[arg(long, default_value = "runs/table1")]
        out: PathBuf,
        /// Folder holding datasets by name (default: env CARDINAL_DATA).
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// Also write `report.html` in --out: every cell's metrics side by side (see
        /// `cardinal report`).
        #[arg(long)]
        report: bool,
    },
    /// The development suite: the default, `paper`, the tuned MLP and BR-logistic on each
    /// dataset of SUITE.md, with seeds, training time and the count analysis (resumable).
    Suite(crate::suite_cmd::SuiteArgs),
    /// The ablation: P&C's default with one part taken out or replaced (a fixed count, no
    /// projection, no energy, no ascent, the count decoded for F1, `paper` with and without a
    /// fixed count) on each dataset of the suite, over seeds (resumable).
    Ablation(crate::ablation_cmd::AblationArgs),
    /// The §5.1 cardinality analysis: MSE of a random count, the constant train mean and h(x).
    Cardinality {
        /// Dataset name or path (as for `train --dataset`); the paper's figures are printed
        /// beside the results on Delicious only, the dataset they are for.
        #[arg(long, default_value = "delicious")]
        dataset: String,
        /// Seed of the count network's training.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Folder holding datasets by name (default: env CARDINAL_DATA).
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
    },
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

fn dataset_column(name: &str) -> Option<usize> {
    let stem = Path::new(name).file_name()?.to_str()?.to_ascii_lowercase();
    DATASETS.iter().position(|d| stem.starts_with(d))
}

pub(crate) fn run(engine: &cardinal::engine::Engine, args: &ReproduceArgs) -> anyhow::Result<()> {
    match &args.what {
        What::Suite(a) => crate::suite_cmd::run(engine, a),
        What::Ablation(a) => crate::ablation_cmd::run(engine, a),
        What::Table1 {
            datasets,
            rows,
            seeds,
            out,
            data_dir,
            report,
        } => {
            let dir = crate::data_dir(engine, data_dir.as_deref());
            let cells = table1(engine, datasets, rows, *seeds, out, dir)?;
            if *report && cells.is_empty() {
                crate::log::note("no finished cells: no report written");
            } else if *report {
                crate::report_cmd::write_report(engine, &cells, &out.join("report.html"), None)?;
            }
            Ok(())
        }
        What::Cardinality {
            dataset,
            seed,
            data_dir,
        } => {
            let dir = crate::data_dir(engine, data_dir.as_deref());
            let data = cardinal::engine::DataSpec::named_in(dataset, dir.as_deref())
                .load()
                .with_context(|| format!("loading dataset `{dataset}`"))?;
            let a = cardinality_analysis(engine, &data, *seed)?;
            // The paper's figures (§5.1) are Delicious's; beside another dataset they would
            // read as its reference.
            let delicious =
                dataset_column(dataset) == DATASETS.iter().position(|d| *d == "delicious");
            let paper = |v: f64| {
                if delicious {
                    format!("   (paper: {v})")
                } else {
                    String::new()
                }
            };
            outln!(
                "{}: cardinality analysis (test MSE of the predicted count; counts 0..={})",
                a.dataset,
                a.count_max
            );
            outln!(
                "  uniform random count in [0, {}]   {:8.2}{}",
                a.count_max,
                a.mse_random,
                paper(74.9)
            );
            outln!(
                "  constant train mean {:.2}          {:8.2}{}",
                a.train_mean,
                a.mse_constant,
                paper(26.9)
            );
            outln!(
                "  h(x), expectation of its softmax  {:8.2}{}",
                a.mse_h_expectation,
                paper(19.5)
            );
            outln!("  h(x), argmax of its softmax       {:8.2}", a.mse_h_argmax);
            outln!("{}", serde_json::to_string(&a)?);
            Ok(())
        }
    }
}

fn table1(
    engine: &cardinal::engine::Engine,
    datasets: &[String],
    only: &[String],
    seeds: u64,
    out: &Path,
    dir: Option<PathBuf>,
) -> anyhow::Result<Vec<PathBuf>> {
    let rows = table1_rows();
    // A filter that matches no row would train nothing and write an empty table.
    if let Some(o) = only.iter().find(|o| {
        !rows
            .iter()
            .any(|r| r.system.to_lowercase().contains(&o.to_lowercase()))
    }) {
        bail!(
            "--rows `{o}` matches no row of Table 1; its rows are: {}",
            rows.iter().map(|r| r.system).collect::<Vec<_>>().join(", ")
        );
    }
    let mut cell_dirs = Vec::new();
    // results[row][column] = per-seed reports
    let mut results: Vec<Vec<Vec<EvalReport>>> = vec![vec![Vec::new(); DATASETS.len()]; rows.len()];
    let mut columns_run = Vec::new();
    for spec in datasets {
        let col = dataset_column(spec).with_context(|| {
            format!(
                "`{spec}` is not one of Table 1's datasets ({})",
                DATASETS.join(", ")
            )
        })?;
        let data = match table1_data(spec, dir.as_deref()) {
            Ok(data) => data,
            Err(e) => {
                errln!("skipping {spec}: {e}");
                continue;
            }
        };
        columns_run.push(col);
        for (ri, row) in rows.iter().enumerate() {
            let Some(cfg) = row.config_for(DATASETS[col]) else {
                continue;
            };
            let wanted = only.is_empty()
                || only
                    .iter()
                    .any(|o| row.system.to_lowercase().contains(&o.to_lowercase()));
            for seed in 0..seeds {
                let mut cfg = cfg.clone();
                cfg.seed = seed;
                // A finished cell is reused only for exactly this data and configuration.
                let cell = ResultCache::new(out).cell(
                    &[DATASETS[col], &slug(row.system), &format!("seed{seed}")],
                    &cell_key(&data, &cfg, row.protocol),
                );
                let Some(report) = table1_cell(engine, &cell, &data, &cfg, row, col, wanted)?
                else {
                    continue;
                };
                results[ri][col].push(report);
                cell_dirs.push(cell.dir().to_path_buf());
            }
        }
    }
    if columns_run.is_empty() {
        bail!("none of the datasets could be read (said above): no table is written");
    }
    let (md, json_rows) = table1_text(&rows, &results, &columns_run);
    std::fs::create_dir_all(out)?;
    write_atomic(&out.join("table1.md"), md.as_bytes())?;
    write_atomic(
        &out.join("table1.json"),
        serde_json::to_string_pretty(&json_rows)?.as_bytes(),
    )?;
    crate::output::bytes(md.as_bytes());
    Ok(cell_dirs)
}

/// The report of one cell of Table 1 (`row` on column `col`, configuration `cfg` with its
/// seed) in the cache's `cell`: read back when it holds one, else trained when `wanted` (and
/// written there, beside its configuration: a run directory the report reads), else `None`.
fn table1_cell(
    engine: &cardinal::engine::Engine,
    cell: &CacheCell,
    data: &cardinal::data::TrainTest,
    cfg: &cardinal::config::Config,
    row: &Row,
    col: usize,
    wanted: bool,
) -> anyhow::Result<Option<EvalReport>> {
    if let Some(report) = cell.read(EVAL_FILE) {
        return Ok(Some(report));
    }
    if !wanted {
        return Ok(None);
    }
    errln!(
        "training {} on {} (seed {})",
        row.system,
        DATASETS[col],
        cfg.seed
    );
    let report = run_cell(engine, data, cfg, row.protocol)?;
    cell.write("config.json", cfg)?;
    // Last: a cell is finished when its report is there.
    cell.write(EVAL_FILE, &report)?;
    Ok(Some(report))
}

/// Table 1 as markdown (with the rows' notes) and as JSON rows, from the per-seed reports
/// `results[row][column]` of the columns run.
fn table1_text(
    rows: &[Row],
    results: &[Vec<Vec<EvalReport>>],
    columns_run: &[usize],
) -> (String, Vec<serde_json::Value>) {
    let mut md = String::from("| system | protocol | Bibtex paper | Bibtex ours | Bookmarks paper | Bookmarks ours | Delicious paper | Delicious ours |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    let mut json_rows = Vec::new();
    for (ri, row) in rows.iter().enumerate() {
        let mut cells = Vec::new();
        let mut json_cells = serde_json::Map::new();
        for col in 0..DATASETS.len() {
            let paper = row.paper[col].map_or("–".to_string(), |p| format!("{p:.1}"));
            let ours = ours_text(row, &results[ri][col], col, columns_run, &mut json_cells);
            cells.push(paper);
            cells.push(ours);
        }
        let protocol = match row.protocol {
            Protocol::Fixed => "0.5",
            Protocol::ThresholdGrid => "thr. grid",
        };
        md.push_str(&format!(
            "| {} | {protocol} | {} |\n",
            row.system,
            cells.join(" | ")
        ));
        json_rows.push(serde_json::json!({"system": row.system, "paper": row.paper, "protocol": protocol, "note": row.note, "delicious_setting": row.delicious.as_ref().map(|d| d.note), "ours": json_cells}));
    }
    md.push_str("\nNotes:\n");
    for row in rows {
        md.push_str(&format!("- {}: {}", row.system, row.note));
        if let Some(d) = &row.delicious {
            md.push_str(&format!("; on Delicious: {}", d.note));
        }
        md.push('\n');
    }
    (md, json_rows)
}

/// Our cell of Table 1 for `row` on column `col`: the seeds' example-F1 (mean ± sd), added to
/// `json_cells`, or why there is none.
fn ours_text(
    row: &Row,
    reps: &[EvalReport],
    col: usize,
    columns_run: &[usize],
    json_cells: &mut serde_json::Map<String, serde_json::Value>,
) -> String {
    if row.config.is_some() && columns_run.contains(&col) && reps.is_empty() {
        return "not run".to_string();
    } else if row.config.is_none() {
        return "not implemented".to_string();
    } else if !columns_run.contains(&col) {
        return if DATASETS[col] == "bookmarks" {
            "no data here".to_string()
        } else {
            "not run".to_string()
        };
    }
    let at05: Vec<f64> = reps
        .iter()
        .map(|r| 100.0 * r.at_threshold.example_f1)
        .collect();
    let mut text = mean_sd_text(&at05);
    if row.protocol == Protocol::ThresholdGrid {
        let dev: Vec<f64> = reps
            .iter()
            .filter_map(|r| r.at_dev_threshold.as_ref())
            .map(|m| 100.0 * m.example_f1)
            .collect();
        if !dev.is_empty() {
            text.push_str(&format!(" (dev thr: {})", mean_sd_text(&dev)));
        }
    }
    json_cells.insert(
        DATASETS[col].to_string(),
        serde_json::json!({"example_f1_at_0.5": at05, "n_seeds": reps.len()}),
    );
    text
}
