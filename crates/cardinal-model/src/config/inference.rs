//! The unrolled projected gradient ascent: steps, step size and the projections it uses.
//!
//! The projections' parameters are `cardinal-proj`'s [`ProjParams`], held whole in
//! [`InferenceConfig::proj`] and written flat among the section's fields (`inference.rounds`),
//! as before they moved there: a new parameter changes `cardinal-proj` only.

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::check::{check, count, out_of_range, positive, rate};
use crate::error::{Error, Result};
use cardinal_proj::{Method, ProjError, ProjParams};

/// The unrolled projected gradient ascent. In JSON, the fields of `proj` sit flat among the
/// others (`"rounds": 2`), as they did before `ProjParams` held them.
#[derive(Debug, Clone, PartialEq)]
pub struct InferenceConfig {
    /// Number of unrolled steps `T`.
    pub steps: usize,
    /// Step size `η` of the inner ascent.
    pub eta: f64,
    /// Momentum of the inner ascent.
    pub momentum: f64,
    /// Projection used while training (exact, simplex, soft, dykstra-soft, dykstra-exact, fp,
    /// smooth, clip; soft-printed and dykstra-soft-printed: the paper's Algorithm 1 as printed,
    /// where soft and dykstra-soft are the released code's variant).
    pub train_projection: Method,
    /// Projection used at evaluation and prediction.
    pub test_projection: Method,
    /// A projection applied once more to the last iterate, in training and at test (`null`:
    /// none, the paper). `exact` after soft Dykstra steps makes `y_T` feasible.
    pub final_projection: Option<Method>,
    /// The parameters of the projections above: Dykstra rounds `rounds` (`R`), bisection
    /// iterations `fp_iters` (`J`) of FP, temperature `smooth_eps` (`ε`, in units of `y`) of
    /// the smoothed projection. Its fields are this section's (`inference.rounds`).
    pub proj: ProjParams,
    /// "No labels" as a prediction: at inference, a row whose count network gives the count 0
    /// a probability of at least this value gets `z = 0`, so that `y_T = 0` (on `C(0)`) and
    /// its label set is empty (`null`: never; the count 0 must be in the model's count range).
    /// Predicting the empty set is the better decision for example-F1 whenever `P(0) > 1/2`
    /// and an empty prediction for an empty gold set scores 1: any non-empty prediction then
    /// scores at most `1 − P(0)` in expectation. Training is unchanged.
    pub empty_at: Option<f64>,
    /// At inference, the count `z` of a row is the set size with the highest expected
    /// example-F1 (`crate::model::expected_f1`) under the count network's distribution and the
    /// unary marginals `σ(u)`, instead of the distribution's mean (an empty prediction for an
    /// empty gold set counting 1, this also decides "no labels", over `empty_at`). `y_T`
    /// then lies on `C(z)` for that integer `z`. Training is unchanged. Off unless set (and
    /// then not written), so that configurations without it read and write as before.
    pub expected_f1_count: bool,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        Self {
            steps: 15,
            eta: 0.005,
            momentum: 0.9,
            train_projection: Method::DykstraSoft,
            test_projection: Method::DykstraSoft,
            final_projection: None,
            proj: ProjParams::default(),
            empty_at: None,
            expected_f1_count: false,
        }
    }
}

/// How [`InferenceConfig`] is written and read (serde's remote derive, which fails to compile
/// if a field is missing here). `proj` is written flat and skipped by this derived reader:
/// `Deserialize for InferenceConfig` reads its fields as they come.
#[derive(Serialize, Deserialize)]
#[serde(
    remote = "InferenceConfig",
    deny_unknown_fields,
    default = "InferenceConfig::default"
)]
struct Wire {
    steps: usize,
    eta: f64,
    momentum: f64,
    #[serde(with = "method_name")]
    train_projection: Method,
    #[serde(with = "method_name")]
    test_projection: Method,
    #[serde(with = "opt_method_name")]
    final_projection: Option<Method>,
    #[serde(flatten, skip_deserializing)]
    proj: ProjParams,
    #[serde(default)]
    empty_at: Option<f64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    expected_f1_count: bool,
}

impl InferenceConfig {
    /// Checks every field against its allowed range; the error names the field
    /// (`inference.eta`), its value and the range.
    pub fn validate(&self) -> Result<()> {
        count("inference.steps", self.steps, 0, 1000)?;
        positive("inference.eta", self.eta)?;
        rate("inference.momentum", self.momentum)?;
        if let Some(p) = self.empty_at {
            check(
                p > 0.0 && p <= 1.0,
                "inference.empty_at",
                p,
                "(0, 1] or null",
            )?;
        }
        // Checked whatever the projections: a saved configuration may switch to `smooth` later.
        self.proj.validate().map_err(|e| match e {
            ProjError::InvalidParameter {
                name,
                value,
                allowed,
            } => out_of_range(&format!("inference.{name}"), value, &allowed),
            other => Error::Projection(other),
        })
    }
}

