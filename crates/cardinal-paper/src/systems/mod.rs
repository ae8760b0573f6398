//! The systems of Table 1 other than P&C, and the alternatives of the paper's §4, trained and
//! run by the same data, splits, metric and model container ([`Model`]) as Predict and
//! Constrain:
//!
//! * `spen-ssvm`: SPEN (Belanger & McCallum 2016): pre-trained unaries, a global energy,
//!   gradient-based inference, structured-SVM training with loss-augmented inference ([`ssvm`]);
//! * `dvn`: deep value network (Gygli et al. 2017) regressing the F1 of hypotheses ([`dvn`]);
//! * `sc`: unrolled ascent with the sigmoid cardinality potential and clipping ([`unrolled`]);
//! * `logit`: unrolled ascent in logit space, no projection ([`unrolled`]); with the unaries
//!   pre-trained first ([`pretrain_unary`]) and the loss on the last iterate, E2E-SPEN;
//! * `topz-hinge`: unary and cardinality scores, exact top-z inference, structured hinge
//!   ([`ssvm`]);
//! * `mlp`: Table 1's MLP with its width, dropout, learning rate and epochs chosen on dev
//!   ([`tuned`]), and `br-logistic`: binary relevance with logistic regression ([`logistic`]),
//!   the reference baselines of the development suite.
//!
//! Every system stores its weights in [`cardinal::parts::Params`] (the tensors it does not use
//! stay at their initial values), so checkpoints, `cardinal eval` and `cardinal predict` work
//! unchanged.

pub mod ascent;
mod baseline_field;
pub mod dvn;
mod fit;
pub mod logistic;
pub mod nets;
#[cfg(test)]
mod reads;
pub mod settings;
pub mod ssvm;
pub mod tuned;
pub(crate) use tuned::mlp;
pub mod unrolled;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use cardinal::config::{Config, NameMatch, SavedName};
use cardinal::data::{CsrMatrix, Dataset};
use cardinal::engine::Trained;
use cardinal::engine::{Model, Outputs};
use cardinal::eval::evaluate_outputs;
use cardinal::metrics::{default_threshold_grid, tune_threshold, MetricOptions};
use cardinal::parts::Params;
use cardinal::parts::{dropout_key, Dropout};
use cardinal::system::{check, Hooks, Reads, Start, System, Systems};
use cardinal::{Error, Result, Unread};
pub use fit::fit;
use nets::{Mlp, MlpCache, MlpGrad, Opt};
pub use settings::{Activation, BaselineConfig, BaselineField, Optimizer, TaskLoss};
use unrolled::Flavor;

/// `config.system` of SPEN trained as a structured SVM.
pub const SPEN_SSVM: &str = "spen-ssvm";
/// `config.system` of the deep value network.
pub const DVN: &str = "dvn";
/// `config.system` of unrolled ascent with the sigmoid cardinality potential.
pub const SC: &str = "sc";
/// `config.system` of unrolled ascent in logit space.
pub const LOGIT: &str = "logit";
/// `config.system` of top-z inference with a structured hinge.
pub const TOPZ_HINGE: &str = "topz-hinge";

/// The product's systems and every system of this crate.
pub fn systems() -> Systems {
    let systems = baselines()
        .into_iter()
        .fold(Systems::product(), Systems::with)
        .with(tuned::TunedMlp)
        .with(logistic::BrLogistic);
    SAVED_NAMES
        .iter()
        .copied()
        .fold(systems, Systems::with_saved_name)
        .with_settings_of_old(settings::settings_of_old())
}

/// The names this crate's configurations are saved under, each with the preset it is read
/// over: the Table 1 rows and the cardinality analysis over `paper` (they are the paper's
/// settings), the tuned baselines over `predict`.
pub const SAVED_NAMES: &[SavedName] = &[
    SavedName {
        name: NameMatch::Prefix("table1-"),
        base: "paper",
    },
    SavedName {
        name: NameMatch::Exact("cardinality-only"),
        base: "paper",
    },
    SavedName {
        name: NameMatch::Exact(tuned::MLP),
        base: "predict",
    },
    SavedName {
        name: NameMatch::Exact(logistic::BR_LOGISTIC),
        base: "predict",
    },
];

