//! Input that parses but cannot be used: arrays of the wrong shape, data that does not match
//! a model, arguments out of range, files of a dataset that disagree. Each variant names what
//! was expected, what was found, and where (the input, file, row, column or field).

use std::path::PathBuf;

use super::inputs::listed;

/// Why an input (a file, an array, an argument) cannot be used; the `input`, `array` and
/// `name` fields say which one, as the caller named it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidInput {
    /// A CSV file read without being told which of its columns are labels.
    #[error(
        "{}: a CSV file needs its label columns named: `--label-columns a,b` (their names), \
         `--label-columns last=N` or `--label-columns prefix=P`, or a MULAN XML label file \
         beside it with the same stem",
        path.display()
    )]
    Csv {
        /// The file.
        path: PathBuf,
    },
    /// A CSV file given to a model that does not know its columns' names (trained on LIBSVM
    /// or XMC data).
    #[error(
        "{}: a CSV file's columns are matched to a model's by name, and this model's training \
         data named no features or labels (LIBSVM or XMC): give it data in its own format",
        path.display()
    )]
    CsvForUnnamedModel {
        /// The file.
        path: PathBuf,
    },
    /// A CSV field that is not a usable value.
    #[error(
        "{}: line {line}, column {column} (`{name}`) holds `{found}`: expected {expected}",
        path.display()
    )]
    CsvValue {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: usize,
        /// The column's name.
        name: String,
        /// The field (shortened).
        found: String,
        /// What the column takes.
        expected: &'static str,
    },
    /// A CSV file whose header or rows do not fit the columns asked for.
    #[error("{}: {problem}", path.display())]
    CsvColumns {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: CsvProblem,
    },
    /// Data without labels given to evaluate a model.
    #[error("{input}: the data has no labels to evaluate against")]
    NoLabelsToEvaluate {
        /// The data.
        input: String,
    },
    /// Data with more labels or another number of feature columns than the model.
    #[error("{input}: the data has {found} {what} where the model has {expected}")]
    CountMismatch {
        /// The data.
        input: String,
        /// What was counted (`labels`, `feature columns`).
        what: &'static str,
        /// The data's count.
        found: usize,
        /// The model's count.
        expected: usize,
    },
    /// A column name given twice in data aligned to a model by name.
    #[error("{input}: `{name}` appears twice among the {what} (columns {first} and {second})")]
    DuplicateColumn {
        /// The data.
        input: String,
        /// The repeated name.
        name: String,
        /// Which columns (`features`, `labels`).
        what: String,
        /// The first column with the name, from 1.
        first: usize,
        /// The second one, from 1.
        second: usize,
    },
    /// Data whose column names are not the model's.
    #[error(
        "{input}: the {what} differ from the model's ({}){hint}",
        differences(what, missing, extra)
    )]
    ColumnsDiffer {
        /// The data.
        input: String,
        /// Which columns (`features`, `labels`).
        what: String,
        /// The model's names that the data lacks.
        missing: Vec<String>,
        /// The data's names that the model does not know.
        extra: Vec<String>,
        /// What may explain it, from `; ` (empty: nothing to add).
        hint: String,
    },
    /// Targets with classes the model was not trained on.
    #[error(
        "{input}: the targets take {} classes the model does not know: {} (its classes are {})",
        unknown.len(),
        listed_owned(unknown),
        listed_owned(known)
    )]
    UnknownClasses {
        /// The data.
        input: String,
        /// The classes the model does not know.
        unknown: Vec<String>,
        /// The model's classes.
        known: Vec<String>,
    },
    /// A train fraction outside `[0, 1]`.
    #[error("train fraction {value} not in [0, 1]")]
    TrainFraction {
        /// The fraction given.
        value: f64,
    },
    /// A path that is neither a file nor a folder.
    #[error(
        "{spec} is neither a file nor a folder (a device, FIFO or socket): data is read from \
         files"
    )]
    NotAFile {
        /// The path given.
        spec: String,
    },
    /// An ARFF file without a label file beside it and without MEKA's `-C n`.
    #[error(
        "{}: cannot tell which attributes are labels: no label file {xml_name} beside it, and \
         its relation name `{relation}` {problem}",
        arff.display()
    )]
    NoLabelSource {
        /// The ARFF file.
        arff: PathBuf,
        /// The label file looked for.
        xml_name: String,
        /// The file's relation name.
        relation: String,
        /// What is wrong with its MEKA option ([`crate::data::arff::meka_problem`]).
        problem: String,
    },
    /// LIBSVM files of one dataset that declare different index bases.
    #[error(
        "{} declares zero-based column indices but {} declares one-based ones",
        zero.display(),
        one.display()
    )]
    MixedIndexBases {
        /// The file that declares zero-based indices.
        zero: PathBuf,
        /// The file that declares one-based indices.
        one: PathBuf,
    },
    /// Feature index 0 in a LIBSVM file read as one-based.
    #[error("{}: feature index 0 in a 1-based file", path.display())]
    ZeroIndexInOneBased {
        /// The file.
        path: PathBuf,
    },
    /// Train and test files of a dataset with different columns.
    #[error("{name}: train and test have different {what}")]
    SplitMismatch {
        /// The dataset.
        name: String,
        /// Which columns (`features`, `labels`).
        what: &'static str,
    },
    /// Split sizes that add up to more rows than there are.
    #[error("split sizes {sizes:?} add up to {total}, more than the {rows} rows")]
    SplitTooLarge {
        /// The sizes asked for.
        sizes: Vec<usize>,
        /// Their sum.
        total: usize,
        /// The rows there are.
        rows: usize,
    },
    /// More labels requested than the readers support.
    #[error("{requested} labels requested: at most {limit} are supported ({why})")]
    TooManyLabels {
        /// The number asked for.
        requested: usize,
        /// The largest supported number.
        limit: usize,
        /// The constant that sets the limit.
        why: &'static str,
    },
    /// Features and labels with different numbers of rows.
    #[error(
        "the features have {features} rows where the labels have {labels}: expected one label \
         row per example"
    )]
    RowCounts {
        /// The feature rows.
        features: usize,
        /// The label rows.
        labels: usize,
    },
    /// Data without feature or without label columns.
    #[error("the data has no {what} columns: expected at least one")]
    NoColumns {
        /// `feature` or `label`.
        what: &'static str,
    },
    /// An array (a matrix's parts, a weight vector) that is malformed.
    #[error("{array}: {problem}")]
    Array {
        /// The array, as the caller named it (e.g. `X`).
        array: String,
        /// What is wrong with it.
        problem: ArrayProblem,
    },
}

