//! The Section 6 model on one image: forward pass, loss and gradient.

use super::energy::{EnergyTape, GlobalEnergy};
use super::grid_energy::GridEnergy;
use super::step::{self, StepTape};
use cardinal_proj::matrix::AnyMatrixProjector;
use cardinal_proj::ProjError;

/// Which model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Per-position softmax of the unary scores, trained by cross-entropy (the baseline).
    Unary,
    /// The same unroll (energies included) with each row projected onto the unit simplex and no
    /// class sizes: what the unroll does without the counts.
    Rows,
    /// Predict and Constrain with the counts of the count head.
    Predicted,
    /// Predict and Constrain with the gold counts (an oracle, for the gap it leaves).
    Gold,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 4] = [Mode::Unary, Mode::Rows, Mode::Predicted, Mode::Gold];

    /// Whether it runs the unrolled steps (every mode but [`Mode::Unary`]).
    pub(crate) fn unrolls(self) -> bool {
        self != Mode::Unary
    }

    /// Whether it constrains the class sizes ([`Mode::Predicted`], [`Mode::Gold`]).
    pub(crate) fn uses_counts(self) -> bool {
        matches!(self, Mode::Predicted | Mode::Gold)
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Unary => "unary",
            Mode::Rows => "rows",
            Mode::Predicted => "pnc",
            Mode::Gold => "oracle",
        }
    }
}

/// Parameters (all `f64`: the model is small) and the fixed parts of the unroll.
#[derive(Debug, Clone)]
pub struct SegModel {
    /// Features per position `C`.
    pub channels: usize,
    /// Classes `M`.
    pub classes: usize,
    /// Unary weights `W` (`C × M`, row-major) and bias `b` (`M`).
    pub w: Vec<f64>,
    /// Unary bias.
    pub b: Vec<f64>,
    /// Count head weights `V` (`M × C`, row-major) and bias `c` (`M`).
    pub v: Vec<f64>,
    /// Count head bias.
    pub c: Vec<f64>,
    /// The optional global energy over `Y` (no terms: none).
    pub energy: GlobalEnergy,
    /// The optional pairwise energy of an image grid.
    pub grid: Option<GridEnergy>,
    /// Unrolled steps `T`.
    pub steps: usize,
    /// Step size `η`.
    pub eta: f64,
    /// Weight `λ` of the count loss.
    pub count_weight: f64,
    /// The projection.
    pub proj: AnyMatrixProjector,
    /// Which model.
    pub mode: Mode,
}

/// Gradients of every parameter, laid out as in [`SegModel`].
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Grads {
    /// `∂ℓ/∂W`.
    pub w: Vec<f64>,
    /// `∂ℓ/∂b`.
    pub b: Vec<f64>,
    /// `∂ℓ/∂V`.
    pub v: Vec<f64>,
    /// `∂ℓ/∂c`.
    pub c: Vec<f64>,
    /// `∂ℓ/∂B` and `∂ℓ/∂w` of the global energy.
    pub energy: GlobalEnergy,
    /// `∂ℓ/∂C` of the grid energy (empty without it).
    pub grid: Vec<f64>,
}

impl Grads {
    /// Every gradient in the order of [`SegModel::params_mut`].
    pub(crate) fn flat(&self) -> impl Iterator<Item = &f64> {
        self.w
            .iter()
            .chain(&self.b)
            .chain(&self.v)
            .chain(&self.c)
            .chain(&self.energy.b)
            .chain(&self.energy.w)
            .chain(&self.grid)
    }
}

/// What the unroll keeps for the backward pass: each step's projection and energy tape.
#[derive(Debug, Default)]
struct UnrollTape {
    proj: Vec<StepTape>,
    energy: Vec<EnergyTape>,
    /// `Y_t` of each step, for the grid energy.
    ys: Vec<Vec<f64>>,
}

/// What the forward pass of one image yields.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prediction {
    /// The relaxed labelling `Y` (`L × M`): `Y_T`, or the softmax for [`Mode::Unary`].
    pub y: Vec<f64>,
    /// The counts used (empty for [`Mode::Unary`]).
    pub z: Vec<f64>,
}

/// Row-wise softmax of `s` (`L × M`) into `out`.
fn softmax_rows(s: &[f64], m: usize, out: &mut Vec<f64>) {
    out.clear();
    for row in s.chunks_exact(m) {
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let start = out.len();
        out.extend(row.iter().map(|x| (x - mx).exp()));
        let sum: f64 = out[start..].iter().sum();
        out[start..].iter_mut().for_each(|e| *e /= sum);
    }
}

