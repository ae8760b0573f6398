//! Formats users bring: ARFF nominal and string attributes, MEKA headers without an XML file,
//! 0-based LIBSVM, damaged gzip files, and label ids spread over a train/test pair. Tiny
//! fixtures with known content.

use std::path::Path;

use cardinal_data::data::{
    meka_label_spec, meka_problem, open_bytes, read_arff, read_arff_noted, read_arff_path,
    read_libsvm, read_mulan, read_mulan_noted, resolve_dataset, resolve_dataset_noted, DataError,
    Dataset, DropReason, DroppedAttribute, IndexBase, LabelSpec, ParseErrorKind, Resolved,
    SvmOptions, MAX_NOMINAL_VALUES,
};

mod common;
use common::{fx, rows};

fn split(spec: &Path) -> (Dataset, Dataset) {
    match resolve_dataset(spec.to_str().unwrap(), None).unwrap() {
        Resolved::Split(tt) => (tt.train, tt.test),
        Resolved::Single(_) => panic!("expected a train/test split"),
    }
}

const NOMINAL_FEATURES: [&str; 9] = [
    "color=red",
    "color=green",
    "color=blue",
    "size",
    "answer",
    "place name=New York",
    "place name=San Francisco",
    "place name=Paris",
    "flag",
];

#[test]
fn nominal_features_are_one_hot_from_the_declared_values() {
    let (train, notes) = read_mulan_noted(
        &fx("nominal/nominal-train.arff"),
        &fx("nominal/nominal.xml"),
    )
    .unwrap();
    // k > 2 values: one column per declared value, `attr=value`; k = 2 (`{YES,NO}`, `{0,1}`):
    // one column holding the value's index (Weka's NominalToBinary default).
    assert_eq!(train.feature_names, NOMINAL_FEATURES);
    assert_eq!(train.label_names, ["l2", "l1"]);
    assert_eq!(
        rows(&train),
        vec![
            // red, size 1.5, YES → 0, Paris, flag 1.
            (vec![(0, 1.0), (3, 1.5), (7, 1.0), (8, 1.0)], vec![1]),
            // blue, NO → 1 (the second declared value), New York.
            (vec![(2, 1.0), (4, 1.0), (5, 1.0)], vec![0]),
            // Missing color, answer and flag: all zeros.
            (vec![(3, 2.0), (6, 1.0)], vec![0, 1]),
            (vec![(1, 1.0), (3, -1.0), (7, 1.0)], vec![]),
        ]
    );
    assert_eq!(
        notes.dropped,
        vec![
            DroppedAttribute {
                name: "id".into(),
                reason: DropReason::Identifier { values: 300 },
            },
            DroppedAttribute {
                name: "note".into(),
                reason: DropReason::String,
            },
        ]
    );
    let shown = notes.dropped[0].to_string();
    assert!(
        shown.contains("`id`") && shown.contains("300") && shown.contains("identifier"),
        "{shown}"
    );
}

#[test]
fn sparse_rows_omit_nominal_attributes_at_their_first_value() {
    let test = read_mulan(&fx("nominal/nominal-test.arff"), &fx("nominal/nominal.xml")).unwrap();
    assert_eq!(test.feature_names, NOMINAL_FEATURES);
    assert_eq!(
        rows(&test),
        vec![
            // Omitted: color → red, answer → YES (0), place name → New York.
            (vec![(0, 1.0), (5, 1.0)], vec![1]),
            (
                vec![(2, 1.0), (3, 4.0), (4, 1.0), (7, 1.0), (8, 1.0)],
                vec![0]
            ),
            // An explicit `?` is missing (all zeros), not omitted.
            (vec![(1, 1.0)], vec![]),
        ]
    );
}

#[test]
fn train_and_test_read_separately_agree_and_resolve_notes_the_drops() {
    let (train, test) = split(&fx("nominal"));
    assert_eq!(train.feature_names, test.feature_names);
    assert_eq!(train.n_features(), 9);
    let (_, notes) = resolve_dataset_noted(fx("nominal").to_str().unwrap(), None).unwrap();
    // Train and test share the header: each drop is noted once.
    let msgs: Vec<String> = notes.iter().map(|n| n.message.clone()).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(
        msgs[0].contains("`id`") && msgs[1].contains("`note`"),
        "{msgs:?}"
    );
    assert!(notes[0].to_string().contains("nominal-train.arff"));
}

