//! Reading every supported format from tiny fixtures with known content, and write→read
//! round trips.

use std::io::Write;
use std::path::PathBuf;

use cardinal_data::data::{
    load_file, parse_label_xml, read_arff, read_arff_path, read_libsvm, read_libsvm_path,
    read_mulan, read_xmc, resolve_dataset, write_arff, write_label_xml, write_libsvm, write_xmc,
    CsrMatrix, Dataset, IndexBase, LabelSets, LabelSpec, Resolved, SvmOptions,
};
use proptest::prelude::*;

mod common;
use common::{fx, rows};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cardinal-data-test-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn xml_flattens_hierarchy_in_document_order() {
    let names = cardinal_data::data::read_label_xml_path(&fx("tiny/tiny.xml")).unwrap();
    assert_eq!(names, ["sport", "foot ball", "arts & music"]);
}

#[test]
fn arff_labels_by_xml_name_not_last_and_reordered() {
    let ds = read_mulan(&fx("tiny/tiny-train.arff"), &fx("tiny/tiny.xml")).unwrap();
    assert_eq!(ds.name, "tiny set");
    // Label order is the XML's, not the ARFF's.
    assert_eq!(ds.label_names, ["sport", "foot ball", "arts & music"]);
    assert_eq!(ds.feature_names, ["w1", "it's", "count"]);
    assert_eq!(
        rows(&ds),
        vec![
            (vec![(0, 0.5)], vec![0, 1]),
            (vec![(0, 0.25), (1, -3.0)], vec![2]),
            (vec![], vec![]),
            (vec![(1, 7.0), (2, 2.0)], vec![1, 2]),
            (vec![(2, 4.0)], vec![]),
        ]
    );
}

#[test]
fn arff_crlf_and_label_count_fallback() {
    let xml = read_mulan(&fx("tiny/tiny-test.arff"), &fx("tiny/tiny.xml")).unwrap();
    assert_eq!(
        rows(&xml),
        vec![(vec![(2, 1.0)], vec![0, 1]), (vec![(0, 1.0)], vec![0])]
    );
    assert_eq!(xml.feature_names, ["w1", "it's", "count"]);
    // `Last(2)`: attributes `sport` and `count` are the labels, in ARFF order.
    let last = read_arff_path(&fx("tiny/tiny-test.arff"), &LabelSpec::Last(2)).unwrap();
    assert_eq!(last.label_names, ["sport", "count"]);
    assert_eq!(
        last.feature_names,
        ["foot ball", "w1", "arts & music", "it's"]
    );
    assert_eq!(
        rows(&last),
        vec![(vec![(0, 1.0)], vec![0, 1]), (vec![(1, 1.0)], vec![0])]
    );
    let first = read_arff_path(&fx("tiny/tiny-test.arff"), &LabelSpec::First(1)).unwrap();
    assert_eq!(first.label_names, ["foot ball"]);
}

#[test]
fn gzip_detected_by_magic_bytes_not_name() {
    let plain = read_mulan(&fx("tiny/tiny-train.arff"), &fx("tiny/tiny.xml")).unwrap();
    let gz = read_mulan(&fx("mixed/tiny-train.arff.gz"), &fx("mixed/tiny.xml.gz")).unwrap();
    assert_eq!(plain, gz);
    // Gzip content under a plain name.
    let p = tmp("gz-named-plain.arff");
    std::fs::copy(fx("mixed/tiny-train.arff.gz"), &p).unwrap();
    let names = LabelSpec::Names(vec![
        "sport".into(),
        "foot ball".into(),
        "arts & music".into(),
    ]);
    assert_eq!(read_arff_path(&p, &names).unwrap(), plain);
}

#[test]
fn keywords_in_any_case_and_names_with_escapes() {
    let text = "@ReLaTiOn \"a \\\"q\\\" b\"\n@ATTRIBUTE 'x y\\\\z' NuMeRiC\n@attribute \"l 1\" {0,1}\n@DaTa\n3.5,1\n";
    let ds = read_arff(text.as_bytes(), &LabelSpec::Last(1)).unwrap();
    assert_eq!(ds.name, "a \"q\" b");
    assert_eq!(ds.feature_names, ["x y\\z"]);
    assert_eq!(ds.label_names, ["l 1"]);
    assert_eq!(rows(&ds), vec![(vec![(0, 3.5)], vec![0])]);
}

