//! `cardinal reproduce ablation`: what each part of Predict and Constrain contributes (the
//! variants of `cardinal_paper::ablation`), resumable as the suite is: cells already computed
//! for the same data and configuration are read back.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use cardinal::data::TrainTest;
use cardinal::engine::{write_atomic, Engine};
use cardinal_paper::ablation::{run_cells, tables, variants, Cell, DatasetCells, Variant};
use cardinal_paper::cell_key::suite_cell_key;
use cardinal_paper::result_cache::{seed_file, CacheCell, ResultCache};
use cardinal_paper::suite::DATASETS;

use crate::suite_cmd::load_dataset;

#[derive(Debug, clap::Args)]
pub(crate) struct AblationArgs {
    /// Datasets (names looked up as for `train --dataset`, or paths).
    #[arg(long, value_delimiter = ',', default_values_t = DATASETS.map(String::from))]
    pub datasets: Vec<String>,
    /// Seeds to train per variant and dataset (0..N); seeds already cached beyond N are shown
    /// as well.
    #[arg(long, default_value_t = 3)]
    pub seeds: u64,
    /// The markdown tables' file; the cells go beside it as JSON (same name, `.json`).
    #[arg(long, default_value = "ablation.md")]
    pub out: PathBuf,
    /// Folder of the cached cells (one file per dataset, variant and seed, under a hash of
    /// the data and configuration): an interrupted run resumes, a re-run only reads.
    #[arg(long, value_name = "DIR", default_value = "runs/ablation")]
    pub cache: PathBuf,
    /// Folder holding the datasets by name (default: env CARDINAL_DATA).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// A JSON configuration file read over every variant's preset (`predict` or `paper`)
    /// before the variant's own change, e.g. a small model for a quick check; the cache keys
    /// follow it. Without it, the ablation proper.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

pub(crate) fn run(engine: &Engine, args: &AblationArgs) -> anyhow::Result<()> {
    let dir = crate::data_dir(engine, args.data_dir.as_deref());
    let overrides = args
        .config
        .as_ref()
        .map(|p| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display())))
        .transpose()?;
    let mut rows = Vec::new();
    let mut legend = Vec::new();
    for spec in &args.datasets {
        let Some((name, data)) = load_dataset(spec, dir.as_deref())? else {
            continue;
        };
        let vs = variants(&data.train, overrides.as_deref())
            .with_context(|| format!("the variants' configurations on {name}"))?;
        if legend.is_empty() {
            legend = vs.iter().map(|v| (v.name, v.about)).collect();
        }
        let cells = dataset_cells(engine, args, &vs, &data, &name)?;
        let empty_rows = (0..data.test.n_rows()).any(|r| data.test.labels.count(r) == 0);
        rows.push(DatasetCells {
            dataset: name,
            empty_rows,
            cells,
        });
    }
    let md = tables(&rows, &legend);
    if let Some(parent) = args.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    write_atomic(&args.out, md.as_bytes())?;
    write_atomic(
        &args.out.with_extension("json"),
        serde_json::to_string_pretty(&rows)?.as_bytes(),
    )?;
    crate::output::bytes(md.as_bytes());
    Ok(())
}

/// The cached cells of `variant` on the dataset `name`: under the hash of the data and its
/// configuration without the seed.
fn cached(args: &AblationArgs, name: &str, variant: &Variant, data: &TrainTest) -> CacheCell {
    let key = suite_cell_key(data, &variant.config);
    ResultCache::new(&args.cache).cell(&[name, variant.name], &key)
}

/// Every variant's cells on the dataset `name`: the seeds asked for are computed where not
/// cached (variants with the same configuration, `full` and `fixed-z`, from one training),
/// then every cached seed is read back.
fn dataset_cells(
    engine: &Engine,
    args: &AblationArgs,
    vs: &[Variant],
    data: &TrainTest,
    name: &str,
) -> anyhow::Result<BTreeMap<String, Vec<Cell>>> {
    let cells: Vec<CacheCell> = vs.iter().map(|v| cached(args, name, v, data)).collect();
    for seed in 0..args.seeds {
        // The variants missing this seed, grouped by the configuration they train.
        let mut groups: Vec<Vec<(&Variant, &CacheCell)>> = Vec::new();
        for (v, dir) in vs.iter().zip(&cells) {
            if dir.read::<Cell>(&seed_file(seed)).is_some() {
                continue;
            }
            match groups.iter_mut().find(|g| g[0].0.config == v.config) {
                Some(g) => g.push((v, dir)),
                None => groups.push(vec![(v, dir)]),
            }
        }
        for group in groups {
            let names: Vec<&str> = group.iter().map(|(v, _)| v.name).collect();
            errln!("training {} on {name} (seed {seed})", names.join(" + "));
            let mut cfg = group[0].0.config.clone();
            cfg.seed = seed;
            let decodes: Vec<_> = group.iter().map(|(v, _)| v.decode).collect();
            let computed = run_cells(engine, data, &cfg, &decodes)
                .with_context(|| format!("{} on {name}, seed {seed}", names.join(" + ")))?;
            for ((_, dir), cell) in group.iter().zip(computed) {
                dir.write(&seed_file(seed), &cell)?;
            }
        }
    }
    Ok(vs
        .iter()
        .zip(&cells)
        .map(|(v, dir)| {
            let mut seeds: Vec<Cell> = dir.read_all("seed");
            seeds.sort_by_key(|c| c.seed);
            (v.name.to_string(), seeds)
        })
        .collect())
}