#[test]
fn identifier_threshold_is_on_declared_values() {
    let header = |k: usize| {
        let vals: Vec<String> = (0..k).map(|i| format!("v{i}")).collect();
        format!(
            "@relation t\n@attribute a {{{}}}\n@attribute y {{0,1}}\n@data\nv0,1\n",
            vals.join(",")
        )
    };
    let kept = read_arff(header(MAX_NOMINAL_VALUES).as_bytes(), &LabelSpec::Last(1)).unwrap();
    assert_eq!(kept.n_features(), MAX_NOMINAL_VALUES);
    assert_eq!(kept.features.row(0).0, &[0]);
    let (dropped, notes) = read_arff_noted(
        header(MAX_NOMINAL_VALUES + 1).as_bytes(),
        &LabelSpec::Last(1),
    )
    .unwrap();
    assert_eq!(dropped.n_features(), 0);
    assert_eq!(notes.dropped.len(), 1);
}

#[test]
fn nominal_value_outside_the_declared_set_is_an_error() {
    let text =
        "@relation t\n@attribute c {red,green,blue}\n@attribute y {0,1}\n@data\nred,1\npink,0\n";
    let e = read_arff(text.as_bytes(), &LabelSpec::Last(1)).unwrap_err();
    let loc = e.location().unwrap();
    assert_eq!((loc.line, loc.column), (6, 1), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("`pink`") && msg.contains("`c`") && msg.contains("{red,green,blue}"),
        "{msg}"
    );
}

#[test]
fn meka_relation_names_the_labels() {
    assert_eq!(meka_label_spec("Scene: -C 6"), Some(LabelSpec::First(6)));
    assert_eq!(
        meka_label_spec("Enron: -C -53 -split-percentage 50"),
        Some(LabelSpec::Last(53))
    );
    assert_eq!(meka_label_spec("no options -C 6"), None);
    assert_eq!(meka_label_spec("x: -C 0"), None);
    assert_eq!(meka_label_spec("x: -C"), None);
    // Each way of reading no labels is told as what it is, not as a missing option.
    for (relation, told) in [
        ("no options -C 6", "no `:` before it"),
        ("x: -C 0", "names no label attributes"),
        ("x: -C", "without a number"),
        ("x: -C six", "`six` is not a whole number"),
        ("x: -split 5", "has no MEKA option"),
        ("plain", "has no MEKA option"),
    ] {
        assert_eq!(meka_label_spec(relation), None);
        let problem = meka_problem(relation);
        assert!(problem.contains(told), "{relation}: {problem}");
    }

    // `-C 2`: the first two attributes; the name loses its options.
    let scene = read_arff_path(&fx("meka/scene.arff"), &LabelSpec::Meka).unwrap();
    assert_eq!(scene.name, "Scene");
    assert_eq!(scene.label_names, ["beach", "sunset"]);
    assert_eq!(scene.feature_names, ["x", "kind=a", "kind=b", "kind=c"]);
    assert_eq!(
        rows(&scene),
        vec![
            (vec![(0, 0.25), (3, 1.0)], vec![0]),
            (vec![(1, 1.0)], vec![1])
        ]
    );
    let e = read_arff_path(&fx("meka/plain.arff"), &LabelSpec::Meka).unwrap_err();
    assert!(
        matches!(e.parse_kind(), Some(ParseErrorKind::NoMekaLabels { .. })),
        "{e}"
    );
}

#[test]
fn meka_files_without_xml_resolve() {
    // A folder of MEKA train/test files with `-C -2` (labels last) and no XML file.
    let (train, test) = split(&fx("meka"));
    assert_eq!(train.name, "meka");
    assert_eq!(train.label_names, ["y1", "y2"]);
    assert_eq!(train.feature_names, ["x", "kind=a", "kind=b", "kind=c"]);
    assert_eq!(
        rows(&train),
        vec![
            (vec![(0, 0.5), (2, 1.0)], vec![0]),
            (vec![(0, 2.0), (1, 1.0)], vec![0, 1])
        ]
    );
    assert_eq!(rows(&test), vec![(vec![(0, 3.0), (1, 1.0)], vec![1])]);
    let (_, notes) = resolve_dataset_noted(fx("meka").to_str().unwrap(), None).unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].message.contains("the last 2 attributes"),
        "{notes:?}"
    );

    // One file by path.
    let Resolved::Single(scene) =
        resolve_dataset(fx("meka/scene.arff").to_str().unwrap(), None).unwrap()
    else {
        panic!("expected a single dataset");
    };
    assert_eq!(scene.label_names, ["beach", "sunset"]);
    // Neither an XML file nor a MEKA option: the error says both were looked for.
    let e = resolve_dataset(fx("meka/plain.arff").to_str().unwrap(), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("plain.xml") && e.contains("-C n") && e.contains("`plain`"),
        "{e}"
    );
}

