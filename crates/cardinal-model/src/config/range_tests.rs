//! The range check of every numeric field: each value out of range is refused by name, and no
//! numeric field of a configuration goes without a check.

use std::collections::BTreeSet;

use super::check::MAX_EPOCHS;
use super::*;

/// A change to a valid configuration that `validate` must refuse, naming `field`.
struct BadValue {
    field: &'static str,
    edit: Box<dyn Fn(&mut Config)>,
}

/// One row per value: each of `bad`, and NaN and ±infinity, which no float field accepts.
fn floats(field: &'static str, set: fn(&mut Config, f64), bad: &[f64]) -> Vec<BadValue> {
    let non_finite = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
    bad.iter()
        .chain(&non_finite)
        .map(|&v| BadValue {
            field,
            edit: Box::new(move |c| set(c, v)),
        })
        .collect()
}

/// One row per value of `bad`.
fn counts(field: &'static str, set: fn(&mut Config, usize), bad: &[usize]) -> Vec<BadValue> {
    bad.iter()
        .map(|&v| BadValue {
            field,
            edit: Box::new(move |c| set(c, v)),
        })
        .collect()
}

/// One row.
fn other(field: &'static str, edit: fn(&mut Config)) -> Vec<BadValue> {
    vec![BadValue {
        field,
        edit: Box::new(edit),
    }]
}

/// The rows of `$rows` (`counts` or `floats`) for a field set directly: its path both names
/// and sets it, so the two cannot disagree.
macro_rules! plain {
    ($rows:ident, $first:ident $(. $rest:ident)*, $bad:expr) => {
        $rows(
            concat!(stringify!($first) $(, ".", stringify!($rest))*),
            |c, v| c.$first $(.$rest)* = v,
            $bad,
        )
    };
}

