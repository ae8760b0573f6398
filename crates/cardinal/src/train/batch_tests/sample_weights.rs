//! Per-example loss weights (`LabelSets::weights`, the Python package's `sample_weight`),
//! checked by an independent route: an integer weight must act as that many copies of its row,
//! and all-ones weights must change nothing at all.

use crate::batch::{BatchLoss, Workspace};
use crate::checkpoint::{self, TrainedOn};
use crate::config::{Config, CountRange, ZMode};
use crate::data::arrays::with_sample_weights;
use crate::data::synthetic::{synthetic, SyntheticShape};
use crate::data::Dataset;
use crate::engine::Engine;
use crate::engine::Model;
use crate::inference::Kernel;
use crate::model::Params;
use crate::proj::Method;

use super::test_model::f64_model;

/// 20 rows of 12 features and 7 labels (1 to 4 a row).
fn rows20() -> Dataset {
    cardinal_testkit::toy(&cardinal_testkit::Toy {
        name: "rows20",
        rows: 20,
        features: 12,
        labels: 7,
        max_labels: 4,
        fallback_label: 3,
        seed: 31,
    })
}

/// Small networks, no dropout (its masks depend on a row's place in the batch), every
/// per-row term of the loss switched on.
fn config(method: Method, z_mode: ZMode, sum_over_batch: bool) -> Config {
    let mut cfg = Config::predict();
    cfg.model.hidden = 6;
    cfg.model.card_hidden = 5;
    cfg.model.energy_hidden = 4;
    cfg.model.dropout = 0.0;
    cfg.model.counts = CountRange::Fixed { min: 1, max: 4 };
    cfg.model.z_mode = z_mode;
    cfg.inference.steps = 4;
    cfg.inference.train_projection = method;
    cfg.loss.cardinality_weight = 0.7;
    cfg.loss.unary_bce_weight = 0.3;
    cfg.loss.sum_over_batch = sum_over_batch;
    cfg
}

/// The loss and gradient of one batch holding every row of `data`.
fn loss_and_grad(
    model: &Model<f64>,
    data: &Dataset,
    kernel: Option<Kernel>,
) -> (BatchLoss, Params<f64>) {
    let rows: Vec<usize> = (0..data.n_rows()).collect();
    let mut ws = Workspace::default();
    ws.kernel = kernel;
    let mut grad = model.params.zeros_like();
    let loss = model
        .loss_and_grad(&data.features, &data.labels, &rows, &mut ws, &mut grad)
        .unwrap();
    (loss, grad)
}

