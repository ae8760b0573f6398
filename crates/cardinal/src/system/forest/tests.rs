//! The forest systems and the forest prior through the front door: a blended model's networks
//! train as without the forest and its marginals are the mixture's; a model with the prior adds
//! the forest's log-odds; both read back the same.

use cardinal_forest::{log_odds, tilted};
use cardinal_testkit::{toy, Toy};

use crate::config::{Config, ForestConfig, ForestPriorConfig, SearchConfig};
use crate::engine::Engine;

fn shape(rows: usize, seed: u64) -> Toy {
    Toy::forest(rows, seed)
}

/// `predict` with the search off and networks small enough to train in a test.
fn small_predict() -> Config {
    let mut cfg = Config::predict();
    cfg.search = SearchConfig::default();
    cfg.model.hidden = 12;
    cfg.model.card_hidden = 8;
    cfg.model.energy_hidden = 4;
    cfg.train.epochs = 4;
    cfg.train.batch_size = 16;
    cfg
}

/// A forest blended with the networks, through the front door: its networks train exactly as
/// without the forest (training's dev rows are judged by the networks alone, which the forest,
/// grown on every training row, would have seen), its sets hold the constraint, and the model
/// saved and loaded predicts the same.
#[test]
fn a_blended_model_trains_its_networks_alone_and_reads_back_the_same() {
    let train = toy(&shape(90, 5));
    let test = toy(&shape(30, 6));
    let plain = small_predict();
    let mut blend = plain.clone();
    blend.model.forest = Some(ForestConfig {
        trees: 15,
        min_leaf: 1,
        networks: 0.25,
    });
    let engine = Engine::default();
    let networks = engine.fit(&train, plain, &mut |_| {}).unwrap().model;
    let blended = engine.fit(&train, blend, &mut |_| {}).unwrap().model;
    let (blended_nets, networks) = (blended.networks().unwrap(), networks.networks().unwrap());
    assert_eq!(blended_nets.params, networks.params);
    assert!(blended.forest().is_some());
    let out = engine.predict(&blended, &test.features).unwrap();
    let l = blended.n_labels();
    for (r, (y, &z)) in out.y.chunks(l).zip(&out.z).enumerate() {
        assert!(y.iter().all(|&v| v == 0.0 || v == 1.0), "row {r}: {y:?}");
        assert_eq!(y.iter().sum::<f32>(), z, "row {r}");
    }
    // Each label's marginal is the mixture's, recomputed from the forest alone and the
    // networks' heads: (1 − w)·forest + w·Σ_s P(s)·σ(u + λ_s).
    let mut alone = blended.clone();
    alone.config_mut().model.forest.as_mut().unwrap().networks = 0.0;
    let forest_only = engine.predict(&alone, &test.features).unwrap();
    let heads = blended_nets.heads(&test.features);
    let k = blended.counts().len();
    let mut on = vec![0.0; l];
    for r in 0..test.n_rows() {
        let u = &heads.unary[r * l..(r + 1) * l];
        let mut want: Vec<f64> = (0..l)
            .map(|i| 0.75 * forest_only.unary[r * l + i] as f64)
            .collect();
        for (j, &count) in blended.counts().iter().enumerate() {
            let s = (count as usize).min(l);
            if s > 0 {
                tilted(u, s as f64, &mut on);
                for i in 0..l {
                    want[i] += 0.25 * heads.count_probs[r * k + j] * on[i];
                }
            }
        }
        for i in 0..l {
            let got = out.unary[r * l + i] as f64;
            assert!(
                (got - want[i]).abs() < 1e-5,
                "row {r} label {i}: {got} vs {}",
                want[i]
            );
        }
    }
    let dir = std::env::temp_dir().join(format!("cardinal-blend-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    engine
        .save_model(
            &blended,
            &dir,
            &crate::engine::TrainedOn {
                dataset: "toy".into(),
                ..Default::default()
            },
            false,
        )
        .unwrap();
    let loaded = engine.load(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let again = engine.predict(&loaded.unwrap().0, &test.features).unwrap();
    assert_eq!((again.y, again.z), (out.y, out.z));
}

/// The forest tests' small `predict`, holding out a fifth of the rows as dev data.
fn small() -> Config {
    let mut cfg = small_predict();
    cfg.train.dev_fraction = 0.2;
    cfg
}

/// A model with the prior: its unary scores are the network's plus the forest's log-odds
/// (recomputed here from a copy without the prior), its outputs are on `C(z)`, it records
/// system `pnc`, and it is read back whole.
#[test]
fn a_model_with_a_forest_prior_adds_the_forests_log_odds_and_reads_back_the_same() {
    let train = toy(&shape(90, 5));
    let test = toy(&shape(30, 6));
    let mut cfg = small();
    cfg.model.forest_prior = Some(ForestPriorConfig {
        trees: 15,
        clip: 0.05,
        ..ForestPriorConfig::default()
    });
    let engine = Engine::default();
    let model = engine.fit(&train, cfg, &mut |_| {}).unwrap().model;
    assert_eq!(model.config().system, "pnc");
    let f = model.forest().expect("the prior's forest");
    // Grown on every row of the training file (each row's prior in training is out of bag).
    assert_eq!(f.n_train_rows(), train.n_rows());
    let out = engine.predict(&model, &test.features).unwrap();
    let l = model.n_labels();
    for (r, (y, &z)) in out.y.chunks(l).zip(&out.z).enumerate() {
        assert!(
            y.iter().all(|&v| (-1e-6..=1.0 + 1e-6).contains(&v)),
            "row {r}: {y:?}"
        );
        assert!(
            (y.iter().sum::<f32>() - z).abs() <= 0.01,
            "row {r}: sum {} z {z}",
            y.iter().sum::<f32>()
        );
    }
    let mut bare = model.networks().unwrap().clone();
    bare.config.model.forest_prior = None;
    bare.forest = None;
    let without = engine.predict(&bare.into(), &test.features).unwrap();
    let prior = log_odds(&f.marginals(&test.features), 1.0, 0.05);
    for (i, ((&u, &v), &p)) in out.unary.iter().zip(&without.unary).zip(&prior).enumerate() {
        assert!((u - (v + p)).abs() < 1e-4, "entry {i}: {u} vs {v} + {p}");
    }
    let dir = std::env::temp_dir().join(format!("cardinal-prior-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let on = crate::engine::TrainedOn {
        dataset: "toy".into(),
        ..Default::default()
    };
    engine.save_model(&model, &dir, &on, false).unwrap();
    let loaded = engine.load(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let (loaded, _) = loaded.unwrap();
    assert_eq!(loaded.config(), model.config());
    let again = engine.predict(&loaded, &test.features).unwrap();
    assert_eq!((again.y, again.z, again.unary), (out.y, out.z, out.unary));
}

/// The prior is Predict and Constrain's: a forest system or another system given one is
/// refused, naming the field.
#[test]
fn a_forest_prior_is_refused_where_it_would_not_be_read() {
    let train = toy(&shape(40, 1));
    let engine = Engine::default();
    let mut both = Config::predict().forest();
    both.model.forest_prior = Some(ForestPriorConfig::default());
    let e = engine
        .fit(&train, both, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("model.forest_prior"), "{e}");
    let mut bad = small();
    bad.model.forest_prior = Some(ForestPriorConfig {
        clip: 0.5,
        ..ForestPriorConfig::default()
    });
    let e = engine
        .fit(&train, bad, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("model.forest_prior.clip"), "{e}");
}

/// A forest alone is a model of its own kind: no network is trained or saved (its folder
/// holds the forest's tensors only), it reads back as a forest and predicts the same, and a
/// system of networks refuses it. A folder written before the forest was a kind of its own
/// (small untrained networks beside the forest) reads back as a forest alone, predicting the
/// same.
#[test]
fn a_forest_alone_holds_no_network_and_its_old_folders_still_load() {
    use crate::checkpoint::{self, WEIGHTS_FILE};
    use crate::fitted::Fitted;
    use crate::system::{Pnc, System};
    let (train, test) = (toy(&shape(90, 5)), toy(&shape(30, 6)));
    let mut cfg = small_predict().forest();
    cfg.model.forest.as_mut().unwrap().trees = 15;
    let engine = Engine::default();
    let model = engine.fit(&train, cfg, &mut |_| {}).unwrap().model;
    let Fitted::Forest(forest) = &model else {
        panic!("a forest fits {}", model.kind());
    };
    assert_eq!(
        (model.config().system.as_str(), model.n_labels()),
        ("forest", train.n_labels())
    );
    let out = engine.predict(&model, &test.features).unwrap();
    let dir = std::env::temp_dir().join(format!("cardinal-forest-kind-{}", std::process::id()));
    let old_dir = dir.with_extension("old");
    let on = crate::engine::TrainedOn::default();
    engine.save_model(&model, &dir, &on, true).unwrap();
    let weights = std::fs::read(dir.join(WEIGHTS_FILE)).unwrap();
    let names: Vec<String> = safetensors::SafeTensors::deserialize(&weights)
        .unwrap()
        .names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| n.starts_with("forest.")),
        "{names:?}"
    );
    // The folder of before: the configuration's smallest networks, untrained, with the forest.
    let mut old = crate::train::init_model(&train, model.config()).unwrap();
    old.forest = Some(forest.forest.clone());
    checkpoint::save(&old, &old_dir, &on).unwrap();
    let (loaded, old_loaded) = (engine.load(&dir), engine.load(&old_dir));
    let _ = (
        std::fs::remove_dir_all(&dir),
        std::fs::remove_dir_all(&old_dir),
    );
    for (what, loaded) in [("new", loaded), ("old", old_loaded)] {
        let (loaded, meta) = loaded.unwrap();
        assert_eq!(loaded.kind(), model.kind(), "{what}");
        assert_eq!(meta.n_features, train.n_features(), "{what}");
        let again = engine.predict(&loaded, &test.features).unwrap();
        assert_eq!(
            (&again.y, &again.z, &again.unary),
            (&out.y, &out.z, &out.unary),
            "{what}"
        );
    }
    match Pnc.predict(&model, &test.features, 16) {
        Err(crate::Error::ModelKind {
            expected, found, ..
        }) => {
            assert_eq!(
                (expected, found),
                (crate::fitted::NETWORKS, crate::fitted::FOREST_ALONE)
            );
        }
        other => panic!("{:?}", other.map(|o| o.y.len())),
    }
}
