//! `cardinal reproduce suite`: the development suite's table (default, `paper`, tuned MLP,
//! BR-logistic on each dataset), resumable: cells already computed for the same data and
//! configuration are read back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use cardinal::data::TrainTest;
use cardinal::engine::write_atomic;
use cardinal::engine::Engine;
use cardinal_paper::cell_key::suite_cell_key;
use cardinal_paper::result_cache::{seed_file, ResultCache};
use cardinal_paper::suite::{entries, mean_sd, mean_sd_text, run_cell, Cell, Entry, DATASETS};

#[derive(Debug, clap::Args)]
pub(crate) struct SuiteArgs {
    /// Datasets (names looked up as for `train --dataset`, or paths).
    #[arg(long, value_delimiter = ',', default_values_t = DATASETS.map(String::from))]
    pub datasets: Vec<String>,
    /// Only these systems (of default, paper, mlp, br-logistic); default all.
    #[arg(long, value_delimiter = ',')]
    pub systems: Vec<String>,
    /// Seeds to train per cell (0..N); seeds already cached beyond N are shown as well.
    #[arg(long, default_value_t = 3)]
    pub seeds: u64,
    /// Where cells and `suite.md` / `suite.json` go.
    #[arg(long, default_value = "runs/suite")]
    pub out: PathBuf,
    /// Folder holding the datasets by name (default: env CARDINAL_DATA).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

fn seeds_text(cells: &[Cell]) -> String {
    match (cells.first(), cells.last()) {
        (Some(a), Some(b)) if cells.len() > 1 && cells.len() as u64 == b.seed - a.seed + 1 => {
            format!("{}-{}", a.seed, b.seed)
        }
        _ => cells
            .iter()
            .map(|c| c.seed.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

pub(crate) fn run(engine: &Engine, args: &SuiteArgs) -> anyhow::Result<()> {
    let dir = crate::data_dir(engine, args.data_dir.as_deref());
    let systems = entries();
    for wanted in &args.systems {
        anyhow::ensure!(
            systems.iter().any(|e| e.name == wanted),
            "--systems: `{wanted}` is not one of {}",
            systems
                .iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut md = String::from(
        "| dataset | default | default trained (system per seed) | `paper` | tuned MLP @0.5 (dev thr.) | BR-logistic @0.5 (dev thr.) | default − MLP | seeds | default train time | F1 with gold count | count MAE (constant) |\n\
         | --- | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |\n",
    );
    let mut json = Vec::new();
    for spec in &args.datasets {
        let Some((name, data)) = load_dataset(spec, dir.as_deref())? else {
            continue;
        };
        let row = dataset_cells(engine, args, &systems, &data, &name)?;
        md.push_str(&table_line(&name, &row));
        json.push(serde_json::json!({"dataset": name, "cells": row}));
    }
    if json.is_empty() {
        bail!("none of the datasets could be read (said above): no table is written");
    }
    std::fs::create_dir_all(&args.out)?;
    write_atomic(&args.out.join("suite.md"), md.as_bytes())?;
    write_atomic(
        &args.out.join("suite.json"),
        serde_json::to_string_pretty(&json)?.as_bytes(),
    )?;
    crate::output::bytes(md.as_bytes());
    Ok(())
}

/// The dataset `spec` (a name looked up in `dir`, or a path) split as the suite splits it,
/// with its name (the last part of `spec`); `None`, said on standard error, when it cannot be
/// found or read.
pub(crate) fn load_dataset(
    spec: &str,
    dir: Option<&Path>,
) -> anyhow::Result<Option<(String, TrainTest)>> {
    let data = match cardinal::engine::DataSpec::named_in(spec, dir).load() {
        Ok(d) => d,
        Err(e) => {
            errln!("skipping {spec}: {e}");
            return Ok(None);
        }
    };
    let name = Path::new(spec)
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or(spec)
        .to_string();
    Ok(Some((name, data)))
}

/// Every system's cells on the dataset `name`: the seeds asked for are trained (for the
/// systems wanted) where not cached, then every cached seed is read back.
fn dataset_cells(
    engine: &Engine,
    args: &SuiteArgs,
    systems: &[Entry],
    data: &TrainTest,
    name: &str,
) -> anyhow::Result<BTreeMap<&'static str, Vec<Cell>>> {
    let mut row = BTreeMap::new();
    for entry in systems {
        let key = suite_cell_key(data, &entry.config);
        let cached = ResultCache::new(&args.out).cell(&[name, entry.name], &key);
        let wanted = args.systems.is_empty() || args.systems.iter().any(|s| s == entry.name);
        if wanted {
            for seed in 0..args.seeds {
                if cached.read::<Cell>(&seed_file(seed)).is_some() {
                    continue;
                }
                errln!("training {} on {name} (seed {seed})", entry.name);
                let mut cfg = entry.config.clone();
                cfg.seed = seed;
                let cell = run_cell(engine, data, &cfg)
                    .with_context(|| format!("{} on {name}, seed {seed}", entry.name))?;
                cached.write(&seed_file(seed), &cell)?;
            }
        }
        let mut cells: Vec<Cell> = cached.read_all("seed");
        cells.sort_by_key(|c| c.seed);
        row.insert(entry.name, cells);
    }
    Ok(row)
}

/// The systems the default's cells trained (the search may choose a forest, which is not
/// Predict and Constrain), each with its number of seeds: `forest-blend ×2, pnc ×1`. Cells
/// cached before a forest named itself say `pnc` with a forest: named here for what they are.
fn trained_systems(cells: &[Cell]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for c in cells {
        let mut cfg = c.config.clone();
        cfg.name_legacy_forest();
        *counts.entry(cfg.system).or_default() += 1;
    }
    if counts.is_empty() {
        return "–".into();
    }
    counts
        .iter()
        .map(|(s, n)| format!("{s} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The markdown table's line of the dataset `name`, from its systems' cells.
fn table_line(name: &str, row: &BTreeMap<&str, Vec<Cell>>) -> String {
    let f1 = |s: &str| -> Vec<f64> { row[s].iter().map(|c| c.f1_at_half).collect() };
    let best = |s: &str| -> Vec<f64> {
        row[s]
            .iter()
            .map(|c| c.f1_at_dev_threshold.unwrap_or(c.f1_at_half))
            .collect()
    };
    let cell = |s: &str, dev: bool| {
        if row[s].is_empty() {
            "not run".to_string()
        } else if dev {
            format!("{} ({})", mean_sd_text(&f1(s)), mean_sd_text(&best(s)))
        } else {
            mean_sd_text(&f1(s))
        }
    };
    let def = &row["default"];
    let margin = if def.is_empty() || row["mlp"].is_empty() {
        "–".to_string()
    } else {
        // The MLP at its own dev-tuned threshold: its best honest number.
        format!(
            "{:+.2}",
            mean_sd(&f1("default")).0 - mean_sd(&best("mlp")).0
        )
    };
    let secs: Vec<f64> = def.iter().map(|c| c.train_seconds).collect();
    let gold: Vec<f64> = def.iter().filter_map(|c| c.f1_at_gold_count).collect();
    let mae: Vec<f64> = def.iter().map(|c| c.count_mae).collect();
    let const_mae: Vec<f64> = def.iter().map(|c| c.constant_count_mae).collect();
    let or_dash = |xs: &[f64], f: &dyn Fn(&[f64]) -> String| {
        if xs.is_empty() {
            "–".to_string()
        } else {
            f(xs)
        }
    };
    format!(
        "| {name} | {} | {} | {} | {} | {} | {margin} | {} | {} | {} | {} |\n",
        cell("default", false),
        trained_systems(def),
        cell("paper", false),
        cell("mlp", true),
        cell("br-logistic", true),
        seeds_text(def),
        or_dash(&secs, &|x| format!("{:.1} s", mean_sd(x).0)),
        or_dash(&gold, &|x| format!("{:.2}", mean_sd(x).0)),
        or_dash(&mae, &|x| format!(
            "{:.3} ({:.3})",
            mean_sd(x).0,
            mean_sd(&const_mae).0
        )),
    )
}
