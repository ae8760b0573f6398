//! Runtime choice of a projection operator.

use crate::{
    BoxClip, CappedSimplex, CappedTape, ClipTape, Dykstra, DykstraTape, FastProjection, FpTape,
    ProjError, Projector, Real, Simplex, SimplexTape, SmoothCappedSimplex, SmoothTape, SoftSimplex,
    SoftTape,
};
use std::fmt;
use std::str::FromStr;

/// Names accepted on the command line and in configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Exact projection onto C(z) ([`CappedSimplex`]).
    Exact,
    /// Exact projection onto B(z) ([`Simplex`]); ignores the upper bound.
    Simplex,
    /// Algorithm 1 ([`SoftSimplex`]) onto B(z); ignores the upper bound.
    Soft,
    /// Dykstra with the soft simplex projection (the paper's operator).
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
}

impl Method {
    /// Every method, in the order of [`ProjError::UnknownMethod`]'s list.
    pub const ALL: [Method; 8] = [
        Method::Exact,
        Method::Simplex,
        Method::Soft,
        Method::DykstraSoft,
        Method::DykstraExact,
        Method::Fp,
        Method::Smooth,
        Method::Clip,
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

/// A projector chosen at run time; `rounds` is used by the Dykstra methods, `iters` by FP,
/// `eps` (the temperature) by the smoothed projection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnyProjector {
    /// Which operator [`Projector::forward`] runs.
    pub method: Method,
    /// Dykstra rounds ([`Method::DykstraSoft`], [`Method::DykstraExact`]).
    pub rounds: usize,
    /// Bisection iterations ([`Method::Fp`]).
    pub iters: usize,
    /// Temperature of [`Method::Smooth`] (> 0).
    pub eps: f64,
}

/// Default temperature of [`Method::Smooth`].
pub const DEFAULT_SMOOTH_EPS: f64 = 0.1;

impl AnyProjector {
    /// A projector of `method` with `rounds` Dykstra rounds and `iters` FP iterations (each
    /// ignored by the other methods) and the temperature [`DEFAULT_SMOOTH_EPS`]. Zero rounds or
    /// iterations are not refused here (a method that ignores them may get any value); for the
    /// methods that use them they are degenerate, see [`Dykstra::rounds`](crate::Dykstra) and
    /// [`FastProjection::iters`](crate::FastProjection).
    pub fn new(method: Method, rounds: usize, iters: usize) -> Self {
        Self {
            method,
            rounds,
            iters,
            eps: DEFAULT_SMOOTH_EPS,
        }
    }

    /// The same projector with temperature `eps` for [`Method::Smooth`].
    pub fn with_eps(self, eps: f64) -> Self {
        Self { eps, ..self }
    }

    /// [`AnyProjector::new`] with temperature `eps`, for callers that take the parameters from
    /// a user (the Python package): refuses zero `rounds` for the Dykstra methods, zero `iters`
    /// for FP and a temperature that is not finite and positive, as
    /// [`ProjError::InvalidParameter`], instead of running a degenerate projection.
    pub fn checked(
        method: Method,
        rounds: usize,
        iters: usize,
        eps: f64,
    ) -> Result<Self, ProjError> {
        let uses_rounds = matches!(method, Method::DykstraSoft | Method::DykstraExact);
        if uses_rounds && rounds == 0 {
            return Err(ProjError::InvalidParameter {
                name: "rounds",
                value: 0.0,
            });
        }
        if method == Method::Fp && iters == 0 {
            return Err(ProjError::InvalidParameter {
                name: "iters",
                value: 0.0,
            });
        }
        if !(eps.is_finite() && eps > 0.0) {
            return Err(ProjError::InvalidParameter {
                name: "eps",
                value: eps,
            });
        }
        Ok(Self::new(method, rounds, iters).with_eps(eps))
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
        match self.method {
            Method::Exact => CappedSimplex.forward(v, z, out, tape_as!(tape, Exact)),
            Method::Simplex => Simplex.forward(v, z, out, tape_as!(tape, Simplex)),
            Method::Soft => SoftSimplex.forward(v, z, out, tape_as!(tape, Soft)),
            Method::DykstraSoft => Dykstra::new(self.rounds, SoftSimplex).forward(
                v,
                z,
                out,
                tape_as!(tape, DykstraSoft),
            ),
            Method::DykstraExact => {
                Dykstra::new(self.rounds, Simplex).forward(v, z, out, tape_as!(tape, DykstraExact))
            }
            Method::Fp => {
                FastProjection { iters: self.iters }.forward(v, z, out, tape_as!(tape, Fp))
            }
            Method::Smooth => {
                SmoothCappedSimplex { eps: self.eps }.forward(v, z, out, tape_as!(tape, Smooth))
            }
            Method::Clip => BoxClip.forward(v, z, out, tape_as!(tape, Clip)),
        }
    }

    /// # Panics
    /// If `tape` was not filled by a `forward` of the same method.
    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        match (self.method, tape) {
            (Method::Exact, AnyTape::Exact(t)) => CappedSimplex.vjp(t, g, gv),
            (Method::Simplex, AnyTape::Simplex(t)) => Simplex.vjp(t, g, gv),
            (Method::Soft, AnyTape::Soft(t)) => SoftSimplex.vjp(t, g, gv),
            (Method::DykstraSoft, AnyTape::DykstraSoft(t)) => {
                Dykstra::new(self.rounds, SoftSimplex).vjp(t, g, gv)
            }
            (Method::DykstraExact, AnyTape::DykstraExact(t)) => {
                Dykstra::new(self.rounds, Simplex).vjp(t, g, gv)
            }
            (Method::Fp, AnyTape::Fp(t)) => FastProjection { iters: self.iters }.vjp(t, g, gv),
            (Method::Smooth, AnyTape::Smooth(t)) => {
                SmoothCappedSimplex { eps: self.eps }.vjp(t, g, gv)
            }
            (Method::Clip, AnyTape::Clip(t)) => BoxClip.vjp(t, g, gv),
            (m, _) => panic!("AnyProjector::vjp: tape was not recorded by a {m} forward"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_refuses_degenerate_parameters_of_the_method_in_use() {
        let bad = |m, r, i, e| AnyProjector::checked(m, r, i, e).unwrap_err().to_string();
        assert!(bad(Method::DykstraSoft, 0, 10, 0.1).contains("rounds = 0"));
        assert!(bad(Method::Fp, 2, 0, 0.1).contains("iters = 0"));
        assert!(bad(Method::Smooth, 2, 10, 0.0).contains("eps = 0"));
        assert!(bad(Method::Exact, 2, 10, f64::NAN).contains("eps = NaN"));
        // Parameters a method ignores may take any value.
        let p = AnyProjector::checked(Method::Exact, 0, 0, 0.5).unwrap();
        assert_eq!(p, AnyProjector::new(Method::Exact, 0, 0).with_eps(0.5));
        let mut out = [0.0f64; 3];
        let mut tape = AnyTape::default();
        p.forward(&[2.0, 0.0, -1.0], 1.0, &mut out, &mut tape)
            .unwrap();
        assert_eq!(out, [1.0, 0.0, 0.0]);
    }
}