#[test]
fn libsvm_fixture() {
    let ds = read_libsvm_path(&fx("tiny.svm"), &SvmOptions::new(IndexBase::One)).unwrap();
    assert_eq!(ds.name, "tiny");
    assert_eq!((ds.n_rows(), ds.n_features(), ds.n_labels()), (4, 4, 3));
    assert_eq!(ds.label_names, ["0", "1", "2"]);
    assert_eq!(
        rows(&ds),
        vec![
            (vec![(0, 0.5), (2, 1.0)], vec![0, 2]),
            (vec![(1, 1.5)], vec![]),
            (vec![], vec![1]),
            (vec![(0, 1.0), (3, 2.0)], vec![0, 2]),
        ]
    );
    // Given dimensions win over inferred ones.
    let mut opts = SvmOptions::new(IndexBase::One);
    opts.n_features = Some(10);
    opts.n_labels = Some(5);
    let wide = read_libsvm_path(&fx("tiny.svm"), &opts).unwrap();
    assert_eq!((wide.n_features(), wide.n_labels()), (10, 5));
    // Zero-based reading of the same text shifts features by one.
    let zero = read_libsvm_path(&fx("tiny.svm"), &SvmOptions::new(IndexBase::Zero)).unwrap();
    assert_eq!(zero.features.row(0).0, &[1, 3]);
}

#[test]
fn xmc_folder_resolves_to_split() {
    let Resolved::Split(tt) = resolve_dataset(fx("xmc").to_str().unwrap(), None).unwrap() else {
        panic!("expected a split");
    };
    assert_eq!(
        (
            tt.train.n_rows(),
            tt.train.n_features(),
            tt.train.n_labels()
        ),
        (3, 5, 4)
    );
    assert_eq!(
        rows(&tt.train),
        vec![
            (vec![(0, 1.0), (4, 0.5)], vec![0, 3]),
            (vec![(1, 2.0)], vec![]),
            (vec![], vec![2])
        ]
    );
    assert_eq!(rows(&tt.test), vec![(vec![(3, 1.0)], vec![1])]);
}

