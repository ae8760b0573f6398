//! The figures, drawn with `plotters`' SVG back end; each function returns one `<svg>` element
//! as text, ready to be inlined in the page.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::gather::{best_epoch, CountMatrix, LabelPoint, ReliabilityBin, ThresholdCurve};
use crate::{Error, Result};
use cardinal::engine::EpochRecord;

const FONT: &str = "sans-serif";
/// A figure's size in pixels: one panel, or two side by side.
const PANEL: (u32, u32) = (460, 340);
const WIDE: (u32, u32) = (920, 340);

/// Series colours, one per model in a comparison.
fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(255, 127, 14),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    C[i % C.len()]
}

fn draw_err<E: std::error::Error + Send + Sync + 'static>(e: E) -> Error {
    Error::Draw {
        source: Box::new(e),
    }
}

/// Runs `draw` on a fresh white SVG canvas of `size` and returns the SVG text.
fn svg(
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<()>,
) -> Result<String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        draw(&root)?;
        root.present().map_err(draw_err)?;
    }
    Ok(text)
}

/// `(lo, hi)` of `xs` widened by 5 % (and to a non-empty range).
fn padded(xs: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = xs
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(1e-3);
    (lo - pad, hi + pad)
}

/// An epoch tick's label: whole epochs only.
fn whole(v: &f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        String::new()
    }
}

/// One run's curve: its legend name and its epoch records.
pub type Run<'a> = (&'a str, &'a [EpochRecord]);

/// Loss (left) and dev example-F1 (right) per epoch, one line per run; the best dev epoch (the
/// one early stopping keeps) is marked with a ring and a label. Epochs are numbered across
/// both phases (phase 2 continues after phase 1).
pub fn training_curves(runs: &[Run]) -> Result<String> {
    svg(WIDE, |root| {
        let (left, right) = root.split_horizontally(WIDE.0 / 2);
        let n_max = runs.iter().map(|(_, h)| h.len()).max().unwrap_or(1).max(2);
        loss_panel(&left, runs, n_max)?;
        dev_f1_panel(&right, runs, n_max)
    })
}

/// One panel of the SVG canvas.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A legend of the runs' lines, when there is more than one run.
fn legend<'a: 'b, 'b>(
    chart: &mut ChartContext<'b, SVGBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    runs: &[Run],
    position: SeriesLabelPosition,
) -> Result<()> {
    if runs.len() > 1 {
        chart
            .configure_series_labels()
            .position(position)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
    }
    Ok(())
}

/// A panel of [`training_curves`]: epochs `1..=n_max` across, `y` (low, high) up, its mesh
/// drawn; `y_area` is the width left for the y labels.
fn epoch_chart<'a, 'b>(
    area: &'a Area<'b>,
    caption: &str,
    y_area: u32,
    (lo, hi): (f64, f64),
    n_max: usize,
    y_desc: &str,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(y_area)
        .build_cartesian_2d(0.5..n_max as f64 + 0.5, lo..hi)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_labels(n_max.min(15))
        .x_label_formatter(&whole)
        .x_desc("epoch")
        .y_desc(y_desc)
        .draw()
        .map_err(draw_err)?;
    Ok(chart)
}

