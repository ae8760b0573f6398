//! Finding and loading datasets by name or path, and the vendored Bibtex.

use std::fmt;
use std::path::{Path, PathBuf};

use super::arff::{read_arff_path_noted, read_mulan_noted};
use super::error::{DataError, ParseErrorKind, Result};
use super::invalid::InvalidInput;
use super::sniff::{csv_refused, sniff, Sniffed};
use super::svm::{
    looks_like_xmc, read_libsvm_path, read_libsvm_path_evidence, read_xmc_path, IndexBase,
    SvmOptions, MAX_NAMED_LABELS,
};
use super::{arff, open_bytes, Dataset, LabelSpec, TrainTest};

/// Something the loader decided about a file that the user should hear about: an attribute
/// dropped, labels taken from a MEKA header, LIBSVM features read as 0-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadNote {
    /// The file it concerns.
    pub path: PathBuf,
    /// What was decided, as a sentence.
    pub message: String,
    /// Which kind of decision it was, for callers that act on it.
    pub kind: NoteKind,
}

/// The kinds of [`LoadNote`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoteKind {
    /// A feature attribute was left out (an identifier or a `string`).
    Dropped,
    /// The labels were taken from a MEKA relation name.
    MekaLabels,
    /// LIBSVM feature indices were read as 0-based: a model trained on them must read new
    /// files the same way (see [`crate::data::inputs`]).
    ZeroBasedLibsvm,
    /// A CSV file's label columns were named by the MULAN XML file beside it.
    CsvLabels,
    /// A training file's test file beside it was taken as the test split.
    TestSibling,
}

impl fmt::Display for LoadNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// Adds a note unless one with the same message is there (train and test share a header, so
/// they would repeat it).
fn note(notes: &mut Vec<LoadNote>, path: &Path, kind: NoteKind, message: String) {
    if !notes.iter().any(|n| n.message == message) {
        notes.push(LoadNote {
            path: path.to_path_buf(),
            message,
            kind,
        });
    }
}

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
                    return Err(InvalidInput::TrainFraction {
                        value: train_fraction,
                    }
                    .into());
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
/// - A **name**: the folder `<dir>/<name>` where `dir` is `data_dir` (the front ends pass
///   `--data-dir`, else the environment variable `CARDINAL_DATA`); then the vendored datasets
///   ([`VENDORED`]).
///
/// An ARFF file without its XML file takes its labels from the MEKA option in its relation name
/// (`@relation 'Scene: -C 6'`, [`LabelSpec::Meka`]); without either it is an error.
///
/// Index bases, which this entry point cannot be told: labels 0-based; XMC features 0-based;
/// LIBSVM features 1-based, unless some file of the dataset (train or test: one rule for both,
/// so their columns agree) uses feature index 0 or carries scikit-learn's comment
/// `# Column indices are zero-based`: then 0-based (scikit-learn's `dump_svmlight_file` writes
/// 0-based by default). A comment `# Column indices are one-based` makes a file 1-based. A
/// 0-based dataset that never uses index 0 therefore reads as 1-based: every column moves down
/// by one, the same in train and test, so a model trained and tested through this function is
/// unaffected; use the readers with an explicit [`IndexBase`] when the numbering matters.
///
/// [`resolve_dataset_noted`] also returns what was decided on the way ([`LoadNote`]).
pub fn resolve_dataset(spec: &str, data_dir: Option<&Path>) -> Result<Resolved> {
    resolve_dataset_noted(spec, data_dir).map(|(r, _)| r)
}

