//! The moving average of the weights (`train.average_epochs`): folding each update in, and
//! evaluating with the averaged weights.

use crate::model::Params;
use crate::pipeline::Model;
use rayon::prelude::*;

use super::state::TrainState;

/// Runs `f` on the model with the averaged weights in place (the model itself without
/// averaging).
pub(super) fn with_average<T>(state: &mut TrainState, f: impl FnOnce(&Model<f32>) -> T) -> T {
    match state.average.as_mut() {
        Some(avg) => {
            std::mem::swap(&mut state.model.params, avg);
            let out = f(&state.model);
            std::mem::swap(&mut state.model.params, avg);
            out
        }
        None => f(&state.model),
    }
}

/// Folds the weights after update number `step` (from 0) into the moving average whose time
/// constant is `tau` updates.
pub(super) fn fold_into_average(avg: &mut Params<f32>, params: &Params<f32>, step: u64, tau: f64) {
    let decay = (1.0 - 1.0 / tau.max(1.0)).min((1.0 + step as f64) / (10.0 + step as f64));
    let (d, e) = (decay as f32, (1.0 - decay) as f32);
    // A pass over every weight after every batch: split over threads, each chunk in the widest
    // vectors (elementwise, so the numbers do not depend on either).
    const CHUNK: usize = 1 << 14;
    avg.zip_mut(params, |_, a, w, _| {
        a.par_chunks_mut(CHUNK)
            .zip(w.par_chunks(CHUNK))
            .for_each(|(a, w)| average_dispatch(a, w, d, e));
    });
}

crate::simd::dispatch! {
    features ["avx512f"];
    /// `a ← d·a + e·w` elementwise, compiled for the widest vectors the CPU has (no FMA
    /// contraction, so every variant computes the same numbers).
    fn average_dispatch(a: &mut [f32], w: &[f32], d: f32, e: f32) {
        for (a, &w) in a.iter_mut().zip(w) {
            *a = d * *a + e * w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::train::fixtures::{small, tiny};
    use crate::train::{init_model, train};

    fn cfg(average_epochs: Option<f64>) -> Config {
        let mut cfg = small(Config::paper());
        cfg.train.epochs = 3;
        cfg.train.full_epochs = 1;
        cfg.train.batch_size = 4;
        cfg.train.dev_fraction = 0.25;
        cfg.train.average_epochs = average_epochs;
        cfg
    }

    /// An average without memory (decay 0) is the last iterate: same weights, same dev
    /// history, bit for bit, as a run without averaging.
    #[test]
    fn averaging_without_memory_is_the_last_iterate() {
        let data = tiny();
        let plain = train(&data, &cfg(None), &mut |_| {}).unwrap();
        let memoryless = train(&data, &cfg(Some(1e-12)), &mut |_| {}).unwrap();
        assert_eq!(plain.model.params, memoryless.model.params);
        let dev = |t: &crate::train::schedule::TrainedNetworks| -> Vec<Option<f64>> {
            t.history.iter().map(|r| r.dev_example_f1).collect()
        };
        assert_eq!(dev(&plain), dev(&memoryless));
        // With memory, the saved model is no longer the last iterate.
        let averaged = train(&data, &cfg(Some(1.0)), &mut |_| {}).unwrap();
        assert_ne!(plain.model.params, averaged.model.params);
        assert!(averaged.model.params.first_nonfinite().is_none());
    }

    /// The fold is the exponential mean with warm-up: each iterate's weight is
    /// `(1 − d_k) ∏_{j>k} d_j`, computed here directly, and the weights sum to 1 with the
    /// initial average's.
    #[test]
    fn fold_is_the_warmed_up_exponential_mean() {
        let data = tiny();
        let model = init_model(&data, &cfg(None)).unwrap();
        let mut avg = model.params.clone();
        avg.visit_mut(|_, a, _| a.fill(0.5));
        let (tau, n) = (7.0, 30u64);
        let iterate = |k: u64| (k as f64 * 0.37).sin();
        let mut p = model.params.clone();
        for k in 0..n {
            p.visit_mut(|_, a, _| a.fill(iterate(k) as f32));
            fold_into_average(&mut avg, &p, k, tau);
        }
        let d = |k: u64| (1.0 - 1.0 / tau).min((1.0 + k as f64) / (10.0 + k as f64));
        let tail = |k: u64| ((k + 1)..n).map(d).product::<f64>();
        let weights: Vec<f64> = (0..n).map(|k| (1.0 - d(k)) * tail(k)).collect();
        let w0 = tail(0) * d(0);
        assert!((weights.iter().sum::<f64>() + w0 - 1.0).abs() < 1e-12);
        let want = w0 * 0.5
            + (0..n)
                .map(|k| weights[k as usize] * iterate(k))
                .sum::<f64>();
        avg.visit(|name, a, _| {
            for &v in a {
                assert!((v as f64 - want).abs() < 1e-5, "{name}: {v} vs {want}");
            }
        });
    }
}
