//! What the default's search did for a model ([`SearchRecord`]): data that the model, its
//! folder's `meta.json`, training and evaluation carry, below the search that makes it (public
//! at `cardinal::search`).

use serde::{Deserialize, Serialize};

use crate::config::{SearchScope, SearchScoring};

/// One candidate's cross-validated result: its mean example-F1 over the folds at every
/// threshold of the grid, and the threshold where that mean is best.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateScore {
    /// The candidate's preset name.
    pub preset: String,
    /// The system it is (`pnc`, `forest`, `forest-blend`; empty in records that predate it).
    #[serde(default)]
    pub system: String,
    /// Mean example-F1 (%) over the folds at `threshold`, an empty prediction for an empty
    /// gold set scored 1 (or as the record's `scoring` says).
    pub example_f1: f64,
    /// The decision threshold on `y_T` with the best mean (the grid point nearest 0.5 among
    /// ties).
    pub threshold: f64,
}

/// What the default's search did for a model: which candidates it scored, how, and which
/// it chose (saved with the model, in `meta.json`, and reported by `eval` and `info`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRecord {
    /// How it scored and decided, in words.
    pub rule: String,
    /// Folds of the cross-validation's partition.
    pub folds: usize,
    /// Of those, the folds each candidate was trained and scored on (`None` in records
    /// that predate the budget: all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folds_run: Option<usize>,
    /// Rows of the training file it cross-validated on.
    pub rows: usize,
    /// Which systems the candidates could be.
    pub scope: SearchScope,
    /// What the candidates were scored by (left out of records when the default).
    #[serde(default, skip_serializing_if = "SearchScoring::is_example_f1")]
    pub scoring: SearchScoring,
    /// Every candidate's score, in order of preference.
    pub scores: Vec<CandidateScore>,
    /// The preset name of the candidate chosen and trained.
    pub chosen: String,
}

impl SearchRecord {
    /// The folds each candidate was scored on.
    pub fn folds_run(&self) -> usize {
        self.folds_run.unwrap_or(self.folds)
    }

    /// The chosen candidate's score.
    pub fn chosen_score(&self) -> Option<&CandidateScore> {
        self.scores.iter().find(|s| s.preset == self.chosen)
    }

    /// The record in one line, as the front ends print it ([`summary`]).
    pub fn summary(&self) -> String {
        summary(
            &self.scores,
            self.folds,
            self.folds_run(),
            &self.chosen,
            self.scoring,
        )
    }
}

/// The search's choice in one line, as the front ends print it: `search: 5-fold CV
/// example-F1 (empty for empty scores 1) predict 63.10 at 0.5, paper-projected 66.02 at 0.35,
/// ...; training paper-projected at 0.35`.
pub fn summary(
    scores: &[CandidateScore],
    folds: usize,
    folds_run: usize,
    chosen: &str,
    scoring: SearchScoring,
) -> String {
    let all: Vec<String> = scores
        .iter()
        .map(|s| format!("{} {:.2} at {}", s.preset, s.example_f1, s.threshold))
        .collect();
    let at = scores
        .iter()
        .find(|s| s.preset == chosen)
        .map_or(String::new(), |s| format!(" at {}", s.threshold));
    format!(
        "search: {} {} {}; training {chosen}{at}",
        crate::config::cv_words(folds, folds_run),
        scoring.words(),
        all.join(", ")
    )
}