/// `1 − mean_j IoU_j` and its gradient in `y`, with the soft IoU
/// `I_j/U_j`, `I_j = Σ_p Y_pj G_pj`, `U_j = Σ_p (Y_pj + G_pj − Y_pj G_pj)`, over the classes
/// with `U_j > 0`.
pub(crate) fn soft_iou_loss(y: &[f64], gold: &[u32], m: usize, grad: &mut [f64]) -> f64 {
    let (mut inter, mut union) = (vec![0.0; m], vec![0.0; m]);
    for (row, &g) in y.chunks_exact(m).zip(gold) {
        for (j, &yj) in row.iter().enumerate() {
            let gj = f64::from(u8::from(j == g as usize));
            inter[j] += yj * gj;
            union[j] += yj + gj - yj * gj;
        }
    }
    let present: Vec<bool> = union.iter().map(|&u| u > 1e-12).collect();
    let k = present.iter().filter(|&&p| p).count().max(1) as f64;
    let mut loss = 1.0;
    for j in 0..m {
        if present[j] {
            loss -= inter[j] / union[j] / k;
        }
    }
    for (grow, &g) in grad.chunks_exact_mut(m).zip(gold) {
        for (j, gr) in grow.iter_mut().enumerate() {
            *gr = if present[j] {
                let gj = f64::from(u8::from(j == g as usize));
                // ∂(I/U)/∂Y = (G U − I (1 − G)) / U².
                -(gj * union[j] - inter[j] * (1.0 - gj)) / (union[j] * union[j]) / k
            } else {
                0.0
            };
        }
    }
    loss
}

impl SegModel {
    /// A model with zero parameters (training initialises them).
    pub fn new(channels: usize, classes: usize, mode: Mode, proj: AnyMatrixProjector) -> Self {
        Self {
            channels,
            classes,
            w: vec![0.0; channels * classes],
            b: vec![0.0; classes],
            v: vec![0.0; classes * channels],
            c: vec![0.0; classes],
            energy: GlobalEnergy::default(),
            grid: None,
            steps: 5,
            eta: 1.0,
            count_weight: 1.0,
            proj,
            mode,
        }
    }

    /// Unary scores `S = XW + 1bᵀ` of an image `x` (`L × C`).
    pub(crate) fn scores(&self, x: &[f64]) -> Vec<f64> {
        let (c, m) = (self.channels, self.classes);
        let mut s = Vec::with_capacity(x.len() / c * m);
        for xp in x.chunks_exact(c) {
            for j in 0..m {
                s.push(
                    self.b[j]
                        + xp.iter()
                            .enumerate()
                            .map(|(k, &v)| v * self.w[k * m + j])
                            .sum::<f64>(),
                );
            }
        }
        s
    }

    /// The count head's `softmax(V x̄ + c)` and `x̄`.
    fn count_probs(&self, x: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let c = self.channels;
        let l = (x.len() / c) as f64;
        let mut mean = vec![0.0; c];
        for xp in x.chunks_exact(c) {
            mean.iter_mut().zip(xp).for_each(|(a, b)| *a += b / l);
        }
        let a: Vec<f64> = (0..self.classes)
            .map(|j| self.c[j] + (0..c).map(|k| self.v[j * c + k] * mean[k]).sum::<f64>())
            .collect();
        let mut p = Vec::new();
        softmax_rows(&a, self.classes, &mut p);
        (p, mean)
    }

    /// The counts the model uses for an image (`gold` class per position for [`Mode::Gold`];
    /// none for the modes without counts).
    pub(crate) fn counts(&self, x: &[f64], gold: &[u32]) -> Vec<f64> {
        let l = (x.len() / self.channels) as f64;
        match self.mode {
            Mode::Unary | Mode::Rows => Vec::new(),
            Mode::Gold => {
                let mut z = vec![0.0; self.classes];
                gold.iter().for_each(|&g| z[g as usize] += 1.0);
                z
            }
            Mode::Predicted => self.count_probs(x).0.iter().map(|p| p * l).collect(),
        }
    }