impl Serialize for InferenceConfig {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        Wire::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for InferenceConfig {
    /// The derived reader of every field but `proj`, whose fields are read as they come in the
    /// same object, each at its place in the text (a flattened field would be read after the
    /// object, and a refusal within it placed at the object's end, not at the field).
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(SectionVisitor)
    }
}

/// Reads the `inference` object through [`Split`].
struct SectionVisitor;

impl<'de> Visitor<'de> for SectionVisitor {
    type Value = InferenceConfig;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Self::Value, A::Error> {
        let written = serde_json::to_value(ProjParams::default()).map_err(de::Error::custom)?;
        let mut split = Split {
            map,
            own: &[],
            // The parameters' names, as written: `ProjParams` writes every field.
            names: written
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default(),
            read: serde_json::Map::new(),
        };
        let mut cfg = Wire::deserialize(&mut split)?;
        // Only values that `ProjParams` wrote: the parameters left out keep their defaults.
        cfg.proj = serde_json::from_value(serde_json::Value::Object(split.read))
            .map_err(de::Error::custom)?;
        Ok(cfg)
    }
}

/// The entries of the `inference` object for the derived reader, less the parameters of
/// [`ProjParams`], which are read aside into `read` as they come.
struct Split<A> {
    /// The object's entries.
    map: A,
    /// The derived reader's fields, from its `deserialize_struct` call.
    own: &'static [&'static str],
    /// The parameters' names.
    names: Vec<String>,
    /// The parameters read so far, as `ProjParams` writes them.
    read: serde_json::Map<String, serde_json::Value>,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for &mut Split<A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> std::result::Result<V::Value, A::Error> {
        v.visit_map(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        v: V,
    ) -> std::result::Result<V::Value, A::Error> {
        self.own = fields;
        v.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Split<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        mut seed: K,
    ) -> std::result::Result<Option<K::Value>, A::Error> {
        loop {
            let key = KeyOrParam {
                seed,
                own: self.own,
                names: &self.names,
                read: &self.read,
            };
            match self.map.next_key_seed(key)? {
                None => return Ok(None),
                Some(Ok(key)) => return Ok(Some(key)),
                Some(Err((name, unused))) => {
                    let value = self.map.next_value_seed(ParamValue(&name))?;
                    self.read.insert(name, value);
                    seed = unused;
                }
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// Reads a key: `Ok` with what `seed` makes of a field of the derived reader, `Err` with the
/// name (and `seed`, unused) for a parameter; refuses a name that is neither, and a parameter
/// given twice, from within the key's read so that the refusal is placed at the key.
struct KeyOrParam<'a, K> {
    /// The derived reader's key reader.
    seed: K,
    /// The derived reader's fields.
    own: &'static [&'static str],
    /// The parameters' names.
    names: &'a [String],
    /// The parameters read so far.
    read: &'a serde_json::Map<String, serde_json::Value>,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for KeyOrParam<'_, K> {
    type Value = std::result::Result<K::Value, (String, K)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        let name = String::deserialize(d)?;
        if self.read.contains_key(&name) {
            return Err(de::Error::custom(format_args!("duplicate field `{name}`")));
        }
        if self.names.contains(&name) {
            return Ok(Err((name, self.seed)));
        }
        if !self.own.contains(&name.as_str()) {
            // Serde's wording, listing the parameters with the derived reader's fields.
            let known: Vec<String> = (self.own.iter().map(|n| n.to_string()))
                .chain(self.names.iter().cloned())
                .map(|n| format!("`{n}`"))
                .collect();
            return Err(de::Error::custom(format_args!(
                "unknown field `{name}`, expected one of {}",
                known.join(", ")
            )));
        }
        let name: de::value::StringDeserializer<D::Error> = name.into_deserializer();
        self.seed.deserialize(name).map(Ok)
    }
}

/// Reads the value of the parameter it names, checked by `ProjParams`' own reader (so that
/// a value of the wrong type is refused at its place), as `ProjParams` writes it.
struct ParamValue<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for ParamValue<'_> {
    type Value = serde_json::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        let one = OneEntry {
            name: Some(self.0),
            value: Some(d),
        };
        let params = ProjParams::deserialize(MapAccessDeserializer::new(one))?;
        let mut written = serde_json::to_value(params).map_err(de::Error::custom)?;
        Ok(written[self.0].take())
    }
}

/// An object of one entry, `name`: `value`, whose value is read from the text.
struct OneEntry<'a, D> {
    /// The entry's name, until read.
    name: Option<&'a str>,
    /// The entry's value, until read.
    value: Option<D>,
}

