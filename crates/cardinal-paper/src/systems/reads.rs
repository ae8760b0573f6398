//! What each system declares it reads ([`System::reads`]) against what it does: every field
//! of the `baseline` section and of the product sections, changed one at a time. A field changes what a system trains or predicts exactly
//! when the system declares it read, and a configuration that sets it is refused, naming the
//! field and the system, exactly when it does not.

use super::tests::{small, toy};
use super::*;
use cardinal::config::{InferenceConfig, InferenceField, IterateWeights, LossField};
use cardinal::proj::Method;
use cardinal::runtime::{MemoryBudget, WaitPolicy};
use cardinal::system::Fields;

/// A change to one field of the `baseline` section, and the setup both runs share so that the
/// change can show (a pre-training rate needs pre-training epochs).
struct Probe {
    field: &'static str,
    setup: fn(&mut BaselineConfig),
    change: fn(&mut BaselineConfig),
}

/// One probe per field; [`every_field_has_a_probe`] keeps the list whole.
const PROBES: [Probe; 19] = {
    const fn p(
        field: &'static str,
        setup: fn(&mut BaselineConfig),
        change: fn(&mut BaselineConfig),
    ) -> Probe {
        Probe {
            field,
            setup,
            change,
        }
    }
    fn none(_: &mut BaselineConfig) {}
    fn pretrain(b: &mut BaselineConfig) {
        b.pretrain_epochs = 1;
    }
    [
        p("optimizer", none, |b| b.optimizer = Optimizer::Adam),
        p("pretrain_epochs", none, |b| b.pretrain_epochs = 1),
        p("pretrain_lr", pretrain, |b| b.pretrain_lr = 0.5),
        p("pretrain_dropout", pretrain, |b| b.pretrain_dropout = 0.5),
        p("pretrain_weight_decay", pretrain, |b| {
            b.pretrain_weight_decay = 0.1
        }),
        p("hidden_activation", none, |b| {
            b.hidden_activation = Activation::Softplus
        }),
        p("energy_activation", none, |b| {
            b.energy_activation = Activation::Softplus
        }),
        p("task_loss", none, |b| b.task_loss = TaskLoss::F1),
        p("margin_scale", none, |b| b.margin_scale = 3.0),
        p("freeze_unary_epochs", none, |b| b.freeze_unary_epochs = 1),
        p("init_zeros", none, |b| b.init_zeros = true),
        p("dvn_adversarial_fraction", none, |b| {
            b.dvn_adversarial_fraction = 0.0
        }),
        p("lr_drops", none, |b| b.lr_drops = vec![1]),
        p("lr_decay", |b| b.lr_drops = vec![1], |b| b.lr_decay = 0.5),
        p("keep_best", none, |b| b.keep_best = true),
        p("dev_every", none, |b| b.dev_every = 2),
        // Iterates in logit space, so that SC's outputs are not all 0 or 1 (where every
        // threshold of the grid scores alike).
        p(
            "select_with_threshold_grid",
            |b| (b.keep_best, b.logit_iterates) = (true, true),
            |b| b.select_with_threshold_grid = true,
        ),
        p("logit_iterates", none, |b| b.logit_iterates = true),
        p(
            "entropy_weight",
            |b| b.logit_iterates = true,
            |b| b.entropy_weight = 0.5,
        ),
    ]
};

