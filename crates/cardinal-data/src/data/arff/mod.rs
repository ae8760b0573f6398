//! MULAN and MEKA ARFF reader, streaming from any [`BufRead`].
//!
//! Supported:
//! - header keywords `@relation`, `@attribute`, `@data` in any case; `%` comment lines; blank
//!   lines; LF or CRLF line ends;
//! - names (relation, attributes, nominal values) bare or quoted with `'...'` / `"..."`, where a
//!   backslash escapes the next character (`\n`, `\t`, `\r` mean control characters);
//! - sparse rows `{i v, ...}` (0-based attribute indices, strictly increasing) and dense rows
//!   `v, v, ...`; a `%` comment may follow a row. A value a sparse row omits is 0, which for a
//!   nominal attribute means its *first* declared value (ARFF's convention).
//!
//! Feature attributes, by declared type:
//! - `numeric`, `real`, `integer`: one feature (`f32`);
//! - nominal `{v1,...,vk}`: encoded as Weka's `NominalToBinary` filter does with its default
//!   options, from the values the header *declares* (never from the values seen, so a train and
//!   a test file read separately get the same features whatever values their rows use):
//!   - k ≤ 2: **one** feature, named after the attribute, holding the index of the value in the
//!     declaration: 0 for `v1`, 1 for `v2`. So `{0,1}` reads as its values, and genbase's
//!     `{YES,NO}` gives 1 for `NO` (Weka's order, kept so results compare with Weka/MULAN/MEKA);
//!   - 2 < k ≤ [`MAX_NOMINAL_VALUES`]: k features named `attr=value`, one-hot;
//!   - k > [`MAX_NOMINAL_VALUES`]: **dropped** as an identifier (genbase's `protein` declares
//!     one value per protein: one-hot columns of an id only memorise training rows, and a test
//!     row's id never occurs in training). The rule reads the header only, so it decides the
//!     same for every file sharing a header;
//!   - a value outside the declared set is an error; a missing value `?` gives all zeros;
//! - `string`: **dropped** (free text, for which the header declares no encoding);
//! - `date`, `relational`: an error that names the attribute.
//!
//! Dropped attributes are listed in [`ArffNotes`] ([`read_arff_noted`]), so callers can report
//! them; their values are skipped unread. A missing value `?` of a numeric feature or of a
//! label is an error (no imputation is guessed), as are instance weights (`{...}, {w}`).
//!
//! Labels are chosen by a [`LabelSpec`]: by name (MULAN's XML file; the label order of the
//! result is the order of the names, **not** the ARFF attribute order, and labels may be
//! anywhere among the attributes), by count (`Last(n)` / `First(n)`), or by the MEKA option
//! `-C n` in the relation name ([`LabelSpec::Meka`], [`meka_label_spec`]). Label attributes
//! must be `{0,1}` or numeric with values 0/1. Features keep the ARFF order of the remaining
//! attributes. Explicit zeros are not stored in the feature matrix.
//!
//! The reader is split by concern: the header (attributes, label choice), the feature encoding
//! of the attributes (nominal one-hot, dropped identifiers) and the data rows.

mod header;
mod multi_target;
mod nominal;
mod rows;

use std::io::BufRead;
use std::path::Path;

pub use header::{meka_label_spec, meka_problem, LabelSpec};
pub use multi_target::{
    declares_multi_target, read_multi_target_arff, read_multi_target_inputs,
    write_multi_target_arff,
};
pub use nominal::{DropReason, DroppedAttribute, MAX_NOMINAL_VALUES};

use super::error::{DataError, ParseErrorKind, Result};
use super::lex::Lines;
use super::Dataset;

/// What [`read_arff_noted`] decided beyond parsing, for callers to report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArffNotes {
    /// Feature attributes left out, in header order.
    pub dropped: Vec<DroppedAttribute>,
    /// The labels a MEKA relation name chose ([`LabelSpec::Meka`]): `First(n)` or `Last(n)`.
    pub meka_labels: Option<LabelSpec>,
}

/// Reads an ARFF file from `reader`. Errors carry no path; [`read_arff_path`] adds it.
pub fn read_arff<R: BufRead>(reader: R, labels: &LabelSpec) -> Result<Dataset> {
    read_arff_noted(reader, labels).map(|(ds, _)| ds)
}

/// Like [`read_arff`], also returning what the reader decided (dropped attributes, MEKA labels).
pub fn read_arff_noted<R: BufRead>(reader: R, labels: &LabelSpec) -> Result<(Dataset, ArffNotes)> {
    let mut lines = Lines::new(reader);
    let (relation, attrs) = header::read_header(&mut lines)?;
    let data_line = lines.line_no;
    let layout = nominal::assign_roles(&attrs, labels, &relation, data_line)?;
    let (features, label_sets) = rows::read_rows(&mut lines, &attrs, &layout)?;

    let mut name = relation;
    if layout.notes.meka_labels.is_some() {
        // `'Scene: -C 6'` names the dataset `Scene`; the options are not part of the name.
        if let Some((base, _)) = name.split_once(':') {
            name = base.trim().to_string();
        }
    }
    let ds = Dataset {
        name,
        features,
        labels: label_sets,
        feature_names: layout.feature_names,
        label_names: layout.label_names,
    };
    Ok((ds, layout.notes))
}

/// Reads an ARFF file (plain or gzip-compressed, detected by magic bytes); errors carry the path.
/// An empty relation name becomes the file stem.
pub fn read_arff_path(path: &Path, labels: &LabelSpec) -> Result<Dataset> {
    read_arff_path_noted(path, labels).map(|(ds, _)| ds)
}

/// Like [`read_arff_path`], also returning what the reader decided ([`ArffNotes`]).
pub fn read_arff_path_noted(path: &Path, labels: &LabelSpec) -> Result<(Dataset, ArffNotes)> {
    let (mut ds, notes) = super::read_file(path, |r| read_arff_noted(r, labels))?;
    if ds.name.is_empty() {
        ds.name = super::file_stem(path);
    }
    Ok((ds, notes))
}

/// Reads a MULAN dataset: the ARFF file with its labels named by the XML file (label order =
/// XML order).
pub fn read_mulan(arff: &Path, xml: &Path) -> Result<Dataset> {
    read_mulan_noted(arff, xml).map(|(ds, _)| ds)
}

/// Like [`read_mulan`], also returning what the reader decided ([`ArffNotes`]).
pub fn read_mulan_noted(arff: &Path, xml: &Path) -> Result<(Dataset, ArffNotes)> {
    let names = super::read_label_xml_path(xml)?;
    read_arff_path_noted(arff, &LabelSpec::Names(names)).map_err(|e| match e {
        DataError::Parse {
            location,
            kind: ParseErrorKind::LabelNotInHeader { name, .. },
        } => DataError::Parse {
            location,
            kind: ParseErrorKind::LabelNotInHeader {
                name,
                source_name: xml.display().to_string(),
            },
        },
        e => e,
    })
}
