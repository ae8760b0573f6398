//! Generated malformed inputs for every reader: a proptest stand-in for cargo-fuzz that runs in
//! the normal test suite (see `docs/results/reliability.md`).
//!
//! Each target starts from a *valid* generated file (ARFF with sparse and dense rows, quoted
//! names, comments and CRLF; MULAN label XML; LIBSVM; XMC), applies random byte-level and
//! token-level mutations (truncation, line deletion/duplication/swaps, bit flips, inserted huge
//! numbers, NaN/inf, negative or out-of-range indices, unbalanced braces and quotes, invalid
//! UTF-8) and optionally wraps the result in gzip (whole, truncated or corrupted). A last target
//! feeds fully random bytes. Every case asserts that the reader
//! - never panics (`catch_unwind`);
//! - on a parse error names a line and column inside the (decompressed) input, in the message too;
//! - on success returns a dataset whose invariants hold (CSR structure, sorted in-range indices,
//!   finite non-zero values, label counts and names consistent), whose statistics compute.
//!
//! The default case counts keep the suite at a few seconds; `CARDINAL_FUZZ_CASES=N` runs `N`
//! cases per target (e.g. `CARDINAL_FUZZ_CASES=200000 cargo test --release --test fuzz_parsers`).

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};

use cardinal_data::data::{
    open_bytes, parse_label_xml, read_arff, read_label_xml, read_libsvm, read_xmc, DataError,
    Dataset, DatasetStats, IndexBase, LabelSpec, SvmOptions,
};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;

use cardinal_testkit::{apply_edit, edit, lines_of, Edit};

/// The suite's proptest settings; findings become named tests in `tests/regressions.rs`, not a
/// persistence file.
fn config(default_cases: u32) -> ProptestConfig {
    cardinal_testkit::fuzz_config(default_cases)
}

// Valid documents: `fuzz_documents/mod.rs`.
mod fuzz_documents;
use fuzz_documents::{gen_arff, gen_libsvm, gen_xmc, gen_xml};

// ---------------------------------------------------------------------------------------------
// Mutations.

/// Tokens worth inserting: huge numbers, non-finite values, signs, structure characters,
/// keywords, invalid UTF-8, XML specials.
const DICT: &[&[u8]] = &[
    b"18446744073709551616",
    b"18446744073709551615",
    b"99999999999999999999999999",
    b"4294967295",
    b"4294967296",
    b"4294967294",
    b"2147483648",
    b"1e39",
    b"-1e39",
    b"3.4028236e38",
    b"1e-50",
    b"NaN",
    b"nan",
    b"inf",
    b"-inf",
    b"Infinity",
    b"-1",
    b"-0",
    b"0",
    b"00",
    b"+1",
    b"1.",
    b".",
    b"e",
    b"?",
    b"{",
    b"}",
    b"{}",
    b"'",
    b"\"",
    b"\\",
    b",",
    b",,",
    b":",
    b"::",
    b"%",
    b"#",
    b" ",
    b"\t",
    b"\r",
    b"\n",
    b"\r\n",
    b"\0",
    b"@data\n",
    b"@attribute z numeric\n",
    b"@attribute z string\n",
    b"@relation",
    b"\xff",
    b"\xfe\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98\x80",
    b"<",
    b">",
    b"/>",
    b"</label>",
    b"<label name=\"dup\"/>",
    b"&",
    b"&amp;",
    b"&#0;",
    b"&#x110000;",
    b"<!DOCTYPE labels [<!ENTITY e \"x\">]>",
    b"<![CDATA[",
    b"<!--",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// A byte- or line-level edit (tokens from [`DICT`]).
    Edit(Edit),
    /// Swaps two whitespace-separated tokens of one line (unsorted indices, misplaced labels).
    SwapTokens(Index, Index, Index),
}

/// The nine edits and the token swap, each equally likely.
fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        9 => edit(16).prop_map(Mutation::Edit),
        1 => (any::<Index>(), any::<Index>(), any::<Index>())
            .prop_map(|(a, b, c)| Mutation::SwapTokens(a, b, c)),
    ]
}

fn apply(text: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Edit(e) => {
            let n = text.len();
            apply_edit(text, e, DICT, n);
        }
        Mutation::SwapTokens(li, a, b) => {
            let mut lines = lines_of(text);
            if lines.is_empty() {
                return;
            }
            let k = li.index(lines.len());
            let line = &lines[k];
            let body_end = line
                .iter()
                .rposition(|&c| c != b'\n' && c != b'\r')
                .map_or(0, |p| p + 1);
            let mut toks: Vec<&[u8]> = line[..body_end]
                .split(|c| *c == b' ' || *c == b',')
                .collect();
            if toks.len() < 2 {
                return;
            }
            let (x, y) = (a.index(toks.len()), b.index(toks.len()));
            toks.swap(x, y);
            let mut out = toks.join(&b' ');
            out.extend_from_slice(&line[body_end..]);
            lines[k] = out;
            *text = lines.concat();
        }
    }
}

