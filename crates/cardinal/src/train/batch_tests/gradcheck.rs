//! The end-to-end gradient (through the networks, all T unrolled steps, every projection and the
//! cardinality net) against central finite differences, in f64, for every parameter tensor.

use crate::batch::{batch_loss, Workspace};
use crate::config::{Config, CountRange, IterateWeights};
use crate::data::Dataset;
use crate::engine::Model;
use crate::model::Params;
use crate::proj::Method;

use cardinal_testkit::{lcg, toy, Toy};

use super::test_model::f64_model;

/// 6 rows of 12 features and 7 labels.
fn tiny_dataset() -> Dataset {
    toy(&Toy {
        name: "tiny",
        rows: 6,
        features: 12,
        labels: 7,
        max_labels: 7,
        fallback_label: 2,
        seed: 99,
    })
}

/// The f64 model of a configuration on [`tiny_dataset`], with its analytic gradient over every
/// row.
struct Case {
    data: Dataset,
    model: Model<f64>,
    rows: Vec<usize>,
    grad: Params<f64>,
}

impl Case {
    fn new(data: Dataset, cfg: &Config) -> Self {
        let model = f64_model(&data, cfg);
        let rows: Vec<usize> = (0..data.n_rows()).collect();
        let mut ws = Workspace::default();
        let mut grad = model.params.zeros_like();
        model
            .loss_and_grad(&data.features, &data.labels, &rows, &mut ws, &mut grad)
            .unwrap();
        Case {
            data,
            model,
            rows,
            grad,
        }
    }

    /// The central finite difference (step 1e-6) of the batch loss along `nudge(model, delta)`.
    fn finite_difference(&self, nudge: impl Fn(&mut Model<f64>, f64)) -> f64 {
        let h = 1e-6;
        let eval = |delta: f64| {
            let mut m = self.model.clone();
            nudge(&mut m, delta);
            let mut ws = Workspace::default();
            batch_loss(
                &m,
                &self.data.features,
                &self.data.labels,
                &self.rows,
                &mut ws,
            )
            .unwrap()
        };
        (eval(h) - eval(-h)) / (2.0 * h)
    }
}

fn check(cfg: &Config, label: &str) {
    check_on(tiny_dataset(), cfg, label);
}

fn check_on(data: Dataset, cfg: &Config, label: &str) {
    let case = Case::new(data, cfg);
    let mut analytic: Vec<(&'static str, Vec<f64>)> = Vec::new();
    case.grad
        .visit(|name, g, _| analytic.push((name, g.to_vec())));
    let mut s = 17u64;
    let mut checked = 0;
    for (ti, (name, g)) in analytic.iter().enumerate() {
        let scale = g.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-3);
        let picks: Vec<usize> = if g.len() <= 6 {
            (0..g.len()).collect()
        } else {
            (0..6)
                .map(|_| (lcg(&mut s) * g.len() as f64) as usize)
                .collect()
        };
        for i in picks {
            let fd = case.finite_difference(|m, delta| {
                let mut k = 0;
                m.params.visit_mut(|_, t, _| {
                    if k == ti {
                        t[i] += delta;
                    }
                    k += 1;
                });
            });
            let err = (fd - g[i]).abs();
            assert!(err <= 1e-6 * scale + 1e-8, "{label}: {name}[{i}]: finite difference {fd:.10e} vs analytic {:.10e} (scale {scale:.3e})", g[i]);
            checked += 1;
        }
    }
    assert!(checked > 40, "{label}: only {checked} entries checked");
}

fn tiny_config(method: Method) -> Config {
    let mut cfg = Config::paper();
    cfg.model.hidden = 5;
    cfg.model.card_hidden = 4;
    cfg.model.energy_hidden = 3;
    cfg.model.counts = CountRange::Fixed { min: 1, max: 4 };
    cfg.inference.steps = 4;
    cfg.inference.eta = 0.3;
    cfg.inference.train_projection = method;
    cfg.loss.cardinality_weight = 0.5;
    cfg.loss.unary_bce_weight = 0.3;
    cfg
}

#[test]
fn gradient_matches_finite_differences_soft_dykstra() {
    check(&tiny_config(Method::DykstraSoft), "dykstra-soft");
}

#[test]
fn gradient_matches_finite_differences_smooth() {
    let mut cfg = tiny_config(Method::Smooth);
    cfg.inference.proj.smooth_eps = 0.2;
    check(&cfg, "smooth");
}

#[test]
fn gradient_matches_finite_differences_soft_then_final_exact() {
    let mut cfg = tiny_config(Method::DykstraSoft);
    cfg.inference.final_projection = Some(Method::Exact);
    check(&cfg, "dykstra-soft + final exact");
}

