//! Reusable buffers of the passes over a batch.

use ndarray::Array2;

use super::clock::StageClock;
use super::kernel::{KernelBuffers, LanesCache, RowResult, UnitScratch};
use crate::batch::Float;
use crate::inference::Kernel;
use crate::model::FirstLayerGrad;

/// Reusable buffers of one batch (no allocation once grown).
#[derive(Default)]
pub struct Workspace<F: Float> {
    pub(super) pre1: Array2<F>,
    pub(super) h1: Array2<F>,
    pub(super) u: Array2<F>,
    pub(super) prec: Array2<F>,
    pub(super) hc: Array2<F>,
    pub(super) p: Array2<F>,
    pub(super) z: Vec<F>,
    /// The unroll kernels' buffers.
    pub(super) kernel_bufs: KernelBuffers<F>,
    /// Per-thread scratch of [`Model::forward_blocks`](crate::model::Model::forward_blocks).
    pub(super) block_work: Vec<std::sync::Mutex<BlockWork<F>>>,
    /// The lockstep kernel's operator, kept across passes.
    pub(super) lanes: LanesCache,
    /// The unary and cardinality first layers' standardisation shifts, while
    /// [`Model::forward_batched`](crate::model::Model::forward_batched) runs (the weights cannot
    /// change meanwhile).
    pub(super) shifts: Option<[Vec<F>; 2]>,
    /// Runs every pass with this unroll kernel instead of the one [`Kernel::choose`] picks
    /// (e.g. [`Kernel::Row`], the reference, to compare the kernels); the lockstep kernel is
    /// honoured only where it applies (soft Dykstra steps).
    pub kernel: Option<Kernel>,
    /// Key of the dropout masks of the next training batch (see [`Dropout`](crate::model::Dropout));
    /// set by the trainer, one per batch, so that masks are reproducible and independent of
    /// threads.
    pub dropout_key: u64,
    /// Inference only: the count `z` of each row of the data (indexed by its row number)
    /// instead of `h(x)`'s, e.g. the gold counts, to measure what a perfect count predictor
    /// would give.
    pub count_override: Option<Vec<F>>,
    /// The prior added to the unary scores of each row of the data (indexed by its row
    /// number, `n × L` row-major): a forest's log-odds where the model has one
    /// (`model.forest_prior`), in training and at inference alike.
    pub unary_prior: Option<Vec<F>>,
    pub(super) gu: Array2<F>,
    pub(super) row_out: Vec<RowResult<F>>,
    pub(super) dh: Array2<F>,
    pub(super) dhc: Array2<F>,
    pub(super) dlogits: Array2<F>,
    /// Structure of the unary net's first-layer gradient of the last
    /// [`Model::loss_and_sparse_grad`](crate::model::Model::loss_and_sparse_grad).
    pub grad_w1: FirstLayerGrad<F>,
    /// Structure of the cardinality net's first-layer gradient of the last
    /// [`Model::loss_and_sparse_grad`](crate::model::Model::loss_and_sparse_grad).
    pub grad_c1: FirstLayerGrad<F>,
    /// Time per stage of the training batches run with this workspace (see `StageClock`).
    pub clock: StageClock,
}

/// One thread's buffers for a unit of inference rows (see
/// [`Model::forward_blocks`](crate::model::Model::forward_blocks)).
#[derive(Default)]
pub(super) struct BlockWork<F: Float> {
    pub(super) pre: Vec<F>,
    pub(super) hidden: Vec<F>,
    pub(super) prec: Vec<F>,
    pub(super) hc: Vec<F>,
    pub(super) p: Vec<F>,
    pub(super) scratch: UnitScratch<F>,
}
