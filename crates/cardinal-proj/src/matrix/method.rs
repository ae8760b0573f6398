//! Runtime choice of a matrix projection.

use super::{
    DykstraMatrix, DykstraMatrixTape, ExactMatrix, ExactMatrixTape, MatrixProjector,
    SinkhornMatrix, SinkhornMatrixTape, DEFAULT_SINKHORN_EPS,
};
use crate::{ProjError, Real, SoftPrintedTape, SoftSimplex, SoftSimplexPrinted, SoftTape};
use std::fmt;
use std::str::FromStr;

/// Names of the matrix projections on the command line and in configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatrixMethod {
    /// The exact Euclidean projection ([`ExactMatrix`]).
    Exact,
    /// The paper's: Dykstra rounds with Algorithm 1 as the authors' code releases it
    /// ([`DykstraMatrix`] over [`SoftSimplex`]).
    Dykstra,
    /// The same with Algorithm 1 as the paper prints it ([`DykstraMatrix`] over
    /// [`SoftSimplexPrinted`]).
    DykstraPrinted,
    /// The entropic projection ([`SinkhornMatrix`]).
    Sinkhorn,
}

impl MatrixMethod {
    /// Every method, in the order of [`ProjError::UnknownMatrixMethod`]'s list.
    pub const ALL: [MatrixMethod; 4] = [
        MatrixMethod::Exact,
        MatrixMethod::Dykstra,
        MatrixMethod::DykstraPrinted,
        MatrixMethod::Sinkhorn,
    ];

    /// The name accepted by `from_str` and printed by `Display`.
    pub fn name(self) -> &'static str {
        match self {
            MatrixMethod::Exact => "exact",
            MatrixMethod::Dykstra => "dykstra",
            MatrixMethod::DykstraPrinted => "dykstra-printed",
            MatrixMethod::Sinkhorn => "sinkhorn",
        }
    }
}

impl fmt::Display for MatrixMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MatrixMethod {
    type Err = ProjError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MatrixMethod::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| ProjError::UnknownMatrixMethod {
                name: s.to_string(),
                allowed: MatrixMethod::ALL.map(MatrixMethod::name).join("|"),
            })
    }
}

/// A matrix projection chosen at run time: `rounds` is used by the Dykstra methods,
/// `eps` by [`MatrixMethod::Sinkhorn`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnyMatrixProjector {
    /// Which operator runs.
    pub method: MatrixMethod,
    /// Dykstra rounds `R` (≥ 1).
    pub rounds: usize,
    /// Sinkhorn's temperature (> 0).
    pub eps: f64,
}

impl AnyMatrixProjector {
    /// `method` with `rounds` Dykstra rounds and [`DEFAULT_SINKHORN_EPS`].
    pub fn new(method: MatrixMethod, rounds: usize) -> Self {
        Self {
            method,
            rounds,
            eps: DEFAULT_SINKHORN_EPS,
        }
    }

    /// The same projector with Sinkhorn's temperature `eps`.
    pub fn with_eps(self, eps: f64) -> Self {
        Self { eps, ..self }
    }
}

/// Tape of [`AnyMatrixProjector`] (replaced when the method changes).
#[derive(Debug, Default)]
pub enum AnyMatrixTape<F> {
    /// Nothing recorded yet.
    #[default]
    Empty,
    /// Tape of [`MatrixMethod::Exact`].
    Exact(ExactMatrixTape),
    /// Tape of [`MatrixMethod::Dykstra`].
    Dykstra(DykstraMatrixTape<F, SoftTape<F>>),
    /// Tape of [`MatrixMethod::DykstraPrinted`].
    DykstraPrinted(DykstraMatrixTape<F, SoftPrintedTape<F>>),
    /// Tape of [`MatrixMethod::Sinkhorn`].
    Sinkhorn(SinkhornMatrixTape),
}

macro_rules! tape_as {
    ($tape:expr, $variant:ident) => {{
        if !matches!($tape, AnyMatrixTape::$variant(_)) {
            *$tape = AnyMatrixTape::$variant(Default::default());
        }
        match $tape {
            AnyMatrixTape::$variant(t) => t,
            _ => unreachable!(),
        }
    }};
}

impl<F: Real> MatrixProjector<F> for AnyMatrixProjector {
    type Tape = AnyMatrixTape<F>;

    fn forward(
        &self,
        v: &[F],
        classes: usize,
        z: &[F],
        out: &mut [F],
        tape: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        match self.method {
            MatrixMethod::Exact => {
                ExactMatrix::default().forward(v, classes, z, out, tape_as!(tape, Exact))
            }
            MatrixMethod::Dykstra => DykstraMatrix::new(self.rounds, SoftSimplex).forward(
                v,
                classes,
                z,
                out,
                tape_as!(tape, Dykstra),
            ),
            MatrixMethod::DykstraPrinted => DykstraMatrix::new(self.rounds, SoftSimplexPrinted)
                .forward(v, classes, z, out, tape_as!(tape, DykstraPrinted)),
            MatrixMethod::Sinkhorn => {
                SinkhornMatrix::new(self.eps).forward(v, classes, z, out, tape_as!(tape, Sinkhorn))
            }
        }
    }

    /// # Panics
    /// If `tape` was not filled by a `forward` of the same method.
    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F], gz: &mut [F]) {
        match (self.method, tape) {
            (MatrixMethod::Exact, AnyMatrixTape::Exact(t)) => {
                <ExactMatrix as MatrixProjector<F>>::vjp(&ExactMatrix::default(), t, g, gv, gz)
            }
            (MatrixMethod::Dykstra, AnyMatrixTape::Dykstra(t)) => {
                DykstraMatrix::new(self.rounds, SoftSimplex).vjp(t, g, gv, gz)
            }
            (MatrixMethod::DykstraPrinted, AnyMatrixTape::DykstraPrinted(t)) => {
                DykstraMatrix::new(self.rounds, SoftSimplexPrinted).vjp(t, g, gv, gz)
            }
            (MatrixMethod::Sinkhorn, AnyMatrixTape::Sinkhorn(t)) => {
                <SinkhornMatrix as MatrixProjector<F>>::vjp(
                    &SinkhornMatrix::new(self.eps),
                    t,
                    g,
                    gv,
                    gz,
                )
            }
            (m, _) => panic!("AnyMatrixProjector::vjp: tape was not recorded by a {m} forward"),
        }
    }
}
