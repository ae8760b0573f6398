//! Generated corrupt model directories: a real small model is saved once, then each case
//! mutates one of its files (`model.safetensors`, `config.json`, `meta.json`, or in a resumable
//! checkpoint `optimizer.safetensors` / `progress.json`) with byte-level and token-level
//! mutations and asserts that loading never panics, that an error names the file, and that a
//! model that does load is usable: finite parameters and standardisation, consistent shapes,
//! and a forward pass that does not panic.
//!
//! The default case counts keep the suite at a few seconds; `CARDINAL_FUZZ_CASES=N` runs `N`
//! cases per target (see `docs/results/reliability.md`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::checkpoint::{self, CONFIG_FILE, META_FILE, WEIGHTS_FILE};
use crate::config::Config;
use crate::data::arrays::dataset_from_arrays;
use crate::data::{CsrMatrix, Dataset, LabelSets};
use crate::engine::Model;
use crate::train::TrainState;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;

use cardinal_testkit::{apply_edit, edit, fuzz_config as config, Edit};

pub(super) fn tiny_dataset() -> Dataset {
    let (n, d, l) = (8, 6, 4);
    let mut x = CsrMatrix::new(d);
    let mut y = LabelSets::new(l);
    for r in 0..n {
        let idx: Vec<u32> = (0..d as u32).filter(|i| (i + r) % 3 != 0).collect();
        let val: Vec<f32> = idx
            .iter()
            .map(|&i| 0.25 + (i as f32 + r as f32) * 0.5)
            .collect();
        x.push_row(&idx, &val);
        let lab: Vec<u32> = (0..l as u32).filter(|k| (k + r) % 2 == 0).collect();
        y.push_row(&lab);
    }
    Dataset {
        label_names: (0..l).map(|i| format!("label{i}")).collect(),
        ..dataset_from_arrays("tiny", x, y).unwrap()
    }
}

pub(super) fn tiny_config() -> Config {
    let mut cfg = Config::paper();
    cfg.model.hidden = 5;
    cfg.model.energy_hidden = 3;
    cfg.model.card_hidden = 4;
    cfg.inference.steps = 3;
    cfg
}

/// The files of a saved model directory and of a resumable checkpoint, written once.
struct Originals {
    files: Vec<(&'static str, Vec<u8>)>,
}

const STATE_FILES: [&str; 2] = ["optimizer.safetensors", "progress.json"];

fn originals() -> &'static Originals {
    static O: OnceLock<Originals> = OnceLock::new();
    O.get_or_init(|| {
        let ds = tiny_dataset();
        let cfg = tiny_config();
        let state = TrainState::new(&ds, &cfg).unwrap();
        let dir = scratch("orig");
        checkpoint::save(&state.model, &dir, &trained_on(&ds)).unwrap();
        let ck = crate::engine::save_state(&dir, &state, &trained_on(&ds)).unwrap();
        let mut files = Vec::new();
        for name in [WEIGHTS_FILE, CONFIG_FILE, META_FILE] {
            files.push((name, std::fs::read(dir.join(name)).unwrap()));
        }
        for name in STATE_FILES {
            files.push((name, std::fs::read(ck.join(name)).unwrap()));
        }
        // The untouched directory loads.
        let (m, _) = checkpoint::load(&dir).unwrap();
        assert_eq!(m.params, state.model.params);
        crate::engine::load_state(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        Originals { files }
    })
}

/// A per-test scratch directory under the system temp dir (removed when the case passes).
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "cardinal-fuzz-ckpt-{}-{tag}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const DICT: &[&[u8]] = &[
    b"18446744073709551616",
    b"18446744073709551615",
    b"9223372036854775807",
    b"4294967296",
    b"65536",
    b"65537",
    b"1e400",
    b"-1e400",
    b"1e308",
    b"NaN",
    b"Infinity",
    b"-1",
    b"0",
    b"-0.0",
    b"0.5",
    b"3",
    b"null",
    b"true",
    b"\"x\"",
    b"[]",
    b"{}",
    b"[1,2]",
    b"\"F16\"",
    b"\"F64\"",
    b"\"BF16\"",
    b"\"I32\"",
    b"\"U8\"",
    b"\"BOOL\"",
    b"\"F8_E4M3\"",
    b",",
    b":",
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\\",
    b"\\u0000",
    b"\xff",
    b"\xc3",
    b"\0\0\0\0",
    b"\xff\xff\xff\xff\xff\xff\xff\xff",
    b"\x00\x00\x80\x7f",
    b"\x00\x00\xc0\x7f",
];

