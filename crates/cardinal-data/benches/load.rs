//! Load benchmark: Delicious train+test (MULAN ARFF + XML) from the shared data folder, and the
//! vendored Bibtex (embedded gzip). Prints one JSON line per dataset.
//!
//! `cargo bench -p cardinal-data --bench load` (set `CARDINAL_SHARED_DATA` to the data folder
//! if it is not `shared/data` in or beside the checkout).

use std::path::PathBuf;
use std::time::Instant;

use cardinal_data::data::{resolve_dataset, vendored, Resolved};

fn shared_data() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CARDINAL_SHARED_DATA") {
        return Some(PathBuf::from(p)).filter(|p| p.is_dir());
    }
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    ["../../shared/data", "../../../shared/data"]
        .iter()
        .map(|r| crate_dir.join(r))
        .find(|p| p.join("delicious").is_dir())
}

/// Runs `f` `reps` times after one warm-up; returns (min, median) milliseconds and the checksum.
fn time<F: FnMut() -> usize>(reps: usize, mut f: F) -> (f64, f64, usize) {
    let check = f();
    let mut ms: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            let c = f();
            assert_eq!(c, check);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    (ms[0], ms[reps / 2], check)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is ignored.
    let reps = 15;
    match shared_data() {
        Some(dir) => {
            let spec = dir.join("delicious");
            let spec = spec.to_str().expect("utf-8 path");
            let (min, med, rows) = time(reps, || match resolve_dataset(spec, None).unwrap() {
                Resolved::Split(tt) => tt.train.n_rows() + tt.test.n_rows(),
                Resolved::Single(d) => d.n_rows(),
            });
            println!(
                "{{\"bench\":\"load_delicious_train_test\",\"rows\":{rows},\"reps\":{reps},\"min_ms\":{min:.2},\"median_ms\":{med:.2}}}"
            );
        }
        None => eprintln!("note: shared data folder not found; skipping Delicious"),
    }
    let (min, med, rows) = time(reps, || {
        let tt = vendored("bibtex").unwrap();
        tt.train.n_rows() + tt.test.n_rows()
    });
    println!(
        "{{\"bench\":\"load_vendored_bibtex_gz\",\"rows\":{rows},\"reps\":{reps},\"min_ms\":{min:.2},\"median_ms\":{med:.2}}}"
    );
}
