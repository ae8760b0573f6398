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

use std::collections::HashMap;
use std::fmt;
use std::io::BufRead;
use std::path::Path;

use super::error::{show, try_room, DataError, Location, ParseErrorKind, Result};
use super::lex::{is_blank, parse_f32, Cur, Lines};
use super::{CsrMatrix, Dataset, LabelSets};

/// Nominal feature attributes that declare more values than this are taken for identifiers
/// and dropped (see the module docs). Large enough for real categories (countries, languages,
/// regions), small enough that one-hot encoding stays a reasonable representation.
pub const MAX_NOMINAL_VALUES: usize = 256;

/// Which ARFF attributes are labels.
#[derive(Debug, Clone, PartialEq)]
pub enum LabelSpec {
    /// Label attributes by name, in label order (MULAN's XML file; see [`super::read_label_xml`]).
    Names(Vec<String>),
    /// The last `n` attributes are the labels (MULAN's `labels: N` fallback without an XML file).
    Last(usize),
    /// The first `n` attributes are the labels (MEKA's `-C n` convention).
    First(usize),
    /// The MEKA option in the relation name: `@relation 'Scene: -C 6'` makes the first 6
    /// attributes labels, `-C -6` the last 6 ([`meka_label_spec`]); an error when the relation
    /// name has no such option.
    Meka,
}

/// The labels named by MEKA's `-C` option in a relation name: `'Scene: -C 6'` → `First(6)`,
/// `'Scene: -C -6'` → `Last(6)`. `None` without the option, or with `-C 0`. As in MEKA, options
/// are read only after the first `:` of the name.
pub fn meka_label_spec(relation: &str) -> Option<LabelSpec> {
    let (_, options) = relation.split_once(':')?;
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        if w == "-C" {
            let n: i64 = words.next()?.parse().ok()?;
            let k = usize::try_from(n.unsigned_abs()).ok()?;
            return match n {
                n if n > 0 => Some(LabelSpec::First(k)),
                n if n < 0 => Some(LabelSpec::Last(k)),
                _ => None,
            };
        }
    }
    None
}

/// A feature attribute the reader left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedAttribute {
    /// The attribute's name.
    pub name: String,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// Why an attribute was dropped (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DropReason {
    /// A `string` attribute.
    String,
    /// A nominal attribute declaring more than [`MAX_NOMINAL_VALUES`] values.
    Identifier {
        /// How many values it declares.
        values: usize,
    },
}

impl fmt::Display for DroppedAttribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            DropReason::String => write!(
                f,
                "attribute `{}` dropped: a `string` attribute (free text has no feature encoding)",
                self.name
            ),
            DropReason::Identifier { values } => write!(
                f,
                "attribute `{}` dropped: nominal with {values} declared values (more than \
                 {MAX_NOMINAL_VALUES}), taken for an identifier",
                self.name
            ),
        }
    }
}

/// What [`read_arff_noted`] decided beyond parsing, for callers to report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArffNotes {
    /// Feature attributes left out, in header order.
    pub dropped: Vec<DroppedAttribute>,
    /// The labels a MEKA relation name chose ([`LabelSpec::Meka`]): `First(n)` or `Last(n)`.
    pub meka_labels: Option<LabelSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum AttrType {
    Numeric,
    Nominal,
    Text,
    /// Unsupported type; the error is raised once roles are known (so it can name the attribute).
    Unsupported,
}

/// Above this many declared values a nominal attribute's lookup uses a hash map.
const SCAN_MAX: usize = 16;

/// The declared values of a nominal attribute and the lookup from value to index.
#[derive(Default)]
struct Nominal {
    values: Vec<Vec<u8>>,
    /// Exactly `{0,1}`: the common case, matched without a search.
    zero_one: bool,
    map: Option<HashMap<Vec<u8>, u32>>,
}

