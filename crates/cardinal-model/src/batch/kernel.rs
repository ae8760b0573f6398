//! The unroll kernels as the batch passes see them: one interface, [`UnrollKernel`], for the
//! reference row kernel (`row`) and the lockstep kernel (`lockstep`), and the one place that
//! picks between them ([`Model::unroll_kernel`]). The passes (`forward`, `gradient`) call the
//! interface only; which rows a kernel runs together, in which buffers, and how a lockstep
//! block that fails falls back to the rows are each kernel's own business.

use cardinal_proj::lanes::{SoftDykstraLanes, LANES};
use ndarray::{Array1, Array2, ArrayView2};

use super::clock::StageClock;
use crate::batch::Float;
use crate::data::LabelSets;
use crate::error::Result;
use crate::inference::{BlockScratch, BlockTape, Kernel, RowTape, Unroll};
use crate::model::Model;

mod lockstep;
mod row;

pub(super) use lockstep::LockstepKernel;
pub(super) use row::RowKernel;

/// Rows per lockstep block in inference (the widths compared: docs/journal/2026-11-26-speed.md).
pub(crate) const INFER_LANES: usize = LANES;

/// Rows per lockstep block in training (each lane's arithmetic is the same for any width; the
/// widths compared: docs/journal/2026-11-26-speed.md).
pub const TRAIN_LANES: usize = 32;

/// One implementation of the unrolled ascent over the rows of a batch, for inference and for
/// training. Every kernel computes the numbers of the reference row kernel (to rounding; the
/// `inference` tests compare them), and each kernel's numbers are the same for any thread
/// count.
pub(super) trait UnrollKernel<F: Float>: Sync {
    /// Inference, rows spread over threads: `y_T` into `y` and the ranking scores into `rank`
    /// (both `rows × L`). An invalid row is reported as [`Error::Row`](crate::Error::Row).
    /// Only the tests' whole-batch reference pass (`Model::forward`) runs it.
    #[cfg(any(test, feature = "test-support"))]
    fn infer(
        &self,
        un: &Unroll<'_, F>,
        batch: &InferRows<'_, F>,
        y: &mut [F],
        rank: &mut [F],
        bufs: &mut KernelBuffers<F>,
    ) -> Result<()>;

    /// [`Self::infer`] in the calling thread only, with one thread's scratch (a unit of
    /// [`Model::forward_batched`]).
    fn infer_serial(
        &self,
        un: &Unroll<'_, F>,
        batch: &InferRows<'_, F>,
        y: &mut [F],
        rank: &mut [F],
        scratch: &mut UnitScratch<F>,
    ) -> Result<()>;

    /// Training: every row's forward pass, its relaxed-F1 loss and backward pass into `out`
    /// (`∂ℓ/∂u`, and per row the loss, `∂ℓ/∂z` and `∂ℓ/∂η`), and the energy's parameter
    /// gradients over the batch (overwritten).
    fn train(
        &self,
        un: &Unroll<'_, F>,
        batch: &TrainRows<'_, F>,
        out: &mut TrainOut<'_, F>,
        bufs: &mut KernelBuffers<F>,
        clock: &StageClock,
    ) -> Result<()>;
}

/// The rows of an inference pass as the kernels see them.
pub(super) struct InferRows<'a, F> {
    /// Number of labels `L`.
    pub(super) l: usize,
    /// Unary scores, `rows × L`.
    pub(super) u: &'a [F],
    /// Counts, one per row.
    pub(super) z: &'a [F],
    /// Each row's number in the data (for errors).
    pub(super) rows: &'a [usize],
}

impl<'a, F> InferRows<'a, F> {
    /// Rows `r0..r0 + n`.
    pub(super) fn slice(&self, r0: usize, n: usize) -> InferRows<'a, F> {
        let l = self.l;
        InferRows {
            l,
            u: &self.u[r0 * l..(r0 + n) * l],
            z: &self.z[r0..r0 + n],
            rows: &self.rows[r0..r0 + n],
        }
    }
}

