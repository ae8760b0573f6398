//! MEKA's multi-target ARFF: the relation name's `-C L` makes the first `L` attributes the
//! targets (`-C -L`: the last `L`), each nominal over the same `M` class names; the other
//! attributes are numeric features. Rows are dense (`v_1,v_2,...`); sparse rows and missing
//! values (`?`) are refused, since a segmentation has a class at every position.
//!
//! New data for a trained model ([`read_multi_target_inputs`]) may leave the targets out:
//! without a `-C` option (or with `-C 0`), the targets are the nominal attributes named as the
//! model's, and there may be none.

use super::super::error::{show, DataError, ParseErrorKind, Result};
use super::super::lex::{is_blank, parse_f32, Lines};
use super::super::multi_target::MultiTargetDataset;
use super::header::{meka_label_spec, read_header, Attr, AttrType, LabelSpec};
use std::io::{BufRead, Write};

/// `tok` without one pair of enclosing single or double quotes (class names need no escapes).
fn unquote(tok: &[u8]) -> &[u8] {
    match tok {
        [q @ (b'\'' | b'"'), inner @ .., last] if last == q => inner,
        _ => tok,
    }
}

/// The target attributes MEKA's `-C` option in `relation` names among `n` attributes: the
/// first `L` (`-C L`) or the last `L` (`-C -L`). `None` without the option, with `-C 0`, or
/// when `L` exceeds `n`.
fn meka_targets(relation: &str, n: usize) -> Option<std::ops::Range<usize>> {
    match meka_label_spec(relation)? {
        LabelSpec::First(l) if l <= n => Some(0..l),
        LabelSpec::Last(l) if l <= n => Some(n - l..n),
        _ => None,
    }
}

/// Whether an ARFF file's header declares multi-target labels: MEKA's `-C L` or `-C -L`
/// (`L > 0`) with those `L` attributes nominal over the same classes, other than `{0, 1}`
/// (binary labels, which the multi-label readers take). Only the header is read.
pub fn declares_multi_target<R: BufRead>(reader: R) -> Result<bool> {
    let mut lines = Lines::new(reader);
    let (relation, attrs) = read_header(&mut lines)?;
    let Some(range) = meka_targets(&relation, attrs.len()) else {
        return Ok(false);
    };
    let targets = &attrs[range];
    let Some(first) = targets.first() else {
        return Ok(false);
    };
    let classes = &first.nominal.values;
    let same = targets
        .iter()
        .all(|a| a.ty == AttrType::Nominal && a.nominal.values == *classes);
    let mut sorted = classes.clone();
    sorted.sort();
    let binary = sorted == [b"0".to_vec(), b"1".to_vec()];
    Ok(same && !binary)
}

/// Reads a multi-target ARFF file (see the module documentation).
pub fn read_multi_target_arff<R: BufRead>(reader: R) -> Result<MultiTargetDataset> {
    read_with(reader, None)
}

/// Reads new data for a model whose targets are named `model_targets`: targets as MEKA's `-C`
/// option says, or, without it, the nominal attributes named as the model's targets (possibly
/// none: then the dataset has features only, and no targets).
pub fn read_multi_target_inputs<R: BufRead>(
    reader: R,
    model_targets: &[String],
) -> Result<MultiTargetDataset> {
    read_with(reader, Some(model_targets))
}

/// Which attributes are targets: MEKA's option; else, reading inputs, the nominal attributes
/// named as the model's targets; else an error.
fn target_flags(
    relation: &str,
    attrs: &[Attr],
    model_targets: Option<&[String]>,
    data_line: usize,
) -> Result<Vec<bool>> {
    if let Some(range) = meka_targets(relation, attrs.len()) {
        return Ok((0..attrs.len()).map(|k| range.contains(&k)).collect());
    }
    match model_targets {
        Some(names) => Ok(attrs
            .iter()
            .map(|a| a.ty == AttrType::Nominal && names.contains(&a.name))
            .collect()),
        None => Err(DataError::parse(
            data_line,
            1,
            ParseErrorKind::NoMekaLabels {
                relation: relation.to_string(),
            },
        )),
    }
}

