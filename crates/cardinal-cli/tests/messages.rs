//! Messages that say what is wrong, once, in the user's terms: no repeated OS text, no
//! internal type names, formats told by their content, "not found" only when nothing is
//! there, no escape codes in a redirected log.

mod common;
use common::{arg, cardinal, tmpdir, train_args, write_config};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const QUICK: &str = r#"{"model": {"hidden": 16, "card_hidden": 8}, "inference": {"steps": 3}, "train": {"epochs": 2, "full_epochs": 1}}"#;

#[test]
fn an_io_error_is_told_once() {
    let o = cardinal(&["eval", "--model", "/nonexistent-model-folder"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.matches("(os error 2)").count(), 1, "{err}");
}

/// ARFF saved as `.txt` is read as ARFF; CSV without its label columns named is told how; a device is not "not found";
/// an ARFF file whose labels cannot be told says so, not "not found".
#[test]
fn formats_are_told_by_their_content() {
    let dir = tmpdir("sniff");
    let arff = "@relation 'x: -C 1'\n@attribute y {0,1}\n@attribute a numeric\n@data\n1,0.5\n0,1\n";
    std::fs::write(dir.join("x.txt"), arff).unwrap();
    let o = cardinal(&["data", "stats", arg(&dir.join("x.txt")), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(dir.join("t.csv"), "a,b,labels\n1,2,x\n").unwrap();
    let o = cardinal(&["data", "stats", arg(&dir.join("t.csv"))]);
    assert!(
        stderr(&o).contains("a CSV file needs its label columns named"),
        "{}",
        stderr(&o)
    );
    let o = cardinal(&[
        "data",
        "stats",
        arg(&dir.join("t.csv")),
        "--label-columns",
        "labels",
    ]);
    assert!(
        stderr(&o).contains("column 3 (`labels`) holds `x`: expected 0 or 1"),
        "{}",
        stderr(&o)
    );
    // Refused by name, and never read as a header (of a multi-target file or any other).
    for args in [
        &["data", "stats", "/dev/zero"][..],
        &["cv", "--dataset", "/dev/zero"],
        &[
            "train",
            "--dataset",
            "/dev/zero",
            "--out",
            arg(&dir.join("z")),
        ],
    ] {
        let o = cardinal(args);
        let err = stderr(&o);
        assert!(
            err.contains("neither a file nor a folder") && !err.contains("not found"),
            "{args:?}: {err}"
        );
    }
    std::fs::write(
        dir.join("n.arff"),
        "@relation x\n@attribute a numeric\n@data\n1\n",
    )
    .unwrap();
    let o = cardinal(&["data", "stats", arg(&dir.join("n.arff"))]);
    let err = stderr(&o);
    assert!(
        err.contains("cannot tell which attributes are labels") && !err.contains("not found"),
        "{err}"
    );
}

/// Eval on data of no rows is refused instead of printing F1 0.00 and "range inf..-inf";
/// `-v` into a file writes no escape codes; a 1e39 value is called out of range.
#[test]
fn empty_evaluations_escape_codes_and_huge_values() {
    let dir = tmpdir("messages");
    let data = dir.join("small.svm");
    let rows: String = (0..40)
        .map(|r| format!("{} {}:1 {}:2\n", r % 3, r % 5 + 1, r % 7 + 6))
        .collect();
    std::fs::write(&data, rows).unwrap();
    let cfg = write_config(&dir, QUICK);
    let m = dir.join("m");
    let o = cardinal(&train_args(
        &cfg,
        &m,
        &[
            "--dataset",
            arg(&data),
            "--no-checkpoints",
            "--no-search",
            "-v",
        ],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains('\u{1b}'),
        "escape codes in: {}",
        stderr(&o)
    );
    std::fs::write(dir.join("empty.svm"), "# nothing\n").unwrap();
    let o = cardinal(&[
        "eval",
        "--model",
        arg(&m),
        "--data",
        arg(&dir.join("empty.svm")),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("has no rows"), "{}", stderr(&o));
    std::fs::write(dir.join("huge.svm"), "0 1:1e39\n").unwrap();
    let o = cardinal(&[
        "predict",
        "--model",
        arg(&m),
        "--data",
        arg(&dir.join("huge.svm")),
    ]);
    let err = stderr(&o);
    assert!(
        err.contains("outside the range of a 32-bit float") && !err.contains("non-numeric"),
        "{err}"
    );
}

/// A folder of the user's files is refused as what it is, not sent to `--force` (which would
/// refuse it too); a run folder stopped before its first checkpoint says how to start again.
#[test]
fn a_folder_that_is_no_run_is_not_sent_to_force() {
    let dir = tmpdir("not-a-run");
    let folder = dir.join("mine");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("notes.txt"), "keep me").unwrap();
    let o = cardinal(&["train", "--dataset", "bibtex", "--out", arg(&folder)]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is not a cardinal run") && err.contains("notes.txt"),
        "{err}"
    );
    assert!(!err.contains("pass --force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(folder.join("notes.txt")).unwrap(),
        "keep me"
    );
    // A run folder with its records but no checkpoint: resuming says how to start again.
    let run = dir.join("stopped");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(
        run.join("run.json"),
        r#"{"dataset": "bibtex", "train": null, "test": null, "labels": null, "data_dir": null, "train_fraction": 0.8}"#,
    )
    .unwrap();
    let o = cardinal(&["train", "--resume", arg(&run)]);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("start it again with `cardinal train --force"),
        "{err}"
    );
}

/// `eval --data` on rows the model trained on is refused, saying how many and what to do;
/// `--include-training-rows` scores them anyway, and rows it never saw are scored as asked.
#[test]
fn eval_never_scores_training_rows_unknowingly() {
    let (dir, cfg) = common::dir_with_config("eval-train-rows", QUICK);
    let data = common::write_svm(&dir, "mine.svm", 60);
    let out = dir.join("m");
    let mut args = train_args(&cfg, &out, &["--dataset", arg(&data), "--no-search"]);
    args.push("--quiet");
    let o = cardinal(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = cardinal(&["eval", "--model", arg(&out), "--data", arg(&data)]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("of the 60 rows") && err.contains("are rows the model trained on"),
        "{err}"
    );
    assert!(err.contains("--include-training-rows"), "{err}");
    let o = cardinal(&[
        "eval",
        "--model",
        arg(&out),
        "--data",
        arg(&data),
        "--include-training-rows",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Rows never seen (other values): scored without a word about training rows.
    let fresh = dir.join("fresh.svm");
    std::fs::write(&fresh, "0,1 1:0.25 2:0.75\n2 3:0.125\n").unwrap();
    let o = cardinal(&["eval", "--model", arg(&out), "--data", arg(&fresh)]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// Dead ends a newcomer met, each refused saying what to do instead of answering nothing
/// with exit 0: a folder of runs given as a model, `top-k=0`, and `reproduce` filters that
/// match nothing.
#[test]
fn dead_ends_say_what_to_do() {
    let (dir, cfg) = common::dir_with_config("dead-ends", QUICK);
    let data = common::write_svm(&dir, "mine.svm", 60);
    let runs = dir.join("runs");
    let out = runs.join("m");
    let mut args = train_args(&cfg, &out, &["--dataset", arg(&data), "--no-search"]);
    args.push("--quiet");
    let o = cardinal(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    for cmd in ["eval", "predict"] {
        let mut a = vec![cmd, "--model", arg(&runs)];
        if cmd == "predict" {
            a.extend(["--data", arg(&data)]);
        }
        let o = cardinal(&a);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.contains("holds no model") && err.contains(&format!("{}", out.display())),
            "{cmd}: {err}"
        );
        assert!(!err.contains("os error"), "{err}");
    }
    let o = cardinal(&["eval", "--model", arg(&dir)]);
    assert!(stderr(&o).contains("holds no model (no meta.json): pass the folder a training wrote"));
    let o = cardinal(&[
        "predict",
        "--model",
        arg(&out),
        "--data",
        arg(&data),
        "--labels-by",
        "top-k=0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("K >= 1"), "{}", stderr(&o));
    let table = dir.join("table1");
    let o = cardinal(&[
        "reproduce",
        "table1",
        "--rows",
        "nosuchrow",
        "--out",
        arg(&table),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("matches no row of Table 1"), "{err}");
    let o = cardinal(&[
        "reproduce",
        "suite",
        "--datasets",
        "nosuch",
        "--out",
        arg(&table),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("none of the datasets could be read"), "{err}");
    assert!(!table.exists(), "an empty table was written");
}

/// `--resume` is offered only where it can work: a finished run is said to be finished, both
/// when training into it again and when resuming it; a MULAN training file with its test file
/// beside it trains and tests on the two, saying so.
#[test]
fn finished_runs_are_not_sent_to_resume_and_train_files_find_their_test_file() {
    let (dir, cfg) = common::dir_with_config("finished", QUICK);
    let data = common::write_svm(&dir, "mine.svm", 60);
    let out = dir.join("m");
    let mut args = train_args(&cfg, &out, &["--dataset", arg(&data), "--no-search"]);
    args.push("--quiet");
    assert!(cardinal(&args).status.success());
    let o = cardinal(&args);
    let err = stderr(&o);
    assert!(
        err.contains("holds a finished run") && !err.contains("--resume"),
        "{err}"
    );
    let o = cardinal(&["train", "--resume", arg(&out)]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("is a finished run") && err.contains("nothing to resume"),
        "{err}"
    );
    // NAME-train.arff with NAME-test.arff beside it.
    let arff = |rows: &[&str]| {
        let mut t = String::from("@relation 'songs: -C 2'\n@attribute a {0,1}\n@attribute b {0,1}\n@attribute x numeric\n@attribute y numeric\n@data\n");
        rows.iter().for_each(|r| t.push_str(&format!("{r}\n")));
        t
    };
    let train_rows: Vec<String> = (0..30)
        .map(|r| {
            format!(
                "{},{},{},{}",
                r % 2,
                (r / 2) % 2,
                r as f32 / 30.0,
                (r % 7) as f32 / 7.0
            )
        })
        .collect();
    let refs: Vec<&str> = train_rows.iter().map(String::as_str).collect();
    std::fs::write(dir.join("songs-train.arff"), arff(&refs)).unwrap();
    std::fs::write(dir.join("songs-test.arff"), arff(&refs[..7])).unwrap();
    let o = cardinal(&[
        "train",
        "--dataset",
        arg(&dir.join("songs-train.arff")),
        "--config",
        arg(&cfg),
        "--no-search",
        "--out",
        arg(&dir.join("s")),
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("its test file songs-test.arff beside it is the test split"),
        "{err}"
    );
    assert!(err.contains("30 train / 7 test"), "{err}");
}
