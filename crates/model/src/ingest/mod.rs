//! One module per input format, feeding the model.

pub mod mlpd;
pub mod xray;
