//! Clipping to the box `[0, 1]^L`: the "projection" of the baselines without a cardinality
//! constraint (E2E-SPEN, SC, DVN inference). `z` is ignored.

use crate::util::{validate, ZRange};
use crate::{ProjError, Projector, Real};

/// `u = clip(v, 0, 1)`; the VJP passes the gradient where `0 < v < 1` and `∂ℓ/∂z = 0`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BoxClip;

/// Which coordinates were strictly inside the box.
#[derive(Debug, Clone, Default)]
pub struct ClipTape<F> {
    inside: Vec<F>,
}

impl<F: Real> Projector<F> for BoxClip {
    type Tape = ClipTape<F>;

    fn forward(
        &self,
        v: &[F],
        z: F,
        out: &mut [F],
        tape: &mut Self::Tape,
    ) -> Result<(), ProjError> {
        // `z` plays no part, but an invalid one is still an error, as for every operator.
        validate(v, z, out.len(), ZRange::NonNegative)?;
        tape.inside.clear();
        tape.inside.extend(v.iter().map(|&x| {
            if x > F::zero() && x < F::one() {
                F::one()
            } else {
                F::zero()
            }
        }));
        for (o, &x) in out.iter_mut().zip(v) {
            *o = x.max(F::zero()).min(F::one());
        }
        Ok(())
    }

    fn vjp(&self, tape: &Self::Tape, g: &[F], gv: &mut [F]) -> F {
        for ((o, &m), &gi) in gv.iter_mut().zip(&tape.inside).zip(g) {
            *o = m * gi;
        }
        F::zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_and_masks_the_gradient() {
        let v = [-0.5f64, 0.25, 0.75, 1.5];
        let mut out = [0.0; 4];
        let mut tape = ClipTape::default();
        BoxClip.forward(&v, 0.0, &mut out, &mut tape).unwrap();
        assert_eq!(out, [0.0, 0.25, 0.75, 1.0]);
        let mut gv = [9.0; 4];
        assert_eq!(BoxClip.vjp(&tape, &[1.0, 2.0, 3.0, 4.0], &mut gv), 0.0);
        assert_eq!(gv, [0.0, 2.0, 3.0, 0.0]);
        assert!(BoxClip
            .forward(&[f64::NAN], 0.0, &mut [0.0], &mut tape)
            .is_err());
    }
}
