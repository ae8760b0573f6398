//! The fields of a product section by the names they have in a configuration file, compared
//! and reset one by one on the typed section: what a system's refusal of a field it does not
//! read needs (`crate::system`). Each implementation destructures its section whole, so a
//! field added to a section and not named here does not compile.

use super::{InferenceConfig, LossConfig, SearchConfig};
use cardinal_proj::ProjParams;

/// A section whose fields are compared and reset by name.
pub trait SectionFields {
    /// The names of the fields whose values differ between `self` and `other`, in the order
    /// of their names.
    fn differing(&self, other: &Self) -> Vec<&'static str>;

    /// Sets the field `name` back to `default`'s value (a name the section does not have:
    /// nothing).
    fn reset(&mut self, default: &Self, name: &str);
}

/// [`SectionFields`] for a section of plain fields, each written under its own name.
macro_rules! plain_section {
    ($ty:ident { $($field:ident),+ $(,)? }) => {
        impl SectionFields for $ty {
            fn differing(&self, other: &Self) -> Vec<&'static str> {
                let $ty { $($field),+ } = self;
                let mut out = Vec::new();
                $(
                    if *$field != other.$field {
                        out.push(stringify!($field));
                    }
                )+
                out.sort_unstable();
                out
            }

            fn reset(&mut self, default: &Self, name: &str) {
                match name {
                    $(stringify!($field) => self.$field = default.$field.clone(),)+
                    _ => {}
                }
            }
        }
    };
}

plain_section!(LossConfig {
    iterate_weights,
    f1_weight,
    cardinality_weight,
    unary_bce_weight,
    sum_over_batch,
});

plain_section!(SearchConfig {
    max_rows,
    folds,
    scope,
    scoring,
});

// The projections' parameters are written flat among the section's fields
// (`inference.rounds`): they are compared and reset by their own names.
plain_section!(ProjFields {
    rounds,
    fp_iters,
    smooth_eps,
});

/// [`ProjParams`] under the local trait (a foreign type).
struct ProjFields {
    rounds: usize,
    fp_iters: usize,
    smooth_eps: f64,
}

impl From<ProjParams> for ProjFields {
    fn from(p: ProjParams) -> Self {
        let ProjParams {
            rounds,
            fp_iters,
            smooth_eps,
        } = p;
        Self {
            rounds,
            fp_iters,
            smooth_eps,
        }
    }
}

impl SectionFields for InferenceConfig {
    fn differing(&self, other: &Self) -> Vec<&'static str> {
        let InferenceConfig {
            steps,
            eta,
            momentum,
            train_projection,
            test_projection,
            final_projection,
            proj,
            empty_at,
            expected_f1_count,
        } = self;
        let mut out = ProjFields::from(*proj).differing(&ProjFields::from(other.proj));
        let own = [
            ("steps", *steps != other.steps),
            ("eta", *eta != other.eta),
            ("momentum", *momentum != other.momentum),
            (
                "train_projection",
                *train_projection != other.train_projection,
            ),
            ("test_projection", *test_projection != other.test_projection),
            (
                "final_projection",
                *final_projection != other.final_projection,
            ),
            ("empty_at", *empty_at != other.empty_at),
            (
                "expected_f1_count",
                *expected_f1_count != other.expected_f1_count,
            ),
        ];
        out.extend(own.into_iter().filter(|(_, d)| *d).map(|(name, _)| name));
        out.sort_unstable();
        out
    }

    fn reset(&mut self, default: &Self, name: &str) {
        match name {
            "steps" => self.steps = default.steps,
            "eta" => self.eta = default.eta,
            "momentum" => self.momentum = default.momentum,
            "train_projection" => self.train_projection = default.train_projection,
            "test_projection" => self.test_projection = default.test_projection,
            "final_projection" => self.final_projection = default.final_projection,
            "empty_at" => self.empty_at = default.empty_at,
            "expected_f1_count" => self.expected_f1_count = default.expected_f1_count,
            "rounds" => self.proj.rounds = default.proj.rounds,
            "fp_iters" => self.proj.fp_iters = default.proj.fp_iters,
            "smooth_eps" => self.proj.smooth_eps = default.proj.smooth_eps,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed comparison names exactly the keys whose values differ in the sections'
    /// JSON (an independent route: the configuration file's own form), for one change of
    /// every field and for a reset of each.
    #[test]
    fn differing_fields_are_the_json_keys_that_differ() {
        fn json_diff<T: serde::Serialize>(a: &T, b: &T) -> Vec<String> {
            let (a, b) = (
                serde_json::to_value(a).unwrap(),
                serde_json::to_value(b).unwrap(),
            );
            let (a, b) = (a.as_object().unwrap(), b.as_object().unwrap());
            let mut keys: Vec<String> = a.keys().chain(b.keys()).cloned().collect();
            keys.sort();
            keys.dedup();
            keys.retain(|k| a.get(k) != b.get(k));
            keys
        }
        fn check<T: SectionFields + serde::Serialize + Clone + PartialEq + std::fmt::Debug>(
            default: &T,
            changed: &[T],
        ) {
            for c in changed {
                let names = c.differing(default);
                assert_eq!(names, json_diff(c, default), "{c:?}");
                assert!(!names.is_empty(), "{c:?}");
                let mut back = c.clone();
                for n in &names {
                    back.reset(default, n);
                }
                assert_eq!(&back, default);
            }
        }
        let d = InferenceConfig::default();
        let inference: Vec<InferenceConfig> = vec![
            InferenceConfig {
                steps: 3,
                ..d.clone()
            },
            InferenceConfig {
                eta: 0.1,
                momentum: 0.5,
                ..d.clone()
            },
            InferenceConfig {
                train_projection: cardinal_proj::Method::Exact,
                test_projection: cardinal_proj::Method::Exact,
                final_projection: Some(cardinal_proj::Method::Exact),
                ..d.clone()
            },
            InferenceConfig {
                empty_at: Some(0.5),
                expected_f1_count: true,
                ..d.clone()
            },
            InferenceConfig {
                proj: ProjParams {
                    rounds: 3,
                    fp_iters: 5,
                    smooth_eps: 0.5,
                },
                ..d.clone()
            },
        ];
        check(&d, &inference);
        let d = LossConfig::default();
        let loss = vec![
            LossConfig {
                f1_weight: 2.0,
                sum_over_batch: !d.sum_over_batch,
                ..d.clone()
            },
            LossConfig {
                iterate_weights: super::super::IterateWeights::Last,
                cardinality_weight: 3.0,
                unary_bce_weight: 0.5,
                ..d.clone()
            },
        ];
        check(&d, &loss);
        let d = SearchConfig::default();
        let search = vec![
            SearchConfig::predict(),
            SearchConfig {
                scope: super::super::SearchScope::Pnc,
                scoring: super::super::SearchScoring::F1Samples,
                ..d.clone()
            },
        ];
        check(&d, &search);
    }
}
