//! The default's data-dependent rule: on a small training file, choose among a few
//! configurations by cross-validation on that file (see [`crate::search`]).

use serde::{Deserialize, Serialize};

use super::check::count;
use crate::error::Result;

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
        }
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
                "search: on ({n_rows} training rows <= search.max_rows = {}): {}-fold \
                 cross-validation on the training rows over {over}, then the best trains",
                self.max_rows, self.folds
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
    pub(crate) fn is_off(&self) -> bool {
        self.max_rows == 0
    }

    /// Checks the fold count.
    pub(crate) fn validate(&self) -> Result<()> {
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
        }
    }
}
