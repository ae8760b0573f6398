//! The one place a front end's configuration options become a validated [`Config`].

use super::{Config, SavedConfigs, SearchConfig, SearchScope, FOREST, FOREST_BLEND, PNC};
use crate::error::Result;

/// Everything a front end may say about the configuration, as data (the CLI's `--preset`,
/// `--config`, `--system`, `--search`/`--no-search` and `--seed`; Python's `preset`, `config`,
/// keyword parameters and `random_state`). [`ConfigRequest::resolve`] applies them in this
/// order, each over the one before:
///
/// 1. the preset: `preset`, else the one `file` names, else `predict` (see
///    `Config::unvalidated`);
/// 2. `file`, a JSON configuration read over it (one that changes a hyper-parameter turns
///    the default's search off unless it sets `search.max_rows`: `Config::with_overrides`);
/// 3. `overrides`, JSON read over that by the same rule (Python's keyword parameters); the
///    `baseline` fields at their values of old are dropped (`SavedConfigs::drop_old_settings`);
/// 4. `search` (`Some(true)`: the default's search on, `Some(false)`: off), then `system`
///    (`pnc` named: the search, when on, chooses among Predict and Constrain's candidates
///    only; `forest` or `forest-blend` named: the configuration made that forest, as the
///    search's candidate is);
/// 5. `seed`;
///
/// and the result is validated once.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConfigRequest<'a> {
    /// A preset by name.
    pub preset: Option<&'a str>,
    /// A JSON configuration file's text.
    pub file: Option<&'a str>,
    /// More JSON, read over the file.
    pub overrides: Option<&'a str>,
    /// The system to train (`config.system`).
    pub system: Option<&'a str>,
    /// The default's search on or off.
    pub search: Option<bool>,
    /// The seed.
    pub seed: Option<u64>,
    /// What saved configurations carry (the names the file may give as its `preset`, with
    /// the presets they are read over, and settings of old): the front end's registry;
    /// `None`: the product's, [`SavedConfigs::product`].
    pub saved: Option<&'a SavedConfigs>,
}

impl ConfigRequest<'_> {
    /// The validated configuration this request describes (see the type's docs).
    ///
    /// ```
    /// use cardinal_model::config::ConfigRequest;
    ///
    /// let cfg = ConfigRequest {
    ///     file: Some(r#"{"model": {"hidden": 32}}"#),
    ///     seed: Some(3),
    ///     ..Default::default()
    /// }
    /// .resolve()
    /// .unwrap();
    /// assert_eq!((cfg.preset.as_str(), cfg.model.hidden, cfg.seed), ("predict", 32, 3));
    /// ```
    pub fn resolve(&self) -> Result<Config> {
        let product;
        let saved = match self.saved {
            Some(saved) => saved,
            None => {
                product = SavedConfigs::product();
                &product
            }
        };
        let mut cfg = Config::unvalidated(self.preset, self.file, saved)?;
        if let Some(text) = self.overrides {
            cfg = cfg.with_overrides(text)?;
        }
        saved.drop_old_settings(&mut cfg.system_settings);
        match self.search {
            Some(true) => cfg.search = SearchConfig::predict(),
            Some(false) => cfg.search = SearchConfig::default(),
            None => {}
        }
        if let Some(system) = self.system {
            match system {
                // Asked for by name, Predict and Constrain alone: the default's search (when
                // on) chooses among its own candidates only.
                PNC => cfg.search.scope = SearchScope::Pnc,
                // A forest asked for by name is set up as the search's candidate would be.
                FOREST if cfg.model.forest.as_ref().is_none_or(|f| f.networks != 0.0) => {
                    cfg = cfg.forest();
                }
                FOREST_BLEND if cfg.model.forest.as_ref().is_none_or(|f| f.networks <= 0.0) => {
                    cfg = cfg.forest_blend();
                }
                _ => {}
            }
            cfg.system = system.to_string();
        }
        if let Some(seed) = self.seed {
            cfg.seed = seed;
        }
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each step overrides the one before: overrides over the file, the front end's options
    /// over both, the seed last; a value out of range is refused, named.
    #[test]
    fn each_step_overrides_the_one_before() {
        let file = r#"{"preset": "paper", "seed": 5, "model": {"hidden": 40}, "system": "custom"}"#;
        let cfg = ConfigRequest {
            file: Some(file),
            overrides: Some(r#"{"model": {"hidden": 20}}"#),
            system: Some("pnc"),
            search: Some(true),
            seed: Some(9),
            ..ConfigRequest::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(
            (
                cfg.preset.as_str(),
                cfg.model.hidden,
                cfg.system.as_str(),
                cfg.seed
            ),
            ("paper", 20, "pnc", 9)
        );
        // `pnc` named: the search chooses among Predict and Constrain's candidates only.
        assert_eq!(
            cfg.search,
            SearchConfig {
                scope: SearchScope::Pnc,
                ..SearchConfig::predict()
            }
        );
        // A forest named is set up as one, the search off.
        let forest = ConfigRequest {
            system: Some(FOREST),
            ..ConfigRequest::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(
            (forest.system.as_str(), forest.preset.as_str()),
            (FOREST, FOREST)
        );
        assert_eq!(forest.model.forest.as_ref().map(|f| f.networks), Some(0.0));
        assert!(forest.search.is_off());
        let off = ConfigRequest {
            preset: Some("predict"),
            search: Some(false),
            ..ConfigRequest::default()
        }
        .resolve()
        .unwrap();
        assert_eq!(off.search, SearchConfig::default());
        let e = ConfigRequest {
            overrides: Some(r#"{"model": {"dropout": 1.5}}"#),
            ..ConfigRequest::default()
        }
        .resolve()
        .unwrap_err();
        assert!(e.to_string().contains("model.dropout = 1.5"), "{e}");
    }
}