/// What is wrong with an array (see [`InvalidInput::Array`]); rows and columns from 0.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ArrayProblem {
    /// A NaN or infinite feature value.
    #[error("row {row}, column {col} (from 0) holds {value}: expected a finite number")]
    NonFinite {
        /// Its row.
        row: usize,
        /// Its column.
        col: usize,
        /// The value.
        value: f32,
    },
    /// A label indicator other than 0 or 1.
    #[error("row {row}, column {col} (from 0) holds {value}: expected a label indicator, 0 or 1")]
    NotIndicator {
        /// Its row.
        row: usize,
        /// Its column.
        col: usize,
        /// The value.
        value: f64,
    },
    /// CSR values and indices of different lengths.
    #[error("{values} values for {indices} indices: expected one value per index")]
    ValuesPerIndex {
        /// The values.
        values: usize,
        /// The indices.
        indices: usize,
    },
    /// More columns than a `u32` index holds.
    #[error("{columns} columns: at most {} are supported", u32::MAX)]
    TooManyColumns {
        /// The columns asked for.
        columns: usize,
    },
    /// A CSR `indptr` of a length other than rows + 1.
    #[error("indptr has {found} entries: expected {expected} (rows + 1)")]
    IndptrLength {
        /// Its length.
        found: usize,
        /// Rows + 1.
        expected: usize,
    },
    /// A CSR `indptr` that does not run from 0 to the number of stored entries.
    #[error("indptr runs from {first} to {last}: expected 0 to {entries} (the stored entries)")]
    IndptrRange {
        /// Its first offset.
        first: i64,
        /// Its last offset.
        last: i64,
        /// The stored entries.
        entries: usize,
    },
    /// A CSR `indptr` that decreases.
    #[error("indptr decreases at row {row} ({start} then {end}): expected non-decreasing")]
    IndptrDecreases {
        /// The row.
        row: usize,
        /// The row's start offset.
        start: i64,
        /// Its end offset.
        end: i64,
    },
    /// A CSR column index outside the columns.
    #[error("row {row} has column index {col}: expected 0..{columns}")]
    ColumnOutOfRange {
        /// The row.
        row: usize,
        /// The index.
        col: i64,
        /// The number of columns.
        columns: usize,
    },
    /// A CSR column index not above the one before it in its row.
    #[error(
        "row {row} has column index {col} after {previous}: expected strictly increasing indices \
         (sort them and sum duplicates first)"
    )]
    UnsortedColumn {
        /// The row.
        row: usize,
        /// The index.
        col: i64,
        /// The index before it.
        previous: i64,
    },
    /// A dense buffer whose length is not rows × columns.
    #[error("{values} values: expected {rows} rows × {columns} columns")]
    DenseSize {
        /// Its length.
        values: usize,
        /// The rows.
        rows: usize,
        /// The columns.
        columns: usize,
    },
    /// Sample weights of a length other than the number of rows.
    #[error("{weights} weights for {rows} rows: expected one weight per example")]
    WeightCount {
        /// The weights.
        weights: usize,
        /// The rows.
        rows: usize,
    },
    /// A sample weight that is negative, not finite, or beyond `f32`'s range.
    #[error(
        "entry {index} (from 0) is {value}: expected a finite number >= 0{}",
        if value.is_finite() && *value > 0.0 {
            " (within float32's range, in which the model computes)"
        } else {
            ""
        }
    )]
    BadWeight {
        /// Its position.
        index: usize,
        /// The weight.
        value: f64,
    },
    /// Sample weights that are all zero.
    #[error("all weights are zero: at least one example must weigh more than 0")]
    AllWeightsZero,
}

