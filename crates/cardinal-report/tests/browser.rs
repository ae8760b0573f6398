//! The report of a small model trained on the vendored Bibtex data: its structure always, and,
//! when `chromium` is on PATH, that a real browser draws it (every `<svg>` laid out with a
//! non-zero box, and a screenshot that is not blank). Without a browser that part fails under
//! CI and is skipped with a note elsewhere ([`cardinal_testkit::chromium`]). `CARDINAL_REPORT_SCREENSHOT=FILE` keeps the screenshot for a human to look
//! at.

use std::path::{Path, PathBuf};
use std::process::Command;

use cardinal::config::Config;
use cardinal::engine::DataSpec;
use cardinal::engine::Engine;
use cardinal_testkit::chromium;

/// Trains a small model on Bibtex into `dir` as `cardinal train` would (run.json included).
fn train_small(dir: &Path) {
    let engine = Engine::default();
    let mut cfg = Config::predict();
    cfg.model.hidden = 32;
    cfg.model.card_hidden = 8;
    cfg.inference.steps = 3;
    cfg.train.epochs = 4;
    cfg.train.full_epochs = 1;
    cfg.train.patience = 2;
    let run = engine
        .start_run(dir, &DataSpec::named("bibtex"), cfg, false)
        .expect("bibtex is vendored");
    engine
        .finish_run(run, cardinal::engine::Checkpoints::Never, &mut |_| {})
        .unwrap();
}

/// Figures a single-model page must have, by a phrase of their caption.
const FIGURES: [&str; 5] = [
    "Mean training loss per batch",
    "Test rows by gold label count",
    "Each label occurring in test",
    "Every entry of y_T on test",
    "Example-F1 when y_T is binarised",
];

fn build_page(tmp: &Path) -> (PathBuf, String) {
    let model = tmp.join("model");
    train_small(&model);
    let html = cardinal_report::report(&Engine::default(), &[model]).unwrap();
    let page = tmp.join("report.html");
    std::fs::write(&page, &html).unwrap();
    (page, html)
}

#[test]
fn the_page_is_self_contained_and_has_every_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, html) = build_page(tmp.path());
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.len() < 5 << 20, "{} bytes", html.len());
    for caption in FIGURES {
        assert!(html.contains(caption), "no figure `{caption}`");
    }
    assert_eq!(html.matches("<svg").count(), FIGURES.len());
    // Nothing fetched: no script, no stylesheet or image links, no url(...) in styles; the
    // only "http" is SVG's namespace name.
    for bad in [
        "<script", "<link", "<img", "src=", "href=", "url(", "@import",
    ] {
        assert!(!html.contains(bad), "the page contains `{bad}`");
    }
    let outside: Vec<&str> = html
        .match_indices("http")
        .map(|(i, _)| &html[i..(i + 30).min(html.len())])
        .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
        .collect();
    assert!(outside.is_empty(), "{outside:?}");
    // The metrics table reads in percent, like every other output.
    assert!(html.contains("example-F1 at the threshold (%)"));
}

/// Runs headless Chromium on `url` with `extra` flags; returns its standard output.
fn run_chromium(exe: &Path, profile: &Path, extra: &[&str], url: &str) -> String {
    let out = Command::new(exe)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_headless_browser_draws_every_figure() {
    let Some(exe) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let (page, html) = build_page(tmp.path());

    // Layout: a copy of the page with a script that writes each <svg>'s rendered box into
    // the DOM, read back with --dump-dom.
    let probe = tmp.path().join("probe.html");
    let script = "<script>window.addEventListener('load',()=>{const b=[...document.querySelectorAll('svg')].map(s=>{const r=s.getBoundingClientRect();return Math.round(r.width)+'x'+Math.round(r.height)});const p=document.createElement('pre');p.id='boxes';p.textContent='BOX'+'ES: '+b.join(' ')+' EN'+'D';document.body.appendChild(p)});</script>";
    std::fs::write(&probe, html.replace("</body>", &format!("{script}</body>"))).unwrap();
    let url = |p: &Path| format!("file://{}", p.display());
    let dom = run_chromium(
        &exe,
        &tmp.path().join("profile-dom"),
        &["--dump-dom", "--virtual-time-budget=5000"],
        &url(&probe),
    );
    let boxes = dom
        // The marker is assembled by the script, so the script's own text does not hold it.
        .split("BOXES: ")
        .nth(1)
        .and_then(|s| s.split(" END").next())
        .unwrap_or_else(|| {
            panic!(
                "no layout report in the DOM: {}",
                &dom[..dom.len().min(500)]
            )
        });
    let sizes: Vec<(u32, u32)> = boxes
        .split_whitespace()
        .map(|b| {
            let (w, h) = b.split_once('x').unwrap();
            (w.parse().unwrap(), h.parse().unwrap())
        })
        .collect();
    assert_eq!(sizes.len(), FIGURES.len(), "{boxes}");
    assert!(sizes.iter().all(|&(w, h)| w > 100 && h > 100), "{boxes}");

    // Pixels: a screenshot of the page itself is not blank (a fair share of it is drawn).
    let shot = match std::env::var_os("CARDINAL_REPORT_SCREENSHOT") {
        Some(p) => PathBuf::from(p),
        None => tmp.path().join("shot.png"),
    };
    run_chromium(
        &exe,
        &tmp.path().join("profile-shot"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1000,2600",
        ],
        &url(&page),
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let n = pixels.len() / channels;
    let drawn = pixels
        .chunks_exact(channels)
        .filter(|p| p[..3].iter().any(|&c| c < 200))
        .count();
    let share = drawn as f64 / n as f64;
    // Text, axes, curves and the shaded count matrix: measured around 4 %; blank is 0.
    assert!(
        share > 0.01,
        "only {:.3} % of the screenshot is drawn",
        100.0 * share
    );
    // Coloured pixels: the curves and the matrix, not just black text.
    let coloured = pixels
        .chunks_exact(channels)
        .filter(|p| {
            let (r, g, b) = (p[0] as i32, p[1] as i32, p[2] as i32);
            (r - g).abs() > 40 || (g - b).abs() > 40 || (r - b).abs() > 40
        })
        .count();
    assert!(coloured > 1000, "{coloured} coloured pixels");
}
