//! The one unit of F1 in every file and table: **percent**.
//!
//! `metrics.jsonl` (`dev_example_f1`), `cv.json` and every printed table always gave F1 in
//! percent; `eval.json` (an [`EvalReport`]) gave fractions until it was tagged with
//! `"unit": "percent"`. In memory an [`EvalReport`] keeps the metrics' own fractions (what
//! [`crate::metrics`] computes); its serialised form holds a `"unit"` tag and the
//! scores in percent: every F1, precision, recall, Jaccard index, subset accuracy,
//! precision@k, LRAP and ROC AUC. Hamming and ranking loss (losses, conventionally fractions),
//! coverage and other counts, thresholds and the constraint's row fractions are not scores and
//! keep their units. A file without the tag was
//! written before the change and is read as fractions, so old run directories keep working.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::EvalReport;
use crate::metrics::{MetricReport, PrecisionAtK};

/// The unit of the scores in a serialised [`EvalReport`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScoreUnit {
    /// Scores in `[0, 1]`: `eval.json` files written before the unit was tagged.
    #[default]
    Fraction,
    /// Scores in `[0, 100]`: what every file is written in now.
    Percent,
}

impl ScoreUnit {
    /// The factor that turns a fraction into this unit.
    fn scale(self) -> f64 {
        match self {
            ScoreUnit::Fraction => 1.0,
            ScoreUnit::Percent => 100.0,
        }
    }
}

/// Multiplies every score of `m` by `factor` (the fields the module docs name).
fn scale_metrics(m: &mut MetricReport, factor: f64) {
    for x in [
        &mut m.example_f1,
        &mut m.example_f1_other_empty,
        &mut m.example_precision,
        &mut m.example_recall,
        &mut m.example_jaccard,
        &mut m.macro_f1,
        &mut m.micro_f1,
        &mut m.micro_precision,
        &mut m.micro_recall,
        &mut m.subset_accuracy,
    ] {
        *x *= factor;
    }
    scale_precision_at_k(&mut m.precision_at_k, factor);
}

fn scale_precision_at_k(ps: &mut [PrecisionAtK], factor: f64) {
    for p in ps {
        p.value *= factor;
    }
}

/// Every score of `r` multiplied by `factor`.
fn scaled(mut r: EvalReport, factor: f64) -> EvalReport {
    if factor != 1.0 {
        scale_metrics(&mut r.at_threshold, factor);
        scale_metrics(&mut r.at_top_round_z, factor);
        for m in [&mut r.at_dev_threshold, &mut r.at_gold_count]
            .into_iter()
            .flatten()
        {
            scale_metrics(m, factor);
        }
        scale_precision_at_k(&mut r.precision_at_k, factor);
        if let Some(k) = &mut r.ranking {
            k.lrap *= factor;
            for auc in [&mut k.micro_auc, &mut k.macro_auc].into_iter().flatten() {
                *auc *= factor;
            }
        }
    }
    r
}

/// A serialised [`EvalReport`]: the unit tag, then the report's own fields (its derived,
/// field-by-field form) with the scores in that unit.
#[derive(Serialize, Deserialize)]
struct Tagged {
    /// Absent in files written before the unit was tagged: then fractions.
    #[serde(default)]
    unit: ScoreUnit,
    #[serde(flatten, with = "EvalReport")]
    report: EvalReport,
}