/// A change to one field of a product section, by its dotted path.
type SectionProbe = (&'static str, fn(&mut Config));

/// One probe per field of the product sections; [`every_product_field_has_a_probe`] keeps
/// the list whole.
const SECTION_PROBES: [SectionProbe; 18] = [
    ("inference.steps", |c| c.inference.steps = 2),
    ("inference.eta", |c| c.inference.eta = 0.3),
    ("inference.momentum", |c| c.inference.momentum = 0.0),
    ("inference.train_projection", |c| {
        c.inference.train_projection = Method::Exact
    }),
    ("inference.test_projection", |c| {
        c.inference.test_projection = Method::Exact
    }),
    ("inference.final_projection", |c| {
        c.inference.final_projection = Some(Method::Exact)
    }),
    ("inference.rounds", |c| c.inference.proj.rounds = 3),
    ("inference.fp_iters", |c| c.inference.proj.fp_iters = 5),
    ("inference.smooth_eps", |c| {
        c.inference.proj.smooth_eps = 0.05
    }),
    ("inference.empty_at", |c| c.inference.empty_at = Some(0.5)),
    ("inference.expected_f1_count", |c| {
        c.inference.expected_f1_count = true
    }),
    ("loss.iterate_weights", |c| {
        c.loss.iterate_weights = IterateWeights::Last
    }),
    ("loss.f1_weight", |c| c.loss.f1_weight = 3.0),
    ("loss.cardinality_weight", |c| {
        c.loss.cardinality_weight = 1.0
    }),
    ("loss.unary_bce_weight", |c| c.loss.unary_bce_weight = 0.5),
    ("loss.sum_over_batch", |c| c.loss.sum_over_batch = false),
    ("search.max_rows", |c| c.search.max_rows = 2000),
    ("search.folds", |c| c.search.folds = 7),
];

/// Whether `reads` declares the product field at `path` (`inference.eta`) read.
fn declares(reads: &Reads, path: &str) -> bool {
    match path.split_once('.') {
        Some(("inference", f)) => reads.inference.contains_name(f),
        Some(("loss", f)) => reads.loss.contains_name(f),
        Some(("search", f)) => reads.search.contains_name(f),
        _ => panic!("not a product field: {path}"),
    }
}

/// The product fields whose declaration by `reads` disagrees with `observed`, the fields
/// whose change changed what the system does.
fn misdeclared(reads: &Reads, observed: &[&str]) -> Vec<&'static str> {
    SECTION_PROBES
        .iter()
        .map(|(path, _)| *path)
        .filter(|path| declares(reads, path) != observed.contains(path))
        .collect()
}

/// The systems of this crate, by name.
fn names() -> Vec<&'static str> {
    let product = Systems::product().names();
    systems()
        .names()
        .into_iter()
        .filter(|n| !product.contains(n))
        .collect()
}

/// Small configurations of `system` whose training takes a few epochs with dev data, at
/// several learning rates and dev splits: whether the best dev epoch is kept shows only when
/// a later one is worse, and how it is chosen only when the two scores disagree.
fn bases(system: &str) -> Vec<Config> {
    [(0.5, 4, 0.25), (4.0, 6, 0.25), (1.5, 8, 0.4), (0.2, 8, 0.4)]
        .into_iter()
        // The searching systems train their own candidates: one is enough.
        .take(match baselines().iter().any(|b| b.name == system) {
            true => 4,
            false => 1,
        })
        .map(|(lr, epochs, dev)| {
            let mut cfg = base(system);
            (cfg.train.lr, cfg.train.epochs, cfg.train.dev_fraction) = (lr, epochs, dev);
            cfg
        })
        .collect()
}

/// A small configuration of `system` whose training takes a few epochs with dev data.
fn base(system: &str) -> Config {
    let mut cfg = Config::paper();
    small(&mut cfg);
    cfg.system = system.into();
    cfg.inference.steps = 4;
    cfg.inference.eta = 0.1;
    cfg.train.epochs = 4;
    cfg.train.full_epochs = 1;
    cfg.train.dev_fraction = 0.25;
    cfg.train.lr = 0.5;
    cfg
}

/// Everything observable of `system` trained on `data` with `cfg`, unchecked: its history
/// (losses, dev scores), its threshold and its outputs on `data`, or how training failed.
fn outcome(system: &str, cfg: &Config, data: &Dataset) -> String {
    let rows: Vec<usize> = (0..data.n_rows()).collect();
    let (trained, out) = match baselines().into_iter().find(|b| b.name == system) {
        Some(b) => {
            let mut objective = (b.objective)();
            let budget = MemoryBudget::default();
            let trained = match fit(data, cfg, objective.as_mut(), &mut |_| {}, budget) {
                Ok(t) => t,
                Err(e) => return e.to_string(),
            };
            let out = (b.predict_rows)(
                trained
                    .model
                    .networks()
                    .expect("a baseline trains networks"),
                &data.features,
                &rows,
            );
            (trained, out)
        }
        None => {
            let registry = systems();
            let s = registry.get(system).unwrap();
            let mut hooks = Hooks {
                on_event: &mut |_| {},
                after_epoch: &mut |_| Ok(()),
                wait: WaitPolicy::Active,
                memory_budget: MemoryBudget::default(),
                cancel: &std::sync::atomic::AtomicBool::new(false),
                search: None,
                forests: None,
            };
            let trained = s.fit(data, Start::Fresh(cfg.clone()), &mut hooks).unwrap();
            let out = s.predict(&trained.model, &data.features, 64).unwrap();
            (trained, out)
        }
    };
    let history: Vec<_> = trained
        .history
        .iter()
        .map(|r| (r.loss, r.dev_example_f1))
        .collect();
    format!(
        "{history:?} {} {:?} {:?}",
        trained.model.config().threshold,
        out.y,
        out.z
    )
}