/// With integer weights (0 included), the batch loss and every gradient entry equal those of
/// the unweighted data with each row repeated weight times, to rounding: for the lockstep and
/// the row kernel, a mean and a sum over the batch, a count by expectation and by argmax
/// (with the supervised count term), and the exact projection.
#[test]
fn integer_weights_act_as_repeated_rows() {
    let data = rows20();
    let weights = [
        2.0, 0.0, 1.0, 3.0, 1.0, 0.0, 2.0, 1.0, 4.0, 1.0, 3.0, 2.0, 0.0, 5.0, 1.0, 2.0, 0.0, 3.0,
        1.0, 2.0,
    ];
    let weighted = Dataset {
        labels: with_sample_weights(data.labels.clone(), "sample_weight", &weights).unwrap(),
        ..data.clone()
    };
    let repeats: Vec<usize> = (0..data.n_rows())
        .flat_map(|r| std::iter::repeat_n(r, weights[r] as usize))
        .collect();
    let repeated = data.select_rows(&repeats);
    // More rows than one lockstep block of `TRAIN_LANES`: the repeated batch spans two.
    assert!(repeated.n_rows() > crate::batch::TRAIN_LANES);
    assert!(repeated.labels.weights.is_none());
    let mut cases = 0;
    for (method, z_mode) in [
        (Method::DykstraSoft, ZMode::Expectation),
        (Method::DykstraSoft, ZMode::Argmax),
        (Method::Exact, ZMode::Expectation),
    ] {
        for sum_over_batch in [false, true] {
            for kernel in [None, Some(Kernel::Row)] {
                let cfg = config(method, z_mode, sum_over_batch);
                let model = f64_model(&data, &cfg);
                let label = format!("{method:?} {z_mode:?} sum {sum_over_batch} {kernel:?}");
                let (lw, gw) = loss_and_grad(&model, &weighted, kernel);
                let (lr, gr) = loss_and_grad(&model, &repeated, kernel);
                let (_, gu) = loss_and_grad(&model, &data, kernel);
                let close = |what: &str, a: f64, b: f64, scale: f64| {
                    assert!(
                        (a - b).abs() <= 1e-11 * scale.max(1e-3),
                        "{label}: {what}: weighted {a:.15e} vs repeated {b:.15e}"
                    );
                };
                for (what, a, b) in [
                    ("f1 loss", lw.f1_loss, lr.f1_loss),
                    ("count loss", lw.card_loss, lr.card_loss),
                    ("decay", lw.decay_loss, lr.decay_loss),
                ] {
                    close(what, a, b, b.abs());
                }
                assert!(
                    lr.card_loss > 0.0 && lr.f1_loss != 0.0,
                    "{label}: a term is off"
                );
                let (mut a, mut b, mut u) = (Vec::new(), Vec::new(), Vec::new());
                gw.visit(|name, g, _| a.push((name, g.to_vec())));
                gr.visit(|_, g, _| b.push(g.to_vec()));
                gu.visit(|_, g, _| u.push(g.to_vec()));
                let mut differs = false;
                for (((name, a), b), u) in a.iter().zip(&b).zip(&u) {
                    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
                        close(&format!("{name}[{i}]"), x, y, scale);
                    }
                    differs |= a.iter().zip(u).any(|(x, y)| (x - y).abs() > 1e-6 * scale);
                }
                // The weights matter: the unweighted gradient is another one.
                assert!(differs, "{label}: the weights changed no gradient");
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 12);
}

/// The bytes of the model directory `model` saves as.
fn model_bytes(model: &crate::fitted::Fitted, name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::env::temp_dir().join(format!("cardinal-weights-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    checkpoint::save_fitted(model, &dir, &TrainedOn::default()).unwrap();
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .filter(|(name, _)| !name.starts_with('.'))
        .collect();
    files.sort();
    std::fs::remove_dir_all(&dir).unwrap();
    files
}

/// All-ones weights train the very bytes that no weights train (the default's dropout, dev
/// split, early stopping and both phases), and cross-validate to the same report; other
/// weights train another model.
#[test]
fn all_ones_weights_train_the_same_bytes_as_no_weights() {
    let data = synthetic(&SyntheticShape {
        train_rows: 150,
        test_rows: 10,
        features: 20,
        labels: 6,
        density: 0.2,
        seed: 3,
    })
    .train;
    let n = data.n_rows();
    let with = |w: &[f64]| Dataset {
        labels: with_sample_weights(data.labels.clone(), "sample_weight", w).unwrap(),
        ..data.clone()
    };
    let mut cfg = Config::predict();
    cfg.model.hidden = 16;
    cfg.train.epochs = 3;
    cfg.search.max_rows = 0;
    let engine = Engine::default();
    let fit = |d: &Dataset| engine.fit(d, cfg.clone(), &mut |_| {}).unwrap().model;
    let plain = model_bytes(&fit(&data), "plain");
    assert!(plain.iter().any(|(name, _)| name.ends_with(".safetensors")));
    assert_eq!(model_bytes(&fit(&with(&vec![1.0; n])), "ones"), plain);
    let halves: Vec<f64> = (0..n).map(|r| if r % 2 == 0 { 1.0 } else { 0.5 }).collect();
    assert_ne!(model_bytes(&fit(&with(&halves)), "halves"), plain);

    let cv = |d: &Dataset| {
        engine
            .cross_validate(d, &cfg, 3, &mut |_, _| {}, &mut |_| {})
            .unwrap()
    };
    assert_eq!(cv(&with(&vec![1.0; n])), cv(&data));
}
