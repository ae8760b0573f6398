//! LIBSVM multi-label and Extreme Classification Repository (XMC) readers.
//!
//! Row syntax (both): `l1,l2,... i:v i:v ...`; the label list may be empty (the line then starts
//! with whitespace or directly with a feature). Feature indices must be strictly increasing.
//! Labels may come in any order (they are sorted; a repeated label is an error). Blank lines
//! and `#` comments (whole line or after a row) are skipped. Explicit zero values are not stored.
//!
//! Index bases are declared by the caller of these readers ([`IndexBase`]): LIBSVM files are
//! usually 1-based, XMC files 0-based. [`super::resolve_dataset`], which cannot be told, reads
//! LIBSVM features as 0-based when a file of the dataset (train or test) uses feature index 0
//! or carries scikit-learn's comment `# Column indices are zero-based`, else as 1-based (see
//! there).
//!
//! Dimensions: XMC files start with a header `N D L` (rows, features, labels) that is enforced
//! (row count, every index below D / L). LIBSVM files have none: the counts are those given in
//! [`SvmOptions`] (enforced), else inferred as the largest 0-based index + 1 seen in the file
//! (so a label or feature never used at the end is invisible; pass the counts when known).
//!
//! Names: the formats have none, so `feature_names` is left empty and `label_names` are the label
//! ids as written in the file (empty above [`MAX_NAMED_LABELS`] labels).

use std::io::BufRead;
use std::path::Path;

use super::error::{try_room, DataError, ParseErrorKind, Result};
use super::invalid::InvalidInput;
use super::lex::{is_blank, parse_f32, Cur, Lines};
use super::{CsrMatrix, Dataset, LabelSets};

/// The most labels a LIBSVM/XMC file may have (2^25 = 33,554,432; the largest public XMC
/// datasets have under 10 million). Label names are materialised per label, so a single large
/// label id (or XMC header count) would otherwise allocate gigabytes from a few bytes of input.
pub const MAX_LABELS: usize = 1 << 25;

/// Above this many labels the name-less formats leave `label_names` empty instead of naming
/// every label by its id (consumers then show label indices).
pub const MAX_NAMED_LABELS: usize = 1 << 20;

/// Why label ids are bounded, as a user reads it (no internal name).
const MAX_LABELS_WHY: &str =
    "a dataset may have at most 2^25 labels; a larger id is more likely a damaged file";

/// Whether indices in a file start at 0 or at 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexBase {
    /// The first index is 0.
    Zero,
    /// The first index is 1.
    One,
}

impl IndexBase {
    fn offset(self) -> u64 {
        match self {
            IndexBase::Zero => 0,
            IndexBase::One => 1,
        }
    }
}

/// Options of [`read_libsvm`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SvmOptions {
    /// Base of feature indices.
    pub feature_base: IndexBase,
    /// Base of label ids (0 in the common multi-label LIBSVM files).
    pub label_base: IndexBase,
    /// Number of features; `None` infers largest index + 1.
    pub n_features: Option<usize>,
    /// Number of labels; `None` infers largest label + 1.
    pub n_labels: Option<usize>,
}

impl SvmOptions {
    /// Features with the given base, 0-based labels, dimensions inferred.
    pub fn new(feature_base: IndexBase) -> Self {
        Self {
            feature_base,
            label_base: IndexBase::Zero,
            n_features: None,
            n_labels: None,
        }
    }
}

struct Builder {
    indptr: Vec<usize>,
    fi: Vec<u32>,
    fv: Vec<f32>,
    lptr: Vec<usize>,
    li: Vec<u32>,
    max_f: u64,
    max_l: u64,
    evidence: BaseEvidence,
}

/// What a LIBSVM file shows of its feature index base (for the rule of
/// [`super::resolve_dataset`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BaseEvidence {
    /// Some feature index is 0.
    pub zero: bool,
    /// The base a scikit-learn comment `# Column indices are zero-based` (or `one-based`)
    /// declares.
    pub declared: Option<IndexBase>,
}

