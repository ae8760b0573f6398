//! The one way a configuration check reports a refusal: [`Error::OutOfRange`], which reads
//! `FIELD = VALUE is out of range: expected RANGE`, with `FIELD` the full dotted path
//! (`inference.smooth_eps`). The product's sections use these helpers, and so do the Table 1
//! systems' (`baseline.*`, in `cardinal-paper`); the Section 6 model (`cardinal-segment`) writes
//! its refusals (`multi_target.*`) in the same format.

use std::fmt::Display;

use crate::error::{Error, Result};

/// Largest count of epochs any epoch-valued field accepts: far beyond any schedule in use
/// (DVN's 375 is the longest), and small enough that sums of epoch counts cannot overflow.
pub const MAX_EPOCHS: usize = 100_000;

/// The refusal of `value` for `field`, which expects `range`.
pub fn out_of_range(field: &str, value: impl Display, range: &str) -> Error {
    Error::OutOfRange {
        field: field.to_string(),
        value: value.to_string(),
        allowed: range.to_string(),
    }
}

/// `Ok` when `ok`, else the refusal of `value` for `field`.
pub fn check(ok: bool, field: &str, value: impl Display, range: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(out_of_range(field, value, range))
    }
}

/// `value` is a finite number above 0.
pub fn positive(field: &str, value: f64) -> Result<()> {
    check(
        value.is_finite() && value > 0.0,
        field,
        value,
        "a finite number > 0",
    )
}

/// `value` is a finite number of at least 0.
pub fn non_negative(field: &str, value: f64) -> Result<()> {
    check(
        value.is_finite() && value >= 0.0,
        field,
        value,
        "a finite number >= 0",
    )
}

/// `value`, when given, is a finite number above 0.
pub fn positive_or_null(field: &str, value: Option<f64>) -> Result<()> {
    match value {
        Some(v) => check(
            v.is_finite() && v > 0.0,
            field,
            v,
            "a finite number > 0, or null",
        ),
        None => Ok(()),
    }
}

/// `value` is a rate in `[0, 1)` (which also refuses NaN).
pub fn rate(field: &str, value: f64) -> Result<()> {
    check((0.0..1.0).contains(&value), field, value, "[0, 1)")
}

/// `value` lies in `min..=max`.
pub fn count(field: &str, value: usize, min: usize, max: usize) -> Result<()> {
    check(
        (min..=max).contains(&value),
        field,
        value,
        &format!("{min}..={max}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_field_value_and_range() {
        let err = out_of_range("inference.eta", -1.0, "a finite number > 0").to_string();
        assert_eq!(
            err,
            "inference.eta = -1 is out of range: expected a finite number > 0"
        );
        assert!(positive("f", f64::NAN).is_err());
        assert!(positive("f", f64::INFINITY).is_err());
        assert!(positive("f", 0.0).is_err());
        assert!(non_negative("f", 0.0).is_ok());
        assert!(non_negative("f", f64::NEG_INFINITY).is_err());
        assert!(positive_or_null("f", None).is_ok());
        assert!(positive_or_null("f", Some(f64::NAN)).is_err());
        assert!(rate("f", 1.0).is_err() && rate("f", f64::NAN).is_err() && rate("f", 0.0).is_ok());
        let err = count("model.hidden", 0, 1, 65536).unwrap_err().to_string();
        assert_eq!(err, "model.hidden = 0 is out of range: expected 1..=65536");
    }
}