/// [`resolve_dataset`], also returning notes on what the loader decided (attributes dropped,
/// labels from a MEKA header, 0-based LIBSVM features) for the caller to report.
pub fn resolve_dataset_noted(
    spec: &str,
    data_dir: Option<&Path>,
) -> Result<(Resolved, Vec<LoadNote>)> {
    let mut notes = Vec::new();
    let path = Path::new(spec);
    if path.is_dir() {
        return Ok((load_dir_noted(path, &mut notes)?, notes));
    }
    if path.is_file() {
        return Ok((load_file_noted(path, &mut notes)?, notes));
    }
    if path.exists() {
        return Err(InvalidInput::NotAFile {
            spec: spec.to_string(),
        }
        .into());
    }
    let mut looked = Vec::new();
    // No environment variable is read here: a front end passes `CARDINAL_DATA` as `data_dir`.
    let dir = data_dir.map(Path::to_path_buf);
    let is_name = !spec.is_empty() && !spec.contains(['/', '\\']) && spec != "." && spec != "..";
    if is_name {
        if let Some(dir) = &dir {
            let cand = dir.join(spec);
            if cand.is_dir() {
                return Ok((load_dir_noted(&cand, &mut notes)?, notes));
            }
            // A file of the data folder, named as a path would name it.
            if cand.is_file() {
                return Ok((load_file_noted(&cand, &mut notes)?, notes));
            }
            looked.push(format!("no folder or file {}", cand.display()));
        }
        if let Some(tt) = load_vendored(spec)? {
            return Ok((Resolved::Split(tt), notes));
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
    load_dir_noted(dir, &mut Vec::new())
}

fn load_dir_noted(dir: &Path, notes: &mut Vec<LoadNote>) -> Result<Resolved> {
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
    let xml_name = format!("{prefix}.xml");
    let xml = find(dir, &xml_name);
    if let (Some(tr), Some(te)) = (
        find(dir, &format!("{prefix}-train.arff")),
        find(dir, &format!("{prefix}-test.arff")),
    ) {
        let train = read_arff_file(&tr, xml.as_deref(), &xml_name, notes)?;
        let test = read_arff_file(&te, xml.as_deref(), &xml_name, notes)?;
        return pair(train, test, &prefix);
    }
    if let Some((prefix, tr, te)) = find_variant_split(dir)? {
        let xml_name = format!("{prefix}.xml");
        let xml = find(dir, &xml_name);
        let train = read_arff_file(&tr, xml.as_deref(), &xml_name, notes)?;
        let test = read_arff_file(&te, xml.as_deref(), &xml_name, notes)?;
        return pair(train, test, &prefix);
    }
    if let Some(single) = find(dir, &format!("{prefix}.arff")) {
        let mut d = read_arff_file(&single, xml.as_deref(), &xml_name, notes)?;
        d.name = prefix;
        return Ok(Resolved::Single(d));
    }
    for (tr, te) in [
        ("train.txt".to_string(), "test.txt".to_string()),
        (format!("{name}_train.txt"), format!("{name}_test.txt")),
    ] {
        if let (Some(tr), Some(te)) = (find(dir, &tr), find(dir, &te)) {
            let mut both = load_svm(&[tr, te], notes)?;
            let test = both.pop().unwrap_or_default();
            let train = both.pop().unwrap_or_default();
            return pair(train, test, &name);
        }
    }
    if let Some(xml) = &xml {
        return Err(not_found(
            dir,
            &format!(
                "only the label file {} is present, no ARFF data",
                xml.display()
            ),
        ));
    }
    Err(not_found(dir, "no MULAN (<name>-train.arff, <name>-test.arff, <name>.xml / <name>.arff) or LIBSVM/XMC (train.txt, test.txt) files"))
}

/// The one pair `<prefix>-train<variant>.arff` / `<prefix>-test<variant>.arff` in `dir` (each
/// optionally `.gz`), as MULAN ships some datasets (`Corel5k-train-sparse.arff`); `None` when
/// there is no such pair or more than one.
fn find_variant_split(dir: &Path) -> Result<Option<(String, PathBuf, PathBuf)>> {
    let entries = std::fs::read_dir(dir).map_err(|e| DataError::Io {
        path: Some(dir.into()),
        source: e,
    })?;
    let mut pairs: Vec<(String, PathBuf, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let f = e.file_name().to_string_lossy().into_owned();
            let base = f.strip_suffix(".gz").unwrap_or(&f);
            let stem = base.strip_suffix(".arff")?;
            let at = stem.rfind("-train")?;
            let (prefix, variant) = (&stem[..at], &stem[at + "-train".len()..]);
            let test = find(dir, &format!("{prefix}-test{variant}.arff"))?;
            Some((prefix.to_string(), e.path(), test))
        })
        .collect();
    pairs.sort();
    pairs.dedup_by(|a, b| a.0 == b.0 && a.2 == b.2);
    Ok((pairs.len() == 1).then(|| pairs.remove(0)))
}

/// Reads one ARFF file, its labels named by `xml` when there is one, else by the MEKA option of
/// its relation name; `xml_name` is the label file that was looked for (for the messages).
fn read_arff_file(
    arff: &Path,
    xml: Option<&Path>,
    xml_name: &str,
    notes: &mut Vec<LoadNote>,
) -> Result<Dataset> {
    let (ds, found) = match xml {
        Some(xml) => read_mulan_noted(arff, xml)?,
        None => read_arff_path_noted(arff, &LabelSpec::Meka).map_err(|e| match e.parse_kind() {
            Some(ParseErrorKind::NoMekaLabels { relation }) => InvalidInput::NoLabelSource {
                arff: arff.to_path_buf(),
                xml_name: xml_name.to_string(),
                relation: relation.clone(),
                problem: crate::data::arff::meka_problem(relation),
            }
            .into(),
            _ => e,
        })?,
    };
    for d in &found.dropped {
        note(notes, arff, NoteKind::Dropped, d.to_string());
    }
    if let Some(spec) = &found.meka_labels {
        let which = match spec {
            LabelSpec::First(n) => format!("the first {n} attributes (`-C {n}`)"),
            LabelSpec::Last(n) => format!("the last {n} attributes (`-C -{n}`)"),
            other => format!("{other:?}"),
        };
        note(
            notes,
            arff,
            NoteKind::MekaLabels,
            format!(
                "no label file {xml_name}: the labels are {which}, from the MEKA relation name"
            ),
        );
    }
    Ok(ds)
}

fn not_found(p: &Path, detail: &str) -> DataError {
    DataError::NotFound {
        spec: p.display().to_string(),
        detail: detail.to_string(),
    }
}

/// Loads one file (see [`resolve_dataset`]).
pub fn load_file(path: &Path) -> Result<Resolved> {
    load_file_noted(path, &mut Vec::new())
}

fn load_file_noted(path: &Path, notes: &mut Vec<LoadNote>) -> Result<Resolved> {
    let fname = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = fname.strip_suffix(".gz").unwrap_or(&fname);
    let named_arff = base.strip_suffix(".arff");
    let sniffed = match named_arff {
        Some(_) => Sniffed::Arff,
        None if super::csv::is_csv_name(path) => Sniffed::Csv,
        None => sniff(path)?,
    };
    if sniffed == Sniffed::Csv {
        // Its label columns named by a MULAN XML file beside it, as an ARFF file's are.
        let stem = base.rsplit_once('.').map_or(base, |(s, _)| s);
        let dir = path.parent().unwrap_or(Path::new("."));
        let Some(xml) = find(dir, &format!("{stem}.xml")) else {
            return Err(csv_refused(path));
        };
        let names = super::xml::read_label_xml_path(&xml)?;
        notes.push(LoadNote {
            path: path.to_path_buf(),
            message: format!("label columns named by {}", xml.display()),
            kind: NoteKind::CsvLabels,
        });
        return Ok(Resolved::Single(super::csv::read_csv_path(
            path,
            &super::csv::LabelColumns::Names(names),
            super::csv::CsvLabels::Required,
        )?));
    }
    // An ARFF file by its content, whatever its name (`.txt`): its label file is looked for
    // under its stem.
    let stem = named_arff.unwrap_or_else(|| base.rsplit_once('.').map_or(base, |(s, _)| s));
    if sniffed == Sniffed::Arff {
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut cands = vec![stem.to_string()];
        for suf in ["-train", "-test"] {
            if let Some(p) = stem.strip_suffix(suf) {
                cands.push(p.to_string());
            } else if let Some(at) = stem.rfind(suf) {
                // `<prefix>-train<variant>.arff` (`Corel5k-train-sparse.arff`).
                cands.push(stem[..at].to_string());
            }
        }
        let xml = cands.iter().find_map(|c| find(dir, &format!("{c}.xml")));
        let xml_name = format!("{}.xml", cands.last().map_or(stem, |s| s));
        return Ok(Resolved::Single(read_arff_file(
            path,
            xml.as_deref(),
            &xml_name,
            notes,
        )?));
    }
    let mut one = load_svm(&[path.to_path_buf()], notes)?;
    Ok(Resolved::Single(one.pop().unwrap_or_default()))
}

/// Reads the LIBSVM/XMC files of one dataset (train and test, or one file). XMC files are
/// 0-based; LIBSVM files share one feature index base, decided over all of them (see
/// [`resolve_dataset`]), so their columns agree.
fn load_svm(paths: &[PathBuf], notes: &mut Vec<LoadNote>) -> Result<Vec<Dataset>> {
    let mut out = Vec::with_capacity(paths.len());
    // (position, evidence) of the LIBSVM files, read 0-based so that no index is refused yet.
    let mut svm = Vec::new();
    for (k, p) in paths.iter().enumerate() {
        if looks_like_xmc(p)? {
            out.push(read_xmc_path(p, IndexBase::Zero)?);
        } else {
            let (ds, ev) = read_libsvm_path_evidence(p, &SvmOptions::new(IndexBase::Zero))?;
            svm.push((k, ev));
            out.push(ds);
        }
    }
    let declared = |b: IndexBase| {
        svm.iter()
            .find(|(_, ev)| ev.declared == Some(b))
            .map(|e| e.0)
    };
    let (zero_declared, one_declared) = (declared(IndexBase::Zero), declared(IndexBase::One));
    if let (Some(z), Some(o)) = (zero_declared, one_declared) {
        return Err(InvalidInput::MixedIndexBases {
            zero: paths[z].to_path_buf(),
            one: paths[o].to_path_buf(),
        }
        .into());
    }
    let zero_used = svm.iter().find(|(_, ev)| ev.zero).map(|e| e.0);
    let why_zero = match (zero_declared, one_declared, zero_used) {
        (Some(k), _, _) => Some((k, "its comment declares zero-based column indices")),
        (None, None, Some(k)) => Some((k, "it uses feature index 0")),
        _ => None,
    };
    if let Some((k, why)) = why_zero {
        let also = if svm.len() > 1 {
            " (and so are the other files of the dataset)"
        } else {
            ""
        };
        note(
            notes,
            &paths[k],
            NoteKind::ZeroBasedLibsvm,
            format!("LIBSVM features read as 0-based{also}: {why}"),
        );
        return Ok(out);
    }
    if let Some(k) = zero_used {
        // Declared one-based, yet index 0 occurs: the 1-based reader's located error says where.
        let e = read_libsvm_path(&paths[k], &SvmOptions::new(IndexBase::One))
            .err()
            .unwrap_or_else(|| {
                InvalidInput::ZeroIndexInOneBased {
                    path: paths[k].to_path_buf(),
                }
                .into()
            });
        return Err(e);
    }
    for &(k, _) in &svm {
        // Read 0-based without a 0 index: as 1-based every column moves down by one.
        let f = &mut out[k].features;
        f.indices.iter_mut().for_each(|i| *i -= 1);
        f.n_cols = f.n_cols.saturating_sub(1);
    }
    Ok(out)
}

/// Pairs train and test: widens inferred dimensions to agree, checks names match.
fn pair(mut train: Dataset, mut test: Dataset, name: &str) -> Result<Resolved> {
    if train.feature_names.is_empty() && test.feature_names.is_empty() {
        let d = train.n_features().max(test.n_features());
        train.features.n_cols = d;
        test.features.n_cols = d;
        // Label ids are sized by the largest in either file; the names follow the readers'
        // rule (ids as names, none above MAX_NAMED_LABELS).
        let l = train.n_labels().max(test.n_labels());
        for ds in [&mut train, &mut test] {
            if ds.labels.n_labels < l {
                ds.labels.n_labels = l;
                ds.label_names = if l <= MAX_NAMED_LABELS {
                    (0..l).map(|i| i.to_string()).collect()
                } else {
                    Vec::new()
                };
            }
        }
    }
    if train.feature_names != test.feature_names || train.n_features() != test.n_features() {
        return Err(InvalidInput::SplitMismatch {
            name: name.to_string(),
            what: "features",
        }
        .into());
    }
    if train.label_names != test.label_names {
        return Err(InvalidInput::SplitMismatch {
            name: name.to_string(),
            what: "labels",
        }
        .into());
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
