//! Your own data, end to end: every dataset of the shared data folder (required under CI, see
//! [`cardinal_testkit::shared_data`]) trains,
//! evaluates, and predicts on its test file with the label columns stripped, giving exactly
//! the predictions of the labeled file; reordered feature columns are aligned by name; renamed
//! ones are refused, naming them; LIBSVM rows without labels predict with the model's
//! dimensions.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;
use common::{arg, dir_with_config, text};
use std::time::Instant;

use cardinal_testkit::shared_data;

/// The binary at one thread (the timings of the results table are per thread).
fn cardinal(args: &[&str]) -> Output {
    common::cardinal(&[&["--threads", "1"], args].concat())
}

fn ok(args: &[&str]) -> String {
    let o = cardinal(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The arguments of `cardinal predict --model MODEL --data DATA` followed by `extra`.
fn predict_args<'a>(model: &'a str, data: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    [&["predict", "--model", model, "--data", data][..], extra].concat()
}

/// Trains a quick model from `cfg` into `out` (on `dataset`, or the default one), quietly.
fn train_quick(cfg: &Path, out: &Path, dataset: Option<&Path>) {
    let mut args = vec!["train"];
    if let Some(d) = dataset {
        args.extend(["--dataset", arg(d)]);
    }
    args.extend(["--config", arg(cfg), "--out", arg(out), "--quiet"]);
    ok(&args);
}

/// The label names of a MULAN XML file.
fn xml_labels(xml: &Path) -> Vec<String> {
    let t = std::fs::read_to_string(xml).unwrap();
    t.split("<label name=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_string())
        .collect()
}

/// Splits a dense ARFF row on commas outside quotes.
fn split_dense(row: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote) = (Vec::new(), String::new(), None);
    for ch in row.chars() {
        match (quote, ch) {
            (None, '\'' | '"') => {
                quote = Some(ch);
                cur.push(ch);
            }
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(ch);
            }
            (None, ',') => out.push(std::mem::take(&mut cur)),
            _ => cur.push(ch),
        }
    }
    out.push(cur);
    out
}

/// The name of an `@attribute` line.
fn attr_name(line: &str) -> String {
    let rest = line.trim_start()[10..].trim_start();
    match rest.chars().next() {
        Some(q @ ('\'' | '"')) => rest[1..].split(q).next().unwrap().to_string(),
        _ => rest
            .split(|c: char| c.is_whitespace() || c == '{')
            .next()
            .unwrap()
            .to_string(),
    }
}

/// How label columns are taken out of an ARFF file.
#[derive(Clone, Copy)]
enum Strip {
    /// The label attributes and their values removed.
    Remove,
    /// Every label value replaced by `?`.
    Unknown,
}

