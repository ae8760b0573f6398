//! Timing the model's kernels for benchmarks (`cardinal bench`, `bench/vs_peer.sh`): whole
//! training epochs over every row, with no dev evaluation or early stopping, and inference.

use super::Engine;
use crate::config::Config;
use crate::data::{CsrMatrix, Dataset};
use crate::error::Result;
use crate::model::Params;
use crate::pipeline::{Outputs, Stage, Workspace};
use crate::runtime::WaitPolicy;
use crate::train::{epoch_over_all, TrainState};

/// A model in training, stepped an epoch at a time for timing (see [`Engine::epoch_bench`]).
pub struct EpochBench {
    state: TrainState,
    ws: Workspace<f32>,
    grad: Params<f32>,
    wait: WaitPolicy,
}

impl Engine {
    /// A freshly initialised model of `cfg` on `train`, ready to be timed epoch by epoch.
    pub fn epoch_bench(&self, train: &Dataset, cfg: &Config) -> Result<EpochBench> {
        cfg.validate()?;
        let state = TrainState::new_within(train, cfg, self.runtime.memory_budget)?;
        let grad = state.model.params.zeros_like();
        Ok(EpochBench {
            state,
            ws: Workspace::default(),
            grad,
            wait: self.runtime.wait,
        })
    }
}

impl EpochBench {
    /// One training epoch over every row of `train` (the data the bench was made for); the
    /// mean loss per batch.
    pub fn epoch(&mut self, train: &Dataset) -> Result<f64> {
        epoch_over_all(
            train,
            &mut self.state,
            &mut self.ws,
            &mut self.grad,
            self.wait,
        )
    }

    /// Every training stage's name (as in `cardinal bench`'s `stages_s`) and its seconds in
    /// the epochs run since the last call (or since the bench was made), in a fixed order;
    /// the clock starts again from zero.
    pub fn take_stage_seconds(&self) -> Vec<(&'static str, f64)> {
        let seconds = Stage::ALL
            .iter()
            .map(|&stage| (stage.name(), self.ws.clock.seconds(stage)))
            .collect();
        self.ws.clock.reset();
        seconds
    }

    /// The number of counts the count network chooses from.
    pub fn n_counts(&self) -> usize {
        self.state.model.counts.len()
    }

    /// Inference on every row of `x`, `batch` rows at a time.
    pub fn predict(&self, x: &CsrMatrix, batch: usize) -> Result<Outputs<f32>> {
        crate::eval::predict(&self.state.model, x, batch)
    }
}
