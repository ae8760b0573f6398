//! Crash safety and exact resume: a training process killed with SIGKILL at random moments
//! always leaves a loadable latest checkpoint, and a resumed run ends bit-identical to an
//! uninterrupted one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::tmpdir;

fn config(dir: &Path, epochs: usize) -> PathBuf {
    config_with(dir, epochs, "")
}

/// [`config`] with `model_fields` (`, "name": value` pairs) added to its model section.
fn config_with(dir: &Path, epochs: usize, model_fields: &str) -> PathBuf {
    let p = dir.join("cfg.json");
    let text = format!(
        r#"{{"model": {{"hidden": 8, "card_hidden": 4, "energy_hidden": 4{model_fields}}}, "inference": {{"steps": 2}},
            "train": {{"epochs": {epochs}, "full_epochs": 1, "batch_size": 100, "average_epochs": 1.5}}}}"#
    );
    std::fs::write(&p, text).unwrap();
    p
}

fn train_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cardinal"));
    c.args([
        "--threads",
        "1",
        "train",
        "--quiet",
        "--checkpoint-every",
        "0",
    ])
    .args(args)
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    c
}

fn latest(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join("checkpoints").join("LATEST")).ok()
}

/// Waits until the run in `dir` has written a checkpoint named at least `epoch-{min}`.
fn wait_for_checkpoint(dir: &Path, min: usize, child: &mut std::process::Child) {
    let start = Instant::now();
    loop {
        if let Some(name) = latest(dir) {
            if name.trim() >= format!("epoch-{min:04}").as_str() {
                return;
            }
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "training ended before epoch {min}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no checkpoint after 120 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn resumed_run_is_bit_identical_to_an_uninterrupted_one() {
    resumes_bit_identical("resume", "");
}

/// The same with a forest prior: the forest is in every checkpoint, and the resumed run
/// recomputes the same prior from it.
#[test]
fn a_resumed_run_with_a_forest_prior_is_bit_identical_to_an_uninterrupted_one() {
    resumes_bit_identical(
        "resume-prior",
        r#", "forest_prior": {"trees": 8, "clip": 0.05}"#,
    );
}

fn resumes_bit_identical(name: &str, model_fields: &str) {
    let dir = tmpdir(name);
    let cfg = config_with(&dir, 4, model_fields);
    let whole = dir.join("whole");
    let st = train_cmd(&[
        "--config",
        cfg.to_str().unwrap(),
        "--seed",
        "5",
        "--out",
        whole.to_str().unwrap(),
    ])
    .status()
    .unwrap();
    assert!(st.success());

    let cut = dir.join("cut");
    let mut child = train_cmd(&[
        "--config",
        cfg.to_str().unwrap(),
        "--seed",
        "5",
        "--out",
        cut.to_str().unwrap(),
    ])
    .spawn()
    .unwrap();
    wait_for_checkpoint(&cut, 2, &mut child);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        !cut.join("eval.json").exists(),
        "the run was interrupted before its end"
    );

    let out = train_cmd(&["--resume", cut.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = std::fs::read(whole.join("model.safetensors")).unwrap();
    let b = std::fs::read(cut.join("model.safetensors")).unwrap();
    assert!(
        a == b,
        "resumed weights differ from the uninterrupted run's"
    );
    let ma = std::fs::read_to_string(whole.join("metrics.jsonl")).unwrap();
    let mb = std::fs::read_to_string(cut.join("metrics.jsonl")).unwrap();
    let strip = |s: &str| -> Vec<serde_json::Value> {
        s.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("seconds");
                v
            })
            .collect()
    };
    assert_eq!(strip(&ma), strip(&mb), "metrics history differs");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigkill_at_random_moments_never_leaves_a_broken_checkpoint() {
    let dir = tmpdir("kill");
    let cfg = config(&dir, 40);
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut kills_with_checkpoint = 0;
    for round in 0..20 {
        let run = dir.join(format!("run{round}"));
        let mut child = train_cmd(&[
            "--config",
            cfg.to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // Kill somewhere in the first seconds: during set-up, an epoch, or a checkpoint write.
        std::thread::sleep(Duration::from_millis(200 + seed % 2500));
        child.kill().unwrap();
        child.wait().unwrap();
        if let Some(name) = latest(&run) {
            kills_with_checkpoint += 1;
            let ckpt = run.join("checkpoints").join(name.trim());
            let (state, meta) = cardinal::engine::load_state(&run).unwrap_or_else(|e| {
                panic!(
                    "round {round}: latest checkpoint {} does not load: {e}",
                    ckpt.display()
                )
            });
            assert_eq!(meta.n_labels, 159);
            state.model.params.visit(|name, t, _| {
                assert!(
                    t.iter().all(|v| v.is_finite()),
                    "round {round}: {name} not finite"
                )
            });
            // It evaluates.
            let data = cardinal::data::vendored("bibtex").unwrap();
            let model = cardinal::engine::Fitted::from(state.model.clone());
            let out = cardinal::engine::Engine::default()
                .predict(&model, &data.test.features)
                .unwrap();
            let report = cardinal::eval::evaluate_outputs(&state.model, &out, &data.test.labels);
            assert!(report.at_threshold.example_f1.is_finite());
            // No partial file in the checkpoint's place: every file is complete (loaded above),
            // and no temporary file sits in the checkpoint itself.
            for e in std::fs::read_dir(&ckpt).unwrap().flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                assert!(
                    !n.starts_with('.'),
                    "round {round}: leftover temporary file {n}"
                );
            }
        }
    }
    assert!(
        kills_with_checkpoint >= 5,
        "only {kills_with_checkpoint} of 20 kills happened after a checkpoint"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