/// The systems trained in one go by [`fit`], in registration order.
fn baselines() -> [Baseline; 5] {
    [
        Baseline {
            name: SPEN_SSVM,
            reads: ssvm::SPEN_READS,
            objective: || Box::new(ssvm::Ssvm),
            predict_rows: |m, x, rows| unrolled::predict_rows(Flavor::Spen, m, x, rows),
        },
        Baseline {
            name: DVN,
            reads: dvn::READS,
            objective: || Box::new(dvn::Dvn),
            predict_rows: dvn::predict_rows,
        },
        Baseline {
            name: SC,
            reads: unrolled::SC_READS,
            objective: || Box::new(unrolled::Unrolled { flavor: Flavor::Sc }),
            predict_rows: |m, x, rows| unrolled::predict_rows(Flavor::Sc, m, x, rows),
        },
        Baseline {
            name: LOGIT,
            reads: unrolled::LOGIT_READS,
            objective: || {
                Box::new(unrolled::Unrolled {
                    flavor: Flavor::Logit,
                })
            },
            predict_rows: |m, x, rows| unrolled::predict_rows(Flavor::Logit, m, x, rows),
        },
        Baseline {
            name: TOPZ_HINGE,
            reads: ssvm::TOPZ_READS,
            objective: || Box::new(ssvm::TopzHinge),
            predict_rows: ssvm::topz_predict_rows,
        },
    ]
}

/// A system trained in one go by [`fit`] with its own batch objective, and run by its own
/// inference.
struct Baseline {
    name: &'static str,
    /// What of a configuration it reads, declared beside its code.
    reads: Reads,
    objective: fn() -> Box<dyn BatchObjective>,
    predict_rows: fn(&Model<f32>, &CsrMatrix, &[usize]) -> Outputs<f32>,
}

impl System for Baseline {
    fn name(&self) -> &'static str {
        self.name
    }

    fn reads(&self) -> Reads {
        self.reads
    }

    fn validate(&self, cfg: &Config) -> Result<()> {
        // The baselines' own training loop has neither: refuse rather than ignore them.
        if cfg.model.dropout > 0.0 {
            return Err(Error::NotRead {
                field: "model.dropout".into(),
                system: self.name.into(),
                because: Unread::PncOnly {
                    instead: Some("baseline.pretrain_dropout (the unary pre-training's)"),
                },
            });
        }
        if cfg.train.average_epochs.is_some() {
            return Err(Error::NotRead {
                field: "train.average_epochs".into(),
                system: self.name.into(),
                because: Unread::PncOnly { instead: None },
            });
        }
        // The system's own section: read strictly and range-checked.
        BaselineConfig::of(cfg).map(drop)
    }

    fn fit(&self, train: &Dataset, start: Start, hooks: &mut Hooks) -> Result<Trained> {
        match start {
            Start::Fresh(cfg) => {
                check(self, &cfg)?;
                let mut objective = (self.objective)();
                fit(
                    train,
                    &cfg,
                    objective.as_mut(),
                    hooks.on_event,
                    hooks.memory_budget,
                )
            }
            Start::Resume(_) => Err(Error::Unsupported {
                system: self.name.into(),
                what: "resume (it trains in one go, without checkpoints)".into(),
            }),
        }
    }

    fn predict_networks(
        &self,
        model: &Model<f32>,
        x: &CsrMatrix,
        batch: usize,
    ) -> Result<Outputs<f32>> {
        // A loaded model's settings are checked before its inference reads them.
        BaselineConfig::of(&model.config)?;
        let rows: Vec<usize> = (0..x.n_rows).collect();
        let mut out = Outputs::default();
        for chunk in rows.chunks(batch.max(1)) {
            let part = (self.predict_rows)(model, x, chunk);
            out.y.extend_from_slice(&part.y);
            out.z.extend_from_slice(&part.z);
            out.unary.extend_from_slice(&part.unary);
        }
        Ok(out)
    }
}

