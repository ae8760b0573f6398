//! The heads against the full inference.

use crate::batch::Workspace;
use crate::config::Config;
use crate::model::Outputs;
use crate::train::init_model;
use cardinal_testkit::{toy, Toy};

/// The heads are the networks of the full inference: the same unary scores as a
/// batch-by-batch pass, and a count distribution whose expectation is its count `z`.
#[test]
fn the_heads_are_the_networks_of_the_inference() {
    let data = toy(&Toy {
        name: "heads",
        rows: 150,
        features: 7,
        labels: 5,
        max_labels: 3,
        fallback_label: 0,
        seed: 3,
    });
    let mut cfg = Config::paper();
    cfg.model.hidden = 9;
    cfg.model.card_hidden = 6;
    let model = init_model(&data, &cfg).unwrap();
    let heads = model.heads(&data.features);
    let mut out = Outputs::default();
    let rows: Vec<usize> = (0..data.n_rows()).collect();
    model
        .forward_batched(
            &data.features,
            &rows,
            40,
            &mut Workspace::default(),
            &mut out,
        )
        .unwrap();
    let unary: Vec<f64> = out.unary.iter().map(|&v| v as f64).collect();
    assert_eq!(heads.unary, unary);
    let k = model.counts.len();
    for (p, &z) in heads.count_probs.chunks(k).zip(&out.z) {
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let mean: f64 = p
            .iter()
            .zip(&model.counts)
            .map(|(p, &c)| p * c as f64)
            .sum();
        assert!((mean - z as f64).abs() < 1e-4, "{mean} vs {z}");
    }
}
