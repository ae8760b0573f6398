//! The batch's end-to-end tests, beside the trainer that builds their models: the gradient
//! against finite differences (`gradcheck`), per-example loss weights against repeated rows
//! (`sample_weights`), and the heads against the full inference (`heads`).

mod gradcheck;
mod heads;
mod sample_weights;
mod test_model;
