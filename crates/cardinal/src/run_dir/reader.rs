//! What a run directory records of itself, read without its model: its epochs
//! (`metrics.jsonl`), its evaluation (`eval.json`), and the system and dataset its
//! `config.json` and `meta.json` name. The one reader of those files for every front end (the
//! report shows a directory that may hold only some of them: a `reproduce table1` cell).

use std::path::Path;

use super::{EVAL_FILE, METRICS_FILE};
use crate::checkpoint::{ckpt_err, read_model_file_if_any, CONFIG_FILE, META_FILE};
use crate::error::{CheckpointProblem, Result};
use crate::eval::EvalReport;
use crate::train::EpochRecord;

/// The epochs `metrics.jsonl` of `dir` records, in order (none when it is absent); a line that
/// is not an epoch record is refused by its number.
pub fn read_history(dir: &Path) -> Result<Vec<EpochRecord>> {
    let path = dir.join(METRICS_FILE);
    let Some(bytes) = read_model_file_if_any(&path)? else {
        return Ok(Vec::new());
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|source| {
                ckpt_err(
                    &path,
                    CheckpointProblem::EpochRecord {
                        line: i + 1,
                        source,
                    },
                )
            })
        })
        .collect()
}

/// The evaluation `eval.json` of `dir` records (either F1 unit), `None` when it is absent.
pub fn read_eval(dir: &Path) -> Result<Option<EvalReport>> {
    let path = dir.join(EVAL_FILE);
    match read_model_file_if_any(&path)? {
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| ckpt_err(&path, CheckpointProblem::EvalReport { source })),
        None => Ok(None),
    }
}

/// The system `config.json` of `dir` names and the dataset its `meta.json` names, each where
/// the file is there and readable (a directory of any version or kind).
pub fn read_names(dir: &Path) -> (Option<String>, Option<String>) {
    let field = |file: &str, key: &str| -> Option<String> {
        let text = read_model_file_if_any(&dir.join(file)).ok().flatten()?;
        let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
        v.get(key)?.as_str().map(str::to_owned)
    };
    (field(CONFIG_FILE, "system"), field(META_FILE, "dataset"))
}
