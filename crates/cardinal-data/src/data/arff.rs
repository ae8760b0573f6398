//! MULAN ARFF reader, streaming from any [`BufRead`].
//!
//! Supported:
//! - header keywords `@relation`, `@attribute`, `@data` in any case; `%` comment lines; blank
//!   lines; LF or CRLF line ends;
//! - names (relation, attributes, nominal values) bare or quoted with `'...'` / `"..."`, where a
//!   backslash escapes the next character (`\n`, `\t`, `\r` mean control characters);
//! - attribute types `numeric`, `real`, `integer` (read as `f32`) and the nominal set `{0,1}`
//!   (read as 0/1; written in that order, because a sparse row's omitted value is the *first*
//!   nominal value). Label attributes must be `{0,1}` or numeric with values 0/1. Every other
//!   type (`string`, `date`, `relational`, other nominal sets) is an error that names the
//!   attribute; multi-valued nominal features would need an encoding we do not guess;
//! - sparse rows `{i v, ...}` (0-based attribute indices, strictly increasing, omitted = 0) and
//!   dense rows `v, v, ...`; a `%` comment may follow a row.
//!
//! Not supported (clear error): missing values `?`, instance weights (`{...}, {w}`).
//!
//! Labels are chosen by a [`LabelSpec`]: by name (MULAN's XML file; the label order of the
//! result is the order of the names, **not** the ARFF attribute order, and labels may be
//! anywhere among the attributes) or by count (`Last(n)` / `First(n)`, the fallback when there
//! is no XML). Features keep the ARFF order of the remaining attributes. Explicit zeros are not
//! stored in the feature matrix.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;

use super::error::{show, try_room, DataError, Location, ParseErrorKind, Result};
use super::lex::{is_blank, parse_f32, Cur, Lines};
use super::{CsrMatrix, Dataset, LabelSets};