/// Out-of-range values of every checked field, section by section, and of the settings that
/// depend on another field.
fn bad_values() -> Vec<BadValue> {
    const E: usize = MAX_EPOCHS + 1;
    [
        plain!(counts, model.hidden, &[0, 65537]),
        plain!(counts, model.energy_hidden, &[65537]),
        plain!(counts, model.card_hidden, &[0, 65537]),
        plain!(floats, model.dropout, &[-0.1, 1.0]),
        counts(
            "model.counts.max",
            |c, v| c.model.counts = CountRange::Fixed { min: 5, max: v },
            &[0, 4],
        ),
        floats(
            "model.counts.coverage",
            |c, v| c.model.counts = CountRange::Auto { coverage: v },
            &[0.0, -0.5, 1.5],
        ),
        plain!(counts, inference.steps, &[1001]),
        plain!(floats, inference.eta, &[0.0, -1.0]),
        plain!(floats, inference.momentum, &[-0.1, 1.0]),
        counts(
            "inference.rounds",
            |c, v| c.inference.proj.rounds = v,
            &[0, 1001],
        ),
        counts(
            "inference.fp_iters",
            |c, v| c.inference.proj.fp_iters = v,
            &[0, 201],
        ),
        floats(
            "inference.smooth_eps",
            |c, v| c.inference.proj.smooth_eps = v,
            &[0.0, -0.1],
        ),
        floats(
            "inference.empty_at",
            |c, v| c.inference.empty_at = Some(v),
            &[0.0, -0.5, 1.5, f64::NAN],
        ),
        plain!(floats, loss.cardinality_weight, &[-1.0]),
        plain!(floats, loss.f1_weight, &[-1.0]),
        plain!(floats, loss.unary_bce_weight, &[-1.0]),
        floats(
            "loss.cardinality_weight",
            |c, v| {
                c.model.z_mode = ZMode::Argmax;
                c.loss.cardinality_weight = v;
            },
            &[0.0],
        ),
        plain!(floats, train.lr, &[0.0, -1.0]),
        plain!(floats, train.adagrad_init, &[0.0, -1.0]),
        plain!(counts, train.batch_size, &[0, (1 << 20) + 1]),
        plain!(counts, train.epochs, &[E, usize::MAX]),
        counts(
            "train.epochs",
            |c, v| {
                c.train.epochs = v;
                c.train.full_epochs = 0;
            },
            &[0],
        ),
        plain!(counts, train.full_epochs, &[E]),
        plain!(floats, train.dev_fraction, &[-0.1, 1.0, 1.5]),
        plain!(floats, train.weight_decay, &[-1.0]),
        plain!(floats, train.unary_weight_decay_mult, &[-1.0]),
        counts(
            "train.dev_fold.k",
            |c, v| c.train.dev_fold = Some(DevFold { k: v, index: 0 }),
            &[0, 1],
        ),
        counts(
            "train.dev_fold.index",
            |c, v| c.train.dev_fold = Some(DevFold { k: 3, index: v }),
            &[3, 10],
        ),
        plain!(counts, train.patience, &[E]),
        counts(
            "train.patience",
            |c, v| {
                c.train.patience = v;
                c.train.dev_fraction = 0.0;
            },
            &[1],
        ),
        floats(
            "train.decay_reference_cardinality",
            |c, v| c.train.decay_reference_cardinality = Some(v),
            &[0.0, -1.0],
        ),
        floats(
            "train.average_epochs",
            |c, v| c.train.average_epochs = Some(v),
            &[0.0, -1.0],
        ),
        plain!(floats, threshold, &[0.0, 1.0, 2.0, -0.5]),
        other("system", |c| c.system.clear()),
        plain!(counts, search.folds, &[0, 1, 21]),
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[test]
fn every_out_of_range_value_is_refused_by_name() {
    for base in [Config::paper(), Config::predict()] {
        base.validate().unwrap();
        for row in bad_values() {
            let mut cfg = base.clone();
            (row.edit)(&mut cfg);
            let err = match cfg.validate() {
                Ok(()) => panic!("{} accepted in {:?}", row.field, cfg),
                Err(e) => e.to_string(),
            };
            let prefix = format!("{} = ", row.field);
            assert!(
                err.starts_with(&prefix) && err.contains(" is out of range: expected "),
                "{}: {err}",
                row.field
            );
        }
    }
}

/// The paths of the numeric leaves of `value`, arrays by index (`baseline.lr_drops[0]`).
fn numeric_fields(value: &serde_json::Value, path: &str, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Number(_) => {
            out.insert(path.to_owned());
        }
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                numeric_fields(v, &p, out);
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                numeric_fields(v, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Every numeric field of every section, optional and variant ones included, has a row in
/// [`bad_values`], save the seeds, which accept any value, `model.counts.min`, which is
/// bounded through `model.counts.max`, and the projections' parameters, whose ranges
/// `ProjParams::validate` checks (tested in `cardinal-proj`), so that a new one needs no row
/// here: `InferenceConfig::validate` names all their refusals by one mapping, which the rows
/// of the first three test.
#[test]
fn every_numeric_field_has_a_range_check() {
    // `search.max_rows`: any size (0 turns the search off).
    let any_value = [
        "seed",
        "train.split_seed",
        "model.counts.min",
        "search.max_rows",
    ];
    let mut full = Config::predict();
    full.train.dev_fold = Some(DevFold { k: 5, index: 0 });
    let mut fixed = Config::paper();
    fixed.model.counts = CountRange::Fixed { min: 1, max: 4 };
    let mut fields = BTreeSet::new();
    for cfg in [full, fixed] {
        cfg.validate().unwrap();
        numeric_fields(&serde_json::to_value(&cfg).unwrap(), "", &mut fields);
    }
    let checked: BTreeSet<&str> = bad_values().iter().map(|r| r.field).collect();
    let params = serde_json::to_value(cardinal_proj::ProjParams::default()).unwrap();
    let by_proj: Vec<String> = (params.as_object().unwrap().keys())
        .map(|k| format!("inference.{k}"))
        .collect();
    let unchecked: Vec<&String> = fields
        .iter()
        .filter(|f| !checked.contains(f.as_str()) && !any_value.contains(&f.as_str()))
        .filter(|f| !by_proj.contains(f))
        .collect();
    assert!(unchecked.is_empty(), "no range check for {unchecked:?}");
}
