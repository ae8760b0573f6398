//! Reading new data for a trained model: the rows to predict, in file order, laid out in the
//! model's feature columns.
//!
//! A model records an [`InputSchema`]: its feature count, the feature names (for formats that
//! have them), its label names and, for LIBSVM data, the feature index base it was read with.
//! [`read_inputs`] reads a file or dataset against it:
//!
//! - every row of a single file, in file order, with no split; the test file of a dataset that
//!   ships with a split;
//! - labels are optional: an ARFF file may leave out the label attributes or hold `?` in them
//!   (attributes named as the model's labels are skipped unread), a LIBSVM line may have no
//!   labels;
//! - dimensions come from the model: a LIBSVM file is read with the model's index base and
//!   feature count, so a file whose last features never occur is fine, and an index beyond the
//!   model's features is refused with its line;
//! - features are matched by name where both sides have names ([`align_features`]): reordered
//!   columns are aligned; missing, extra or renamed ones are refused, naming them. Without
//!   names, a narrower file is accepted (the missing columns are zero) and a wider one refused.

use std::collections::HashMap;
use std::path::Path;

use super::arff::read_arff_path;
use super::error::Result;
use super::invalid::InvalidInput;
use super::resolve::{resolve_dataset_noted, LoadNote, Resolved};
use super::sniff::{sniff, Sniffed};
use super::svm::{
    declared_base_path, looks_like_xmc, read_libsvm_path, read_xmc_path, IndexBase, SvmOptions,
};
use super::{CsrMatrix, LabelSets, LabelSpec};

/// What a trained model knows of its inputs: enough to read new data the way its training
/// data was read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InputSchema {
    /// Feature columns of the model.
    pub n_features: usize,
    /// Labels the model predicts.
    pub n_labels: usize,
    /// Their names; empty when the training data's format had none.
    pub feature_names: Vec<String>,
    /// The model's label names (empty when unknown): ARFF attributes with these names are
    /// labels, skipped when predicting.
    pub label_names: Vec<String>,
    /// The feature index base the training data was read with, when it was LIBSVM.
    pub libsvm_base: Option<IndexBase>,
}

/// Rows read for a model by [`read_inputs`].
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    /// The data's name (relation name or file stem).
    pub name: String,
    /// The features, in the model's columns (`n_cols` = the model's feature count).
    pub features: CsrMatrix,
    /// The label sets, when the data has them (a dataset with a split, or a file read with its
    /// labels); `None` for unlabeled rows.
    pub labels: Option<LabelSets>,
    /// The data's label names where its format names labels (ARFF), to check against the
    /// model's; empty otherwise.
    pub label_names: Vec<String>,
    /// What the loader decided on the way, for the user.
    pub notes: Vec<LoadNote>,
}

/// Whether [`read_inputs`] reads the labels of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Labels {
    /// Labels are not needed (prediction): label attributes are skipped unread.
    Ignore,
    /// Labels are needed (evaluation): read by the model's label names, checked against its
    /// label count.
    Read,
}

/// Reads the rows of `spec` (a file, folder or dataset name, as [`resolve_dataset_noted`]
/// finds it) for a model with inputs `schema`: see the module docs.
pub fn read_inputs(
    spec: &str,
    data_dir: Option<&Path>,
    schema: &InputSchema,
    labels: Labels,
) -> Result<Inputs> {
    let path = Path::new(spec);
    if path.is_file() {
        if let Some(inputs) = read_file_for_model(path, schema, labels)? {
            return check_label_count(inputs, schema, labels, spec);
        }
    }
    let (resolved, notes) = resolve_dataset_noted(spec, data_dir)?;
    let ds = match resolved {
        Resolved::Split(tt) => tt.test,
        Resolved::Single(d) => d,
    };
    let features = align_features(&ds.features, &ds.feature_names, schema, spec)?;
    // A file that names no labels and holds none (LIBSVM rows of features only) is
    // unlabelled, whatever format the model trained on.
    let unlabelled = ds.label_names.is_empty() && ds.labels.indices.is_empty();
    let inputs = Inputs {
        name: ds.name,
        features,
        labels: (!unlabelled).then_some(ds.labels),
        label_names: ds.label_names,
        notes,
    };
    check_label_count(inputs, schema, labels, spec)
}