/// One system's loss and gradient on a batch.
pub trait BatchObjective {
    /// Called once before training (e.g. to pre-train or re-initialise).
    fn prepare(&mut self, model: &mut Model<f32>, train: &Dataset, rows: &[usize]) {
        let cfg = model.config.clone();
        let bc = BaselineConfig::read(&cfg);
        if bc.pretrain_epochs > 0 {
            pretrain_unary(model, train, rows, &cfg, bc.hidden_activation);
        }
    }

    /// Overwrites `grad` with the gradient of the batch loss (without weight decay) and
    /// returns the loss.
    fn loss_and_grad(
        &mut self,
        model: &Model<f32>,
        train: &Dataset,
        rows: &[usize],
        grad: &mut Params<f32>,
        rng: &mut Xoshiro256PlusPlus,
    ) -> Result<f64>;
}

/// The inference of `model`'s system on every row of `x` (the registry's).
fn predict(model: &Model<f32>, x: &CsrMatrix, batch: usize) -> Result<Outputs<f32>> {
    systems()
        .get(&model.config.system)?
        .predict_networks(model, x, batch)
}

/// Dev example-F1 (%) of `model`: at its threshold, and at the best threshold of the grid.
fn dev_f1(model: &Model<f32>, dev: &Dataset) -> Result<(f64, f64)> {
    let out = predict(model, &dev.features, 256)?;
    let rep = evaluate_outputs(model, &out, &dev.labels);
    let (_, best) = tune_threshold(
        &out.y,
        &dev.labels,
        &default_threshold_grid(),
        &MetricOptions::default(),
    )?;
    Ok((rep.at_threshold.example_f1 * 100.0, best * 100.0))
}

/// Pre-trains the unary network of `model` alone with binary cross-entropy on `σ(u)` (mean over
/// the batch, summed over labels), AdaGrad, for `baseline.pretrain_epochs` epochs over `rows`.
pub fn pretrain_unary(
    model: &mut Model<f32>,
    train: &Dataset,
    rows: &[usize],
    cfg: &Config,
    act: Activation,
) {
    let bc = &BaselineConfig::read(cfg);
    let mut pc = cfg.clone();
    pc.train.weight_decay = bc.pretrain_weight_decay;
    pc.train.unary_weight_decay_mult = 1.0;
    let mut opt = Opt::new(
        Optimizer::Adagrad,
        &model.params,
        bc.pretrain_lr,
        cfg.train.adagrad_init,
    );
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x5EED_0FBC);
    let mut order = rows.to_vec();
    let mut cache = MlpCache::default();
    let mut grad = model.params.zeros_like();
    let frozen = [
        "energy.wp",
        "energy.we",
        "card.w1",
        "card.b1",
        "card.w2",
        "card.b2",
    ];
    for epoch in 0..bc.pretrain_epochs {
        order.shuffle(&mut rng);
        for (batch, chunk) in order.chunks(cfg.train.batch_size).enumerate() {
            grad.visit_mut(|_, g, _| g.fill(0.0));
            let mut mlp = Mlp::unary(&model.params, act);
            // Phase 0 in the key: masks independent of those of the system's own training.
            mlp.dropout = (bc.pretrain_dropout > 0.0).then(|| Dropout {
                rate: bc.pretrain_dropout,
                key: dropout_key(cfg.seed, 0, epoch, batch),
            });
            mlp.forward(&train.features, chunk, &model.standardizer, &mut cache);
            let mut dout = cache.out.mapv(cardinal::parts::sigmoid);
            let scale = 1.0 / chunk.len() as f32;
            for (r, &row) in chunk.iter().enumerate() {
                for &g in train.labels.row(row) {
                    dout[[r, g as usize]] -= 1.0;
                }
            }
            dout *= scale;
            let p = &mut grad;
            mlp.backward(
                &train.features,
                chunk,
                &model.standardizer,
                &mut cache,
                dout.view(),
                MlpGrad::unary(p),
            );
            opt.step(&mut model.params, &grad, &pc, &frozen);
        }
    }
}