/// The base that scikit-learn's `dump_svmlight_file` header comment declares, if `line` is it.
fn declared_base(line: &[u8]) -> Option<IndexBase> {
    let has = |pat: &[u8]| line.windows(pat.len()).any(|w| w.eq_ignore_ascii_case(pat));
    if has(b"column indices are zero-based") {
        Some(IndexBase::Zero)
    } else if has(b"column indices are one-based") {
        Some(IndexBase::One)
    } else {
        None
    }
}

impl Builder {
    fn new() -> Self {
        Self {
            indptr: vec![0],
            fi: vec![],
            fv: vec![],
            lptr: vec![0],
            li: vec![],
            max_f: 0,
            max_l: 0,
            evidence: BaseEvidence::default(),
        }
    }

    /// Reserves room for a row of up to 64 Ki entries, failing cleanly when memory runs out.
    fn room(&mut self, line: usize) -> Result<()> {
        const ROW: usize = 1 << 16;
        let ok = try_room(&mut self.fi, ROW).is_ok()
            && try_room(&mut self.fv, ROW).is_ok()
            && try_room(&mut self.li, ROW).is_ok()
            && try_room(&mut self.indptr, 1).is_ok()
            && try_room(&mut self.lptr, 1).is_ok();
        if ok {
            Ok(())
        } else {
            let bytes = self.fi.len() * 8 + self.li.len() * 4 + self.indptr.len() * 16;
            Err(DataError::out_of_memory(line, bytes))
        }
    }

    fn finish(self, name: String, n_features: usize, n_labels: usize, base: IndexBase) -> Dataset {
        let n_rows = self.indptr.len() - 1;
        let features = CsrMatrix {
            n_rows,
            n_cols: n_features,
            indptr: self.indptr,
            indices: self.fi,
            values: self.fv,
        };
        let labels = LabelSets {
            n_rows,
            n_labels,
            indptr: self.lptr,
            indices: self.li,
            weights: None,
        };
        // The ids as names, for display; above MAX_NAMED_LABELS none (a few-byte file naming a
        // label id near MAX_LABELS would otherwise cost gigabytes of strings).
        let label_names = if n_labels <= MAX_NAMED_LABELS {
            (0..n_labels as u64)
                .map(|l| (l + base.offset()).to_string())
                .collect()
        } else {
            Vec::new()
        };
        Dataset {
            name,
            features,
            labels,
            feature_names: Vec::new(),
            label_names,
        }
    }
}

