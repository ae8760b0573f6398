//! A deterministic synthetic segmentation benchmark for the paper's Section 6: small images
//! whose pixels take one of `M` classes (class 0 is the background), objects whose sizes vary
//! from image to image, and pixel evidence so noisy that a pixel alone is ambiguous, while the
//! class sizes can be estimated from the whole image (the noise averages out), so that knowing
//! them helps.
//!
//! Each image places, for every object class `c ≥ 1`, with probability 0.8, one axis-aligned
//! ellipse with a random centre and radii drawn uniformly in `[1, size/3]` (later classes cover
//! earlier ones). Pixel `p` of class `c` has `M` features `x_p = s·e_c + σ·ε_p` (one channel per
//! class, `ε_p` standard normal, `s = 1`), so a pixel's own evidence is right about as often as
//! `σ` allows and neighbours carry no extra information beyond the shapes' contiguity.

use super::multi_target::MultiTargetDataset;
use super::split::SplitMix64;

/// Parameters of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SynthSegSpec {
    /// Image side (images are `size × size`; `L = size²` positions).
    pub size: usize,
    /// Classes `M`, background included (at least 2).
    pub classes: usize,
    /// Noise `σ` of every feature.
    pub noise: f64,
    /// Training images.
    pub train: usize,
    /// Test images.
    pub test: usize,
    /// Seed: the same specification gives the same data.
    pub seed: u64,
}

impl Default for SynthSegSpec {
    fn default() -> Self {
        Self {
            size: 16,
            classes: 4,
            noise: 1.0,
            train: 800,
            test: 200,
            seed: 0,
        }
    }
}

/// Uniform in `[0, 1)` from the split module's generator.
fn unit(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Standard normal (Box–Muller).
fn normal(rng: &mut SplitMix64) -> f64 {
    let a = unit(rng).max(f64::MIN_POSITIVE);
    let b = unit(rng);
    (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
}

/// One image's classes (row-major `size × size`).
fn draw_labels(spec: &SynthSegSpec, rng: &mut SplitMix64, out: &mut Vec<u32>) {
    let n = spec.size;
    out.clear();
    out.resize(n * n, 0);
    let max_r = (n as f64 / 3.0).max(1.0);
    for c in 1..spec.classes {
        if unit(rng) >= 0.8 {
            continue;
        }
        let (cy, cx) = (unit(rng) * n as f64, unit(rng) * n as f64);
        let ry = 1.0 + unit(rng) * (max_r - 1.0);
        let rx = 1.0 + unit(rng) * (max_r - 1.0);
        for y in 0..n {
            for x in 0..n {
                let dy = (y as f64 + 0.5 - cy) / ry;
                let dx = (x as f64 + 0.5 - cx) / rx;
                if dy * dy + dx * dx <= 1.0 {
                    out[y * n + x] = c as u32;
                }
            }
        }
    }
}

/// `count` images of `spec` from `rng`.
fn draw_set(
    spec: &SynthSegSpec,
    count: usize,
    rng: &mut SplitMix64,
    name: &str,
) -> MultiTargetDataset {
    let (n, m) = (spec.size, spec.classes);
    let l = n * n;
    let mut features = Vec::with_capacity(count * l * m);
    let mut targets = Vec::with_capacity(count * l);
    let mut labels = Vec::new();
    for _ in 0..count {
        draw_labels(spec, rng, &mut labels);
        for &c in &labels {
            for k in 0..m {
                let signal = if k == c as usize { 1.0 } else { 0.0 };
                features.push((signal + spec.noise * normal(rng)) as f32);
            }
        }
        targets.extend_from_slice(&labels);
    }
    let class_names = std::iter::once("bg".to_string())
        .chain((1..m).map(|c| format!("c{c}")))
        .collect();
    let target_names = (0..l).map(|p| format!("y{}_{}", p / n, p % n)).collect();
    let feature_names = (0..l * m)
        .map(|f| format!("x{}_{}_{}", f / m / n, f / m % n, f % m))
        .collect();
    MultiTargetDataset {
        name: name.to_string(),
        class_names,
        target_names,
        feature_names,
        features,
        targets,
    }
}

/// The benchmark's training and test sets (`None` if `size` is 0 or `classes < 2`).
pub fn synth_seg(spec: &SynthSegSpec) -> Option<(MultiTargetDataset, MultiTargetDataset)> {
    if spec.size == 0 || spec.classes < 2 || !(spec.noise >= 0.0 && spec.noise.is_finite()) {
        return None;
    }
    let mut rng = SplitMix64::new(spec.seed);
    let train = draw_set(spec, spec.train, &mut rng, "synth-seg-train");
    let test = draw_set(spec, spec.test, &mut rng, "synth-seg-test");
    Some((train, test))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_varied_and_noisy() {
        let spec = SynthSegSpec {
            train: 50,
            test: 10,
            ..Default::default()
        };
        let (a, t) = synth_seg(&spec).unwrap();
        let (b, _) = synth_seg(&spec).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            (a.n_rows(), t.n_rows(), a.positions(), a.classes()),
            (50, 10, 256, 4)
        );
        assert_eq!(a.n_features(), 256 * 4);
        // Object sizes vary from image to image.
        let sizes: std::collections::BTreeSet<usize> =
            (0..50).map(|i| a.class_counts(i)[1]).collect();
        assert!(sizes.len() > 10, "{sizes:?}");
        // A pixel's argmax channel is often wrong (ambiguous), but not always.
        let (mut right, mut total) = (0, 0);
        for i in 0..50 {
            let (x, y) = (a.row_features(i), a.row_targets(i));
            for (p, &c) in y.iter().enumerate() {
                let f = &x[p * 4..p * 4 + 4];
                let best = (0..4).max_by(|&j, &k| f[j].total_cmp(&f[k])).unwrap();
                right += usize::from(best == c as usize);
                total += 1;
            }
        }
        let acc = right as f64 / total as f64;
        assert!((0.4..0.8).contains(&acc), "pixel argmax accuracy {acc}");
        let other = synth_seg(&SynthSegSpec { seed: 1, ..spec }).unwrap().0;
        assert_ne!(a, other);
        assert!(synth_seg(&SynthSegSpec { classes: 1, ..spec }).is_none());
    }
}
