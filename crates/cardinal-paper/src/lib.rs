//! `cardinal-paper`: the systems of Table 1 of "Predict and Constrain" (Brukhim & Globerson,
//! ICML 2018) other than P&C itself, and the paper's analyses, built on the `cardinal` library.
//!
//! The product never depends on this crate: it registers its systems into the product's
//! registry ([`systems()`]), and front ends that want them (the CLI's `reproduce`, `train` with a
//! baseline's configuration) pass that registry in.
//!
//! ```
//! let systems = cardinal_paper::systems();
//! assert!(systems.get("pnc").is_ok());
//! assert!(systems.get("spen-ssvm").is_ok());
//! // Every row of Table 1 names a system of the registry.
//! for row in cardinal_paper::reproduce::table1_rows() {
//!     let cfg = row.config.expect("every row is implemented");
//!     systems.for_config(&cfg).unwrap();
//! }
//! ```

#![warn(missing_docs)]

pub mod ablation;
pub mod cell_key;
pub mod reproduce;
pub mod result_cache;
pub mod suite;
pub mod systems;

pub use systems::systems;
