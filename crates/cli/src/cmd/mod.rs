//! One module per subcommand. Each parses nothing (clap did), opens its input through
//! [`crate::source`], asks the libraries ([`crate::formats`] for a format's own info, dump and
//! validate; the model's `Source` for analyses and conversions) and prints. No command module
//! uses another.

pub mod account;
pub mod completions;
pub mod convert;
pub mod diff;
pub mod dump;
pub mod extract;
pub mod graph;
pub mod info;
pub mod inject;
pub mod record;
pub mod report;
pub mod stack;
pub mod symbolize;
pub mod validate;
pub mod view;
