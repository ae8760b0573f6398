//! The strict reader of a JSON configuration: objects only, every field known, every value of
//! its field's type; a refusal names the field's dotted path and its line and column in the
//! text read.
//!
//! Serde's derived structs also accept a JSON array, read by position (`[]` would be a whole
//! configuration of defaults); the sections and nested objects therefore go through
//! [`object`], which accepts a JSON object only. The retired fields `inference.mirror` and
//! `inference.learn_eta` are skipped in the stream when `false` (older saved `config.json`
//! files carry them), so that positions stay those of the text as written.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::Config;
use crate::error::{Error, Result};

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
    let de = &mut serde_json::Deserializer::from_str(text);
    let cfg = serde_path_to_error::deserialize::<_, Whole>(&mut *de)
        .map_err(|e| refusal(&e.path().to_string(), &e.into_inner()))?;
    de.end().map_err(|e| refusal(".", &e))?;
    Ok(cfg.0)
}

/// The refusal of the field at `path` (`.` for the top level) for `err`, with the line and
/// column in the text read.
fn refusal(path: &str, err: &serde_json::Error) -> Error {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text);
    let mut column = err.column();
    let subject = match path {
        "." => "the top level".to_owned(),
        p => format!("`{p}`"),
    };
    // A value of the wrong kind where an object is expected (see `object`).
    let shape = message
        .strip_prefix("invalid type: ")
        .and_then(|m| m.rsplit_once(", expected "))
        .filter(|(_, expected)| [OBJECT, OBJECT_OR_NULL].contains(expected));
    let (field, message) = match shape {
        Some((found, expected)) => {
            // serde_json stops before an array's `[` (and after any other value).
            let found = if found == "sequence" {
                column += 1;
                "an array"
            } else {
                found
            };
            (None, format!("{subject} must be {expected}, found {found}"))
        }
        None if path == "." => (None, message.to_string()),
        None => (Some(path.to_owned()), message.to_string()),
    };
    let (line, column) = match err.line() {
        0 => (None, None),
        line => (Some(line), Some(column)),
    };
    Error::InvalidConfig {
        field,
        message,
        line,
        column,
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
