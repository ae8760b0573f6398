//! Runtime choice of a projection operator.

use crate::{
    BoxClip, CappedSimplex, CappedTape, ClipTape, Dykstra, DykstraTape, FastProjection, FpTape,
    ProjError, Projector, Real, Simplex, SimplexTape, SmoothCappedSimplex, SmoothTape,
    SoftPrintedTape, SoftSimplex, SoftSimplexPrinted, SoftTape,
};
use std::fmt;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// Names accepted on the command line and in configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Exact projection onto C(z) ([`CappedSimplex`]).
    Exact,
    /// Exact projection onto B(z) ([`Simplex`]); ignores the upper bound.
    Simplex,
    /// Algorithm 1 as the authors' released code computes it ([`SoftSimplex`], a ReLU inside
    /// the softsign) onto B(z); ignores the upper bound. [`Method::SoftPrinted`] is the printed
    /// algorithm.
    Soft,
    /// Dykstra with the released code's soft simplex projection ([`SoftSimplex`], a ReLU inside
    /// the softsign): the paper's operator as the authors ran it.
    DykstraSoft,
    /// Dykstra with the exact simplex projection.
    DykstraExact,
    /// The differentiable bisection ([`FastProjection`]).
    Fp,
    /// The smoothed (entropic) projection onto C(z) ([`SmoothCappedSimplex`]): exact
    /// feasibility with a dense Jacobian.
    Smooth,
    /// Clipping to `[0, 1]` ([`BoxClip`]), ignoring `z`: no cardinality constraint.
    Clip,
    /// Algorithm 1 as printed in the paper ([`SoftSimplexPrinted`], no ReLU inside the
    /// softsign) onto B(z); ignores the upper bound.
    SoftPrinted,
    /// Dykstra with the printed Algorithm 1 ([`SoftSimplexPrinted`]) as the projection onto B(z).
    DykstraSoftPrinted,
}

impl Method {
    /// Every method, in the order of [`ProjError::UnknownMethod`]'s list.
    pub const ALL: [Method; 10] = [
        Method::Exact,
        Method::Simplex,
        Method::Soft,
        Method::DykstraSoft,
        Method::DykstraExact,
        Method::Fp,
        Method::Smooth,
        Method::Clip,
        Method::SoftPrinted,
        Method::DykstraSoftPrinted,
    ];

    /// The name accepted by [`Method::from_str`](std::str::FromStr::from_str) and printed by
    /// `Display`, e.g. `"dykstra-soft"`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Simplex => "simplex",
            Method::Soft => "soft",
            Method::DykstraSoft => "dykstra-soft",
            Method::DykstraExact => "dykstra-exact",
            Method::Fp => "fp",
            Method::Smooth => "smooth",
            Method::Clip => "clip",
            Method::SoftPrinted => "soft-printed",
            Method::DykstraSoftPrinted => "dykstra-soft-printed",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = ProjError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| ProjError::UnknownMethod {
                name: s.to_string(),
                allowed: Method::ALL.map(Method::name).join("|"),
            })
    }
}

/// Default temperature of [`Method::Smooth`] ([`ProjParams::smooth_eps`]).
pub const DEFAULT_SMOOTH_EPS: f64 = 0.1;

/// The parameters of the operators that take one, each named as in a configuration's
/// `inference` section; a method reads the ones it uses and ignores the others. A new
/// parameter is a field here, its default and its line in [`ProjParams::validate`]: callers
/// pass the struct whole. With the `serde` feature it is (de)serialised field by field, by
/// these names.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields, default))]
pub struct ProjParams {
    /// Dykstra rounds `R` of [`Method::DykstraSoft`], [`Method::DykstraExact`] and
    /// [`Method::DykstraSoftPrinted`], in [`ProjParams::ROUNDS`].
    pub rounds: usize,
    /// Bisection iterations `J` of [`Method::Fp`], in [`ProjParams::FP_ITERS`].
    pub fp_iters: usize,
    /// Temperature `ε` of [`Method::Smooth`], in units of the projected values: finite, > 0.
    pub smooth_eps: f64,
}

impl Default for ProjParams {
    fn default() -> Self {
        Self {
            rounds: 2,
            fp_iters: 20,
            smooth_eps: DEFAULT_SMOOTH_EPS,
        }
    }
}