/// Which ARFF attributes are labels.
#[derive(Debug, Clone, PartialEq)]
pub enum LabelSpec {
    /// Label attributes by name, in label order (MULAN's XML file; see [`super::read_label_xml`]).
    Names(Vec<String>),
    /// The last `n` attributes are the labels (MULAN's `labels: N` fallback without an XML file).
    Last(usize),
    /// The first `n` attributes are the labels (MEKA's `-C n` convention).
    First(usize),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum AttrType {
    Numeric,
    Binary,
    /// Unsupported type; the error is raised once roles are known (so it can name the attribute).
    Unsupported,
}

struct Attr {
    name: String,
    ty: AttrType,
    /// Source text of the type, for error messages.
    ty_text: String,
    line: usize,
    col: usize,
}

#[derive(Clone, Copy)]
enum Role {
    Feature { col: u32, binary: bool },
    Label { idx: u32 },
}

/// Reads an ARFF file from `reader`. Errors carry no path; [`read_arff_path`] adds it.
pub fn read_arff<R: BufRead>(reader: R, labels: &LabelSpec) -> Result<Dataset> {
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
            let (ty, ty_text) = parse_type(&mut c, &mut scratch)?;
            c.expect_end(b'%')?;
            attrs.push(Attr {
                name,
                ty,
                ty_text,
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
    let (roles, feature_names, label_names) = assign_roles(&attrs, labels, data_line)?;
    let n_features = feature_names.len();
    let mut features = CsrMatrix::new(n_features);
    let mut label_sets = LabelSets::new(label_names.len());
    let n_attr = attrs.len();

    // Data rows, reusing the row buffers.
    let mut fi: Vec<u32> = Vec::new();
    let mut fv: Vec<f32> = Vec::new();
    let mut li: Vec<u32> = Vec::new();
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
        fi.clear();
        fv.clear();
        li.clear();
        let mut push = |c: &Cur<'_>, a: usize, tok: &[u8], start: usize| {
            value(
                c, &attrs[a], roles[a], tok, start, &mut fi, &mut fv, &mut li,
            )
        };
        if c.peek() == Some(b'{') {
            c.pos += 1;
            let mut prev: Option<u64> = None;
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
                    let before = c.pos;
                    c.skip_ws();
                    if c.pos == before {
                        return Err(c.expected("a space and a value"));
                    }
                    let vpos = c.pos;
                    let tok = token(&mut c, &mut scratch)?;
                    push(&c, idx as usize, tok, vpos)?;
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
        } else {
            let mut a = 0usize;
            loop {
                c.skip_ws();
                let vpos = c.pos;
                let tok = token(&mut c, &mut scratch)?;
                if a < n_attr {
                    push(&c, a, tok, vpos)?;
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
        if !label_order_sorted || li.windows(2).any(|w| w[0] > w[1]) {
            // Label order (XML) differs from attribute order: sort this row.
            label_order_sorted = false;
            li.sort_unstable();
        }
        let ok = try_room(&mut features.indices, fi.len()).is_ok()
            && try_room(&mut features.values, fv.len()).is_ok()
            && try_room(&mut features.indptr, 1).is_ok()
            && try_room(&mut label_sets.indices, li.len()).is_ok()
            && try_room(&mut label_sets.indptr, 1).is_ok();
        if !ok {
            let bytes = features.nnz() * 8 + label_sets.indices.len() * 4;
            return Err(DataError::out_of_memory(lines.line_no, bytes));
        }
        features.push_row(&fi, &fv);
        label_sets.push_row(&li);
    }

    Ok(Dataset {
        name: relation,
        features,
        labels: label_sets,
        feature_names,
        label_names,
    })
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
    fi: &mut Vec<u32>,
    fv: &mut Vec<f32>,
    li: &mut Vec<u32>,
) -> Result<()> {
    if tok == b"?" {
        return Err(c.err_at(
            start,
            ParseErrorKind::MissingValue {
                name: attr.name.clone(),
            },
        ));
    }
    let bad_binary = || {
        c.err_at(
            start,
            ParseErrorKind::BadNominal {
                name: attr.name.clone(),
                found: String::from_utf8_lossy(tok).into_owned(),
                expected: "{0,1}".into(),
            },
        )
    };
    match role {
        Role::Feature { col, binary } => {
            let v = if binary {
                match tok {
                    b"0" => 0.0,
                    b"1" => 1.0,
                    _ => return Err(bad_binary()),
                }
            } else {
                parse_f32(tok).ok_or_else(|| {
                    c.err_at(
                        start,
                        ParseErrorKind::NonNumeric {
                            found: String::from_utf8_lossy(tok).into_owned(),
                        },
                    )
                })?
            };
            if v != 0.0 {
                fi.push(col);
                fv.push(v);
            }
        }
        Role::Label { idx } => {
            let v = if attr.ty == AttrType::Binary {
                match tok {
                    b"0" => false,
                    b"1" => true,
                    _ => return Err(bad_binary()),
                }
            } else {
                match parse_f32(tok) {
                    Some(0.0) => false,
                    Some(1.0) => true,
                    _ => return Err(bad_binary()),
                }
            };
            if v {
                li.push(idx);
            }
        }
    }
    Ok(())
}

fn parse_type(c: &mut Cur<'_>, scratch: &mut Vec<u8>) -> Result<(AttrType, String)> {
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
        let binary = vals.len() == 2 && vals[0] == b"0" && vals[1] == b"1";
        Ok((
            if binary {
                AttrType::Binary
            } else {
                AttrType::Unsupported
            },
            text,
        ))
    } else {
        let w = c.word(b"%");
        if w.is_empty() {
            return Err(c.expected("an attribute type"));
        }
        let text = String::from_utf8_lossy(w).into_owned();
        let numeric = [&b"numeric"[..], b"real", b"integer"]
            .iter()
            .any(|k| w.eq_ignore_ascii_case(k));
        if !numeric {
            // `date` may carry a format word; skip the rest so the error names the type.
            while !c.at_end() && c.peek() != Some(b'%') {
                c.pos += 1;
            }
        }
        Ok((
            if numeric {
                AttrType::Numeric
            } else {
                AttrType::Unsupported
            },
            text,
        ))
    }
}

type Roles = (Vec<Role>, Vec<String>, Vec<String>);

fn assign_roles(attrs: &[Attr], spec: &LabelSpec, data_line: usize) -> Result<Roles> {
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
    };
    let mut roles = Vec::with_capacity(n);
    let mut feature_names = Vec::new();
    for (i, a) in attrs.iter().enumerate() {
        if a.ty == AttrType::Unsupported {
            return Err(DataError::parse(
                a.line,
                a.col,
                ParseErrorKind::UnknownAttributeType {
                    name: a.name.clone(),
                    found: a.ty_text.clone(),
                },
            ));
        }
        roles.push(match label_of[i] {
            Some(idx) => Role::Label { idx },
            None => {
                feature_names.push(a.name.clone());
                Role::Feature {
                    col: (feature_names.len() - 1) as u32,
                    binary: a.ty == AttrType::Binary,
                }
            }
        });
    }
    Ok((roles, feature_names, label_names))
}

/// Reads an ARFF file (plain or gzip-compressed, detected by magic bytes); errors carry the path.
/// An empty relation name becomes the file stem.
pub fn read_arff_path(path: &Path, labels: &LabelSpec) -> Result<Dataset> {
    let r = super::open_path(path)?;
    let mut ds = read_arff(r, labels).map_err(|e| e.with_path(path))?;
    if ds.name.is_empty() {
        ds.name = super::file_stem(path);
    }
    Ok(ds)
}

/// Reads a MULAN dataset: the ARFF file with its labels named by the XML file (label order =
/// XML order).
pub fn read_mulan(arff: &Path, xml: &Path) -> Result<Dataset> {
    let names = super::read_label_xml_path(xml)?;
    read_arff_path(arff, &LabelSpec::Names(names)).map_err(|e| match e {
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
