//! The strict reader of a JSON configuration: objects only, every field known, every value of
//! its field's type; a refusal names the field's dotted path and its line and column in the
//! text read.
//!
//! Serde's derived structs also accept a JSON array, read by position (`[]` would be a whole
//! configuration of defaults); the sections and nested objects therefore go through
//! [`object`], which accepts a JSON object only. The retired fields `inference.mirror` and
//! `inference.learn_eta` are skipped in the stream when `false` (older saved `config.json`
//! files carry them), so that positions stay those of the text as written.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::Config;
use crate::error::{ConfigProblem, Error, Result};

/// What [`object`] expects, as a refusal names it.
const OBJECT: &str = "an object";
/// What [`object_or_null`] expects, as a refusal names it.
const OBJECT_OR_NULL: &str = "an object or null";
/// Fields of `inference` that no longer exist and still load when `false`.
const RETIRED_INFERENCE: &[&str] = &["mirror", "learn_eta"];

/// Reads `text` as a complete or partial configuration (fields left out take the `paper`
/// preset's values), without the range checks of [`Config::validate`]. A refusal reads
/// ``invalid configuration at `PATH`: MESSAGE at line L, column C``, or ``invalid
/// configuration: `PATH` must be an object, found an array at line L, column C``, with the
/// position in `text`.
pub(super) fn read(text: &str) -> Result<Config> {
    /// The whole configuration, itself an object.
    struct Whole(Config);
    impl<'de> Deserialize<'de> for Whole {
        fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            object(d).map(Whole)
        }
    }
    EXPECTED.set(None);
    let de = &mut serde_json::Deserializer::from_str(text);
    let cfg = serde_path_to_error::deserialize::<_, Whole>(&mut *de).map_err(|e| {
        let found = EXPECTED
            .take()
            .and_then(|expected| not_an_object(text, e.path(), expected));
        refusal(&e.path().to_string(), e.into_inner(), found)
    })?;
    de.end().map_err(|e| refusal(".", e, None))?;
    Ok(cfg.0)
}

thread_local! {
    /// What the last [`ObjectVisitor`] asked what it expects had to say: serde asks a visitor
    /// that only to word a value of the wrong kind. This is how that refusal is told from the
    /// others without reading the JSON reader's words.
    static EXPECTED: Cell<Option<&'static str>> = const { Cell::new(None) };
}

/// What was found at `path` of `text` where `expected` (an object) was, in words, if it is
/// not what was expected (a stale record of a refusal that did not stand is no answer).
fn not_an_object(
    text: &str,
    path: &serde_path_to_error::Path,
    expected: &'static str,
) -> Option<(&'static str, String)> {
    use serde_path_to_error::Segment;
    let whole: serde_json::Value = serde_json::from_str(text).ok()?;
    let mut at = &whole;
    for segment in path {
        at = match segment {
            Segment::Map { key } => at.get(key)?,
            Segment::Seq { index } => at.get(index)?,
            Segment::Enum { .. } => at,
            Segment::Unknown => return None,
        };
    }
    let found = match at {
        serde_json::Value::Object(_) => return None,
        serde_json::Value::Null if expected == OBJECT_OR_NULL => return None,
        serde_json::Value::Array(_) => "an array".to_owned(),
        serde_json::Value::Null => "null".to_owned(),
        serde_json::Value::Bool(b) => format!("boolean `{b}`"),
        serde_json::Value::Number(n) if n.is_f64() => format!("floating point `{n}`"),
        serde_json::Value::Number(n) => format!("integer `{n}`"),
        serde_json::Value::String(s) => format!("string {s:?}"),
    };
    Some((expected, found))
}

/// The refusal of the field at `path` (`.` for the top level) for `err`, with the line and
/// column in the text read; `found` is what was found where an object was expected, if that
/// is the refusal.
fn refusal(path: &str, err: serde_json::Error, found: Option<(&'static str, String)>) -> Error {
    let column = err.column();
    let (line, column) = match err.line() {
        0 => (None, None),
        line => (Some(line), Some(column)),
    };
    let subject = match path {
        "." => "the top level".to_owned(),
        p => format!("`{p}`"),
    };
    match found {
        Some((expected, found)) => Error::InvalidConfig {
            field: None,
            // serde_json places a value of the wrong kind after it, an array before its `[`.
            column: column.map(|c| c + usize::from(found == "an array")),
            problem: Box::new(ConfigProblem::NotAnObject {
                subject,
                expected,
                found,
            }),
            line,
        },
        None => Error::InvalidConfig {
            field: Some(path.to_owned()).filter(|p| p != "."),
            problem: Box::new(ConfigProblem::Json(err)),
            line,
            column,
        },
    }
}

/// Deserialises a section or a nested object (`#[serde(deserialize_with)]`): a JSON object,
/// never an array read by position.
pub(super) fn object<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    d.deserialize_map(ObjectVisitor::<T>::new(OBJECT, &[]))
}

