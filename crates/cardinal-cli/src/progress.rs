//! Training progress on standard error: a bar with an ETA on a terminal, one line per epoch
//! anywhere else (a pipe, `nohup`, CI, a notebook), one JSON object per epoch with
//! `--log-format json`.
//!
//! The ETA knows about early stopping: with a dev split and a patience, the first phase may
//! stop after `patience - epochs since the best` more epochs, or run to its limit; the ETA
//! gives both ends, plus the second phase's epochs on all of train.

use std::time::{Duration, Instant};

use cardinal::config::Config;
use cardinal::engine::{EpochRecord, Event, Progress};
use indicatif::{ProgressBar, ProgressStyle};

use crate::log::{self, LogFormat, PROGRESS_TARGET};

/// Epochs still to run after the current one, at least and at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EpochsLeft {
    /// If the first phase stops as early as it can.
    pub min: usize,
    /// If it runs to its epoch limit.
    pub max: usize,
}

/// The schedule's rules as far as the remaining time is concerned, and where the run stands.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    phase1_epochs: usize,
    phase2_epochs: usize,
    patience: usize,
    phase: u8,
    done_in_phase: usize,
    best_dev: Option<f64>,
    since_best: usize,
}

impl Schedule {
    /// The schedule of `cfg`, before its first epoch.
    pub(crate) fn new(cfg: &Config) -> Self {
        let tc = &cfg.train;
        Self {
            phase1_epochs: tc.epochs,
            phase2_epochs: tc.full_epochs,
            patience: if tc.has_dev() { tc.patience } else { 0 },
            phase: 1,
            done_in_phase: 0,
            best_dev: None,
            since_best: 0,
        }
    }

    /// Where a resumed run stands: its phase, the epochs done in it, the early-stopping state
    /// (as [`Progress`] holds them).
    pub(crate) fn resume(
        &mut self,
        phase: u8,
        epochs_done: usize,
        best_dev: Option<f64>,
        since_best: usize,
    ) {
        self.phase = phase;
        self.done_in_phase = epochs_done;
        self.best_dev = best_dev;
        self.since_best = since_best;
    }

    /// A phase begins (`epochs` from the event: what the phase actually runs at most). A
    /// resumed run announces the phase it resumes in: its epochs done are kept.
    pub(crate) fn start(&mut self, phase: u8, epochs: usize) {
        if phase != self.phase {
            self.done_in_phase = 0;
        }
        self.phase = phase;
        match phase {
            1 => self.phase1_epochs = epochs,
            _ => self.phase2_epochs = epochs,
        }
    }

    /// An epoch finished with this dev F1 (phase 1 with a dev split).
    pub(crate) fn epoch(&mut self, dev_f1: Option<f64>) {
        self.done_in_phase += 1;
        if self.phase == 1 && self.patience > 0 {
            let f1 = dev_f1.unwrap_or(0.0);
            if self.best_dev.is_none_or(|b| f1 > b) {
                self.best_dev = Some(f1);
                self.since_best = 0;
            } else {
                self.since_best += 1;
            }
        }
    }

    /// Whole epochs left after the ones finished (the current one, if any, included).
    pub(crate) fn left(&self) -> EpochsLeft {
        if self.phase >= 2 {
            let n = self.phase2_epochs.saturating_sub(self.done_in_phase);
            return EpochsLeft { min: n, max: n };
        }
        let max1 = self.phase1_epochs.saturating_sub(self.done_in_phase);
        let min1 = if self.patience > 0 {
            max1.min(self.patience - self.since_best.min(self.patience))
        } else {
            max1
        };
        EpochsLeft {
            min: min1 + self.phase2_epochs,
            max: max1 + self.phase2_epochs,
        }
    }
}

/// `1:05`, `12:40`, `1:02:03`.
pub(crate) fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The ETA text for `left` epochs (minus the `done` fraction of the current one) at `per_epoch`.
pub(crate) fn eta(left: EpochsLeft, done: f64, per_epoch: Duration) -> String {
    let at = |n: usize| clock(per_epoch.mul_f64((n as f64 - done).max(0.0)));
    if left.min == left.max {
        format!("ETA {}", at(left.max))
    } else {
        format!(
            "ETA {}–{} (early stopping: {}–{} epochs)",
            at(left.min),
            at(left.max),
            left.min,
            left.max
        )
    }
}

