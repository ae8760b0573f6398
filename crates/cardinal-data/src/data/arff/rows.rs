//! The data section: dense rows `v, v, ...` and sparse rows `{i v, ...}`, each value stored as
//! its attribute's [`Role`] says.

use std::io::BufRead;

use super::header::{Attr, AttrType};
use super::nominal::{Layout, Role};
use crate::data::error::{try_room, DataError, ParseErrorKind, Result};
use crate::data::lex::{is_blank, parse_f32, Cur, Lines};
use crate::data::{CsrMatrix, LabelSets};

/// The current row's features and labels, reused across rows.
#[derive(Default)]
struct RowBuf {
    fi: Vec<u32>,
    fv: Vec<f32>,
    li: Vec<u32>,
}

impl RowBuf {
    #[inline]
    fn push_feature(&mut self, col: u32, v: f32) {
        self.fi.push(col);
        self.fv.push(v);
    }
}

/// Reads the data rows after `@data` into the feature matrix and the label sets, reusing the
/// row buffers.
pub(super) fn read_rows<R: BufRead>(
    lines: &mut Lines<R>,
    attrs: &[Attr],
    layout: &Layout,
) -> Result<(CsrMatrix, LabelSets)> {
    let roles = &layout.roles;
    let one_hot = &layout.one_hot;
    let mut features = CsrMatrix::new(layout.feature_names.len());
    let mut label_sets = LabelSets::new(layout.label_names.len());
    let mut scratch = Vec::new();
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
            sparse_row(&mut c, attrs, roles, one_hot, &mut scratch, &mut row)?;
        } else {
            dense_row(&mut c, attrs, roles, &mut scratch, &mut row)?;
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
    Ok((features, label_sets))
}

/// Reads a sparse row `{i v, ...}` (the cursor at its `{`). An attribute the row omits is 0: for a
/// one-hot attribute, its first declared value.
fn sparse_row(
    c: &mut Cur<'_>,
    attrs: &[Attr],
    roles: &[Role],
    one_hot: &[(usize, u32)],
    scratch: &mut Vec<u8>,
    row: &mut RowBuf,
) -> Result<()> {
    let n_attr = attrs.len();
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
                    return Err(c.err_at(ipos, ParseErrorKind::DuplicateIndex { index: idx }));
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
            let tok = token(c, scratch)?;
            value(c, &attrs[a], roles[a], tok, vpos, row)?;
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
    Ok(())
}

/// Reads a dense row `v, v, ...`: one value per attribute.
fn dense_row(
    c: &mut Cur<'_>,
    attrs: &[Attr],
    roles: &[Role],
    scratch: &mut Vec<u8>,
    row: &mut RowBuf,
) -> Result<()> {
    let n_attr = attrs.len();
    let mut a = 0usize;
    loop {
        c.skip_ws();
        let vpos = c.pos;
        let tok = token(c, scratch)?;
        if a < n_attr {
            value(c, &attrs[a], roles[a], tok, vpos, row)?;
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
    Ok(())
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
    let nominal_index = || {
        attr.nominal
            .index(tok)
            .ok_or_else(|| bad_nominal(c, attr, tok, start, attr.nominal.shown()))
    };
    match role {
        Role::Dropped => {}
        Role::Numeric { col } => {
            if missing {
                return Err(missing_value(c, attr, start));
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
            if label_on(c, attr, tok, start)? {
                row.li.push(idx);
            }
        }
    }
    Ok(())
}

/// Whether the label attribute `attr` is on in the value `tok` (read at `start`).
fn label_on(c: &Cur<'_>, attr: &Attr, tok: &[u8], start: usize) -> Result<bool> {
    if tok == b"?" {
        return Err(missing_value(c, attr, start));
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
    on.ok_or_else(|| bad_nominal(c, attr, tok, start, "{0,1}".into()))
}

/// The error of a missing value `?` of `attr` at `start`.
fn missing_value(c: &Cur<'_>, attr: &Attr, start: usize) -> DataError {
    c.err_at(
        start,
        ParseErrorKind::MissingValue {
            name: attr.name.clone(),
        },
    )
}

/// The error of a value `tok` of `attr` at `start` outside `expected`.
fn bad_nominal(c: &Cur<'_>, attr: &Attr, tok: &[u8], start: usize, expected: String) -> DataError {
    c.err_at(
        start,
        ParseErrorKind::BadNominal {
            name: attr.name.clone(),
            found: String::from_utf8_lossy(tok).into_owned(),
            expected,
        },
    )
}
