//! xgate's judging core: the Python compiler lowers each endpoint's rules to a plan (gateway/compiler/
//! lower.py); `Core` is built once from it and judges a batch of records in one call, GIL released.

mod json;
mod payload;
mod pyrepr;
mod templates;
mod types;
mod value;

use pyo3::prelude::*;

#[pymodule]
fn _core(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