/// Refuses labels that do not fit the model (for evaluation), and requires labels when they are
/// read. A name-less file whose largest labels never occur is widened to the model's count.
fn check_label_count(
    mut inputs: Inputs,
    schema: &InputSchema,
    labels: Labels,
    spec: &str,
) -> Result<Inputs> {
    if labels == Labels::Ignore {
        return Ok(inputs);
    }
    let Some(sets) = &mut inputs.labels else {
        return Err(InvalidInput::NoLabelsToEvaluate {
            input: spec.to_string(),
        }
        .into());
    };
    if sets.n_labels > schema.n_labels {
        return Err(InvalidInput::CountMismatch {
            input: spec.to_string(),
            what: "labels",
            found: sets.n_labels,
            expected: schema.n_labels,
        }
        .into());
    }
    sets.n_labels = schema.n_labels;
    Ok(inputs)
}

/// A single file read with the model's rules; `None` when the model's schema cannot say how
/// (an ARFF file for a model without label names, a LIBSVM file for a model that was not
/// trained on LIBSVM): then the general rules of [`resolve_dataset_noted`] apply.
fn read_file_for_model(
    path: &Path,
    schema: &InputSchema,
    labels: Labels,
) -> Result<Option<Inputs>> {
    let fname = path.file_name().map(|s| s.to_string_lossy().into_owned());
    let fname = fname.unwrap_or_default();
    let named_arff = fname
        .strip_suffix(".gz")
        .unwrap_or(&fname)
        .ends_with(".arff");
    // The content decides where the name does not: an ARFF file saved as `.txt`, or CSV.
    let sniffed = if named_arff {
        Sniffed::Arff
    } else if super::csv::is_csv_name(path) {
        Sniffed::Csv
    } else {
        sniff(path)?
    };
    if sniffed == Sniffed::Csv {
        return read_csv_for_model(path, schema, labels).map(Some);
    }
    let is_arff = sniffed == Sniffed::Arff;
    let spec = path.display().to_string();
    let mut label_names = Vec::new();
    let mut libsvm = false;
    let ds = if is_arff {
        if schema.label_names.is_empty() {
            return Ok(None);
        }
        let names = schema.label_names.clone();
        let spec = match labels {
            Labels::Ignore => LabelSpec::Skip(names),
            Labels::Read => LabelSpec::Names(names),
        };
        let ds = read_arff_path(path, &spec)?;
        label_names.clone_from(&ds.label_names);
        ds
    } else if looks_like_xmc(path)? {
        read_xmc_path(path, IndexBase::Zero)?
    } else {
        let Some(model_base) = schema.libsvm_base else {
            return Ok(None);
        };
        // A file that declares its base (scikit-learn's `dump_svmlight_file` comment) is read
        // with it, as `data stats` and `train` read it: index `i` of a 0-based file is
        // index `i + 1` of a 1-based one, the same column of the model.
        let base = declared_base_path(path)?.unwrap_or(model_base);
        libsvm = true;
        let opts = SvmOptions {
            feature_base: base,
            label_base: IndexBase::Zero,
            n_features: Some(schema.n_features),
            // The model's label count: a label id beyond it is refused with its line, and a
            // file whose largest labels never occur (labels are optional) is not narrower.
            n_labels: Some(schema.n_labels),
        };
        read_libsvm_path(path, &opts)?
    };
    let features = align_features(&ds.features, &ds.feature_names, schema, &spec)?;
    // A LIBSVM file read for a model has the model's label count: it has labels when a row
    // names one.
    let has_labels = labels == Labels::Read
        || (ds.labels.n_labels > 0 && !(libsvm && ds.labels.indices.is_empty()));
    Ok(Some(Inputs {
        name: ds.name,
        features,
        labels: has_labels.then_some(ds.labels),
        label_names,
        notes: Vec::new(),
    }))
}