    /// Forward pass on one image (`gold` is read only by [`Mode::Gold`]).
    pub(crate) fn predict(&self, x: &[f64], gold: &[u32]) -> Result<Prediction, ProjError> {
        let s = self.scores(x);
        let mut y = Vec::new();
        if self.mode == Mode::Unary {
            softmax_rows(&s, self.classes, &mut y);
            return Ok(Prediction { y, z: Vec::new() });
        }
        let z = self.counts(x, gold);
        let mut tape = UnrollTape::default();
        self.unroll(&s, &z, &mut y, &mut tape)?;
        Ok(Prediction { y, z })
    }

    /// `Y_T` into `y`: `T` steps `Y ← P(Y + η(S + ∇E(Y)); z)` from `Y = 1/M`, one tape per
    /// step.
    fn unroll(
        &self,
        s: &[f64],
        z: &[f64],
        y: &mut Vec<f64>,
        tape: &mut UnrollTape,
    ) -> Result<(), ProjError> {
        let m = self.classes;
        let energy = self.energy.terms() > 0;
        if energy && self.energy.b.len() != self.energy.terms() * s.len() {
            return Err(ProjError::LengthMismatch {
                input: s.len(),
                output: self.energy.b.len() / self.energy.terms(),
            });
        }
        y.clear();
        y.resize(s.len(), 1.0 / m as f64);
        tape.proj.resize_with(self.steps, Default::default);
        tape.energy.clear();
        tape.ys.clear();
        if let Some(grid) = &self.grid {
            if grid.side * grid.side * m != s.len() {
                return Err(ProjError::LengthMismatch {
                    input: s.len(),
                    output: grid.side * grid.side * m,
                });
            }
        }
        let mut a = vec![0.0; s.len()];
        for proj_tape in tape.proj.iter_mut() {
            a.iter_mut()
                .zip(y.iter().zip(s))
                .for_each(|(a, (y, s))| *a = y + self.eta * s);
            if energy {
                tape.energy.push(self.energy.add_grad(y, self.eta, &mut a));
            }
            if let Some(grid) = &self.grid {
                grid.add_apply(y, self.eta, &mut a);
                tape.ys.push(y.clone());
            }
            let rows_only = self.mode == Mode::Rows;
            step::forward(&self.proj, rows_only, &a, m, z, y, proj_tape)?;
        }
        Ok(())
    }

    /// Loss on one image and its gradient (added into `grads`): the loss of the mode, with
    /// its gradient in the unary scores, then that gradient through the unary scores' linear
    /// map.
    pub(crate) fn loss_and_grad(
        &self,
        x: &[f64],
        gold: &[u32],
        grads: &mut Grads,
    ) -> Result<f64, ProjError> {
        let (c, m) = (self.channels, self.classes);
        let s = self.scores(x);
        let mut gs = vec![0.0; s.len()];
        let loss = match self.mode {
            Mode::Unary => self.unary_loss(&s, gold, x.len() / c, &mut gs),
            Mode::Rows | Mode::Predicted | Mode::Gold => {
                self.unrolled_loss(x, &s, gold, &mut gs, grads)?
            }
        };
        for (xp, gr) in x.chunks_exact(c).zip(gs.chunks_exact(m)) {
            for k in 0..c {
                for j in 0..m {
                    grads.w[k * m + j] += xp[k] * gr[j];
                }
            }
        }
        for gr in gs.chunks_exact(m) {
            grads.b.iter_mut().zip(gr).for_each(|(b, g)| *b += g);
        }
        Ok(loss)
    }

    /// Mode `unary`: the mean cross-entropy of the softmaxed scores `s` over the `l` pixels,
    /// and its gradient in them, written into `gs`.
    fn unary_loss(&self, s: &[f64], gold: &[u32], l: usize, gs: &mut [f64]) -> f64 {
        let m = self.classes;
        let mut p = Vec::new();
        softmax_rows(s, m, &mut p);
        let mut loss = 0.0;
        for ((pr, gr), &g) in p.chunks_exact(m).zip(gs.chunks_exact_mut(m)).zip(gold) {
            loss -= pr[g as usize].max(1e-300).ln() / l as f64;
            for j in 0..m {
                let t = f64::from(u8::from(j == g as usize));
                gr[j] = (pr[j] - t) / l as f64;
            }
        }
        loss
    }

