//! New data for a multi-target (Section 6) model is matched by name, as for the binary
//! models: the same test file with its features, targets or class values in another order,
//! or its targets last (`-C -L`) or left out (`-C 0`), predicts the same; renamed columns are
//! refused, named.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::{arg, cardinal, tmpdir};

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A MEKA ARFF file as its relation line, its attribute lines and its rows' fields.
struct Arff {
    relation: String,
    attributes: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Arff {
    fn read(path: &Path) -> Self {
        let text = std::fs::read_to_string(path).unwrap();
        let mut lines = text.lines();
        let relation = lines.next().unwrap().to_string();
        let mut attributes = Vec::new();
        for line in lines.by_ref() {
            if line.starts_with("@data") {
                break;
            }
            attributes.push(line.to_string());
        }
        let rows = lines
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect();
        Arff {
            relation,
            attributes,
            rows,
        }
    }

    /// The file with relation line `relation`, its columns in `order` (a subset, reordered),
    /// and `edit` applied to the header.
    fn write(&self, path: &Path, relation: &str, order: &[usize], edit: &dyn Fn(&str) -> String) {
        let mut out = format!("{relation}\n");
        for &k in order {
            out.push_str(&edit(&self.attributes[k]));
            out.push('\n');
        }
        out.push_str("@data\n");
        for row in &self.rows {
            let fields: Vec<&str> = order.iter().map(|&k| row[k].as_str()).collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        std::fs::write(path, out).unwrap();
    }
}

/// A synthetic multi-target benchmark (3 × 3 images, 3 classes) of `train` and `test` images
/// in `dir/data`, and a model trained on it for 2 epochs in `dir/model`.
fn trained(dir: &Path, train: &str, test: &str) -> (PathBuf, PathBuf) {
    let (data, model) = (dir.join("data"), dir.join("model"));
    ok(cardinal(&[
        "data",
        "synth-seg",
        "--out",
        arg(&data),
        "--size",
        "3",
        "--classes",
        "3",
        "--train",
        train,
        "--test",
        test,
    ]));
    let cfg = dir.join("cfg.json");
    std::fs::write(&cfg, r#"{"multi_target": {"epochs": 2}}"#).unwrap();
    ok(cardinal(&[
        "train",
        "--dataset",
        arg(&data),
        "--config",
        arg(&cfg),
        "--out",
        arg(&model),
        "--quiet",
        "--checkpoint-every",
        "0",
    ]));
    (data, model)
}

#[test]
fn multi_target_data_is_matched_by_name() {
    let dir = tmpdir("seg-inputs");
    let (data, model) = trained(&dir, "30", "6");
    let m = arg(&model);
    let eval = |f: &Path| cardinal(&["eval", "--model", m, "--data", arg(f), "--json", "-"]);
    // The metrics without the time they took.
    let metrics = |o: Output| {
        let mut v: serde_json::Value = serde_json::from_str(&ok(o)).unwrap();
        v.as_object_mut().unwrap().remove("seconds");
        v
    };
    let predict = |f: &Path| cardinal(&["predict", "--model", m, "--data", arg(f)]);
    let test = data.join("test.arff");
    let (want_eval, want_predict) = (metrics(eval(&test)), ok(predict(&test)));
    let arff = Arff::read(&test);
    let (targets, width) = (9, arff.attributes.len());
    assert!(arff.relation.ends_with("-C 9'"), "{}", arff.relation);
    let name = "@relation 'moved";
    let same = |s: &str| s.to_string();
    let features: Vec<usize> = (targets..width).collect();
    let all: Vec<usize> = (0..width).collect();
    let file = |n: &str| dir.join(format!("{n}.arff"));

    // Class values declared in another order; features reversed; targets last (`-C -9`).
    arff.write(&file("classes"), &format!("{name}: -C 9'"), &all, &|a| {
        a.replace("{'bg','c1','c2'}", "{'c2','c1','bg'}")
    });
    let reversed: Vec<usize> = (0..targets).chain(features.iter().rev().copied()).collect();
    arff.write(
        &file("reversed"),
        &format!("{name}: -C 9'"),
        &reversed,
        &same,
    );
    let last: Vec<usize> = features.iter().copied().chain(0..targets).collect();
    arff.write(&file("last"), &format!("{name}: -C -9'"), &last, &same);
    // No `-C`: the targets are found by name, wherever they are.
    let among: Vec<usize> = features[..4]
        .iter()
        .copied()
        .chain((0..targets).rev())
        .chain(features[4..].iter().copied())
        .collect();
    arff.write(&file("named"), &format!("{name}'"), &among, &same);
    for n in ["classes", "reversed", "last", "named"] {
        assert_eq!(metrics(eval(&file(n))), want_eval, "{n}");
        assert_eq!(ok(predict(&file(n))), want_predict, "{n}");
    }

    // Targets left out: predicts the same; evaluation says what is missing.
    for (n, relation) in [
        ("bare", format!("{name}: -C 0'")),
        ("plain", format!("{name}'")),
    ] {
        arff.write(&file(n), &relation, &features, &same);
        assert_eq!(ok(predict(&file(n))), want_predict, "{n}");
        let o = eval(&file(n));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("holds no targets"),
            "{n}: {err}"
        );
    }

    // A renamed feature, target or class (in the header and every row) is refused, named,
    // by both.
    for (n, from, to) in [
        ("feature", "'x0_0_0'", "`x9_9_9`"),
        ("target", "'y0_0'", "`y9_9`"),
        ("class", "'c2'", "`sky`"),
    ] {
        arff.write(&file(n), &format!("{name}: -C 9'"), &all, &same);
        let text = std::fs::read_to_string(file(n)).unwrap();
        std::fs::write(file(n), text.replace(from, &to.replace('`', "'"))).unwrap();
        let shown = to;
        for o in [eval(&file(n)), predict(&file(n))] {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success() && err.contains(shown), "{n}: {err}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A multi-target run records what its data was: `eval` without `--data` and `--resume`
/// refuse an edited file found under the same name, naming both.
#[test]
fn a_multi_target_run_refuses_other_data_under_its_name() {
    let dir = tmpdir("seg-identity");
    let (data, model) = trained(&dir, "20", "5");
    let m = arg(&model);
    assert!(model.join("data.json").is_file());
    ok(cardinal(&["eval", "--model", m]));
    // One feature value of one training row changed.
    let train = data.join("train.arff");
    let text = std::fs::read_to_string(&train).unwrap();
    let last = text.trim_end().rsplit_once(',').unwrap().0.to_string();
    std::fs::write(&train, format!("{last},12345\n")).unwrap();
    let edited = std::fs::read_to_string(&train).unwrap();
    assert_ne!(edited, text);
    for args in [
        vec!["eval", "--model", m],
        vec!["train", "--resume", m, "--quiet"],
    ] {
        let o = cardinal(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success()
                && err.contains("is not the data the run")
                && err.matches("SHA-256").count() == 2,
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