/// How the mutated text reaches the reader.
#[derive(Debug, Clone)]
enum Wrap {
    Plain,
    Gzip,
    /// Gzip stream cut at a position.
    GzipTruncated(Index),
    /// Gzip stream with one byte changed (header, deflate data or CRC/size trailer).
    GzipCorrupt(Index, u8),
}

fn wrap() -> impl Strategy<Value = Wrap> {
    prop_oneof![
        6 => Just(Wrap::Plain),
        1 => Just(Wrap::Gzip),
        1 => any::<Index>().prop_map(Wrap::GzipTruncated),
        1 => (any::<Index>(), 1u8..=255).prop_map(|(i, x)| Wrap::GzipCorrupt(i, x)),
    ]
}

fn gzip(text: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(text).unwrap();
    e.finish().unwrap()
}

fn wrapped(text: &[u8], w: &Wrap) -> Vec<u8> {
    match w {
        Wrap::Plain => text.to_vec(),
        Wrap::Gzip => gzip(text),
        Wrap::GzipTruncated(i) => {
            let mut z = gzip(text);
            let n = z.len();
            z.truncate(i.index(n));
            z
        }
        Wrap::GzipCorrupt(i, x) => {
            let mut z = gzip(text);
            let n = z.len();
            // Keep the magic so the stream is still recognised as gzip.
            let at = 2 + i.index(n - 2);
            z[at] ^= x;
            z
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks.

/// Runs `parse` without letting a panic escape; a panic fails the case with the input.
fn no_panic<T>(input: &[u8], parse: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    catch_unwind(AssertUnwindSafe(parse)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestCaseError::fail(format!(
            "reader panicked ({msg}) on input {:?}",
            String::from_utf8_lossy(input)
        ))
    })
}

/// A parse error must point inside `text` (the decompressed input): a line that exists (or the
/// line after the last, for end of file) and a column within that line (+1), both named in the
/// message. I/O and gzip errors are accepted only for gzip input (a corrupt or cut stream).
fn check_err(
    e: &DataError,
    text: &[u8],
    gz: bool,
    col_in_chars: bool,
) -> Result<(), TestCaseError> {
    let msg = e.to_string();
    prop_assert!(!msg.trim().is_empty(), "empty error message");
    match e {
        DataError::Parse { location, .. } if gz => {
            // A corrupted gzip stream may decompress to other text: only the form is checked.
            prop_assert!(location.line >= 1 && location.column >= 1, "{msg}");
            let named = format!("line {}, column {}", location.line, location.column);
            prop_assert!(msg.contains(&named), "`{msg}` does not name `{named}`");
        }
        DataError::Parse { location, .. } => {
            let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
            // `split` yields a last empty piece after a final newline: that is "the line after".
            let n_lines = lines.len();
            prop_assert!(
                location.line >= 1 && location.line <= n_lines.max(1),
                "line {} outside 1..={n_lines}: {msg}",
                location.line
            );
            let line = lines.get(location.line - 1).copied().unwrap_or(b"");
            // roxmltree counts a final `\r` as a column; the line readers drop it.
            let width = if col_in_chars {
                String::from_utf8_lossy(line).chars().count()
            } else {
                line.strip_suffix(b"\r").unwrap_or(line).len()
            };
            prop_assert!(
                location.column >= 1 && location.column <= width + 1,
                "column {} outside 1..={} of line {}: {msg}",
                location.column,
                width + 1,
                location.line
            );
            let named = format!("line {}, column {}", location.line, location.column);
            prop_assert!(msg.contains(&named), "`{msg}` does not name `{named}`");
        }
        DataError::Io { .. } | DataError::Gzip { .. } => {
            prop_assert!(gz, "I/O error on plain in-memory input: {msg}");
        }
        other => prop_assert!(false, "unexpected error kind: {other:?}"),
    }
    Ok(())
}

/// Structural invariants of a dataset returned by a reader.
fn check_dataset(ds: &Dataset) -> Result<(), TestCaseError> {
    let (f, l) = (&ds.features, &ds.labels);
    prop_assert_eq!(f.n_rows, l.n_rows, "feature and label row counts differ");
    for (what, indptr, nnz, n_rows) in [
        ("features", &f.indptr, f.indices.len(), f.n_rows),
        ("labels", &l.indptr, l.indices.len(), l.n_rows),
    ] {
        prop_assert_eq!(indptr.len(), n_rows + 1, "{} indptr length", what);
        prop_assert_eq!(indptr[0], 0, "{} indptr[0]", what);
        prop_assert_eq!(*indptr.last().unwrap(), nnz, "{} indptr end", what);
        prop_assert!(
            indptr.windows(2).all(|w| w[0] <= w[1]),
            "{} indptr not monotone",
            what
        );
    }
    prop_assert_eq!(f.values.len(), f.indices.len());
    for r in 0..f.n_rows {
        let (idx, val) = f.row(r);
        prop_assert!(idx.windows(2).all(|w| w[0] < w[1]), "row {} unsorted", r);
        prop_assert!(idx.iter().all(|&i| (i as usize) < f.n_cols), "row {}", r);
        prop_assert!(val.iter().all(|v| v.is_finite() && *v != 0.0), "row {}", r);
        let lab = l.row(r);
        prop_assert!(lab.windows(2).all(|w| w[0] < w[1]), "labels {} unsorted", r);
        prop_assert!(
            lab.iter().all(|&i| (i as usize) < l.n_labels),
            "labels {}",
            r
        );
    }
    // One name per label; the name-less formats may leave names out above MAX_NAMED_LABELS.
    let unnamed_ok =
        ds.label_names.is_empty() && l.n_labels > cardinal_data::data::svm::MAX_NAMED_LABELS;
    prop_assert!(
        unnamed_ok || ds.label_names.len() == l.n_labels,
        "one name per label: {} names, {} labels",
        ds.label_names.len(),
        l.n_labels
    );
    prop_assert!(
        ds.feature_names.is_empty() || ds.feature_names.len() == f.n_cols,
        "feature names"
    );
    let stats = no_panic(b"<stats>", || DatasetStats::of(ds))?;
    prop_assert_eq!(stats.instances, ds.n_rows());
    Ok(())
}

/// Mutated text (before wrapping), the bytes the reader sees, and whether they are gzip.
fn prepare(base: &[u8], muts: &[Mutation], w: &Wrap) -> (Vec<u8>, Vec<u8>, bool) {
    let mut text = base.to_vec();
    for m in muts {
        apply(&mut text, m);
    }
    let bytes = wrapped(&text, w);
    let gz = !matches!(w, Wrap::Plain) || text.starts_with(&[0x1f, 0x8b]);
    // A truncated gzip stream decompresses to (at most) a prefix of `text`: the checks against
    // `text` stay valid.
    (text, bytes, gz)
}

fn check_arff(bytes: &[u8], text: &[u8], gz: bool, spec: &LabelSpec) -> Result<(), TestCaseError> {
    match no_panic(bytes, || read_arff(open_bytes(bytes), spec))? {
        Ok(ds) => {
            check_dataset(&ds)?;
            let want = match spec {
                LabelSpec::Names(n) => n.len(),
                LabelSpec::Last(k) | LabelSpec::First(k) => *k,
                // The generated documents never name their labels this way.
                LabelSpec::Meka => ds.n_labels(),
                LabelSpec::Skip(_) => 0,
            };
            prop_assert_eq!(ds.n_labels(), want, "label count differs from the spec");
            prop_assert_eq!(ds.feature_names.len(), ds.n_features());
            Ok(())
        }
        Err(e) => check_err(&e, text, gz, false),
    }
}

fn check_svm(bytes: &[u8], text: &[u8], gz: bool, opts: &SvmOptions) -> Result<(), TestCaseError> {
    match no_panic(bytes, || read_libsvm(open_bytes(bytes), opts))? {
        Ok(ds) => {
            check_dataset(&ds)?;
            if let Some(d) = opts.n_features {
                prop_assert_eq!(ds.n_features(), d);
            }
            if let Some(l) = opts.n_labels {
                prop_assert_eq!(ds.n_labels(), l);
            }
            Ok(())
        }
        Err(e) => check_err(&e, text, gz, false),
    }
}

fn check_xmc(bytes: &[u8], text: &[u8], gz: bool, fb: IndexBase) -> Result<(), TestCaseError> {
    match no_panic(bytes, || read_xmc(open_bytes(bytes), fb))? {
        Ok(ds) => {
            check_dataset(&ds)?;
            // The header's row count is enforced.
            let header: Vec<u64> = String::from_utf8_lossy(text)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .split('#')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            if header.len() == 3 {
                prop_assert_eq!(ds.n_rows() as u64, header[0]);
                prop_assert_eq!(ds.n_features() as u64, header[1]);
                prop_assert_eq!(ds.n_labels() as u64, header[2]);
            }
            Ok(())
        }
        Err(e) => check_err(&e, text, gz, false),
    }
}

fn check_xml(bytes: &[u8], text: &[u8], gz: bool) -> Result<(), TestCaseError> {
    match no_panic(bytes, || read_label_xml(open_bytes(bytes)))? {
        Ok(names) => {
            prop_assert!(!names.is_empty());
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), names.len(), "duplicate label names");
            Ok(())
        }
        // roxmltree counts columns in characters.
        Err(e) => check_err(&e, text, gz, true),
    }
}