/// [`object`] for an optional object: `null` is `None`.
pub(super) fn object_or_null<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    /// `null`, or an object.
    struct OrNull<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for OrNull<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(OBJECT_OR_NULL)
        }
        fn visit_none<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(
            self,
            d: D,
        ) -> std::result::Result<Self::Value, D::Error> {
            d.deserialize_map(ObjectVisitor::<T>::new(OBJECT_OR_NULL, &[]))
                .map(Some)
        }
    }
    d.deserialize_option(OrNull(PhantomData))
}

/// [`object`] for the `inference` section, whose retired fields load when `false`.
pub(super) fn inference<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    d.deserialize_map(ObjectVisitor::<T>::new(OBJECT, RETIRED_INFERENCE))
}

/// Reads a JSON object into `T` (a derived struct or tagged enum), skipping `retired` fields.
struct ObjectVisitor<T> {
    /// What a refusal says was expected.
    expected: &'static str,
    /// Fields skipped when `false` and refused otherwise.
    retired: &'static [&'static str],
    /// The type read.
    target: PhantomData<T>,
}

impl<T> ObjectVisitor<T> {
    fn new(expected: &'static str, retired: &'static [&'static str]) -> Self {
        Self {
            expected,
            retired,
            target: PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        EXPECTED.set(Some(self.expected));
        f.write_str(self.expected)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<T, A::Error> {
        if self.retired.is_empty() {
            T::deserialize(MapAccessDeserializer::new(map))
        } else {
            T::deserialize(MapAccessDeserializer::new(Retiring {
                map,
                retired: self.retired,
            }))
        }
    }
}

/// The entries of a JSON object less its retired fields, which are checked to be `false`.
struct Retiring<A> {
    /// The object's entries.
    map: A,
    /// Names of the retired fields.
    retired: &'static [&'static str],
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Retiring<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        mut seed: K,
    ) -> std::result::Result<Option<K::Value>, A::Error> {
        loop {
            let key = KeyOrRetired {
                seed,
                retired: self.retired,
            };
            match self.map.next_key_seed(key)? {
                None => return Ok(None),
                Some(Ok(key)) => return Ok(Some(key)),
                Some(Err(unused)) => {
                    self.map.next_value_seed(RetiredValue)?;
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

/// Reads a key: `Ok` with what `seed` makes of it, or `Err(seed)` for a retired field.
struct KeyOrRetired<K> {
    /// The reader of a field's name.
    seed: K,
    /// Names of the retired fields.
    retired: &'static [&'static str],
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for KeyOrRetired<K> {
    type Value = std::result::Result<K::Value, K>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        let name = String::deserialize(d)?;
        if self.retired.contains(&name.as_str()) {
            return Ok(Err(self.seed));
        }
        let name: de::value::StringDeserializer<D::Error> = name.into_deserializer();
        self.seed.deserialize(name).map(Ok)
    }
}

/// The value of a retired field: `false`, or refused (from within the reader's call, so that
/// the refusal is placed at the value).
struct RetiredValue;

impl RetiredValue {
    fn refuse<E: de::Error>(found: impl fmt::Display) -> std::result::Result<(), E> {
        Err(E::custom(format!(
            "{found} is no longer supported (only false, the only value that any preset or \
             Table 1 row used)"
        )))
    }
}

impl<'de> DeserializeSeed<'de> for RetiredValue {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RetiredValue {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("false")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<(), E> {
        if v {
            Self::refuse(v)
        } else {
            Ok(())
        }
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<(), E> {
        Self::refuse(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<(), E> {
        Self::refuse(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<(), E> {
        Self::refuse(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<(), E> {
        Self::refuse(format_args!("{v:?}"))
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        Self::refuse("null")
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> std::result::Result<(), A::Error> {
        Self::refuse("an array")
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> std::result::Result<(), A::Error> {
        Self::refuse("an object")
    }
}
