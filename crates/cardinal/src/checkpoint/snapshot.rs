//! Reading a model folder as one snapshot. A `train --force` swaps a whole new run in under
//! the folder's name, and a save in place renames new files over old ones: a reader that
//! opened `meta.json`, `config.json` and the weights by path, one after another, could get
//! the old meta data with the new weights. So a folder is opened once and its files are read
//! relative to that open folder; afterwards the reader checks that the name still leads to
//! that folder and that every name it read still leads to the file it read. If anything
//! changed (or a file vanished because the old folder was removed after a swap), the whole
//! read starts again from a fresh open, a bounded number of times.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{openat, statat, AtFlags, Mode, OFlags, CWD};
use rustix::io::Errno;

use super::{ckpt_err, META_FILE, SAVE_JOURNAL};
use crate::error::{Error, Result};
use cardinal_store::{limit_of, not_plain, parse_journal, read_opened};

/// How many times a read that saw the folder change is started again.
const ATTEMPTS: u32 = 8;

/// A file's identity: (device, inode).
type Id = (u64, u64);

/// A model folder opened once; its files are read relative to it.
pub(crate) struct Snapshot {
    dir: PathBuf,
    fd: OwnedFd,
    id: Id,
    /// Every name read, with the file it led to (`None`: there was none).
    seen: Vec<(String, Option<Id>)>,
}

// The fields' types differ between systems (32 bits on some).
#[allow(clippy::unnecessary_cast)]
fn id_of(st: &rustix::fs::Stat) -> Id {
    (st.st_dev as u64, st.st_ino as u64)
}

impl Snapshot {
    fn open(dir: &Path) -> Result<Self> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = openat(CWD, dir, flags, Mode::empty()).map_err(|e| match e {
            // No folder: named by the file a model folder is known by, as reading it would.
            Errno::NOENT => Error::io(dir.join(META_FILE), e.into()),
            _ => Error::io(dir, e.into()),
        })?;
        let id = id_of(&rustix::fs::fstat(&fd).map_err(|e| Error::io(dir, e.into()))?);
        Ok(Self {
            dir: dir.to_path_buf(),
            fd,
            id,
            seen: Vec::new(),
        })
    }

    /// The folder, as named when it was opened.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of the folder's file `name` (for messages).
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The bytes of the folder's file `name`, or `None` where there is none; refused (naming
    /// it) unless it is a plain file within the size limit of its kind, as
    /// [`super::read_model_file`] does.
    pub(crate) fn read_if_any(&mut self, name: &str) -> Result<Option<Vec<u8>>> {
        #[cfg(test)]
        hook::between_files(name);
        let path = self.path(name);
        // Non-blocking: opening a FIFO must not wait for a writer.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = match openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                self.seen.push((name.to_string(), None));
                return Ok(None);
            }
            Err(Errno::LOOP) => return Err(not_plain(&path, true, false).into()),
            Err(e) => return Err(Error::io(&path, e.into())),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| Error::io(&path, e.into()))?;
        self.seen.push((name.to_string(), Some(id_of(&st))));
        let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
        if kind != rustix::fs::FileType::RegularFile {
            return Err(not_plain(&path, false, kind == rustix::fs::FileType::Directory).into());
        }
        let bytes = read_opened(
            std::fs::File::from(fd),
            st.st_size as u64,
            &path,
            limit_of(&path),
        )?;
        Ok(Some(bytes))
    }

    /// The bytes of the folder's file `name`; a missing one is an [`Error::Io`] of kind
    /// `NotFound`.
    pub(crate) fn read(&mut self, name: &str) -> Result<Vec<u8>> {
        self.read_if_any(name)?.ok_or_else(|| {
            Error::io(
                self.path(name),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })
    }

    /// The model file `name` as a save's journal says it is now (see [`commit`]):
    /// the path it was read from, and its bytes.
    pub(crate) fn read_current(&mut self, name: &str) -> Result<(PathBuf, Vec<u8>)> {
        if let Some(bytes) = self.read_if_any(SAVE_JOURNAL)? {
            let journal = parse_journal(&self.path(SAVE_JOURNAL), &bytes)?;
            for (staged, target) in journal {
                if target == name {
                    if let Some(bytes) = self.read_if_any(&staged)? {
                        return Ok((self.path(&staged), bytes));
                    }
                }
            }
        }
        Ok((self.path(name), self.read(name)?))
    }

    /// Whether the folder's name still leads to the folder opened, and every name read to
    /// the file read (or still to none).
    fn unchanged(&self) -> bool {
        let now = |name: &str| match statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(id_of(&st))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(e),
        };
        let same_dir = rustix::fs::stat(&self.dir).is_ok_and(|st| id_of(&st) == self.id);
        same_dir
            && self
                .seen
                .iter()
                .all(|(name, id)| now(name).is_ok_and(|n| n == *id))
    }
}