impl Nominal {
    fn new(values: Vec<Vec<u8>>) -> Self {
        let zero_one = values.len() == 2 && values[0] == b"0" && values[1] == b"1";
        let map = (values.len() > SCAN_MAX).then(|| {
            let mut m = HashMap::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                // The first of repeated values wins, as with the linear scan.
                m.entry(v.clone()).or_insert(i as u32);
            }
            m
        });
        Self {
            values,
            zero_one,
            map,
        }
    }

    fn index(&self, tok: &[u8]) -> Option<u32> {
        if self.zero_one {
            return match tok {
                b"0" => Some(0),
                b"1" => Some(1),
                _ => None,
            };
        }
        match &self.map {
            Some(m) => m.get(tok).copied(),
            None => self.values.iter().position(|v| v == tok).map(|i| i as u32),
        }
    }

    /// The declared set for an error message, shortened.
    fn shown(&self) -> String {
        const SHOWN: usize = 12;
        let mut parts: Vec<String> = self
            .values
            .iter()
            .take(SHOWN)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect();
        if self.values.len() > SHOWN {
            parts.push(format!("... ({} values)", self.values.len()));
        }
        format!("{{{}}}", parts.join(","))
    }
}

struct Attr {
    name: String,
    ty: AttrType,
    /// Source text of the type, for error messages.
    ty_text: String,
    nominal: Nominal,
    line: usize,
    col: usize,
}

#[derive(Clone, Copy)]
enum Role {
    Numeric {
        col: u32,
    },
    /// Nominal with at most two values: the value's index (0 or 1) in one column.
    Binary {
        col: u32,
    },
    /// Nominal with more values: one column per declared value, from `col`.
    OneHot {
        col: u32,
    },
    Dropped,
    Label {
        idx: u32,
    },
}

/// The current row's features and labels, reused across rows.
#[derive(Default)]
struct RowBuf {
    fi: Vec<u32>,
    fv: Vec<f32>,
    li: Vec<u32>,
}

/// Reads an ARFF file from `reader`. Errors carry no path; [`read_arff_path`] adds it.
pub fn read_arff<R: BufRead>(reader: R, labels: &LabelSpec) -> Result<Dataset> {
    read_arff_noted(reader, labels).map(|(ds, _)| ds)
}