/// `arff` with its label columns stripped, and the kept attributes reversed in order when
/// `reverse` (a file the model must read by names).
fn strip(arff: &str, labels: &[String], how: Strip, reverse: bool) -> String {
    let mut out = String::new();
    let mut attrs: Vec<&str> = Vec::new();
    // Per attribute of the original file: its column in the new file, and whether its value
    // becomes `?`.
    let mut new_index: Vec<Option<usize>> = Vec::new();
    let mut unknown: Vec<bool> = Vec::new();
    let mut keep: Vec<usize> = Vec::new();
    let mut in_data = false;
    for line in arff.lines() {
        if !in_data {
            let low = line.trim_start().to_ascii_lowercase();
            if low.starts_with("@attribute") {
                attrs.push(line);
            } else if low.starts_with("@data") {
                in_data = true;
                let is_label: Vec<bool> = attrs
                    .iter()
                    .map(|a| labels.contains(&attr_name(a)))
                    .collect();
                let remove = matches!(how, Strip::Remove);
                keep = (0..attrs.len())
                    .filter(|&i| !(remove && is_label[i]))
                    .collect();
                if reverse {
                    keep.reverse();
                }
                unknown = is_label.iter().map(|&l| l && !remove).collect();
                new_index = vec![None; attrs.len()];
                for (j, &i) in keep.iter().enumerate() {
                    new_index[i] = Some(j);
                    out.push_str(attrs[i]);
                    out.push('\n');
                }
                out.push_str(line);
                out.push('\n');
            } else {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        let t = line.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        if let Some(inner) = t.strip_prefix('{') {
            let mut pairs: Vec<(usize, String)> = inner
                .trim_end_matches('}')
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .filter_map(|p| {
                    let (i, v) = p.trim().split_once(' ').unwrap();
                    let i: usize = i.parse().unwrap();
                    let v = if unknown[i] { "?" } else { v.trim() };
                    new_index[i].map(|j| (j, v.to_string()))
                })
                .collect();
            pairs.sort_by_key(|p| p.0);
            let body: Vec<String> = pairs.iter().map(|(j, v)| format!("{j} {v}")).collect();
            out.push_str(&format!("{{{}}}\n", body.join(",")));
        } else {
            let vals = split_dense(t);
            let row: Vec<&str> = keep
                .iter()
                .map(|&i| if unknown[i] { "?" } else { vals[i].as_str() })
                .collect();
            out.push_str(&row.join(","));
            out.push('\n');
        }
    }
    out
}

const QUICK: &str = r#"{"model": {"hidden": 16, "card_hidden": 8}, "inference": {"steps": 3}, "train": {"epochs": 1, "full_epochs": 1}, "search": {"max_rows": 0}}"#;

/// The test file of a MULAN folder (the single file for datasets without a split).
fn test_file(dir: &Path) -> PathBuf {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let split = dir.join(format!("{name}-test.arff"));
    if split.exists() {
        split
    } else {
        dir.join(format!("{name}.arff"))
    }
}

#[test]
fn every_shared_dataset_predicts_on_its_test_file_with_the_labels_stripped() {
    let Some(data) = shared_data() else { return };
    // CARDINAL_OWN_DATA_FULL=1 trains the default configuration (seed 0) instead of a quick
    // one and prints the results table of docs/RESULTS.md.
    let full = std::env::var_os("CARDINAL_OWN_DATA_FULL").is_some();
    // CARDINAL_OWN_DATA_ONLY=emotions,birds restricts it to those datasets.
    let only: Option<Vec<String>> = std::env::var("CARDINAL_OWN_DATA_ONLY")
        .ok()
        .map(|v| v.split(',').map(str::to_owned).collect());
    println!("| dataset | rows predicted | test example-F1 | train time | predict time (stripped file) | stripped = labeled |");
    println!("| --- | ---: | ---: | ---: | ---: | --- |");
    let (tmp, cfg) = dir_with_config("suite", QUICK);
    let mut names: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut done = 0;
    for name in names {
        let dir = data.join(&name);
        let xml = dir.join(format!("{name}.xml"));
        let test = test_file(&dir);
        if !test.exists() || !xml.exists() {
            continue; // bookmarks: label header only
        }
        if only.as_ref().is_some_and(|o| !o.contains(&name)) {
            continue;
        }
        let model = tmp.join(&name);
        let d = dir.to_str().unwrap();
        let m = model.to_str().unwrap();
        let mut train = vec![
            "train",
            "--dataset",
            d,
            "--out",
            m,
            "--quiet",
            "--seed",
            "0",
        ];
        if !full {
            train.extend(["--config", cfg.to_str().unwrap()]);
        }
        let t0 = Instant::now();
        ok(&train);
        let train_secs = t0.elapsed().as_secs_f64();
        let eval = ok(&["eval", "--model", m]);
        let f1 = eval
            .lines()
            .find_map(|l| l.strip_prefix("EXAMPLE_F1 "))
            .unwrap_or_else(|| panic!("{name}: no EXAMPLE_F1 in {eval}"))
            .trim()
            .to_string();
        // The dataset's own test rows (or the whole single file), read with their labels.
        let whole = if dir.join(format!("{name}-test.arff")).exists() {
            d.to_string()
        } else {
            test.to_str().unwrap().to_string()
        };
        let want = ok(&predict_args(m, &whole, &["--all-scores"]));
        assert!(!want.is_empty());
        let labels = xml_labels(&xml);
        let original = std::fs::read_to_string(&test).unwrap();
        let variants = [
            ("stripped", strip(&original, &labels, Strip::Remove, false)),
            ("unknown", strip(&original, &labels, Strip::Unknown, false)),
            ("reversed", strip(&original, &labels, Strip::Remove, true)),
        ];
        for (what, body) in variants {
            let f = tmp.join(format!("{name}-{what}.arff"));
            std::fs::write(&f, body).unwrap();
            let got = ok(&predict_args(m, arg(&f), &["--all-scores"]));
            assert!(got == want, "{name} ({what}): predictions differ");
        }
        let f = tmp.join(format!("{name}-stripped.arff"));
        let t0 = Instant::now();
        let rows = ok(&predict_args(m, arg(&f), &[])).lines().count();
        let predict_secs = t0.elapsed().as_secs_f64();
        // `eval --data FILE` scores every row of the file too, not a hidden split of it; a
        // single file the model trained on most of is refused unless that is asked for.
        let file = test.to_str().unwrap();
        let single = !dir.join(format!("{name}-test.arff")).exists();
        if single {
            let o = cardinal(&["eval", "--model", m, "--data", file]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                !o.status.success() && err.contains("are rows the model trained on"),
                "{name}: {err}"
            );
        }
        let mut eval = vec!["eval", "--model", m, "--data", file];
        if single {
            eval.push("--include-training-rows");
        }
        let all = ok(&eval);
        assert!(
            all.contains(&format!("all rows: {rows} examples")),
            "{name}: {all}"
        );
        println!(
            "| {name} | {rows} | {f1} | {train_secs:.1} s | {predict_secs:.2} s | identical |"
        );
        done += 1;
    }
    let wanted = only.as_ref().map_or(8, Vec::len);
    assert!(done >= wanted, "only {done} of {wanted} datasets ran");
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A small labeled ARFF with named numeric features, for the mismatch tests.
fn tiny_arff(features: &[&str], n: usize) -> String {
    let mut s = String::from("@relation tiny\n");
    for f in features {
        s.push_str(&format!("@attribute {f} numeric\n"));
    }
    s.push_str("@attribute y0 {0,1}\n@attribute y1 {0,1}\n@attribute y2 {0,1}\n@data\n");
    for r in 0..n {
        let vals: Vec<String> = (0..features.len())
            .map(|c| format!("{}", ((r * 7 + c * 3) % 11) as f32 / 10.0))
            .collect();
        s.push_str(&format!(
            "{},{},{},{}\n",
            vals.join(","),
            r % 2,
            (r / 2) % 2,
            (r + 1) % 3 % 2
        ));
    }
    s
}

#[test]
fn renamed_missing_and_extra_features_are_refused_by_name() {
    let (tmp, cfg) = dir_with_config("names", QUICK);
    let train = tmp.join("tiny.arff");
    std::fs::write(&train, tiny_arff(&["a", "b", "c"], 40)).unwrap();
    std::fs::write(
        tmp.join("tiny.xml"),
        r#"<labels xmlns="http://mulan.sourceforge.net/labels"><label name="y0"></label><label name="y1"></label><label name="y2"></label></labels>"#,
    )
    .unwrap();
    let m = tmp.join("m");
    train_quick(&cfg, &m, Some(&train));
    for (features, expect) in [
        (&["a", "b", "z"][..], "`c`"),
        (&["a", "b"][..], "missing: `c`"),
        (&["a", "b", "c", "d"][..], "does not know: `d`"),
    ] {
        let f = tmp.join("new.arff");
        std::fs::write(&f, tiny_arff(features, 5)).unwrap();
        let o = cardinal(&predict_args(arg(&m), arg(&f), &[]));
        assert!(!o.status.success(), "{features:?} accepted");
        assert!(
            text(&o).contains(expect) && text(&o).contains("new.arff"),
            "{}",
            text(&o)
        );
    }
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn libsvm_rows_without_labels_predict_with_the_models_dimensions() {
    let (tmp, cfg) = dir_with_config("svm", QUICK);
    // 0-based (scikit-learn's default): feature 0 occurs, so the loader reads it 0-based.
    let mut train = String::new();
    for r in 0..60 {
        train.push_str(&format!(
            "{},{} 0:{} 3:1 5:{}\n",
            r % 3,
            3 + r % 2,
            r % 5,
            r % 2
        ));
    }
    std::fs::write(tmp.join("train.svm"), &train).unwrap();
    let m = tmp.join("m");
    let ms = arg(&m);
    train_quick(&cfg, &m, Some(&tmp.join("train.svm")));
    // No labels, and a last feature (5) that never occurs: narrower, read 0-based as trained.
    std::fs::write(tmp.join("new.svm"), " 0:1 3:1\n 3:1\n").unwrap();
    let out = ok(&predict_args(ms, arg(&tmp.join("new.svm")), &[]));
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.lines().nth(1).unwrap().contains("\"row\":1"));
    // Without index 0 a new file still reads 0-based: the same as the same rows with it.
    std::fs::write(tmp.join("a.svm"), " 3:1\n").unwrap();
    std::fs::write(tmp.join("b.svm"), " 0:0 3:1\n").unwrap();
    let a = ok(&predict_args(ms, arg(&tmp.join("a.svm")), &[]));
    let b = ok(&predict_args(ms, arg(&tmp.join("b.svm")), &[]));
    assert_eq!(a, b);
    // Wider than the model: refused, naming the line.
    std::fs::write(tmp.join("wide.svm"), " 0:1\n 9:1\n").unwrap();
    let o = cardinal(&predict_args(ms, arg(&tmp.join("wide.svm")), &[]));
    assert!(!o.status.success());
    assert!(
        text(&o).contains("wide.svm") && text(&o).contains(":2"),
        "{}",
        text(&o)
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn predict_writes_csv_and_npy_and_the_round_z_rule_gives_round_z_labels() {
    let (tmp, cfg) = dir_with_config("formats", QUICK);
    let m = tmp.join("m");
    let ms = arg(&m);
    train_quick(&cfg, &m, None);
    let jsonl = ok(&predict_args(ms, "bibtex", &["--labels-by", "round-z"]));
    let mut rows = 0;
    for line in jsonl.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let z = v["z"].as_f64().unwrap();
        let n = v["labels"].as_array().unwrap().len();
        assert_eq!(n as f64, z.round().clamp(0.0, 159.0), "{line}");
        rows += 1;
    }
    assert_eq!(rows, 2515);
    let csv_path = tmp.join("p.csv");
    ok(&predict_args(
        ms,
        "bibtex",
        &["--format", "csv", "--all-scores", "--out", arg(&csv_path)],
    ));
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("row,z,labels,score:"), "{header}");
    assert_eq!(header.split(',').count(), 3 + 159);
    assert_eq!(lines.count(), 2515);
    let npy = tmp.join("npy");
    ok(&predict_args(
        ms,
        "bibtex",
        &["--format", "npy", "--out", arg(&npy)],
    ));
    let labels = std::fs::read(npy.join("labels.npy")).unwrap();
    assert!(labels.starts_with(b"\x93NUMPY"));
    let header = String::from_utf8_lossy(&labels[10..80]).to_string();
    assert!(
        header.contains("(2515, 159") && header.contains("|u1"),
        "{header}"
    );
    let z = std::fs::read(npy.join("z.npy")).unwrap();
    assert!(String::from_utf8_lossy(&z[10..70]).contains("<f4"));
    let o = cardinal(&predict_args(ms, "bibtex", &["--format", "npy"]));
    assert!(
        !o.status.success() && text(&o).contains("--out"),
        "{}",
        text(&o)
    );
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// A CSV file with named label columns (one quoted, not last) trains, predicts on unlabelled
/// rows whose columns come in another order, with the labels' names in the output, and
/// evaluates; a MULAN XML beside it names its labels as it does an ARFF file's; one without
/// either is refused saying how to name them.
#[test]
fn a_csv_file_with_named_label_columns_trains_predicts_and_evaluates() {
    let (dir, cfg) = dir_with_config("own-csv", QUICK);
    let mut csv = String::from("f0,\"music\",f1,f2,f3,sports\n");
    let mut plain = String::from("f3,f2,f1,f0\n");
    for r in 0..60u32 {
        let x: Vec<f32> = (0..4)
            .map(|j| ((r * 7 + j * 3) % 11) as f32 / 10.0)
            .collect();
        let (music, sports) = (u8::from(x[0] > 0.5), u8::from(x[2] > 0.4));
        csv.push_str(&format!(
            "{},{music},{},{},{},{sports}\n",
            x[0], x[1], x[2], x[3]
        ));
        if r < 5 {
            plain.push_str(&format!("{},{},{},{}\n", x[3], x[2], x[1], x[0]));
        }
    }
    let data = dir.join("mine.csv");
    std::fs::write(&data, &csv).unwrap();
    let out = dir.join("m");
    ok(&[
        "train",
        "--dataset",
        arg(&data),
        "--label-columns",
        "music,sports",
        "--config",
        arg(&cfg),
        "--out",
        arg(&out),
        "--quiet",
    ]);
    let new = dir.join("new.csv");
    std::fs::write(&new, &plain).unwrap();
    let rows = ok(&predict_args(arg(&out), arg(&new), &["--all-scores"]));
    assert_eq!(rows.lines().count(), 5, "{rows}");
    assert!(
        rows.contains("\"music\"") && rows.contains("\"sports\""),
        "{rows}"
    );
    let report = ok(&["eval", "--model", arg(&out)]);
    assert!(
        report.contains("example F1") || report.contains("F1"),
        "{report}"
    );
    // The same file with its labels named by a MULAN XML beside it.
    let twin = dir.join("twin.csv");
    std::fs::write(&twin, &csv).unwrap();
    std::fs::write(
        dir.join("twin.xml"),
        r#"<labels xmlns="http://mulan.sourceforge.net/labels"><label name="sports"></label><label name="music"></label></labels>"#,
    )
    .unwrap();
    ok(&[
        "train",
        "--dataset",
        arg(&twin),
        "--config",
        arg(&cfg),
        "--out",
        arg(&dir.join("t")),
        "--quiet",
    ]);
    // Neither: refused before anything trains, saying how.
    let bare = dir.join("bare.csv");
    std::fs::write(&bare, &csv).unwrap();
    let o = cardinal(&[
        "train",
        "--dataset",
        arg(&bare),
        "--out",
        arg(&dir.join("b")),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("--label-columns"), "{}", text(&o));
    // A missing value: refused with its line and column.
    let holes = dir.join("holes.csv");
    std::fs::write(&holes, "f0,l\n1,0\n,1\n").unwrap();
    let o = cardinal(&[
        "train",
        "--dataset",
        arg(&holes),
        "--label-columns",
        "l",
        "--out",
        arg(&dir.join("h")),
    ]);
    assert!(
        text(&o).contains("line 3, column 1 (`f0`)") && text(&o).contains("not imputed"),
        "{}",
        text(&o)
    );
}

/// A run's data is found from any working folder (`run.json` records absolute paths), and
/// when it has moved, `eval --data-dir` and `report --data-dir` say where it is now.
#[test]
fn a_runs_data_is_found_from_anywhere_and_where_it_moved() {
    let (dir, cfg) = dir_with_config("moved", QUICK);
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    common::write_svm(&data, "mine.svm", 60);
    let out = dir.join("m");
    // Trained by a relative path, from the data's folder.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_cardinal"))
        .current_dir(&data)
        .args([
            "--threads",
            "1",
            "train",
            "--dataset",
            "mine.svm",
            "--config",
            arg(&cfg),
        ])
        .args(["--out", arg(&out), "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let before = ok(&["eval", "--model", arg(&out)]);
    // By name in a data folder that then moves.
    let named = dir.join("n");
    ok(&[
        "train",
        "--dataset",
        "mine.svm",
        "--data-dir",
        arg(&data),
        "--config",
        arg(&cfg),
        "--out",
        arg(&named),
        "--quiet",
    ]);
    let moved = dir.join("elsewhere");
    std::fs::rename(&data, &moved).unwrap();
    let o = cardinal(&["eval", "--model", arg(&named)]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("give the folder that holds it now (`--data-dir`)"),
        "{}",
        text(&o)
    );
    let after = ok(&["eval", "--model", arg(&named), "--data-dir", arg(&moved)]);
    assert!(after.contains("EXAMPLE_F1"), "{after}");
    let page = dir.join("r.html");
    ok(&[
        "report",
        "--model",
        arg(&named),
        "--data-dir",
        arg(&moved),
        "--out",
        arg(&page),
    ]);
    assert!(std::fs::metadata(&page).unwrap().len() > 0);
    assert!(before.contains("EXAMPLE_F1"), "{before}");
}

/// Files with MEKA headers train as `--train/--test` without an XML, and the model predicts
/// on LIBSVM rows of features only (unlabelled), its label count its own.
#[test]
fn meka_pairs_need_no_xml_and_unlabelled_libsvm_predicts() {
    let (dir, cfg) = dir_with_config("meka-pair", QUICK);
    let arff = |rows: std::ops::Range<u32>| {
        let mut t = String::from(
            "@relation 'songs: -C 2'\n@attribute a {0,1}\n@attribute b {0,1}\n@attribute x numeric\n@attribute y numeric\n@data\n",
        );
        for r in rows {
            t.push_str(&format!("{},{},{},{}\n", r % 2, (r / 2) % 2, r % 5, r % 3));
        }
        t
    };
    let (train, test) = (dir.join("a.arff"), dir.join("b.arff"));
    std::fs::write(&train, arff(0..40)).unwrap();
    std::fs::write(&test, arff(40..50)).unwrap();
    let out = dir.join("m");
    ok(&[
        "train",
        "--train",
        arg(&train),
        "--test",
        arg(&test),
        "--config",
        arg(&cfg),
        "--out",
        arg(&out),
        "--quiet",
    ]);
    let svm = dir.join("new.svm");
    std::fs::write(&svm, "1:3 2:1\n1:0.5\n").unwrap();
    let rows = ok(&predict_args(arg(&out), arg(&svm), &[]));
    assert_eq!(rows.lines().count(), 2, "{rows}");
}