#[test]
fn resolve_mulan_folders_single_files_and_names() {
    let Resolved::Split(tt) = resolve_dataset(fx("tiny").to_str().unwrap(), None).unwrap() else {
        panic!("expected a split");
    };
    assert_eq!((tt.train.n_rows(), tt.test.n_rows()), (5, 2));
    assert_eq!(tt.train.name, "tiny");
    // Folder named differently from its (gzip) files.
    let Resolved::Split(tt2) = resolve_dataset(fx("mixed").to_str().unwrap(), None).unwrap() else {
        panic!("expected a split");
    };
    assert_eq!(rows(&tt2.train), rows(&tt.train));
    // By name through the data directory.
    let by_name = resolve_dataset("tiny", Some(&fx(""))).unwrap();
    assert_eq!(by_name, Resolved::Split(tt.clone()));
    // One ARFF file with the XML beside it (`tiny-train.arff` finds `tiny.xml`).
    let Resolved::Single(one) = load_file(&fx("tiny/tiny-train.arff")).unwrap() else {
        panic!("expected a single dataset");
    };
    assert_eq!(one.n_rows(), 5);
    // A single-file folder (like MULAN's bookmarks), split by seed and sizes.
    let Resolved::Single(single) = resolve_dataset(fx("single").to_str().unwrap(), None).unwrap()
    else {
        panic!("expected a single dataset");
    };
    assert_eq!(single.name, "single");
    let split = single.train_test_split(3, 2, 7).unwrap();
    assert_eq!((split.train.n_rows(), split.test.n_rows()), (3, 2));
    assert_eq!(split, single.train_test_split(3, 2, 7).unwrap());
    assert!(single.train_test_split(4, 2, 7).is_err());
    let tt3 = Resolved::Single(single).into_train_test(0.6, 1).unwrap();
    assert_eq!((tt3.train.n_rows(), tt3.test.n_rows()), (3, 2));
    // A LIBSVM file by path.
    let Resolved::Single(svm) = resolve_dataset(fx("tiny.svm").to_str().unwrap(), None).unwrap()
    else {
        panic!("expected a single dataset");
    };
    assert_eq!(svm.n_rows(), 4);
    // Unknown names say where they were looked for.
    let e = resolve_dataset("no-such-set", Some(&fx("")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no-such-set") && e.contains("vendored"), "{e}");
}

fn arb_dataset() -> impl Strategy<Value = Dataset> {
    (1usize..6, 1usize..5, 0usize..8).prop_flat_map(|(d, l, n)| {
        let row = (
            proptest::collection::btree_map(0..d as u32, -1000i32..1000, 0..=d),
            proptest::collection::btree_set(0..l as u32, 0..=l),
        );
        proptest::collection::vec(row, n).prop_map(move |rows| {
            let mut features = CsrMatrix::new(d);
            let mut labels = LabelSets::new(l);
            for (f, ls) in rows {
                let (i, v): (Vec<u32>, Vec<f32>) = f
                    .into_iter()
                    .filter(|&(_, v)| v != 0)
                    .map(|(i, v)| (i, v as f32 / 8.0))
                    .unzip();
                features.push_row(&i, &v);
                labels.push_row(&ls.into_iter().collect::<Vec<_>>());
            }
            Dataset {
                name: "rt".into(),
                features,
                labels,
                feature_names: (0..d).map(|j| format!("feat {j}'")).collect(),
                label_names: (0..l).map(|j| format!("L&{j}")).collect(),
            }
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arff_xml_round_trip(ds in arb_dataset()) {
        let mut arff = Vec::new();
        write_arff(&mut arff, &ds).unwrap();
        let mut xml = Vec::new();
        write_label_xml(&mut xml, &ds.label_names).unwrap();
        let names = parse_label_xml(std::str::from_utf8(&xml).unwrap()).unwrap();
        let back = read_arff(&arff[..], &LabelSpec::Names(names)).unwrap();
        prop_assert_eq!(back, ds);
    }

    #[test]
    fn svm_round_trips(ds in arb_dataset(), one in any::<bool>()) {
        let base = if one { IndexBase::One } else { IndexBase::Zero };
        let mut xmc = Vec::new();
        write_xmc(&mut xmc, &ds, base).unwrap();
        // Rows with no labels and no features are blank lines: the XMC reader must then
        // report the short row count, never drop them silently.
        let has_blank = (0..ds.n_rows()).any(|r| ds.labels.count(r) == 0 && ds.features.row(r).0.is_empty());
        match read_xmc(&xmc[..], base) {
            Ok(back) => {
                prop_assert!(!has_blank);
                prop_assert_eq!(rows(&back), rows(&ds));
                prop_assert_eq!((back.n_features(), back.n_labels()), (ds.n_features(), ds.n_labels()));
            }
            Err(e) => prop_assert!(has_blank && e.to_string().contains("promised"), "{}", e),
        }
        let mut svm = Vec::new();
        write_libsvm(&mut svm, &ds, base).unwrap();
        let mut opts = SvmOptions::new(base);
        opts.n_features = Some(ds.n_features());
        opts.n_labels = Some(ds.n_labels());
        let back = read_libsvm(&svm[..], &opts).unwrap();
        let kept: Vec<_> = rows(&ds).into_iter().filter(|(f, l)| !f.is_empty() || !l.is_empty()).collect();
        prop_assert_eq!(rows(&back), kept);
    }
}

#[test]
fn gzip_round_trip_through_a_file() {
    let tt = cardinal_data::data::vendored("bibtex").unwrap();
    let small = tt.test.select_rows(&[0, 5, 17, 2000]);
    let p = tmp("rt.arff.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&p).unwrap(),
        flate2::Compression::fast(),
    );
    write_arff(&mut enc, &small).unwrap();
    enc.finish().unwrap().flush().unwrap();
    let back = read_arff_path(&p, &LabelSpec::Names(small.label_names.clone())).unwrap();
    assert_eq!(rows(&back), rows(&small));
    assert_eq!(back.feature_names, small.feature_names);
}

/// MULAN ships some datasets as `<prefix>-train<variant>.arff` (Corel5k's
/// `Corel5k-train-sparse.arff`): a folder of such a pair reads as its split, labels from
/// `<prefix>.xml`, and so does either file given alone.
#[test]
fn a_folder_of_variant_train_and_test_files_reads_as_its_split() {
    let dir = tmp("variant-split");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        fx("tiny/tiny-train.arff"),
        dir.join("Tiny5k-train-sparse.arff"),
    )
    .unwrap();
    std::fs::copy(
        fx("tiny/tiny-test.arff"),
        dir.join("Tiny5k-test-sparse.arff"),
    )
    .unwrap();
    std::fs::copy(fx("tiny/tiny.xml"), dir.join("Tiny5k.xml")).unwrap();
    let want_train = read_mulan(&fx("tiny/tiny-train.arff"), &fx("tiny/tiny.xml")).unwrap();
    let want_test = read_mulan(&fx("tiny/tiny-test.arff"), &fx("tiny/tiny.xml")).unwrap();
    let Resolved::Split(tt) = resolve_dataset(dir.to_str().unwrap(), None).unwrap() else {
        panic!("a train/test pair reads as a split");
    };
    assert_eq!(rows(&tt.train), rows(&want_train));
    assert_eq!(rows(&tt.test), rows(&want_test));
    assert_eq!(tt.train.label_names, want_train.label_names);
    let Resolved::Single(one) = load_file(&dir.join("Tiny5k-train-sparse.arff")).unwrap() else {
        panic!("one file reads as a single dataset");
    };
    assert_eq!(rows(&one), rows(&want_train));
    std::fs::remove_dir_all(&dir).unwrap();
}