/// The field a check of `cfg` refuses for its system, if any.
fn refused(cfg: &Config) -> Option<String> {
    let registry = systems();
    match check(registry.get(&cfg.system).unwrap(), cfg) {
        Ok(()) => None,
        Err(Error::NotRead { field, system, .. }) => {
            assert_eq!(system, cfg.system);
            Some(field)
        }
        Err(e) => panic!("{}: {e}", cfg.system),
    }
}

#[test]
fn every_field_has_a_probe() {
    let fields: Vec<String> = super::settings::settings_of_old().keys().cloned().collect();
    let probed: Vec<&str> = PROBES.iter().map(|p| p.field).collect();
    assert_eq!(fields.len(), probed.len());
    for f in &fields {
        assert!(probed.contains(&f.as_str()), "no probe for baseline.{f}");
    }
}

/// Every system's declared `baseline` fields are those that change what it does, and a
/// configuration setting any other is refused by name.
#[test]
fn each_system_reads_the_settings_it_declares_and_refuses_the_others() {
    let data = toy(48, 21);
    let registry = systems();
    for name in names() {
        let reads = registry.get(name).unwrap().reads();
        let settings = reads.settings();
        for f in &settings {
            assert!(PROBES.iter().any(|p| p.field == *f), "{name}: {f}");
        }
        for probe in &PROBES {
            let changes = bases(name).into_iter().any(|mut before| {
                BaselineConfig::edit(&mut before, probe.setup);
                let mut after = before.clone();
                BaselineConfig::edit(&mut after, probe.change);
                outcome(name, &before, &data) != outcome(name, &after, &data)
            });
            let declared = settings.contains(&probe.field);
            assert_eq!(declared, changes, "{name}: baseline.{}", probe.field);

            let mut alone = Config::paper();
            alone.system = name.into();
            BaselineConfig::edit(&mut alone, probe.change);
            let want = (!declared).then(|| format!("baseline.{}", probe.field));
            assert_eq!(refused(&alone), want, "{name}");
        }
    }
}

/// The product section `name` of `cfg` as written.
fn section(cfg: &Config, name: &str) -> serde_json::Map<String, serde_json::Value> {
    let value = match name {
        "inference" => serde_json::to_value(&cfg.inference),
        "loss" => serde_json::to_value(&cfg.loss),
        _ => serde_json::to_value(&cfg.search),
    };
    value.unwrap().as_object().unwrap().clone()
}

#[test]
fn every_product_field_has_a_probe() {
    let default = Config::paper();
    let probed: Vec<&str> = SECTION_PROBES.iter().map(|(p, _)| *p).collect();
    for name in ["inference", "loss", "search"] {
        for key in section(&default, name).keys() {
            let path = format!("{name}.{key}");
            assert!(probed.contains(&path.as_str()), "no probe for {path}");
        }
    }
    for (path, change) in &SECTION_PROBES {
        // Each probe changes its own field and no other.
        let mut cfg = Config::paper();
        change(&mut cfg);
        let (name, field) = path.split_once('.').unwrap();
        let (a, b) = (section(&cfg, name), section(&default, name));
        for k in a.keys().chain(b.keys()) {
            assert_eq!(a.get(k) != b.get(k), k == field, "{path}: {name}.{k}");
        }
    }
}

