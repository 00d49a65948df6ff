//! Base and head of a benchmark measured in one process (`cargo gpubench ab`): each
//! revision's bench code loaded as a library ([`library`]), the alternation of their
//! samples ([`driver`]), and the paired process that runs one benchmark and writes
//! both records ([`process`]). The contract with the libraries is
//! [`gpubench_analysis::paired`].

pub mod driver;
pub mod library;
pub mod process;
