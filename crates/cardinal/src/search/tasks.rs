//! The default's search as independent tasks: each one training of one fold, scored on its
//! held-out rows. A task depends on nothing but the training rows, the configuration and its
//! own two numbers, so the tasks may run in any order, in other processes or on other
//! machines (the Python package runs them as joblib tasks, which a Dask backend spreads over
//! a cluster), and the choice made from their results is the one made in one process, to the
//! byte.

use std::sync::atomic::AtomicBool;

use serde::{Deserialize, Serialize};

use super::{candidates, decoding_from};
use crate::config::{Config, SearchScoring, FOREST_BLEND};
use crate::cv::{check_folds, summarize, CvReport, Decoding, FoldResult, FoldRun};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::runtime::{MemoryBudget, WaitPolicy};
use crate::system::System;
use crate::train::Event;

/// One task of the default's search: training number `training` of the search's plan (a
/// candidate, or the blended forest whose models three candidates are scored from) on every
/// row but fold `fold`'s, scored on that fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SearchTask {
    /// The training, from 0, in the plan's order.
    pub training: usize,
    /// The fold held out, from 0.
    pub fold: usize,
}

/// What a [`SearchTask`] found: its held-out fold's result for each candidate its training
/// scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchTaskResult {
    /// The task.
    pub task: SearchTask,
    /// The candidates scored, by preset name, in the order of `folds`.
    pub candidates: Vec<String>,
    /// The fold's result for each candidate.
    pub folds: Vec<FoldResult>,
}

/// One training of the search: a configuration, and the candidates (by index) scored from
/// each of its folds' models, with how each reads the model.
#[derive(Debug, Clone)]
struct Training {
    config: Config,
    scored: Vec<(usize, Decoding)>,
}

/// The search's trainings for a training file: the candidates, how each is trained, and the
/// folds.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Every candidate, in order of preference.
    pub all: Vec<Config>,
    trainings: Vec<Training>,
    /// Folds of the partition.
    pub folds: usize,
    /// Of those, the folds trained and scored (the first ones).
    pub folds_run: usize,
    scoring: SearchScoring,
}

impl Plan {
    /// The plan of `cfg`'s search on `train`: its candidates; the blended forest's trainings
    /// first, each fold's model scored as the blend and as the two candidates it holds (its
    /// networks alone, its forest alone: each trained exactly as that candidate alone would
    /// be), then every other candidate's own.
    pub(crate) fn new(cfg: &Config, train: &Dataset) -> Result<Self> {
        let n = train.n_rows();
        check_folds(cfg.search.folds, n)?;
        let all = candidates(cfg, n, train.labels.weights.is_some());
        let s = &cfg.search;
        Ok(Self::of_candidates(all, s.folds, s.folds_run(n), s.scoring))
    }

    /// The plan for these candidates, folds and scoring.
    pub(crate) fn of_candidates(
        all: Vec<Config>,
        folds: usize,
        folds_run: usize,
        scoring: SearchScoring,
    ) -> Self {
        let mut trainings = Vec::new();
        let mut covered = vec![false; all.len()];
        if let Some(blend) = all.iter().find(|c| c.preset == FOREST_BLEND) {
            let mut scored: Vec<(usize, Decoding)> = all
                .iter()
                .enumerate()
                .filter_map(|(i, c)| decoding_from(c, blend).map(|d| (i, d)))
                .collect();
            // The blend first: it is the one trained.
            scored.sort_by_key(|&(i, d)| (d != Decoding::AsTrained, i));
            for &(i, _) in &scored {
                covered[i] = true;
            }
            trainings.push(Training {
                config: blend.clone(),
                scored,
            });
        }
        for (i, c) in all.iter().enumerate() {
            if !covered[i] {
                trainings.push(Training {
                    config: c.clone(),
                    scored: vec![(i, Decoding::AsTrained)],
                });
            }
        }
        Self {
            all,
            trainings,
            folds,
            folds_run,
            scoring,
        }
    }

