//! New multi-target data laid out as a trained model's, as the binary readers lay out new
//! data ([`super::inputs::align_features`]): features and targets are matched by name,
//! whatever their order, and the targets' classes (their nominal values) are renumbered by
//! name. Missing, extra, repeated or renamed columns and unknown classes are refused, named.

use std::collections::HashMap;

use super::error::Result;
use super::inputs::match_by_name as order;
use super::invalid::InvalidInput;
use super::multi_target::MultiTargetDataset;

/// The names a multi-target model was trained with.
#[derive(Debug, Clone, Copy)]
pub struct MultiTargetSchema<'a> {
    /// Its features, in its column order.
    pub feature_names: &'a [String],
    /// Its targets (positions), in order.
    pub target_names: &'a [String],
    /// Its classes, in the order of its outputs.
    pub class_names: &'a [String],
}

impl MultiTargetDataset {
    /// This data laid out as the model of `schema` expects it (see the module docs); `source`
    /// names the data in errors. Data without targets stays without targets.
    pub fn aligned_to(mut self, schema: &MultiTargetSchema, source: &str) -> Result<Self> {
        let n = self.n_rows();
        if let Some(cols) = order(
            &self.feature_names,
            schema.feature_names,
            "features",
            source,
        )? {
            let d = self.n_features();
            let mut out = Vec::with_capacity(self.features.len());
            for i in 0..n {
                let row = &self.features[i * d..(i + 1) * d];
                out.extend(cols.iter().map(|&j| row[j]));
            }
            self.features = out;
            self.feature_names = schema.feature_names.to_vec();
        }
        if self.positions() == 0 {
            return Ok(self);
        }
        let classes: Option<Vec<u32>> = match self.class_names == schema.class_names {
            true => None,
            false => {
                let model: HashMap<&str, u32> = schema
                    .class_names
                    .iter()
                    .enumerate()
                    .map(|(k, c)| (c.as_str(), k as u32))
                    .collect();
                let unknown: Vec<&str> = self
                    .class_names
                    .iter()
                    .map(String::as_str)
                    .filter(|c| !model.contains_key(c))
                    .collect();
                if !unknown.is_empty() {
                    return Err(InvalidInput::UnknownClasses {
                        input: source.to_string(),
                        unknown: unknown.into_iter().map(str::to_owned).collect(),
                        known: schema.class_names.to_vec(),
                    }
                    .into());
                }
                Some(self.class_names.iter().map(|c| model[c.as_str()]).collect())
            }
        };
        let cols = order(&self.target_names, schema.target_names, "targets", source)?;
        if cols.is_some() || classes.is_some() {
            let l = self.positions();
            let mut out = Vec::with_capacity(self.targets.len());
            for i in 0..n {
                let row = &self.targets[i * l..(i + 1) * l];
                for k in 0..schema.target_names.len() {
                    let c = row[cols.as_ref().map_or(k, |cols| cols[k])];
                    out.push(classes.as_ref().map_or(c, |m| m[c as usize]));
                }
            }
            self.targets = out;
            self.target_names = schema.target_names.to_vec();
            self.class_names = schema.class_names.to_vec();
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Two rows, targets `t1, t2` over classes `bg, c1, c2`, features `f1, f2, f3`.
    fn data() -> MultiTargetDataset {
        MultiTargetDataset {
            name: "d".into(),
            class_names: names(&["bg", "c1", "c2"]),
            target_names: names(&["t1", "t2"]),
            feature_names: names(&["f1", "f2", "f3"]),
            features: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            targets: vec![0, 2, 1, 0],
        }
    }

    /// A row as (feature name, value) and (target name, class name) pairs, sorted by name.
    type Meaning = (Vec<(String, f32)>, Vec<(String, String)>);

    /// Every row as its meaning: what the data says, whatever the columns' order.
    fn meaning(d: &MultiTargetDataset) -> Vec<Meaning> {
        (0..d.n_rows())
            .map(|i| {
                let mut f: Vec<(String, f32)> = d
                    .feature_names
                    .iter()
                    .cloned()
                    .zip(d.row_features(i).iter().copied())
                    .collect();
                let mut t: Vec<(String, String)> = d
                    .target_names
                    .iter()
                    .cloned()
                    .zip(
                        d.row_targets(i)
                            .iter()
                            .map(|&c| d.class_names[c as usize].clone()),
                    )
                    .collect();
                f.sort_by(|a, b| a.0.cmp(&b.0));
                t.sort();
                (f, t)
            })
            .collect()
    }

    #[test]
    fn reordered_columns_and_classes_keep_their_meaning() {
        let model = data();
        let schema = MultiTargetSchema {
            feature_names: &model.feature_names,
            target_names: &model.target_names,
            class_names: &model.class_names,
        };
        // The same data, written with features, targets and class values in other orders.
        let mut shuffled = MultiTargetDataset {
            class_names: names(&["c2", "c1", "bg"]),
            target_names: names(&["t2", "t1"]),
            feature_names: names(&["f3", "f1", "f2"]),
            features: vec![3.0, 1.0, 2.0, 6.0, 4.0, 5.0],
            targets: vec![0, 2, 2, 1],
            ..data()
        };
        assert_eq!(meaning(&shuffled), meaning(&model));
        let aligned = shuffled.clone().aligned_to(&schema, "new.arff").unwrap();
        assert_eq!(aligned, model);
        // Classes the data does not use are fine; one the model does not know is refused.
        shuffled.class_names = names(&["c2", "c1", "sky"]);
        let e = shuffled
            .aligned_to(&schema, "new.arff")
            .unwrap_err()
            .to_string();
        assert!(e.contains("new.arff") && e.contains("`sky`"), "{e}");
    }

    #[test]
    fn missing_extra_repeated_or_renamed_columns_are_refused_by_name() {
        let model = data();
        let schema = MultiTargetSchema {
            feature_names: &model.feature_names,
            target_names: &model.target_names,
            class_names: &model.class_names,
        };
        let with = |f: &[&str], t: &[&str]| MultiTargetDataset {
            feature_names: names(f),
            target_names: names(t),
            ..data()
        };
        let err = |d: MultiTargetDataset| d.aligned_to(&schema, "x").unwrap_err().to_string();
        let e = err(with(&["f1", "f2", "g3"], &["t1", "t2"]));
        assert!(
            e.contains("missing: `f3`") && e.contains("does not know: `g3`"),
            "{e}"
        );
        let e = err(with(&["f1", "f2", "f2"], &["t1", "t2"]));
        assert!(e.contains("`f2` appears twice"), "{e}");
        let e = err(with(&["f1", "f2", "f3"], &["t1", "u2"]));
        assert!(e.contains("targets differ") && e.contains("`t2`"), "{e}");
        // Without targets: features aligned, no targets.
        let bare = MultiTargetDataset {
            target_names: Vec::new(),
            class_names: Vec::new(),
            targets: Vec::new(),
            feature_names: names(&["f2", "f1", "f3"]),
            features: vec![2.0, 1.0, 3.0, 5.0, 4.0, 6.0],
            ..data()
        };
        let a = bare.aligned_to(&schema, "x").unwrap();
        assert_eq!(
            (a.features.clone(), a.positions()),
            (model.features.clone(), 0)
        );
        assert_eq!(a.n_rows(), 2);
    }
}