#[derive(Debug, Clone)]
enum Mutation {
    /// A byte- or line-level edit (tokens from [`DICT`]); in a safetensors file the numbers
    /// replaced are those of the JSON header (shapes, offsets).
    Edit(Edit),
    /// Overwrites the 8-byte little-endian header length of a safetensors file.
    HeaderLen(u64),
    /// Overwrites 4 bytes of the tensor data (after the header) with a float bit pattern.
    DataFloat(Index, u32),
}

/// One in twelve each: the nine edits (a number replacement twice as often), the header
/// length and a tensor float.
fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        9 => edit(32).prop_map(Mutation::Edit),
        1 => (any::<Index>(), any::<Index>())
            .prop_map(|(a, b)| Mutation::Edit(Edit::ReplaceNumber(a, b))),
        1 => prop_oneof![
            Just(0u64),
            Just(1),
            Just(7),
            Just(u64::MAX),
            Just(1 << 40),
            0u64..4096
        ]
        .prop_map(Mutation::HeaderLen),
        1 => (
            any::<Index>(),
            prop_oneof![
                Just(f32::NAN.to_bits()),
                Just(f32::INFINITY.to_bits()),
                Just(f32::NEG_INFINITY.to_bits()),
                Just(0x7f80_0001),
                Just(0),
                Just(f32::MAX.to_bits()),
                any::<u32>()
            ]
        )
            .prop_map(|(a, b)| Mutation::DataFloat(a, b)),
    ]
}

fn apply(text: &mut Vec<u8>, m: &Mutation, safetensors: bool) {
    let n = text.len();
    match m {
        Mutation::Edit(e) => {
            // In a safetensors file only the JSON header holds text numbers.
            let numbers_end = if safetensors { header_end(text) } else { n };
            apply_edit(text, e, DICT, numbers_end);
        }
        Mutation::HeaderLen(v) if safetensors && n >= 8 => {
            text[..8].copy_from_slice(&v.to_le_bytes());
        }
        Mutation::DataFloat(i, bits) if safetensors => {
            let start = header_end(text);
            if n >= start + 4 {
                let at = start + 4 * i.index((n - start) / 4);
                text[at..at + 4].copy_from_slice(&bits.to_le_bytes());
            }
        }
        _ => {}
    }
}

/// End of the JSON header of a safetensors file (start of the tensor data), clamped.
fn header_end(t: &[u8]) -> usize {
    if t.len() < 8 {
        return t.len();
    }
    let len = u64::from_le_bytes(t[..8].try_into().unwrap());
    usize::try_from(len)
        .ok()
        .and_then(|l| l.checked_add(8))
        .map_or(t.len(), |e| e.min(t.len()))
}

fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestCaseError::fail(format!("{what} panicked: {msg}"))
    })
}

/// A model that loaded must be usable: finite numbers, shapes that agree, a forward pass.
fn check_model(model: &Model<f32>, meta_n: (usize, usize)) -> Result<(), TestCaseError> {
    let p = &model.params;
    prop_assert!(
        p.first_nonfinite().is_none(),
        "non-finite parameters loaded"
    );
    let s = &model.standardizer;
    prop_assert!(
        s.mean.iter().chain(&s.scale).all(|v| v.is_finite()),
        "non-finite standardisation loaded"
    );
    let (d, l) = meta_n;
    prop_assert_eq!(p.w1.dim().0, d);
    prop_assert_eq!(p.w2.dim().1, l);
    prop_assert_eq!(s.mean.len(), d);
    prop_assert_eq!(s.scale.len(), d);
    prop_assert_eq!(model.counts.len(), p.cb2.len());
    model.config.validate().map_err(|e| {
        TestCaseError::fail(format!("a loaded model has an invalid configuration: {e}"))
    })?;
    if d == 6 && l == 4 {
        let ds = tiny_dataset();
        // Projection errors are allowed; panics are not.
        let _ = no_panic("forward pass of a loaded model", || {
            crate::eval::predict(model, &ds.features, 4)
        })?;
    }
    Ok(())
}

