//! Time spent per stage of training batches, summed over batches, for `cardinal bench`
//! (`stages_s`) and `bench/limit.py`: where an epoch's time goes, without a profiler.
//!
//! A stage's clock reads `Instant::now()` at its start and end (a few dozen reads per batch,
//! well under a microsecond against milliseconds of work) and changes no number. The top-level
//! stages ([`Stage::TOP`]) run one after another on the calling thread: their times are wall
//! time and add up to the batches' time. The others are parts of a top-level stage timed
//! inside its parallel sections (the unary and the count networks side by side, the unroll's
//! blocks): their times are summed over the threads that ran them, so with more than one
//! thread they add up to more than their stage's wall time, and a part timed around a call
//! that itself splits its rows over threads (a network's forward) includes waiting for them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A stage of a training batch (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Both networks forward and the counts `z` (wall).
    NetsForward,
    /// Part of [`Stage::NetsForward`]: the unary network.
    UnaryForward,
    /// Part of [`Stage::NetsForward`]: the count network.
    CountForward,
    /// The unrolled ascent of every block, forward and backward, with the energy's parameter
    /// gradients and the unary BCE (wall).
    Unroll,
    /// Part of [`Stage::Unroll`]: the taped forward pass (steps, projections, relaxed F1).
    UnrollForward,
    /// Part of [`Stage::Unroll`]: the backward pass through the steps.
    UnrollBackward,
    /// Part of [`Stage::Unroll`]: the energy's parameter gradients (two GEMMs per block).
    EnergyGrad,
    /// Summing the blocks' energy gradients and the count network's output gradient (wall).
    Loss,
    /// Both networks backward (wall).
    NetsBackward,
    /// Part of [`Stage::NetsBackward`]: the unary network.
    UnaryBackward,
    /// Part of [`Stage::NetsBackward`]: the count network.
    CountBackward,
    /// The AdaGrad update of every parameter (wall).
    Optimizer,
    /// Folding the weights into their moving average (wall).
    Average,
}

impl Stage {
    /// Every stage, in the order above.
    pub const ALL: [Stage; 13] = [
        Stage::NetsForward,
        Stage::UnaryForward,
        Stage::CountForward,
        Stage::Unroll,
        Stage::UnrollForward,
        Stage::UnrollBackward,
        Stage::EnergyGrad,
        Stage::Loss,
        Stage::NetsBackward,
        Stage::UnaryBackward,
        Stage::CountBackward,
        Stage::Optimizer,
        Stage::Average,
    ];

    /// The stage's name in `cardinal bench`'s `stages_s`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::NetsForward => "nets_forward",
            Stage::UnaryForward => "unary_forward",
            Stage::CountForward => "count_forward",
            Stage::Unroll => "unroll",
            Stage::UnrollForward => "unroll_forward",
            Stage::UnrollBackward => "unroll_backward",
            Stage::EnergyGrad => "energy_grad",
            Stage::Loss => "loss",
            Stage::NetsBackward => "nets_backward",
            Stage::UnaryBackward => "unary_backward",
            Stage::CountBackward => "count_backward",
            Stage::Optimizer => "optimizer",
            Stage::Average => "average",
        }
    }
}

/// Nanoseconds per [`Stage`], summed since the last [`StageClock::reset`]; shared by the
/// threads of a batch.
#[derive(Debug, Default)]
pub struct StageClock {
    ns: [AtomicU64; Stage::ALL.len()],
}

impl StageClock {
    /// Adds the time since `start` to `stage`.
    pub fn add(&self, stage: Stage, start: Instant) {
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.ns[stage as usize].fetch_add(ns, Ordering::Relaxed);
    }

    /// Runs `f`, adding its time to `stage`.
    pub fn time<T>(&self, stage: Stage, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.add(stage, start);
        out
    }

    /// Seconds of `stage` so far.
    pub fn seconds(&self, stage: Stage) -> f64 {
        self.ns[stage as usize].load(Ordering::Relaxed) as f64 * 1e-9
    }

    /// Sets every stage back to zero.
    pub fn reset(&self) {
        for ns in &self.ns {
            ns.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_indexed_in_order_and_named_once() {
        for (i, s) in Stage::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
        }
        let mut names: Vec<_> = Stage::ALL.iter().map(|s| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Stage::ALL.len());
        let clock = StageClock::default();
        clock.time(Stage::Loss, || {
            std::thread::sleep(std::time::Duration::from_millis(1))
        });
        assert!(clock.seconds(Stage::Loss) >= 1e-3);
        assert_eq!(clock.seconds(Stage::Unroll), 0.0);
        clock.reset();
        assert_eq!(clock.seconds(Stage::Loss), 0.0);
    }
}
