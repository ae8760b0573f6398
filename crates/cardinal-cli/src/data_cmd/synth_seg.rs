//! `cardinal data synth-seg`: write the synthetic segmentation benchmark.

use anyhow::{bail, Context, Result};
use cardinal_data::data::arff::write_multi_target_arff;
use cardinal_data::data::synth_seg::{synth_seg, SynthSegSpec};
use std::io::BufWriter;
use std::path::PathBuf;

/// Arguments of `cardinal data synth-seg`.
#[derive(Debug, clap::Args)]
pub(crate) struct SynthSegArgs {
    /// Folder to write train.arff and test.arff into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Seed: the same arguments give the same files.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Image side (L = size² positions), 2..=64.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub size: u32,
    /// Classes M, background included, 2..=16.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(2..=16))]
    pub classes: u32,
    /// Noise σ of every pixel feature (the signal is 1).
    #[arg(long, default_value_t = 1.0)]
    pub noise: f64,
    /// Training images, 1..=100000.
    #[arg(long, default_value_t = 800, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub train: u32,
    /// Test images, 1..=100000.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub test: u32,
    /// Replace existing files.
    #[arg(long)]
    pub force: bool,
}

/// Runs the command.
pub(super) fn run(a: &SynthSegArgs) -> Result<()> {
    if !(a.noise >= 0.0 && a.noise.is_finite()) {
        bail!(
            "--noise {} is out of range: expected a finite number >= 0",
            a.noise
        );
    }
    let spec = SynthSegSpec {
        size: a.size as usize,
        classes: a.classes as usize,
        noise: a.noise,
        train: a.train as usize,
        test: a.test as usize,
        seed: a.seed,
    };
    let (train, test) = synth_seg(&spec).context("invalid benchmark specification")?;
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    for (name, ds) in [("train.arff", &train), ("test.arff", &test)] {
        let path = a.out.join(name);
        if path.exists() && !a.force {
            bail!("{} exists (use --force to replace it)", path.display());
        }
        let file = std::fs::File::create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        write_multi_target_arff(ds, BufWriter::new(file))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cardinal_data::data::arff::read_multi_target_arff;

    #[test]
    fn writes_readable_files_and_keeps_existing_ones() {
        let dir = std::env::temp_dir().join(format!("cardinal-synth-seg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut a = SynthSegArgs {
            out: dir.join("seg"),
            seed: 3,
            size: 6,
            classes: 3,
            noise: 0.5,
            train: 4,
            test: 2,
            force: false,
        };
        run(&a).unwrap();
        let read = |name: &str| {
            let f = std::fs::File::open(a.out.join(name)).unwrap();
            read_multi_target_arff(std::io::BufReader::new(f)).unwrap()
        };
        let (train, test) = (read("train.arff"), read("test.arff"));
        assert_eq!(
            (train.n_rows(), test.n_rows(), train.positions()),
            (4, 2, 36)
        );
        assert_eq!(train.class_names, ["bg", "c1", "c2"]);
        let e = run(&a).unwrap_err().to_string();
        assert!(e.contains("exists (use --force"), "{e}");
        a.force = true;
        run(&a).unwrap();
        a.noise = f64::NAN;
        assert!(run(&a).unwrap_err().to_string().contains("--noise NaN"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
