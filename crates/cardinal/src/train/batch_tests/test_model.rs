//! A model for the batch tests: f64, with signal on every path.

use crate::config::Config;
use crate::data::Dataset;
use crate::engine::Model;
use crate::train::init_model;
use cardinal_testkit::lcg;

/// An f64 model of `cfg` for `data`, with non-zero biases so that every path carries signal.
pub(super) fn f64_model(data: &Dataset, cfg: &Config) -> Model<f64> {
    let m = init_model(data, cfg).unwrap();
    let mut params = m.params.cast::<f64>();
    let mut s = 5u64;
    params.visit_mut(|name, t, _| {
        if name.ends_with(".b1") || name.ends_with(".b2") {
            t.iter_mut().for_each(|v| *v = 0.3 * (lcg(&mut s) - 0.5));
        }
    });
    Model {
        config: m.config,
        params,
        standardizer: m.standardizer,
        counts: m.counts.iter().map(|&k| k as f64).collect(),
        train_mean_cardinality: m.train_mean_cardinality,
        forest: None,
        search: None,
    }
}