impl<'de, D: Deserializer<'de>> MapAccess<'de> for OneEntry<'_, D> {
    type Error = D::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, D::Error> {
        self.name
            .take()
            .map(|n| seed.deserialize(de::value::StrDeserializer::new(n)))
            .transpose()
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> std::result::Result<V::Value, D::Error> {
        match self.value.take() {
            Some(d) => seed.deserialize(d),
            None => Err(de::Error::custom("a value read twice")),
        }
    }
}

/// (De)serialises a projection [`Method`] by its command-line name.
mod method_name {
    use cardinal_proj::Method;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(m: &Method, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(m)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Method, D::Error> {
        let name = String::deserialize(d)?;
        name.parse()
            .map_err(|e| serde::de::Error::custom(format!("{e}")))
    }
}

/// (De)serialises an optional projection [`Method`] by its name (`null` for none).
mod opt_method_name {
    use cardinal_proj::Method;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(m: &Option<Method>, s: S) -> Result<S::Ok, S::Error> {
        match m {
            Some(m) => s.collect_str(m),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Method>, D::Error> {
        let name: Option<String> = Option::deserialize(d)?;
        name.map(|n| {
            n.parse()
                .map_err(|e| serde::de::Error::custom(format!("{e}")))
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projections_are_written_by_name() {
        let cfg = InferenceConfig {
            final_projection: Some(Method::Smooth),
            ..InferenceConfig::default()
        };
        let json = serde_json::to_value(&cfg).unwrap();
        assert_eq!(json["train_projection"], "dykstra-soft");
        assert_eq!(json["final_projection"], "smooth");
        let back: InferenceConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back, cfg);
        let none = serde_json::to_value(InferenceConfig::default()).unwrap();
        assert!(none["final_projection"].is_null());
    }

    /// The parameters are written flat, in their place among the section's fields, as before
    /// they moved to `ProjParams`, and read back from there.
    #[test]
    fn the_projection_parameters_are_written_flat_and_read_back() {
        let written = serde_json::to_string(&InferenceConfig::default()).unwrap();
        let params = serde_json::to_string(&ProjParams::default()).unwrap();
        let params = &params[1..params.len() - 1];
        // The three of `config.json` until now, as it wrote them (a new one follows them).
        assert!(
            params.starts_with(r#""rounds":2,"fp_iters":20,"smooth_eps":0.1"#),
            "{params}"
        );
        let before = r#""steps":15,"eta":0.005,"momentum":0.9,"train_projection":"dykstra-soft","#
            .to_owned()
            + r#""test_projection":"dykstra-soft","final_projection":null"#;
        assert_eq!(written, format!(r#"{{{before},{params},"empty_at":null}}"#));
        let mut cfg = InferenceConfig {
            expected_f1_count: true,
            ..InferenceConfig::default()
        };
        (cfg.proj.rounds, cfg.proj.fp_iters, cfg.proj.smooth_eps) = (7, 3, 0.25);
        let text = serde_json::to_string_pretty(&cfg).unwrap();
        assert_eq!(serde_json::from_str::<InferenceConfig>(&text).unwrap(), cfg);
        // A parameter left out keeps its default, wherever the others are.
        let some: InferenceConfig =
            serde_json::from_str(r#"{"fp_iters": 3, "steps": 2, "smooth_eps": 0.5}"#).unwrap();
        let want = InferenceConfig {
            steps: 2,
            proj: ProjParams {
                fp_iters: 3,
                smooth_eps: 0.5,
                ..ProjParams::default()
            },
            ..InferenceConfig::default()
        };
        assert_eq!(some, want);
    }

    #[test]
    fn unknown_repeated_and_mistyped_keys_are_refused() {
        let err = |text| {
            serde_json::from_str::<InferenceConfig>(text)
                .unwrap_err()
                .to_string()
        };
        let unknown = err(r#"{"steps": 2, "round": 3}"#);
        assert!(
            unknown.starts_with("unknown field `round`, expected one of `steps`, ")
                && [
                    "`expected_f1_count`",
                    "`rounds`",
                    "`fp_iters`",
                    "`smooth_eps`"
                ]
                .iter()
                .all(|n| unknown.contains(n)),
            "{unknown}"
        );
        let twice = err(r#"{"rounds": 2, "steps": 2, "rounds": 3}"#);
        assert!(twice.starts_with("duplicate field `rounds`"), "{twice}");
        let mistyped = err(r#"{"smooth_eps": "0.1"}"#);
        assert!(
            mistyped.starts_with("invalid type: string \"0.1\", expected f64"),
            "{mistyped}"
        );
    }

    /// A parameter out of range is refused as the section's field, by one mapping from
    /// `ProjParams::validate`'s refusal.
    #[test]
    fn a_parameter_out_of_range_is_named_as_an_inference_field() {
        let refusal = |proj| {
            let cfg = InferenceConfig {
                proj,
                ..InferenceConfig::default()
            };
            cfg.validate().unwrap_err().to_string()
        };
        let d = ProjParams::default();
        assert_eq!(
            refusal(ProjParams {
                smooth_eps: -0.5,
                ..d
            }),
            "inference.smooth_eps = -0.5 is out of range: expected a finite number > 0"
        );
        assert_eq!(
            refusal(ProjParams { rounds: 1001, ..d }),
            "inference.rounds = 1001 is out of range: expected 1..=1000"
        );
        assert_eq!(
            refusal(ProjParams { fp_iters: 0, ..d }),
            "inference.fp_iters = 0 is out of range: expected 1..=200"
        );
    }
}