/// Reports a training run's events.
pub(crate) struct TrainProgress {
    bar: Option<ProgressBar>,
    quiet: bool,
    schedule: Schedule,
    batches_per_epoch: usize,
    epoch_start: Instant,
    /// Wall-clock seconds of every finished epoch, dev evaluation included.
    epoch_seconds: Vec<f64>,
}

impl TrainProgress {
    /// Progress for a run of `cfg`; `quiet` shows nothing but warnings.
    pub(crate) fn new(cfg: &Config, quiet: bool) -> Self {
        let bar = (!quiet && log::interactive()).then(|| {
            let bar = ProgressBar::new(0);
            bar.set_style(
                ProgressStyle::with_template("phase {prefix} {bar:30} {pos}/{len} batches  {msg}")
                    .expect("valid template"),
            );
            bar
        });
        Self {
            bar,
            quiet,
            schedule: Schedule::new(cfg),
            batches_per_epoch: 1,
            epoch_start: Instant::now(),
            epoch_seconds: Vec::new(),
        }
    }

    /// Continues from a resumed run's state (see [`Schedule::resume`]).
    pub(crate) fn resume(&mut self, p: &Progress) {
        self.schedule
            .resume(p.phase, p.epochs_done, p.best_dev_f1, p.since_best);
    }

    /// The mean wall-clock time of an epoch so far.
    fn per_epoch(&self) -> Option<Duration> {
        let n = self.epoch_seconds.len();
        (n > 0).then(|| Duration::from_secs_f64(self.epoch_seconds.iter().sum::<f64>() / n as f64))
    }

