//! CSV with a header row: every column a feature except the label columns, which hold 0 or 1.
//! Which columns are labels is said by a [`LabelColumns`] (`--label-columns` on the command
//! line), or, for a file read for a trained model, by the model's label names. Quoting,
//! gzip and a UTF-8 byte-order mark are handled; a missing value (an empty field, `?`, `NA`,
//! `NaN`) is refused with its line and column, never imputed.

use std::path::Path;
use std::str::FromStr;

use super::error::Result;
use super::invalid::{CsvProblem, InvalidInput};
use super::{CsrMatrix, Dataset, LabelSets};

/// Which columns of a CSV file are labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelColumns {
    /// The columns with these names (`a,b,c`).
    Names(Vec<String>),
    /// The last `n` columns (`last=N`).
    Last(usize),
    /// The columns whose names start with this prefix (`prefix=P`).
    Prefix(String),
}

impl FromStr for LabelColumns {
    type Err = String;

    /// `last=N`, `prefix=P`, or the label columns' names separated by commas.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let expected = "`last=N` (the last N columns), `prefix=P` (the columns whose names \
                        start with P) or the label columns' names, separated by commas";
        if let Some(n) = s.strip_prefix("last=") {
            return match n.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(Self::Last(n)),
                _ => Err(format!("`{s}`: expected {expected}, with N >= 1")),
            };
        }
        if let Some(p) = s.strip_prefix("prefix=") {
            return match p.is_empty() {
                true => Err(format!("`{s}`: expected {expected}, with P not empty")),
                false => Ok(Self::Prefix(p.to_string())),
            };
        }
        let names: Vec<String> = s.split(',').map(|n| n.trim().to_string()).collect();
        if names.iter().any(String::is_empty) {
            return Err(format!(
                "`{s}`: expected {expected} (an empty name is in the list)"
            ));
        }
        Ok(Self::Names(names))
    }
}

impl std::fmt::Display for LabelColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Names(n) => write!(f, "{}", n.join(",")),
            Self::Last(n) => write!(f, "last={n}"),
            Self::Prefix(p) => write!(f, "prefix={p}"),
        }
    }
}

/// How [`read_csv_path`] treats the label columns it is told of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvLabels {
    /// Every label column must be present (training, evaluation).
    Required,
    /// Label columns present are skipped; absent ones are fine (prediction on unlabelled
    /// rows). The result has no label sets then ([`Dataset::labels`] of 0 labels).
    Skipped,
}

/// Whether `path` is named as CSV (`.csv`, `.csv.gz`).
pub fn is_csv_name(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase());
    let name = name.unwrap_or_default();
    name.strip_suffix(".gz").unwrap_or(&name).ends_with(".csv")
}

/// Reads the CSV file `path` (gzip or not), with `labels` naming its label columns.
pub fn read_csv_path(path: &Path, labels: &LabelColumns, mode: CsvLabels) -> Result<Dataset> {
    super::read_file(path, |r| read_csv(r, path, labels, mode))
}

/// A value of a CSV field that is no usable number, named by its place.
fn bad_value(
    path: &Path,
    line: u64,
    column: usize,
    name: &str,
    found: &str,
    expected: &'static str,
) -> super::DataError {
    InvalidInput::CsvValue {
        path: path.to_path_buf(),
        line,
        column: column + 1,
        name: name.to_string(),
        found: found.chars().take(40).collect(),
        expected,
    }
    .into()
}

/// Whether `field` stands for a missing value.
fn is_missing(field: &str) -> bool {
    matches!(
        field.to_ascii_lowercase().as_str(),
        "" | "?" | "na" | "n/a" | "nan" | "null" | "none"
    )
}

