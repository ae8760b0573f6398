//! Feature encoding of the attributes, as Weka's `NominalToBinary` filter does: the declared
//! values of a nominal attribute, the column(s) each attribute produces, and the attributes
//! dropped (strings, and nominals declaring so many values they are taken for identifiers).

use std::collections::{HashMap, HashSet};
use std::fmt;

use super::header::{label_positions, Attr, AttrType, LabelSpec};
use super::ArffNotes;
use crate::data::error::{DataError, ParseErrorKind, Result};

/// Nominal feature attributes that declare more values than this are taken for identifiers
/// and dropped (see the module docs). Large enough for real categories (countries, languages,
/// regions), small enough that one-hot encoding stays a reasonable representation.
pub const MAX_NOMINAL_VALUES: usize = 256;

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

/// Above this many declared values a nominal attribute's lookup uses a hash map.
const SCAN_MAX: usize = 16;

/// The declared values of a nominal attribute and the lookup from value to index.
#[derive(Default)]
pub(super) struct Nominal {
    pub(super) values: Vec<Vec<u8>>,
    /// Exactly `{0,1}`: the common case, matched without a search.
    pub(super) zero_one: bool,
    map: Option<HashMap<Vec<u8>, u32>>,
}

impl Nominal {
    pub(super) fn new(values: Vec<Vec<u8>>) -> Self {
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

    pub(super) fn index(&self, tok: &[u8]) -> Option<u32> {
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
    pub(super) fn shown(&self) -> String {
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

/// What one attribute becomes in a row.
#[derive(Clone, Copy)]
pub(super) enum Role {
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

/// Roles of the attributes and the names of the columns they produce.
pub(super) struct Layout {
    pub(super) roles: Vec<Role>,
    pub(super) feature_names: Vec<String>,
    pub(super) label_names: Vec<String>,
    /// `(attribute, first column)` of every one-hot attribute, in attribute order: a sparse row
    /// that omits one sets its first column.
    pub(super) one_hot: Vec<(usize, u32)>,
    pub(super) notes: ArffNotes,
}

/// The role of every attribute and the columns they produce: labels by `spec`, features encoded
/// as the module docs say.
pub(super) fn assign_roles(
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
    let skipped: HashSet<&str> = match spec {
        LabelSpec::Skip(names) => names.iter().map(String::as_str).collect(),
        _ => HashSet::new(),
    };
    for (i, a) in attrs.iter().enumerate() {
        let role = if skipped.contains(a.name.as_str()) {
            Role::Dropped
        } else if let Some(idx) = label_of[i] {
            label_role(a, idx)?
        } else {
            feature_role(i, a, &mut feature_names, &mut one_hot, &mut notes)?
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

/// The role of the label attribute `a`, label `idx`: it must be numeric or `{0,1}`.
fn label_role(a: &Attr, idx: u32) -> Result<Role> {
    let ok = a.ty == AttrType::Numeric || (a.ty == AttrType::Nominal && a.nominal.zero_one);
    if !ok {
        return Err(DataError::parse(
            a.line,
            a.col,
            ParseErrorKind::UnsupportedLabelType {
                name: a.name.clone(),
                found: a.ty_text.clone(),
            },
        ));
    }
    Ok(Role::Label { idx })
}

/// The role of the feature attribute `a` (attribute `i`): its columns are appended to
/// `feature_names` (and `one_hot`), or it is dropped with a note.
fn feature_role(
    i: usize,
    a: &Attr,
    feature_names: &mut Vec<String>,
    one_hot: &mut Vec<(usize, u32)>,
    notes: &mut ArffNotes,
) -> Result<Role> {
    let unsupported = |kind| Err(DataError::parse(a.line, a.col, kind));
    // Column indices are u32: refuse a header whose one-hot encoding would overflow them.
    let col = u32::try_from(feature_names.len()).ok();
    let k = a.nominal.values.len();
    Ok(match a.ty {
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
    })
}
