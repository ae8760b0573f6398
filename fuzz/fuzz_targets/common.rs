//! Invariants every successfully parsed dataset must satisfy.

use cardinal_data::data::Dataset;

pub fn check(d: &Dataset) {
    let x = &d.features;
    assert_eq!(x.indptr.len(), x.n_rows + 1);
    assert_eq!(*x.indptr.last().unwrap(), x.indices.len());
    assert_eq!(x.indices.len(), x.values.len());
    for r in 0..x.n_rows {
        let (idx, val) = x.row(r);
        assert!(
            idx.windows(2).all(|w| w[0] < w[1]),
            "unsorted feature indices"
        );
        assert!(
            idx.iter().all(|&i| (i as usize) < x.n_cols),
            "feature index out of range"
        );
        assert!(
            val.iter().all(|v| v.is_finite()),
            "non-finite feature value"
        );
    }
    let y = &d.labels;
    assert_eq!(y.n_rows, x.n_rows);
    assert_eq!(y.indptr.len(), y.n_rows + 1);
    for r in 0..y.n_rows {
        let l = y.row(r);
        assert!(l.windows(2).all(|w| w[0] < w[1]), "unsorted labels");
        assert!(
            l.iter().all(|&i| (i as usize) < y.n_labels),
            "label out of range"
        );
    }
}
