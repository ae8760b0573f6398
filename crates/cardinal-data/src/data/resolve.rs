//! Finding and loading datasets by name or path, and the vendored Bibtex.

use std::path::{Path, PathBuf};

use super::arff::read_mulan;
use super::error::{DataError, Result};
use super::svm::{looks_like_xmc, read_libsvm_path, read_xmc_path, IndexBase, SvmOptions};
use super::{arff, open_bytes, Dataset, LabelSpec, TrainTest};

/// Names of the datasets embedded in the library.
pub const VENDORED: &[&str] = &["bibtex"];

// Paths relative to this file: the crate embeds the repository's vendored copies.
const BIBTEX_TRAIN: &[u8] = include_bytes!("../../../../data/bibtex/bibtex-train.arff.gz");
const BIBTEX_TEST: &[u8] = include_bytes!("../../../../data/bibtex/bibtex-test.arff.gz");
const BIBTEX_XML: &[u8] = include_bytes!("../../../../data/bibtex/bibtex.xml.gz");

/// A resolved dataset: with its standard train/test split, or a single file without one.
// Made once per load: boxing the larger variant would only add friction for users.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// A dataset that ships with its train/test split.
    Split(TrainTest),
    /// A single file without a split.
    Single(Dataset),
}

impl Resolved {
    /// The dataset's name.
    pub fn name(&self) -> &str {
        match self {
            Resolved::Split(tt) => &tt.train.name,
            Resolved::Single(d) => &d.name,
        }
    }

    /// The standard split, or for a single file a seeded random split with
    /// `round(n * train_fraction)` training rows and the rest for test
    /// (see [`Dataset::train_test_split`] for fixed sizes).
    pub fn into_train_test(self, train_fraction: f64, seed: u64) -> Result<TrainTest> {
        match self {
            Resolved::Split(tt) => Ok(tt),
            Resolved::Single(d) => {
                if !(0.0..=1.0).contains(&train_fraction) {
                    return Err(DataError::Invalid(format!(
                        "train fraction {train_fraction} not in [0, 1]"
                    )));
                }
                let n_train = (d.n_rows() as f64 * train_fraction).round() as usize;
                d.train_test_split(n_train, d.n_rows() - n_train, seed)
            }
        }
    }
}

/// Train and test sizes used by the papers for single-file datasets: MULAN's Bookmarks
/// (87 856 rows) is split 60 000 / 27 856, the sizes quoted for the SPEN/DVN experiments (their
/// own row assignment was never published in a reachable form, so the split is seeded).
pub fn paper_split_sizes(name: &str, n_rows: usize) -> Option<(usize, usize)> {
    (name.eq_ignore_ascii_case("bookmarks") && n_rows == 87_856).then_some((60_000, 27_856))
}

impl Resolved {
    /// Like [`Resolved::into_train_test`], but a single-file dataset with known paper split
    /// sizes ([`paper_split_sizes`]) gets those sizes.
    pub fn into_paper_split(self, train_fraction: f64, seed: u64) -> Result<TrainTest> {
        match &self {
            Resolved::Single(d) => match paper_split_sizes(&d.name, d.n_rows()) {
                Some((n_train, n_test)) => d.train_test_split(n_train, n_test, seed),
                None => self.into_train_test(train_fraction, seed),
            },
            Resolved::Split(_) => self.into_train_test(train_fraction, seed),
        }
    }
}

/// The vendored dataset `name` (case-insensitive), decoded from the bytes embedded in the
/// library; `None` if there is no such dataset. Works from any directory.
pub fn vendored(name: &str) -> Option<TrainTest> {
    load_vendored(name).ok().flatten()
}

/// Like [`vendored`], reporting a decoding error instead of hiding it.
pub fn load_vendored(name: &str) -> Result<Option<TrainTest>> {
    if !name.eq_ignore_ascii_case("bibtex") {
        return Ok(None);
    }
    let names = super::read_label_xml(open_bytes(BIBTEX_XML))?;
    let spec = LabelSpec::Names(names);
    let label =
        |what: &str, e: DataError| e.with_path(Path::new(&format!("<vendored>/bibtex/{what}")));
    let train = arff::read_arff(open_bytes(BIBTEX_TRAIN), &spec)
        .map_err(|e| label("bibtex-train.arff.gz", e))?;
    let mut test = arff::read_arff(open_bytes(BIBTEX_TEST), &spec)
        .map_err(|e| label("bibtex-test.arff.gz", e))?;
    let mut train = train;
    train.name = "bibtex".into();
    test.name = "bibtex".into();
    Ok(Some(TrainTest { train, test }))
}

