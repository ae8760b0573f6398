//! The default's data-dependent rule: on a small training file, choose among a few
//! configurations by cross-validation on that file (see [`crate::search`]).

use serde::{Deserialize, Serialize};

use super::check::count;
use crate::error::Result;

/// Training rows a search candidate's cross-validation holds at most, all folds together
/// (at least one fold runs): [`SearchConfig::folds_run`].
pub const CV_TRAINING_ROWS: usize = 3000;

/// The cross-validation in words: "5-fold CV", or "1 of 5 CV folds (...)" where fewer than all run
/// (the folds held out are the first of the partition).
pub fn cv_words(folds: usize, run: usize) -> String {
    if run >= folds {
        format!("{folds}-fold CV")
    } else {
        format!("{run} of {folds} CV folds (<= {CV_TRAINING_ROWS} training rows a candidate)")
    }
}

/// When and how the rule searches: on in the `predict` preset ([`SearchConfig::predict`]),
/// off (`max_rows = 0`) in `paper`, with `--no-search`, and when a configuration sets
/// hyper-parameters of its own (`Config::with_overrides`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    /// Search when the training file has at most this many rows (0: never, train the
    /// configuration as it is). Larger files (Bibtex, 4880; Delicious, 12920) train the plain
    /// configuration: their dev split is large enough for early stopping, and a search
    /// there would multiply a training time of minutes.
    pub max_rows: usize,
    /// Folds of the cross-validation that scores each candidate.
    pub folds: usize,
    /// Which systems the candidates may be: every one ([`SearchScope::All`], the default), or
    /// only those that run Predict and Constrain's mechanism ([`SearchScope::Pnc`]: the
    /// energy, the unrolled ascent and the projection; `--system pnc`).
    #[serde(skip_serializing_if = "SearchScope::is_all")]
    pub scope: SearchScope,
    /// What the candidates are scored by: example-F1 with an empty prediction for an empty
    /// gold set scored 1 ([`SearchScoring::ExampleF1`], the default) or 0
    /// ([`SearchScoring::F1Samples`], scikit-learn's `f1_samples`).
    #[serde(skip_serializing_if = "SearchScoring::is_example_f1")]
    pub scoring: SearchScoring,
}

/// The score the default's search ranks its candidates by: mean example-F1 over the held-out
/// rows, at each candidate's threshold. The two differ only on rows whose gold label set is
/// empty, where an empty prediction is the right answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SearchScoring {
    /// An empty prediction for an empty gold set scores 1: "no labels" is a prediction, and
    /// a candidate that makes it where the data has it must not lose to one that never does.
    #[default]
    ExampleF1,
    /// An empty prediction for an empty gold set scores 0, as scikit-learn's
    /// `f1_score(average="samples")` (`scoring="f1_samples"`) with its default
    /// `zero_division`: the score of a `GridSearchCV` around the model.
    F1Samples,
}

impl SearchScoring {
    /// Whether this is the default (then the field is left out of saved configurations).
    pub fn is_example_f1(&self) -> bool {
        *self == Self::ExampleF1
    }

    /// The score's name in words, for the search's summary line.
    pub fn words(self) -> &'static str {
        match self {
            Self::ExampleF1 => "example-F1 (empty for empty scores 1)",
            Self::F1Samples => {
                "example-F1 (empty for empty scores 0, as scikit-learn's f1_samples)"
            }
        }
    }

    /// The metrics' convention for an empty prediction of an empty gold set.
    pub fn empty(self) -> crate::metrics::EmptyF1 {
        match self {
            Self::ExampleF1 => crate::metrics::EmptyF1::One,
            Self::F1Samples => crate::metrics::EmptyF1::Zero,
        }
    }
}

/// Which systems the default's search chooses among.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchScope {
    /// Every candidate: Predict and Constrain's and the forests (`forest`, `forest-blend`),
    /// which decide label sets without the energy, the ascent or the projection.
    #[default]
    All,
    /// Predict and Constrain's candidates only.
    Pnc,
}

impl SearchScope {
    /// Whether every system may be chosen (then the field is left out of saved
    /// configurations).
    pub fn is_all(&self) -> bool {
        *self == Self::All
    }
}

