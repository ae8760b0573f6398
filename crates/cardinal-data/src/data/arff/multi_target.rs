//! MEKA's multi-target ARFF: the relation name's `-C L` makes the first `L` attributes the
//! targets, each nominal over the same `M` class names; the other attributes are numeric
//! features. Rows are dense (`v_1,v_2,...`); sparse rows and missing values (`?`) are refused,
//! since a segmentation has a class at every position.

use super::super::error::{show, DataError, ParseErrorKind, Result};
use super::super::lex::{is_blank, parse_f32, Lines};
use super::super::multi_target::MultiTargetDataset;
use super::header::{meka_label_spec, read_header, AttrType, LabelSpec};
use std::io::{BufRead, Write};

/// `tok` without one pair of enclosing single or double quotes (class names need no escapes).
fn unquote(tok: &[u8]) -> &[u8] {
    match tok {
        [q @ (b'\'' | b'"'), inner @ .., last] if last == q => inner,
        _ => tok,
    }
}

/// Whether an ARFF file's header declares multi-target labels: MEKA's `-C L` (`L > 0`) with
/// the first `L` attributes nominal over the same classes, other than `{0, 1}` (binary labels,
/// which the multi-label readers take). Only the header is read.
pub fn declares_multi_target<R: BufRead>(reader: R) -> Result<bool> {
    let mut lines = Lines::new(reader);
    let (relation, attrs) = read_header(&mut lines)?;
    let l = match meka_label_spec(&relation) {
        Some(LabelSpec::First(l)) if l <= attrs.len() => l,
        _ => return Ok(false),
    };
    let classes = &attrs[0].nominal.values;
    let same = attrs[..l]
        .iter()
        .all(|a| a.ty == AttrType::Nominal && a.nominal.values == *classes);
    let mut sorted = classes.clone();
    sorted.sort();
    let binary = sorted == [b"0".to_vec(), b"1".to_vec()];
    Ok(same && !binary)
}

/// Reads a multi-target ARFF file (see the module documentation).
pub fn read_multi_target_arff<R: BufRead>(reader: R) -> Result<MultiTargetDataset> {
    let mut lines = Lines::new(reader);
    let (relation, attrs) = read_header(&mut lines)?;
    let data_line = lines.line_no;
    let positions = match meka_label_spec(&relation) {
        Some(LabelSpec::First(l)) if l <= attrs.len() => l,
        _ => {
            return Err(DataError::parse(
                data_line,
                1,
                ParseErrorKind::NoMekaLabels {
                    relation: relation.clone(),
                },
            ))
        }
    };
    let (targets, features) = attrs.split_at(positions);
    let classes = &targets[0].nominal.values;
    for a in targets {
        if a.ty != AttrType::Nominal || a.nominal.values != *classes {
            return Err(DataError::parse(
                a.line,
                a.col,
                ParseErrorKind::Expected {
                    expected: "a nominal target with the same classes as the first target",
                    found: show(a.ty_text.as_bytes()),
                },
            ));
        }
    }
    if let Some(a) = features.iter().find(|a| a.ty != AttrType::Numeric) {
        return Err(DataError::parse(
            a.line,
            a.col,
            ParseErrorKind::Expected {
                expected: "a numeric feature after the targets",
                found: show(a.ty_text.as_bytes()),
            },
        ));
    }
    let width = attrs.len();
    let mut ds = MultiTargetDataset {
        name: relation
            .split_once(':')
            .map_or(relation.as_str(), |(n, _)| n)
            .trim()
            .to_string(),
        class_names: classes
            .iter()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect(),
        target_names: targets.iter().map(|a| a.name.clone()).collect(),
        feature_names: features.iter().map(|a| a.name.clone()).collect(),
        features: Vec::new(),
        targets: Vec::new(),
    };
    while lines.advance()? {
        let line = lines.line();
        if is_blank(line) || line.trim_ascii_start().starts_with(b"%") {
            continue;
        }
        let line_no = lines.line_no;
        let mut col = 1;
        let mut k = 0;
        for field in line.split(|&b| b == b',') {
            let tok = unquote(field.trim_ascii());
            let at = col + (field.len() - field.trim_ascii_start().len());
            col += field.len() + 1;
            let err = |kind| Err(DataError::parse(line_no, at, kind));
            if k >= width {
                return err(ParseErrorKind::Expected {
                    expected: "the end of the row (one value per attribute)",
                    found: show(tok),
                });
            }
            if k == 0 && tok.starts_with(b"{") {
                return err(ParseErrorKind::Expected {
                    expected: "a dense row (multi-target rows have a value at every position)",
                    found: show(tok),
                });
            }
            if k < positions {
                match targets[k].nominal.index(tok) {
                    Some(c) => ds.targets.push(c),
                    None => {
                        return err(ParseErrorKind::BadNominal {
                            name: targets[k].name.clone(),
                            found: show(tok),
                            expected: targets[k].nominal.shown(),
                        })
                    }
                }
            } else {
                match parse_f32(tok).filter(|x| x.is_finite()) {
                    Some(x) => ds.features.push(x),
                    None => return err(ParseErrorKind::NonNumeric { found: show(tok) }),
                }
            }
            k += 1;
        }
        if k != width {
            return Err(DataError::parse(
                line_no,
                col.saturating_sub(1).max(1),
                ParseErrorKind::Expected {
                    expected: "one value per attribute",
                    found: format!("{k} of {width} values"),
                },
            ));
        }
    }
    Ok(ds)
}

