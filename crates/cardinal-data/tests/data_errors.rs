//! Bad inputs: each must fail with a typed error at the right line and column, saying what was
//! expected — never panic, never drop a row.

use std::path::Path;

use cardinal_data::data::{
    parse_label_xml, read_arff, read_libsvm, read_mulan, read_xmc, DataError, IndexBase, LabelSpec,
    ParseErrorKind, SvmOptions,
};

const HEAD: &str =
    "@relation t\n@attribute a numeric\n@attribute b numeric\n@attribute y {0,1}\n@data\n";

/// Reads `text` as ARFF with the last attribute as label; returns the error.
fn arff_err(text: &str) -> DataError {
    read_arff(text.as_bytes(), &LabelSpec::Last(1)).expect_err("must fail")
}

/// Asserts the 1-based location and that the message contains every part.
fn at(e: &DataError, line: usize, column: usize, parts: &[&str]) {
    let loc = e.location().unwrap_or_else(|| panic!("no location: {e}"));
    assert_eq!((loc.line, loc.column), (line, column), "{e}");
    let msg = e.to_string();
    for p in parts {
        assert!(msg.contains(p), "`{msg}` lacks `{p}`");
    }
}

#[test]
fn unknown_attribute_type() {
    // Feature attributes may be numeric, nominal or string (dropped); not dates.
    let e = arff_err("@relation t\n@attribute a date\n@attribute y {0,1}\n@data\n");
    at(
        &e,
        2,
        14,
        &[
            "unsupported attribute type `date`",
            "attribute `a`",
            "numeric",
            "nominal",
        ],
    );
    // Label attributes must be `{0,1}` or numeric.
    let e = arff_err("@relation t\n@attribute a numeric\n@attribute y {x,y,z}\n@data\n");
    at(&e, 3, 14, &["`{x,y,z}`", "label attribute `y`", "{0,1}"]);
    let e = arff_err("@relation t\n@attribute a numeric\n@attribute y string\n@data\n");
    at(&e, 3, 14, &["`string`", "label attribute `y`"]);
}

#[test]
fn sparse_index_out_of_range() {
    let e = arff_err(&format!("{HEAD}{{0 1}}\n{{1 1, 3 1}}\n"));
    at(&e, 7, 7, &["index 3 out of range", "below 3"]);
}

#[test]
fn unsorted_and_duplicate_sparse_index() {
    let e = arff_err(&format!("{HEAD}{{2 1,0 1}}\n"));
    at(
        &e,
        6,
        6,
        &["unsorted sparse index 0 after 2", "strictly increasing"],
    );
    let e = arff_err(&format!("{HEAD}{{1 1,1 2}}\n"));
    at(&e, 6, 6, &["duplicate sparse index 1"]);
}