impl ProjParams {
    /// Allowed [`ProjParams::rounds`]: 0 rounds would return the input unprojected.
    pub const ROUNDS: RangeInclusive<usize> = 1..=1000;
    /// Allowed [`ProjParams::fp_iters`]: 0 iterations would skip the bisection.
    pub const FP_ITERS: RangeInclusive<usize> = 1..=200;

    /// Checks every parameter against its allowed range, whatever the method (a saved
    /// configuration may switch methods later): the first one out of range is refused as
    /// [`ProjError::InvalidParameter`] with its name, value and range.
    pub fn validate(&self) -> Result<(), ProjError> {
        count_in("rounds", self.rounds, Self::ROUNDS)?;
        count_in("fp_iters", self.fp_iters, Self::FP_ITERS)?;
        if !(self.smooth_eps.is_finite() && self.smooth_eps > 0.0) {
            return Err(ProjError::InvalidParameter {
                name: "smooth_eps",
                value: self.smooth_eps,
                allowed: POSITIVE.to_string(),
            });
        }
        Ok(())
    }
}

/// The range of a temperature, as [`ProjError::InvalidParameter`] names it.
pub(crate) const POSITIVE: &str = "a finite number > 0";

/// `Ok` when `value` lies in `range`, else the refusal of parameter `name`.
fn count_in(
    name: &'static str,
    value: usize,
    range: RangeInclusive<usize>,
) -> Result<(), ProjError> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(ProjError::InvalidParameter {
            name,
            value: value as f64,
            allowed: format!("{}..={}", range.start(), range.end()),
        })
    }
}

/// A projector chosen at run time: the operator and the parameters it reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnyProjector {
    /// Which operator [`Projector::forward`] runs.
    pub method: Method,
    /// The parameters; [`AnyProjector::method`] reads those it uses.
    pub params: ProjParams,
}

impl AnyProjector {
    /// A projector of `method` with `params` (those the method does not use are ignored).
    /// Nothing is refused here: a parameter out of its range degenerates the projection (0
    /// rounds return the input, see [`Dykstra::rounds`](crate::Dykstra)), or is reported by
    /// `forward` ([`Method::Smooth`]'s temperature); [`AnyProjector::checked`] refuses them.
    pub fn new(method: Method, params: ProjParams) -> Self {
        Self { method, params }
    }

    /// [`AnyProjector::new`] for callers that take the parameters from a user (the Python
    /// package): refuses parameters out of range ([`ProjParams::validate`]) instead of running
    /// a degenerate projection.
    pub fn checked(method: Method, params: ProjParams) -> Result<Self, ProjError> {
        params.validate()?;
        Ok(Self::new(method, params))
    }
}

/// Tape of [`AnyProjector`]: one variant per method (replaced if the method changes).
#[derive(Debug, Default)]
pub enum AnyTape<F> {
    /// Nothing recorded yet.
    #[default]
    Empty,
    /// Tape of [`Method::Exact`].
    Exact(CappedTape<F>),
    /// Tape of [`Method::Simplex`].
    Simplex(SimplexTape<F>),
    /// Tape of [`Method::Soft`].
    Soft(SoftTape<F>),
    /// Tape of [`Method::DykstraSoft`].
    DykstraSoft(DykstraTape<F, SoftTape<F>>),
    /// Tape of [`Method::DykstraExact`].
    DykstraExact(DykstraTape<F, SimplexTape<F>>),
    /// Tape of [`Method::Fp`].
    Fp(FpTape<F>),
    /// Tape of [`Method::Smooth`].
    Smooth(SmoothTape<F>),
    /// Tape of [`Method::Clip`].
    Clip(ClipTape<F>),
    /// Tape of [`Method::SoftPrinted`].
    SoftPrinted(SoftPrintedTape<F>),
    /// Tape of [`Method::DykstraSoftPrinted`].
    DykstraSoftPrinted(DykstraTape<F, SoftPrintedTape<F>>),
}

macro_rules! tape_as {
    ($tape:expr, $variant:ident) => {{
        if !matches!($tape, AnyTape::$variant(_)) {
            *$tape = AnyTape::$variant(Default::default());
        }
        match $tape {
            AnyTape::$variant(t) => t,
            _ => unreachable!(),
        }
    }};
}

impl<F: Real> Projector<F> for AnyProjector {
    type Tape = AnyTape<F>;