/// Writes `ds` as MEKA multi-target ARFF (relation `'NAME: -C L'`), features with the shortest
/// representation that reads back as the same `f32`.
pub fn write_multi_target_arff<W: Write>(ds: &MultiTargetDataset, mut w: W) -> std::io::Result<()> {
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    writeln!(
        w,
        "@relation {}",
        quote(&format!("{}: -C {}", ds.name, ds.positions()))
    )?;
    let classes: Vec<String> = ds.class_names.iter().map(|c| quote(c)).collect();
    let classes = classes.join(",");
    for t in &ds.target_names {
        writeln!(w, "@attribute {} {{{classes}}}", quote(t))?;
    }
    for f in &ds.feature_names {
        writeln!(w, "@attribute {} numeric", quote(f))?;
    }
    writeln!(w, "@data")?;
    let mut line = String::new();
    for i in 0..ds.n_rows() {
        use std::fmt::Write as _;
        line.clear();
        for &c in ds.row_targets(i) {
            line.push_str(&quote(&ds.class_names[c as usize]));
            line.push(',');
        }
        for &x in ds.row_features(i) {
            write!(line, "{x},").expect("writing to a String");
        }
        line.pop();
        writeln!(w, "{line}")?;
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synth_seg::{synth_seg, SynthSegSpec};

    #[test]
    fn round_trips_the_benchmark() {
        let spec = SynthSegSpec {
            size: 4,
            classes: 3,
            train: 5,
            test: 1,
            ..Default::default()
        };
        let (ds, _) = synth_seg(&spec).unwrap();
        let mut bytes = Vec::new();
        write_multi_target_arff(&ds, &mut bytes).unwrap();
        let back = read_multi_target_arff(&bytes[..]).unwrap();
        assert_eq!(back, ds);
    }

    #[test]
    fn multi_target_headers_are_told_from_binary_ones() {
        let d = |t: &str| declares_multi_target(t.as_bytes()).unwrap();
        let attrs = "@attribute f numeric\n@data\n";
        assert!(d(&format!(
            "@relation 'r: -C 2'\n@attribute a {{bg,x,y}}\n@attribute b {{bg,x,y}}\n{attrs}"
        )));
        // Binary labels are multi-label data, whatever their order.
        assert!(!d(&format!(
            "@relation 'r: -C 2'\n@attribute a {{1,0}}\n@attribute b {{0,1}}\n{attrs}"
        )));
        // Two classes that are not 0 and 1 are multi-target.
        assert!(d(&format!(
            "@relation 'r: -C 1'\n@attribute a {{bg,fg}}\n{attrs}"
        )));
        assert!(!d(&format!("@relation r\n@attribute a {{x,y}}\n{attrs}")));
        assert!(!d(&format!(
            "@relation 'r: -C 2'\n@attribute a {{x,y}}\n@attribute b {{x,z}}\n{attrs}"
        )));
    }

    #[test]
    fn a_split_keeps_every_row_once_in_file_order() {
        let spec = SynthSegSpec {
            size: 3,
            train: 10,
            test: 1,
            ..Default::default()
        };
        let (ds, _) = synth_seg(&spec).unwrap();
        let (a, b) = ds.train_test_split(7, 3, 0).unwrap();
        assert_eq!((a.n_rows(), b.n_rows()), (7, 3));
        let key = |d: &MultiTargetDataset, i: usize| d.row_features(i).to_vec();
        let mut seen: Vec<Vec<f32>> = (0..7).map(|i| key(&a, i)).collect();
        seen.extend((0..3).map(|i| key(&b, i)));
        let mut all: Vec<Vec<f32>> = (0..10).map(|i| key(&ds, i)).collect();
        let pos = |r: &Vec<f32>| all.iter().position(|x| x == r).unwrap();
        let (ia, ib): (Vec<usize>, Vec<usize>) = (
            (0..7).map(|i| pos(&seen[i])).collect(),
            (7..10).map(|i| pos(&seen[i])).collect(),
        );
        assert!(ia.windows(2).all(|w| w[0] < w[1]) && ib.windows(2).all(|w| w[0] < w[1]));
        seen.sort_by(|x, y| x.partial_cmp(y).unwrap());
        all.sort_by(|x, y| x.partial_cmp(y).unwrap());
        assert_eq!(seen, all);
    }

    fn read(text: &str) -> String {
        read_multi_target_arff(text.as_bytes())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn bad_files_name_the_place() {
        let head = "@relation 'r: -C 2'\n@attribute a {x,y}\n@attribute b {x,y}\n@attribute f numeric\n@data\n";
        let e = read(&format!("{head}x,y,1\nx,z,2\n"));
        assert!(e.contains("line 7") && e.contains("`z`"), "{e}");
        let e = read(&format!("{head}x,y\n"));
        assert!(e.contains("line 6") && e.contains("2 of 3"), "{e}");
        let e = read(&format!("{head}x,y,1,4\n"));
        assert!(e.contains("line 6") && e.contains("end of the row"), "{e}");
        let e = read(&format!("{head}x,y,abc\n"));
        assert!(e.contains("line 6, column 5"), "{e}");
        let e = read(&format!("{head}{{0 x}}\n"));
        assert!(e.contains("dense row"), "{e}");
        let e = read("@relation r\n@attribute a {x,y}\n@data\n");
        assert!(e.contains("-C"), "{e}");
        let e = read("@relation 'r: -C 2'\n@attribute a {x,y}\n@attribute b {x,z}\n@data\n");
        assert!(e.contains("line 3") && e.contains("same classes"), "{e}");
    }
}