impl Serialize for EvalReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let unit = ScoreUnit::Percent;
        let report = scaled(self.clone(), unit.scale());
        Tagged { unit, report }.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for EvalReport {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Tagged { unit, report } = Tagged::deserialize(deserializer)?;
        Ok(scaled(report, 1.0 / unit.scale()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::LabelSets;
    use crate::eval::ConstraintReport;
    use crate::metrics::{cardinality_report, evaluate, MetricOptions};

    fn sets(rows: &[&[u32]]) -> LabelSets {
        let mut s = LabelSets::new(4);
        for r in rows {
            s.push_row(r);
        }
        s
    }

    /// A report with every score away from 0 and 1, so a missed or doubled scaling shows.
    fn report() -> EvalReport {
        let gold = sets(&[&[0, 1], &[2], &[1, 3]]);
        let pred = sets(&[&[0], &[2, 3], &[1, 3]]);
        let m = evaluate(&pred, &gold, &MetricOptions::default());
        EvalReport {
            system: "pnc".into(),
            preset: "predict".into(),
            outputs: Some(crate::system::OutputKind::Constrained),
            search: None,
            threshold: 0.5,
            at_threshold: m.clone(),
            at_top_round_z: m.clone(),
            dev_threshold: Some(0.35),
            at_dev_threshold: Some(m.clone()),
            cardinality: cardinality_report(&[1.5, 1.0, 2.2], &gold, 1.6).unwrap(),
            at_gold_count: Some(m),
            precision_at_k: vec![PrecisionAtK {
                k: 1,
                value: 2.0 / 3.0,
            }],
            ranking: Some(crate::metrics::RankingReport {
                ranking_loss: 0.25,
                coverage: 2.5,
                lrap: 0.75,
                micro_auc: Some(0.625),
                macro_auc: Some(0.375),
                auc_labels: 3,
            }),
            constraint: ConstraintReport {
                frac_sum_within_001: 1.0,
                frac_in_box: 1.0,
                mean_abs_sum_gap: 0.001,
                min_y: 0.0,
                max_y: 1.0,
            },
        }
    }

    #[test]
    fn files_hold_percent_and_read_back() {
        let r = report();
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(json["unit"], "percent");
        let f1 = json["at_threshold"]["example_f1"].as_f64().unwrap();
        assert!(
            (f1 - 100.0 * r.at_threshold.example_f1).abs() < 1e-12,
            "{f1}"
        );
        let p1 = json["precision_at_k"][0]["value"].as_f64().unwrap();
        assert!((p1 - 200.0 / 3.0).abs() < 1e-12);
        assert_eq!(json["ranking"]["lrap"], 75.0);
        assert_eq!(json["ranking"]["micro_auc"], 62.5);
        assert_eq!(json["ranking"]["macro_auc"], 37.5);
        assert_eq!(json["ranking"]["ranking_loss"], 0.25);
        assert_eq!(json["ranking"]["coverage"], 2.5);
        // Not scores: unchanged.
        assert_eq!(
            json["at_threshold"]["hamming_loss"],
            r.at_threshold.hamming_loss
        );
        assert_eq!(json["threshold"], 0.5);
        let back: EvalReport = serde_json::from_value(json).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-15;
        assert!(close(
            back.at_threshold.example_f1,
            r.at_threshold.example_f1
        ));
        assert!(close(
            back.at_threshold.micro_recall,
            r.at_threshold.micro_recall
        ));
        assert!(close(
            back.precision_at_k[0].value,
            r.precision_at_k[0].value
        ));
        assert_eq!(back.cardinality, r.cardinality);
        assert_eq!(back.ranking, r.ranking);
    }

    #[test]
    fn untagged_files_are_fractions() {
        // What an eval.json written before the unit was tagged holds: the in-memory fractions.
        let r = report();
        let mut json = serde_json::to_value(&r).unwrap();
        let old = json.as_object_mut().unwrap();
        old.remove("unit");
        for key in [
            "at_threshold",
            "at_top_round_z",
            "at_dev_threshold",
            "at_gold_count",
        ] {
            old[key]["example_f1"] = r.at_threshold.example_f1.into();
        }
        old["precision_at_k"][0]["value"] = (2.0 / 3.0).into();
        let back: EvalReport = serde_json::from_value(json).unwrap();
        assert_eq!(back.at_threshold.example_f1, r.at_threshold.example_f1);
        assert_eq!(
            back.at_dev_threshold.unwrap().example_f1,
            r.at_threshold.example_f1
        );
        assert_eq!(back.precision_at_k[0].value, 2.0 / 3.0);
    }

    #[test]
    fn an_unknown_unit_is_refused() {
        let mut json = serde_json::to_value(report()).unwrap();
        json["unit"] = "per-mille".into();
        let err = serde_json::from_value::<EvalReport>(json).unwrap_err();
        assert!(err.to_string().contains("unknown variant"), "{err}");
    }
}
