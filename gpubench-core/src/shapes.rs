//! What makes two inputs "the same shape" for per-shape cold calls.

use tch::Tensor;

/// An input whose shape decides whether a call is the first at that shape, for
/// [`Bencher::iter_inputs`](crate::Bencher::iter_inputs). Tensors, integers, vectors,
/// pairs and references of them have it; a type of your own says what its shape is:
///
/// ```
/// use gpubench_core::InputShape;
///
/// /// A batch of token ids, padded to its longest sequence.
/// struct Batch {
///     rows: usize,
///     longest: usize,
/// }
///
/// impl InputShape for Batch {
///     fn shape_key(&self) -> String {
///         format!("{}x{}", self.rows, self.longest)
///     }
/// }
///
/// assert_eq!(Batch { rows: 8, longest: 128 }.shape_key(), "8x128");
/// assert_eq!(vec![4_usize, 2].shape_key(), "(4, 2)");
/// ```
pub trait InputShape {
    /// A key equal for inputs of the same shape (and dtype), e.g. `[4, 16, 64] f32`.
    fn shape_key(&self) -> String;
}

impl InputShape for Tensor {
    fn shape_key(&self) -> String {
        format!("{:?} {:?}", self.size(), self.kind())
    }
}

impl<T: InputShape> InputShape for Vec<T> {
    fn shape_key(&self) -> String {
        let parts: Vec<String> = self.iter().map(InputShape::shape_key).collect();
        format!("({})", parts.join(", "))
    }
}

impl<A: InputShape, B: InputShape> InputShape for (A, B) {
    fn shape_key(&self) -> String {
        format!("({}, {})", self.0.shape_key(), self.1.shape_key())
    }
}

impl<T: InputShape + ?Sized> InputShape for &T {
    fn shape_key(&self) -> String {
        (**self).shape_key()
    }
}

macro_rules! scalar_shape {
    ($($t:ty),*) => {$(
        impl InputShape for $t {
            fn shape_key(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
scalar_shape!(usize, u32, u64, i32, i64);