    /// The unrolled modes: the relaxed IoU loss of the unroll from the scores `s`, backward
    /// through every step into `gs` (added) and the energies' gradients, plus in mode
    /// `predicted` the count loss and the count head's gradients.
    fn unrolled_loss(
        &self,
        x: &[f64],
        s: &[f64],
        gold: &[u32],
        gs: &mut [f64],
        grads: &mut Grads,
    ) -> Result<f64, ProjError> {
        let m = self.classes;
        let z = self.counts(x, gold);
        let mut y = Vec::new();
        let mut tape = UnrollTape::default();
        self.unroll(s, &z, &mut y, &mut tape)?;
        let mut gy = vec![0.0; y.len()];
        let loss = soft_iou_loss(&y, gold, m, &mut gy);
        let (mut ga, mut gz_step) = (vec![0.0; y.len()], vec![0.0; m]);
        let mut gz = vec![0.0; m];
        for (t, proj_tape) in tape.proj.iter().enumerate().rev() {
            step::vjp(&self.proj, proj_tape, m, &gy, &mut ga, &mut gz_step);
            gs.iter_mut().zip(&ga).for_each(|(g, a)| *g += self.eta * a);
            gz.iter_mut().zip(&gz_step).for_each(|(g, d)| *g += d);
            // ∂A_t/∂Y_t = I + η ∇²E(Y_t).
            gy.copy_from_slice(&ga);
            if let Some(et) = tape.energy.get(t) {
                self.energy
                    .backward(et, &ga, self.eta, &mut gy, &mut grads.energy);
            }
            if let (Some(grid), Some(yt)) = (&self.grid, tape.ys.get(t)) {
                grid.backward(yt, &ga, self.eta, &mut gy, &mut grads.grid);
            }
        }
        if self.mode == Mode::Predicted {
            return Ok(self.add_count_loss(x, gold, loss, &mut gz, grads));
        }
        Ok(loss)
    }

    /// Mode `predicted`: `loss` plus the count loss `λ Σ (p_j − n_j/L)²` (`p = z/L`), its
    /// gradient added to the counts' `gz`, and from `gz` the count head's gradients.
    fn add_count_loss(
        &self,
        x: &[f64],
        gold: &[u32],
        mut loss: f64,
        gz: &mut [f64],
        grads: &mut Grads,
    ) -> f64 {
        let (c, m) = (self.channels, self.classes);
        let lf = (x.len() / c) as f64;
        let (p, mean) = self.count_probs(x);
        let mut n = vec![0.0; m];
        gold.iter().for_each(|&g| n[g as usize] += 1.0 / lf);
        for j in 0..m {
            let d = p[j] - n[j];
            loss += self.count_weight * d * d;
            gz[j] += self.count_weight * 2.0 * d / lf;
        }
        // z = L softmax(a): ā = L p ⊙ (z̄ − ⟨z̄, p⟩).
        let dot: f64 = gz.iter().zip(&p).map(|(g, p)| g * p).sum();
        for j in 0..m {
            let da = lf * p[j] * (gz[j] - dot);
            grads.c[j] += da;
            for k in 0..c {
                grads.v[j * c + k] += da * mean[k];
            }
        }
        loss
    }

    /// Zero gradients shaped like the parameters.
    pub(crate) fn zero_grads(&self) -> Grads {
        Grads {
            w: vec![0.0; self.w.len()],
            b: vec![0.0; self.b.len()],
            v: vec![0.0; self.v.len()],
            c: vec![0.0; self.c.len()],
            energy: GlobalEnergy::zeros(
                self.energy.terms(),
                self.energy.b.len() / self.energy.terms().max(1),
            ),
            grid: self
                .grid
                .as_ref()
                .map_or(Vec::new(), |g| vec![0.0; g.c.len()]),
        }
    }

    /// Every parameter, in the order of the gradients' `flat` (the optimizer's and the checkpoint's
    /// order).
    pub(crate) fn params_mut(&mut self) -> impl Iterator<Item = &mut f64> {
        self.w
            .iter_mut()
            .chain(self.b.iter_mut())
            .chain(self.v.iter_mut())
            .chain(self.c.iter_mut())
            .chain(self.energy.b.iter_mut())
            .chain(self.energy.w.iter_mut())
            .chain(self.grid.iter_mut().flat_map(|g| g.c.iter_mut()))
    }