/// The MLP baseline's configuration: no unrolled steps, only the unary BCE and the count.
#[test]
fn gradient_matches_finite_differences_without_unrolled_steps() {
    let mut cfg = tiny_config(Method::Exact);
    cfg.inference.steps = 0;
    cfg.loss.f1_weight = 0.0;
    cfg.loss.unary_bce_weight = 1.0;
    check(&cfg, "no steps");
}

/// Unary and cardinality scores only (no global energy), the §4 alternative's score.
#[test]
fn gradient_matches_finite_differences_without_energy() {
    let mut cfg = tiny_config(Method::Exact);
    cfg.model.energy_hidden = 0;
    check(&cfg, "no energy");
}

/// E2E-SPEN's configuration: clipping instead of a projection, loss on the last iterate.
#[test]
fn gradient_matches_finite_differences_clip() {
    let mut cfg = tiny_config(Method::Clip);
    cfg.inference.momentum = 0.0;
    cfg.loss.iterate_weights = crate::config::IterateWeights::Last;
    check(&cfg, "clip");
}

#[test]
fn gradient_matches_finite_differences_exact() {
    check(&tiny_config(Method::Exact), "exact");
}

#[test]
fn gradient_matches_finite_differences_exact_dykstra_mean_loss() {
    let mut cfg = tiny_config(Method::DykstraExact);
    cfg.loss.sum_over_batch = false;
    cfg.loss.iterate_weights = IterateWeights::Last;
    check(&cfg, "dykstra-exact");
}

/// FP's bisection makes discrete choices whose late iterations are near-ties (the interval has
/// shrunk to ~2^-J), so the loss is only piecewise smooth at that scale; with few iterations the
/// choices are far from ties and finite differences are meaningful.
#[test]
fn gradient_matches_finite_differences_fp() {
    let mut cfg = tiny_config(Method::Fp);
    cfg.inference.proj.fp_iters = 3;
    check(&cfg, "fp");
}

/// The check must be able to fail: a wrong gradient (here, the η entry overwritten with zero)
/// is caught.
#[test]
#[should_panic(expected = "finite difference")]
fn gradient_check_detects_a_missing_gradient() {
    let mut case = Case::new(tiny_dataset(), &tiny_config(Method::Exact));
    case.grad.eta[0] = 0.0;
    let fd = case.finite_difference(|m, delta| m.params.eta[0] += delta);
    assert!(
        (fd - case.grad.eta[0]).abs() < 1e-8,
        "finite difference {fd} vs analytic {}",
        case.grad.eta[0]
    );
}

#[test]
fn gradient_matches_finite_differences_with_dropout() {
    // The masks are a function of (key, row, unit): fixed across the finite differences.
    let mut cfg = tiny_config(Method::DykstraSoft);
    cfg.model.dropout = 0.4;
    check(&cfg, "dropout");
}

#[test]
fn dropout_changes_training_gradients_but_not_inference() {
    let mut cfg = tiny_config(Method::DykstraSoft);
    let Case {
        data,
        model: plain,
        rows,
        ..
    } = Case::new(tiny_dataset(), &cfg);
    cfg.model.dropout = 0.5;
    let mut dropped = plain.clone();
    dropped.config = cfg;
    let run = |m: &Model<f64>| {
        let mut out = crate::pipeline::Outputs::default();
        m.forward(&data.features, &rows, &mut Workspace::default(), &mut out)
            .unwrap();
        out.y
    };
    assert_eq!(
        run(&plain),
        run(&dropped),
        "dropout must not act at inference"
    );
    let loss = |m: &Model<f64>, key: u64| {
        let mut ws = Workspace::default();
        ws.dropout_key = key;
        batch_loss(m, &data.features, &data.labels, &rows, &mut ws).unwrap()
    };
    assert_ne!(loss(&plain, 0), loss(&dropped, 0));
    assert_ne!(
        loss(&dropped, 0),
        loss(&dropped, 1),
        "a new key draws new masks"
    );
    assert_eq!(loss(&plain, 0), loss(&plain, 1));
}

/// Per-example loss weights (the Python package's `sample_weight`), fractional and one of
/// them 0, with every per-row term on (relaxed F1, unary BCE, supervised count), averaged over
/// the batch (divided by the weights' sum).
#[test]
fn gradient_matches_finite_differences_with_sample_weights() {
    let data = tiny_dataset();
    let weights = [0.5, 2.25, 0.0, 1.0, 3.5, 0.75];
    let labels = crate::data::arrays::with_sample_weights(data.labels.clone(), "w", &weights);
    let data = Dataset {
        labels: labels.unwrap(),
        ..data
    };
    for method in [Method::DykstraSoft, Method::Exact] {
        let mut cfg = tiny_config(method);
        cfg.loss.sum_over_batch = false;
        check_on(data.clone(), &cfg, &format!("{method:?}, weighted"));
    }
}