    /// Every task, training by training, fold by fold.
    pub(crate) fn tasks(&self) -> Vec<SearchTask> {
        (0..self.trainings.len())
            .flat_map(|training| (0..self.folds_run).map(move |fold| SearchTask { training, fold }))
            .collect()
    }

    /// The candidates `task`'s training scores, by preset name, the trained one first.
    pub(crate) fn names(&self, task: SearchTask) -> Vec<String> {
        self.trainings
            .get(task.training)
            .map_or_else(Vec::new, |t| {
                t.scored
                    .iter()
                    .map(|&(i, _)| self.all[i].preset.clone())
                    .collect()
            })
    }

    /// Runs `task` on `train` (the file the plan was made for).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &self,
        system: &dyn System,
        train: &Dataset,
        task: SearchTask,
        wait: WaitPolicy,
        memory_budget: MemoryBudget,
        cancel: &AtomicBool,
        forests: Option<&super::ForestCache>,
        on_event: &mut dyn FnMut(Event),
    ) -> Result<SearchTaskResult> {
        let training = self
            .trainings
            .get(task.training)
            .filter(|_| task.fold < self.folds_run)
            .ok_or_else(|| Error::OutOfRange {
                field: "search task".into(),
                value: format!("training {}, fold {}", task.training, task.fold),
                allowed: format!(
                    "trainings 0..{} and folds 0..{} of this search",
                    self.trainings.len(),
                    self.folds_run
                ),
            })?;
        let decodings: Vec<Decoding> = training.scored.iter().map(|&(_, d)| d).collect();
        let fold = FoldRun {
            k: self.folds,
            index: task.fold,
            empty: self.scoring.empty(),
            forests,
        };
        let folds = fold.train_and_score(
            system,
            train,
            &training.config,
            &decodings,
            wait,
            memory_budget,
            cancel,
            on_event,
        )?;
        Ok(SearchTaskResult {
            task,
            candidates: self.names(task),
            folds,
        })
    }

    /// Every candidate's cross-validation report, in the candidates' order, from the results
    /// of every task of the plan, each once, in any order. Results that are not exactly this
    /// plan's (another file's, another configuration's, a task missing or twice) are refused.
    pub(crate) fn reports(&self, results: &[SearchTaskResult]) -> Result<Vec<CvReport>> {
        let mismatch = |found: String| Error::Shape {
            what: "the search's task results".into(),
            found,
            expected: format!(
                "one result for each of the {} tasks of this search ({} trainings × {} folds)",
                self.tasks().len(),
                self.trainings.len(),
                self.folds_run
            ),
        };
        let mut sorted: Vec<&SearchTaskResult> = results.iter().collect();
        sorted.sort_by_key(|r| r.task);
        let tasks: Vec<SearchTask> = sorted.iter().map(|r| r.task).collect();
        if tasks != self.tasks() {
            return Err(mismatch(format!(
                "{} results, for other tasks",
                results.len()
            )));
        }
        let mut by_candidate: Vec<Vec<FoldResult>> = vec![Vec::new(); self.all.len()];
        for r in sorted {
            let names = self.names(r.task);
            if r.candidates != names || r.folds.len() != names.len() {
                return Err(mismatch(format!(
                    "task {:?} scoring {:?}, where this search's scores {names:?}",
                    r.task, r.candidates
                )));
            }
            let scored = &self.trainings[r.task.training].scored;
            for (&(i, _), fold) in scored.iter().zip(&r.folds) {
                if fold.index != r.task.fold {
                    return Err(mismatch(format!(
                        "task {:?} holding fold {}'s result",
                        r.task, fold.index
                    )));
                }
                by_candidate[i].push(fold.clone());
            }
        }
        Ok(by_candidate
            .into_iter()
            .map(|folds| summarize(self.folds, folds))
            .collect())
    }
}
