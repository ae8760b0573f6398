//! `cardinal project`: project vectors read from stdin, one per line.
//!
//! Each input line holds whitespace-separated numbers (with `--z-column`, the first is z); each
//! output line holds the projection, numbers printed in the shortest form that reads back as the
//! same f32. With `--classes M` each line is an `L × M` matrix (row-major), projected onto the
//! paper's Section 6 polytope `{Y >= 0, rows sum to 1, column j sums to z_j}` (`project_cmd/matrix.rs`).

use anyhow::{bail, Context, Result};
use cardinal_proj::matrix::DEFAULT_SINKHORN_EPS;
use cardinal_proj::{AnyProjector, AnyTape, Method, ProjParams, Projector};
use std::io::{BufRead, BufWriter, Write};
use std::ops::RangeInclusive;

mod matrix;

/// Arguments of `cardinal project`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ProjectArgs {
    /// Cardinality z for every line (required unless --z-column); with --classes M, the M class
    /// sizes as one argument, e.g. --z "3 2.5 1.5" (they must sum to the number of rows L).
    #[arg(
        long,
        required_unless_present = "z_column",
        conflicts_with = "z_column",
        allow_hyphen_values = true
    )]
    pub z: Option<String>,
    #[arg(long, default_value = "exact", help = method_help())]
    pub method: String,
    /// Dykstra rounds R (dykstra-soft, dykstra-soft-printed, dykstra-exact; dykstra with
    /// --classes), 1..=1000.
    #[arg(long, default_value_t = 2, value_parser = parse_rounds)]
    pub rounds: usize,
    /// Bisection iterations J (fp), 1..=200.
    #[arg(long, default_value_t = 10, value_parser = parse_iters)]
    pub iters: usize,
    /// Read z from the first column of each line instead of --z.
    #[arg(long)]
    pub z_column: bool,
    /// Number of classes M: each line is an L × M matrix (row-major) projected onto
    /// {Y >= 0, every row sums to 1, column j sums to z_j} (the paper's Section 6).
    #[arg(long, conflicts_with = "z_column", value_parser = parse_classes)]
    pub classes: Option<usize>,
    /// Temperature of --method sinkhorn (finite, > 0).
    #[arg(long, default_value_t = DEFAULT_SINKHORN_EPS)]
    pub eps: f64,
}

/// Allowed `--classes`.
const CLASSES: RangeInclusive<usize> = 1..=10_000;

fn parse_classes(s: &str) -> Result<usize, String> {
    parse_count("--classes", s, &CLASSES)
}

/// `--method`'s help, listing every operator (from `Method::ALL`, so it cannot fall behind)
/// and the matrix projections of `--classes`.
fn method_help() -> String {
    let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
    let matrix: Vec<&str> = cardinal::proj::matrix::MatrixMethod::ALL
        .iter()
        .map(|m| m.name())
        .collect();
    format!(
        "Projection: {}; with --classes: {} (dykstra: the paper's, as released; \
         dykstra-printed: as printed).",
        names.join(" | "),
        matrix.join(" | ")
    )
}

fn parse_method(s: &str) -> Result<Method, String> {
    s.parse::<Method>().map_err(|e| e.to_string())
}

/// Allowed `--rounds` (as `inference.rounds` in a configuration): 0 rounds would return the
/// input unprojected.
const ROUNDS: RangeInclusive<usize> = ProjParams::ROUNDS;
/// Allowed `--iters` (as `inference.fp_iters`): 0 iterations would skip the bisection.
const ITERS: RangeInclusive<usize> = ProjParams::FP_ITERS;

/// `value` if it lies in `range`, else an error naming the flag and the range.
fn count_in(flag: &str, value: usize, range: &RangeInclusive<usize>) -> Result<usize, String> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(format!(
            "{flag} {value} is out of range: expected {}..={}",
            range.start(),
            range.end()
        ))
    }
}

fn parse_count(flag: &str, s: &str, range: &RangeInclusive<usize>) -> Result<usize, String> {
    let value = s.parse::<usize>().map_err(|_| {
        format!(
            "{flag} expects a whole number in {}..={}, got {s:?}",
            range.start(),
            range.end()
        )
    })?;
    count_in(flag, value, range)
}

