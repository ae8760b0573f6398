//! The paper's Section 6 model (the `cardinal-segment` crate's) in model directories and run
//! directories: `saved` writes and reads its model folder (F64 safetensors, its
//! `{"multi_target": {...}}` configuration, `meta.json` with `"labels": "multi_target"`),
//! `checkpoint` its resumable checkpoints (`SegmentRun`, its `run_dir::RunModel`). Front
//! ends reach it through [`crate::engine::Engine`].

pub(crate) mod checkpoint;
pub(crate) mod saved;

pub use cardinal_segment::{Mode, SegConfig, SegEpoch, SegMetrics, SegModel, SegRow, SegState};
pub use saved::SegMeta;