/// Relaxed-F1 iterate weights of the P&C loss, `t = 1..=T` (see `config::IterateWeights`).
pub fn iterate_weights(cfg: &Config) -> Vec<f64> {
    let steps = cfg.inference.steps;
    (1..=steps)
        .map(|t| cfg.loss.iterate_weights.weight(t, steps))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use cardinal::data::LabelSets;
    use cardinal::parts::init_model_within;
    use cardinal::runtime::MemoryBudget;

    /// A freshly initialised model for `train` under `cfg`, within the default memory budget.
    pub(crate) fn init_model(train: &Dataset, cfg: &Config) -> Result<Model<f32>> {
        init_model_within(train, cfg, MemoryBudget::default())
    }

    /// Checks the analytic gradient `g` of `value` at `p` against central differences (step
    /// 1e-6, relative tolerance `tol`) in every entry of the named tensors; returns how many
    /// entries it checked.
    pub(crate) fn check_central_differences(
        p: &Params<f64>,
        g: &Params<f64>,
        names: &[&str],
        tol: f64,
        value: impl Fn(&Params<f64>) -> f64,
    ) -> usize {
        let mut checked = 0;
        for &name in names {
            let mut analytic = Vec::new();
            g.visit(|n, v, _| {
                if n == name {
                    analytic = v.to_vec();
                }
            });
            for (j, &a) in analytic.iter().enumerate() {
                let at = |delta: f64| value(&perturbed(p, name, j, delta));
                let fd = (at(1e-6) - at(-1e-6)) / 2e-6;
                assert!(
                    (fd - a).abs() < tol * (1.0 + a.abs()),
                    "{name}[{j}]: {a} vs {fd}"
                );
                checked += 1;
            }
        }
        checked
    }

    /// `p` with entry `j` of tensor `name` moved by `delta`.
    pub(crate) fn perturbed(p: &Params<f64>, name: &str, j: usize, delta: f64) -> Params<f64> {
        let mut q = p.clone();
        q.visit_mut(|n, v, _| {
            if n == name {
                v[j] += delta;
            }
        });
        q
    }

    /// Checks the analytic gradient `g` against central differences (step `h`, relative
    /// tolerance `tol` of the difference) in the `largest` entries of largest gradient of each
    /// named tensor; `value(name, j, delta)` is the loss with that entry moved by `delta`.
    /// Returns how many checked entries had a gradient above 1e-8 (a check of zeros proves
    /// nothing, so callers require a number of them).
    pub(crate) fn check_largest_entries(
        g: &Params<f64>,
        names: &[&str],
        largest: usize,
        h: f64,
        tol: f64,
        what: &str,
        mut value: impl FnMut(&str, usize, f64) -> f64,
    ) -> usize {
        let mut checked = 0;
        for &name in names {
            let mut analytic = Vec::new();
            g.visit(|n, d, _| {
                if n == name {
                    analytic = d.to_vec();
                }
            });
            let mut idx: Vec<usize> = (0..analytic.len()).collect();
            idx.sort_by(|&a, &b| analytic[b].abs().total_cmp(&analytic[a].abs()));
            for &j in idx.iter().take(largest) {
                let fd = (value(name, j, h) - value(name, j, -h)) / (2.0 * h);
                let an = analytic[j];
                assert!(
                    (fd - an).abs() < tol * (1.0 + fd.abs()),
                    "{what} {name}[{j}]: fd {fd} vs {an}"
                );
                checked += usize::from(an.abs() > 1e-8);
            }
        }
        checked
    }

    /// A small dataset whose labels are a function of the features.
    pub(crate) fn toy(n: usize, seed: u64) -> Dataset {
        let (d, l) = (16, 6);
        let mut g = cardinal_testkit::Lcg::new(seed);
        let mut next = || (g.next_u64() >> 33) as usize;
        let mut x = CsrMatrix::new(d);
        let mut y = LabelSets::new(l);
        for _ in 0..n {
            let mut idx: Vec<u32> = (0..4).map(|_| (next() % d) as u32).collect();
            idx.sort_unstable();
            idx.dedup();
            x.push_row(&idx, &vec![1.0; idx.len()]);
            let mut lab: Vec<u32> = idx.iter().map(|&i| i % l as u32).collect();
            lab.sort_unstable();
            lab.dedup();
            lab.truncate(3);
            y.push_row(&lab);
        }
        Dataset {
            name: "toy".into(),
            features: x,
            labels: y,
            feature_names: vec![],
            label_names: vec![],
        }
    }

    pub(crate) fn small(cfg: &mut Config) {
        cfg.model.hidden = 12;
        cfg.model.card_hidden = 6;
        cfg.model.energy_hidden = 4;
        cfg.train.batch_size = 10;
        cfg.train.full_epochs = 0;
    }

    /// Each registration runs its own member of the unrolled family, and the three differ.
    #[test]
    fn registrations_run_their_flavours() {
        let data = toy(12, 5);
        let registry = systems();
        let mut outputs = Vec::new();
        for (name, flavor) in [
            (SPEN_SSVM, Flavor::Spen),
            (SC, Flavor::Sc),
            (LOGIT, Flavor::Logit),
        ] {
            let mut cfg = Config::paper();
            small(&mut cfg);
            cfg.system = name.into();
            let mut model = init_model(&data, &cfg).unwrap();
            // Cardinality weights large enough to move the iterates.
            model.params.c2.mapv_inplace(|v| 50.0 * v);
            model.params.cb2.fill(1.0);
            let rows: Vec<usize> = (0..data.n_rows()).collect();
            let direct = unrolled::predict_rows(flavor, &model, &data.features, &rows);
            let registered = registry
                .get(name)
                .unwrap()
                .predict_networks(&model, &data.features, 5)
                .unwrap();
            assert_eq!(direct.y, registered.y, "{name}");
            assert_eq!(direct.z, registered.z, "{name}");
            outputs.push(direct.y);
        }
        assert_ne!(
            outputs[0], outputs[1],
            "SC's cardinality potential changes nothing"
        );
        assert_ne!(outputs[0], outputs[2], "logit space changes nothing");
    }

    #[test]
    fn pretraining_lowers_the_unary_cross_entropy() {
        let data = toy(200, 3);
        let mut cfg = Config::paper();
        small(&mut cfg);
        BaselineConfig::edit(&mut cfg, |b| b.pretrain_epochs = 5);
        let mut model = init_model(&data, &cfg).unwrap();
        let rows: Vec<usize> = (0..200).collect();
        let bce = |m: &Model<f32>| {
            let mut cache = MlpCache::default();
            Mlp::unary(&m.params, Activation::Relu).forward(
                &data.features,
                &rows,
                &m.standardizer,
                &mut cache,
            );
            let mut total = 0.0f64;
            for r in 0..rows.len() {
                let gold = data.labels.row(r);
                for i in 0..6 {
                    let p = cardinal::parts::sigmoid(cache.out[[r, i]] as f64).clamp(1e-9, 1.0);
                    let on = gold.contains(&(i as u32));
                    total -= if on { p.ln() } else { (1.0 - p).max(1e-9).ln() };
                }
            }
            total / rows.len() as f64
        };
        let before = bce(&model);
        pretrain_unary(&mut model, &data, &rows, &cfg, Activation::Relu);
        let after = bce(&model);
        assert!(after < 0.7 * before, "BCE {before} -> {after}");
    }
}
