//! Every dataset of the development suite (`shared/data`, see its SUITE.md) loads through the
//! CLI's entry point, with the expected shapes. Without the folder the tests fail under CI and
//! only note it elsewhere ([`cardinal_testkit::shared_data`]). Bookmarks ships only its header
//! and is left out.

use cardinal_data::data::{resolve_dataset, resolve_dataset_noted, Resolved, TrainTest};
use cardinal_testkit::shared_data;

/// `(name, has a standard split, train rows, test rows, features, labels)`.
///
/// Rows and labels are SUITE.md's; single-file datasets are split 80/20 by
/// `into_train_test(0.8, 0)` (`round(0.8 n)` training rows). Features are counted after the
/// ARFF reader's encoding (Weka's NominalToBinary: a nominal attribute with k > 2 values gives
/// k columns, with k ≤ 2 one column; identifiers and strings dropped), so they differ from
/// SUITE.md's attribute counts where a dataset has nominal features:
/// - birds: 258 numeric + 1 `{0,1}` + `location` (12 values → 12) = 271;
/// - genbase: 1185 `{YES,NO}` → 1185 (one column each); `protein` (662 declared values, above
///   `MAX_NOMINAL_VALUES`) is dropped as an identifier;
/// - flags: 10 numeric + 5 `{0,1}` + landmass 6 + zone 4 + language 10 + religion 8 = 43;
/// - foodtruck: 17 numeric + time 5 + motivation 5 + gender `{F,M}` 1 + marital.status 3 = 31.
const SUITE: &[(&str, bool, usize, usize, usize, usize)] = &[
    ("bibtex", true, 4880, 2515, 1836, 159),
    ("delicious", true, 12920, 3185, 500, 983),
    ("emotions", true, 391, 202, 72, 6),
    ("birds", true, 322, 323, 271, 19),
    ("genbase", true, 463, 199, 1185, 27),
    ("flags", true, 129, 65, 43, 7),
    ("cal500", false, 402, 100, 68, 174),
    ("foodtruck", false, 326, 81, 31, 12),
];

fn load(dir: &std::path::Path, name: &str, split: bool) -> TrainTest {
    let resolved = resolve_dataset(name, Some(dir)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        matches!(resolved, Resolved::Split(_)),
        split,
        "{name}: standard split"
    );
    resolved
        .into_train_test(0.8, 0)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_suite_dataset_loads_with_its_shape() {
    let Some(dir) = shared_data() else { return };
    for &(name, split, n_train, n_test, d, l) in SUITE {
        let tt = load(&dir, name, split);
        let (tr, te) = (&tt.train, &tt.test);
        assert_eq!(
            (tr.n_rows(), te.n_rows()),
            (n_train, n_test),
            "{name}: rows"
        );
        assert_eq!(
            (tr.n_features(), te.n_features()),
            (d, d),
            "{name}: features"
        );
        assert_eq!((tr.n_labels(), te.n_labels()), (l, l), "{name}: labels");
        assert_eq!(tr.feature_names.len(), d, "{name}: feature names");
        assert_eq!(tr.feature_names, te.feature_names, "{name}: feature order");
        assert_eq!(tr.label_names, te.label_names, "{name}: label order");
        assert!(!tr.labels.indices.is_empty(), "{name}: no labels at all");
    }
}

#[test]
fn genbase_protein_id_is_dropped_and_noted() {
    let Some(dir) = shared_data() else { return };
    let (resolved, notes) = resolve_dataset_noted("genbase", Some(&dir)).unwrap();
    let tt = resolved.into_train_test(0.8, 0).unwrap();
    assert!(!tt
        .train
        .feature_names
        .iter()
        .any(|n| n.starts_with("protein")));
    assert_eq!(tt.train.feature_names[0], "PS00010");
    // One note for the pair (train and test share the header), naming the attribute.
    assert_eq!(notes.len(), 1, "{notes:?}");
    let msg = notes[0].to_string();
    assert!(
        msg.contains("`protein`") && msg.contains("662") && msg.contains("identifier"),
        "{msg}"
    );
    // `{YES,NO}`: one column, 1 for `NO` (the second declared value, as Weka encodes it); most
    // motifs are absent from a protein, so a row is mostly ones.
    let (idx, val) = tt.train.features.row(0);
    assert!(val.iter().all(|&v| v == 1.0));
    assert!(idx.len() > 1100, "{}", idx.len());
}

#[test]
fn nominal_suite_features_are_named_by_value() {
    let Some(dir) = shared_data() else { return };
    let flags = load(&dir, "flags", true).train;
    assert_eq!(
        &flags.feature_names[..7],
        &[
            "landmass=1",
            "landmass=2",
            "landmass=3",
            "landmass=4",
            "landmass=5",
            "landmass=6",
            "zone=1"
        ]
    );
    // First row: landmass 4, zone 1, area 164, population 7, language 8, religion 2.
    let (idx, val) = flags.features.row(0);
    let row: Vec<(&str, f32)> = idx
        .iter()
        .zip(val)
        .map(|(&i, &v)| (flags.feature_names[i as usize].as_str(), v))
        .collect();
    for want in [
        ("landmass=4", 1.0),
        ("zone=1", 1.0),
        ("area", 164.0),
        ("population", 7.0),
        ("language=8", 1.0),
        ("religion=2", 1.0),
    ] {
        assert!(row.contains(&want), "{want:?} not in {row:?}");
    }
    let food = load(&dir, "foodtruck", false).train;
    assert!(food.feature_names.iter().any(|n| n == "gender"));
    assert!(food.feature_names.iter().any(|n| n == "time=happy_hour"));
    let birds = load(&dir, "birds", true).train;
    assert_eq!(
        birds
            .feature_names
            .iter()
            .filter(|n| n.starts_with("location="))
            .count(),
        12
    );
}