fn read_with<R: BufRead>(
    reader: R,
    model_targets: Option<&[String]>,
) -> Result<MultiTargetDataset> {
    let mut lines = Lines::new(reader);
    let (relation, attrs) = read_header(&mut lines)?;
    let is_target = target_flags(&relation, &attrs, model_targets, lines.line_no)?;
    let (targets, features) = split_attributes(&attrs, &is_target)?;
    let classes = targets.first().map_or(&[][..], |a| &a.nominal.values[..]);
    // Each attribute's place among the targets (or the features).
    let mut place = Vec::with_capacity(attrs.len());
    let (mut t, mut f) = (0, 0);
    for &target in &is_target {
        place.push(if target { t } else { f });
        (t, f) = if target { (t + 1, f) } else { (t, f + 1) };
    }
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
    let layout = RowLayout {
        attrs: &attrs,
        is_target: &is_target,
        place: &place,
    };
    let (mut row_targets, mut row_features) = (vec![0; t], vec![0.0; f]);
    while lines.advance()? {
        let line = lines.line();
        if is_blank(line) || line.trim_ascii_start().starts_with(b"%") {
            continue;
        }
        layout.read_row(line, lines.line_no, &mut row_targets, &mut row_features)?;
        ds.targets.extend_from_slice(&row_targets);
        ds.features.extend_from_slice(&row_features);
    }
    Ok(ds)
}

/// The target and the feature attributes, checked: targets nominal over the first target's
/// classes, features numeric.
fn split_attributes<'a>(
    attrs: &'a [Attr],
    is_target: &[bool],
) -> Result<(Vec<&'a Attr>, Vec<&'a Attr>)> {
    let targets: Vec<&Attr> = attrs
        .iter()
        .zip(is_target)
        .filter_map(|(a, &t)| t.then_some(a))
        .collect();
    let features: Vec<&Attr> = attrs
        .iter()
        .zip(is_target)
        .filter_map(|(a, &t)| (!t).then_some(a))
        .collect();
    let no_classes = Vec::new();
    let classes = targets.first().map_or(&no_classes, |a| &a.nominal.values);
    for a in &targets {
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
                expected: "a numeric feature (the targets are the attributes `-C` names)",
                found: show(a.ty_text.as_bytes()),
            },
        ));
    }
    Ok((targets, features))
}

/// Where each attribute's value of a dense row goes.
struct RowLayout<'a> {
    attrs: &'a [Attr],
    is_target: &'a [bool],
    /// Each attribute's place among the targets (or the features).
    place: &'a [usize],
}

impl RowLayout<'_> {
    /// Reads the dense row `line` (line `line_no`) into `row_targets` and `row_features`.
    fn read_row(
        &self,
        line: &[u8],
        line_no: usize,
        row_targets: &mut [u32],
        row_features: &mut [f32],
    ) -> Result<()> {
        let width = self.attrs.len();
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
            if self.is_target[k] {
                let a = &self.attrs[k];
                match a.nominal.index(tok) {
                    Some(c) => row_targets[self.place[k]] = c,
                    None => {
                        return err(ParseErrorKind::BadNominal {
                            name: a.name.clone(),
                            found: show(tok),
                            expected: a.nominal.shown(),
                        })
                    }
                }
            } else {
                match parse_f32(tok).filter(|x| x.is_finite()) {
                    Some(x) => row_features[self.place[k]] = x,
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
        Ok(())
    }
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

    /// `-C -L` names the last `L` attributes, which may come after the features; new data
    /// may leave the targets out (`-C 0`, or no option), or name them without the option.
    #[test]
    fn targets_last_or_left_out_read_as_the_same_data() {
        let first = "@relation 'r: -C 2'\n@attribute a {x,y}\n@attribute b {x,y}\n\
                     @attribute f numeric\n@data\nx,y,1\ny,x,2\n";
        let last = "@relation 'r: -C -2'\n@attribute f numeric\n@attribute a {x,y}\n\
                    @attribute b {x,y}\n@data\n1,x,y\n2,y,x\n";
        let want = read_multi_target_arff(first.as_bytes()).unwrap();
        assert!(declares_multi_target(last.as_bytes()).unwrap());
        assert_eq!(read_multi_target_arff(last.as_bytes()).unwrap(), want);
        let model = [String::from("a"), String::from("b")];
        let named = "@relation r\n@attribute b {x,y}\n@attribute f numeric\n\
                     @attribute a {x,y}\n@data\ny,1,x\nx,2,y\n";
        let got = read_multi_target_inputs(named.as_bytes(), &model).unwrap();
        assert_eq!(got.target_names, ["b", "a"]);
        assert_eq!(
            (got.targets.clone(), got.features.clone()),
            (vec![1, 0, 0, 1], vec![1.0, 2.0])
        );
        for bare in [
            "@relation 'r: -C 0'\n@attribute f numeric\n@data\n1\n2\n",
            "@relation r\n@attribute f numeric\n@data\n1\n2\n",
        ] {
            let got = read_multi_target_inputs(bare.as_bytes(), &model).unwrap();
            assert_eq!((got.positions(), got.n_rows()), (0, 2), "{bare}");
            assert!(read_multi_target_arff(bare.as_bytes()).is_err());
        }
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
