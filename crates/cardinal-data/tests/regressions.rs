//! Minimal inputs found by the generated-input suite (`tests/fuzz_parsers.rs`), one test each;
//! each test's doc names the failure it guards against (see `docs/results/reliability.md`).

use cardinal_data::data::{
    read_arff, read_label_xml, read_libsvm, read_xmc, DataError, IndexBase, LabelSpec,
    ParseErrorKind, SvmOptions, MAX_LABELS,
};

/// Asserts a parse error at `line`:`column` whose message contains every part.
fn at(e: &DataError, line: usize, column: usize, parts: &[&str]) {
    let loc = e.location().unwrap_or_else(|| panic!("no location: {e}"));
    assert_eq!((loc.line, loc.column), (line, column), "{e}");
    let msg = e.to_string();
    for p in parts {
        assert!(msg.contains(p), "`{msg}` lacks `{p}`");
    }
}

/// Guards against `<input>: stream did not contain valid UTF-8` (an I/O error without a
/// location).
#[test]
fn label_xml_invalid_utf8_names_line_and_column() {
    let xml = b"<labels>\n  <label name=\"a\xffb\"/>\n</labels>\n";
    let e = read_label_xml(&xml[..]).unwrap_err();
    at(&e, 2, 17, &["expected UTF-8 text", "0xFF"]);
}

/// Guards against `line 2, column 1` for a one-line file without a final newline (a line that
/// does not exist): the end of input is the end of the last line.
#[test]
fn eof_on_unterminated_last_line_points_at_its_end() {
    let e = read_arff(&b"@relation t"[..], &LabelSpec::Last(1)).unwrap_err();
    at(&e, 1, 12, &["unexpected end of file", "`@data`"]);
    // With a final newline the end of input is the start of the next line.
    let e = read_arff(&b"@relation t\n"[..], &LabelSpec::Last(1)).unwrap_err();
    at(&e, 2, 1, &["`@data`"]);
    let e = read_xmc(&b"2 3 4\n0 1:1"[..], IndexBase::Zero).unwrap_err();
    at(&e, 2, 6, &["header promised 2, found 1"]);
    let e = read_xmc(&b"\n"[..], IndexBase::Zero).unwrap_err();
    at(&e, 2, 1, &["the header `N D L`"]);
}

/// Guards against a UTF-8 byte order mark making the first ARFF line an error.
#[test]
fn utf8_bom_is_skipped() {
    let text = b"\xEF\xBB\xBF@relation t\n@attribute a numeric\n@attribute y {0,1}\n@data\n1,1\n";
    let ds = read_arff(&text[..], &LabelSpec::Last(1)).unwrap();
    assert_eq!((ds.n_rows(), ds.n_labels()), (1, 1));
    let ds = read_xmc(&b"\xEF\xBB\xBF1 2 3\n2 0:1\n"[..], IndexBase::Zero).unwrap();
    assert_eq!(ds.labels.row(0), &[2]);
}

/// Guards against `memory allocation of 51539607552 bytes failed` (abort): one label id near
/// 2^32 in a 13-byte LIBSVM file making the reader materialise ~4e9 label names.
#[test]
fn huge_label_id_is_refused_not_allocated() {
    let e = read_libsvm(&b"4294967294 1:1\n"[..], &SvmOptions::new(IndexBase::One)).unwrap_err();
    at(
        &e,
        1,
        1,
        &["label id 4294967294 is too large", "at most 2^25 labels"],
    );
    // The reason is a user's, not an internal Rust path.
    assert!(!e.to_string().contains("::"), "{e}");
    assert!(matches!(
        e.parse_kind(),
        Some(ParseErrorKind::TooLarge { .. })
    ));
    // The largest allowed id still reads (no names allocated beyond what the file implies).
    let ok = format!("{} 1:1\n", 5_000_000);
    let ds = read_libsvm(ok.as_bytes(), &SvmOptions::new(IndexBase::One)).unwrap();
    assert_eq!(ds.n_labels(), 5_000_001);
    // Explicit counts above the limit are refused up front.
    let mut opts = SvmOptions::new(IndexBase::One);
    opts.n_labels = Some(MAX_LABELS + 1);
    let e = read_libsvm(&b"0 1:1\n"[..], &opts).unwrap_err();
    assert!(e.to_string().contains("at most"), "{e}");
}

/// Same through the XMC header: `0 0 4294967294` allocated names for 4e9 labels.
#[test]
fn huge_xmc_label_count_is_refused() {
    let e = read_xmc(&b"0 0 4294967294\n"[..], IndexBase::Zero).unwrap_err();
    at(
        &e,
        1,
        5,
        &["label count L 4294967294 is too large", "33554432"],
    );
    let ds = read_xmc(&b"1 2 3000000\n2999999 0:1\n"[..], IndexBase::Zero).unwrap();
    assert_eq!(ds.n_labels(), 3_000_000);
}

/// Guards against a few-byte LIBSVM file naming a label id near `MAX_LABELS` building 33.5 M
/// id-strings as label names (17 s, 2.8 GB, found by the libFuzzer `libsvm` target): no names
/// are built above `MAX_NAMED_LABELS`, and the label count is still exact.
#[test]
fn huge_label_id_builds_no_names() {
    use cardinal_data::data::svm::{MAX_LABELS, MAX_NAMED_LABELS};
    use cardinal_data::data::{read_libsvm, IndexBase, SvmOptions};
    let text = format!("{} 1:1\n", MAX_LABELS - 1);
    let ds = read_libsvm(text.as_bytes(), &SvmOptions::new(IndexBase::One)).unwrap();
    assert_eq!(ds.n_labels(), MAX_LABELS);
    assert!(ds.label_names.is_empty());
    let text = format!("{} 1:1\n", MAX_NAMED_LABELS - 1);
    let ds = read_libsvm(text.as_bytes(), &SvmOptions::new(IndexBase::One)).unwrap();
    assert_eq!(ds.label_names.len(), MAX_NAMED_LABELS);
    assert_eq!(ds.label_names[7], "7");
}