/// Reads the model folder `dir` with `read`, as one snapshot (see the module docs): what
/// `read` returns comes from one version of the folder, whole, or the folder kept changing
/// and that is the error.
pub(crate) fn read_snapshot<T>(
    dir: &Path,
    mut read: impl FnMut(&mut Snapshot) -> Result<T>,
) -> Result<T> {
    for attempt in 0..ATTEMPTS {
        let mut snap = Snapshot::open(dir)?;
        let result = read(&mut snap);
        if snap.unchanged() {
            return result;
        }
        // Replaced or saved into while being read: read the new version, from the start.
        std::thread::sleep(std::time::Duration::from_millis(5 << attempt.min(5)));
    }
    Err(ckpt_err(
        dir,
        crate::error::CheckpointProblem::Unsettled { attempts: ATTEMPTS },
    ))
}

/// A test's callback, run before each file a snapshot reads (on this thread).
#[cfg(test)]
pub(crate) mod hook {
    use std::cell::RefCell;

    type Hook = Box<dyn FnMut(&str)>;

    thread_local! {
        static HOOK: RefCell<Option<Hook>> = RefCell::new(None);
    }

    /// Runs `f` before each file read on this thread until [`clear`].
    pub(crate) fn set(f: impl FnMut(&str) + 'static) {
        HOOK.with(|h| *h.borrow_mut() = Some(Box::new(f)));
    }

    /// Removes the callback.
    pub(crate) fn clear() {
        HOOK.with(|h| *h.borrow_mut() = None);
    }