// ---------------------------------------------------------------------------------------------
// Targets.

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn arff_mutated(
        n_feat in 0usize..5, n_lab in 1usize..4, n_rows in 0usize..6, seed in any::<u64>(),
        muts in prop::collection::vec(mutation(), 0..5), w in wrap(),
    ) {
        let doc = gen_arff(n_feat, n_lab, n_rows, seed);
        if muts.is_empty() && matches!(w, Wrap::Plain) {
            // The unmutated document is valid.
            let ds = read_arff(&doc.text[..], &doc.spec);
            prop_assert!(ds.is_ok(), "valid ARFF rejected: {:?}\n{}", ds.err(),
                String::from_utf8_lossy(&doc.text));
            prop_assert_eq!(ds.unwrap().n_rows(), n_rows);
        }
        let (text, bytes, gz) = prepare(&doc.text, &muts, &w);
        check_arff(&bytes, &text, gz, &doc.spec)?;
    }

    #[test]
    fn xml_mutated(
        n_lab in 1usize..6, seed in any::<u64>(),
        muts in prop::collection::vec(mutation(), 0..5), w in wrap(),
    ) {
        let doc = gen_xml(n_lab, seed);
        if muts.is_empty() && matches!(w, Wrap::Plain) {
            let names = parse_label_xml(std::str::from_utf8(&doc).unwrap());
            prop_assert!(names.is_ok(), "valid XML rejected: {:?}", names.err());
            prop_assert_eq!(names.unwrap().len(), n_lab);
        }
        let (text, bytes, gz) = prepare(&doc, &muts, &w);
        check_xml(&bytes, &text, gz)?;
    }

    #[test]
    fn libsvm_mutated(
        n_rows in 0usize..8, seed in any::<u64>(),
        muts in prop::collection::vec(mutation(), 0..5), w in wrap(),
    ) {
        let (doc, opts) = gen_libsvm(n_rows, seed);
        if muts.is_empty() && matches!(w, Wrap::Plain) {
            let ds = read_libsvm(&doc[..], &opts);
            prop_assert!(ds.is_ok(), "valid LIBSVM rejected: {:?}", ds.err());
        }
        let (text, bytes, gz) = prepare(&doc, &muts, &w);
        check_svm(&bytes, &text, gz, &opts)?;
    }

    #[test]
    fn xmc_mutated(
        n_rows in 0usize..8, seed in any::<u64>(),
        muts in prop::collection::vec(mutation(), 0..5), w in wrap(),
    ) {
        let (doc, fb) = gen_xmc(n_rows, seed);
        if muts.is_empty() && matches!(w, Wrap::Plain) {
            let ds = read_xmc(&doc[..], fb);
            prop_assert!(ds.is_ok(), "valid XMC rejected: {:?}", ds.err());
        }
        let (text, bytes, gz) = prepare(&doc, &muts, &w);
        check_xmc(&bytes, &text, gz, fb)?;
    }

    /// Fully random bytes, and random bytes over each format's alphabet, into every reader.
    #[test]
    fn random_bytes(
        raw in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..512),
            prop::collection::vec(
                prop::sample::select(b"0123456789 ,:{}@%#'\"\\\n\r\t-.eEnaif?<>/=&;".to_vec()),
                0..512,
            ),
        ],
        w in wrap(),
    ) {
        let (text, bytes, gz) = prepare(&raw, &[], &w);
        check_arff(&bytes, &text, gz, &LabelSpec::Last(1))?;
        check_arff(&bytes, &text, gz, &LabelSpec::Names(vec!["a".into(), "b".into()]))?;
        for fb in [IndexBase::Zero, IndexBase::One] {
            check_svm(&bytes, &text, gz, &SvmOptions::new(fb))?;
            check_xmc(&bytes, &text, gz, fb)?;
        }
        check_xml(&bytes, &text, gz)?;
    }
}
