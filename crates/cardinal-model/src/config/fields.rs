//! The fields of a product section as types (`InferenceField`, `LossField`, `SearchField`),
//! each named as in a configuration file, compared and reset one by one on the typed section:
//! what a system's declaration of the fields it reads, and its refusal of the others, are made
//! of (`cardinal::system`). Each implementation destructures its section whole, so a field
//! added to a section and not named here does not compile, and a field a system declares
//! that the section lacks does not compile either.

use super::{InferenceConfig, LossConfig, SearchConfig};
use cardinal_proj::ProjParams;

/// A field of a section, by its name in a configuration file.
pub trait Field: Copy + Eq + std::fmt::Debug + 'static {
    /// The section's name (`inference`).
    const SECTION: &'static str;
    /// Every field of the section, in the order of their names.
    const ALL: &'static [Self];
    /// Its name in the section (`steps`).
    fn name(self) -> &'static str;
}

/// A section whose fields are compared and reset one by one.
pub trait SectionFields {
    /// The section's fields.
    type Field: Field;

    /// The fields whose values differ between `self` and `other`, in the order of their
    /// names.
    fn differing(&self, other: &Self) -> Vec<Self::Field>;

    /// Sets `field` back to `default`'s value.
    fn reset(&mut self, default: &Self, field: Self::Field);
}

/// A field enum of a section: one variant per field, named as in the file, in the order of
/// their names, with its [`Field`] implementation.
#[macro_export]
#[doc(hidden)]
macro_rules! field_enum {
    ($(#[$doc:meta])* $name:ident, $section:literal { $($field:ident => $variant:ident),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $(
                #[doc = concat!("`", $section, ".", stringify!($field), "`")]
                $variant,
            )+
        }

        impl $crate::config::Field for $name {
            const SECTION: &'static str = $section;
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => stringify!($field),)+
                }
            }
        }
    };
}

