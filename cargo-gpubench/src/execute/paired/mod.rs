//! Base and head of a benchmark measured in one process (`cargo gpubench ab`): each
//! revision's bench code loaded as a library ([`library`]), the alternation of their
//! samples ([`driver`]), the paired process that runs one benchmark and writes both
//! records ([`process`]), and starting such processes from `ab` ([`runner`]). The
//! contract with the libraries is [`gpubench_record::paired`].

pub mod args;
pub mod driver;
pub mod library;
pub mod process;
pub mod runner;
