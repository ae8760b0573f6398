//! A small synthetic data set and network sizes shared by the training tests.

use crate::config::Config;
use crate::data::{CsrMatrix, Dataset, LabelSets};

/// `cfg` with networks and an unroll small enough for [`tiny`].
pub(super) fn small(mut cfg: Config) -> Config {
    cfg.model.hidden = 6;
    cfg.model.card_hidden = 5;
    cfg.inference.steps = 3;
    cfg
}

/// 20 rows of 30 binary features (up to 5 a row) and 9 labels (1 or 2 a row), drawn from a
/// fixed [`cardinal_testkit::Lcg`] stream.
pub(super) fn tiny() -> Dataset {
    let (n, d, l) = (20, 30, 9);
    let mut g = cardinal_testkit::Lcg::new(7);
    let mut x = CsrMatrix::new(d);
    let mut y = LabelSets::new(l);
    for _ in 0..n {
        let mut idx: Vec<u32> = (0..5).map(|_| g.below(d) as u32).collect();
        idx.sort_unstable();
        idx.dedup();
        x.push_row(&idx, &vec![1.0; idx.len()]);
        let mut lab: Vec<u32> = (0..2).map(|_| g.below(l) as u32).collect();
        lab.sort_unstable();
        lab.dedup();
        y.push_row(&lab);
    }
    Dataset {
        name: "tiny".into(),
        features: x,
        labels: y,
        feature_names: vec![],
        label_names: vec![],
    }
}
