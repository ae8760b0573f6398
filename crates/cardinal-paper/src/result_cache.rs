//! The one cache of reproduced results (Table 1's cells, the development suite's, the
//! ablation's), in one layout: `ROOT/WHAT.../KEY/FILE.json`, where `WHAT` names the result
//! (a dataset, a system, a seed) and `KEY` is the hash of everything that decides it
//! ([`crate::cell_key`]). A result is read back only under its own key, so a changed file,
//! configuration or rule misses the cache whatever it is called, and results under other
//! keys stay beside it. Files are written atomically; one that does not parse as the result
//! asked for (cut short, of an older layout, someone else's) is a miss and is computed again,
//! never an answer.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use cardinal::Result;

/// A cache of results under a root folder.
///
/// ```
/// use cardinal_paper::result_cache::ResultCache;
///
/// let root = std::env::temp_dir().join(format!("cardinal-cache-doc-{}", std::process::id()));
/// let cell = ResultCache::new(&root).cell(&["emotions", "paper"], "0123abcd");
/// assert_eq!(cell.read::<f64>("seed0.json"), None);
/// cell.write("seed0.json", &47.5).unwrap();
/// assert_eq!(cell.read::<f64>("seed0.json"), Some(47.5));
/// // Another key is another cell.
/// let other = ResultCache::new(&root).cell(&["emotions", "paper"], "4567ef01");
/// assert_eq!(other.read::<f64>("seed0.json"), None);
/// # std::fs::remove_dir_all(&root).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct ResultCache {
    root: PathBuf,
}

/// The folder of one result's files under its key ([`ResultCache::cell`]).
#[derive(Debug, Clone)]
pub struct CacheCell {
    dir: PathBuf,
}

impl ResultCache {
    /// The cache under `root` (made when a result is first written).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The cell of the result named by `what` (folder names, outermost first) under `key`.
    pub fn cell(&self, what: &[&str], key: &str) -> CacheCell {
        let dir = what
            .iter()
            .fold(self.root.clone(), |d, part| d.join(part))
            .join(key);
        CacheCell { dir }
    }
}

impl CacheCell {
    /// Its folder (a finished Table 1 cell's is a run directory the report reads).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The result in `file`, when it is there and parses as a `T`.
    pub fn read<T: DeserializeOwned>(&self, file: &str) -> Option<T> {
        let bytes = std::fs::read(self.dir.join(file)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Writes `value` to `file` (atomically: a reader sees the old file or the new one).
    pub fn write<T: Serialize>(&self, file: &str, value: &T) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| cardinal::Error::io(&self.dir, e))?;
        let text = serde_json::to_string_pretty(value).expect("a result serialises");
        Ok(cardinal::engine::write_atomic(
            &self.dir.join(file),
            text.as_bytes(),
        )?)
    }

    /// Every result in a file named `prefix*.json` that parses as a `T`, by file name.
    pub fn read_all<T: DeserializeOwned>(&self, prefix: &str) -> Vec<T> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(prefix) && n.ends_with(".json"))
            .collect();
        names.sort();
        names.iter().filter_map(|n| self.read(n)).collect()
    }
}

/// The file of one seed's result in a cell that holds every seed of it (`seed3.json`).
pub fn seed_file(seed: u64) -> String {
    format!("seed{seed}.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file cut short or of another shape is a miss; `read_all` keeps what parses.
    #[test]
    fn what_does_not_parse_is_a_miss() {
        let root = std::env::temp_dir().join(format!("cardinal-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let cell = ResultCache::new(&root).cell(&["d", "s"], "k");
        cell.write("seed0.json", &[1u64, 2]).unwrap();
        cell.write("seed1.json", &[3u64]).unwrap();
        std::fs::write(cell.dir().join("seed2.json"), b"[4, ").unwrap();
        std::fs::write(cell.dir().join("seed3.json"), b"{\"a\": 1}").unwrap();
        cell.write("other.json", &[5u64]).unwrap();
        assert_eq!(cell.read::<Vec<u64>>("seed2.json"), None);
        assert_eq!(cell.read::<Vec<u64>>("seed3.json"), None);
        assert_eq!(cell.read_all::<Vec<u64>>("seed"), [vec![1, 2], vec![3]]);
        assert_eq!(cell.dir(), root.join("d").join("s").join("k"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