#[test]
fn zero_based_libsvm_is_recognised_by_index_zero_across_the_pair() {
    // sklearn's dump_svmlight_file(zero_based=True): index 0 occurs in train only; the test
    // file must be read 0-based too, or its columns would shift.
    let (train, test) = split(&fx("svm0"));
    assert_eq!(
        rows(&train),
        vec![
            (vec![(0, 1.5), (3, 2.0)], vec![0, 2]),
            (vec![(2, 0.5)], vec![1]),
            (vec![(0, 1.0)], vec![])
        ]
    );
    assert_eq!(
        rows(&test),
        vec![
            (vec![(1, 1.0), (3, 1.0)], vec![4]),
            (vec![(2, 3.0)], vec![0, 1])
        ]
    );
    assert_eq!((train.n_features(), test.n_features()), (4, 4));
    let (_, notes) = resolve_dataset_noted(fx("svm0").to_str().unwrap(), None).unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].message.contains("0-based"), "{notes:?}");
    assert!(notes[0].path.ends_with("train.txt"), "{notes:?}");

    // Without an index 0 a file stays 1-based (the existing fixture).
    let Resolved::Single(one) = resolve_dataset(fx("tiny.svm").to_str().unwrap(), None).unwrap()
    else {
        panic!("expected a single dataset");
    };
    assert_eq!(one.features.row(0).0, &[0, 2]);
    assert_eq!(one.n_features(), 4);
}

