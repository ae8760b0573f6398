//! Reading configurations from JSON (the range check of every field: `range_tests.rs`).

use super::*;

#[test]
fn json_over_a_preset_keeps_the_preset() {
    let cfg = Config::from_json_over(&Config::predict(), r#"{"inference": {"steps": 7}}"#).unwrap();
    assert_eq!(cfg.inference.steps, 7);
    assert_eq!(cfg.loss.cardinality_weight, 1.0);
    assert_eq!(cfg.preset, "predict");
    let cfg = Config::from_json_over(
        &Config::predict(),
        r#"{"model": {"counts": {"kind": "fixed", "min": 1, "max": 4}}}"#,
    )
    .unwrap();
    assert_eq!(cfg.model.counts, CountRange::Fixed { min: 1, max: 4 });
    let err = Config::from_json_over(&Config::paper(), r#"{"train": {"lr": -1}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("train.lr"), "{err}");
}

/// A configuration that changes hyper-parameters turns the default's search off (its
/// candidates would replace them) unless it sets `search.max_rows`; seed, system and preset
/// alone keep it, and so does a field set to the value it has.
#[test]
fn hyper_parameters_turn_the_search_off_unless_it_is_named() {
    let predict = Config::predict();
    assert!(!predict.search.is_off());
    let off = predict
        .with_overrides(r#"{"model": {"hidden": 32}}"#)
        .unwrap();
    assert!(off.search.is_off() && off.model.hidden == 32);
    let kept = predict
        .with_overrides(r#"{"seed": 3, "system": "pnc", "preset": "predict"}"#)
        .unwrap();
    assert_eq!(kept.search, predict.search);
    let named = predict
        .with_overrides(r#"{"threshold": 0.4, "search": {"max_rows": 500}}"#)
        .unwrap();
    assert_eq!(named.search.max_rows, 500);
    // Its own value changes nothing; the search's scoring is not its switch.
    let same = format!(
        r#"{{"train": {{"epochs": {}}}, "search": {{"scoring": "f1-samples"}}}}"#,
        predict.train.epochs
    );
    let same = predict.with_overrides(&same).unwrap();
    assert_eq!(same.search.max_rows, predict.search.max_rows);
    assert_eq!(same.search.scoring, super::SearchScoring::F1Samples);
    let other = format!(
        r#"{{"train": {{"epochs": {}}}, "search": {{"scoring": "f1-samples"}}}}"#,
        predict.train.epochs + 1
    );
    let other = predict.with_overrides(&other).unwrap();
    assert!(other.search.is_off());
    assert_eq!(other.search.scoring, super::SearchScoring::F1Samples);
    let cfg = Config::resolve(None, Some(r#"{"train": {"epochs": 3}}"#), None).unwrap();
    assert!(cfg.search.is_off() && cfg.preset == "predict");
    // A saved configuration names its search when it was on.
    let saved = serde_json::to_string(&predict).unwrap();
    assert_eq!(Config::resolve(None, Some(&saved), None).unwrap(), predict);
}

#[test]
fn partial_json_keeps_defaults() {
    let cfg = Config::from_json(r#"{"inference": {"steps": 7}}"#).unwrap();
    assert_eq!(cfg.inference.steps, 7);
    assert_eq!(cfg.inference.eta, 0.005);
    assert_eq!(cfg.train.batch_size, 50);
}

/// Older `config.json` files carry `inference.mirror` and `inference.learn_eta` as
/// `false`: they still load; any other value is refused by name.
#[test]
fn retired_fields_load_when_off_and_are_refused_when_on() {
    let cfg =
        Config::from_json(r#"{"inference": {"mirror": false, "learn_eta": false, "steps": 3}}"#)
            .unwrap();
    assert_eq!(cfg.inference.steps, 3);
    for json in [
        r#"{"inference": {"mirror": true}}"#,
        r#"{"inference": {"learn_eta": true}}"#,
    ] {
        let err = Config::from_json(json).unwrap_err().to_string();
        assert!(err.contains("no longer supported"), "{err}");
    }
}

#[test]
fn out_of_range_fields_are_named() {
    let err = Config::from_json(r#"{"inference": {"eta": -1}}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("inference.eta") && err.contains("-1") && err.contains("> 0"),
        "{err}"
    );
    let err = Config::from_json(r#"{"train": {"dev_fraction": 1.5}}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("train.dev_fraction") && err.contains("1.5"),
        "{err}"
    );
    let err = Config::from_json(r#"{"model": {"counts": {"kind": "fixed", "min": 5, "max": 2}}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("model.counts.max"), "{err}");
    let err = Config::from_json(r#"{"inference": {"train_projection": "bogus"}}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("inference.train_projection")
            && err.contains("bogus")
            && err.contains("exact|"),
        "{err}"
    );
    let err = Config::from_json(r#"{"loss": {"iterate_weights": "all"}}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("loss.iterate_weights") && err.contains("authors"),
        "{err}"
    );
    let err = Config::from_json(r#"{"train": {"batch_size": -3}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("train.batch_size"), "{err}");
    let err = Config::from_json(r#"{"train": {"bogus": 1}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bogus"), "{err}");
}

/// A configuration naming a preset that does not exist is refused, naming it; the names saved
/// configurations carry still load.
#[test]
fn an_unknown_preset_named_in_the_configuration_is_refused() {
    let e = Config::resolve(None, Some(r#"{"preset": "bogus"}"#), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"bogus\" is not a preset") && e.contains("paper, predict"),
        "{e}"
    );
    for preset in ["paper", "predict", "paper-printed"] {
        let text = format!(r#"{{"preset": "{preset}"}}"#);
        assert_eq!(
            Config::resolve(None, Some(&text), None).unwrap().preset,
            preset
        );
    }
    // A forest's name builds that forest, as `--system forest` does: the configuration
    // records the system it trains.
    for forest in [FOREST, FOREST_BLEND] {
        let text = format!(r#"{{"preset": "{forest}"}}"#);
        let cfg = Config::resolve(None, Some(&text), None).unwrap();
        assert_eq!((cfg.system.as_str(), cfg.preset.as_str()), (forest, forest));
        assert!(cfg.model.forest.is_some());
    }
    // The other saved configurations' names load with their system, as config.json saves
    // them; without it the name would label another system's training, and is refused.
    // A crate's names (here a family `row-*` read over `paper`) are known where its registry
    // is handed over, and only there.
    let names = SavedConfigs::product().with(SavedName {
        name: NameMatch::Prefix("row-"),
        base: "paper",
    });
    let request = |file: &str, names| {
        ConfigRequest {
            file: Some(file),
            saved: names,
            ..ConfigRequest::default()
        }
        .resolve()
    };
    for (saved, system) in [
        ("paper-wide", "pnc"),
        ("row-spen", "spen"),
        ("row-3", "pnc"),
    ] {
        let bare = format!(r#"{{"preset": "{saved}"}}"#);
        let e = request(&bare, Some(&names)).unwrap_err().to_string();
        assert!(e.contains("is not a preset but the name of a saved"), "{e}");
        let named = format!(r#"{{"preset": "{saved}", "system": "{system}"}}"#);
        let cfg = request(&named, Some(&names)).unwrap();
        // Read over `paper`: its settings, not `predict`'s.
        assert_eq!(cfg.model.hidden, Config::paper().model.hidden, "{saved}");
    }
    let e = request(r#"{"preset": "row-3", "system": "pnc"}"#, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("preset = \"row-3\" is not a preset"), "{e}");
}

/// The refusal of `text` read over the `paper` preset.
fn refusal_over_paper(text: &str) -> String {
    Config::from_json_over(&Config::paper(), text)
        .unwrap_err()
        .to_string()
}

/// A JSON array is not a configuration nor a section, though serde reads one by position.
#[test]
fn arrays_are_refused_at_the_top_level_and_in_every_section() {
    for text in ["[]", "[\"predict\", 3]"] {
        let err = refusal_over_paper(text);
        assert_eq!(
            err,
            "invalid configuration: the top level must be an object, found an array at line 1, \
             column 1"
        );
        assert_eq!(Config::from_json(text).unwrap_err().to_string(), err);
        assert!(Config::resolve(None, Some(text), None).is_err());
    }
    for section in ["model", "inference", "loss", "train", "baseline"] {
        let err = refusal_over_paper(&format!("{{\"{section}\": []}}"));
        let column = section.len() + 6;
        assert_eq!(
            err,
            format!(
                "invalid configuration: `{section}` must be an object, found an array at line \
                 1, column {column}"
            )
        );
    }
    let text = "{\n  \"model\": {\n    \"counts\": [\n      \"fixed\", 1, 4\n    ]\n  }\n}";
    assert_eq!(
        refusal_over_paper(text),
        "invalid configuration: `model.counts` must be an object, found an array at line 3, \
         column 15"
    );
    let err = refusal_over_paper(r#"{"train": {"dev_fold": [5, 0]}}"#);
    assert_eq!(
        err,
        "invalid configuration: `train.dev_fold` must be an object or null, found an array at \
         line 1, column 24"
    );
    let err = refusal_over_paper(r#"{"model": null}"#);
    assert!(
        err.contains("`model` must be an object, found null at line 1"),
        "{err}"
    );
    let err = refusal_over_paper(r#"{"loss": 3}"#);
    assert!(
        err.contains("`loss` must be an object, found integer `3`"),
        "{err}"
    );
    let cfg = Config::from_json_over(&Config::paper(), r#"{"train": {"dev_fold": null}}"#).unwrap();
    assert_eq!(cfg.train.dev_fold, None);
}

/// Unknown and misplaced fields are named by their path and their position in the user's
/// text, not in the configuration merged over the preset.
#[test]
fn unknown_fields_are_named_with_their_line_and_column_in_the_users_text() {
    let text = "{\n  \"inference\": {\"steps\": 3},\n  \"model\": {\n    \"hidden\": 16,\n    \
                \"eta\": 1\n  }\n}\n";
    for err in [
        refusal_over_paper(text),
        Config::from_json_over(&Config::predict(), text)
            .unwrap_err()
            .to_string(),
        Config::resolve(None, Some(text), None)
            .unwrap_err()
            .to_string(),
    ] {
        assert!(
            err.starts_with("invalid configuration at `model.eta`: unknown field `eta`, expected ")
                && err.ends_with(" at line 5, column 9"),
            "{err}"
        );
    }
    let err = refusal_over_paper("{\n  \"steps\": 3\n}");
    assert!(
        err.starts_with("invalid configuration at `steps`: unknown field `steps`")
            && err.ends_with(" at line 2, column 9"),
        "{err}"
    );
    let err = refusal_over_paper(
        "{\"model\": {\"counts\": {\"kind\": \"auto\", \"coverage\": 0.9, \"max\": 3}}}",
    );
    assert!(
        err.contains("`model.counts`") && err.contains("unknown field `max`"),
        "{err}"
    );
    let err = refusal_over_paper("{\"train\": {\"dev_fold\": {\"k\": 5, \"index\": 0, \"n\": 1}}}");
    assert!(
        err.contains("`train.dev_fold.n`") && err.contains("line 1"),
        "{err}"
    );
    let err = refusal_over_paper("{\"train\": {\"lr\": 0.1, \"lr\": 0.2}}");
    assert!(err.contains("duplicate field `lr`"), "{err}");
    let err = refusal_over_paper("{\"train\": {}} {}");
    assert!(err.contains("trailing characters at line 1"), "{err}");
}

/// The projection parameters, read aside from the rest of `inference` (`ProjParams`), are
/// refused as its other fields are: by path, line and column, and by value and range.
#[test]
fn projection_parameters_are_refused_by_path_and_position() {
    let err = refusal_over_paper("{\"inference\": {\n  \"steps\": 3,\n  \"smooth_eps\": \"x\"\n}}");
    assert_eq!(
        err,
        "invalid configuration at `inference.smooth_eps`: invalid type: string \"x\", expected \
         f64 at line 3, column 19"
    );
    let err = refusal_over_paper("{\"inference\": {\n  \"rounds\": 2,\n  \"roundz\": 2\n}}");
    assert!(
        err.starts_with("invalid configuration at `inference.roundz`: unknown field `roundz`, ")
            && err.contains("`rounds`")
            && err.ends_with(" at line 3, column 10"),
        "{err}"
    );
    let err = refusal_over_paper("{\"inference\": {\"fp_iters\": 2, \"fp_iters\": 3}}");
    assert!(err.contains("duplicate field `fp_iters`"), "{err}");
    let err = refusal_over_paper("{\"inference\": {\"mirror\": false, \"smooth_eps\": 0}}");
    assert_eq!(
        err,
        "inference.smooth_eps = 0 is out of range: expected a finite number > 0"
    );
    let cfg = Config::from_json_over(
        &Config::paper(),
        "{\"inference\": {\"mirror\": false, \"rounds\": 5, \"learn_eta\": false}}",
    )
    .unwrap();
    let mut want = Config::paper();
    want.inference.proj.rounds = 5;
    assert_eq!(cfg, want);
}

/// A value of the wrong type is named by its path and its position in the user's text.
#[test]
fn type_errors_are_named_with_their_line_in_the_users_text() {
    let text =
        "{\n  \"model\": {\"hidden\": 16},\n  \"inference\": {\n    \"steps\": \"x\"\n  }\n}";
    assert_eq!(
        refusal_over_paper(text),
        "invalid configuration at `inference.steps`: invalid type: string \"x\", expected usize \
         at line 4, column 16"
    );
    let err = refusal_over_paper("{\n\"seed\": -1}");
    assert!(
        err.starts_with("invalid configuration at `seed`:") && err.contains("at line 2"),
        "{err}"
    );
}

/// What a valid configuration meant before still holds: fields left out keep the preset's, a
/// counts range replaces the preset's, the retired fields load when `false`, and a saved
/// (complete, pretty-printed) configuration loads unchanged.
#[test]
fn valid_configurations_read_as_before() {
    let text = "{\n  \"inference\": {\n    \"mirror\": false,\n    \"steps\": 4,\n    \
                \"learn_eta\": false\n  },\n  \"model\": {\"counts\": {\"kind\": \"fixed\", \
                \"min\": 1, \"max\": 3}}\n}";
    let cfg = Config::from_json_over(&Config::predict(), text).unwrap();
    let mut want = Config::predict();
    want.inference.steps = 4;
    want.model.counts = CountRange::Fixed { min: 1, max: 3 };
    assert_eq!(cfg, want);
    let err = refusal_over_paper("{\n  \"inference\": {\n    \"learn_eta\": true\n  }\n}");
    assert!(
        err.starts_with("invalid configuration at `inference.learn_eta`: true is no longer")
            && err.ends_with("at line 3, column 21"),
        "{err}"
    );
    let mut saved = Config::predict();
    saved.train.dev_fold = Some(DevFold { k: 5, index: 2 });
    saved.system_settings = serde_json::from_str(r#"{"lr_drops": [10, 20]}"#).unwrap();
    saved.model.counts = CountRange::Fixed { min: 0, max: 7 };
    let text = serde_json::to_string_pretty(&saved).unwrap();
    assert_eq!(Config::from_json(&text).unwrap(), saved);
    for base in [Config::paper(), Config::predict()] {
        assert_eq!(Config::from_json_over(&base, &text).unwrap(), saved);
    }
    assert_eq!(Config::resolve(None, Some(&text), None).unwrap(), saved);
}
