//! Writers for the supported formats (used for conversions and round-trip tests).

use std::io::{self, Write};

use super::svm::IndexBase;
use super::Dataset;

fn base(b: IndexBase) -> u64 {
    match b {
        IndexBase::Zero => 0,
        IndexBase::One => 1,
    }
}

/// Quotes an ARFF name when it is empty or holds characters that end a bare word.
fn arff_name(s: &str) -> String {
    let bare = !s.is_empty()
        && !s.starts_with(['\'', '"', '%', '@'])
        && !s
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b"{},%'\"\\".contains(&b));
    if bare {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Writes a sparse MULAN ARFF file: numeric features (names `f<i>` if the dataset has none)
/// followed by `{0,1}` label attributes, labels in label order.
pub fn write_arff<W: Write>(mut w: W, ds: &Dataset) -> io::Result<()> {
    let d = ds.n_features();
    let relation = if ds.name.is_empty() {
        "dataset"
    } else {
        &ds.name
    };
    writeln!(w, "@relation {}\n", arff_name(relation))?;
    for j in 0..d {
        match ds.feature_names.get(j) {
            Some(n) => writeln!(w, "@attribute {} numeric", arff_name(n))?,
            None => writeln!(w, "@attribute f{j} numeric")?,
        }
    }
    for l in 0..ds.n_labels() {
        match ds.label_names.get(l) {
            Some(n) => writeln!(w, "@attribute {} {{0,1}}", arff_name(n))?,
            None => writeln!(w, "@attribute label{l} {{0,1}}")?,
        }
    }
    writeln!(w, "\n@data")?;
    for r in 0..ds.n_rows() {
        let (idx, val) = ds.features.row(r);
        w.write_all(b"{")?;
        let mut first = true;
        for (i, v) in idx.iter().zip(val) {
            if !first {
                w.write_all(b",")?;
            }
            first = false;
            write!(w, "{i} {v}")?;
        }
        for &l in ds.labels.row(r) {
            if !first {
                w.write_all(b",")?;
            }
            first = false;
            write!(w, "{} 1", d + l as usize)?;
        }
        w.write_all(b"}\n")?;
    }
    Ok(())
}

/// Writes a MULAN XML label file listing `names`.
pub fn write_label_xml<W: Write>(mut w: W, names: &[String]) -> io::Result<()> {
    writeln!(w, "<?xml version=\"1.0\" encoding=\"utf-8\"?>")?;
    writeln!(w, "<labels xmlns=\"http://mulan.sourceforge.net/labels\">")?;
    for n in names {
        let esc = n
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;");
        writeln!(w, "<label name=\"{esc}\"></label>")?;
    }
    writeln!(w, "</labels>")
}

fn svm_rows<W: Write>(w: &mut W, ds: &Dataset, fb: IndexBase) -> io::Result<()> {
    for r in 0..ds.n_rows() {
        let labels = ds.labels.row(r);
        for (k, l) in labels.iter().enumerate() {
            if k > 0 {
                w.write_all(b",")?;
            }
            write!(w, "{l}")?;
        }
        let (idx, val) = ds.features.row(r);
        for (i, v) in idx.iter().zip(val) {
            write!(w, " {}:{v}", u64::from(*i) + base(fb))?;
        }
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes a LIBSVM multi-label file (0-based labels, features with base `fb`). A row with
/// neither labels nor features is written as an empty line, which readers skip: avoid them.
pub fn write_libsvm<W: Write>(mut w: W, ds: &Dataset, fb: IndexBase) -> io::Result<()> {
    svm_rows(&mut w, ds, fb)
}

/// Writes an XMC file: header `N D L`, then the rows (0-based labels, features with base `fb`).
pub fn write_xmc<W: Write>(mut w: W, ds: &Dataset, fb: IndexBase) -> io::Result<()> {
    writeln!(w, "{} {} {}", ds.n_rows(), ds.n_features(), ds.n_labels())?;
    svm_rows(&mut w, ds, fb)
}