/// The left panel of [`training_curves`]: mean loss per epoch.
fn loss_panel(area: &Area<'_>, runs: &[Run], n_max: usize) -> Result<()> {
    let y = padded(runs.iter().flat_map(|(_, h)| h.iter().map(|r| r.loss)));
    let caption = "training loss per epoch";
    let mut chart = epoch_chart(area, caption, 55, y, n_max, "mean loss per batch")?;
    for (i, (name, h)) in runs.iter().enumerate() {
        let c = colour(i);
        let pts = h.iter().enumerate().map(|(e, r)| ((e + 1) as f64, r.loss));
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(draw_err)?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    // Where plotters puts a legend unless told.
    legend(&mut chart, runs, SeriesLabelPosition::MiddleRight)
}

/// The right panel of [`training_curves`]: dev example-F1 per epoch, the best epoch ringed.
fn dev_f1_panel(area: &Area<'_>, runs: &[Run], n_max: usize) -> Result<()> {
    let dev = |r: &EpochRecord| r.dev_example_f1;
    let y = padded(runs.iter().flat_map(|(_, h)| h.iter().filter_map(dev)));
    let caption = "dev example-F1 (%) per epoch";
    let mut chart = epoch_chart(area, caption, 45, y, n_max, "example-F1 (%)")?;
    for (i, (name, h)) in runs.iter().enumerate() {
        let c = colour(i);
        let pts: Vec<(f64, f64)> = h
            .iter()
            .enumerate()
            .filter_map(|(e, r)| dev(r).map(|f| ((e + 1) as f64, f)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(draw_err)?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 2, c.filled())))
            .map_err(draw_err)?;
        if let Some(b) = best_epoch(h) {
            let p = ((b + 1) as f64, h[b].dev_example_f1.unwrap_or(0.0));
            chart
                .draw_series([
                    Circle::new(p, 7, c.stroke_width(2)).into_dyn(),
                    Text::new(format!("best: epoch {}", b + 1), p, (FONT, 12)).into_dyn(),
                ])
                .map_err(draw_err)?;
        }
    }
    legend(&mut chart, runs, SeriesLabelPosition::LowerRight)
}