impl SearchConfig {
    /// The rule's settings in the `predict` preset (and with `--search`): five folds, so that
    /// each fold's model trains on four fifths of a small file and the choice averages five
    /// scores (docs/journal/2026-11-27-blend.md).
    pub fn predict() -> Self {
        Self {
            max_rows: 2000,
            folds: 5,
            scope: SearchScope::All,
            scoring: SearchScoring::ExampleF1,
        }
    }

    /// Of the `folds` folds, how many the search trains and scores on a training file of
    /// `n_rows` rows: every one while each candidate's trainings hold at most
    /// [`CV_TRAINING_ROWS`] rows in all, else as many as fit, at least one. On the development
    /// suite's files (at most 750 rows) that is every fold; on 2000 rows of a 5-fold
    /// partition, one (a hold-out of a fifth): the search then costs about what one training
    /// of each candidate costs, not five, and its cost grows no further with the rows.
    pub fn folds_run(&self, n_rows: usize) -> usize {
        let per_fold = n_rows * self.folds.saturating_sub(1) / self.folds.max(1);
        (CV_TRAINING_ROWS / per_fold.max(1)).clamp(1, self.folds.max(1))
    }

    /// Whether the rule searches on a training file of `n_rows` rows.
    pub fn applies(&self, n_rows: usize) -> bool {
        self.max_rows > 0 && n_rows <= self.max_rows && n_rows >= self.folds
    }

    /// Whether the rule searches on a training file of `n_rows` rows, and why, in one line for
    /// a user (printed when training starts).
    pub fn plan(&self, n_rows: usize) -> String {
        let over = match self.scope {
            SearchScope::All => {
                "every system's candidates (Predict and Constrain's and the forests)"
            }
            SearchScope::Pnc => "Predict and Constrain's candidates only",
        };
        if self.is_off() {
            "search: off (the configuration trains as it is)".into()
        } else if self.applies(n_rows) {
            format!(
                "search: on ({n_rows} training rows <= search.max_rows = {}): {} on the \
                 training rows over {over}, then the best trains",
                self.max_rows,
                cv_words(self.folds, self.folds_run(n_rows))
            )
        } else if n_rows < self.folds {
            format!(
                "search: off ({n_rows} training rows, fewer than its {} folds): the \
                 configuration trains as it is",
                self.folds
            )
        } else {
            format!(
                "search: off ({n_rows} training rows > search.max_rows = {}): the \
                 configuration trains as it is",
                self.max_rows
            )
        }
    }

    /// Whether it never searches (then the field is left out of saved configurations).
    pub fn is_off(&self) -> bool {
        self.max_rows == 0
    }

    /// Checks the fold count.
    pub fn validate(&self) -> Result<()> {
        count("search.folds", self.folds, 2, 20)
    }
}

impl Default for SearchConfig {
    /// Off, with `predict`'s folds: a section that names only `max_rows` (the Python
    /// estimator's switch) searches as `predict` does. Saved configurations always name both
    /// fields while the search is on, so older ones keep their folds.
    fn default() -> Self {
        Self {
            max_rows: 0,
            folds: 5,
            scope: SearchScope::All,
            scoring: SearchScoring::ExampleF1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fold on small files; beyond, as many as the budget holds (at least one), never
    /// more as the rows grow, and the rows trained within the budget whenever more than one
    /// fold runs.
    #[test]
    fn the_folds_run_keep_within_the_budget() {
        let s = SearchConfig::predict();
        assert_eq!(s.folds_run(129), 5);
        assert_eq!(s.folds_run(750), 5);
        assert_eq!(s.folds_run(1000), 3);
        assert_eq!(s.folds_run(2000), 1);
        let mut last = s.folds;
        for n in 5..=4000 {
            let run = s.folds_run(n);
            assert!(run <= last && run >= 1, "{n} rows: {run} folds");
            let per_fold = n * (s.folds - 1) / s.folds;
            assert!(
                run == 1 || run * per_fold <= CV_TRAINING_ROWS,
                "{n} rows: {run} folds"
            );
            last = run;
        }
        assert!(s.plan(2000).contains("1 of 5 CV folds"), "{}", s.plan(2000));
        assert!(s.plan(391).contains("5-fold CV"), "{}", s.plan(391));
    }
}
