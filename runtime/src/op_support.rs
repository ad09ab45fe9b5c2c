//! Helpers that `#[custom_op]`'s generated lowerings call (through `__private`).

pub use crate::lower::call_op;

use crate::descriptor::Descriptor;
use crate::lower::{BuildError, Desc, Value};

/// The results of [`call_op`](crate::lower::call_op), taken in order by a generated `call`: a
/// [`Value`] for a tensor output, a [`Desc`] for an opaque result or an updated external.
#[derive(Debug)]
pub struct Results(std::vec::IntoIter<Value>);

impl Results {
    /// The results `call_op` returned.
    pub fn new(values: Vec<Value>) -> Results {
        Results(values.into_iter())
    }

    fn next(&mut self) -> Result<Value, BuildError> {
        self.0
            .next()
            .ok_or_else(|| BuildError::new("custom_call made too few results"))
    }

    /// The next result, a tensor.
    pub fn value(&mut self) -> Result<Value, BuildError> {
        self.next()
    }

    /// The next result, the packed bytes of a `T` (the op's schema says which results are).
    pub fn desc<T: Descriptor>(&mut self) -> Result<Desc<T>, BuildError> {
        self.next().map(Desc::wrap)
    }
}