    /// Handles one training event.
    pub(crate) fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Start {
                phase,
                epochs,
                batches_per_epoch,
            } => self.on_start(phase, epochs, batches_per_epoch),
            Event::Batch {
                epoch, batch, loss, ..
            } => self.on_batch(epoch, batch, loss),
            Event::Searching {
                candidates,
                folds,
                folds_run,
                rows,
            } => {
                if !self.quiet && log::format() == LogFormat::Text {
                    errln!(
                        "search: {candidates} candidate configurations, {} on the {rows} training rows (--no-search trains `predict` as it is)",
                        cardinal::config::cv_words(folds, folds_run)
                    );
                }
            }
            Event::SearchFold {
                candidates,
                fold,
                folds_run,
                seconds,
            } => {
                if self.quiet {
                    return;
                }
                let line = cardinal::search::fold_line(candidates, fold, folds_run, seconds);
                self.say(line, |line| {
                    tracing::info!(
                        target: PROGRESS_TARGET,
                        event = "search_fold",
                        fold,
                        folds_run,
                        seconds,
                        "{line}"
                    )
                });
            }
            Event::Searched { record } => {
                if self.quiet {
                    return;
                }
                let (chosen, folds) = (&record.chosen, record.folds);
                let line = record.summary();
                self.say(line, |line| {
                    tracing::info!(
                        target: PROGRESS_TARGET,
                        event = "search",
                        chosen,
                        folds,
                        "{line}"
                    )
                });
            }
            Event::Epoch(rec) => self.on_epoch(rec),
        }
    }

    /// A line of the search's progress: above the bar, on stderr, or as the JSON log's
    /// event (`json` logs it).
    fn say(&self, line: String, json: impl FnOnce(&str)) {
        match (&self.bar, log::format()) {
            (Some(bar), _) => bar.println(line),
            (None, LogFormat::Text) => errln!("{line}"),
            (None, LogFormat::Json) => json(&line),
        }
    }

    /// A phase starts: the bar is reset, or the phase is announced.
    fn on_start(&mut self, phase: u8, epochs: usize, batches_per_epoch: usize) {
        self.schedule.start(phase, epochs);
        self.batches_per_epoch = batches_per_epoch.max(1);
        self.epoch_start = Instant::now();
        if let Some(bar) = &self.bar {
            bar.set_prefix(phase.to_string());
            bar.set_length((epochs * batches_per_epoch) as u64);
            bar.set_position(0);
        } else if !self.quiet {
            let what = if phase == 1 {
                "the train part of the split"
            } else {
                "all of train"
            };
            match log::format() {
                LogFormat::Text => errln!(
                    "phase {phase}: up to {epochs} epochs of {batches_per_epoch} batches on {what}"
                ),
                LogFormat::Json => tracing::info!(
                    target: PROGRESS_TARGET,
                    event = "phase",
                    phase,
                    epochs,
                    batches_per_epoch,
                    "phase {phase} starts"
                ),
            }
        }
    }

    /// A batch was trained on: the bar moves, with the loss and the time left.
    fn on_batch(&mut self, epoch: usize, batch: usize, loss: f64) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
            let done = (batch + 1) as f64 / self.batches_per_epoch as f64;
            // Before the first epoch ends, its own pace so far is the estimate.
            let so_far = || self.epoch_start.elapsed().div_f64(done);
            let eta = self
                .per_epoch()
                .or_else(|| (batch >= 2).then(so_far))
                .map(|d| format!("  {}", eta(self.schedule.left(), done, d)))
                .unwrap_or_default();
            bar.set_message(format!("epoch {epoch} loss {loss:.4}{eta}"));
        }
    }

    /// An epoch finished: its line, with the time left.
    fn on_epoch(&mut self, rec: &EpochRecord) {
        self.epoch_seconds
            .push(self.epoch_start.elapsed().as_secs_f64());
        self.epoch_start = Instant::now();
        self.schedule.epoch(rec.dev_example_f1);
        if self.quiet {
            return;
        }
        let left = self.schedule.left();
        let eta_text = eta(left, 0.0, self.per_epoch().unwrap_or_default());
        let dev = rec
            .dev_example_f1
            .map(|f| format!(" dev F1 {f:.2}"))
            .unwrap_or_default();
        let line = format!(
            "phase {} epoch {:>3}: loss {:.4}{dev}  ({:.2} s/epoch)",
            rec.phase, rec.epoch, rec.loss, rec.seconds
        );
        match (&self.bar, log::format()) {
            (Some(bar), _) => bar.println(line),
            (None, LogFormat::Text) => errln!("{line}  {eta_text}"),
            (None, LogFormat::Json) => tracing::info!(
                target: PROGRESS_TARGET,
                event = "epoch",
                phase = rec.phase,
                epoch = rec.epoch,
                loss = rec.loss,
                dev_example_f1 = rec.dev_example_f1,
                dev_mean_z = rec.dev_mean_z,
                seconds = rec.seconds,
                epochs_left_min = left.min,
                epochs_left_max = left.max,
                "epoch finished"
            ),
        }
    }

    /// Clears the bar.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(epochs: usize, full: usize, patience: usize) -> Schedule {
        let mut cfg = Config::predict();
        cfg.train.epochs = epochs;
        cfg.train.full_epochs = full;
        cfg.train.patience = patience;
        Schedule::new(&cfg)
    }

    #[test]
    fn early_stopping_bounds_the_epochs_left() {
        let mut s = schedule(60, 2, 5);
        s.start(1, 60);
        assert_eq!(s.left(), EpochsLeft { min: 7, max: 62 });
        s.epoch(Some(30.0));
        s.epoch(Some(31.0));
        // Best just now: at least `patience` more epochs.
        assert_eq!(s.left(), EpochsLeft { min: 7, max: 60 });
        s.epoch(Some(30.5));
        s.epoch(Some(31.0)); // not better than 31.0
        assert_eq!(s.left(), EpochsLeft { min: 5, max: 58 });
        s.start(2, 2);
        s.epoch(None);
        assert_eq!(s.left(), EpochsLeft { min: 1, max: 1 });
    }

    #[test]
    fn a_resumed_run_counts_from_where_it_stopped() {
        let mut s = schedule(60, 2, 5);
        s.resume(1, 10, Some(40.0), 3);
        s.start(1, 60);
        assert_eq!(
            s.left(),
            EpochsLeft {
                min: 2 + 2,
                max: 50 + 2
            }
        );
    }

    #[test]
    fn without_patience_the_epoch_count_is_known() {
        let mut s = schedule(10, 0, 0);
        s.start(1, 10);
        s.epoch(Some(1.0));
        assert_eq!(s.left(), EpochsLeft { min: 9, max: 9 });
        assert_eq!(eta(s.left(), 0.5, Duration::from_secs(2)), "ETA 0:17");
    }

    #[test]
    fn eta_gives_both_ends() {
        let left = EpochsLeft { min: 3, max: 40 };
        assert_eq!(
            eta(left, 0.0, Duration::from_secs(2)),
            "ETA 0:06–1:20 (early stopping: 3–40 epochs)"
        );
        assert_eq!(clock(Duration::from_secs(3723)), "1:02:03");
    }
}