/// Resolves `spec`, a path or a name.
///
/// - An existing **folder**: MULAN layout `<name>-train.arff`, `<name>-test.arff`, `<name>.xml`
///   (each optionally `.gz`; if the folder name differs, the single `*-train.arff` in it decides
///   the prefix), or a single `<name>.arff` with `<name>.xml` (→ [`Resolved::Single`]), or
///   LIBSVM/XMC `train.txt` + `test.txt` / `<name>_train.txt` + `<name>_test.txt`.
/// - An existing **file**: `*.arff[.gz]` with its XML beside it (`<stem>.xml`, or `<prefix>.xml`
///   for `<prefix>-train.arff` / `<prefix>-test.arff`) → `Single`; any other file is read as XMC
///   if its first line is three integers `N D L`, else as LIBSVM.
/// - A **name**: the folder `<dir>/<name>` where `dir` is `data_dir`, else the environment
///   variable `CARDINAL_DATA`; then the vendored datasets ([`VENDORED`]).
///
/// Index bases follow each format's convention, since this entry point cannot be told: XMC
/// features 0-based, LIBSVM features 1-based, labels 0-based (use the readers to choose).
pub fn resolve_dataset(spec: &str, data_dir: Option<&Path>) -> Result<Resolved> {
    let path = Path::new(spec);
    if path.is_dir() {
        return load_dir(path);
    }
    if path.is_file() {
        return load_file(path);
    }
    let mut looked = Vec::new();
    let env_dir = std::env::var_os("CARDINAL_DATA").map(PathBuf::from);
    let dir = data_dir.map(Path::to_path_buf).or(env_dir);
    let is_name = !spec.is_empty() && !spec.contains(['/', '\\']) && spec != "." && spec != "..";
    if is_name {
        if let Some(dir) = &dir {
            let cand = dir.join(spec);
            if cand.is_dir() {
                return load_dir(&cand);
            }
            looked.push(format!("no folder {}", cand.display()));
        }
        if let Some(tt) = load_vendored(spec)? {
            return Ok(Resolved::Split(tt));
        }
        looked.push(format!("not a vendored dataset ({})", VENDORED.join(", ")));
    } else {
        looked.push("no such file or folder".into());
    }
    if dir.is_none() && is_name {
        looked.push("no data directory given (--data-dir or CARDINAL_DATA)".into());
    }
    Err(DataError::NotFound {
        spec: spec.to_string(),
        detail: looked.join("; "),
    })
}

/// Finds `<base>` or `<base>.gz` in `dir`.
fn find(dir: &Path, base: &str) -> Option<PathBuf> {
    [base.to_string(), format!("{base}.gz")]
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// Loads a dataset folder (see [`resolve_dataset`]).
pub fn load_dir(dir: &Path) -> Result<Resolved> {
    let name = dir
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut prefix = name.clone();
    if find(dir, &format!("{prefix}-train.arff")).is_none() {
        // Folder named differently from its files: use the one `*-train.arff` inside.
        let entries = std::fs::read_dir(dir).map_err(|e| DataError::Io {
            path: Some(dir.into()),
            source: e,
        })?;
        let mut found: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let f = e.file_name().to_string_lossy().into_owned();
                let f = f.strip_suffix(".gz").unwrap_or(&f).to_string();
                f.strip_suffix("-train.arff").map(str::to_string)
            })
            .collect();
        found.sort();
        found.dedup();
        if found.len() == 1 {
            prefix = found.pop().unwrap_or_default();
        }
    }
    let xml = find(dir, &format!("{prefix}.xml"));
    if let (Some(tr), Some(te)) = (
        find(dir, &format!("{prefix}-train.arff")),
        find(dir, &format!("{prefix}-test.arff")),
    ) {
        let xml = xml.ok_or_else(|| {
            not_found(
                dir,
                &format!("{prefix}-train.arff found but no {prefix}.xml label file"),
            )
        })?;
        let (train, test) = (read_mulan(&tr, &xml)?, read_mulan(&te, &xml)?);
        return pair(train, test, &prefix);
    }
    if let Some(single) = find(dir, &format!("{prefix}.arff")) {
        let xml = xml.ok_or_else(|| {
            not_found(
                dir,
                &format!("{prefix}.arff found but no {prefix}.xml label file"),
            )
        })?;
        let mut d = read_mulan(&single, &xml)?;
        d.name = prefix;
        return Ok(Resolved::Single(d));
    }
    for (tr, te) in [
        ("train.txt".to_string(), "test.txt".to_string()),
        (format!("{name}_train.txt"), format!("{name}_test.txt")),
    ] {
        if let (Some(tr), Some(te)) = (find(dir, &tr), find(dir, &te)) {
            let (train, test) = (load_svm(&tr)?, load_svm(&te)?);
            return pair(train, test, &name);
        }
    }
    if let Some(xml) = &xml {
        if find(dir, &format!("{prefix}.arff")).is_none() {
            return Err(not_found(
                dir,
                &format!(
                    "only the label file {} is present, no ARFF data",
                    xml.display()
                ),
            ));
        }
    }
    Err(not_found(dir, "no MULAN (<name>-train.arff, <name>-test.arff, <name>.xml / <name>.arff) or LIBSVM/XMC (train.txt, test.txt) files"))
}