/// The rows of a training batch as the kernels see them.
pub(super) struct TrainRows<'a, F> {
    /// Number of labels `L`.
    pub(super) l: usize,
    /// Unary scores, `rows × L`.
    pub(super) u: &'a [F],
    /// Counts, one per row.
    pub(super) z: &'a [F],
    /// The gold labels, and each row's number in them.
    pub(super) labels: &'a LabelSets,
    pub(super) rows: &'a [usize],
    /// The weight of the loss on each iterate `y_t` (`T`, the batch scale included).
    pub(super) iterate_weights: &'a [F],
    /// Per-example loss weights of the batch's rows, if any.
    pub(super) row_weights: Option<&'a [F]>,
    /// The energy matrix `Wp` (`L × E`), for the row kernel's gradient products.
    pub(super) wp: ArrayView2<'a, F>,
}

impl<'a, F> TrainRows<'a, F> {
    /// The gold labels of batch row `r`.
    #[inline]
    pub(super) fn gold(&self, r: usize) -> &'a [u32] {
        self.labels.row(self.rows[r])
    }
}

/// What one row of a training pass gives besides `∂ℓ/∂u`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RowResult<F> {
    /// The row's loss.
    pub(super) loss: F,
    /// `∂ℓ/∂z`.
    pub(super) gz: F,
    /// `∂ℓ/∂η`.
    pub(super) geta: F,
}

/// Where a training pass writes.
pub(super) struct TrainOut<'a, F> {
    /// `∂ℓ/∂u`, `rows × L`.
    pub(super) gu: &'a mut [F],
    /// One result per row.
    pub(super) results: &'a mut [RowResult<F>],
    /// `∂ℓ/∂Wp` (`L × E`).
    pub(super) gwp: &'a mut Array2<F>,
    /// `∂ℓ/∂w2` (`E`).
    pub(super) gwe: &'a mut Array1<F>,
}

/// The kernels' reusable buffers (no allocation once grown).
#[derive(Default)]
pub(super) struct KernelBuffers<F: Float> {
    /// Row kernel: one tape per row.
    pub(super) tapes: Vec<RowTape<F>>,
    /// Row kernel, training: every row's adjoints of `g_t` (`rows·T × L`) and energy masks
    /// (`rows·T × E`), and the energy products' scratch.
    pub(super) ggs: Array2<F>,
    pub(super) masks: Array2<F>,
    pub(super) energy_s: Array2<F>,
    pub(super) energy_proj: Array2<F>,
    /// Lockstep inference scratch, one per block of `INFER_LANES` rows.
    #[cfg(any(test, feature = "test-support"))]
    pub(super) blocks: Vec<BlockScratch<F, INFER_LANES>>,
    /// Lockstep training tapes, one per block of `TRAIN_LANES` rows.
    pub(super) block_tapes: Vec<BlockTape<F, TRAIN_LANES>>,
}

/// One thread's scratch for [`UnrollKernel::infer_serial`]: a lockstep block's, and a row's
/// (the row kernel, and a lockstep block rerun row by row).
#[derive(Default)]
pub(super) struct UnitScratch<F: Float> {
    pub(super) block: BlockScratch<F, INFER_LANES>,
    pub(super) tape: RowTape<F>,
}

/// The lockstep operator of soft Dykstra steps, kept with its `(rounds, labels)`: it depends
/// only on them, and building it sorts out a network.
pub(super) type LanesCache = Option<((usize, usize), SoftDykstraLanes)>;

impl<F: Float> Model<F> {
    /// The unroll kernel of a pass, the one place a pass picks it: the kind
    /// [`Self::kernel`] names (`choice` is the workspace's override), and for the lockstep
    /// kernel its operator, from `lanes` (built there once per `(rounds, labels)`).
    pub(super) fn unroll_kernel<'w>(
        &self,
        choice: Option<Kernel>,
        lanes: &'w mut LanesCache,
        training: bool,
    ) -> Box<dyn UnrollKernel<F> + 'w> {
        match self.kernel(choice, training) {
            Kernel::Row => Box::new(RowKernel),
            Kernel::Lockstep => {
                let key = (self.config.inference.proj.rounds, self.n_labels());
                let built = match lanes.take() {
                    Some((k, built)) if k == key => built,
                    _ => SoftDykstraLanes::new(key.0, key.1),
                };
                Box::new(LockstepKernel {
                    lanes: &lanes.insert((key, built)).1,
                })
            }
        }
    }
}