/// The CSV file `path` read for a model: its label columns are those named by the model's
/// labels (required to evaluate, skipped where present to predict), its other columns features
/// matched to the model's by name.
fn read_csv_for_model(path: &Path, schema: &InputSchema, labels: Labels) -> Result<Inputs> {
    use super::csv::{read_csv_path, CsvLabels, LabelColumns};
    if schema.feature_names.is_empty() || schema.label_names.is_empty() {
        return Err(InvalidInput::CsvForUnnamedModel {
            path: path.to_path_buf(),
        }
        .into());
    }
    let mode = match labels {
        Labels::Read => CsvLabels::Required,
        Labels::Ignore => CsvLabels::Skipped,
    };
    let names = LabelColumns::Names(schema.label_names.clone());
    let ds = read_csv_path(path, &names, mode)?;
    let spec = path.display().to_string();
    let features = align_features(&ds.features, &ds.feature_names, schema, &spec)?;
    let has_labels = labels == Labels::Read;
    Ok(Inputs {
        name: ds.name,
        features,
        labels: has_labels.then_some(ds.labels),
        label_names: ds.label_names,
        notes: Vec::new(),
    })
}

/// Most names listed in one error message.
const SHOWN_NAMES: usize = 8;

/// `name` with its combining marks written as `\u{301}`: a name in decomposed Unicode (NFD,
/// `e` + U+0301) and the same name composed (NFC, `é`) print alike, and a message that names
/// one as missing and the other as unknown must show how they differ.
pub(crate) fn visible(name: &str) -> String {
    let combining = |c: char| matches!(c as u32, 0x300..=0x36F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F);
    name.chars()
        .map(|c| {
            if combining(c) {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `names` for a message, quoted, combining marks shown, at most [`SHOWN_NAMES`] of them.
pub(crate) fn listed(names: &[&str]) -> String {
    let mut s: Vec<String> = names
        .iter()
        .take(SHOWN_NAMES)
        .map(|n| format!("`{}`", visible(n)))
        .collect();
    if names.len() > SHOWN_NAMES {
        s.push(format!("and {} more", names.len() - SHOWN_NAMES));
    }
    s.join(", ")
}

/// For each of `model`'s names, its column among `data`'s (`None`: the same order already).
/// Missing, extra and repeated names are refused, named; `what` (features, targets) and
/// `source` name them in errors.
pub(crate) fn match_by_name(
    data: &[String],
    model: &[String],
    what: &str,
    source: &str,
) -> Result<Option<Vec<usize>>> {
    if data == model {
        return Ok(None);
    }
    let mut at: HashMap<&str, usize> = HashMap::with_capacity(data.len());
    for (j, n) in data.iter().enumerate() {
        if let Some(first) = at.insert(n.as_str(), j) {
            return Err(InvalidInput::DuplicateColumn {
                input: source.to_string(),
                name: n.clone(),
                what: what.to_string(),
                first: first + 1,
                second: j + 1,
            }
            .into());
        }
    }
    let missing: Vec<&str> = model
        .iter()
        .map(String::as_str)
        .filter(|n| !at.contains_key(n))
        .collect();
    let known: std::collections::HashSet<&str> = model.iter().map(String::as_str).collect();
    let extra: Vec<&str> = data
        .iter()
        .map(String::as_str)
        .filter(|n| !known.contains(n))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        let owned = |names: Vec<&str>| names.into_iter().map(str::to_owned).collect();
        return Err(InvalidInput::ColumnsDiffer {
            input: source.to_string(),
            what: what.to_string(),
            missing: owned(missing),
            extra: owned(extra),
            hint: String::new(),
        }
        .into());
    }
    Ok(Some(model.iter().map(|n| at[n.as_str()]).collect()))
}

/// `e`, where it names data columns the model does not know as features and the model has
/// named labels, with a hint: label columns are found by the model's label names, so a
/// renamed label column reads as an unknown feature.
fn with_label_hint(e: crate::data::DataError, labels: &[String]) -> crate::data::DataError {
    match e {
        crate::data::DataError::Invalid(InvalidInput::ColumnsDiffer {
            input,
            what,
            missing,
            extra,
            ..
        }) if !labels.is_empty() && !extra.is_empty() => {
            let names: Vec<&str> = labels.iter().map(String::as_str).collect();
            InvalidInput::ColumnsDiffer {
                input,
                what,
                missing,
                extra,
                hint: format!(
                    "; label columns are found by the model's label names ({}), so a label \
                     column renamed reads as an unknown feature: give it the model's name",
                    listed(&names)
                ),
            }
            .into()
        }
        e => e,
    }
}

/// `x`, whose columns are named `names` (empty: no names), laid out in the columns of a model
/// with inputs `schema`; `source` names the data in errors.
///
/// With names on both sides, every model feature must be in the data and every data column in
/// the model: columns are matched by name, whatever their order. Otherwise columns are matched
/// by position, and the data may be narrower than the model (its missing columns are zero)
/// but not wider.
pub fn align_features(
    x: &CsrMatrix,
    names: &[String],
    schema: &InputSchema,
    source: &str,
) -> Result<CsrMatrix> {
    let model = &schema.feature_names;
    if names.is_empty() || model.is_empty() {
        if x.n_cols > schema.n_features {
            return Err(InvalidInput::CountMismatch {
                input: source.to_string(),
                what: "feature columns",
                found: x.n_cols,
                expected: schema.n_features,
            }
            .into());
        }
        let mut out = x.clone();
        out.n_cols = schema.n_features;
        return Ok(out);
    }
    if names == model.as_slice() {
        return Ok(x.clone());
    }
    let cols = match match_by_name(names, model, "features", source) {
        Ok(Some(cols)) => cols,
        Ok(None) => return Ok(x.clone()),
        Err(e) => return Err(with_label_hint(e, &schema.label_names)),
    };
    // Data column -> model column.
    let mut to = vec![0u32; names.len()];
    for (model_col, &data_col) in cols.iter().enumerate() {
        to[data_col] = model_col as u32;
    }
    let mut out = CsrMatrix {
        n_rows: x.n_rows,
        n_cols: schema.n_features,
        indptr: Vec::with_capacity(x.indptr.len()),
        indices: Vec::with_capacity(x.indices.len()),
        values: Vec::with_capacity(x.values.len()),
    };
    out.indptr.push(0);
    let mut row: Vec<(u32, f32)> = Vec::new();
    for r in 0..x.n_rows {
        let (a, b) = (x.indptr[r], x.indptr[r + 1]);
        row.clear();
        row.extend((a..b).map(|k| (to[x.indices[k] as usize], x.values[k])));
        row.sort_unstable_by_key(|&(c, _)| c);
        out.indices.extend(row.iter().map(|&(c, _)| c));
        out.values.extend(row.iter().map(|&(_, v)| v));
        out.indptr.push(out.indices.len());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn dense(x: &CsrMatrix) -> Vec<Vec<f32>> {
        (0..x.n_rows)
            .map(|r| {
                let mut row = vec![0.0; x.n_cols];
                for k in x.indptr[r]..x.indptr[r + 1] {
                    row[x.indices[k] as usize] = x.values[k];
                }
                row
            })
            .collect()
    }

    fn csr(rows: &[&[f32]]) -> CsrMatrix {
        let mut m = CsrMatrix {
            n_rows: rows.len(),
            n_cols: rows[0].len(),
            indptr: vec![0],
            indices: vec![],
            values: vec![],
        };
        for r in rows {
            for (c, &v) in r.iter().enumerate() {
                if v != 0.0 {
                    m.indices.push(c as u32);
                    m.values.push(v);
                }
            }
            m.indptr.push(m.indices.len());
        }
        m
    }

    fn schema(n: usize, f: &[&str]) -> InputSchema {
        InputSchema {
            n_features: n,
            n_labels: 3,
            feature_names: names(f),
            ..InputSchema::default()
        }
    }

    /// A column the model does not know is told with the model's label names when it has
    /// them (a renamed label column reads as a feature), and a name in decomposed Unicode is
    /// shown apart from its composed twin.
    #[test]
    fn unknown_columns_hint_at_renamed_labels_and_show_unicode_forms() {
        let x = csr(&[&[1.0, 2.0]]);
        let mut s = schema(2, &["a", "caf\u{e9}"]);
        s.label_names = names(&["amazed-surprised", "calm"]);
        let e = align_features(&x, &names(&["a", "amazed"]), &s, "t.arff")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not know: `amazed`")
                && e.contains("`amazed-surprised`, `calm`")
                && e.contains("give it the model's name"),
            "{e}"
        );
        let e = align_features(&x, &names(&["a", "cafe\u{301}"]), &s, "t.arff")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("missing: `caf\u{e9}`") && e.contains("does not know: `cafe\\u{301}`"),
            "{e}"
        );
        // Without label names, no hint.
        s.label_names.clear();
        let e = align_features(&x, &names(&["a", "amazed"]), &s, "t.arff")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("label columns"), "{e}");
    }

    #[test]
    fn permuted_named_columns_are_aligned_to_the_model() {
        let x = csr(&[&[1.0, 0.0, 3.0], &[0.0, 5.0, 6.0]]);
        let got = align_features(
            &x,
            &names(&["c", "a", "b"]),
            &schema(3, &["a", "b", "c"]),
            "f",
        )
        .unwrap();
        assert_eq!(dense(&got), vec![vec![0.0, 3.0, 1.0], vec![5.0, 6.0, 0.0]]);
    }

    #[test]
    fn missing_extra_and_renamed_features_are_named() {
        let x = csr(&[&[1.0, 2.0]]);
        let e = align_features(&x, &names(&["a", "z"]), &schema(2, &["a", "b"]), "new.arff")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("new.arff") && e.contains("`b`") && e.contains("`z`"),
            "{e}"
        );
        let e = align_features(&x, &names(&["a", "b"]), &schema(3, &["a", "b", "c"]), "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 of the model's features missing: `c`"), "{e}");
        let e = align_features(&x, &names(&["a", "a"]), &schema(2, &["a", "b"]), "f")
            .unwrap_err()
            .to_string();
        assert!(e.contains("appears twice"), "{e}");
    }

    #[test]
    fn nameless_data_may_be_narrower_but_not_wider() {
        let x = csr(&[&[1.0, 2.0]]);
        let got = align_features(&x, &[], &schema(4, &[]), "f").unwrap();
        assert_eq!(dense(&got), vec![vec![1.0, 2.0, 0.0, 0.0]]);
        let e = align_features(&x, &[], &schema(1, &[]), "f.svm").unwrap_err();
        assert!(e
            .to_string()
            .contains("2 feature columns where the model has 1"));
    }

    /// A model trained on 1-based LIBSVM data, four features, five labels.
    fn svm_schema() -> InputSchema {
        InputSchema {
            n_features: 4,
            n_labels: 5,
            libsvm_base: Some(IndexBase::One),
            ..InputSchema::default()
        }
    }

    fn svm_file(name: &str, text: &str) -> std::path::PathBuf {
        let p =
            std::env::temp_dir().join(format!("cardinal-inputs-{name}-{}.svm", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    /// scikit-learn's `# Column indices are zero-based` comment is honoured when predicting,
    /// as when training: index 0 is the first column, not an error, and nothing shifts.
    #[test]
    fn a_declared_zero_based_file_is_read_zero_based_for_a_model() {
        let zero = svm_file(
            "zero",
            "# Generated by dump_svmlight_file\n# Column indices are zero-based\n1 0:1 3:2\n",
        );
        let one = svm_file("one", "1 1:1 4:2\n");
        for labels in [Labels::Ignore, Labels::Read] {
            let a = read_inputs(zero.to_str().unwrap(), None, &svm_schema(), labels).unwrap();
            let b = read_inputs(one.to_str().unwrap(), None, &svm_schema(), labels).unwrap();
            assert_eq!(dense(&a.features), vec![vec![1.0, 0.0, 0.0, 2.0]]);
            assert_eq!(a.features, b.features);
        }
        std::fs::remove_file(zero).unwrap();
        std::fs::remove_file(one).unwrap();
    }

    /// Labels are optional when predicting: a file whose largest label id is below the
    /// model's last is read with the model's label count; one beyond it is refused with its
    /// line.
    #[test]
    fn a_file_with_fewer_label_ids_is_read_with_the_models_count() {
        let p = svm_file("few", "0,2 1:1\n 2:1\n");
        let got = read_inputs(p.to_str().unwrap(), None, &svm_schema(), Labels::Ignore).unwrap();
        assert_eq!(got.labels.unwrap().n_labels, 5);
        let none = svm_file("nolabels", " 1:1\n 2:1\n");
        let got = read_inputs(none.to_str().unwrap(), None, &svm_schema(), Labels::Ignore).unwrap();
        assert!(got.labels.is_none());
        let beyond = svm_file("beyond", "0 1:1\n7 2:1\n");
        let e = read_inputs(
            beyond.to_str().unwrap(),
            None,
            &svm_schema(),
            Labels::Ignore,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(".svm:2:1:") && e.contains("below 5"), "{e}");
        for f in [p, none, beyond] {
            std::fs::remove_file(f).unwrap();
        }
    }
}