/// The confusion matrix of counts: rows gold count, columns predicted `round(z)`, shaded by
/// the log of the number of test rows, with the numbers written in.
pub fn count_matrix(m: &CountMatrix) -> Result<String> {
    svg(PANEL, |root| {
        let n = m.cap + 1;
        let mut chart = ChartBuilder::on(root)
            .caption("gold count vs predicted round(z), test rows", (FONT, 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(45)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, -0.5..n as f64 - 0.5)
            .map_err(draw_err)?;
        let cap = m.cap;
        let tick = move |v: &f64| {
            let k = v.round() as usize;
            if k == cap && cap > 0 {
                format!("{k}+")
            } else {
                k.to_string()
            }
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("predicted count round(z)")
            .y_desc("gold count")
            .x_labels(n.min(16))
            .y_labels(n.min(16))
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .draw()
            .map_err(draw_err)?;
        let max = m.cells.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
        let shade = |c: usize| {
            let t = (1.0 + c as f64).ln() / (1.0 + max).ln();
            let v = (255.0 * (1.0 - 0.85 * t)) as u8;
            RGBColor(v, v, 255)
        };
        let mut cells = Vec::new();
        for (g, row) in m.cells.iter().enumerate() {
            for (p, &c) in row.iter().enumerate() {
                if c == 0 {
                    continue;
                }
                let (x, y) = (p as f64, g as f64);
                cells.push(
                    Rectangle::new([(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)], shade(c).filled())
                        .into_dyn(),
                );
                if n <= 16 {
                    cells.push(Text::new(c.to_string(), (x - 0.3, y + 0.2), (FONT, 10)).into_dyn());
                }
            }
        }
        chart.draw_series(cells).map_err(draw_err)?;
        // The diagonal: counts predicted exactly.
        chart
            .draw_series(LineSeries::new(
                [(-0.5, -0.5), (n as f64 - 0.5, n as f64 - 0.5)],
                BLACK.mix(0.3),
            ))
            .map_err(draw_err)?;
        Ok(())
    })
}

/// Per-label F1 on test against the label's frequency in train (log scale): which labels fail.
pub fn label_f1(points: &[LabelPoint]) -> Result<String> {
    svg(PANEL, |root| {
        let max = points
            .iter()
            .map(|p| p.train_count)
            .max()
            .unwrap_or(1)
            .max(2) as f64;
        let mut chart = ChartBuilder::on(root)
            .caption("per-label F1 (test) vs frequency (train)", (FONT, 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(45)
            .build_cartesian_2d((0.8..max * 1.25).log_scale(), -2.0..102.0)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("training rows with the label (log scale)")
            .y_desc("label F1 (%)")
            .draw()
            .map_err(draw_err)?;
        let c = colour(0);
        chart
            .draw_series(points.iter().map(|p| {
                // A label never seen in train is drawn at the left edge.
                Circle::new((p.train_count.max(1) as f64, p.f1), 3, c.mix(0.6).filled())
            }))
            .map_err(draw_err)?;
        Ok(())
    })
}

/// The reliability diagram of `y_T`: in each bin of `y_T`, the fraction of entries that are
/// gold labels against their mean `y_T`; the diagonal is perfect calibration, and each point
/// is labelled with its share of all entries.
pub fn reliability(bins: &[ReliabilityBin]) -> Result<String> {
    svg(PANEL, |root| {
        let total: usize = bins.iter().map(|b| b.n).sum::<usize>().max(1);
        let mut chart = ChartBuilder::on(root)
            .caption("reliability of y_T (test)", (FONT, 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(45)
            .build_cartesian_2d(0.0..1.0, 0.0..1.0)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("mean y_T in the bin")
            .y_desc("fraction that are gold labels")
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new([(0.0, 0.0), (1.0, 1.0)], BLACK.mix(0.3)))
            .map_err(draw_err)?;
        let c = colour(0);
        let pts: Vec<(f64, f64)> = bins.iter().map(|b| (b.mean_y, b.frac_gold)).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(draw_err)?;
        chart
            .draw_series(bins.iter().map(|b| {
                let share = 100.0 * b.n as f64 / total as f64;
                EmptyElement::at((b.mean_y, b.frac_gold))
                    + Circle::new((0, 0), 4, c.filled())
                    + Text::new(format!("{share:.2}%"), (5, -12), (FONT, 10))
            }))
            .map_err(draw_err)?;
        Ok(())
    })
}

/// Example-F1 against the threshold on `y_T`, one (dev) line per run and, for a single run, its
/// test line; each run's threshold is marked with a vertical line.
pub fn thresholds(runs: &[(&str, &ThresholdCurve)]) -> Result<String> {
    svg(PANEL, |root| {
        let values = runs.iter().flat_map(|(_, c)| {
            c.test
                .iter()
                .chain(c.dev.iter().flatten())
                .copied()
                .collect::<Vec<_>>()
        });
        let (lo, hi) = padded(values);
        let mut chart = ChartBuilder::on(root)
            .caption("example-F1 (%) vs threshold on y_T", (FONT, 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(45)
            .build_cartesian_2d(0.0..1.0, lo..hi)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("threshold")
            .y_desc("example-F1 (%)")
            .draw()
            .map_err(draw_err)?;
        let single = runs.len() == 1;
        for (i, (name, curve)) in runs.iter().enumerate() {
            let c = colour(i);
            let line = |ys: &[f64]| -> Vec<(f64, f64)> {
                curve.grid.iter().copied().zip(ys.iter().copied()).collect()
            };
            if let Some(dev) = &curve.dev {
                let label = if single {
                    "dev".to_string()
                } else {
                    format!("{name} (dev)")
                };
                chart
                    .draw_series(LineSeries::new(line(dev), c.stroke_width(2)))
                    .map_err(draw_err)?
                    .label(label)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                    });
            }
            if single || curve.dev.is_none() {
                let t = colour(i + 1);
                let label = if single {
                    "test".to_string()
                } else {
                    format!("{name} (test)")
                };
                chart
                    .draw_series(LineSeries::new(line(&curve.test), t.mix(0.7)))
                    .map_err(draw_err)?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], t.mix(0.7)));
            }
            chart
                .draw_series([
                    PathElement::new(vec![(curve.chosen, lo), (curve.chosen, hi)], c.mix(0.8))
                        .into_dyn(),
                    Text::new(
                        format!("threshold {}", curve.chosen),
                        (curve.chosen + 0.01, lo + 0.08 * (hi - lo) * (i + 1) as f64),
                        (FONT, 12),
                    )
                    .into_dyn(),
                ])
                .map_err(draw_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        Ok(())
    })
}
