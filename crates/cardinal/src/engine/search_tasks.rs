//! The default's search spread out: its tasks listed, run one at a time wherever the caller
//! likes (another process, a cluster's worker), and their results handed to the training,
//! which then chooses and trains exactly as if it had run them itself.

use std::sync::atomic::AtomicBool;

use super::{require_rows, Engine};
use crate::config::Config;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::search::{Plan, SearchTask, SearchTaskResult};
use crate::train::{Event, Trained};

impl Engine {
    /// The tasks of the default's search that [`Engine::fit`] of `cfg` on `train` would run
    /// (one training of one fold each, [`SearchTask`]); empty when it would not search.
    ///
    /// ```
    /// use cardinal::config::Config;
    /// use cardinal::data::synthetic::{synthetic, SyntheticShape};
    /// use cardinal::engine::Engine;
    ///
    /// let shape = SyntheticShape {
    ///     train_rows: 200,
    ///     test_rows: 10,
    ///     features: 20,
    ///     labels: 6,
    ///     density: 0.2,
    ///     seed: 1,
    /// };
    /// let train = synthetic(&shape).train;
    /// let engine = Engine::default();
    /// let tasks = engine.search_tasks(&train, &Config::predict())?;
    /// // Six candidates on five folds: the blended forest's training scores three of them.
    /// assert_eq!(tasks.len(), 20);
    /// assert!(engine.search_tasks(&train, &Config::paper())?.is_empty());
    /// # Ok::<(), cardinal::Error>(())
    /// ```
    pub fn search_tasks(&self, train: &Dataset, cfg: &Config) -> Result<Vec<SearchTask>> {
        Ok(self
            .search_plan(train, cfg)?
            .map_or_else(Vec::new, |p| p.tasks()))
    }

    /// Runs one task of [`Engine::search_tasks`]: the same result wherever and in whichever
    /// order the tasks run, for any number of threads. `on_event` sees the fold's training;
    /// `cancel` stops it as it stops [`Engine::fit_cancellable`].
    pub fn run_search_task(
        &self,
        train: &Dataset,
        cfg: &Config,
        task: SearchTask,
        on_event: &mut dyn FnMut(Event),
        cancel: &AtomicBool,
    ) -> Result<SearchTaskResult> {
        let plan = self
            .search_plan(train, cfg)?
            .ok_or_else(|| Error::OutOfRange {
                field: "search task".into(),
                value: format!("training {}, fold {}", task.training, task.fold),
                allowed: "none: a fit of this configuration on these rows runs no search".into(),
            })?;
        let system = self.systems.for_config(cfg)?;
        plan.run(
            system,
            train,
            task,
            self.runtime.wait,
            self.runtime.memory_budget,
            cancel,
            None,
            on_event,
        )
    }

    /// [`Engine::fit_cancellable`] with the default's search choosing from `results`, the
    /// results of every one of its tasks ([`Engine::run_search_task`], in any order), not
    /// from folds it trains itself: the same model, to the byte. Results that are not
    /// exactly those of this search's tasks are refused.
    pub fn fit_with_search_results(
        &self,
        train: &Dataset,
        cfg: Config,
        results: &[SearchTaskResult],
        on_event: &mut dyn FnMut(Event),
        cancel: &AtomicBool,
    ) -> Result<Trained> {
        self.fit_fresh(train, cfg, on_event, cancel, Some(results))
    }

    /// The plan of the search [`Engine::fit`] would run (`None` where it runs none: a system
    /// other than Predict and Constrain, the search off, or a file outside its reach).
    fn search_plan(&self, train: &Dataset, cfg: &Config) -> Result<Option<Plan>> {
        let system = self.systems.for_config(cfg)?;
        require_rows(train, &cfg.train)?;
        if !system.searched() || !cfg.search.applies(train.n_rows()) {
            return Ok(None);
        }
        crate::system::check(system, cfg)?;
        Plan::new(cfg, train).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tasks run out of order, each in a pool of its own thread count, give the search's
    /// results: the model trained from them is the one `fit` trains.
    #[test]
    fn a_fit_from_tasks_run_elsewhere_is_the_fit() {
        let train = cardinal_testkit::toy(&cardinal_testkit::Toy {
            name: "toy",
            rows: 48,
            features: 10,
            labels: 5,
            max_labels: 3,
            fallback_label: 0,
            seed: 3,
        });
        let mut cfg = Config::predict();
        cfg.model.hidden = 12;
        cfg.model.card_hidden = 6;
        cfg.model.energy_hidden = 4;
        cfg.train.epochs = 2;
        cfg.train.batch_size = 10;
        cfg.search.folds = 3;
        let never = AtomicBool::new(false);
        let engine = Engine::default();
        let whole = engine.fit(&train, cfg.clone(), &mut |_| {}).unwrap().model;
        let tasks = engine.search_tasks(&train, &cfg).unwrap();
        assert_eq!(tasks.len(), 12);
        let results: Vec<SearchTaskResult> = tasks
            .iter()
            .rev()
            .map(|&t| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(1 + t.fold % 2)
                    .build()
                    .unwrap();
                pool.install(|| engine.run_search_task(&train, &cfg, t, &mut |_| {}, &never))
                    .unwrap()
            })
            .collect();
        let from_tasks = engine
            .fit_with_search_results(&train, cfg.clone(), &results, &mut |_| {}, &never)
            .unwrap()
            .model;
        assert!(whole.search().is_some());
        assert_eq!(from_tasks.search(), whole.search());
        assert_eq!(from_tasks.config(), whole.config());
        let (a, b) = (
            engine.predict(&whole, &train.features).unwrap(),
            engine.predict(&from_tasks, &train.features).unwrap(),
        );
        assert_eq!((a.y, a.z), (b.y, b.z));
        // Another search's results are refused.
        let mut other = cfg.clone();
        other.search.folds = 4;
        let e = engine
            .fit_with_search_results(&train, other, &results, &mut |_| {}, &never)
            .unwrap_err();
        assert!(e.to_string().contains("the search's task results"), "{e}");
        // No search, no tasks.
        assert!(engine
            .search_tasks(&train, &Config::paper())
            .unwrap()
            .is_empty());
    }
}