fn read_csv(
    r: Box<dyn std::io::BufRead>,
    path: &Path,
    labels: &LabelColumns,
    mode: CsvLabels,
) -> Result<Dataset> {
    let problem = |problem: CsvProblem| -> super::DataError {
        InvalidInput::CsvColumns {
            path: path.to_path_buf(),
            problem,
        }
        .into()
    };
    // The reader's error as what it is: the file's bytes (not UTF-8), or its reading.
    let unread = |e: ::csv::Error, header: bool| -> super::DataError {
        if let ::csv::ErrorKind::Utf8 { pos, err } = e.kind() {
            let (field, byte) = (err.field() + 1, err.valid_up_to());
            return problem(match header {
                true => CsvProblem::HeaderNotUtf8 { field, byte },
                false => CsvProblem::LineNotUtf8 {
                    line: pos.as_ref().map_or(0, |p| p.line()),
                    field,
                    byte,
                },
            });
        }
        let source = match e.into_kind() {
            ::csv::ErrorKind::Io(source) => source,
            // Not raised by a flexible reader of string records; kept, should one be.
            other => std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{other:?}")),
        };
        super::DataError::io(source).with_path(path)
    };
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(::csv::Trim::All)
        // Rows of another length are told by this reader, with the header's count.
        .flexible(true)
        .from_reader(r);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| unread(e, true))?
        .iter()
        .enumerate()
        // A UTF-8 byte-order mark before the first name (spreadsheet exports).
        .map(|(k, h)| match k {
            0 => h.trim_start_matches('\u{feff}').to_string(),
            _ => h.to_string(),
        })
        .collect();
    if header.is_empty() || header.iter().all(String::is_empty) {
        return Err(problem(CsvProblem::NoHeader));
    }
    if let Some(k) = header.iter().position(String::is_empty) {
        return Err(problem(CsvProblem::Unnamed { column: k + 1 }));
    }
    for (k, h) in header.iter().enumerate() {
        if header[..k].contains(h) {
            return Err(problem(CsvProblem::Twice { name: h.clone() }));
        }
    }
    let is_label: Vec<bool> = match labels {
        LabelColumns::Names(names) => {
            if mode == CsvLabels::Required {
                if let Some(missing) = names.iter().find(|n| !header.contains(n)) {
                    return Err(problem(CsvProblem::NoSuchLabel {
                        name: missing.clone(),
                        columns: listed(&header),
                    }));
                }
            }
            header.iter().map(|h| names.contains(h)).collect()
        }
        LabelColumns::Last(n) => {
            if *n >= header.len() {
                return Err(problem(CsvProblem::NoFeatureLeft {
                    columns: header.len(),
                    labels: *n,
                }));
            }
            (0..header.len()).map(|k| k + n >= header.len()).collect()
        }
        LabelColumns::Prefix(p) => header.iter().map(|h| h.starts_with(p.as_str())).collect(),
    };
    let label_cols: Vec<usize> = (0..header.len()).filter(|&k| is_label[k]).collect();
    if mode == CsvLabels::Required && label_cols.is_empty() {
        return Err(problem(CsvProblem::NoLabelColumn {
            rule: labels.to_string(),
            columns: listed(&header),
        }));
    }
    if label_cols.len() == header.len() {
        return Err(problem(CsvProblem::AllLabels));
    }
    // Labels in the order the caller named them (a model's order), else the file's.
    let label_names: Vec<String> = match (labels, mode) {
        (LabelColumns::Names(names), CsvLabels::Required) => names.clone(),
        (_, CsvLabels::Required) => label_cols.iter().map(|&k| header[k].clone()).collect(),
        (_, CsvLabels::Skipped) => Vec::new(),
    };
    let label_of: Vec<Option<u32>> = header
        .iter()
        .map(|h| label_names.iter().position(|n| n == h).map(|p| p as u32))
        .collect();
    let feature_cols: Vec<usize> = (0..header.len()).filter(|&k| !is_label[k]).collect();
    let mut features = CsrMatrix::new(feature_cols.len());
    let mut sets = LabelSets::new(label_names.len());
    let (mut idx, mut val, mut row_labels) = (Vec::new(), Vec::new(), Vec::new());
    let mut record = ::csv::StringRecord::new();
    loop {
        let more = reader
            .read_record(&mut record)
            .map_err(|e| unread(e, false))?;
        if !more {
            break;
        }
        let line = record.position().map_or(0, |p| p.line());
        let bad =
            |k: usize, field: &str, expected| bad_value(path, line, k, &header[k], field, expected);
        if record.len() != header.len() {
            return Err(problem(CsvProblem::FieldCount {
                line,
                found: record.len(),
                expected: header.len(),
            }));
        }
        idx.clear();
        val.clear();
        row_labels.clear();
        for (f, &k) in feature_cols.iter().enumerate() {
            let field = &record[k];
            if is_missing(field) {
                return Err(bad(k, field, MISSING));
            }
            match field.parse::<f32>() {
                Ok(v) if v.is_finite() => {
                    if v != 0.0 {
                        idx.push(f as u32);
                        val.push(v);
                    }
                }
                _ => return Err(bad(k, field, "a finite number")),
            }
        }
        for &k in &label_cols {
            let Some(l) = label_of[k] else { continue };
            let field = &record[k];
            let on = match field.to_ascii_lowercase().as_str() {
                "1" | "1.0" | "true" => true,
                "0" | "0.0" | "false" => false,
                _ if is_missing(field) => return Err(bad(k, field, MISSING)),
                _ => return Err(bad(k, field, "0 or 1 (a label)")),
            };
            if on {
                row_labels.push(l);
            }
        }
        row_labels.sort_unstable();
        features.push_row(&idx, &val);
        sets.push_row(&row_labels);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".gz").unwrap_or(&name);
    let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s).to_string();
    Ok(Dataset {
        name: stem,
        features,
        labels: sets,
        feature_names: feature_cols.iter().map(|&k| header[k].clone()).collect(),
        label_names,
    })
}