#[test]
fn label_missing_from_header() {
    let e = read_arff(
        HEAD.as_bytes(),
        &LabelSpec::Names(vec!["y".into(), "zz".into()]),
    )
    .expect_err("must fail");
    at(
        &e,
        5,
        1,
        &["label `zz`", "not an attribute of the ARFF header"],
    );
    // Through files, the message names the XML file and the location names the ARFF file.
    let dir = std::env::temp_dir().join(format!("cardinal-data-err-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.arff"), HEAD).unwrap();
    std::fs::write(dir.join("t.xml"), "<labels><label name=\"zz\"/></labels>").unwrap();
    let e = read_mulan(&dir.join("t.arff"), &dir.join("t.xml")).unwrap_err();
    assert_eq!(
        e.location().unwrap().path.as_deref(),
        Some(dir.join("t.arff").as_path())
    );
    at(&e, 5, 1, &["t.arff:5:1", "t.xml"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn non_numeric_value() {
    let e = arff_err(&format!("{HEAD}1,2,0\n1,abc,1\n"));
    at(&e, 7, 3, &["non-numeric value `abc`", "expected a number"]);
    let e = arff_err(&format!("{HEAD}{{0 nan}}\n"));
    at(&e, 6, 4, &["`nan`"]);
}

#[test]
fn truncated_sparse_row_at_eof() {
    let e = arff_err(&format!("{HEAD}{{0 1}}\n{{1 1,"));
    at(
        &e,
        7,
        6,
        &["unexpected end of file", "attribute index", "truncated"],
    );
    // The same cut at a line end (file goes on) names what was found instead.
    let e = arff_err(&format!("{HEAD}{{1 1,\n{{0 1}}\n"));
    at(
        &e,
        6,
        6,
        &["expected an attribute index, found end of line"],
    );
}

#[test]
fn missing_data_section() {
    let e = arff_err("@relation t\n@attribute a numeric\n% no data\n");
    at(&e, 4, 1, &["unexpected end of file", "`@data`"]);
}

#[test]
fn missing_value() {
    let e = arff_err(&format!("{HEAD}1,?,0\n"));
    at(
        &e,
        6,
        3,
        &["missing value `?`", "attribute `b`", "not supported"],
    );
}

#[test]
fn dense_row_with_wrong_arity_and_bad_label_value() {
    let e = arff_err(&format!("{HEAD}1,2\n"));
    at(&e, 6, 1, &["dense row has 2 values", "expected 3"]);
    let e = arff_err(&format!("{HEAD}1,2,2\n"));
    at(&e, 6, 5, &["invalid value `2` for attribute `y`", "{0,1}"]);
}

#[test]
fn unknown_keyword_and_unterminated_quote() {
    let e = arff_err("@relation t\n@atribute a numeric\n");
    at(
        &e,
        2,
        1,
        &["`@relation`, `@attribute` or `@data`", "`@atribute`"],
    );
    let e = arff_err("@relation t\n@attribute 'a numeric\n");
    at(&e, 2, 12, &["closing quote"]);
}

#[test]
fn xmc_row_count_differs_from_header() {
    let e = read_xmc("3 4 2\n0 1:1\n1 2:1\n".as_bytes(), IndexBase::Zero).unwrap_err();
    at(&e, 4, 1, &["rows", "promised 3, found 2", "truncated"]);
    let e = read_xmc("1 4 2\n0 1:1\n1 2:1\n".as_bytes(), IndexBase::Zero).unwrap_err();
    at(&e, 3, 1, &["promised 1, found 2"]);
    let e = read_xmc("".as_bytes(), IndexBase::Zero).unwrap_err();
    at(&e, 1, 1, &["header `N D L`"]);
    let e = read_xmc("3 4\n".as_bytes(), IndexBase::Zero).unwrap_err();
    at(&e, 1, 4, &["label count L"]);
}

#[test]
fn xmc_feature_and_label_bounds() {
    let e = read_xmc("2 4 2\n0 1:1\n1 0:1 4:1\n".as_bytes(), IndexBase::Zero).unwrap_err();
    at(
        &e,
        3,
        7,
        &["index 4 out of range", "below 4", "feature count D"],
    );
    // 1-based features: 4 is the last valid index, 5 is not.
    let e = read_xmc("1 4 2\n0 4:1 5:1\n".as_bytes(), IndexBase::One).unwrap_err();
    at(&e, 2, 7, &["index 5 out of range", "below 5"]);
    let e = read_xmc("1 4 2\n0,2 1:1\n".as_bytes(), IndexBase::Zero).unwrap_err();
    at(&e, 2, 3, &["index 2 out of range", "label count L"]);
}

#[test]
fn libsvm_bad_rows() {
    let one = SvmOptions::new(IndexBase::One);
    let e = read_libsvm("0 1:1\n1 0:1\n".as_bytes(), &one).unwrap_err();
    at(&e, 2, 3, &["1-based feature index", "`0`"]);
    let e = read_libsvm("0 3:1 2:1\n".as_bytes(), &one).unwrap_err();
    at(&e, 1, 7, &["unsorted sparse index 2 after 3"]);
    let e = read_libsvm("0 1:1 2:x\n".as_bytes(), &one).unwrap_err();
    at(&e, 1, 9, &["non-numeric value `x`"]);
    let e = read_libsvm("1,0,1 1:1\n".as_bytes(), &one).unwrap_err();
    at(&e, 1, 1, &["duplicate label 1"]);
    let e = read_libsvm("0 1 2\n".as_bytes(), &one).unwrap_err();
    at(&e, 1, 4, &["`:` after a feature index"]);
    let e = read_libsvm("0;1 1:1\n".as_bytes(), &one).unwrap_err();
    at(&e, 1, 2, &["`,` or a space after a label id", "`;1`"]);
    let mut given = SvmOptions::new(IndexBase::Zero);
    given.n_labels = Some(2);
    let e = read_libsvm("0,5 1:1\n".as_bytes(), &given).unwrap_err();
    at(
        &e,
        1,
        3,
        &["index 5 out of range", "given number of labels"],
    );
}

#[test]
fn bad_label_xml() {
    let e = parse_label_xml("<labels>\n  <label nam=\"a\"/>\n</labels>").unwrap_err();
    at(&e, 2, 3, &["`name` attribute"]);
    let e =
        parse_label_xml("<labels>\n<label name=\"a\"/>\n<label name=\"a\"/></labels>").unwrap_err();
    at(&e, 3, 1, &["duplicate label name `a`"]);
    let e = parse_label_xml("<labels>\n<label name=\"a\">\n</labels>").unwrap_err();
    assert_eq!(e.location().unwrap().line, 3, "{e}");
    assert!(matches!(e.parse_kind(), Some(ParseErrorKind::Xml { .. })));
    let e = parse_label_xml("<other/>").unwrap_err();
    at(&e, 1, 1, &["root element <labels>"]);
}

#[test]
fn io_errors_carry_the_path() {
    let p = Path::new("definitely/not/here.arff");
    let e = cardinal_data::data::read_arff_path(p, &LabelSpec::Last(1)).unwrap_err();
    assert!(matches!(e, DataError::Io { .. }));
    assert!(e.to_string().contains("definitely/not/here.arff"), "{e}");
    // A corrupt gzip stream is an I/O error, not a panic.
    let bytes = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3];
    assert!(read_arff(cardinal_data::data::open_bytes(&bytes), &LabelSpec::Last(1)).is_err());
}

#[test]
fn label_spec_larger_than_header() {
    let e = read_arff(HEAD.as_bytes(), &LabelSpec::Last(9)).unwrap_err();
    at(&e, 5, 1, &["9 labels requested", "only 3 attributes"]);
}

/// A value beyond the 32-bit range is called that, not "non-numeric"; NaN and infinities are
/// named; a word is non-numeric. A 0 index in a 1-based read names scikit-learn's comment, not
/// an internal type.
#[test]
fn out_of_range_values_are_not_called_non_numeric() {
    let svm = |text: &str| {
        read_libsvm(text.as_bytes(), &SvmOptions::new(IndexBase::One))
            .expect_err("must fail")
            .to_string()
    };
    let e = svm("0 1:1e39\n");
    assert!(
        e.contains("`1e39` is outside the range of a 32-bit float") && !e.contains("non-numeric"),
        "{e}"
    );
    assert!(svm("0 1:nan\n").contains("`nan` is NaN"));
    assert!(svm("0 1:-inf\n").contains("`-inf` is infinite"));
    assert!(svm("0 1:abc\n").contains("non-numeric value `abc`"));
    let e = svm("0 0:1\n");
    assert!(
        e.contains("# Column indices are zero-based") && !e.contains("IndexBase"),
        "{e}"
    );
}
