//! What of a configuration a system reads ([`Reads`]), by the fields' types: the product
//! sections' field enums ([`Fields`]) and, for the systems' own section (`baseline`, which the
//! crate that registers those systems owns), that crate's field enum in groups
//! ([`SettingGroups`]). No list of names is written by hand: a declared field a section lacks
//! does not compile.

use crate::config::{
    Config, Field, InferenceConfig, InferenceField, LossConfig, LossField, SearchConfig,
    SearchField, SectionFields, SECTION,
};
use crate::error::Unread;

/// The fields of the systems' own section (`baseline`) a system reads, by the field type of
/// the crate that owns the section: [`SettingGroups`] of it, or [`NO_SETTINGS`].
pub trait SettingFields: Send + Sync + 'static {
    /// Their names in the section, group after group.
    fn names(&self) -> Vec<&'static str>;
}

/// Fields of the systems' own section in groups (systems share the groups of the code they
/// share), of the owning crate's field type `F`, whose [`Field::SECTION`] is
/// [`SECTION`](crate::config::SECTION).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingGroups<F: 'static>(pub &'static [&'static [F]]);

impl<F: Field + Send + Sync> SettingFields for SettingGroups<F> {
    fn names(&self) -> Vec<&'static str> {
        debug_assert_eq!(F::SECTION, SECTION, "a field of another section");
        self.0
            .iter()
            .flat_map(|g| g.iter().map(|f| f.name()))
            .collect()
    }
}

/// No field of the systems' own section (Predict and Constrain, the forests).
pub const NO_SETTINGS: &dyn SettingFields = &NoSettings;

struct NoSettings;

impl SettingFields for NoSettings {
    fn names(&self) -> Vec<&'static str> {
        Vec::new()
    }
}

/// What of a configuration a system reads, besides the sections every system reads (`model`,
/// `train`, the seed and the threshold). A field it does not read must stay at its default:
/// in the `baseline` section the value every configuration saved before carried, in a
/// product section the `paper` preset's.
#[derive(Clone, Copy)]
pub struct Reads {
    /// The fields of the `baseline` section ([`Config::system_settings`]) it reads: a
    /// [`SettingGroups`] of the owning crate's field type, or [`NO_SETTINGS`].
    pub settings: &'static dyn SettingFields,
    /// The fields of the `inference` section it reads (`steps`, `eta`, ...; a projection's
    /// parameter by its own name, `rounds`).
    pub inference: Fields<InferenceField>,
    /// The fields of the `loss` section it reads.
    pub loss: Fields<LossField>,
    /// The fields of the `search` section it reads (those of the default's search).
    pub search: Fields<SearchField>,
}

impl std::fmt::Debug for Reads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reads")
            .field("settings", &self.settings.names())
            .field("inference", &self.inference)
            .field("loss", &self.loss)
            .field("search", &self.search)
            .finish()
    }
}

/// The fields of one product section a system reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields<F: 'static> {
    /// Every field, present and future.
    All,
    /// These fields only.
    Only(&'static [F]),
}

impl<F: Field> Fields<F> {
    /// No field of the section.
    pub const NONE: Self = Self::Only(&[]);

    /// Whether `field` is read.
    pub fn contains(&self, field: F) -> bool {
        match self {
            Self::All => true,
            Self::Only(fields) => fields.contains(&field),
        }
    }

    /// Whether the field called `name` is read.
    pub fn contains_name(&self, name: &str) -> bool {
        F::ALL
            .iter()
            .find(|f| f.name() == name)
            .is_some_and(|f| self.contains(*f))
    }

    /// Why a field of the section is not read: the fields of it that are.
    fn why_not(&self) -> Unread {
        Unread::Fields {
            section: F::SECTION,
            reads: match self {
                Self::Only(read) => read.iter().map(|f| f.name()).collect(),
                // Never asked: every field is read.
                Self::All => Vec::new(),
            },
        }
    }

    /// The fields of `changed` this leaves unread.
    fn unread(&self, changed: Vec<F>) -> Vec<F> {
        changed.into_iter().filter(|f| !self.contains(*f)).collect()
    }
}

/// A field of a product section that a configuration sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProductField {
    /// A field of `inference`.
    Inference(InferenceField),
    /// A field of `loss`.
    Loss(LossField),
    /// A field of `search`.
    Search(SearchField),
}

impl ProductField {
    /// Its dotted path (`inference.steps`).
    pub fn path(self) -> String {
        fn path<F: Field>(f: F) -> String {
            format!("{}.{}", F::SECTION, f.name())
        }
        match self {
            Self::Inference(f) => path(f),
            Self::Loss(f) => path(f),
            Self::Search(f) => path(f),
        }
    }

    /// Sets it back to its default in `cfg`.
    pub fn reset(self, cfg: &mut Config) {
        match self {
            Self::Inference(f) => cfg.inference.reset(&InferenceConfig::default(), f),
            Self::Loss(f) => cfg.loss.reset(&LossConfig::default(), f),
            Self::Search(f) => cfg.search.reset(&SearchConfig::default(), f),
        }
    }
}

impl Reads {
    /// Predict and Constrain's: every product section, no field of the `baseline` section.
    pub const PNC: Self = Self {
        settings: NO_SETTINGS,
        inference: Fields::All,
        loss: Fields::All,
        search: Fields::All,
    };

    /// The fields of the `baseline` section it reads, every group's.
    pub fn settings(&self) -> Vec<&'static str> {
        self.settings.names()
    }

    /// Why `field` is not read.
    fn why_not(&self, field: ProductField) -> Unread {
        match field {
            ProductField::Inference(_) => self.inference.why_not(),
            ProductField::Loss(_) => self.loss.why_not(),
            ProductField::Search(_) => self.search.why_not(),
        }
    }

    /// The fields of the product sections `cfg` sets (away from their defaults) and this
    /// leaves unread, section by section.
    pub fn unread_product_fields(&self, cfg: &Config) -> Vec<ProductField> {
        let inference = cfg.inference.differing(&InferenceConfig::default());
        let loss = cfg.loss.differing(&LossConfig::default());
        let search = cfg.search.differing(&SearchConfig::default());
        let mut out: Vec<ProductField> = Vec::new();
        out.extend(
            self.inference
                .unread(inference)
                .into_iter()
                .map(ProductField::Inference),
        );
        out.extend(self.loss.unread(loss).into_iter().map(ProductField::Loss));
        out.extend(
            self.search
                .unread(search)
                .into_iter()
                .map(ProductField::Search),
        );
        out
    }

    /// The first field of `cfg` this leaves unread and `cfg` sets, by its dotted path, with
    /// why it is not read.
    pub fn first_unread(&self, cfg: &Config) -> Option<(String, Unread)> {
        let settings = self.settings();
        if let Some(field) = cfg.system_settings.first_not_read(&settings) {
            let because = match settings.as_slice() {
                [] => Unread::OthersSection { section: SECTION },
                read => Unread::Fields {
                    section: SECTION,
                    reads: read.to_vec(),
                },
            };
            return Some((format!("{SECTION}.{field}"), because));
        }
        let field = self.unread_product_fields(cfg).into_iter().next()?;
        Some((field.path(), self.why_not(field)))
    }
}
