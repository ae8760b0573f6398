//! What the front door offers front ends beyond fit and predict: training that its caller can
//! stop (Ctrl-C in the Python package) and saving a model trained without a run directory.

use std::sync::atomic::AtomicBool;

use cardinal::config::{Config, SearchConfig};
use cardinal::data::synthetic::{synthetic, SyntheticShape};
use cardinal::data::TrainTest;
use cardinal::engine::Event;
use cardinal::engine::{Engine, TrainedOn};
use cardinal::Error;

fn data() -> TrainTest {
    synthetic(&SyntheticShape {
        train_rows: 120,
        test_rows: 40,
        features: 20,
        labels: 6,
        density: 0.2,
        seed: 1,
    })
}

fn small_config() -> Config {
    let mut cfg = Config::predict();
    cfg.model.hidden = 16;
    cfg.train.epochs = 3;
    // Epochs to count and to cancel: not the search, which may choose a forest (no epochs).
    cfg.search = SearchConfig::default();
    cfg
}

#[test]
fn a_cancellable_fit_left_alone_trains_the_same_model_as_fit() {
    let data = data();
    let engine = Engine::default();
    let plain = engine
        .fit(&data.train, small_config(), &mut |_| {})
        .unwrap();
    let never = AtomicBool::new(false);
    let mut epochs = 0;
    let cancellable = engine
        .fit_cancellable(
            &data.train,
            small_config(),
            &mut |e| epochs += matches!(e, Event::Epoch(_)) as usize,
            &never,
        )
        .unwrap();
    assert!(epochs >= 3, "{epochs} epochs");
    let a = engine.predict(&plain.model, &data.test.features).unwrap();
    let b = engine
        .predict(&cancellable.model, &data.test.features)
        .unwrap();
    assert_eq!(a.y, b.y);
    assert_eq!(a.z, b.z);
}

#[test]
fn a_cancelled_fit_stops_after_the_epoch_it_is_in() {
    let data = data();
    let stop = AtomicBool::new(true);
    let mut epochs = 0;
    let err = Engine::default()
        .fit_cancellable(
            &data.train,
            small_config(),
            &mut |e| epochs += matches!(e, Event::Epoch(_)) as usize,
            &stop,
        )
        .unwrap_err();
    assert!(matches!(err, Error::Interrupted { epochs: 1 }), "{err}");
    assert_eq!(epochs, 1);
    assert_eq!(err.to_string(), "training interrupted after 1 epochs");
}

#[test]
fn a_saved_model_loads_and_predicts_the_same_and_is_never_overwritten_unasked() {
    let data = data();
    let engine = Engine::default();
    let trained = engine
        .fit(&data.train, small_config(), &mut |_| {})
        .unwrap();
    let dir = std::env::temp_dir().join(format!("cardinal-save-model-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let names: Vec<String> = (0..6).map(|i| format!("label{i}")).collect();
    engine
        .save_model(
            &trained.model,
            &dir,
            &TrainedOn {
                label_names: names.clone(),
                ..TrainedOn::default()
            },
            false,
        )
        .unwrap();
    let (loaded, meta) = engine.load(&dir).unwrap();
    assert_eq!(meta.label_names, names);
    let a = engine.predict(&trained.model, &data.test.features).unwrap();
    let b = engine.predict(&loaded, &data.test.features).unwrap();
    assert_eq!(a.y, b.y);
    let err = engine
        .save_model(&trained.model, &dir, &TrainedOn::default(), false)
        .unwrap_err();
    assert!(matches!(err, Error::RunExists { .. }), "{err}");
    engine
        .save_model(&trained.model, &dir, &TrainedOn::default(), true)
        .unwrap();
    assert!(engine.load(&dir).unwrap().1.label_names.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Training data with rows but no label columns is an error from the front door, whoever
/// builds the dataset, not a panic in the networks.
#[test]
fn training_data_without_label_columns_is_refused() {
    let mut train = data().train;
    train.labels = cardinal::data::LabelSets::new(0);
    for _ in 0..train.n_rows() {
        train.labels.push_row(&[]);
    }
    train.label_names.clear();
    let err = Engine::default()
        .fit(&train, small_config(), &mut |_| {})
        .unwrap_err();
    assert!(err.to_string().contains("no label columns"), "{err}");
}
