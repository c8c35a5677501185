//! Reports people look at: the data of plots ([`figure`], elevator-run's),
//! drawn as SVG, and self-contained HTML pages (inline SVG, no scripts, no network) for
//! `experiment all` and `run`/`compare --report`.

pub use elevator_run::experiment::figure;
pub mod html;
pub use elevator_run::observe;
pub mod svg;
