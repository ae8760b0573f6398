//! What a model kind plugs into a run directory: [`RunModel`].

use std::path::Path;

use serde::Serialize;

use crate::error::Result;

/// A kind of model a run directory holds: what it writes as its model (`config.json`,
/// `meta.json`, `model.safetensors`) and as a checkpoint of a run in progress, and how it
/// reads them back. Everything else about the run directory (`run.json`, `data.json`, the
/// lock, the replacement, `metrics.jsonl`, `checkpoints/` and `LATEST`, `eval.json`) is the
/// same for every kind and written by [`crate::run_dir`].
///
/// A value of the implementing type knows what the run trains on: what its files record
/// beside the weights (the data's name and columns, the configuration). Reading back needs
/// no such value.
pub(crate) trait RunModel {
    /// The trained model.
    type Model;
    /// The resumable state of a run in progress (the model, its optimizer, its epochs).
    type State;
    /// One epoch's record: one line of `metrics.jsonl`.
    type Epoch: Serialize;
    /// What [`RunModel::load`] reads back: the model, with what it records of itself.
    type Loaded;
    /// What [`RunModel::load_state`] reads back: the state, with what it records.
    type Resumed;

    /// Writes `model` into the folder `dir` (created if needed) as one unit: a save killed at
    /// any instant leaves the old model or the new one, whole.
    fn save(&self, model: &Self::Model, dir: &Path) -> Result<()>;

    /// Reads the model folder `dir` written by [`RunModel::save`], refusing (and naming the
    /// file) anything that is not such a model: another kind's, a tampered file.
    // Only the tests read a run model back through the trait; the engine reads by kind.
    #[cfg_attr(not(test), allow(dead_code))]
    fn load(dir: &Path) -> Result<Self::Loaded>;

    /// Writes `state` into the fresh folder `ckpt` of a checkpoint being assembled: its model
    /// (as [`RunModel::save`] does) and whatever else continuing it needs.
    fn save_state(&self, state: &Self::State, ckpt: &Path) -> Result<()>;

    /// Reads the checkpoint folder `ckpt` written by [`RunModel::save_state`].
    fn load_state(ckpt: &Path) -> Result<Self::Resumed>;

    /// Epochs `state` has run (its checkpoint's number).
    fn epochs_run(state: &Self::State) -> usize;

    /// The records of the epochs `state` has run (`metrics.jsonl` of a resumed run starts
    /// with them).
    fn history(state: &Self::State) -> &[Self::Epoch];
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_dir::{load_checkpoint, save_checkpoint, MetricsLog, LATEST_FILE};

    /// A model kind of the least: a number, its state a list of epochs' numbers.
    struct Toy;

    impl RunModel for Toy {
        type Model = u32;
        type State = Vec<u32>;
        type Epoch = u32;
        type Loaded = u32;
        type Resumed = Vec<u32>;

        fn save(&self, model: &u32, dir: &Path) -> Result<()> {
            std::fs::create_dir_all(dir).map_err(|e| crate::Error::io(dir, e))?;
            Ok(crate::checkpoint::write_atomic(
                &dir.join("toy.json"),
                model.to_string().as_bytes(),
            )?)
        }
        fn load(dir: &Path) -> Result<u32> {
            let p = dir.join("toy.json");
            let text = std::fs::read_to_string(&p).map_err(|e| crate::Error::io(&p, e))?;
            text.parse().map_err(|e| {
                crate::Error::io(&p, std::io::Error::new(std::io::ErrorKind::InvalidData, e))
            })
        }
        fn save_state(&self, state: &Vec<u32>, ckpt: &Path) -> Result<()> {
            self.save(state.last().unwrap_or(&0), ckpt)?;
            let json = serde_json::to_vec(state).expect("serialisable");
            Ok(crate::checkpoint::write_atomic(
                &ckpt.join("state.json"),
                &json,
            )?)
        }
        fn load_state(ckpt: &Path) -> Result<Vec<u32>> {
            let bytes = std::fs::read(ckpt.join("state.json")).unwrap();
            Ok(serde_json::from_slice(&bytes).unwrap())
        }
        fn epochs_run(state: &Vec<u32>) -> usize {
            state.len()
        }
        fn history(state: &Vec<u32>) -> &[u32] {
            state
        }
    }

    /// A kind plugs in with its files alone: checkpoints, `LATEST` and `metrics.jsonl` are the
    /// run directory's.
    #[test]
    fn a_model_kind_plugs_in_with_its_files_alone() {
        let d = std::env::temp_dir().join(format!("cardinal-runmodel-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let e = load_checkpoint::<Toy>(&d).unwrap_err();
        assert!(
            matches!(
                &e,
                crate::Error::NotResumable {
                    finished: false,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("no checkpoint to resume from"),
            "{e}"
        );
        let mut metrics = MetricsLog::new(&d, Toy::history(&vec![7]));
        for state in [vec![7, 8], vec![7, 8, 9]] {
            metrics.push(state.last().unwrap()).unwrap();
            let ckpt = save_checkpoint(&Toy, &d, &state).unwrap();
            assert_eq!(Toy::load(&ckpt).unwrap(), *state.last().unwrap());
        }
        assert_eq!(load_checkpoint::<Toy>(&d).unwrap(), vec![7, 8, 9]);
        let latest = std::fs::read_to_string(d.join("checkpoints").join(LATEST_FILE)).unwrap();
        assert_eq!(latest, "epoch-0003");
        assert!(!d.join("checkpoints/epoch-0002").exists());
        let log = std::fs::read_to_string(d.join(crate::run_dir::METRICS_FILE)).unwrap();
        assert_eq!(log, "7\n8\n9\n");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