/// Every field of a product section that a Table 1 system trained by [`fit`] declares read
/// changes what it does, every other changes nothing and is refused by name when set; a
/// declaration that says otherwise is caught.
#[test]
fn each_system_reads_the_product_fields_it_declares_and_refuses_the_others() {
    let data = toy(48, 23);
    let registry = systems();
    for b in baselines() {
        let name = b.name;
        let reads = registry.get(name).unwrap().reads();
        let references: Vec<(Config, String)> = bases(name)
            .into_iter()
            .map(|c| {
                let o = outcome(name, &c, &data);
                (c, o)
            })
            .collect();
        let observed: Vec<&str> = SECTION_PROBES
            .iter()
            .filter(|(_, change)| {
                references.iter().any(|(before, reference)| {
                    let mut after = before.clone();
                    change(&mut after);
                    outcome(name, &after, &data) != *reference
                })
            })
            .map(|(path, _)| *path)
            .collect();
        assert_eq!(misdeclared(&reads, &observed), Vec::<&str>::new(), "{name}");
        for (path, change) in &SECTION_PROBES {
            let mut alone = Config::paper();
            alone.system = name.into();
            change(&mut alone);
            let want = (!declares(&reads, path)).then(|| path.to_string());
            assert_eq!(refused(&alone), want, "{name}");
        }
        // A declaration one field off either way fails the check above.
        let wrong = match name {
            DVN => Reads {
                inference: Fields::Only(&[
                    InferenceField::Steps,
                    InferenceField::Eta,
                    InferenceField::Momentum,
                ]),
                ..reads
            },
            SC => Reads {
                loss: Fields::Only(&[
                    LossField::IterateWeights,
                    LossField::UnaryBceWeight,
                    LossField::SumOverBatch,
                ]),
                ..reads
            },
            _ => continue,
        };
        let off = match name {
            DVN => "inference.momentum",
            _ => "loss.f1_weight",
        };
        assert_eq!(misdeclared(&wrong, &observed), [off], "{name}");
    }
}

/// `mlp` and `br-logistic` train their search's candidates, whatever the configuration's
/// `baseline` section holds (the test above), and the configuration each saves trains
/// again.
#[test]
fn the_searching_systems_save_configurations_they_accept() {
    let data = toy(60, 25);
    let registry = systems();
    for name in [tuned::MLP, logistic::BR_LOGISTIC] {
        let cfg = base(name);
        let s = registry.get(name).unwrap();
        let mut hooks = Hooks {
            on_event: &mut |_| {},
            after_epoch: &mut |_| Ok(()),
            wait: WaitPolicy::Active,
            memory_budget: MemoryBudget::default(),
            cancel: &std::sync::atomic::AtomicBool::new(false),
            search: None,
            forests: None,
        };
        let trained = s.fit(&data, Start::Fresh(cfg), &mut hooks).unwrap();
        assert_eq!(refused(trained.model.config()), None, "{name}");
    }
}

/// A `dvn` model folder saved with the fields the `dvn` preset once set
/// (`baseline.init_zeros` and `inference.momentum`, which `dvn` never read) loads without
/// them and predicts as before; its configuration, given to train, is refused by the first
/// one's name.
#[test]
fn an_old_dvn_model_loads_and_predicts_but_its_field_is_refused_for_training() {
    let data = toy(40, 27);
    let mut cfg = base(DVN);
    cfg.train.epochs = 1;
    let dvn = baselines().into_iter().find(|b| b.name == DVN).unwrap();
    let budget = MemoryBudget::default();
    let mut trained = fit(&data, &cfg, (dvn.objective)().as_mut(), &mut |_| {}, budget).unwrap();
    let engine = cardinal::engine::Engine::new(systems());
    let before = engine.predict(&trained.model, &data.features).unwrap();
    BaselineConfig::edit(trained.model.config_mut(), |b| b.init_zeros = true);
    trained.model.config_mut().inference.momentum = 0.0;
    let old = serde_json::to_string(trained.model.config()).unwrap();
    assert!(old.contains(r#""init_zeros":true"#), "{old}");

    let dir = std::env::temp_dir().join(format!("cardinal-old-dvn-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    engine
        .save_model(
            &trained.model,
            &dir,
            &cardinal::engine::TrainedOn {
                dataset: "toy".into(),
                ..Default::default()
            },
            false,
        )
        .unwrap();
    let loaded = engine.load(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let (model, _) = loaded.unwrap();
    assert!(!model
        .config()
        .system_settings
        .fields()
        .contains_key("init_zeros"));
    let (eta, steps) = (cfg.inference.eta, cfg.inference.steps);
    let inference = &model.config().inference;
    assert_eq!((inference.eta, inference.steps), (eta, steps));
    assert_eq!(inference.momentum, InferenceConfig::default().momentum);
    assert_eq!(refused(model.config()), None);
    let after = engine.predict(&model, &data.features).unwrap();
    assert_eq!((before.y, before.z), (after.y, after.z));

    let cfg = cardinal::config::ConfigRequest {
        file: Some(&old),
        ..Default::default()
    }
    .resolve()
    .unwrap();
    assert_eq!(refused(&cfg).as_deref(), Some("baseline.init_zeros"));
}
