//! The ARFF header: `@relation` and `@attribute` lines up to `@data`, attribute types, and which
//! attributes are labels ([`LabelSpec`], including MEKA's `-C` option in the relation name).

use std::collections::HashMap;
use std::io::BufRead;

use super::nominal::Nominal;
use super::ArffNotes;
use crate::data::error::{show, DataError, Location, ParseErrorKind, Result};
use crate::data::lex::{is_blank, Cur, Lines};

/// Which ARFF attributes are labels.
#[derive(Debug, Clone, PartialEq)]
pub enum LabelSpec {
    /// Label attributes by name, in label order (MULAN's XML file; see
    /// [`read_label_xml`](crate::data::read_label_xml)).
    Names(Vec<String>),
    /// The last `n` attributes are the labels (MULAN's `labels: N` fallback without an XML file).
    Last(usize),
    /// The first `n` attributes are the labels (MEKA's `-C n` convention).
    First(usize),
    /// The MEKA option in the relation name: `@relation 'Scene: -C 6'` makes the first 6
    /// attributes labels, `-C -6` the last 6 ([`meka_label_spec`]); an error when the relation
    /// name has no such option.
    Meka,
    /// For prediction: the attributes with these names, where the header has them, are labels
    /// left unread (their values may be `?`), and the dataset has no labels. None of them need
    /// be present, so a file with its label columns stripped reads the same.
    Skip(Vec<String>),
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

/// What is wrong with the MEKA option of a relation name that [`meka_label_spec`] reads no
/// labels from, in words for a message: the option missing, before the `:`, without a
/// number, or naming no labels.
pub fn meka_problem(relation: &str) -> String {
    let Some((_, options)) = relation.split_once(':') else {
        return if relation.split_whitespace().any(|w| w == "-C") {
            format!(
                "has `-C` but no `:` before it (MEKA reads options only after the first `:`, \
                 as in `{}: -C 6`)",
                relation.split_whitespace().next().unwrap_or("name")
            )
        } else {
            "has no MEKA option `-C n`".into()
        };
    };
    let mut words = options.split_whitespace();
    while let Some(w) = words.next() {
        if w == "-C" {
            return match words.next() {
                None => "has `-C` without a number (`-C 6`: the first 6 attributes are \
                         labels, `-C -6` the last 6)"
                    .into(),
                Some(v) => match v.parse::<i64>() {
                    Ok(0) => "has `-C 0`, which names no label attributes".into(),
                    Ok(_) => format!("has `-C {v}`, a count too large"),
                    Err(_) => format!(
                        "has `-C {v}`: `{v}` is not a whole number (`-C 6`: the first 6 \
                         attributes are labels, `-C -6` the last 6)"
                    ),
                },
            };
        }
    }
    "has no MEKA option `-C n`".into()
}

/// The declared type of an attribute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum AttrType {
    Numeric,
    Nominal,
    Text,
    /// Unsupported type; the error is raised once roles are known (so it can name the attribute).
    Unsupported,
}

/// One `@attribute` declaration.
pub(super) struct Attr {
    pub(super) name: String,
    pub(super) ty: AttrType,
    /// Source text of the type, for error messages.
    pub(super) ty_text: String,
    pub(super) nominal: Nominal,
    pub(super) line: usize,
    pub(super) col: usize,
}

/// Reads the header up to and including the `@data` line: the relation name and the attributes.
pub(super) fn read_header<R: BufRead>(lines: &mut Lines<R>) -> Result<(String, Vec<Attr>)> {
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
    Ok((relation, attrs))
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

/// The label index of every attribute, and the label names in label order.
pub(super) fn label_positions(
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
            named_labels(attrs, names, data_line, &mut label_of)?;
            names.clone()
        }
        LabelSpec::Last(k) | LabelSpec::First(k) => {
            if *k > n {
                return Err(DataError::parse(
                    data_line,
                    1,
                    ParseErrorKind::TooManyLabelsRequested {
                        requested: *k,
                        attributes: n,
                    },
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
        // Skipped attributes get their role in `assign_roles`; there are no labels.
        LabelSpec::Skip(_) => Vec::new(),
    };
    Ok((label_of, label_names))
}

/// Marks the attributes named in `names` as labels `0, 1, ...` in `label_of`.
fn named_labels(
    attrs: &[Attr],
    names: &[String],
    data_line: usize,
    label_of: &mut [Option<u32>],
) -> Result<()> {
    let n = attrs.len();
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
                kind: ParseErrorKind::LabelListedTwice { name: name.clone() },
            });
        }
        label_of[i] = Some(k as u32);
    }
    Ok(())
}