#[test]
fn sklearn_comment_declares_the_base() {
    let dir = std::env::temp_dir().join(format!("cardinal-data-sk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let head = |b: &str| {
        format!(
            "# Generated by dump_svmlight_file from scikit-learn 1.5.0\n# Column indices are {b}-based\n#\n# my data\n"
        )
    };
    // Declared zero-based, index 0 never used: columns are kept as written.
    let p = dir.join("zero.svm");
    std::fs::write(&p, format!("{}0 2:1\n1 3:2\n", head("zero"))).unwrap();
    let Resolved::Single(ds) = resolve_dataset(p.to_str().unwrap(), None).unwrap() else {
        panic!("expected a single dataset");
    };
    assert_eq!(rows(&ds)[0].0, vec![(2, 1.0)]);
    assert_eq!(ds.n_features(), 4);
    // Declared one-based with an index 0: the 1-based reader's error, with its location.
    let p = dir.join("one.svm");
    std::fs::write(&p, format!("{}0 0:1\n", head("one"))).unwrap();
    let e = resolve_dataset(p.to_str().unwrap(), None).unwrap_err();
    assert_eq!(e.location().map(|l| l.line), Some(5), "{e}");
    assert!(e.to_string().contains("1-based feature index"), "{e}");
}

#[test]
fn label_ids_are_sized_by_the_largest_in_either_file() {
    // The largest label id (4) occurs in the test file only.
    let (train, test) = split(&fx("svm0"));
    assert_eq!((train.n_labels(), test.n_labels()), (5, 5));
    assert_eq!(train.label_names, ["0", "1", "2", "3", "4"]);
    assert_eq!(train.label_names, test.label_names);
    // And the other way round, with the readers on their own.
    let opts = SvmOptions::new(IndexBase::Zero);
    let small = read_libsvm("0 0:1\n".as_bytes(), &opts).unwrap();
    assert_eq!(small.n_labels(), 1);
}

#[test]
fn corrupt_gzip_is_a_gzip_error_naming_the_file() {
    // A stored gzip block with one byte flipped: the text decompresses to an unsorted sparse
    // index before the checksum at the end fails.
    let p = fx("corrupt/tiny-train.arff.gz");
    let bytes = std::fs::read(&p).unwrap();
    let names = LabelSpec::Names(vec![
        "sport".into(),
        "foot ball".into(),
        "arts & music".into(),
    ]);
    let e = read_arff(open_bytes(&bytes), &names).unwrap_err();
    assert!(
        matches!(e.parse_kind(), Some(ParseErrorKind::UnsortedIndex { .. })),
        "{e}"
    );
    // Through the file, the damage is what is reported.
    let e = read_arff_path(&p, &names).unwrap_err();
    assert!(matches!(e, DataError::Gzip { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("tiny-train.arff.gz") && msg.contains("gzip"),
        "{msg}"
    );
    let e = read_mulan(&p, &fx("tiny/tiny.xml")).unwrap_err();
    assert!(matches!(e, DataError::Gzip { .. }), "{e:?}");
    // A cut stream, by path and in memory.
    let cut = fx("corrupt/cut.arff.gz");
    let e = read_arff_path(&cut, &LabelSpec::Last(1)).unwrap_err();
    assert!(matches!(e, DataError::Gzip { .. }), "{e:?}");
    assert!(e.to_string().contains("cut.arff.gz"), "{e}");
    let e = read_arff(
        open_bytes(&std::fs::read(&cut).unwrap()),
        &LabelSpec::Last(1),
    )
    .unwrap_err();
    assert!(matches!(e, DataError::Gzip { path: None, .. }), "{e:?}");
    // Through the CLI's entry point, as ARFF and as LIBSVM.
    let e = resolve_dataset(cut.to_str().unwrap(), None).unwrap_err();
    assert!(matches!(e, DataError::Gzip { .. }), "{e:?}");
    let dir = std::env::temp_dir().join(format!("cardinal-data-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svm = dir.join("cut.svm");
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut z, "0 1:1\n1 2:1\n".repeat(200).as_bytes()).unwrap();
    let z = z.finish().unwrap();
    std::fs::write(&svm, &z[..z.len() - 9]).unwrap();
    let e = resolve_dataset(svm.to_str().unwrap(), None).unwrap_err();
    assert!(matches!(e, DataError::Gzip { .. }), "{e:?}");
    assert!(e.to_string().contains("cut.svm"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One generated attribute: numeric, nominal with `k` values, string, or `{0,1}` label.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Numeric,
    Nominal(usize),
    Text,
    Label,
}

fn kind() -> impl proptest::strategy::Strategy<Value = Kind> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Kind::Numeric),
        (0usize..6).prop_map(Kind::Nominal),
        Just(Kind::Text),
        Just(Kind::Label),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(256))]

    /// Dense rows and sparse rows that omit every value equal to its default (0, a nominal
    /// attribute's first value) read to the same dataset.
    #[test]
    fn sparse_and_dense_rows_agree(
        kinds in proptest::collection::vec(kind(), 1..7),
        picks in proptest::collection::vec(proptest::collection::vec(0usize..8, 7), 0..6),
    ) {
        let mut head = String::from("@relation g\n");
        let mut labels = Vec::new();
        for (i, k) in kinds.iter().enumerate() {
            let ty = match k {
                Kind::Numeric => "numeric".to_string(),
                Kind::Nominal(n) => {
                    let v: Vec<String> = (0..*n).map(|j| format!("v{j}")).collect();
                    format!("{{{}}}", v.join(","))
                }
                Kind::Text => "string".to_string(),
                Kind::Label => {
                    labels.push(format!("a{i}"));
                    "{0,1}".to_string()
                }
            };
            head.push_str(&format!("@attribute a{i} {ty}\n"));
        }
        head.push_str("@data\n");
        let (mut dense, mut sparse) = (head.clone(), head);
        for pick in &picks {
            let mut d = Vec::new();
            let mut s = Vec::new();
            for (i, k) in kinds.iter().enumerate() {
                let p = pick[i];
                let (v, default) = match k {
                    Kind::Numeric => {
                        let v = ["0", "1.5", "-2"][p % 3];
                        (v.to_string(), v == "0")
                    }
                    // A missing value is written out in both spellings.
                    Kind::Nominal(0) => ("?".to_string(), false),
                    Kind::Nominal(_) if p == 7 => ("?".to_string(), false),
                    Kind::Nominal(n) => (format!("v{}", p % n), p % n == 0),
                    Kind::Text => (["'t x'", "?", "w"][p % 3].to_string(), false),
                    Kind::Label => ((p % 2).to_string(), p % 2 == 0),
                };
                if !default {
                    s.push(format!("{i} {v}"));
                }
                d.push(v);
            }
            dense.push_str(&format!("{}\n", d.join(",")));
            sparse.push_str(&format!("{{{}}}\n", s.join(",")));
        }
        let spec = LabelSpec::Names(labels);
        let a = read_arff(dense.as_bytes(), &spec).unwrap();
        let b = read_arff(sparse.as_bytes(), &spec).unwrap();
        proptest::prop_assert_eq!(&a, &b, "dense:\n{}\nsparse:\n{}", dense, sparse);
        proptest::prop_assert_eq!(a.feature_names.len(), a.n_features());
    }
}