fn not_found(p: &Path, detail: &str) -> DataError {
    DataError::NotFound {
        spec: p.display().to_string(),
        detail: detail.to_string(),
    }
}

/// Loads one file (see [`resolve_dataset`]).
pub fn load_file(path: &Path) -> Result<Resolved> {
    let fname = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = fname.strip_suffix(".gz").unwrap_or(&fname);
    if let Some(stem) = base.strip_suffix(".arff") {
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut cands = vec![stem.to_string()];
        for suf in ["-train", "-test"] {
            if let Some(p) = stem.strip_suffix(suf) {
                cands.push(p.to_string());
            }
        }
        let xml = cands.iter().find_map(|c| find(dir, &format!("{c}.xml")));
        let xml = xml.ok_or_else(|| {
            not_found(
                path,
                &format!(
                    "no label file {}.xml beside it",
                    cands.last().map_or(stem, |s| s)
                ),
            )
        })?;
        return Ok(Resolved::Single(read_mulan(path, &xml)?));
    }
    Ok(Resolved::Single(load_svm(path)?))
}

fn load_svm(path: &Path) -> Result<Dataset> {
    if looks_like_xmc(path)? {
        read_xmc_path(path, IndexBase::Zero)
    } else {
        read_libsvm_path(path, &SvmOptions::new(IndexBase::One))
    }
}

/// Pairs train and test: widens inferred dimensions to agree, checks names match.
fn pair(mut train: Dataset, mut test: Dataset, name: &str) -> Result<Resolved> {
    if train.feature_names.is_empty() && test.feature_names.is_empty() {
        let d = train.n_features().max(test.n_features());
        train.features.n_cols = d;
        test.features.n_cols = d;
        let l = train.n_labels().max(test.n_labels());
        for ds in [&mut train, &mut test] {
            if ds.labels.n_labels < l {
                ds.labels.n_labels = l;
                ds.label_names = (0..l).map(|i| i.to_string()).collect();
            }
        }
    }
    if train.feature_names != test.feature_names || train.n_features() != test.n_features() {
        return Err(DataError::Invalid(format!(
            "{name}: train and test have different features"
        )));
    }
    if train.label_names != test.label_names {
        return Err(DataError::Invalid(format!(
            "{name}: train and test have different labels"
        )));
    }
    train.name = name.to_string();
    test.name = name.to_string();
    Ok(Resolved::Split(TrainTest { train, test }))
}

#[cfg(test)]
mod paper_split_tests {
    use super::*;

    #[test]
    fn bookmarks_gets_the_papers_sizes_and_nothing_else_does() {
        assert_eq!(
            paper_split_sizes("Bookmarks", 87_856),
            Some((60_000, 27_856))
        );
        assert_eq!(paper_split_sizes("bookmarks", 1000), None);
        assert_eq!(paper_split_sizes("bibtex", 87_856), None);
    }
}