fn parse_rounds(s: &str) -> Result<usize, String> {
    parse_count("--rounds", s, &ROUNDS)
}

fn parse_iters(s: &str) -> Result<usize, String> {
    parse_count("--iters", s, &ITERS)
}

/// Whitespace-separated numbers of `line` into `nums`; errors name the line and field.
fn parse_numbers(line: &str, lineno: usize, nums: &mut Vec<f32>) -> Result<()> {
    nums.clear();
    for (k, tok) in line.split_whitespace().enumerate() {
        let x: f32 = tok.parse().map_err(|_| {
            anyhow::anyhow!(
                "line {lineno}, field {}: expected a number, got {tok:?}",
                k + 1
            )
        })?;
        nums.push(x);
    }
    Ok(())
}

/// Writes `out` as one line of shortest round-trip f32s.
fn write_numbers<W: Write>(out: &[f32], text: &mut String, output: &mut W) -> Result<()> {
    text.clear();
    for (k, x) in out.iter().enumerate() {
        if k > 0 {
            text.push(' ');
        }
        // `Display` for f32 is the shortest representation that round-trips.
        use std::fmt::Write as _;
        write!(text, "{x}").expect("writing to a String");
    }
    writeln!(output, "{text}").context("cannot write output")
}

/// Runs the command on stdin/stdout.
pub(crate) fn run(args: &ProjectArgs) -> Result<()> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    project_stream(args, stdin.lock(), BufWriter::new(stdout.lock()))
}

