//! "No labels" is a prediction: where the training data has empty label sets, the default's
//! count network learns the count 0, and the rule `inference.empty_at` turns a confident 0
//! into an empty label set that still lies on `C(z)` (`z = 0`, `y_T = 0`).

use cardinal::config::Config;
use cardinal::data::{CsrMatrix, Dataset, LabelSets};
use cardinal::engine::Engine;

/// Rows with feature 0 have no labels; the others have labels {0, 1} (feature 1) or {2}
/// (feature 2), with a few noise features: an empty set is learnable from the input.
fn data(n: usize, salt: usize) -> Dataset {
    let (d, l) = (8, 4);
    let mut x = CsrMatrix::new(d);
    let mut y = LabelSets::new(l);
    for r in 0..n {
        let kind = (r * 7 + salt) % 3;
        let noise = 3 + (r * 5 + salt) % 5;
        let idx = vec![kind as u32, noise as u32];
        x.push_row(&idx, &[1.0, 1.0]);
        y.push_row(match kind {
            0 => &[],
            1 => &[0, 1],
            _ => &[2],
        });
    }
    Dataset {
        name: "empties".into(),
        features: x,
        labels: y,
        feature_names: vec![],
        label_names: vec![],
    }
}

fn config() -> Config {
    let mut cfg = Config::predict();
    cfg.search = Default::default();
    cfg.model.hidden = 16;
    cfg.model.card_hidden = 8;
    cfg.train.epochs = 15;
    cfg.train.batch_size = 16;
    cfg
}

#[test]
fn the_default_predicts_the_empty_set_where_the_data_has_it_and_stays_on_c_z() {
    let engine = Engine::default();
    let (train, test) = (data(240, 0), data(60, 1));
    let fitted = engine.fit(&train, config(), &mut |_| {}).unwrap();
    let mut model = fitted.model;
    assert_eq!(model.config().inference.empty_at, Some(0.5));
    let with_rule = engine.predict(&model, &test.features).unwrap();
    model.config_mut().inference.empty_at = None;
    let without = engine.predict(&model, &test.features).unwrap();
    let l = test.labels.n_labels;
    let mut emptied = 0;
    for r in 0..test.n_rows() {
        let (a, b) = (
            &with_rule.y[r * l..(r + 1) * l],
            &without.y[r * l..(r + 1) * l],
        );
        if with_rule.z[r] != without.z[r] {
            // The rule only ever sets z to 0, and then y_T is 0: on C(0), and empty.
            assert_eq!(with_rule.z[r], 0.0, "row {r}");
            assert!(a.iter().all(|&v| v == 0.0), "row {r}: {a:?}");
            emptied += 1;
        } else {
            assert_eq!(a, b, "row {r}");
        }
    }
    // Every gold-empty row is predicted empty (no entry of y_T reaches the threshold), and
    // no other row is.
    for r in 0..test.n_rows() {
        let predicted_empty = with_rule.y[r * l..(r + 1) * l].iter().all(|&v| v < 0.5);
        assert_eq!(predicted_empty, test.labels.count(r) == 0, "row {r}");
    }
    assert!(emptied > 0, "the rule changed no row");
}

#[test]
fn the_rule_needs_the_count_zero_in_the_range_and_is_checked() {
    let mut cfg = config();
    cfg.inference.empty_at = Some(1.5);
    let err = cfg.validate().unwrap_err().to_string();
    assert!(err.contains("inference.empty_at"), "{err}");
    // Without empty training rows the count range starts at 1 and the rule changes nothing.
    let engine = Engine::default();
    let mut train = data(240, 0);
    let keep: Vec<usize> = (0..train.n_rows())
        .filter(|&r| train.labels.count(r) > 0)
        .collect();
    train = train.select_rows(&keep);
    let fitted = engine.fit(&train, config(), &mut |_| {}).unwrap();
    let mut model = fitted.model;
    let test = data(60, 1);
    let a = engine.predict(&model, &test.features).unwrap();
    model.config_mut().inference.empty_at = None;
    let b = engine.predict(&model, &test.features).unwrap();
    assert_eq!((a.y, a.z), (b.y, b.z));
}