/// Parses one row into the builder. `f_bound`/`l_bound`: 0-based exclusive limits when known.
fn parse_row(
    c: &mut Cur<'_>,
    opts: &SvmOptions,
    f_bound: Option<(u64, &'static str)>,
    l_bound: Option<(u64, &'static str)>,
    b: &mut Builder,
) -> Result<()> {
    // Labels: present unless the first word is a feature (`i:v`) or the line starts blank.
    let first_is_feature = {
        let rest = &c.s[c.pos..];
        let end = rest
            .iter()
            .position(|x| x.is_ascii_whitespace())
            .unwrap_or(rest.len());
        rest[..end].contains(&b':') || end == 0
    };
    if !first_is_feature {
        parse_labels(c, opts, l_bound, b)?;
    }
    parse_features(c, opts, f_bound, b)?;
    b.indptr.push(b.fi.len());
    b.lptr.push(b.li.len());
    Ok(())
}

/// The comma-separated label ids that start a row, pushed to `b.li` (checked for range and
/// repeats, sorted).
fn parse_labels(
    c: &mut Cur<'_>,
    opts: &SvmOptions,
    l_bound: Option<(u64, &'static str)>,
    b: &mut Builder,
) -> Result<()> {
    let row_start = b.li.len();
    loop {
        let pos = c.pos;
        let raw = c.uint("a label id")?;
        let l = based(c, pos, raw, opts.label_base, "label id")?;
        if l >= MAX_LABELS as u64 {
            return Err(c.err_at(
                pos,
                ParseErrorKind::TooLarge {
                    what: "label id",
                    value: raw,
                    limit: MAX_LABELS as u64 - 1 + opts.label_base.offset(),
                    why: MAX_LABELS_WHY,
                },
            ));
        }
        if let Some((bound, what)) = l_bound {
            if l >= bound {
                return Err(c.err_at(
                    pos,
                    ParseErrorKind::IndexOutOfRange {
                        index: raw,
                        bound: bound + opts.label_base.offset(),
                        what,
                    },
                ));
            }
        }
        b.max_l = b.max_l.max(l + 1);
        b.li.push(l as u32);
        if c.peek() == Some(b',') {
            c.pos += 1;
        } else {
            break;
        }
    }
    let labels = &mut b.li[row_start..];
    if labels.windows(2).any(|w| w[0] >= w[1]) {
        labels.sort_unstable();
        if let Some(w) = labels.windows(2).find(|w| w[0] == w[1]) {
            let label = u64::from(w[0]) + opts.label_base.offset();
            return Err(c.err_at(0, ParseErrorKind::DuplicateLabel { label }));
        }
    }
    if !matches!(c.peek(), None | Some(b' ' | b'\t')) {
        return Err(c.expected("`,` or a space after a label id"));
    }
    Ok(())
}

/// The `index:value` pairs of a row, up to its end or a `#` comment; non-zero values are pushed
/// to `b.fi`/`b.fv`.
fn parse_features(
    c: &mut Cur<'_>,
    opts: &SvmOptions,
    f_bound: Option<(u64, &'static str)>,
    b: &mut Builder,
) -> Result<()> {
    let mut prev: Option<u64> = None;
    loop {
        c.skip_ws();
        if matches!(c.peek(), None | Some(b'#')) {
            return Ok(());
        }
        let pos = c.pos;
        let raw = c.uint("a feature index")?;
        b.evidence.zero |= raw == 0;
        let f = feature_index(c, opts, f_bound, prev, pos, raw)?;
        prev = Some(f);
        c.expect(b':', "`:` after a feature index")?;
        let vpos = c.pos;
        let tok = c.word(b"#");
        if tok.is_empty() {
            return Err(c.expected("a feature value"));
        }
        let v = parse_f32(tok).ok_or_else(|| {
            c.err_at(
                vpos,
                ParseErrorKind::NonNumeric {
                    found: String::from_utf8_lossy(tok).into_owned(),
                },
            )
        })?;
        if f > u64::from(u32::MAX) {
            return Err(c.err_at(
                pos,
                ParseErrorKind::IndexOutOfRange {
                    index: raw,
                    bound: u64::from(u32::MAX),
                    what: "u32 column indices",
                },
            ));
        }
        b.max_f = b.max_f.max(f + 1);
        if v != 0.0 {
            b.fi.push(f as u32);
            b.fv.push(v);
        }
    }
}

/// The 0-based feature index of `raw` (read at `pos`), checked against the bound and the
/// row's previous index.
fn feature_index(
    c: &Cur<'_>,
    opts: &SvmOptions,
    f_bound: Option<(u64, &'static str)>,
    prev: Option<u64>,
    pos: usize,
    raw: u64,
) -> Result<u64> {
    let f = based(c, pos, raw, opts.feature_base, "feature index")?;
    if let Some((bound, what)) = f_bound {
        if f >= bound {
            return Err(c.err_at(
                pos,
                ParseErrorKind::IndexOutOfRange {
                    index: raw,
                    bound: bound + opts.feature_base.offset(),
                    what,
                },
            ));
        }
    }
    if let Some(p) = prev {
        if f == p {
            return Err(c.err_at(pos, ParseErrorKind::DuplicateIndex { index: raw }));
        }
        if f < p {
            return Err(c.err_at(
                pos,
                ParseErrorKind::UnsortedIndex {
                    index: raw,
                    previous: p + opts.feature_base.offset(),
                },
            ));
        }
    }
    Ok(f)
}

/// Converts a raw index to 0-based.
fn based(c: &Cur<'_>, pos: usize, raw: u64, base: IndexBase, what: &'static str) -> Result<u64> {
    if base == IndexBase::One && raw == 0 {
        return Err(c.err_at(
            pos,
            ParseErrorKind::Expected {
                expected: if what == "label id" {
                    "a 1-based label id (>= 1)"
                } else {
                    "a 1-based feature index (>= 1; a file using index 0 is 0-based, as \
                     scikit-learn writes by default: its comment `# Column indices are \
                     zero-based` says so)"
                },
                found: "`0`".into(),
            },
        ));
    }
    if raw - base.offset() >= u64::from(u32::MAX) {
        return Err(c.err_at(
            pos,
            ParseErrorKind::IndexOutOfRange {
                index: raw,
                bound: u64::from(u32::MAX),
                what,
            },
        ));
    }
    Ok(raw - base.offset())
}

/// Reads a LIBSVM multi-label file. Errors carry no path; [`read_libsvm_path`] adds it.
pub fn read_libsvm<R: BufRead>(reader: R, opts: &SvmOptions) -> Result<Dataset> {
    read_libsvm_evidence(reader, opts).map(|(ds, _)| ds)
}

/// [`read_libsvm`], also returning what the file shows of its feature index base.
pub(crate) fn read_libsvm_evidence<R: BufRead>(
    reader: R,
    opts: &SvmOptions,
) -> Result<(Dataset, BaseEvidence)> {
    let mut lines = Lines::new(reader);
    let mut b = Builder::new();
    let f_bound = opts
        .n_features
        .map(|d| (d as u64, "given number of features"));
    let l_bound = opts.n_labels.map(|l| (l as u64, "given number of labels"));
    if let Some(l) = opts.n_labels.filter(|&l| l > MAX_LABELS) {
        return Err(InvalidInput::TooManyLabels {
            requested: l,
            limit: MAX_LABELS,
            why: MAX_LABELS_WHY,
        }
        .into());
    }
    while lines.advance()? {
        let line = lines.line();
        if line.first() == Some(&b'#') {
            if b.evidence.declared.is_none() {
                b.evidence.declared = declared_base(line);
            }
            continue;
        }
        if is_blank(line) {
            continue;
        }
        let mut c = lines.cursor();
        b.room(lines.line_no)?;
        parse_row(&mut c, opts, f_bound, l_bound, &mut b)?;
    }
    let d = opts.n_features.unwrap_or(b.max_f as usize);
    let l = opts.n_labels.unwrap_or(b.max_l as usize);
    let evidence = b.evidence;
    Ok((b.finish(String::new(), d, l, opts.label_base), evidence))
}

/// The header `N D L` of an XMC file: its first line that is not blank.
fn xmc_header<R: BufRead>(lines: &mut Lines<R>) -> Result<[u64; 3]> {
    while lines.advance()? {
        if is_blank(lines.line()) {
            continue;
        }
        let mut c = lines.cursor();
        let mut dims = [0u64; 3];
        for (k, d) in dims.iter_mut().enumerate() {
            c.skip_ws();
            let pos = c.pos;
            *d = c.uint(
                [
                    "the row count N of the header `N D L`",
                    "the feature count D of the header `N D L`",
                    "the label count L of the header `N D L`",
                ][k],
            )?;
            if k == 2 && *d > MAX_LABELS as u64 {
                return Err(c.err_at(
                    pos,
                    ParseErrorKind::TooLarge {
                        what: "label count L",
                        value: *d,
                        limit: MAX_LABELS as u64,
                        why: MAX_LABELS_WHY,
                    },
                ));
            }
        }
        c.expect_end(b'#')?;
        return Ok(dims);
    }
    let (line, col) = lines.eof();
    Err(DataError::parse(
        line,
        col,
        ParseErrorKind::UnexpectedEof {
            expected: "the header `N D L`",
        },
    ))
}

/// Reads an Extreme Classification Repository file (header `N D L`, 0-based labels).
pub fn read_xmc<R: BufRead>(reader: R, feature_base: IndexBase) -> Result<Dataset> {
    let mut lines = Lines::new(reader);
    let opts = SvmOptions::new(feature_base);
    let [n, d, l] = xmc_header(&mut lines)?;
    let mut b = Builder::new();
    let mut rows = 0usize;
    while lines.advance()? {
        let line = lines.line();
        if is_blank(line) || line.first() == Some(&b'#') {
            continue;
        }
        rows += 1;
        if rows as u64 > n {
            return Err(DataError::parse(
                lines.line_no,
                1,
                ParseErrorKind::HeaderCount {
                    what: "rows",
                    promised: n as usize,
                    found: rows,
                },
            ));
        }
        b.room(lines.line_no)?;
        let mut c = lines.cursor();
        parse_row(
            &mut c,
            &opts,
            Some((d, "feature count D of the header")),
            Some((l, "label count L of the header")),
            &mut b,
        )?;
    }
    if (rows as u64) < n {
        let (line, col) = lines.eof();
        return Err(DataError::parse(
            line,
            col,
            ParseErrorKind::HeaderCount {
                what: "rows (truncated file?)",
                promised: n as usize,
                found: rows,
            },
        ));
    }
    Ok(b.finish(String::new(), d as usize, l as usize, IndexBase::Zero))
}

/// [`read_libsvm`] for a path (plain or gzip); the dataset is named after the file stem.
pub fn read_libsvm_path(path: &Path, opts: &SvmOptions) -> Result<Dataset> {
    read_libsvm_path_evidence(path, opts).map(|(ds, _)| ds)
}

/// [`read_libsvm_path`], also returning what the file shows of its feature index base.
pub(crate) fn read_libsvm_path_evidence(
    path: &Path,
    opts: &SvmOptions,
) -> Result<(Dataset, BaseEvidence)> {
    let (mut ds, evidence) = super::read_file(path, |r| read_libsvm_evidence(r, opts))?;
    ds.name = super::file_stem(path);
    Ok((ds, evidence))
}

/// The feature index base that scikit-learn's comment (`# Column indices are zero-based`, or
/// `one-based`) declares among the comment lines that open the LIBSVM file at `path`, if any.
pub(crate) fn declared_base_path(path: &Path) -> Result<Option<IndexBase>> {
    super::read_file(path, |r| {
        let mut lines = Lines::new(r);
        while lines.advance()? {
            let line = lines.line();
            if line.first() == Some(&b'#') {
                if let Some(b) = declared_base(line) {
                    return Ok(Some(b));
                }
            } else if !is_blank(line) {
                break;
            }
        }
        Ok(None)
    })
}

/// [`read_xmc`] for a path (plain or gzip); the dataset is named after the file stem.
pub fn read_xmc_path(path: &Path, feature_base: IndexBase) -> Result<Dataset> {
    let mut ds = super::read_file(path, |r| read_xmc(r, feature_base))?;
    ds.name = super::file_stem(path);
    Ok(ds)
}

/// Whether the first non-blank line of a file looks like an XMC header (three integers).
pub fn looks_like_xmc(path: &Path) -> Result<bool> {
    super::read_file(path, first_line_is_xmc_header)
}

fn first_line_is_xmc_header<R: BufRead>(reader: R) -> Result<bool> {
    let mut lines = Lines::new(reader);
    while lines.advance()? {
        let line = lines.line();
        if is_blank(line) {
            continue;
        }
        let words: Vec<&[u8]> = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .collect();
        return Ok(words.len() == 3 && words.iter().all(|w| w.iter().all(u8::is_ascii_digit)));
    }
    Ok(false)
}
