//! Checks against the real MULAN files in the shared data folder (without it: a failure under
//! CI, a note elsewhere, see [`cardinal_testkit::shared_data`]), and the vendored Bibtex
//! (always).

use std::path::PathBuf;

use cardinal_data::data::{
    iterative_stratification, resolve_dataset, vendored, DatasetStats, Resolved, TrainTest,
};
use cardinal_testkit::shared_data;

fn load(name: &str) -> Option<TrainTest> {
    let dir = shared_data()?;
    let path = dir.join(name);
    match resolve_dataset(path.to_str().unwrap(), None).unwrap() {
        Resolved::Split(tt) => Some(tt),
        Resolved::Single(_) => panic!("{name}: expected a train/test split"),
    }
}

fn check(tt: &TrainTest, train: usize, test: usize, d: usize, l: usize, card: f64) {
    assert_eq!(tt.train.n_rows(), train);
    assert_eq!(tt.test.n_rows(), test);
    assert_eq!(tt.train.n_features(), d);
    assert_eq!(tt.test.n_features(), d);
    assert_eq!(tt.train.n_labels(), l);
    assert_eq!(tt.train.label_names.len(), l);
    assert_eq!(tt.train.feature_names.len(), d);
    let all = DatasetStats::of_all(&[&tt.train, &tt.test]);
    assert!(
        (all.cardinality - card).abs() < 5e-4,
        "cardinality {} vs {card}",
        all.cardinality
    );
}

#[test]
fn shared_bibtex_counts() {
    if let Some(tt) = load("bibtex") {
        check(&tt, 4880, 2515, 1836, 159, 2.402);
        assert_eq!(tt.train.label_names[0], "TAG_2005");
    }
}

#[test]
fn shared_delicious_counts() {
    if let Some(tt) = load("delicious") {
        check(&tt, 12920, 3185, 500, 983, 19.020);
        // PROVENANCE.md: 10 train and 4 test rows have no label.
        assert_eq!(DatasetStats::of(&tt.train).instances_without_labels, 10);
        assert_eq!(DatasetStats::of(&tt.test).instances_without_labels, 4);
        // Speed is measured by the load benchmark, not here.
        let folds = iterative_stratification(&tt.train.labels, &[0.95, 0.05], 1);
        assert_eq!(folds[0].len() + folds[1].len(), 12920);
    }
}

#[test]
fn vendored_bibtex_counts() {
    let tt = vendored("bibtex").expect("vendored bibtex");
    check(&tt, 4880, 2515, 1836, 159, 2.402);
    assert_eq!(tt.train.name, "bibtex");
    assert!(vendored("Bibtex").is_some());
    assert!(vendored("nope").is_none());
    // A name with no data dir resolves to the vendored copy from any working directory.
    let r = resolve_dataset("bibtex", None).unwrap();
    assert_eq!(r, Resolved::Split(tt));
}

#[test]
fn vendored_bibtex_equals_shared() {
    let Some(dir) = shared_data() else { return };
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/bibtex");
    for f in ["bibtex-train.arff", "bibtex-test.arff", "bibtex.xml"] {
        let gz = std::fs::read(repo.join(format!("{f}.gz"))).unwrap();
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
        let shared = std::fs::read(dir.join("bibtex").join(f)).unwrap();
        assert!(
            plain == shared,
            "{f}: vendored copy differs from the shared one"
        );
    }
    let shared = load("bibtex").unwrap();
    assert_eq!(vendored("bibtex").unwrap(), shared);
}
