//! The optional pairwise energy of an image grid: `E(Y) = ½ Σ_p Σ_{q ∈ N(p)} Y_pᵀ C Y_q`,
//! `N(p)` the 4-neighbours of position `p` on a `side × side` grid (positions row-major), `C` an
//! `M × M` learnt class compatibility. It needs the positions to form a square grid, which the
//! data does not say: the configuration asks for it (`grid_energy`), and data whose number of
//! positions is not a square is refused. The global energy ([`super::energy`]) needs no such
//! structure.
//!
//! With `C̄ = (C + Cᵀ)/2`: `∇_p E = Σ_{q ∈ N(p)} C̄ Y_q`, linear in `Y`, so the Hessian-vector
//! product is the same sum over `ḡ`; for `f = ⟨s ∇E(Y), ḡ⟩`, `∂f/∂C = s (S + Sᵀ)/2` with
//! `S = Σ_p Σ_{q ∈ N(p)} ḡ_p Y_qᵀ`.

/// The class compatibility `C` of a `side × side` grid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GridEnergy {
    /// Positions per row and per column.
    pub side: usize,
    /// Classes `M`.
    pub classes: usize,
    /// `C`, row-major `M × M`.
    pub c: Vec<f64>,
}

impl GridEnergy {
    /// `C = 0` (no energy) on a grid of `positions` positions, or `None` if that is not a
    /// square.
    pub fn zeros(positions: usize, classes: usize) -> Option<Self> {
        let side = (positions as f64).sqrt().round() as usize;
        (side * side == positions && side > 0).then(|| Self {
            side,
            classes,
            c: vec![0.0; classes * classes],
        })
    }

    /// The 4-neighbours of position `p`.
    fn neighbours(&self, p: usize) -> impl Iterator<Item = usize> {
        let (n, r, c) = (self.side, p / self.side, p % self.side);
        [
            (r > 0).then(|| p - n),
            (r + 1 < n).then(|| p + n),
            (c > 0).then(|| p - 1),
            (c + 1 < n).then(|| p + 1),
        ]
        .into_iter()
        .flatten()
    }

    /// `C̄ = (C + Cᵀ)/2`.
    fn symmetric(&self) -> Vec<f64> {
        let m = self.classes;
        let mut s = vec![0.0; m * m];
        for a in 0..m {
            for b in 0..m {
                s[a * m + b] = 0.5 * (self.c[a * m + b] + self.c[b * m + a]);
            }
        }
        s
    }

    /// `out_p += scale · Σ_{q ∈ N(p)} C̄ v_q` for every position `p`: `scale · ∇E(v)`, and
    /// equally the Hessian-vector product with `v`.
    pub(crate) fn add_apply(&self, v: &[f64], scale: f64, out: &mut [f64]) {
        let m = self.classes;
        let cs = self.symmetric();
        for (p, op) in out.chunks_exact_mut(m).enumerate() {
            for q in self.neighbours(p) {
                let vq = &v[q * m..(q + 1) * m];
                for (a, o) in op.iter_mut().enumerate() {
                    *o += scale * (0..m).map(|b| cs[a * m + b] * vq[b]).sum::<f64>();
                }
            }
        }
    }

    /// `E(Y)`.
    #[cfg(test)]
    pub(crate) fn value(&self, y: &[f64]) -> f64 {
        let mut g = vec![0.0; y.len()];
        self.add_apply(y, 0.5, &mut g);
        y.iter().zip(&g).map(|(a, b)| a * b).sum()
    }

    /// Backward through `scale · ∇E(Y)` at `y` for the upstream gradient `g`: adds
    /// `scale · ∇²E g` into `gy` and `∂⟨scale ∇E(Y), g⟩/∂C` into `grad_c`.
    pub(crate) fn backward(
        &self,
        y: &[f64],
        g: &[f64],
        scale: f64,
        gy: &mut [f64],
        grad_c: &mut [f64],
    ) {
        self.add_apply(g, scale, gy);
        let m = self.classes;
        let mut s = vec![0.0; m * m];
        for (p, gp) in g.chunks_exact(m).enumerate() {
            for q in self.neighbours(p) {
                let yq = &y[q * m..(q + 1) * m];
                for (a, ga) in gp.iter().enumerate() {
                    for (b, yb) in yq.iter().enumerate() {
                        s[a * m + b] += ga * yb;
                    }
                }
            }
        }
        for a in 0..m {
            for b in 0..m {
                grad_c[a * m + b] += scale * 0.5 * (s[a * m + b] + s[b * m + a]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{assert_central_differences, test_values as values};
    use super::*;

    fn energy() -> GridEnergy {
        let mut e = GridEnergy::zeros(9, 3).unwrap();
        e.c = values(1, 9);
        e
    }

    #[test]
    fn a_grid_needs_a_square_number_of_positions_and_has_4_neighbours() {
        assert!(GridEnergy::zeros(10, 3).is_none());
        let e = GridEnergy::zeros(9, 2).unwrap();
        let n = |p| e.neighbours(p).collect::<Vec<_>>();
        assert_eq!(n(0), vec![3, 1]);
        assert_eq!(n(4), vec![1, 7, 3, 5]);
        assert_eq!(n(8), vec![5, 7]);
    }

    /// `add_apply(y)` is the gradient of `value`, by central differences.
    #[test]
    fn the_gradient_matches_finite_differences_of_the_energy() {
        let e = energy();
        let y = values(3, 27);
        let mut g = vec![0.0; 27];
        e.add_apply(&y, 1.0, &mut g);
        assert_central_differences(|y| e.value(y), &y, &g, "entry");
    }

    /// `backward` is the derivative of `⟨scale ∇E(Y), g⟩` in `Y` and `C`.
    #[test]
    fn the_backward_pass_matches_finite_differences_of_the_gradient() {
        let (e, scale) = (energy(), 0.7);
        let (y, g) = (values(3, 27), values(4, 27));
        let probe = |e: &GridEnergy, y: &[f64]| {
            let mut out = vec![0.0; 27];
            e.add_apply(y, scale, &mut out);
            out.iter().zip(&g).map(|(a, b)| a * b).sum::<f64>()
        };
        let (mut gy, mut gc) = (vec![0.0; 27], vec![0.0; 9]);
        e.backward(&y, &g, scale, &mut gy, &mut gc);
        assert_central_differences(|y| probe(&e, y), &y, &gy, "y");
        let with_c = |c: &[f64]| {
            let mut up = e.clone();
            up.c.copy_from_slice(c);
            probe(&up, &y)
        };
        assert_central_differences(with_c, &e.c, &gc, "C");
        assert!(gy.iter().any(|v| v.abs() > 1e-3) && gc.iter().any(|v| v.abs() > 1e-3));
    }
}