/// The column names, shown as messages show names.
fn listed(header: &[String]) -> String {
    super::inputs::listed(&header.iter().map(String::as_str).collect::<Vec<_>>())
}

/// What a missing value is told to expect.
const MISSING: &str = "a value: missing values are not imputed (fill or drop the row first)";

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, labels: &str, mode: CsvLabels) -> Result<Dataset> {
        let r: Box<dyn std::io::BufRead> = Box::new(std::io::Cursor::new(text.to_string()));
        read_csv(r, Path::new("d.csv"), &labels.parse().unwrap(), mode)
    }

    #[test]
    fn named_label_columns_anywhere_with_quotes_and_a_bom() {
        let text = "\u{feff}a,\"sky, blue\",b,sea\n0.5,1,0,0\n\"2\",0,1.5,1\n";
        // A name holding a comma is no name of a comma list: a prefix takes it.
        let ds = read(text, "prefix=s", CsvLabels::Required).unwrap();
        assert_eq!(ds.feature_names, ["a", "b"]);
        assert_eq!(ds.label_names, ["sky, blue", "sea"]);
        assert_eq!(ds.labels.row(0), [0]);
        assert_eq!(ds.labels.row(1), [1]);
        assert_eq!(ds.features.row(1).1, [2.0, 1.5]);
        // `b` holds 1.5: no label.
        let e = read(text, "last=2", CsvLabels::Required)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column 3 (`b`) holds `1.5`: expected 0 or 1"),
            "{e}"
        );
        assert!(read(text, "sea,sky, blue", CsvLabels::Required).is_err());
        let ds = read(text, "sea", CsvLabels::Required).unwrap();
        assert_eq!(ds.feature_names, ["a", "sky, blue", "b"]);
    }

    #[test]
    fn the_callers_label_order_is_kept_and_skipped_labels_may_be_absent() {
        let ds = read("x,b,a\n1,0,1\n", "a,b", CsvLabels::Required).unwrap();
        assert_eq!(ds.label_names, ["a", "b"]);
        assert_eq!(ds.labels.row(0), [0]);
        let ds = read("x,y\n1,2\n", "a,b", CsvLabels::Skipped).unwrap();
        assert_eq!((ds.labels.n_labels, ds.feature_names.len()), (0, 2));
        let ds = read("x,a,y\n1,1,2\n", "a,b", CsvLabels::Skipped).unwrap();
        assert_eq!(ds.feature_names, ["x", "y"]);
    }

    #[test]
    fn bad_input_is_named_by_line_column_and_what_was_expected() {
        let e = read("x,y,l\n1,2,0\n3,,1\n", "l", CsvLabels::Required)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("d.csv") && e.contains("line 3") && e.contains("column 2 (`y`)"),
            "{e}"
        );
        assert!(e.contains("not imputed"), "{e}");
        let e = read("x,l\n1,2\n", "l", CsvLabels::Required)
            .unwrap_err()
            .to_string();
        assert!(e.contains("0 or 1"), "{e}");
        let e = read("x,l\nabc,1\n", "l", CsvLabels::Required)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a finite number") && e.contains("abc"), "{e}");
        let e = read("x,l\n1,0,5\n", "l", CsvLabels::Required)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2 has 3 fields where the header names 2"),
            "{e}"
        );
        let e = read("x,l\n1,0\n", "m", CsvLabels::Required)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no label column `m`") && e.contains("`x`, `l`"),
            "{e}"
        );
        let e = read("x,x\n1,0\n", "x", CsvLabels::Required)
            .unwrap_err()
            .to_string();
        assert!(e.contains("twice"), "{e}");
        assert!(read("x,l\n1,0\n", "last=2", CsvLabels::Required).is_err());
        assert!("last=0".parse::<LabelColumns>().is_err());
        assert!("a,,b".parse::<LabelColumns>().is_err());
    }
}
