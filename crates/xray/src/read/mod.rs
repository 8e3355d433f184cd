//! The borrowed read layer: header, basic records, FDR records and buffers, decoded events.

pub mod basic;
pub mod basic_layout;
pub mod events;
pub mod fdr;
pub mod header;