/// The command on any reader/writer (testable without a process).
pub(crate) fn project_stream<R: BufRead, W: Write>(
    args: &ProjectArgs,
    input: R,
    mut output: W,
) -> Result<()> {
    // Checked here too for callers that build the arguments without the parser.
    count_in("--rounds", args.rounds, &ROUNDS).map_err(anyhow::Error::msg)?;
    count_in("--iters", args.iters, &ITERS).map_err(anyhow::Error::msg)?;
    if let Some(classes) = args.classes {
        return matrix::project_matrix_stream(args, classes, input, output);
    }
    let method = parse_method(&args.method).map_err(anyhow::Error::msg)?;
    let z_flag = match (&args.z, args.z_column) {
        (Some(z), false) => Some(z.trim().parse::<f32>().map_err(|_| {
            anyhow::anyhow!("--z expects one number (or M numbers with --classes M), got {z:?}")
        })?),
        (None, true) => None,
        _ => bail!("give exactly one of --z and --z-column"),
    };
    let params = ProjParams {
        rounds: args.rounds,
        fp_iters: args.iters,
        ..ProjParams::default()
    };
    let proj = AnyProjector::new(method, params);
    let mut tape = AnyTape::<f32>::default();
    let mut nums: Vec<f32> = Vec::new();
    let mut out: Vec<f32> = Vec::new();
    let mut text = String::new();
    for (i, line) in input.lines().enumerate() {
        let lineno = i + 1;
        let line = line.with_context(|| format!("line {lineno}: cannot read input"))?;
        parse_numbers(&line, lineno, &mut nums)?;
        let (z, v) = match z_flag {
            None => match nums.split_first() {
                Some((z, v)) if !v.is_empty() => (*z, v),
                _ => bail!("line {lineno}: expected z followed by at least one number (--z-column), got {line:?}"),
            },
            Some(z) => {
                if nums.is_empty() {
                    bail!("line {lineno}: expected whitespace-separated numbers, got an empty line");
                }
                (z, &nums[..])
            }
        };
        out.clear();
        out.resize(v.len(), 0.0);
        proj.forward(v, z, &mut out, &mut tape).map_err(|e| {
            anyhow::anyhow!("line {lineno}: {e} (row of {} numbers, z = {z})", v.len())
        })?;
        write_numbers(&out, &mut text, &mut output)?;
    }
    output.flush().context("cannot write output")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(z: Option<f32>, method: Method, z_column: bool) -> ProjectArgs {
        ProjectArgs {
            z: z.map(|z| z.to_string()),
            method: method.name().to_string(),
            rounds: 2,
            iters: 10,
            z_column,
            classes: None,
            eps: DEFAULT_SINKHORN_EPS,
        }
    }

    fn run_str(a: &ProjectArgs, input: &str) -> Result<String> {
        let mut out = Vec::new();
        project_stream(a, input.as_bytes(), &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn projects_each_line() {
        let out = run_str(&args(Some(1.0), Method::Exact, false), "0.5 0.5\n2 0 -1\n").unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines, vec!["0.5 0.5", "1 0 0"]);
    }

    #[test]
    fn z_column_and_round_trip_precision() {
        let out = run_str(&args(None, Method::Exact, true), "1 0.1 0.2 0.3\n").unwrap();
        let xs: Vec<f32> = out.split_whitespace().map(|t| t.parse().unwrap()).collect();
        let mut want = vec![0.0f32; 3];
        let mut tape = AnyTape::default();
        AnyProjector::new(Method::Exact, ProjParams::default())
            .forward(&[0.1, 0.2, 0.3], 1.0, &mut want, &mut tape)
            .unwrap();
        assert_eq!(xs, want);
    }

    #[test]
    fn huge_entries_project_exactly() {
        // τ = 1e7 − 0.5 is not an f32: the projection used to print `0 0 0`.
        let out = run_str(&args(Some(1.0), Method::Exact, false), "1e7 1e7 0\n").unwrap();
        assert_eq!(out, "0.5 0.5 0\n");
    }

    #[test]
    fn degenerate_rounds_and_iterations_are_refused() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            project: ProjectArgs,
        }
        let parse = |xs: &[&str]| {
            Cli::try_parse_from(std::iter::once("project").chain(xs.iter().copied()))
                .map(|c| c.project)
                .map_err(|e| e.to_string())
        };
        for (flag, value, range) in [
            ("--rounds", "0", "1..=1000"),
            ("--rounds", "1001", "1..=1000"),
            ("--iters", "0", "1..=200"),
            ("--iters", "201", "1..=200"),
        ] {
            let e = parse(&["--z", "1", flag, value]).unwrap_err();
            assert!(
                e.contains(&format!("{flag} {value} is out of range: expected {range}")),
                "{e}"
            );
        }
        let e = parse(&["--z", "1", "--rounds", "two"]).unwrap_err();
        assert!(
            e.contains("--rounds expects a whole number in 1..=1000"),
            "{e}"
        );
        let ok = parse(&["--z", "1", "--rounds", "1", "--iters", "200"]).unwrap();
        assert_eq!((ok.rounds, ok.iters), (1, 200));
        let dflt = parse(&["--z", "1"]).unwrap();
        assert_eq!((dflt.rounds, dflt.iters), (2, 10));
        // Arguments built without the parser are checked as well.
        let mut a = args(Some(1.0), Method::DykstraSoft, false);
        a.rounds = 0;
        let e = run_str(&a, "1 2 3\n").unwrap_err().to_string();
        assert_eq!(e, "--rounds 0 is out of range: expected 1..=1000");
        let mut a = args(Some(1.0), Method::Fp, false);
        a.iters = 0;
        let e = run_str(&a, "1 2 3\n").unwrap_err().to_string();
        assert_eq!(e, "--iters 0 is out of range: expected 1..=200");
    }

    #[test]
    fn bad_lines_name_the_line() {
        let e = run_str(&args(Some(1.0), Method::Exact, false), "0 1\n0 x\n").unwrap_err();
        assert!(e.to_string().contains("line 2, field 2"), "{e}");
        let e = run_str(&args(Some(1.0), Method::Exact, false), "0 1\n\n").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        let e = run_str(&args(None, Method::Exact, true), "2\n").unwrap_err();
        assert!(e.to_string().contains("line 1: expected z"), "{e}");
        let e = run_str(&args(Some(5.0), Method::Exact, false), "0 1\n").unwrap_err();
        assert!(
            e.to_string().contains("line 1") && e.to_string().contains("outside"),
            "{e}"
        );
    }
}