/// [`listed`] for owned names.
fn listed_owned(names: &[String]) -> String {
    listed(&names.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The model's `what` that the data lacks and the data's that the model does not know.
fn differences(what: &str, missing: &[String], extra: &[String]) -> String {
    let mut why = Vec::new();
    if !missing.is_empty() {
        why.push(format!(
            "{} of the model's {what} missing: {}",
            missing.len(),
            listed_owned(missing)
        ));
    }
    if !extra.is_empty() {
        why.push(format!(
            "{} {what} the model does not know: {}",
            extra.len(),
            listed_owned(extra)
        ));
    }
    why.join("; ")
}

/// What is wrong with a CSV file's header, or with a row's fields against it
/// ([`InvalidInput::CsvColumns`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CsvProblem {
    /// A header that is not UTF-8 text.
    #[error("its header cannot be read: field {field} is not UTF-8 text (byte {byte})")]
    HeaderNotUtf8 {
        /// The field, from 1.
        field: usize,
        /// The first byte that is not, from 0.
        byte: usize,
    },
    /// A line that is not UTF-8 text.
    #[error("line {line}: field {field} is not UTF-8 text (byte {byte})")]
    LineNotUtf8 {
        /// The line, from 1.
        line: u64,
        /// The field, from 1.
        field: usize,
        /// The first byte that is not, from 0.
        byte: usize,
    },
    /// No header row.
    #[error("it has no header row of column names")]
    NoHeader,
    /// A column without a name.
    #[error("column {column} has no name in the header")]
    Unnamed {
        /// The column, from 1.
        column: usize,
    },
    /// A name the header gives twice.
    #[error("the header names column `{name}` twice")]
    Twice {
        /// The name.
        name: String,
    },
    /// A label column asked for by name that the header does not have.
    #[error("it has no label column `{name}` (its columns: {columns})")]
    NoSuchLabel {
        /// The name asked for.
        name: String,
        /// The columns it has, listed.
        columns: String,
    },
    /// More label columns asked for, counted from the end, than leave a feature.
    #[error("it has {columns} columns: the last {labels} as labels would leave no feature")]
    NoFeatureLeft {
        /// The columns it has.
        columns: usize,
        /// The label columns asked for.
        labels: usize,
    },
    /// No column that the rule for label columns takes.
    #[error("no column is a label column by `{rule}` (its columns: {columns})")]
    NoLabelColumn {
        /// The rule (`last:3`, `prefix:tag_`, the names).
        rule: String,
        /// The columns it has, listed.
        columns: String,
    },
    /// Every column a label column.
    #[error("every column is a label column: no feature is left")]
    AllLabels,
    /// A row of another length than the header.
    #[error("line {line} has {found} fields where the header names {expected}")]
    FieldCount {
        /// The line, from 1.
        line: u64,
        /// Its fields.
        found: usize,
        /// The header's columns.
        expected: usize,
    },
}