    /// Number of parameters.
    pub fn n_params(&self) -> usize {
        self.w.len()
            + self.b.len()
            + self.v.len()
            + self.c.len()
            + self.energy.b.len()
            + self.energy.w.len()
            + self.grid.as_ref().map_or(0, |g| g.c.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cardinal_proj::matrix::MatrixMethod;

    /// A parameter tensor of the model, by accessor.
    type Field = fn(&mut SegModel) -> &mut Vec<f64>;

    /// SplitMix64 normals for test data.
    fn normals(seed: u64, n: usize) -> Vec<f64> {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = s;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((x ^ (x >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let (a, b) = (next().max(1e-300), next());
                (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
            })
            .collect()
    }

    #[test]
    fn every_gradient_matches_finite_differences() {
        let (l, c, m) = (9, 3, 3);
        let x = normals(1, l * c);
        let gold: Vec<u32> = (0..l as u32).map(|p| (p * 7 + 1) % m as u32).collect();
        let modes = [
            (Mode::Unary, 0, false),
            (Mode::Predicted, 0, false),
            (Mode::Gold, 0, false),
            (Mode::Predicted, 2, false),
            (Mode::Gold, 2, false),
            (Mode::Predicted, 0, true),
            (Mode::Gold, 2, true),
            (Mode::Rows, 0, false),
            (Mode::Rows, 2, true),
        ];
        for (mode, terms, grid) in modes {
            for method in MatrixMethod::ALL {
                let proj = AnyMatrixProjector::new(method, 2).with_eps(0.5);
                let mut model = SegModel::new(c, m, mode, proj);
                model.steps = 3;
                model.eta = 0.7;
                let p = normals(2, 2 * c * m + 2 * m);
                model.w.copy_from_slice(&p[..c * m]);
                model.v.copy_from_slice(&p[c * m..2 * c * m]);
                model.b.copy_from_slice(&p[2 * c * m..2 * c * m + m]);
                model.c.copy_from_slice(&p[2 * c * m + m..]);
                // Weights large enough that the energy moves Y_T (checked below).
                model.energy = GlobalEnergy {
                    b: normals(5, terms * l * m),
                    w: normals(6, terms).iter().map(|v| 3.0 * v).collect(),
                };
                if grid {
                    let mut g = GridEnergy::zeros(l, m).unwrap();
                    g.c = normals(7, m * m).iter().map(|v| 2.0 * v).collect();
                    model.grid = Some(g);
                }
                let mut g = model.zero_grads();
                let with = model.loss_and_grad(&x, &gold, &mut g).unwrap();
                let loss = |mm: &SegModel| {
                    let mut sink = mm.zero_grads();
                    mm.loss_and_grad(&x, &gold, &mut sink).unwrap()
                };
                if terms > 0 || grid {
                    let mut without = model.clone();
                    without.energy = GlobalEnergy::default();
                    without.grid = None;
                    assert!((loss(&without) - with).abs() > 1e-3, "{mode:?} {method}");
                }
                let h = 1e-6;
                let mut fields: Vec<(Field, &Vec<f64>)> = vec![
                    (|m| &mut m.w, &g.w),
                    (|m| &mut m.b, &g.b),
                    (|m| &mut m.v, &g.v),
                    (|m| &mut m.c, &g.c),
                    (|m| &mut m.energy.b, &g.energy.b),
                    (|m| &mut m.energy.w, &g.energy.w),
                ];
                if grid {
                    fields.push((|m| &mut m.grid.as_mut().expect("a grid").c, &g.grid));
                }
                for (f, grad) in fields {
                    for k in 0..grad.len() {
                        let (mut up, mut dn) = (model.clone(), model.clone());
                        f(&mut up)[k] += h;
                        f(&mut dn)[k] -= h;
                        let fd = (loss(&up) - loss(&dn)) / (2.0 * h);
                        assert!(
                            (fd - grad[k]).abs() < 1e-6 * (1.0 + fd.abs()),
                            "{mode:?} {terms} {grid} {method}: entry {k}: fd {fd} vs {}",
                            grad[k]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn soft_iou_is_one_on_the_gold_labelling() {
        let gold = [0u32, 1, 1, 2];
        let mut y = vec![0.0; 12];
        for (p, &g) in gold.iter().enumerate() {
            y[p * 3 + g as usize] = 1.0;
        }
        let mut grad = vec![0.0; 12];
        assert!(soft_iou_loss(&y, &gold, 3, &mut grad).abs() < 1e-15);
        let flat = vec![1.0 / 3.0; 12];
        assert!(soft_iou_loss(&flat, &gold, 3, &mut grad) > 0.5);
    }
}