/// Writes the five files (one mutated) and loads; asserts the contract.
fn run_case(which: usize, muts: &[Mutation], state: bool) -> Result<(), TestCaseError> {
    let orig = originals();
    let dir = scratch(if state { "state" } else { "model" });
    // A model directory, or a run directory whose checkpoint holds the same files.
    let ck = if state {
        let ck = dir.join("checkpoints").join("epoch-0000");
        std::fs::create_dir_all(&ck).unwrap();
        std::fs::write(dir.join("checkpoints").join("LATEST"), "epoch-0000").unwrap();
        ck
    } else {
        dir.clone()
    };
    let (name, _) = orig.files[which];
    for (k, (n, bytes)) in orig.files.iter().enumerate() {
        let mut b = bytes.clone();
        if k == which {
            for m in muts {
                apply(&mut b, m, n.ends_with(".safetensors"));
            }
        }
        std::fs::write(ck.join(n), &b).unwrap();
    }
    let result = if state {
        no_panic("checkpoint::load_state", || {
            crate::engine::load_state(&dir).map(|(s, meta)| (s.model, meta, Some(s.optimizer.acc)))
        })?
    } else {
        no_panic("checkpoint::load", || {
            checkpoint::load(&ck).map(|(m, meta)| (m, meta, None))
        })?
    };
    match result {
        Ok((model, meta, acc)) => {
            check_model(&model, (meta.n_features, meta.n_labels))?;
            if let Some(acc) = acc {
                prop_assert!(
                    acc.first_nonfinite().is_none(),
                    "non-finite optimizer state loaded"
                );
                let mut negative = false;
                acc.visit(|_, data, _| negative |= data.iter().any(|&a| a < 0.0));
                prop_assert!(!negative, "negative Adagrad accumulators loaded");
            }
        }
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(
                msg.contains(name) || (state && STATE_FILES.iter().any(|f| msg.contains(f))),
                "error does not name the corrupt file `{}`: {}",
                name,
                msg
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn cleanup_all(tag: &str) {
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!(
        "cardinal-fuzz-ckpt-{}-{tag}-{:?}",
        std::process::id(),
        std::thread::current().id()
    )));
}

proptest! {
    #![proptest_config(config(150))]

    #[test]
    fn model_dir_mutated(which in 0usize..3, muts in prop::collection::vec(mutation(), 1..4)) {
        run_case(which, &muts, false)?;
        cleanup_all("model");
    }

    #[test]
    fn resumable_checkpoint_mutated(
        which in 0usize..5, muts in prop::collection::vec(mutation(), 1..4),
    ) {
        run_case(which, &muts, true)?;
        cleanup_all("state");
    }

    /// The weights file replaced by random bytes (with a plausible header length).
    #[test]
    fn weights_random_bytes(len in 0u64..300, body in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut b = len.to_le_bytes().to_vec();
        b.extend_from_slice(&body);
        let orig = originals();
        let dir = scratch("random");
        for (n, bytes) in &orig.files[..3] {
            std::fs::write(dir.join(n), if *n == WEIGHTS_FILE { &b } else { bytes }).unwrap();
        }
        let r = no_panic("checkpoint::load", || checkpoint::load(&dir))?;
        if let Err(e) = r {
            prop_assert!(e.to_string().contains(WEIGHTS_FILE), "{}", e);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn scratch_dirs_are_per_thread() {
    let a = scratch("probe");
    assert!(a.starts_with(std::env::temp_dir()));
    let _ = std::fs::remove_dir_all(Path::new(&a));
}

// ---------------------------------------------------------------------------------------------
// Regressions: minimal inputs found by the targets above (see `docs/results/reliability.md`).

/// A saved model directory whose `meta.json` is edited by `edit`.
fn dir_with_meta(tag: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let ds = tiny_dataset();
    let model = TrainState::new(&ds, &tiny_config()).unwrap().model;
    let dir = scratch(tag);
    checkpoint::save(&model, &dir, &trained_on(&ds)).unwrap();
    let p = dir.join(META_FILE);
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    edit(&mut meta);
    std::fs::write(&p, serde_json::to_vec(&meta).unwrap()).unwrap();
    dir
}

/// Was: `attempt to add with overflow` (panic) in `count_max - count_min + 1`.
#[test]
fn meta_count_max_u64_max_is_an_error() {
    let dir = dir_with_meta("reg-count", |m| {
        m["count_min"] = 0.into();
        m["count_max"] = u64::MAX.into();
    });
    let e = checkpoint::load(&dir).unwrap_err().to_string();
    assert!(
        e.contains(META_FILE) && e.contains("count_max = 18446744073709551615"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Was: a corrupt `meta.json` (n_labels edited) was reported as a bad tensor shape in
/// `model.safetensors` only; the message now names the files that imply the shape.
#[test]
fn meta_size_mismatch_names_meta_and_config() {
    let dir = dir_with_meta("reg-size", |m| {
        m["n_features"] = 7.into();
    });
    let e = checkpoint::load(&dir).unwrap_err().to_string();
    assert!(
        e.contains(WEIGHTS_FILE) && e.contains(META_FILE) && e.contains(CONFIG_FILE),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Was: loaded (Ok) with a NaN standardisation, so every prediction was NaN.
#[test]
fn nonfinite_standardizer_is_an_error() {
    let ds = tiny_dataset();
    let mut model = TrainState::new(&ds, &tiny_config()).unwrap().model;
    model.standardizer.scale[2] = f32::INFINITY;
    let dir = scratch("reg-std");
    checkpoint::save(&model, &dir, &trained_on(&ds)).unwrap();
    let e = checkpoint::load(&dir).unwrap_err().to_string();
    assert!(
        e.contains(WEIGHTS_FILE) && e.contains("standardize.scale") && e.contains("non-finite"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Was: a resumable checkpoint with NaN or negative Adagrad accumulators loaded (Ok) and the
/// resumed run diverged (`sqrt` of a negative, NaN steps).
#[test]
fn bad_optimizer_state_is_an_error() {
    let ds = tiny_dataset();
    for (bad, what) in [(f32::NAN, "non-finite"), (-1.0, "negative")] {
        let mut state = TrainState::new(&ds, &tiny_config()).unwrap();
        state.optimizer.acc.w2[[1, 1]] = bad;
        let dir = scratch("reg-acc");
        crate::engine::save_state(&dir, &state, &trained_on(&ds)).unwrap();
        let e = crate::engine::load_state(&dir).unwrap_err().to_string();
        assert!(
            e.contains("optimizer.safetensors") && e.contains("unary.w2") && e.contains(what),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Was: `cardinal train` on 3 million labels grew past 12 GB and aborted (`memory allocation
/// of 12000000 bytes failed`); `init_model` now refuses above the memory budget, by name.
#[test]
fn init_model_refuses_models_above_the_memory_budget() {
    if std::env::var_os("CARDINAL_MEMORY_BUDGET").is_some() {
        return; // the default budget is what is tested
    }
    let mut ds = tiny_dataset();
    ds.labels.n_labels = 3_000_000;
    ds.label_names.clear();
    let e = crate::train::init_model(&ds, &Config::paper())
        .expect_err("3 million labels exceed the default budget")
        .to_string();
    assert!(
        e.contains("3000000 labels") && e.contains("GiB") && e.contains("CARDINAL_MEMORY_BUDGET"),
        "{e}"
    );
}

/// Was: `attempt to subtract with overflow` (panic) when a fixed count range starts above the
/// number of labels.
#[test]
fn init_model_count_min_above_labels_is_an_error() {
    let mut cfg = tiny_config();
    cfg.model.counts = crate::config::CountRange::Fixed { min: 9, max: 12 };
    let e = crate::train::init_model(&tiny_dataset(), &cfg)
        .expect_err("no count possible")
        .to_string();
    assert!(e.contains("model.counts.min = 9"), "{e}");
}

/// What the saved models record of their data: `ds`, named "tiny".
pub(super) fn trained_on(ds: &crate::data::Dataset) -> checkpoint::TrainedOn {
    checkpoint::TrainedOn {
        dataset: "tiny".into(),
        ..checkpoint::TrainedOn::of(ds)
    }
}