    pub(super) fn between_files(name: &str) {
        // Taken out while it runs: the callback itself may read a model folder.
        let f = HOOK.with(|h| h.borrow_mut().take());
        if let Some(mut f) = f {
            f(name);
            HOOK.with(|h| {
                let mut slot = h.borrow_mut();
                if slot.is_none() {
                    *slot = Some(f);
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::fuzz::{tiny_config, tiny_dataset, trained_on};
    use crate::checkpoint::{load, save, CONFIG_FILE, WEIGHTS_FILE};
    use crate::pipeline::Model;
    use crate::train::TrainState;

    /// A saved model of `hidden` units in a fresh folder `name`, its data named after it in
    /// `meta.json`.
    fn saved(name: &str, hidden: usize) -> (PathBuf, Model<f32>) {
        let dir = std::env::temp_dir().join(format!("cardinal-snap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let ds = tiny_dataset();
        let mut cfg = tiny_config();
        cfg.model.hidden = hidden;
        let model = TrainState::new(&ds, &cfg).unwrap().model;
        let data = crate::checkpoint::TrainedOn {
            dataset: name.into(),
            ..trained_on(&ds)
        };
        save(&model, &dir, &data).unwrap();
        (dir, model)
    }

    /// What `train --force` does: the new run takes the folder's name; the old one, removed
    /// unless `keep_old`.
    fn swap(dir: &Path, new: &Path, keep_old: bool) {
        let aside = dir.with_extension("old");
        let _ = std::fs::remove_dir_all(&aside);
        std::fs::rename(dir, &aside).unwrap();
        std::fs::rename(new, dir).unwrap();
        if !keep_old {
            std::fs::remove_dir_all(&aside).unwrap();
        }
    }

    /// A run replaced after `meta.json` was read (before `config.json`, or before the
    /// weights) is read as the new run, whole: never the old meta data with the new weights.
    #[test]
    fn a_run_replaced_mid_read_is_read_whole() {
        for (at, keep_old) in [
            (CONFIG_FILE, false),
            (CONFIG_FILE, true),
            (WEIGHTS_FILE, false),
            (WEIGHTS_FILE, true),
        ] {
            let case = format!("{}-{keep_old}", &at[..4]);
            let (dir, _old) = saved(&format!("swap-{case}"), 5);
            let new_name = format!("swap-new-{case}");
            let (new, model) = saved(&new_name, 7);
            let (d, n) = (dir.clone(), new.clone());
            let mut done = false;
            hook::set(move |name| {
                if name == at && !done {
                    done = true;
                    swap(&d, &n, keep_old);
                }
            });
            let loaded = load(&dir);
            hook::clear();
            let (loaded, meta) = loaded.unwrap();
            assert_eq!(loaded.params, model.params, "{case}");
            assert_eq!(loaded.config.model.hidden, 7);
            assert_eq!(meta.dataset, new_name, "{case}: the old run's meta data");
            let _ = std::fs::remove_dir_all(dir.with_extension("old"));
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// A run's record of its data (`run.json`, `data.json`) is read with its model: a run
    /// replaced just before either is read is read as the new run, model and record alike,
    /// never the old model with the new run's data (which `eval` would score it on).
    #[test]
    fn a_runs_data_record_is_read_with_its_model() {
        use crate::engine::{DataSpec, Engine};
        use crate::run_dir::{DATA_FILE, RUN_FILE};
        let engine = Engine::default();
        for at in [RUN_FILE, DATA_FILE] {
            let case = &at[..3];
            let (dir, _old) = saved(&format!("rec-{case}"), 5);
            let new_name = format!("rec-new-{case}");
            let (new, model) = saved(&new_name, 7);
            for (d, dataset) in [(&dir, "old-data"), (&new, "new-data")] {
                let spec = serde_json::to_string(&DataSpec::named(dataset)).unwrap();
                std::fs::write(d.join(RUN_FILE), spec).unwrap();
                let identity = format!(r#"{{"sha256":"{dataset}","data_dir":null,"rows":[1,1]}}"#);
                std::fs::write(d.join(DATA_FILE), identity).unwrap();
            }
            let (d, n) = (dir.clone(), new.clone());
            let mut done = false;
            hook::set(move |name| {
                if name == at && !done {
                    done = true;
                    swap(&d, &n, false);
                }
            });
            let loaded = engine.load_run(&dir);
            hook::clear();
            let (loaded, meta, record) = loaded.unwrap();
            let loaded = loaded.networks().expect("networks");
            assert_eq!(loaded.params, model.params, "{case}: the old run's model");
            assert_eq!(meta.dataset, new_name, "{case}");
            assert_eq!(record.unwrap().spec().dataset, "new-data", "{case}");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// A save into the folder while it is read: the reader gets the new model, whole.
    #[test]
    fn a_model_saved_in_place_mid_read_is_read_whole() {
        let (dir, _old) = saved("inplace", 5);
        let ds = tiny_dataset();
        let mut cfg = tiny_config();
        cfg.model.hidden = 7;
        let model = TrainState::new(&ds, &cfg).unwrap().model;
        let (d, m) = (dir.clone(), model.clone());
        let mut done = false;
        hook::set(move |name| {
            if name == WEIGHTS_FILE && !done {
                done = true;
                save(&m, &d, &trained_on(&tiny_dataset())).unwrap();
            }
        });
        let loaded = load(&dir);
        hook::clear();
        assert_eq!(loaded.unwrap().0.params, model.params);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A folder replaced during every read is a clear error, not a mix.
    #[test]
    fn a_folder_that_keeps_changing_is_an_error() {
        let (dir, _) = saved("churn", 5);
        let spare = dir.with_extension("spare");
        let (d, s) = (dir.clone(), spare.clone());
        hook::set(move |name| {
            if name == CONFIG_FILE {
                std::fs::rename(&d, &s).unwrap();
                std::fs::rename(&s, &d).unwrap();
                // Same name, same folder: only a new copy is a change.
                let copy = d.with_extension("copy");
                let _ = std::fs::remove_dir_all(&copy);
                std::fs::create_dir(&copy).unwrap();
                for e in std::fs::read_dir(&d).unwrap() {
                    let e = e.unwrap();
                    std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
                }
                std::fs::remove_dir_all(&d).unwrap();
                std::fs::rename(&copy, &d).unwrap();
            }
        });
        let e = load(&dir).map(|_| ()).unwrap_err().to_string();
        hook::clear();
        assert!(
            e.contains("changed") && e.contains("while it was being read"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