/// A section of plain fields, each written under its own name: its field enum (one variant
/// per field, in the order of their names) and its [`SectionFields`], which destructures the
/// section whole, so that a field added to the section and not named here does not compile,
/// nor does a variant the section lacks. For the sections of other crates too
/// (`cardinal-paper`'s `baseline`).
///
/// ```
/// use cardinal_model::config::{Field, SectionFields};
///
/// #[derive(Debug, Clone, PartialEq, Default)]
/// struct Toy { rate: f64, steps: Vec<usize> }
///
/// cardinal_model::plain_section!(
///     /// A field of the `toy` section.
///     Toy => ToyField, "toy" { rate => Rate, steps => Steps }
/// );
///
/// let changed = Toy { rate: 0.5, ..Toy::default() };
/// assert_eq!(changed.differing(&Toy::default()), [ToyField::Rate]);
/// assert_eq!(ToyField::Steps.name(), "steps");
/// ```
#[macro_export]
macro_rules! plain_section {
    ($(#[$doc:meta])* $ty:ident => $name:ident, $section:literal { $($field:ident => $variant:ident),+ $(,)? }) => {
        $crate::field_enum!($(#[$doc])* $name, $section { $($field => $variant),+ });

        impl $crate::config::SectionFields for $ty {
            type Field = $name;

            fn differing(&self, other: &Self) -> Vec<$name> {
                let $ty { $($field),+ } = self;
                $crate::config::named_order([$(($name::$variant, *$field != other.$field)),+])
            }

            fn reset(&mut self, default: &Self, field: $name) {
                match field {
                    $($name::$variant => self.$field = default.$field.clone(),)+
                }
            }
        }
    };
}

crate::field_enum!(
    /// A field of the `inference` section (a projection's parameter by its own name,
    /// `rounds`, as the file writes it).
    InferenceField, "inference" {
        empty_at => EmptyAt,
        eta => Eta,
        expected_f1_count => ExpectedF1Count,
        final_projection => FinalProjection,
        fp_iters => FpIters,
        momentum => Momentum,
        rounds => Rounds,
        smooth_eps => SmoothEps,
        steps => Steps,
        test_projection => TestProjection,
        train_projection => TrainProjection,
    }
);

crate::plain_section!(
    /// A field of the `loss` section.
    LossConfig => LossField, "loss" {
        cardinality_weight => CardinalityWeight,
        f1_weight => F1Weight,
        iterate_weights => IterateWeights,
        sum_over_batch => SumOverBatch,
        unary_bce_weight => UnaryBceWeight,
    }
);

crate::plain_section!(
    /// A field of the `search` section.
    SearchConfig => SearchField, "search" {
        folds => Folds,
        max_rows => MaxRows,
        scope => Scope,
        scoring => Scoring,
    }
);

/// The fields among `pairs` (each with whether it differs), in the order of their names
/// ([`plain_section!`]'s).
#[doc(hidden)]
pub fn named_order<F: Field>(pairs: impl IntoIterator<Item = (F, bool)>) -> Vec<F> {
    let mut out: Vec<F> = pairs
        .into_iter()
        .filter(|(_, d)| *d)
        .map(|(f, _)| f)
        .collect();
    out.sort_unstable_by_key(|f| f.name());
    out
}

impl SectionFields for InferenceConfig {
    type Field = InferenceField;

    fn differing(&self, other: &Self) -> Vec<InferenceField> {
        use InferenceField as F;
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
        // The projections' parameters are written flat among the section's fields.
        let ProjParams {
            rounds,
            fp_iters,
            smooth_eps,
        } = proj;
        let p = &other.proj;
        named_order([
            (F::Steps, *steps != other.steps),
            (F::Eta, *eta != other.eta),
            (F::Momentum, *momentum != other.momentum),
            (
                F::TrainProjection,
                *train_projection != other.train_projection,
            ),
            (F::TestProjection, *test_projection != other.test_projection),
            (
                F::FinalProjection,
                *final_projection != other.final_projection,
            ),
            (F::Rounds, *rounds != p.rounds),
            (F::FpIters, *fp_iters != p.fp_iters),
            (F::SmoothEps, *smooth_eps != p.smooth_eps),
            (F::EmptyAt, *empty_at != other.empty_at),
            (
                F::ExpectedF1Count,
                *expected_f1_count != other.expected_f1_count,
            ),
        ])
    }

    fn reset(&mut self, default: &Self, field: InferenceField) {
        use InferenceField as F;
        match field {
            F::Steps => self.steps = default.steps,
            F::Eta => self.eta = default.eta,
            F::Momentum => self.momentum = default.momentum,
            F::TrainProjection => self.train_projection = default.train_projection,
            F::TestProjection => self.test_projection = default.test_projection,
            F::FinalProjection => self.final_projection = default.final_projection,
            F::EmptyAt => self.empty_at = default.empty_at,
            F::ExpectedF1Count => self.expected_f1_count = default.expected_f1_count,
            F::Rounds => self.proj.rounds = default.proj.rounds,
            F::FpIters => self.proj.fp_iters = default.proj.fp_iters,
            F::SmoothEps => self.proj.smooth_eps = default.proj.smooth_eps,
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
            let empty = serde_json::Map::new();
            let (a, b) = (a.as_object().unwrap_or(&empty), b.as_object().unwrap());
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
            // The fields are the keys the section is written with (a field left out at its
            // default is written once changed), in the order of their names.
            let empty = serde_json::json!({});
            let mut keys: Vec<String> = std::iter::once(default)
                .chain(changed)
                .flat_map(|c| json_diff(&empty, &serde_json::to_value(c).unwrap()))
                .collect();
            keys.sort();
            keys.dedup();
            let all: Vec<&str> = T::Field::ALL.iter().map(|f| f.name()).collect();
            assert_eq!(all, keys, "{}", T::Field::SECTION);
            for c in changed {
                let fields = c.differing(default);
                let names: Vec<&str> = fields.iter().map(|f| f.name()).collect();
                assert_eq!(names, json_diff(c, default), "{c:?}");
                assert!(!names.is_empty(), "{c:?}");
                let mut back = c.clone();
                for f in fields {
                    back.reset(default, f);
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