/// Like [`read_arff`], also returning what the reader decided (dropped attributes, MEKA labels).
pub fn read_arff_noted<R: BufRead>(reader: R, labels: &LabelSpec) -> Result<(Dataset, ArffNotes)> {
    let mut lines = Lines::new(reader);
    let mut relation = String::new();
    let mut attrs: Vec<Attr> = Vec::new();
    let mut scratch = Vec::new();
    let mut saw_data = false;

    // Header.
    while lines.advance()? {
        let line = lines.line();
        if is_blank(line) {
            continue;
        }
        let mut c = lines.cursor();
        c.skip_ws();
        if c.peek() == Some(b'%') {
            continue;
        }
        let kw_pos = c.pos;
        c.expect(b'@', "`@relation`, `@attribute` or `@data`")?;
        let kw = c.word(b"{'\"");
        if kw.eq_ignore_ascii_case(b"relation") {
            c.skip_ws();
            c.name_into(b"%", &mut scratch, "a relation name")?;
            relation = String::from_utf8_lossy(&scratch).into_owned();
            c.expect_end(b'%')?;
        } else if kw.eq_ignore_ascii_case(b"attribute") {
            c.skip_ws();
            c.name_into(b"{%", &mut scratch, "an attribute name")?;
            let name = String::from_utf8_lossy(&scratch).into_owned();
            c.skip_ws();
            let (line_no, col) = (c.line, c.col());
            let (ty, ty_text, nominal) = parse_type(&mut c, &mut scratch)?;
            c.expect_end(b'%')?;
            attrs.push(Attr {
                name,
                ty,
                ty_text,
                nominal,
                line: line_no,
                col,
            });
        } else if kw.eq_ignore_ascii_case(b"data") {
            c.expect_end(b'%')?;
            saw_data = true;
            break;
        } else {
            let mut c2 = c;
            c2.pos = kw_pos;
            return Err(c2.err(ParseErrorKind::Expected {
                expected: "`@relation`, `@attribute` or `@data`",
                found: show(&line[kw_pos..c.pos]),
            }));
        }
    }
    if !saw_data {
        let (line, col) = lines.eof();
        return Err(DataError::parse(
            line,
            col,
            ParseErrorKind::UnexpectedEof {
                expected: "`@data`",
            },
        ));
    }
    let data_line = lines.line_no;
    let layout = assign_roles(&attrs, labels, &relation, data_line)?;
    let roles = &layout.roles;
    let one_hot = &layout.one_hot;
    let mut features = CsrMatrix::new(layout.feature_names.len());
    let mut label_sets = LabelSets::new(layout.label_names.len());
    let n_attr = attrs.len();

    // Data rows, reusing the row buffers.
    let mut row = RowBuf::default();
    let mut label_order_sorted = true;
    while lines.advance()? {
        let line = lines.line();
        if is_blank(line) {
            continue;
        }
        let mut c = lines.cursor();
        c.skip_ws();
        if c.peek() == Some(b'%') {
            continue;
        }
        row.fi.clear();
        row.fv.clear();
        row.li.clear();
        if c.peek() == Some(b'{') {
            c.pos += 1;
            let mut prev: Option<u64> = None;
            // Next one-hot attribute whose omission (= its first value) is still to be written.
            let mut next_hot = 0usize;
            c.skip_ws();
            if c.peek() == Some(b'}') {
                c.pos += 1;
            } else {
                loop {
                    c.skip_ws();
                    let ipos = c.pos;
                    let idx = c.uint("an attribute index")?;
                    if idx >= n_attr as u64 {
                        return Err(c.err_at(
                            ipos,
                            ParseErrorKind::IndexOutOfRange {
                                index: idx,
                                bound: n_attr as u64,
                                what: "number of attributes",
                            },
                        ));
                    }
                    if let Some(p) = prev {
                        if idx == p {
                            return Err(
                                c.err_at(ipos, ParseErrorKind::DuplicateIndex { index: idx })
                            );
                        }
                        if idx < p {
                            return Err(c.err_at(
                                ipos,
                                ParseErrorKind::UnsortedIndex {
                                    index: idx,
                                    previous: p,
                                },
                            ));
                        }
                    }
                    prev = Some(idx);
                    let a = idx as usize;
                    while next_hot < one_hot.len() && one_hot[next_hot].0 < a {
                        row.push_feature(one_hot[next_hot].1, 1.0);
                        next_hot += 1;
                    }
                    if next_hot < one_hot.len() && one_hot[next_hot].0 == a {
                        next_hot += 1;
                    }
                    let before = c.pos;
                    c.skip_ws();
                    if c.pos == before {
                        return Err(c.expected("a space and a value"));
                    }
                    let vpos = c.pos;
                    let tok = token(&mut c, &mut scratch)?;
                    value(&c, &attrs[a], roles[a], tok, vpos, &mut row)?;
                    c.skip_ws();
                    match c.peek() {
                        Some(b',') => c.pos += 1,
                        Some(b'}') => {
                            c.pos += 1;
                            break;
                        }
                        _ => return Err(c.expected("`,` or `}`")),
                    }
                }
            }
            c.expect_end(b'%')?;
            for &(_, col) in &one_hot[next_hot..] {
                row.push_feature(col, 1.0);
            }
        } else {
            let mut a = 0usize;
            loop {
                c.skip_ws();
                let vpos = c.pos;
                let tok = token(&mut c, &mut scratch)?;
                if a < n_attr {
                    value(&c, &attrs[a], roles[a], tok, vpos, &mut row)?;
                }
                a += 1;
                c.skip_ws();
                match c.peek() {
                    Some(b',') => c.pos += 1,
                    None | Some(b'%') => break,
                    _ => return Err(c.expected("`,` or end of line")),
                }
            }
            if a != n_attr {
                return Err(c.err_at(
                    0,
                    ParseErrorKind::DenseArity {
                        expected: n_attr,
                        found: a,
                    },
                ));
            }
        }
        let li = &mut row.li;
        if !label_order_sorted || li.windows(2).any(|w| w[0] > w[1]) {
            // Label order (XML) differs from attribute order: sort this row.
            label_order_sorted = false;
            li.sort_unstable();
        }
        let ok = try_room(&mut features.indices, row.fi.len()).is_ok()
            && try_room(&mut features.values, row.fv.len()).is_ok()
            && try_room(&mut features.indptr, 1).is_ok()
            && try_room(&mut label_sets.indices, row.li.len()).is_ok()
            && try_room(&mut label_sets.indptr, 1).is_ok();
        if !ok {
            let bytes = features.nnz() * 8 + label_sets.indices.len() * 4;
            return Err(DataError::out_of_memory(lines.line_no, bytes));
        }
        features.push_row(&row.fi, &row.fv);
        label_sets.push_row(&row.li);
    }

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

impl RowBuf {
    #[inline]
    fn push_feature(&mut self, col: u32, v: f32) {
        self.fi.push(col);
        self.fv.push(v);
    }
}

/// Reads one value token: quoted (unescaped into `scratch`) or bare up to `,`, `}`, `%` or space.
fn token<'a: 'b, 'b>(c: &mut Cur<'a>, scratch: &'b mut Vec<u8>) -> Result<&'b [u8]> {
    match c.peek() {
        Some(b'\'' | b'"') => {
            c.name_into(b"", scratch, "a value")?;
            Ok(&scratch[..])
        }
        _ => {
            let w = c.word(b",}%");
            if w.is_empty() {
                return Err(c.expected("a value"));
            }
            Ok(w)
        }
    }
}

/// Stores one attribute value of the current row.
fn value(
    c: &Cur<'_>,
    attr: &Attr,
    role: Role,
    tok: &[u8],
    start: usize,
    row: &mut RowBuf,
) -> Result<()> {
    let missing = tok == b"?";
    let missing_err = || {
        c.err_at(
            start,
            ParseErrorKind::MissingValue {
                name: attr.name.clone(),
            },
        )
    };
    let bad_nominal = |expected: String| {
        c.err_at(
            start,
            ParseErrorKind::BadNominal {
                name: attr.name.clone(),
                found: String::from_utf8_lossy(tok).into_owned(),
                expected,
            },
        )
    };
    let nominal_index = || {
        attr.nominal
            .index(tok)
            .ok_or_else(|| bad_nominal(attr.nominal.shown()))
    };
    match role {
        Role::Dropped => {}
        Role::Numeric { col } => {
            if missing {
                return Err(missing_err());
            }
            let v = parse_f32(tok).ok_or_else(|| {
                c.err_at(
                    start,
                    ParseErrorKind::NonNumeric {
                        found: String::from_utf8_lossy(tok).into_owned(),
                    },
                )
            })?;
            if v != 0.0 {
                row.push_feature(col, v);
            }
        }
        Role::Binary { col } => {
            if !missing && nominal_index()? == 1 {
                row.push_feature(col, 1.0);
            }
        }
        Role::OneHot { col } => {
            if !missing {
                row.push_feature(col + nominal_index()?, 1.0);
            }
        }
        Role::Label { idx } => {
            if missing {
                return Err(missing_err());
            }
            // Label attributes are `{0,1}` or numeric (checked when roles were assigned).
            let on = if attr.ty == AttrType::Nominal {
                attr.nominal.index(tok).map(|i| i == 1)
            } else {
                match parse_f32(tok) {
                    Some(0.0) => Some(false),
                    Some(1.0) => Some(true),
                    _ => None,
                }
            };
            if on.ok_or_else(|| bad_nominal("{0,1}".into()))? {
                row.li.push(idx);
            }
        }
    }
    Ok(())
}

fn parse_type(c: &mut Cur<'_>, scratch: &mut Vec<u8>) -> Result<(AttrType, String, Nominal)> {
    let start = c.pos;
    if c.peek() == Some(b'{') {
        c.pos += 1;
        let mut vals: Vec<Vec<u8>> = Vec::new();
        loop {
            c.skip_ws();
            if c.peek() == Some(b'}') && vals.is_empty() {
                c.pos += 1;
                break;
            }
            c.name_into(b",}", scratch, "a nominal value")?;
            vals.push(scratch.clone());
            c.skip_ws();
            match c.peek() {
                Some(b',') => c.pos += 1,
                Some(b'}') => {
                    c.pos += 1;
                    break;
                }
                _ => return Err(c.expected("`,` or `}` in a nominal set")),
            }
        }
        let text = String::from_utf8_lossy(&c.s[start..c.pos]).into_owned();
        Ok((AttrType::Nominal, text, Nominal::new(vals)))
    } else {
        let w = c.word(b"%");
        if w.is_empty() {
            return Err(c.expected("an attribute type"));
        }
        let text = String::from_utf8_lossy(w).into_owned();
        let numeric = [&b"numeric"[..], b"real", b"integer"]
            .iter()
            .any(|k| w.eq_ignore_ascii_case(k));
        let ty = if numeric {
            AttrType::Numeric
        } else if w.eq_ignore_ascii_case(b"string") {
            AttrType::Text
        } else {
            // `date` may carry a format word; skip the rest so the error names the type.
            while !c.at_end() && c.peek() != Some(b'%') {
                c.pos += 1;
            }
            AttrType::Unsupported
        };
        Ok((ty, text, Nominal::default()))
    }
}

/// Roles of the attributes and the names of the columns they produce.
struct Layout {
    roles: Vec<Role>,
    feature_names: Vec<String>,
    label_names: Vec<String>,
    /// `(attribute, first column)` of every one-hot attribute, in attribute order: a sparse row
    /// that omits one sets its first column.
    one_hot: Vec<(usize, u32)>,
    notes: ArffNotes,
}

/// The label index of every attribute, and the label names in label order.
fn label_positions(
    attrs: &[Attr],
    spec: &LabelSpec,
    relation: &str,
    data_line: usize,
    notes: &mut ArffNotes,
) -> Result<(Vec<Option<u32>>, Vec<String>)> {
    let n = attrs.len();
    let mut label_of: Vec<Option<u32>> = vec![None; n];
    let label_names: Vec<String> = match spec {
        LabelSpec::Names(names) => {
            let mut by_name: HashMap<&str, usize> = HashMap::with_capacity(n);
            for (i, a) in attrs.iter().enumerate() {
                if by_name.insert(a.name.as_str(), i).is_some() {
                    return Err(DataError::parse(
                        a.line,
                        1,
                        ParseErrorKind::DuplicateAttribute {
                            name: a.name.clone(),
                        },
                    ));
                }
            }
            for (k, name) in names.iter().enumerate() {
                let Some(&i) = by_name.get(name.as_str()) else {
                    return Err(DataError::parse(
                        data_line,
                        1,
                        ParseErrorKind::LabelNotInHeader {
                            name: name.clone(),
                            source_name: "the label list".into(),
                        },
                    ));
                };
                if label_of[i].is_some() {
                    return Err(DataError::Parse {
                        location: Location {
                            path: None,
                            line: data_line,
                            column: 1,
                        },
                        kind: ParseErrorKind::BadLabelSpec(format!("label `{name}` listed twice")),
                    });
                }
                label_of[i] = Some(k as u32);
            }
            names.clone()
        }
        LabelSpec::Last(k) | LabelSpec::First(k) => {
            if *k > n {
                return Err(DataError::parse(
                    data_line,
                    1,
                    ParseErrorKind::BadLabelSpec(format!(
                        "{k} labels requested but the header has only {n} attributes"
                    )),
                ));
            }
            let range = if matches!(spec, LabelSpec::Last(_)) {
                n - k..n
            } else {
                0..*k
            };
            for (j, i) in range.clone().enumerate() {
                label_of[i] = Some(j as u32);
            }
            range.map(|i| attrs[i].name.clone()).collect()
        }
        LabelSpec::Meka => {
            let Some(found) = meka_label_spec(relation) else {
                return Err(DataError::parse(
                    data_line,
                    1,
                    ParseErrorKind::NoMekaLabels {
                        relation: relation.to_string(),
                    },
                ));
            };
            notes.meka_labels = Some(found.clone());
            return label_positions(attrs, &found, relation, data_line, notes);
        }
    };
    Ok((label_of, label_names))
}

fn assign_roles(
    attrs: &[Attr],
    spec: &LabelSpec,
    relation: &str,
    data_line: usize,
) -> Result<Layout> {
    let mut notes = ArffNotes::default();
    let (label_of, label_names) = label_positions(attrs, spec, relation, data_line, &mut notes)?;
    let mut roles = Vec::with_capacity(attrs.len());
    let mut feature_names = Vec::new();
    let mut one_hot = Vec::new();
    for (i, a) in attrs.iter().enumerate() {
        let unsupported = |kind| Err(DataError::parse(a.line, a.col, kind));
        if let Some(idx) = label_of[i] {
            let ok = a.ty == AttrType::Numeric || (a.ty == AttrType::Nominal && a.nominal.zero_one);
            if !ok {
                return unsupported(ParseErrorKind::UnsupportedLabelType {
                    name: a.name.clone(),
                    found: a.ty_text.clone(),
                });
            }
            roles.push(Role::Label { idx });
            continue;
        }
        // Column indices are u32: refuse a header whose one-hot encoding would overflow them.
        let col = u32::try_from(feature_names.len()).ok();
        let k = a.nominal.values.len();
        let role = match a.ty {
            AttrType::Unsupported => {
                return unsupported(ParseErrorKind::UnknownAttributeType {
                    name: a.name.clone(),
                    found: a.ty_text.clone(),
                })
            }
            AttrType::Text => {
                notes.dropped.push(DroppedAttribute {
                    name: a.name.clone(),
                    reason: DropReason::String,
                });
                Role::Dropped
            }
            AttrType::Nominal if k > MAX_NOMINAL_VALUES => {
                notes.dropped.push(DroppedAttribute {
                    name: a.name.clone(),
                    reason: DropReason::Identifier { values: k },
                });
                Role::Dropped
            }
            AttrType::Numeric | AttrType::Nominal => {
                let width = if a.ty == AttrType::Nominal && k > 2 {
                    k
                } else {
                    1
                };
                let Some(col) = col.filter(|c| c.checked_add(width as u32).is_some()) else {
                    return unsupported(ParseErrorKind::TooLarge {
                        what: "feature count",
                        value: (feature_names.len() + width) as u64,
                        limit: u64::from(u32::MAX),
                        why: "u32 column indices",
                    });
                };
                if width > 1 {
                    one_hot.push((i, col));
                    feature_names.extend(
                        a.nominal
                            .values
                            .iter()
                            .map(|v| format!("{}={}", a.name, String::from_utf8_lossy(v))),
                    );
                    Role::OneHot { col }
                } else {
                    feature_names.push(a.name.clone());
                    if a.ty == AttrType::Numeric {
                        Role::Numeric { col }
                    } else {
                        Role::Binary { col }
                    }
                }
            }
        };
        roles.push(role);
    }
    Ok(Layout {
        roles,
        feature_names,
        label_names,
        one_hot,
        notes,
    })
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
