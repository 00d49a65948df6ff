//! What makes two inputs "the same shape" for per-shape cold calls.

use tch::Tensor;

/// An input whose shape decides whether a call is the first at that shape.
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