    fn forward(
        &self,
        v: &[F],
        z: F,
        out: &mut [F],
        tape: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        let p = &self.params;
        match self.method {
            Method::Exact => CappedSimplex.forward(v, z, out, tape_as!(tape, Exact)),
            Method::Simplex => Simplex.forward(v, z, out, tape_as!(tape, Simplex)),
            Method::Soft => SoftSimplex.forward(v, z, out, tape_as!(tape, Soft)),
            Method::DykstraSoft => {
                Dykstra::new(p.rounds, SoftSimplex).forward(v, z, out, tape_as!(tape, DykstraSoft))
            }
            Method::DykstraExact => {
                Dykstra::new(p.rounds, Simplex).forward(v, z, out, tape_as!(tape, DykstraExact))
            }
            Method::Fp => {
                FastProjection { iters: p.fp_iters }.forward(v, z, out, tape_as!(tape, Fp))
            }
            Method::Smooth => {
                SmoothCappedSimplex { eps: p.smooth_eps }.forward(v, z, out, tape_as!(tape, Smooth))
            }
            Method::Clip => BoxClip.forward(v, z, out, tape_as!(tape, Clip)),
            Method::SoftPrinted => {
                SoftSimplexPrinted.forward(v, z, out, tape_as!(tape, SoftPrinted))
            }
            Method::DykstraSoftPrinted => Dykstra::new(p.rounds, SoftSimplexPrinted).forward(
                v,
                z,
                out,
                tape_as!(tape, DykstraSoftPrinted),
            ),
        }
    }

    /// # Panics
    /// If `tape` was not filled by a `forward` of the same method.
    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        let p = &self.params;
        match (self.method, tape) {
            (Method::Exact, AnyTape::Exact(t)) => CappedSimplex.vjp(t, g, gv),
            (Method::Simplex, AnyTape::Simplex(t)) => Simplex.vjp(t, g, gv),
            (Method::Soft, AnyTape::Soft(t)) => SoftSimplex.vjp(t, g, gv),
            (Method::DykstraSoft, AnyTape::DykstraSoft(t)) => {
                Dykstra::new(p.rounds, SoftSimplex).vjp(t, g, gv)
            }
            (Method::DykstraExact, AnyTape::DykstraExact(t)) => {
                Dykstra::new(p.rounds, Simplex).vjp(t, g, gv)
            }
            (Method::Fp, AnyTape::Fp(t)) => FastProjection { iters: p.fp_iters }.vjp(t, g, gv),
            (Method::Smooth, AnyTape::Smooth(t)) => {
                SmoothCappedSimplex { eps: p.smooth_eps }.vjp(t, g, gv)
            }
            (Method::Clip, AnyTape::Clip(t)) => BoxClip.vjp(t, g, gv),
            (Method::SoftPrinted, AnyTape::SoftPrinted(t)) => SoftSimplexPrinted.vjp(t, g, gv),
            (Method::DykstraSoftPrinted, AnyTape::DykstraSoftPrinted(t)) => {
                Dykstra::new(p.rounds, SoftSimplexPrinted).vjp(t, g, gv)
            }
            (m, _) => panic!("AnyProjector::vjp: tape was not recorded by a {m} forward"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_refuses_parameters_out_of_range_naming_them() {
        let bad = |params| AnyProjector::checked(Method::Exact, params).unwrap_err();
        let d = ProjParams::default();
        // One parameter out of range per row (a new parameter, a new row).
        type Edit = fn(&mut ProjParams);
        let cases: &[(Edit, &str, f64, &str)] = &[
            (|p| p.rounds = 0, "rounds", 0.0, "1..=1000"),
            (|p| p.fp_iters = 201, "fp_iters", 201.0, "1..=200"),
            (|p| p.smooth_eps = 0.0, "smooth_eps", 0.0, POSITIVE),
        ];
        for &(edit, name, value, allowed) in cases {
            let mut params = d;
            edit(&mut params);
            let want = ProjError::InvalidParameter {
                name,
                value,
                allowed: allowed.to_string(),
            };
            assert_eq!(bad(params), want);
        }
        let nan = bad(ProjParams {
            smooth_eps: f64::NAN,
            ..d
        });
        assert!(nan.to_string().contains("smooth_eps = NaN"), "{nan}");
        let p = AnyProjector::checked(Method::Exact, d).unwrap();
        assert_eq!(p, AnyProjector::new(Method::Exact, d));
        let mut out = [0.0f64; 3];
        let mut tape = AnyTape::default();
        p.forward(&[2.0, 0.0, -1.0], 1.0, &mut out, &mut tape)
            .unwrap();
        assert_eq!(out, [1.0, 0.0, 0.0]);
    }
}
